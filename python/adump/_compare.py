# SPDX-License-Identifier: Apache-2.0
"""adump.compare and adump.compare_arrays: msaccucmp's compare (include/adump/compare.h)."""
import os
import sys
import time

import numpy as np

from . import _adump, _pairs
from ._capture import _numpy_arg, _torch_arg, DTYPES


class CompareResult(list):
    """The rows of a comparison, a list of dicts in op order (Index, then the tensor: inputs,
    then outputs). Also:

    columns   the CSV header exactly as msaccucmp writes it (DataType and Address twice)
    summary   dict: op_count, matched_count, my_only_count, golden_only_count, tensor_count,
              failed_count, my_bytes, golden_bytes, first_divergent_row, first_overflow_row
              (row numbers, -1 for none) and exit_code (msaccucmp's: 0, 2, 11, 18 ...)
    csv       path of result_<ts>.csv when out= was given and some op matched, else None
    advice    path of advisor_summary.txt likewise (advisor=True)
    """
    columns = ()
    summary = None
    csv = None
    advice = None


def _keys(columns):
    # The CSV has DataType and Address once per side; as `adump compare --json` does, the
    # dict keys name the side: NPUDumpDataType/Address, GroundTruthDataType/Address.
    keys, seen = [], set()
    for name in columns:
        if name in ("DataType", "Address"):
            side = "GroundTruth" if name in seen else "NPUDump"
            seen.add(name)
            name = side + name
        keys.append(name)
    return keys


def _alg_list(algorithms):
    if algorithms is None:
        return None
    if isinstance(algorithms, (str, int)):
        algorithms = [algorithms]
    return ",".join(str(a) for a in algorithms)


def compare(my, golden, *, algorithms=None, msprobe=False, advisor=False, threads=0,
            recursive=False, out=None, _csv=None):
    """Compare two dumps op by op, tensor by tensor, as ``adump compare`` (msaccucmp's
    compare, NPU vs NPU) does.

    my, golden   a directory of dump files (.lz4 too), a packed capture or one dump file
    algorithms   None or "all" for the ten; else names or indices, as a list or msaccucmp's
                 -alg comma string ("0,8", ["CosineSimilarity", "MaxRelativeError"])
    msprobe      also msprobe's One/Five Thousandth(s) Err Ratio, EucDist and Accuracy
                 Reached or Not columns (--msprobe)
    advisor      the OverFlow column (-advisor); with out=, also advisor_summary.txt
    threads      compare on this many threads; 0: one per CPU (--threads)
    recursive    two directories: each capture directory below them (step<N>/rank<R>/...,
                 any level found on both sides) compared with its counterpart, pair by pair
                 (--recursive); the rows carry a "Pair" key and summary is a dict: "pairs"
                 (pair, step, rank, my, golden, that pair's summary, csv), "unpaired",
                 "first_divergent" (pair, step, rank, row, op, tensor; None) and
                 "exit_code" (2 when a directory has no counterpart). Otherwise (one file):
                 read subdirectories too
    out          a directory: also write result_<YYYYmmddHHMMSS>.csv there, byte for byte
                 what the command writes (-out); created if missing

    Returns a CompareResult: a list with one dict per CSV row, keyed by the CSV column names
    (DataType and Address, which the CSV has once per side, become NPUDumpDataType,
    NPUDumpAddress, GroundTruthDataType and GroundTruthAddress, as in ``adump compare
    --json``; .columns keeps the header as written). Every value is the CSV cell as a string
    ("0.999998", "NaN", "inf", "[2, 3]", "") -- cells mix numbers with tokens, so nothing is
    converted: float(row["CosineSimilarity"]) where a number is wanted.

    The comparison runs without the GIL. A problem with one op becomes its CompareFailReason;
    an op on one side only is a row, not an exception (summary["exit_code"] is then 2).
    Raises adump.ConfigError for bad algorithms, adump.NotFoundError when a side holds no dump
    file, OSError for a path that cannot be read or an output that cannot be written.
    """
    if recursive and os.path.isdir(my) and os.path.isdir(golden):
        # Two capture roots: pair by pair, never merged (adump/_pairs.py).
        def one(m, g, csv):
            return compare(m, g, algorithms=algorithms, msprobe=msprobe, advisor=False,
                           threads=threads, _csv=csv)
        paired = _pairs.compare_pairs(one, my, golden, out)
        if paired is not None:
            rows, last, pairs = paired
            res = CompareResult(rows)
            res.columns = list(last.columns) + ["Pair"] if last is not None else []
            res.summary = pairs
            return res
    csv = advice = None
    if _csv is not None:
        csv = _csv
    elif out is not None:
        out = os.fspath(out)
        os.makedirs(out, mode=0o750, exist_ok=True)
        csv = os.path.join(out, "result_%s.csv" % time.strftime("%Y%m%d%H%M%S"))
        if advisor:
            advice = os.path.join(out, "advisor_summary.txt")
    if not isinstance(threads, int) or threads < 0 or threads > 1024:
        raise ValueError("threads: expected 0-1024, got %r" % (threads,))
    columns, rows, summary = _adump.compare(os.fspath(my), os.fspath(golden),
                                            _alg_list(algorithms), bool(msprobe),
                                            bool(advisor), threads, bool(recursive), csv,
                                            advice)
    keys = _keys(columns)
    res = CompareResult(dict(zip(keys, r)) for r in rows)
    res.columns = list(columns)
    res.summary = summary
    if summary["matched_count"]:
        res.csv, res.advice = csv, advice
    return res


def _flat(a):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        a = _torch_arg(a)
        if isinstance(a, tuple):                 # bfloat16: (int16 view, DT_BF16, shape)
            return a[0], a[1], int(np.prod(a[2], dtype=np.int64)), a[2]
    a = _numpy_arg(np.asarray(a))
    return a, DTYPES[a.dtype.name], a.size, a.shape


def compare_arrays(my, golden):
    """The ten msaccucmp metrics of two arrays (numpy, or torch tensors on any device), as
    one row of ``adump.compare`` has them: a dict of algorithm name -> the cell string
    ("1.000000", "NaN", "(mean;std),(mean;std)" for StandardDeviation ...), plus
    "CompareFailReason" ("" when none). Element counts must match (else every cell is "NaN"
    and the reason says why); my's shape decides msaccucmp's scalar rule.
    Raises TypeError for an unsupported dtype, adump.UnsupportedError for a non-numeric one.
    """
    x, dtx, nx, shape = _flat(my)
    y, dty, ny, _ = _flat(golden)
    cells, msg = _adump.compare_buffers(x, dtx, nx, y, dty, ny, tuple(shape))
    res = dict(zip(_adump.compare_alg_names(), cells))
    res["CompareFailReason"] = msg
    return res
