/* SPDX-License-Identifier: Apache-2.0 */
/* _adump.Stream: a host stream (include/adump/host.h) for Python, made by _Session.stream():
 * dump() of an op's tensors (copied with the GIL released, or zero-copy views held until the
 * release callback), sync, set_dir, stats and close. What it shares with the session is in
 * capture_int.h. */
#include "capture_int.h"

#include <stdio.h>

/* Close @st and unlink it: new calls on it are refused, the calls in flight on other
 * threads are waited for, then its dumps (with the GIL released); *@ret keeps the first
 * error. The close counts as a call on the session, which waits for it. A stream another
 * thread is closing already is left to that thread. */
void pyadump_stream_close(struct py_stream *st, int *ret)
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
	pyadump_busy_enter(sess, NULL);
	pyadump_busy_wait(sess, &st->busy_count);
	st->hs = NULL;
	Py_BEGIN_ALLOW_THREADS
	r = adump_host_stream_close(hs);
	Py_END_ALLOW_THREADS
	pyadump_busy_leave(sess, NULL);
	/* A dump taking its tensors on another thread (the GIL let go in a call of theirs)
	 * may hold a slot: then the slots go with the stream object. */
	if (!st->scratch.is_busy)
		pyadump_scratch_free(&st->scratch);
	if (r < 0 && *ret == 0)
		*ret = r;
	pyadump_drain(sess);
}

static void stream_dealloc(PyObject *obj)
{
	struct py_stream *st = (struct py_stream *)obj;
	PyTypeObject *tp = Py_TYPE(obj);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
	int ret = 0;

	if (st->sess) {
		pyadump_stream_close(st, &ret);
		Py_DECREF(st->sess);
	}
	pyadump_scratch_free(&st->scratch);
	tp_free(obj);
	Py_DECREF(tp);
}

/* stream(device_id) of _Session: the calling thread's host stream of @sess, linked into its
 * list of open streams (closed with it). */
