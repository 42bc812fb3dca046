/* SPDX-License-Identifier: Apache-2.0 */
/* Regular dump files, one per op, each chunk written at its exact offset from the staging
 * buffer, several writes in flight per file. Each file is written buffered or with O_DIRECT
 * (fs->is_direct, chosen when the file begins: io direct, or io auto for a file of at least
 * direct_min_bytes): direct files are preallocated, written in whole aligned blocks, and get
 * their last partial block through the page cache. The channel of an auto session is aligned
 * too, so either path writes the same bytes at the same offsets; where the filesystem refuses
 * O_DIRECT the aligned writes simply go through the page cache. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "pipeline/worker_int.h"

#define MODULE "pipeline"

/* A file meant for O_DIRECT is written through the page cache after all: counted once. */
static void direct_fallback(struct adump_session *s, struct file_state *fs)
{
	if (fs->is_fallback)
		return;
	fs->is_fallback = true;
	atomic_fetch_add_explicit(&s->direct_fallbacks, 1, memory_order_relaxed);
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

/* Direct I/O: writes from the header need aligned memory; its aligned head goes out now,
 * its tail with the first chunk. The file's last partial block is kept in the same
 * allocation, after it. */
static void direct_begin(struct adump_worker *w, struct file_state *fs)
{
	struct adump_session *s = w->session;
	size_t aligned_bytes = (fs->header_len + ADUMP_DIRECT_ALIGN - 1) / ADUMP_DIRECT_ALIGN *
			       ADUMP_DIRECT_ALIGN;
	unsigned char *aligned = aligned_alloc(ADUMP_DIRECT_ALIGN, aligned_bytes + ADUMP_DIRECT_ALIGN);
	size_t head;
	int flags;

	if (!aligned) {
		adump_file_fail(s, fs, -ENOMEM, "aligning the header of");
		return;
	}
	memcpy(aligned, fs->header, fs->header_len);
	free(fs->header);
	fs->header = aligned;
	fs->tail = aligned + aligned_bytes;
	fs->is_direct = true;
	if (adump_file_create(w, fs, "") < 0)
		return;
	flags = fcntl(fs->fd, F_GETFL);
	/* The testpoint plays a filesystem that refuses O_DIRECT at open, as tmpfs did
	 * before Linux 6.6. */
	if (flags >= 0 && (flags & O_DIRECT) && ADUMP_TESTPOINT("file.direct_open") &&
	    fcntl(fs->fd, F_SETFL, flags & ~O_DIRECT) == 0)
		flags &= ~O_DIRECT;
	if (flags >= 0 && !(flags & O_DIRECT)) {
		/* Refused at open (adump_file_create() logged it): auto sends later files
		 * buffered without trying; this one keeps its aligned writes. */
		atomic_store_explicit(&s->direct_refused, true, memory_order_relaxed);
		direct_fallback(s, fs);
	}
	if (preallocate(s, fs) < 0)
		return;
	head = fs->header_len / ADUMP_DIRECT_ALIGN * ADUMP_DIRECT_ALIGN;
	if (head) {
		fs->header_write = (struct adump_chunk_write){
			.req = { .fd = fs->fd, .buf_index = -1, .buf = fs->header, .len = head },
			.file = fs,
		};
		adump_submit_write(w, &fs->header_write);
	}
}

static void file_begin(struct adump_worker *w, struct file_state *fs, bool is_whole)
{
	struct adump_session *s = w->session;

	if (adump_file_header(s, fs) < 0)
		return;
	if (s->cfg.io == ADUMP_IO_DIRECT ||
	    (s->is_auto_direct && fs->header_len + fs->op->payload_bytes >= s->direct_min_bytes &&
	     !atomic_load_explicit(&s->direct_refused, memory_order_relaxed))) {
		direct_begin(w, fs);
		return;
	}
	if (adump_file_create(w, fs, "") < 0)
		return;
	if (is_whole) {
		/* One write for the whole file, from the staging buffer (file_record()). */
		fs->is_whole = true;
		return;
	}
	adump_file_header_submit(w, fs);
}

/* Direct I/O: the buffer maps onto an aligned stretch of the file (struct adump_rec). The
 * first chunk's buffer gets the header's unaligned tail in front of its data, so every write
 * starts aligned. The file's last partial block is kept back and written buffered once the
 * direct writes are done (write_tail()): padding it and cutting the file back instead made
 * ext4 read that block from the disk in ftruncate, 40-60 ms of a worker's time per file. */
static void direct_record(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
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
		.req = { .fd = fs->fd, .buf_index = adump_rec_buf_index(rec), .buf = data,
			 .len = len, .offset = file_offset },
		.file = fs, .chan = chan, .rec = rec,
	};
	if (len == 0 || !adump_submit_write(w, cw))
		adump_record_done(w, chan, rec, fs);
	else if (rec->flags & ADUMP_REC_LAST)
		fs->is_last_seen = true;
}

