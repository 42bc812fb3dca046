# SPDX-License-Identifier: Apache-2.0
"""The adump package as Python users meet it (issue 25): one config with the library's keys,
checked at construction with the library's reason; the library's log lines through logging;
reading at scale (no descriptor per Dump, execution order, step/rank, dtype names); verify()
agreeing with `adump verify`; input mistakes named."""
import logging
import os
import subprocess
import sys
import textwrap
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

import adump  # noqa: E402


class Config(unittest.TestCase):
    def setUp(self):
        self.top = helpers.tmpdir("cfg")

    def test_library_keys(self):
        # Every key of struct adump_config by its own name, the library's values.
        with adump.Session(self.top, io="auto", min_free_bytes=adump.GUARD_OFF,
                           max_bytes=1 << 30, direct_min_bytes=1 << 20, worker_count=1,
                           stats_mask=adump.STAT_MAX | adump.STAT_L2NORM, sync_bytes=0) as s:
            s.stream().dump("Add", "a", inputs=[np.arange(3.0)])
            s.flush()
            self.assertEqual(s.stats()["files_completed"], 1)
        self.assertEqual((adump.STAT_MAX, adump.STAT_DEFAULT, adump.STAT_ALL), (1, 0x3F, 0x7F))

    def test_quota(self):
        # max_bytes bounds what the session writes; the rest is a recorded loss.
        s = adump.Session(self.top, max_bytes=64 << 10, time_dir="t")
        st = s.stream()
        for i in range(8):
            st.dump("Big", "b%d" % i, inputs=[np.zeros(4096, np.float32)])
        st.sync()
        stats = s.stats()
        with self.assertRaises(adump.Error) as cm:
            s.close()
        self.assertIn("quota", str(cm.exception))
        self.assertGreater(stats["drops"], 0)
        self.assertLessEqual(stats["files_completed"], 4)
        rep = adump.verify(self.top)
        self.assertIn("lost", [p[0] for p in rep.problems])

    def test_checked_at_construction(self):
        for bad, reason in (({"layout": "packed", "compress": "lz4"}, "compress lz4"),
                            ({"worker": 2}, "unknown config key 'worker'"),
                            ({"io": "sometimes"}, "io: expected one of auto"),
                            ({"chunk_bytes": 1}, "chunk_bytes 1 out of range"),
                            ({"max_bytes": -1}, "max_bytes: -1 out of range"),
                            ({"sink": "callback"}, "needs callback=")):
            with self.assertRaises(adump.ConfigError) as cm:
                adump.Session(self.top, **bad)
            self.assertIn(reason, str(cm.exception), bad)
            with self.assertRaises(adump.ConfigError):
                adump.config_check(dump_path=self.top, **bad)
        self.assertEqual(helpers.files_below(self.top), [])      # nothing was created
        adump.config_check(dump_path=self.top, io="direct", workers=2)

    def test_log_lines_through_logging(self):
        blocker = os.path.join(self.top, "file")
        open(blocker, "w").close()
        with self.assertLogs("adump", level="ERROR") as logs:
            with self.assertRaises(OSError) as cm:
                adump.Session(os.path.join(blocker, "dumps"))
        self.assertIn("cannot create", "\n".join(logs.output))
        self.assertIn(blocker, cm.exception.filename)

    def test_compare_lines_come_with_the_compare(self):
        # 300 ops without inputs: compare says "There is no input" of each at INFO, more
        # than the queue holds. They reach logging during the call, and the lines lost
        # past the queue are reported at INFO, no warning.
        sides = []
        for side in ("my", "golden"):
            top = os.path.join(self.top, side)
            with adump.Session(top) as s:
                st = s.stream()
                for i in range(300):
                    st.dump("Relu", "relu%d" % i, outputs=[np.full(4, i, np.float32)])
            sides.append(top)
        with self.assertLogs("adump", level="INFO") as logs:
            adump.compare(*sides, recursive=True)
        text = "\n".join(logs.output)
        self.assertIn("There is no input", text)
        self.assertEqual([r.getMessage() for r in logs.records
                          if r.levelno >= logging.WARNING], [])
        self.assertIn("lines lost (queue full)", text)


