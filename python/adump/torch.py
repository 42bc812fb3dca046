# SPDX-License-Identifier: Apache-2.0
"""PyTorch capture: dump a model's module calls or aten ops, forward and backward, through
adump, named as msprobe names them so the two tools' dumps line up.

    with adump.torch.capture(model, "dump", level="module", backward=True) as cap:
        for batch in data:
            loss = model(batch).sum(); loss.backward(); opt.step()
            cap.step()

Files go to <dump_path>/step<N>/rank<R>/0/ in CANN's layout; adump.walk/open read them.

Names: level="module": Module.<path>.<Class>.forward.<n> and .backward.<n> (the root module
is Module.<Class>.forward.<n>), op type = the class name; a backward dump's inputs are the
gradients flowing in (grad_output), its outputs those flowing out (grad_input).
level="op": Aten.<op>[.<overload>].<n>.forward / .backward (ops the autograd engine runs
during backward), op type = the op name. <n> counts calls of that name within the step.

Every value is the one at that moment: CPU tensors are copied into adump's staging buffers
when handed over (zero_copy=False), or, with zero_copy=True, held by reference and their
version counters compared before the file is published: a tensor modified in place before
its bytes were written makes that dump fail (counted in cap.losses), never published with
the later value. Gradients are taken with hooks on the autograd graph (not full backward
hooks, which refuse models with in-place ops in PyTorch 1.13), so such models train
unchanged."""
import os
import threading
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import _adump, _losses
from ._capture import Session, _torch_arg
from ._read import Loss as _adump_loss
from ._torch_select import _Select

_ERR_CORRUPT = 4097
_ERR_INCOMPLETE = 4106
_DTYPES = {
    torch.float32: None, torch.float16: None, torch.float64: None, torch.int8: None,
    torch.int16: None, torch.int32: None, torch.int64: None, torch.uint8: None,
    torch.bool: None, torch.bfloat16: _adump.DT_BF16,
}


