# SPDX-License-Identifier: Apache-2.0
"""Reading dumps: adump.open, adump.walk, adump.verify over the C reader.

Tensors of plain files and packed captures are read-only numpy views of the dump's bytes,
read (pread, not mapped: a file that shrinks under a map kills the interpreter with SIGBUS,
a short read is an exception) into memory of their own when a Dump's tensors are first used;
no file descriptor is held (_adump.FileRange), so walking any number of dumps keeps no file
open; Dump.close() (or `with` on the Dump) lets the bytes go before the Dump does. Tensors of
.lz4 files are decoded into memory. bfloat16 tensors come back as float32 (as msaccucmp
converts them) unless bf16="raw", which gives their bits as uint16. Statistics captures
(content="stats": one <dump name>.csv per dump) read back as Dumps whose .stats holds the
rows."""
import builtins
import csv
import json
import os
import re
import stat
import warnings
from collections import namedtuple
from typing import Iterator, Union

PathLike = Union[str, "os.PathLike[str]"]

import numpy as np

from . import _adump
from . import _msprobe_read

INPUT, OUTPUT, BUFFER, WORKSPACE = 0, 1, 2, 3
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_PACKED_ENTRY = 0
_NOT_DUMPS = (".csv", ".part", ".failed", ".npy", ".json", ".jsonl", ".txt", ".log",
              ".pt",             # msprobe layout: dump_tensor_data/*.pt (adump export)
              ".html")           # adump report's page of a statistics capture, inside it
LOSS_LOG = "adump-losses.jsonl"

TensorInfo = namedtuple("TensorInfo", "kind index dtype format sub_format shape orig_shape "
                        "address bytes offset dtype_code")
TensorInfo.__doc__ = ("What a dump's header says about one tensor: dtype by name (\"float32\", "
                      "\"bfloat16\", \"int8\" ...), dtype_code the DumpData number.")

# DumpData dtype names as numpy spells them; the others lower-case without DT_.
_NUMPY_NAMES = {"DT_FLOAT": "float32", "DT_FLOAT16": "float16", "DT_DOUBLE": "float64",
                "DT_BF16": "bfloat16"}


def dtype_name(code):
    """The name of a DumpData dtype number: "float32", "bfloat16", "int64", "complex64" ..."""
    name = _adump.dtype_name(code)
    if name is None:
        return "unknown(%d)" % code
    return _NUMPY_NAMES.get(name, name[3:].lower() if name.startswith("DT_") else name)


def _info(t):
    """TensorInfo of a header's tensor tuple."""
    return TensorInfo(t[0], t[1], dtype_name(t[2]), *t[3:10], t[2])

Loss = namedtuple("Loss", "name cause message")
Loss.__doc__ = ("A dump a capture lost: name (the dump's name), cause (as the loss log spells "
                "it: \"changed_in_place\", \"write_error\" ...), message (what happened).")


def _storage_dtype(info, descr):
    """numpy dtype the payload bytes are stored as (bfloat16: raw uint16)."""
    if info.dtype_code == _adump.DT_BF16:
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
    if info.dtype_code == _adump.DT_BF16 and bf16 != "raw":
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


_STEP_RE = re.compile(r"step(\d+)$")
_RANK_RE = re.compile(r"rank(\d+)$")


def _step_rank(path):
    """(step, rank) from the directories of a path (adump.torch writes
    <dump_path>/step<N>/rank<R>/<device>/...); None where absent."""
    step = rank = None
    for part in reversed(os.path.dirname(path).split(os.sep)[-4:]):
        m = _RANK_RE.match(part)
        if m and rank is None:
            rank = int(m.group(1))
            continue
        m = _STEP_RE.match(part)
        if m and step is None:
            step = int(m.group(1))
    return step, rank


