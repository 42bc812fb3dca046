/* SPDX-License-Identifier: Apache-2.0 */
/* Packed layout: a worker appends every dump file it writes to its current segment file
 * (<dir>/packed/w<worker>-<n>.seg, rolled at segment_bytes) and, once all of a file's writes
 * have completed, appends one line to its index (<dir>/packed/w<worker>.idx):
 *
 *     <device_id>/<file name>\t<segment file>\t<offset>\t<length>\t<crc32c hex>\n
 *
 * The files belong to the session that created them: each is created new (O_EXCL, never
 * through a link), so that a second session or process writing into the same directory
 * never truncates or appends to the first one's. A session whose worker-0 index name is
 * taken picks a tag of its own (p<pid>, then p<pid>n<i>) and names its files
 * w<worker>.<tag>.idx and w<worker>.<tag>-<n>.seg; a segment name that is taken is skipped.
 *
 * Data is always written before its index line, and lines go out whole, in batches of one
 * write() (when the batch fills, before the worker sleeps, when it stops), so a crash leaves
 * an index whose complete lines all describe valid data. The index's space is reserved
 * (fallocate past its end) before a line is queued, so a full disk fails the file whose
 * line finds no room, never an index write; a write that fails anyway is cut back to the
 * last whole line. CRC32C is computed while the chunks pass, in file order. The line format
 * and the CRC live in proto/packed.c.
 *
 * A small file that arrives in one record is copied whole into a worker batch (struct
 * packed_batch) and its staging buffer goes back at once; a batch is one write of many
 * files, and its files' index lines are written when that write has completed. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "pipeline/loss_int.h"
#include "pipeline/worker_int.h"
#include "proto/proto.h"

#define MODULE "packed"
#define DEFAULT_SEGMENT_BYTES (1ull << 30)
#define INDEX_BATCH_BYTES (64u << 10)   /* index lines gathered before one write() */
#define INDEX_RESERVE_BYTES (256u << 10) /* index space reserved ahead of its lines */
#define BATCH_BYTES (256u << 10)        /* small files gathered before one write */
#define BATCH_MAX 4                     /* batches per worker: one filling, the rest in flight */
#define BATCH_SMALL_BYTES (BATCH_BYTES / 4)     /* largest file a batch takes */
#define BATCH_LINE_BYTES (64u << 10)
#define BATCH_RUN_MAX 1024
#define BATCH_FILE_MAX 1024             /* op records a batch holds until it is written */

/* Records of one channel a batch retires once it is written. */
struct batch_run {
	struct adump_chan *chan;
	uint32_t record_count;
};

/* Small files copied whole (header and payload) into a worker buffer, so their staging
 * buffers go back at once, and written to the segment with one write. Their index lines go
 * out after that write has completed. */
struct packed_batch {
	struct adump_chunk_write write;         /* first: the completion finds the batch */
	struct packed_batch *next_free;
	uint64_t base;                          /* mem[0]'s offset in its segment */
	size_t len;                             /* bytes of files in mem */
	uint32_t file_count;
	char *lines;                            /* the files' index lines, in file order */
	size_t lines_len;
	struct batch_run *runs;
	uint32_t run_count;
	struct adump_op_rec **ops;              /* the files' records, until the write is done */
	unsigned char *mem;
};

#define TAG_ATTEMPTS 1000               /* session tags tried before giving up */
#define SEGMENT_ATTEMPTS 1000           /* taken segment names skipped before giving up */

/* Per session (s->out_session): the packed directory, opened without following a link, and
 * the tag of the session's file names ("" for the first session in the directory). */
struct packed_session {
	int dir_fd;
	int index0_fd;                          /* worker 0's index, created at the claim */
	char tag[ADUMP_PACKED_TAG_MAX];
};

