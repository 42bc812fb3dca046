/* SPDX-License-Identifier: Apache-2.0 */
/* _adump.Session: a native capture session (adump_session_create) for Python: its
 * configuration from keywords, the callback sink's chunks handed to a Python callable,
 * flush, stats, close (closing its streams first) and stream(), which opens a _Stream
 * (stream.c). What it shares with the stream is in capture_int.h. */
#include "capture_int.h"

/* Worker thread: hand one chunk of the callback sink to the Python callable. */
static int chunk_to_python(const struct adump_chunk *c, void *user)
{
	struct py_session *sess = user;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *res = PyObject_CallFunction(sess->callback, "sKy#O", c->file_name,
					      (unsigned long long)c->offset, (const char *)c->data,
					      (Py_ssize_t)c->len, c->is_last ? Py_True : Py_False);
	int ret = 0;

	if (!res) {
		PyErr_WriteUnraisable(sess->callback);
		ret = -1;
	}
	Py_XDECREF(res);
	PyGILState_Release(g);
	return ret;
}

static PyObject *session_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	PyObject *callback = NULL;
	struct py_session *self;
	char reason[512];
	int ret;

	if (!PyArg_ParseTuple(args, ":_Session"))
		return NULL;
	if (pyadump_parse_config(kw, &cfg, &callback) < 0)
		return NULL;
	if (pyadump_config_check(&cfg, callback) < 0) {
		pyadump_config_free(&cfg);
		return NULL;
	}
	self = (struct py_session *)PyType_GenericNew(type, NULL, NULL);
	if (!self) {
		pyadump_config_free(&cfg);
		return NULL;
	}
	pthread_mutex_init(&self->lock, NULL);
	pthread_cond_init(&self->idle, NULL);
	if (callback) {
		Py_INCREF(callback);
		self->callback = callback;
		cfg.chunk_fn = chunk_to_python;
		cfg.chunk_user = self;
	}
	pyadump_reason_begin(reason, sizeof(reason));
	Py_BEGIN_ALLOW_THREADS
	sigset_t saved;

	pyadump_signals_block(&saved);
	ret = adump_session_create(&cfg, &self->s);
	pyadump_signals_restore(&saved);
	Py_END_ALLOW_THREADS
	pyadump_reason_end();
	pyadump_config_free(&cfg);      /* the session copied the bounds */
	pyadump_log_drain();
	if (ret < 0) {
		Py_DECREF(self);
		/* A state refusal (the SIGUSR1 trigger, the signal taken) says why. */
		return pyadump_raise(ret, ret == -ADUMP_ERR_STATE ? reason : NULL, cfg.dump_path);
	}
	return (PyObject *)self;
}

/* Close every open stream, then the session; the session's first error is kept. Calls in
 * flight on other threads (dumps, syncs, a stream's close) are waited for; a second close
 * waits for the first. */
static void session_close_all(struct py_session *self)
{
	int ret = 0;

	if (self->is_closing) {
		Py_BEGIN_ALLOW_THREADS
		pthread_mutex_lock(&self->lock);
		while (!self->is_closed)
			pthread_cond_wait(&self->idle, &self->lock);
		pthread_mutex_unlock(&self->lock);
		Py_END_ALLOW_THREADS
		pyadump_drain(self);
		return;
	}
	self->is_closing = true;
	while (self->streams) {
		/* Held: its owner thread may drop the last reference while the close waits. */
		struct py_stream *st = self->streams;

		Py_INCREF((PyObject *)st);
		pyadump_stream_close(st, &ret);
		Py_DECREF((PyObject *)st);
	}
	pyadump_busy_wait(self, &self->busy_count);
	if (self->s) {
		struct adump_session *s = self->s;

		self->s = NULL;
		Py_BEGIN_ALLOW_THREADS
		ret = adump_session_destroy(s);
		Py_END_ALLOW_THREADS
		self->closed_error = ret;
	}
	pthread_mutex_lock(&self->lock);
	self->is_closed = true;
	pthread_cond_broadcast(&self->idle);
	pthread_mutex_unlock(&self->lock);
	pyadump_drain(self);
}

