# SPDX-License-Identifier: Apache-2.0
"""Issue 31: no divergence where nothing diverged, and the real ones still found. A small
model with a BatchNorm, a Linear inside a Block and torchvision's StochasticDepth pattern
(torch.empty(size).bernoulli_(p)) trains one step under adump.torch, in both formats (CANN,
msprobe), at module and op level, in statistics and tensor mode. Two clean runs (one on one
thread, one on two: float32 sums taken in another order) give no divergence; a NaN weight,
a 1e-3 relative weight noise and a BatchNorm running_var x4 are named as the first
divergence; uninitialized memory gets its own verdict; scan names the Linear (or where the NaN
came in), not the Block around it. Exits 77 without torch."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("test_clean_runs: torch is not installed (python3-torch): skipped")
    sys.exit(77)

import adump  # noqa: E402
import adump.torch  # noqa: E402


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1, bias=False)   # as before a BatchNorm
        self.bn = nn.BatchNorm2d(16)
        self.proj = nn.Linear(16 * 16 * 16, 64)
        self.block = Block()
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x)))
        # torchvision's StochasticDepth (mode "row"): uninitialized memory, then bernoulli_
        keep = torch.empty(h.shape[0], 1, 1, 1).bernoulli_(0.9) / 0.9
        h = self.proj((h * keep).flatten(1))
        return self.head(self.block(h))


def nan_weight(m):
    m.block.fc.weight[3, 5] = float("nan")


def noise_weight(m):
    g = torch.Generator().manual_seed(7)
    m.block.fc.weight.mul_(1 + 1e-3 * torch.randn(m.block.fc.weight.shape, generator=g))


def running_var_x4(m):
    m.bn.running_var.mul_(4)


def run(tag, fmt, level, content, perturb=None, threads=1, train=True):
    """One training step under capture (on @threads threads); the capture's top directory."""
    torch.manual_seed(0)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model = Net()
        model.train(train)
        if perturb is not None:
            with torch.no_grad():
                perturb(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(1)
        top = helpers.tmpdir(tag)
        with adump.torch.capture(model, top, level=level, backward=True, content=content,
                                 format=fmt, parameters=True) as cap:
            # 65536 elements a BatchNorm output: torch sums them on as many threads as it has
            x = torch.randn(16, 3, 16, 16, generator=g)
            torch.manual_seed(2)        # bernoulli_'s draws: the same in every run
            loss = model(x).logsumexp(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            cap.step()
        assert not cap.losses, cap.losses
    finally:
        torch.set_num_threads(before)
    return top


def divergent(rows):
    """The pairs' rows whose verdict is warning or error, as (pair, TensorIndex, reason)."""
    out = []
    for pair in rows.summary["pairs"]:
        res = adump.compare(pair["my"], pair["golden"])
        out += [(pair["pair"], r["TensorIndex"], r["reason"]) for r in res
                if r["verdict"] in ("warning", "error")]
    return out


CASES = [(fmt, level) for fmt in ("cann", "msprobe") for level in ("module", "op")]


class CleanRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.golden = {}
        for fmt, level in CASES:
            for content in ("stats", "tensor"):
                key = (fmt, level, content)
                cls.golden[key] = run("cr-golden-%s-%s-%s" % key, *key)

    def compare(self, my, key):
        return adump.compare(my, self.golden[key], recursive=True)

    def test_clean_runs_do_not_diverge(self):
        for fmt, level in CASES:
            for content in ("stats", "tensor"):
                key = (fmt, level, content)
                with self.subTest(key=key):
                    my = run("cr-clean-%s-%s-%s" % key, *key, threads=2)
                    rows = self.compare(my, key)
                    self.assertIsNone(rows.summary["first_divergent"], divergent(rows))
                    self.assertEqual(rows.summary["exit_code"], 0)

    def test_uninitialized_memory_has_its_verdict(self):
        # torch.empty's output and bernoulli_'s first input: not compared, in both modes
        for fmt in ("cann", "msprobe"):
            for content in ("stats", "tensor"):
                key = (fmt, "op", content)
                with self.subTest(key=key):
                    pair = self.compare(self.golden[key], key).summary["pairs"][0]
                    res = adump.compare(pair["my"], pair["golden"])
                    un = [r["TensorIndex"] for r in res if r["verdict"] == "uninitialized"]
                    self.assertTrue(any("empty" in t and ":output:0" in t for t in un), un)
                    self.assertTrue(any("bernoulli_" in t and ":input:0" in t for t in un), un)
                    self.assertFalse([t for t in un if "empty" not in t and
                                      "bernoulli_" not in t], un)
                    for r in res:
                        if r["verdict"] == "uninitialized":
                            self.assertIn("uninitialized", r["CompareFailReason"])

    def first(self, perturb, fmt, level, content="stats", train=True):
        key = (fmt, level, content)
        golden = self.golden[key] if train else \
            run("cr-golden-eval-%s-%s-%s" % key, *key, train=False)
        my = run("cr-%s-%s-%s-%s" % ((perturb.__name__,) + key), *key, perturb=perturb,
                 train=train)
        first = self.compare(my, key) if train else adump.compare(my, golden, recursive=True)
        first = first.summary["first_divergent"]
        self.assertIsNotNone(first, (perturb.__name__, key))
        return first

    def check_weight(self, perturb):
        for fmt, level in CASES:
            with self.subTest(fmt=fmt, level=level):
                first = self.first(perturb, fmt, level)
                if level == "module":
                    # the Linear whose weight it is, as msprobe (dots) or a CANN file names it
                    self.assertIn(first["op"], ("Module.block.fc.Linear.forward.0",
                                                "Module_block_fc_Linear_forward_0"), first)
                else:
                    # the first aten op reading that weight: its transpose for addmm
                    self.assertRegex(first["op"], r"^Aten[._]t[._]1[._]forward$", first)
                    self.assertTrue(first["tensor"].endswith(":input:0"), first)

    def test_nan_weight_is_first(self):
        self.check_weight(nan_weight)

    def test_weight_noise_is_first(self):
        self.check_weight(noise_weight)

    def test_running_var_is_first(self):
        # running_var is read in eval mode: the BatchNorm's output changes
        for fmt, level in CASES:
            with self.subTest(fmt=fmt, level=level):
                first = self.first(running_var_x4, fmt, level, train=False)
                if level == "module":
                    self.assertIn(first["op"], ("Module.bn.BatchNorm2d.forward.0",
                                                "Module_bn_BatchNorm2d_forward_0"), first)
                else:
                    self.assertIn("batch_norm", first["op"], first)


def msprobe_stats(path, bn_mean, grad_norm, weight_max):
    """An msprobe statistics dump.json (msprobe's own statistics, summed by torch in float32):
    a BatchNorm's output and a parameter gradient as the issue found them, and a weight."""
    t = lambda shape, mx, mn, mean, norm: {  # noqa: E731
        "type": "torch.Tensor", "dtype": "torch.float32", "shape": shape, "Max": mx, "Min": mn,
        "Mean": mean, "Norm": norm, "requires_grad": True}
    doc = {"task": "statistics", "level": "L0", "framework": "pytorch", "dump_data_dir": None,
           "data": {
               "Module.bn.BatchNorm2d.forward.0": {
                   "input_args": [t([16, 32, 16, 16], 9.1, -8.7, 0.31, 900.0)],
                   "input_kwargs": {},
                   "output": [t([16, 32, 16, 16], 4.7, -4.3, bn_mean, 362.0)]},
               "Module.fc.Linear.forward.0": {
                   "input_args": [t([16, 64], 3.2, -3.1, 0.01, 32.0)], "input_kwargs": {},
                   "parameters": {"weight": t([64, 64], weight_max, -0.124, 1e-4, 4.6)},
                   "output": [t([16, 64], 2.9, -3.3, 0.02, 30.0)]},
               "Module.fc.Linear.parameters_grad.0": {
                   "weight": t([64, 64], 0.0031, -0.0029, 2e-7, grad_norm)},
           }}
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "dump.json"), "w") as f:
        json.dump(doc, f)


