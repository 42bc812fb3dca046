/* SPDX-License-Identifier: Apache-2.0 */
/* Statistics content: each file's tensors are folded into statistics as their chunks pass
 * (stats.c) and the file becomes one CSV, <name>.csv, written whole and published at once,
 * or handed to the callback in one chunk. Nothing of the tensor data is written. */
#include <stdlib.h>

#include "common/common.h"
#include "pipeline/worker_int.h"

static void stats_begin(struct adump_worker *w, struct file_state *fs, bool is_whole)
{
	struct adump_session *s = w->session;
	int ret = adump_statacc_init(&fs->stats, &fs->op->op, s->cfg.stats_mask);

	(void)is_whole;
	if (ret < 0)
		adump_file_fail(s, fs, ret, "starting statistics of");
	else
		fs->has_stats = true;
}

static void stats_begin_file(struct adump_worker *w, struct file_state *fs, bool is_whole)
{
	int ret;

	stats_begin(w, fs, is_whole);
	if (!fs->has_stats || fs->op->dir)      /* a producer's own directory exists */
		return;
	ret = adump_device_dir_ensure(w->session, fs->op->op.device_id);
	if (ret < 0)
		adump_file_fail(w->session, fs, ret, "creating the directory of");
}

static void stats_record(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
			 struct file_state *fs)
{
	adump_statacc_record(&fs->stats, rec);
	adump_record_done(w, chan, rec, fs);
}

/* The CSV of a file that has not failed, into *@csv (caller frees), named into @csv_name.
 * Return 0, or -errno (the file has failed). */
static int stats_csv(struct adump_session *s, struct file_state *fs, char *csv_name, size_t cap,
		     char **csv, size_t *len)
{
	int ret = adump_path_with(csv_name, cap, fs->path, ".csv");

	if (ret == 0)
		ret = adump_statacc_csv(&fs->stats, csv, len);
	if (ret < 0)
		adump_file_fail(s, fs, ret, "computing statistics of");
	return ret;
}

static void stats_end_file(struct adump_worker *w, struct file_state *fs)
{
	struct adump_session *s = w->session;
	char csv_name[4200];
	char *csv = NULL;
	size_t len = 0;
	int ret;

	if (!fs->has_stats)
		return;
	if (!fs->is_failed && stats_csv(s, fs, csv_name, sizeof(csv_name), &csv, &len) == 0) {
		ret = adump_session_write_file(s, csv_name, csv, len, &w->dir);
		if (ret < 0) {
			atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
			adump_file_fail(s, fs, ret, "writing statistics of");
		} else {
			atomic_fetch_add_explicit(&s->bytes, len, memory_order_relaxed);
		}
	}
	free(csv);
	adump_statacc_fini(&fs->stats);
}

static void stats_end_callback(struct adump_worker *w, struct file_state *fs)
{
	char csv_name[4200];
	char *csv = NULL;
	size_t len = 0;

	if (!fs->has_stats)
		return;
	/* As CANN's host writer does: the CSV text, NUL-terminated, in one chunk. */
	if (!fs->is_failed && stats_csv(w->session, fs, csv_name, sizeof(csv_name), &csv, &len) == 0)
		adump_deliver(w->session, csv_name, 0, csv, len + 1, true);
	free(csv);
	adump_statacc_fini(&fs->stats);
}

const struct adump_output_ops adump_out_stats_file = {
	.name = "stats",
	.file_begin = stats_begin_file,
	.record = stats_record,
	.file_end = stats_end_file,
};

const struct adump_output_ops adump_out_stats_callback = {
	.name = "stats-callback",
	.file_begin = stats_begin,
	.record = stats_record,
	.file_end = stats_end_callback,
};
