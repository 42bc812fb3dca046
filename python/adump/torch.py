# SPDX-License-Identifier: Apache-2.0
"""PyTorch capture: dump a model's module calls or aten ops, forward and backward, through
adump, named as msprobe names them so the two tools' dumps line up.

    with adump.torch.capture(model, "dump", level="module", backward=True) as cap:
        for batch in data:
            loss = model(batch).sum(); loss.backward(); opt.step()
            cap.step()

Files go to <dump_path>/step<N>/rank<R>/0/ in CANN's layout (proc<pid> until the process
group exists: see _torch_dist); adump.walk/open read them.

Names: level="module": Module.<path>.<Class>.forward.<n> and .backward.<n> (the root module
is Module.<Class>.forward.<n>), op type = the class name; a backward dump's inputs are the
gradients flowing in (grad_output), its outputs those flowing out (grad_input).
level="op": Aten.<op>[.<overload>].<n>.forward / .backward (ops the autograd engine runs
during backward), op type = the op name. <n> counts calls of that name within the step.

Every value is the one at that moment: CPU tensors are copied into adump's staging buffers
when handed over (zero_copy=False), or, with zero_copy=True, held by reference and their
version counters compared before the file is published: a tensor modified in place before
its bytes were written makes that dump fail (counted in cap.losses), never published with
the later value. In window mode (window_steps) at module level zero_copy=True holds the
tensors by reference in the window (at op level a window copies them: holding the tensors
autograd passes around would change the ops it runs): nothing is copied at hand-over, their
versions are compared only when a window is written, and the tensors stay alive while the
window holds their step. The first step is
copied, and teaches the window what changes in place after it was handed over (a residual
block's `out += identity`, a tensor given other memory through .data): those tensors, and
parameters (the optimizer's step), are copied in every step. A later step that changes
another one first loses it from its window (cause changed_before_written), and teaches.
Gradients are taken with hooks on the nodes the autograd graph already has
(not full backward hooks, which refuse models with in-place ops in PyTorch 1.13 and, like
any node put between a module and its callers, change the order the engine sums gradients
in): nothing is added to the graph, so training under capture is bit-identical."""
import os
import threading
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import _adump, _losses
from ._capture import Session, _torch_arg
from ._read import Loss as _adump_loss
from ._torch_dist import Collectives, StepRuns, env_rank, group_rank, proc_dir, tensors_of
from . import _torch_msprobe, _torch_patch
from ._torch_info import STORED, describe, own_ops, storable, to_json
from ._torch_select import _Select
from ._torch_module import ModuleHooks
from ._torch_tree import ModuleTree
from ._torch_window import WindowMixin

# Looked up once: _dump() runs for every dump.
_same_json = _adump._same_json
_DisableTorchDispatch = torch._C._DisableTorchDispatch
_perf_counter = time.perf_counter
# Dump names whose dfx_message text capture keeps for the next step (_dfx()).
_DFX_TEXTS_MAX = 100000
# The staging chunk of a capture that hands over no bytes (content="stats", window mode),
# unless chunk_bytes is given: __init__.
_LEAN_CHUNK_BYTES = 256 << 10

_ERR_CORRUPT = 4097
_ERR_INCOMPLETE = 4106
# Ops that change some of their inputs in place although their schema does not say so
# (is_mutable False, no alias annotation): the named arguments are copied before the op runs
# so the dump holds the value the op was given. torch 1.13's batch norms update running_mean
# and running_var in training mode. Kept short on purpose: an entry costs a copy per call.
_UNDECLARED_INPLACE = {
    "native_batch_norm": ("running_mean", "running_var"),
    "cudnn_batch_norm": ("running_mean", "running_var"),
    "miopen_batch_norm": ("running_mean", "running_var"),
}


