# SPDX-License-Identifier: Apache-2.0
"""Reading msprobe's layout (issue 24 item 2: compare, walk and verify read both layouts).

- .pt files torch 1.13 saves here (every dtype msprobe dumps, a scalar, an empty tensor, a
  Parameter, a view into a larger storage) are located by _adump.pt_read with their dtype,
  shape and bytes; a transposed view is refused with a message naming the file.
- A small model's adump.torch capture (CANN files) and its `adump export --msprobe` compare
  with themselves and each other, every compared tensor passing; a copy of the export with
  one tensor changed (saved by torch.save) diverges first at that op, from either layout.
- msprobe statistics-only dump.json files (no .pt) compare in statistics mode; verify and
  walk read them.
Exits 77 without torch."""
import json
import os
import shutil
import sys
import unittest
from unittest import mock

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("test_msprobe_read: torch is not installed (python3-torch): skipped")
    sys.exit(77)

import adump  # noqa: E402
import adump.torch  # noqa: E402
from adump import _adump  # noqa: E402


def raw_bytes(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


class PtRead(unittest.TestCase):
    def test_torch_saved(self):
        d = helpers.tmpdir("ptr")
        torch.manual_seed(0)
        base = torch.randn(2, 3)
        cases = {
            "f32": base, "f16": base.half(), "bf16": base.bfloat16(), "f64": base.double(),
            "i8": (base * 10).to(torch.int8), "u8": (base.abs() * 10).to(torch.uint8),
            "i16": (base * 100).to(torch.int16), "i32": (base * 100).to(torch.int32),
            "i64": (base * 100).to(torch.int64), "bool": base > 0,
            "c64": torch.complex(base, -base), "c128": torch.complex(base, base).to(torch.complex128),
            "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 4),
            "big": torch.arange(70000, dtype=torch.int64),
        }
        for name, t in cases.items():
            path = os.path.join(d, name + ".pt")
            torch.save(t, path)
            loc = _adump.pt_read(path, checked=True)
            self.assertEqual(loc["shape"], tuple(t.shape), name)
            self.assertEqual(loc["bytes"], t.numel() * t.element_size(), name)
            with open(path, "rb") as f:
                f.seek(loc["offset"])
                self.assertEqual(f.read(loc["bytes"]), raw_bytes(t), name)
            self.assertFalse(loc["is_parameter"])
        # a Parameter, and a row of a larger tensor (torch saves the whole storage)
        p = nn.Parameter(torch.randn(4, 2))
        torch.save(p, os.path.join(d, "param.pt"))
        loc = _adump.pt_read(os.path.join(d, "param.pt"))
        self.assertTrue(loc["is_parameter"])
        self.assertTrue(loc["requires_grad"])
        self.assertEqual(loc["shape"], (4, 2))
        whole = torch.arange(12, dtype=torch.float32).reshape(4, 3)
        torch.save(whole[2], os.path.join(d, "row.pt"))
        loc = _adump.pt_read(os.path.join(d, "row.pt"))
        with open(os.path.join(d, "row.pt"), "rb") as f:
            f.seek(loc["offset"])
            self.assertEqual(f.read(loc["bytes"]), raw_bytes(whole[2]))
        # a transposed view: refused, naming the file
        torch.save(whole.t(), os.path.join(d, "t.pt"))
        with self.assertRaises(adump.Error) as cm:
            _adump.pt_read(os.path.join(d, "t.pt"))
        self.assertIn("t.pt", str(cm.exception))
        self.assertIn("not contiguous", str(cm.exception))
        # something else torch can save
        torch.save({"a": 1}, os.path.join(d, "dict.pt"))
        with self.assertRaises(adump.Error) as cm:
            _adump.pt_read(os.path.join(d, "dict.pt"))
        self.assertIn("dict.pt", str(cm.exception))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.act = nn.ReLU()
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        return self.out(self.act(self.fc(x)))


def capture(path):
    torch.manual_seed(0)
    m = Net()
    x = torch.randn(3, 8)
    with adump.torch.capture(m, path, level="module", content="tensor") as cap:
        m(x).sum().backward()
        cap.step()


class CompareLayouts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cann = helpers.tmpdir("msr-cann")
        capture(cls.cann)
        cls.ms = helpers.tmpdir("msr-ms")
        code, text = helpers.tool("export", "--msprobe", cls.cann, cls.ms)
        assert code == 0, text
        cls.cann_rank = os.path.join(cls.cann, "step0", "rank0", "0")
        cls.ms_rank = os.path.join(cls.ms, "step0", "rank0")

    def assert_all_pass(self, res):
        compared = [r for r in res if r["verdict"] != "none"]
        self.assertTrue(compared)
        for r in compared:
            self.assertEqual(r["verdict"], "pass", r)
        self.assertIsNone(res.summary["first_divergent_op"])

    def test_same(self):
        res = adump.compare(self.ms_rank, self.ms_rank)
        self.assert_all_pass(res)
        self.assertEqual(res.summary["my_only_count"], 0)
        res = adump.compare(self.cann_rank, self.ms_rank, msprobe=True)
        self.assert_all_pass(res)
        names = {r["NPUDump"] for r in res if r["verdict"] == "pass"}
        self.assertIn("Module_fc_Linear_forward_0", names)
        self.assertIn("Module_out_Linear_backward_0", names)
        # the CLI, both ways, and --recursive over the two roots
        for a, b in ((self.ms_rank, self.cann_rank), (self.cann_rank, self.ms_rank)):
            code, text = helpers.tool("compare", "-m", a, "-g", b, "-out",
                                      helpers.tmpdir("msr-out"))
            self.assertIn(code, (0, 2), text)
            self.assertIn("every compared tensor passes", text)
        code, text = helpers.tool("compare", "-m", self.cann, "-g", self.ms, "--recursive",
                                  "-out", helpers.tmpdir("msr-rec"))
        self.assertIn("1 pairs compared", text)
        self.assertIn("step0/rank0", text)

    def test_perturbed(self):
        bad = helpers.tmpdir("msr-bad")
        shutil.rmtree(bad)
        shutil.copytree(self.ms, bad)
        victim = os.path.join(bad, "step0", "rank0", "dump_tensor_data",
                              "Module.act.ReLU.forward.0.output.0.pt")
        t = torch.load(victim)
        torch.save(t * 3 + 1, victim)
        self.assertTrue(adump.verify(bad))
        bad_rank = os.path.join(bad, "step0", "rank0")
        for golden in (self.ms_rank, self.cann_rank):
            res = adump.compare(bad_rank, golden)
            self.assertEqual(res.summary["first_divergent_op"], "Module_act_ReLU_forward_0")
            self.assertIn(":output:0", res.summary["first_divergent_tensor"])
        res = adump.compare(self.cann_rank, bad_rank)
        self.assertEqual(res.summary["first_divergent_op"], "Module_act_ReLU_forward_0")
        # a .pt whose shape is not dump.json's: verify names it, compare says why
        torch.save(torch.zeros(5), victim)
        rep = adump.verify(bad)
        self.assertFalse(rep)
        self.assertTrue(any("Module.act.ReLU.forward.0.output.0.pt" in p[1] and
                            "dump.json says" in p[2] for p in rep.problems), rep.problems)
        code, text = helpers.tool("verify", bad)
        self.assertEqual(code, 1, text)
        self.assertIn("Module.act.ReLU.forward.0.output.0.pt", text)
        res = adump.compare(bad_rank, self.ms_rank)
        row = [r for r in res if r["NPUDump"] == "Module_act_ReLU_forward_0"][0]
        self.assertIn("dump.json says", row["CompareFailReason"])

    def test_walk(self):
        dumps = list(adump.walk(self.ms))
        names = [d.op_name for d in dumps]
        self.assertEqual(names[0], "Module.fc.Linear.forward.0")
        cann = {d.op_name: d for d in adump.walk(self.cann)}
        for d in dumps:
            if d.op_name in cann and len(d.outputs) == len(cann[d.op_name].outputs):
                for a, b in zip(d.outputs, cann[d.op_name].outputs):
                    np.testing.assert_array_equal(a, b)
        self.assertEqual(dumps[0].op_type, "Linear")
        self.assertEqual(dumps[0].step, 0)
        self.assertEqual(dumps[0].rank, 0)
        self.assertEqual(dumps[0].stats[0]["arg"], "input.0")


def stats_json(path, scale):
    t = lambda mx, shape: {"type": "torch.Tensor", "dtype": "torch.float32", "shape": shape,  # noqa: E731
                           "Max": mx, "Min": -1.0, "Mean": 0.25, "Norm": 2.0,
                           "requires_grad": False}
    doc = {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None,
           "data": {
               "Functional.linear.0.forward": {"input_args": [t(1.0, [2, 3]), {"type": "int", "value": 3}],
                                               "input_kwargs": {}, "output": [t(2.0, [2, 4])]},
               "Functional.relu.0.forward": {"input_args": [t(2.0, [2, 4])], "input_kwargs": {},
                                             "output": [t(2.0 * scale, [2, 4])]},
               "Tensor.sum.0.forward": {"input_args": [t(2.0 * scale, [2, 4])], "input_kwargs": {},
                                        "output": [t(5.0 * scale, [])]},
           }}
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "dump.json"), "w") as f:
        json.dump(doc, f)


