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
"""
from ._adump import (Error, ConfigError, CorruptError, ShutdownError, WriteError,
                     DroppedError, NotFoundError, StateError, UnsupportedError, TooBigError,
                     CallbackError, IncompleteError, ClosedError, ThreadError, strerror)
from ._read import Dump, TensorInfo, VerifyReport, open, walk, verify
from ._capture import Session, Stream, DTYPES
from ._compare import CompareResult, compare, compare_arrays

__all__ = [
    "Error", "ConfigError", "CorruptError", "ShutdownError", "WriteError", "DroppedError",
    "NotFoundError", "StateError", "UnsupportedError", "TooBigError", "CallbackError",
    "IncompleteError", "ClosedError", "ThreadError", "strerror",
    "Dump", "TensorInfo", "VerifyReport", "open", "walk", "verify",
    "Session", "Stream", "DTYPES", "CompareResult", "compare", "compare_arrays",
]
