# SPDX-License-Identifier: Apache-2.0
"""adump.torch's module level on real torchvision models (issue 31), small inputs, batch 2, CPU,
one training step each, against references made here with plain PyTorch (no adump code):

- training under capture is bit-identical to training without it (torch.equal on the loss,
  every gradient and every parameter after an SGD step);
- a module's backward entry holds the gradient of its output that comes from outside it
  (what register_full_backward_hook hands a hook) and the gradient it sends to its input:
  the reference replaces the module's output (input) by a fresh leaf and reads that leaf's
  gradient after the same step; checked where the next module or the parent changes the
  output in place (mobilenet_v3's Hardswish then Dropout(inplace=True), convnext's
  StochasticDepth then `result += input`) and where the module also uses what it returns
  (lraspp's IntermediateLayerGetter), and where the output is a view the next module changes
  in place (raft_small's InstanceNorm2d then ReLU(inplace=True));
- a module whose first child changes the module's input in place (efficientnet's classifier)
  keeps its forward entry, input as it was, on its first call;
- dump.json has each module's parameters_grad just before its backward entry.

The whole model set (13 models) is bench/torch_vision_check.py. Exits 77 without torch or
torchvision."""
import copy
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torchvision
except ImportError:
    print("test_torch_vision: torch or torchvision is not installed "
          "(python3-torch, python3-torchvision): skipped")
    sys.exit(77)

import adump.torch  # noqa: E402

torch.set_num_threads(1)


def build(name):
    torch.manual_seed(0)
    if name.startswith(("lraspp", "deeplabv3")):
        return getattr(torchvision.models.segmentation, name)(weights_backbone=None,
                                                              num_classes=3)
    return getattr(torchvision.models, name)(num_classes=10)


