# SPDX-License-Identifier: Apache-2.0
"""msprobe's layout for adump.torch captures.

With format="msprobe" the capture writes the step's module tree (construct.json, msprobe's
shape, from cap.tree) beside its dumps and turns the step's rank directory into msprobe's
layout once the step has closed and the rank is known, on a thread of its own beside the
training (the capture's end waits for it): adump's pipeline writes the CANN files as always (no torch.save on the training
thread), then the C exporter (adump_export_msprobe) turns the step's rank directory into
dump.json, stack.json, construct.json and dump_tensor_data/*.pt in place and the CANN files
are removed. A failed export keeps the CANN files and is recorded in cap.losses."""
import json
import os
import queue
import shutil
import threading

from . import _adump
from ._read import Loss


def _rank_dir(cap, step):
    return os.path.join(cap.dump_path, "step%d" % step, cap.rank_dir)


def _write_json(cap, path, obj):
    try:
        with open(path + ".tmp", "w") as f:
            json.dump(obj, f, indent=1)
        os.replace(path + ".tmp", path)
    except OSError as e:
        cap.losses.append(Loss(path, "write_error", "%s: %s" % (path, e.strerror)))


def write_tree(cap, step):
    """construct.json of @step (nodes the capture dumped, with their parents) and, with
    stack=True, stack.json; the exporter takes both as they are."""
    d = _rank_dir(cap, step)
    nodes = cap.tree.steps.get(step)
    if not nodes or not os.path.isdir(d):
        return
    _write_json(cap, os.path.join(d, "construct.json"), nodes)
    if getattr(cap, "stack", False):
        _write_json(cap, os.path.join(d, "stack.json"), cap.tree.stack_json(step))


def export_step(cap, step):
    """format="msprobe": the step's rank directory in msprobe's layout, in place."""
    d = _rank_dir(cap, step)
    if not os.path.isdir(d) or os.path.exists(os.path.join(d, "dump.json")):
        return
    try:
        _adump.export_msprobe(d, d, md5=cap.msprobe_md5, no_data=cap.content == "stats")
    except (OSError, _adump.Error) as e:
        cap.losses.append(Loss(d, "write_error", "msprobe export of %s failed (the CANN "
                               "files are kept): %s" % (d, e)))
        return
    # The CANN files (device directories) are now in dump.json and the .pt files.
    for e in os.listdir(d):
        p = os.path.join(d, e)
        if e.isdigit() and os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)


def _exporter(cap):
    """The capture's export thread: exports run beside training (the C exporter releases
    the GIL), one step at a time, in step order."""
    ex = cap.__dict__.get("_msprobe_thread")
    if ex is None:
        q = queue.Queue()

        def run():
            while True:
                step = q.get()
                if step is None:
                    return
                export_step(cap, step)

        t = threading.Thread(target=run, name="adump-msprobe-export", daemon=True)
        t.start()
        ex = cap._msprobe_thread = (t, q)
    return ex


def step_closed(cap, step, last=False):
    """Called when step @step's dumps are all written (each step's end, and the capture's
    with @last). The export waits while the rank is unknown (proc<pid>, renamed rank<R>
    later: dump.json names its dump_tensor_data by absolute path), then runs on the export
    thread; the capture's end waits for it."""
    if cap.format != "msprobe":
        return                  # CANN captures hold dump files only (msaccucmp, convert)
    write_tree(cap, step)
    pending = cap.__dict__.setdefault("_msprobe_pending", [])
    if step not in pending:
        pending.append(step)
    if cap.rank is not None:
        t, q = _exporter(cap)
        for s in pending:
            q.put(s)
        del pending[:]
    if last and "_msprobe_thread" in cap.__dict__:
        t, q = cap._msprobe_thread
        q.put(None)
        t.join()
        del cap._msprobe_thread
