# SPDX-License-Identifier: Apache-2.0
"""What tests/python/test_window.py and test_window_dist.py share (issue 32): the small models
they train (a 3-layer MLP, a tiny conv net), train() with a NaN or a large value planted at
a chosen step, and CANN dump files compared across runs (the fields that differ between any
two runs set aside; names without their stream id and time). Imported once the test has
found torch."""
import os

import torch
import torch.nn as nn

import adump.torch
import helpers


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.act1 = nn.ReLU()
        self.fc2 = nn.Linear(32, 32)
        self.act2 = nn.Tanh()
        self.fc3 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc3(self.act2(self.fc2(self.act1(self.fc1(x)))))


class TinyConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.act = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.pool(self.act(self.conv(x))).flatten(1))


class Residual(nn.Module):
    """From its second call on (a training run's step 1), fc1's output changed in place after
    fc1 returned it (a residual add, as torchvision's ResNet blocks do): a tensor a window
    holding by reference sees change."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 4)
        self.calls = 0

    FROM_CALL = 2

    def forward(self, x):
        self.calls += 1
        out = self.fc1(x)
        if self.calls >= self.FROM_CALL:
            out += x
        return self.fc2(self.act(out))


class ResidualAlways(Residual):
    """Residual whose add is in place from the first call on."""
    FROM_CALL = 1


class DataSwap(nn.Module):
    """From its second call on, fc1's output given new memory through .data after fc1
    returned it (no version bump): the memory handed over is no longer the tensor's."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 512)
        self.fc2 = nn.Linear(512, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        out = self.fc1(x)
        if self.calls > 1:
            out.data = out.data * 2
        return self.fc2(out)


def data_for(model, g):
    if isinstance(model, TinyConv):
        return torch.randn(2, 1, 6, 6, generator=g)
    return torch.randn(4, 8, generator=g)


def train(path, model_cls=MLP, steps=8, bad_step=None, how="hook_nan", raise_at=None,
          persist_at=None, note_at=None, **kw):
    """@steps training steps under capture; at @bad_step a NaN (or a large value) appears:
    "data_nan" in the batch, "hook_nan" / "hook_big" in the output of the model's second
    module through a forward hook; that step's update is skipped. @raise_at: (step, "step"
    or "between") raises RuntimeError inside that step (after its backward) or right after
    its cap.step(). Returns the capture."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = model_cls()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(1)
    state = {"step": 0}
    target = model.conv if isinstance(model, TinyConv) else model.fc2

    def hook(module, inputs, output):
        if state["step"] != bad_step or how == "data_nan":
            return None
        out = output.clone()
        if how == "hook_nan":
            out[0, 1] = float("nan")
        else:
            out = out * 1e6
        return out
    target.register_forward_hook(hook)      # before the capture's: it dumps what this made
    with adump.torch.capture(model, path, **kw) as cap:
        for step in range(steps):
            state["step"] = step
            with cap.paused():          # the data comes from outside the model
                x = data_for(model, g)
                if step == bad_step and how == "data_nan":
                    x.view(-1)[3] = float("nan")
            loss = model(x).pow(2).mean()
            loss.backward()
            if step in (persist_at or ()):
                cap.persist("loss spike")
            if note_at == step:
                cap._session.persist_note({"job": "nightly"})
            if raise_at == (step, "step"):
                raise RuntimeError("boom at %d" % step)
            with cap.paused():
                if step != bad_step:
                    opt.step()
                opt.zero_grad()
            cap.step()
            if raise_at == (step, "between"):
                raise RuntimeError("boom after %d" % step)
    return cap


# ---- comparing captures ---------------------------------------------------------------------

def _varint(buf, i):
    n = shift = 0
    while True:
        b = buf[i]
        n |= (b & 0x7f) << shift
        i += 1
        if not b & 0x80:
            return n, i
        shift += 7


def _fields(buf, drop=(), nested=None):
    """A protobuf message as a list of (field, value), @drop's fields left out, the fields
    of @nested ({field: drop set}) parsed as messages too."""
    out, i = [], 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            n, i = _varint(buf, i)
            value = bytes(buf[i:i + n])
            i += n
        elif wire == 1:
            value, i = bytes(buf[i:i + 8]), i + 8
        elif wire == 5:
            value, i = bytes(buf[i:i + 4]), i + 4
        else:
            raise ValueError("wire type %d" % wire)
        if field in drop:
            continue
        if nested and field in nested:
            value = _fields(value, nested[field])
        out.append((field, value))
    return out


def cann_normal(path):
    """A CANN dump file as (header fields, tensor bytes): DumpData's dump_time (2) and each
    OpOutput's (3) address (9) and OpInput's (4) address (8) set aside, the only fields that
    differ between two runs of the same program."""
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    return _fields(data[8:8 + n], drop={2}, nested={3: {9}, 4: {8}}), data[8 + n:]


def cann_key(name):
    """op_type.op_name.task_id of <op_type>.<op_name>.<task_id>.<stream_id>.<time>: the
    stream id is a process-wide count, the time the wall clock."""
    return name.rsplit(".", 2)[0]


def cann_csv_key(rel):
    """A statistics file's path without its stream id and time."""
    return cann_key(rel[:-len(".csv")]) if rel.endswith(".csv") else rel


def files_of(top):
    return sorted(os.path.relpath(p, top) for p in helpers.files_below(top))
