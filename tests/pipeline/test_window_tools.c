/* SPDX-License-Identifier: Apache-2.0 */
/* Window mode's output elsewhere and read back (issue 32): the callback sink delivers the
 * files the file sink writes, byte for byte; `adump verify`, `scan` and `compare` on a
 * persisted window (CANN and msprobe, with and without a directory per step); producer
 * directories outside dump_path kept apart in a window. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adump/adump.h"
#include "adump/host.h"
#include "capture_helpers.h"
#include "helpers.h"
#include "window_helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif

/* ---- 8: the callback sink ------------------------------------------------------------------ */

struct cb_file {
	char *name;
	unsigned char *bytes;
	size_t len;
	bool is_last;
};

struct collector {
	pthread_mutex_t lock;
	struct cb_file files[256];
	unsigned count;
	unsigned bad;
};

static int collect(const struct adump_chunk *c, void *user)
{
	struct collector *col = user;
	struct cb_file *f = NULL;

	pthread_mutex_lock(&col->lock);
	for (unsigned i = 0; i < col->count; i++)
		if (!strcmp(col->files[i].name, c->file_name))
			f = &col->files[i];
	if (!f && col->count < 256) {
		f = &col->files[col->count++];
		f->name = strdup(c->file_name);
	}
	if (!f || f->is_last) {
		col->bad++;
	} else {
		if (c->offset + c->len > f->len) {
			f->bytes = realloc(f->bytes, c->offset + c->len);
			memset(f->bytes + f->len, 0, c->offset + c->len - f->len);
			f->len = c->offset + c->len;
		}
		memcpy(f->bytes + c->offset, c->data, c->len);
		f->is_last = c->is_last;
	}
	pthread_mutex_unlock(&col->lock);
	return 0;
}

static struct collector col = { .lock = PTHREAD_MUTEX_INITIALIZER };
static char col_root[4200], col_out[4200];

/* In the run's child: every file delivered, rebuilt under col_out by its name's path below
 * col_root. */
static void write_collected(void)
{
	size_t prefix = strlen(col_root);

	for (unsigned i = 0; i < col.count; i++) {
		const struct cb_file *f = &col.files[i];
		char path[4200];
		char *slash;
		FILE *out;

		if (strncmp(f->name, col_root, prefix) || f->name[prefix] != '/' || !f->is_last)
			_exit(20);
		snprintf(path, sizeof(path), "%s/%s", col_out, f->name + prefix + 1);
		for (slash = strchr(path + strlen(col_out) + 1, '/'); slash;
		     slash = strchr(slash + 1, '/')) {
			*slash = '\0';
			mkdir(path, 0700);
			*slash = '/';
		}
		out = fopen(path, "wx");
		if (!out || fwrite(f->bytes, 1, f->len, out) != f->len || fclose(out))
			_exit(21);
	}
	if (col.bad)
		_exit(22);
}

/* A window session through the callback sink, then through the file sink at the same
 * dump_path: @files statistics and window files, the same bytes. */
