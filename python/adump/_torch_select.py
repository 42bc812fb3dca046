# SPDX-License-Identifier: Apache-2.0
"""What adump.torch.capture dumps and what it records when it cannot: scope and list
patterns (with a warning for a pattern that matched nothing in the first captured step),
steps, msprobe's data_mode, pausing (cap.stop()/start()/paused()) and producer-side losses
(adump.Loss in cap.losses, a line in the step's adump-losses.jsonl). A mixin of capture: it
uses capture's dump_path, level, step_no, losses and _step_dir()."""
import contextlib
import fnmatch
import os
import warnings

from . import _losses
from ._read import Loss as _adump_loss


def _patterns(what, value):
    """scope/list as a list of strings: a string is one pattern, not its characters."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    try:
        value = [v for v in value]
    except TypeError:
        raise TypeError("%s: a string or a list of strings, got %s" %
                        (what, type(value).__name__)) from None
    bad = [v for v in value if not isinstance(v, str)]
    if bad:
        raise TypeError("%s: a string or a list of strings, got %r in it" % (what, bad[0]))
    return value or None


def _steps(steps):
    """steps as a set of step numbers: an int, a range or a list of ints (None: all)."""
    if steps is None:
        return None
    if isinstance(steps, int) and not isinstance(steps, bool):
        return {steps}
    try:
        out = set(steps)
    except TypeError:
        raise TypeError("steps: an int, a range or a list of ints, got %s" %
                        type(steps).__name__) from None
    if any(not isinstance(v, int) or isinstance(v, bool) for v in out):
        raise TypeError("steps: an int, a range or a list of ints, got %r" % (steps,))
    return out


class _Select:
    """Selection state of a capture (mixed into adump.torch.capture)."""

    def _init_select(self, scope, names, steps, data_mode):
        if data_mode is not None:
            self._data_mode(data_mode)
        self.scope = _patterns("scope", scope)
        self.names = _patterns("list", names)
        self._unmatched = set(self.scope or ()) | set(self.names or ())
        self._selects = self.scope is not None or self.names is not None
        self._warned = False
        self.steps = _steps(steps)
        self._paused = False

    def _data_mode(self, data_mode):
        modes = [data_mode] if isinstance(data_mode, str) else data_mode
        known = {"all", "input", "output", "forward", "backward"}
        if not modes or any(m not in known for m in modes):
            raise ValueError("data_mode: a list of %s, got %r" % (sorted(known), data_mode))
        if "all" not in modes:
            io = {"input", "output"} & set(modes)
            if io:
                self.with_inputs = "input" in io
                self.with_outputs = "output" in io
            fb = {"forward", "backward"} & set(modes)
            if fb:
                self.with_forward = "forward" in fb
                self.backward = "backward" in fb

    def _active(self):
        return not self._paused and (self.steps is None or self.step_no in self.steps)

    def _in_scope(self, base, path=None, full=()):
        """Whether a dump of @base (module path or op @path, full names @full) is selected
        by scope and list; records which patterns matched."""
        ok = True
        if self.scope is not None:
            hit = [g for g in self.scope
                   if fnmatch.fnmatchcase(base, g) or
                   (path is not None and fnmatch.fnmatchcase(path, g)) or
                   any(fnmatch.fnmatchcase(f, g) for f in full)]
            self._unmatched.difference_update(hit)
            ok = bool(hit)
        if ok and self.names is not None:
            hit = [n for n in self.names if any(n in f for f in (base,) + tuple(full))]
            self._unmatched.difference_update(hit)
            ok = bool(hit)
        return ok

    def _warn_unmatched(self):
        """After the first captured step: name each scope/list pattern that matched nothing."""
        if self._warned or not (self.steps is None or self.step_no in self.steps):
            return
        self._warned = True
        for g in sorted(self._unmatched):
            warnings.warn("adump.torch.capture: scope/list pattern %r matched no %s in step %d "
                          "(dump names look like %s)" % (
                              g, "module" if self.level == "module" else "op", self.step_no,
                              "Module.<path>.<Class>.forward.<n>" if self.level == "module"
                              else "Aten.<op>.<n>.forward"), stacklevel=3)

    # ---- pausing ---------------------------------------------------------------------------

    def stop(self):
        """Dump nothing until start() (e.g. around the optimizer step)."""
        self._paused = True

    def start(self):
        self._paused = False

    @contextlib.contextmanager
    def paused(self):
        """`with cap.paused(): opt.step()`: nothing inside the block is dumped."""
        was = self._paused
        self._paused = True
        try:
            yield self
        finally:
            self._paused = was

    # ---- losses ----------------------------------------------------------------------------

    def _lost(self, op_type, name, tensors, cause, message=None):
        """Record a loss: in cap.losses and in this step's adump-losses.jsonl."""
        try:
            loss = _losses.record(os.path.join(self.dump_path, self._step_dir()), op_type, name,
                                  tensors, cause, message)
        except OSError as e:
            loss = _adump_loss(name, cause, "%s (not logged: %s)" % (
                message or _losses.CAUSES.get(cause, cause), e))
        self.losses.append(loss)
