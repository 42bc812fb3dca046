/* SPDX-License-Identifier: Apache-2.0 */
/* _describe(): adump.torch's description of a call's arguments (_torch_info.describe()) in
 * C for what calls pass most: CPU tensors of torch's own two types and stored dtypes, and
 * lists, tuples and dicts of exact type, and None. Everything else (a tensor subclass or an
 * unstored dtype, a namedtuple, a number, a device ...) goes to the Python describer
 * registered with _describe_setup(), which does them all; the two give the same result. */
#include "pyadump_int.h"

static struct {
	PyObject *tensor, *parameter;   /* torch.Tensor, torch.nn.Parameter */
	PyObject *names;                /* {torch.dtype: its name}: the dtypes stored */
	PyObject *slow;                 /* describe(obj, tensors, kind, skipped, key) */
	PyObject *s_dtype, *s_shape, *s_is_sparse, *s_requires_grad;
	PyObject *s_type, *s_tensor, *v_tensor_type;
} dsc;

static PyObject *describe(PyObject *obj, PyObject *tensors, PyObject *kind, PyObject *skipped,
			  PyObject *key);

static PyObject *slow(PyObject *obj, PyObject *tensors, PyObject *kind, PyObject *skipped,
		      PyObject *key)
{
	return PyObject_CallFunctionObjArgs(dsc.slow, obj, tensors, kind, skipped, key, NULL);
}

/* A tensor's description, or Py_None (not new) when the slow path must make it. */
static PyObject *describe_tensor(PyObject *t, PyObject *tensors, PyObject *kind)
{
	PyObject *dtype = PyObject_GetAttr(t, dsc.s_dtype), *name, *sparse, *shape = NULL;
	PyObject *grad = NULL, *place = NULL, *d = NULL;
	int r;

	if (!dtype)
		return NULL;
	name = PyDict_GetItemWithError(dsc.names, dtype);       /* borrowed */
	Py_DECREF(dtype);
	if (!name)
		return PyErr_Occurred() ? NULL : Py_None;
	sparse = PyObject_GetAttr(t, dsc.s_is_sparse);
	r = sparse ? PyObject_IsTrue(sparse) : -1;
	Py_XDECREF(sparse);
	if (r != 0)
		return r < 0 ? NULL : Py_None;
	shape = PyObject_GetAttr(t, dsc.s_shape);
	if (shape) {
		PyObject *list = PySequence_List(shape);

		Py_DECREF(shape);
		shape = list;
	}
	grad = shape ? PyObject_GetAttr(t, dsc.s_requires_grad) : NULL;
	place = grad ? PyUnicode_FromFormat("%U.%zd", kind, PyList_Size(tensors)) : NULL;
	d = place ? PyDict_New() : NULL;
	if (d && (PyDict_SetItem(d, dsc.s_type, dsc.v_tensor_type) < 0 ||
		  PyDict_SetItem(d, dsc.s_dtype, name) < 0 || PyDict_SetItem(d, dsc.s_shape, shape) < 0 ||
		  PyDict_SetItem(d, dsc.s_requires_grad, grad) < 0 ||
		  PyDict_SetItem(d, dsc.s_tensor, place) < 0 || PyList_Append(tensors, t) < 0))
		Py_CLEAR(d);
	Py_XDECREF(shape);
	Py_XDECREF(grad);
	Py_XDECREF(place);
	return d;
}

static PyObject *describe_items(PyObject *seq, PyObject *tensors, PyObject *kind,
				PyObject *skipped)
{
	Py_ssize_t n = PySequence_Size(seq);
	PyObject *list = n >= 0 ? PyList_New(n) : NULL;

	if (!list)
		return NULL;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *item = PySequence_GetItem(seq, i);
		PyObject *d = item ? describe(item, tensors, kind, skipped, Py_None) : NULL;

		Py_XDECREF(item);
		if (!d || PyList_SetItem(list, i, d) < 0) {       /* steals d */
			Py_DECREF(list);
			return NULL;
		}
	}
	return list;
}

