# SPDX-License-Identifier: Apache-2.0
"""Issue 22: the first divergence, found right. A small transformer-ish model trained two steps
under adump.torch, once clean and once with one weight of layers.1.linear1 perturbed (NaN,
Inf, 1e-2 noise): compare's first divergent row is that module's forward (not its backward,
not a later op), NaN/Inf give exit status 100 and a reason, and statistics-mode captures
(content="stats") find the same op. Exits 77 without torch."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("test_verdict: torch is not installed (python3-torch): skipped")
    sys.exit(77)

import adump  # noqa: E402
import adump.torch  # noqa: E402

VOCAB, DIM = 20, 16
TARGET = "Module_layers_1_linear1_Linear_forward_0"
MODULE = "Module.layers.1.linear1.Linear.forward.0"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(DIM, 2 * DIM)
        self.act = nn.ReLU()
        self.linear2 = nn.Linear(2 * DIM, DIM)
        self.norm = nn.LayerNorm(DIM)

    def forward(self, x):
        return self.norm(x + self.linear2(self.act(self.linear1(x))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, x):
        h = self.emb(x)
        for layer in self.layers:
            h = layer(h)
        return self.head(h)


def run(tag, perturb=None, level="module", content="tensor"):
    """Train two steps under capture; return step 0's dump directory."""
    torch.manual_seed(0)
    model = Net()
    if perturb is not None:
        with torch.no_grad():
            perturb(model.layers[1].linear1.weight)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    top = helpers.tmpdir(tag)
    with adump.torch.capture(model, top, level=level, backward=True, content=content) as cap:
        for _ in range(2):
            x = torch.randint(0, VOCAB, (2, 5), generator=g)
            loss = model(x).logsumexp(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            cap.step()
    assert not cap.losses, cap.losses
    return os.path.join(top, "step0", "rank0", "0")


def set_nan(w):
    w[0, 0] = float("nan")


def set_inf(w):
    w[3, 2] = float("inf")


def add_noise(w):
    w.add_(1e-2 * torch.randn(w.shape, generator=torch.Generator().manual_seed(5)))


class Verdict(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.golden = {c: run("vd-golden-" + c, content=c) for c in ("tensor", "stats")}

    def first(self, my, content, **kw):
        rows = adump.compare(my, self.golden[content], **kw)
        s = rows.summary
        self.assertGreaterEqual(s["first_divergent_row"], 0, s)
        row = rows[s["first_divergent_row"]]
        return rows, row

    def check_first(self, perturb, content, nonfinite):
        my = run("vd-%s-%s" % (perturb.__name__, content), perturb, content=content)
        rows, row = self.first(my, content)
        s = rows.summary
        self.assertEqual(s["first_divergent_op"], TARGET, (s, row["reason"]))
        # The module by its dotted name, as the capture's `module` attribute gives it (a
        # statistics dump has no header: its file name's).
        self.assertEqual(s["first_divergent_module"],
                         MODULE if content == "tensor" else TARGET)
        self.assertTrue(row["TensorIndex"].startswith(TARGET + ":output"), row["TensorIndex"])
        self.assertEqual(row["verdict"], "error")
        if nonfinite:
            self.assertEqual(s["exit_code"], 100)
            self.assertEqual(s["first_nonfinite_op"], TARGET)
            self.assertIn("differ", row["reason"])
            self.assertIn("differ", row["CompareFailReason"])
        else:
            self.assertEqual(s["exit_code"], 0)
            self.assertEqual(s["first_nonfinite_row"], -1)
        # The module's backward comes later and diverges too, but is not the first.
        back = [r for r in rows if r["NPUDump"] == TARGET.replace("forward", "backward")]
        self.assertTrue(back)
        self.assertNotIn(s["first_divergent_row"], [rows.index(r) for r in back])
        # The CLI says the same: summary line, exit status.
        out = helpers.tmpdir("vd-cli")
        code, text = helpers.tool("compare", "-m", my, "-g", self.golden[content],
                                  "-out", out, "-advisor")
        self.assertEqual(code, 100 if nonfinite else 0, text)
        self.assertIn("first divergent op (execution order)", text)
        self.assertIn(TARGET, text.split("first divergent op")[1].split("\n")[0])
        if content == "tensor":
            with open(os.path.join(out, "advisor_summary.txt")) as f:
                advice = f.read()
            self.assertNotIn("meets the accuracy requirements", advice)
            self.assertIn("Operator Name: " + TARGET, advice)
        return rows

    def test_clean_passes(self):
        for content in ("tensor", "stats"):
            my = run("vd-clean-" + content, content=content)
            rows = adump.compare(my, self.golden[content])
            self.assertEqual(rows.summary["first_divergent_row"], -1)
            self.assertEqual(rows.summary["exit_code"], 0)
            self.assertTrue(all(r["verdict"] == "pass" for r in rows))

    def test_nan_weight(self):
        rows = self.check_first(set_nan, "tensor", True)
        row = rows[rows.summary["first_divergent_row"]]
        self.assertGreater(row["nan_count"][0], 0)
        self.assertEqual(row["nan_count"][1], 0)
        self.assertTrue(math.isnan(row["CosineSimilarity"]))

    def test_inf_weight(self):
        self.check_first(set_inf, "tensor", True)

    def test_noise(self):
        rows = self.check_first(add_noise, "tensor", False)
        row = rows[rows.summary["first_divergent_row"]]
        self.assertGreater(row["MaxAbsoluteError"], 1e-3)
        # --msprobe's Accuracy column and the plot's marker follow from the same row.
        rows = adump.compare(run("vd-noise-msprobe", add_noise), self.golden["tensor"],
                             msprobe=True)
        self.assertEqual(rows.summary["first_divergent_op"], TARGET)

    def test_stats_nan(self):
        rows = self.check_first(set_nan, "stats", True)
        row = rows[rows.summary["first_divergent_row"]]
        self.assertEqual(row["Result"], "Warning")
        self.assertGreater(row["nan_count"][0], 0)

    def test_stats_inf(self):
        self.check_first(set_inf, "stats", True)

    def test_stats_noise(self):
        self.check_first(add_noise, "stats", False)

    def test_op_level_noise(self):
        # At op level the first divergent row is an aten op of that forward, and the row
        # names the module call it ran in (the capture's `module` attribute).
        golden = run("vd-op-golden", level="op")
        my = run("vd-op-noise", add_noise, level="op")
        rows = adump.compare(my, golden)
        s = rows.summary
        self.assertGreaterEqual(s["first_divergent_row"], 0)
        self.assertIn("forward", s["first_divergent_op"])
        self.assertEqual(s["first_divergent_module"], MODULE)
        self.assertEqual(rows[s["first_divergent_row"]]["module"], MODULE)


if __name__ == "__main__":
    unittest.main()
