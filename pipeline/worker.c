/* SPDX-License-Identifier: Apache-2.0 */
/* A worker: drains the rings of the streams it owns, hands each record to the session's
 * output (struct adump_output_ops, chosen once at session create), submits the writes the
 * output queued and reaps their completions. Whatever a record becomes (a file's chunk, an
 * LZ4 block, a packed segment's bytes, a callback chunk, statistics) is the output's. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "pipeline/loss_int.h"
#include "pipeline/window_int.h"
#include "pipeline/worker_int.h"

#define MODULE "worker"
#define DRAIN_BATCH 64                  /* records taken from one ring before the next ring */
#define COMPLETION_BATCH 64

bool adump_worker_is_drained(struct adump_worker *w)
{
	for (unsigned i = 0; i < ADUMP_STREAM_MAX_LIMIT; i++) {
		struct adump_chan *c = atomic_load_explicit(&w->chans[i], memory_order_acquire);

		if (c && !adump_chan_is_empty_sc(c))
			return false;
	}
	return true;
}

bool adump_submit_write(struct adump_worker *w, struct adump_chunk_write *cw)
{
	struct adump_session *s = w->session;
	int ret = adump_writer_write(w->writer, &cw->req);

	if (ret < 0) {
		cw->req.res = ret;
		if (cw->file) {
			atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
			adump_file_fail(s, cw->file, ret, "queueing a write to");
		}
		return false;
	}
	if (cw->file)
		cw->file->pending++;
	atomic_fetch_add_explicit(&s->writes_in_flight, 1, memory_order_relaxed);
	return true;
}

/* Return: false if the output cannot take the record yet (its buffers are all in flight, or
 * a new file would pass the session's descriptors): nothing of it was consumed, and the
 * caller retries once completions have come back. */
static bool handle_record(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec)
{
	struct adump_session *s = w->session;
	const struct adump_output_ops *out = s->out;
	struct adump_op_rec *op = rec->op;
	struct file_state *fs = op->priv;
	int ret;

	/* A new file takes a descriptor: while the session's open files hold its share of them
	 * and writes in flight will close some, it waits for those (the process's descriptors
	 * bound the files in flight; with none in flight it goes, and EMFILE fails it). */
	if (!fs && adump_session_fds_full(s) && adump_writer_in_flight(w->writer))
		return false;
	ret = out->record_prepare ? out->record_prepare(w, chan, rec) : 0;
	if (ret < 0)
		return false;
	atomic_fetch_add_explicit(&s->records, 1, memory_order_relaxed);
	if (ret > 0)
		return true;
	if (!fs) {
		fs = adump_file_open(w, op, (rec->flags & ADUMP_REC_LAST) && rec->offset == 0 &&
					    rec->len && rec->len == op->payload_bytes &&
					    op->payload_bytes < adump_chan_buffer_bytes(chan));
		if (!fs) {
			/* No memory for the file's state: drop the file, keep the session alive. */
			adump_session_set_error(s, -ENOMEM);
			atomic_fetch_add_explicit(&s->files_failed, 1, memory_order_relaxed);
			adump_log_once(ADUMP_LOG_ERROR, MODULE, "out of memory for a file's state");
			if (s->window)
				adump_window_drop(s->window, op, -ENOMEM);
			if (rec->flags & ADUMP_REC_LAST) {
				adump_loss_file(s, op, NULL, -ENOMEM);
				op->status = -ENOMEM;
				adump_op_rec_destroy(op);
			} else {
				atomic_store_explicit(&op->is_failed, 2, memory_order_relaxed);
			}
			adump_chan_release_sc(chan, rec);
			return true;
		}
		op->priv = fs;
	}
	if (atomic_load_explicit(&op->is_failed, memory_order_relaxed))
		adump_file_fail(s, fs, -ADUMP_ERR_DROPPED, "dropped data of");
	if (fs->is_failed) {
		adump_record_done(w, chan, rec, fs);
	} else {
		if (fs->window_entry)
			adump_window_record(fs, rec);
		out->record(w, chan, rec, fs);
	}
	return true;
}

