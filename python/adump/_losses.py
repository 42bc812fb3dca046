# SPDX-License-Identifier: Apache-2.0
"""Losses a producer records itself (adump.torch: a value changed in place before it could be
handed over, a dtype dumps cannot hold), in the capture's loss log beside the library's own
lines, so that adump.verify and `adump verify` list them. One JSON line per tensor, appended
with a single write (O_APPEND): lines of the library and of this process never interleave."""
import datetime
import json
import os

from ._read import LOSS_LOG, Loss

# The library's causes and what each means, for Loss.message.
CAUSES = {
    "no_buffer": "no staging buffer was free (on_full='drop')",
    "after_loss": "the rest of a file after an earlier loss",
    "nomem": "out of memory",
    "enospc": "the write failed: no space left (or quota)",
    "eio": "the write failed: I/O error",
    "write_error": "the file could not be written",
    "disk_guard": "skipped by the disk guard (min_free_bytes) or the quota (max_bytes)",
    "changed_before_written": "a tensor held by reference (zero_copy=True) was modified in "
                              "place before its bytes were written; nothing was published",
    "changed_in_place": "the value was overwritten in place before it could be handed over",
    "unsupported_dtype": "a dtype adump dumps cannot hold",
    "window_full": "window mode: the step was larger than the whole window (window_bytes); "
                   "the dump's tensors were not held",
}

_ERR_CAUSES = {4100: "no_buffer", 4108: "disk_guard", 4097: "changed_before_written",
               28: "enospc", 122: "enospc", 5: "eio", 12: "nomem"}


def cause_of_status(status):
    """The loss cause of a failed dump's status (a negative adump or errno code)."""
    return _ERR_CAUSES.get(-status, "write_error")


def record(capture_dir, op_type, op_name, tensors, cause, message=None, stream=0):
    """Append one loss line per tensor to <capture_dir>/adump-losses.jsonl and return the
    Loss. @tensors: [(kind, index, bytes)], kind "input", "output" ...; [] records the dump
    itself (kind "none")."""
    os.makedirs(capture_dir, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lines = []
    for kind, index, nbytes in tensors or [("none", -1, 0)]:
        lines.append(json.dumps({
            "file": "0/%s" % op_name, "stream": stream, "op_type": op_type,
            "op_name": op_name, "kind": kind, "index": index, "bytes": nbytes,
            "cause": cause, "time": now}, separators=(",", ":")))
    data = ("\n".join(lines) + "\n").encode()
    fd = os.open(os.path.join(capture_dir, LOSS_LOG),
                 os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return Loss(op_name, cause, message or CAUSES.get(cause, cause))
