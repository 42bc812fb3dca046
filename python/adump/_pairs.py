# SPDX-License-Identifier: Apache-2.0
"""adump.compare(recursive=True) over two capture roots: each capture directory (step<N>/
rank<R>/..., any level found on both sides) compared with its counterpart, pair by pair, as
``adump compare --recursive`` does (include/adump/compare_pairs.h)."""
import os
import time

from . import _adump


def _out_path(out, stem):
    """A new file <out>/<stem>.csv, or <stem>_<k>.csv where that name is taken."""
    k = 0
    while True:
        path = os.path.join(out, "%s%s.csv" % (stem, "_%d" % k if k else ""))
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640))
            return path
        except FileExistsError:
            k += 1


def compare_pairs(compare_one, my, golden, out=None):
    """compare_one(my, golden, out_csv) compares one pair. Returns None when the roots are one
    capture directory each (nothing to pair); else (rows, the first compared pair's
    CompareResult, summary): rows of every pair, each with a "Pair" key; summary holds
    "pairs" (one dict per pair: pair, step, rank, my, golden, summary, csv), "unpaired"
    (labels), "first_divergent" (pair, step, rank, row, op, tensor of the first pair in step,
    rank order with a first divergent row; None) and "exit_code"."""
    pairs = _adump.compare_pairs(os.fspath(my), os.fspath(golden))
    if len(pairs) == 1 and pairs[0][0] == "." and pairs[0][1] and pairs[0][2]:
        return None  # two capture directories, nothing below to pair: one compare
    stamp = time.strftime("%Y%m%d%H%M%S")
    if out is not None:
        out = os.fspath(out)
        os.makedirs(out, mode=0o750, exist_ok=True)
    rows, infos, unpaired, first = [], [], [], None
    result = None
    for label, m, g, step, rank in pairs:
        info = {"pair": label, "step": step, "rank": rank, "my": m, "golden": g,
                "summary": None, "csv": None}
        infos.append(info)
        if m is None or g is None:
            unpaired.append(label)
            continue
        csv = None
        if out is not None:
            csv = _out_path(out, "result_%s_%s" % (label.replace("/", "_")
                                                   if label != "." else "root", stamp))
        res = compare_one(m, g, csv)
        if csv is not None and not res.summary["matched_count"]:
            os.unlink(csv)
            csv = None
        info["summary"], info["csv"] = res.summary, csv
        for r in res:
            r["Pair"] = label
            rows.append(r)
        result = res if result is None else result
        row = res.summary.get("first_divergent_row", -1)
        if first is None and row is not None and row >= 0:
            first = {"pair": label, "step": step, "rank": rank, "row": row,
                     "op": res[row].get("NPUDump"), "tensor": res[row].get("TensorIndex")}
    codes = [i["summary"]["exit_code"] for i in infos if i["summary"]]
    code = next((c for c in codes if c and c != 2), 0) or (2 if unpaired or 2 in codes else 0)
    return rows, result, {"pairs": infos, "unpaired": unpaired, "first_divergent": first,
                          "exit_code": code}