def _copy_named(func, args, kwargs, names):
    """(args, kwargs) with the tensors of the arguments called @names (schema names) copied."""
    args, kwargs = list(args), dict(kwargs)
    for i, a in enumerate(func._schema.arguments):
        if a.name not in names:
            continue
        if a.name in kwargs and isinstance(kwargs[a.name], torch.Tensor):
            kwargs[a.name] = kwargs[a.name].detach().clone()
        elif i < len(args) and isinstance(args[i], torch.Tensor):
            args[i] = args[i].detach().clone()
    return args, kwargs


# The header dtype of each torch dtype dumped as (buffer, dtype, shape) straight away: what
# Stream.dump would work out from the numpy array, without the per-tensor checks.
_DIRECT = {
    torch.float32: _adump.DT_FLOAT, torch.float16: _adump.DT_FLOAT16,
    torch.float64: _adump.DT_DOUBLE, torch.int8: _adump.DT_INT8, torch.int16: _adump.DT_INT16,
    torch.int32: _adump.DT_INT32, torch.int64: _adump.DT_INT64, torch.uint8: _adump.DT_UINT8,
    torch.bool: _adump.DT_BOOL,
}


_PARAMETER = torch.nn.Parameter
_TENSOR = torch.Tensor
# The native dump takes CPU tensors of these exact types as they are: those of _DIRECT
# (_host()), and in a direct dump (_dump_now()) bfloat16 too, by its bytes (numpy has no
# bfloat16: _host() sends it through _torch_arg()).
_adump._torch_types(_TENSOR, _PARAMETER, {**_DIRECT, torch.bfloat16: _adump.DT_BF16},
                    torch.strided)


def _host(t):
    """The dump argument of a tensor (on the CPU, contiguous), or None when its dtype is not
    one adump stores. Complex tensors go as their bytes with the header's complex dtype."""
    dt = _DIRECT.get(t.dtype)
    if dt is not None and t.layout is torch.strided and t.is_cpu and not t.is_quantized:
        # The common case, once per dumped tensor: a tensor of torch's own types goes as it
        # is, and the native dump reads it where it lies (python/src/tensors.c makes it
        # contiguous first if it is not: a direct dump, _dump_now()'s, in its stream's
        # reused buffers).
        if type(t) is _TENSOR or type(t) is _PARAMETER:
            return t
        # A subclass, whose data_ptr() need not hold its values, goes through numpy(): a
        # detached alias only if numpy() needs one (it refuses a tensor that requires grad),
        # a copy only if it is not contiguous.
        if t.requires_grad:
            t = t.detach()
        if not t.is_contiguous():
            t = t.contiguous()
        return (t.numpy(), dt, tuple(t.shape))
    if not storable(t):
        return None
    dt = STORED[t.dtype]
    if dt is not None and t.is_complex():
        t = t.detach().resolve_conj()
        if t.device.type != "cpu":
            t = t.cpu()
        return (torch.view_as_real(t.contiguous()).numpy(), dt, tuple(t.shape))
    return _torch_arg(t)