def one_step(model, x, cap_dir=None, hooks=None, **kw):
    """One training step of @model (a copy is trained) on @x: (loss, grads, params after SGD),
    under capture into @cap_dir when given; @hooks(model) installs reference hooks."""
    model = copy.deepcopy(model)
    model.train()
    if hooks:
        hooks(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step():
        torch.manual_seed(1)            # the same dropout masks in every run
        out = model(x)
        if isinstance(out, dict):
            out = out["out"]
        loss = out.float().pow(2).mean()
        loss.backward()
        return loss.detach()

    if cap_dir is None:
        loss = step()
    else:
        with adump.torch.capture(model, cap_dir, **kw) as cap:
            loss = step()
            cap.step()
        assert not cap.losses, cap.losses
    grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    opt.step()
    return loss, grads, [p.detach().clone() for p in model.parameters()]


def dump_json(top):
    """The step-0 dump.json of a format="msprobe" capture and its tensor directory."""
    step = os.path.join(top, "step0")
    rank = os.path.join(step, os.listdir(step)[0])
    with open(os.path.join(rank, "dump.json")) as f:
        return json.load(f)["data"], os.path.join(rank, "dump_tensor_data")


def pt(tdir, desc):
    return torch.load(os.path.join(tdir, desc["data_name"]))


def leaf_reference(model, x, path, where):
    """The reference gradient at the first call of module @path in one step: @where
    "output": its output replaced (forward hook) by a fresh leaf, the leaf's gradient is what
    reaches the output from outside the module; "input": its first input replaced (forward
    pre-hook) by one, what the module sends its input. Also the module's input value at
    entry."""
    got = {}

    def hooks(m):
        mod = dict(m.named_modules())[path]

        def pre(mod, args):
            if "entry" in got:
                return None             # the first call's only
            got["entry"] = args[0].detach().clone()
            if where == "input":
                got["leaf"] = args[0].detach().requires_grad_()
                return (got["leaf"].clone(),) + tuple(args[1:])
            return None

        def post(mod, args, out):
            if where == "output" and "leaf" not in got:
                got["leaf"] = out.detach().requires_grad_()
                return got["leaf"].clone()     # a clone: the next module may change it
            return None
        mod.register_forward_pre_hook(pre)
        mod.register_forward_hook(post)
    one_step(model, x, hooks=hooks)
    leaf = got.get("leaf")
    return (leaf.grad if leaf is not None else None), got["entry"]


class Raft(torch.nn.Module):
    """raft_small on a batch of two images: the flow from the first to the second (the
    last of two updates)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x[:1], x[1:], num_flow_updates=2)[-1]


class Vision(unittest.TestCase):
    def capture(self, model, x, tag):
        top = helpers.tmpdir(tag)
        one_step(model, x, top, format="msprobe", parameters=True)
        return dump_json(top)

    def test_training_bit_identical(self):
        # lraspp: its IntermediateLayerGetter's output has three users (layer 5's block and
        # residual add, the head); a node put between a module and its callers changes the
        # order the engine sums them in, and 40 of 178 gradients moved by up to 1.2e-7.
        for name, size in (("lraspp_mobilenet_v3_large", 64), ("mobilenet_v3_small", 32)):
            with self.subTest(model=name):
                model = build(name)
                x = torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(5))
                ref = one_step(model, x)
                got = one_step(model, x, helpers.tmpdir("vision-bits"), format="msprobe",
                               parameters=True, content="stats")
                self.assertTrue(torch.equal(ref[0], got[0]))
                self.assertEqual(len(ref[1]), len(got[1]))
                diff = [i for i, (a, b) in enumerate(zip(ref[1], got[1]))
                        if not torch.equal(a, b)]
                self.assertEqual(diff, [], "gradients that differ from the uncaptured run")
                self.assertTrue(all(torch.equal(a, b) for a, b in zip(ref[2], got[2])))

    def check_backward(self, data, tdir, model, x, path, entry):
        """@entry's `input` is the gradient from outside @path's module, its `output` the
        gradient the module sends its input; both as the leaf references give them."""
        self.assertTrue(entry in data, "%s not dumped" % entry)
        e = data[entry]
        self.assertTrue(e["input"], "%s: no incoming gradient" % entry)
        want_in, _ = leaf_reference(model, x, path, "output")
        want_out, _ = leaf_reference(model, x, path, "input")
        self.assertTrue(torch.allclose(pt(tdir, e["input"][0]), want_in, rtol=1e-5,
                                       atol=1e-9), entry)
        self.assertTrue(torch.allclose(pt(tdir, e["output"][0]), want_out, rtol=1e-5,
                                       atol=1e-9), entry)

    def test_output_changed_in_place_by_the_next_module(self):
        # mobilenet_v3_small's classifier: Linear, Hardswish(inplace=True),
        # Dropout(inplace=True), Linear: the dropout changes the Hardswish's output.
        model = build("mobilenet_v3_small")
        x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(6))
        data, tdir = self.capture(model, x, "vision-hswish")
        self.check_backward(data, tdir, model, x, "classifier.1",
                            "Module.classifier.1.Hardswish.backward.0")

    def test_identity_output_changed_in_place_by_the_parent(self):
        # convnext's StochasticDepth (p=0 at the first block) returns its input; the parent
        # then adds the block's input into it in place.
        model = build("convnext_tiny")
        x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(7))
        data, tdir = self.capture(model, x, "vision-sd")
        self.check_backward(data, tdir, model, x, "features.1.0.stochastic_depth",
                            "Module.features.1.0.stochastic_depth.StochasticDepth.backward.0")

    def test_module_that_uses_what_it_returns(self):
        # lraspp's backbone returns layer 4's output as "low" and feeds it to layer 5: its
        # backward input is the gradient from the head only.
        model = build("lraspp_mobilenet_v3_large")
        x = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(8))
        data, tdir = self.capture(model, x, "vision-ilg")
        entry = data["Module.backbone.IntermediateLayerGetter.backward.0"]
        got = [pt(tdir, t) for t in entry["input"]]
        low = [g for g in got if g.shape[1] == 40]      # layer 4's 40 channels
        self.assertEqual(len(low), 1)
        want, _ = leaf_reference(model, x, "backbone.4", "output")
        head, _ = leaf_reference(model, x, "classifier.low_classifier", "input")
        # The gradient from outside: the head's, not layer 4's whole gradient.
        self.assertFalse(torch.allclose(want, head))
        self.assertTrue(torch.allclose(low[0], head, rtol=1e-5, atol=1e-9))

    def test_view_output_changed_in_place_by_the_next_module(self):
        # raft_small's feature encoder: Conv2d, InstanceNorm2d, ReLU(inplace=True).
        # instance_norm returns a view of its batch_norm's output; the ReLU's in-place
        # change of a view rewrites the base's history, and the engine never runs the
        # view's own node: the InstanceNorm's backward entry had no incoming gradient.
        torch.manual_seed(0)
        model = Raft(torchvision.models.optical_flow.raft_small())
        x = torch.rand(2, 3, 128, 128, generator=torch.Generator().manual_seed(10)) * 2 - 1
        data, tdir = self.capture(model, x, "vision-raft")
        self.check_backward(data, tdir, model, x, "m.feature_encoder.convnormrelu.1",
                            "Module.m.feature_encoder.convnormrelu.1.InstanceNorm2d.backward.0")
        names = list(data)
        self.assertLess(names.index("Module.m.feature_encoder.convnormrelu.1.InstanceNorm2d"
                                    ".backward.0"),
                        names.index("Module.m.feature_encoder.convnormrelu.0.Conv2d"
                                    ".backward.0"), "backward entries in execution order")

    def test_first_child_changes_the_input_in_place(self):
        # efficientnet's classifier: Sequential(Dropout(p, inplace=True), Linear).
        model = build("efficientnet_b0")
        x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(9))
        data, tdir = self.capture(model, x, "vision-drop")
        name = "Module.classifier.Sequential.forward.0"
        self.assertTrue(name in data, "%s not dumped" % name)
        _, entry = leaf_reference(model, x, "classifier", "none")
        self.assertTrue(torch.equal(pt(tdir, data[name]["input_args"][0]), entry))

    def test_parameters_grad_before_backward(self):
        model = build("resnet18")
        x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(10))
        data, _ = self.capture(model, x, "vision-order")
        names = list(data)
        pg = [n for n in names if ".parameters_grad." in n]
        self.assertEqual(len(pg), len([m for m in build("resnet18").modules()
                                       if list(m.parameters(recurse=False))]))
        for n in pg:
            bwd = n.replace(".parameters_grad.", ".backward.")
            self.assertTrue(bwd in data, "%s not dumped" % bwd)
            if n.startswith("Module.conv1."):
                # Its input (the image) takes no gradient: its backward is complete when
                # its output's gradient is, before its node makes the parameters' ones
                # (msprobe's hook fires there too).
                self.assertEqual(names.index(n), names.index(bwd) + 1, n)
            else:
                self.assertEqual(names.index(bwd), names.index(n) + 1, n)

    def test_module_never_called_has_no_parameters_grad(self):
        # MultiheadAttention uses its out_proj's weight without calling out_proj (vit_b_16's
        # encoder layers): msprobe hooks a module's parameters when it is called, so no
        # out_proj parameters_grad; the attention's own parameters have one.
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.TransformerEncoderLayer(16, 2, 32,
                                                                     batch_first=True))
        x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(11))
        data, _ = self.capture(model, x, "vision-mha")
        pg = [n for n in data if ".parameters_grad." in n]
        self.assertIn("Module.0.self_attn.MultiheadAttention.parameters_grad.0", pg)
        self.assertEqual([n for n in pg if "out_proj" in n], [])

    def test_graph_without_backward_is_freed(self):
        # Forward passes with gradients and no backward (an evaluation loop without
        # torch.no_grad()): the capture keeps nothing of their graphs alive until the step
        # ends (its bookkeeping lives in the graph nodes' own metadata).
        import gc
        import weakref
        model = build("mobilenet_v3_small")
        x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(12))
        with adump.torch.capture(model, helpers.tmpdir("vision-free"), content="stats",
                                 format="msprobe") as cap:
            out = model(x)
            ref = weakref.ref(out.grad_fn._saved_mat1)     # what the last Linear saved
            del out
            gc.collect()
            self.assertIsNone(ref(), "the graph of a forward pass is kept alive")
            cap.step()


if __name__ == "__main__":
    unittest.main()
