/* SPDX-License-Identifier: Apache-2.0 */
/* Window mode (issue 32): a window session writes the statistics a content=STATS session
 * writes, byte for byte, and on a trigger a window that is byte for byte what a tensor
 * session writes for the held steps (host streams in CANN and msprobe formats, with and
 * without a directory per step, copied or zero copy, one or two streams, msprobe's md5
 * summary, io auto, tensors shared under a stats key; the simulated device); what
 * trigger.json says of the trigger; the window's room a shared tensor takes. Every
 * capture runs in a child process, so that stream ids (in file names) are the same in each. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adump/adump.h"
#include "adump/device.h"
#include "adump/host.h"
#include "capture_helpers.h"
#include "helpers.h"
#include "window_helpers.h"

/* ---- 1, 2, 3: a window equals a tensor capture, the statistics a statistics capture ---- */

static void equality(enum adump_output_format format, bool set_dir, bool zero_copy,
		     unsigned streams)
{
	char *root = t_tmpdir("window");
	char win[4200], win_saved[4200], saved[4200], wroot[4200];
	struct plan p = PLAN_INIT;
	struct adump_config cfg;
	struct outcome o, r;
	const unsigned n = 3, bad = 4;
	struct filter all = { .lo = -1 }, window = { .lo = -1, .no_trigger = true },
		      stats_side = { .lo = -1, .no_windows = true },
		      held = { .lo = bad - n + 1, .hi = bad };
	struct json_object *t;

	p.set_dir = set_dir;
	p.zero_copy = zero_copy;
	p.streams = streams;
	p.bad_step = bad;
	p.bad_op = 1;
	p.bad_value = NAN;
	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(win_saved, sizeof(win_saved), "%s/win_saved", root);
	snprintf(saved, sizeof(saved), "%s/saved", root);

	cfg = tw_window_config(win, format, n);
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	for (unsigned k = 0; k < p.steps; k++)
		ck_assert_int_eq(o.step_ret[k], 0);
	ck_assert_uint_eq(o.info[bad].persists, 1);
	ck_assert_uint_eq(o.info[bad - 1].persists, 0);
	ck_assert_uint_eq(tw_window_dirs(win), 1);
	snprintf(wroot, sizeof(wroot), "%s/window-%u", win, bad);
	ck_assert_str_eq(o.info[bad].last_window, wroot);

	/* trigger.json: the rule, the step, the tensor, the value, the steps held. */
	{
		char dir[4200];

		if (set_dir)
			snprintf(dir, sizeof(dir), "%s/step%u/rank0", wroot, bad);
		else
			snprintf(dir, sizeof(dir), "%s/" TIME_DIR, wroot);
		t = tw_load_trigger(dir);
		ck_assert_str_eq(tw_str_member(t, "rule"), "nonfinite");
		ck_assert_int_eq(json_object_get_int64(tw_member(t, "step")), bad);
		ck_assert_str_eq(tw_str_member(t, "tensor"),
				 "Functional.layer1.4.forward.output.0");
		ck_assert_str_eq(tw_str_member(t, "value"), "nan");
		ck_assert(tw_is_null(t, "threshold"));
		ck_assert_int_eq(json_object_get_int64(tw_member(t, "rank")), 0);
		/* op 1's output, op 2's input and output, op 3's: the first is the trigger */
		ck_assert_int_eq(json_object_get_int64(tw_member(t, "triggers_in_step")), 5);
		tw_check_steps(t, bad - n + 1, bad);
		json_object_put(t);
	}

	/* The tensor capture, written where the window was (msprobe's dump.json names its
	 * directory): every step, or, msprobe without a directory per step, only the window's
	 * steps (dump.json is one file for all). */
	tw_set_aside(wroot, saved);
	cfg = tw_base_config(wroot, format);
	if (format == ADUMP_OUTPUT_MSPROBE && !set_dir) {
		p.first_step = bad - n + 1;
		p.steps = bad + 1;
	}
	tw_run(&cfg, &p, &r);
	ck_assert_int_eq(r.destroy_ret, 0);
	p.first_step = 0;
	p.steps = 6;
	if (format == ADUMP_OUTPUT_MSPROBE)
		ck_assert_uint_gt(tw_same_tree(saved, &window, wroot,
					       set_dir ? &held : &all), 0);
	else
		ck_assert_uint_eq(tw_same_tree(saved, &window, wroot, &held), n * p.ops * streams);

	/* The statistics: what a statistics session writes (where the window session wrote,
	 * msprobe's dump.json naming its directory), with the trigger and without. */
	tw_set_aside(win, win_saved);
	cfg = tw_base_config(win, format);
	cfg.content = ADUMP_CONTENT_STATS;
	tw_run(&cfg, &p, &r);
	ck_assert_int_eq(r.destroy_ret, 0);
	ck_assert_uint_gt(tw_same_tree(win_saved, &stats_side, win, &all), 0);
	t_rmtree(win);

	p.bad_step = -1;
	cfg = tw_window_config(win, format, n);
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[p.steps - 1].persists, 0);
	ck_assert_uint_eq(tw_window_dirs(win), 0);
	ck_assert(!o.info[p.steps - 1].is_pending);
	t_rmtree(win_saved);
	tw_set_aside(win, win_saved);
	cfg = tw_base_config(win, format);
	cfg.content = ADUMP_CONTENT_STATS;
	tw_run(&cfg, &p, &r);
	ck_assert_uint_gt(tw_same_tree(win_saved, &all, win, &all), 0);

	tw_cleanup(root);
}