class Dump:
    """One dump: its header and its tensors.

    Attributes: path, op_type, op_name, timestamp (dump time, µs), task_id, stream_id,
    step and rank (from adump.torch's step<N>/rank<R> directories, else None), attrs (dict),
    dfx_message, version, container ("file", "lz4", "packed" or "stats"), tensors
    (TensorInfo, in file order), stats (statistics captures: one dict per CSV row, else
    None); inputs, outputs, buffers, workspaces: lists of numpy arrays, read on
    first use. close() lets them go; a Dump is a context manager."""

    def __init__(self, header, path, container, load):
        self.path = path
        self.container = container
        self.op_type, self.task_id, self.stream_id = _split_name(path)
        self.step, self.rank = _step_rank(path)
        self.op_name = header["op_name"]
        self.timestamp = header["dump_time"]
        self.version = header["version"]
        self.dfx_message = header["dfx_message"]
        self.attrs = dict(header["attrs"])
        self.file_bytes = header["file_bytes"]
        self.tensors = [_info(t) for t in header["tensors"]]
        self.stats = header.get("stats")
        self._header = header
        self._load = load
        self._by_kind = None

    def _arrays(self):
        if self._by_kind is None:
            if self._load is None:
                raise _adump.ClosedError("dump %s is closed" % self.path)
            by_kind = ([], [], [], [])
            for info, arr in zip(self.tensors, self._load(self._header)):
                by_kind[info.kind].append(arr)
            self._by_kind = by_kind
        return self._by_kind

    inputs = property(lambda self: self._arrays()[INPUT])
    outputs = property(lambda self: self._arrays()[OUTPUT])
    buffers = property(lambda self: self._arrays()[BUFFER])
    workspaces = property(lambda self: self._arrays()[WORKSPACE])

    def close(self):
        """Drop this Dump's arrays (their memory goes once no array of it is left elsewhere)."""
        self._by_kind = None
        self._load = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<adump.Dump %s %s: %d tensors (%s)>" % (
            self.op_type, self.op_name, len(self.tensors), self.path)


def _mapped(header, path, offset, length, bf16):
    """Arrays over @length bytes of @path at @offset, read into memory (no fd kept)."""
    mm = np.frombuffer(_adump.FileRange(path, offset, length), dtype=np.uint8)
    arrays = []
    for t in header["tensors"]:
        info = _info(t)
        raw = mm[info.offset:info.offset + info.bytes]
        arrays.append(_as_array(raw, info, t[10], bf16))
    return arrays


# Bytes of an .lz4 tensor decoded per read_into.
_DECODE_STEP = 4 << 20


def _decode_tensor(reader, i, nbytes):
    """Tensor @i of the open .lz4 dump as a uint8 array, decoded a step at a time into a
    buffer that grows with what decodes. The sizes in the header are only the frame's claim
    (up to 256 times its compressed bytes, all lz4 can encode): a frame that holds less fails
    at its first missing byte, having taken memory for the bytes it held, not for its claim."""
    buf = bytearray()
    while len(buf) < nbytes:
        done = len(buf)
        buf += bytes(min(_DECODE_STEP, nbytes - done))
        with memoryview(buf) as view, view[done:] as part:
            reader.read_into(i, part, done)
    return np.frombuffer(buf, np.uint8)


def _decoded(path, bf16):
    """Loader of an .lz4 dump: opened again and decoded when its tensors are used."""
    def load(_header):
        reader = _adump.Reader()
        try:
            header = reader.open(path)
            arrays = []
            for i, t in enumerate(header["tensors"]):
                info = _info(t)
                raw = _decode_tensor(reader, i, info.bytes)
                arrays.append(_as_array(raw, info, t[10], bf16))
            return arrays
        finally:
            reader.close()
    return load


def _is_lz4(path):
    if path.endswith(".lz4"):
        return True
    with builtins.open(path, "rb") as f:
        return f.read(4) == _LZ4_MAGIC


def _number(text):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _stats_name(path):
    """Fields of a statistics CSV's name (<dump name>.csv), or None for other CSVs."""
    base = os.path.basename(path)
    if not base.endswith(".csv"):
        return None
    return _adump.parse_name(base[:-4])


