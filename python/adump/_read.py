# SPDX-License-Identifier: Apache-2.0
"""Reading dumps: adump.open, adump.walk, adump.verify over the C reader.

Tensors of plain files and packed captures are numpy views of a read-only memory map of the
file (or segment): nothing is copied. Tensors of .lz4 files are decoded into memory.
bfloat16 tensors come back as float32 (as msaccucmp converts them) unless bf16="raw", which
gives their bits as uint16."""
import builtins
import json
import os
from collections import namedtuple

import numpy as np

from . import _adump

INPUT, OUTPUT, BUFFER, WORKSPACE = 0, 1, 2, 3
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_PACKED_ENTRY = 0
_NOT_DUMPS = (".csv", ".part", ".failed", ".npy", ".json", ".jsonl", ".txt", ".log",
              ".pt")             # msprobe layout: dump_tensor_data/*.pt (adump export)
LOSS_LOG = "adump-losses.jsonl"

TensorInfo = namedtuple("TensorInfo", "kind index dtype format sub_format shape orig_shape "
                        "address bytes offset")
TensorInfo.__doc__ = "What a dump's header says about one tensor (dtype: DumpData number)."


def _storage_dtype(info, descr):
    """numpy dtype the payload bytes are stored as (bfloat16: raw uint16)."""
    if info.dtype == _adump.DT_BF16:
        return np.dtype("<u2")
    if descr is None:
        return None
    return np.dtype(descr)


def _as_array(raw, info, descr, bf16):
    """The numpy array of a tensor whose bytes are the uint8 array @raw."""
    dt = _storage_dtype(info, descr)
    if dt is None or raw.size % dt.itemsize:
        return raw
    arr = raw.view(dt)
    count = 1
    for d in info.shape:
        count *= d
    if count == arr.size:
        arr = arr.reshape(info.shape)
    if info.dtype == _adump.DT_BF16 and bf16 != "raw":
        arr = (arr.astype("<u4") << 16).view("<f4")
    return arr


def _split_name(name):
    """(op_type, task_id, stream_id) from a CANN dump name, as msaccucmp reads it
    (adump_reader_name_parse()): <op_type>.<op_name>.<task_id>[.<stream_id>].<timestamp>[...]
    [.lz4]. Without a stream id, stream_id is None; both are None for other names."""
    fields = _adump.parse_name(name)
    if fields is None:
        base = os.path.basename(name)
        return (base[:-4] if base.endswith(".lz4") else base).split(".")[0], None, None
    return fields[0], fields[2], fields[3]


class Dump:
    """One dump file: its header and its tensors.

    Attributes: path, op_type, op_name, timestamp (dump time, µs), task_id, stream_id,
    attrs (dict), dfx_message, version, container ("file", "lz4" or "packed"),
    inputs, outputs, buffers, workspaces (lists of numpy arrays) and tensors (TensorInfo,
    in file order)."""

    def __init__(self, header, path, container, arrays):
        self.path = path
        self.container = container
        self.op_type, self.task_id, self.stream_id = _split_name(path)
        self.op_name = header["op_name"]
        self.timestamp = header["dump_time"]
        self.version = header["version"]
        self.dfx_message = header["dfx_message"]
        self.attrs = dict(header["attrs"])
        self.file_bytes = header["file_bytes"]
        self.tensors = [TensorInfo(*t[:10]) for t in header["tensors"]]
        by_kind = ([], [], [], [])
        for info, arr in zip(self.tensors, arrays):
            by_kind[info.kind].append(arr)
        self.inputs, self.outputs, self.buffers, self.workspaces = by_kind

    def __repr__(self):
        return "<adump.Dump %s %s: %d inputs, %d outputs (%s)>" % (
            self.op_type, self.op_name, len(self.inputs), len(self.outputs), self.path)


def _mapped(header, path, offset, length, bf16):
    """Arrays over a read-only map of @length bytes of @path at @offset."""
    if length == 0:
        mm = np.zeros(0, np.uint8)
    else:
        mm = np.memmap(path, dtype=np.uint8, mode="r", offset=offset, shape=(length,))
    arrays = []
    for t in header["tensors"]:
        info = TensorInfo(*t[:10])
        raw = mm[info.offset:info.offset + info.bytes]
        arrays.append(_as_array(raw, info, t[10], bf16))
    return arrays


def _decoded(reader, header, bf16):
    arrays = []
    for i, t in enumerate(header["tensors"]):
        info = TensorInfo(*t[:10])
        raw = np.empty(info.bytes, np.uint8)
        if info.bytes:
            reader.read_into(i, raw)
        arrays.append(_as_array(raw, info, t[10], bf16))
    return arrays


def _is_lz4(path):
    if path.endswith(".lz4"):
        return True
    with builtins.open(path, "rb") as f:
        return f.read(4) == _LZ4_MAGIC


def open(path, bf16="float32"):
    """Open one dump file (plain or .lz4). Raises OSError, adump.CorruptError,
    adump.IncompleteError ... with adump's message."""
    path = os.fspath(path)
    if bf16 not in ("float32", "raw"):
        raise ValueError("bf16 must be 'float32' or 'raw'")
    reader = _adump.Reader()
    try:
        header = reader.open(path)
        if _is_lz4(path):
            return Dump(header, path, "lz4", _decoded(reader, header, bf16))
        return Dump(header, path, "file", _mapped(header, path, 0, header["file_bytes"], bf16))
    finally:
        reader.close()


def _packed_entries(packed_dir):
    """(Packed, entry tuple) of every index line of a packed directory."""
    packed = _adump.Packed(packed_dir)
    try:
        while True:
            e = packed.next()
            if e is None:
                return
            yield packed, e
    finally:
        packed.close()


