/* SPDX-License-Identifier: Apache-2.0 */
/* Window mode's limits (issue 32): the persist limit and nothing written twice; old steps
 * evicted, a step larger than the window and a window of one chunk (window_full,
 * dumps_not_listed); a disk error and a refused dump while a window is written. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adump/adump.h"
#include "adump/host.h"
#include "capture_helpers.h"
#include "helpers.h"
#include "window_helpers.h"

/* ---- 5: the persist limit, nothing twice --------------------------------------------------- */

START_TEST(test_persist_limit)
{
	char *root = t_tmpdir("window_lim");
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 3);
	struct plan p = PLAN_INIT;
	struct outcome o;
	char w1[4200], w3[4200];

	/* Two triggers (a call at step 1, a NaN at step 3), one window allowed. */
	cfg.window_persists = 1;
	p.call_step = 1;
	p.call_reason = "first";
	p.bad_step = 3;
	p.bad_op = 0;
	p.bad_value = NAN;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[1].persists, 1);
	ck_assert_uint_eq(o.info[1].persists_skipped, 0);
	ck_assert_uint_eq(o.info[3].persists, 1);
	ck_assert_uint_eq(o.info[3].persists_skipped, 1);
	ck_assert(!o.info[3].is_pending);
	snprintf(w1, sizeof(w1), "%s/window-1", root);
	snprintf(w3, sizeof(w3), "%s/window-3", root);
	ck_assert(tw_exists(w1));
	ck_assert(!tw_exists(w3));
	ck_assert_uint_eq(tw_window_dirs(root), 1);
	tw_cleanup(root);
}
END_TEST

START_TEST(test_second_trigger_writes_only_new_steps)
{
	char *root = t_tmpdir("window_twice");
	char w1[4200], w2[4200];
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 4);
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct json_object *t;
	struct filter f = { .lo = -1, .no_trigger = true }, s34 = { .lo = 3, .hi = 4 };
	size_t n1, n2;
	char **l1, **l2;

	/* Triggers at step 2 (a call) and step 4 (a NaN): the second holds 3..4 only. */
	p.steps = 6;
	p.call_step = 2;
	p.call_reason = "one";
	p.bad_step = 4;
	p.bad_op = 0;
	p.bad_value = NAN;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[2].persists, 1);
	ck_assert_uint_eq(o.info[4].persists, 2);
	ck_assert_uint_eq(o.info[5].persists, 2);
	ck_assert_uint_eq(tw_window_dirs(root), 2);
	snprintf(w1, sizeof(w1), "%s/window-2", root);
	snprintf(w2, sizeof(w2), "%s/window-4", root);
	t = tw_trigger_of(root, 4);
	tw_check_steps(t, 3, 4);
	json_object_put(t);
	t = tw_trigger_of(root, 2);
	tw_check_steps(t, 0, 2);
	json_object_put(t);
	l1 = tw_list_kept(w1, &f, &n1);
	l2 = tw_list_kept(w2, &f, &n2);
	ck_assert_uint_eq(n1, 3 * p.ops);
	ck_assert_uint_eq(n2, 2 * p.ops);
	for (size_t i = 0; i < n2; i++) {
		ck_assert(tw_keep(&s34, l2[i]));
		for (size_t j = 0; j < n1; j++)
			ck_assert_str_ne(l1[j], l2[i]);
	}
	t_free_list(l1, n1);
	t_free_list(l2, n2);
	tw_cleanup(root);
}
END_TEST

#ifdef T_HAVE_TESTPOINTS
/* The disk fails while a window is written: that dump is a loss of the window, the step
 * reports the error, the rest of the window and every statistic are there, capture goes on. */
