/* SPDX-License-Identifier: Apache-2.0 */
/* The _adump extension module: adump's reader and host capture API for Python, written
 * against CPython's limited API (abi3). This file holds the module, its exception classes
 * and the translation of adump's negative return values into Python exceptions. */
#include "pyadump_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "adump/adump.h"
#include "adump/host.h"
#include "common/common.h"
#include "reader/reader.h"

/* The version `adump --version` prints. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define ADUMP_VERSION_STRING \
	STR(ADUMP_VERSION_MAJOR) "." STR(ADUMP_VERSION_MINOR) "." STR(ADUMP_VERSION_PATCH)

struct pyadump_errors pyadump_err;

/* The adump.Error subclass of each ADUMP_ERR_* code. */
static PyObject *class_of(int code)
{
	switch (code) {
	case ADUMP_ERR_CONFIG: return pyadump_err.config;
	case ADUMP_ERR_CORRUPT: return pyadump_err.corrupt;
	case ADUMP_ERR_SHUTDOWN: return pyadump_err.shutdown;
	case ADUMP_ERR_WRITE: return pyadump_err.write;
	case ADUMP_ERR_DROPPED: return pyadump_err.dropped;
	case ADUMP_ERR_NOT_FOUND: return pyadump_err.not_found;
	case ADUMP_ERR_STATE: return pyadump_err.state;
	case ADUMP_ERR_UNSUPPORTED: return pyadump_err.unsupported;
	case ADUMP_ERR_TOO_BIG: return pyadump_err.too_big;
	case ADUMP_ERR_CALLBACK: return pyadump_err.callback;
	case ADUMP_ERR_INCOMPLETE: return pyadump_err.incomplete;
	case ADUMP_ERR_WRONG_THREAD: return pyadump_err.thread;
	default: return pyadump_err.error;
	}
}

/* Raise an instance of @cls with args (message,) and attributes code and message. */
static PyObject *raise_with_code(PyObject *cls, int code, const char *message)
{
	PyObject *exc = PyObject_CallFunction(cls, "s", message);
	PyObject *c = PyLong_FromLong(code), *m = PyUnicode_FromString(message);

	if (exc && c && m && PyObject_SetAttrString(exc, "code", c) == 0 &&
	    PyObject_SetAttrString(exc, "message", m) == 0)
		PyErr_SetObject(cls, exc);
	Py_XDECREF(c);
	Py_XDECREF(m);
	Py_XDECREF(exc);
	return NULL;
}

PyObject *pyadump_raise(int ret, const char *message, const char *filename)
{
	int code = ret < 0 ? -ret : ret;

	pyadump_log_drain();
	if (!message || !*message)
		message = adump_strerror(-code);
	if (code == ENOMEM)
		return PyErr_NoMemory();
	if (code > 0 && code < ADUMP_ERR_CONFIG) {
		PyObject *exc = filename ? PyObject_CallFunction(PyExc_OSError, "iss", code,
								 message, filename)
					 : PyObject_CallFunction(PyExc_OSError, "is", code, message);

		if (exc) {
			PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
			Py_DECREF(exc);
		}
		return NULL;
	}
	if (filename && strncmp(message, filename, strlen(filename))) {
		/* adump's own errors carry no filename attribute: the path goes in the text. */
		char buf[1200];

		snprintf(buf, sizeof(buf), "%s: %s", filename, message);
		return raise_with_code(class_of(code), code, buf);
	}
	return raise_with_code(class_of(code), code, message);
}

PyObject *pyadump_raise_closed(const char *what)
{
	PyErr_Format(pyadump_err.closed, "%s is closed", what);
	return NULL;
}

int pyadump_dict_steal(PyObject *dict, const char *key, PyObject *value)
{
	int ret;

	if (!value)
		return -1;
	ret = PyDict_SetItemString(dict, key, value);
	Py_DECREF(value);
	return ret;
}

