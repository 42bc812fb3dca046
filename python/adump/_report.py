# SPDX-License-Identifier: Apache-2.0
"""adump.report: a compare's or a scan's result, or a statistics capture over steps, as one
self-contained HTML page (report/report.h), the page `adump report` writes."""
import os

from . import _adump


def report(result, out=None, *, chartjs=None):
    """Write the report of @result: a directory ``adump compare`` wrote into (its latest
    summary with each pair's result CSV, else its latest result CSV), one result or summary
    CSV, or the JSON of ``adump compare --json`` / ``adump scan --json``; or a statistics
    capture over steps (a directory with content="stats" CSVs or msprobe dump.json files
    under step<N>/rank<R>/, e.g. adump.torch's with content="stats"): each tensor's max,
    min, mean and norm by step, NaN/Inf and spikes marked (README: the series view). The page holds
    every script and style it needs (Chart.js inlined, no network request) and opens from
    file:// in any browser; names from the dumps are shown as text, never run as markup.

    out      the page's path; default <result>/report.html for a directory, else
             <result>.html. Written under a temporary name and renamed once whole.
    chartjs  Chart.js's minified build to inline; default Debian's libjs-chart.js

    Returns the page's path. Raises adump.CorruptError for a result that is not one
    (another tool's CSV, truncated, a statistics CSV likewise), adump.NotFoundError for
    a directory holding neither, OSError for a path that cannot be read or written or
    a result past the report's limits (E2BIG), each naming the file."""
    result = os.fspath(result)
    if out is None:
        out = os.path.join(result, "report.html") if os.path.isdir(result) else result + ".html"
    out = os.fspath(out)
    _adump.report(result, out, None if chartjs is None else os.fspath(chartjs))
    return out
