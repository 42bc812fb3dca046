/* SPDX-License-Identifier: Apache-2.0 */
/* Session configuration from Python keywords (every key of struct adump_config, under its
 * own name and values), its validation with the library's reason as the ConfigError
 * message, and the library's log lines handed to Python's logging (logger "adump").
 *
 * Log lines come from any thread, workers included, often while the caller holds adump
 * locks; taking the GIL there could deadlock against a Python thread that holds the GIL
 * and waits for such a lock. So the sink only queues the line (bounded; the excess is
 * counted and reported as one line, at the level of the most severe line lost) and every
 * call that holds the GIL hands the queue to the Python callable (pyadump_log_drain()). */
#include "pyadump_int.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adump/adump.h"

/* ---- log sink ---------------------------------------------------------------------------- */

#define LOG_QUEUE_MAX 256

struct log_line {
	struct log_line *next;
	int level;
	char module[32];
	char msg[];
};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct log_line *log_head, **log_tail = &log_head;
static unsigned log_count;
static unsigned long log_lost;
static int log_lost_level;              /* the most severe level among the lines lost */
static int log_min_level = ADUMP_LOG_INFO;
static PyObject *log_callable;          /* callable(level, module, message); GIL held */

/* The first error line the calling thread logs while a config check runs: its reason (the
 * first warning while there is none: io_uring's refusal is one, logged before the reason). */
static __thread char *reason_buf;
static __thread size_t reason_cap;
static __thread int reason_level;

void pyadump_reason_begin(char *buf, size_t cap)
{
	buf[0] = '\0';
	reason_buf = buf;
	reason_cap = cap;
	reason_level = -1;
}

void pyadump_reason_end(void)
{
	reason_buf = NULL;
}

static void log_sink(enum adump_log_level level, const char *module, const char *msg,
		     void *user)
{
	size_t len = strlen(msg);
	struct log_line *l;

	if (reason_buf && level >= ADUMP_LOG_WARN && (int)level > reason_level) {
		snprintf(reason_buf, reason_cap, "%s", msg);
		reason_level = (int)level;
	}
	if ((int)level < log_min_level)
		return;
	l = malloc(sizeof(*l) + len + 1);
	pthread_mutex_lock(&log_lock);
	if (!l || log_count >= LOG_QUEUE_MAX) {
		if (!log_lost || (int)level > log_lost_level)
			log_lost_level = (int)level;
		log_lost++;
		pthread_mutex_unlock(&log_lock);
		free(l);
		return;
	}
	l->next = NULL;
	l->level = level;
	snprintf(l->module, sizeof(l->module), "%s", module ? module : "");
	memcpy(l->msg, msg, len + 1);
	*log_tail = l;
	log_tail = &l->next;
	log_count++;
	pthread_mutex_unlock(&log_lock);
}

void pyadump_log_drain(void)
{
	struct log_line *l;
	unsigned long lost;
	int lost_level;
	PyObject *type, *value, *tb;

	pthread_mutex_lock(&log_lock);
	l = log_head;
	lost = log_lost;
	lost_level = log_lost_level;
	log_head = NULL;
	log_tail = &log_head;
	log_count = 0;
	log_lost = 0;
	pthread_mutex_unlock(&log_lock);
	if (!l && !lost)
		return;
	/* Called on error paths too: keep the pending exception. */
	PyErr_Fetch(&type, &value, &tb);
	while (l) {
		struct log_line *next = l->next;

		if (log_callable) {
			PyObject *r = PyObject_CallFunction(log_callable, "iss", l->level, l->module,
							    l->msg);

			if (!r)
				PyErr_WriteUnraisable(log_callable);
			Py_XDECREF(r);
		}
		free(l);
		l = next;
	}
	if (lost && log_callable) {
		char text[96];
		PyObject *r;

		/* INFO lines lost in a burst (a compare's "There is no input" per op) are no
		 * warning. */
		snprintf(text, sizeof(text), "%lu log line%s lost (queue full)", lost,
			 lost == 1 ? "" : "s");
		r = PyObject_CallFunction(log_callable, "iss", lost_level, "python", text);

		if (!r)
			PyErr_WriteUnraisable(log_callable);
		Py_XDECREF(r);
	}
	PyErr_Restore(type, value, tb);
}

