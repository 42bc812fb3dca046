/* SPDX-License-Identifier: Apache-2.0 */
/* _adump.Session and _adump.Stream: the native session and host capture API
 * (include/adump/host.h) for Python. Copy-mode dumps copy the buffers with the GIL released;
 * zero-copy dumps hold the buffers (Py_buffer views) until the release callback. That
 * callback runs on a worker thread and never takes the GIL: it queues the finished dump, and
 * the views are released by the next call that holds the GIL (dump, sync, stats, close).
 *
 * Any thread may close a session or a stream while other threads still call into it: the
 * native calls that run without the GIL are counted (busy), close first refuses new calls
 * (adump.ClosedError), then waits for the counted ones to return before it frees what they
 * use, as the library requires (no call on a stream concurrently with its close). */
#include "pyadump_int.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "adump/adump.h"
#include "adump/host.h"

struct py_stream;

/* A zero-copy dump in flight: the views adump reads from until its release callback. */
struct zc_pending {
	struct zc_pending *next;
	struct py_session *sess;
	PyObject *check;                /* callable -> bool, or NULL; called on a worker */
	PyObject *on_release;           /* callable(task_id, status), or NULL */
	uint32_t task_id;
	int status;
	uint32_t view_count;
	Py_buffer views[];
};

struct py_session {
	PyObject_HEAD
	struct adump_session *s;
	PyObject *callback;             /* callback sink: callable(name, offset, data, is_last) */
	pthread_mutex_t lock;           /* guards done and the busy counts */
	pthread_cond_t idle;            /* a busy count fell to 0, or the session is closed */
	struct zc_pending *done;        /* released by adump, views still held */
	struct py_stream *streams;      /* open streams, closed with the session */
	unsigned busy_count;            /* native calls on it or its streams, GIL released */
	bool is_closing;                /* close began: every new call is refused */
	bool is_closed;                 /* adump_session_destroy() returned */
	int closed_error;               /* adump_session_destroy()'s return */
};

struct py_stream {
	PyObject_HEAD
	struct py_session *sess;        /* strong reference */
	struct adump_host_stream *hs;   /* NULL once closed */
	unsigned busy_count;            /* its native calls running without the GIL */
	bool is_closing;                /* close began (unlinked from sess->streams) */
	struct py_stream *next, **pprev;
};

static PyObject *session_type;
static PyObject *stream_type;

/* adump starts its worker threads inside session and stream calls, and threads inherit the
 * caller's signal mask. Python handles signals in its main thread only; a Ctrl-C the kernel
 * delivers to a worker instead interrupts that worker's system calls (EINTR in its io_uring
 * waits) and leaves the main thread unaware of it. So those calls run with every signal
 * blocked, and the workers keep that mask. */
static void signals_block(sigset_t *saved)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, saved);
}

