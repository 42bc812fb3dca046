# SPDX-License-Identifier: Apache-2.0
"""adump: fast tensor-dump capture in CANN's dump format, and a reader for such dumps.

Reading::

    d = adump.open("dump/20260101000000/0/Add.add1.3.1.1700000000000000")
    d.op_type, d.op_name, d.timestamp, d.inputs[0], d.outputs[0], d.attrs
    for d in adump.walk("dump"): ...          # plain, .lz4 and packed captures alike
    report = adump.verify("dump")              # report.ok, report.problems

Capture::

    with adump.Session("dump", workers=2, compress="lz4") as s:
        st = s.stream()                        # owned by this thread
        st.dump("MatMul", "layer1.mm", inputs=[a, b], outputs=[c])
        st.sync()
        s.stats()

Comparing (msaccucmp's compare; rows as dicts of numbers and verdicts, CSV text in row.cells)::

    rows = adump.compare("my_dump", "golden_dump", out="result")   # + result_<ts>.csv
    rows[0]["CosineSimilarity"], rows.columns, rows.summary["first_divergent_row"]
    adump.compare_arrays(a, b)["MaxRelativeError"]

PyTorch models: ``adump.torch.capture`` (imported on demand: ``import adump.torch``).

Config keys are struct adump_config's, by name (workers or worker_count, io="auto" ...,
min_free_bytes, max_bytes, direct_min_bytes, stats_mask=adump.STAT_MAX | adump.STAT_MIN);
adump.config_check(**config) and Session(...) raise adump.ConfigError with the library's
reason. The library's log lines go to logging.getLogger("adump").
"""
import logging as _logging

from . import _adump
from ._adump import (Error, ConfigError, CorruptError, ShutdownError, WriteError,
                     DroppedError, NotFoundError, StateError, UnsupportedError, TooBigError,
                     CallbackError, IncompleteError, ClosedError, ThreadError, strerror,
                     STAT_MAX, STAT_MIN, STAT_AVG, STAT_NAN, STAT_NEG_INF, STAT_POS_INF,
                     STAT_L2NORM, STAT_DEFAULT, STAT_ALL, GUARD_OFF, config_check)
from ._read import Dump, TensorInfo, VerifyReport, Loss, open, walk, verify
from ._capture import Session, Stream, DTYPES
from ._compare import CompareResult, compare, compare_arrays
from ._scan import ScanResult, scan
from ._report import report

__version__ = _adump.__version__

# The C library's log lines go to the logger "adump" (queued by the library, handed over at
# the next call into adump; without a handler configured, WARNING and above reach stderr).
_logger = _logging.getLogger("adump")
_LEVELS = {_adump.LOG_DEBUG: _logging.DEBUG, _adump.LOG_INFO: _logging.INFO,
           _adump.LOG_WARN: _logging.WARNING, _adump.LOG_ERROR: _logging.ERROR}


def _log(level, module, message):
    _logger.log(_LEVELS.get(level, _logging.ERROR), "%s: %s", module, message)


_adump.set_log_sink(_log, _adump.LOG_INFO)

# `from adump import *` brings no name that shadows a builtin: adump.open stays adump.open.
__all__ = [
    "Error", "ConfigError", "CorruptError", "ShutdownError", "WriteError", "DroppedError",
    "NotFoundError", "StateError", "UnsupportedError", "TooBigError", "CallbackError",
    "IncompleteError", "ClosedError", "ThreadError", "strerror",
    "STAT_MAX", "STAT_MIN", "STAT_AVG", "STAT_NAN", "STAT_NEG_INF", "STAT_POS_INF",
    "STAT_L2NORM", "STAT_DEFAULT", "STAT_ALL", "GUARD_OFF", "config_check",
    "Dump", "TensorInfo", "VerifyReport", "Loss", "walk", "verify",
    "Session", "Stream", "DTYPES", "CompareResult", "compare", "compare_arrays",
    "ScanResult", "scan", "report",
]
