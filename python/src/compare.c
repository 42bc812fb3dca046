/* SPDX-License-Identifier: Apache-2.0 */
/* _adump.compare and _adump.compare_buffers: the compare API (include/adump/compare.h) for
 * Python. Rows are handed out as (tuple of the CSV cells, dict of the numbers and verdict);
 * adump/_compare.py makes dicts of them. */
#include "pyadump_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "adump/compare.h"

/* A tuple of @n strings. */
static PyObject *str_tuple(const char *const *s, uint32_t n)
{
	PyObject *t = PyTuple_New(n);

	if (!t)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		PyObject *v = PyUnicode_DecodeUTF8(s[i], (Py_ssize_t)strlen(s[i]), "replace");

		if (!v || PyTuple_SetItem(t, i, v) < 0) {
			Py_DECREF(t);
			return NULL;
		}
	}
	return t;
}

static PyObject *optional_str(const char *s)
{
	if (!s)
		Py_RETURN_NONE;
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* The numbers behind a row (full precision, NaN as float nan) and its verdict. */
static PyObject *row_info(const struct adump_compare_metrics *m, bool is_compared,
			  enum adump_compare_verdict verdict, const char *reason,
			  const char *module, uint64_t timestamp)
{
	PyObject *values = PyTuple_New(ADUMP_COMPARE_ALG_COUNT), *first;

	if (!values)
		return NULL;
	for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++) {
		PyObject *v = PyFloat_FromDouble(is_compared ? m->value[i] : NAN);

		if (!v || PyTuple_SetItem(values, i, v) < 0) {
			Py_DECREF(values);
			return NULL;
		}
	}
	if (is_compared && m->nonfinite_diff_count && m->first_nonfinite_diff != UINT64_MAX) {
		first = PyLong_FromUnsignedLongLong(m->first_nonfinite_diff);
	} else {
		first = Py_None;
		Py_INCREF(first);
	}
	return Py_BuildValue("{s:N,s:O,s:s,s:s,s:N,s:K,s:(dd),s:(dd),s:d,s:d,s:d,s:(KK),s:(KK),"
			     "s:K,s:N,s:d,s:d,s:d}",
			     "values", values, "compared", is_compared ? Py_True : Py_False,
			     "verdict", adump_compare_verdict_name(verdict),
			     "reason", reason ? reason : "", "module", optional_str(module),
			     "timestamp", (unsigned long long)timestamp,
			     "mean", m->mean[0], m->mean[1], "std", m->std[0], m->std[1],
			     "one_thousandth", m->one_thousandth,
			     "five_thousandths", m->five_thousandths, "euclid", m->euclid,
			     "nan_count", (unsigned long long)m->nan_count[0],
			     (unsigned long long)m->nan_count[1],
			     "inf_count", (unsigned long long)m->inf_count[0],
			     (unsigned long long)m->inf_count[1],
			     "nonfinite_diff_count", (unsigned long long)m->nonfinite_diff_count,
			     "first_nonfinite_diff", first,
			     "scaled_error", is_compared ? m->scaled_error : NAN,
			     "finite_cosine", is_compared ? m->finite_cosine : NAN,
			     "finite_max_abs", is_compared ? m->finite_max_abs : NAN);
}

static PyObject *summary_dict(const struct adump_compare_summary *s)
{
	PyObject *d = PyDict_New();

	if (!d)
		return NULL;
	if (pyadump_dict_steal(d, "op_count", PyLong_FromUnsignedLongLong(s->op_count)) ||
	    pyadump_dict_steal(d, "matched_count", PyLong_FromUnsignedLongLong(s->matched_count)) ||
	    pyadump_dict_steal(d, "my_only_count", PyLong_FromUnsignedLongLong(s->my_only_count)) ||
	    pyadump_dict_steal(d, "golden_only_count",
			       PyLong_FromUnsignedLongLong(s->golden_only_count)) ||
	    pyadump_dict_steal(d, "tensor_count", PyLong_FromUnsignedLongLong(s->tensor_count)) ||
	    pyadump_dict_steal(d, "failed_count", PyLong_FromUnsignedLongLong(s->failed_count)) ||
	    pyadump_dict_steal(d, "my_bytes", PyLong_FromUnsignedLongLong(s->bytes[0])) ||
	    pyadump_dict_steal(d, "golden_bytes", PyLong_FromUnsignedLongLong(s->bytes[1])) ||
	    pyadump_dict_steal(d, "first_divergent_row", PyLong_FromLongLong(s->first_divergent_row)) ||
	    pyadump_dict_steal(d, "first_overflow_row", PyLong_FromLongLong(s->first_overflow_row)) ||
	    pyadump_dict_steal(d, "first_nonfinite_row", PyLong_FromLongLong(s->first_nonfinite_row)) ||
	    pyadump_dict_steal(d, "warning_count", PyLong_FromUnsignedLongLong(s->warning_count)) ||
	    pyadump_dict_steal(d, "error_count", PyLong_FromUnsignedLongLong(s->error_count)) ||
	    pyadump_dict_steal(d, "nonfinite_count", PyLong_FromUnsignedLongLong(s->nonfinite_count)) ||
	    pyadump_dict_steal(d, "exit_code", PyLong_FromLong(s->exit_code))) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

/* Write the CSV or the advice to @path; on failure an OSError naming @path is set. */
static int write_to(const struct adump_compare *c, const char *path, bool is_advice)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f) {
		PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
		return -1;
	}
	ret = is_advice ? adump_compare_write_advice(c, f) : adump_compare_write_csv(c, f);
	if (fclose(f) != 0 || ret < 0) {
		pyadump_raise(-EIO, NULL, path);
		return -1;
	}
	return 0;
}

