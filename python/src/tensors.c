/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor arguments of _Stream.dump(): buffer-protocol objects (numpy arrays ...),
 * (buffer, dtype, shape) tuples or CPU torch tensors, as adump_host_tensor descriptions over
 * Py_buffer views. A bad item's exception names it ("inputs[2]: ..."). And _StatsKeys, the
 * statistics keys a direct dump (adump.torch's) gives the torch tensors it takes. */
#include "pyadump_int.h"

#include <stdlib.h>
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
	PyObject *strided;              /* torch.strided */
	PyObject *s_dtype, *s_shape, *s_data_ptr, *s_is_contiguous, *s_contiguous, *s_is_neg,
		 *s_resolve_neg, *s_layout, *s_is_cpu, *s_version, *s_stride;
} torch_types;

/* _torch_types(Tensor, Parameter, {dtype: adump dtype}, torch.strided) */
PyObject *pyadump_torch_types(PyObject *self, PyObject *args)
{
	PyObject *tensor, *parameter, *dtypes, *strided;

	(void)self;
	if (!PyArg_ParseTuple(args, "O!O!O!O:_torch_types", &PyType_Type, &tensor, &PyType_Type,
			      &parameter, &PyDict_Type, &dtypes, &strided))
		return NULL;
	if (!torch_types.s_dtype) {
		PyObject **names[] = { &torch_types.s_dtype, &torch_types.s_shape,
				       &torch_types.s_data_ptr, &torch_types.s_is_contiguous,
				       &torch_types.s_contiguous, &torch_types.s_is_neg,
				       &torch_types.s_resolve_neg, &torch_types.s_layout,
				       &torch_types.s_is_cpu, &torch_types.s_version,
				       &torch_types.s_stride };
		const char *text[] = { "dtype", "shape", "data_ptr", "is_contiguous", "contiguous",
				       "is_neg", "resolve_neg", "layout", "is_cpu", "_version",
				       "stride" };

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			*names[i] = PyUnicode_InternFromString(text[i]);
			if (!*names[i]) {
				for (size_t j = 0; j < i; j++)
					Py_CLEAR(*names[j]);
				return NULL;
			}
		}
	}
	pyadump_keep(&torch_types.tensor, tensor);
	pyadump_keep(&torch_types.parameter, parameter);
	pyadump_keep(&torch_types.dtypes, dtypes);
	pyadump_keep(&torch_types.strided, strided);
	Py_RETURN_NONE;
}

static bool is_torch_tensor(PyObject *item)
{
	PyObject *type = (PyObject *)Py_TYPE(item);

	return torch_types.tensor && (type == torch_types.tensor || type == torch_types.parameter);
}

/* @t's attribute @name is @want (compared by identity: a bool, torch.strided). */
static int attr_is(PyObject *t, PyObject *name, PyObject *want)
{
	PyObject *v = PyObject_GetAttr(t, name);
	int is;

	if (!v)
		return -1;
	is = v == want;
	Py_DECREF(v);
	return is;
}

/* ---- _StatsKeys -------------------------------------------------------------------------- */

/* The last ADUMP_HOST_STATS_REUSE keyed tensors, as the host stream keeps their statistics:
 * a ring, the oldest replaced. A tensor is known by its id, version and data pointer while
 * it lives (the weak reference tells a new object at a dead one's id). */
struct stats_key_slot {
	PyObject *ref;                  /* weak reference; NULL: empty */
	uintptr_t id;
	long long version;
	uintptr_t ptr;
	uint64_t key;
};

struct py_stats_keys {
	PyObject_HEAD
	struct stats_key_slot slot[ADUMP_HOST_STATS_REUSE];
	unsigned count, next;
	uint64_t last;                  /* the last key given */
};

static PyObject *stats_keys_type;

static void stats_keys_dealloc(PyObject *obj)
{
	struct py_stats_keys *k = (struct py_stats_keys *)obj;
	PyTypeObject *tp = Py_TYPE(obj);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);

	for (unsigned i = 0; i < k->count; i++)
		Py_CLEAR(k->slot[i].ref);
	tp_free(obj);
	Py_DECREF(tp);
}

