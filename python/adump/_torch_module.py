# SPDX-License-Identifier: Apache-2.0
"""adump.torch's module hooks (a part of capture, mixed in): the hooks every module gets at
both levels (the module tree: each call's parent, the call ops run inside), the forward
wrapper that closes a call its forward left by an exception, and at module level the dumps
of module calls: forward entries at the post-hook, backward entries from hooks on the
nodes the autograd graph already has (see "backward" below), and the gradients of each
module's own parameters (parameters_grad). The state they use is capture's (torch.py)."""
import torch

from . import _torch_patch
from ._adump import _graph_reach, _graph_walk
from ._torch_dist import tensors_of
from ._torch_info import describe, own_ops


# A leaf's gradient node: it has no next_functions, so a walk of the graph stops there.
_ACCUMULATE_GRAD = torch._C._functions.AccumulateGrad
# The node an in-place change of a view puts on its base (its next_functions[0]: the
# base's history before the change).
_COPY_SLICES = torch._C._functions.CopySlices


class _Backward:
    """The gradients of one module call, gathered as the autograd engine produces them:
    each slot (an output's, an input's) is the sum, in the engine's order, of the
    contributions of the graph nodes that feed it; `waiting` counts contributions to come."""
    __slots__ = ("name", "op_type", "module", "start", "c0", "c1", "grad_out", "grad_in",
                 "waiting", "done", "takes_in")

    def __init__(self, name, op_type, module, start, c0, c1, n_out, n_in):
        self.name = name
        self.op_type = op_type
        self.module = module
        self.start = start              # the call's start order (inner calls start later)
        self.c0, self.c1 = c0, c1       # its walk tags: calls closed inside it, and its own
        self.grad_out = [None] * n_out
        self.grad_in = [None] * n_in
        self.waiting = 0
        self.done = False
        self.takes_in = False           # some input takes a gradient

    def inside(self, tag):
        return tag is not None and self.c0 <= tag <= self.c1


def _own_parameters(module):
    """dict(module.named_parameters(recurse=False)), without its generators: the module's
    own parameters that are set, a parameter registered under two names once."""
    got, ids = {}, set()
    for name, p in module._parameters.items():
        if p is not None and id(p) not in ids:
            ids.add(id(p))
            got[name] = p
    return got


