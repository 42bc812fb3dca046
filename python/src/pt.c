/* SPDX-License-Identifier: Apache-2.0 */
/* _adump.pt_read(path, checked=False, fd=-1) -> dict: where torch.save put the one tensor of
 * a .pt file (adump_pt_read), so msprobe-layout dumps are read with numpy and no torch. With
 * @fd (the caller's, left open) the file open there is read and @path only names it. */
#include "pyadump_int.h"

#include <errno.h>
#include <unistd.h>

#include "adump/reader.h"
#include "reader/msprobe.h"

static PyObject *py_pt_read(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "checked", "fd", NULL };
	PyObject *path_o, *path_b = NULL, *dims = NULL, *ret = NULL;
	struct adump_pt_info info;
	int checked = 0, fd = -1, rc;
	char msg[1024];

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|pi", kwlist, &path_o, &checked, &fd))
		return NULL;
	if (!PyUnicode_FSConverter(path_o, &path_b))
		return NULL;
	msg[0] = '\0';
	Py_BEGIN_ALLOW_THREADS
	if (fd >= 0) {
		int own = dup(fd);      /* adump_pt_read_fd() closes its own */

		rc = own < 0 ? -errno : adump_pt_read_fd(own, PyBytes_AsString(path_b), checked,
							 &info, msg, sizeof(msg));
	} else {
		rc = adump_pt_read(PyBytes_AsString(path_b), checked, &info, msg, sizeof(msg));
	}
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
	  "pt_read(path, checked=False, fd=-1) -> {dtype_code, shape, offset, bytes, requires_grad, "
	  "is_parameter}: the tensor torch.save wrote in path" },
	{ NULL, NULL, 0, NULL },
};

int pyadump_pt_init(PyObject *module)
{
	return PyModule_AddFunctions(module, pt_methods);
}