/* A long attribute or method result of @t (@call: a method). */
static int long_of(PyObject *t, PyObject *name, bool call, long long *out)
{
	PyObject *v = call ? PyObject_CallMethodObjArgs(t, name, NULL) : PyObject_GetAttr(t, name);

	if (!v)
		return -1;
	*out = PyLong_AsLongLong(v);
	Py_DECREF(v);
	return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

int pyadump_stats_key_of(PyObject *keys, PyObject *t, const struct pyadump_torch_id *id,
			 uint64_t *out)
{
	struct py_stats_keys *k = (struct py_stats_keys *)keys;
	struct stats_key_slot *slot = NULL;
	PyObject *ref;

	if (id->is_parameter) {
		*out = 0;
		return 0;
	}
	for (unsigned i = 0; i < k->count; i++) {
		struct stats_key_slot *c = &k->slot[i];

		if (c->id == (uintptr_t)t && c->version == id->version && c->ptr == id->ptr) {
			if (PyWeakref_GetObject(c->ref) == t) {
				*out = c->key;
				return 0;
			}
			slot = c;       /* a dead object's: replaced where it is */
			break;
		}
	}
	ref = PyWeakref_NewRef(t, NULL);
	if (!ref)
		return -1;
	if (!slot && k->count < ADUMP_HOST_STATS_REUSE) {
		slot = &k->slot[k->count++];
	} else if (!slot) {
		slot = &k->slot[k->next];
		k->next = (k->next + 1) % ADUMP_HOST_STATS_REUSE;
	}
	Py_XDECREF(slot->ref);
	slot->ref = ref;
	slot->id = (uintptr_t)t;
	slot->version = id->version;
	slot->ptr = id->ptr;
	slot->key = ++k->last;
	*out = slot->key;
	return 0;
}

int pyadump_stats_key(PyObject *keys, PyObject *t, uint64_t *out)
{
	struct pyadump_torch_id id = { 0 };
	long long ptr = 0;

	/* Parameters get none: code that changes them through .data leaves their version as
	 * it was. */
	if ((PyObject *)Py_TYPE(t) != torch_types.tensor) {
		int is_param = torch_types.parameter ?
			       PyObject_IsInstance(t, torch_types.parameter) : 0;

		if (is_param < 0)
			return -1;
		id.is_parameter = is_param;
	}
	if (!id.is_parameter &&
	    (long_of(t, torch_types.s_version, false, &id.version) < 0 ||
	     long_of(t, torch_types.s_data_ptr, true, &ptr) < 0))
		return -1;
	id.ptr = (uintptr_t)ptr;
	return pyadump_stats_key_of(keys, t, &id, out);
}

bool pyadump_is_stats_keys(PyObject *obj)
{
	return stats_keys_type && Py_TYPE(obj) == (PyTypeObject *)stats_keys_type;
}

static PyObject *stats_keys_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	if ((args && PyTuple_Size(args)) || (kw && PyDict_Size(kw))) {
		PyErr_SetString(PyExc_TypeError, "_StatsKeys() takes no arguments");
		return NULL;
	}
	return PyType_GenericNew(type, NULL, NULL);
}

static PyObject *stats_keys_key(PyObject *obj, PyObject *t)
{
	uint64_t key;

	if (pyadump_stats_key(obj, t, &key) < 0)
		return NULL;
	return PyLong_FromUnsignedLongLong(key);
}