class MsprobeStatistics(unittest.TestCase):
    def test_summation_order_is_no_divergence(self):
        # mean 1.5e-11 against 2.3e-10 on a tensor of scale 4.7 (MeanRelativeErr 93 %), a
        # gradient's Norm 1.2e-4 apart: msprobe's own compare passes them, so does adump's
        golden = os.path.join(helpers.tmpdir("cr-ms-golden"), "step0", "rank0")
        msprobe_stats(golden, 2.3e-10, 0.0420, 0.125)
        clean = os.path.join(helpers.tmpdir("cr-ms-clean"), "step0", "rank0")
        msprobe_stats(clean, 1.5e-11, 0.0420 * (1 + 1.2e-4), 0.125)
        rows = adump.compare(clean, golden)
        self.assertIsNone(rows.summary["first_divergent_op"],
                          [(r["TensorIndex"], r["reason"]) for r in rows if r["reason"]])
        self.assertTrue(all(r["Result"] == "" for r in rows), [r["Result"] for r in rows])
        bn = [r for r in rows if r["TensorIndex"].startswith("Module_bn") and
              ":output" in r["TensorIndex"]][0]
        self.assertAlmostEqual(bn["MeanRelativeErr"], 93.47826086956522)
        # a weight whose largest element moved by 1e-3 of itself still diverges
        noisy = os.path.join(helpers.tmpdir("cr-ms-noisy"), "step0", "rank0")
        msprobe_stats(noisy, 2.3e-10, 0.0420, 0.125 * (1 + 1e-3))
        rows = adump.compare(noisy, golden)
        self.assertEqual(rows.summary["first_divergent_op"], "Module_fc_Linear_forward_0")


