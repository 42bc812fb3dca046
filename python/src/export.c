/* SPDX-License-Identifier: Apache-2.0 */
/* _adump.export_msprobe(src, out, md5=False, no_data=False) -> entries written: an
 * adump.torch capture in msprobe's layout (adump_export_msprobe), the GIL released while it
 * reads and writes. */
#include "pyadump_int.h"

#include "adump/export.h"

static PyObject *py_export_msprobe(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "src", "out", "md5", "no_data", NULL };
	PyObject *src_o, *out_o, *src_b = NULL, *out_b = NULL, *ret = NULL;
	int md5 = 0, no_data = 0;
	unsigned flags = 0;
	char msg[1024];
	long n;

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|pp", kwlist, &src_o, &out_o, &md5,
					 &no_data))
		return NULL;
	if (!PyUnicode_FSConverter(src_o, &src_b) || !PyUnicode_FSConverter(out_o, &out_b))
		goto out;
	flags |= md5 ? ADUMP_EXPORT_MD5 : 0;
	flags |= no_data ? ADUMP_EXPORT_NO_DATA : 0;
	Py_BEGIN_ALLOW_THREADS
	n = adump_export_msprobe(PyBytes_AsString(src_b), PyBytes_AsString(out_b), flags, msg,
				 sizeof(msg));
	Py_END_ALLOW_THREADS
	pyadump_log_drain();
	if (n < 0)
		pyadump_raise((int)n, msg, PyBytes_AsString(src_b));
	else
		ret = PyLong_FromLong(n);
out:
	Py_XDECREF(src_b);
	Py_XDECREF(out_b);
	return ret;
}

static PyObject *py_pt_check(PyObject *self, PyObject *arg)
{
	PyObject *path_b = NULL;
	char msg[512];
	int ret;

	(void)self;
	if (!PyUnicode_FSConverter(arg, &path_b))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = adump_pt_check(PyBytes_AsString(path_b), msg, sizeof(msg));
	Py_END_ALLOW_THREADS
	if (ret < 0) {
		pyadump_raise(ret, msg, PyBytes_AsString(path_b));
		Py_DECREF(path_b);
		return NULL;
	}
	Py_DECREF(path_b);
	Py_RETURN_NONE;
}

static PyMethodDef export_methods[] = {
	{ "pt_check", py_pt_check, METH_O,
	  "pt_check(path): raise unless path is a whole torch zip file (.pt)" },
	{ "export_msprobe", (PyCFunction)(void (*)(void))py_export_msprobe,
	  METH_VARARGS | METH_KEYWORDS,
	  "export_msprobe(src, out, md5=False, no_data=False) -> number of entries written" },
	{ NULL, NULL, 0, NULL },
};

int pyadump_export_init(PyObject *module)
{
	return PyModule_AddFunctions(module, export_methods);
}