static void file_record(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
			struct file_state *fs)
{
	struct adump_session *s = w->session;

	if (fs->is_direct) {
		direct_record(w, chan, rec, fs);
		return;
	}
	if (rec->len == 0) {
		adump_record_done(w, chan, rec, fs);
		return;
	}
	if (fs->is_whole && fs->header_len + rec->len <= adump_chan_buffer_bytes(chan)) {
		struct adump_chunk_write *cw = &s->writes[rec->index];

		/* The buffer is ours until the write completes: the header goes in front of
		 * the payload, and the file is one write. */
		memmove((char *)rec->buf + fs->header_len, adump_rec_data(rec), rec->len);
		memcpy(rec->buf, fs->header, fs->header_len);
		*cw = (struct adump_chunk_write){
			.req = { .fd = fs->fd, .buf_index = (int)rec->index, .buf = rec->buf,
				 .len = fs->header_len + rec->len, .offset = 0 },
			.file = fs, .chan = chan, .rec = rec,
		};
		fs->is_whole = false;
		if (!adump_submit_write(w, cw))
			adump_record_done(w, chan, rec, fs);
		else
			fs->is_last_seen = true;
		return;
	}
	if (fs->is_whole) {
		/* The header does not fit in front: it goes out on its own after all. */
		fs->is_whole = false;
		adump_file_header_submit(w, fs);
	}
	adump_record_submit(w, chan, rec, fs);
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

/* A direct write failed with EINVAL: this filesystem accepted the O_DIRECT open but not the
 * write. The file goes on through the page cache, starting with this write, done again now
 * from the same buffer (still ours: its record is not done). Writes of the file already
 * queued with O_DIRECT come back here one by one. */
static void file_write_failed(struct adump_worker *w, struct adump_chunk_write *cw)
{
	struct file_state *fs = cw->file;
	struct adump_wreq *req = &cw->req;
	const char *p = req->buf;
	uint64_t offset = req->offset;
	size_t left = req->len;
	int flags;

	if (req->res != -EINVAL || !fs->is_direct)
		return;
	flags = fcntl(req->fd, F_GETFL);
	if (flags < 0 || ((flags & O_DIRECT) && fcntl(req->fd, F_SETFL, flags & ~O_DIRECT) < 0))
		return;
	while (left) {
		ssize_t n = pwrite(req->fd, p, left, (off_t)offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;                 /* the file fails with the original EINVAL */
		p += n;
		offset += (uint64_t)n;
		left -= (size_t)n;
	}
	req->res = 0;
	if (!fs->is_fallback)
		adump_log_once(ADUMP_LOG_WARN, MODULE,
			       "O_DIRECT write refused (EINVAL) under %s; writing such files buffered",
			       w->session->dir);
	direct_fallback(w->session, fs);
}

static void file_end(struct adump_worker *w, struct file_state *fs)
{
	struct adump_session *s = w->session;
	int ret;

	if (fs->fd < 0)
		return;
	if (fs->is_direct && !fs->is_fallback)
		atomic_fetch_add_explicit(&s->files_direct, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&s->files_buffered, 1, memory_order_relaxed);
	if (fs->is_direct && !fs->is_failed) {
		ret = write_tail(fs);
		if (ret < 0)
			adump_file_fail(w->session, fs, ret, "writing the last block of");
		else
			atomic_fetch_add_explicit(&s->bytes, fs->tail_len, memory_order_relaxed);
	}
	adump_file_publish(w, fs, "");
}

const struct adump_output_ops adump_out_file = {
	.name = "file",
	.file_begin = file_begin,
	.record = file_record,
	.write_failed = file_write_failed,
	.file_end = file_end,
};