class Scan(unittest.TestCase):
    def test_nan_weight_origin(self):
        for fmt in ("cann", "msprobe"):
            for level in ("module", "op"):
                for content in ("stats", "tensor"):
                    key = (fmt, level, content)
                    with self.subTest(key=key):
                        res = adump.scan(run("sc-nan-%s-%s-%s" % key, *key, perturb=nan_weight))
                        kinds = [(d["kind"], d["op_name"]) for d in res]
                        self.assertIsNotNone(res.origin, kinds)
                        # where the NaN came in: the weight, at the first op reading it
                        self.assertEqual(res.origin["kind"], "entered", kinds)
                        if level == "module":
                            self.assertIn(res.origin["op_name"],
                                          ("Module.block.fc.Linear.forward.0",
                                           "Module_block_fc_Linear_forward_0"), kinds)
                            self.assertIn("made by no captured op", res.origin["message"])
                            if not (fmt == "cann" and content == "stats"):
                                # the parameter by name where the capture says which it is
                                self.assertTrue(res.origin["message"].startswith(
                                    "first seen in the weight of Module"), res.origin)
                            # the Block around it is no second origin
                            block = [d for d in res if d["op_name"].replace("_", ".") ==
                                     "Module.block.Block.forward.0"]
                            self.assertEqual([d["kind"] for d in block], ["enclosing"], kinds)
                        else:
                            self.assertRegex(res.origin["op_name"],
                                             r"^Aten[._]t[._]1[._]forward$", kinds)
                            if fmt == "cann" and content == "tensor":
                                # the module call it ran in, from the dump's header
                                self.assertIn("input:0 of Aten.t.1.forward (in Module.block."
                                              "fc.Linear.forward.0), made by no captured op",
                                              res.origin["message"])
                        self.assertEqual([k for k in kinds if k[0] == "origin"], [], kinds)

    def test_nan_made_inside(self):
        # Without parameters among the inputs: the Linear makes the NaN (its output), the
        # Block around it is "enclosing", not a second origin.
        def nan_out(mod, args, out):
            return out * float("nan") if mod is target else out
        for fmt in ("cann", "msprobe"):
            with self.subTest(fmt=fmt):
                torch.manual_seed(0)
                model = Net()
                target = model.block.fc
                h = target.register_forward_hook(nan_out)
                top = helpers.tmpdir("sc-made-" + fmt)
                with adump.torch.capture(model, top, level="module", backward=False,
                                         format=fmt, parameters=False) as cap:
                    model(torch.randn(2, 3, 16, 16))
                    cap.step()
                h.remove()
                res = adump.scan(top)
                kinds = [(d["kind"], d["op_name"].replace("_", ".")) for d in res]
                self.assertEqual(res.origin["op_name"].replace("_", "."),
                                 "Module.block.fc.Linear.forward.0", kinds)
                self.assertEqual(res.origin["kind"], "origin", kinds)
                self.assertEqual([k for k in kinds if k[0] == "origin"],
                                 [("origin", "Module.block.fc.Linear.forward.0")], kinds)
                self.assertIn(("enclosing", "Module.block.Block.forward.0"), kinds)


if __name__ == "__main__":
    unittest.main()
