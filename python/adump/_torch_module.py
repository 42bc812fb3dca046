# SPDX-License-Identifier: Apache-2.0
"""adump.torch's module hooks (a part of capture, mixed in): the hooks every module gets at
both levels (the module tree: each call's parent, the call ops run inside), the forward
wrapper that closes a call its forward left by an exception, and at module level the dumps
of module calls: forward entries at the post-hook, backward entries from hooks on the
autograd graph, and the gradients of each module's own parameters (parameters_grad). The
state they use is capture's (torch.py)."""
import torch

from . import _torch_patch
from ._torch_dist import tensors_of
from ._torch_info import describe, own_ops


def rebuild(obj, fn):
    """@obj with every tensor t replaced by fn(t), tuples/lists/dicts rebuilt."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(rebuild(o, fn) for o in obj)
    if isinstance(obj, list):
        return [rebuild(o, fn) for o in obj]
    if isinstance(obj, dict):
        return {k: rebuild(v, fn) for k, v in obj.items()}
    return obj


class _Backward:
    """Gradients of one module call, gathered as the autograd engine produces them."""
    __slots__ = ("name", "op_type", "grad_out", "grad_in", "pending")

    def __init__(self, name, op_type, n_out, n_in):
        self.name = name
        self.op_type = op_type
        self.grad_out = [None] * n_out
        self.grad_in = [None] * n_in
        self.pending = n_out + n_in


class ModuleHooks:
    """The module-level half of capture: its methods run on a capture's state."""

    def _install_modules(self):
        """Hooks on every module: at both levels they keep the module tree (each call's
        parent, the call ops run inside); at module level they dump."""
        for path, module in self.model.named_modules():
            if not path and not self.keep_root:
                continue                # msprobe never dumps the root module
            cls = type(module).__name__
            if getattr(module, "inplace", False) is True:
                # ReLU(inplace=True) and the like: keep their inputs' values at entry.
                self._inplace_modules.add(id(module))
            base = "Module.%s.%s" % (path, cls) if path else "Module.%s" % cls
            if self.level == "module":
                pre, post = self._pre_hook(base, path), self._post_hook(base, path, cls)
            else:
                pre, post = self._tree_pre_hook(base), self._tree_post_hook()
            self._handles.append(module.register_forward_pre_hook(pre))
            self._handles.append(module.register_forward_hook(post))
            self._wrap_forward(module, base)
            if self.level == "module" and self.backward:
                self._hook_parameters(module, base, cls, path)

    def _hook_parameters(self, module, base, cls, path):
        """Module.<path>.<Class>.parameters_grad: the gradients of the module's own
        parameters, taken by hooks on the parameters and dumped when the backward call
        that made them returns (one dump per backward call; a second one in the same step
        is named ...parameters_grad.1, the first ...parameters_grad.0, as msprobe names them)."""
        params = [(n, p) for n, p in module.named_parameters(recurse=False) if p.requires_grad]
        if not params:
            return
        names = [n for n, _ in params]
        for pname, p in params:
            def hook(grad, pname=pname):
                if not self._active() or not self._in_scope(base, path):
                    return None
                got = self._param_grads.get(base)
                if got is None:
                    got = self._param_grads[base] = (cls, names, {})
                got[2][pname] = grad     # the engine sums a parameter's uses before this
                return None
            self._handles.append(p.register_hook(hook))

    def _dump_param_grads(self):
        pending, self._param_grads = self._param_grads, {}
        for base, (cls, names, grads) in pending.items():
            # msprobe counts every call, the first one too: <base>.parameters_grad.0
            n = self._next_index(base + ".parameters_grad")
            name = "%s.parameters_grad.%d" % (base, n)
            outs = []
            info = {"parameters_grad": describe({k: grads[k] for k in names if k in grads},
                                                outs, "output")}
            self.tree.add(name, None)
            self._dump(cls, name, [], outs, None, info)

    def _wrap_forward(self, module, base):
        """The instance's forward is wrapped (a _torch_patch layer, undone at exit) to
        close its call when it raises: the forward hook does not run then (torch 1.13 has
        no always_call), and a call left open would be the parent of every later call and
        the module of every later op outside all modules (a training loop that skips a bad
        batch goes on). At module level it also hands the keyword arguments to the open
        frame: torch 1.13's forward pre-hooks do not see them."""
        kwargs_wanted = self.level == "module" and self.with_inputs

        def layer(inner):
            def forward(*args, **kwargs):
                frames = self._frames.get(id(module))
                depth = len(frames) if frames else 0    # this call's frame is the top one
                if kwargs and kwargs_wanted and depth:
                    frame = frames[-1]
                    if frame is not None and frame[1] is not None:
                        frame[1]["kwargs"] = kwargs
                try:
                    return inner(*args, **kwargs)
                except BaseException:
                    if depth and len(frames) >= depth:
                        self._unwind(base, frames[depth - 1])
                        del frames[depth - 1:]
                    raise
            return forward
        try:
            _torch_patch.add(module, "forward", self, layer)
        except (AttributeError, TypeError, RuntimeError):
            pass                        # e.g. a scripted module: its calls stay open on a raise

    def _unwind(self, base, frame):
        """The module call of @frame raised: it and the calls left open inside it close."""
        if frame is None:
            return
        if self.level == "module":
            n = frame[0]
            name = "%s.forward.%d" % (base, n)
        else:
            name = frame
        self.tree.leave(name)

    def _tree_pre_hook(self, base):
        def pre(module, args):
            frames = self._frames.setdefault(id(module), [])
            if not self._active():
                frames.append(None)
                return None
            name = "%s.forward.%d" % (base, self._next_index(base))
            self.tree.enter(name)
            frames.append(name)
            return None
        return pre

    def _tree_post_hook(self):
        def post(module, args, output):
            frames = self._frames.get(id(module))
            name = frames.pop() if frames else None
            if name is not None:
                self.tree.leave(name)
            return None
        return post

    def _pre_hook(self, base, path):
        def pre(module, args):
            frames = self._frames.setdefault(id(module), [])
            if not self._active():
                frames.append(None)
                return None
            n = self._next_index(base)
            fwd = "%s.forward.%d" % (base, n)
            self.tree.enter(fwd)
            if not self._in_scope(base, path, (fwd, "%s.backward.%d" % (base, n),
                                               base + ".forward", base + ".backward")):
                frames.append((n, None))
                return None
            inputs, skipped = [], []
            info = {"input_args": describe(args, inputs, "input", skipped)}
            copies = None
            if self.with_inputs and not self.zero_copy and id(module) in self._inplace_modules:
                # This module modified its input in place before: keep the value at entry.
                with own_ops():
                    copies = [t.detach().clone() for t in inputs]
            versions = [t._version for t in inputs]
            views = {}
            if self.backward and torch.is_grad_enabled():
                def wrap(t):
                    if not t.requires_grad:
                        return t
                    v = views.get(id(t))
                    if v is None:
                        v = views[id(t)] = t.view_as(t)
                    return v
                with own_ops():
                    args = rebuild(args, wrap)
            frames.append((n, {"inputs": inputs, "versions": versions, "copies": copies,
                               "views": [(v, v._version) for v in views.values()],
                               "info": info, "skipped": skipped}))
            return args if views else None
        return pre

    def _post_hook(self, base, path, cls):
        def post(module, args, output):
            frames = self._frames.get(id(module))
            frame = frames.pop() if frames else None
            if frame is None:
                return None
            n, frame = frame
            self.tree.leave("%s.forward.%d" % (base, n))
            if frame is None:
                return None
            inputs, versions, copies = frame["inputs"], frame["versions"], frame["copies"]
            views, info = frame["views"], frame["info"]
            changed = any(t._version != v for t, v in zip(inputs, versions))
            if changed:
                self._inplace_modules.add(id(module))
            outputs, skipped = [], frame["skipped"]
            info["output"] = describe(output, outputs, "output", skipped)
            if not (self.with_outputs and self.with_forward):
                outputs = []
            fwd_inputs = []
            if self.with_inputs and self.with_forward:
                if copies is not None:
                    fwd_inputs = list(copies)
                elif changed:
                    # The value at entry is gone (first call of an in-place module): record
                    # a loss rather than dump the modified value as the input.
                    self._lost(cls, "%s.forward.%d" % (base, n),
                               [(k, i, t.element_size() * t.nelement())
                                for k, ts in (("input", inputs), ("output", outputs))
                                for i, t in enumerate(ts)], "changed_in_place",
                               "%s changed its input in place; the value at entry was not "
                               "kept on this first call (later calls copy it)" % base)
                    fwd_inputs = None
                else:
                    fwd_inputs = list(inputs)
            if fwd_inputs is not None and self.with_inputs and self.with_forward:
                # Keyword arguments, then the module's own parameters, after the positional
                # arguments; dfx_message says which input is which.
                info["input_kwargs"] = describe(frame.get("kwargs", {}), fwd_inputs, "input",
                                                skipped)
                if self.parameters:
                    info["parameters"] = describe(dict(module.named_parameters(recurse=False)),
                                                  fwd_inputs, "input", skipped)
            if fwd_inputs is not None and self.with_forward:
                if self.stack:
                    self.tree.record_stack("%s.forward.%d" % (base, n))
                self._dump(cls, "%s.forward.%d" % (base, n), fwd_inputs, outputs, None, info,
                           skipped)
            if self.backward and torch.is_grad_enabled():
                self._hook_backward(base, cls, n, output, views)
            return None
        return post

    def _hook_backward(self, base, cls, n, output, views):
        outs = [t for t in tensors_of(output, []) if t.requires_grad and t.grad_fn is not None]
        ins = [(v, v0) for v, v0 in views if v.grad_fn is not None]
        if not outs and not ins:
            return
        rec = _Backward("%s.backward.%d" % (base, n), cls, len(outs), len(ins))
        self._backwards.append(rec)

        def got(slot_list, i, g):
            if slot_list[i] is None and g is not None:
                # Held, not copied: the engine accumulates in place only into gradients
                # nobody else references, and the version is compared when the call's
                # last gradient arrives.
                slot_list[i] = (g, g._version)
            rec.pending -= 1
            if rec.pending == 0:
                self._emit_backward(rec)

        for i, t in enumerate(outs):
            nr = t.output_nr

            def hook(grad_inputs, grad_outputs, i=i, nr=nr):
                got(rec.grad_out, i, grad_outputs[nr] if nr < len(grad_outputs) else None)
            t.grad_fn.register_hook(hook)
        for i, (v, v0) in enumerate(ins):
            if v._version != v0 and v._base is not None and \
                    type(v._base.grad_fn).__name__ == "CopySlices":
                # Modified in place by the module: the view's own node left the graph; the
                # gradient of the value before the change flows out of the base's CopySlices.
                # That gradient is the base's: cut the view's elements out of it.
                geo = (tuple(v.shape), v.stride(), v.storage_offset() - v._base.storage_offset())

                def hook(grad_inputs, grad_outputs, i=i, geo=geo):
                    g = grad_inputs[0] if grad_inputs else None
                    if g is not None:
                        with own_ops():
                            g = g.contiguous().as_strided(*geo)
                    got(rec.grad_in, i, g)
                v._base.grad_fn.register_hook(hook)
            else:
                def hook(grad_inputs, grad_outputs, i=i):
                    got(rec.grad_in, i, grad_outputs[0] if grad_outputs else None)
                v.grad_fn.register_hook(hook)

    def _emit_backward(self, rec):
        if rec in self._backwards:
            self._backwards.remove(rec)
        if not self._active():
            return
        self.tree.add_backward(rec.name)
        held = [x for x in rec.grad_out + rec.grad_in if x is not None]
        if any(g._version != v for g, v in held):
            self._lost(rec.op_type, rec.name, [], "changed_in_place",
                       "a gradient of this call was modified in place before it was dumped")
            return
        ins = [g for g, _ in filter(None, rec.grad_out)] if self.with_inputs else []
        outs = [g for g, _ in filter(None, rec.grad_in)] if self.with_outputs else []
        self._dump(rec.op_type, rec.name, ins, outs)

    def _flush_backwards(self):
        """Dump the gradients that arrived for calls whose other gradients never came (an
        output that did not reach the loss)."""
        pending, self._backwards = self._backwards, []
        for rec in pending:
            if any(g is not None for g in rec.grad_out + rec.grad_in):
                self._emit_backward(rec)

    # ---- op level ----------------------------------------------------------------------------

    def _patch_backward(self):
        """torch.autograd.backward and grad, one layer of this capture's on each
        (_torch_patch: captures open at once stay independent, in any close order)."""
        cap = self

        def layer(is_backward):
            """A layer over torch.autograd.backward (@is_backward: it ends with the
            parameters' gradients dumped) or torch.autograd.grad (it does not)."""
            def wrap(inner):
                def call(*args, **kwargs):
                    cap.tree.resolve()  # the last forward op's graph nodes, before they run
                    cap.tree.begin_backward()
                    cap._in_backward += 1
                    try:
                        return inner(*args, **kwargs)
                    finally:
                        cap._in_backward -= 1
                        cap.tree.end_backward()
                        if is_backward and cap._param_grads:
                            cap._dump_param_grads()
                call.__name__ = "backward" if is_backward else "grad"
                return call
            return wrap
        backward_layer, grad_layer = layer(True), layer(False)
        _torch_patch.add(torch.autograd, "backward", self, backward_layer)
        _torch_patch.add(torch.autograd, "grad", self, grad_layer)