/* Per worker (w->out_state). */
struct packed_state {
	int index_fd;
	int seg_fd;                             /* the segment being filled */
	uint32_t seg_number;
	uint64_t seg_offset;                    /* next free byte of it */
	int *old_fds;                           /* full segments, closed at worker stop */
	uint32_t old_count;
	char *index_buf;                        /* lines of completed files, not yet written */
	size_t index_len;
	size_t index_counted;                   /* of those, the bytes of the first lines, whose
						 * files are counted completed already */
	uint64_t index_size;                    /* the index file's bytes: whole lines */
	uint64_t index_reserved;                /* its space allocated up to here */
	bool is_reserve_unsupported;            /* the filesystem has no fallocate() */
	struct packed_batch *batch;             /* being filled, or NULL */
	struct packed_batch *free_batches;
	unsigned batch_count;                   /* allocated */
	/* Written by completed batches, writeback not started yet (packed_writeback()). */
	int wb_fd;
	uint64_t wb_from;
	uint64_t wb_to;
	/* Background data syncs (packed_sync()): bytes written since the last one started. */
	uint64_t sync_owed;
	bool is_sync_in_flight;
	bool is_sync_unsupported;               /* a writer without background syncs (inline pwrite) */
	struct adump_chunk_write sync_write;
};

static int index_flush(struct adump_worker *w);
static const char *packed_tag(const struct adump_worker *w);
static void batch_submit(struct adump_worker *w);
static void batch_done(struct adump_worker *w, struct packed_batch *b, int res);

/* File @name of the session's packed directory, created new for writing: never a file that
 * exists, never through a link. Return: the descriptor or -errno (-EEXIST: the name is taken). */
static int create_new(const struct packed_session *ps, const char *name, int flags)
{
	int fd = openat(ps->dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
				      flags, ADUMP_FILE_MODE);

	return fd < 0 ? -errno : fd;
}

static void index_name(char *dst, size_t cap, unsigned worker, const char *tag)
{
	snprintf(dst, cap, "w%u%s%s.idx", worker, tag[0] ? "." : "", tag);
}

static int segment_open(struct adump_worker *w)
{
	struct packed_state *p = w->out_state;
	const struct packed_session *ps = w->session->out_session;
	char name[96];
	int fd = -EEXIST;

	/* A name already taken (a stale file, another session's) is left alone: the index
	 * lines name each file's segment, so the numbers need not be consecutive. */
	for (int attempt = 0; fd == -EEXIST && attempt < SEGMENT_ATTEMPTS; attempt++) {
		if (attempt)
			p->seg_number++;
		snprintf(name, sizeof(name), "w%u%s%s-%u.seg", w->index, ps->tag[0] ? "." : "",
			 ps->tag, p->seg_number);
		fd = create_new(ps, name, 0);
	}
	if (fd < 0) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "creating segment %s/packed/%s: %s",
			  w->session->dir, name, adump_strerror(fd));
		return fd;
	}
	p->seg_fd = fd;
	p->seg_offset = 0;
	return 0;
}

/* The session's packed directory, and its claim on a set of names: worker 0's index, made
 * with O_EXCL under the plain names first, then under tags until one is free. */
static int packed_session_init(struct adump_session *s)
{
	struct packed_session *ps = calloc(1, sizeof(*ps));
	char path[4200], name[96];
	int ret;

	if (!ps)
		return -ENOMEM;
	ps->dir_fd = ps->index0_fd = -1;
	s->out_session = ps;
	snprintf(path, sizeof(path), "%s/packed", s->dir);
	ret = adump_mkdir_p(path, 0750);
	if (ret < 0)
		goto err;
	/* A link planted in place of the directory is refused, not followed. */
	ps->dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ps->dir_fd < 0) {
		ret = errno == ELOOP ? -ENOTDIR : -errno;
		goto err;
	}
	ret = -EEXIST;
	for (unsigned attempt = 0; ret == -EEXIST && attempt < TAG_ATTEMPTS; attempt++) {
		if (attempt == 1)
			snprintf(ps->tag, sizeof(ps->tag), "p%ld", (long)getpid());
		else if (attempt > 1)
			snprintf(ps->tag, sizeof(ps->tag), "p%ldn%u", (long)getpid(), attempt - 1);
		index_name(name, sizeof(name), 0, ps->tag);
		ret = create_new(ps, name, O_APPEND);
	}
	if (ret < 0)
		goto err;
	ps->index0_fd = ret;
	if (ps->tag[0])
		adump_log(ADUMP_LOG_INFO, MODULE, "%s holds another session's files: this one "
			  "names its own w<k>.%s.idx and w<k>.%s-<n>.seg", path, ps->tag, ps->tag);
	return 0;
err:
	adump_log(ADUMP_LOG_ERROR, MODULE, "cannot use %s for a packed capture: %s", path,
		  adump_strerror(ret));
	return ret;
}