PyObject *pyadump_stream_open(struct py_session *sess,
			      const struct adump_host_stream_config *cfg)
{
	PyTypeObject *tp = (PyTypeObject *)pyadump_stream_type;
	struct py_stream *st;
	int ret;

	st = (struct py_stream *)PyType_GenericNew(tp, NULL, NULL);
	if (!st)
		return NULL;
	{
		sigset_t saved;

		pyadump_signals_block(&saved);
		ret = adump_host_stream_open(sess->s, cfg, &st->hs);
		pyadump_signals_restore(&saved);
	}
	if (ret < 0) {
		Py_DECREF(st);
		return pyadump_raise(ret, NULL, NULL);
	}
	Py_INCREF((PyObject *)sess);
	st->sess = sess;
	st->next = sess->streams;
	if (st->next)
		st->next->pprev = &st->next;
	st->pprev = &sess->streams;
	sess->streams = st;
	return (PyObject *)st;
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

/* The keys of dump(stats_keys=...): a sequence of @n ints (0 for none), or NULL with an
 * exception. */
static uint64_t *keys_from(PyObject *obj, Py_ssize_t n)
{
	Py_ssize_t got = PySequence_Size(obj);
	uint64_t *keys;

	if (got < 0)
		return NULL;
	if (got != n) {
		PyErr_Format(PyExc_ValueError, "stats_keys: %zd keys for %zd tensors", got, n);
		return NULL;
	}
	keys = PyMem_Calloc((size_t)(n ? n : 1), sizeof(*keys));
	if (!keys) {
		PyErr_NoMemory();
		return NULL;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *item = PySequence_GetItem(obj, i);

		keys[i] = item ? PyLong_AsUnsignedLongLong(item) : (uint64_t)-1;
		Py_XDECREF(item);
		if (keys[i] == (uint64_t)-1 && PyErr_Occurred()) {
			PyMem_Free(keys);
			return NULL;
		}
	}
	return keys;
}

/* dump(op_type, op_name, inputs=(), outputs=(), copy=True, check=None, on_release=None,
 * timestamp_us=0, attrs=None, dfx_message=None, stats_keys=None, direct=False) -> task id,
 * or None: with direct, a tensor is not one it takes as it is (pyadump_tensors_from()),
 * and nothing was done. stats_keys: a sequence of keys, or (direct) a _StatsKeys that keys
 * the tensors. */
static PyObject *stream_dump(PyObject *obj, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "op_type", "op_name", "inputs", "outputs", "copy", "check",
				  "on_release", "timestamp_us", "attrs", "dfx_message", "stats_keys",
				  "direct", NULL };
	struct adump_host_op op = ADUMP_HOST_OP_INIT;
	struct py_stream *st = (struct py_stream *)obj;
	PyObject *inputs = NULL, *outputs = NULL, *check = Py_None, *on_release = Py_None;
	PyObject *attrs = Py_None, *attrs_keep = NULL, *stats_keys = Py_None;
	struct adump_attr *attr_list = NULL;
	uint64_t *keys = NULL;
	struct adump_host_tensor *tensors = NULL;
	struct zc_pending *p = NULL;
	struct adump_host_stream *hs;
	struct pyadump_torch_id *ids = NULL;
	struct pyadump_scratch *scratch = NULL;
	Py_ssize_t nin, nout, n, taken = 0, got = 0;
	bool is_keyed;
	unsigned long long ts = 0;
	Py_buffer *views;
	uint32_t task_id = 0;
	char reason[512], msg[700];
	int copy = 1, direct = 0, ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|OOpOOKOzOp:dump", kwlist, &op.op_type,
					 &op.op_name, &inputs, &outputs, &copy, &check,
					 &on_release, &ts, &attrs, &op.dfx_message, &stats_keys,
					 &direct))
		return NULL;
	hs = stream_get(st);
	if (!hs)
		return NULL;
	if (attrs != Py_None && attrs_from(attrs, &attrs_keep, &attr_list, &op.attr_count) < 0)
		goto fail_attrs;
	op.attrs = attr_list;
	pyadump_drain(st->sess);
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
	is_keyed = stats_keys != Py_None && pyadump_is_stats_keys(stats_keys);
	if (is_keyed && !direct) {
		PyErr_SetString(PyExc_TypeError, "stats_keys: a _StatsKeys keys direct dumps only");
		goto fail_attrs;
	}
	if (stats_keys != Py_None && !is_keyed) {
		keys = keys_from(stats_keys, n);
		if (!keys)
			goto fail_attrs;
	}
	p = PyMem_Calloc(1, sizeof(*p) + (size_t)(n ? n : 1) * sizeof(Py_buffer));
	tensors = PyMem_Calloc((size_t)(n ? n : 1), sizeof(*tensors));
	ids = direct ? PyMem_Calloc((size_t)(n ? n : 1), sizeof(*ids)) : NULL;
	if (!p || !tensors || (direct && !ids)) {
		PyMem_Free(p);
		PyMem_Free(tensors);
		PyMem_Free(ids);
		PyErr_NoMemory();
		goto fail_attrs;
	}
	views = p->views;
	/* Copying, the dump is done with the scratch once adump_host_dump_op() returns. */
	if (direct && copy && !st->scratch.is_busy) {
		scratch = &st->scratch;
		scratch->is_busy = true;
		scratch->used = 0;
	}
	got = nin ? pyadump_tensors_from("inputs", inputs, views, tensors, 0, &taken, ids,
					 scratch) : 0;
	if (got >= 0 && nout)
		got = pyadump_tensors_from("outputs", outputs, views, tensors, nin, &taken, ids,
					   scratch);
	if (got < 0)
		goto fail;      /* -2: direct, a tensor it does not take as it is; nothing done */
	p->view_count = (uint32_t)taken;
	if (is_keyed) {
		PyObject *seqs[2] = { inputs, outputs };
		Py_ssize_t counts[2] = { nin, nout };

		keys = PyMem_Calloc((size_t)(n ? n : 1), sizeof(*keys));
		if (!keys) {
			PyErr_NoMemory();
			goto fail;
		}
		for (int j = 0, at = 0; j < 2; j++) {
			for (Py_ssize_t i = 0; i < counts[j]; i++, at++) {
				PyObject *t = PySequence_GetItem(seqs[j], i);
				int r = t ? pyadump_stats_key_of(stats_keys, t, &ids[at], &keys[at])
					  : -1;

				Py_XDECREF(t);
				if (r < 0)
					goto fail;
			}
		}
	}
	op.stats_keys = keys;
	PyMem_Free(ids);
	ids = NULL;
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
			op.check_fn = pyadump_zc_check;
		}
		if (on_release != Py_None) {
			Py_INCREF(on_release);
			p->on_release = on_release;
		}
		op.release_fn = pyadump_zc_release;
		op.user = p;
	}
	/* The views and the drain above ran Python code: another thread may have closed the
	 * stream meanwhile. From here to the count nothing lets the GIL go. */
	hs = stream_get(st);
	if (!hs)
		goto fail;
	pyadump_busy_enter(st->sess, st);
	Py_BEGIN_ALLOW_THREADS
	pyadump_reason_begin(reason, sizeof(reason));
	ret = adump_host_dump_op(hs, &op, &task_id);
	pyadump_reason_end();
	Py_END_ALLOW_THREADS
	pyadump_busy_leave(st->sess, st);
	if (scratch)
		scratch->is_busy = false;
	PyMem_Free(tensors);
	tensors = NULL;
	PyMem_Free(attr_list);              /* the op record holds its own copy */
	Py_XDECREF(attrs_keep);
	PyMem_Free(keys);
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
		pyadump_zc_free(p);
		return NULL;
	}
	if (copy)
		pyadump_zc_free(p);
	/* else: p belongs to adump until pyadump_zc_release queues it for pyadump_drain() */
	return PyLong_FromUnsignedLong(task_id);