class capture(_Select, ModuleHooks, WindowMixin):
    """capture(model, dump_path, level="module"|"op", mode="all"|"input"|"output",
    backward=True, scope=None, steps=None, content="tensor"|"stats", zero_copy=False,
    keep_root=False, parameters=None, stack=False, **config): a context manager; call
    cap.step() after each training step. stack=True records the Python call stack of each
    forward dump (cap.tree.stack_json(step): msprobe's stack.json).

    Module level: a forward dump's inputs are the positional tensor arguments, then the
    keyword ones, then (parameters=True) the module's own parameters; parameters=None (the
    default) is the format's default: recorded with format="msprobe", as msprobe's L0 always
    does, left out of CANN dumps (adump scan and compare take every input there for an
    argument, so a NaN weight would read as a NaN input); its header's
    dfx_message describes them in msprobe's model (see _torch_info: which input is which,
    dtype, shape, requires_grad, non-tensor values). The root module is not dumped
    (msprobe's rule) unless keep_root=True. Complex tensors are dumped with the header's
    complex dtypes; tensors adump cannot store are described with the reason.

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

    Window mode, the flight recorder (window_steps=N and window_bytes, window_persists,
    triggers, bounds, deviation, deviation_steps: adump.Session's keys): every step's
    statistics are written as content="stats" would, the tensors of the last N steps held in
    memory and written under <dump_path>/window-<step>/ when a trigger fires (a NaN or
    infinity by default, cap.persist(reason), an exception escaping the block); across
    ranks too. See adump._torch_window; cap.windows lists the roots written,
    cap.window_info() the window's state.

    After the block: cap.losses lists adump.Loss(name, cause, message) of dumps that were
    lost (also in the step's adump-losses.jsonl, which adump.verify and `adump verify` list),
    cap.stats the summed session counters, cap.dumps the number of dumps handed over and
    cap.handover_seconds the time the model's threads spent handing them over."""

    def __init__(self, model, dump_path, level="module", mode="all", backward=True, scope=None,
                 steps=None, content="tensor", zero_copy=False, list=None, data_mode=None,
                 keep_root=False, parameters=None, stack=False, **config):
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
        self.keep_root = keep_root
        self.stack = stack
        self._frames = {}               # id(module) -> its open calls' frames, innermost last
        self._param_grads = {}          # base -> (class, parameter names, {name: grad})
        self.config = dict(config)
        self.config["content"] = content
        # format="msprobe": the session writes msprobe's layout itself (dump.json and, with
        # content="tensor", dump_tensor_data/*.pt per step and rank directory); the step's
        # construct.json and stack.json come from _torch_msprobe when it closes. "cann"
        # (default) writes CANN dump files. md5=True: each tensor's "md5" (msprobe's
        # summary_mode md5).
        self.format = self.config.setdefault("format", "cann")
        if self.format not in ("cann", "msprobe"):
            raise ValueError("format must be 'cann' or 'msprobe'")
        # None: the format's default (msprobe's L0 records every module's parameters).
        self.parameters = self.format == "msprobe" if parameters is None else bool(parameters)
        if self.config.pop("md5", False):
            if self.format != "msprobe":
                raise ValueError("md5=True applies to format='msprobe'")
            self.config["summary"] = "md5"
        # The whole config is checked now, not at the first dump inside a forward hook.
        self._init_window(steps)        # window mode (_torch_window), its own checks
        if (content == "stats" or self.window) and self.config.get("summary") != "md5":
            # Each dump hands over its statistics (and in window mode its tensors into the
            # window's memory), not its bytes: its staging buffer stays empty and only their
            # number counts. A stream wakes its worker once for half its buffers: smaller
            # ones, 8 times as many in the same pool, wake it once for 32 dumps rather than
            # 4 (a wake-up costs both threads a system call and a context switch).
            self.config.setdefault("chunk_bytes", _LEAN_CHUNK_BYTES)
        _adump.config_check(dump_path=self.dump_path, time_dir="x", **self.config)
        self._check_bounds()
        # The rank directory: rank<R> once the process group exists, proc<pid> until then
        # (see _torch_dist); self.rank is None while it is not known.
        self.rank = group_rank()
        self.rank_dir = proc_dir() if self.rank is None else "rank%d" % self.rank
        self._proc_steps = StepRuns()   # step numbers with a proc<pid> directory of ours
        self.step_no = 0
        self.losses = []
        self.dumps = 0
        self.handover_seconds = 0.0     # time the model's threads spent handing tensors over
        self._dfx_texts = {}            # dump name -> (description, its text): _dfx()
        self._direct = True             # False: every dump through _dump_any() (tests)
        self.stats = {}
        self._session = None
        self._streams = {}
        self._counts = {}
        # One session for the whole capture (its start costs the staging buffers' page
        # faults), each stream steered into step<N>/<rank dir> (Stream.set_dir); a packed
        # layout keeps its segments open per session, so there it is one session per step.
        self._per_step_sessions = self.config.get("layout") == "packed" and not self.window
        self._stream_dirs = {}          # thread id -> the directory its stream writes to
        self._stream_keys = {}          # thread id -> (step, rank dir) it was checked for
        # thread id -> its stream, steered for the current step and rank directory (emptied
        # when either changes, or the session)
        self._ready_streams = {}
        # Statistics, window and msprobe-format tensor sessions (dump.json holds statistics)
        # at module level: the statistics keys of the last tensors dumped (_stats_key());
        # None: no keys. Not at op level: inside __torch_dispatch__ an in-place op's output
        # has the version it had before the op (autograd's ADInplaceOrView bumps it after
        # the dispatch returns).
        self._stats_keys = _adump._StatsKeys() if (content == "stats" or self.window or
                                                   self.format == "msprobe") and \
            (not zero_copy or self.window) and level == "module" else None
        # Window by reference: this step's (name, kind, index, tensor, version, data pointer)
        # handed over, and the (name, kind, index) found changed, copied from then on.
        self._held_refs = []
        self._copy_slots = set()
        # Inputs an in-place module is about to change are copied first (_torch_module), but
        # with zero_copy outside a window, where nothing is copied.
        self._copies_inplace = not zero_copy or bool(self.window)
        # zero_copy's dumps: held until written, or by a window at module level. At op level
        # a window copies all the same: holding the tensors autograd's engine passes around
        # changes the ops it runs (AccumulateGrad takes a gradient nobody else holds, and
        # copies one that is held), so the ops dumped would not be the program's.
        self._zero_copy = zero_copy and not (self.window and level == "op")
        self._coll = Collectives(self)
        self._handles = []
        self._mode = None
        self._in_backward = 0
        self._inplace_modules = set()
        # module calls whose gradients are awaited, by id() (held: no id comes back)
        self._backwards = {}
        self._ready = []                # ... complete, dumped at the next graph event
        self._deferred = []             # calls whose outputs' gradients backward finds
        self._view_recs = []            # calls that returned views (_watch_views)
        self._meta_key = "adump.torch.%x" % id(self)   # its record in a graph node's metadata
        self._closed = 0                # module calls closed (walked) so far
        self._starts = 0                # module calls started so far
        self._called = set()            # id() of the modules called (parameters_grad: msprobe's)
        self._local = threading.local()
        # Which module call each dump ran inside, per step (construct.json's shape).
        self.tree = ModuleTree()
        # The session is created by the first dump of a step, so an unwritable dump_path
        # must be found now: before any capture starts.
        os.makedirs(self.dump_path, exist_ok=True)
        if not os.access(self.dump_path, os.W_OK | os.X_OK):
            raise PermissionError(13, os.strerror(13), self.dump_path)
        if self.rank is not None:
            self._refuse_taken(self.rank)

    def _refuse_taken(self, rank):
        """A dump_path holding this rank's directories from an earlier capture is refused:
        the two captures would mix."""
        name = "rank%d" % rank
        for e in os.listdir(self.dump_path):
            if e.startswith("step") and os.path.exists(os.path.join(self.dump_path, e, name)):
                raise FileExistsError(17, "%s holds a capture of %s already (%s): give a "
                                      "new dump_path or remove it" % (self.dump_path, name, e),
                                      os.path.join(self.dump_path, e, name))

    # ---- session per step ----------------------------------------------------------------

    def _step_dir(self):
        return os.path.join("step%d" % self.step_no, self.rank_dir)

    def _check_rank(self):
        """Once the process group exists, this process's proc<pid> directories become
        rank<R>. Called only where nothing of ours is being written: when a thread takes
        its stream for a step (its first dump of the step), and at the step's end, which
        renames the directory a group made in the middle of a step found its dumps in."""
        if self.rank is not None:
            return
        rank = group_rank()
        if rank is None:
            return
        self._promote(rank)

    def _promote(self, rank):
        if self._session is not None:
            self._session.flush()       # every stream idle: no file open in a proc dir
        self.rank = rank
        self._ready_streams = {}
        name = "rank%d" % rank
        for step in self._proc_steps:
            src = os.path.join(self.dump_path, "step%d" % step, self.rank_dir)
            dst = os.path.join(self.dump_path, "step%d" % step, name)
            try:
                os.rename(src, dst)     # refused when dst is a non-empty directory
                _torch_msprobe.renamed(self, src, dst)
            except FileNotFoundError:
                continue
            except OSError as e:
                # Taken (an earlier capture, or a process with the same rank): our dumps
                # stay in proc<pid> rather than mix with those.
                # Known from now on, so never tried again.
                self.losses.append(_adump_loss(dst, "rank_taken", "%s: %s; this process's "
                                               "dumps stay in %s" % (dst, e.strerror,
                                                                     self.rank_dir)))
                return
        self._proc_steps = StepRuns()
        if self.windows:
            self._window_promote(self.rank_dir, name)
        self.rank_dir = name

    def _stream(self):
        st = self._ready_streams.get(threading.get_ident())
        return st if st is not None else self._take_stream()

    def _take_stream(self):
        """This thread's stream for the step, the first time it dumps in it."""
        if not self._per_step_sessions and self.rank is None:
            self._check_rank()          # may empty _ready_streams
        tid = threading.get_ident()
        st = self._ready_streams[tid] = self._stream_for(tid)
        return st

    def _stream_for(self, tid):
        """This thread's stream, writing into the current step's directory."""
        if self._session is None:
            self._open_session()
        st = self._streams.get(tid)
        if st is None:
            st = self._streams[tid] = self._session.stream()
        if not self._per_step_sessions and \
                self._stream_keys.get(tid) != (self.step_no, self.rank_dir):
            self._stream_keys[tid] = (self.step_no, self.rank_dir)
            target = self._step_dir()
            if self._stream_dirs.get(tid) != target:
                st.set_dir(target)      # waits for this stream's dumps in flight
                self._stream_dirs[tid] = target
                if self.rank is None:
                    self._proc_steps.add(self.step_no)
        return st

    def _open_session(self):
        if self._per_step_sessions:
            self._session = Session(os.path.join(self.dump_path, "step%d" % self.step_no),
                                    time_dir=self.rank_dir, **self.config)
            if self.rank is None:
                self._proc_steps.add(self.step_no)
        else:
            # Every stream writes into its step directory; the session's own is the first
            # step's (it holds nothing but the loss log, made only if something is lost, and
            # shared by the processes writing into that step).
            self._session = Session(self.dump_path, time_dir="step%d" % self.step_no,
                                    **self.config)

    def _close_session(self):
        self._flush_backwards()
        s = self._session
        if s is None:
            return
        self._session = None
        self._streams = {}
        self._ready_streams = {}
        self._stream_dirs = {}
        self._stream_keys = {}
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

    def _finish_step(self):
        """Everything the step handed over is written (or failed) when this returns."""
        self._flush_backwards()
        if self._param_grads:
            self._dump_param_grads()        # from torch.autograd.grad or a backward hook
        self._coll.finish_step()
        if self._session is not None:
            if self._per_step_sessions:
                self._close_session()
            else:
                self._session.flush()
        self._check_rank()
        _torch_msprobe.step_closed(self, self.step_no)

    def step(self):
        """End the current step: wait until its dumps are written, then count the next. In
        window mode, then write the window if a trigger fired in the step (_torch_window)."""
        self._finish_step()
        self._learn_copies()
        try:
            if self.window:
                self._window_step()
        finally:
            self._warn_unmatched()
            self.step_no += 1
            self._ready_streams = {}
            self._counts = {}
            self.tree.new_step(self.step_no)

    def _learn_copies(self):
        """A window holding its tensors by reference (zero_copy=True): the tensors of the
        step's dumps that changed in place since they were handed over (a residual block's
        `out += identity` on a submodule's output), or were given other memory (t.data =),
        are copied at hand-over from the next step on, the same dump's same tensor. The
        first step is copied whole, so a window loses such a tensor (cause
        changed_before_written: it was already overwritten) only in a later step that
        changes it first."""
        for name, kind, i, t, v, p in self._held_refs:
            if t._version != v or t.data_ptr() != p:
                self._copy_slots.add((name, kind, i))
        self._held_refs = []

    # ---- dumping -------------------------------------------------------------------------

    def _next_index(self, base):
        n = self._counts.get(base, 0)
        self._counts[base] = n + 1
        return n

    def _dump(self, op_type, name, inputs, outputs, attrs=None, info=None, skipped=None):
        t0 = _perf_counter()
        guard = _DisableTorchDispatch()         # own_ops(), without its object
        try:
            if skipped or self._zero_copy or not (self.with_inputs and self.with_outputs):
                self._dump_now(op_type, name, inputs, outputs, attrs, info, skipped)
            elif (inputs or outputs) and \
                    not self._dump_direct(op_type, name, inputs, outputs, attrs, info):
                self._dump_any(op_type, name, inputs, outputs, attrs, info, [])
        finally:
            del guard
            self.handover_seconds += _perf_counter() - t0

    def _dump_direct(self, op_type, name, inputs, outputs, attrs, info):
        """The common case (_dump() calls it without _dump_now(): a Python call less a dump):
        every tensor a CPU tensor of torch's own types and dtypes, copied. The native dump
        checks that, keys them and takes them as they are, in one call; it does nothing and
        returns None (and this False) when one is not. Its arguments by position (its
        keywords cost a dict each call)."""
        if self._direct and self._stream()._st.dump(
                op_type, name, inputs, outputs, True, None, None, 0, attrs,
                self._dfx(name, info) if info is not None else None,
                self._stats_keys, True) is not None:
            self.dumps += 1
            return True
        return False

    def _stats_key(self, t):
        """The statistics key of @t (struct adump_host_op's stats_keys): the same for the same
        tensor object at the same version and data pointer, while it lives (a weak reference
        tells a new object that took a dead one's id) and is among the last
        HOST_STATS_REUSE keyed, so that a tensor dumped again (a module's output that is its
        parent's, the next module's input) has its statistics copied, not read again.
        Parameters get none: code that changes them through .data leaves their version as
        it was. The native dump keys the tensors itself where it takes them directly."""
        return self._stats_keys.key(t)

    def _dump_now(self, op_type, name, inputs, outputs, attrs, info, skipped):
        """_dump() but for its common case."""
        # Tensors describe() found unstorable (kind, index, bytes, dtype), of the parts dumped.
        if skipped:
            skipped = [x for x in skipped if (x[0] == "input" and self.with_inputs) or
                       (x[0] == "output" and self.with_outputs)]
        if info is not None and not (self.with_inputs and self.with_outputs):
            # The side not dumped is not described either (msprobe's data_mode leaves its
            # keys out of the entry; described tensors would name inputs the dump lacks).
            drop = ("input_args", "input_kwargs", "parameters") if not self.with_inputs \
                else ("output",)
            info = {k: v for k, v in info.items() if k not in drop}
        if not skipped and not self._zero_copy:
            if not inputs and not outputs:
                return
            if self._dump_direct(op_type, name, inputs, outputs, attrs, info):
                return
        self._dump_any(op_type, name, inputs, outputs, attrs, info, skipped or [])

    def _dfx(self, name, info):
        """to_json(@info), a dump's dfx_message. A module's call describes its arguments as
        its same call did in the last step, usually: the text made then is reused when the
        description is the same (_same_json(): it would encode to the same text)."""
        got = self._dfx_texts.get(name)
        if got is not None and _same_json(got[0], info):
            return got[1]
        text = to_json(info)
        if len(self._dfx_texts) >= _DFX_TEXTS_MAX:
            self._dfx_texts.clear()     # a run whose names never come back
        self._dfx_texts[name] = (info, text)
        return text

    def _dump_any(self, op_type, name, inputs, outputs, attrs, info, skipped):
        """_dump_now() of tensors of any kind, or zero copy."""
        ins = []
        outs = []
        keep = []
        keys = [] if self._stats_keys is not None else None
        # A window by reference (zero_copy=True) copies the first step all the same, and
        # learns from it what it must copy later (_learn_copies()).
        learns = self._zero_copy and self.window
        by_ref = learns and self.step_no > 0
        zero_copy = self._zero_copy and (by_ref or not self.window)
        for kind, src, dst in (("input", inputs, ins), ("output", outputs, outs)):
            for i, t in enumerate(src):
                if by_ref and ((type(t) is not _TENSOR and isinstance(t, _PARAMETER)) or
                               (name, kind, i) in self._copy_slots):
                    # Changed in place before a window could be written: a parameter (the
                    # optimizer's step), or what an earlier step found changed.
                    t = t.detach().clone()
                a = _host(t)
                if a is not None:
                    dst.append(a)
                    if learns or zero_copy:
                        v, p = t._version, t.data_ptr()
                    if zero_copy:
                        # The storage too: code that sets t.data (no version bump) leaves
                        # the memory handed over alive, and the check sees the new pointer.
                        keep.append((t, v, p, t.storage()))
                    if learns:
                        self._held_refs.append((name, kind, i, t, v, p))
                    if keys is not None:
                        keys.append(self._stats_key(t))
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
        dfx = self._dfx(name, info) if info is not None else None
        if not zero_copy:
            # The native call: every argument is in the form it takes (_host()).
            st._st.dump(op_type, name, ins, outs, True, attrs=attrs, dfx_message=dfx,
                        stats_keys=keys)
            return

        def unchanged():
            return all(t._version == v and t.data_ptr() == p for t, v, p, _ in keep)

        def released(task_id, status, name=name):
            # The library logged the file's tensors in the loss log; here only cap.losses.
            if status < 0:
                cause = _losses.cause_of_status(status)
                self.losses.append(_adump_loss(name, cause, _losses.CAUSES[cause]))

        st._st.dump(op_type, name, ins, outs, False, unchanged, released, attrs=attrs,
                    dfx_message=dfx, stats_keys=keys)

    # ---- module level ----------------------------------------------------------------------

    def _op(self, func, args, kwargs):
        """Run one aten op and dump it (called by the dispatch mode, which is off inside)."""
        tree = self.tree
        # A forward op recomputed in backward (checkpointing) is a forward op of the module
        # call it runs in, not an op of the backward call whose graph node is running.
        in_bwd = self._in_backward > 0 and not tree.recomputing()
        if (in_bwd and not self.backward) or (not in_bwd and not self.with_forward) or \
                not self._active():
            return func(*args, **kwargs)
        pkt = func.overloadpacket.__name__
        if pkt.startswith("_record_function"):
            return func(*args, **kwargs)        # profiler markers, not computation
        if not in_bwd:
            tree.resolve()              # the previous op's graph nodes exist now
        module = tree.current(in_bwd)
        if func.namespace == "c10d":
            return self._c10d(func, args, kwargs, pkt, in_bwd, module)
        overload = func._overloadname
        base = "Aten.%s" % pkt if overload == "default" else "Aten.%s.%s" % (pkt, overload)
        direction = "backward" if in_bwd else "forward"
        n = self._next_index((base, direction))
        name = "%s.%d.%s" % (base, n, direction)
        if not self._in_scope(base, pkt, (name, "%s.%s" % (base, direction))):
            out = func(*args, **kwargs)
            if not in_bwd:
                # Not dumped, but its graph node's backward ops may be.
                tree.forward_op(tensors_of(out, []), module, func._schema.is_mutable)
            return out
        inputs, skipped = [], []
        if self.with_inputs and pkt in _UNDECLARED_INPLACE and not func._schema.is_mutable:
            with own_ops():
                a, k = _copy_named(func, args, kwargs, _UNDECLARED_INPLACE[pkt])
            info = {"input_args": describe(a, inputs, "input", skipped),
                    "input_kwargs": describe(k, inputs, "input", skipped)}
        else:
            info = {"input_args": describe(args, inputs, "input", skipped),
                    "input_kwargs": describe(kwargs, inputs, "input", skipped)}
            if not self.with_inputs:
                inputs = []
            elif inputs and func._schema.is_mutable:
                # In-place and out= ops change their arguments: dump the values they had.
                with own_ops():
                    inputs = [t.detach().clone() for t in inputs]
        out = func(*args, **kwargs)
        flat_out = []
        info["output"] = describe(out, flat_out, "output", skipped)
        if module is not None and in_bwd:
            tree.add_backward(module)
        tree.add(name, module)
        if self.stack and not in_bwd:
            tree.record_stack(name)
        # The contract with compare: attribute `module` = the module call's dump name.
        self._dump(pkt, name, inputs, flat_out if self.with_outputs else [],
                   {"module": module} if module else None, info, skipped)
        if not in_bwd:
            tree.forward_op(flat_out, module, func._schema.is_mutable)
        return out

    def _c10d(self, func, args, kwargs, pkt, in_bwd, module):
        """A collective the dispatcher sees: inside a wrapped torch.distributed call that
        call dumps it; otherwise (C++ callers: DistributedDataParallel) wait for its work,
        then dump it with the values it produced."""
        if self._coll.depth > 0:
            return func(*args, **kwargs)
        base = "Distributed.%s" % pkt         # c10d::allreduce_ -> Distributed.allreduce_
        direction = "backward" if in_bwd else "forward"
        name = "%s.%d.%s" % (base, self._next_index((base, direction)), direction)
        if not self._in_scope(base, pkt, (name, "%s.%s" % (base, direction))):
            return func(*args, **kwargs)
        with own_ops():
            before = [t.detach().clone() for t in tensors_of((args, kwargs), [])] \
                if self.with_inputs else []
        out = func(*args, **kwargs)
        work = out[-1] if isinstance(out, tuple) and out else out
        if hasattr(work, "wait"):
            work.wait()
        self.tree.add(name, module)
        self._dump(pkt, name, before, tensors_of(out, []) if self.with_outputs else [],
                   {"module": module} if module else None)
        return out

    # ---- context -------------------------------------------------------------------------

    def __enter__(self):
        if self.window and self._session is None:
            # One session from step 0: its steps are the capture's (window-<step>).
            self._open_session()
        self._install_modules()
        self._coll.install()
        self._patch_backward()
        if self.level == "op":
            self._mode = _Mode(self)
            self._mode.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self._mode is not None:
                _torch_patch.leave_mode(self._mode)
                self._mode = None
            _torch_patch.remove(self)   # backward, grad, the modules' forward
            self._coll.remove()
            for h in self._handles:
                h.remove()
            self._handles = []
            self._frames = {}
        finally:
            # Everything handed over is written or marked failed, also on Ctrl-C.
            if self._param_grads:
                self._dump_param_grads()
            self._coll.finish_step()
            self._held_refs = []
            window_error = None
            try:
                if self.window:
                    self._window_exit(exc_type, exc)
            except Exception as e:
                if exc_type is None:
                    window_error = e    # raised once the capture is closed
                else:
                    # The exception on its way is the one that propagates.
                    self.losses.append(_adump_loss("window", "write_error", repr(e)))
            finally:
                self._close_session()
            self._final_rank()
            _torch_msprobe.step_closed(self, self.step_no, last=True)
        if window_error is not None:
            raise window_error
        if exc_type is None:
            self._warn_unmatched()
        return False

    def _final_rank(self):
        """A process that never joined a process group: its proc<pid> directories become
        rank<RANK> (rank0 without RANK) where that name is free; in msprobe's layout they
        stay proc<pid>, as msprobe leaves them (msprobe compare pairs a proc directory with a
        proc directory, not with rank0)."""
        self._check_rank()
        if self.rank is None and self._proc_steps and self.format != "msprobe":
            r = env_rank()
            self._promote(0 if r is None else r)


class _Mode(TorchDispatchMode):
    def __init__(self, cap):
        super().__init__()
        self.cap = cap

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.cap._op(func, args, kwargs or {})
