# SPDX-License-Identifier: Apache-2.0
"""The module tree of a capture: which module call each module call and each op dump ran
inside, for module and op level alike, one dict per step in msprobe's construct.json shape
({node: parent node or None}). adump.torch fills it; compare reads the op's part from the
`module` attribute of each op-level dump header, and a msprobe-layout writer can write
construct.json from it as it stands.

Forward: a module call is open from its forward pre-hook to its forward hook; what runs
between belongs to the innermost open call (per thread).

Recomputation: a module call entered during a backward pass (activation checkpointing runs
the module's forward again to rebuild what it did not save) is a forward call like any
other, and the ops it runs are its forward ops.

Backward: the autograd engine runs one graph node at a time. Each node an op makes while a
module call is open (the op's outputs' grad_fn, read once the op has returned through
autograd) gets a pre-hook naming that call's backward (`...backward.<n>`, <n> the forward
call's) and a post-hook clearing it, so the ops the engine runs for the node are attributed
to the module's backward call; ops of nodes made outside every module (the loss, gradient
accumulation into .grad) belong to none. A backward call's parent is its parent's backward,
as in msprobe."""
import os
import threading
import traceback
import weakref

_OWN = os.path.dirname(os.path.abspath(__file__)) + os.sep


def backward_name(forward_name):
    """Module.<path>.<Class>.forward.<n> -> Module.<path>.<Class>.backward.<n>."""
    head, sep, n = forward_name.rpartition(".forward.")
    return head + ".backward." + n if sep else forward_name


class ModuleTree:
    """steps: {step: {node: parent or None}} in the order nodes first appeared, for the
    last @keep steps that dumped anything (an op-level tree holds one entry per dump: a
    long run must not keep them all)."""

    def __init__(self, keep=4):
        self.keep = keep
        self.steps = {}
        self.stacks = {}                # step -> {node: [frame lines]} (record_stack())
        self.step = 0
        self._local = threading.local()
        self.backward_call = None       # set by graph node pre-hooks while the engine runs
        self._pending = None            # (outputs of the last forward op, its module call)

    # ---- calls -----------------------------------------------------------------------------

    def _nodes(self):
        d = self.steps.get(self.step)
        if d is None:
            d = self.steps[self.step] = {}
        return d

    def _stack(self):
        s = getattr(self._local, "stack", None)
        if s is None:
            s = self._local.stack = []
        return s

    def new_step(self, step):
        self.resolve()
        self.step = step
        for old in sorted(self.steps)[:-self.keep] if self.keep > 0 else []:
            del self.steps[old]
            self.stacks.pop(old, None)
        self._local = threading.local()
        self.backward_call = None

    def enter(self, name):
        """A module's forward call @name starts (its pre-hook)."""
        st = self._stack()
        self._nodes().setdefault(name, st[-1] if st else None)
        st.append(name)

    def leave(self, name):
        """The module call @name returned (its forward hook); calls left open inside it
        (an exception in a submodule skips that submodule's forward hook) close with it."""
        st = self._stack()
        if name in st:
            del st[st.index(name):]

    def begin_backward(self):
        """A backward pass starts on this thread (torch.autograd.backward or grad): the
        module calls open now are left open by it; one entered from now until
        end_backward() is a forward call run again inside the backward pass (activation
        checkpointing recomputes the module's forward)."""
        floors = getattr(self._local, "floors", None)
        if floors is None:
            floors = self._local.floors = []
        floors.append(len(self._stack()))

    def end_backward(self):
        floors = getattr(self._local, "floors", None)
        if floors:
            floors.pop()

    def recomputing(self):
        """In a backward pass, a module call entered during it is open: what runs now is
        that call's forward. On a thread of the autograd engine's own (no backward began
        on it) every open call is one."""
        st = self._stack()
        if not st:
            return False
        floors = getattr(self._local, "floors", None)
        return len(st) > (floors[-1] if floors else 0)

    def current(self, backward=False):
        """The module call running now: the innermost open forward call, or in backward the
        module backward call whose graph node the engine is running (None: none)."""
        if backward:
            return self.backward_call
        st = self._stack()
        return st[-1] if st else None

    def add_backward(self, name):
        """Record the backward call @name (of forward call ...forward.<n>) and its parent."""
        nodes = self._nodes()
        while name is not None and name not in nodes:
            # Its parent is the forward parent's backward, recorded too (a Sequential runs
            # no op of its own in backward but is still its children's parent).
            head, sep, n = name.rpartition(".backward.")
            fwd_parent = nodes.get(head + ".forward." + n) if sep else None
            parent = backward_name(fwd_parent) if fwd_parent else None
            nodes[name] = parent
            name = parent

    def add(self, node, parent):
        """A dump @node (an op) that ran inside module call @parent (None: outside)."""
        self._nodes()[node] = parent

    # ---- call stacks (on request) ----------------------------------------------------------

    def record_stack(self, node):
        """The Python call stack of @node's call, adump's own frames left out, in msprobe's
        line format."""
        lines = ["File %s, line %d, in %s, \n %s" % (f.filename, f.lineno, f.name,
                                                     (f.line or "").strip())
                 for f in traceback.extract_stack()[:-1]
                 if not f.filename.startswith(_OWN)]
        self.stacks.setdefault(self.step, {})[node] = lines[::-1]   # innermost first

    def stack_json(self, step):
        """msprobe's stack.json of @step: {"0": [[nodes...], [frame lines...]], ...}, one
        entry per distinct stack."""
        groups = {}
        for node, lines in self.stacks.get(step, {}).items():
            groups.setdefault(tuple(lines), []).append(node)
        return {str(i): [nodes, list(lines)] for i, (lines, nodes) in enumerate(groups.items())}

    # ---- backward attribution ----------------------------------------------------------------

    def forward_op(self, outputs, module, inplace=False):
        """An op ran in forward inside @module with these output tensors: their graph nodes
        exist once the op is back through autograd, so they are tagged at the next op (or
        resolve()). @inplace: the op changes its arguments (its schema says so).

        Held by weak reference: a factory op (torch.zeros) whose output is referenced
        from elsewhere when it returns gets an aten.detach from torch, which the program
        without the capture never runs."""
        self.resolve()
        if module is not None and outputs:
            self._pending = ([weakref.ref(t) for t in outputs], backward_name(module),
                             inplace)

    def resolve(self):
        p, self._pending = self._pending, None
        if p is None:
            return
        refs, name, inplace = p
        seen = set()
        for r in refs:
            t = r()
            if t is None:
                continue                # gone: nothing of it reaches a backward
            nodes = [getattr(t, "grad_fn", None)]
            if inplace and t._base is not None:
                # In place on a view: the op's own node runs inside the base's CopySlices,
                # which calls it without its hooks; the view's node only regenerates the
                # view. Tag the CopySlices the op made.
                base_fn = t._base.grad_fn
                if type(base_fn).__name__ == "CopySlices":
                    nodes.append(base_fn)
            for node in nodes:
                if node is None or id(node) in seen:
                    continue
                seen.add(id(node))
                node.register_prehook(self._enter_node(name))
                node.register_hook(self._leave_node)

    def _enter_node(self, name):
        def pre(grad_outputs):
            self.backward_call = name
            return None
        return pre

    def _leave_node(self, grad_inputs, grad_outputs):
        self.backward_call = None
        return None
