# SPDX-License-Identifier: Apache-2.0
"""adump.torch: a small transformer encoder trained three steps under capture at module and
op level with backward. Every module call (op) leaves its file, every value equals what a
plain hook recorded at that moment, models with in-place ops train unchanged, zero-copy
dumps of tensors modified in place fail instead of publishing the later value, and the
files read back through adump.open, `adump convert` and `adump verify`. Exits 77 without
torch."""
import copy
import json
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torch.nn as nn
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError:
    print("test_torch: torch is not installed (python3-torch): skipped")
    sys.exit(77)

import adump  # noqa: E402
import adump.torch  # noqa: E402

VOCAB, DIM, HEADS, SEQ, BATCH = 40, 16, 2, 6, 2


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.attn = nn.MultiheadAttention(DIM, HEADS, batch_first=True)
        self.ln1 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 2 * DIM), nn.ReLU(inplace=True),
                                 nn.Linear(2 * DIM, DIM))
        self.ln2 = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, x):
        h = self.emb(x)
        a, _ = self.attn(h, h, h)
        h = self.ln1(h + a)
        h = self.ln2(h + self.mlp(h))
        return self.head(h)


def make_model(cls=Encoder):
    torch.manual_seed(1)
    return cls()


def batches():
    g = torch.Generator().manual_seed(2)
    return [torch.randint(0, VOCAB, (BATCH, SEQ), generator=g) for _ in range(3)]


