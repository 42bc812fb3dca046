/* SPDX-License-Identifier: Apache-2.0 */
/* A worker: drains the rings of the streams it owns, builds each file's DumpData header
 * once, and writes every chunk at its exact offset through its own writer, several in flight
 * per file (or hands it to the callback, or folds it into statistics). A file is written as
 * <name>.part and renamed only when every chunk, the last included, has completed; a file
 * that lost data becomes <name>.failed and is counted, never left looking complete. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "pipeline/worker_int.h"
#include "proto/proto.h"

#define MODULE "worker"
#define DRAIN_BATCH 64                  /* records taken from one ring before the next ring */
#define COMPLETION_BATCH 64

/* @base followed by @suffix into @dst. Return: 0, or -ENAMETOOLONG. */
static int path_with(char *dst, size_t cap, const char *base, const char *suffix)
{
	size_t base_len = strlen(base), suffix_len = strlen(suffix);

	if (base_len + suffix_len >= cap)
		return -ENAMETOOLONG;
	memcpy(dst, base, base_len);
	memcpy(dst + base_len, suffix, suffix_len + 1);
	return 0;
}


static int ensure_device_dir(struct adump_session *s, uint32_t device_id)
{
	char path[4200];
	uint64_t bit = device_id < 64 ? (1ull << device_id) : 0;
	int ret;

	if (bit && (atomic_load_explicit(&s->device_dirs, memory_order_relaxed) & bit))
		return 0;
	snprintf(path, sizeof(path), "%s/%u", s->dir, device_id);
	ret = adump_mkdir_p(path, 0750);
	if (ret == 0 && bit)
		atomic_fetch_or_explicit(&s->device_dirs, bit, memory_order_relaxed);
	return ret;
}

void adump_file_fail(struct adump_session *s, struct file_state *fs, int err, const char *what)
{
	if (fs->is_failed)
		return;
	fs->is_failed = true;
	fs->error = err;
	adump_session_set_error(s, err);
	adump_log_once(ADUMP_LOG_ERROR, MODULE, "%s %s: %s (further failures are counted)", what,
		       fs->path, adump_strerror(err));
}

static void deliver(struct adump_session *s, const char *name, uint64_t offset, const void *data,
		    size_t len, bool is_last)
{
	struct adump_chunk chunk = {
		.file_name = name, .offset = offset, .data = data, .len = len, .is_last = is_last,
	};

	if (s->cfg.chunk_fn(&chunk, s->cfg.chunk_user) != 0 &&
	    atomic_fetch_add_explicit(&s->callback_errors, 1, memory_order_relaxed) == 0)
		adump_log(ADUMP_LOG_WARN, MODULE, "dump callback returned an error for %s (counted)",
			  name);
	atomic_fetch_add_explicit(&s->bytes, len, memory_order_relaxed);
}

/* A small file written whole and published at once: the statistics CSV. */
static int write_small_file(const char *path, const void *data, size_t len)
{
	struct adump_pubfile pf;
	int ret = adump_pubfile_open(&pf, path, 0, ADUMP_FILE_MODE);

	if (ret < 0)
		return ret;
	return adump_pubfile_close(&pf, path, adump_write_all(pf.fd, data, len), NULL);
}

static void finish_stats(struct adump_session *s, struct file_state *fs)
{
	char csv_name[4200];
	char *csv = NULL;
	size_t len = 0;
	int ret;

	ret = path_with(csv_name, sizeof(csv_name), fs->path, ".csv");
	if (ret == 0)
		ret = adump_statacc_csv(&fs->stats, &csv, &len);
	if (ret < 0) {
		adump_file_fail(s, fs, ret, "computing statistics of");
		return;
	}
	if (s->cfg.sink == ADUMP_SINK_CALLBACK) {
		/* As CANN's host writer does: the CSV text, NUL-terminated, in one chunk. */
		deliver(s, csv_name, 0, csv, len + 1, true);
	} else {
		ret = write_small_file(csv_name, csv, len);
		if (ret < 0) {
			atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
			adump_file_fail(s, fs, ret, "writing statistics of");
		} else {
			atomic_fetch_add_explicit(&s->bytes, len, memory_order_relaxed);
		}
	}
	free(csv);
}

