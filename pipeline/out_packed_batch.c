/* SPDX-License-Identifier: Apache-2.0 */
/* Packed layout, small files: a file that arrives in one record is copied whole into a worker
 * batch (struct packed_batch) and its staging buffer goes back at once; a batch is one write
 * of many files into the segment, and its files' index lines are queued when that write has
 * completed. And the background data syncs and writeback of what batches wrote, so dirty
 * pages never pile up behind a sync that has to wait for them all. Segments and the index are
 * out_packed.c's. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "pipeline/loss_int.h"
#include "pipeline/out_packed_int.h"
#include "proto/proto.h"

static struct packed_batch *batch_create(void)
{
	struct packed_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->mem = malloc(BATCH_BYTES);
	b->lines = malloc(BATCH_LINE_BYTES);
	b->runs = malloc(BATCH_RUN_MAX * sizeof(*b->runs));
	b->ops = malloc(BATCH_FILE_MAX * sizeof(*b->ops));
	if (!b->mem || !b->lines || !b->runs || !b->ops) {
		packed_batch_destroy(b);
		return NULL;
	}
	return b;
}

/* The batch to fill: the open one, a free one or a new one. NULL with *is_busy when every
 * batch is in flight (their completions put them back). */
static struct packed_batch *batch_get(struct adump_worker *w, bool *is_busy)
{
	struct packed_state *p = w->out_state;
	struct packed_batch *b = p->batch;

	*is_busy = false;
	if (b)
		return b;
	if (!p->free_batches && p->batch_count < BATCH_MAX) {
		b = batch_create();
		if (b) {
			p->batch_count++;
			b->next_free = p->free_batches;
			p->free_batches = b;
		}
	}
	if (!p->free_batches) {
		*is_busy = p->batch_count != 0;
		return NULL;
	}
	b = p->free_batches;
	p->free_batches = b->next_free;
	b->len = 0;
	b->lines_len = 0;
	b->file_count = 0;
	b->run_count = 0;
	b->base = p->seg_offset;
	b->write.req.fd = p->seg_fd;
	p->batch = b;
	return b;
}

/* Queue the open batch's write, if there is one. */
void packed_batch_submit(struct adump_worker *w)
{
	struct packed_state *p = w->out_state;
	struct packed_batch *b = p->batch;

	if (!b)
		return;
	p->batch = NULL;
	b->write = (struct adump_chunk_write){
		.req = { .fd = b->write.req.fd, .buf_index = -1, .buf = b->mem, .len = b->len,
			 .offset = b->base },
		.priv = b,
	};
	if (!adump_submit_write(w, &b->write))
		packed_batch_done(w, b, b->write.req.res);
}

/* Starts the writeback of the pending written range, if any. */
static void writeback_start(struct packed_state *p)
{
	if (p->wb_fd >= 0 && p->wb_to > p->wb_from)
		sync_file_range(p->wb_fd, (off64_t)p->wb_from, (off64_t)(p->wb_to - p->wb_from),
				SYNC_FILE_RANGE_WRITE);
	p->wb_from = p->wb_to;
}

/* @len more bytes of segment @fd are written: once sync_bytes have been, start a background
 * fdatasync() of it (one at a time). Writeback alone leaves the disk's own cache to the final
 * flush, which then waits for all of it after the last file; a sync every few tens of MiB
 * lets the disk flush while the workers are still packing. */
void packed_sync(struct adump_worker *w, int fd, uint64_t len)
{
	struct packed_state *p = w->out_state;
	size_t step = w->session->cfg.sync_bytes ? w->session->cfg.sync_bytes
						  : ADUMP_DEFAULT_SYNC_BYTES;
	int ret;

	p->sync_owed += len;
	if (step == SIZE_MAX || p->sync_owed < step || p->is_sync_in_flight ||
	    p->is_sync_unsupported)
		return;
	p->sync_write = (struct adump_chunk_write){
		.req = { .fd = fd, .is_datasync = true, .buf_index = -1 },
	};
	ret = adump_writer_write(w->writer, &p->sync_write.req);
	if (ret == -EOPNOTSUPP)
		p->is_sync_unsupported = true;
	if (ret < 0)
		return;                         /* none started: a later batch tries again */
	p->sync_owed = 0;
	p->is_sync_in_flight = true;
}