def _open_entry(reader, packed, e, bf16, checked=False):
    status, name, segment, offset, length, crc = e[:6]
    header = reader.open_packed(packed, name, segment, offset, length, crc, checked)
    seg_path = os.path.join(packed.dir(), segment)
    try:
        arrays = _mapped(header, seg_path, offset, length, bf16)
    finally:
        reader.close()
    return Dump(header, os.path.join(packed.dir(), name), "packed", arrays)


def _is_packed_dir(dirpath, files):
    return any(_adump.packed_file_kind(f) == 1 for f in files)


def _tree(top):
    """(kind, path, dirpath) for the files below @top, sorted: kind "packed" for a packed
    directory, "file" for the others."""
    top = os.fspath(top)
    if os.path.isfile(top):
        yield "file", top
        return
    if not os.path.isdir(top):
        raise FileNotFoundError(2, os.strerror(2), top)
    for dirpath, dirs, files in os.walk(top):
        dirs.sort()
        if _is_packed_dir(dirpath, files):
            yield "packed", dirpath
            continue
        for f in sorted(files):
            yield "file", os.path.join(dirpath, f)


def walk(top, bf16="float32"):
    """Yield every dump below @top: plain files, .lz4 files and the entries of packed
    captures, in name order. Statistics CSVs, .part leftovers and .failed files are not
    dumps and are skipped (adump.verify reports the last two). A file that is not a valid dump
    raises (adump.CorruptError ...)."""
    reader = _adump.Reader()
    for kind, path in _tree(top):
        if kind == "packed":
            for packed, e in _packed_entries(path):
                if e[0] == _PACKED_ENTRY:
                    yield _open_entry(reader, packed, e, bf16)
        elif not path.endswith(_NOT_DUMPS) and not _adump.packed_file_kind(path):
            yield open(path, bf16)


class VerifyReport:
    """What adump.verify found: files (dumps checked), problems [(kind, path, message)] with
    kind "bad", "part" or "failed", warnings [(kind, path, message)]; ok is True when there
    are no problems."""

    def __init__(self):
        self.files = 0
        self.problems = []
        self.warnings = []

    @property
    def ok(self):
        return not self.problems

    def __bool__(self):
        return self.ok

    def __repr__(self):
        return "<adump.VerifyReport %d files, %d problems>" % (self.files, len(self.problems))


def _check_shapes(header):
    for t in header["tensors"]:
        info = TensorInfo(*t[:10])
        if info.kind not in (INPUT, OUTPUT):
            continue
        if _adump.dtype_name(info.dtype) is None:
            return "%d %d: unknown dtype %d" % (info.kind, info.index, info.dtype)
        bits = _adump.dtype_bits(info.dtype)
        if not bits:
            continue
        count = 1
        for d in info.shape:
            count *= d
        if (count * bits + 7) // 8 != info.bytes:
            return "%s %d: shape %s x %s is not %d bytes" % (
                "input" if info.kind == INPUT else "output", info.index, info.shape,
                _adump.dtype_name(info.dtype), info.bytes)
    return None


def verify(top):
    """Check every dump below @top as `adump verify` does: the layout adds up, the header
    parses, shapes match sizes, .lz4 checksums and packed CRC32Cs match; .part and .failed
    files are problems. Returns a VerifyReport (never raises for a bad dump)."""
    rep = VerifyReport()
    reader = _adump.Reader()

    def check(header, name):
        msg = _check_shapes(header)
        if msg is None:
            reader.check()
        else:
            rep.problems.append(("bad", name, msg))

    for kind, path in _tree(top):
        if kind == "packed":
            for packed, e in _packed_entries(path):
                if e[0] != _PACKED_ENTRY:
                    where = "%s line %d: %s" % (e[6], e[7], e[8])
                    (rep.warnings if e[0] == 1 else rep.problems).append(
                        ("index", e[6], where))
                    continue
                rep.files += 1
                name = os.path.join(path, e[1])
                try:
                    check(reader.open_packed(packed, *e[1:6], True), name)
                except (_adump.Error, OSError) as exc:
                    rep.problems.append(("bad", name, str(exc)))
                finally:
                    reader.close()
            continue
        if path.endswith(".part"):
            rep.problems.append(("part", path, "leftover .part file (a write that never "
                                 "finished)"))
        elif path.endswith(".failed"):
            rep.problems.append(("failed", path, "failed dump (write error or dropped data)"))
        elif path.endswith((".csv", ".json")):
            continue                    # statistics; msprobe layout's dump/construct.json
        elif path.endswith(".pt"):
            rep.files += 1              # msprobe layout: a torch zip, checked whole
            try:
                _adump.pt_check(path)
            except (_adump.Error, OSError) as exc:
                rep.problems.append(("bad", path, str(exc)))
        elif os.path.basename(path) == LOSS_LOG:
            # One line per tensor the capture lost, each a problem (as `adump verify` does).
            with builtins.open(path, "rb") as f:
                for number, line in enumerate(f, 1):
                    try:
                        e = json.loads(line)
                        rep.problems.append(("lost", path, "%s: %s %s of %s: %s" % (
                            e["file"], e["kind"], e["index"], e["op_name"], e["cause"])))
                    except (ValueError, KeyError, TypeError):
                        rep.problems.append(("bad", path, "line %d: not a loss record" % number))
        else:
            rep.files += 1
            try:
                check(reader.open(path), path)
            except (_adump.Error, OSError) as exc:
                rep.problems.append(("bad", path, str(exc)))
            finally:
                reader.close()
    return rep
