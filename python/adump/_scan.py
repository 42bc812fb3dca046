# SPDX-License-Identifier: Apache-2.0
"""adump.scan: NaN/Inf in one capture without a golden run (include/adump/scan.h)."""
import os

from . import _adump


class ScanResult(list):
    """The ops ``adump scan`` lists, in execution order: dicts with kind ("origin": its
    outputs hold NaN/Inf or float16 values at the limit while its inputs were finite, and no
    op inside it made them; "entered": they were first seen in its inputs, a parameter or an
    input no captured op made, message "first seen in the weight of <op>, made by no captured
    op"; "reached": its inputs hold them, made before; "enclosing": a module call whose
    child made them, message "made inside it, by <op>"; "uninitialized": NaN/Inf only in
    memory no op wrote, torch.empty's output or bernoulli_'s first input, no anomaly;
    "unreadable"), order (position among all dumps), timestamp, path, op_type, op_name (the
    header's), inputs and outputs (dicts of nan, inf, fp16_limit counts), first_tensor
    ("output:0") and message. Also:

    origin    the first "origin" or "entered" op's dict (where they were made or came in),
              or None
    dumps     how many dumps were read
    bytes     tensor bytes read
    """
    origin = None
    dumps = 0
    bytes = 0


def _counts(c):
    return {"nan": c[0], "inf": c[1], "fp16_limit": c[2]}


def scan(path, *, threads=0, flat=False):
    """Read every dump of one capture (a directory and its subdirectories, a packed capture or
    one dump; tensor dumps, .lz4 too, and statistics dumps alike) and list, in execution
    order, the op that made NaN or Inf (or float16 values at the dtype's limit) and every
    later op they reached, as ``adump scan`` does. A statistics dump counts a non-finite max,
    min or mean as one element.

    threads  read on this many threads; 0: one per CPU
    flat     this directory only, not its subdirectories

    The scan runs without the GIL. Raises adump.NotFoundError when @path holds no dump,
    OSError when it cannot be read."""
    if not isinstance(threads, int) or threads < 0 or threads > 1024:
        raise _adump.ConfigError("threads: expected an int 0-1024, got %r" % (threads,))
    dumps, nbytes, ops = _adump.scan(os.fspath(path), threads, bool(flat))
    keys = ("kind", "order", "timestamp", "path", "op_type", "op_name", "inputs", "outputs",
            "first_tensor", "message")
    res = ScanResult()
    for op in ops:
        d = dict(zip(keys, op))
        d["inputs"], d["outputs"] = _counts(d["inputs"]), _counts(d["outputs"])
        res.append(d)
        if res.origin is None and d["kind"] in ("origin", "entered"):
            res.origin = d
    res.dumps, res.bytes = dumps, nbytes
    return res