static void signals_restore(const sigset_t *saved)
{
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

/* ---- calls in flight ------------------------------------------------------------------- */

/* With the GIL: count a native call on @sess (and on @st, if not NULL) about to run without
 * the GIL; busy_leave() after it, with the GIL again. */
static void busy_enter(struct py_session *sess, struct py_stream *st)
{
	pthread_mutex_lock(&sess->lock);
	sess->busy_count++;
	if (st)
		st->busy_count++;
	pthread_mutex_unlock(&sess->lock);
}

static void busy_leave(struct py_session *sess, struct py_stream *st)
{
	pthread_mutex_lock(&sess->lock);
	sess->busy_count--;
	if (st)
		st->busy_count--;
	pthread_cond_broadcast(&sess->idle);
	pthread_mutex_unlock(&sess->lock);
}

/* With the GIL (released while waiting): wait until *@count, a busy count of @sess, is 0.
 * New calls are refused by then, so once 0 it stays 0. */
static void busy_wait(struct py_session *sess, const unsigned *count)
{
	Py_BEGIN_ALLOW_THREADS
	pthread_mutex_lock(&sess->lock);
	while (*count)
		pthread_cond_wait(&sess->idle, &sess->lock);
	pthread_mutex_unlock(&sess->lock);
	Py_END_ALLOW_THREADS
}

/* ---- zero-copy bookkeeping --------------------------------------------------------------- */

/* Worker thread, without the GIL: queue the dump for drain(). */
static void zc_release(void *user, uint32_t task_id, int status)
{
	struct zc_pending *p = user;
	struct py_session *sess = p->sess;

	p->task_id = task_id;
	p->status = status;
	pthread_mutex_lock(&sess->lock);
	p->next = sess->done;
	sess->done = p;
	pthread_mutex_unlock(&sess->lock);
}

/* Worker thread: the caller's check, under the GIL. A false result or an exception fails
 * the dump rather than publish bytes the caller says are stale. */
static int zc_check(void *user, uint32_t task_id)
{
	struct zc_pending *p = user;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *res = PyObject_CallNoArgs(p->check);
	int ret;

	if (!res) {
		PyErr_WriteUnraisable(p->check);
		ret = -ADUMP_ERR_CALLBACK;
	} else {
		ret = PyObject_IsTrue(res) == 1 ? 0 : -ADUMP_ERR_CORRUPT;
		Py_DECREF(res);
	}
	PyErr_Clear();
	PyGILState_Release(g);
	return ret;
}

static void zc_free(struct zc_pending *p)
{
	for (uint32_t i = 0; i < p->view_count; i++)
		PyBuffer_Release(&p->views[i]);
	Py_XDECREF(p->check);
	Py_XDECREF(p->on_release);
	PyMem_Free(p);
}

/* With the GIL: release the views of every finished zero-copy dump and tell their owners.
 * Exceptions of on_release callbacks are reported as unraisable; drain never fails. */
static void drain(struct py_session *sess)
{
	struct zc_pending *p;

	pyadump_log_drain();
	pthread_mutex_lock(&sess->lock);
	p = sess->done;
	sess->done = NULL;
	pthread_mutex_unlock(&sess->lock);
	while (p) {
		struct zc_pending *next = p->next;

		if (p->on_release) {
			PyObject *res = PyObject_CallFunction(p->on_release, "Ii", p->task_id,
							      p->status);

			if (!res)
				PyErr_WriteUnraisable(p->on_release);
			Py_XDECREF(res);
		}
		zc_free(p);
		p = next;
	}
}

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

/* ---- Session ----------------------------------------------------------------------------- */

static PyObject *session_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	PyObject *callback = NULL;
	struct py_session *self;
	int ret;

	if (!PyArg_ParseTuple(args, ":_Session"))
		return NULL;
	if (pyadump_parse_config(kw, &cfg, &callback) < 0 ||
	    pyadump_config_check(&cfg, callback) < 0)
		return NULL;
	self = (struct py_session *)PyType_GenericNew(type, NULL, NULL);
	if (!self)
		return NULL;
	pthread_mutex_init(&self->lock, NULL);
	pthread_cond_init(&self->idle, NULL);
	if (callback) {
		Py_INCREF(callback);
		self->callback = callback;
		cfg.chunk_fn = chunk_to_python;
		cfg.chunk_user = self;
	}
	Py_BEGIN_ALLOW_THREADS
	sigset_t saved;

	signals_block(&saved);
	ret = adump_session_create(&cfg, &self->s);
	signals_restore(&saved);
	Py_END_ALLOW_THREADS
	pyadump_log_drain();
	if (ret < 0) {
		Py_DECREF(self);
		return pyadump_raise(ret, NULL, cfg.dump_path);
	}
	return (PyObject *)self;
}

static void stream_close_locked(struct py_stream *st, int *ret);

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
		drain(self);
		return;
	}
	self->is_closing = true;
	while (self->streams) {
		/* Held: its owner thread may drop the last reference while the close waits. */
		struct py_stream *st = self->streams;

		Py_INCREF((PyObject *)st);
		stream_close_locked(st, &ret);
		Py_DECREF((PyObject *)st);
	}
	busy_wait(self, &self->busy_count);
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
	drain(self);
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
	busy_enter(self, NULL);
	Py_BEGIN_ALLOW_THREADS
	ret = adump_session_flush(self->s);
	Py_END_ALLOW_THREADS
	busy_leave(self, NULL);
	drain(self);
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