static void session_dealloc(PyObject *obj)
{
	struct py_session *self = (struct py_session *)obj;
	PyTypeObject *tp = Py_TYPE(obj);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);

	session_close_all(self);
	Py_XDECREF(self->callback);
	pthread_cond_destroy(&self->idle);
	pthread_mutex_destroy(&self->lock);
	tp_free(obj);
	Py_DECREF(tp);
}

/* close() -> the session's first error (0 or a negative code); closing twice is a no-op. */
static PyObject *session_close(PyObject *obj, PyObject *unused)
{
	struct py_session *self = (struct py_session *)obj;

	session_close_all(self);
	return PyLong_FromLong(self->closed_error);
}

static PyObject *session_flush(PyObject *obj, PyObject *unused)
{
	struct py_session *self = (struct py_session *)obj;
	int ret;

	if (!self->s || self->is_closing)
		return pyadump_raise_closed("session");
	pyadump_busy_enter(self, NULL);
	Py_BEGIN_ALLOW_THREADS
	ret = adump_session_flush(self->s);
	Py_END_ALLOW_THREADS
	pyadump_busy_leave(self, NULL);
	pyadump_drain(self);
	return PyLong_FromLong(ret);
}

static PyObject *hist_list(const uint64_t *h)
{
	PyObject *l = PyList_New(ADUMP_HIST_BUCKETS);

	for (unsigned i = 0; l && i < ADUMP_HIST_BUCKETS; i++) {
		PyObject *v = PyLong_FromUnsignedLongLong(h[i]);

		if (!v || PyList_SetItem(l, i, v) < 0) {
			Py_DECREF(l);
			return NULL;
		}
	}
	return l;
}

static const char *const backend_names[] = { "auto", "uring", "pwrite" };

static PyObject *session_stats(PyObject *obj, PyObject *unused)
{
	struct py_session *self = (struct py_session *)obj;
	struct adump_stats st;
	PyObject *d, *streams;

	if (!self->s || self->is_closing)
		return pyadump_raise_closed("session");
	pyadump_drain(self);
	adump_stats_get(self->s, &st);
	d = Py_BuildValue("{sKsKsKsKsKsKsKsKsKsKsssKsisIsI}", "records",
			  (unsigned long long)st.records, "bytes", (unsigned long long)st.bytes,
			  "files_completed", (unsigned long long)st.files_completed,
			  "files_failed", (unsigned long long)st.files_failed, "write_errors",
			  (unsigned long long)st.write_errors, "callback_errors",
			  (unsigned long long)st.callback_errors, "drops",
			  (unsigned long long)st.drops, "writes_in_flight",
			  (unsigned long long)st.writes_in_flight, "producer_wait_count",
			  (unsigned long long)st.producer_wait_count, "producer_wait_ns",
			  (unsigned long long)st.producer_wait_ns, "backend",
			  backend_names[st.backend <= ADUMP_WRITER_PWRITE ? st.backend : 0],
			  "producer_wait_max_ns", (unsigned long long)st.producer_wait_max_ns,
			  "first_error", st.first_error, "worker_count", st.worker_count,
			  "stream_count", st.stream_count);
	if (!d)
		return NULL;
	if (pyadump_dict_steal(d, "producer_wait_hist", hist_list(st.producer_wait_hist)) ||
	    pyadump_dict_steal(d, "enqueue_hist", hist_list(st.enqueue_hist)))
		goto fail;
	streams = PyList_New(0);
	if (!streams)
		goto fail;
	for (unsigned i = 0; i < st.stream_count && i < 64; i++) {
		PyObject *c = pyadump_chan_dict(&st.streams[i]);

		if (!c || PyList_Append(streams, c) < 0) {
			Py_XDECREF(c);
			Py_DECREF(streams);
			goto fail;
		}
		Py_DECREF(c);
	}
	if (pyadump_dict_steal(d, "streams", streams))
		goto fail;
	return d;
fail:
	Py_DECREF(d);
	return NULL;
}

