/* SPDX-License-Identifier: Apache-2.0 */
/* _adump.Reader and _adump.Packed: the reader API (include/adump/reader.h) for Python. The
 * Reader parses one dump at a time and hands its header out as plain Python values; payloads
 * are read into caller-supplied buffers (numpy arrays), or mapped by the Python layer where
 * the bytes sit uncompressed in a file. */
#include "pyadump_int.h"

#include <stdio.h>
#include <string.h>

#include "adump/reader.h"

struct py_reader {
	PyObject_HEAD
	struct adump_reader *r;
};

struct py_packed {
	PyObject_HEAD
	struct adump_reader_packed *p;
};

static PyObject *reader_type;
static PyObject *packed_type;

/* ---- Reader ------------------------------------------------------------------------------ */

static PyObject *reader_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	struct py_reader *self;
	int ret;

	if (!PyArg_ParseTuple(args, ":Reader"))
		return NULL;
	self = (struct py_reader *)PyType_GenericNew(type, NULL, NULL);
	if (!self)
		return NULL;
	ret = adump_reader_create(&self->r);
	if (ret < 0) {
		Py_DECREF(self);
		return pyadump_raise(ret, NULL, NULL);
	}
	return (PyObject *)self;
}

static void reader_dealloc(PyObject *obj)
{
	struct py_reader *self = (struct py_reader *)obj;
	PyTypeObject *tp = Py_TYPE(obj);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);

	adump_reader_destroy(self->r);
	tp_free(obj);
	Py_DECREF(tp);
}

static PyObject *dims_tuple(const uint64_t *dims, uint32_t count)
{
	PyObject *t = PyTuple_New(count);

	if (!t)
		return NULL;
	for (uint32_t i = 0; i < count; i++) {
		PyObject *v = PyLong_FromUnsignedLongLong(dims[i]);

		if (!v || PyTuple_SetItem(t, i, v) < 0) {
			Py_DECREF(t);
			return NULL;
		}
	}
	return t;
}

/* One tensor: (kind, index, dtype, format, sub_format, dims, orig_dims, address, bytes,
 * offset, npy_descr or None). */
static PyObject *tensor_tuple(const struct adump_reader_tensor *t)
{
	const char *descr = adump_reader_npy_descr(t->info.dtype);
	PyObject *dims = dims_tuple(t->info.dims, t->info.dim_count);
	PyObject *orig = dims_tuple(t->info.orig_dims, t->info.orig_dim_count);
	PyObject *res = NULL;

	if (dims && orig)
		res = Py_BuildValue("(IIiiiOOKKKz)", (unsigned)t->info.kind, t->index,
				    t->info.dtype, t->info.format, t->info.sub_format, dims, orig,
				    (unsigned long long)t->info.address,
				    (unsigned long long)t->info.bytes,
				    (unsigned long long)t->offset, descr);
	Py_XDECREF(dims);
	Py_XDECREF(orig);
	return res;
}

/* The open dump's header as a dict: version, dump_time, op_name, dfx_message, attrs
 * [(name, value)], tensors [tensor_tuple], header_bytes, file_bytes, name. */
static PyObject *header_dict(struct adump_reader *r)
{
	const struct adump_reader_header *h = adump_reader_header(r);
	PyObject *d, *attrs, *tensors;

	if (!h)
		return pyadump_raise(-ADUMP_ERR_STATE, "no dump is open", NULL);
	d = PyDict_New();
	if (!d)
		return NULL;
	attrs = PyList_New(h->attr_count);
	tensors = PyList_New(h->tensor_count);
	if (!attrs || !tensors)
		goto fail;
	for (uint32_t i = 0; i < h->attr_count; i++) {
		PyObject *a = Py_BuildValue("(ss)", h->attrs[i].name ? h->attrs[i].name : "",
					    h->attrs[i].value ? h->attrs[i].value : "");

		if (!a || PyList_SetItem(attrs, i, a) < 0)
			goto fail;
	}
	for (uint32_t i = 0; i < h->tensor_count; i++) {
		PyObject *t = tensor_tuple(&h->tensors[i]);

		if (!t || PyList_SetItem(tensors, i, t) < 0)
			goto fail;
	}
	if (pyadump_dict_steal(d, "version", PyUnicode_FromString(h->version ? h->version : "")) ||
	    pyadump_dict_steal(d, "dump_time", PyLong_FromUnsignedLongLong(h->dump_time)) ||
	    pyadump_dict_steal(d, "op_name", PyUnicode_FromString(h->op_name ? h->op_name : "")) ||
	    pyadump_dict_steal(d, "dfx_message", PyUnicode_FromString(h->dfx_message)) ||
	    pyadump_dict_steal(d, "header_bytes", PyLong_FromUnsignedLongLong(h->header_bytes)) ||
	    pyadump_dict_steal(d, "file_bytes", PyLong_FromUnsignedLongLong(h->file_bytes)) ||
	    pyadump_dict_steal(d, "name", PyUnicode_FromString(adump_reader_name(r))))
		goto fail;
	if (pyadump_dict_steal(d, "attrs", attrs) || pyadump_dict_steal(d, "tensors", tensors)) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
fail:
	Py_XDECREF(attrs);
	Py_XDECREF(tensors);
	Py_DECREF(d);
	return NULL;
}

