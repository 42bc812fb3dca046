# SPDX-License-Identifier: Apache-2.0
"""msprobe's PyTorch layout read as dumps, without torch: <rank dir>/dump.json, each data
entry one dump whose inputs are its input_args (flattened), input_kwargs, then parameters (a
backward entry: its input), and whose outputs are its output or its parameters_grad (in the
module's parameter order); tensors only, as `adump compare` reads them. Each tensor's bytes
are located in dump_tensor_data/<data_name>.pt by the C reader (_adump.pt_read) and read
when first used."""

import errno
import json
import os
import stat

import numpy as np

from . import _adump

DUMP_JSON = "dump.json"
TENSOR_DIR = "dump_tensor_data"

_TORCH_DT = {
    "torch.float32": "DT_FLOAT", "torch.float": "DT_FLOAT", "torch.float16": "DT_FLOAT16",
    "torch.half": "DT_FLOAT16", "torch.bfloat16": "DT_BF16", "torch.float64": "DT_DOUBLE",
    "torch.double": "DT_DOUBLE", "torch.int8": "DT_INT8", "torch.uint8": "DT_UINT8",
    "torch.int16": "DT_INT16", "torch.int32": "DT_INT32", "torch.int": "DT_INT32",
    "torch.int64": "DT_INT64", "torch.long": "DT_INT64", "torch.bool": "DT_BOOL",
    "torch.complex64": "DT_COMPLEX64", "torch.complex128": "DT_COMPLEX128",
}
_DESCR = {"DT_FLOAT": "<f4", "DT_FLOAT16": "<f2", "DT_BF16": None, "DT_DOUBLE": "<f8",
          "DT_INT8": "|i1", "DT_UINT8": "|u1", "DT_INT16": "<i2", "DT_INT32": "<i4",
          "DT_INT64": "<i8", "DT_BOOL": "|b1", "DT_COMPLEX64": "<c8", "DT_COMPLEX128": "<c16"}


def dtype_code(torch_name):
    """DumpData dtype number of a torch dtype name ("torch.float32"), -1 if unknown."""
    name = _TORCH_DT.get(torch_name) if isinstance(torch_name, str) else None
    return getattr(_adump, name, -1) if name else -1


def descr_of(code):
    name = _adump.dtype_name(code) if code >= 0 else None
    return _DESCR.get(name)


def is_rank_dir(path):
    return os.path.isfile(os.path.join(path, DUMP_JSON))


def _is_tensor(v):
    return isinstance(v, dict) and v.get("type") == "torch.Tensor"


def _values(v, label, out):
    """Tensors of @v, nested lists flattened depth first: (label, tensor dict)."""
    if isinstance(v, list):
        for i, item in enumerate(v):
            _values(item, "%s.%d" % (label, i), out)
    elif _is_tensor(v):
        out.append((label, v))


def _group(entry, key, prefix, out):
    v = entry.get(key)
    if isinstance(v, list):
        for i, item in enumerate(v):
            _values(item, "%s.%d" % (prefix, i), out)
    elif isinstance(v, dict) and not _is_tensor(v):
        for name, item in v.items():
            _values(item, "%s.%s" % (prefix, name), out)
    elif v is not None:
        _values(v, prefix, out)


def _param_order(data, name):
    cut = name.find(".parameters_grad")
    head = name[:cut] + ".forward."
    for other, entry in data.items():
        if other.startswith(head) and isinstance(entry, dict) and \
                isinstance(entry.get("parameters"), dict):
            return list(entry["parameters"])
    return []


def entry_tensors(data, name, entry):
    """([(label, tensor dict)] inputs, [...] outputs) of one dump.json entry."""
    ins, outs = [], []
    if ".parameters_grad" in name:
        order = [p for p in _param_order(data, name) if p in entry]
        order += [p for p in entry if p not in order]
        for p in order:
            _values(entry[p], "parameters_grad.%s" % p, outs)
    elif any(k in entry for k in ("input_args", "input_kwargs", "parameters")):
        _group(entry, "input_args", "input", ins)
        _group(entry, "input_kwargs", "input.kwargs", ins)
        _group(entry, "parameters", "parameters", ins)
        _group(entry, "output", "output", outs)
    else:
        _group(entry, "input", "input", ins)
        _group(entry, "output", "output", outs)
    return ins, outs