int pyadump_uint64_conv(PyObject *obj, void *out)
{
	PyObject *n = PyNumber_Index(obj);
	unsigned long long v;

	if (!n)
		return 0;
	v = PyLong_AsUnsignedLongLong(n);
	if (v == (unsigned long long)-1 && PyErr_Occurred()) {
		/* Negative or past 64 bits: OverflowError, not one of the documented classes. */
		PyObject *text = PyErr_ExceptionMatches(PyExc_OverflowError) ? PyObject_Str(n) : NULL;
		const char *s = text ? PyUnicode_AsUTF8AndSize(text, NULL) : NULL;
		char msg[160];

		if (s) {
			PyErr_Clear();
			snprintf(msg, sizeof(msg), "%.64s is out of range (0 to 2**64 - 1)", s);
			pyadump_raise(-ADUMP_ERR_CONFIG, msg, NULL);
		}
		Py_XDECREF(text);
		Py_DECREF(n);
		return 0;
	}
	Py_DECREF(n);
	*(uint64_t *)out = v;
	return 1;
}

static PyObject *py_strerror(PyObject *self, PyObject *arg)
{
	long code = PyLong_AsLong(arg);

	if (code == -1 && PyErr_Occurred())
		return NULL;
	return PyUnicode_FromString(adump_strerror((int)(code < 0 ? code : -code)));
}

struct journal_found {
	PyObject *list;
	int err;
};

static void journal_found(void *arg, enum adump_journal_finding kind, const char *msg)
{
	static const char *const names[] = { "missing", "busy", "bad" };
	struct journal_found *jf = arg;
	PyObject *item;

	if (jf->err)
		return;
	item = Py_BuildValue("(sN)", names[kind], PyUnicode_DecodeFSDefault(msg));
	if (!item || PyList_Append(jf->list, item) < 0)
		jf->err = -1;
	Py_XDECREF(item);
}

/* journal_list(path) -> None if @path is no hand-over journal, else [(kind, message)] with
 * kind "missing", "busy" or "bad" (reader/journal.c, as `adump verify` reads it). */
static PyObject *py_journal_list(PyObject *self, PyObject *arg)
{
	struct journal_found jf = { 0 };
	PyObject *path_b = NULL;
	int ret;

	(void)self;
	if (!PyUnicode_FSConverter(arg, &path_b))
		return NULL;
	jf.list = PyList_New(0);
	if (!jf.list) {
		Py_DECREF(path_b);
		return NULL;
	}
	/* The GIL held: the callback builds the list. */
	ret = adump_journal_list(PyBytes_AsString(path_b), journal_found, &jf);
	Py_DECREF(path_b);
	if (jf.err || ret < 0) {
		Py_DECREF(jf.list);
		if (jf.err)
			return NULL;
		Py_RETURN_NONE;
	}
	return jf.list;
}