def train(model, xs, cap=None):
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for x in xs:
        out = model(x)
        loss = nn.functional.cross_entropy(out.reshape(-1, VOCAB), x.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()            # in-place parameter updates: must not leak into earlier dumps
        if cap is not None:
            cap.step()


def tensors(obj):
    out = []
    if isinstance(obj, torch.Tensor):
        out.append(obj.detach().clone())
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            out += tensors(o)
    return out


def reference_modules(model, xs):
    """Plain forward hooks' record: {step: {name: (inputs at entry, outputs)}}."""
    rec, step, counts = {}, [0], {}
    for path, m in model.named_modules():
        base = "Module.%s.%s" % (path, type(m).__name__) if path else \
            "Module.%s" % type(m).__name__

        def pre(mod, args, base=base):
            n = counts.get(base, 0)
            counts[base] = n + 1
            mod.__dict__.setdefault("_ref", []).append((n, tensors(args)))

        def post(mod, args, out, base=base):
            n, ins = mod.__dict__["_ref"].pop()
            rec.setdefault(step[0], {})["%s.forward.%d" % (base, n)] = (ins, tensors(out))
        m.register_forward_pre_hook(pre)
        m.register_forward_hook(post)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for x in xs:
        out = model(x)
        loss = nn.functional.cross_entropy(out.reshape(-1, VOCAB), x.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        step[0] += 1
        counts.clear()
    return rec


def dumps_of(top, step):
    return {d.op_name: d for d in adump.walk(os.path.join(top, "step%d" % step))}


def assert_same(tc, got, want, what):
    tc.assertEqual(len(got), len(want), what)
    for g, w in zip(got, want):
        w = w.numpy() if w.dtype != torch.bfloat16 else w.float().numpy()
        tc.assertEqual(tuple(g.shape), tuple(w.shape), what)
        np.testing.assert_array_equal(np.asarray(g), w, err_msg=what)


class ModuleLevel(unittest.TestCase):
    def test_encoder_three_steps(self):
        xs = batches()
        ref_model = make_model()
        ref = reference_modules(ref_model, xs)
        top = helpers.tmpdir("torch-mod")
        model = make_model()
        with adump.torch.capture(model, top, level="module", backward=True,
                                 parameters=True) as cap:
            train(model, xs, cap)
        self.assertEqual(cap.losses, [])
        # Capture changed nothing: the same parameters as the plain run.
        for (n, p), (_, q) in zip(model.named_parameters(), ref_model.named_parameters()):
            self.assertTrue(torch.equal(p, q), n)
        for step in range(3):
            dumps = dumps_of(top, step)
            self.assertTrue(os.path.isdir(os.path.join(top, "step%d" % step, "rank0")))
            fwd = {k: v for k, v in dumps.items() if ".forward." in k}
            # The root module is not dumped (msprobe's rule; keep_root=True keeps it).
            del ref[step]["Module.Encoder.forward.0"]
            self.assertEqual(sorted(fwd), sorted(ref[step]), "step %d" % step)
            mods = dict(ref_model.named_modules())
            for name, (ins, outs) in ref[step].items():
                d = fwd[name]
                self.assertEqual(d.op_type, name.split(".")[-3])
                # Positional arguments, then the module's own parameters as they were at
                # that step (the reference model's are those after training: only the
                # names and shapes are compared here).
                params = dict(mods[name.split(".")[1] if name.count(".") == 4 else
                                   ".".join(name.split(".")[1:-3])]
                              .named_parameters(recurse=False))
                assert_same(self, d.inputs[:len(ins)], ins, name + " inputs")
                self.assertEqual([tuple(x.shape) for x in d.inputs[len(ins):]],
                                 [tuple(p.shape) for p in params.values()], name)
                info = json.loads(d.dfx_message)
                self.assertEqual(sorted(info["parameters"]), sorted(params), name)
                for pname, item in info["parameters"].items():
                    self.assertTrue(item["requires_grad"])
                    self.assertTrue(item["tensor"].startswith("input."))
                assert_same(self, d.outputs, outs, name + " outputs")
            # The Linear before ReLU(inplace=True): its output as it was, negatives included.
            self.assertLess(fwd["Module.mlp.0.Linear.forward.0"].outputs[0].min(), 0)
            self.assertGreaterEqual(fwd["Module.mlp.1.ReLU.forward.0"].outputs[0].min(), 0)
            bwd = {k: v for k, v in dumps.items() if ".backward." in k}
            want_bwd = {k.replace(".forward.", ".backward.") for k in ref[step]}
            self.assertEqual(sorted(bwd), sorted(want_bwd))
            head = bwd["Module.head.Linear.backward.0"]
            # grad_output of the head: d loss / d logits, which sum to 0 per row.
            self.assertEqual(head.inputs[0].shape, (BATCH, SEQ, VOCAB))
            np.testing.assert_allclose(head.inputs[0].sum(-1), 0, atol=1e-6)
            self.assertEqual(head.outputs[0].shape, (BATCH, SEQ, DIM))
            relu = bwd["Module.mlp.1.ReLU.backward.0"]
            lin = bwd["Module.mlp.2.Linear.backward.0"]
            # ReLU's grad_output is the next Linear's grad_input; its grad_input is zero
            # where the ReLU cut.
            np.testing.assert_array_equal(relu.inputs[0], lin.outputs[0])
            cut = fwd["Module.mlp.1.ReLU.forward.0"].outputs[0] == 0
            self.assertTrue(np.all(relu.outputs[0][cut] == 0))
        # Every file reads back through the CLI too.
        rc, out = helpers.tool("verify", "--quiet", top)
        self.assertEqual(rc, 0, out)
        conv = helpers.tmpdir("torch-conv")
        rc, out = helpers.tool("convert", "-d", os.path.join(top, "step0"), "-r",
                               "-out", conv, "--quiet")
        self.assertEqual(rc, 0, out)
        npys = [f for f in helpers.files_below(conv) if f.endswith(".npy")]
        lin_out = [f for f in npys if "Module_head_Linear_forward_0" in f and
                   ".output.0.npy" in f]
        self.assertEqual(len(lin_out), 1, npys[:5])
        np.testing.assert_array_equal(np.load(lin_out[0]),
                                      ref[0]["Module.head.Linear.forward.0"][1][0].numpy())

    def test_kwargs_values_complex_root(self):
        class Inner(nn.Module):
            def forward(self, x, scale=1.0, mask=None):
                y = (x * scale).masked_fill(mask, 0.0)
                return y, torch.view_as_complex(torch.stack([y, -y], -1))

        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(3, 3)
                self.kw = Inner()

            def forward(self, x, m):
                return self.kw(self.lin(x), scale=2.0, mask=m)
        model = make_model(Outer)
        x = torch.randn(2, 3, generator=torch.Generator().manual_seed(4))
        m = torch.tensor([[True, False, False], [False, True, False]])
        for keep_root in (False, True):
            top = helpers.tmpdir("torch-kw")
            with adump.torch.capture(model, top, backward=False, keep_root=keep_root,
                                     parameters=True) as cap:
                y, c = model(x, m)
            self.assertEqual(cap.losses, [])
            dumps = dumps_of(top, 0)
            self.assertEqual("Module.Outer.forward.0" in dumps, keep_root)
            d = dumps["Module.kw.Inner.forward.0"]
            info = json.loads(d.dfx_message)
            # Keyword tensors dumped after the positional ones; non-tensor values recorded.
            self.assertEqual(len(d.inputs), 2)
            np.testing.assert_array_equal(d.inputs[0], model.lin(x).detach().numpy())
            np.testing.assert_array_equal(d.inputs[1], m.numpy())
            arg = info["input_args"][0]
            self.assertEqual((arg["type"], arg["dtype"], arg["shape"], arg["requires_grad"],
                              arg["tensor"]),
                             ("torch.Tensor", "torch.float32", [2, 3], True, "input.0"))
            self.assertEqual(info["input_kwargs"]["scale"], {"type": "float", "value": 2.0})
            self.assertEqual(info["input_kwargs"]["mask"]["tensor"], "input.1")
            self.assertFalse(info["input_kwargs"]["mask"]["requires_grad"])
            self.assertEqual(info["parameters"], {})
            # The complex output is dumped with its complex dtype.
            self.assertEqual([o["tensor"] for o in info["output"]], ["output.0", "output.1"])
            self.assertEqual(info["output"][1]["dtype"], "torch.complex64")
            self.assertEqual(d.outputs[1].dtype, np.complex64)
            np.testing.assert_array_equal(d.outputs[1], c.detach().numpy())
            lin = json.loads(dumps["Module.lin.Linear.forward.0"].dfx_message)
            self.assertEqual(sorted(lin["parameters"]), ["bias", "weight"])
            w = dumps["Module.lin.Linear.forward.0"].inputs[int(
                lin["parameters"]["weight"]["tensor"].split(".")[1])]
            np.testing.assert_array_equal(w, model.lin.weight.detach().numpy())
        # The wrapped forward is gone after the capture.
        self.assertNotIn("forward", model.kw.__dict__)
        # By default parameters are not inputs (scan and compare read inputs as arguments).
        top = helpers.tmpdir("torch-kw-noparam")
        with adump.torch.capture(model, top, backward=False) as cap:
            model(x, m)
        lin = dumps_of(top, 0)["Module.lin.Linear.forward.0"]
        self.assertEqual(len(lin.inputs), 1)
        self.assertNotIn("parameters", json.loads(lin.dfx_message))

    def test_parameters_grad(self):
        class Twice(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 3)
                self.out = nn.Linear(3, 1)
                self.out.bias.requires_grad_(False)

            def forward(self, x):
                return self.out(self.fc(self.fc(x)))       # fc used twice: grads summed
        model = make_model(Twice)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        top = helpers.tmpdir("torch-pgrad")
        g = torch.Generator().manual_seed(6)
        want = []
        # The order the engine hands out the gradients, seen by hooks of their own: msprobe
        # writes a module's parameters_grad keys in that order.
        arrived = []
        for n, p in model.named_parameters():
            if p.requires_grad:
                p.register_hook(lambda grad, n=n: arrived.append(n))
        with adump.torch.capture(model, top, backward=True) as cap:
            for _ in range(2):
                opt.zero_grad()
                model(torch.randn(4, 3, generator=g)).pow(2).sum().backward()
                want.append({n: p.grad.clone() for n, p in model.named_parameters()
                             if p.grad is not None})
                opt.step()
                cap.step()
        self.assertEqual(cap.losses, [])
        for step in range(2):
            dumps = dumps_of(top, step)
            fc = dumps["Module.fc.Linear.parameters_grad.0"]
            info = json.loads(fc.dfx_message)["parameters_grad"]
            order = [n[3:] for n in arrived[3 * step:3 * step + 3] if n.startswith("fc.")]
            self.assertEqual(list(info), order)
            self.assertEqual(order, ["bias", "weight"])
            for i, pname in enumerate(order):
                self.assertEqual(info[pname]["tensor"], "output.%d" % i)
                np.testing.assert_allclose(fc.outputs[i], want[step]["fc." + pname].numpy(),
                                           rtol=1e-6)
            out = dumps["Module.out.Linear.parameters_grad.0"]
            self.assertEqual(list(json.loads(out.dfx_message)["parameters_grad"]), ["weight"])
            np.testing.assert_allclose(out.outputs[0], want[step]["out.weight"].numpy(),
                                       rtol=1e-6)
            self.assertIn("Module.fc.Linear.backward.1", dumps)

    def test_inplace_relu_trains_unchanged(self):
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(8, 8)
                self.act = nn.ReLU(inplace=True)
                self.fc2 = nn.Linear(8, 1)

            def forward(self, x):
                return self.fc2(self.act(self.fc1(x)))
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(3))
        plain, captured = make_model(Net), make_model(Net)
        for m, capture in ((plain, False), (captured, True)):
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            top = helpers.tmpdir("torch-relu")
            cap = adump.torch.capture(m, top, backward=True) if capture else None
            if cap:
                cap.__enter__()
            for _ in range(3):
                opt.zero_grad()
                m(x).pow(2).mean().backward()
                opt.step()
                if cap:
                    cap.step()
            if cap:
                cap.__exit__(None, None, None)
                self.assertEqual(cap.losses, [])
                names = set(dumps_of(top, 2))
                self.assertIn("Module.act.ReLU.backward.0", names)
                self.assertIn("Module.fc1.Linear.backward.0", names)
        for p, q in zip(plain.parameters(), captured.parameters()):
            self.assertTrue(torch.equal(p, q))

    def test_zero_copy_inplace_is_a_loss(self):
        model = make_model(helpers.fc_inplace_relu)
        x = torch.randn(256, 256)
        with torch.no_grad():
            pre_relu = model.fc(x)
        failed = 0
        for attempt in range(5):
            top = helpers.tmpdir("torch-zc")
            with adump.torch.capture(model, top, mode="output", backward=False,
                                     zero_copy=True) as cap:
                with torch.no_grad():
                    model(x)            # ReLU changes fc's output right after its dump
            names = [loss.name for loss in cap.losses]
            files = helpers.files_below(top)
            fc = [f for f in files if "Module_fc_Linear_forward_0" in f]
            self.assertEqual(len(fc), 1, files)
            if "Module.fc.Linear.forward.0" in names:
                failed += 1
                self.assertTrue(fc[0].endswith(".failed"), fc)
            else:
                # Written before the change: then it holds the value before it.
                np.testing.assert_array_equal(adump.open(fc[0]).outputs[0], pre_relu.numpy())
            # ReLU's own output is never changed afterwards: always published.
            relu = dumps_of(top, 0)["Module.act.ReLU.forward.0"]
            self.assertGreaterEqual(relu.outputs[0].min(), 0)
            if failed:
                break
        self.assertGreater(failed, 0, "no zero-copy dump saw the in-place change")

    def test_filters(self):
        xs = batches()
        top = helpers.tmpdir("torch-filter")
        model = make_model()
        with adump.torch.capture(model, top, mode="output", backward=False,
                                 scope=["Module.mlp.*"], steps=[1]) as cap:
            train(model, xs, cap)
        self.assertFalse(os.path.exists(os.path.join(top, "step0")))
        self.assertFalse(os.path.exists(os.path.join(top, "step2")))
        dumps = dumps_of(top, 1)
        self.assertEqual(sorted(dumps), ["Module.mlp.0.Linear.forward.0",
                                         "Module.mlp.1.ReLU.forward.0",
                                         "Module.mlp.2.Linear.forward.0",
                                         "Module.mlp.Sequential.forward.0"])
        for d in dumps.values():
            self.assertEqual(d.inputs, [])
            self.assertEqual(len(d.outputs), 1)

    def test_stats_content(self):
        xs = batches()[:1]
        top = helpers.tmpdir("torch-stats")
        model = make_model()
        with adump.torch.capture(model, top, content="stats", backward=True) as cap:
            train(model, xs, cap)
        self.assertEqual(cap.losses, [])
        files = helpers.files_below(top)
        self.assertTrue(files)
        self.assertTrue(all(f.endswith(".csv") for f in files), files[:3])
        names = {os.path.basename(f).split(".")[1] for f in files}
        self.assertIn("Module_head_Linear_forward_0", names)
        self.assertIn("Module_head_Linear_backward_0", names)
        self.assertEqual(cap.stats["files_completed"], len(files))

    def test_dtypes_and_structures(self):
        class Odd(nn.Module):
            def forward(self, d):
                return {"pair": (d["a"].t(), d["b"] * 2), "n": 3, "flag": d["c"]}
        m = Odd()
        top = helpers.tmpdir("torch-dtypes")
        a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        inputs = {"a": a, "b": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
                  "c": torch.tensor([True, False]), "s": "skip me"}
        with adump.torch.capture(m, top, backward=False, keep_root=True) as cap:
            m(inputs)
        self.assertEqual(cap.losses, [])
        d = dumps_of(top, 0)["Module.Odd.forward.0"]
        self.assertEqual([x.dtype for x in d.inputs], [np.float32, np.float32, np.bool_])
        np.testing.assert_array_equal(d.outputs[0], a.t().numpy())     # made contiguous
        np.testing.assert_array_equal(d.outputs[1], np.array([3.0, -4.0], np.float32))
        self.assertEqual(d.tensors[1].dtype, "bfloat16")

    def test_tensors_read_where_they_lie(self):
        """Tensors of torch's own types go to the native dump as they are (data_ptr()):
        views with an offset, transposed, lazily negated, requiring grad, parameters, 0-d
        and empty ones, each dtype; a subclass goes through numpy. Every value as torch
        has it."""
        class Sub(torch.Tensor):
            pass

        class Many(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.arange(6, dtype=torch.float32).reshape(2, 3))

            def forward(self, x):
                base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
                return (base[1:], base.t(), torch._neg_view(base[:2]), x * self.w, self.w,
                        torch.tensor(2.5), torch.empty(0, 3), base.to(torch.float16),
                        base.to(torch.int64)[:, ::2], base > 7, base.as_subclass(Sub) + 1)
        m = Many()
        x = torch.ones(2, 3, requires_grad=True)
        top = helpers.tmpdir("torch-in-place")
        with adump.torch.capture(m, top, backward=False, keep_root=True,
                                 parameters=True) as cap:
            out = m(x)
        self.assertEqual(cap.losses, [])
        d = dumps_of(top, 0)["Module.Many.forward.0"]
        want = [t.detach().resolve_neg().contiguous() for t in out]
        self.assertEqual(len(d.outputs), len(want))
        for i, (g, w) in enumerate(zip(d.outputs, want)):
            self.assertEqual(tuple(g.shape), tuple(w.shape), i)
            self.assertEqual(np.asarray(g).dtype, w.numpy().dtype, i)
            np.testing.assert_array_equal(np.asarray(g), w.numpy(), err_msg=str(i))
        self.assertTrue(out[2].is_neg())                # the dump read its values, not -x
        np.testing.assert_array_equal(np.asarray(d.inputs[0]), x.detach().numpy())
        np.testing.assert_array_equal(np.asarray(d.inputs[1]), m.w.detach().numpy())


class Recorder(TorchDispatchMode):
    """A plain dispatch-mode recorder: {name: (inputs before, outputs)} per step, and with
    watch(model) {name: the module call it ran in}."""

    def __init__(self):
        super().__init__()
        self.rec, self.counts, self.module, self.stack = {}, {}, {}, []

    def watch(self, model):
        calls = {}
        for path, m in model.named_modules():
            if not path:
                continue            # the root module is not dumped, as in msprobe
            base = "Module.%s.%s" % (path, type(m).__name__) if path else \
                "Module.%s" % type(m).__name__

            def pre(mod, args, base=base):
                n = calls.get(base, 0)
                calls[base] = n + 1
                self.stack.append("%s.forward.%d" % (base, n))

            def post(mod, args, out):
                self.stack.pop()
            m.register_forward_pre_hook(pre)
            m.register_forward_hook(post)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        pkt = func.overloadpacket.__name__
        ins = tensors((args, list(kwargs.values())))
        out = func(*args, **kwargs)
        if not pkt.startswith("_record_function"):
            base = "Aten.%s" % pkt if func._overloadname == "default" else \
                "Aten.%s.%s" % (pkt, func._overloadname)
            n = self.counts.get(base, 0)
            self.counts[base] = n + 1
            self.rec["%s.%d.forward" % (base, n)] = (ins, tensors(out))
            self.module["%s.%d.forward" % (base, n)] = self.stack[-1] if self.stack else None
        return out


class OpLevel(unittest.TestCase):
    def test_encoder_ops(self):
        xs = batches()[:1]
        ref_model = make_model()
        rec = Recorder()
        rec.watch(ref_model)
        with rec:
            out = ref_model(xs[0])
        top = helpers.tmpdir("torch-op")
        model = make_model()
        with adump.torch.capture(model, top, level="op", backward=True) as cap:
            train(model, batches(), cap)
        self.assertEqual(cap.losses, [])
        for step in range(3):
            dumps = dumps_of(top, step)
            fwd = {k for k in dumps if k.endswith(".forward")}
            bwd = {k for k in dumps if k.endswith(".backward")}
            self.assertIn("Aten.addmm.0.forward", fwd)
            self.assertIn("Aten.native_layer_norm.0.forward", fwd)
            self.assertIn("Aten.embedding.0.forward", fwd)
            self.assertIn("Aten.native_layer_norm_backward.0.backward", bwd)
            self.assertIn("Aten.embedding_dense_backward.0.backward", bwd)
        dumps = dumps_of(top, 0)
        for name, (ins, outs) in rec.rec.items():
            self.assertIn(name, dumps)
            d = dumps[name]
            self.assertEqual(d.op_type, name.split(".")[1])
            assert_same(self, d.inputs, [t for t in ins if t.dtype != torch.complex64], name)
            assert_same(self, d.outputs, outs, name)
            # The module call it ran in, as plain hooks saw it (absent outside every module).
            self.assertEqual(d.attrs.get("module"), rec.module[name], name)
        self.assertEqual(dumps["Aten.embedding.0.forward"].attrs["module"],
                         "Module.emb.Embedding.forward.0")
        # dfx_message: every argument as msprobe describes it, tensors by their place.
        ln = json.loads(dumps["Aten.native_layer_norm.0.forward"].dfx_message)
        args = ln["input_args"]
        self.assertEqual(args[0]["tensor"], "input.0")
        self.assertTrue(args[0]["requires_grad"])
        self.assertEqual(args[1], [{"type": "int", "value": DIM}])       # normalized_shape
        self.assertEqual(args[4], {"type": "float", "value": 1e-5})      # eps
        self.assertEqual([o["tensor"] for o in ln["output"]],
                         ["output.0", "output.1", "output.2"])
        self.assertEqual(dumps["Aten.addmm.0.forward"].attrs["module"],
                         "Module.attn.MultiheadAttention.forward.0")
        # Backward ops: the module backward call whose graph node ran them; the loss
        # (computed outside the model) belongs to none.
        for name, module in (
                ("Aten.embedding_dense_backward.0.backward", "Module.emb.Embedding.backward.0"),
                ("Aten.native_layer_norm_backward.0.backward", "Module.ln2.LayerNorm.backward.0"),
                ("Aten.native_layer_norm_backward.1.backward", "Module.ln1.LayerNorm.backward.0"),
                ("Aten.threshold_backward.0.backward", "Module.mlp.1.ReLU.backward.0"),
                ("Aten.nll_loss_backward.0.backward", None)):
            self.assertEqual(dumps[name].attrs.get("module"), module, name)
        self.assertTrue(any(d.attrs.get("module") == "Module.head.Linear.backward.0"
                            and n.startswith("Aten.mm.") for n, d in dumps.items()))
        # One module tree per step: every dump's node points at its module call, every call
        # at its parent call (backward calls at their parent's backward), up to a root.
        tree = cap.tree.steps[0]
        for name, d in dumps.items():
            self.assertEqual(tree[name], d.attrs.get("module"), name)
        self.assertEqual(tree["Module.mlp.0.Linear.forward.0"], "Module.mlp.Sequential.forward.0")
        self.assertEqual(tree["Module.mlp.0.Linear.backward.0"],
                         "Module.mlp.Sequential.backward.0")
        self.assertIsNone(tree["Module.mlp.Sequential.backward.0"])
        self.assertIsNone(tree["Module.mlp.Sequential.forward.0"])
        self.assertNotIn("Module.Encoder.forward.0", tree)        # the root is not a node
        for node in tree:
            seen, p = 0, tree[node]
            while p is not None:
                self.assertIn(p, tree, node)
                p, seen = tree[p], seen + 1
                self.assertLess(seen, 10)
        self.assertEqual(sorted(cap.tree.steps), [0, 1, 2])
        rc, out = helpers.tool("verify", "--quiet", top)
        self.assertEqual(rc, 0, out)

    def test_tree_keeps_the_last_steps(self):
        from adump._torch_tree import ModuleTree
        t = ModuleTree(keep=2)
        for step in range(5):
            t.enter("Module.a.A.forward.0")
            t.enter("Module.a.b.B.forward.0")
            t.add("Aten.mm.0.forward", t.current())
            t.leave("Module.a.A.forward.0")           # closes the inner call with it
            self.assertIsNone(t.current())
            t.add_backward("Module.a.b.B.backward.0")
            t.new_step(step + 1)
        self.assertEqual(sorted(t.steps), [3, 4])
        self.assertEqual(t.steps[4], {
            "Module.a.A.forward.0": None, "Module.a.b.B.forward.0": "Module.a.A.forward.0",
            "Aten.mm.0.forward": "Module.a.b.B.forward.0",
            "Module.a.b.B.backward.0": "Module.a.A.backward.0",
            "Module.a.A.backward.0": None})

    def test_call_stacks(self):
        model = make_model()
        x = batches()[0]
        for level, name in (("op", "Aten.embedding.0.forward"),
                            ("module", "Module.emb.Embedding.forward.0")):
            top = helpers.tmpdir("torch-stack")
            with adump.torch.capture(model, top, level=level, backward=False,
                                     stack=True) as cap:
                model(x)
            stacks = cap.tree.stack_json(0)
            entry = [v for v in stacks.values() if name in v[0]]
            self.assertEqual(len(entry), 1, level)
            lines = entry[0][1]
            self.assertTrue(any("in test_call_stacks" in ln and "model(x)" in ln
                                for ln in lines), lines)
            self.assertFalse(any("/adump/" in ln.split(",")[0] for ln in lines), lines)
            # One stack per forward dump, and only those.
            prefix = "Aten." if level == "op" else "Module."
            self.assertEqual(sorted(n for v in stacks.values() for n in v[0]),
                             sorted(n for n in cap.tree.steps[0] if n.startswith(prefix)),
                             level)
        top = helpers.tmpdir("torch-nostack")
        with adump.torch.capture(model, top, level="op", backward=False) as cap:
            model(x)
        self.assertEqual(cap.tree.stack_json(0), {})

    def test_batch_norm_running_stats_as_given(self):
        # native_batch_norm updates running_mean/var in place though its schema does not
        # say so: the dumped inputs are the values before (5.0), not after (4.5).
        bn = nn.BatchNorm1d(3, momentum=0.1)
        with torch.no_grad():
            bn.running_mean.fill_(5.0)
            bn.running_var.fill_(4.0)
        x = torch.tensor([[1.0, -2.0, 3.0], [-1.0, 2.0, -3.0]])       # mean 0
        top = helpers.tmpdir("torch-bn")
        with adump.torch.capture(bn, top, level="op", backward=False, keep_root=True) as cap:
            bn(x)
        self.assertEqual(cap.losses, [])
        self.assertTrue(torch.allclose(bn.running_mean, torch.full((3,), 4.5)))
        self.assertTrue(torch.allclose(bn.running_var, torch.tensor([3.8, 4.4, 5.4])))
        d = dumps_of(top, 0)["Aten.native_batch_norm.0.forward"]
        self.assertEqual(d.attrs.get("module"), "Module.BatchNorm1d.forward.0")
        # inputs: input, weight, bias, running_mean, running_var
        self.assertEqual(len(d.inputs), 5)
        np.testing.assert_array_equal(d.inputs[0], x.numpy())
        np.testing.assert_array_equal(d.inputs[3], np.full(3, 5.0, np.float32))
        np.testing.assert_array_equal(d.inputs[4], np.full(3, 4.0, np.float32))


if __name__ == "__main__":
    unittest.main()
