/* SPDX-License-Identifier: Apache-2.0 */
/* Shared declarations of the _adump extension module (CPython limited API, abi3): the
 * exception classes, the error translation and the type specs each file contributes. */
#ifndef ADUMP_PYADUMP_INT_H
#define ADUMP_PYADUMP_INT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <stdint.h>

/* Exception classes, created at module init; adump.Error is the base of the others. */
struct pyadump_errors {
	PyObject *error;
	PyObject *config;
	PyObject *corrupt;
	PyObject *shutdown;
	PyObject *write;
	PyObject *dropped;
	PyObject *not_found;
	PyObject *state;
	PyObject *unsupported;
	PyObject *too_big;
	PyObject *callback;
	PyObject *incomplete;
	PyObject *closed;       /* use of a closed session, stream or reader */
	PyObject *thread;       /* a stream used from a thread other than its producer */
};

extern struct pyadump_errors pyadump_err;

/**
 * pyadump_raise() - set a Python exception for a negative adump return value.
 * @ret:      -errno (OSError with that errno) or -ADUMP_ERR_* (the matching adump.Error
 *            subclass, with .code = ADUMP_ERR_* and .message).
 * @message:  adump's message for the failure, or NULL for adump_strerror(@ret).
 * @filename: attached to OSError, may be NULL.
 * Return: NULL, so callers can `return pyadump_raise(...)`.
 */
PyObject *pyadump_raise(int ret, const char *message, const char *filename);

/* PyArg_ParseTuple "O&" converter of an index, offset or id to a uint64_t: TypeError for
 * what is not an int, adump.ConfigError for a negative one or one past 64 bits (never cut to
 * its low bits, as the "I" and "K" formats do). Return: 1, or 0 with the error set. */
int pyadump_uint64_conv(PyObject *obj, void *out);

/* Raise adump.ClosedError "<what> is closed". Return: NULL. */
PyObject *pyadump_raise_closed(const char *what);

int pyadump_reader_init(PyObject *module);
int pyadump_capture_init(PyObject *module);
int pyadump_compare_init(PyObject *module);
int pyadump_export_init(PyObject *module);
int pyadump_pt_init(PyObject *module);
int pyadump_autograd_init(PyObject *module);
int pyadump_same_init(PyObject *module);
int pyadump_describe_init(PyObject *module);
int pyadump_config_init(PyObject *module);
int pyadump_scan_init(PyObject *module);
int pyadump_report_init(PyObject *module);
int pyadump_file_range_init(PyObject *module);

/* Between begin and end, the first warning or error the calling thread's library calls log
 * is copied into @buf (""  if none): the reason to put in the exception. */
void pyadump_reason_begin(char *buf, size_t cap);
void pyadump_reason_end(void);

struct adump_config;

/* Fill @cfg from Session keywords (every struct adump_config key, by its name); strings are
 * borrowed from @kw, bounds allocated (pyadump_config_free()); *@callback (borrowed) for the
 * callback sink. Return: 0, or -1 with adump.ConfigError set and nothing left allocated. */
int pyadump_parse_config(PyObject *kw, struct adump_config *cfg, PyObject **callback);

/* Free what pyadump_parse_config() allocated for @cfg (its bounds); after the session is
 * created (it copies them) or the config checked. */
void pyadump_config_free(struct adump_config *cfg);

/* Validate @cfg as adump_session_create() will. Return: 0, or -1 with adump.ConfigError
 * set, its message the library's reason. */
int pyadump_config_check(const struct adump_config *cfg, PyObject *callback);

struct adump_host_tensor;

/* *@slot holds @v (a new reference) in place of what it held. */
static inline void pyadump_keep(PyObject **slot, PyObject *v)
{
	Py_INCREF(v);
	Py_XDECREF(*slot);
	*slot = v;
}

/* _torch_types(Tensor, Parameter, {torch.dtype: adump dtype}, torch.strided): dump() takes
 * CPU tensors of exactly these types as they are (python/src/tensors.c). */
PyObject *pyadump_torch_types(PyObject *self, PyObject *args);

/* What dump(direct=True) learns of a tensor it takes, for its statistics key. */
struct pyadump_torch_id {
	bool is_parameter;              /* a torch.nn.Parameter: no key */
	long long version;
	uintptr_t ptr;                  /* its data_ptr() */
};

/* @keys (a _StatsKeys) gives tensor @t its statistics key in *@out (0: a parameter, none);
 * _of: with its version and data pointer known. Return: 0, or -1 with an exception. */
int pyadump_stats_key(PyObject *keys, PyObject *t, uint64_t *out);
int pyadump_stats_key_of(PyObject *keys, PyObject *t, const struct pyadump_torch_id *id,
			 uint64_t *out);
bool pyadump_is_stats_keys(PyObject *obj);

/* The module's _StatsKeys type. */
int pyadump_tensors_init(PyObject *m);

/* Reused buffers a copying direct dump gathers its strided tensors into: pages already
 * there, where torch's contiguous() copy would be fresh memory every call, each page a
 * fault (a transformer's strided activations and gradients: about 1,100 faults a step).
 * Slot k serves the dump's k-th strided tensor; all of them together hold at most
 * PYADUMP_SCRATCH_BYTES (a tensor that would pass that is copied by torch as before).
 * A stream's own, used by one dump at a time (@is_busy: the dump of another thread, which
 * the library refuses, leaves them alone). */
#define PYADUMP_SCRATCH_SLOTS 8
#define PYADUMP_SCRATCH_BYTES (64u << 20)

struct pyadump_scratch {
	bool is_busy;
	unsigned used;                  /* slots the dump in progress took */
	size_t held;                    /* bytes of all slots */
	struct {
		void *p;
		size_t cap;
	} slot[PYADUMP_SCRATCH_SLOTS];
};

void pyadump_scratch_free(struct pyadump_scratch *sc);

/* Views of the tensors of sequence @seq (the dump() argument @field) into @views/@tensors
 * from index @at. With @ids (dump(direct=True)), each must be a tensor the native dump
 * takes as it is: a CPU tensor of exactly the types and dtypes _torch_types() named,
 * strided (no quantized dtype is among them), its key's needs in @ids from @at. Return:
 * their count; -2 (@ids: one is not such a tensor; no exception); or -1 with an exception
 * naming the bad item. Views taken so far, counted in *@taken, are left for the caller to
 * release. @scratch (direct and copying dumps only; NULL: none): strided tensors are
 * gathered there, valid until its next use. */
Py_ssize_t pyadump_tensors_from(const char *field, PyObject *seq, Py_buffer *views,
				struct adump_host_tensor *tensors, Py_ssize_t at,
				Py_ssize_t *taken, struct pyadump_torch_id *ids,
				struct pyadump_scratch *scratch);

/* Hand the library's queued log lines to Python's logging; keeps a pending exception. */
void pyadump_log_drain(void);

/* A dict item setter that steals @value; returns -1 when @value is NULL or the set fails. */
int pyadump_dict_steal(PyObject *dict, const char *key, PyObject *value);

#endif