START_TEST(test_cann_window_equals_tensor_capture)
{
	equality(ADUMP_OUTPUT_CANN, false, false, 1);
}
END_TEST

START_TEST(test_cann_window_equals_tensor_capture_set_dir)
{
	equality(ADUMP_OUTPUT_CANN, true, false, 1);
}
END_TEST

START_TEST(test_msprobe_window_equals_tensor_capture)
{
	equality(ADUMP_OUTPUT_MSPROBE, false, false, 1);
}
END_TEST

START_TEST(test_msprobe_window_equals_tensor_capture_set_dir)
{
	equality(ADUMP_OUTPUT_MSPROBE, true, false, 1);
}
END_TEST

/* Zero copy: the window copies from the caller's memory as the workers write it. */
START_TEST(test_zero_copy_window_equals_tensor_capture)
{
	equality(ADUMP_OUTPUT_CANN, true, true, 1);
	equality(ADUMP_OUTPUT_MSPROBE, false, true, 1);
}
END_TEST

/* Two host streams (devices 0 and 1) dumping on two threads at once. */
START_TEST(test_two_streams_window_equals_tensor_capture)
{
	equality(ADUMP_OUTPUT_CANN, false, false, 2);
	equality(ADUMP_OUTPUT_CANN, true, false, 2);
	equality(ADUMP_OUTPUT_MSPROBE, true, false, 2);
}
END_TEST

/* msprobe's md5 summary: the statistics dump.json holds each tensor's CRC as the tensor
 * capture's does. */
START_TEST(test_msprobe_md5_window_equals_tensor_capture)
{
	tw_runs_summary = ADUMP_SUMMARY_MD5;
	equality(ADUMP_OUTPUT_MSPROBE, true, false, 1);
	tw_runs_summary = ADUMP_SUMMARY_STATISTICS;
}
END_TEST

/* A tensor handed to several dumps of a step under one stats key (a module's output that is
 * the next one's input): the window holds one copy, which the later dumps' entries share,
 * and writes each dump as the tensor capture does. A key that stays over steps (the same
 * bytes) shares nothing across steps: each step's first dump copies them again, the older
 * step's copy going with its step. */
START_TEST(test_keyed_window_equals_tensor_capture)
{
	static const enum tw_keyed modes[] = { TW_KEYED_STEP, TW_KEYED_CONSTANT };

	for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		tw_keyed = modes[m];
		equality(ADUMP_OUTPUT_CANN, false, false, 1);
		equality(ADUMP_OUTPUT_CANN, true, false, 2);
	}
	tw_keyed = TW_NOT_SHARED;
}
END_TEST

/* What the window holds: with the key, one copy of the shared tensor a step; without, one a
 * dump; a key over steps, one a step as well. */