/* _testpoint_arm(name, errno): tests only; what adump_testpoint_arm() does (sticky). */
static PyObject *py_testpoint_arm(PyObject *self, PyObject *args)
{
	const char *name;
	int err;

	(void)self;
	if (!PyArg_ParseTuple(args, "si:_testpoint_arm", &name, &err))
		return NULL;
	adump_testpoint_arm(name, -err, 1, 1);
	Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
	{ "strerror", py_strerror, METH_O, "strerror(code) -> adump's message for an error code" },
	{ "journal_list", py_journal_list, METH_O,
	  "journal_list(path) -> None (not a hand-over journal) or [(kind, message)]" },
	{ "_torch_types", pyadump_torch_types, METH_VARARGS,
	  "_torch_types(Tensor, Parameter, {dtype: adump dtype}, torch.strided): dump() takes "
	  "CPU tensors of these exact types, of these dtypes, as they are (adump.torch)" },
	{ "_testpoint_arm", py_testpoint_arm, METH_VARARGS,
	  "_testpoint_arm(name, errno): arm a fault-injection testpoint (tests only)" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "adump._adump",
	.m_doc = "adump's C core: dump reading and host capture (use the adump package)",
	.m_size = -1,
	.m_methods = module_methods,
};

/* Create one exception class adump.<name> with @bases, and add it to @m. */
static PyObject *new_class(PyObject *m, const char *name, PyObject *base, PyObject *extra,
			   const char *doc)
{
	char qual[64];
	PyObject *bases, *cls;

	snprintf(qual, sizeof(qual), "adump.%s", name);
	bases = extra ? PyTuple_Pack(2, base, extra) : PyTuple_Pack(1, base);
	if (!bases)
		return NULL;
	cls = PyErr_NewExceptionWithDoc(qual, doc, bases, NULL);
	Py_DECREF(bases);
	if (!cls)
		return NULL;
	Py_INCREF(cls);
	if (PyModule_AddObject(m, name, cls) < 0) {
		Py_DECREF(cls);
		Py_DECREF(cls);
		return NULL;
	}
	return cls;
}

static int add_errors(PyObject *m)
{
	struct pyadump_errors *e = &pyadump_err;

	e->error = new_class(m, "Error", PyExc_Exception, NULL,
			     "adump's failures; .code is the ADUMP_ERR_* value, .message its text");
	if (!e->error)
		return -1;
#define SUB(field, name, extra, doc)                                        \
	do {                                                                \
		e->field = new_class(m, name, e->error, extra, doc);        \
		if (!e->field)                                              \
			return -1;                                          \
	} while (0)
	SUB(config, "ConfigError", PyExc_ValueError, "invalid configuration (ADUMP_ERR_CONFIG)");
	SUB(corrupt, "CorruptError", NULL, "malformed dump data (ADUMP_ERR_CORRUPT)");
	SUB(shutdown, "ShutdownError", NULL, "session is shutting down (ADUMP_ERR_SHUTDOWN)");
	SUB(write, "WriteError", NULL, "a dump file could not be written (ADUMP_ERR_WRITE)");
	SUB(dropped, "DroppedError", NULL, "dump data dropped (ADUMP_ERR_DROPPED)");
	SUB(not_found, "NotFoundError", NULL, "no such item (ADUMP_ERR_NOT_FOUND)");
	SUB(state, "StateError", NULL, "call out of order (ADUMP_ERR_STATE)");
	SUB(unsupported, "UnsupportedError", NULL, "not supported (ADUMP_ERR_UNSUPPORTED)");
	SUB(too_big, "TooBigError", NULL, "size out of range (ADUMP_ERR_TOO_BIG)");
	SUB(callback, "CallbackError", NULL, "the dump callback failed (ADUMP_ERR_CALLBACK)");
	SUB(incomplete, "IncompleteError", NULL, "data incomplete (ADUMP_ERR_INCOMPLETE)");
	SUB(closed, "ClosedError", PyExc_ValueError, "use of a closed session, stream or reader");
	SUB(thread, "ThreadError", PyExc_RuntimeError,
	    "a host stream used from a thread other than the one that owns it");
#undef SUB
	return 0;
}

PyMODINIT_FUNC PyInit__adump(void)
{
	PyObject *m = PyModule_Create(&module_def);

	if (!m)
		return NULL;
	if (add_errors(m) < 0 || pyadump_reader_init(m) < 0 || pyadump_capture_init(m) < 0 ||
	    pyadump_compare_init(m) < 0 || pyadump_scan_init(m) < 0 ||
	    pyadump_export_init(m) < 0 || pyadump_report_init(m) < 0 ||
	    pyadump_pt_init(m) < 0 || pyadump_tensors_init(m) < 0 ||
	    pyadump_autograd_init(m) < 0 || pyadump_same_init(m) < 0 ||
	    pyadump_describe_init(m) < 0 ||
	    pyadump_config_init(m) < 0 || pyadump_file_range_init(m) < 0 ||
	    PyModule_AddIntConstant(m, "ERR_BASE", ADUMP_ERR_CONFIG) < 0 ||
	    PyModule_AddIntConstant(m, "HOST_STATS_REUSE", ADUMP_HOST_STATS_REUSE) < 0 ||
#ifdef ADUMP_ENABLE_TESTPOINTS
	    PyModule_AddIntConstant(m, "_TESTPOINTS", 1) < 0 ||
#else
	    PyModule_AddIntConstant(m, "_TESTPOINTS", 0) < 0 ||
#endif
	    PyModule_AddStringConstant(m, "__version__", ADUMP_VERSION_STRING) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