static PyObject *reader_open(PyObject *obj, PyObject *arg)
{
	struct py_reader *self = (struct py_reader *)obj;
	PyObject *bytes;
	int ret;

	if (!PyUnicode_FSConverter(arg, &bytes))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = adump_reader_open(self->r, PyBytes_AsString(bytes));
	Py_END_ALLOW_THREADS
	if (ret < 0) {
		pyadump_raise(ret, adump_reader_error(self->r), PyBytes_AsString(bytes));
		Py_DECREF(bytes);
		return NULL;
	}
	Py_DECREF(bytes);
	return header_dict(self->r);
}

/* open_packed(packed, name, segment, offset, length, crc32c, checked) */
static PyObject *reader_open_packed(PyObject *obj, PyObject *args)
{
	struct py_reader *self = (struct py_reader *)obj;
	struct adump_reader_packed_entry e = { .status = ADUMP_PACKED_ENTRY, .message = "" };
	unsigned long long off, len;
	unsigned int crc;
	PyObject *packed;
	int checked, ret;

	if (!PyArg_ParseTuple(args, "O!ssKKIp:open_packed", (PyTypeObject *)packed_type, &packed,
			      &e.name, &e.segment, &off, &len, &crc, &checked))
		return NULL;
	if (!((struct py_packed *)packed)->p)
		return pyadump_raise_closed("packed index");
	e.offset = off;
	e.length = len;
	e.crc32c = crc;
	e.index_path = "";
	Py_BEGIN_ALLOW_THREADS
	ret = adump_reader_open_packed(self->r, ((struct py_packed *)packed)->p, &e, checked);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return pyadump_raise(ret, adump_reader_error(self->r), NULL);
	return header_dict(self->r);
}

/* Refuse a tensor index the open dump does not have, before it is cut to the reader's 32
 * bits (2**32 would read tensor 0). Return: 0, or -1 with the error set. */
static int check_index(struct py_reader *self, uint64_t idx)
{
	const struct adump_reader_header *h = adump_reader_header(self->r);
	char msg[128];

	if (!h) {
		pyadump_raise(-ADUMP_ERR_STATE, "no dump is open", NULL);
		return -1;
	}
	if (idx < h->tensor_count)
		return 0;
	snprintf(msg, sizeof(msg), "tensor %llu out of range: the dump has %u tensors",
		 (unsigned long long)idx, h->tensor_count);
	pyadump_raise(-ADUMP_ERR_CONFIG, msg, adump_reader_name(self->r));
	return -1;
}

/* read_into(tensor, buffer[, offset]): fill a writable buffer with payload bytes. */
static PyObject *reader_read_into(PyObject *obj, PyObject *args)
{
	struct py_reader *self = (struct py_reader *)obj;
	uint64_t idx, off = 0;
	Py_buffer view;
	int ret;

	if (!PyArg_ParseTuple(args, "O&w*|O&:read_into", pyadump_uint64_conv, &idx, &view,
			      pyadump_uint64_conv, &off))
		return NULL;
	if (check_index(self, idx) < 0) {
		PyBuffer_Release(&view);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	ret = adump_reader_read(self->r, (uint32_t)idx, off, view.buf, (size_t)view.len);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&view);
	if (ret < 0)
		return pyadump_raise(ret, adump_reader_error(self->r), NULL);
	Py_RETURN_NONE;
}

static PyObject *reader_check(PyObject *obj, PyObject *unused)
{
	struct py_reader *self = (struct py_reader *)obj;
	int ret;

	Py_BEGIN_ALLOW_THREADS
	ret = adump_reader_check(self->r);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return pyadump_raise(ret, adump_reader_error(self->r), NULL);
	Py_RETURN_NONE;
}

