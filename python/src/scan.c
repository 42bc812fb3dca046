/* SPDX-License-Identifier: Apache-2.0 */
/* _adump.scan and _adump.compare_pairs: adump/scan.h and adump/compare_pairs.h for
 * python/adump/_scan.py and _pairs.py. */
#include "pyadump_int.h"

#include <stdio.h>

#include "adump/compare_pairs.h"
#include "adump/scan.h"

static PyObject *counts_of(const struct adump_scan_counts *c)
{
	return Py_BuildValue("(KKK)", (unsigned long long)c->nan_count,
			     (unsigned long long)c->inf_count, (unsigned long long)c->limit_count);
}

/* scan(path, threads, flat) -> (dump_count, bytes, ops): each op a tuple (kind, order,
 * timestamp, path, op_type, op_name, inputs, outputs, first_tensor, message). */
static PyObject *py_scan(PyObject *self, PyObject *args)
{
	struct adump_scan_config cfg = ADUMP_SCAN_CONFIG_INIT;
	struct adump_scan *s = NULL;
	PyObject *path_b = NULL, *ops = NULL, *res = NULL;
	unsigned threads;
	int flat, ret;
	char msg[4096];

	(void)self;
	if (!PyArg_ParseTuple(args, "O&Ip:scan", PyUnicode_FSConverter, &path_b, &threads, &flat))
		return NULL;
	cfg.thread_count = threads;
	cfg.is_flat = flat;
	msg[0] = '\0';
	Py_BEGIN_ALLOW_THREADS
	ret = adump_scan_open(&cfg, PyBytes_AsString(path_b), &s, msg, sizeof(msg));
	if (ret == 0)
		ret = adump_scan_run(s);
	Py_END_ALLOW_THREADS
	pyadump_log_drain();         /* its lines now, not at the next session */
	if (ret < 0) {
		pyadump_raise(ret, msg[0] ? msg : NULL, NULL);
		goto out;
	}
	ops = PyList_New(0);
	for (uint64_t i = 0; ops && i < adump_scan_op_count(s); i++) {
		const struct adump_scan_op *op = adump_scan_op(s, i);
		const char *kind = adump_scan_kind_name(op->kind);
		PyObject *t = Py_BuildValue("(sKKsssNNss)", kind, (unsigned long long)op->order,
					    (unsigned long long)op->timestamp, op->path,
					    op->op_type, op->op_name, counts_of(&op->inputs),
					    counts_of(&op->outputs), op->first_tensor, op->message);

		if (!t || PyList_Append(ops, t) < 0) {
			Py_XDECREF(t);
			Py_CLEAR(ops);
			break;
		}
		Py_DECREF(t);
	}
	if (ops)
		res = Py_BuildValue("(KKN)", (unsigned long long)adump_scan_dump_count(s),
				    (unsigned long long)adump_scan_bytes(s), ops);
out:
	adump_scan_close(s);
	Py_XDECREF(path_b);
	return res;
}

static PyObject *str_or_none(const char *s)
{
	if (!s)
		Py_RETURN_NONE;
	return PyUnicode_DecodeFSDefault(s);
}

/* compare_pairs(my, golden) -> [(label, my or None, golden or None, step, rank), ...] */
static PyObject *py_compare_pairs(PyObject *self, PyObject *args)
{
	PyObject *my_b = NULL, *golden_b = NULL, *res = NULL;
	struct adump_compare_pairs *p = NULL;
	char msg[4096];
	int ret;

	(void)self;
	if (!PyArg_ParseTuple(args, "O&O&:compare_pairs", PyUnicode_FSConverter, &my_b,
			      PyUnicode_FSConverter, &golden_b))
		goto out;
	msg[0] = '\0';
	ret = adump_compare_pairs_list(PyBytes_AsString(my_b), PyBytes_AsString(golden_b), &p, msg,
				       sizeof(msg));
	if (ret < 0) {
		pyadump_raise(ret, msg[0] ? msg : NULL, NULL);
		goto out;
	}
	res = PyList_New(0);
	for (size_t i = 0; res && i < adump_compare_pairs_count(p); i++) {
		const struct adump_compare_pair *e = adump_compare_pairs_get(p, i);
		PyObject *t = Py_BuildValue("(sNNLL)", e->label, str_or_none(e->my),
					    str_or_none(e->golden), (long long)e->step,
					    (long long)e->rank);

		if (!t || PyList_Append(res, t) < 0) {
			Py_XDECREF(t);
			Py_CLEAR(res);
			break;
		}
		Py_DECREF(t);
	}
out:
	adump_compare_pairs_free(p);
	Py_XDECREF(my_b);
	Py_XDECREF(golden_b);
	return res;
}

static PyMethodDef scan_methods[] = {
	{ "scan", py_scan, METH_VARARGS, "scan(path, threads, flat) -> (dumps, bytes, ops)" },
	{ "compare_pairs", py_compare_pairs, METH_VARARGS,
	  "compare_pairs(my, golden) -> [(label, my, golden, step, rank), ...]" },
	{ NULL, NULL, 0, NULL },
};

int pyadump_scan_init(PyObject *module)
{
	return PyModule_AddFunctions(module, scan_methods);
}
