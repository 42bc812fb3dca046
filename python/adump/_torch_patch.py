# SPDX-License-Identifier: Apache-2.0
"""The attributes adump.torch captures replace (torch.autograd.backward and grad, the
torch.distributed collectives, a module instance's forward), shared by every capture open
in the process, so that captures whose lifetimes overlap in any order stay independent and
leave each attribute as they found it.

Each capture adds a layer to an attribute: a function of the next callable inward that
returns its wrapper of it. The attribute holds one trampoline while any layer is on it,
calling the composition of the layers (the first added innermost) over the original; the
original is put back when the last layer goes. Saving what one found and putting it back
(chaining) breaks when captures do not close in the reverse order they opened: the first
to close put the original back over the second's wrapper, which then saw no backward call,
and the second put the first's wrapper back for good."""
import functools

_patched = {}           # (id(obj), name) -> _Attr


class _Attr:
    __slots__ = ("obj", "name", "original", "had", "layers", "current", "trampoline")

    def __init__(self, obj, name):
        self.obj = obj
        self.name = name
        self.original = getattr(obj, name)
        # A module's forward lives on its class: put back means remove the instance's.
        self.had = name in getattr(obj, "__dict__", {})
        self.layers = []                # (owner, make), the first added innermost
        self.current = self.original
        attr = self

        def trampoline(*args, **kwargs):
            return attr.current(*args, **kwargs)
        try:
            functools.update_wrapper(trampoline, self.original)
        except (AttributeError, TypeError):
            pass
        self.trampoline = trampoline

    def rebuild(self):
        f = self.original
        for _, make in self.layers:
            f = make(f)
        self.current = f


def original(obj, name):
    """What @obj.@name was before any capture's layer."""
    a = _patched.get((id(obj), name))
    return a.original if a is not None else getattr(obj, name, None)


def add(obj, name, owner, make):
    """Add @owner's layer @make (inner callable -> wrapper) to @obj.@name. Raises what
    setattr raises (a scripted module's forward), leaving nothing changed."""
    key = (id(obj), name)
    a = _patched.get(key)
    if a is None:
        a = _Attr(obj, name)
        setattr(obj, name, a.trampoline)
        _patched[key] = a
    a.layers.append((owner, make))
    a.rebuild()


def remove(owner):
    """Remove every layer of @owner; an attribute left with none gets its original back
    (unless someone replaced our trampoline since: theirs stays, ours then calls the
    original)."""
    for key, a in list(_patched.items()):
        kept = [(o, m) for o, m in a.layers if o is not owner]
        if len(kept) == len(a.layers):
            continue
        a.layers = kept
        a.rebuild()
        if kept:
            continue
        del _patched[key]
        if a.obj.__dict__.get(a.name) is not a.trampoline:
            continue
        if a.had:
            setattr(a.obj, a.name, a.original)
        else:
            delattr(a.obj, a.name)


def leave_mode(mode):
    """Take @mode (an op-level capture's dispatch mode) off torch's mode stack wherever it
    is: TorchDispatchMode.__exit__ pops the top one, which is another capture's when the
    captures do not close in the reverse order they opened. The modes above it stay, in
    their order."""
    from torch.utils import _python_dispatch as pd
    stack = pd._get_current_dispatch_mode_stack()
    if stack and stack[-1] is mode:
        mode.__exit__(None, None, None)
        return
    if not any(m is mode for m in stack):
        return                          # taken off by someone else already
    above = []
    while True:
        top = pd._pop_mode()
        if top is mode:
            break
        above.append(top)
    for m in reversed(above):
        pd._push_mode(m)
