# SPDX-License-Identifier: Apache-2.0
"""adump.torch as issue 25 asks: losses recorded where users look (cap.losses as adump.Loss,
the loss log, adump.verify and `adump verify`), filters that say what they do (full names,
a string pattern, warnings for patterns that matched nothing, steps as an int, pausing,
msprobe's list and data_mode), and the config checked when the capture is made."""
import json
import os
import sys
import unittest
import warnings

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


class AddOne(nn.Module):
    def forward(self, x):
        return x.add_(1)            # changes its input in place


def names_below(top):
    out = []
    for d in adump.walk(top):
        out.append(d.op_name)
    return out


def loss_lines(top):
    lines = []
    for d, _, fs in os.walk(top):
        if "adump-losses.jsonl" in fs:
            with open(os.path.join(d, "adump-losses.jsonl")) as f:
                lines += [json.loads(line) for line in f]
    return lines


class Losses(unittest.TestCase):
    def test_inplace_module(self):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 4), AddOne())
        top = helpers.tmpdir("tl-inplace")
        with adump.torch.capture(model, top, backward=False) as cap:
            with torch.no_grad():
                model(torch.randn(2, 4))
        self.assertEqual(len(cap.losses), 1, cap.losses)
        loss = cap.losses[0]
        self.assertIsInstance(loss, adump.Loss)
        self.assertEqual((loss.name, loss.cause), ("Module.1.AddOne.forward.0",
                                                   "changed_in_place"))
        self.assertIn("in place", loss.message)
        lines = loss_lines(top)
        self.assertEqual({(e["op_name"], e["cause"]) for e in lines},
                         {("Module.1.AddOne.forward.0", "changed_in_place")})
        rep = adump.verify(top)
        self.assertFalse(rep.ok)
        self.assertIn("changed_in_place", " ".join(p[2] for p in rep.problems if p[0] == "lost"))
        code, out = helpers.tool("verify", top)
        self.assertEqual(code, 1, out)
        self.assertIn("LOST", out)
        self.assertIn("changed_in_place", out)
        self.assertNotIn("BAD", out)            # the line is a known cause, not a bad line

    def test_zero_copy_veto(self):
        torch.manual_seed(0)
        model = helpers.fc_inplace_relu()
        x = torch.randn(256, 256)
        for attempt in range(5):
            top = helpers.tmpdir("tl-zc")
            with adump.torch.capture(model, top, mode="output", backward=False,
                                     zero_copy=True) as cap:
                with torch.no_grad():
                    model(x)
            if cap.losses:
                break
        self.assertTrue(cap.losses, "no zero-copy dump saw the in-place change")
        for loss in cap.losses:
            self.assertIsInstance(loss, adump.Loss)
            self.assertEqual(loss.cause, "changed_before_written", loss)
        self.assertEqual({e["cause"] for e in loss_lines(top)}, {"changed_before_written"})
        self.assertFalse(adump.verify(top).ok)

    def test_unsupported_dtype(self):
        class Quant(nn.Module):         # complex tensors are dumped; quantized ones are not
            def forward(self, x):
                return x, torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)
        top = helpers.tmpdir("tl-dtype")
        m = Quant()
        with adump.torch.capture(m, top, backward=False, keep_root=True) as cap:
            m(torch.ones(3))
        self.assertEqual([(l.name, l.cause) for l in cap.losses],
                         [("Module.Quant.forward.0", "unsupported_dtype")])
        self.assertIn("quint8", cap.losses[0].message)
        self.assertEqual([(e["kind"], e["index"]) for e in loss_lines(top)], [("output", 1)])
        d, = adump.walk(top)                     # the rest of the dump is there
        self.assertEqual(len(d.outputs), 1)