def op_type(name):
    """A module's class (Module.<path>.<Class>.forward.0) or an API's name
    (Functional.linear.0.forward): the field before the direction or call number."""
    fields = name.split(".")
    for i, f in enumerate(fields):
        if f in ("forward", "backward", "parameters_grad") and i:
            j = i - 1
            if fields[j].isdigit() and j:
                j -= 1
            return fields[j]
    return fields[0]


def load(rank_dir):
    """The parsed dump.json of @rank_dir (a dict). Raises adump.CorruptError naming the file
    for one that is not msprobe's."""
    path = os.path.join(rank_dir, DUMP_JSON)
    with open(path, "rb") as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise _adump.CorruptError("%s: not JSON (%s): a cut or damaged dump.json" %
                                  (path, e)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        raise _adump.CorruptError("%s: no \"data\" object: not msprobe's dump.json" % path)
    return doc


def _shape(t, where):
    """A tensor entry's shape as a tuple of sizes (none given: a scalar's ()). Raises
    adump.CorruptError naming @where for one that is not a list of sizes."""
    shape = t.get("shape")
    if shape is None:
        return ()
    if isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and
                                       d >= 0 for d in shape):
        return tuple(shape)
    raise _adump.CorruptError("%s: shape %.80r is not a list of sizes" % (where, shape))


def _data_name(t, where):
    """A tensor entry's data_name (None without one). Raises adump.CorruptError naming
    @where for one that is not a file name."""
    name = t.get("data_name")
    if name is None or name == "":
        return None
    # msprobe's data names are one file name of dump_tensor_data/: a path ("../x.pt", "/x",
    # "a/b.pt") would read outside the capture, whoever wrote the dump.json.
    if (isinstance(name, str) and "/" not in name and "\0" not in name
            and name not in (".", "..")):
        return name
    raise _adump.CorruptError("%s: data_name %.80r is not a file name of %s/" % (
        where, name, TENSOR_DIR))