static bool rings_empty(struct adump_worker *w)
{
	for (unsigned i = 0; i < ADUMP_STREAM_MAX_LIMIT; i++) {
		struct adump_chan *c = atomic_load_explicit(&w->chans[i], memory_order_acquire);

		if (c && !adump_chan_is_empty_sc(c))
			return false;
	}
	return true;
}

/* Direct I/O, once every direct write of the file has completed: its last partial block,
 * through the page cache. Never written past the file's size, which preallocate() set. */
static int write_tail(struct file_state *fs)
{
	int flags;

	if (!fs->tail_len)
		return 0;
	flags = fcntl(fs->fd, F_GETFL);
	if (flags < 0 || fcntl(fs->fd, F_SETFL, flags & ~O_DIRECT) < 0)
		return -errno;
	/* Every other write carried its own offset: the descriptor's position is free. */
	if (lseek(fs->fd, (off_t)fs->tail_offset, SEEK_SET) < 0)
		return -errno;
	return adump_write_all(fs->fd, fs->tail, fs->tail_len);
}

/* Everything of the file has completed: put it in place (or mark it failed), count it. */
static void file_finish(struct adump_worker *w, struct file_state *fs)
{
	struct adump_session *s = w->session;
	const char *suffix = s->cfg.compress == ADUMP_COMPRESS_LZ4 ? ".lz4" : "";
	char final[4200];
	int ret;

	/* Every byte has been written (or delivered): a zero-copy producer may still veto
	 * publishing what its memory held, before the file gets its name. */
	if (!fs->is_failed) {
		ret = adump_op_rec_check(fs->op);
		if (ret < 0)
			adump_file_fail(s, fs, ret, "the producer's check rejected");
	}
	if (fs->has_stats) {
		if (!fs->is_failed)
			finish_stats(s, fs);
		adump_statacc_fini(&fs->stats);
	} else if (s->cfg.layout == ADUMP_LAYOUT_PACKED) {
		if (!fs->is_failed) {
			ret = adump_packed_index(w, fs);

			/* Batched while more work waits; at the end of a burst the line goes out
			 * now, before the sync that waits for this file can return. */
			if (ret == 0 && rings_empty(w))
				ret = adump_packed_flush(w);
			if (ret < 0)
				adump_file_fail(s, fs, ret, "indexing");
		}
	} else if (s->cfg.sink == ADUMP_SINK_FILE && fs->fd >= 0) {
		struct adump_pubfile pf = { .fd = fs->fd, .is_unnamed = fs->is_unnamed };

		/* Fits: open_file() built the same name. */
		path_with(final, sizeof(final), fs->path, suffix);
		if (fs->is_direct && !fs->is_failed) {
			ret = write_tail(fs);
			if (ret < 0)
				adump_file_fail(s, fs, ret, "writing the last block of");
		}
		fs->fd = -1;
		/* What was captured of a failed file stays, under a name that can never be
		 * mistaken for a complete dump. */
		ret = adump_pubfile_close(&pf, final, fs->is_failed ? -ADUMP_ERR_WRITE : 0, ".failed");
		if (ret < 0 && !fs->is_failed)
			adump_file_fail(s, fs, ret, "publishing");
	}
	if (fs->cctx)
		adump_lz4_release(w, fs);
	if (fs->is_failed)
		atomic_fetch_add_explicit(&s->files_failed, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&s->files_completed, 1, memory_order_relaxed);
	/* The op record goes back to its channel's producer before the channel can be idle
	 * (and destroyed), and tells a zero-copy producer how the file ended. */
	fs->op->status = fs->is_failed ? fs->error : 0;
	adump_op_rec_destroy(fs->op);
	/* Last: a sync waiting for this record then sees the file counted and in place. */
	if (fs->held_rec)
		adump_consumer_release_sc(fs->held_chan, fs->held_rec);
	free(fs->header);
	free(fs);
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

static int open_file(struct adump_session *s, struct file_state *fs, const char *suffix)
{
	char final[4200];
	struct adump_pubfile pf = { .fd = -1 };
	int ret = ADUMP_TESTPOINT("worker.open");

	if (ret == 0)
		ret = ensure_device_dir(s, fs->op->op.device_id);
	if (ret == 0)
		ret = path_with(final, sizeof(final), fs->path, suffix);
	if (ret == 0) {
		ret = adump_pubfile_open(&pf, final, fs->is_direct ? O_DIRECT : 0, ADUMP_FILE_MODE);
		if (ret == -EINVAL && fs->is_direct) {
			/* This filesystem has no O_DIRECT (tmpfs): the aligned writes work buffered. */
			adump_log_once(ADUMP_LOG_WARN, MODULE,
				       "O_DIRECT not supported under %s; writing buffered", s->dir);
			ret = adump_pubfile_open(&pf, final, 0, ADUMP_FILE_MODE);
		}
	}
	if (ret < 0) {
		atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
		adump_file_fail(s, fs, ret, "creating");
		return ret;
	}
	fs->fd = pf.fd;
	fs->is_unnamed = pf.is_unnamed;
	return 0;
}

/* Direct I/O: give the file its final size up front. The direct writes, which stop at the
 * last whole block, then land inside the file instead of extending it, which lets ext4 take
 * the inode lock shared and complete them without a hand-off to io-wq: several writes to one
 * file proceed at once instead of queueing on the lock. A full disk fails the file here,
 * before any data is sent. */
static int preallocate(struct adump_session *s, struct file_state *fs)
{
	uint64_t bytes = fs->header_len + fs->op->payload_bytes;
	int ret;

	ret = ADUMP_TESTPOINT("worker.preallocate");
	if (ret == 0)
		ret = fallocate(fs->fd, 0, 0, (off_t)bytes) < 0 ? -errno : 0;
	if (ret == -EOPNOTSUPP || ret == -ENOSYS)
		return 0;                       /* no preallocation here: extending writes work */
	if (ret < 0) {
		atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
		adump_file_fail(s, fs, ret, "reserving space for");
	}
	return ret;
}

/* The first record of a file: its name and header, then whatever its output needs.
 * @is_whole: the record holds the file's whole payload (its header may go out with it). */
static struct file_state *file_open(struct adump_worker *w, struct adump_op_rec *op, bool is_whole)
{
	struct adump_session *s = w->session;
	char name[4096];
	int name_len = adump_dump_file_name(&op->op, name, sizeof(name));
	size_t cap = strlen(s->dir) + 16 + (name_len > 0 ? (size_t)name_len : 8) + 1;
	struct file_state *fs = malloc(sizeof(*fs) + cap);
	int ret;

	if (!fs)
		return NULL;
	memset(fs, 0, sizeof(*fs));
	fs->op = op;
	fs->fd = -1;
	snprintf(fs->path, cap, "%s/%u/%s", s->dir, op->op.device_id, name_len > 0 ? name : "unnamed");
	if (name_len < 0) {
		adump_file_fail(s, fs, name_len, "naming");
		return fs;
	}

	if (s->cfg.content == ADUMP_CONTENT_STATS) {
		ret = adump_statacc_init(&fs->stats, &op->op, s->cfg.stats_mask);
		if (ret < 0)
			adump_file_fail(s, fs, ret, "starting statistics of");
		else
			fs->has_stats = true;
		if (ret == 0 && s->cfg.sink == ADUMP_SINK_FILE) {
			ret = ensure_device_dir(s, op->op.device_id);
			if (ret < 0)
				adump_file_fail(s, fs, ret, "creating the directory of");
		}
		return fs;
	}
	if (op->header) {
		/* Packed by the producer already (it needed the length): taken, not redone. */
		fs->header = op->header;
		fs->header_len = op->header_len;
		op->header = NULL;
		ret = 0;
	} else {
		ret = adump_dump_header_alloc(&op->op, &fs->header, &fs->header_len);
	}
	if (ret < 0) {
		adump_file_fail(s, fs, ret, "building the header of");
		return fs;
	}
	fs->payload_base = fs->header_len;
	if (s->cfg.sink == ADUMP_SINK_CALLBACK) {
		deliver(s, fs->path, 0, fs->header, fs->header_len, op->payload_bytes == 0);
		return fs;
	}
	if (s->cfg.compress == ADUMP_COMPRESS_LZ4) {
		if (open_file(s, fs, ".lz4") == 0)
			adump_lz4_begin(w, fs);
		return fs;
	}
	if (s->cfg.io == ADUMP_IO_DIRECT) {
		/* Writes from the header need aligned memory; its aligned head goes out now,
		 * its tail with the first chunk. The file's last partial block is kept in the
		 * same allocation, after it. */
		size_t aligned_bytes = (fs->header_len + ADUMP_DIRECT_ALIGN - 1) /
				       ADUMP_DIRECT_ALIGN * ADUMP_DIRECT_ALIGN;
		unsigned char *aligned = aligned_alloc(ADUMP_DIRECT_ALIGN,
						       aligned_bytes + ADUMP_DIRECT_ALIGN);

		if (!aligned) {
			adump_file_fail(s, fs, -ENOMEM, "aligning the header of");
			return fs;
		}
		memcpy(aligned, fs->header, fs->header_len);
		free(fs->header);
		fs->header = aligned;
		fs->tail = aligned + aligned_bytes;
		fs->is_direct = true;
		if (open_file(s, fs, "") < 0)
			return fs;
		if (preallocate(s, fs) < 0)
			return fs;
		size_t head = fs->header_len / ADUMP_DIRECT_ALIGN * ADUMP_DIRECT_ALIGN;
		if (head) {
			fs->header_write = (struct adump_chunk_write){
				.req = { .fd = fs->fd, .buf_index = -1, .buf = fs->header, .len = head },
				.file = fs,
			};
			adump_submit_write(w, &fs->header_write);
		}
		return fs;
	}
	if (s->cfg.layout == ADUMP_LAYOUT_PACKED) {
		ret = adump_packed_place(w, fs);
		if (ret < 0) {
			atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
			adump_file_fail(s, fs, ret, "placing in a segment");
			return fs;
		}
		fs->crc = adump_crc32c(0, fs->header, fs->header_len);
	} else if (open_file(s, fs, "") < 0) {
		return fs;
	} else if (is_whole) {
		/* One write for the whole file, from the staging buffer (handle_record()). */
		fs->is_whole = true;
		return fs;
	}
	fs->header_write = (struct adump_chunk_write){
		.req = { .fd = fs->fd, .buf_index = -1, .buf = fs->header, .len = fs->header_len,
			 .offset = fs->base },
		.file = fs,
	};
	adump_submit_write(w, &fs->header_write);
	return fs;
}

/* A record is done (written, delivered or skipped): finish its file if nothing of it is
 * outstanding any more, then give the buffer back. Finishing first means that a stream sync,
 * which waits for the buffers, also sees the finished file. */
static void record_done(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
			struct file_state *fs)
{
	if (rec->flags & ADUMP_REC_LAST) {
		fs->is_last_seen = true;
		if (fs->pending) {
			fs->held_chan = chan;
			fs->held_rec = rec;
			return;
		}
	}
	if (fs->is_last_seen && fs->pending == 0)
		file_finish(w, fs);
	adump_consumer_release_sc(chan, rec);
}

static inline const void *rec_data(const struct adump_rec *rec)
{
	return adump_rec_data(rec);
}

/* The registered buffer a write of @rec's data may use: none for the producer's memory. */
static inline int rec_buf_index(const struct adump_rec *rec)
{
	return rec->ext ? -1 : (int)rec->index;
}

/* Direct I/O: the buffer maps onto an aligned stretch of the file (struct adump_rec). The
 * first chunk's buffer gets the header's unaligned tail in front of its data, so every write
 * starts aligned. The file's last partial block is kept back and written buffered once the
 * direct writes are done (write_tail()): padding it and cutting the file back instead made
 * ext4 read that block from the disk in ftruncate, 40-60 ms of a worker's time per file. */
static void submit_direct(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
			  struct file_state *fs)
{
	struct adump_session *s = w->session;
	const uint64_t align = ADUMP_DIRECT_ALIGN;
	uint64_t head = fs->header_len / align * align;
	uint64_t file_offset = fs->payload_base + rec->offset;
	uint64_t len = rec->buf_offset + rec->len;
	/* A zero-copy record is never the first chunk and starts aligned (adump_port_post_sp()). */
	const char *data = rec->ext ? rec->ext : rec->buf;

	if (rec->offset == 0) {
		memcpy(rec->buf, (const char *)fs->header + head, rec->buf_offset);
		file_offset = head;
	}
	/* Every other chunk ends on a block boundary (struct adump_rec). */
	if (rec->flags & ADUMP_REC_LAST) {
		uint64_t aligned = len / align * align;

		fs->tail_len = (uint32_t)(len - aligned);
		fs->tail_offset = file_offset + aligned;
		memcpy(fs->tail, data + aligned, fs->tail_len);
		len = aligned;
	}
	struct adump_chunk_write *cw = &s->writes[rec->index];
	*cw = (struct adump_chunk_write){
		.req = { .fd = fs->fd, .buf_index = rec_buf_index(rec), .buf = data, .len = len,
			 .offset = file_offset },
		.file = fs, .chan = chan, .rec = rec,
	};
	if (len == 0 || !adump_submit_write(w, cw))
		record_done(w, chan, rec, fs);
	else if (rec->flags & ADUMP_REC_LAST)
		fs->is_last_seen = true;
}

/* The LZ4 output buffers the record needs: the frame's start and the header with the
 * first record, one for the data, one for the frame's end with the last. */
static unsigned lz4_buffers_needed(const struct adump_rec *rec, const struct file_state *fs)
{
	const struct adump_op_rec *op = rec->op;
	bool is_last = (rec->flags & ADUMP_REC_LAST) != 0;
	unsigned n = 0;

	if (!fs)
		n += 2 + (op->payload_bytes == 0);
	return n + (rec->len != 0) + (is_last && op->payload_bytes != 0);
}

/* Return: false if the output cannot take the record yet (its buffers are all in flight):
 * nothing of it was consumed, and the caller retries once completions have come back. */
static bool handle_record(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec)
{
	struct adump_session *s = w->session;
	struct adump_op_rec *op = rec->op;
	struct file_state *fs = op->priv;
	bool is_last = (rec->flags & ADUMP_REC_LAST) != 0;

	if (s->cfg.compress == ADUMP_COMPRESS_LZ4 &&
	    adump_lz4_reserve(w, lz4_buffers_needed(rec, fs)) == -EBUSY)
		return false;
	if (!fs && w->ext->takes_small) {
		int taken = adump_packed_take_small(w, chan, rec);

		if (taken < 0)
			return false;
		if (taken) {
			atomic_fetch_add_explicit(&s->records, 1, memory_order_relaxed);
			return true;
		}
	}
	atomic_fetch_add_explicit(&s->records, 1, memory_order_relaxed);
	if (!fs) {
		fs = file_open(w, op, (rec->flags & ADUMP_REC_LAST) && rec->offset == 0 && rec->len &&
					      rec->len == op->payload_bytes &&
					      op->payload_bytes < adump_chan_buffer_bytes(chan));
		if (!fs) {
			/* No memory for the file's state: drop the file, keep the session alive. */
			adump_session_set_error(s, -ENOMEM);
			atomic_fetch_add_explicit(&s->files_failed, 1, memory_order_relaxed);
			adump_log_once(ADUMP_LOG_ERROR, MODULE, "out of memory for a file's state");
			if (is_last) {
				op->status = -ENOMEM;
				adump_op_rec_destroy(op);
			}
			else
				atomic_store_explicit(&op->is_failed, 2, memory_order_relaxed);
			adump_consumer_release_sc(chan, rec);
			return true;
		}
		op->priv = fs;
	}
	if (atomic_load_explicit(&op->is_failed, memory_order_relaxed))
		adump_file_fail(s, fs, -ADUMP_ERR_DROPPED, "dropped data of");
	if (fs->is_failed || (rec->len == 0 && !fs->cctx && !fs->is_direct)) {
		record_done(w, chan, rec, fs);
		return true;
	}
	if (fs->is_direct) {
		submit_direct(w, chan, rec, fs);
		return true;
	}
	if (fs->has_stats) {
		adump_statacc_feed(&fs->stats, rec->offset, rec_data(rec), rec->len);
		record_done(w, chan, rec, fs);
		return true;
	}
	if (s->cfg.sink == ADUMP_SINK_CALLBACK) {
		deliver(s, fs->path, fs->payload_base + rec->offset, rec_data(rec), rec->len, is_last);
		record_done(w, chan, rec, fs);
		return true;
	}
	if (fs->cctx) {
		/* Compressed into worker buffers: the staging buffer is free again at once. */
		adump_lz4_data(w, fs, rec_data(rec), rec->len, is_last);
		record_done(w, chan, rec, fs);
		return true;
	}
	if (s->cfg.layout == ADUMP_LAYOUT_PACKED)
		fs->crc = adump_crc32c(fs->crc, rec_data(rec), rec->len);
	struct adump_chunk_write *cw = &s->writes[rec->index];
	if (fs->is_whole && fs->header_len + rec->len <= adump_chan_buffer_bytes(chan)) {
		/* The buffer is ours until the write completes: the header goes in front of
		 * the payload, and the file is one write. */
		memmove((char *)rec->buf + fs->header_len, rec_data(rec), rec->len);
		memcpy(rec->buf, fs->header, fs->header_len);
		*cw = (struct adump_chunk_write){
			.req = { .fd = fs->fd, .buf_index = (int)rec->index, .buf = rec->buf,
				 .len = fs->header_len + rec->len, .offset = 0 },
			.file = fs, .chan = chan, .rec = rec,
		};
		fs->is_whole = false;
		if (!adump_submit_write(w, cw))
			record_done(w, chan, rec, fs);
		else
			fs->is_last_seen = true;
		return true;
	}
	if (fs->is_whole) {
		/* The header does not fit in front: it goes out on its own after all. */
		fs->is_whole = false;
		fs->header_write = (struct adump_chunk_write){
			.req = { .fd = fs->fd, .buf_index = -1, .buf = fs->header,
				 .len = fs->header_len },
			.file = fs,
		};
		adump_submit_write(w, &fs->header_write);
	}
	*cw = (struct adump_chunk_write){
		.req = { .fd = fs->fd, .buf_index = rec_buf_index(rec), .buf = rec_data(rec),
			 .len = rec->len, .offset = fs->base + fs->payload_base + rec->offset },
		.file = fs, .chan = chan, .rec = rec,
	};
	if (!adump_submit_write(w, cw))
		record_done(w, chan, rec, fs);
	else if (is_last)
		fs->is_last_seen = true;
	return true;
}

static void handle_completion(struct adump_worker *w, struct adump_wreq *req)
{
	struct adump_session *s = w->session;
	struct adump_chunk_write *cw = (struct adump_chunk_write *)req;
	struct file_state *fs = cw->file;

	if (req->is_datasync) {
		adump_packed_sync_done(w, req->res);    /* not a write: not counted as one */
		return;
	}
	atomic_fetch_sub_explicit(&s->writes_in_flight, 1, memory_order_relaxed);
	if (cw->batch) {
		adump_packed_batch_done(w, cw->batch, req->res);
		return;
	}
	fs->pending--;
	if (req->res < 0) {
		atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
		adump_file_fail(s, fs, req->res, "writing");
	} else {
		atomic_fetch_add_explicit(&s->bytes, req->len, memory_order_relaxed);
		if (req->len >= ADUMP_WRITEBACK_MIN_BYTES && !fs->is_direct)
			sync_file_range(req->fd, (off64_t)req->offset, (off64_t)req->len,
					SYNC_FILE_RANGE_WRITE);
	}
	if (cw->out_buf)
		adump_out_buf_put(w, cw->out_buf);
	if (cw->rec)
		record_done(w, cw->chan, cw->rec, fs);
	else if (fs->is_last_seen && fs->pending == 0)
		file_finish(w, fs);
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

	for (unsigned i = 0; i < ADUMP_STREAM_MAX_LIMIT; i++) {
		/* Pairs with the release store in adump_session_attach(). */
		struct adump_chan *c = atomic_load_explicit(&w->chans[i], memory_order_acquire);

		if (!c)
			continue;
		/* One fence and wake-up check for the batch's released buffers, not one each. */
		adump_consumer_defer_sc(c);
		for (unsigned n = 0; n < DRAIN_BATCH; n++) {
			struct adump_rec *rec = adump_chan_pop_sc(c);

			if (!rec)
				break;
			while (!handle_record(w, c, rec)) {
				/* The output has no buffer free: completions give them back. */
				bool doorbell;

				adump_writer_submit(w->writer);
				reap(w, true, &doorbell);
			}
			handled++;
		}
		adump_consumer_flush_sc(c);
	}
	return handled;
}


static bool spin_for_work(struct adump_worker *w)
{
	uint64_t deadline = adump_now_ns() + ADUMP_WORKER_SPIN_NS;

	do {
		for (int i = 0; i < 64; i++)
			__builtin_ia32_pause();
		if (!rings_empty(w))
			return true;
	} while (adump_now_ns() < deadline);
	return false;
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

		/* Small packed files go out once the rings are drained: a batch never waits for
		 * more work that is not there (a stream sync may be waiting for it). */
		if (w->ext->packed.batch && rings_empty(w))
			adump_packed_batch_submit(w);
		if (adump_writer_submit(w->writer) < 0)
			adump_log_once(ADUMP_LOG_ERROR, MODULE, "submitting writes failed");
		handled += reap(w, false, &doorbell);
		if (handled)
			continue;
		if (atomic_load_explicit(&w->should_stop, memory_order_acquire) &&
		    adump_writer_in_flight(w->writer) == 0 && !w->ext->packed.batch && rings_empty(w))
			break;
		/* Poll a little before sleeping: a busy producer posts again within microseconds,
		 * and a doorbell costs it a system call and us a wake-up. */
		if (spin_for_work(w) || w->ext->packed.batch)
			continue;
		/* Index lines of finished packed files go out before the worker idles. */
		if (w->ext->packed.index_len)
			adump_packed_flush(w);
		/* Dekker with adump_doorbell_ring(): announce the sleep, then look once more. */
		atomic_store_explicit(&w->doorbell.is_sleeping, 1, memory_order_seq_cst);
		if (rings_empty(w) && !atomic_load_explicit(&w->should_stop, memory_order_seq_cst))
			reap(w, true, &doorbell);
		atomic_store_explicit(&w->doorbell.is_sleeping, 0, memory_order_relaxed);
	}
	return NULL;
}

