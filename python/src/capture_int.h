/* SPDX-License-Identifier: Apache-2.0 */
/* What the capture files of the _adump module share: the objects _Session (session.c) and
 * _Stream (stream.c), the count of native calls in flight that lets any thread close them,
 * and the zero-copy bookkeeping (capture.c). Not for the module's other files. */
#ifndef ADUMP_PYADUMP_CAPTURE_INT_H
#define ADUMP_PYADUMP_CAPTURE_INT_H

#include "pyadump_int.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "adump/adump.h"
#include "adump/host.h"

struct py_stream;

/* A zero-copy dump in flight: the views adump reads from until its release callback. */
struct zc_pending {
	struct zc_pending *next;
	struct py_session *sess;
	PyObject *check;                /* callable -> bool, or NULL; called on a worker */
	PyObject *on_release;           /* callable(task_id, status), or NULL */
	uint32_t task_id;
	int status;
	uint32_t view_count;
	Py_buffer views[];
};

struct py_session {
	PyObject_HEAD
	struct adump_session *s;
	PyObject *callback;             /* callback sink: callable(name, offset, data, is_last) */
	pthread_mutex_t lock;           /* guards done and the busy counts */
	pthread_cond_t idle;            /* a busy count fell to 0, or the session is closed */
	struct zc_pending *done;        /* released by adump, views still held */
	struct py_stream *streams;      /* open streams, closed with the session */
	unsigned busy_count;            /* native calls on it or its streams, GIL released */
	bool is_closing;                /* close began: every new call is refused */
	bool is_closed;                 /* adump_session_destroy() returned */
	int closed_error;               /* adump_session_destroy()'s return */
};

struct py_stream {
	PyObject_HEAD
	struct py_session *sess;        /* strong reference */
	struct adump_host_stream *hs;   /* NULL once closed */
	unsigned busy_count;            /* its native calls running without the GIL */
	bool is_closing;                /* close began (unlinked from sess->streams) */
	struct pyadump_scratch scratch; /* for its copying direct dumps */
	struct py_stream *next, **pprev;
};

/* The _Stream type (capture.c creates it at module init) and the two types' specs. */
extern PyObject *pyadump_stream_type;
extern PyType_Spec pyadump_session_spec;
extern PyType_Spec pyadump_stream_spec;

/* Around session and stream calls that may start adump's worker threads: every signal
 * blocked, so that the workers never take Python's (capture.c says why). */
void pyadump_signals_block(sigset_t *saved);
void pyadump_signals_restore(const sigset_t *saved);

/* Native calls in flight without the GIL, counted so that a close waits for them. */
void pyadump_busy_enter(struct py_session *sess, struct py_stream *st);
void pyadump_busy_leave(struct py_session *sess, struct py_stream *st);
void pyadump_busy_wait(struct py_session *sess, const unsigned *count);

/* Zero-copy dumps: the release and check callbacks adump calls on a worker, freeing one, and
 * pyadump_drain(), which releases the views of the finished ones (with the GIL). */
void pyadump_zc_release(void *user, uint32_t task_id, int status);
int pyadump_zc_check(void *user, uint32_t task_id);
void pyadump_zc_free(struct zc_pending *p);
void pyadump_drain(struct py_session *sess);

/* A stream's channel counters as a dict (session and stream stats()). */
PyObject *pyadump_chan_dict(const struct adump_stream_stats *c);

/* stream.c: open a host stream of @sess with @cfg as a new _Stream (or NULL with the error
 * set); close @st, keeping the first error in *@ret (session.c closes its streams so). */
PyObject *pyadump_stream_open(struct py_session *sess,
			      const struct adump_host_stream_config *cfg);
void pyadump_stream_close(struct py_stream *st, int *ret);

#endif