/* The background fdatasync() of a segment completed with @res (0 or -errno). */
void packed_sync_done(struct adump_worker *w, int res)
{
	struct packed_state *p = w->out_state;

	p->is_sync_in_flight = false;
	if (res < 0) {
		/* The data is written and indexed; the disk may not have kept it. */
		atomic_fetch_add_explicit(&w->session->write_errors, 1, memory_order_relaxed);
		adump_session_set_error(w->session, res);
		adump_log_once(ADUMP_LOG_ERROR, MODULE,
			       "worker %u: syncing a segment to the disk: %s", w->index,
			       adump_strerror(res));
	}
}

/* A batch of @fd's [@from, @to) is written: once a segment has ADUMP_WRITEBACK_MIN_BYTES of
 * such data, start its writeback, as the worker does for large writes. Small batches would
 * otherwise leave the whole capture to the final flush. */
void packed_writeback(struct packed_state *p, int fd, uint64_t from, uint64_t to)
{
	if (fd != p->wb_fd || from > p->wb_to || to < p->wb_from) {
		/* Another segment, or not next to what is pending: start that, begin anew. */
		writeback_start(p);
		p->wb_fd = fd;
		p->wb_from = from;
		p->wb_to = to;
	} else {
		p->wb_from = from < p->wb_from ? from : p->wb_from;
		p->wb_to = to > p->wb_to ? to : p->wb_to;
	}
	if (p->wb_to - p->wb_from >= ADUMP_WRITEBACK_MIN_BYTES)
		writeback_start(p);
}

/* The batch's write completed with @res (bytes or -errno). */
void packed_batch_done(struct adump_worker *w, struct packed_batch *b, int res)
{
	struct adump_session *s = w->session;
	struct packed_state *p = w->out_state;
	int ret = res < 0 ? res : 0;

	if (ret == 0) {
		atomic_fetch_add_explicit(&s->bytes, b->len, memory_order_relaxed);
		packed_writeback(p, b->write.req.fd, b->base, b->base + b->len);
		packed_sync(w, b->write.req.fd, b->len);
		/* The data is written: now its lines, and they go out before the records are
		 * retired, so a stream sync that returns finds its files indexed. */
		if (p->index_len + b->lines_len > INDEX_BATCH_BYTES)
			ret = packed_index_flush(w);
		if (ret == 0)
			ret = packed_index_reserve(w, b->lines_len);
		if (ret == 0) {
			memcpy(p->index_buf + p->index_len, b->lines, b->lines_len);
			p->index_len += b->lines_len;
			ret = packed_index_flush(w);
		}
		if (ret < 0)
			adump_log_once(ADUMP_LOG_ERROR, MODULE, "indexing a batch: %s",
				       adump_strerror(ret));
	} else {
		atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
		adump_log_once(ADUMP_LOG_ERROR, MODULE,
			       "writing %u files to segment w%u at %llu: %s (further failures are counted)",
			       b->file_count, w->index, (unsigned long long)b->base,
			       adump_strerror(ret));
	}
	/* A failed file is counted once its losses are written, as adump_file_finish() does. */
	if (ret < 0) {
		adump_session_set_error(s, ret);
		for (uint32_t i = 0; i < b->file_count; i++)
			adump_loss_file(s, b->ops[i], NULL, ret);
		atomic_fetch_add_explicit(&s->files_failed, b->file_count, memory_order_relaxed);
	} else {
		atomic_fetch_add_explicit(&s->files_completed, b->file_count, memory_order_relaxed);
	}
	adump_guard_bytes_done(s, b->len);
	for (uint32_t i = 0; i < b->file_count; i++) {
		b->ops[i]->status = ret;
		/* Its line is written (or its loss logged): the journal slot is done with it. */
		if (b->ops[i]->journal_slot)
			atomic_fetch_sub_explicit(b->ops[i]->journal_held, 1, memory_order_relaxed);
		adump_op_rec_destroy(b->ops[i]);
	}
	/* Last: a sync waiting for these records then sees the files counted and indexed. */
	for (uint32_t i = 0; i < b->run_count; i++)
		adump_chan_retire_sc(b->runs[i].chan, b->runs[i].record_count);
	b->next_free = p->free_batches;
	p->free_batches = b;
}

/* A whole small file in one record: copy it into the open batch, give the staging buffer
 * back at once and retire the record once the batch is written. Return: 0 if the record
 * does not qualify (the ordinary path follows); 1 if it was consumed; -EBUSY if every batch
 * is in flight (nothing of the record taken: the worker reaps and retries). */