static PyObject *describe_dict(PyObject *dict, PyObject *tensors, PyObject *kind,
			       PyObject *skipped)
{
	PyObject *out = PyDict_New(), *k, *v;
	Py_ssize_t pos = 0;

	if (!out)
		return NULL;
	while (PyDict_Next(dict, &pos, &k, &v)) {
		PyObject *name = PyObject_Str(k);
		PyObject *d = name ? describe(v, tensors, kind, skipped, k) : NULL;
		int r = d ? PyDict_SetItem(out, name, d) : -1;

		Py_XDECREF(name);
		Py_XDECREF(d);
		if (r < 0) {
			Py_DECREF(out);
			return NULL;
		}
	}
	return out;
}

static PyObject *describe_any(PyObject *obj, PyObject *tensors, PyObject *kind,
			      PyObject *skipped, PyObject *key)
{
	PyObject *type = (PyObject *)Py_TYPE(obj);

	if (obj == Py_None) {
		Py_RETURN_NONE;
	}
	if (type == dsc.tensor || type == dsc.parameter) {
		PyObject *d = describe_tensor(obj, tensors, kind);

		return d == Py_None ? slow(obj, tensors, kind, skipped, key) : d;
	}
	if (type == (PyObject *)&PyList_Type || type == (PyObject *)&PyTuple_Type)
		return describe_items(obj, tensors, kind, skipped);
	if (type == (PyObject *)&PyDict_Type)
		return describe_dict(obj, tensors, kind, skipped);
	return slow(obj, tensors, kind, skipped, key);
}

/* A list that holds itself raises RecursionError, as the Python describer does. */
static PyObject *describe(PyObject *obj, PyObject *tensors, PyObject *kind, PyObject *skipped,
			  PyObject *key)
{
	PyObject *d;

	if (Py_EnterRecursiveCall(" in adump's describe()"))
		return NULL;
	d = describe_any(obj, tensors, kind, skipped, key);
	Py_LeaveRecursiveCall();
	return d;
}

/* _describe(obj, tensors, kind, skipped=None, key=None) */
static PyObject *py_describe(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "obj", "tensors", "kind", "skipped", "key", NULL };
	PyObject *obj, *tensors, *kind, *skipped = Py_None, *key = Py_None;

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO!U|OO:_describe", kwlist, &obj, &PyList_Type,
					 &tensors, &kind, &skipped, &key))
		return NULL;
	if (!dsc.slow) {
		PyErr_SetString(PyExc_RuntimeError, "_describe: _describe_setup() was not called");
		return NULL;
	}
	return describe(obj, tensors, kind, skipped, key);
}

/* _describe_setup(Tensor, Parameter, {dtype: name}, describe) */
static PyObject *py_describe_setup(PyObject *self, PyObject *args)
{
	PyObject *tensor, *parameter, *names, *fn;

	(void)self;
	if (!PyArg_ParseTuple(args, "O!O!O!O:_describe_setup", &PyType_Type, &tensor, &PyType_Type,
			      &parameter, &PyDict_Type, &names, &fn))
		return NULL;
	if (!PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_TypeError, "_describe_setup: describe is not callable");
		return NULL;
	}
	pyadump_keep(&dsc.tensor, tensor);
	pyadump_keep(&dsc.parameter, parameter);
	pyadump_keep(&dsc.names, names);
	pyadump_keep(&dsc.slow, fn);
	Py_RETURN_NONE;
}

static PyMethodDef describe_methods[] = {
	{ "_describe", (PyCFunction)(void (*)(void))py_describe, METH_VARARGS | METH_KEYWORDS,
	  "_describe(obj, tensors, kind, skipped=None, key=None): adump.torch's describe()" },
	{ "_describe_setup", py_describe_setup, METH_VARARGS,
	  "_describe_setup(Tensor, Parameter, {dtype: name}, describe): the types described "
	  "here and the describer of everything else" },
	{ NULL, NULL, 0, NULL },
};

int pyadump_describe_init(PyObject *m)
{
	if (!(dsc.s_dtype = PyUnicode_InternFromString("dtype")) ||
	    !(dsc.s_shape = PyUnicode_InternFromString("shape")) ||
	    !(dsc.s_is_sparse = PyUnicode_InternFromString("is_sparse")) ||
	    !(dsc.s_requires_grad = PyUnicode_InternFromString("requires_grad")) ||
	    !(dsc.s_type = PyUnicode_InternFromString("type")) ||
	    !(dsc.s_tensor = PyUnicode_InternFromString("tensor")) ||
	    !(dsc.v_tensor_type = PyUnicode_InternFromString("torch.Tensor")))
		return -1;
	return PyModule_AddFunctions(m, describe_methods);
}