static void handle_completion(struct adump_worker *w, struct adump_wreq *req)
{
	struct adump_session *s = w->session;
	struct adump_chunk_write *cw = (struct adump_chunk_write *)req;
	struct file_state *fs = cw->file;

	/* A sync is not a write: adump_submit_write() never counted it. */
	if (!req->is_datasync)
		atomic_fetch_sub_explicit(&s->writes_in_flight, 1, memory_order_relaxed);
	if (!fs) {
		s->out->completion(w, cw);
		return;
	}
	fs->pending--;
	if (req->res < 0 && s->out->write_failed)
		s->out->write_failed(w, cw);
	if (req->res < 0) {
		atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
		adump_file_fail(s, fs, req->res, "writing");
	} else {
		atomic_fetch_add_explicit(&s->bytes, req->len, memory_order_relaxed);
		if (req->len >= ADUMP_WRITEBACK_MIN_BYTES && !fs->is_direct)
			sync_file_range(req->fd, (off64_t)req->offset, (off64_t)req->len,
					SYNC_FILE_RANGE_WRITE);
	}
	if (s->out->write_done)
		s->out->write_done(w, cw);
	if (cw->rec)
		adump_record_done(w, cw->chan, cw->rec, fs);
	else if (fs->is_last_seen && fs->pending == 0)
		adump_file_finish(w, fs);
}

static unsigned reap(struct adump_worker *w, bool block, bool *doorbell)
{
	struct adump_wreq *done[COMPLETION_BATCH];
	int n = adump_writer_wait(w->writer, done, COMPLETION_BATCH, block, doorbell);

	if (n < 0) {
		adump_log_once(ADUMP_LOG_ERROR, MODULE, "waiting for completions failed: %s",
			       adump_strerror(n));
		adump_session_set_error(w->session, n);
		usleep(1000);
		return 0;
	}
	for (int i = 0; i < n; i++)
		handle_completion(w, done[i]);
	return (unsigned)n;
}

static unsigned drain_rings(struct adump_worker *w)
{
	unsigned handled = 0;

	/* Tests hold the records in the rings, to see what a kill leaves of dumps handed over
	 * and not yet written. */
	if (ADUMP_TESTPOINT("worker.hold")) {
		usleep(1000);
		return 0;
	}

	for (unsigned i = 0; i < ADUMP_STREAM_MAX_LIMIT; i++) {
		/* Pairs with the release store in adump_session_attach(). */
		struct adump_chan *c = atomic_load_explicit(&w->chans[i], memory_order_acquire);

		if (!c)
			continue;
		/* One fence and wake-up check for the batch's released buffers, not one each. */
		adump_chan_defer_sc(c);
		for (unsigned n = 0; n < DRAIN_BATCH; n++) {
			struct adump_rec *rec = adump_chan_pop_sc(c);

			if (!rec)
				break;
			while (!handle_record(w, c, rec)) {
				/* The output has no buffer free, or the session no descriptor:
				 * completions give them back. */
				bool doorbell;

				adump_writer_submit(w->writer);
				reap(w, true, &doorbell);
			}
			handled++;
		}
		adump_chan_flush_sc(c);
	}
	return handled;
}

/* Polls a little before the worker sleeps: a busy producer posts again within microseconds,
 * and a doorbell costs it a system call and us a wake-up. A producer whose dumps come further
 * apart than the spin (a training loop's hooks, one dump per 100 us) would only burn it:
 * after SPIN_MISSES_MAX empty spins in a row the worker sleeps at once, and spins again on
 * every SPIN_PROBE_EVERY-th idle to find out whether the pace changed. */
#define SPIN_MISSES_MAX 4u
#define SPIN_PROBE_EVERY 16u

static bool spin_for_work(struct adump_worker *w)
{
	uint64_t deadline;

	if (w->spin_misses >= SPIN_MISSES_MAX &&
	    (w->spin_misses++ - SPIN_MISSES_MAX) % SPIN_PROBE_EVERY != 0)
		return false;
	deadline = adump_now_ns() + ADUMP_WORKER_SPIN_NS;
	do {
		for (int i = 0; i < 64; i++)
			__builtin_ia32_pause();
		if (!adump_worker_is_drained(w)) {
			w->spin_misses = 0;
			return true;
		}
	} while (adump_now_ns() < deadline);
	if (w->spin_misses < SPIN_MISSES_MAX)
		w->spin_misses++;
	return false;
}