START_TEST(test_keyed_tensors_take_the_window_room_once)
{
	static const enum tw_keyed modes[] = { TW_UNKEYED, TW_KEYED_STEP, TW_KEYED_CONSTANT };
	char *root = t_tmpdir("window_keyed");
	char win[4200];
	struct plan p = PLAN_INIT;
	struct adump_config cfg;
	struct outcome o[3];
	const uint64_t shared = SHARED_ELEMS * 4;

	snprintf(win, sizeof(win), "%s/win", root);
	for (unsigned m = 0; m < 3; m++) {
		tw_keyed = modes[m];
		cfg = tw_window_config(win, ADUMP_OUTPUT_CANN, 3);
		tw_run(&cfg, &p, &o[m]);
		ck_assert_int_eq(o[m].destroy_ret, 0);
		t_rmtree(win);
	}
	tw_keyed = TW_NOT_SHARED;
	for (unsigned k = 0; k < p.steps; k++) {
		unsigned held = o[0].info[k].held_steps;
		uint64_t saved = o[0].info[k].held_bytes - o[1].info[k].held_bytes;

		ck_assert_uint_eq(o[1].info[k].held_steps, held);
		ck_assert_uint_eq(o[1].info[k].held_dumps, o[0].info[k].held_dumps);
		ck_assert_uint_eq(o[2].info[k].held_bytes, o[1].info[k].held_bytes);
		/* Each entry of a keyed dump also lists its tensors' places (3 pointers, rounded
		 * up to the arena's 64 bytes). */
		ck_assert_uint_le(saved, held * (p.ops - 1) * shared);
		ck_assert_uint_ge(saved, held * ((p.ops - 1) * shared - p.ops * 64));
	}
	tw_cleanup(root);
}
END_TEST

/* One op with more newly keyed tensors than the stream keeps keys for, after a known one:
 * keeping theirs pushes the known key's record out while the op is taken, and the op's
 * dump and its window are whole all the same (the known tensor's place is not kept). */
START_TEST(test_keyed_op_wider_than_the_stream_keeps)
{
	enum { WIDE = ADUMP_HOST_STATS_REUSE + 2 };
	char *root = t_tmpdir("window_wide");
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 2);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	static float a[64];
	static struct adump_host_tensor t[WIDE + 1];
	uint64_t keys[WIDE + 1];
	struct adump_host_op op = ADUMP_HOST_OP_INIT;
	struct adump_window_info info;
	char dir[4200];
	size_t n;
	char **files;

	for (unsigned e = 0; e < 64; e++)
		a[e] = (float)e;
	for (unsigned i = 0; i <= WIDE; i++) {
		t[i] = (struct adump_host_tensor){ .data = a, .bytes = sizeof(a),
						   .dtype = ADUMP_DT_FLOAT, .dim_count = 1,
						   .dims = { 64 } };
		keys[i] = i < WIDE ? 100 + i : 5;       /* new ones, then the known one */
	}
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	op.op_type = "Concat";
	op.op_name = "known";
	op.inputs = &t[WIDE];
	op.input_count = 1;
	op.stats_keys = &keys[WIDE];
	op.timestamp_us = T0;
	ck_assert_int_eq(adump_host_dump_op(hs, &op, NULL), 0);
	op.op_name = "wide";
	op.inputs = t;
	op.input_count = WIDE + 1;
	op.stats_keys = keys;
	op.timestamp_us = T0 + 10;
	ck_assert_int_eq(adump_host_dump_op(hs, &op, NULL), 0);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	ck_assert_int_eq(adump_session_persist(s, "wide"), 0);
	ck_assert_int_eq(adump_session_step(s), 0);
	ck_assert_int_eq(adump_session_window(s, &info), 0);
	ck_assert_uint_eq(info.persists, 1);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	snprintf(dir, sizeof(dir), "%s/window-0/" TIME_DIR "/0", root);
	files = t_list_files(dir, &n);
	ck_assert_uint_eq(n, 2);
	t_free_list(files, n);
	tw_cleanup(root);
}
END_TEST