fail:
	if (scratch)
		scratch->is_busy = false;
	p->view_count = (uint32_t)taken;
	pyadump_zc_free(p);
	PyMem_Free(tensors);
	PyMem_Free(ids);
fail_attrs:
	PyMem_Free(attr_list);
	Py_XDECREF(attrs_keep);
	PyMem_Free(keys);
	if (got == -2)
		Py_RETURN_NONE;
	return NULL;
}

static PyObject *stream_sync(PyObject *obj, PyObject *unused)
{
	struct py_stream *st = (struct py_stream *)obj;
	struct adump_host_stream *hs = stream_get(st);
	int ret;

	if (!hs)
		return NULL;
	pyadump_busy_enter(st->sess, st);
	Py_BEGIN_ALLOW_THREADS
	ret = adump_host_stream_sync(hs);
	Py_END_ALLOW_THREADS
	pyadump_busy_leave(st->sess, st);
	pyadump_drain(st->sess);
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
	char reason[512];
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
	pyadump_busy_enter(st->sess, st);
	Py_BEGIN_ALLOW_THREADS
	pyadump_reason_begin(reason, sizeof(reason));
	ret = adump_host_stream_set_dir(hs, dir);
	pyadump_reason_end();
	Py_END_ALLOW_THREADS
	pyadump_busy_leave(st->sess, st);
	pyadump_drain(st->sess);
	if (ret < 0 && ret != -ADUMP_ERR_DROPPED) {
		/* The library logged why (a ".." component, a link in the way): that is the
		 * message. */
		PyObject *r = pyadump_raise(ret, reason[0] ? reason : "set_dir", dir);

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

	pyadump_stream_close(st, &ret);
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
	pyadump_drain(st->sess);
	adump_host_stream_stats(hs, &s);
	d = Py_BuildValue("{sIsIsKsKsKsKsKsKsKsK}", "stream_id", s.stream_id, "device_id",
			  s.device_id, "dumps", (unsigned long long)s.dumps, "zero_copy_dumps",
			  (unsigned long long)s.zero_copy_dumps, "refused",
			  (unsigned long long)s.refused, "tensors", (unsigned long long)s.tensors,
			  "payload_bytes", (unsigned long long)s.payload_bytes, "copy_ns",
			  (unsigned long long)s.copy_ns, "released", (unsigned long long)s.released,
			  "release_failures", (unsigned long long)s.release_failures);
	if (d && pyadump_dict_steal(d, "channel", pyadump_chan_dict(&s.chan))) {
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
	  "timestamp_us=0, attrs=None, dfx_message=None, stats_keys=None, direct=False) -> task "
	  "id, or None when direct and a tensor is not one it takes as it is (nothing done)" },
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

PyType_Spec pyadump_stream_spec = {
	.name = "adump._adump._Stream",
	.basicsize = sizeof(struct py_stream),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = stream_slots,
};
