# SPDX-License-Identifier: Apache-2.0
"""What adump.torch records about a call beside its tensors, in msprobe's data model, so a
msprobe-format writer (dump.json) can be made from a CANN capture: the header's dfx_message
holds a JSON object

    {"input_args": [...], "input_kwargs": {...}, "output": [...], "parameters": {...}}

whose items are msprobe's: a tensor {"type": "torch.Tensor", "dtype": "torch.float32",
"shape": [2, 3], "requires_grad": true, "tensor": "input.0"} (its place among the dump's
inputs or outputs; null with a "loss" saying why when its dtype is not stored), a non-tensor
value {"type": "float", "value": 2.0}, lists and dicts of items as they were passed."""
import json
import math

import torch

from . import _adump

# dtypes adump stores (the header's DT_*): bfloat16 and the complex types by their bytes.
STORED = {
    torch.float32: None, torch.float16: None, torch.float64: None, torch.int8: None,
    torch.int16: None, torch.int32: None, torch.int64: None, torch.uint8: None,
    torch.bool: None, torch.bfloat16: _adump.DT_BF16,
    torch.complex64: 16, torch.complex128: 17,         # DT_COMPLEX64, DT_COMPLEX128
}


def storable(t):
    return t.dtype in STORED and not t.is_sparse and not t.is_quantized


def describe(obj, tensors, kind, skipped=None):
    """The description of @obj; its storable tensors are appended to @tensors (in the
    order adump.torch dumps them) and referred to as "<kind>.<index>"; the others, if
    @skipped is a list, go there as (kind, index among all tensors of @kind, bytes, dtype)
    for the loss log."""
    if isinstance(obj, torch.Tensor):
        d = {"type": "torch.Tensor", "dtype": str(obj.dtype), "shape": list(obj.shape),
             "requires_grad": bool(obj.requires_grad)}
        if storable(obj):
            d["tensor"] = "%s.%d" % (kind, len(tensors))
            tensors.append(obj)
        else:
            if skipped is not None:
                seen = len(tensors) + sum(1 for s in skipped if s[0] == kind)
                skipped.append((kind, seen, obj.element_size() * obj.nelement(), obj.dtype))
            d["tensor"] = None
            d["loss"] = "not stored: %s%s" % (obj.dtype, " (sparse)" if obj.is_sparse else
                                              " (quantized)" if obj.is_quantized else "")
        return d
    if obj is None or isinstance(obj, (bool, int, str)):
        return {"type": type(obj).__name__, "value": obj}
    if isinstance(obj, float):
        return {"type": "float", "value": obj if math.isfinite(obj) else str(obj)}
    if isinstance(obj, (tuple, list)):
        return [describe(o, tensors, kind, skipped) for o in obj]
    if isinstance(obj, dict):
        return {str(k): describe(v, tensors, kind, skipped) for k, v in obj.items()}
    if isinstance(obj, (torch.dtype, torch.device, torch.memory_format, torch.layout, slice)):
        return {"type": type(obj).__name__, "value": str(obj)}
    return {"type": type(obj).__name__}


def to_json(info):
    return json.dumps(info, separators=(",", ":"))