/* set_log_sink(fn, min_level=INFO): fn(level, module, message) gets the library's lines;
 * None restores the library's own sink (stderr). */
static PyObject *py_set_log_sink(PyObject *self, PyObject *args)
{
	PyObject *fn;
	int min_level = ADUMP_LOG_INFO;

	if (!PyArg_ParseTuple(args, "O|i:set_log_sink", &fn, &min_level))
		return NULL;
	if (fn != Py_None && !PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_TypeError, "set_log_sink: fn is not callable");
		return NULL;
	}
	pyadump_log_drain();
	log_min_level = min_level;
	Py_XDECREF(log_callable);
	log_callable = NULL;
	if (fn == Py_None) {
		adump_set_log_fn(NULL, NULL);
	} else {
		Py_INCREF(fn);
		log_callable = fn;
		adump_set_log_fn(log_sink, NULL);
	}
	Py_RETURN_NONE;
}

static PyObject *py_log_drain(PyObject *self, PyObject *unused)
{
	pyadump_log_drain();
	Py_RETURN_NONE;
}

/* ---- keywords ---------------------------------------------------------------------------- */

struct enum_name {
	const char *name;
	int value;
};

static const struct enum_name on_full_names[] = { { "block", ADUMP_ON_FULL_BLOCK },
						  { "drop", ADUMP_ON_FULL_DROP },
						  { NULL, 0 } };
static const struct enum_name writer_names[] = { { "auto", ADUMP_WRITER_AUTO },
						 { "uring", ADUMP_WRITER_URING },
						 { "pwrite", ADUMP_WRITER_PWRITE },
						 { NULL, 0 } };
static const struct enum_name sink_names[] = { { "file", ADUMP_SINK_FILE },
					       { "callback", ADUMP_SINK_CALLBACK },
					       { NULL, 0 } };
static const struct enum_name io_names[] = { { "auto", ADUMP_IO_AUTO },
					     { "buffered", ADUMP_IO_BUFFERED },
					     { "direct", ADUMP_IO_DIRECT },
					     { NULL, 0 } };
static const struct enum_name compress_names[] = { { "none", ADUMP_COMPRESS_NONE },
						   { "lz4", ADUMP_COMPRESS_LZ4 },
						   { NULL, 0 } };
static const struct enum_name layout_names[] = { { "files", ADUMP_LAYOUT_FILES },
						 { "packed", ADUMP_LAYOUT_PACKED },
						 { NULL, 0 } };
static const struct enum_name format_names[] = { { "cann", ADUMP_OUTPUT_CANN },
						 { "msprobe", ADUMP_OUTPUT_MSPROBE },
						 { NULL, 0 } };
static const struct enum_name summary_names[] = { { "statistics", ADUMP_SUMMARY_STATISTICS },
						  { "md5", ADUMP_SUMMARY_MD5 },
						  { NULL, 0 } };
static const struct enum_name content_names[] = { { "tensor", ADUMP_CONTENT_TENSOR },
						  { "stats", ADUMP_CONTENT_STATS },
						  { NULL, 0 } };

/* Every key, for the message of an unknown one. */
static const char *const known_keys =
	"dump_path, time_dir, workers (worker_count), chunk_bytes, pool_bytes, stream_max, "
	"on_full, writer, sink, callback, io, compress, layout, segment_bytes, content, "
	"stats_mask, sync_bytes, min_free_bytes, max_bytes, direct_min_bytes, format, summary, "
	"window_steps, window_bytes, window_persists, triggers, bounds, deviation, "
	"deviation_steps";

/* Window mode's trigger names (struct adump_config.triggers). */
static const struct enum_name trigger_names[] = { { "nonfinite", ADUMP_TRIGGER_NONFINITE },
						  { "bound", ADUMP_TRIGGER_BOUND },
						  { "deviation", ADUMP_TRIGGER_DEVIATION },
						  { "call", ADUMP_TRIGGER_CALL },
						  { "signal", ADUMP_TRIGGER_SIGNAL },
						  { NULL, 0 } };