int packed_take_small(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec)
{
	struct adump_session *s = w->session;
	struct packed_state *p = w->out_state;
	struct adump_op_rec *op = rec->op;
	uint64_t limit = s->cfg.segment_bytes ? s->cfg.segment_bytes : DEFAULT_SEGMENT_BYTES;
	uint64_t payload_bytes = op->payload_bytes;
	struct packed_batch *b;
	char rel[4200];
	size_t rel_len, total;
	bool is_busy;
	int name_len;

	/* Not a zero-copy file (hooks): its producer hears once the file is written, which a
	 * batch does only later. */
	if ((rec->flags & (ADUMP_REC_FIRST | ADUMP_REC_LAST)) != (ADUMP_REC_FIRST | ADUMP_REC_LAST) ||
	    op->priv || p->seg_fd < 0 || rec->offset != 0 || rec->len != payload_bytes ||
	    payload_bytes > BATCH_SMALL_BYTES || op->hooks ||
	    atomic_load_explicit(&op->is_failed, memory_order_relaxed))
		return 0;
	/* A batch holds the file past its record: within the journal's bound, or not at all
	 * (the ordinary path holds its record until the file is done). */
	if (op->journal_slot && atomic_load_explicit(op->journal_held, memory_order_relaxed) >=
				    PACKED_JOURNAL_HELD_MAX)
		return 0;
	rel_len = (size_t)(adump_decimal_put(rel, op->op.device_id) - rel);
	rel[rel_len++] = '/';
	/* The same bound as the ordinary path's name buffer (file_open()). */
	name_len = adump_dump_file_name(&op->op, rel + rel_len, 4096);
	if (name_len < 0)
		return 0;
	rel_len += (size_t)name_len;

	for (int attempt = 0;; attempt++) {
		b = batch_get(w, &is_busy);
		if (!b)
			return is_busy ? -EBUSY : 0;
		size_t room = BATCH_BYTES - b->len;
		long header_len = room > payload_bytes ?
			adump_dump_header_pack(&op->op, b->mem + b->len, room - payload_bytes) :
			-ADUMP_ERR_TOO_BIG;

		if (header_len < 0 && header_len != -ADUMP_ERR_TOO_BIG)
			return 0;
		if (header_len >= 0) {
			total = (size_t)header_len + payload_bytes;
			if (total > BATCH_SMALL_BYTES)
				return 0;
			if (p->seg_offset && p->seg_offset + total > limit) {
				/* A file never spans two segments: the batch goes out, a new
				 * segment starts and a new batch with it. */
				packed_batch_submit(w);
				if (packed_segment_roll(w) < 0)
					return 0;
				continue;
			}
			if (b->lines_len + rel_len + ADUMP_PACKED_LINE_FIXED_BYTES <= BATCH_LINE_BYTES &&
			    b->run_count < BATCH_RUN_MAX && b->file_count < BATCH_FILE_MAX)
				break;
		}
		/* The batch is full: out it goes, and the file tries a fresh one once. */
		if (attempt > 1 || !b->file_count)
			return 0;
		packed_batch_submit(w);
	}

	/* Refused by the disk guard: the ordinary path skips it and records the loss. */
	if (adump_guard_bytes_admit(s, total) < 0)
		return 0;
	/* The file is in the batch: the staging buffer can go back before anything is written. */
	unsigned char *file = b->mem + b->len;
	uint64_t base = b->base + b->len;

	memcpy(file + total - payload_bytes, adump_rec_data(rec), payload_bytes);
	b->lines_len += adump_packed_line_put(b->lines + b->lines_len, rel, rel_len, w->index, packed_tag(w), p->seg_number,
				 base, total, adump_crc32c(0, file, total));
	b->len += total;
	b->file_count++;
	p->seg_offset += total;
	if (b->run_count && b->runs[b->run_count - 1].chan == chan)
		b->runs[b->run_count - 1].record_count++;
	else
		b->runs[b->run_count++] = (struct batch_run){ .chan = chan, .record_count = 1 };
	adump_chan_recycle_sc(chan, rec);
	/* Kept until the batch is written: a failed write records its losses by name. */
	b->ops[b->file_count - 1] = op;
	if (op->journal_slot)
		atomic_fetch_add_explicit(op->journal_held, 1, memory_order_relaxed);
	return 1;
}