static PyObject *session_dir(PyObject *obj, PyObject *unused)
{
	struct py_session *self = (struct py_session *)obj;

	if (!self->s || self->is_closing)
		return pyadump_raise_closed("session");
	return PyUnicode_DecodeFSDefault(adump_session_dir(self->s));
}

static PyObject *session_error(PyObject *obj, PyObject *unused)
{
	struct py_session *self = (struct py_session *)obj;

	return PyLong_FromLong(self->s ? adump_session_error(self->s) : self->closed_error);
}

/* stream(device_id=0) -> a host stream owned by the calling thread */
static PyObject *session_stream(PyObject *obj, PyObject *args)
{
	struct adump_host_stream_config cfg = ADUMP_HOST_STREAM_CONFIG_INIT;
	struct py_session *self = (struct py_session *)obj;
	uint64_t device_id = 0;

	if (!PyArg_ParseTuple(args, "|O&:stream", pyadump_uint64_conv, &device_id))
		return NULL;
	if (!self->s || self->is_closing)
		return pyadump_raise_closed("session");
	if (device_id > UINT32_MAX)
		return pyadump_raise(-ADUMP_ERR_CONFIG, "device_id out of range", NULL);
	cfg.device_id = (uint32_t)device_id;
	return pyadump_stream_open(self, &cfg);
}

/* step() -> 0 or an error code: adump_session_step(). A config error (a bound pattern that
 * matched no tensor of step 0) raises adump.ConfigError with the library's reason; the step
 * advanced all the same. */
static PyObject *session_step(PyObject *obj, PyObject *unused)
{
	struct py_session *self = (struct py_session *)obj;
	char reason[512];
	int ret;

	if (!self->s || self->is_closing)
		return pyadump_raise_closed("session");
	pyadump_busy_enter(self, NULL);
	pyadump_reason_begin(reason, sizeof(reason));
	Py_BEGIN_ALLOW_THREADS
	ret = adump_session_step(self->s);
	Py_END_ALLOW_THREADS
	pyadump_reason_end();
	pyadump_busy_leave(self, NULL);
	pyadump_drain(self);
	if (ret == -ADUMP_ERR_CONFIG)
		return pyadump_raise(ret, reason, NULL);
	return PyLong_FromLong(ret);
}

/* persist(reason=None): the held steps are written at the end of the current step. */
static PyObject *session_persist(PyObject *obj, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "reason", NULL };
	struct py_session *self = (struct py_session *)obj;
	const char *reason = NULL;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|z:persist", kwlist, &reason))
		return NULL;
	if (!self->s || self->is_closing)
		return pyadump_raise_closed("session");
	/* Without the GIL, as every call that takes the window's lock: a window being written
	 * holds it while it asks a zero-copy dump's check, which takes the GIL. */
	pyadump_busy_enter(self, NULL);
	Py_BEGIN_ALLOW_THREADS
	ret = adump_session_persist(self->s, reason);
	Py_END_ALLOW_THREADS
	pyadump_busy_leave(self, NULL);
	if (ret < 0)
		return pyadump_raise(ret, ret == -ADUMP_ERR_STATE ? "persist: the session is not "
				     "in window mode (window_steps)" : NULL, NULL);
	Py_RETURN_NONE;
}

/* persist_note(note): a dict (made JSON here) or a JSON object's text, or None. */
static PyObject *session_persist_note(PyObject *obj, PyObject *note)
{
	struct py_session *self = (struct py_session *)obj;
	PyObject *text = NULL;
	const char *json = NULL;
	char reason[512];
	int ret;

	if (!self->s || self->is_closing)
		return pyadump_raise_closed("session");
	if (PyDict_Check(note)) {
		PyObject *mod = PyImport_ImportModule("json");

		text = mod ? PyObject_CallMethod(mod, "dumps", "O", note) : NULL;
		Py_XDECREF(mod);
		if (!text)
			return NULL;
	} else if (PyUnicode_Check(note)) {
		Py_INCREF(note);
		text = note;
	} else if (note != Py_None) {
		PyErr_Format(PyExc_TypeError, "persist_note: expected a dict, a JSON object's "
			     "text or None, got %R", note);
		return NULL;
	}
	if (text) {
		json = PyUnicode_AsUTF8AndSize(text, NULL);
		if (!json) {
			Py_DECREF(text);
			return NULL;
		}
	}
	/* json.dumps ran Python code: another thread may have closed the session meanwhile. */
	if (!self->s || self->is_closing) {
		Py_XDECREF(text);
		return pyadump_raise_closed("session");
	}
	pyadump_busy_enter(self, NULL);
	pyadump_reason_begin(reason, sizeof(reason));
	Py_BEGIN_ALLOW_THREADS
	ret = adump_session_persist_note(self->s, json);
	Py_END_ALLOW_THREADS
	pyadump_reason_end();
	pyadump_busy_leave(self, NULL);
	Py_XDECREF(text);
	if (ret < 0)
		return pyadump_raise(ret, ret == -ADUMP_ERR_STATE ? "persist_note: the session is "
				     "not in window mode (window_steps)" : reason, NULL);
	Py_RETURN_NONE;
}