/* An enum key: a string naming one of @names (None: leave the default). */
static int parse_enum(const char *key, PyObject *v, const struct enum_name *names, int *out)
{
	char allowed[128] = "";
	const char *s;

	if (v == Py_None)
		return 0;
	s = PyUnicode_Check(v) ? PyUnicode_AsUTF8AndSize(v, NULL) : NULL;
	if (s)
		for (const struct enum_name *n = names; n->name; n++)
			if (!strcmp(n->name, s)) {
				*out = n->value;
				return 0;
			}
	PyErr_Clear();
	for (const struct enum_name *n = names; n->name; n++) {
		strncat(allowed, n->name, sizeof(allowed) - strlen(allowed) - 1);
		if (n[1].name)
			strncat(allowed, ", ", sizeof(allowed) - strlen(allowed) - 1);
	}
	PyErr_Format(pyadump_err.config, "config %s: expected one of %s, got %R", key, allowed, v);
	return -1;
}

/* A non-negative integer key of at most @max (None: leave the default). */
static int parse_uint(const char *key, PyObject *v, unsigned long long max,
		      unsigned long long *out)
{
	unsigned long long n;

	if (v == Py_None)
		return 0;
	if (!PyLong_Check(v) || PyBool_Check(v)) {
		PyErr_Format(pyadump_err.config, "config %s: expected a non-negative integer, got %R",
			     key, v);
		return -1;
	}
	n = PyLong_AsUnsignedLongLong(v);
	if ((n == (unsigned long long)-1 && PyErr_Occurred()) || n > max) {
		PyErr_Clear();
		PyErr_Format(pyadump_err.config, "config %s: %R out of range [0, %llu]", key, v,
			     max);
		return -1;
	}
	*out = n;
	return 0;
}

/* triggers: a trigger name or a list of them (None: the default). */
static int parse_triggers(PyObject *v, uint32_t *out)
{
	PyObject *seq;
	uint32_t bits = 0;

	if (v == Py_None)
		return 0;
	if (PyUnicode_Check(v))
		seq = PyTuple_Pack(1, v);
	else
		seq = PySequence_Check(v) ? PySequence_Tuple(v) : NULL;
	if (!seq) {
		PyErr_Clear();
		PyErr_Format(pyadump_err.config, "config triggers: expected a list of trigger "
			     "names (nonfinite, bound, deviation, call, signal), got %R", v);
		return -1;
	}
	for (Py_ssize_t i = 0; i < PyTuple_Size(seq); i++) {
		PyObject *item = PyTuple_GetItem(seq, i);
		const char *s = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, NULL) : NULL;
		const struct enum_name *n;

		for (n = trigger_names; s && n->name; n++)
			if (!strcmp(n->name, s))
				break;
		if (!s || !n->name) {
			PyErr_Clear();
			PyErr_Format(pyadump_err.config, "config triggers: unknown trigger %R (the "
				     "triggers: nonfinite, bound, deviation, call, signal)", item);
			Py_DECREF(seq);
			return -1;
		}
		bits |= (uint32_t)n->value;
	}
	Py_DECREF(seq);
	if (!bits) {
		PyErr_SetString(pyadump_err.config, "config triggers: an empty list (give at least "
				"one trigger, or None for the default)");
		return -1;
	}
	*out = bits;
	return 0;
}

/* bounds: {pattern: max_abs} or [(pattern, max_abs)], into one PyMem block (the array, then
 * the patterns) that pyadump_config_free() frees. Each pair is made a tuple once, so that
 * what is measured is what is copied. */