class Statistics(unittest.TestCase):
    def test_statistics_only(self):
        a = os.path.join(helpers.tmpdir("msr-sa"), "step0", "rank0")
        b = os.path.join(helpers.tmpdir("msr-sb"), "step0", "rank0")
        stats_json(a, 1.0)
        stats_json(b, 3.0)
        res = adump.compare(a, a)
        self.assertIn("Max diff", res.columns)
        self.assertIsNone(res.summary["first_divergent_op"])
        self.assertEqual(res.summary["tensor_count"], 6)
        res = adump.compare(b, a)
        self.assertEqual(res.summary["first_divergent_op"], "Functional_relu_0_forward")
        row = [r for r in res if r["NPUDump"] == "Functional_relu_0_forward"][1]
        self.assertEqual(row["Max diff"], 4.0)
        rep = adump.verify(os.path.dirname(os.path.dirname(a)))
        self.assertTrue(rep, rep.problems)
        code, text = helpers.tool("verify", a)
        self.assertEqual(code, 0, text)
        dumps = list(adump.walk(a))
        self.assertEqual([d.op_name for d in dumps], ["Functional.linear.0.forward",
                                                      "Functional.relu.0.forward",
                                                      "Tensor.sum.0.forward"])
        self.assertEqual(dumps[0].stats[0]["Max"], 1.0)
        self.assertEqual(dumps[0].inputs, [None])
        # a cut dump.json: verify and compare say so
        with open(os.path.join(b, "dump.json"), "r+") as f:
            f.truncate(100)
        code, text = helpers.tool("verify", b)
        self.assertEqual(code, 1, text)
        self.assertIn("not JSON", text)
        with self.assertRaises(adump.Error):
            adump.compare(b, a)