START_TEST(test_disk_error_while_persisting)
{
	char *root = t_tmpdir("window_enospc");
	char win[4200], win_saved[4200], wdir[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	struct filter all = { .lo = -1 }, stats_side = { .lo = -1, .no_windows = true },
		      f = { .lo = -1, .no_trigger = true };
	size_t n, tensors = 0, listed = 0;
	char **files;
	char *text, *line, *save;

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(win_saved, sizeof(win_saved), "%s/win_saved", root);
	p.steps = 5;
	p.bad_step = 3;
	p.bad_op = 0;
	p.bad_value = NAN;
	p.fault = "worker.open";
	p.fault_err = -ENOSPC;
	p.fault_nth = 2;
	p.fault_step = 3;
	cfg = tw_window_config(win, ADUMP_OUTPUT_CANN, 2);
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.step_ret[2], 0);
	ck_assert_int_eq(o.step_ret[3], -ENOSPC);
	ck_assert_int_eq(o.step_ret[4], 0);
	ck_assert_uint_eq(o.info[3].persists, 1);
	ck_assert_int_eq(o.destroy_ret, 0);
	snprintf(wdir, sizeof(wdir), "%s/window-3/" TIME_DIR, win);
	files = tw_list_kept(wdir, &f, &n);
	for (size_t i = 0; i < n; i++) {
		/* the failed one never opened: no .part, no .failed */
		ck_assert_msg(!strstr(files[i], ".part") && !strstr(files[i], ".failed"), "%s",
			      files[i]);
		if (strcmp(files[i], "adump-losses.jsonl"))
			tensors++;
	}
	t_free_list(files, n);
	ck_assert_uint_eq(tensors, 2 * p.ops - 1);
	text = t_slurp(wdir, "adump-losses.jsonl");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct json_object *l = json_tokener_parse(line), *c;

		ck_assert_ptr_nonnull(l);
		ck_assert(json_object_object_get_ex(l, "cause", &c));
		ck_assert_str_eq(json_object_get_string(c), "enospc");
		json_object_put(l);
		listed++;
	}
	free(text);
	ck_assert_uint_eq(listed, 2);           /* the failed dump's input and output */
	/* Every step's statistics, as a statistics session writes them. */
	tw_set_aside(win, win_saved);
	cfg = tw_base_config(win, ADUMP_OUTPUT_CANN);
	cfg.content = ADUMP_CONTENT_STATS;
	p.fault = NULL;
	p.fault_step = -1;
	tw_run(&cfg, &p, &r);
	ck_assert_uint_eq(tw_same_tree(win_saved, &stats_side, win, &all), p.steps * p.ops);
	tw_cleanup(root);
}
END_TEST
#endif

/* The lines of @dir/adump-losses.jsonl without their time, sorted. */
static char **loss_lines(const char *dir, size_t *count)
{
	char *text = t_slurp(dir, "adump-losses.jsonl"), *line, *save;
	char **lines = calloc(64, sizeof(*lines));
	size_t n = 0;

	ck_assert_ptr_nonnull(lines);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct json_object *l = json_tokener_parse(line);

		ck_assert_msg(l != NULL && n < 64, "%s", line);
		json_object_object_del(l, "time");
		lines[n++] = strdup(json_object_to_json_string_ext(l, JSON_C_TO_STRING_PLAIN));
		json_object_put(l);
	}
	free(text);
	qsort(lines, n, sizeof(*lines), tw_cmp_text);
	*count = n;
	return lines;
}

/* A dump its producer's check refused (zero copy, memory changed) in a window: the window's
 * loss log lists it as the tensor capture's does (cause changed_before_written), the rest of
 * the window is whole. The window holds a zero-copy dump by reference and checks it only
 * when it writes it: its statistics, taken at hand-over, are written as any. */