/* (columns, rows, summary) from a run comparison; the files when asked and some op matched. */
static PyObject *result_of(const struct adump_compare *c, const char *csv, const char *advice)
{
	uint32_t cols = adump_compare_column_count(c);
	uint64_t n = adump_compare_row_count(c);
	const char *names[256];
	struct adump_compare_summary s;
	PyObject *columns, *rows, *sum;

	if (cols > sizeof(names) / sizeof(names[0]))
		return pyadump_raise(-ADUMP_ERR_TOO_BIG, "too many compare columns", NULL);
	adump_compare_summary_get(c, &s);
	if (s.matched_count && ((csv && write_to(c, csv, false) < 0) ||
				(advice && write_to(c, advice, true) < 0)))
		return NULL;
	for (uint32_t i = 0; i < cols; i++)
		names[i] = adump_compare_column(c, i);
	columns = str_tuple(names, cols);
	rows = columns ? PyList_New((Py_ssize_t)n) : NULL;
	if (!rows)
		goto fail;
	for (uint64_t r = 0; r < n; r++) {
		const struct adump_compare_row *row = adump_compare_row(c, r);
		PyObject *t = str_tuple(row->cells, row->cell_count), *info, *pair;

		info = t ? row_info(&row->metrics, row->is_compared, row->verdict, row->reason,
				    row->module, row->timestamp) : NULL;
		pair = info ? Py_BuildValue("(NN)", t, info) : NULL;
		if (!pair) {
			Py_XDECREF(t);
			goto fail;
		}
		if (PyList_SetItem(rows, (Py_ssize_t)r, pair) < 0)
			goto fail;
	}
	sum = summary_dict(&s);
	if (!sum)
		goto fail;
	return Py_BuildValue("(NNN)", columns, rows, sum);
fail:
	Py_XDECREF(columns);
	Py_XDECREF(rows);
	return NULL;
}

/* compare(my, golden, algs, msprobe, advisor, threads, recursive, csv_path, advice_path,
 * thresholds) */
static PyObject *py_compare(PyObject *self, PyObject *args)
{
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	PyObject *my_b = NULL, *golden_b = NULL, *csv_b = NULL, *advice_b = NULL, *res = NULL;
	PyObject *csv_o, *advice_o;
	const char *algs, *my, *golden, *thresholds = NULL;
	struct adump_compare *c = NULL;
	int msprobe, advisor, recursive, ret;
	unsigned threads;
	char msg[4096];

	(void)self;
	if (!PyArg_ParseTuple(args, "O&O&zppIpOO|z:compare", PyUnicode_FSConverter, &my_b,
			      PyUnicode_FSConverter, &golden_b, &algs, &msprobe, &advisor,
			      &threads, &recursive, &csv_o, &advice_o, &thresholds))
		goto out;
	if ((csv_o != Py_None && !PyUnicode_FSConverter(csv_o, &csv_b)) ||
	    (advice_o != Py_None && !PyUnicode_FSConverter(advice_o, &advice_b)))
		goto out;
	if (algs && adump_compare_alg_parse(&cfg, algs, msg, sizeof(msg)) < 0) {
		pyadump_raise(-ADUMP_ERR_CONFIG, msg, NULL);
		goto out;
	}
	cfg.has_msprobe = msprobe;
	cfg.has_overflow = advisor;
	cfg.is_recursive = recursive;
	cfg.thread_count = threads;
	cfg.thresholds = thresholds;
	my = PyBytes_AsString(my_b);
	golden = PyBytes_AsString(golden_b);
	msg[0] = '\0';
	Py_BEGIN_ALLOW_THREADS
	ret = adump_compare_open(&cfg, my, golden, &c, msg, sizeof(msg));
	if (ret == 0)
		ret = adump_compare_run(c);
	Py_END_ALLOW_THREADS
	pyadump_log_drain();         /* its lines now, not at the next session */
	if (ret < 0) {
		pyadump_raise(ret, msg, NULL);
		goto out;
	}
	res = result_of(c, csv_b ? PyBytes_AsString(csv_b) : NULL,
			advice_b ? PyBytes_AsString(advice_b) : NULL);
out:
	adump_compare_close(c);
	Py_XDECREF(my_b);
	Py_XDECREF(golden_b);
	Py_XDECREF(csv_b);
	Py_XDECREF(advice_b);
	return res;
}

