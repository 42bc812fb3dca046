/* SPDX-License-Identifier: Apache-2.0 */
/* The output stage's shared part: picks a session's output module, and keeps a dump file's
 * state from its first record to its completion, whatever the module. A file is written as
 * <name>.part and renamed only when every chunk, the last included, has completed; a file
 * that lost data becomes <name>.failed and is counted, never left looking complete. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/common.h"
#include "pipeline/loss_int.h"
#include "pipeline/window_int.h"
#include "pipeline/worker_int.h"
#include "proto/proto.h"

#define MODULE "worker"

const struct adump_output_ops *adump_output_select(const struct adump_config *cfg)
{
	/* msprobe's layout, tensors or statistics (adump_config_check() kept it to files). */
	if (cfg->format == ADUMP_OUTPUT_MSPROBE)
		return &adump_out_msprobe;
	if (cfg->content == ADUMP_CONTENT_STATS)
		return cfg->sink == ADUMP_SINK_CALLBACK ? &adump_out_stats_callback
							: &adump_out_stats_file;
	if (cfg->sink == ADUMP_SINK_CALLBACK)
		return &adump_out_callback;
	if (cfg->compress == ADUMP_COMPRESS_LZ4)
		return &adump_out_lz4;
	if (cfg->layout == ADUMP_LAYOUT_PACKED)
		return &adump_out_packed;
	return &adump_out_file;
}

int adump_device_dir_ensure(struct adump_session *s, uint32_t device_id)
{
	char path[4200];
	uint64_t bit = device_id < 64 ? (1ull << device_id) : 0;
	int ret;

	if (bit && (atomic_load_explicit(&s->device_dirs, memory_order_relaxed) & bit))
		return 0;
	snprintf(path, sizeof(path), "%s/%u", s->dir, device_id);
	/* A link planted at the device folder's name is refused, not written through. */
	ret = adump_mkdir_own(path, 0750);
	if (ret == -ENOTDIR)
		adump_log_once(ADUMP_LOG_ERROR, MODULE, "%s is not a directory of its own (a link?): "
			       "no dump written there", path);
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
	if (err == -EMFILE) {
		struct rlimit rl = { 0 };

		getrlimit(RLIMIT_NOFILE, &rl);
		adump_log_once(ADUMP_LOG_ERROR, MODULE, "the process has no file descriptor left "
			       "(RLIMIT_NOFILE %llu; a dump file in flight takes one): raise it "
			       "(ulimit -n) or dump from fewer streams",
			       (unsigned long long)rl.rlim_cur);
	}
}

void adump_deliver(struct adump_session *s, const char *name, uint64_t offset, const void *data,
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

int adump_file_header(struct adump_session *s, struct file_state *fs)
{
	struct adump_op_rec *op = fs->op;
	int ret;

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
		return ret;
	}
	fs->payload_base = fs->header_len;
	/* Its size is known now: the disk guard says whether it may start. */
	return adump_guard_file_admit(s, fs);
}

