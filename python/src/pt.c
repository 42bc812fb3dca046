/* SPDX-License-Identifier: Apache-2.0 */
/* _adump.pt_read(path, checked=False) -> dict: where torch.save put the one tensor of a .pt
 * file (adump_pt_read), so msprobe-layout dumps are read with numpy and no torch. */
#include "pyadump_int.h"

#include "adump/reader.h"

static PyObject *py_pt_read(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "checked", NULL };
	PyObject *path_o, *path_b = NULL, *dims = NULL, *ret = NULL;
	struct adump_pt_info info;
	int checked = 0, rc;
	char msg[1024];

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p", kwlist, &path_o, &checked))
		return NULL;
	if (!PyUnicode_FSConverter(path_o, &path_b))
		return NULL;
	msg[0] = '\0';
	Py_BEGIN_ALLOW_THREADS
	rc = adump_pt_read(PyBytes_AsString(path_b), checked, &info, msg, sizeof(msg));
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		pyadump_raise(rc, msg, PyBytes_AsString(path_b));
		goto out;
	}
	dims = PyTuple_New(info.dim_count);
	if (!dims)
		goto out;
	for (uint32_t i = 0; i < info.dim_count; i++)
		if (PyTuple_SetItem(dims, i, PyLong_FromUnsignedLongLong(info.dims[i])) < 0)
			goto out;
	ret = Py_BuildValue("{s:i,s:O,s:K,s:K,s:O,s:O}", "dtype_code", info.dtype, "shape", dims,
			    "offset", (unsigned long long)info.offset, "bytes",
			    (unsigned long long)info.bytes, "requires_grad",
			    info.requires_grad ? Py_True : Py_False, "is_parameter",
			    info.is_parameter ? Py_True : Py_False);
out:
	Py_XDECREF(dims);
	Py_XDECREF(path_b);
	return ret;
}

static PyMethodDef pt_methods[] = {
	{ "pt_read", (PyCFunction)(void (*)(void))py_pt_read, METH_VARARGS | METH_KEYWORDS,
	  "pt_read(path, checked=False) -> {dtype_code, shape, offset, bytes, requires_grad, "
	  "is_parameter}: the tensor torch.save wrote in path" },
	{ NULL, NULL, 0, NULL },
};

int pyadump_pt_init(PyObject *module)
{
	return PyModule_AddFunctions(module, pt_methods);
}