static void callback_sink(enum adump_output_format format, bool set_dir, size_t files)
{
	char *root = t_tmpdir("window_cb");
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct filter no_trigger = { .lo = -1, .no_trigger = true };
	struct json_object *t;
	char dir[4200];
	size_t na, nb;
	char **la, **lb;

	snprintf(col_root, sizeof(col_root), "%s/cap", root);
	snprintf(col_out, sizeof(col_out), "%s/rebuilt", root);
	ck_assert_int_eq(mkdir(col_out, 0700), 0);
	p.set_dir = set_dir;
	p.bad_step = 3;
	p.bad_op = 1;
	p.bad_value = NAN;
	cfg = tw_window_config(col_root, format, 2);
	cfg.sink = ADUMP_SINK_CALLBACK;
	cfg.chunk_fn = collect;
	cfg.chunk_user = &col;
	tw_after_run = write_collected;
	tw_run(&cfg, &p, &o);
	tw_after_run = NULL;
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[3].persists, 1);
	ck_assert_uint_eq(tw_window_dirs(col_out), 1);
	ck_assert_uint_eq(t_count_files(col_root, ""), 0);     /* chunks, no files */
	t_rmtree(col_root);
	cfg = tw_window_config(col_root, format, 2);
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	/* Every file the file sink wrote came as chunks with the same bytes, and nothing else. */
	la = tw_list_kept(col_out, &no_trigger, &na);
	lb = tw_list_kept(col_root, &no_trigger, &nb);
	ck_assert_uint_eq(na, files);
	ck_assert_uint_eq(na, nb);
	for (size_t i = 0; i < na; i++) {
		char pa[4200], pb[4200];
		size_t len_a, len_b;
		unsigned char *a, *b;
		bool is_csv = strstr(la[i], ".csv") != NULL;

		ck_assert_str_eq(la[i], lb[i]);
		snprintf(pa, sizeof(pa), "%s/%s", col_out, la[i]);
		snprintf(pb, sizeof(pb), "%s/%s", col_root, lb[i]);
		a = t_read_file(pa, &len_a);
		b = t_read_file(pb, &len_b);
		/* A CSV comes NUL-terminated, as CANN's host writer gives it. */
		ck_assert_uint_eq(len_a, len_b + is_csv);
		ck_assert_msg(!memcmp(a, b, len_b) && (!is_csv || a[len_b] == 0), "%s differs", pa);
		free(a);
		free(b);
	}
	t_free_list(la, na);
	t_free_list(lb, nb);
	/* trigger.json (its time differs) as JSON. */
	if (set_dir)
		snprintf(dir, sizeof(dir), "%s/window-3/step3/rank0", col_out);
	else
		snprintf(dir, sizeof(dir), "%s/window-3/" TIME_DIR, col_out);
	t = tw_load_trigger(dir);
	ck_assert_str_eq(tw_str_member(t, "rule"), "nonfinite");
	ck_assert_str_eq(tw_str_member(t, "value"), "nan");
	tw_check_steps(t, 2, 3);
	json_object_put(t);
	tw_cleanup(root);
}

START_TEST(test_callback_sink)
{
	/* the statistics of 6 steps x 4 ops, the window's 2 x 4 tensor files */
	callback_sink(ADUMP_OUTPUT_CANN, false, 6 * 4 + 2 * 4);
}
END_TEST

/* A directory per step (msprobe takes the file sink only). */
START_TEST(test_callback_sink_set_dir)
{
	callback_sink(ADUMP_OUTPUT_CANN, true, 6 * 4 + 2 * 4);
}
END_TEST

/* ---- 9: adump verify and adump scan on a window ------------------------------------------- */

/* ADUMP_TOOL with @argv (NULL-terminated, argv[0] included), no shell; stdout and stderr into
 * @out/stdout and @out/stderr. Return: the exit status. */