START_TEST(test_rejected_dump_in_window)
{
	char *root = t_tmpdir("window_reject");
	char win[4200], saved[4200], wroot[4200], wdir[4200], rdir[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	struct filter w = { .lo = -1, .no_trigger = true }, held = { .lo = 2, .hi = 3 };
	size_t nw, nr;
	char **lw, **lr;

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(saved, sizeof(saved), "%s/saved", root);
	p.steps = 4;
	p.bad_step = 3;
	p.bad_op = 3;
	p.bad_value = NAN;
	p.reject_step = 3;
	p.reject_op = 1;
	cfg = tw_window_config(win, ADUMP_OUTPUT_CANN, 2);
	tw_run(&cfg, &p, &o);
	ck_assert_uint_eq(o.info[3].persists, 1);
	snprintf(wroot, sizeof(wroot), "%s/window-3", win);
	tw_set_aside(wroot, saved);
	cfg = tw_base_config(wroot, ADUMP_OUTPUT_CANN);
	tw_run(&cfg, &p, &r);
	ck_assert_uint_eq(r.stats.files_failed, 1);
	/* The same loss lines (the same file, op, tensors, cause), the same whole dumps. */
	snprintf(wdir, sizeof(wdir), "%s/" TIME_DIR, saved);
	snprintf(rdir, sizeof(rdir), "%s/" TIME_DIR, wroot);
	lw = loss_lines(wdir, &nw);
	lr = loss_lines(rdir, &nr);
	ck_assert_uint_eq(nw, 2);
	ck_assert_uint_eq(nw, nr);
	for (size_t i = 0; i < nw; i++) {
		ck_assert_str_eq(lw[i], lr[i]);
		ck_assert(strstr(lw[i], "\"cause\":\"changed_before_written\""));
	}
	t_free_list(lw, nw);
	t_free_list(lr, nr);
	/* The refused dump: the tensor capture leaves <name>.failed, the window nothing. */
	held.no_trigger = true;
	{
		size_t n, m = 0;
		char **files = tw_list_kept(wroot, &held, &n);

		for (size_t i = 0; i < n; i++) {
			char pa[4200], pb[4200];

			if (strstr(files[i], ".failed") || strstr(files[i], "adump-losses"))
				continue;
			snprintf(pa, sizeof(pa), "%s/%s", saved, files[i]);
			snprintf(pb, sizeof(pb), "%s/%s", wroot, files[i]);
			ck_assert_msg(tw_same_bytes(pa, pb), "%s and %s differ", pa, pb);
			m++;
		}
		ck_assert_uint_eq(m, 2 * p.ops - 1);
		t_free_list(files, n);
		files = tw_list_kept(saved, &w, &n);
		ck_assert_uint_eq(n, 2 * p.ops - 1 + 1);        /* and the loss log */
		t_free_list(files, n);
	}
	/* The statistics: as a statistics session writes them, every dump's, and no loss. */
	{
		char stats[4200];
		struct filter all = { .lo = -1 }, no_windows = { .lo = -1, .no_windows = true };

		snprintf(stats, sizeof(stats), "%s/stats", root);
		tw_set_aside(win, stats);
		cfg = tw_base_config(win, ADUMP_OUTPUT_CANN);
		cfg.content = ADUMP_CONTENT_STATS;
		p.reject_step = -1;             /* nothing refused: the statistics are the same */
		tw_run(&cfg, &p, &r);
		snprintf(wdir, sizeof(wdir), "%s/" TIME_DIR "/adump-losses.jsonl", stats);
		snprintf(rdir, sizeof(rdir), "%s/" TIME_DIR "/adump-losses.jsonl", win);
		ck_assert(!tw_exists(wdir));
		ck_assert(!tw_exists(rdir));
		ck_assert_uint_eq(tw_same_tree(stats, &no_windows, win, &all), p.steps * p.ops);
	}
	tw_cleanup(root);
}
END_TEST

/* A window of one chunk and steps of large dumps: only the descriptions of some fit (stubs,
 * listed as window_full), the rest counted in trigger.json's dumps_not_listed, for the steps
 * the window holds only; every statistic is still written. Zero copy: what the window does
 * not hold is released at once, each dump once. */
static void one_chunk(bool zero_copy)
{
	char *root = t_tmpdir("window_tiny");
	char wdir[4200], sdir[4200];
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 2);
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct json_object *t;
	size_t listed = 0, stubs;
	uint64_t unlisted;
	char *text, *line, *save;

	cfg.window_bytes = CHUNK;
	p.ops = 8;
	p.steps = 4;
	p.bad_step = 3;
	p.bad_op = 7;
	p.bad_value = NAN;
	p.zero_copy = zero_copy;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	for (unsigned k = 0; k < p.steps; k++) {
		ck_assert_uint_eq(o.info[k].lost_dumps, (k + 1) * p.ops);
		ck_assert_uint_le(o.info[k].held_bytes, CHUNK);
		ck_assert_uint_eq(o.released[k], zero_copy ? (k + 1) * p.ops : 0);
	}
	ck_assert_uint_eq(o.released_all, zero_copy ? p.steps * p.ops : 0);
	snprintf(wdir, sizeof(wdir), "%s/window-3/" TIME_DIR, root);
	t = tw_load_trigger(wdir);
	tw_check_steps(t, 3, 3);
	unlisted = (uint64_t)json_object_get_int64(tw_member(t, "dumps_not_listed"));
	json_object_put(t);
	text = t_slurp(wdir, "adump-losses.jsonl");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		ck_assert_msg(strstr(line, "\"cause\":\"window_full\"") &&
			      strstr(line, ".3.forward\""), "%s", line);
		listed++;
	}
	free(text);
	ck_assert_uint_eq(listed % 2, 0);
	stubs = listed / 2;
	ck_assert_uint_gt(stubs, 0);
	ck_assert_uint_lt(stubs, p.ops);
	/* The step's dumps: each listed, or counted; none of another step. */
	ck_assert_uint_eq(stubs + unlisted, p.ops);
	snprintf(sdir, sizeof(sdir), "%s/" TIME_DIR, root);
	ck_assert_uint_eq(t_count_files(sdir, ".csv"), p.steps * p.ops);
	tw_cleanup(root);
}