int adump_file_create(struct adump_worker *w, struct file_state *fs, const char *suffix)
{
	struct adump_session *s = w->session;
	char final[4200];
	struct adump_pubfile pf = { .fd = -1, .dir_fd = -1 };
	int ret = ADUMP_TESTPOINT("worker.open");

	/* A producer's own directory was made when it was set. */
	if (ret == 0 && !fs->op->dir)
		ret = adump_device_dir_ensure(s, fs->op->op.device_id);
	if (ret == 0)
		ret = adump_path_with(final, sizeof(final), fs->path, suffix);
	if (ret == 0) {
		ret = adump_session_pubfile_open(s, &pf, final, fs->is_direct ? O_DIRECT : 0,
						 ADUMP_FILE_MODE, &w->dir);
		if (ret == -EINVAL && fs->is_direct) {
			/* This filesystem has no O_DIRECT (tmpfs): the aligned writes work buffered. */
			adump_log_once(ADUMP_LOG_WARN, MODULE,
				       "O_DIRECT not supported under %s; writing buffered", s->dir);
			ret = adump_session_pubfile_open(s, &pf, final, 0, ADUMP_FILE_MODE,
							 &w->dir);
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

void adump_file_publish(struct adump_worker *w, struct file_state *fs, const char *suffix)
{
	struct adump_session *s = w->session;
	struct adump_pubfile pf = { .fd = fs->fd, .dir_fd = -1, .is_unnamed = fs->is_unnamed };
	char final[4200];
	int ret;

	/* Fits: adump_file_create() built the same name. */
	adump_path_with(final, sizeof(final), fs->path, suffix);
	fs->fd = -1;
	/* What was captured of a failed file stays, under a name that can never be mistaken
	 * for a complete dump. */
	ret = adump_session_pubfile_close(s, &pf, final, fs->is_failed ? -ADUMP_ERR_WRITE : 0,
					  ".failed", &w->dir);
	if (ret < 0 && !fs->is_failed)
		adump_file_fail(s, fs, ret, "publishing");
}

struct file_state *adump_file_open(struct adump_worker *w, struct adump_op_rec *op, bool is_whole)
{
	struct adump_session *s = w->session;
	char name[4096], dev[24];
	int name_len = adump_dump_file_name(&op->op, name, sizeof(name));
	const char *dir = op->dir ? op->dir : s->dir;
	size_t cap = strlen(dir) + 16 + (name_len > 0 ? (size_t)name_len : 8) + 1;
	struct file_state *fs = malloc(sizeof(*fs) + cap);

	if (!fs)
		return NULL;
	memset(fs, 0, sizeof(*fs));
	fs->op = op;
	fs->fd = -1;
	adump_strjoin(fs->path, cap, (const char *const[]){ dir, "/",
		      adump_decimal(op->op.device_id, dev), "/",
		      name_len > 0 ? name : "unnamed" }, 5);
	if (name_len < 0)
		adump_file_fail(s, fs, name_len, "naming");
	else
		s->out->file_begin(w, fs, is_whole);
	if (s->window)
		adump_window_file_begin(s->window, fs);
	return fs;
}

void adump_file_finish(struct adump_worker *w, struct file_state *fs)
{
	struct adump_session *s = w->session;
	int ret;

	/* Every byte has been written (or delivered): a zero-copy producer may still veto
	 * publishing what its memory held, before the file gets its name. */
	if (!fs->is_failed) {
		ret = adump_op_rec_check(fs->op);
		if (ret < 0) {
			adump_file_fail(s, fs, ret, "the producer's check rejected");
			fs->is_rejected = true;         /* loss cause changed_before_written */
		}
	}
	if (s->window)
		adump_window_file_end(s->window, fs);
	if (s->out->file_end)
		s->out->file_end(w, fs);
	adump_loss_file_end(s, fs);
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
		adump_chan_release_sc(fs->held_chan, fs->held_rec);
	free(fs->header);
	free(fs);
}

/* Finishing first means that a stream sync, which waits for the buffers, also sees the
 * finished file. */
void adump_record_done(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
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
		adump_file_finish(w, fs);
	adump_chan_release_sc(chan, rec);
}

void adump_file_header_submit(struct adump_worker *w, struct file_state *fs)
{
	fs->header_write = (struct adump_chunk_write){
		.req = { .fd = fs->fd, .buf_index = -1, .buf = fs->header, .len = fs->header_len,
			 .offset = fs->base },
		.file = fs,
	};
	adump_submit_write(w, &fs->header_write);
}

void adump_record_submit(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
			 struct file_state *fs)
{
	struct adump_chunk_write *cw = &w->session->writes[rec->index];

	*cw = (struct adump_chunk_write){
		.req = { .fd = fs->fd, .buf_index = adump_rec_buf_index(rec),
			 .buf = adump_rec_data(rec), .len = rec->len,
			 .offset = fs->base + fs->payload_base + rec->offset },
		.file = fs, .chan = chan, .rec = rec,
	};
	if (!adump_submit_write(w, cw))
		adump_record_done(w, chan, rec, fs);
	else if (rec->flags & ADUMP_REC_LAST)
		fs->is_last_seen = true;
}
