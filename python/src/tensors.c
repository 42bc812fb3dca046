/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor arguments of _Stream.dump(): buffer-protocol objects (numpy arrays ...) or
 * (buffer, dtype, shape) tuples as adump_host_tensor descriptions over Py_buffer views. A
 * bad item's exception names it ("inputs[2]: ..."). */
#include "pyadump_int.h"

#include <string.h>

#include "adump/adump.h"
#include "adump/host.h"

/* The adump dtype of a buffer format (struct module syntax, native or little-endian). */
static int format_dtype(const Py_buffer *v, int32_t *out)
{
	const char *f = v->format ? v->format : "B";
	char c;

	if (*f == '@' || *f == '=' || *f == '<')
		f++;
	c = f[0];
	if (c && !f[1]) {
		switch (c) {
		case 'e': *out = ADUMP_DT_FLOAT16; return 0;
		case 'f': *out = ADUMP_DT_FLOAT; return 0;
		case 'd': *out = ADUMP_DT_DOUBLE; return 0;
		case '?': *out = ADUMP_DT_BOOL; return 0;
		case 'b': case 'h': case 'i': case 'l': case 'q':
			switch (v->itemsize) {
			case 1: *out = ADUMP_DT_INT8; return 0;
			case 2: *out = ADUMP_DT_INT16; return 0;
			case 4: *out = ADUMP_DT_INT32; return 0;
			case 8: *out = ADUMP_DT_INT64; return 0;
			}
			break;
		case 'B': case 'H': case 'I': case 'L': case 'Q':
			switch (v->itemsize) {
			case 1: *out = ADUMP_DT_UINT8; return 0;
			case 2: *out = ADUMP_DT_UINT16; return 0;
			case 4: *out = ADUMP_DT_UINT32; return 0;
			case 8: *out = ADUMP_DT_UINT64; return 0;
			}
			break;
		}
	}
	PyErr_Format(PyExc_TypeError, "unsupported dtype: buffer format '%s' (item size %zd)",
		     v->format ? v->format : "B", v->itemsize);
	return -1;
}

/* One tensor argument: a C-contiguous buffer of a supported format, or a tuple
 * (buffer, dtype, shape) whose bytes are taken as they are with the given adump dtype and
 * shape (bfloat16, or any dtype a buffer format cannot say). The view is filled in @view. */
static int tensor_from(PyObject *item, Py_buffer *view, struct adump_host_tensor *t)
{
	PyObject *obj = item, *shape = NULL;
	int dtype = -1;

	memset(t, 0, sizeof(*t));
	t->format = ADUMP_FORMAT_ND;
	if (PyTuple_Check(item)) {
		if (PyTuple_Size(item) != 3 ||
		    !PyArg_ParseTuple(item, "OiO:tensor", &obj, &dtype, &shape)) {
			PyErr_Clear();
			PyErr_Format(PyExc_TypeError, "a tuple is (buffer, dtype, shape) with dtype "
				     "an int of adump.DTYPES, got %R", item);
			return -1;
		}
		if (!PyTuple_Check(shape)) {
			PyErr_Format(PyExc_TypeError, "shape must be a tuple, got %R", shape);
			return -1;
		}
	}
	if (PyObject_GetBuffer(obj, view, shape ? PyBUF_C_CONTIGUOUS
						: PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
		return -1;
	t->data = view->buf;
	t->bytes = (uint64_t)view->len;
	if (shape) {
		Py_ssize_t n = PyTuple_Size(shape);

		t->dtype = dtype;
		if (n > ADUMP_MAX_DIMS) {
			PyErr_Format(PyExc_ValueError, "%zd dimensions; at most %d", n,
				     ADUMP_MAX_DIMS);
			goto fail;
		}
		t->dim_count = (uint32_t)n;
		for (Py_ssize_t i = 0; i < n; i++) {
			t->dims[i] = PyLong_AsLongLong(PyTuple_GetItem(shape, i));
			if (t->dims[i] == -1 && PyErr_Occurred())
				goto fail;
		}
		return 0;
	}
	if (format_dtype(view, &t->dtype) < 0)
		goto fail;
	if (view->ndim > ADUMP_MAX_DIMS) {
		PyErr_Format(PyExc_ValueError, "%d dimensions; at most %d", view->ndim,
			     ADUMP_MAX_DIMS);
		goto fail;
	}
	t->dim_count = (uint32_t)view->ndim;
	for (int i = 0; i < view->ndim; i++)
		t->dims[i] = view->shape ? view->shape[i] : view->len / view->itemsize;
	return 0;
fail:
	PyBuffer_Release(view);
	return -1;
}

/* The pending exception again, its message prefixed with "<field>[<i>]: ". */
static void name_the_item(const char *field, Py_ssize_t i)
{
	PyObject *type, *value, *tb;

	PyErr_Fetch(&type, &value, &tb);
	if (!type)
		return;
	if (type == PyExc_MemoryError || !value) {
		PyErr_Restore(type, value, tb);
		return;
	}
	PyErr_Format(type, "%s[%zd]: %S", field, i, value);
	Py_DECREF(type);
	Py_DECREF(value);
	Py_XDECREF(tb);
}

Py_ssize_t pyadump_tensors_from(const char *field, PyObject *seq, Py_buffer *views,
				struct adump_host_tensor *tensors, Py_ssize_t at,
				Py_ssize_t *taken)
{
	Py_ssize_t n = PySequence_Size(seq);

	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *item = PySequence_GetItem(seq, i);
		int ret;

		if (!item)
			return -1;
		ret = tensor_from(item, &views[at + i], &tensors[at + i]);
		Py_DECREF(item);
		if (ret < 0) {
			name_the_item(field, i);
			return -1;
		}
		(*taken)++;
	}
	return n;
}

