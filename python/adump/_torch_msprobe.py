# SPDX-License-Identifier: Apache-2.0
"""msprobe's layout for adump.torch captures: the parts Python writes.

With format="msprobe" adump's pipeline writes the layout itself (the session's format
"msprobe": pipeline/out_msprobe.c): each step's rank directory gets dump.json (an entry per
dump, built by the workers from the dump's dfx_message and its statistics) and, with
content="tensor", dump_tensor_data/<data_name>.pt, the tensors' bytes written from the
staging buffers; nothing is saved on the training thread and nothing is converted after the
step. The session writes dump.json when the step's dumps are flushed. What only the capture
knows, the module tree (construct.json, msprobe's shape, from cap.tree) and with stack=True
the call stacks (stack.json), is written here when the step closes, once the rank directory
has its final name. A CANN capture made earlier is converted with `adump export --msprobe`."""
import json
import os
import stat
from json.encoder import encode_basestring_ascii as _encode_str

from ._read import Loss


def _rank_dir(cap, step):
    return os.path.join(cap.dump_path, "step%d" % step, cap.rank_dir)


def _indent1(obj):
    """json.dumps(@obj, indent=1), which runs json's pure-Python encoder: for a flat dict of
    strings and None (construct.json) the same text from the C encoder's pieces."""
    if not obj or not isinstance(obj, dict) or \
            not all(isinstance(k, str) and (v is None or isinstance(v, str))
                    for k, v in obj.items()):
        return json.dumps(obj, indent=1)
    # json.dumps of a str is this C function behind two Python calls (ensure_ascii).
    enc = _encode_str
    return "{\n" + ",\n".join(" %s: %s" % (enc(k), "null" if v is None else enc(v))
                               for k, v in obj.items()) + "\n}"


def _texts(cap):
    """The capture's kept tree files, by file name: [items, text, (dev, ino, path) of the
    file written with that text]. A training loop's tree is the same at every step, so the
    text made for the last step's file holds while the tree's items are equal (in order: the
    text follows it)."""
    return cap.__dict__.setdefault("_msprobe_texts", {})


def _link_last(path, kept):
    """@path as a new name of the last file written with the same text (no inode, no
    bytes: ext4's inode allocation is the dearest part of a step's files). Only that file:
    a name is never left pointing at anything else (a link, a file put in its place, or
    one of another size). Return: whether @path is done."""
    dev, ino, last = kept[2]
    try:
        os.link(last, path, follow_symlinks=False)
    except OSError:
        return False            # gone, moved with its directory, a full link count: write
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == (dev, ino) and \
                st.st_size == len(kept[1]):
            return True
        os.unlink(path)
    except OSError:
        pass
    return False


def _write_json(cap, path, obj):
    """@obj into @path whole: a new name of the last step's file when the text is the same
    (_link_last()), else written to path.tmp, never through a link planted there (the bytes
    through os.write: no text layer to set up for a file a step), and renamed."""
    name = os.path.basename(path)
    items = list(obj.items()) if isinstance(obj, dict) else None
    kept = _texts(cap).get(name)
    if kept is not None and (items is None or kept[0] != items):
        kept = None
    if kept is not None and _link_last(path, kept):
        return
    tmp = path + ".tmp"
    data = kept[1] if kept is not None else _indent1(obj).encode("utf-8")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            st = os.fstat(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        cap.losses.append(Loss(path, "write_error", "%s: %s" % (path, e.strerror)))
        return
    if items is not None:
        _texts(cap)[name] = [items, data, (st.st_dev, st.st_ino, path)]


def write_tree(cap, step):
    """construct.json of @step (nodes the capture dumped, with their parents) and stack.json
    (the call stacks with stack=True, else {}: msprobe's graph needs the file)."""
    d = _rank_dir(cap, step)
    if not os.path.isdir(d):
        return
    _write_json(cap, os.path.join(d, "construct.json"), cap.tree.steps.get(step) or {})
    _write_json(cap, os.path.join(d, "stack.json"),
                cap.tree.stack_json(step) if getattr(cap, "stack", False) else {})


def step_closed(cap, step, last=False):
    """Called when step @step's dumps are all written (each step's end, and the capture's
    with @last), after the rank directory got its final name: the step's tree files."""
    if cap.format != "msprobe":
        return                  # CANN captures hold dump files only (msaccucmp, convert)
    write_tree(cap, step)


def renamed(cap, src, dst):
    """The rank directory @src became @dst (proc<pid> -> rank<R>): dump.json names its
    dump_tensor_data by absolute path (msprobe's dump_data_dir), which moved with it."""
    if cap.format != "msprobe":
        return
    path = os.path.join(dst, "dump.json")
    old = json.dumps(os.path.join(os.path.realpath(src), "dump_tensor_data"))
    new = json.dumps(os.path.join(os.path.realpath(dst), "dump_tensor_data"))
    try:
        with open(path) as f:
            text = f.read()
        if old not in text:
            return
        with open(path + ".tmp", "w") as f:
            f.write(text.replace(old, new, 1))
        os.replace(path + ".tmp", path)
    except FileNotFoundError:
        return
    except OSError as e:
        cap.losses.append(Loss(path, "write_error", "%s: %s" % (path, e.strerror)))