static int run_tool(const char *out, char *const argv[])
{
	char o[4200], e[4200];
	pid_t pid;
	int status;

	snprintf(o, sizeof(o), "%s/stdout", out);
	snprintf(e, sizeof(e), "%s/stderr", out);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(126);
		execv(ADUMP_TOOL, argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void tools_on(enum adump_output_format format, bool set_dir)
{
	char *root = t_tmpdir("window_tool");
	char win[4200], out[4200], wroot[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o;
	char *text;

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(out, sizeof(out), "%s/out", root);
	ck_assert_int_eq(mkdir(out, 0700), 0);
	p.bad_step = 4;
	p.bad_op = 2;
	p.bad_value = NAN;
	p.set_dir = set_dir;
	cfg = tw_window_config(win, format, 3);
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	snprintf(wroot, sizeof(wroot), "%s/window-4", win);
	{
		char *argv[] = { "adump", "verify", wroot, NULL };
		int rc = run_tool(out, argv);

		text = t_slurp(out, "stderr");
		ck_assert_msg(rc == 0, "verify: %d: %s", rc, text);
		free(text);
		/* Every dump (and msprobe's dump.json) checked; trigger.json (one per directory
		 * the window wrote) is not a dump. */
		unsigned dirs = set_dir ? 3 : 1, ok = format == ADUMP_OUTPUT_CANN ? 12 :
							   24 + dirs;
		char want[256];

		snprintf(want, sizeof(want), "verify: %u files: %u ok, 0 bad, 0 .part leftover, "
			 "0 failed, %u skipped as not dumps (.csv, .json, .html): passed",
			 ok + dirs, ok, dirs);
		text = t_slurp(out, "stdout");
		ck_assert_msg(strstr(text, want), "verify: %s", text);
		free(text);
	}
	{
		char *argv[] = { "adump", "scan", "--json", "--quiet", "--threads", "1", wroot,
				 NULL };
		int rc = run_tool(out, argv);
		char *pos;
		bool found = false;

		text = t_slurp(out, "stdout");
		ck_assert_msg(rc == 1, "scan: %d: %s", rc, text);
		/* One object per line: the origin is layer2 of step 4. */
		for (pos = strtok(text, "\n"); pos; pos = strtok(NULL, "\n")) {
			struct json_object *l = json_tokener_parse(pos), *v;

			ck_assert_msg(l != NULL, "scan printed %s", pos);
			if (json_object_object_get_ex(l, "kind", &v) &&
			    !strcmp(json_object_get_string(v), "origin")) {
				ck_assert(json_object_object_get_ex(l, "op_name", &v));
				ck_assert_str_eq(json_object_get_string(v),
						 "Functional.layer2.4.forward");
				found = true;
			}
			json_object_put(l);
		}
		ck_assert_msg(found, "scan named no origin");
		free(text);
		text = t_slurp(out, "stderr");
		ck_assert_msg(!strstr(text, "trigger.json"), "scan: %s", text);
		free(text);
	}
	{
		char cmp[4200];
		char *argv[] = { "adump", "compare", "--recursive", "-m", wroot, "-g",
				 wroot, "-out", cmp, NULL };
		int rc;

		snprintf(cmp, sizeof(cmp), "%s/cmp", root);
		ck_assert_int_eq(mkdir(cmp, 0700), 0);
		rc = run_tool(out, argv);
		text = t_slurp(out, "stderr");
		ck_assert_msg(rc == 0, "compare: %d: %s", rc, text);
		ck_assert_msg(!strstr(text, "trigger.json"), "compare: %s", text);
		ck_assert_msg(strstr(text, set_dir ? "3 pairs compared" : "1 pairs compared") &&
			      strstr(text, "no divergent op in any pair"), "compare: %s", text);
		free(text);
	}
	tw_cleanup(root);
}

START_TEST(test_verify_scan_cann)
{
	tools_on(ADUMP_OUTPUT_CANN, false);
	tools_on(ADUMP_OUTPUT_CANN, true);
}
END_TEST

START_TEST(test_verify_scan_msprobe)
{
	tools_on(ADUMP_OUTPUT_MSPROBE, false);
	tools_on(ADUMP_OUTPUT_MSPROBE, true);
}
END_TEST

/* ---- producer directories outside dump_path ------------------------------------------------- */

/* The dump files in @dir (CANN: <dir>/0/<file>; trigger.json beside them), the first one's
 * bytes in @first (malloc'd). */
static unsigned dir_files(const char *dir, unsigned char **first, size_t *first_len)
{
	char path[8400];
	size_t count;
	char **files = t_list_files(dir, &count);
	unsigned n = 0;

	for (size_t i = 0; i < count; i++) {
		if (strncmp(files[i], "0/", 2) != 0)
			continue;
		if (n++ == 0) {
			snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
			*first = t_read_file(path, first_len);
			ck_assert_ptr_nonnull(*first);
		}
	}
	t_free_list(files, count);
	return n;
}

#define DIR_STREAMS 3

/* persist_dirs() gives the session its dump_path with a trailing slash */
static bool dump_path_slash;

/* Streams writing one dump each to @dirs[j] (under <tmp>; "@" there stands for dump_path
 * <tmp>/dump), in that order, and a window persisted: it holds stream j's dump, alone and
 * with its bytes, in window-0/@want[j]. */
static void persist_dirs(const char *const *dirs, const char *const *want, unsigned count)
{
	char *tmp = t_tmpdir("wout");
	char dump[4200], dir[4200], got[4200];
	static float data[DIR_STREAMS][1024];
	struct adump_config cfg;
	struct adump_session *s = NULL;
	struct adump_host_stream *hs[DIR_STREAMS];
	struct adump_window_info info;

	ck_assert_ptr_nonnull(tmp);
	ck_assert_uint_le(count, DIR_STREAMS);
	snprintf(dump, sizeof(dump), "%s/dump", tmp);
	ck_assert_int_eq(mkdir(dump, 0750), 0);
	snprintf(dir, sizeof(dir), "%s/", dump);
	cfg = tw_window_config(dump_path_slash ? dir : dump, ADUMP_OUTPUT_CANN, 2);
	cfg.stream_max = DIR_STREAMS;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	for (unsigned j = 0; j < count; j++) {
		struct adump_host_stream_config hcfg = ADUMP_HOST_STREAM_CONFIG_INIT;
		struct adump_host_tensor t = { .data = data[j], .bytes = sizeof(data[j]),
					       .dtype = ADUMP_DT_FLOAT, .dim_count = 1,
					       .dims = { 1024 } };
		struct adump_host_op op = ADUMP_HOST_OP_INIT;

		for (unsigned i = 0; i < 1024; i++)
			data[j][i] = (float)(j + 1) * 0.5f + (float)i;
		if (dirs[j][0] == '@')
			snprintf(dir, sizeof(dir), "%s%s", dump, dirs[j] + 1);
		else
			snprintf(dir, sizeof(dir), "%s/%s", tmp, dirs[j]);
		ck_assert_int_eq(adump_host_stream_open(s, &hcfg, &hs[j]), 0);
		ck_assert_int_eq(adump_host_stream_set_dir(hs[j], dir), 0);
		op.op_type = "Add";
		op.op_name = "layer.add";
		op.outputs = &t;
		op.output_count = 1;
		op.timestamp_us = T0 + j;
		ck_assert_int_eq(adump_host_dump_op(hs[j], &op, NULL), 0);
		ck_assert_int_eq(adump_host_stream_sync(hs[j]), 0);
	}
	ck_assert_int_eq(adump_session_persist(s, "test"), 0);
	ck_assert_int_eq(adump_session_step(s), 0);
	tw_wait_persists(s, 1, &info);
	for (unsigned j = 0; j < count; j++)
		ck_assert_int_eq(adump_host_stream_close(hs[j]), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	for (unsigned j = 0; j < count; j++) {
		unsigned char *bytes = NULL;
		size_t len = 0;

		snprintf(got, sizeof(got), "%s/window-0/%s", dump, want[j]);
		ck_assert_msg(dir_files(got, &bytes, &len) == 1, "%s: not one dump", got);
		ck_assert_uint_gt(len, sizeof(data[j]));
		ck_assert_int_eq(memcmp(bytes + len - sizeof(data[j]), data[j], sizeof(data[j])), 0);
		free(bytes);
	}
	t_rmtree(tmp);
	free(tmp);
}

/* Two streams writing to <tmp>/a/x and <tmp>/b/x, outside dump_path <tmp>/dump: a persisted
 * window holds them as x and x.2 (in the order the window holds them), one file each with
 * its own stream's bytes; before, both went into x. */
START_TEST(test_outside_dirs_kept_apart)
{
	persist_dirs((const char *const[]){ "a/x", "b/x" }, (const char *const[]){ "x", "x.2" },
		     2);
}
END_TEST

/* A directory named with a trailing slash: under the window's root by its last component
 * (before, it was written into itself, the live directory); one under dump_path keeps its
 * path there. (One that climbs out of dump_path with ".." is refused by set_dir:
 * test_planted_links.) */
START_TEST(test_odd_dirs_stay_under_the_root)
{
	persist_dirs((const char *const[]){ "a/x/", "@/y/z/", "b/x" },
		     (const char *const[]){ "x", "y/z", "x.2" }, 3);
}
END_TEST

/* dump_path given as "<tmp>/dump/": a directory under it, named absolute, keeps its path
 * under the root. Before, it was taken for one outside: "y/z" persisted as "z". */
START_TEST(test_dump_path_with_a_slash)
{
	dump_path_slash = true;
	persist_dirs((const char *const[]){ "@/y/z", "a/x" }, (const char *const[]){ "y/z", "x" },
		     2);
	dump_path_slash = false;
}
END_TEST

static Suite *window_tools_suite(void)
{
	Suite *s = suite_create("window_tools");
	TCase *cb = tcase_create("callback");
	TCase *tools = tcase_create("tools");
	TCase *dirs = tcase_create("dirs");

	tcase_set_timeout(cb, 120);
	tcase_add_test(cb, test_callback_sink);
	tcase_add_test(cb, test_callback_sink_set_dir);
	suite_add_tcase(s, cb);
	tcase_set_timeout(tools, 120);
	tcase_add_test(tools, test_verify_scan_cann);
	tcase_add_test(tools, test_verify_scan_msprobe);
	suite_add_tcase(s, tools);
	tcase_set_timeout(dirs, 60);
	tcase_add_test(dirs, test_outside_dirs_kept_apart);
	tcase_add_test(dirs, test_odd_dirs_stay_under_the_root);
	tcase_add_test(dirs, test_dump_path_with_a_slash);
	suite_add_tcase(s, dirs);
	return s;
}

int main(void)
{
	return t_run_suite(window_tools_suite());
}