class StaysInside(unittest.TestCase):
    """A dump.json's data_name naming a path ("../../secret.pt", an absolute path), or a
    dump_tensor_data/ entry that is a link out, is refused by walk (adump.CorruptError) and
    listed by verify; the file outside is never read (issue 30 item 2)."""

    def make(self, data_name, link=None):
        top = helpers.tmpdir("msr-inside")
        rank = os.path.join(top, "cap", "step0", "rank0")
        os.makedirs(os.path.join(rank, "dump_tensor_data"))
        secret = os.path.join(top, "secret.pt")
        torch.save(torch.arange(4, dtype=torch.float32), secret)
        if link:
            os.symlink(secret, os.path.join(rank, "dump_tensor_data", link))
        entry = {"input_args": [{"type": "torch.Tensor", "dtype": "torch.float32",
                                 "shape": [4], "Max": 3.0, "Min": 0.0, "Mean": 1.5,
                                 "Norm": 3.74, "requires_grad": False,
                                 "data_name": data_name}],
                 "input_kwargs": {}, "output": []}
        with open(os.path.join(rank, "dump.json"), "w") as f:
            json.dump({"task": "tensor", "level": "L1", "dump_data_dir": "",
                       "data": {"Torch.add.0.forward": entry}}, f)
        return top, rank, secret

    def test_refused(self):
        for name, link in (("../../secret.pt", None), ("ABSOLUTE", None), ("x.pt", "x.pt")):
            top, rank, secret = self.make(name, link)
            if name == "ABSOLUTE":
                top, rank, secret = self.make(secret)
            with self.assertRaises(adump.CorruptError, msg=name):
                for d in adump.walk(os.path.join(top, "cap")):
                    d.inputs
            rep = adump.verify(os.path.join(top, "cap"))
            self.assertFalse(rep.ok, name)
            text = "\n".join(str(p) for p in rep.problems)
            self.assertTrue("not a file name" in text or "symbolic link" in text, text)

    def test_link_swapped_in_after_the_check(self):
        """A .pt that is a plain file when the reader looks and a link out when it reads
        (swapped in between, as a racing attacker would): what is read is the file looked
        at, never the file outside. The .pt was checked by path, then opened by path."""
        top, rank, secret = self.make("x.pt")
        path = os.path.join(rank, "dump_tensor_data", "x.pt")
        torch.save(torch.zeros(4, dtype=torch.float32), path)
        real = adump._adump.pt_read
        swaps = []

        def swapping(*args, **kw):
            tmp = path + ".swap"
            os.symlink(secret, tmp)
            os.replace(tmp, path)       # the link takes the checked file's name
            swaps.append(path)
            return real(*args, **kw)

        with mock.patch.object(adump._adump, "pt_read", swapping):
            try:
                got = [d.inputs[0] for d in adump.walk(os.path.join(top, "cap"))]
            except adump.CorruptError:
                got = []
            self.assertTrue(swaps)
            for a in got:
                self.assertFalse(np.array_equal(a, np.arange(4, dtype=np.float32)),
                                 "read the file outside the capture")


if __name__ == "__main__":
    unittest.main(verbosity=2)