START_TEST(test_window_of_one_chunk)
{
	one_chunk(false);
	one_chunk(true);
}
END_TEST

/* Step @k's @n dumps, op<k>_<i>, each of one 4 KiB float output (a NaN in dump @nan_at's,
 * none for -1), synced. */
static void step_ops(struct adump_host_stream *hs, unsigned k, unsigned n, int nan_at)
{
	static float data[1024];

	for (unsigned i = 0; i < n; i++) {
		struct adump_host_tensor ti = { .data = data, .bytes = sizeof(data),
						.dtype = ADUMP_DT_FLOAT, .dim_count = 1,
						.dims = { 1024 } };
		struct adump_host_op op = ADUMP_HOST_OP_INIT;
		char name[32];

		data[7] = (int)i == nan_at ? NAN : 1.0f;
		snprintf(name, sizeof(name), "op%u_%u", k, i);
		op.op_type = "Add";
		op.op_name = name;
		op.outputs = &ti;
		op.output_count = 1;
		op.timestamp_us = T0 + k * 1000ull + i;
		ck_assert_int_eq(adump_host_dump_op(hs, &op, NULL), 0);
	}
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
}

/* A step larger than the one two before it, with window_bytes far from reached: the window
 * wraps to its first pages early only where the step has room there, so the steps it holds
 * stay (it once wrapped whenever the next dump fitted, and the rest of a larger step ran into
 * the held step after it and dropped it). */
START_TEST(test_larger_step_keeps_the_held_ones)
{
	char *root = t_tmpdir("window_grow");
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 2);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs;
	struct adump_window_info info;
	struct json_object *t;

	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (unsigned k = 0; k < 4; k++) {
		/* steps of 4 dumps, then one of 6 with a NaN in its last */
		step_ops(hs, k, k < 3 ? 4 : 6, k == 3 ? 5 : -1);
		if (k == 3) {
			ck_assert_int_eq(adump_session_window(s, &info), 0);
			ck_assert_uint_eq(info.held_steps, 2);
			ck_assert_uint_eq(info.held_dumps, 4 + 6);
		}
		ck_assert_int_eq(adump_session_step(s), 0);
	}
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	t = tw_trigger_of(root, 3);
	tw_check_steps(t, 2, 3);
	json_object_put(t);
	tw_cleanup(root);
}
END_TEST

/* Short first steps, then one ten times larger: the window, far from window_bytes, keeps the
 * step before it and loses nothing (it once wrapped to its first pages after the short
 * steps, left the head on the pad it put at the arena's end, and so counted the whole
 * arena as held: the large step's dumps past the short steps' pages were lost as
 * window_full, and the step before it dropped). */
START_TEST(test_growing_step_after_short_ones)
{
	char *root = t_tmpdir("window_growing");
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 2);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs;
	struct adump_window_info info;

	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (unsigned k = 0; k < 6; k++) {
		unsigned n = k < 3 ? 1 : 10;

		step_ops(hs, k, n, -1);
		ck_assert_int_eq(adump_session_window(s, &info), 0);
		ck_assert_uint_eq(info.lost_dumps, 0);
		ck_assert_uint_eq(info.held_steps, k ? 2 : 1);
		ck_assert_uint_eq(info.held_dumps, n + (k == 0 ? 0 : k <= 3 ? 1 : 10));
		ck_assert_int_eq(adump_session_step(s), 0);
	}
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	tw_cleanup(root);
}
END_TEST

/* Zero copy: the window holds the caller's memory by reference, and lets it go (release_fn)
 * only as its step leaves the window (window_steps 3: step k's end drops step k - 2), or
 * once the window is written (every step it held), or with the session. */
