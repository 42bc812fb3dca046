# SPDX-License-Identifier: Apache-2.0
"""adump.compare and adump.compare_arrays: msaccucmp's compare (include/adump/compare.h)."""
import os
import sys
import time

import numpy as np

from . import _adump, _pairs
from ._capture import _numpy_arg, _torch_arg, DTYPES


class CompareRow(dict):
    """One compared tensor: the CSV columns as numbers where they are numbers (float, NaN as
    float('nan'), at full precision; Index an int; StandardDeviation ((mean, std), (mean,
    std))), text where they are text; plus adump's own keys:

    verdict                "pass", "warning", "error", "uninitialized" (memory no op wrote:
                           torch.empty's output, bernoulli_'s first input; not compared) or
                           "none" (not compared)
    reason                 why the verdict is not pass ("" when it is)
    module                 the module the op ran in (None when not known)
    nan_count, inf_count   (my output, ground truth)
    nonfinite_diff_count   elements whose NaN/Inf differ; first_nonfinite_diff: the first
    scaled_error           max |x - y| / max |y| over the elements finite on both sides

    .cells holds the CSV strings, keyed as the row.
    """
    cells = None


class CompareResult(list):
    """The rows of a comparison, a list of CompareRow in op order (Index, then the tensor:
    inputs, then outputs). Also:

    columns   the CSV header exactly as msaccucmp writes it (DataType and Address twice)
    summary   dict: op_count, matched_count, my_only_count, golden_only_count, tensor_count,
              failed_count, my_bytes, golden_bytes, first_divergent_row (the first row in
              execution order whose verdict is not pass), first_nonfinite_row (NaN/Inf
              differ), first_overflow_row (row numbers, -1 for none), warning_count,
              error_count, nonfinite_count, first_divergent_op / _tensor / _module /
              _verdict / _reason (None when no row diverges) and exit_code (100 when a
              tensor's NaN/Inf differ, else msaccucmp's: 0, 2, 11, 18 ...)
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


_NO_NUMBER = ("", "NaN", "Nan", "nan", "N/A", "NA", "None")
_STATS_TEXT = ("Result",)
_ALG_NAMES = None


def _number(text):
    if text in _NO_NUMBER:
        return float("nan")
    try:
        return float(text[:-1] if text.endswith("%") else text)
    except ValueError:
        return text


def _row(keys, cells, info, is_stats):
    global _ALG_NAMES
    if _ALG_NAMES is None:
        _ALG_NAMES = {n: i for i, n in enumerate(_adump.compare_alg_names())}
    row = CompareRow()
    compared = info["compared"]
    nan = float("nan")
    for i, (key, text) in enumerate(zip(keys, cells)):
        if key == "Index":
            value = int(text) if text.isdigit() else text
        elif is_stats and 10 <= i < len(keys) - 2:
            value = _number(text)
        elif key == "StandardDeviation":
            value = ((info["mean"][0], info["std"][0]),
                     (info["mean"][1], info["std"][1])) if compared and text != "NaN" else nan
        elif key in _ALG_NAMES:
            value = info["values"][_ALG_NAMES[key]] if compared else nan
        elif key == "One Thousandth Err Ratio":
            value = info["one_thousandth"] if compared else nan
        elif key == "Five Thousandths Err Ratio":
            value = info["five_thousandths"] if compared else nan
        elif key == "EucDist":
            value = info["euclid"] if compared else nan
        else:
            value = text
        row[key] = value
    for key in ("verdict", "reason", "module", "nan_count", "inf_count",
                "nonfinite_diff_count", "first_nonfinite_diff", "scaled_error"):
        row[key] = info[key]
    row.cells = dict(zip(keys, cells))
    return row


def _threshold_list(thresholds):
    """None, "KEY=VALUE,..." or a dict {KEY: VALUE} -> the string the library parses."""
    if thresholds is None or isinstance(thresholds, str):
        return thresholds
    if isinstance(thresholds, dict):
        return ",".join("%s=%r" % (k, float(v)) for k, v in thresholds.items())
    raise TypeError("thresholds: a dict or a 'KEY=VALUE,...' string, not %s"
                    % type(thresholds).__name__)


def _alg_list(algorithms):
    if algorithms is None:
        return None
    if isinstance(algorithms, (str, int)):
        algorithms = [algorithms]
    return ",".join(str(a) for a in algorithms)


# `adump compare --fail-on`'s exit status (include/adump/compare.h ADUMP_COMPARE_EXIT_VERDICT).
EXIT_VERDICT = 101
_FAIL_ON = {"warning": ("warning", "error"), "error": ("error",)}


def _fail_on(rows, summary, fail_on):
    """summary["exit_code"] becomes EXIT_VERDICT where it is 0 and a row's verdict is fail_on
    or worse, as ``adump compare --fail-on`` does."""
    if fail_on is None or summary.get("exit_code") != 0:
        return
    if any(r.get("verdict") in _FAIL_ON[fail_on] for r in rows):
        summary["exit_code"] = EXIT_VERDICT


def compare(my, golden, *, algorithms=None, msprobe=False, advisor=False, threads=0,
            recursive=False, out=None, thresholds=None, fail_on=None, _csv=None):
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
    thresholds   the verdicts' limits (--threshold): {"cosine": 0.995, "float16.scaled":
                 0.02} or "cosine=0.995,float16.scaled=0.02" (README "Verdicts")
    fail_on      None, "warning" or "error" (--fail-on): summary["exit_code"] is 101 where it
                 would be 0 and some row's verdict is that level or worse

    Returns a CompareResult: a list with one CompareRow per CSV row, keyed by the CSV column
    names (DataType and Address, which the CSV has once per side, become NPUDumpDataType,
    NPUDumpAddress, GroundTruthDataType and GroundTruthAddress, as in ``adump compare
    --json``; .columns keeps the header as written). Numbers are floats at full precision
    (NaN as float('nan')); row.cells keeps the CSV strings.

    The comparison runs without the GIL. A problem with one op becomes its CompareFailReason;
    an op on one side only is a row, not an exception (summary["exit_code"] is then 2).
    Raises adump.ConfigError for bad algorithms or thresholds, adump.NotFoundError when a side holds no dump
    file, OSError for a path that cannot be read or an output that cannot be written.
    """
    if fail_on is not None and fail_on not in _FAIL_ON:
        raise _adump.ConfigError("fail_on: expected None, 'warning' or 'error', got %r"
                                 % (fail_on,))
    if recursive and os.path.isdir(my) and os.path.isdir(golden):
        # Two capture roots: pair by pair, never merged (adump/_pairs.py).
        def one(m, g, csv):
            return compare(m, g, algorithms=algorithms, msprobe=msprobe, advisor=False,
                           threads=threads, _csv=csv, thresholds=thresholds)
        paired = _pairs.compare_pairs(one, my, golden, out)
        if paired is not None:
            rows, last, pairs = paired
            res = CompareResult(rows)
            res.columns = list(last.columns) + ["Pair"] if last is not None else []
            res.summary = pairs
            _fail_on(res, pairs, fail_on)
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
        raise _adump.ConfigError("threads: expected an int 0-1024, got %r" % (threads,))
    columns, rows, summary = _adump.compare(os.fspath(my), os.fspath(golden),
                                            _alg_list(algorithms), bool(msprobe),
                                            bool(advisor), threads, bool(recursive), csv,
                                            advice, _threshold_list(thresholds))
    keys = _keys(columns)
    is_stats = len(columns) > 10 and columns[10] == "Max diff"
    res = CompareResult(_row(keys, cells, info, is_stats) for cells, info in rows)
    res.columns = list(columns)
    first = summary["first_divergent_row"]
    for key, name in (("op", "NPUDump"), ("tensor", "TensorIndex"), ("module", "module"),
                      ("verdict", "verdict"), ("reason", "reason")):
        summary["first_divergent_" + key] = res[first][name] if first >= 0 else None
    nonfinite = summary["first_nonfinite_row"]
    summary["first_nonfinite_op"] = res[nonfinite]["NPUDump"] if nonfinite >= 0 else None
    summary["first_nonfinite_module"] = res[nonfinite]["module"] if nonfinite >= 0 else None
    res.summary = summary
    _fail_on(res, summary, fail_on)
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


def compare_arrays(my, golden, *, thresholds=None):
    """The ten msaccucmp metrics of two arrays (numpy, or torch tensors on any device) and
    their verdict, as one row of ``adump.compare`` has them: a CompareRow of algorithm name
    -> float (NaN as float('nan'); StandardDeviation ((mean, std), (mean, std))),
    "CompareFailReason" ("" when none), verdict, reason, nan_count, inf_count,
    scaled_error ...; .cells holds the CSV strings ("1.000000", "NaN" ...). Element counts
    must match (else every number is NaN, the verdict "none" and the reason says why); my's
    shape decides msaccucmp's scalar rule. thresholds: as adump.compare's.
    Raises TypeError for an unsupported dtype, adump.UnsupportedError for a non-numeric one,
    adump.ConfigError for bad thresholds.
    """
    x, dtx, nx, shape = _flat(my)
    y, dty, ny, _ = _flat(golden)
    cells, msg, info = _adump.compare_buffers(x, dtx, nx, y, dty, ny, tuple(shape),
                                              _threshold_list(thresholds))
    keys = list(_adump.compare_alg_names()) + ["CompareFailReason"]
    return _row(keys, list(cells) + [msg], info, False)