/* window() -> dict of struct adump_window_info */
static PyObject *session_window(PyObject *obj, PyObject *unused)
{
	struct py_session *self = (struct py_session *)obj;
	struct adump_window_info w;
	int ret;

	if (!self->s || self->is_closing)
		return pyadump_raise_closed("session");
	pyadump_busy_enter(self, NULL);
	Py_BEGIN_ALLOW_THREADS
	ret = adump_session_window(self->s, &w);
	Py_END_ALLOW_THREADS
	pyadump_busy_leave(self, NULL);
	if (ret < 0)
		return pyadump_raise(ret, ret == -ADUMP_ERR_STATE ? "window: the session is not "
				     "in window mode (window_steps)" : NULL, NULL);
	return Py_BuildValue("{sKsIsKsKsKsIsIsOszsN}", "step", (unsigned long long)w.step,
			     "held_steps", w.held_steps, "held_dumps",
			     (unsigned long long)w.held_dumps, "held_bytes",
			     (unsigned long long)w.held_bytes, "lost_dumps",
			     (unsigned long long)w.lost_dumps, "persists", w.persists,
			     "persists_skipped", w.persists_skipped, "is_pending",
			     w.is_pending ? Py_True : Py_False, "pending_rule",
			     w.is_pending ? w.pending_rule : NULL, "last_window",
			     w.last_window[0] ? PyUnicode_DecodeFSDefault(w.last_window) :
			     Py_NewRef(Py_None));
}

static PyMethodDef session_methods[] = {
	{ "close", session_close, METH_NOARGS,
	  "close() -> first error code: close the streams, flush, stop the workers" },
	{ "flush", session_flush, METH_NOARGS, "flush() -> 0 or the session's first error" },
	{ "stats", session_stats, METH_NOARGS, "stats() -> dict of every counter" },
	{ "dir", session_dir, METH_NOARGS, "dir() -> <dump_path>/<time_dir>" },
	{ "error", session_error, METH_NOARGS, "error() -> the session's first error, or 0" },
	{ "stream", session_stream, METH_VARARGS, "stream(device_id=0) -> host stream" },
	{ "step", session_step, METH_NOARGS,
	  "step() -> 0 or an error code: end the step (window mode: persist if triggered)" },
	{ "persist", (PyCFunction)(void (*)(void))session_persist, METH_VARARGS | METH_KEYWORDS,
	  "persist(reason=None): write the window at the end of the current step" },
	{ "persist_note", session_persist_note, METH_O,
	  "persist_note(dict or None): members added to the next window's trigger.json" },
	{ "window", session_window, METH_NOARGS, "window() -> dict: what the window holds" },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot session_slots[] = {
	{ Py_tp_new, session_new },
	{ Py_tp_dealloc, session_dealloc },
	{ Py_tp_methods, session_methods },
	{ Py_tp_doc, "_Session(**config): a native capture session" },
	{ 0, NULL },
};

PyType_Spec pyadump_session_spec = {
	.name = "adump._adump._Session",
	.basicsize = sizeof(struct py_session),
	.flags = Py_TPFLAGS_DEFAULT,
	.slots = session_slots,
};
