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
 * A small file that arrives in one record goes into a worker batch, one write of many files
 * (out_packed_batch.c, with the background syncs and writeback). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "common/journal.h"
#include "pipeline/loss_int.h"
#include "pipeline/out_packed_int.h"
#include "proto/proto.h"


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

void packed_batch_destroy(struct packed_batch *b)
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
	if (p->index_fd >= 0 && packed_index_flush(w) < 0)
		adump_log(ADUMP_LOG_ERROR, MODULE, "worker %u: index lines lost at stop", w->index);
	free(p->index_buf);
	p->index_buf = NULL;
	/* The worker stopped with nothing in flight and no batch open: all are free. */
	while (p->free_batches) {
		struct packed_batch *b = p->free_batches;

		p->free_batches = b->next_free;
		packed_batch_destroy(b);
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
int packed_segment_roll(struct adump_worker *w)
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
	packed_batch_submit(w);
	if (p->seg_offset && p->seg_offset + total > limit) {
		ret = packed_segment_roll(w);
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
int packed_index_reserve(struct adump_worker *w, size_t more)
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
int packed_index_flush(struct adump_worker *w)
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
	/* Their lines are in the index, or their losses in the loss log: the journal need no
	 * longer speak for them. */
	for (uint32_t i = 0; i < p->journal_line_count; i++) {
		adump_journal_slot_done(p->journal_lines[i].slot);
		atomic_fetch_sub_explicit(p->journal_lines[i].held, 1, memory_order_relaxed);
	}
	p->journal_line_count = 0;
	return ret;
}

/* Queue the file's index entry; called once all its writes completed. Entries go out in
 * batches (packed_index_flush()), always after the data they describe. */
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
		ret = packed_index_flush(w);
		if (ret < 0)
			return ret;
	}
	ret = packed_index_reserve(w, (size_t)n);
	if (ret < 0)
		return ret;
	memcpy(p->index_buf + p->index_len, line, (size_t)n);
	p->index_len += (size_t)n;
	return 0;
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
	bool is_bound = false;
	int ret;

	if (fs->is_failed)
		return;
	ret = index_add(w, fs);
	/* Its journal slot stays pending until the line is written (a kill before that loses
	 * the file as surely as one before its data). */
	if (ret == 0 && fs->op->journal_slot) {
		_Atomic uint32_t *held = fs->op->journal_held;

		p->journal_lines[p->journal_line_count++] =
			(struct packed_journal_line){ .slot = fs->op->journal_slot, .held = held };
		fs->op->journal_slot = NULL;
		is_bound = atomic_fetch_add_explicit(held, 1, memory_order_relaxed) + 1 >=
				   PACKED_JOURNAL_HELD_MAX ||
			   p->journal_line_count == PACKED_JOURNAL_LINES_MAX;
	}
	/* Batched while more work waits; at the end of a burst the line goes out now, before
	 * the sync that waits for this file can return (tests hold it for the worker's idle).
	 * Also once the journal slots held reach their bound. */
	if (ret == 0 && (is_bound ||
			 (adump_worker_is_drained(w) && !ADUMP_TESTPOINT("packed.index_hold"))))
		ret = packed_index_flush(w);
	else if (ret == 0)
		p->index_counted = p->index_len;        /* counted completed once this returns */
	if (ret < 0)
		adump_file_fail(w->session, fs, ret, "indexing");
}

static void packed_completion(struct adump_worker *w, struct adump_chunk_write *cw)
{
	if (cw->req.is_datasync)
		packed_sync_done(w, cw->req.res);
	else
		packed_batch_done(w, cw->priv, cw->req.res);
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
		packed_index_flush(w);
}

const char *packed_tag(const struct adump_worker *w)
{
	return ((const struct packed_session *)w->session->out_session)->tag;
}

const struct adump_output_ops adump_out_packed = {
	.name = "packed",
	.worker_init = packed_worker_init,
	.worker_fini = packed_worker_fini,
	.record_prepare = packed_take_small,
	.file_begin = packed_file_begin,
	.record = packed_record,
	.file_end = packed_file_end,
	.completion = packed_completion,
	.has_held = packed_has_held,
	.submit_held = packed_batch_submit,
	.idle = packed_idle,
	.session_init = packed_session_init,
	.session_fini = packed_session_fini,
};
