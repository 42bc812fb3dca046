# SPDX-License-Identifier: Apache-2.0
"""Issue 22 items 2, 3, 5 on small adump.torch captures: compare --recursive pairs steps and
ranks, modules whose names differ only by '.' and '_' are both compared, adump scan names
the op that made a NaN (tensor and statistics dumps)."""
import json
import os
import shutil
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("torch not available: skipped")
    sys.exit(77)

import adump  # noqa: E402
import adump.torch  # noqa: E402


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def capture_steps(top, bump_step=None):
    """Three steps of the same input; @bump_step's input differs."""
    m = mlp()
    torch.manual_seed(1)
    x = torch.randn(3, 4)
    with adump.torch.capture(m, top, level="module") as cap:
        for step in range(3):
            xx = x.clone()
            if step == bump_step:
                xx[0, 0] += 3.0
            m(xx)
            cap.step()


class Dotted(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Module()
        self.a.b = nn.Linear(4, 4)
        self.a_b = nn.Linear(4, 4)

    def forward(self, x):
        return self.a_b(self.a.b(x))


def capture_dotted(top, bump):
    torch.manual_seed(0)
    m = Dotted()
    if bump:
        with torch.no_grad():
            m.a_b.weight[0, 0] += 1.0
    with adump.torch.capture(m, top, level="module", keep_root=True) as cap:
        m(torch.ones(2, 4))
        cap.step()


def capture_nan(top, content="tensor"):
    m = mlp()
    with torch.no_grad():
        m[2].weight[0, 1] = float("nan")
    torch.manual_seed(1)
    with adump.torch.capture(m, top, level="module", content=content) as cap:
        m(torch.randn(3, 4))
        cap.step()


class TestRecursivePairs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.golden = helpers.tmpdir("pair-golden")
        cls.my = helpers.tmpdir("pair-my")
        capture_steps(cls.golden)
        capture_steps(cls.my, bump_step=0)

    def test_cli_names_step0(self):
        out = helpers.tmpdir("pair-out")
        rc, text = helpers.tool("compare", "-m", self.my, "-g", self.golden, "--recursive",
                                "-out", out, "--json")
        self.assertEqual(rc, 0, text)
        objs = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
        self.assertEqual([o["pair"] for o in objs],
                         ["step0/rank0/0", "step1/rank0/0", "step2/rank0/0"])
        self.assertEqual(objs[0]["first_divergent"]["op"], "Module_0_Linear_forward_0")
        self.assertIsNone(objs[1]["first_divergent"])
        self.assertIsNone(objs[2]["first_divergent"])
        self.assertIn("first divergent pair: step0/rank0/0 (step 0, rank 0)", text)
        names = sorted(os.listdir(out))
        self.assertEqual(len([n for n in names if n.startswith("result_step")]), 3, names)
        self.assertEqual(len([n for n in names if n.startswith("summary_")]), 1, names)
        # The same second again into the same directory: nothing overwritten.
        rc, text = helpers.tool("compare", "-m", self.my, "-g", self.golden, "--recursive",
                                "-out", out, "--quiet")
        self.assertEqual(rc, 0, text)
        self.assertEqual(len(os.listdir(out)), 2 * len(names))

    def test_python_names_step0(self):
        r = adump.compare(self.my, self.golden, recursive=True)
        first = r.summary["first_divergent"]
        self.assertEqual((first["step"], first["rank"], first["op"]),
                         (0, 0, "Module_0_Linear_forward_0"))
        self.assertEqual(r.summary["unpaired"], [])
        self.assertEqual(r.summary["exit_code"], 0)
        self.assertEqual(len({row["Pair"] for row in r}), 3)

    def test_layouts_differ(self):
        my = helpers.tmpdir("pair-my-extra")
        shutil.rmtree(my)
        shutil.copytree(self.my, my, symlinks=True)
        shutil.copytree(os.path.join(my, "step2"), os.path.join(my, "step3"))
        out = helpers.tmpdir("pair-out2")
        rc, text = helpers.tool("compare", "-m", my, "-g", self.golden, "--recursive",
                                "-out", out)
        self.assertEqual(rc, 2, text)
        self.assertIn("step3/rank0/0 has no counterpart", text)
        self.assertIn("first divergent pair: step0/rank0/0", text)
        r = adump.compare(my, self.golden, recursive=True)
        self.assertEqual(r.summary["unpaired"], ["step3/rank0/0"])
        self.assertEqual(r.summary["exit_code"], 2)

    def test_same_second_single(self):
        out = helpers.tmpdir("pair-out3")
        d = ("step0", "rank0", "0")
        for _ in range(2):
            rc, text = helpers.tool("compare", "-m", os.path.join(self.my, *d), "-g",
                                    os.path.join(self.golden, *d), "-out", out, "--quiet")
            self.assertEqual(rc, 0, text)
        self.assertEqual(len([n for n in os.listdir(out) if n.startswith("result_")]), 2)


class TestDottedNames(unittest.TestCase):
    def test_a_b_and_a_dot_b(self):
        golden, my = helpers.tmpdir("dot-golden"), helpers.tmpdir("dot-my")
        capture_dotted(golden, False)
        capture_dotted(my, True)
        d = ("step0", "rank0", "0")
        r = adump.compare(os.path.join(my, *d), os.path.join(golden, *d))
        ops = sorted({row["NPUDump"] for row in r})
        self.assertIn("Module.a.b.Linear.forward.0", ops)
        self.assertIn("Module.a_b.Linear.forward.0", ops)
        self.assertEqual(r.summary["matched_count"], 3)
        first = r[r.summary["first_divergent_row"]]
        self.assertEqual(first["NPUDump"], "Module.a_b.Linear.forward.0")


class OneDotted(nn.Module):
    def __init__(self, dotted):
        super().__init__()
        if dotted:
            self.a = nn.Module()
            self.a.b = nn.Linear(4, 4)
            self.f = self.a.b
        else:
            self.a_b = nn.Linear(4, 4)
            self.f = self.a_b

    def forward(self, x):
        return self.f(x)


class TestDottedApart(unittest.TestCase):
    def test_one_each_side_is_not_matched(self):
        # One dump a side whose file names are alike: a.b against a_b is not the same op.
        tops = []
        for dotted in (True, False):
            top = helpers.tmpdir("dot-one")
            torch.manual_seed(0)
            m = OneDotted(dotted)
            with adump.torch.capture(m, top, level="module", scope=["Module.a*"]) as cap:
                m(torch.ones(2, 4))
                cap.step()
            tops.append(os.path.join(top, "step0", "rank0", "0"))
        r = adump.compare(tops[0], tops[1])
        bad = [row for row in r if "Not the same op" in row["CompareFailReason"]]
        self.assertEqual(len(bad), 1, [row["CompareFailReason"] for row in r])
        self.assertIn("Module.a.b.Linear.forward.0", bad[0]["CompareFailReason"])
        self.assertIn("Module.a_b.Linear.forward.0", bad[0]["CompareFailReason"])
        self.assertEqual(r.summary["exit_code"], 2)


class TestScan(unittest.TestCase):
    def check(self, content, name):
        top = helpers.tmpdir("scan-" + content)
        capture_nan(top, content)
        rc, text = helpers.tool("scan", "--json", top)
        self.assertEqual(rc, 1, text)
        objs = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
        self.assertEqual(objs[-1]["summary"]["origin"], name)
        self.assertEqual(objs[0]["kind"], "origin")
        self.assertEqual(objs[0]["op_name"], name)
        self.assertEqual(objs[0]["first_tensor"], "output:0")
        s = adump.scan(top)
        self.assertEqual(s.origin["op_name"], name)
        self.assertGreater(s.origin["outputs"]["nan"], 0)
        self.assertEqual(s.origin["inputs"]["nan"], 0)

    def test_tensor_dumps(self):
        self.check("tensor", "Module.2.Linear.forward.0")

    def test_stats_dumps(self):
        self.check("stats", "Module_2_Linear_forward_0")

    def test_large_tensors(self):
        # Past the vector loop and its tail: float16 at the limit mid-tensor, Inf in the
        # last float32 element, a clean float16 op, and one whose inputs carry the Inf on.
        import numpy as np
        top = helpers.tmpdir("scan-large")
        n = 3000001
        a = np.ones(n, np.float16)
        b = a.copy()
        b[n // 2 + 7] = 65504
        c = np.ones(n, np.float32)
        c[n - 1] = np.inf
        with adump.Session(top) as s:
            st = s.stream()
            for args in (("A", "clean16", [a], [a]), ("B", "limit16", [a], [b]),
                         ("C", "inf32", [a], [c]), ("D", "after", [c], [a])):
                st.dump(*args)
                time.sleep(0.002)
        r = adump.scan(top)
        self.assertEqual([(o["kind"], o["op_name"]) for o in r],
                         [("origin", "limit16"), ("origin", "inf32"), ("reached", "after")])
        self.assertEqual(r[0]["outputs"]["fp16_limit"], 1)
        self.assertEqual(r[1]["outputs"]["inf"], 1)
        self.assertEqual(r[2]["inputs"]["inf"], 1)
        self.assertEqual(r.origin["op_name"], "limit16")

    def test_clean_and_empty(self):
        top = helpers.tmpdir("scan-clean")
        capture_steps(top)
        rc, text = helpers.tool("scan", top)
        self.assertEqual(rc, 0, text)
        self.assertEqual(len(adump.scan(top)), 0)
        empty = helpers.tmpdir("scan-empty")
        rc, text = helpers.tool("scan", empty)
        self.assertEqual(rc, 1, text)
        self.assertIn("no dump files", text)
        with self.assertRaises(adump.NotFoundError):
            adump.scan(empty)


if __name__ == "__main__":
    unittest.main()
