# SPDX-License-Identifier: Apache-2.0
"""Capture: adump.Session and its host streams over the native host capture API.

A Session is the native session (config keys as struct adump_config: workers, chunk_bytes,
pool_bytes, stream_max, on_full, writer, sink/callback, io ("auto", "buffered", "direct"),
compress, layout, segment_bytes, content, stats_mask (adump.STAT_*), sync_bytes, time_dir,
min_free_bytes (adump.GUARD_OFF: no floor), max_bytes (quota), direct_min_bytes, format,
summary, and window mode's keys: see Session). A stream is owned by the thread that made it;
each producer thread makes its own."""
import atexit
import sys
import threading
import weakref

import numpy as np

from . import _adump

# numpy dtype -> accepted by Stream.dump (little-endian or native); bfloat16 goes through
# torch tensors or an explicit (buffer, adump.DTYPES["bfloat16"], shape) tuple.
DTYPES = {
    "float32": _adump.DT_FLOAT, "float16": _adump.DT_FLOAT16, "bfloat16": _adump.DT_BF16,
    "float64": _adump.DT_DOUBLE, "int8": _adump.DT_INT8, "int16": _adump.DT_INT16,
    "int32": _adump.DT_INT32, "int64": _adump.DT_INT64, "uint8": _adump.DT_UINT8,
    "uint16": _adump.DT_UINT16, "uint32": _adump.DT_UINT32, "uint64": _adump.DT_UINT64,
    "bool": _adump.DT_BOOL,
}

_live = weakref.WeakSet()


@atexit.register
def _close_all():
    # Workers call back into Python (callback sink, zero-copy checks): finish every session
    # while the interpreter can still run them.
    for s in list(_live):
        s.close(check=False)


def _numpy_arg(a):
    """An ndarray as dump() takes it: a supported dtype, little-endian, C-contiguous."""
    dt = a.dtype
    if dt.fields is not None or dt.kind not in "biuf" or dt.name not in DTYPES:
        raise TypeError("unsupported dtype %s (adump takes %s)" % (dt, ", ".join(DTYPES)))
    if dt.byteorder == ">":
        a = a.astype(dt.newbyteorder("<"))
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return a


def _torch_arg(t):
    torch = sys.modules["torch"]
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if not t.is_contiguous():
        t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return (t.view(torch.int16).numpy(), _adump.DT_BF16, tuple(t.shape))
    if t.dtype in (torch.complex64, torch.complex128, torch.complex32) or t.is_quantized:
        raise TypeError("unsupported dtype %s" % t.dtype)
    return t.numpy()


def _arg(x):
    if isinstance(x, np.ndarray):
        return _numpy_arg(x)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _torch_arg(x)
    if isinstance(x, tuple):
        return x
    if isinstance(x, (bytes, bytearray, memoryview)):
        return x
    try:
        m = memoryview(x)
    except TypeError:
        raise TypeError("unsupported tensor type %s: give a numpy array, a torch tensor or "
                        "a buffer" % type(x).__name__) from None
    return _numpy_arg(np.asarray(m)) if m.format not in ("B", "b") else x


def _tensor_list(field, value):
    """@value as the list of tensors it must be; a single tensor or buffer is a TypeError
    (iterating it would dump its rows as separate tensors)."""
    if value is None:
        return ()
    torch = sys.modules.get("torch")
    if isinstance(value, (np.ndarray, bytes, bytearray, memoryview, str)) or \
            (torch is not None and isinstance(value, torch.Tensor)):
        raise TypeError("%s: expected a list of tensors, got a single %s (write %s=[x])" %
                        (field, type(value).__name__, field))
    if not isinstance(value, (list, tuple)):
        try:
            value = list(value)
        except TypeError:
            raise TypeError("%s: expected a list of tensors, got %s" %
                            (field, type(value).__name__)) from None
    return value