def _flatten(obj, out):
    """Tensors of nested tuples, lists and dicts, in order; other values are skipped."""
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            _flatten(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _flatten(o, out)
    return out


def _rebuild(obj, fn):
    """@obj with every tensor t replaced by fn(t), tuples/lists/dicts rebuilt."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_rebuild(o, fn) for o in obj)
    if isinstance(obj, list):
        return [_rebuild(o, fn) for o in obj]
    if isinstance(obj, dict):
        return {k: _rebuild(v, fn) for k, v in obj.items()}
    return obj


def _rank():
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def _host(t):
    """The dump argument of a tensor (on the CPU, contiguous), or None when its dtype is not
    one adump stores."""
    if t.dtype not in _DTYPES or t.is_sparse or t.is_quantized:
        return None
    return _torch_arg(t)


class _Backward:
    """Gradients of one module call, gathered as the autograd engine produces them."""
    __slots__ = ("name", "op_type", "grad_out", "grad_in", "pending")

    def __init__(self, name, op_type, n_out, n_in):
        self.name = name
        self.op_type = op_type
        self.grad_out = [None] * n_out
        self.grad_in = [None] * n_in
        self.pending = n_out + n_in


class capture(_Select):
    """capture(model, dump_path, level="module"|"op", mode="all"|"input"|"output",
    backward=True, scope=None, steps=None, content="tensor"|"stats", zero_copy=False,
    **config): a context manager; call cap.step() after each training step.

    scope: a pattern or a list of them, each a glob matched against the dump name with and
    without its direction and call number ("Module.layers.0.*", "Aten.mm*",
    "Module.0.Linear.forward.0", "Aten.addmm.0.forward") and against the module path
    ("layers.0") or the op ("addmm"); a pattern that matched nothing by the end of the first
    captured step is warned about by name. list: msprobe's "list": dumps whose name
    contains one of these strings. steps: the step numbers to dump (an int, a range or a
    list; None: all). data_mode: msprobe's ("all", "input", "output", "forward",
    "backward", or a list of them), in place of mode. cap.stop()/cap.start(), or
    `with cap.paused():`, leave parts of a step out (the optimizer). config: more
    adump.Session keys (workers, compress, layout, io ...), checked now (adump.ConfigError).

    After the block: cap.losses lists adump.Loss(name, cause, message) of dumps that were
    lost (also in the step's adump-losses.jsonl, which adump.verify and `adump verify` list),
    cap.stats the summed session counters, cap.dumps the number of dumps handed over and
    cap.handover_seconds the time the model's threads spent handing them over."""

    def __init__(self, model, dump_path, level="module", mode="all", backward=True, scope=None,
                 steps=None, content="tensor", zero_copy=False, list=None, data_mode=None,
                 **config):
        if level not in ("module", "op"):
            raise ValueError("level must be 'module' or 'op'")
        if mode not in ("all", "input", "output"):
            raise ValueError("mode must be 'all', 'input' or 'output'")
        if content not in ("tensor", "stats"):
            raise ValueError("content must be 'tensor' or 'stats'")
        self.model = model
        self.dump_path = os.fspath(dump_path)
        self.level = level
        self.with_inputs = mode in ("all", "input")
        self.with_outputs = mode in ("all", "output")
        self.with_forward = True
        self.backward = backward
        self._init_select(scope, list, steps, data_mode)
        self.content = content
        self.zero_copy = zero_copy
        self.config = dict(config)
        self.config["content"] = content
        # The whole config is checked now, not at the first dump inside a forward hook.
        _adump.config_check(dump_path=self.dump_path, time_dir="x", **self.config)
        self.rank = _rank()
        self.step_no = 0
        self.losses = []
        self.dumps = 0
        self.handover_seconds = 0.0     # time the model's threads spent handing tensors over
        self.stats = {}
        self._session = None
        self._streams = {}
        self._counts = {}
        # One session for the whole capture (its start costs the staging buffers' page
        # faults), steered into step<N>/rank<R> through a symlink; a packed layout keeps
        # its segments open per session, so there it is one session per step.
        self._per_step_sessions = self.config.get("layout") == "packed"
        self._link = os.path.join(self.dump_path, ".adump-rank%d" % self.rank)
        self._linked_step = None
        self._handles = []
        self._mode = None
        self._in_backward = 0
        self._inplace_modules = set()
        self._backwards = []
        self._orig_backward = None
        # The session is created by the first dump of a step, so an unwritable dump_path
        # must be found now: before any capture starts.
        os.makedirs(self.dump_path, exist_ok=True)
        if not os.access(self.dump_path, os.W_OK | os.X_OK):
            raise PermissionError(13, os.strerror(13), self.dump_path)

    # ---- session per step ----------------------------------------------------------------

    def _step_dir(self):
        return os.path.join("step%d" % self.step_no, "rank%d" % self.rank)

    def _point_at_step(self):
        """Make the session directory (a symlink) lead to this step's directory. Called
        only when nothing is being written: before the first dump of the step, after the
        previous step's flush. The pipeline opens every file by its path, so the files of
        the step land in step<N>/rank<R>/0/ while the session, its stream and its warm
        staging buffers live on."""
        target = self._step_dir()
        # The device directory exists already: the session made the first one itself.
        os.makedirs(os.path.join(self.dump_path, target, "0"), exist_ok=True)
        tmp = self._link + ".tmp"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(target, tmp)
        os.replace(tmp, self._link)
        self._linked_step = self.step_no

    def _stream(self):
        if self._session is None:
            if self._per_step_sessions:
                self._session = Session(os.path.join(self.dump_path, "step%d" % self.step_no),
                                        time_dir="rank%d" % self.rank, **self.config)
            else:
                self._point_at_step()
                self._session = Session(self.dump_path, time_dir=os.path.basename(self._link),
                                        **self.config)
        elif self._linked_step != self.step_no and not self._per_step_sessions:
            self._point_at_step()
        tid = threading.get_ident()
        st = self._streams.get(tid)
        if st is None:
            st = self._streams[tid] = self._session.stream()
        return st

    def _close_session(self):
        self._flush_backwards()
        s = self._session
        if s is None:
            return
        self._session = None
        self._streams = {}
        s.flush()
        for k, v in s.stats().items():
            if isinstance(v, int) and k not in ("first_error", "writes_in_flight"):
                self.stats[k] = self.stats.get(k, 0) + v
        ret = s.close(check=False)
        if ret < 0 and ret != -_ERR_CORRUPT:
            # Dropped chunks or failed writes, each file in the library's loss log (zero-copy
            # check failures are in losses already, one per dump).
            self.losses.append(_adump_loss("session", _losses.cause_of_status(ret),
                                           _adump.strerror(-ret)))
        if os.path.lexists(self._link):
            os.unlink(self._link)

    def _finish_step(self):
        """Everything the step handed over is written (or failed) when this returns."""
        self._flush_backwards()
        if self._session is None:
            return
        if self._per_step_sessions:
            self._close_session()
        else:
            self._session.flush()

    def step(self):
        """End the current step: wait until its dumps are written, then count the next."""
        self._finish_step()
        self._warn_unmatched()
        self.step_no += 1
        self._counts = {}

    # ---- dumping -------------------------------------------------------------------------

    def _next_index(self, base):
        n = self._counts.get(base, 0)
        self._counts[base] = n + 1
        return n

    def _dump(self, op_type, name, inputs, outputs):
        t0 = time.perf_counter()
        try:
            self._dump_now(op_type, name, inputs, outputs)
        finally:
            self.handover_seconds += time.perf_counter() - t0

    def _dump_now(self, op_type, name, inputs, outputs):
        ins = []
        outs = []
        keep = []
        skipped = []
        for kind, src, dst in (("input", inputs, ins), ("output", outputs, outs)):
            for i, t in enumerate(src):
                a = _host(t)
                if a is not None:
                    dst.append(a)
                    keep.append((t, t._version))
                else:
                    skipped.append((kind, i, t.element_size() * t.nelement(), t.dtype))
        if skipped:
            self._lost(op_type, name, [s[:3] for s in skipped], "unsupported_dtype",
                       "%s not dumped: %s" % (", ".join("%s %d" % s[:2] for s in skipped),
                                              ", ".join(sorted({str(s[3]) for s in skipped}))))
        if not ins and not outs:
            return
        st = self._stream()
        self.dumps += 1
        if not self.zero_copy:
            st.dump(op_type, name, ins, outs)
            return

        def unchanged():
            return all(t._version == v for t, v in keep)

        def released(task_id, status, name=name):
            # The library logged the file's tensors in the loss log; here only cap.losses.
            if status < 0:
                cause = _losses.cause_of_status(status)
                self.losses.append(_adump_loss(name, cause, _losses.CAUSES[cause]))

        st.dump(op_type, name, ins, outs, copy=False, check=unchanged, on_release=released)

    # ---- module level ----------------------------------------------------------------------

    def _install_modules(self):
        for path, module in self.model.named_modules():
            cls = type(module).__name__
            if getattr(module, "inplace", False) is True:
                # ReLU(inplace=True) and the like: keep their inputs' values at entry.
                self._inplace_modules.add(id(module))
            base = "Module.%s.%s" % (path, cls) if path else "Module.%s" % cls
            self._handles.append(module.register_forward_pre_hook(self._pre_hook(base, path)))
            self._handles.append(module.register_forward_hook(self._post_hook(base, path, cls)))

    def _pre_hook(self, base, path):
        def pre(module, args):
            frames = module.__dict__.setdefault("_adump_frames", [])
            if not self._active():
                frames.append(None)
                return None
            n = self._next_index(base)
            fwd = "%s.forward.%d" % (base, n)
            if not self._in_scope(base, path, (fwd, "%s.backward.%d" % (base, n),
                                               base + ".forward", base + ".backward")):
                frames.append(None)
                return None
            inputs = _flatten(args, [])
            copies = None
            if self.with_inputs and not self.zero_copy and id(module) in self._inplace_modules:
                # This module modified its input in place before: keep the value at entry.
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
                args = _rebuild(args, wrap)
            frames.append((n, inputs, versions, copies,
                           [(v, v._version) for v in views.values()]))
            return args if views else None
        return pre

    def _post_hook(self, base, path, cls):
        def post(module, args, output):
            frames = module.__dict__.get("_adump_frames")
            frame = frames.pop() if frames else None
            if frame is None:
                return None
            n, inputs, versions, copies, views = frame
            changed = any(t._version != v for t, v in zip(inputs, versions))
            if changed:
                self._inplace_modules.add(id(module))
            outputs = _flatten(output, []) if self.with_outputs and self.with_forward else []
            fwd_inputs = []
            if self.with_inputs and self.with_forward:
                if copies is not None:
                    fwd_inputs = copies
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
                    fwd_inputs = inputs
            if fwd_inputs is not None and self.with_forward:
                self._dump(cls, "%s.forward.%d" % (base, n), fwd_inputs, outputs)
            if self.backward and torch.is_grad_enabled():
                self._hook_backward(base, cls, n, output, views)
            return None
        return post

    def _hook_backward(self, base, cls, n, output, views):
        outs = [t for t in _flatten(output, []) if t.requires_grad and t.grad_fn is not None]
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
        orig = torch.autograd.backward
        cap = self

        def backward(*args, **kwargs):
            cap._in_backward += 1
            try:
                return orig(*args, **kwargs)
            finally:
                cap._in_backward -= 1
        self._orig_backward = orig
        torch.autograd.backward = backward
        orig_grad = torch.autograd.grad

        def grad(*args, **kwargs):
            cap._in_backward += 1
            try:
                return orig_grad(*args, **kwargs)
            finally:
                cap._in_backward -= 1
        self._orig_grad = orig_grad
        torch.autograd.grad = grad

    def _unpatch_backward(self):
        if self._orig_backward is not None:
            torch.autograd.backward = self._orig_backward
            torch.autograd.grad = self._orig_grad
            self._orig_backward = None

    def _op(self, func, args, kwargs):
        """Run one aten op and dump it (called by the dispatch mode, which is off inside)."""
        in_bwd = self._in_backward > 0
        if (in_bwd and not self.backward) or (not in_bwd and not self.with_forward) or \
                not self._active():
            return func(*args, **kwargs)
        pkt = func.overloadpacket.__name__
        if pkt.startswith("_record_function"):
            return func(*args, **kwargs)        # profiler markers, not computation
        overload = func._overloadname
        base = "Aten.%s" % pkt if overload == "default" else "Aten.%s.%s" % (pkt, overload)
        direction = "backward" if in_bwd else "forward"
        n = self._next_index((base, direction))
        if not self._in_scope(base, pkt, ("%s.%d.%s" % (base, n, direction),
                                          "%s.%s" % (base, direction))):
            return func(*args, **kwargs)
        inputs = _flatten((args, kwargs), []) if self.with_inputs else []
        if inputs and func._schema.is_mutable:
            # In-place and out= ops change their arguments: dump the values they had.
            inputs = [t.detach().clone() for t in inputs]
        out = func(*args, **kwargs)
        outputs = _flatten(out, []) if self.with_outputs else []
        self._dump(pkt, "%s.%d.%s" % (base, n, direction), inputs, outputs)
        return out

    # ---- context -------------------------------------------------------------------------

    def __enter__(self):
        if self.level == "module":
            self._install_modules()
        else:
            self._patch_backward()
            self._mode = _Mode(self)
            self._mode.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self._mode is not None:
                self._mode.__exit__(None, None, None)
                self._mode = None
            self._unpatch_backward()
            for h in self._handles:
                h.remove()
            self._handles = []
            for m in self.model.modules():
                m.__dict__.pop("_adump_frames", None)
        finally:
            # Everything handed over is written or marked failed, also on Ctrl-C.
            self._close_session()
        if exc_type is None:
            self._warn_unmatched()
        return False


class _Mode(TorchDispatchMode):
    def __init__(self, cap):
        super().__init__()
        self.cap = cap

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.cap._op(func, args, kwargs or {})