class Filters(unittest.TestCase):
    def model(self):
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))

    def run_capture(self, steps=2, pause_opt=False, **kw):
        model = self.model()
        opt = torch.optim.AdamW(model.parameters())
        top = helpers.tmpdir("tf")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with adump.torch.capture(model, top, **kw) as cap:
                for _ in range(steps):
                    model(torch.randn(3, 4)).sum().backward()
                    if pause_opt:
                        with cap.paused():
                            opt.step()
                    else:
                        opt.step()
                    opt.zero_grad()
                    cap.step()
        return top, cap, [str(x.message) for x in w]

    def test_full_names_and_strings(self):
        top, _, warned = self.run_capture(steps=1, backward=False,
                                          scope=["Module.0.Linear.forward.0"])
        self.assertEqual(names_below(top), ["Module.0.Linear.forward.0"])
        self.assertEqual(warned, [])
        top, _, warned = self.run_capture(steps=1, level="op", backward=False,
                                          scope="Aten.addmm")          # one pattern
        self.assertEqual(sorted(names_below(top)), ["Aten.addmm.0.forward",
                                                    "Aten.addmm.1.forward"])
        top, _, _ = self.run_capture(steps=1, level="op", backward=False,
                                     scope=["Aten.addmm.0.forward"])
        self.assertEqual(names_below(top), ["Aten.addmm.0.forward"])
        top, _, _ = self.run_capture(steps=1, backward=False, scope="2")   # module path
        self.assertEqual(names_below(top), ["Module.2.Linear.forward.0"])

    def test_unmatched_pattern_warns(self):
        top, _, warned = self.run_capture(steps=2, backward=False,
                                          scope=["Module.0.*", "Module.9.Linear.forward.0"])
        self.assertEqual(len(warned), 1, warned)                # once, after the first step
        self.assertIn("'Module.9.Linear.forward.0'", warned[0])
        self.assertEqual(len(names_below(top)), 2)              # Module.0 in both steps

    def test_steps_and_pause(self):
        top = helpers.tmpdir("tf-steps")
        model = self.model()
        with adump.torch.capture(model, top, backward=False, steps=1) as cap:
            for _ in range(3):
                model(torch.randn(3, 4))
                cap.step()
        self.assertEqual({d.step for d in adump.walk(top)}, {1})
        with self.assertRaises(TypeError):
            adump.torch.capture(self.model(), helpers.tmpdir("tf"), steps="1")
        # Op level: without the pause the optimizer's ops are dumped, with it none.
        top, _, _ = self.run_capture(steps=1, level="op", backward=False)
        self.assertTrue(any(".addcdiv_" in n or "Aten.mul_" in n for n in names_below(top)))
        top, _, _ = self.run_capture(steps=1, level="op", backward=False, pause_opt=True)
        names = names_below(top)
        self.assertTrue(names)
        self.assertFalse([n for n in names if n.startswith(("Aten.addcdiv_", "Aten.mul_",
                                                            "Aten.lerp_", "Aten.sqrt"))], names)

    def test_list_and_data_mode(self):
        top, _, _ = self.run_capture(steps=1, list=["ReLU"], data_mode=["forward", "output"])
        dumps = list(adump.walk(top))
        self.assertEqual([d.op_name for d in dumps], ["Module.1.ReLU.forward.0"])
        self.assertEqual((len(dumps[0].inputs), len(dumps[0].outputs)), (0, 1))
        top, _, _ = self.run_capture(steps=1, list=["Module.2"], data_mode="backward")
        # msprobe's order: a module's parameters' gradients just before its backward call
        self.assertEqual(names_below(top), ["Module.2.Linear.parameters_grad.0",
                                            "Module.2.Linear.backward.0"])


class Config(unittest.TestCase):
    def test_checked_at_construction(self):
        model = nn.Linear(2, 2)
        for bad, reason in (({"worker": 2}, "worker"),
                            ({"layout": "packed", "compress": "lz4"}, "compress lz4")):
            with self.assertRaises(adump.ConfigError) as cm:
                adump.torch.capture(model, helpers.tmpdir("tc"), **bad)
            self.assertIn(reason, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
