# SPDX-License-Identifier: Apache-2.0
"""Distributed training under adump.torch: the rank directory and the collectives.

Rank: taken from the process group once it exists (torch.distributed.get_rank()); until
then a process writes into proc<pid>, never a rank it guessed (mp.spawn and srun set no
RANK, an inherited RANK may be wrong): two processes never share a directory. When the
group appears, every step<N>/proc<pid> this capture made is renamed step<N>/rank<R>, as
msprobe does; a process that never joins a group takes rank<RANK> (or rank0) when it
closes, where that name is free.

Collectives: the torch.distributed functions below are wrapped while a capture is open and
dumped as Distributed.<function>.<n>.forward once their work has completed: a synchronous
call right after it returns, an async_op=True call when its Work's wait() returns (the
Work is handed back wrapped; a work never waited for is dumped at the step's end if it has
completed, else counted in cap.losses). The dump.json entry is msprobe's: input_args and
input_kwargs as they were before the call, output the arguments (positional, then keyword)
after it; arguments a collective only writes into (all_gather's output list ...) are null
among the inputs, as msprobe's dump leaves them. Collectives that C++ issues without these
functions (DistributedDataParallel's gradient buckets, its parameter broadcast) reach the
op-level dispatch as c10d ops: there the capture waits for their work, then dumps them as
Distributed.<c10d op>.<n>.forward/backward."""
import bisect
import os

import torch

from . import _torch_patch
from ._read import Loss
from ._torch_info import describe, own_ops

# torch.distributed functions that move tensors (those this torch has are wrapped).
COLLECTIVES = (
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
    "_all_gather_base", "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base",
    "all_to_all", "all_to_all_single", "scatter", "gather", "send", "recv", "isend", "irecv",
)

# Arguments whose value before the call is not an input (buffers the collective fills), by
# position among the positional arguments or by keyword: described as null among the inputs
# and not copied (msprobe's builtin ignore rules for its Distributed APIs). isend's tensor is
# no output of it.
IGNORED_INPUTS = {
    "recv": (0,), "irecv": (0, "tensor"), "all_gather": (0,), "gather": (1,), "scatter": (0,),
    "reduce_scatter": (0,), "_reduce_scatter_base": (0,), "_all_gather_base": (0,),
    "all_to_all_single": (0,), "all_to_all": (0,), "all_gather_into_tensor": (0,),
    "reduce_scatter_tensor": (0,),
}
IGNORED_OUTPUTS = {"isend": (0,)}


def _masked(args, kwargs, ignored):
    """(args, kwargs) with the arguments named in @ignored (positions, keywords) set to None."""
    if not ignored:
        return args, kwargs
    args = tuple(None if i in ignored else a for i, a in enumerate(args))
    kwargs = {k: None if k in ignored else v for k, v in kwargs.items()}
    return args, kwargs


def describe_call(name, args, kwargs, inputs, skipped=None):
    """msprobe's input_args and input_kwargs of collective @name called with @args, @kwargs;
    the tensors described are appended to @inputs (unstorable ones to @skipped: describe())."""
    a, k = _masked(args, kwargs, IGNORED_INPUTS.get(name))
    return {"input_args": describe(a, inputs, "input", skipped),
            "input_kwargs": describe(k, inputs, "input", skipped)}


def describe_result(name, args, kwargs, outputs, skipped=None):
    """msprobe's output of a collective: its arguments after the call, positional then
    keyword (the tensors described are appended to @outputs)."""
    a = tuple(args) + tuple(kwargs.values())
    ignored = IGNORED_OUTPUTS.get(name)
    if ignored:
        a = tuple(None if i in ignored else x for i, x in enumerate(a))
    return describe(list(a), outputs, "output", skipped)


def group_rank():
    """The rank in the default process group, or None while there is none."""
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return None


def env_rank():
    try:
        return int(os.environ["RANK"])
    except (KeyError, ValueError):
        return None


def proc_dir():
    return "proc%d" % os.getpid()


