/* SPDX-License-Identifier: Apache-2.0 */
/* _adump.FileRange: a byte range of a file read into memory the object owns, exposed
 * read-only through the buffer protocol (numpy.frombuffer). The file is closed as soon as the
 * range is read, so walking 50,000 dumps holds no descriptor between them whatever
 * RLIMIT_NOFILE is. The memory goes with the last reference to it (arrays keep it).
 *
 * Why a copy and not a memory map: the arrays over it are touched by any Python code at any
 * time, and a mapped file that shrinks (a capture still writing, a cleanup, a full disk
 * truncating) turns the next touch of a page past its new end into SIGBUS, which kills the
 * interpreter. No check can guard a map: fstat before each access races the truncation, and
 * numpy's accesses are not ours to wrap. Bytes read with pread are the caller's whatever
 * happens to the file afterwards, and a file shorter than its header said is a short read
 * here, an exception. */
#include "pyadump_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "adump/adump_err.h"

struct py_file_range {
	PyObject_HEAD
	char *data;             /* malloc'd, NULL when empty */
	Py_ssize_t len;
};

/* pread @len bytes at @offset; Return: 0, -errno, or -ADUMP_ERR_INCOMPLETE with *@got the
 * bytes there were when the file ends first. */
static int read_all(int fd, char *buf, size_t len, uint64_t offset, size_t *got)
{
	*got = 0;
	while (*got < len) {
		size_t want = len - *got < ((size_t)1 << 30) ? len - *got : (size_t)1 << 30;
		ssize_t n = pread(fd, buf + *got, want, (off_t)(offset + *got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ADUMP_ERR_INCOMPLETE;
		*got += (size_t)n;
	}
	return 0;
}

/* FileRange(path, offset, length, fd=-1): with @fd (the caller's, left open) the bytes are
 * read from the file open there, @path only names it. */
static PyObject *file_range_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	unsigned long long offset, length;
	struct py_file_range *self;
	PyObject *path_obj = NULL;
	const char *path;
	size_t got = 0;
	int fd, given_fd = -1, ret = 0;

	if (!PyArg_ParseTuple(args, "O&KK|i:FileRange", PyUnicode_FSConverter, &path_obj, &offset,
			      &length, &given_fd))
		return NULL;
	path = PyBytes_AsString(path_obj);
	if (!path || length > (unsigned long long)PY_SSIZE_T_MAX || offset > INT64_MAX - length) {
		if (path)
			PyErr_Format(PyExc_ValueError, "%s: range %llu+%llu out of bounds", path,
				     offset, length);
		Py_DECREF(path_obj);
		return NULL;
	}
	self = (struct py_file_range *)PyType_GenericNew(type, NULL, NULL);
	if (!self) {
		Py_DECREF(path_obj);
		return NULL;
	}
	self->len = (Py_ssize_t)length;
	if (length == 0) {
		Py_DECREF(path_obj);
		return (PyObject *)self;
	}
	self->data = malloc((size_t)length);
	if (!self->data) {
		Py_DECREF(path_obj);
		Py_DECREF(self);
		return PyErr_NoMemory();
	}
	Py_BEGIN_ALLOW_THREADS
	fd = given_fd >= 0 ? given_fd : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
	} else {
		ret = read_all(fd, self->data, (size_t)length, offset, &got);
		if (fd != given_fd)
			close(fd);
	}
	Py_END_ALLOW_THREADS
	if (ret == -ADUMP_ERR_INCOMPLETE) {
		char msg[256];

		snprintf(msg, sizeof(msg), "only %llu of the %llu bytes from byte %llu are there: "
			 "the file shrank after it was opened", (unsigned long long)got, length,
			 offset);
		pyadump_raise(ret, msg, path);
	} else if (ret < 0) {
		pyadump_raise(ret, NULL, path);
	}
	Py_DECREF(path_obj);
	if (ret < 0) {
		Py_DECREF(self);
		return NULL;
	}
	return (PyObject *)self;
}

static void file_range_dealloc(PyObject *obj)
{
	struct py_file_range *self = (struct py_file_range *)obj;
	PyTypeObject *tp = Py_TYPE(obj);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);

	free(self->data);
	tp_free(obj);
	Py_DECREF(tp);
}

static int file_range_getbuffer(PyObject *obj, Py_buffer *view, int flags)
{
	struct py_file_range *self = (struct py_file_range *)obj;
	static char empty;

	return PyBuffer_FillInfo(view, obj, self->data ? self->data : &empty, self->len, 1,
				 flags);
}

static void file_range_releasebuffer(PyObject *obj, Py_buffer *view)
{
}

static PyType_Slot file_range_slots[] = {
	{ Py_tp_new, file_range_new },
	{ Py_tp_dealloc, file_range_dealloc },
	{ Py_bf_getbuffer, file_range_getbuffer },
	{ Py_bf_releasebuffer, file_range_releasebuffer },
	{ Py_tp_doc, "FileRange(path, offset, length, fd=-1): bytes of a file, read into memory of its "
		     "own (read-only), no descriptor held" },
	{ 0, NULL },
};

static PyType_Spec file_range_spec = {
	.name = "adump._adump.FileRange",
	.basicsize = sizeof(struct py_file_range),
	.flags = Py_TPFLAGS_DEFAULT,
	.slots = file_range_slots,
};

int pyadump_file_range_init(PyObject *m)
{
	PyObject *type = PyType_FromSpec(&file_range_spec);

	if (!type)
		return -1;
	if (PyModule_AddObject(m, "FileRange", type) < 0) {
		Py_DECREF(type);
		return -1;
	}
	return 0;
}