static int parse_bounds(PyObject *v, struct adump_config *cfg)
{
	PyObject *items, *pairs = NULL, *seq = NULL;
	struct adump_bound *b;
	size_t bytes, count;
	char *text;
	int ret = -1;

	if (v == Py_None)
		return 0;
	items = PyDict_Check(v) ? PyDict_Items(v) : PySequence_Check(v) && !PyUnicode_Check(v) ?
		PySequence_List(v) : NULL;
	if (!items) {
		PyErr_Clear();
		PyErr_Format(pyadump_err.config, "config bounds: expected a dict "
			     "{pattern: max_abs} or a list of (pattern, max_abs), got %R", v);
		return -1;
	}
	count = (size_t)PyList_Size(items);
	pairs = PyList_New(0);
	if (!pairs)
		goto out;
	bytes = count * sizeof(*b);
	for (size_t i = 0; i < count; i++) {
		PyObject *pair = PyList_GetItem(items, (Py_ssize_t)i), *pat, *lim;
		const char *s;
		double d;

		seq = PySequence_Check(pair) ? PySequence_Tuple(pair) : NULL;
		if (!seq || PyTuple_Size(seq) != 2)
			goto bad;
		pat = PyTuple_GetItem(seq, 0);
		lim = PyTuple_GetItem(seq, 1);
		s = PyUnicode_Check(pat) ? PyUnicode_AsUTF8AndSize(pat, NULL) : NULL;
		if (!s || PyBool_Check(lim) || !PyNumber_Check(lim))
			goto bad;
		d = PyFloat_AsDouble(lim);
		if (d == -1.0 && PyErr_Occurred())
			goto bad;
		if (!s[0] || !(d > 0) || d > 1.7976931348623157e308) {
			PyErr_Format(pyadump_err.config, "config bounds: %R: a non-empty "
				     "pattern and a finite max_abs above 0", pair);
			goto out;
		}
		bytes += strlen(s) + 1;
		if (PyList_Append(pairs, seq) < 0)
			goto out;
		Py_CLEAR(seq);
	}
	b = PyMem_Calloc(1, bytes ? bytes : 1);
	if (!b) {
		PyErr_NoMemory();
		goto out;
	}
	text = (char *)(b + count);
	for (size_t i = 0; i < count; i++) {
		PyObject *pair = PyList_GetItem(pairs, (Py_ssize_t)i);      /* checked above */
		const char *s = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(pair, 0), NULL);
		size_t len = strlen(s) + 1;

		memcpy(text, s, len);
		b[i].pattern = text;
		b[i].max_abs = PyFloat_AsDouble(PyTuple_GetItem(pair, 1));
		text += len;
	}
	PyMem_Free((void *)cfg->bounds);
	cfg->bounds = b;
	cfg->bound_count = (unsigned)count;
	ret = 0;
	goto out;
bad:
	PyErr_Clear();
	PyErr_Format(pyadump_err.config, "config bounds: expected (pattern str, max_abs number) "
		     "pairs, got %R", seq ? seq : v);
out:
	Py_XDECREF(seq);
	Py_XDECREF(pairs);
	Py_DECREF(items);
	return ret;
}

void pyadump_config_free(struct adump_config *cfg)
{
	PyMem_Free((void *)cfg->bounds);
	cfg->bounds = NULL;
	cfg->bound_count = 0;
}

