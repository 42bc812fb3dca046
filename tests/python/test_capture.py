# SPDX-License-Identifier: Apache-2.0
"""adump's Python package without torch: capture round trips through every sink, reading
plain, .lz4 and packed dumps back, bad input (dtypes, closed objects, another thread's
stream, unwritable paths)."""
import os
import signal
import subprocess
import sys
import threading
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

import adump  # noqa: E402


def sample():
    rng = np.random.default_rng(7)
    return {
        "f32": rng.standard_normal((3, 5)).astype(np.float32),
        "f16": rng.standard_normal(7).astype(np.float16),
        "f64": rng.standard_normal((2, 2, 2)),
        "i8": np.arange(-5, 5, dtype=np.int8),
        "i16": np.arange(12, dtype=np.int16).reshape(3, 4),
        "i32": np.arange(6, dtype=np.int32),
        "i64": np.array(123456789012, dtype=np.int64),        # a scalar
        "u8": np.arange(256, dtype=np.uint8),
        "b": np.array([True, False, True]),
        "big": rng.standard_normal(600000).astype(np.float32),  # several 2 MiB chunks
        "empty": np.zeros((0, 4), np.float32),
    }


class CaptureRoundTrip(unittest.TestCase):
    def capture(self, **config):
        top = helpers.tmpdir("cap")
        data = sample()
        names = list(data)
        with adump.Session(top, workers=2, **config) as s:
            st = s.stream()
            st.dump("MatMul", "layer.0/mm", inputs=[data[n] for n in names[:5]],
                    outputs=[data[n] for n in names[5:]])
            st.dump("Slice", "strided", inputs=[data["f32"][:, ::2]])      # non-contiguous
            st.dump("ZeroCopy", "zc", inputs=[data["big"]], copy=False)
            st.sync()
            stats = s.stats()
            self.assertEqual(stats["files_completed"], 3)
            self.assertEqual(stats["files_failed"], 0)
            self.assertEqual(st.stats()["dumps"], 3)
            self.assertEqual(st.stats()["zero_copy_dumps"], 1)
        return top, data, names

    def check_dumps(self, dumps, data, names, container):
        by_type = {d.op_type: d for d in dumps}
        self.assertEqual(sorted(by_type), ["MatMul", "Slice", "ZeroCopy"])
        mm = by_type["MatMul"]
        self.assertEqual(mm.op_name, "layer.0/mm")       # the header keeps the original
        self.assertEqual(mm.container, container)
        self.assertGreater(mm.timestamp, 0)
        for got, n in zip(mm.inputs + mm.outputs, names):
            want = data[n]
            self.assertEqual(got.dtype, want.dtype, n)
            self.assertEqual(got.shape, want.shape, n)
            np.testing.assert_array_equal(got, want, n)
        np.testing.assert_array_equal(by_type["Slice"].inputs[0], data["f32"][:, ::2])
        np.testing.assert_array_equal(by_type["ZeroCopy"].inputs[0], data["big"])

    def test_files(self):
        top, data, names = self.capture()
        dumps = list(adump.walk(top))
        self.check_dumps(dumps, data, names, "file")
        # Plain files are read once, not per tensor: the arrays are views of a FileRange.
        base = dumps[0].inputs[0]
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        self.assertIsInstance(base.obj if isinstance(base, memoryview) else base,
                              adump._adump.FileRange)
        # adump.open on the file gives the same; the file is named as CANN names it.
        path = [d.path for d in dumps if d.op_type == "MatMul"][0]
        self.assertRegex(os.path.basename(path), r"^MatMul\.layer_0_mm\.\d+\.\d+\.\d+$")
        self.assertEqual(adump.open(path).op_name, "layer.0/mm")
        self.assertTrue(adump.verify(top).ok)

    def test_lz4(self):
        top, data, names = self.capture(compress="lz4")
        self.assertTrue(all(f.endswith(".lz4") for f in helpers.files_below(top)))
        self.check_dumps(list(adump.walk(top)), data, names, "lz4")
        self.assertTrue(adump.verify(top).ok)

    def test_packed(self):
        top, data, names = self.capture(layout="packed")
        self.assertTrue(any(f.endswith(".idx") for f in helpers.files_below(top)))
        self.check_dumps(list(adump.walk(top)), data, names, "packed")
        rep = adump.verify(top)
        self.assertTrue(rep.ok, rep.problems)
        self.assertEqual(rep.files, 3)

    def test_direct(self):
        try:
            top, data, names = self.capture(io="direct")
        except OSError as e:
            self.skipTest("O_DIRECT unavailable here: %s" % e)
        self.check_dumps(list(adump.walk(top)), data, names, "file")

    def test_callback(self):
        files = {}

        def chunk(name, offset, data, is_last):
            files.setdefault(name, bytearray())
            buf = files[name]
            if len(buf) < offset + len(data):
                buf.extend(b"\0" * (offset + len(data) - len(buf)))
            buf[offset:offset + len(data)] = data

        data = sample()
        with adump.Session(sink="callback", callback=chunk) as s:
            st = s.stream()
            st.dump("Add", "add", inputs=[data["f32"], data["i64"]], outputs=[data["big"]])
            st.sync()
        self.assertEqual(len(files), 1)
        top = helpers.tmpdir("cb")
        path = os.path.join(top, os.path.basename(list(files)[0]))
        with open(path, "wb") as f:
            f.write(files[list(files)[0]])
        d = adump.open(path)
        np.testing.assert_array_equal(d.inputs[0], data["f32"])
        np.testing.assert_array_equal(d.inputs[1], data["i64"])
        np.testing.assert_array_equal(d.outputs[0], data["big"])

    def test_stats_content(self):
        top = helpers.tmpdir("stats")
        a = np.array([1.0, -2.0, np.nan, 4.0], np.float32)
        with adump.Session(top, content="stats") as s:
            s.stream().dump("Relu", "relu", inputs=[a], outputs=[np.maximum(a, 0)])
        csvs = [f for f in helpers.files_below(top) if f.endswith(".csv")]
        self.assertEqual(len(csvs), 1)
        with open(csvs[0]) as f:
            text = f.read()
        self.assertIn("-2", text)
        self.assertIn("4", text)
        # Read back: one Dump per CSV, its rows in .stats, names as the capture named them.
        d, = adump.walk(top)
        self.assertEqual((d.container, d.op_type, d.op_name), ("stats", "Relu", "relu"))
        self.assertEqual([(r["Input/Output"], r["Index"], r["Data Type"], r["Max Value"],
                           r["Min Value"], r["Nan Count"]) for r in d.stats],
                         [("Input", 0, "float32", 4, -2, 1), ("Output", 0, "float32", 4, 0, 1)])
        self.assertEqual([(t.kind, t.dtype, t.shape) for t in d.tensors],
                         [(adump._read.INPUT, "float32", (4,)),
                          (adump._read.OUTPUT, "float32", (4,))])
        self.assertEqual(repr(adump.open(d.path).stats), repr(d.stats))    # NaN average
        # As `adump verify`: a statistics capture has no dump file to check, and says so.
        rep = adump.verify(top)
        code, _ = helpers.tool("verify", top)
        self.assertEqual((rep.ok, code), (False, 1))

    def test_bfloat16(self):
        top = helpers.tmpdir("bf16")
        bits = np.array([0x3F80, 0xC000, 0x4049], np.uint16)       # 1.0, -2.0, 3.140625
        with adump.Session(top) as s:
            s.stream().dump("Cast", "c", outputs=[(bits, adump.DTYPES["bfloat16"], (3,))])
        d = list(adump.walk(top))[0]
        self.assertEqual(d.tensors[0].dtype, "bfloat16")
        self.assertEqual(d.tensors[0].dtype_code, adump.DTYPES["bfloat16"])
        np.testing.assert_array_equal(d.outputs[0], np.array([1.0, -2.0, 3.140625], np.float32))
        raw = adump.open(d.path, bf16="raw")
        np.testing.assert_array_equal(raw.outputs[0], bits)


