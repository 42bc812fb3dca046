# SPDX-License-Identifier: Apache-2.0
"""adump.torch's window mode, the flight recorder (a part of capture, mixed in).

capture(model, path, window_steps=N, ...) runs its one session in window mode (adump.Session:
window_steps, window_bytes, window_persists, triggers, bounds, deviation, deviation_steps):
every step's statistics are written into step<N>/<rank dir>/ as content="stats" writes them
(CANN CSVs, or msprobe's dump.json statistics), and the tensors of the last N steps are kept
in memory. cap.step() ends the capture's step (its dumps all written) and then the session's:
when a trigger fired during the step (by default a NaN, or an infinity in a tensor that
held none before; a bound, a deviation,
cap.persist(reason), SIGUSR1 with triggers=[..., "signal"]), the held steps are written as a
tensor capture of those steps would write them, under <dump_path>/window-<step>/step<K>/
<rank dir>/, with trigger.json beside the files. With format="msprobe" each persisted step
directory also gets the step's construct.json and stack.json. cap.windows lists the window
roots written, cap.window_info() the window's state.

An exception escaping the `with` block (raised in a step, or between cap.step() calls) ends
the step in progress (its pending backward dumps taken first) and writes the window with
rule "exception" and the exception's repr as reason. KeyboardInterrupt and SystemExit do
not (they are no failure of the model), nor adump.ConfigError (cap.step()'s own, below).

Bounds at module level: each pattern is matched, when the capture is made, against the
tensor names the model's modules can produce (Module.<path>.<Class>.forward.<n>.input.<i>,
...backward.<n>..., ...parameters_grad.<n>.output.<i>, Distributed.<collective>...);
one that matches none raises adump.ConfigError. At op level the op names are only known
once they run: the library checks the patterns against the tensors of step 0, and
cap.step() at its end raises adump.ConfigError naming a pattern that matched nothing.

Distributed (torch.distributed initialised, world size > 1): at each cap.step() the ranks
agree whether any of them fired, with one all_reduce (MIN) of one int64 per rank: its rank
if a trigger fired there in the step, else the world size. If any did, every rank writes
its window of the same steps (one that did not fire with reason "rank R fired"), each
trigger.json gets rank, first_rank (the lowest rank that fired in that step) and
world_size, and a barrier (on such steps only) lets rank 0 tidy the shared root. Its cost, measured on 2 gloo ranks over loopback on a shared 2-core machine
(tests/python/test_window_dist.py TwoRanks, the mean of 200 agreements): 0.12 to 0.27 ms per
step. The agreement needs every rank to call
cap.step() the same number of times, as training does; a trigger after the last cap.step()
(at the capture's exit) is written by its own rank only."""
import contextlib
import fnmatch
import itertools
import os
import re
import shutil

import torch

from . import _adump, _losses, _torch_msprobe, _torch_patch
from ._read import Loss
from ._torch_dist import COLLECTIVES, proc_dir
from ._torch_info import own_ops

WINDOW_KEYS = ("window_steps", "window_bytes", "window_persists", "triggers", "bounds",
               "deviation", "deviation_steps")


def _bound_patterns(bounds):
    if bounds is None:
        return []
    if isinstance(bounds, dict):
        return [p for p in bounds if isinstance(p, str)]
    out = []
    for b in bounds:
        try:
            p = b[0]
        except (TypeError, IndexError, KeyError):
            continue
        if isinstance(p, str):
            out.append(p)
    return out