static int parse_keys(PyObject *kw, struct adump_config *cfg, PyObject **callback)
{
	PyObject *key, *v;
	Py_ssize_t pos = 0;
	bool has_triggers = false;

	while (kw && PyDict_Next(kw, &pos, &key, &v)) {
		const char *k = PyUnicode_AsUTF8AndSize(key, NULL);
		unsigned long long n = 0;
		int e = 0;

		if (!k)
			return -1;
		if (!strcmp(k, "dump_path") || !strcmp(k, "time_dir")) {
			const char *s = v == Py_None ? NULL : PyUnicode_Check(v) ?
				PyUnicode_AsUTF8AndSize(v, NULL) : NULL;

			if (v != Py_None && !s) {
				PyErr_Clear();
				PyErr_Format(pyadump_err.config, "config %s: expected a str, got %R",
					     k, v);
				return -1;
			}
			if (k[0] == 'd')
				cfg->dump_path = s;
			else
				cfg->time_dir = s;
			continue;
		}
		if (!strcmp(k, "window_steps")) {
			long long steps;

			if (v == Py_None)
				continue;
			steps = PyLong_Check(v) && !PyBool_Check(v) ? PyLong_AsLongLong(v) : 0;
			if (steps <= 0 || steps > UINT32_MAX) {
				PyErr_Clear();
				PyErr_Format(pyadump_err.config, "config window_steps: expected "
					     "an integer above 0 (the steps the window holds), "
					     "got %R", v);
				return -1;
			}
			cfg->window_steps = (unsigned)steps;
			continue;
		}
		if (!strcmp(k, "triggers")) {
			if (parse_triggers(v, &cfg->triggers) < 0)
				return -1;
			has_triggers = v != Py_None;
			continue;
		}
		if (!strcmp(k, "bounds")) {
			if (parse_bounds(v, cfg) < 0)
				return -1;
			continue;
		}
		if (!strcmp(k, "deviation")) {
			double d;

			if (v == Py_None)
				continue;
			d = PyBool_Check(v) || !PyNumber_Check(v) ? -1.0 : PyFloat_AsDouble(v);
			if (!(d > 0) || d > 1.7976931348623157e308) {
				PyErr_Clear();
				PyErr_Format(pyadump_err.config, "config deviation: expected a "
					     "finite factor above 0, got %R", v);
				return -1;
			}
			cfg->deviation = d;
			continue;
		}
		if (!strcmp(k, "callback")) {
			if (v != Py_None && !PyCallable_Check(v)) {
				PyErr_SetString(pyadump_err.config, "config callback: not callable");
				return -1;
			}
			*callback = v == Py_None ? NULL : v;
			continue;
		}
#define UINT_KEY(name, field, max)                                        \
	if (!strcmp(k, name)) {                                           \
		n = cfg->field;                                           \
		if (parse_uint(k, v, max, &n) < 0)                        \
			return -1;                                        \
		cfg->field = n;                                           \
		continue;                                                 \
	}
#define ENUM_KEY(name, field, names)                                      \
	if (!strcmp(k, name)) {                                           \
		e = (int)cfg->field;                                      \
		if (parse_enum(k, v, names, &e) < 0)                      \
			return -1;                                        \
		cfg->field = e;                                           \
		continue;                                                 \
	}
		UINT_KEY("workers", worker_count, UINT32_MAX)
		UINT_KEY("worker_count", worker_count, UINT32_MAX)
		UINT_KEY("chunk_bytes", chunk_bytes, SIZE_MAX)
		UINT_KEY("pool_bytes", pool_bytes, SIZE_MAX)
		UINT_KEY("stream_max", stream_max, UINT32_MAX)
		UINT_KEY("segment_bytes", segment_bytes, SIZE_MAX)
		UINT_KEY("stats_mask", stats_mask, UINT32_MAX)
		UINT_KEY("sync_bytes", sync_bytes, SIZE_MAX)
		UINT_KEY("min_free_bytes", min_free_bytes, UINT64_MAX)
		UINT_KEY("max_bytes", max_bytes, UINT64_MAX)
		UINT_KEY("direct_min_bytes", direct_min_bytes, UINT64_MAX)
		ENUM_KEY("on_full", on_full, on_full_names)
		ENUM_KEY("writer", writer, writer_names)
		ENUM_KEY("sink", sink, sink_names)
		ENUM_KEY("io", io, io_names)
		ENUM_KEY("compress", compress, compress_names)
		ENUM_KEY("layout", layout, layout_names)
		ENUM_KEY("content", content, content_names)
		ENUM_KEY("format", format, format_names)
		ENUM_KEY("summary", summary, summary_names)
		UINT_KEY("window_bytes", window_bytes, UINT64_MAX)
		UINT_KEY("window_persists", window_persists, UINT32_MAX)
		UINT_KEY("deviation_steps", deviation_steps, UINT32_MAX)
#undef UINT_KEY
#undef ENUM_KEY
		PyErr_Format(pyadump_err.config, "unknown config key '%s' (the keys: %s)", k,
			     known_keys);
		return -1;
	}
	/* Without triggers=, bounds and deviation= turn their triggers on beside the default. */
	if (!has_triggers && cfg->window_steps) {
		if (cfg->bound_count)
			cfg->triggers |= ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_BOUND;
		if (cfg->deviation != 0 || cfg->deviation_steps)
			cfg->triggers |= ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_DEVIATION;
	}
	return 0;
}