class Stream:
    """A host stream: dump ops from the thread that opened it (adump.ThreadError from any
    other). Made by Session.stream()."""

    def __init__(self, session, native):
        self._session = session
        self._st = native

    @property
    def id(self):
        return self._st.id()

    def dump(self, op_type, op_name, inputs=(), outputs=(), copy=True, check=None,
             on_release=None, attrs=None, dfx_message=None):
        """Dump one op. inputs/outputs: numpy arrays, torch tensors or buffer-protocol
        objects of a supported dtype (non-contiguous ones are made contiguous), or
        (buffer, dtype, shape) tuples with dtype a value of adump.DTYPES. copy=True returns
        once the bytes are copied into staging; copy=False holds references until they are
        written, then calls on_release(task_id, status); check(), if given, runs before
        the file is published and a false result fails the dump. In a window session
        copy=False holds them in the window: read (after check()) only if a window is
        written, released when the window lets them go. attrs (a dict or (name,
        value) str pairs) and dfx_message (str) go into the header (DumpData.attr,
        dfx_message). Returns the task id."""
        ins = [_arg(x) for x in _tensor_list("inputs", inputs)]
        outs = [_arg(x) for x in _tensor_list("outputs", outputs)]
        return self._st.dump(op_type, op_name, ins, outs, copy, check, on_release,
                             attrs=attrs, dfx_message=dfx_message)

    def set_dir(self, dir):
        """Send the stream's next files to <dir>/<device_id>/ (dir absolute or relative to
        the session's dump_path; None: the session directory; no ".." component; below
        dump_path no directory is made or entered through a link). Waits until the stream's
        dumps in flight are written (they stay where they were dumped). Returns 0, or
        adump's drop code when chunks were dropped since the last sync (changed all the
        same); raises for a bad directory (OSError), the packed layout (UnsupportedError)."""
        return self._st.set_dir(None if dir is None else str(dir))

    def sync(self):
        """Wait until every dump of this stream is written. Raises adump.DroppedError when
        a chunk was dropped (on_full="drop") since the last sync."""
        self._st.sync()

    def stats(self):
        return self._st.stats()

    def close(self):
        """Wait for the stream's dumps and close it; returns 0 or the first error code."""
        return self._st.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Session:
    """Session(dump_path, **config): a capture session; a context manager.

    Files go to <dump_path>/<time_dir>/<device_id>/. An unwritable dump_path raises OSError
    (with errno) here, before anything is captured; a bad key, value or combination raises
    adump.ConfigError here, its message the library's reason.

    Window mode, the flight recorder (window_steps=N, an int above 0): the session writes
    every dump's statistics, as content="stats" would in the session's format (CANN CSVs or
    msprobe's dump.json statistics), and keeps the full tensors of the current step and the
    N-1 before it in memory (window_bytes, tensors and their descriptions together; default
    1 GiB; the oldest steps go first, a step larger than the whole window keeps what fits
    and counts the rest as lost, cause "window_full"). Steps end with step(). When a
    trigger fired during a step, step() writes the held steps as a tensor capture under
    <dump_path>/window-<step>/, each stream directory at the same path relative to
    dump_path, with trigger.json (rule, tensor, value, step, time) in each directory
    written. Keys: triggers, a list of "nonfinite" (a NaN or an infinity; on by default),
    "bound" (bounds: {pattern: max_abs} or [(pattern, max_abs)], an fnmatch glob against
    "<op_name>.input.<i>" / "<op_name>.output.<i>"), "deviation" (a tensor's L2 norm more
    than (1 + deviation) times the mean of its last deviation_steps steps; defaults 1.0 and
    5), "call" (persist(); always on), "signal" (SIGUSR1 writes the window at once); without
    triggers=, the default plus the triggers bounds= and deviation= imply. window_persists:
    windows written at most (default 3; later triggers are counted, not written). content
    stays "tensor" (what a window holds); the files layout, no compression."""

    def __init__(self, dump_path=None, **config):
        if dump_path is not None:
            config["dump_path"] = str(dump_path)
        self._s = _adump._Session(**config)
        self._lock = threading.Lock()
        _live.add(self)

    @property
    def dir(self):
        return self._s.dir()

    def stream(self, device_id=0):
        """A host stream owned by the calling thread."""
        return Stream(self, self._s.stream(device_id))

    def stats(self):
        """Every counter of the session (struct adump_stats) as a dict."""
        return self._s.stats()

    def flush(self):
        """Wait until everything dumped so far is written; returns 0 or the first error."""
        return self._s.flush()

    def step(self):
        """End the current step: wait until its dumps are written, then (window mode) write
        the held steps if a trigger fired in it. Returns 0 or an error code (a window that
        could not be written); raises adump.ConfigError for a bound pattern that matched no
        tensor of step 0 (the step advanced all the same)."""
        return self._s.step()

    def persist(self, reason=None):
        """Window mode: write the held steps at the end of the current step (the "call"
        trigger; @reason goes into trigger.json). adump.StateError outside window mode."""
        self._s.persist(reason)

    def persist_note(self, note):
        """Window mode: the members of dict @note (JSON-able) go into the trigger.json of
        the next window written, replacing adump's of the same names; None: none."""
        self._s.persist_note(note)

    def window(self):
        """Window mode: what the window holds and has done, a dict: step, held_steps,
        held_dumps, held_bytes, lost_dumps, persists, persists_skipped, is_pending,
        pending_rule, last_window (the root of the last window written, or None)."""
        return self._s.window()

    def error(self):
        return self._s.error()

    def close(self, check=True):
        """Close every stream, write what is outstanding, stop the workers. With check,
        raises the session's first error (a failed write, a dropped chunk ...)."""
        with self._lock:
            ret = self._s.close()
        if check and ret < 0:
            code = -ret
            if code < _adump.ERR_BASE:
                raise OSError(code, _adump.strerror(code))
            raise _error_for(code)
        return ret

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # With an exception already on its way (Ctrl-C included), everything handed over is
        # still written or marked failed, and that exception is the one that propagates.
        self.close(check=exc_type is None)


def _error_for(code):
    classes = {4096: _adump.ConfigError, 4097: _adump.CorruptError, 4098: _adump.ShutdownError,
               4099: _adump.WriteError, 4100: _adump.DroppedError, 4101: _adump.NotFoundError,
               4102: _adump.StateError, 4103: _adump.UnsupportedError,
               4104: _adump.TooBigError, 4105: _adump.CallbackError,
               4106: _adump.IncompleteError, 4107: _adump.ThreadError}
    cls = classes.get(code, _adump.Error)
    e = cls(_adump.strerror(code))
    e.code = code
    e.message = _adump.strerror(code)
    return e