static PyObject *chan_dict(const struct adump_stream_stats *c)
{
	return Py_BuildValue("{sIsKsKsIsKsK}", "stream_id", c->stream_id, "records",
			     (unsigned long long)c->records, "drops", (unsigned long long)c->drops,
			     "ring_high_water", c->ring_high_water, "producer_wait_count",
			     (unsigned long long)c->producer_wait_count, "producer_wait_ns",
			     (unsigned long long)c->producer_wait_ns);
}

static const char *const backend_names[] = { "auto", "uring", "pwrite" };

static PyObject *session_stats(PyObject *obj, PyObject *unused)
{
	struct py_session *self = (struct py_session *)obj;
	struct adump_stats st;
	PyObject *d, *streams;

	if (!self->s || self->is_closing)
		return pyadump_raise_closed("session");
	drain(self);
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
		PyObject *c = chan_dict(&st.streams[i]);

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
	PyTypeObject *tp = (PyTypeObject *)stream_type;
	uint64_t device_id = 0;
	struct py_stream *st;
	int ret;

	if (!PyArg_ParseTuple(args, "|O&:stream", pyadump_uint64_conv, &device_id))
		return NULL;
	if (!self->s || self->is_closing)
		return pyadump_raise_closed("session");
	if (device_id > UINT32_MAX)
		return pyadump_raise(-ADUMP_ERR_CONFIG, "device_id out of range", NULL);
	cfg.device_id = (uint32_t)device_id;
	st = (struct py_stream *)PyType_GenericNew(tp, NULL, NULL);
	if (!st)
		return NULL;
	{
		sigset_t saved;

		signals_block(&saved);
		ret = adump_host_stream_open(self->s, &cfg, &st->hs);
		signals_restore(&saved);
	}
	if (ret < 0) {
		Py_DECREF(st);
		return pyadump_raise(ret, NULL, NULL);
	}
	Py_INCREF((PyObject *)self);
	st->sess = self;
	st->next = self->streams;
	if (st->next)
		st->next->pprev = &st->next;
	st->pprev = &self->streams;
	self->streams = st;
	return (PyObject *)st;
}