def _open_stats(path):
    """A statistics dump (<dump name>.csv): header fields from the name, rows as dicts."""
    fields = _stats_name(path)
    if fields is None:
        raise _adump.CorruptError("%s: not a statistics dump (its name is not a dump's "
                                  "name followed by .csv)" % path)
    try:
        with builtins.open(path, newline="") as f:
            rows = [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]
    except (ValueError, TypeError, csv.Error) as e:
        # Bytes that are not UTF-8 text, a row longer than the header (a list value).
        raise _adump.CorruptError("%s: not a statistics dump (%s)" % (path, e)) from None
    tensors = []
    for row in rows:
        try:
            kind = {"Input": INPUT, "Output": OUTPUT}[row["Input/Output"]]
            # CANN writes a scalar's (0-d tensor's) shape as "-" (pipeline/stats.c too).
            text = str(row["Shape"])
            shape = () if text == "-" else tuple(int(d) for d in text.split("x") if d != "")
            dt = row["Data Type"]
            code = next((c for c in range(64) if _adump.dtype_name(c) == dt), -1)
            tensors.append((kind, row["Index"], code, 0, 0, shape, shape, 0,
                            row["Data Size"], 0, None))
            row["Data Type"] = dtype_name(code) if code >= 0 else dt
        except (KeyError, ValueError, TypeError) as e:
            raise _adump.CorruptError("%s: not a statistics dump (row %r: %s)" %
                                      (path, row, e)) from None
    header = {"op_name": fields[1], "dump_time": fields[4], "version": "", "dfx_message": "",
              "attrs": [], "file_bytes": os.path.getsize(path), "tensors": tensors,
              "stats": rows}
    return Dump(header, path, "stats", lambda h: [None] * len(tensors))


def open(path: PathLike, bf16: str = "float32") -> "Dump":
    """Open one dump file (plain, .lz4, or a statistics capture's .csv). Raises OSError,
    adump.CorruptError, adump.IncompleteError ... with adump's message. The tensors are
    read when first used."""
    path = os.fspath(path)
    if bf16 not in ("float32", "raw"):
        raise _adump.ConfigError("bf16 must be 'float32' or 'raw', got %r" % (bf16,))
    if path.endswith(".csv"):
        return _open_stats(path)
    reader = _adump.Reader()
    try:
        header = reader.open(path)
        if _is_lz4(path):
            return Dump(header, path, "lz4", _decoded(path, bf16))
    finally:
        reader.close()
    return Dump(header, path, "file",
                lambda h: _mapped(h, path, 0, h["file_bytes"], bf16))


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
    reader.close()
    seg_path = os.path.join(packed.dir(), segment)
    return Dump(header, os.path.join(packed.dir(), name), "packed",
                lambda h: _mapped(h, seg_path, offset, length, bf16))


def _is_packed_dir(dirpath, files):
    return any(_adump.packed_file_kind(f) == 1 for f in files)


_JOURNAL_PREFIX = "adump-journal-"


def _irregular(dirpath, names):
    """The paths of @names in @dirpath that are not regular files or directories themselves
    (a symbolic link, to anything, a FIFO, a socket, a device): never followed nor read."""
    out = []
    for n in names:
        path = os.path.join(dirpath, n)
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            out.append(path)
    return out


_WINDOW_DIR = re.compile(r"window-[0-9]+(\.[0-9]+)?\Z")


