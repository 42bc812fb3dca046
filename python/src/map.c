/* SPDX-License-Identifier: Apache-2.0 */
/* _adump.Map: a read-only memory map of a byte range of a file, exposed through the buffer
 * protocol (numpy.frombuffer). Unlike mmap.mmap it keeps no file descriptor: the file is
 * closed as soon as it is mapped, so walking 50,000 dumps holds no descriptor between them
 * whatever RLIMIT_NOFILE is. The map goes with the last reference to it (arrays keep it). */
#include "pyadump_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

struct py_map {
	PyObject_HEAD
	void *base;             /* the mapping (page aligned), NULL when empty */
	size_t map_len;
	char *data;             /* the requested range inside it */
	Py_ssize_t len;
};

static PyObject *map_type;

/* Map(path, offset, length) */
static PyObject *map_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	unsigned long long offset, length;
	PyObject *path_obj = NULL;
	struct py_map *self;
	long page = sysconf(_SC_PAGESIZE);
	const char *path;
	size_t skip;
	int fd, err;

	if (!PyArg_ParseTuple(args, "O&KK:Map", PyUnicode_FSConverter, &path_obj, &offset,
			      &length))
		return NULL;
	path = PyBytes_AsString(path_obj);
	if (!path || length > (unsigned long long)PY_SSIZE_T_MAX ||
	    offset > UINT64_MAX - length) {
		if (path)
			PyErr_Format(PyExc_ValueError, "%s: range %llu+%llu out of bounds", path,
				     offset, length);
		Py_DECREF(path_obj);
		return NULL;
	}
	self = (struct py_map *)PyType_GenericNew(type, NULL, NULL);
	if (!self) {
		Py_DECREF(path_obj);
		return NULL;
	}
	self->len = (Py_ssize_t)length;
	if (length == 0) {
		Py_DECREF(path_obj);
		return (PyObject *)self;
	}
	skip = (size_t)(offset % (unsigned long long)page);
	Py_BEGIN_ALLOW_THREADS
	fd = open(path, O_RDONLY | O_CLOEXEC);
	err = fd < 0 ? errno : 0;
	if (fd >= 0) {
		self->map_len = skip + (size_t)length;
		self->base = mmap(NULL, self->map_len, PROT_READ, MAP_SHARED, fd,
				  (off_t)(offset - skip));
		if (self->base == MAP_FAILED) {
			err = errno;
			self->base = NULL;
		}
		close(fd);
	}
	Py_END_ALLOW_THREADS
	if (err) {
		pyadump_raise(-err, NULL, path);
		Py_DECREF(path_obj);
		Py_DECREF(self);
		return NULL;
	}
	Py_DECREF(path_obj);
	self->data = (char *)self->base + skip;
	return (PyObject *)self;
}

static void map_dealloc(PyObject *obj)
{
	struct py_map *self = (struct py_map *)obj;
	PyTypeObject *tp = Py_TYPE(obj);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);

	if (self->base)
		munmap(self->base, self->map_len);
	tp_free(obj);
	Py_DECREF(tp);
}

static int map_getbuffer(PyObject *obj, Py_buffer *view, int flags)
{
	struct py_map *self = (struct py_map *)obj;
	static char empty;

	return PyBuffer_FillInfo(view, obj, self->data ? self->data : &empty, self->len, 1,
				 flags);
}

static void map_releasebuffer(PyObject *obj, Py_buffer *view)
{
}

static PyType_Slot map_slots[] = {
	{ Py_tp_new, map_new },
	{ Py_tp_dealloc, map_dealloc },
	{ Py_bf_getbuffer, map_getbuffer },
	{ Py_bf_releasebuffer, map_releasebuffer },
	{ Py_tp_doc, "Map(path, offset, length): read-only bytes of a file, no descriptor held" },
	{ 0, NULL },
};

static PyType_Spec map_spec = {
	.name = "adump._adump.Map",
	.basicsize = sizeof(struct py_map),
	.flags = Py_TPFLAGS_DEFAULT,
	.slots = map_slots,
};

int pyadump_map_init(PyObject *m)
{
	map_type = PyType_FromSpec(&map_spec);
	if (!map_type)
		return -1;
	Py_INCREF(map_type);
	if (PyModule_AddObject(m, "Map", map_type) < 0) {
		Py_DECREF(map_type);
		Py_DECREF(map_type);
		return -1;
	}
	return 0;
}