static PyMethodDef stats_keys_methods[] = {
	{ "key", stats_keys_key, METH_O,
	  "key(tensor) -> its statistics key (0 for a parameter): the same for the same tensor "
	  "object at the same version and data pointer, while it lives and is among the last "
	  "HOST_STATS_REUSE keyed" },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot stats_keys_slots[] = {
	{ Py_tp_new, stats_keys_new },
	{ Py_tp_dealloc, stats_keys_dealloc },
	{ Py_tp_methods, stats_keys_methods },
	{ Py_tp_doc, "_StatsKeys(): dump(stats_keys=...)'s keys of torch tensors, worked out "
		     "by the dump itself" },
	{ 0, NULL },
};

static PyType_Spec stats_keys_spec = {
	.name = "adump._adump._StatsKeys",
	.basicsize = sizeof(struct py_stats_keys),
	.flags = Py_TPFLAGS_DEFAULT,
	.slots = stats_keys_slots,
};

int pyadump_tensors_init(PyObject *m)
{
	stats_keys_type = PyType_FromSpec(&stats_keys_spec);
	if (!stats_keys_type)
		return -1;
	Py_INCREF(stats_keys_type);
	if (PyModule_AddObject(m, "_StatsKeys", stats_keys_type) < 0) {
		Py_DECREF(stats_keys_type);
		return -1;
	}
	return 0;
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

/* The ints of tuple @tuple (a torch.Size, a stride()) into @out (room for ADUMP_MAX_DIMS),
 * their count in *@n. Return 0, or -1 with an exception. */
static int ints_from(PyObject *tuple, int64_t *out, uint32_t *n)
{
	Py_ssize_t count = PyTuple_Size(tuple);

	if (count < 0)
		return -1;
	if (count > ADUMP_MAX_DIMS) {
		PyErr_Format(PyExc_ValueError, "%zd dimensions; at most %d", count, ADUMP_MAX_DIMS);
		return -1;
	}
	*n = (uint32_t)count;
	for (Py_ssize_t i = 0; i < count; i++) {
		out[i] = PyLong_AsLongLong(PyTuple_GetItem(tuple, i));
		if (out[i] == -1 && PyErr_Occurred())
			return -1;
	}
	return 0;
}

/* The dimensions of @shape (a tuple of ints: a (buffer, dtype, shape) argument's, a torch
 * tensor's torch.Size) into @t. Return 0, or -1 with an exception. */
static int dims_from(PyObject *shape, struct adump_host_tensor *t)
{
	return ints_from(shape, t->dims, &t->dim_count);
}

/* ---- strided tensors, gathered ----------------------------------------------------------- */

void pyadump_scratch_free(struct pyadump_scratch *sc)
{
	for (unsigned i = 0; i < PYADUMP_SCRATCH_SLOTS; i++)
		free(sc->slot[i].p);
	memset(sc, 0, sizeof(*sc));
}

/* The dump's next slot of @sc, of at least @bytes; NULL when none is left or the slots
 * would hold more than PYADUMP_SCRATCH_BYTES (the caller copies another way). */
static void *scratch_take(struct pyadump_scratch *sc, size_t bytes)
{
	unsigned k = sc->used;
	size_t cap;

	if (k >= PYADUMP_SCRATCH_SLOTS || bytes > PYADUMP_SCRATCH_BYTES)
		return NULL;
	cap = sc->slot[k].cap;
	if (cap < bytes) {
		if (sc->held - cap + bytes > PYADUMP_SCRATCH_BYTES)
			return NULL;
		free(sc->slot[k].p);
		sc->held -= cap;
		sc->slot[k].cap = 0;
		sc->slot[k].p = malloc(bytes);
		if (!sc->slot[k].p)
			return NULL;
		sc->slot[k].cap = bytes;
		sc->held += bytes;
	}
	sc->used++;
	return sc->slot[k].p;
}

/* @len elements of @es bytes, @step bytes apart from @src, to @dst. */
static unsigned char *copy_run(unsigned char *dst, const unsigned char *src, int64_t len,
			       int64_t step, size_t es)
{
	if (step == (int64_t)es) {
		memcpy(dst, src, (size_t)len * es);
		return dst + (size_t)len * es;
	}
	switch (es) {
#define RUN(type)								\
	for (int64_t k = 0; k < len; k++, dst += sizeof(type), src += step) {	\
		type v;								\
										\
		memcpy(&v, src, sizeof(v));					\
		memcpy(dst, &v, sizeof(v));					\
	}									\
	return dst;
	case 1: RUN(uint8_t)
	case 2: RUN(uint16_t)
	case 4: RUN(uint32_t)
	case 8: RUN(uint64_t)
#undef RUN
	default:
		for (int64_t k = 0; k < len; k++, dst += es, src += step)
			memcpy(dst, src, es);
		return dst;
	}
}

/* The @es-byte elements of a strided array (@n dims of sizes @shape and strides @stride,
 * in elements, from @src; none empty) to @dst, in row-major order: dims of one element
 * dropped, and a dim merged into the one outside it where together they are one run; then
 * runs of the innermost dim, copied whole where it is dense. */
static void gather(unsigned char *dst, const unsigned char *src, size_t es, uint32_t n,
		   const int64_t *shape, const int64_t *stride)
{
	int64_t size[ADUMP_MAX_DIMS], step[ADUMP_MAX_DIMS], idx[ADUMP_MAX_DIMS] = { 0 };
	uint32_t d = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (shape[i] == 1)
			continue;
		if (d && step[d - 1] == stride[i] * shape[i]) {
			size[d - 1] *= shape[i];
			step[d - 1] = stride[i];
			continue;
		}
		size[d] = shape[i];
		step[d++] = stride[i];
	}
	if (!d) {
		memcpy(dst, src, es);
		return;
	}
	for (;;) {
		const unsigned char *p = src;
		int64_t i;

		for (uint32_t j = 0; j + 1 < d; j++)
			p += idx[j] * step[j] * (int64_t)es;
		dst = copy_run(dst, p, size[d - 1], step[d - 1] * (int64_t)es, es);
		for (i = (int64_t)d - 2; i >= 0; i--) {
			if (++idx[i] < size[i])
				break;
			idx[i] = 0;
		}
		if (i < 0)
			return;
	}
}

/* @x (a strided CPU tensor, not contiguous, of @t's dims and dtype) gathered into a slot
 * of @sc: t->data set. Return 1, 0 when no slot takes it, -1 with an exception. */
static int gather_into(PyObject *x, struct adump_host_tensor *t, struct pyadump_scratch *sc)
{
	PyObject *st = PyObject_CallMethodObjArgs(x, torch_types.s_stride, NULL);
	PyObject *ptr = NULL;
	int64_t stride[ADUMP_MAX_DIMS];
	uint32_t n, bits = adump_dtype_bits(t->dtype);
	void *src, *dst;

	if (!st || ints_from(st, stride, &n) < 0 || n != t->dim_count)
		goto fail;
	for (uint32_t i = 0; i < n; i++)
		if (stride[i] < 0)
			goto not_taken;         /* torch makes none; gathered another way */
	if (!bits || bits % 8)
		goto not_taken;
	dst = scratch_take(sc, (size_t)t->bytes);
	if (!dst)
		goto not_taken;
	ptr = PyObject_CallMethodObjArgs(x, torch_types.s_data_ptr, NULL);
	src = ptr ? PyLong_AsVoidPtr(ptr) : NULL;
	if (!src) {
		sc->used--;
		if (!PyErr_Occurred())
			goto not_taken;
		goto fail;
	}
	gather(dst, src, bits / 8, n, t->dims, stride);
	t->data = dst;
	Py_DECREF(ptr);
	Py_DECREF(st);
	return 1;
not_taken:
	Py_XDECREF(st);
	return 0;
fail:
	if (st && !PyErr_Occurred())
		PyErr_SetString(PyExc_ValueError, "stride() does not match the shape");
	Py_XDECREF(ptr);
	Py_XDECREF(st);
	return -1;
}

/* A CPU torch tensor of a dtype adump.torch maps (its caller checked device, layout and
 * dtype: adump.torch's _host()), read where it lies: no numpy array, no detached alias.
 * Negated lazily, it is resolved first; not contiguous, it is gathered into a slot of
 * @sc if there is one (NULL: none), else made contiguous by torch. The view holds the
 * tensor (torch's copy, if it made one). *@gathered (NULL ok) says whether it was. */
static int torch_from(PyObject *item, Py_buffer *view, struct adump_host_tensor *t,
		      long dtype, struct pyadump_scratch *sc, bool *gathered)
{
	PyObject *x, *dt = NULL, *shape = NULL, *ptr = NULL;
	uint64_t numel = 1;
	int is_dense, got = 0;

	x = unless(item, torch_types.s_is_neg, false, torch_types.s_resolve_neg);
	if (x) {
		PyObject *r = PyObject_CallMethodObjArgs(x, torch_types.s_is_contiguous, NULL);

		is_dense = r ? PyObject_IsTrue(r) : -1;
		Py_XDECREF(r);
		if (is_dense < 0)
			Py_CLEAR(x);
	}
	if (!x)
		return -1;
	if (dtype < 0) {
		PyObject *code;

		dt = PyObject_GetAttr(x, torch_types.s_dtype);
		code = dt ? PyDict_GetItemWithError(torch_types.dtypes, dt) : NULL;
		if (!code) {
			if (dt && !PyErr_Occurred())
				PyErr_Format(PyExc_TypeError, "unsupported dtype: %R", dt);
			goto fail;
		}
		dtype = PyLong_AsLong(code);
		if (dtype == -1 && PyErr_Occurred())
			goto fail;
	}
	shape = PyObject_GetAttr(x, torch_types.s_shape);
	if (!shape || dims_from(shape, t) < 0)
		goto fail;
	t->dtype = (int32_t)dtype;
	for (uint32_t i = 0; i < t->dim_count; i++)
		numel *= t->dims[i];
	t->bytes = numel * (adump_dtype_bits(t->dtype) / 8);
	if (!is_dense && numel) {
		got = sc ? gather_into(x, t, sc) : 0;
		if (got < 0)
			goto fail;
		if (!got) {
			PyObject *y = PyObject_CallMethodObjArgs(x, torch_types.s_contiguous, NULL);

			if (!y)
				goto fail;
			Py_DECREF(x);
			x = y;
		}
	}
	if (!got) {
		ptr = PyObject_CallMethodObjArgs(x, torch_types.s_data_ptr, NULL);
		if (!ptr)
			goto fail;
		t->data = PyLong_AsVoidPtr(ptr);
		if (!t->data && PyErr_Occurred())
			goto fail;
	}
	if (gathered)
		*gathered = got;
	memset(view, 0, sizeof(*view));
	view->obj = x;                  /* PyBuffer_Release() puts it: a tensor has no buffer
					 * procedures to call */
	view->buf = (void *)t->data;
	view->len = (Py_ssize_t)t->bytes;
	Py_XDECREF(dt);
	Py_DECREF(shape);
	Py_XDECREF(ptr);
	return 0;
fail:
	Py_XDECREF(dt);
	Py_XDECREF(shape);
	Py_XDECREF(ptr);
	Py_DECREF(x);
	return -1;
}

/* dump(direct=True)'s tensor: taken as torch_from() takes it if it is one the native dump
 * takes as it is (pyadump_torch_direct()), with what its statistics key needs in @id.
 * Return: 1 taken, 0 not (nothing held), -1 with an exception. */
static int torch_direct_from(PyObject *item, Py_buffer *view, struct adump_host_tensor *t,
			     struct pyadump_torch_id *id, struct pyadump_scratch *sc)
{
	PyObject *dt, *code;
	bool gathered = false;
	long dtype;
	int ret;

	memset(t, 0, sizeof(*t));
	t->format = ADUMP_FORMAT_ND;
	if (!is_torch_tensor(item))
		return 0;
	dt = PyObject_GetAttr(item, torch_types.s_dtype);
	if (!dt)
		return -1;
	code = PyDict_GetItemWithError(torch_types.dtypes, dt);
	Py_DECREF(dt);
	if (!code)
		return PyErr_Occurred() ? -1 : 0;
	dtype = PyLong_AsLong(code);
	if (dtype == -1 && PyErr_Occurred())
		return -1;
	ret = attr_is(item, torch_types.s_layout, torch_types.strided);
	if (ret > 0)
		ret = attr_is(item, torch_types.s_is_cpu, Py_True);
	if (ret <= 0)
		return ret;
	id->is_parameter = (PyObject *)Py_TYPE(item) != torch_types.tensor;
	if (!id->is_parameter && long_of(item, torch_types.s_version, false, &id->version) < 0)
		return -1;
	if (torch_from(item, view, t, dtype, sc, &gathered) < 0)
		return -1;
	/* The key is the tensor's own: a copy taken of a strided one has another address. */
	if (view->obj == item && !gathered) {
		id->ptr = (uintptr_t)t->data;
	} else if (!id->is_parameter) {
		long long ptr;

		if (long_of(item, torch_types.s_data_ptr, true, &ptr) < 0) {
			PyBuffer_Release(view);
			return -1;
		}
		id->ptr = (uintptr_t)ptr;
	}
	return 1;
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
		return torch_from(item, view, t, -1, NULL, NULL);
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
				Py_ssize_t *taken, struct pyadump_torch_id *ids,
				struct pyadump_scratch *scratch)
{
	Py_ssize_t n = PySequence_Size(seq);

	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *item = PySequence_GetItem(seq, i);
		int ret;

		if (!item)
			return -1;
		if (ids)
			ret = torch_direct_from(item, &views[at + i], &tensors[at + i], &ids[at + i],
						scratch);
		else
			ret = tensor_from(item, &views[at + i], &tensors[at + i]);
		Py_DECREF(item);
		if (ret < 0) {
			name_the_item(field, i);
			return -1;
		}
		if (ids && ret == 0)
			return -2;
		(*taken)++;
	}
	return n;
}
