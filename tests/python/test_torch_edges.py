# SPDX-License-Identifier: Apache-2.0
"""adump.torch at the edges of how models run (issue 30 item 7): each capture's dumps
against an independent record made here with plain module hooks and a small dispatch mode
(no adump code): factory ops inside a submodule, nested op-level captures, activation
checkpointing, an exception inside a module's forward, overlapping module-level captures,
and format="msprobe"'s parameters default. Exits 77 without torch."""
import collections
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torch.nn as nn
    import torch.utils.checkpoint
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError:
    print("test_torch_edges: torch is not installed (python3-torch): skipped")
    sys.exit(77)

import adump  # noqa: E402
import adump.torch  # noqa: E402


def copies(obj):
    """Every tensor in @obj (tuples, lists, dict values), detached copies, in order."""
    out = []
    if isinstance(obj, torch.Tensor):
        out.append(obj.detach().clone())
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            out += copies(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            out += copies(o)
    return out


class RefOps(TorchDispatchMode):
    """The reference: every aten op the program runs, in order, as
    (base name, module forward call open around it or None, in backward, inputs, outputs).
    Module calls come from plain forward pre-hooks and hooks (a count per module name);
    `backward` is set by the test around its backward calls."""

    def __init__(self):
        super().__init__()
        self.ops, self.stack, self.calls, self.backward = [], [], {}, False

    def watch(self, model):
        for path, m in model.named_modules():
            if not path:
                continue                # the root: not a module call in adump's names
            base = "Module.%s.%s" % (path, type(m).__name__)

            def pre(mod, args, base=base):
                n = self.calls.get(base, 0)
                self.calls[base] = n + 1
                self.stack.append("%s.forward.%d" % (base, n))

            def post(mod, args, out):
                self.stack.pop()
            m.register_forward_pre_hook(pre)
            m.register_forward_hook(post)
        return self

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        ins = copies((args, kwargs))
        out = func(*args, **kwargs)
        pkt = func.overloadpacket.__name__
        base = "Aten.%s" % pkt if func._overloadname == "default" else \
            "Aten.%s.%s" % (pkt, func._overloadname)
        self.ops.append((base, self.stack[-1] if self.stack else None, self.backward, ins,
                         copies(out)))
        return out

    def named(self):
        """{dump name: (module, inputs, outputs)} as adump names them: an op is a forward
        op when it runs outside backward or inside a module's forward call (recomputed by
        checkpointing), counted per name and direction."""
        counts, out = collections.Counter(), {}
        for base, module, bwd, ins, outs in self.ops:
            direction = "backward" if bwd and module is None else "forward"
            n = counts[(base, direction)]
            counts[(base, direction)] += 1
            out["%s.%d.%s" % (base, n, direction)] = (module, ins, outs)
        return out


def dumps_of(top, step=0):
    return {d.op_name: d for d in adump.walk(os.path.join(top, "step%d" % step))}


def assert_values(tc, got, want, what):
    tc.assertEqual(len(got), len(want), what)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w.numpy(), err_msg=what)


def assert_ops(tc, dumps, ref, directions=("forward",)):
    """@dumps (adump's, one step) hold exactly the ops of @ref in @directions, each with
    the module call the reference saw and the same values."""
    want = {k: v for k, v in ref.items() if k.rsplit(".", 1)[1] in directions}
    got = {k: v for k, v in dumps.items() if k.rsplit(".", 1)[1] in directions}
    tc.assertEqual(sorted(got), sorted(want))
    for name, (module, ins, outs) in want.items():
        d = got[name]
        tc.assertEqual(d.attrs.get("module"), module, name)
        assert_values(tc, d.inputs, ins, name + " inputs")
        assert_values(tc, d.outputs, outs, name + " outputs")


class Zeros(nn.Module):
    def forward(self, x):
        return x + torch.zeros(3)