/* io auto: the window's large files are written with O_DIRECT, as the capture's are. */
START_TEST(test_io_auto_window_equals_tensor_capture)
{
	char *root = t_tmpdir("window_auto");
	char win[4200], saved[4200], wroot[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	struct filter w = { .lo = -1, .no_trigger = true }, held = { .lo = 1, .hi = 2 };

	tw_elems_mult = 64;                /* 384 KiB and more: past direct_min_bytes */
	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(saved, sizeof(saved), "%s/saved", root);
	p.ops = 2;
	p.steps = 3;
	p.bad_step = 2;
	p.bad_op = 1;
	p.bad_value = NAN;
	cfg = tw_window_config(win, ADUMP_OUTPUT_CANN, 2);
	cfg.io = ADUMP_IO_AUTO;
	cfg.chunk_bytes = 64u << 10;
	cfg.pool_bytes = 16u << 20;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[2].persists, 1);
	snprintf(wroot, sizeof(wroot), "%s/window-2", win);
	tw_set_aside(wroot, saved);
	cfg = tw_base_config(wroot, ADUMP_OUTPUT_CANN);
	cfg.io = ADUMP_IO_AUTO;
	cfg.chunk_bytes = 64u << 10;
	cfg.pool_bytes = 16u << 20;
	tw_run(&cfg, &p, &r);
	ck_assert_int_eq(r.destroy_ret, 0);
	ck_assert_uint_gt(r.stats.files_direct, 0);
	ck_assert_uint_eq(tw_same_tree(saved, &w, wroot, &held), 2 * p.ops);
	tw_elems_mult = 1;
	tw_cleanup(root);
}
END_TEST

/* ---- 1 on the simulated device ------------------------------------------------------------ */

#define DEV_OPS 3
#define DEV_STEPS 5
#define DEV_BAD 3
#define DEV_N 2
#define DEV_ELEMS 2500u

/* One capture of the device workload in a child process (so that both captures see the same
 * stream id, task ids, fake clock and device addresses). Exit status 0 when all went well. */
static int dev_child(const struct adump_config *cfg)
{
	struct adump_session *s = NULL;
	struct adump_dev *dev;
	struct adump_dev_stream *st;
	void *mem[DEV_OPS][3];
	float *host = malloc(DEV_ELEMS * 4);
	int ret;

	adump_testpoint_clock_set(1700000000000000ull);
	if (!host || adump_dev_open(0, &dev) < 0 || adump_dev_stream_create(dev, &st) < 0)
		return 10;
	for (unsigned i = 0; i < DEV_OPS; i++)
		for (unsigned j = 0; j < 3; j++)
			if (adump_dev_malloc(dev, DEV_ELEMS * 4, &mem[i][j]) < 0)
				return 11;
	if (adump_session_create(cfg, &s) < 0 || adump_session_attach(s, st) < 0)
		return 12;
	for (unsigned k = 0; k < DEV_STEPS; k++) {
		for (unsigned i = 0; i < DEV_OPS; i++) {
			struct adump_dev_tensor self = { .data = mem[i][0], .dtype = ADUMP_DT_FLOAT,
							 .format = ADUMP_FORMAT_ND, .dim_count = 1,
							 .dims = { DEV_ELEMS }, .bytes = DEV_ELEMS * 4 };
			struct adump_dev_tensor other = self, out = self;
			struct adump_dev_dump dump = { .op_type = "Add", .op_name = NULL,
						       .tensor_mask = ADUMP_DUMP_ALL };
			char name[32];

			other.data = mem[i][1];
			out.data = mem[i][2];
			for (unsigned e = 0; e < DEV_ELEMS; e++)
				host[e] = (float)((e * 5 + i * 11 + k * 3) % 97) / 48.0f - 1.0f;
			if (k == DEV_BAD && i == 1)
				host[7] = NAN;
			if (adump_dev_memcpy(dev, mem[i][0], DEV_ELEMS * 4, host, DEV_ELEMS * 4,
					     ADUMP_COPY_HOST_TO_DEVICE) < 0 ||
			    adump_dev_memcpy(dev, mem[i][1], DEV_ELEMS * 4, host, DEV_ELEMS * 4,
					     ADUMP_COPY_HOST_TO_DEVICE) < 0)
				return 13;
			snprintf(name, sizeof(name), "add%u", i);
			dump.op_name = name;
			if (adump_dev_launch_add(st, &self, &other, 1.0, &out, &dump) < 0)
				return 14;
		}
		if (adump_dev_stream_sync(st) < 0)
			return 15;
		ret = adump_session_step(s);
		if (ret < 0)
			return 16;
	}
	if (adump_session_detach(s, st) < 0)
		return 17;
	ret = adump_session_destroy(s);
	adump_dev_stream_destroy(st);
	for (unsigned i = 0; i < DEV_OPS; i++)
		for (unsigned j = 0; j < 3; j++)
			adump_dev_free(dev, mem[i][j]);
	adump_dev_close(dev);
	free(host);
	return ret < 0 ? 18 : 0;
}

static void in_child(const struct adump_config *cfg)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(dev_child(cfg));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status 0x%x",
		      status);
}