static PyMethodDef session_methods[] = {
	{ "close", session_close, METH_NOARGS,
	  "close() -> first error code: close the streams, flush, stop the workers" },
	{ "flush", session_flush, METH_NOARGS, "flush() -> 0 or the session's first error" },
	{ "stats", session_stats, METH_NOARGS, "stats() -> dict of every counter" },
	{ "dir", session_dir, METH_NOARGS, "dir() -> <dump_path>/<time_dir>" },
	{ "error", session_error, METH_NOARGS, "error() -> the session's first error, or 0" },
	{ "stream", session_stream, METH_VARARGS, "stream(device_id=0) -> host stream" },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot session_slots[] = {
	{ Py_tp_new, session_new },
	{ Py_tp_dealloc, session_dealloc },
	{ Py_tp_methods, session_methods },
	{ Py_tp_doc, "_Session(**config): a native capture session" },
	{ 0, NULL },
};

static PyType_Spec session_spec = {
	.name = "adump._adump._Session",
	.basicsize = sizeof(struct py_session),
	.flags = Py_TPFLAGS_DEFAULT,
	.slots = session_slots,
};

/* ---- Stream ------------------------------------------------------------------------------ */

/* Close @st and unlink it: new calls on it are refused, the calls in flight on other
 * threads are waited for, then its dumps (with the GIL released); *@ret keeps the first
 * error. The close counts as a call on the session, which waits for it. A stream another
 * thread is closing already is left to that thread. */
static void stream_close_locked(struct py_stream *st, int *ret)
{
	struct py_session *sess = st->sess;
	struct adump_host_stream *hs = st->hs;
	int r;

	if (!hs || st->is_closing)
		return;
	st->is_closing = true;
	*st->pprev = st->next;
	if (st->next)
		st->next->pprev = st->pprev;
	st->next = NULL;
	st->pprev = NULL;
	busy_enter(sess, NULL);
	busy_wait(sess, &st->busy_count);
	st->hs = NULL;
	Py_BEGIN_ALLOW_THREADS
	r = adump_host_stream_close(hs);
	Py_END_ALLOW_THREADS
	busy_leave(sess, NULL);
	if (r < 0 && *ret == 0)
		*ret = r;
	drain(sess);
}

static void stream_dealloc(PyObject *obj)
{
	struct py_stream *st = (struct py_stream *)obj;
	PyTypeObject *tp = Py_TYPE(obj);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
	int ret = 0;

	if (st->sess) {
		stream_close_locked(st, &ret);
		Py_DECREF(st->sess);
	}
	tp_free(obj);
	Py_DECREF(tp);
}

/* The native stream of @st for a call made with the GIL held, or NULL with
 * adump.ClosedError when the stream or its session is closed or closing. */
static struct adump_host_stream *stream_get(struct py_stream *st)
{
	if (!st->hs || st->is_closing || !st->sess || !st->sess->s || st->sess->is_closing) {
		pyadump_raise_closed("stream");
		return NULL;
	}
	return st->hs;
}

/* The header attributes of dump(attrs=...): a dict or a sequence of (name, value) str tuples,
 * into @out (PyMem, *@count entries; strings borrowed from the items, which @keep holds). */
static int attrs_from(PyObject *obj, PyObject **keep, struct adump_attr **out, uint32_t *count)
{
	PyObject *seq = PyDict_Check(obj) ? PyDict_Items(obj) : PySequence_List(obj);
	Py_ssize_t n;

	*keep = seq;
	if (!seq)
		return -1;
	n = PyList_Size(seq);
	if (n > ADUMP_HOST_ATTR_MAX) {
		PyErr_Format(PyExc_ValueError, "%zd attributes; at most %d per op", n,
			     ADUMP_HOST_ATTR_MAX);
		return -1;
	}
	*out = PyMem_Calloc((size_t)(n ? n : 1), sizeof(**out));
	if (!*out) {
		PyErr_NoMemory();
		return -1;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		if (!PyArg_ParseTuple(PyList_GetItem(seq, i), "ss:attribute",
				      &(*out)[i].name, &(*out)[i].value))
			return -1;
	}
	*count = (uint32_t)n;
	return 0;
}

/* dump(op_type, op_name, inputs=(), outputs=(), copy=True, check=None, on_release=None,
 * timestamp_us=0, attrs=None, dfx_message=None) -> task id */
static PyObject *stream_dump(PyObject *obj, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "op_type", "op_name", "inputs", "outputs", "copy", "check",
				  "on_release", "timestamp_us", "attrs", "dfx_message", NULL };
	struct adump_host_op op = ADUMP_HOST_OP_INIT;
	struct py_stream *st = (struct py_stream *)obj;
	PyObject *inputs = NULL, *outputs = NULL, *check = Py_None, *on_release = Py_None;
	PyObject *attrs = Py_None, *attrs_keep = NULL;
	struct adump_attr *attr_list = NULL;
	struct adump_host_tensor *tensors = NULL;
	struct zc_pending *p = NULL;
	struct adump_host_stream *hs;
	Py_ssize_t nin, nout, n, taken = 0;
	unsigned long long ts = 0;
	Py_buffer *views;
	uint32_t task_id = 0;
	char reason[512], msg[700];
	int copy = 1, ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|OOpOOKOz:dump", kwlist, &op.op_type,
					 &op.op_name, &inputs, &outputs, &copy, &check,
					 &on_release, &ts, &attrs, &op.dfx_message))
		return NULL;
	hs = stream_get(st);
	if (!hs)
		return NULL;
	if (attrs != Py_None && attrs_from(attrs, &attrs_keep, &attr_list, &op.attr_count) < 0)
		goto fail_attrs;
	op.attrs = attr_list;
	drain(st->sess);
	nin = inputs && inputs != Py_None ? PySequence_Size(inputs) : 0;
	nout = nin < 0 ? -1 : outputs && outputs != Py_None ? PySequence_Size(outputs) : 0;
	if (nin < 0 || nout < 0)
		goto fail_attrs;
	n = nin + nout;
	if (n > ADUMP_HOST_TENSOR_MAX) {
		PyErr_Format(PyExc_ValueError, "%zd tensors; at most %d per op", n,
			     ADUMP_HOST_TENSOR_MAX);
		goto fail_attrs;
	}
	p = PyMem_Calloc(1, sizeof(*p) + (size_t)(n ? n : 1) * sizeof(Py_buffer));
	tensors = PyMem_Calloc((size_t)(n ? n : 1), sizeof(*tensors));
	if (!p || !tensors) {
		PyMem_Free(p);
		PyMem_Free(tensors);
		PyErr_NoMemory();
		goto fail_attrs;
	}
	views = p->views;
	if ((nin && pyadump_tensors_from("inputs", inputs, views, tensors, 0, &taken) < 0) ||
	    (nout && pyadump_tensors_from("outputs", outputs, views, tensors, nin, &taken) < 0))
		goto fail;
	p->view_count = (uint32_t)taken;
	op.inputs = nin ? tensors : NULL;
	op.input_count = (uint32_t)nin;
	op.outputs = nout ? tensors + nin : NULL;
	op.output_count = (uint32_t)nout;
	op.timestamp_us = ts;
	if (!copy) {
		p->sess = st->sess;
		if (check != Py_None) {
			Py_INCREF(check);
			p->check = check;
			op.check_fn = zc_check;
		}
		if (on_release != Py_None) {
			Py_INCREF(on_release);
			p->on_release = on_release;
		}
		op.release_fn = zc_release;
		op.user = p;
	}
	/* The views and the drain above ran Python code: another thread may have closed the
	 * stream meanwhile. From here to the count nothing lets the GIL go. */
	hs = stream_get(st);
	if (!hs)
		goto fail;
	busy_enter(st->sess, st);
	Py_BEGIN_ALLOW_THREADS
	pyadump_reason_begin(reason, sizeof(reason));
	ret = adump_host_dump_op(hs, &op, &task_id);
	pyadump_reason_end();
	Py_END_ALLOW_THREADS
	busy_leave(st->sess, st);
	PyMem_Free(tensors);
	tensors = NULL;
	PyMem_Free(attr_list);              /* the op record holds its own copy */
	Py_XDECREF(attrs_keep);
	if (ret < 0) {
		/* The library logged which field is at fault: that is the message. */
		snprintf(msg, sizeof(msg), "dump of op %s '%s': %s", op.op_type, op.op_name,
			 reason[0] ? reason : adump_strerror(ret));
		if (ret == -ADUMP_ERR_UNSUPPORTED)
			PyErr_Format(PyExc_TypeError, "%s (unsupported dtype)", msg);
		else if (ret == -ADUMP_ERR_WRONG_THREAD)
			pyadump_raise(ret, "stream is owned by another thread: open a stream in "
				      "each thread that dumps", NULL);
		else
			pyadump_raise(ret, msg, NULL);
		zc_free(p);
		return NULL;
	}
	if (copy)
		zc_free(p);
	/* else: p belongs to adump until zc_release queues it for drain() */
	return PyLong_FromUnsignedLong(task_id);