class StepRuns:
    """A set of step numbers (those with a proc<pid> directory to rename) held as runs of
    consecutive ones: a process that never joins a process group keeps every step of its
    run until the end, a few bytes for a million steps rather than a set's 50 MB."""
    __slots__ = ("_runs",)

    def __init__(self):
        self._runs = []                 # [first, last], ascending, apart by at least 2

    def add(self, n):
        runs = self._runs
        if runs and runs[-1][0] <= n:   # a training loop's case: at the end
            if n <= runs[-1][1] + 1:
                runs[-1][1] = max(runs[-1][1], n)
            else:
                runs.append([n, n])
            return
        i = bisect.bisect_left(runs, [n, n])
        if i and n <= runs[i - 1][1] + 1:
            i -= 1
            runs[i][1] = max(runs[i][1], n)
        elif i < len(runs) and runs[i][0] <= n + 1:
            runs[i][0] = min(runs[i][0], n)
        else:
            runs.insert(i, [n, n])
        if i + 1 < len(runs) and runs[i][1] + 1 >= runs[i + 1][0]:
            runs[i][1] = max(runs[i][1], runs.pop(i + 1)[1])

    def __iter__(self):
        """The steps in ascending order."""
        for first, last in self._runs:
            yield from range(first, last + 1)

    def __bool__(self):
        return bool(self._runs)


def tensors_of(obj, out):
    """Tensors of nested tuples, lists and dicts, appended to @out in order; other values
    are skipped. Returns @out."""
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            tensors_of(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            tensors_of(o, out)
    return out


class Work:
    """A torch.distributed Work whose wait() dumps the collective once it has completed;
    everything else is the wrapped Work's."""

    def __init__(self, work, done):
        self._adump_work = work
        self._adump_done = done
        self._adump_name = None

    def wait(self, *args, **kwargs):
        ret = self._adump_work.wait(*args, **kwargs)
        self.complete()
        return ret

    def complete(self):
        done, self._adump_done = self._adump_done, None
        if done is not None:
            done()

    def __getattr__(self, name):
        return getattr(self._adump_work, name)


class Collectives:
    """Wraps the torch.distributed collectives for one capture (install / remove)."""

    def __init__(self, cap):
        self.cap = cap
        self.installed = False
        self.depth = 0              # inside a wrapped call: its c10d ops are not dumped twice
        self.pending = []           # Works handed back, not waited for yet

    def install(self):
        """One layer of this capture's on each collective (_torch_patch), on
        torch.distributed's name for it too where that is the same function."""
        dist = getattr(torch, "distributed", None)
        if dist is None or not dist.is_available():
            return
        from torch.distributed import distributed_c10d as c10d
        for name in COLLECTIVES:
            fn = _torch_patch.original(c10d, name)
            if fn is None:
                continue

            def layer(inner, name=name):
                return self._wrap(name, inner)
            if _torch_patch.original(dist, name) is fn:
                _torch_patch.add(dist, name, self, layer)
            _torch_patch.add(c10d, name, self, layer)
            self.installed = True

    def remove(self):
        if self.installed:
            _torch_patch.remove(self)
            self.installed = False

    def _wrap(self, name, fn):
        coll = self

        def collective(*args, **kwargs):
            cap = coll.cap
            if not cap._active():
                return fn(*args, **kwargs)
            base = "Distributed.%s" % name
            module = cap.tree.current(cap._in_backward > 0)
            info, before, skipped = {}, [], []
            if cap.with_inputs:
                info = describe_call(name, args, kwargs, before, skipped)
                with own_ops():
                    before = [t.detach().clone() for t in before]
            coll.depth += 1
            try:
                ret = fn(*args, **kwargs)
            finally:
                coll.depth -= 1
            n = cap._next_index(base)
            dump_name = "%s.%d.forward" % (base, n)
            if cap.stack:
                cap.tree.record_stack(dump_name)

            def done():
                after = []
                if cap.with_outputs:
                    info["output"] = describe_result(name, args, kwargs, after, skipped)
                cap.tree.add(dump_name, module)
                cap._dump(name, dump_name, before, after,
                          {"module": module} if module else None, info, skipped)
            if ret is None or not hasattr(ret, "wait"):
                done()              # synchronous: the work has completed
                return ret
            work = Work(ret, done)
            work._adump_name = dump_name
            coll.pending.append(work)
            return work
        collective.__wrapped__ = fn
        collective.__name__ = fn.__name__
        collective.__doc__ = fn.__doc__
        return collective

    def finish_step(self):
        """Works of this step nobody waited for: dumped if complete, else a loss."""
        pending, self.pending = self.pending, []
        for w in pending:
            if w._adump_done is None:
                continue
            try:
                completed = w._adump_work.is_completed()
            except RuntimeError:
                completed = False
            if completed:
                w.complete()
            else:
                w._adump_done = None
                self.cap.losses.append(Loss(w._adump_name, "not_completed",
                                            "async collective never waited for and not "
                                            "complete at the step's end: not dumped"))
