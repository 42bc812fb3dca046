/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor arguments of _Stream.dump(): buffer-protocol objects (numpy arrays ...),
 * (buffer, dtype, shape) tuples or CPU torch tensors, as adump_host_tensor descriptions over
 * Py_buffer views. A bad item's exception names it ("inputs[2]: ..."). */
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

/* torch's tensor types, taken as they are (adump.torch registers them): exact types only,
 * never a subclass, whose data_ptr() may not hold its values. */
static struct {
	PyObject *tensor, *parameter;   /* types */
	PyObject *dtypes;               /* {torch.dtype: adump dtype} */
	PyObject *s_dtype, *s_shape, *s_data_ptr, *s_is_contiguous, *s_contiguous, *s_is_neg,
		 *s_resolve_neg;
} torch_types;

/* _torch_types(Tensor, Parameter, {dtype: adump dtype}) */
PyObject *pyadump_torch_types(PyObject *self, PyObject *args)
{
	PyObject *tensor, *parameter, *dtypes;

	(void)self;
	if (!PyArg_ParseTuple(args, "O!O!O!:_torch_types", &PyType_Type, &tensor, &PyType_Type,
			      &parameter, &PyDict_Type, &dtypes))
		return NULL;
	if (!torch_types.s_dtype) {
		torch_types.s_dtype = PyUnicode_InternFromString("dtype");
		torch_types.s_shape = PyUnicode_InternFromString("shape");
		torch_types.s_data_ptr = PyUnicode_InternFromString("data_ptr");
		torch_types.s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
		torch_types.s_contiguous = PyUnicode_InternFromString("contiguous");
		torch_types.s_is_neg = PyUnicode_InternFromString("is_neg");
		torch_types.s_resolve_neg = PyUnicode_InternFromString("resolve_neg");
		if (!torch_types.s_dtype || !torch_types.s_shape || !torch_types.s_data_ptr ||
		    !torch_types.s_is_contiguous || !torch_types.s_contiguous ||
		    !torch_types.s_is_neg || !torch_types.s_resolve_neg) {
			Py_CLEAR(torch_types.s_dtype);
			return NULL;
		}
	}
	Py_INCREF(tensor);
	Py_INCREF(parameter);
	Py_INCREF(dtypes);
	Py_XDECREF(torch_types.tensor);
	Py_XDECREF(torch_types.parameter);
	Py_XDECREF(torch_types.dtypes);
	torch_types.tensor = tensor;
	torch_types.parameter = parameter;
	torch_types.dtypes = dtypes;
	Py_RETURN_NONE;
}

static bool is_torch_tensor(PyObject *item)
{
	PyObject *type = (PyObject *)Py_TYPE(item);

	return torch_types.tensor && (type == torch_types.tensor || type == torch_types.parameter);
}

/* @t with @name() called on it, a new reference, when @test() says so; else @t again. */
static PyObject *unless(PyObject *t, PyObject *test, bool want, PyObject *name)
{
	PyObject *r = PyObject_CallMethodObjArgs(t, test, NULL);
	int truth;

	if (!r)
		return NULL;
	truth = PyObject_IsTrue(r);
	Py_DECREF(r);
	if (truth < 0)
		return NULL;
	if ((truth != 0) == want) {
		Py_INCREF(t);
		return t;
	}
	return PyObject_CallMethodObjArgs(t, name, NULL);
}

/* The dimensions of @shape (a tuple of ints: a (buffer, dtype, shape) argument's, a torch
 * tensor's torch.Size) into @t. Return 0, or -1 with an exception. */
static int dims_from(PyObject *shape, struct adump_host_tensor *t)
{
	Py_ssize_t n = PyTuple_Size(shape);

	if (n < 0)
		return -1;
	if (n > ADUMP_MAX_DIMS) {
		PyErr_Format(PyExc_ValueError, "%zd dimensions; at most %d", n, ADUMP_MAX_DIMS);
		return -1;
	}
	t->dim_count = (uint32_t)n;
	for (Py_ssize_t i = 0; i < n; i++) {
		t->dims[i] = PyLong_AsLongLong(PyTuple_GetItem(shape, i));
		if (t->dims[i] == -1 && PyErr_Occurred())
			return -1;
	}
	return 0;
}

/* A CPU torch tensor of a dtype adump.torch maps (its caller checked device, layout and
 * dtype: adump.torch's _host()), read where it lies: no numpy array, no detached alias.
 * Not contiguous, or negated lazily, it is made so first. The view holds the tensor. */
static int torch_from(PyObject *item, Py_buffer *view, struct adump_host_tensor *t)
{
	PyObject *x, *dt = NULL, *code, *shape = NULL, *ptr = NULL;
	uint64_t numel = 1;
	long dtype;

	x = unless(item, torch_types.s_is_neg, false, torch_types.s_resolve_neg);
	if (x) {
		PyObject *y = unless(x, torch_types.s_is_contiguous, true, torch_types.s_contiguous);

		Py_DECREF(x);
		x = y;
	}
	if (!x)
		return -1;
	dt = PyObject_GetAttr(x, torch_types.s_dtype);
	code = dt ? PyDict_GetItemWithError(torch_types.dtypes, dt) : NULL;
	if (!code) {
		if (dt && !PyErr_Occurred())
			PyErr_Format(PyExc_TypeError, "unsupported dtype: %R", dt);
		goto fail;
	}
	dtype = PyLong_AsLong(code);
	shape = PyObject_GetAttr(x, torch_types.s_shape);
	ptr = shape ? PyObject_CallMethodObjArgs(x, torch_types.s_data_ptr, NULL) : NULL;
	if ((dtype == -1 && PyErr_Occurred()) || !ptr || dims_from(shape, t) < 0)
		goto fail;
	t->dtype = (int32_t)dtype;
	for (uint32_t i = 0; i < t->dim_count; i++)
		numel *= t->dims[i];
	t->data = PyLong_AsVoidPtr(ptr);
	if (!t->data && PyErr_Occurred())
		goto fail;
	t->bytes = numel * (adump_dtype_bits(t->dtype) / 8);
	memset(view, 0, sizeof(*view));
	view->obj = x;                  /* PyBuffer_Release() puts it: a tensor has no buffer
					 * procedures to call */
	view->buf = (void *)t->data;
	view->len = (Py_ssize_t)t->bytes;
	Py_DECREF(dt);
	Py_DECREF(shape);
	Py_DECREF(ptr);
	return 0;
fail:
	Py_XDECREF(dt);
	Py_XDECREF(shape);
	Py_XDECREF(ptr);
	Py_DECREF(x);
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
	if (is_torch_tensor(item))
		return torch_from(item, view, t);
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
		t->dtype = dtype;
		if (dims_from(shape, t) < 0)
			goto fail;
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