fail:
	p->view_count = (uint32_t)taken;
	zc_free(p);
	PyMem_Free(tensors);
fail_attrs:
	PyMem_Free(attr_list);
	Py_XDECREF(attrs_keep);
	return NULL;
}

static PyObject *stream_sync(PyObject *obj, PyObject *unused)
{
	struct py_stream *st = (struct py_stream *)obj;
	struct adump_host_stream *hs = stream_get(st);
	int ret;

	if (!hs)
		return NULL;
	busy_enter(st->sess, st);
	Py_BEGIN_ALLOW_THREADS
	ret = adump_host_stream_sync(hs);
	Py_END_ALLOW_THREADS
	busy_leave(st->sess, st);
	drain(st->sess);
	if (ret == -ADUMP_ERR_WRONG_THREAD)
		return pyadump_raise(ret, "stream is owned by another thread: sync it from its "
				     "owner", NULL);
	if (ret < 0)
		return pyadump_raise(ret, NULL, NULL);
	Py_RETURN_NONE;
}

/* set_dir(dir or None) -> 0, or -ADUMP_ERR_DROPPED (changed all the same); raises else */
static PyObject *stream_set_dir(PyObject *obj, PyObject *args)
{
	struct py_stream *st = (struct py_stream *)obj;
	struct adump_host_stream *hs;
	PyObject *arg, *path = NULL;
	const char *dir = NULL;
	int ret;

	if (!PyArg_ParseTuple(args, "O:set_dir", &arg))
		return NULL;
	if (arg != Py_None && !PyUnicode_FSConverter(arg, &path))
		return NULL;
	hs = stream_get(st);
	if (!hs) {
		Py_XDECREF(path);
		return NULL;
	}
	if (path)
		dir = PyBytes_AsString(path);
	busy_enter(st->sess, st);
	Py_BEGIN_ALLOW_THREADS
	ret = adump_host_stream_set_dir(hs, dir);
	Py_END_ALLOW_THREADS
	busy_leave(st->sess, st);
	drain(st->sess);
	if (ret < 0 && ret != -ADUMP_ERR_DROPPED) {
		PyObject *r = pyadump_raise(ret, "set_dir", dir);

		Py_XDECREF(path);
		return r;
	}
	Py_XDECREF(path);
	return PyLong_FromLong(ret);
}