static void ext_destroy(struct adump_worker *w)
{
	if (!w->ext)
		return;
	adump_lz4_worker_fini(w);
	adump_packed_worker_fini(w);
	free(w->ext);
	w->ext = NULL;
}

int adump_worker_start(struct adump_session *s, struct adump_worker *w, unsigned index)
{
	struct adump_writer_cfg wcfg = {
		.kind = s->backend, .depth = ADUMP_URING_DEPTH, .fixed = s->pool_iov,
		.fixed_count = s->buffer_count,
	};
	int ret;

	memset(w, 0, sizeof(*w));
	w->session = s;
	w->index = index;
	w->ext = calloc(1, sizeof(*w->ext));
	if (!w->ext)
		return -ENOMEM;
	w->ext->packed.index_fd = -1;
	w->ext->packed.seg_fd = -1;
	ret = s->cfg.compress == ADUMP_COMPRESS_LZ4 ? adump_lz4_worker_init(w, s->chunk_bytes) : 0;
	if (ret == 0 && s->cfg.layout == ADUMP_LAYOUT_PACKED)
		ret = adump_packed_worker_init(w);
	/* The plain packed output only: the other variants need the file's state. */
	w->ext->takes_small = s->cfg.layout == ADUMP_LAYOUT_PACKED &&
			      s->cfg.sink == ADUMP_SINK_FILE &&
			      s->cfg.content == ADUMP_CONTENT_TENSOR &&
			      s->cfg.compress == ADUMP_COMPRESS_NONE && s->cfg.io == ADUMP_IO_BUFFERED;
	if (ret < 0)
		goto err_ext;
	ret = adump_doorbell_init(&w->doorbell);
	if (ret < 0)
		goto err_ext;
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
err_ext:
	ext_destroy(w);
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
	ext_destroy(w);
	w->is_started = false;
}