def _tree(top, irregular=False, windows=True):
    """(kind, path) for the files below @top, sorted: kind "packed" for a packed
    directory, "file" for the others. A link or FIFO inside @top (issue 30) is never
    followed: yielded as kind "irregular" when @irregular, else passed by with a warning;
    @top itself may be a link. windows=False passes by the flight recorder's windows below
    @top (window-<step>[.<n>]: the tensors of steps whose statistics the capture holds);
    @top itself may be one."""
    top = os.fspath(top)
    if os.path.isfile(top):
        if os.path.basename(top) == _msprobe_read.DUMP_JSON:
            yield "msprobe", os.path.dirname(top) or "."
        else:
            yield "file", top
        return
    if not os.path.isdir(top):
        raise FileNotFoundError(2, os.strerror(2), top)
    for dirpath, dirs, files in os.walk(top, followlinks=False):
        odd = _irregular(dirpath, dirs + files)
        if odd:
            names = set(os.path.basename(p) for p in odd)
            dirs[:] = [d for d in dirs if d not in names]
            files = [f for f in files if f not in names]
            for path in sorted(odd):
                if irregular:
                    yield "irregular", path
                else:
                    warnings.warn("%s: a symbolic link or FIFO inside the capture: not read"
                                  % path, stacklevel=3)
        if not windows:
            dirs[:] = [d for d in dirs if not _WINDOW_DIR.match(d)]
        dirs.sort()
        if _is_packed_dir(dirpath, files):
            yield "packed", dirpath
            continue
        if _msprobe_read.DUMP_JSON in files:
            # msprobe's layout: the rank directory is read through its dump.json
            dirs[:] = [d for d in dirs if d != _msprobe_read.TENSOR_DIR]
            yield "msprobe", dirpath
            files = [f for f in files if f not in (_msprobe_read.DUMP_JSON, "stack.json",
                                                   "construct.json")]
        for f in sorted(files):
            yield "file", os.path.join(dirpath, f)


def _is_dump_file(path):
    if os.path.basename(path).startswith(_JOURNAL_PREFIX):
        return False                    # a hand-over journal (adump.verify reads it)
    if path.endswith(".csv"):
        return _stats_name(path) is not None
    return not path.endswith(_NOT_DUMPS) and not _adump.packed_file_kind(path)


def _time_key(path):
    """Execution order from the name alone (nothing opened): step, rank, dump time, task
    id; names that do not parse go last, by name."""
    base = os.path.basename(path)
    for suffix in (".lz4", ".csv"):
        if base.endswith(suffix):
            base = base[:-len(suffix)]
    fields = _adump.parse_name(base)
    step, rank = _step_rank(path)
    if fields is None:
        return (step if step is not None else -1, rank or 0, 1, 0, 0, path)
    return (step if step is not None else -1, rank or 0, 0, fields[4], fields[2], path)


def walk(top: PathLike, bf16: str = "float32", order: str = "time") -> Iterator["Dump"]:
    """Yield every dump below @top: plain files, .lz4 files, the entries of packed captures,
    statistics CSVs, and each data entry of msprobe's dump.json (msprobe's layout, written by
    msprobe or adump: container "msprobe", arrays read from dump_tensor_data/*.pt when used,
    None for a statistics dump; stats one dict per tensor from dump.json). The flight
    recorder's windows below @top (window-<step>) are passed by: their tensors are of steps
    whose statistics the capture holds; walk a window by naming it. order="time" (the default): in execution order (per step and
    rank of an adump.torch capture, then by dump time and task id, all from the names);
    order="name": directory by directory, in name order. .part leftovers, .failed files and
    other CSVs are not dumps and are skipped (adump.verify reports the first two). A file
    that is not a valid dump raises (adump.CorruptError ...). No file stays open between
    the dumps it yields."""
    if order not in ("time", "name"):
        raise _adump.ConfigError("order must be 'time' or 'name', got %r" % (order,))
    if order == "name":
        reader = _adump.Reader()
        for kind, path in _tree(top, windows=False):
            if kind == "packed":
                for packed, e in _packed_entries(path):
                    if e[0] == _PACKED_ENTRY:
                        yield _open_entry(reader, packed, e, bf16)
            elif kind == "msprobe":
                for _order, d in _msprobe_read.dumps(path, Dump, bf16):
                    yield d
            elif _is_dump_file(path):
                yield open(path, bf16)
        return
    items = []              # (key, path, packed dir or None, entry or None)
    for kind, path in _tree(top, windows=False):
        if kind == "msprobe":
            # dump.json order is execution order; the Dumps hold no file open.
            step, rank = _step_rank(os.path.join(path, _msprobe_read.DUMP_JSON))
            for order, d in _msprobe_read.dumps(path, Dump, bf16):
                items.append(((step if step is not None else -1, rank or 0, 0, order, 0,
                               d.path), d.path, "msprobe", d))
            continue
        if kind == "packed":
            for _packed, e in _packed_entries(path):
                if e[0] == _PACKED_ENTRY:
                    name = os.path.join(path, e[1])
                    items.append((_time_key(name), name, path, e))
        elif _is_dump_file(path):
            items.append((_time_key(path), path, None, None))
    items.sort(key=lambda i: i[0])
    reader = _adump.Reader()
    packed = None
    try:
        for _key, path, packed_dir, e in items:
            if packed_dir is None:
                yield open(path, bf16)
                continue
            if packed_dir == "msprobe":
                yield e
                continue
            if packed is None or packed.dir() != packed_dir:
                if packed is not None:
                    packed.close()
                packed = _adump.Packed(packed_dir)
            yield _open_entry(reader, packed, e, bf16)
    finally:
        if packed is not None:
            packed.close()