/* tensor_stats(i) -> dict of the reader's streamed statistics. */
static PyObject *reader_stats(PyObject *obj, PyObject *arg)
{
	struct py_reader *self = (struct py_reader *)obj;
	struct adump_reader_stats st;
	uint64_t idx;
	int ret;

	if (!pyadump_uint64_conv(arg, &idx) || check_index(self, idx) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = adump_reader_tensor_stats(self->r, (uint32_t)idx, &st);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return pyadump_raise(ret, adump_reader_error(self->r), NULL);
	return Py_BuildValue("{sKsKsKsKsdsdsd}", "count", (unsigned long long)st.element_count,
			     "finite", (unsigned long long)st.finite_count, "nan",
			     (unsigned long long)st.nan_count, "inf",
			     (unsigned long long)st.inf_count, "min", st.min, "max", st.max,
			     "mean", st.mean);
}

static PyObject *reader_close(PyObject *obj, PyObject *unused)
{
	adump_reader_close(((struct py_reader *)obj)->r);
	Py_RETURN_NONE;
}

static PyMethodDef reader_methods[] = {
	{ "open", reader_open, METH_O, "open(path) -> header dict" },
	{ "open_packed", reader_open_packed, METH_VARARGS,
	  "open_packed(packed, name, segment, offset, length, crc32c, checked) -> header dict" },
	{ "read_into", reader_read_into, METH_VARARGS,
	  "read_into(tensor, buffer[, offset]): read payload bytes into a writable buffer" },
	{ "check", reader_check, METH_NOARGS, "check the container checksum (lz4, packed)" },
	{ "tensor_stats", reader_stats, METH_O, "tensor_stats(i) -> dict" },
	{ "close", reader_close, METH_NOARGS, "close the open dump" },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot reader_slots[] = {
	{ Py_tp_new, reader_new },
	{ Py_tp_dealloc, reader_dealloc },
	{ Py_tp_methods, reader_methods },
	{ Py_tp_doc, "Reader(): parses one dump file at a time (not thread-safe)" },
	{ 0, NULL },
};

static PyType_Spec reader_spec = {
	.name = "adump._adump.Reader",
	.basicsize = sizeof(struct py_reader),
	.flags = Py_TPFLAGS_DEFAULT,
	.slots = reader_slots,
};

/* ---- Packed index list ------------------------------------------------------------------- */

static PyObject *packed_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	struct py_packed *self;
	PyObject *path;
	int ret;

	if (!PyArg_ParseTuple(args, "O&:Packed", PyUnicode_FSConverter, &path))
		return NULL;
	self = (struct py_packed *)PyType_GenericNew(type, NULL, NULL);
	if (!self) {
		Py_DECREF(path);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	ret = adump_reader_packed_open(PyBytes_AsString(path), &self->p);
	Py_END_ALLOW_THREADS
	if (ret < 0) {
		pyadump_raise(ret, NULL, PyBytes_AsString(path));
		Py_DECREF(path);
		Py_DECREF(self);
		return NULL;
	}
	Py_DECREF(path);
	return (PyObject *)self;
}

static void packed_dealloc(PyObject *obj)
{
	PyTypeObject *tp = Py_TYPE(obj);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);

	adump_reader_packed_close(((struct py_packed *)obj)->p);
	tp_free(obj);
	Py_DECREF(tp);
}

/* next() -> (status, name, segment, offset, length, crc32c, index_path, line, message) or None */
static PyObject *packed_next(PyObject *obj, PyObject *unused)
{
	struct py_packed *self = (struct py_packed *)obj;
	const struct adump_reader_packed_entry *e;
	int ret;

	if (!self->p)
		return pyadump_raise_closed("packed index");
	Py_BEGIN_ALLOW_THREADS
	ret = adump_reader_packed_next(self->p, &e);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return pyadump_raise(ret, NULL, adump_reader_packed_dir(self->p));
	if (ret == 0)
		Py_RETURN_NONE;
	return Py_BuildValue("(izzKKIzIz)", (int)e->status, e->name, e->segment,
			     (unsigned long long)e->offset, (unsigned long long)e->length,
			     (unsigned)e->crc32c, e->index_path, (unsigned)e->line, e->message);
}

static PyObject *packed_dir(PyObject *obj, PyObject *unused)
{
	struct py_packed *self = (struct py_packed *)obj;

	if (!self->p)
		return pyadump_raise_closed("packed index");
	return PyUnicode_DecodeFSDefault(adump_reader_packed_dir(self->p));
}

static PyObject *packed_close(PyObject *obj, PyObject *unused)
{
	struct py_packed *self = (struct py_packed *)obj;

	adump_reader_packed_close(self->p);
	self->p = NULL;
	Py_RETURN_NONE;
}

static PyMethodDef packed_methods[] = {
	{ "next", packed_next, METH_NOARGS, "next() -> entry tuple, or None at the end" },
	{ "dir", packed_dir, METH_NOARGS, "dir() -> the packed directory" },
	{ "close", packed_close, METH_NOARGS, "close the index and its segments" },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot packed_slots[] = {
	{ Py_tp_new, packed_new },
	{ Py_tp_dealloc, packed_dealloc },
	{ Py_tp_methods, packed_methods },
	{ Py_tp_doc, "Packed(path): the index lines of a packed capture" },
	{ 0, NULL },
};

static PyType_Spec packed_spec = {
	.name = "adump._adump.Packed",
	.basicsize = sizeof(struct py_packed),
	.flags = Py_TPFLAGS_DEFAULT,
	.slots = packed_slots,
};

/* packed_file_kind(path) -> 0 none, 1 index, 2 segment */
static PyObject *py_packed_file_kind(PyObject *self, PyObject *arg)
{
	PyObject *bytes;
	int kind;

	if (!PyUnicode_FSConverter(arg, &bytes))
		return NULL;
	kind = adump_reader_packed_file_kind(PyBytes_AsString(bytes));
	Py_DECREF(bytes);
	return PyLong_FromLong(kind);
}

/* dtype_name(dtype) -> "DT_FLOAT", or None for an unknown value */
static PyObject *py_dtype_name(PyObject *self, PyObject *arg)
{
	long dt = PyLong_AsLong(arg);
	const char *name;

	if (dt == -1 && PyErr_Occurred())
		return NULL;
	name = adump_dtype_name((int32_t)dt);
	if (!name)
		Py_RETURN_NONE;
	return PyUnicode_FromString(name);
}

/* parse_name(name) -> (op_type, op_name, task_id, stream_id or None, timestamp), or None for
 * a name that is not a dump's (adump_reader_name_parse()) */
static PyObject *py_parse_name(PyObject *self, PyObject *arg)
{
	struct adump_reader_name f;
	PyObject *bytes;
	int ret;

	if (!PyUnicode_FSConverter(arg, &bytes))
		return NULL;
	ret = adump_reader_name_parse(PyBytes_AsString(bytes), &f);
	Py_DECREF(bytes);
	if (ret < 0)
		Py_RETURN_NONE;
	if (!f.has_stream_id)
		return Py_BuildValue("ssKOK", f.op_type, f.op_name, (unsigned long long)f.task_id,
				     Py_None, (unsigned long long)f.timestamp);
	return Py_BuildValue("ssKKK", f.op_type, f.op_name, (unsigned long long)f.task_id,
			     (unsigned long long)f.stream_id, (unsigned long long)f.timestamp);
}

/* dtype_bits(dtype) -> bits per element, 0 when not fixed or unknown */
static PyObject *py_dtype_bits(PyObject *self, PyObject *arg)
{
	long dt = PyLong_AsLong(arg);

	if (dt == -1 && PyErr_Occurred())
		return NULL;
	return PyLong_FromUnsignedLong(adump_dtype_bits((int32_t)dt));
}

static PyMethodDef reader_functions[] = {
	{ "dtype_bits", py_dtype_bits, METH_O, "dtype_bits(dtype) -> bits per element, 0 if none" },
	{ "packed_file_kind", py_packed_file_kind, METH_O,
	  "packed_file_kind(path) -> 0 (not packed), 1 (index), 2 (segment)" },
	{ "dtype_name", py_dtype_name, METH_O, "dtype_name(dtype) -> 'DT_FLOAT' or None" },
	{ "parse_name", py_parse_name, METH_O,
	  "parse_name(name) -> (op_type, op_name, task_id, stream_id or None, timestamp) as "
	  "msaccucmp reads a dump's name, or None" },
	{ NULL, NULL, 0, NULL },
};

int pyadump_reader_init(PyObject *m)
{
	reader_type = PyType_FromSpec(&reader_spec);
	if (!reader_type)
		return -1;
	packed_type = PyType_FromSpec(&packed_spec);
	if (!packed_type)
		return -1;
	Py_INCREF(reader_type);
	if (PyModule_AddObject(m, "Reader", reader_type) < 0)
		return -1;
	Py_INCREF(packed_type);
	if (PyModule_AddObject(m, "Packed", packed_type) < 0)
		return -1;
	return PyModule_AddFunctions(m, reader_functions);
}
