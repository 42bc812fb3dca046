/* SPDX-License-Identifier: Apache-2.0 */
/* The session's side of a producer: any producer, a device stream or a host stream (host/),
 * attaches to a session through this one interface and gets a port (producer/) of its own,
 * whose channel (ring/) runs over its share of the staging pool and is consumed by one
 * worker. The producer then posts through the port; the session only ever calls back to
 * quiesce it and to hand or take the port. */
#ifndef ADUMP_PIPELINE_PRODUCER_H
#define ADUMP_PIPELINE_PRODUCER_H

#include <stdbool.h>
#include <stdint.h>

#include "adump/adump.h"
#include "adump/host.h"
#include "common/common.h"
#include "producer/producer.h"

struct adump_producer_ops {
	/* Detach: wait until the producer posts nothing more into its channel. */
	int (*quiesce)(void *producer);
	/* Hand the producer its port, or NULL to take it away (the producer is quiet). */
	void (*bind)(void *producer, struct adump_port *port);
};

/*
 * adump_session_attach_producer() - give @producer a port: as adump_session_attach(),
 * for any producer. @stream_id names its files (adump_stream_id_next()); @ops is borrowed
 * until detach. Return: 0, -ADUMP_ERR_STATE if attached already, -ADUMP_ERR_TOO_BIG when
 * stream_max streams are attached, -ENOMEM. Any thread.
 */
ADUMP_HIDDEN int adump_session_attach_producer(struct adump_session *s, void *producer,
					       uint32_t stream_id,
					       const struct adump_producer_ops *ops);

/*
 * adump_session_detach_producer() - as adump_session_detach(): quiesce, unbind, wait until
 * everything it posted is written, give its buffers back.
 * Return: 0, -ADUMP_ERR_NOT_FOUND, -ADUMP_ERR_STATE (another detach under way).
 */
ADUMP_HIDDEN int adump_session_detach_producer(struct adump_session *s, void *producer);

/*
 * adump_session_stream_dir() - prepare an output directory of a producer's own: @dir
 * (absolute, or relative to the session's dump_path; no ".." component) with its
 * <device_id> folder created for the file sink, below dump_path one component at a time
 * without following a link. *@out receives the malloc'd absolute path (the producer's, for
 * its records' op_rec.dir).
 * Return: 0; -EINVAL for an empty @dir or a ".." component; -ENOTDIR for a file, or below
 * dump_path a link, in the way; -ADUMP_ERR_UNSUPPORTED for the packed layout (its segments
 * are per worker, under the session directory); -ENOMEM; -errno from mkdir.
 */
ADUMP_HIDDEN int adump_session_stream_dir(struct adump_session *s, const char *dir,
					  uint32_t device_id, char **out);

/*
 * adump_session_producer_dir() - @producer (attached and idle: everything it posted is
 * written) writes into @dir from now on (its adump_session_stream_dir() path; NULL: the
 * session directory), and its hand-over journal follows it: a journal of its own made in
 * @dir, the one of its old directory removed (nothing in it is pending). Producer's thread.
 * Return: 0, or -errno when the new journal cannot be made (logged; nothing changed).
 */
ADUMP_HIDDEN int adump_session_producer_dir(struct adump_session *s, void *producer,
					    const char *dir);

/*
 * adump_session_producer_move() - @producer (its port @port, NULL: taken away) leaves the
 * directory @from for @to (absolute, adump_session_stream_dir()'s; NULL: the session
 * directory): waits until everything it posted is written (records in flight borrow @from),
 * tells the output that @from is done if it differs from @to, and moves its hand-over journal
 * (adump_session_producer_dir()). Producer's thread.
 * Return: 0; -ADUMP_ERR_DROPPED when the port dropped a chunk since its last wait (moved all
 * the same); -errno when the new journal cannot be made (the producer stays in @from).
 */
ADUMP_HIDDEN int adump_session_producer_move(struct adump_session *s, void *producer,
					     struct adump_port *port, const char *from,
					     const char *to);

/*
 * adump_session_dir_done() - the output directory @dir (absolute; NULL: every directory)
 * will get no more of the dumps written so far from one producer: an output that writes a
 * file per directory (msprobe's dump.json) writes it now, for the dumps that are complete.
 * Called by a producer leaving a directory once it is idle (adump_host_stream_set_dir()),
 * and by adump_session_flush(). Errors go to the session's first error. Any thread.
 */
ADUMP_HIDDEN void adump_session_dir_done(struct adump_session *s, const char *dir);

/* Whether the session keeps statistics only (ADUMP_CONTENT_STATS): a producer that can read
 * its tensors in place computes them at handover (struct adump_op_rec.tstats). Fixed for
 * the session's life. */
ADUMP_HIDDEN bool adump_session_wants_stats(const struct adump_session *s);
/* Whether the session keeps tensors and writes their statistics as well (msprobe's layout,
 * whose dump.json holds them): a producer that can read its tensors in place computes them
 * at handover, where the bytes are hot, and posts the payload too (struct
 * adump_op_rec.has_payload). Fixed for the session's life. */
ADUMP_HIDDEN bool adump_session_wants_tensor_stats(const struct adump_session *s);

/* Window mode (pipeline/window.c): a dump held by reference instead of copied (a host
 * stream's zero-copy dump): the window reads the producer's memory only when it writes the
 * dump, calling @check first (optional: a negative code there loses the dump, cause
 * changed_before_written, and goes to @release as its status), and calls @release exactly
 * once as the entry goes (its step dropped, the window written or emptied, the session
 * destroyed; status 0 unless the check failed), under the window's lock: it must not call
 * into the session. */
struct adump_window_ref {
	adump_host_check_fn check;
	adump_host_release_fn release;
	void *user;
	uint32_t task_id;
};

/* Where a window holds the copy of a tensor: good while the window is in the step and the
 * epoch (it is emptied) it was made in, whatever else goes. */
struct adump_window_copy {
	const void *at;                 /* NULL: none */
	uint64_t step;
	uint64_t epoch;
};

/* Whether a producer holds its dumps at hand-over, and the hold itself: the payload of
 * @rec (tensor i at @data[i]) copied into the window as the dump's entry (a stub where the
 * window has no room), or with @ref (not NULL) kept there by reference, its statistics
 * computed on the way into rec->tstats (or copied from @known[i] where that is not NULL:
 * the producer has them, the same bytes handed over before; @known NULL for none), so the
 * producer posts no payload (adump_port_post_sp()) and the worker neither copies nor reads
 * it. With @ref, the window calls @ref->release once whatever becomes of the entry (at once
 * for a stub or a dump not held). @copies (NULL for none; only with @known, without @ref):
 * in, copies[i].at where the window holds tensor i's bytes already (a known tensor handed
 * over before), which the entry then shares instead of copying them again (and taking
 * their room), if that copy is still good; out, where the window holds each tensor now
 * (.at NULL: nowhere). Producer's thread.
 * Return: 0, or -ENOMEM (nothing done, @ref->release not called: the producer posts the
 * payload, or with @ref refuses the dump). */
ADUMP_HIDDEN bool adump_session_window_at_handover(const struct adump_session *s);
ADUMP_HIDDEN int adump_session_window_hold(struct adump_session *s, struct adump_op_rec *rec,
					   const void *const *data,
					   const struct adump_tstats *const *known,
					   const struct adump_window_ref *ref,
					   struct adump_window_copy *copies);

#endif