class VerifyReport:
    """What adump.verify found: files (dumps checked), problems [(kind, path, message)] with
    kind "bad", "part", "failed", "lost" (the capture's loss log), "missing" (a dump handed
    over and never written, its process gone: a hand-over journal says so) or "busy" (the
    same, its process still running), warnings [(kind, path, message)]; ok is True when there
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
        info = _info(t)
        code = info.dtype_code
        if info.kind not in (INPUT, OUTPUT):
            continue
        if _adump.dtype_name(code) is None:
            return "%d %d: unknown dtype %d" % (info.kind, info.index, code)
        bits = _adump.dtype_bits(code)
        if not bits:
            continue
        count = 1
        for d in info.shape:
            count *= d
        if (count * bits + 7) // 8 != info.bytes:
            return "%s %d: shape %s x %s is not %d bytes" % (
                "input" if info.kind == INPUT else "output", info.index, info.shape,
                _adump.dtype_name(code), info.bytes)
    return None


def verify(top: PathLike) -> "VerifyReport":
    """Check every dump below @top as `adump verify` does: the layout adds up, the header
    parses, shapes match sizes, .lz4 checksums and packed CRC32Cs match; msprobe's dump.json
    parses and every .pt it lists is there, whole (CRC-32s) and of its dtype and shape; .part and .failed
    files are problems, and so is finding no dump at all (a missing @top, a directory
    without dumps, a statistics capture): rep.ok is False exactly where the command exits
    non-zero. Returns a VerifyReport (never raises for a bad dump)."""
    rep = VerifyReport()
    reader = _adump.Reader()
    top = os.fspath(top)
    if not os.path.exists(top):
        rep.problems.append(("bad", top, "%s: %s" % (top, os.strerror(2))))
        return rep

    def check(header, name):
        msg = _check_shapes(header)
        if msg is None:
            reader.check()
        else:
            rep.problems.append(("bad", name, msg))

    for kind, path in _tree(top, irregular=True):
        if kind == "irregular":
            rep.files += 1
            rep.problems.append(("bad", path, "not a regular file (a symbolic link, FIFO, "
                                 "socket or device inside the capture): not read"))
            continue
        if kind == "msprobe":
            checked, problems = _msprobe_read.verify(path)
            rep.files += checked + 1     # dump.json itself
            rep.problems.extend(("bad", p, m) for p, m in problems)
            continue
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
        elif os.path.basename(path).startswith(_JOURNAL_PREFIX) and \
                (found := _adump.journal_list(path)) is not None:
            # A hand-over journal: dumps handed over and never written (as `adump verify`).
            rep.problems.extend((kind, path, msg) for kind, msg in found)
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
    if rep.files == 0 and not rep.problems:
        # As `adump verify`: nothing checked is a failure, not a pass.
        rep.problems.append(("empty", top, "no dump files found"))
    return rep
