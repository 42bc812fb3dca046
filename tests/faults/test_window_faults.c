/* SPDX-License-Identifier: Apache-2.0 */
/* Window mode under real faults (issue 32, "Bad input"):
 *   - a disk that fills while a window is written (a 32 MiB tmpfs in a private mount
 *     namespace; root only, else skipped): the step reports the error, the window's files are
 *     whole or .failed, its loss log says enospc, and every step's statistics are on disk,
 *     before and after, once space is freed;
 *   - SIGKILL while a window is written: every file under a dump's name is whole, and after
 *     `adump verify --clean` nothing is bad, failed or partial (dumps the kill cut off are
 *     named missing by the journal). */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "adump/adump.h"
#include "adump/host.h"
#include "fault_helpers.h"
#include "helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif
#define TOOL "timeout 300 " ADUMP_TOOL

#define ELEMS (256u << 10)              /* 1 MiB of floats per tensor */

static char *dir;
static float *data;

static void setup(void)
{
	dir = t_tmpdir("window_faults");
	ck_assert_ptr_nonnull(dir);
	data = malloc(ELEMS * sizeof(*data));
	ck_assert_ptr_nonnull(data);
	for (uint32_t i = 0; i < ELEMS; i++)
		data[i] = (float)(i % 1000) * 0.5f;
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
	free(data);
}

static void window_config(struct adump_config *cfg, const char *path)
{
	*cfg = (struct adump_config)ADUMP_CONFIG_INIT;
	cfg->dump_path = path;
	cfg->time_dir = "run";
	cfg->worker_count = 1;
	cfg->min_free_bytes = ADUMP_GUARD_OFF;
	cfg->window_steps = 2;
	cfg->window_bytes = 256u << 20;
}

/* @ops dumps of one 1 MiB input and output each, named by step and index; a NaN in the
 * first one's output when @is_bad. */
static void dump_step(struct adump_host_stream *hs, unsigned step, unsigned ops, bool is_bad)
{
	for (unsigned k = 0; k < ops; k++) {
		struct adump_host_tensor t = { .data = data, .bytes = ELEMS * sizeof(float),
					       .dtype = ADUMP_DT_FLOAT, .format = ADUMP_FORMAT_ND,
					       .dim_count = 1, .dims = { ELEMS } };
		struct adump_host_op op = ADUMP_HOST_OP_INIT;
		char name[64];

		snprintf(name, sizeof(name), "s%u_op%u", step, k);
		op.op_type = "Add";
		op.op_name = name;
		op.inputs = &t;
		op.input_count = 1;
		op.outputs = &t;
		op.output_count = 1;
		op.timestamp_us = 1000000ull * (step + 1) + k;
		data[7] = is_bad && k == 0 ? NAN : 3.5f;
		ck_assert_int_eq(adump_host_dump_op(hs, &op, NULL), 0);
	}
	data[7] = 3.5f;
}

/* ---- the disk fills while a window is written ---------------------------------------- */

static struct {
	size_t whole, failed, other;
	char broken[4400];
} seen;

static int look(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	const char *why;

	(void)st;
	(void)ftw;
	if (flag != FTW_F || strstr(path, ADUMP_LOSS_LOG_NAME) || strstr(path, "/adump-journal-") ||
	    strstr(path, "trigger.json"))
		return 0;
	if (strstr(path, ".failed")) {
		seen.failed++;
		return 0;
	}
	why = t_dump_check_whole(path, 1, 1);
	if (why && !seen.broken[0])
		snprintf(seen.broken, sizeof(seen.broken), "%s: %s", path, why);
	seen.whole += !why;
	return 0;
}

/* Whether the statistics CSV of step @step's op @k is on disk and reads as one (found by its
 * name's start: the task and stream ids are the session's). */