/* The task id in a CANN name <type>.<name>.<task>.<stream>.<timestamp>. */
static int dev_step_of(const char *rel)
{
	const char *base = strrchr(rel, '/');
	unsigned task, stream;
	unsigned long long ts;
	char type[16];
	unsigned op;

	base = base ? base + 1 : rel;
	if (sscanf(base, "%15[^.].add%u.%u.%u.%llu", type, &op, &task, &stream, &ts) != 5)
		return -1;
	return (int)(task / DEV_OPS);
}

START_TEST(test_device_window_equals_tensor_capture)
{
	char *root = t_tmpdir("window_dev");
	char win[4200], ref[4200], wroot[4200];
	struct adump_config cfg;
	size_t nw, nr, m = 0;
	char **lw, **lr;

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(ref, sizeof(ref), "%s/ref", root);
	cfg = tw_window_config(win, ADUMP_OUTPUT_CANN, DEV_N);
	in_child(&cfg);
	cfg = tw_base_config(ref, ADUMP_OUTPUT_CANN);
	in_child(&cfg);
	snprintf(wroot, sizeof(wroot), "%s/window-%u", win, DEV_BAD);
	ck_assert_uint_eq(tw_window_dirs(win), 1);
	lw = t_list_files(wroot, &nw);
	lr = t_list_files(ref, &nr);
	/* The window: the reference's files of steps DEV_BAD - DEV_N + 1..DEV_BAD, trigger.json */
	for (size_t i = 0; i < nr; i++) {
		int k = dev_step_of(lr[i]);
		char pa[4200], pb[4200];

		if (k < DEV_BAD - DEV_N + 1 || k > DEV_BAD)
			continue;
		ck_assert_uint_lt(m, nw);
		while (m < nw && strstr(lw[m], "trigger.json"))
			m++;
		ck_assert_msg(m < nw && !strcmp(lw[m], lr[i]), "window lacks %s", lr[i]);
		snprintf(pa, sizeof(pa), "%s/%s", wroot, lw[m]);
		snprintf(pb, sizeof(pb), "%s/%s", ref, lr[i]);
		ck_assert_msg(tw_same_bytes(pa, pb), "%s and %s differ", pa, pb);
		m++;
	}
	while (m < nw && strstr(lw[m], "trigger.json"))
		m++;
	ck_assert_msg(m == nw, "the window has more: %s", m < nw ? lw[m] : "");
	{
		char dir[4200];
		struct json_object *t;

		snprintf(dir, sizeof(dir), "%s/" TIME_DIR, wroot);
		t = tw_load_trigger(dir);
		ck_assert_str_eq(tw_str_member(t, "rule"), "nonfinite");
		ck_assert_str_eq(tw_str_member(t, "tensor"), "add1.input.0");
		tw_check_steps(t, DEV_BAD - DEV_N + 1, DEV_BAD);
		json_object_put(t);
	}
	t_free_list(lw, nw);
	t_free_list(lr, nr);
	tw_cleanup(root);
}
END_TEST

static Suite *window_equal_suite(void)
{
	Suite *s = suite_create("window_equal");
	TCase *eq = tcase_create("equality");

	tcase_set_timeout(eq, 120);
	tcase_add_test(eq, test_cann_window_equals_tensor_capture);
	tcase_add_test(eq, test_cann_window_equals_tensor_capture_set_dir);
	tcase_add_test(eq, test_msprobe_window_equals_tensor_capture);
	tcase_add_test(eq, test_msprobe_window_equals_tensor_capture_set_dir);
	tcase_add_test(eq, test_zero_copy_window_equals_tensor_capture);
	tcase_add_test(eq, test_msprobe_md5_window_equals_tensor_capture);
	tcase_add_test(eq, test_two_streams_window_equals_tensor_capture);
	tcase_add_test(eq, test_keyed_window_equals_tensor_capture);
	tcase_add_test(eq, test_keyed_tensors_take_the_window_room_once);
	tcase_add_test(eq, test_keyed_op_wider_than_the_stream_keeps);
	t_tcase_add_test_needing(eq, T_DIRECT, test_io_auto_window_equals_tensor_capture);
	tcase_add_test(eq, test_device_window_equals_tensor_capture);
	suite_add_tcase(s, eq);
	return s;
}

int main(void)
{
	return t_run_suite(window_equal_suite());
}
