/* SPDX-License-Identifier: Apache-2.0 */
/* The host capture API (include/adump/host.h) for Python: what _adump.Session (session.c)
 * and _adump.Stream (stream.c) share, and the module init that adds both types.
 *
 * Copy-mode dumps copy the buffers with the GIL released; zero-copy dumps hold the buffers
 * (Py_buffer views) until the release callback. That callback runs on a worker thread and
 * never takes the GIL: it queues the finished dump, and the views are released by the next
 * call that holds the GIL (dump, sync, stats, close).
 *
 * Any thread may close a session or a stream while other threads still call into it: the
 * native calls that run without the GIL are counted (busy), close first refuses new calls
 * (adump.ClosedError), then waits for the counted ones to return before it frees what they
 * use, as the library requires (no call on a stream concurrently with its close). */
#include "capture_int.h"

static PyObject *session_type;
PyObject *pyadump_stream_type;

/* adump starts its worker threads inside session and stream calls, and threads inherit the
 * caller's signal mask. Python handles signals in its main thread only; a Ctrl-C the kernel
 * delivers to a worker instead interrupts that worker's system calls (EINTR in its io_uring
 * waits) and leaves the main thread unaware of it. So those calls run with every signal
 * blocked, and the workers keep that mask. */
void pyadump_signals_block(sigset_t *saved)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, saved);
}

void pyadump_signals_restore(const sigset_t *saved)
{
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

/* ---- calls in flight ------------------------------------------------------------------- */

/* With the GIL: count a native call on @sess (and on @st, if not NULL) about to run without
 * the GIL; pyadump_busy_leave() after it, with the GIL again. */
void pyadump_busy_enter(struct py_session *sess, struct py_stream *st)
{
	pthread_mutex_lock(&sess->lock);
	sess->busy_count++;
	if (st)
		st->busy_count++;
	pthread_mutex_unlock(&sess->lock);
}

void pyadump_busy_leave(struct py_session *sess, struct py_stream *st)
{
	pthread_mutex_lock(&sess->lock);
	sess->busy_count--;
	if (st)
		st->busy_count--;
	pthread_cond_broadcast(&sess->idle);
	pthread_mutex_unlock(&sess->lock);
}

/* With the GIL (released while waiting): wait until *@count, a busy count of @sess, is 0.
 * New calls are refused by then, so once 0 it stays 0. */
void pyadump_busy_wait(struct py_session *sess, const unsigned *count)
{
	Py_BEGIN_ALLOW_THREADS
	pthread_mutex_lock(&sess->lock);
	while (*count)
		pthread_cond_wait(&sess->idle, &sess->lock);
	pthread_mutex_unlock(&sess->lock);
	Py_END_ALLOW_THREADS
}

/* ---- zero-copy bookkeeping --------------------------------------------------------------- */

/* Worker thread, without the GIL: queue the dump for pyadump_drain(). */
void pyadump_zc_release(void *user, uint32_t task_id, int status)
{
	struct zc_pending *p = user;
	struct py_session *sess = p->sess;

	p->task_id = task_id;
	p->status = status;
	pthread_mutex_lock(&sess->lock);
	p->next = sess->done;
	sess->done = p;
	pthread_mutex_unlock(&sess->lock);
}

/* Worker thread: the caller's check, under the GIL. A false result or an exception fails
 * the dump rather than publish bytes the caller says are stale. */
int pyadump_zc_check(void *user, uint32_t task_id)
{
	struct zc_pending *p = user;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *res = PyObject_CallNoArgs(p->check);
	int ret;

	if (!res) {
		PyErr_WriteUnraisable(p->check);
		ret = -ADUMP_ERR_CALLBACK;
	} else {
		ret = PyObject_IsTrue(res) == 1 ? 0 : -ADUMP_ERR_CORRUPT;
		Py_DECREF(res);
	}
	PyErr_Clear();
	PyGILState_Release(g);
	return ret;
}

void pyadump_zc_free(struct zc_pending *p)
{
	for (uint32_t i = 0; i < p->view_count; i++)
		PyBuffer_Release(&p->views[i]);
	Py_XDECREF(p->check);
	Py_XDECREF(p->on_release);
	PyMem_Free(p);
}

/* With the GIL: release the views of every finished zero-copy dump and tell their owners.
 * Exceptions of on_release callbacks are reported as unraisable; drain never fails. */
void pyadump_drain(struct py_session *sess)
{
	struct zc_pending *p;

	pyadump_log_drain();
	pthread_mutex_lock(&sess->lock);
	p = sess->done;
	sess->done = NULL;
	pthread_mutex_unlock(&sess->lock);
	while (p) {
		struct zc_pending *next = p->next;

		if (p->on_release) {
			PyObject *res = PyObject_CallFunction(p->on_release, "Ii", p->task_id,
							      p->status);

			if (!res)
				PyErr_WriteUnraisable(p->on_release);
			Py_XDECREF(res);
		}
		pyadump_zc_free(p);
		p = next;
	}
}

PyObject *pyadump_chan_dict(const struct adump_stream_stats *c)
{
	return Py_BuildValue("{sIsKsKsIsKsK}", "stream_id", c->stream_id, "records",
			     (unsigned long long)c->records, "drops", (unsigned long long)c->drops,
			     "ring_high_water", c->ring_high_water, "producer_wait_count",
			     (unsigned long long)c->producer_wait_count, "producer_wait_ns",
			     (unsigned long long)c->producer_wait_ns);
}

int pyadump_capture_init(PyObject *m)
{
	session_type = PyType_FromSpec(&pyadump_session_spec);
	pyadump_stream_type = session_type ? PyType_FromSpec(&pyadump_stream_spec) : NULL;
	if (!pyadump_stream_type)
		return -1;
	Py_INCREF(session_type);
	if (PyModule_AddObject(m, "_Session", session_type) < 0)
		return -1;
	Py_INCREF(pyadump_stream_type);
	if (PyModule_AddObject(m, "_Stream", pyadump_stream_type) < 0)
		return -1;
#define DTYPE_CONST(name, val, bits)                                        \
	if (PyModule_AddIntConstant(m, "DT_" #name, val) < 0)               \
		return -1;
	ADUMP_DTYPE_LIST(DTYPE_CONST)
#undef DTYPE_CONST
	return 0;
}