static void packed_session_fini(struct adump_session *s)
{
	struct packed_session *ps = s->out_session;

	if (!ps)
		return;
	if (ps->index0_fd >= 0)
		close(ps->index0_fd);
	if (ps->dir_fd >= 0)
		close(ps->dir_fd);
	free(ps);
	s->out_session = NULL;
}

static void batch_destroy(struct packed_batch *b)
{
	free(b->mem);
	free(b->lines);
	free(b->runs);
	free(b->ops);
	free(b);
}

static int packed_worker_init(struct adump_worker *w)
{
	struct packed_session *ps = w->session->out_session;
	struct packed_state *p = calloc(1, sizeof(*p));
	char name[96];
	int fd;

	if (!p)
		return -ENOMEM;
	w->out_state = p;
	p->index_fd = p->seg_fd = p->wb_fd = -1;
	p->index_buf = malloc(INDEX_BATCH_BYTES);
	if (!p->index_buf)
		return -ENOMEM;
	if (w->index == 0 && ps->index0_fd >= 0) {
		fd = ps->index0_fd;             /* created by the claim (packed_session_init()) */
		ps->index0_fd = -1;
	} else {
		index_name(name, sizeof(name), w->index, ps->tag);
		fd = create_new(ps, name, O_APPEND);
		if (fd < 0) {
			adump_log(ADUMP_LOG_ERROR, MODULE, "creating index %s/packed/%s: %s%s",
				  w->session->dir, name, adump_strerror(fd),
				  fd == -EEXIST ? " (a file of that name is there already; left "
						  "alone)" : "");
			return fd;
		}
	}
	p->index_fd = fd;
	p->index_size = p->index_reserved = 0;
	return segment_open(w);
}

static void packed_worker_fini(struct adump_worker *w)
{
	struct packed_state *p = w->out_state;

	if (!p)
		return;
	if (p->index_fd >= 0 && index_flush(w) < 0)
		adump_log(ADUMP_LOG_ERROR, MODULE, "worker %u: index lines lost at stop", w->index);
	free(p->index_buf);
	p->index_buf = NULL;
	/* The worker stopped with nothing in flight and no batch open: all are free. */
	while (p->free_batches) {
		struct packed_batch *b = p->free_batches;

		p->free_batches = b->next_free;
		batch_destroy(b);
	}
	for (uint32_t i = 0; i < p->old_count; i++)
		close(p->old_fds[i]);
	free(p->old_fds);
	p->old_fds = NULL;
	p->old_count = 0;
	if (p->seg_fd >= 0)
		close(p->seg_fd);
	if (p->index_fd >= 0) {
		/* The reserve past the last line goes back to the filesystem. */
		if (p->index_reserved > p->index_size && ftruncate(p->index_fd, (off_t)p->index_size) < 0)
			adump_log(ADUMP_LOG_DEBUG, MODULE, "worker %u: trimming the index: %s", w->index,
				  strerror(errno));
		close(p->index_fd);
	}
	free(p);
	w->out_state = NULL;
}

/* Close the current segment for new files and open the next one. */
static int segment_roll(struct adump_worker *w)
{
	struct packed_state *p = w->out_state;
	/* Writes may still be in flight on the full segment: keep it open until the worker
	 * stops. */
	int *fds = realloc(p->old_fds, (p->old_count + 1) * sizeof(*fds));

	if (!fds)
		return -ENOMEM;
	p->old_fds = fds;
	p->old_fds[p->old_count++] = p->seg_fd;
	p->seg_fd = -1;
	p->seg_number++;
	return segment_open(w);
}

/* Reserve the file's bytes in the current segment (rolling it when full). */
static int place(struct adump_worker *w, struct file_state *fs)
{
	struct packed_state *p = w->out_state;
	uint64_t limit = w->session->cfg.segment_bytes ? w->session->cfg.segment_bytes
						       : DEFAULT_SEGMENT_BYTES;
	uint64_t total = fs->header_len + fs->op->payload_bytes;
	int ret;

	/* The open batch covers the segment up to seg_offset: it goes out before anything
	 * else is placed, so that its bytes stay one contiguous stretch. */
	batch_submit(w);
	if (p->seg_offset && p->seg_offset + total > limit) {
		ret = segment_roll(w);
		if (ret < 0)
			return ret;
	}
	if (p->seg_fd < 0)
		return -EBADF;
	fs->fd = p->seg_fd;
	fs->seg_number = p->seg_number;
	fs->base = p->seg_offset;
	p->seg_offset += total;
	return 0;
}