class Reading(unittest.TestCase):
    def test_walk_holds_no_descriptor(self):
        # 3,000 dumps walked and all kept, every tensor used, with 64 descriptors allowed.
        top = helpers.tmpdir("fds")
        with adump.Session(top, workers=1) as s:
            st = s.stream()
            for i in range(3000):
                st.dump("Add", "add%d" % i, inputs=[np.full(4, i, np.int32)])
        script = textwrap.dedent("""
            import resource, sys, adump
            resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
            dumps = list(adump.walk(sys.argv[1]))
            total = sum(int(d.inputs[0][0]) for d in dumps)
            dumps += list(adump.walk(sys.argv[1], order="name"))
            print(len(dumps), total, len(__import__("os").listdir("/proc/self/fd")))
        """)
        p = subprocess.run([sys.executable, "-c", script, top], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=240)
        self.assertEqual(p.returncode, 0, p.stdout[-2000:])
        n, total, fds = p.stdout.split()
        self.assertEqual((int(n), int(total)), (6000, sum(range(3000))))
        self.assertLess(int(fds), 16)

    def test_time_order_step_rank_dtype(self):
        top = helpers.tmpdir("order")
        with adump.Session(os.path.join(top, "step3"), time_dir="rank1") as s:
            st = s.stream()
            for op in ("Zeta", "Alpha", "Mu"):
                st.dump(op, op.lower(), inputs=[np.ones(2, np.float16)])
        got = [(d.op_type, d.step, d.rank, d.tensors[0].dtype) for d in adump.walk(top)]
        self.assertEqual(got, [("Zeta", 3, 1, "float16"), ("Alpha", 3, 1, "float16"),
                               ("Mu", 3, 1, "float16")])
        self.assertEqual([d.op_type for d in adump.walk(top, order="name")],
                         ["Alpha", "Mu", "Zeta"])
        with adump.open(next(adump.walk(top)).path) as d:
            self.assertEqual(d.inputs[0].tolist(), [1.0, 1.0])
        self.assertRaises(adump.ClosedError, lambda: d.inputs)

    def test_verify_agrees_with_command(self):
        top = helpers.tmpdir("agree")
        empty = os.path.join(top, "empty")
        os.makedirs(empty)
        good = os.path.join(top, "good")
        with adump.Session(good) as s:
            s.stream().dump("Add", "a", inputs=[np.arange(4.0)])
        for path in (empty, good, os.path.join(top, "missing")):
            code, out = helpers.tool("verify", path)
            rep = adump.verify(path)
            self.assertEqual(rep.ok, code == 0, (path, out, rep.problems))
        self.assertEqual(adump.verify(empty).problems[0][0], "empty")


class Mistakes(unittest.TestCase):
    def test_named(self):
        top = helpers.tmpdir("mis")
        with adump.Session(top) as s:
            st = s.stream()
            with self.assertRaises(TypeError) as cm:
                st.dump("Add", "a", inputs=np.zeros(3))
            self.assertIn("inputs", str(cm.exception))
            with self.assertRaises(OSError) as cm:
                st.dump("Add", "", inputs=[np.zeros(3)])
            self.assertIn("op_name", str(cm.exception))
            with self.assertRaises(TypeError) as cm:
                st.dump("Add", "a", inputs=[np.zeros(2), (b"ab", 1)])
            self.assertIn("inputs[1]: a tuple is (buffer, dtype, shape)", str(cm.exception))
            with self.assertRaises(OSError) as cm:                  # 3 floats are not 4 bytes
                st.dump("Add", "a", outputs=[(b"abcd", adump.DTYPES["float32"], (3,))])
            self.assertIn("output 0", str(cm.exception))
            st.sync()
            self.assertEqual(s.stats()["files_completed"], 0)

    def test_stub_matches_module(self):
        # _adump.pyi names exactly what the extension has (no stale or missing entries).
        import ast
        stub = os.path.join(os.path.dirname(adump.__file__), "_adump.pyi")
        with open(stub) as f:
            tree = ast.parse(f.read())
        names = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.AnnAssign):
                names.add(node.target.id)
        have = {n for n in dir(adump._adump) if not n.startswith("__") or n == "__version__"}
        have -= {"__doc__", "__loader__", "__name__", "__package__", "__spec__", "__file__"}
        self.assertEqual(sorted(names - have), [])
        self.assertEqual(sorted(have - names), [])
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(stub), "py.typed")))

    def test_namespace(self):
        ns = {}
        exec("from adump import *", ns)
        self.assertNotIn("open", ns)
        self.assertIn("walk", ns)
        self.assertTrue(callable(adump.open))
        code, out = helpers.tool("--version")
        self.assertEqual(out.strip(), "adump " + adump.__version__)


if __name__ == "__main__":
    logging.basicConfig(level=logging.CRITICAL)
    unittest.main()