/* msaccucmp's scalar: the dims add up to their count ([], [1], [1, 1] ...). */
static bool is_scalar(const uint64_t *dims, uint32_t dim_count)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < dim_count; i++)
		sum += dims[i];
	return sum == dim_count;
}

/* compare_buffers(x, dtype_x, count_x, y, dtype_y, count_y, dims[, thresholds]) ->
 * (cells, message, info): the buffers contiguous, of at least count * dtype size bytes. */
static PyObject *py_compare_buffers(PyObject *self, PyObject *args)
{
	char cells[ADUMP_COMPARE_ALG_COUNT][ADUMP_COMPARE_CELL_BYTES], msg[4096];
	const char *cell_ptr[ADUMP_COMPARE_ALG_COUNT];
	unsigned long long count_x, count_y;
	uint64_t dims[ADUMP_MAX_DIMS];
	Py_buffer vx = { 0 }, vy = { 0 };
	struct adump_compare_metrics m;
	int dtype_x, dtype_y, ret;
	PyObject *shape, *res = NULL;
	const char *thresholds = NULL;
	struct adump_compare_thresholds th;
	enum adump_compare_verdict verdict = ADUMP_COMPARE_NONE;
	char reason[1024] = "";
	Py_ssize_t n;

	(void)self;
	if (!PyArg_ParseTuple(args, "y*iKy*iKO!|z:compare_buffers", &vx, &dtype_x, &count_x, &vy,
			      &dtype_y, &count_y, &PyTuple_Type, &shape, &thresholds))
		return NULL;
	ret = adump_compare_thresholds_parse(&th, thresholds, msg, sizeof(msg));
	if (ret < 0) {
		pyadump_raise(ret, msg, NULL);
		goto out;
	}
	n = PyTuple_Size(shape);
	if (n > ADUMP_MAX_DIMS) {
		PyErr_Format(PyExc_ValueError, "%zd dimensions; at most %d", n, ADUMP_MAX_DIMS);
		goto out;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		dims[i] = PyLong_AsUnsignedLongLong(PyTuple_GetItem(shape, i));
		if (PyErr_Occurred())
			goto out;
	}
	if (!adump_dtype_bits(dtype_x) || !adump_dtype_bits(dtype_y) ||
	    count_x > (uint64_t)vx.len * 8 / adump_dtype_bits(dtype_x) ||
	    count_y > (uint64_t)vy.len * 8 / adump_dtype_bits(dtype_y)) {
		pyadump_raise(-ADUMP_ERR_CONFIG, "element count or dtype does not fit the buffer",
			      NULL);
		goto out;
	}
	msg[0] = '\0';
	Py_BEGIN_ALLOW_THREADS
	ret = adump_compare_buffers(dtype_x, vx.buf, count_x, dtype_y, vy.buf, count_y, dims,
				    (uint32_t)n, &m, cells, msg, sizeof(msg));
	if (ret == 0 && count_x == count_y)
		verdict = adump_compare_verdict_judge(&th, dtype_x, dtype_y,
						      is_scalar(dims, (uint32_t)n),
						      &m, reason, sizeof(reason));
	Py_END_ALLOW_THREADS
	if (ret < 0) {
		pyadump_raise(ret, msg, NULL);
		goto out;
	}
	for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++)
		cell_ptr[i] = cells[i];
	res = Py_BuildValue("(NsN)", str_tuple(cell_ptr, ADUMP_COMPARE_ALG_COUNT), msg,
			    row_info(&m, count_x == count_y, verdict, reason, NULL, 0));
out:
	PyBuffer_Release(&vx);
	PyBuffer_Release(&vy);
	return res;
}

static PyObject *py_alg_names(PyObject *self, PyObject *unused)
{
	const char *names[ADUMP_COMPARE_ALG_COUNT];

	(void)self;
	(void)unused;
	for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++)
		names[i] = adump_compare_alg_name((enum adump_compare_alg)i);
	return str_tuple(names, ADUMP_COMPARE_ALG_COUNT);
}

static PyMethodDef compare_methods[] = {
	{ "compare", py_compare, METH_VARARGS,
	  "compare(my, golden, algs, msprobe, advisor, threads, recursive, csv, advice"
	  "[, thresholds]) -> (columns, rows of (cells, info), summary)" },
	{ "compare_buffers", py_compare_buffers, METH_VARARGS,
	  "compare_buffers(x, dtype_x, count_x, y, dtype_y, count_y, dims[, thresholds]) -> "
	  "(cells, message, info)" },
	{ "compare_alg_names", py_alg_names, METH_NOARGS,
	  "compare_alg_names() -> the ten algorithm names in index order" },
	{ NULL, NULL, 0, NULL },
};

int pyadump_compare_init(PyObject *module)
{
	return PyModule_AddFunctions(module, compare_methods);
}