class WindowMixin:
    """Window mode's half of capture: its methods run on a capture's state."""

    def _init_window(self, steps):
        self.window = self.config.get("window_steps") is not None
        self.windows = []               # the window roots written, in order
        self._window_info = None        # the last window() of a closed session
        self._persists_seen = 0
        if not self.window:
            for k in WINDOW_KEYS[1:]:
                if self.config.get(k) is not None:
                    raise _adump.ConfigError("%s applies to window mode: give window_steps "
                                             "too" % k)
            return
        if self.config.get("layout") == "packed":
            raise _adump.ConfigError("window mode needs the files layout: a capture in window "
                                     "mode is one session over every step (layout='packed' "
                                     "makes one per step)")
        if self.content != "tensor":
            raise _adump.ConfigError("window mode writes every step's statistics itself and "
                                     "a window's tensors: leave content='tensor'")
        if steps is not None:
            raise _adump.ConfigError("window mode records every step: steps= does not apply "
                                     "(pause parts of a step with cap.stop()/start())")

    def _check_bounds(self):
        """Module level: each bound pattern must match a tensor name the model can
        produce (adump.ConfigError otherwise)."""
        patterns = _bound_patterns(self.config.get("bounds"))
        if not patterns or self.level != "module":
            return
        bases = []
        for path, module in self.model.named_modules():
            if not path and not self.keep_root:
                continue
            cls = type(module).__name__
            bases.append("Module.%s.%s" % (path, cls) if path else "Module.%s" % cls)
        kinds = [(b, ("forward", "backward", "parameters_grad")) for b in bases] + \
            [("Distributed.%s" % c, ("forward",)) for c in COLLECTIVES]
        for pattern in patterns:
            # The call number and tensor index: 0, and every number the pattern names.
            numbers = sorted({"0"} | set(re.findall(r"[0-9]+", pattern)))
            found = any(fnmatch.fnmatchcase("%s.%s.%s.%s.%s" % (base, kind, n, io, i), pattern)
                        for base, ks in kinds for kind in ks
                        for n, io, i in itertools.product(numbers, ("input", "output"),
                                                          numbers))
            if not found:
                raise _adump.ConfigError(
                    "bounds: pattern %r matches no tensor this model's modules can produce "
                    "(names look like Module.<path>.<Class>.forward.<n>.output.<i>, e.g. %s)"
                    % (pattern, "%s.forward.0.output.0" % bases[0] if bases else
                       "Module.fc.Linear.forward.0.output.0"))

    # ---- the steps ----------------------------------------------------------------------

    def persist(self, reason=None):
        """Window mode: write the window at the end of the current step (cap.step()), with
        @reason in trigger.json: a rule of the program's own (a loss spike)."""
        if not self.window:
            raise _adump.StateError("persist: the capture is not in window mode "
                                    "(window_steps)")
        if self._session is None:
            raise _adump.ClosedError("persist: the capture is closed")
        self._session.persist(reason)

    def window_info(self):
        """Window mode: the window's state (adump.Session.window()), also after the block."""
        if not self.window:
            raise _adump.StateError("window_info: the capture is not in window mode "
                                    "(window_steps)")
        if self._session is not None:
            return self._session.window()
        return self._window_info

    def _agree(self, fired):
        """(rank, first rank that fired or world size, world size) from one all_reduce
        over the default group, or None without one."""
        dist = getattr(torch, "distributed", None)
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return None
        world = dist.get_world_size()
        if world < 2:
            return None
        rank = dist.get_rank()
        with self._unseen():
            t = torch.tensor([rank if fired else world], dtype=torch.int64)
            if dist.get_backend() == "nccl":
                t = t.cuda()
            _torch_patch.original(dist, "all_reduce")(t, op=dist.ReduceOp.MIN)
            first = int(t.item())
        return rank, first, world

    @contextlib.contextmanager
    def _unseen(self):
        """The capture's own collectives: dumped by no capture."""
        was = self._paused
        self._paused = True
        try:
            with own_ops():
                yield
        finally:
            self._paused = was

    def _window_step(self, agree=True):
        """End the session's step: agree with the other ranks, write the window if a
        trigger fired, note the root written. A config error (a bound pattern that matched
        nothing in step 0) is raised after the step's bookkeeping."""
        s = self._session
        if s is None:
            return
        info = s.window()
        error = got = None
        try:
            got = self._agree(info["is_pending"]) if agree else None
            if got is not None:
                rank, first, world = got
                if first < world:
                    if not info["is_pending"]:
                        s.persist("rank %d fired" % first)
                    s.persist_note({"rank": rank, "first_rank": first, "world_size": world})
        except Exception as e:
            error = e           # a broken process group: the session's step ends all the same
        try:
            ret = s.step()
        except _adump.ConfigError as e:
            ret, error = 0, error or e
        # Every rank wrote into the same root: the persist sessions' own directory goes once
        # all are done (ranks write trigger.json and loss logs into it).
        tidy = True
        if got is not None and got[1] < got[2] and error is None:
            try:
                with self._unseen():
                    torch.distributed.barrier()
                tidy = got[0] == 0
            except Exception as e:
                error, tidy = e, False
        elif got is not None:
            tidy = False
        self._window_seen(s.window(), tidy)
        if ret < 0:
            self.losses.append(Loss("window-%d" % info["step"], _losses.cause_of_status(ret),
                                    "the window of step %d was not written whole: %s" %
                                    (info["step"], _adump.strerror(-ret))))
        if error is not None:
            raise error

    def _window_seen(self, info, tidy=None):
        """The window written since the last look, if any (by a step's end, or at once by
        SIGUSR1: of two in one step, the last one is known here). @tidy: remove the persist
        session's own directory if empty (None: unless other ranks may write there)."""
        if tidy is None:
            dist = getattr(torch, "distributed", None)
            tidy = dist is None or not dist.is_available() or not dist.is_initialized() or \
                dist.get_world_size() < 2
        if info["persists"] > self._persists_seen and info["last_window"] and \
                info["last_window"] not in self.windows:
            self._window_written(info["last_window"], tidy)
        self._persists_seen = info["persists"]

    def _window_written(self, root, tidy):
        """A window was written under @root: the tree files of its msprobe step directories,
        (@tidy) the persist session's own empty directory gone."""
        self.windows.append(root)
        proc = proc_dir()
        if self.rank_dir != proc:
            # Steps held since before the process group existed went to proc<pid>.
            self._window_promote(proc, self.rank_dir, [root])
        for step_name in sorted(os.listdir(root)):
            step_dir = os.path.join(root, step_name)
            if not step_name.startswith("step") or not os.path.isdir(step_dir):
                continue
            try:
                if tidy:
                    os.rmdir(step_dir)  # the persist session's own, when nothing went there
                    continue
            except OSError:
                pass
            if self.format != "msprobe":
                continue
            for rank_name in os.listdir(step_dir):
                src = os.path.join(self.dump_path, step_name, rank_name)
                for name in ("construct.json", "stack.json"):
                    if os.path.isfile(os.path.join(src, name)):
                        try:
                            shutil.copyfile(os.path.join(src, name),
                                            os.path.join(step_dir, rank_name, name))
                        except OSError as e:
                            self.losses.append(Loss(os.path.join(step_dir, rank_name, name),
                                                    "write_error", str(e)))

    def _window_exit(self, exc_type, exc):
        """The capture closes: the step in progress ends (an exception escaping it writes
        the window, rule "exception"), and a trigger of it is written."""
        s = self._session
        if s is None:
            return
        self._flush_backwards()
        s.flush()
        _torch_msprobe.step_closed(self, self.step_no)
        if exc_type is not None and issubclass(exc_type, Exception) and \
                not issubclass(exc_type, _adump.ConfigError):
            text = repr(exc)
            s.persist(text)
            s.persist_note({"rule": "exception", "reason": text})
        info = s.window()
        # Ending step 0 here also has the library check the bound patterns against it.
        if info["is_pending"] or (info["step"] == 0 and self.config.get("bounds")):
            self._window_step(agree=False)
        self._window_info = s.window()
        self._window_seen(self._window_info)

    def _window_promote(self, src_name, dst_name, roots=None):
        """The rank directory @src_name became @dst_name: the same in every window."""
        for root in self.windows if roots is None else roots:
            try:
                steps = os.listdir(root)
            except OSError:
                continue
            for step_name in steps:
                src = os.path.join(root, step_name, src_name)
                dst = os.path.join(root, step_name, dst_name)
                if not os.path.isdir(src):
                    continue
                try:
                    os.rename(src, dst)
                    _torch_msprobe.renamed(self, src, dst)
                except OSError as e:
                    self.losses.append(Loss(dst, "rank_taken", "%s: %s" % (dst, e.strerror)))
