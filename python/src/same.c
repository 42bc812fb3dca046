/* SPDX-License-Identifier: Apache-2.0 */
/* _same_json(a, b): whether two values made of dicts, lists, tuples, str, int, float, bool
 * and None encode to the same JSON text. Stricter than ==, which takes 1 == 1.0 == True and
 * 0.0 == -0.0: types must be the same exactly, floats the same bits, dicts the same keys in
 * the same order. adump.torch reuses a dump's dfx_message text when its description is the
 * same as the last step's (the same call of the same module, usually). Anything else (a
 * subclass, another type) is not the same. */
#include "pyadump_int.h"

#include <string.h>

static int same(PyObject *a, PyObject *b, int depth);

static int same_items(PyObject *a, PyObject *b, int depth)
{
	Py_ssize_t n = PySequence_Size(a);

	if (n < 0 || PySequence_Size(b) != n)
		return n < 0 ? -1 : 0;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *x = PySequence_GetItem(a, i), *y = x ? PySequence_GetItem(b, i) : NULL;
		int r = y ? same(x, y, depth + 1) : -1;

		Py_XDECREF(x);
		Py_XDECREF(y);
		if (r <= 0)
			return r;
	}
	return 1;
}

static int same_dicts(PyObject *a, PyObject *b, int depth)
{
	Py_ssize_t pa = 0, pb = 0;
	PyObject *ka, *va, *kb, *vb;

	if (PyDict_Size(a) != PyDict_Size(b))
		return 0;
	while (PyDict_Next(a, &pa, &ka, &va)) {
		int r;

		if (!PyDict_Next(b, &pb, &kb, &vb))
			return 0;
		r = same(ka, kb, depth + 1);
		if (r > 0)
			r = same(va, vb, depth + 1);
		if (r <= 0)
			return r;
	}
	return 1;
}

static int same(PyObject *a, PyObject *b, int depth)
{
	PyTypeObject *t = Py_TYPE(a);

	if (a == b)
		return 1;
	if (t != Py_TYPE(b) || depth > 64)
		return 0;
	if (t == &PyUnicode_Type) {
		int r = PyUnicode_Compare(a, b);

		return r == -1 && PyErr_Occurred() ? -1 : r == 0;
	}
	if (t == &PyLong_Type) {
		int r = PyObject_RichCompareBool(a, b, Py_EQ);

		return r;
	}
	if (t == &PyFloat_Type) {
		double x = PyFloat_AsDouble(a), y = PyFloat_AsDouble(b);

		return memcmp(&x, &y, sizeof(x)) == 0;
	}
	if (t == &PyList_Type || t == &PyTuple_Type)
		return same_items(a, b, depth);
	if (t == &PyDict_Type)
		return same_dicts(a, b, depth);
	return 0;                       /* bool and None are singletons: a == b above */
}

static PyObject *same_json(PyObject *self, PyObject *args)
{
	PyObject *a, *b;
	int r;

	(void)self;
	if (!PyArg_ParseTuple(args, "OO:_same_json", &a, &b))
		return NULL;
	r = same(a, b, 0);
	if (r < 0)
		return NULL;
	return PyBool_FromLong(r);
}

static PyMethodDef same_methods[] = {
	{ "_same_json", same_json, METH_VARARGS,
	  "_same_json(a, b) -> whether a and b (dicts, lists, tuples, str, int, float, bool, "
	  "None) encode to the same JSON text: the same types, float bits and key order" },
	{ NULL, NULL, 0, NULL },
};

int pyadump_same_init(PyObject *m)
{
	return PyModule_AddFunctions(m, same_methods);
}