static PyObject *stream_close(PyObject *obj, PyObject *unused)
{
	struct py_stream *st = (struct py_stream *)obj;
	int ret = 0;

	stream_close_locked(st, &ret);
	return PyLong_FromLong(ret);
}

static PyObject *stream_stats(PyObject *obj, PyObject *unused)
{
	struct py_stream *st = (struct py_stream *)obj;
	struct adump_host_stream_stats s;
	struct adump_host_stream *hs = stream_get(st);
	PyObject *d;

	if (!hs)
		return NULL;
	drain(st->sess);
	adump_host_stream_stats(hs, &s);
	d = Py_BuildValue("{sIsIsKsKsKsKsKsKsKsK}", "stream_id", s.stream_id, "device_id",
			  s.device_id, "dumps", (unsigned long long)s.dumps, "zero_copy_dumps",
			  (unsigned long long)s.zero_copy_dumps, "refused",
			  (unsigned long long)s.refused, "tensors", (unsigned long long)s.tensors,
			  "payload_bytes", (unsigned long long)s.payload_bytes, "copy_ns",
			  (unsigned long long)s.copy_ns, "released", (unsigned long long)s.released,
			  "release_failures", (unsigned long long)s.release_failures);
	if (d && pyadump_dict_steal(d, "channel", chan_dict(&s.chan))) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

static PyObject *stream_id(PyObject *obj, PyObject *unused)
{
	struct adump_host_stream *hs = stream_get((struct py_stream *)obj);

	return hs ? PyLong_FromUnsignedLong(adump_host_stream_id(hs)) : NULL;
}

static PyMethodDef stream_methods[] = {
	{ "dump", (PyCFunction)(void (*)(void))stream_dump, METH_VARARGS | METH_KEYWORDS,
	  "dump(op_type, op_name, inputs, outputs, copy=True, check=None, on_release=None, "
	  "timestamp_us=0) -> task id" },
	{ "sync", stream_sync, METH_NOARGS, "wait until every dump of the stream is written" },
	{ "set_dir", stream_set_dir, METH_VARARGS,
	  "set_dir(dir) -> 0 or the sync's drop code: the stream's next files go to <dir>/<device>" },
	{ "close", stream_close, METH_NOARGS, "close() -> 0 or the first error code" },
	{ "stats", stream_stats, METH_NOARGS, "stats() -> dict of the stream's counters" },
	{ "id", stream_id, METH_NOARGS, "id() -> the stream id in file names" },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot stream_slots[] = {
	{ Py_tp_dealloc, stream_dealloc },
	{ Py_tp_methods, stream_methods },
	{ Py_tp_doc, "_Stream: a host stream, made by _Session.stream()" },
	{ 0, NULL },
};

static PyType_Spec stream_spec = {
	.name = "adump._adump._Stream",
	.basicsize = sizeof(struct py_stream),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = stream_slots,
};

int pyadump_capture_init(PyObject *m)
{
	session_type = PyType_FromSpec(&session_spec);
	stream_type = session_type ? PyType_FromSpec(&stream_spec) : NULL;
	if (!stream_type)
		return -1;
	Py_INCREF(session_type);
	if (PyModule_AddObject(m, "_Session", session_type) < 0)
		return -1;
	Py_INCREF(stream_type);
	if (PyModule_AddObject(m, "_Stream", stream_type) < 0)
		return -1;
#define DTYPE_CONST(name, val, bits)                                        \
	if (PyModule_AddIntConstant(m, "DT_" #name, val) < 0)               \
		return -1;
	ADUMP_DTYPE_LIST(DTYPE_CONST)
#undef DTYPE_CONST
	return 0;
}