def _open_pt(rank_dir, data_name, where):
    """A descriptor of <rank_dir>/dump_tensor_data/<data_name> (one file name, _data_name()),
    opened a component at a time from the rank directory, neither dump_tensor_data nor the
    .pt through a symbolic link (O_NOFOLLOW): a link there, even one swapped in after a
    check, is refused with adump.CorruptError naming @where, never followed out of the
    capture; what is not a regular file (a FIFO: never waited on) likewise. The caller
    reads through the descriptor (pt_read(fd=), FileRange(fd=)) and closes it."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW
    rank_fd = os.open(rank_dir, os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECTORY)
    try:
        try:
            dir_fd = os.open(TENSOR_DIR, flags | os.O_DIRECTORY, dir_fd=rank_fd)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _adump.CorruptError("%s: %s/ is not a directory of the capture (a "
                                          "symbolic link or a file): refused" % (
                                              where, TENSOR_DIR)) from None
            raise
    finally:
        os.close(rank_fd)
    try:
        fd = os.open(data_name, flags | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _adump.CorruptError("%s: %s/%s is a symbolic link: refused (it could lead "
                                      "out of the capture)" % (where, TENSOR_DIR, data_name)
                                      ) from None
        raise
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _adump.CorruptError("%s: %s/%s is not a regular file (a FIFO, socket, device "
                                  "or directory): refused" % (where, TENSOR_DIR, data_name))
    return fd


def _read_pt(rank_dir, data_name, where, checked=False, data=False):
    """(pt_read's dict, FileRange of the tensor's bytes or None) of a .pt of @rank_dir, read
    through one descriptor (_open_pt()): what is checked is what is read."""
    pt = os.path.join(rank_dir, TENSOR_DIR, data_name)
    fd = _open_pt(rank_dir, data_name, where)
    try:
        loc = _adump.pt_read(pt, checked=checked, fd=fd)
        raw = None
        if data and loc["bytes"]:
            raw = _adump.FileRange(pt, loc["offset"], loc["bytes"], fd)
        return loc, raw
    finally:
        os.close(fd)


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def dumps(rank_dir, make_dump, bf16):
    """(order, Dump) of every entry of @rank_dir's dump.json, built by @make_dump(header,
    path, container, load)."""
    doc = load(rank_dir)
    data = doc["data"]
    json_path = os.path.join(rank_dir, DUMP_JSON)
    tensor_dir = os.path.join(rank_dir, TENSOR_DIR)
    for order, (name, entry) in enumerate(data.items()):
        if not isinstance(entry, dict):
            continue
        ins, outs = entry_tensors(data, name, entry)
        tensors, stats = [], []
        for kind, group in ((0, ins), (1, outs)):
            for index, (label, t) in enumerate(group):
                where = "%s: %s %s" % (json_path, name, label)
                code = dtype_code(t.get("dtype"))
                shape = _shape(t, where)
                bits = _adump.dtype_bits(code) if code >= 0 else 0
                nbytes = (_numel(shape) * bits + 7) // 8
                tensors.append((kind, index, code, 2, 0, shape, shape, 0, nbytes, 0,
                                descr_of(code)))
                row = {k: t.get(k) for k in ("Max", "Min", "Mean", "Norm", "requires_grad",
                                             "md5", "dtype")}
                row["data_name"] = _data_name(t, where)
                row["arg"] = label
                stats.append(row)
        header = {"op_name": name, "dump_time": order, "version": "", "dfx_message": "",
                  "attrs": [], "file_bytes": 0, "tensors": tensors, "stats": stats}

        def loader(h, stats=stats):
            from ._read import _as_array, _info
            arrays = []
            for t, row in zip(h["tensors"], stats):
                info = _info(t)
                if not row.get("data_name"):
                    arrays.append(None)         # a statistics dump: no .pt
                    continue
                pt = os.path.join(tensor_dir, row["data_name"])
                loc, data = _read_pt(rank_dir, row["data_name"], json_path, data=True)
                if loc["dtype_code"] != info.dtype_code or loc["shape"] != info.shape:
                    raise _adump.CorruptError(
                        "%s: dump.json says %s %s, the file holds %s %s" % (
                            pt, row.get("dtype"), list(info.shape),
                            _adump.dtype_name(loc["dtype_code"]), list(loc["shape"])))
                if data is not None:
                    raw = np.frombuffer(data, dtype=np.uint8)
                else:
                    raw = np.empty(0, np.uint8)
                arrays.append(_as_array(raw, info, t[10], bf16))
            return arrays

        d = make_dump(header, "%s:%s" % (json_path, name), "msprobe", loader)
        d.op_type, d.task_id, d.stream_id = op_type(name), None, None
        yield order, d


def verify(rank_dir):
    """(checked .pt count, [(path, message)]) for @rank_dir: dump.json parses; every
    data_name it lists is in dump_tensor_data/, whole (zip CRCs) and holds the dtype and
    shape dump.json gives."""
    problems = []
    try:
        doc = load(rank_dir)
    except (OSError, _adump.Error) as e:
        return 0, [(os.path.join(rank_dir, DUMP_JSON), str(e))]
    checked = 0
    tensor_dir = os.path.join(rank_dir, TENSOR_DIR)
    data = doc["data"]
    for name, entry in data.items():
        if not isinstance(entry, dict):
            continue
        ins, outs = entry_tensors(data, name, entry)
        for label, t in ins + outs:
            where = "%s: %s %s" % (os.path.join(rank_dir, DUMP_JSON), name, label)
            try:
                data_name = _data_name(t, where)
                shape = _shape(t, where)
            except _adump.Error as e:
                problems.append((os.path.join(rank_dir, DUMP_JSON), str(e)))
                continue
            if not data_name:
                continue
            checked += 1
            pt = os.path.join(tensor_dir, data_name)
            try:
                loc, _ = _read_pt(rank_dir, data_name, where, checked=True)
            except (OSError, _adump.Error) as e:
                problems.append((pt, "%s %s: %s" % (name, label, e)))
                continue
            code = dtype_code(t.get("dtype"))
            if (code >= 0 and loc["dtype_code"] != code) or loc["shape"] != shape:
                problems.append((pt, "%s %s: dump.json says %s %s, the file holds %s %s" % (
                    name, label, t.get("dtype"), list(shape),
                    _adump.dtype_name(loc["dtype_code"]), list(loc["shape"]))))
    return checked, problems