static bool output_holds(const struct adump_worker *w)
{
	const struct adump_output_ops *out = w->session->out;

	return out->has_held && out->has_held(w);
}

static void *worker_main(void *arg)
{
	struct adump_worker *w = arg;
	bool doorbell;

	for (;;) {
		/* No channel pointer is held here: acknowledge the channels taken away so far
		 * (pairs with the release in slot_release()). */
		uint64_t detach_seq = atomic_load_explicit(&w->detach_seq, memory_order_acquire);

		if (detach_seq != atomic_load_explicit(&w->detach_ack, memory_order_relaxed))
			atomic_store_explicit(&w->detach_ack, detach_seq, memory_order_release);
		unsigned handled = drain_rings(w);

		/* What the output holds back for more work goes out once the rings are drained:
		 * it never waits for work that is not there (a stream sync may wait for it). */
		if (output_holds(w) && adump_worker_is_drained(w))
			w->session->out->submit_held(w);
		if (adump_writer_submit(w->writer) < 0)
			adump_log_once(ADUMP_LOG_ERROR, MODULE, "submitting writes failed");
		handled += reap(w, false, &doorbell);
		if (handled)
			continue;
		if (atomic_load_explicit(&w->should_stop, memory_order_acquire) &&
		    adump_writer_in_flight(w->writer) == 0 && !output_holds(w) &&
		    adump_worker_is_drained(w))
			break;
		if (spin_for_work(w) || output_holds(w))
			continue;
		/* What the output deferred (index lines) goes out before the worker idles. */
		if (w->session->out->idle)
			w->session->out->idle(w);
		/* Dekker with adump_doorbell_ring(): announce the sleep, then look once more. */
		atomic_store_explicit(&w->doorbell.is_sleeping, 1, memory_order_seq_cst);
		if (adump_worker_is_drained(w) &&
		    !atomic_load_explicit(&w->should_stop, memory_order_seq_cst))
			reap(w, true, &doorbell);
		atomic_store_explicit(&w->doorbell.is_sleeping, 0, memory_order_relaxed);
	}
	return NULL;
}

static void output_fini(struct adump_worker *w)
{
	if (w->session->out->worker_fini)
		w->session->out->worker_fini(w);
}

int adump_worker_start(struct adump_session *s, struct adump_worker *w, unsigned index)
{
	struct adump_writer_cfg wcfg = {
		.kind = s->backend, .depth = ADUMP_URING_DEPTH, .threads = ADUMP_PWRITE_THREADS,
		.inline_bytes = ADUMP_PWRITE_INLINE_BYTES, .fixed = s->pool_iov,
		.fixed_count = s->buffer_count,
	};
	int ret;

	memset(w, 0, sizeof(*w));
	w->session = s;
	w->index = index;
	w->dir.fd = -1;
	ret = s->out->worker_init ? s->out->worker_init(w) : 0;
	if (ret < 0)
		goto err_output;
	ret = adump_doorbell_init(&w->doorbell);
	if (ret < 0)
		goto err_output;
	wcfg.doorbell_fd = w->doorbell.event_fd;
	ret = adump_writer_create(&wcfg, &w->writer);
	if (ret < 0)
		goto err_doorbell;
	if (adump_writer_backend(w->writer) != s->backend)
		s->backend = adump_writer_backend(w->writer);
	ret = -pthread_create(&w->thread, NULL, worker_main, w);
	if (ret < 0)
		goto err_writer;
	w->is_started = true;
	return 0;
err_writer:
	adump_writer_destroy(w->writer);
err_doorbell:
	adump_doorbell_fini(&w->doorbell);
err_output:
	output_fini(w);
	return ret;
}

void adump_worker_stop(struct adump_worker *w)
{
	uint64_t one = 1;

	if (!w->is_started)
		return;
	atomic_store_explicit(&w->should_stop, true, memory_order_seq_cst);
	while (write(w->doorbell.event_fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
	pthread_join(w->thread, NULL);
	adump_writer_destroy(w->writer);
	adump_doorbell_fini(&w->doorbell);
	output_fini(w);
	adump_dir_cache_drop(&w->dir);
	w->is_started = false;
}