START_TEST(test_zero_copy_held_until_its_step_goes)
{
	char *root = t_tmpdir("window_zcheld");
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 3);
	struct plan p = PLAN_INIT;
	struct outcome o;
	const unsigned want[] = { 0, 0, 1, 2, 5, 5 };  /* steps let go by each step's end */

	p.zero_copy = true;
	p.bad_step = 4;
	p.bad_op = 2;
	p.bad_value = NAN;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	for (unsigned k = 0; k < p.steps; k++) {
		ck_assert_int_eq(o.step_ret[k], 0);
		ck_assert_msg(o.released[k] == want[k] * p.ops, "step %u: %u released", k,
			      o.released[k]);
		/* What it holds by reference is counted as held: the room is taken. */
		if (k != 4)
			ck_assert_uint_ge(o.info[k].held_bytes, tw_elems_of(0) * 8);
	}
	ck_assert_uint_eq(o.info[4].persists, 1);
	ck_assert_uint_eq(o.released_all, p.steps * p.ops);
	ck_assert_uint_eq(o.stats.files_failed, 0);
	tw_cleanup(root);
}
END_TEST

/* ---- 6: memory ------------------------------------------------------------------------------- */

START_TEST(test_old_steps_evicted)
{
	char *root = t_tmpdir("window_evict");
	char win[4200], ref[4200], wroot[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	uint64_t step_bytes = 0;
	struct json_object *t;
	struct json_object *steps;
	unsigned lo;

	for (unsigned i = 0; i < p.ops; i++)
		step_bytes += 2 * tw_elems_of(i) * 4;
	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(ref, sizeof(ref), "%s/ref", root);
	cfg = tw_window_config(win, ADUMP_OUTPUT_CANN, 8);
	/* Room for about two and a half steps of eight. */
	cfg.window_bytes = step_bytes * 5 / 2;
	p.steps = 7;
	p.bad_step = 6;
	p.bad_op = 3;
	p.bad_value = NAN;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	for (unsigned k = 0; k < 6; k++) {
		ck_assert_uint_le(o.info[k].held_bytes, cfg.window_bytes);
		ck_assert_uint_le(o.info[k].held_steps, 3);
		ck_assert_uint_eq(o.info[k].lost_dumps, 0);
	}
	ck_assert_uint_ge(o.info[5].held_steps, 2);
	snprintf(wroot, sizeof(wroot), "%s/window-6", win);
	t = tw_trigger_of(win, 6);
	steps = tw_member(t, "steps");
	ck_assert_uint_ge(json_object_array_length(steps), 2);
	ck_assert_uint_le(json_object_array_length(steps), 3);
	lo = 7 - (unsigned)json_object_array_length(steps);
	tw_check_steps(t, lo, 6);
	json_object_put(t);
	tw_set_aside(wroot, ref);
	cfg = tw_base_config(wroot, ADUMP_OUTPUT_CANN);
	tw_run(&cfg, &p, &r);
	{
		struct filter w = { .lo = -1, .no_trigger = true }, held = { .lo = (int)lo, .hi = 6 };

		ck_assert_uint_eq(tw_same_tree(ref, &w, wroot, &held), (7 - lo) * p.ops);
	}
	tw_cleanup(root);
}
END_TEST

START_TEST(test_step_larger_than_window)
{
	char *root = t_tmpdir("window_full");
	char win[4200], ref[4200], loss[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	uint64_t step_bytes = 0;
	size_t n, listed = 0, held;
	char **files;
	char *text, *line, *save;

	p.ops = 6;
	for (unsigned i = 0; i < p.ops; i++)
		step_bytes += 2 * tw_elems_of(i) * 4;
	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(ref, sizeof(ref), "%s/ref", root);
	cfg = tw_window_config(win, ADUMP_OUTPUT_CANN, 2);
	cfg.window_bytes = step_bytes / 2;
	p.steps = 2;
	p.bad_step = 1;
	p.bad_op = 0;
	p.bad_value = NAN;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_gt(o.info[1].lost_dumps, 0);
	ck_assert_uint_lt(o.info[1].lost_dumps, p.ops * 2);
	/* What fits is whole and the reference's bytes; the rest is in the loss log. */
	{
		char dir[4200];
		struct filter w = { .lo = -1, .no_trigger = true };
		size_t i;

		snprintf(dir, sizeof(dir), "%s/window-1", win);
		tw_set_aside(dir, ref);
		cfg = tw_base_config(dir, ADUMP_OUTPUT_CANN);
		tw_run(&cfg, &p, &r);
		files = tw_list_kept(ref, &w, &n);
		held = 0;
		for (i = 0; i < n; i++) {
			char pa[4200], pb[4200];

			if (strstr(files[i], "adump-losses.jsonl"))
				continue;
			snprintf(pa, sizeof(pa), "%s/%s", ref, files[i]);
			snprintf(pb, sizeof(pb), "%s/%s", dir, files[i]);
			ck_assert_msg(tw_same_bytes(pa, pb), "%s and %s differ", pa, pb);
			held++;
		}
		t_free_list(files, n);
		ck_assert_uint_gt(held, 0);
		snprintf(loss, sizeof(loss), "%s/" TIME_DIR, ref);
	}
	text = t_slurp(loss, "adump-losses.jsonl");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct json_object *l = json_tokener_parse(line), *c;

		ck_assert_ptr_nonnull(l);
		ck_assert(json_object_object_get_ex(l, "cause", &c));
		ck_assert_str_eq(json_object_get_string(c), "window_full");
		json_object_put(l);
		listed++;
	}
	free(text);
	/* Each lost dump lists its two tensors; the window holds step 1 alone (step 0 made
	 * room), every dump of it held whole or listed. */
	{
		struct json_object *t = tw_load_trigger(loss);

		tw_check_steps(t, 1, 1);
		json_object_put(t);
	}
	ck_assert_uint_eq(listed, 2 * (o.info[1].lost_dumps - o.info[0].lost_dumps));
	ck_assert_uint_eq(held + (o.info[1].lost_dumps - o.info[0].lost_dumps), p.ops);
	tw_cleanup(root);
}
END_TEST

/* A dump held at hand-over whose file fails before it begins (a name longer than a path
 * holds) is failed in the window too: it does not stay filling at the window's head and keep
 * every later step from evicting the ones before (they would all be window_full). */
START_TEST(test_failed_file_held_at_handover)
{
	char *root = t_tmpdir("window_failbegin");
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s;
	struct adump_host_stream *hs;
	struct adump_window_info wi;
	static float x[64 << 10];                      /* 256 KiB */
	struct adump_host_tensor t = { .data = x, .bytes = sizeof(x), .dtype = ADUMP_DT_FLOAT,
				       .format = ADUMP_FORMAT_ND, .dim_count = 1,
				       .dims = { 64 << 10 } };
	char *long_name = malloc(5001);

	ck_assert_ptr_nonnull(long_name);
	memset(long_name, 'n', 5000);
	long_name[5000] = '\0';
	cfg.dump_path = root;
	cfg.time_dir = "run";
	cfg.chunk_bytes = 256u << 10;
	cfg.window_steps = 1;
	cfg.window_bytes = 4u << 20;                   /* 16 dumps, with their descriptions */
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	ck_assert_int_eq(adump_host_dump(hs, "Add", long_name, &t, 1, NULL, 0), 0);
	for (unsigned step = 0; step < 6; step++) {
		for (unsigned k = 0; k < 8; k++)
			ck_assert_int_eq(adump_host_dump(hs, "Add", "op", &t, 1, NULL, 0), 0);
		adump_session_step(s);
	}
	ck_assert_int_eq(adump_session_window(s, &wi), 0);
	ck_assert_uint_eq(wi.lost_dumps, 0);
	ck_assert_uint_eq(adump_host_stream_close(hs), 0);
	adump_session_destroy(s);
	free(long_name);
	tw_cleanup(root);
}
END_TEST

static Suite *window_limits_suite(void)
{
	Suite *s = suite_create("window_limits");
	TCase *lim = tcase_create("limits");
	TCase *mem = tcase_create("memory");

	tcase_set_timeout(lim, 120);
	tcase_add_test(lim, test_persist_limit);
	tcase_add_test(lim, test_second_trigger_writes_only_new_steps);
	suite_add_tcase(s, lim);
	tcase_set_timeout(mem, 120);
	tcase_add_test(mem, test_old_steps_evicted);
	tcase_add_test(mem, test_step_larger_than_window);
#ifdef T_HAVE_TESTPOINTS
	tcase_add_test(mem, test_disk_error_while_persisting);
#else
	printf("test_disk_error_while_persisting: skipped: built without testpoints\n");
#endif
	tcase_add_test(mem, test_rejected_dump_in_window);
	tcase_add_test(mem, test_window_of_one_chunk);
	tcase_add_test(mem, test_zero_copy_held_until_its_step_goes);
	tcase_add_test(mem, test_larger_step_keeps_the_held_ones);
	tcase_add_test(mem, test_growing_step_after_short_ones);
	tcase_add_test(mem, test_failed_file_held_at_handover);
	suite_add_tcase(s, mem);
	return s;
}

int main(void)
{
	return t_run_suite(window_limits_suite());
}
