# SPDX-License-Identifier: Apache-2.0
"""What adump.torch records about a call beside its tensors, in msprobe's data model, so a
msprobe-format writer (dump.json) can be made from a CANN capture: the header's dfx_message
holds a JSON object

    {"input_args": [...], "input_kwargs": {...}, "output": [...], "parameters": {...}}

whose items are msprobe's: a tensor {"type": "torch.Tensor", "dtype": "torch.float32",
"shape": [2, 3], "requires_grad": true, "tensor": "input.0"} (its place among the dump's
inputs or outputs; null with a "loss" saying why when its dtype is not stored), a non-tensor
value {"type": "float", "value": 2.0}, lists and dicts of items as they were passed.

Non-tensor values are described exactly as msprobe's dump describes them (its PyTorch data
processor), so the two tools' dump.json entries have the same rows: None and values of types
msprobe does not know are null; bool, int, float, str {"type", "value"}; slice {"type":
"slice", "value": [start, stop, step]}; Ellipsis "..."; torch.Size {"type": "torch.Size",
"value": [...]}; a memory format {"type": "torch.memory_format", "format": name}; a dtype or
device given as the keyword argument dtype / output_dtype / device {"type": "torch.dtype" /
"torch.device", "value"}, anywhere else {}; a namedtuple as a dict of its fields; the
torch.distributed ReduceOp (by its RedOpType, where msprobe's str() gives an address) and
ProcessGroup as msprobe writes them."""
import json
import zlib

import numpy as np
import torch

from . import _adump

# dtypes adump stores (the header's DT_*): bfloat16 and the complex types by their bytes.
STORED = {
    torch.float32: None, torch.float16: None, torch.float64: None, torch.int8: None,
    torch.int16: None, torch.int32: None, torch.int64: None, torch.uint8: None,
    torch.bool: None, torch.bfloat16: _adump.DT_BF16,
    torch.complex64: 16, torch.complex128: 17,         # DT_COMPLEX64, DT_COMPLEX128
}


# str() of the dtypes adump stores, looked up once a tensor instead of made.
_DTYPE_NAMES = {t: str(t) for t in STORED}


class own_ops:
    """with own_ops(): the capture's own tensor operations (copies, conversions to dump)
    run unseen by every dispatch mode: an op-level capture's (this one's, which torch calls
    with its mode still on for a factory op; an outer one's, which gets the ops a mode's
    __torch_dispatch__ runs) or the user's would take them for the program's."""
    __slots__ = ("_guard",)

    def __enter__(self):
        self._guard = torch._C._DisableTorchDispatch()
        return self

    def __exit__(self, *exc):
        del self._guard
        return False


def storable(t):
    return t.dtype in STORED and not t.is_sparse and not t.is_quantized


def _describe_py(obj, tensors, kind, skipped=None, key=None):
    """The description of @obj; its storable tensors are appended to @tensors (in the
    order adump.torch dumps them) and referred to as "<kind>.<index>"; the others, if
    @skipped is a list, go there as (kind, index among all tensors of @kind, bytes, dtype)
    for the loss log. @key: the name @obj was passed under (a keyword argument or a dict
    key), which msprobe reads for dtype and device. describe() is _adump._describe(): the
    same in C for tensors of torch's own types and stored dtypes, lists, tuples and dicts
    of exact type and None, this function for the rest (and the reference: tests compare
    the two)."""
    if isinstance(obj, torch.Tensor):
        dtype = obj.dtype
        d = {"type": "torch.Tensor", "dtype": _DTYPE_NAMES.get(dtype) or str(dtype),
             "shape": list(obj.shape), "requires_grad": obj.requires_grad}
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
    # Containers before _special(): of its types only torch.Size is one (a tuple).
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return {str(k): describe(getattr(obj, k), tensors, kind, skipped, k)
                for k in obj._fields}
    if isinstance(obj, (tuple, list)) and not isinstance(obj, torch.Size):
        return [describe(o, tensors, kind, skipped) for o in obj]
    if isinstance(obj, dict):
        return {str(k): describe(v, tensors, kind, skipped, k) for k, v in obj.items()}
    special = _special(obj, key)
    # None, and types msprobe does not describe: null
    return None if special is _NOT_SPECIAL else special


_adump._describe_setup(torch.Tensor, torch.nn.Parameter, _DTYPE_NAMES, _describe_py)
describe = _adump._describe
_NOT_SPECIAL = object()
_MEMORY_FORMATS = {torch.contiguous_format: "contiguous_format",
                   torch.channels_last: "channels_last",
                   torch.channels_last_3d: "channels_last_3d",
                   torch.preserve_format: "preserve_format"}
_KEYED = ("device", "dtype", "output_dtype")


def _special(obj, key):
    """msprobe's description of a value of one of the types it describes itself (its
    builtin, numpy and torch types), else _NOT_SPECIAL."""
    if isinstance(obj, (bool, int, float, str, slice, type(Ellipsis), torch.Size, torch.dtype,
                        torch.device, torch.memory_format, np.generic)):
        if key in _KEYED:
            # Keyed by name, msprobe reads these as a dtype or a device whatever they hold.
            if key == "device":
                d = {"type": "torch.device"}
                if isinstance(obj, (int, str)):
                    d["value"] = obj
                elif isinstance(obj, torch.device):
                    d["value"] = "%s:%s" % (obj.type, obj.index)
                return d
            return {"type": "torch.dtype", "value": str(obj)}
        if isinstance(obj, (bool, int, float, str)):
            # A non-finite float stays a number (NaN, Infinity, -Infinity in the JSON, as
            # msprobe's json.dump writes it): msprobe compare refuses a dump.json whose
            # strings start with "-", "+", "=", "%" or "@" (its CSV-injection guard), so
            # "-inf" as text made it reject the whole file.
            return {"type": type(obj).__name__, "value": obj}
        if isinstance(obj, slice):
            return {"type": "slice", "value": [None if v is None else int(v)
                                               for v in (obj.start, obj.stop, obj.step)]}
        if obj is Ellipsis:
            return {"type": "ellipsis", "value": "..."}
        if isinstance(obj, torch.Size):
            return {"type": "torch.Size", "value": [int(x) for x in obj]}
        if isinstance(obj, torch.memory_format):
            return {"type": "torch.memory_format", "format": _MEMORY_FORMATS.get(obj)}
        if isinstance(obj, np.generic):
            return {"type": type(obj).__name__, "value": obj.item()}
        return {}               # a dtype or device not given by those names
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available():
        if isinstance(obj, dist.ReduceOp):
            # msprobe writes str(op), which for torch 1.13's ReduceOp objects is an address
            # ("<...ReduceOp object at 0x...>") no two runs share; its RedOpType names the
            # operation ("RedOpType.MAX") and compares.
            return {"type": "torch.distributed.ReduceOp", "value": str(getattr(obj, "op", obj))}
        if isinstance(obj, dist.ProcessGroup):
            d = {"type": "torch.ProcessGroup"}
            try:
                ranks = dist.get_process_group_ranks(obj)
            except (RuntimeError, ValueError, AttributeError):
                return d
            d["group_ranks"] = ranks
            d["group_id"] = "%08x" % zlib.crc32(str(ranks).encode("utf-8"))
            return d
    return _NOT_SPECIAL


# One encoder for every dump (json.dumps with separators builds one a call); a description
# is a tree describe() made, with no cycle to look for.
to_json = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
