/* SPDX-License-Identifier: Apache-2.0 */
/* Shared declarations of the _adump extension module (CPython limited API, abi3): the
 * exception classes, the error translation and the type specs each file contributes. */
#ifndef ADUMP_PYADUMP_INT_H
#define ADUMP_PYADUMP_INT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

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

/* Raise adump.ClosedError "<what> is closed". Return: NULL. */
PyObject *pyadump_raise_closed(const char *what);

int pyadump_reader_init(PyObject *module);
int pyadump_capture_init(PyObject *module);
int pyadump_compare_init(PyObject *module);
int pyadump_export_init(PyObject *module);

/* A dict item setter that steals @value; returns -1 when @value is NULL or the set fails. */
int pyadump_dict_steal(PyObject *dict, const char *key, PyObject *value);

#endif