static bool has_stats(const char *path, unsigned step, unsigned k)
{
	char dev[PATH_MAX], prefix[64];
	struct dirent **names;
	bool ok = false;
	int n;

	snprintf(dev, sizeof(dev), "%s/run/0", path);
	snprintf(prefix, sizeof(prefix), "Add.s%u_op%u.", step, k);
	n = scandir(dev, &names, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;

		if (!strncmp(name, prefix, strlen(prefix)) && strstr(name, ".csv")) {
			char file[PATH_MAX + 300];
			size_t len = 0;
			char *text;

			snprintf(file, sizeof(file), "%s/%s", dev, name);
			text = t_read_file(file, &len);
			ok = text && strstr(text, "Input") && strstr(text, "Output");
			free(text);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	return ok;
}

START_TEST(test_window_enospc)
{
	char mnt[PATH_MAX], cap[PATH_MAX + 8], win[PATH_MAX + 32], log[PATH_MAX + 64];
	struct adump_config cfg;
	struct adump_session *s;
	struct adump_host_stream *hs;
	struct adump_window_info wi;
	int ret;

	if (geteuid() != 0) {
		fprintf(stderr, "test_window_enospc: needs root (a tmpfs of its own): skipped\n");
		return;
	}
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	ck_assert_int_eq(mkdir(mnt, 0755), 0);
	ret = t_mount_small_fs(mnt);
	if (ret < 0) {
		fprintf(stderr, "test_window_enospc: mount: %s: skipped\n", strerror(-ret));
		return;
	}
	snprintf(cap, sizeof(cap), "%s/cap", mnt);
	window_config(&cfg, cap);
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	/* Two steps of 12 dumps of 2 MiB: a 48 MiB window into 32 MiB. */
	dump_step(hs, 0, 12, false);
	ck_assert_int_eq(adump_session_step(s), 0);
	dump_step(hs, 1, 12, true);
	ret = adump_session_step(s);
	ck_assert_msg(ret < 0, "a window larger than the disk was written without error");
	ck_assert_int_eq(adump_session_window(s, &wi), 0);
	ck_assert_uint_eq(wi.persists, 1);
	snprintf(win, sizeof(win), "%s/window-1", cap);
	ck_assert_str_eq(wi.last_window, win);
	/* Whole or failed, nothing else; the window's loss log names the lost ones. */
	memset(&seen, 0, sizeof(seen));
	ck_assert_int_eq(nftw(win, look, 16, FTW_PHYS), 0);
	ck_assert_msg(!seen.broken[0], "%s", seen.broken);
	ck_assert_uint_lt(seen.whole, 24);
	snprintf(log, sizeof(log), "%s/run/%s", win, ADUMP_LOSS_LOG_NAME);
	{
		size_t len = 0;
		char *text = t_read_file(log, &len);

		ck_assert_msg(text && strstr(text, "\"enospc\""), "no enospc loss in %s", log);
		free(text);
	}
	/* The statistics of both steps are whole. */
	for (unsigned k = 0; k < 12; k++) {
		ck_assert_msg(has_stats(cap, 0, k), "statistics of step 0 op %u lost", k);
		ck_assert_msg(has_stats(cap, 1, k), "statistics of step 1 op %u lost", k);
	}
	/* Space back: capture goes on, statistics and all. */
	ck_assert_int_eq(t_rmtree(win), 0);
	dump_step(hs, 2, 4, false);
	adump_session_step(s);
	for (unsigned k = 0; k < 4; k++)
		ck_assert_msg(has_stats(cap, 2, k), "statistics of step 2 op %u lost", k);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	adump_session_destroy(s);
}
END_TEST

/* ---- SIGKILL while a window is written ------------------------------------------------- */

static void child_capture(const char *path)
{
	struct adump_config cfg;
	struct adump_session *s;
	struct adump_host_stream *hs;

	window_config(&cfg, path);
	if (adump_session_create(&cfg, &s) < 0 || adump_host_stream_open(s, NULL, &hs) < 0)
		_exit(3);
	dump_step(hs, 0, 40, false);
	adump_session_step(s);
	dump_step(hs, 1, 40, true);
	adump_session_step(s);          /* writes 160 MiB: the kill lands in it */
	pause();
	_exit(4);
}

static bool has_window_file(const char *win)
{
	char dev[PATH_MAX + 16];

	snprintf(dev, sizeof(dev), "%s/run/0", win);
	return t_count_files(dev, "") > 0;
}

static int64_t count_of(json_object *doc, const char *key)
{
	json_object *v;

	ck_assert_msg(json_object_object_get_ex(doc, key, &v), "verify --json lacks %s", key);
	return json_object_get_int64(v);
}

START_TEST(test_window_kill)
{
	char cap[PATH_MAX], win[PATH_MAX + 32];
	int status, rc;
	json_object *doc;
	char *out;
	pid_t pid;

	snprintf(cap, sizeof(cap), "%s/cap", dir);
	snprintf(win, sizeof(win), "%s/window-1", cap);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		child_capture(cap);
	for (unsigned waited = 0; !has_window_file(win) && waited < 60000; waited++)
		usleep(1000);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status), "the capture ended by itself (status %d)", status);
	memset(&seen, 0, sizeof(seen));
	ck_assert_int_eq(nftw(win, look, 16, FTW_PHYS), 0);
	ck_assert_msg(!seen.broken[0], "%s", seen.broken);
	ck_assert_uint_eq(seen.failed, 0);
	ck_assert_uint_ge(seen.whole, 1);
	ck_assert_uint_lt(seen.whole, 80);      /* killed mid-window, not after */
	t_run_tool(TOOL, dir, "verify --clean --json %s", win);
	rc = t_run_tool(TOOL, dir, "verify --json %s", win);
	out = t_slurp(dir, "stdout");
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "verify: not JSON: %s", out);
	ck_assert_int_eq(count_of(doc, "bad"), 0);
	ck_assert_int_eq(count_of(doc, "failed"), 0);
	ck_assert_int_eq(count_of(doc, "part"), 0);
	ck_assert_int_eq(count_of(doc, "ok"), (int64_t)seen.whole);
	/* Whatever the kill cut off is named by the journal; with all written, verify passes. */
	ck_assert_msg(rc == 0 || count_of(doc, "missing") + count_of(doc, "in_progress") > 0,
		      "verify failed with nothing missing: %s", out);
	json_object_put(doc);
	free(out);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("window_faults");
	TCase *tc = tcase_create("faults");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_window_enospc);
	tcase_add_test(tc, test_window_kill);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return t_run_suite(suite());
}
