/* SPDX-License-Identifier: Apache-2.0 */
/* _adump.report: report/report.h's page of a compare or scan result for
 * python/adump/_report.py, as `adump report` writes it. */
#include "pyadump_int.h"

#include "report/report.h"

/* report(result, out, chartjs or None) -> None; the load and the write run without the GIL.
 * A result that is not one raises adump.CorruptError, a path that cannot be read or
 * written OSError, both with the message naming the file. */
static PyObject *py_report(PyObject *self, PyObject *args)
{
	PyObject *result_b = NULL, *out_b = NULL, *chartjs_o = Py_None, *chartjs_b = NULL;
	struct adump_report *r = NULL;
	const char *result, *out, *chartjs = NULL;
	char msg[8192];
	int ret;

	(void)self;
	if (!PyArg_ParseTuple(args, "O&O&O:report", PyUnicode_FSConverter, &result_b,
			      PyUnicode_FSConverter, &out_b, &chartjs_o))
		goto fail;
	if (chartjs_o != Py_None) {
		if (!PyUnicode_FSConverter(chartjs_o, &chartjs_b))
			goto fail;
		chartjs = PyBytes_AsString(chartjs_b);
	}
	result = PyBytes_AsString(result_b);
	out = PyBytes_AsString(out_b);
	msg[0] = '\0';
	Py_BEGIN_ALLOW_THREADS
	ret = adump_report_load(result, &r, msg, sizeof(msg));
	if (ret == 0) {
		ret = adump_report_write_html(r, out, chartjs, msg, sizeof(msg));
		adump_report_destroy(r);
	}
	Py_END_ALLOW_THREADS
	pyadump_log_drain();
	if (ret < 0) {
		pyadump_raise(ret, msg[0] ? msg : NULL, NULL);
		goto fail;
	}
	Py_DECREF(result_b);
	Py_DECREF(out_b);
	Py_XDECREF(chartjs_b);
	Py_RETURN_NONE;
fail:
	Py_XDECREF(result_b);
	Py_XDECREF(out_b);
	Py_XDECREF(chartjs_b);
	return NULL;
}

static PyMethodDef report_methods[] = {
	{ "report", py_report, METH_VARARGS, "report(result, out, chartjs) -> None" },
	{ NULL, NULL, 0, NULL },
};

int pyadump_report_init(PyObject *module)
{
	return PyModule_AddFunctions(module, report_methods);
}