int pyadump_parse_config(PyObject *kw, struct adump_config *cfg, PyObject **callback)
{
	if (parse_keys(kw, cfg, callback) == 0)
		return 0;
	pyadump_config_free(cfg);
	return -1;
}

static int no_chunk(const struct adump_chunk *chunk, void *user)
{
	return 0;
}

int pyadump_config_check(const struct adump_config *cfg, PyObject *callback)
{
	char reason[512] = "";
	int ret;

	if (cfg->sink == ADUMP_SINK_CALLBACK && !callback) {
		PyErr_SetString(pyadump_err.config, "config sink='callback' needs callback=");
		return -1;
	}
	if (cfg->sink == ADUMP_SINK_FILE && !cfg->dump_path) {
		PyErr_SetString(pyadump_err.config, "config dump_path is required for the file sink");
		return -1;
	}
	/* Session() sets the callback sink's function once the session object exists. */
	struct adump_config c = *cfg;

	if (callback && !c.chunk_fn)
		c.chunk_fn = no_chunk;
	pyadump_reason_begin(reason, sizeof(reason));
	ret = adump_config_check(&c);
	pyadump_reason_end();
	pyadump_log_drain();
	if (ret < 0) {
		char msg[600];

		snprintf(msg, sizeof(msg), "invalid config: %s", reason[0] ? reason :
			 adump_strerror(ret));
		pyadump_raise(ret, msg, NULL);
		return -1;
	}
	return 0;
}

/* config_check(**config): validate a session config as Session(**config) would, creating
 * nothing. Raises adump.ConfigError with the library's reason. */
static PyObject *py_config_check(PyObject *self, PyObject *args, PyObject *kw)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	PyObject *callback = NULL;

	int ret;

	if (!PyArg_ParseTuple(args, ":config_check"))
		return NULL;
	if (pyadump_parse_config(kw, &cfg, &callback) < 0)
		return NULL;
	ret = pyadump_config_check(&cfg, callback);
	pyadump_config_free(&cfg);
	if (ret < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyMethodDef config_methods[] = {
	{ "config_check", (PyCFunction)(void (*)(void))py_config_check,
	  METH_VARARGS | METH_KEYWORDS, "config_check(**config): raise ConfigError if invalid" },
	{ "set_log_sink", py_set_log_sink, METH_VARARGS,
	  "set_log_sink(fn, min_level=1): the library's log lines to fn(level, module, msg)" },
	{ "log_drain", py_log_drain, METH_NOARGS, "hand queued log lines to the log sink now" },
	{ NULL, NULL, 0, NULL },
};

int pyadump_config_init(PyObject *m)
{
	if (PyModule_AddFunctions(m, config_methods) < 0)
		return -1;
#define C(name, val)                                                            \
	if (PyModule_AddIntConstant(m, name, val) < 0)                          \
		return -1;
	C("STAT_MAX", ADUMP_STAT_MAX)
	C("STAT_MIN", ADUMP_STAT_MIN)
	C("STAT_AVG", ADUMP_STAT_AVG)
	C("STAT_NAN", ADUMP_STAT_NAN)
	C("STAT_NEG_INF", ADUMP_STAT_NEG_INF)
	C("STAT_POS_INF", ADUMP_STAT_POS_INF)
	C("STAT_L2NORM", ADUMP_STAT_L2NORM)
	C("STAT_DEFAULT", ADUMP_STAT_DEFAULT)
	C("STAT_ALL", ADUMP_STAT_ALL)
	C("LOG_DEBUG", ADUMP_LOG_DEBUG)
	C("LOG_INFO", ADUMP_LOG_INFO)
	C("LOG_WARN", ADUMP_LOG_WARN)
	C("LOG_ERROR", ADUMP_LOG_ERROR)
#undef C
	if (PyModule_AddObject(m, "GUARD_OFF", PyLong_FromUnsignedLongLong(ADUMP_GUARD_OFF)) < 0)
		return -1;
	return 0;
}