/* Make room in the index for @more bytes after the queued lines. Return: 0 (reserved, or
 * the filesystem cannot reserve), or -errno: the line must not be queued. */
static int index_reserve(struct adump_worker *w, size_t more)
{
	struct packed_state *p = w->out_state;
	uint64_t need = p->index_size + p->index_len + more;
	int ret = ADUMP_TESTPOINT("packed.index_reserve");

	if (ret)
		return ret;
	if (p->is_reserve_unsupported || need <= p->index_reserved)
		return 0;
	/* Ahead, so that most lines cost no call; on a full disk, just this line. */
	if (fallocate(p->index_fd, FALLOC_FL_KEEP_SIZE, (off_t)p->index_reserved,
		      (off_t)(need + INDEX_RESERVE_BYTES - p->index_reserved)) == 0) {
		p->index_reserved = need + INDEX_RESERVE_BYTES;
		return 0;
	}
	if (errno == EOPNOTSUPP) {
		p->is_reserve_unsupported = true;
		adump_log(ADUMP_LOG_DEBUG, MODULE, "worker %u: no space reserved for the index: %s",
			  w->index, strerror(errno));
		return 0;
	}
	if (errno != ENOSPC && errno != EDQUOT)
		return -errno;
	if (fallocate(p->index_fd, FALLOC_FL_KEEP_SIZE, (off_t)p->index_reserved,
		      (off_t)(need - p->index_reserved)) < 0)
		return -errno;
	p->index_reserved = need;
	return 0;
}

/* The write of index lines failed: the files among them already counted completed (the
 * first @len bytes) are counted failed, each with one loss. */
static void index_lost(struct adump_worker *w, char *lines, size_t len, int err)
{
	struct adump_session *s = w->session;
	struct adump_packed_line pl;
	uint64_t files = 0;

	for (char *line = lines, *end; line < lines + len; line = end + 1) {
		end = memchr(line, '\n', (size_t)(lines + len - line));
		if (!end)
			break;
		*end = '\0';
		adump_loss_unindexed(s, adump_packed_line_parse(line, &pl) ? line : pl.name, err);
		files++;
	}
	atomic_fetch_sub_explicit(&s->files_completed, files, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->files_failed, files, memory_order_relaxed);
	adump_log_once(ADUMP_LOG_ERROR, MODULE, "writing the index: %s (%llu written files not "
		       "indexed, counted failed; further failures are counted)",
		       adump_strerror(err), (unsigned long long)files);
}

/* Write the queued index lines, all or none. When the write fails, the index is cut back to
 * its last whole line, and files already counted completed whose lines were lost are counted
 * failed instead (index_lost()). */
static int index_flush(struct adump_worker *w)
{
	struct packed_state *p = w->out_state;
	struct adump_session *s = w->session;
	size_t len = p->index_len;
	int ret = ADUMP_TESTPOINT("packed.index_write");

	if (ret < 0 && len > 1)         /* half of the lines go out first, as a full disk does */
		adump_write_all(p->index_fd, p->index_buf, len / 2);
	if (ret == 0)
		ret = adump_write_all(p->index_fd, p->index_buf, len);
	if (ret == 0) {
		p->index_size += len;
	} else {
		adump_session_set_error(s, ret);
		if (ftruncate(p->index_fd, (off_t)p->index_size) < 0)
			adump_log(ADUMP_LOG_ERROR, MODULE, "worker %u: cutting the index back: %s",
				  w->index, strerror(errno));
		p->index_reserved = p->index_size;
		atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
		index_lost(w, p->index_buf, p->index_counted, ret);
	}
	p->index_len = 0;
	p->index_counted = 0;
	return ret;
}

/* Queue the file's index entry; called once all its writes completed. Entries go out in
 * batches (index_flush()), always after the data they describe. */