def _edge(t):
    """The graph edge (node, output_nr) gradients of @t flow into; a leaf's is its
    AccumulateGrad node (got through a throwaway expand, msprobe's way: no node of the
    program's graph is added)."""
    fn = t.grad_fn
    if fn is not None:
        return fn, t.output_nr
    with own_ops():
        return t.expand_as(t).grad_fn.next_functions[0][0], 0


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
        parameters in one backward pass, taken by hooks on the parameters (the engine has
        summed a parameter's uses by then) and dumped where msprobe writes them: once all
        of them came (the engine accumulates a parameter as soon as the node that made its
        gradient ran), and at the latest just before the module's backward call that made
        them (a second one in the same step is ...parameters_grad.1)."""
        params = [(n, p) for n, p in module.named_parameters(recurse=False) if p.requires_grad]
        if not params:
            return
        names = [n for n, _ in params]
        for pname, p in params:
            def hook(grad, pname=pname):
                if not self._active() or not self._in_scope(base, path) or \
                        id(module) not in self._called:
                    return None         # a module never called (MultiheadAttention's
                    #                     out_proj, whose weight its parent uses) has none
                got = self._param_grads.get(base)
                if got is not None and pname in got[2]:
                    self._dump_param_grads(base)        # a second pass: the first one's
                    got = None
                if got is None:
                    got = self._param_grads[base] = (cls, names, {})
                got[2][pname] = grad
                return None
            self._handles.append(p.register_hook(hook))

    def _dump_param_grads(self, only=None, complete=False):
        """Dump the gathered parameters' gradients: those of @only (a module's base name),
        else all of them (@complete: only modules all of whose parameters came)."""
        for base in [only] if only is not None else list(self._param_grads):
            got = self._param_grads.get(base)
            if got is None:
                continue
            cls, names, grads = got
            if complete and len(grads) < len(names):
                continue
            del self._param_grads[base]
            # msprobe counts every call, the first one too: <base>.parameters_grad.0
            n = self._next_index(base + ".parameters_grad")
            name = "%s.parameters_grad.%d" % (base, n)
            outs = []
            # In the order they came, as msprobe's entry has them (each parameter's hook
            # adds its key: a Linear's bias before its weight).
            info = {"parameters_grad": describe(grads, outs, "output")}
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
            self._close_frame(frame[1])
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

    def _open_frames(self):
        """This thread's open module-level frames, outermost first."""
        st = getattr(self._local, "open", None)
        if st is None:
            st = self._local.open = []
        return st

    def _close_frame(self, frame):
        """@frame's call returned (or raised): it and the frames left open inside it go."""
        opened = self._open_frames()
        for i in range(len(opened) - 1, -1, -1):
            if opened[i] is frame:
                del opened[i:]
                return

    def _pre_hook(self, base, path):
        def pre(module, args):
            frames = self._frames.setdefault(id(module), [])
            if not self._active():
                frames.append(None)
                return None
            n = self._next_index(base)
            fwd = "%s.forward.%d" % (base, n)
            self.tree.enter(fwd)
            if self._selects and not self._in_scope(
                    base, path, (fwd, "%s.backward.%d" % (base, n), base + ".forward",
                                 base + ".backward")):
                frames.append((n, None))
                return None
            inputs, skipped = [], []
            info = {"input_args": describe(args, inputs, "input", skipped)}
            inplace = id(module) in self._inplace_modules
            if inplace and self.with_inputs and self._copies_inplace:
                # This module changes its input in place: the calls open around it whose
                # inputs it is about to change keep their values at entry now (a
                # Sequential whose first child is Dropout(inplace=True)).
                self._keep_open_inputs(inputs)
            copies = [None] * len(inputs)
            if inplace and self.with_inputs and self._copies_inplace:
                with own_ops():
                    copies = [t.detach().clone() for t in inputs]
            edges = None
            if self.backward and torch.is_grad_enabled():
                edges = [_edge(t) if t.requires_grad else None for t in inputs]
            self._starts += 1
            frame = {"inputs": inputs, "versions": [t._version for t in inputs],
                     "copies": copies, "edges": edges, "c0": self._closed,
                     "start": self._starts, "info": info, "skipped": skipped}
            frames.append((n, frame))
            self._open_frames().append(frame)
            return None
        return pre

    def _keep_open_inputs(self, tensors):
        """Copy the inputs of the open calls that share storage with @tensors and are not
        copied yet, while they still hold their values at entry."""
        ptrs = {t.data_ptr() for t in tensors if t.layout is torch.strided}
        if not ptrs:
            return
        for frame in self._open_frames():
            copies = frame["copies"]
            for i, t in enumerate(frame["inputs"]):
                if copies[i] is None and t.layout is torch.strided and \
                        t.data_ptr() in ptrs and t._version == frame["versions"][i]:
                    with own_ops():
                        copies[i] = t.detach().clone()

    def _post_hook(self, base, path, cls):
        def post(module, args, output):
            frames = self._frames.get(id(module))
            frame = frames.pop() if frames else None
            if frame is None:
                return None
            n, frame = frame
            fwd = "%s.forward.%d" % (base, n)
            self.tree.leave(fwd)
            if frame is None:
                return None
            self._called.add(id(module))
            self._close_frame(frame)
            inputs, versions, copies = frame["inputs"], frame["versions"], frame["copies"]
            info = frame["info"]
            changed = [t._version != v for t, v in zip(inputs, versions)]
            if any(changed):
                self._inplace_modules.add(id(module))
            outputs, skipped = [], frame["skipped"]
            info["output"] = describe(output, outputs, "output", skipped)
            if not (self.with_outputs and self.with_forward):
                outputs = []
            fwd_inputs = []
            if self.with_inputs and self.with_forward:
                lost = [i for i, c in enumerate(changed) if c and copies[i] is None]
                if lost:
                    # The value at entry is gone (changed in place by a call adump could
                    # not foresee): record a loss rather than dump the modified value.
                    self._lost(cls, fwd,
                               [(k, i, t.element_size() * t.nelement())
                                for k, ts in (("input", inputs), ("output", outputs))
                                for i, t in enumerate(ts)], "changed_in_place",
                               "%s changed its input in place; the value at entry was not "
                               "kept on this first call (later calls copy it)" % base)
                    fwd_inputs = None
                else:
                    fwd_inputs = [c if c is not None else t for t, c in zip(inputs, copies)]
            if fwd_inputs is not None and self.with_inputs and self.with_forward:
                # Keyword arguments, then the module's own parameters, after the positional
                # arguments; dfx_message says which input is which.
                info["input_kwargs"] = describe(frame.get("kwargs", {}), fwd_inputs, "input",
                                                skipped)
                if self.parameters:
                    info["parameters"] = describe(_own_parameters(module), fwd_inputs,
                                                  "input", skipped)
            if fwd_inputs is not None and self.with_forward:
                if self.stack:
                    self.tree.record_stack(fwd)
                self._dump(cls, fwd, fwd_inputs, outputs, None, info, skipped)
            if frame["edges"] is not None and torch.is_grad_enabled():
                self._hook_backward(base, cls, n, module, frame, output)
            return None
        return post

    # ---- backward ----------------------------------------------------------------------------
    #
    # Nothing is added to the autograd graph: a node between a module and its callers (a
    # view, a full backward hook's identity) changes the order in which the engine sums a
    # tensor's gradients, and so the training's last bits. The gradients of a call are
    # read where the graph already has them: each input's is the sum of what the nodes
    # made inside the call send it (their post-hooks), each output's what the nodes made
    # after the call send it (the output node's pre-hook, or their post-hooks where the
    # call used that output itself or returned its input). Which nodes a call made: a walk
    # of the graph from its outputs when it returns, down to its inputs and to nodes an
    # earlier call tagged; each node gets the number of the first call whose walk saw it.

    def _meta(self, node):
        """This capture's record on @node, kept in the node's own metadata (it lives as long
        as the node, and the capture holds no node: a graph nobody runs backward on is
        freed as it would be without the capture): {"tag", "post", "pre", "deferred"}."""
        md = node.metadata
        m = md.get(self._meta_key)
        if m is None:
            m = md[self._meta_key] = {}
        return m

    def _hook_backward(self, base, cls, n, module, frame, output):
        self._closed += 1
        c0, c1 = frame["c0"], self._closed
        in_edges = frame["edges"]
        outs = [t for t in tensors_of(output, []) if t.requires_grad and t.grad_fn is not None]
        if not outs and not any(in_edges):
            return
        rec = _Backward("%s.backward.%d" % (base, n), cls, id(module), frame["start"], c0, c1,
                        len(outs), len(in_edges))
        rec.takes_in = any(e is not None for e in in_edges)
        # Node wrappers are compared by id(): each one is held while that is done (a freed
        # wrapper's id can come back for another node).
        key_in = {}                     # (id(node), nr) -> [input index]
        in_nodes = set()
        for i, e in enumerate(in_edges):
            if e is not None:
                # A tensor passed as several arguments gets one gradient, at its first.
                key_in.setdefault((id(e[0]), e[1]), [i])
                in_nodes.add(id(e[0]))
        out_nodes = [t.grad_fn for t in outs]
        key_out = {}
        for k, (t, node) in enumerate(zip(outs, out_nodes)):
            key_out.setdefault((id(node), t.output_nr), []).append(k)
        # The walk: nodes this call made, and which of them feed its inputs and outputs
        # (_adump._graph_walk(), in C: a node visited is tagged c1 unless it has a tag; one
        # tagged before c0 was made before this call and is not walked). A parameter's
        # AccumulateGrad node is not walked: it sends nothing on, and its edge is looked at
        # all the same (a parameter passed as an argument is an input). mine: (node, j,
        # input slots) for each edge into an input; inside_out: the output keys some node
        # of this call also feeds.
        todo = [node for node in out_nodes if id(node) not in in_nodes]
        mine, inside_out = _graph_walk(todo, in_nodes, key_in, key_out, self._meta_key, c0, c1,
                                       _ACCUMULATE_GRAD)
        self._backwards[id(rec)] = rec
        for node, j, slots in mine:
            rec.waiting += 1
            self._on_node(node, True, (rec, j, [("in", i) for i in slots]))
        for i, (t, v0) in enumerate(zip(frame["inputs"], frame["versions"])):
            if in_edges[i] is None or any(i in slots for _, _, slots in mine):
                continue
            if t._version != v0 and t._base is not None and \
                    type(t._base.grad_fn).__name__ == "CopySlices":
                # A view the call changed in place: the gradient of the value before the
                # change flows out of the base's CopySlices; cut the view's elements out.
                geo = (tuple(t.shape), t.stride(), t.storage_offset() - t._base.storage_offset())
                rec.waiting += 1
                self._on_node(t._base.grad_fn, True, (rec, 0, [("cut", i, geo)]))
        deferred = False
        for key, ks in key_out.items():
            passthrough = key in key_in
            node = out_nodes[ks[0]]
            if key in inside_out or passthrough:
                # Only the nodes made after the call count: found when backward starts.
                targets = [("out", k) for k in ks]
                if passthrough:
                    targets += [("in", i) for i in key_in[key]]
                self._meta(node).setdefault("deferred", []).append((rec, key[1], targets))
                deferred = True
            else:
                rec.waiting += 1
                entry = (rec, key[1], [("out", k) for k in ks])
                self._on_node(node, False, entry)
                self._watch_views(rec, node, entry, [(k, outs[k]) for k in ks])
        if deferred:
            self._deferred.append(rec)
        elif rec.waiting == 0:
            del self._backwards[id(rec)]

    def _watch_views(self, rec, node, entry, outs):
        """Outputs of @outs (index, tensor) that are views (InstanceNorm's view_as of its
        batch_norm): a caller that changes one in place (ReLU(inplace=True)) rewrites its
        base's history, and the engine never runs the view's own @node (its pre-hook's
        @entry waits in vain). The gradient of the value this call returned then flows out
        of the base's first CopySlices made after the call, the view's elements cut out of
        it; which node that is, and whether @node runs as well (something read the view
        before it was changed), the walk at backward's start finds (_resolve_deferred)."""
        views = [(k, t) for k, t in outs if t._base is not None and
                 t._base.grad_fn is not None]
        if not views:
            return
        meta = self._meta(node)
        watch = {"entry": entry, "entries": meta["pre"], "reached": False}
        meta.setdefault("view_watch", []).append(watch)
        for k, t in views:
            base = t._base
            geo = (tuple(t.shape), t.stride(), t.storage_offset() - base.storage_offset())
            self._meta(base.grad_fn).setdefault("view_outs", []).append(
                (rec, k, base.output_nr, geo, watch))
        self._view_recs.append(rec)

    def _on_node(self, node, post, entry):
        """Call _got(entry, gradient) from @node's post-hook (@post: its grad_inputs, what
        it sends on) or pre-hook (its grad_outputs, what it received); one hook per node."""
        m = self._meta(node)
        which = "post" if post else "pre"
        entries = m.get(which)
        if entries is None:
            entries = m[which] = []
            if post:
                def hook(grad_inputs, grad_outputs, entries=entries):
                    self._node_event(entries, grad_inputs)
                node.register_hook(hook)
            else:
                def hook(grad_outputs, entries=entries):
                    self._node_event(entries, grad_outputs)
                node.register_prehook(hook)
        entries.append(entry)

    def _node_event(self, entries, grads):
        self._flush_ready()
        for rec, j, targets in entries:
            if rec.done:
                continue
            g = grads[j] if j < len(grads) else None
            for target in targets:
                slots = rec.grad_out if target[0] in ("out", "cut_out") else rec.grad_in
                x = g
                if target[0] in ("cut", "cut_out") and x is not None:
                    with own_ops():
                        x = x.contiguous().as_strided(*target[2])
                self._add_grad(slots, target[1], x)
            rec.waiting -= 1
            if rec.waiting == 0:
                if rec.takes_in:
                    self._ready.append(rec)
                else:
                    # No input takes a gradient: complete when its outputs' gradients
                    # are, before its node runs (msprobe's hook fires there too).
                    self._emit_backward(rec)
        if self._ready:
            # Inner calls first (their gradients reach their parents' inputs first);
            # emitted at the next event, after their parameters' gradients.
            self._ready.sort(key=lambda r: -r.start)

    @staticmethod
    def _add_grad(slots, i, g):
        """Held, not copied: the engine accumulates in place only into gradients nobody
        else references; the version is compared when the call is dumped."""
        if g is None:
            return
        prev = slots[i]
        if prev is None:
            slots[i] = (g, g._version)
            return
        with torch.no_grad(), own_ops():
            s = prev[0] + g             # the engine's sum, in the engine's order
        slots[i] = (s, s._version)

    def _resolve_deferred(self, roots):
        """Backward starts from @roots: the nodes made after each deferred call that feed
        its outputs (found by one walk of the graph) get hooks. A call whose output node
        this graph does not reach waits for the next backward. Views returned by a call
        and changed in place since (_watch_views) get their CopySlices hooked."""
        pending = [r for r in self._deferred if not r.done]
        viewed = [r for r in self._view_recs if not r.done]
        self._view_recs = []
        if not pending and not viewed:
            self._deferred = []
            return
        floor = min(r.c0 for r in pending + viewed)
        # The walk (_adump._graph_reach(), in C): from the roots, every node not tagged
        # before floor, as far as AccumulateGrad nodes; watched: the records of the nodes
        # reached that watch a view (its own node runs too); hits: (node, tag, j, nr,
        # record) of each edge into a node whose record holds deferred calls or views'
        # outputs, in the walk's order.
        todo = [t.grad_fn for t in roots if getattr(t, "grad_fn", None) is not None]
        watched, hits = _graph_reach(todo, self._meta_key, floor, _ACCUMULATE_GRAD)
        for m in watched:
            for watch in m["view_watch"]:
                watch["reached"] = True
        found, reached, cuts = [], set(), []
        for node, tag, j, nr, mn in hits:
            for rec, onr, targets in mn.get("deferred", ()):
                reached.add(id(rec))
                if onr == nr and not rec.done and not rec.inside(tag) and \
                        (tag is None or tag > rec.c1):
                    found.append((node, j, rec, targets))
            if j == 0 and "view_outs" in mn and type(node) is _COPY_SLICES:
                # The base changed in place after the call: this CopySlices sends on
                # the gradient of the base's value then.
                vos = mn["view_outs"]
                cuts += [(node, vo) for vo in vos if vo[2] == nr]
                mn["view_outs"] = [vo for vo in vos if vo[2] != nr]
        for node, j, rec, targets in found:
            rec.waiting += 1
            self._on_node(node, True, (rec, j, targets))
        for node, (rec, k, _, geo, watch) in cuts:
            if rec.done:
                continue
            rec.waiting += 1
            self._on_node(node, True, (rec, 0, [("cut_out", k, geo)]))
            entries = watch["entries"]
            for i, e in enumerate(entries):
                if e is watch["entry"] and not watch["reached"]:
                    del entries[i]              # nothing read the view before the change
                    rec.waiting -= 1
                    break
        self._deferred = [r for r in pending if id(r) not in reached]
        for rec in pending:
            if id(rec) in reached and rec.waiting == 0:
                self._backwards.pop(id(rec), None)

    def _flush_ready(self):
        """What became complete since the last event: the parameters' gradients first, then
        the calls (as msprobe writes them: the engine runs a parameter's accumulation before
        the node that follows)."""
        if self._param_grads:
            self._dump_param_grads(complete=True)
        while self._ready:
            self._emit_backward(self._ready.pop(0))

    def _emit_backward(self, rec):
        if rec.done:
            return
        rec.done = True
        self._backwards.pop(id(rec), None)
        grad_out, grad_in = rec.grad_out, rec.grad_in
        held = [x for x in grad_out + grad_in if x is not None]
        # The graph's nodes keep the record until the graph goes (their hooks' entries):
        # the gradients go now, as the engine would free them.
        rec.grad_out = rec.grad_in = ()
        if not self._active():
            return
        if self._param_grads:
            self._dump_param_grads(rec.name.rpartition(".backward.")[0])
        self.tree.add_backward(rec.name)
        if any(g._version != v for g, v in held):
            self._lost(rec.op_type, rec.name, [], "changed_in_place",
                       "a gradient of this call was modified in place before it was dumped")
            return
        ins = [g for g, _ in filter(None, grad_out)] if self.with_inputs else []
        outs = [g for g, _ in filter(None, grad_in)] if self.with_outputs else []
        self._dump(rec.op_type, rec.name, ins, outs)

    def _end_backward(self):
        """A backward pass ended: dump what became complete, then the calls some of whose
        gradients never came (an output that did not reach the loss); calls that got
        nothing wait for a later pass (a second loss) until the step ends."""
        self._flush_ready()
        got = [r for r in self._backwards.values()
               if any(g is not None for g in r.grad_out + r.grad_in)]
        got.sort(key=lambda r: -r.start)
        for rec in got:
            self._emit_backward(rec)
        if self._param_grads:
            self._dump_param_grads()

    def _flush_backwards(self):
        """The step ends: everything gathered is dumped, the graph forgotten."""
        self._end_backward()
        for rec in list(self._backwards.values()) + self._deferred:
            rec.done = True             # its hooks, still on nodes kept alive, do nothing
        self._backwards = {}
        self._deferred = []
        self._view_recs = []

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
                    if cap._deferred or cap._view_recs:
                        roots = args[0] if args else kwargs.get(
                            "tensors" if is_backward else "outputs")
                        cap._resolve_deferred(tensors_of(roots, []))
                    cap._in_backward += 1
                    try:
                        return inner(*args, **kwargs)
                    finally:
                        cap._in_backward -= 1
                        cap.tree.end_backward()
                        if is_backward and not cap._in_backward:
                            cap._end_backward()
                        elif is_backward and cap._param_grads:
                            cap._dump_param_grads()
                call.__name__ = "backward" if is_backward else "grad"
                return call
            return wrap
        backward_layer, grad_layer = layer(True), layer(False)
        _torch_patch.add(torch.autograd, "backward", self, backward_layer)
        _torch_patch.add(torch.autograd, "grad", self, grad_layer)