INTERRUPTED = """
import signal, sys, numpy as np, adump
signal.signal(signal.SIGINT, signal.default_int_handler)   # also when started ignoring it
a = np.ones(1 << 18, np.float32)
with adump.Session(sys.argv[1], workers=1) as s:
    st = s.stream()
    n = 0
    while True:
        st.dump("Op", "op%d" % n, inputs=[a])
        n += 1
        print(n, flush=True)
"""


class Interrupted(unittest.TestCase):
    def test_ctrl_c(self):
        """Ctrl-C in the middle of a capture: every dump handed over is complete."""
        top = helpers.tmpdir("sigint")
        p = subprocess.Popen([sys.executable, "-c", INTERRUPTED, top], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        handed = 0
        for line in p.stdout:
            handed = int(line)
            if handed >= 50:
                break
        p.send_signal(signal.SIGINT)
        # What the line iterator read ahead is in p.stdout's buffer: read it from there.
        rest = p.stdout.read()
        err = p.stderr.read()
        p.wait(timeout=60)
        handed = max([handed] + [int(x) for x in rest.split()])
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("KeyboardInterrupt", err)
        rep = adump.verify(top)
        self.assertTrue(rep.ok, rep.problems)
        # The one in flight when the signal came may or may not have been handed over.
        self.assertIn(rep.files, (handed, handed + 1))


class BadInput(unittest.TestCase):
    def setUp(self):
        self.top = helpers.tmpdir("bad")

    def test_unsupported_dtypes(self):
        with adump.Session(self.top) as s:
            st = s.stream()
            for bad, word in ((np.array([1 + 2j]), "complex128"),
                              (np.array([object()], dtype=object), "object"),
                              (np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]), "('a'"),
                              (np.array(["x"]), "<U1")):
                with self.assertRaises(TypeError) as cm:
                    st.dump("Op", "op", inputs=[bad])
                self.assertIn(word, str(cm.exception))
            st.sync()
            self.assertEqual(s.stats()["files_completed"], 0)

    def test_attributes(self):
        with adump.Session(self.top) as s:
            st = s.stream()
            st.dump("Op", "a", inputs=[np.zeros(2)], attrs={"module": "Module.x.forward.0"},
                    dfx_message='{"k": 1}')
            st.dump("Op", "b", inputs=[np.zeros(2)], attrs=[("n", "1"), ("m", "")])
            for bad in ({"module": 3}, [("only-name",)], 5, {"x": None}):
                with self.assertRaises(TypeError):
                    st.dump("Op", "c", inputs=[np.zeros(2)], attrs=bad)
            with self.assertRaises(ValueError):
                st.dump("Op", "c", attrs={str(i): "" for i in range(257)})
            st.sync()
            self.assertEqual(s.stats()["files_completed"], 2)
        dumps = {d.op_name: d for d in adump.walk(self.top)}
        self.assertEqual(sorted(dumps), ["a", "b"])
        self.assertEqual(dumps["a"].attrs, {"module": "Module.x.forward.0"})
        self.assertEqual(dumps["a"].dfx_message, '{"k": 1}')
        self.assertEqual(dumps["b"].attrs, {"n": "1", "m": ""})

    def test_stats_keys(self):
        # The native call's statistics keys (adump.torch's): one int per tensor, else a clear
        # error before anything is handed over; a reused key gives the first tensor's
        # statistics, as the caller's word says.
        with adump.Session(self.top, content="stats") as s:
            st = s.stream()
            a = np.arange(1, 5, dtype=np.float32)
            st._st.dump("Op", "a", [a], [], True, stats_keys=[9])
            for bad, err in (([9, 9], ValueError), (["x"], TypeError), ([-1], OverflowError),
                             (5, TypeError)):
                with self.assertRaises(err, msg=repr(bad)):
                    st._st.dump("Op", "bad", [a], [], True, stats_keys=bad)
            a[:] = 7
            st._st.dump("Op", "b", [a], [], True, stats_keys=[9])
            st._st.dump("Op", "c", [a], [], True, stats_keys=[0])
            st.sync()
            self.assertEqual(s.stats()["files_completed"], 3)
        top = {d.op_name: d.stats[0]["Max Value"] for d in adump.walk(self.top)}
        self.assertEqual(top, {"a": 4, "b": 4, "c": 7})        # b: a's statistics, its key

    def test_unwritable_path(self):
        blocker = os.path.join(self.top, "file")
        open(blocker, "w").close()
        with self.assertRaises(OSError) as cm:
            adump.Session(os.path.join(blocker, "dumps"))
        self.assertIn(cm.exception.errno, (20, 13, 30))          # ENOTDIR, EACCES, EROFS

    def test_bad_config(self):
        with self.assertRaises(adump.ConfigError):
            adump.Session(self.top, compress="zip")
        with self.assertRaises(adump.ConfigError):
            adump.Session(self.top, no_such_key=1)

    def test_closed(self):
        s = adump.Session(self.top)
        st = s.stream()
        st.close()
        with self.assertRaises(adump.ClosedError):
            st.dump("Op", "op", inputs=[np.zeros(2)])
        s.close()
        with self.assertRaises(adump.ClosedError):
            s.stream()
        with self.assertRaises(adump.ClosedError):
            s.stats()
        s.close()                                             # twice is fine

    def test_other_threads_stream(self):
        with adump.Session(self.top) as s:
            st = s.stream()
            errors = []

            def intruder():
                try:
                    st.dump("Op", "op", inputs=[np.zeros(2)])
                except adump.ThreadError as e:
                    errors.append(e)
                # Its own stream works.
                own = s.stream()
                own.dump("Op", "mine", inputs=[np.zeros(2)])
                own.sync()
            t = threading.Thread(target=intruder)
            t.start()
            t.join()
            self.assertEqual(len(errors), 1)
            self.assertEqual(errors[0].code, 4107)
            self.assertIn("another thread", str(errors[0]))
        self.assertEqual([d.op_name for d in adump.walk(self.top)], ["mine"])

    def test_read_errors(self):
        with self.assertRaises(FileNotFoundError):
            adump.open(os.path.join(self.top, "missing"))
        bad = os.path.join(self.top, "Op.x.1.1.1")
        with open(bad, "wb") as f:
            f.write(b"\x40" + b"\0" * 7 + b"short")
        with self.assertRaises(adump.IncompleteError) as cm:
            adump.open(bad)
        self.assertEqual(cm.exception.code, 4106)
        self.assertIn(bad, cm.exception.message)
        rep = adump.verify(self.top)
        self.assertFalse(rep.ok)
        self.assertEqual(rep.problems[0][1], bad)

    def test_name_fields(self):
        # task_id and stream_id come from the fields after the op name, as msaccucmp reads
        # them: with or without a stream id, with an FFTS+ subtask suffix, and .lz4.
        from adump._read import _split_name
        self.assertEqual(_split_name("/d/0/Add.add_1.12.3.1764633600000000"), ("Add", 12, 3))
        self.assertEqual(_split_name("Add.add_1.12.3.1764633600000000.lz4"), ("Add", 12, 3))
        self.assertEqual(_split_name("Add.add_1.12.1764633600000000"), ("Add", 12, None))
        self.assertEqual(_split_name("Conv2D.conv.7.2.1764633600000000.1.4.0.0"),
                         ("Conv2D", 7, 2))
        self.assertEqual(_split_name("Add.add_1.x.3.1764633600000000"), ("Add", None, None))
        self.assertEqual(_split_name("notes.txt"), ("notes", None, None))


if __name__ == "__main__":
    unittest.main()