static int index_add(struct adump_worker *w, struct file_state *fs)
{
	struct packed_state *p = w->out_state;
	const char *rel = fs->path + strlen(w->session->dir) + 1;
	char line[4400];
	int n, ret = ADUMP_TESTPOINT("packed.index");

	if (ret)
		return ret;
	size_t rel_len = strlen(rel);

	if (rel_len + ADUMP_PACKED_LINE_FIXED_BYTES > sizeof(line))
		return -ENAMETOOLONG;
	n = (int)adump_packed_line_put(line, rel, rel_len, w->index, packed_tag(w), fs->seg_number, fs->base,
			  fs->header_len + fs->op->payload_bytes, fs->crc);
	if (p->index_len + (size_t)n > INDEX_BATCH_BYTES) {
		ret = index_flush(w);
		if (ret < 0)
			return ret;
	}
	ret = index_reserve(w, (size_t)n);
	if (ret < 0)
		return ret;
	memcpy(p->index_buf + p->index_len, line, (size_t)n);
	p->index_len += (size_t)n;
	return 0;
}

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
		batch_destroy(b);
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
static void batch_submit(struct adump_worker *w)
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
		batch_done(w, b, b->write.req.res);
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
static void packed_sync(struct adump_worker *w, int fd, uint64_t len)
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
static void sync_done(struct adump_worker *w, int res)
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
static void packed_writeback(struct packed_state *p, int fd, uint64_t from, uint64_t to)
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
static void batch_done(struct adump_worker *w, struct packed_batch *b, int res)
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
			ret = index_flush(w);
		if (ret == 0)
			ret = index_reserve(w, b->lines_len);
		if (ret == 0) {
			memcpy(p->index_buf + p->index_len, b->lines, b->lines_len);
			p->index_len += b->lines_len;
			ret = index_flush(w);
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
static int take_small(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec)
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
				batch_submit(w);
				if (segment_roll(w) < 0)
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
		batch_submit(w);
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
	return 1;
}

static void packed_file_begin(struct adump_worker *w, struct file_state *fs, bool is_whole)
{
	struct adump_session *s = w->session;
	int ret;

	(void)is_whole;
	if (adump_file_header(s, fs) < 0)
		return;
	ret = place(w, fs);
	if (ret < 0) {
		atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
		adump_file_fail(s, fs, ret, "placing in a segment");
		return;
	}
	fs->crc = adump_crc32c(0, fs->header, fs->header_len);
	adump_file_header_submit(w, fs);
}

static void packed_record(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
			  struct file_state *fs)
{
	if (rec->len == 0) {
		adump_record_done(w, chan, rec, fs);
		return;
	}
	fs->crc = adump_crc32c(fs->crc, adump_rec_data(rec), rec->len);
	adump_record_submit(w, chan, rec, fs);
}

static void packed_file_end(struct adump_worker *w, struct file_state *fs)
{
	struct packed_state *p = w->out_state;
	int ret;

	if (fs->is_failed)
		return;
	ret = index_add(w, fs);
	/* Batched while more work waits; at the end of a burst the line goes out now, before
	 * the sync that waits for this file can return (tests hold it for the worker's idle). */
	if (ret == 0 && adump_worker_is_drained(w) && !ADUMP_TESTPOINT("packed.index_hold"))
		ret = index_flush(w);
	else if (ret == 0)
		p->index_counted = p->index_len;        /* counted completed once this returns */
	if (ret < 0)
		adump_file_fail(w->session, fs, ret, "indexing");
}

static void packed_completion(struct adump_worker *w, struct adump_chunk_write *cw)
{
	if (cw->req.is_datasync)
		sync_done(w, cw->req.res);
	else
		batch_done(w, cw->priv, cw->req.res);
}

static bool packed_has_held(const struct adump_worker *w)
{
	const struct packed_state *p = w->out_state;

	return p->batch != NULL;
}

/* Index lines of finished files go out before the worker idles. */
static void packed_idle(struct adump_worker *w)
{
	struct packed_state *p = w->out_state;

	if (p->index_len)
		index_flush(w);
}

static const char *packed_tag(const struct adump_worker *w)
{
	return ((const struct packed_session *)w->session->out_session)->tag;
}

const struct adump_output_ops adump_out_packed = {
	.name = "packed",
	.worker_init = packed_worker_init,
	.worker_fini = packed_worker_fini,
	.record_prepare = take_small,
	.file_begin = packed_file_begin,
	.record = packed_record,
	.file_end = packed_file_end,
	.completion = packed_completion,
	.has_held = packed_has_held,
	.submit_held = batch_submit,
	.idle = packed_idle,
	.session_init = packed_session_init,
	.session_fini = packed_session_fini,
};