class WithZeros(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = Zeros()

    def forward(self, x):
        return self.sub(x) * x


class OwnOps(unittest.TestCase):
    def test_factory_op_in_submodule(self):
        # torch.zeros inside a module call: the capture's own reference to its output made
        # torch issue an aten.detach the program never runs, dumped as if it were the
        # program's.
        x = torch.arange(3.0)
        model_ref = WithZeros()
        ref = RefOps().watch(model_ref)
        with ref:
            model_ref(x)
        model = WithZeros()
        top = helpers.tmpdir("edge-zeros")
        with adump.torch.capture(model, top, level="op", backward=False) as cap:
            model(x)
        self.assertEqual(cap.losses, [])
        dumps = dumps_of(top)
        self.assertIn("Aten.zeros.0.forward", dumps)
        self.assertEqual(dumps["Aten.zeros.0.forward"].attrs["module"],
                         "Module.sub.Zeros.forward.0")
        assert_ops(self, dumps, ref.named())

    def test_nested_op_captures(self):
        # Two op-level captures at once: the outer one saw the inner one's copies and
        # conversions (detach, to, resolve_conj) as ops of the program. Each dumps the
        # program's ops, the same ones a plain dispatch mode records, and nothing else.
        def program(model):
            x = torch.arange(3.0)
            y = model(x)
            z = torch.complex(y, x).conj() * 2      # complex values: converted to dump
            z.add_(1)                               # in place: its input copied first
            return z

        model_ref = WithZeros()
        ref = RefOps().watch(model_ref)
        with ref:
            program(model_ref)
        want = ref.named()
        model = WithZeros()
        outer, inner = helpers.tmpdir("edge-outer"), helpers.tmpdir("edge-inner")
        with adump.torch.capture(model, outer, level="op", backward=False) as a:
            with adump.torch.capture(model, inner, level="op", backward=False) as b:
                program(model)
        self.assertEqual(a.losses, [])
        self.assertEqual(b.losses, [])
        for top in (outer, inner):
            dumps = dumps_of(top)
            self.assertIn("Aten.add_.Tensor.0.forward", dumps)
            self.assertEqual(sorted(dumps), sorted(want), top)
            for name, (module, ins, outs) in want.items():
                self.assertEqual(dumps[name].attrs.get("module"), module, name)
                self.assertEqual(len(dumps[name].inputs), len(ins), name)
                for g, w in zip(dumps[name].inputs + dumps[name].outputs, ins + outs):
                    np.testing.assert_array_equal(np.asarray(g).view(np.uint8),
                                                  w.resolve_conj().numpy().view(np.uint8),
                                                  err_msg=name)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return torch.relu(self.lin(x)).tanh()


class Checkpointed(nn.Module):
    def __init__(self, reentrant):
        super().__init__()
        torch.manual_seed(3)
        self.blk = Block()
        self.head = nn.Linear(3, 1)
        self.reentrant = reentrant

    def forward(self, x):
        h = torch.utils.checkpoint.checkpoint(self.blk, x, use_reentrant=self.reentrant)
        return self.head(h)


class Checkpointing(unittest.TestCase):
    def test_recomputed_ops_name_their_module_call(self):
        # Ops recomputed in backward run inside a second forward call of the checkpointed
        # module (Module.blk.Block.forward.1, as its hooks see it): named by that call,
        # not by the backward call whose graph node was running.
        for reentrant in (False, True):
            def x():
                return torch.linspace(-1, 1, 6).reshape(2, 3).requires_grad_()
            model_ref = Checkpointed(reentrant)
            ref = RefOps().watch(model_ref)
            with ref:
                loss = model_ref(x()).sum()
                ref.backward = True
                loss.backward()
            want = ref.named()
            self.assertIn("Module.blk.lin.Linear.forward.1", {v[0] for v in want.values()})
            model = Checkpointed(reentrant)
            top = helpers.tmpdir("edge-ckpt")
            with adump.torch.capture(model, top, level="op", backward=True) as cap:
                model(x()).sum().backward()
            self.assertEqual(cap.losses, [])
            dumps = dumps_of(top)
            recomputed = [k for k, v in dumps.items()
                          if v.attrs.get("module") == "Module.blk.lin.Linear.forward.1"]
            self.assertIn("Aten.addmm.2.forward", recomputed, reentrant)
            assert_ops(self, dumps, want)
            # Every op of the backward pass is dumped once, no more.
            self.assertEqual(sorted(k for k in dumps if k.endswith(".backward")),
                             sorted(k for k in want if k.endswith(".backward")), reentrant)
            # The recomputed call is a node of the module tree under its own parent.
            tree = cap.tree.steps[0]
            self.assertEqual(tree["Module.blk.lin.Linear.forward.1"],
                             "Module.blk.Block.forward.1")
            self.assertEqual(tree["Aten.addmm.2.forward"], "Module.blk.lin.Linear.forward.1")


class Fragile(nn.Module):
    def forward(self, x):
        y = x.exp()
        if bool(x.sum() < 0):
            raise ValueError("bad batch")
        return y


class Guarded(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(4)
        self.pre = nn.Linear(3, 3)
        self.frag = Fragile()
        self.post = nn.Linear(3, 2)

    def forward(self, x):
        return self.post(self.frag(self.pre(x)))


def skip_bad_batches(model, on_skip=None):
    """A training loop that skips a batch whose forward raised; the loss outside the model."""
    xs = [torch.ones(2, 3), -10 * torch.ones(2, 3), torch.ones(2, 3) / 2]
    with torch.no_grad():
        model.pre.weight.copy_(torch.eye(3))
        model.pre.bias.zero_()
    for x in xs:
        try:
            out = model(x)
        except ValueError:
            if on_skip is not None:
                on_skip()
            continue
        (out * out).sum()


class Exceptions(unittest.TestCase):
    def test_exception_in_forward_unwinds(self):
        # Fragile raises on the second batch and the loop goes on: the call it was in
        # must not stay open (later calls would be its children, later ops outside every
        # module would carry its name).
        model_ref = Guarded()
        ref = RefOps().watch(model_ref)
        parents = {}

        def parent(mod, args):
            # Runs after ref's own pre-hook: the call just entered and the one around it.
            parents[ref.stack[-1]] = ref.stack[-2] if len(ref.stack) > 1 else None
        for path, m in model_ref.named_modules():
            if path:
                m.register_forward_pre_hook(parent)
        with ref:
            skip_bad_batches(model_ref, ref.stack.clear)    # the reference knows
        want = ref.named()
        self.assertIsNone(want["Aten.mul.Tensor.1.forward"][0])
        model = Guarded()
        top = helpers.tmpdir("edge-raise-op")
        with adump.torch.capture(model, top, level="op", backward=False) as cap:
            skip_bad_batches(model)
        self.assertEqual(cap.losses, [])
        assert_ops(self, dumps_of(top), want)
        # Module level: every call's parent in the module tree is the reference's.
        top = helpers.tmpdir("edge-raise-mod")
        model = Guarded()
        with adump.torch.capture(model, top, level="module", backward=False) as cap:
            skip_bad_batches(model)
        tree = cap.tree.steps[0]
        self.assertEqual(tree, parents)
        # The call that raised left no dump; the others did.
        self.assertEqual(sorted(dumps_of(top)),
                         sorted(k for k in parents if k != "Module.frag.Fragile.forward.1"))
        # Nothing of the capture is left on the modules.
        for m in model.modules():
            self.assertFalse([k for k in m.__dict__ if k.startswith("_adump")], m)
            self.assertNotIn("forward", m.__dict__)


def torch_state(model):
    """What a capture may replace and must put back, by identity."""
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d
    state = {"autograd.backward": torch.autograd.backward, "autograd.grad": torch.autograd.grad,
             "Tensor.backward": torch.Tensor.backward,
             "TorchDispatchMode stack": torch._C._len_torch_dispatch_stack()}
    for name in ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier"):
        if hasattr(c10d, name):
            state["c10d." + name] = getattr(c10d, name)
            state["dist." + name] = getattr(dist, name)
    for path, m in model.named_modules():
        state["forward of %r" % path] = m.__dict__.get("forward", "the class's")
        state["dict of %r" % path] = sorted(m.__dict__)
    return state


class Net2(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.a = nn.Linear(3, 4)
        self.b = nn.Linear(4, 2)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def grads_per_backward(model, xs):
    """Plain parameter hooks: [{module path: {param: grad}} per backward() call]."""
    calls = []
    for path, m in model.named_modules():
        for pname, p in m.named_parameters(recurse=False):
            def hook(g, path=path, pname=pname):
                calls[-1].setdefault(path, {})[pname] = g.clone()
            p.register_hook(hook)
    for x in xs:
        calls.append({})
        model(x).sum().backward()
    return calls


class Overlapping(unittest.TestCase):
    def test_module_captures_out_of_order(self):
        # A opens, B opens, A closes, B closes: with each capture putting back what it
        # found, A's close took B's backward wrapper away (B then dumped one
        # parameters_grad for two backward calls) and B's close put A's back for good.
        xs = [torch.linspace(-1, 1, 6).reshape(2, 3) * k for k in (1.0, 2.0, 3.0)]
        want = grads_per_backward(Net2(), xs)
        for order in ("AB", "BA"):      # which one closes first
            model = Net2()
            before = torch_state(model)
            tops = {k: helpers.tmpdir("edge-overlap-" + k) for k in "AB"}
            caps = {k: adump.torch.capture(model, tops[k], level="module", backward=True)
                    for k in "AB"}
            caps["A"].__enter__()
            model(xs[0]).sum().backward()
            caps["B"].__enter__()
            model(xs[1]).sum().backward()
            caps[order[0]].__exit__(None, None, None)
            model(xs[2]).sum().backward()
            self.assertNotEqual(torch_state(model), before)     # the second is open
            caps[order[1]].__exit__(None, None, None)
            self.assertEqual(torch_state(model), before, order)
            # Each capture's parameters_grad dumps: one per backward() call it was open
            # for, with that call's gradients.
            open_for = {"A": [0, 1] + ([2] if order[0] == "B" else []),
                        "B": [1] + ([2] if order[0] == "A" else [])}
            for k in "AB":
                self.assertEqual(caps[k].losses, [], k)
                dumps = dumps_of(tops[k])
                for path, cls in (("a", "Linear"), ("b", "Linear")):
                    for i, call in enumerate(open_for[k]):
                        name = "Module.%s.%s.parameters_grad.%d" % (path, cls, i)
                        self.assertIn(name, dumps, (order, k))
                        # in the order the gradients came (the hooks' dict's order)
                        assert_values(self, dumps[name].outputs,
                                      list(want[call][path].values()),
                                      "%s %s %s" % (order, k, name))
                    self.assertNotIn("Module.%s.%s.parameters_grad.%d" %
                                     (path, cls, len(open_for[k])), dumps, (order, k))
                    self.assertEqual(
                        sorted(n for n in dumps if ".%s.Linear.forward." % path in n),
                        ["Module.%s.Linear.forward.%d" % (path, i)
                         for i in range(len(open_for[k]))], (order, k))

    def test_op_captures_out_of_order(self):
        # The same with op-level captures: each one's dispatch mode leaves the stack
        # whichever closes first; each dumps the program's ops while open.
        x = torch.linspace(-1, 1, 6).reshape(2, 3)
        model_ref = Net2()
        ref = RefOps().watch(model_ref)
        with ref:
            model_ref(x)
        want = ref.named()
        for order in ("AB", "BA"):
            model = Net2()
            before = torch_state(model)
            tops = {k: helpers.tmpdir("edge-overlap-op-" + k) for k in "AB"}
            caps = {k: adump.torch.capture(model, tops[k], level="op", backward=False)
                    for k in "AB"}
            caps["A"].__enter__()
            caps["B"].__enter__()
            caps[order[0]].__exit__(None, None, None)
            model(x)
            caps[order[1]].__exit__(None, None, None)
            self.assertEqual(torch_state(model), before, order)
            # Nothing ran while the first one to close was open.
            self.assertFalse(os.path.exists(os.path.join(tops[order[0]], "step0")), order)
            assert_ops(self, dumps_of(tops[order[1]]), want)


class ParametersDefault(unittest.TestCase):
    def test_msprobe_format_records_parameters(self):
        # msprobe's L0 records every module's own parameters with its forward entry: a
        # format="msprobe" capture does too unless told otherwise (parameters=False); the
        # native format keeps leaving them out unless parameters=True.
        import json
        x = torch.linspace(-1, 1, 6).reshape(2, 3)
        model = Net2()
        ref = {}                # the reference: module parameters at each forward call

        def pre(mod, args):
            ref[mod] = {n: p.detach().clone() for n, p in mod.named_parameters(recurse=False)}
        handles = [m.register_forward_pre_hook(pre) for m in (model.a, model.b)]
        top = helpers.tmpdir("edge-params-msprobe")
        with adump.torch.capture(model, top, format="msprobe", backward=False) as cap:
            model(x)
        for h in handles:
            h.remove()
        self.assertEqual(cap.losses, [])
        rank = os.path.join(top, "step0", os.listdir(os.path.join(top, "step0"))[0])
        with open(os.path.join(rank, "dump.json")) as f:
            data = json.load(f)["data"]
        for path, m in (("a", model.a), ("b", model.b)):
            entry = data["Module.%s.Linear.forward.0" % path]
            self.assertEqual(sorted(entry.get("parameters", {})), ["bias", "weight"], path)
            for pname, item in entry["parameters"].items():
                t = torch.load(os.path.join(rank, "dump_tensor_data", item["data_name"]))
                self.assertTrue(torch.equal(t, ref[m][pname]), (path, pname))
        top = helpers.tmpdir("edge-params-off")
        with adump.torch.capture(model, top, format="msprobe", backward=False,
                                 parameters=False):
            model(x)
        rank = os.path.join(top, "step0", os.listdir(os.path.join(top, "step0"))[0])
        with open(os.path.join(rank, "dump.json")) as f:
            self.assertNotIn("parameters", json.load(f)["data"]["Module.a.Linear.forward.0"])
        top = helpers.tmpdir("edge-params-cann")
        with adump.torch.capture(model, top, backward=False):
            model(x)
        d = dumps_of(top)["Module.a.Linear.forward.0"]
        self.assertEqual(len(d.inputs), 1)               # x alone
        self.assertNotIn("parameters", json.loads(d.dfx_message))


if __name__ == "__main__":
    unittest.main()
