/* SPDX-License-Identifier: Apache-2.0 */
/* Window mode's signal trigger (issue 32): SIGUSR1 mid-step (the disposition before comes
 * back; a handler of the program's own refused), while a file is written, with two sessions,
 * sessions made on two threads, a storm of signals and persist calls from another thread;
 * three windows of one step, each in a directory of its own. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adump/adump.h"
#include "adump/host.h"
#include "capture_helpers.h"
#include "helpers.h"
#include "window_helpers.h"

/* ---- 4: the signal trigger ------------------------------------------------------------- */

START_TEST(test_trigger_signal)
{
	char *root = t_tmpdir("window_sig");
	char ref[4200], win[4200], wroot[4200], dir[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	struct sigaction sa, now;
	struct adump_session *s = NULL;
	struct json_object *t;
	struct filter window = { .lo = -1, .no_trigger = true };
	size_t n;
	char **files;

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(ref, sizeof(ref), "%s/ref", root);
	/* The disposition before (ignored) comes back after the session. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cfg = tw_window_config(win, ADUMP_OUTPUT_CANN, 2);
	cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
	p.steps = 5;
	p.signal_step = 3;
	p.signal_op = 1;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &now), 0);
	ck_assert(now.sa_handler == SIG_IGN);
	/* Mid-step: step 2 and step 3's ops 0..1, the window not ended. */
	ck_assert_uint_eq(o.signal_info.persists, 1);
	ck_assert_uint_eq(o.signal_info.step, 3);
	ck_assert_uint_eq(o.info[4].persists, 1);
	snprintf(wroot, sizeof(wroot), "%s/window-3", win);
	snprintf(dir, sizeof(dir), "%s/" TIME_DIR, wroot);
	t = tw_load_trigger(dir);
	ck_assert_str_eq(tw_str_member(t, "rule"), "signal");
	ck_assert_int_eq(json_object_get_int64(tw_member(t, "step")), 3);
	tw_check_steps(t, 2, 3);
	json_object_put(t);
	files = t_list_files(dir, &n);
	ck_assert_uint_eq(n, p.ops + 2 + 1);
	t_free_list(files, n);
	/* The same bytes as the tensor capture of those dumps, written where the window was. */
	tw_set_aside(wroot, ref);
	cfg = tw_base_config(wroot, ADUMP_OUTPUT_CANN);
	p.signal_step = -1;
	tw_run(&cfg, &p, &r);
	ck_assert_uint_eq(tw_same_in(ref, &window, wroot), p.ops + 2);

	/* A handler of the program's own: refused, and left in place. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = (void (*)(int))abort;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cfg = tw_window_config(win, ADUMP_OUTPUT_CANN, 2);
	cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
	ck_assert_int_eq(adump_session_create(&cfg, &s), -ADUMP_ERR_STATE);
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &now), 0);
	ck_assert(now.sa_handler == (void (*)(int))abort);
	sa.sa_handler = SIG_DFL;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	tw_cleanup(root);
}
END_TEST

/* A dump whose file is still being written when SIGUSR1 arrives (its check_fn holds it): the
 * signal's window leaves it out, the next window has it, and nothing is written twice. The
 * held dump is zero copy, which a window holds by reference and checks only when it writes
 * it: the testpoint sends it through the workers instead (as a window whose workers need
 * the bytes, msprobe's MD5 summary, does), whose check holds its file open. */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static int hold_state;                  /* 1: the check is waiting; 2: let it go */

static int hold_check(void *user, uint32_t task_id)
{
	(void)user;
	(void)task_id;
	pthread_mutex_lock(&hold_lock);
	hold_state = 1;
	pthread_cond_broadcast(&hold_cond);
	while (hold_state != 2)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
	return 0;
}

static void dump_one(struct adump_host_stream *hs, unsigned step, unsigned op, bool is_held,
		     float bad)
{
	static float data[4][1000];
	struct adump_host_tensor ti = { .data = data[op], .bytes = sizeof(data[op]),
					.dtype = ADUMP_DT_FLOAT, .dim_count = 1, .dims = { 1000 } };
	struct adump_host_op o = ADUMP_HOST_OP_INIT;
	char name[32];

	for (unsigned e = 0; e < 1000; e++)
		data[op][e] = (float)(e % 17) + (float)step;
	data[op][3] = bad;
	snprintf(name, sizeof(name), "op%u_%u", op, step);
	o.op_type = "Mul";
	o.op_name = name;
	o.outputs = &ti;
	o.output_count = 1;
	o.timestamp_us = T0 + step * 1000ull + op * 10ull;
	if (is_held) {
		o.release_fn = tw_released;
		o.check_fn = hold_check;
	}
	ck_assert_int_eq(adump_host_dump_op(hs, &o, NULL), 0);
}

START_TEST(test_signal_while_a_file_is_written)
{
	char *root = t_tmpdir("window_sigfill");
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 4);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs;
	struct adump_window_info info;
	struct filter f = { .lo = -1, .no_trigger = true };
	struct json_object *t;
	char w1[4200], w2[4200];
	size_t n1, n2;
	char **l1, **l2;

	cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (unsigned i = 0; i < 4; i++)
		dump_one(hs, 0, i, false, 1);
	ck_assert_int_eq(adump_session_step(s), 0);
	dump_one(hs, 1, 0, false, 1);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	hold_state = 0;
	adump_testpoint_arm("host.window_handover", -EIO, 1, 0);
	dump_one(hs, 1, 1, true, 1);
	pthread_mutex_lock(&hold_lock);
	while (hold_state != 1)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
	ck_assert_int_eq(raise(SIGUSR1), 0);
	tw_wait_persists(s, 1, &info);
	/* Written: step 0 and op 0 of step 1. Held: op 1, still coming in. */
	ck_assert_uint_eq(info.held_dumps, 1);
	ck_assert_uint_eq(info.held_steps, 1);
	pthread_mutex_lock(&hold_lock);
	hold_state = 2;
	pthread_cond_broadcast(&hold_cond);
	pthread_mutex_unlock(&hold_lock);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	dump_one(hs, 1, 2, false, NAN);
	ck_assert_int_eq(adump_session_step(s), 0);
	ck_assert_int_eq(adump_session_window(s, &info), 0);
	ck_assert_uint_eq(info.persists, 2);
	/* The window is empty again: later steps hold only what came after. */
	dump_one(hs, 2, 0, false, 1);
	ck_assert_int_eq(adump_session_step(s), 0);
	ck_assert_int_eq(adump_session_window(s, &info), 0);
	ck_assert_uint_eq(info.held_dumps, 1);
	ck_assert_uint_eq(info.held_steps, 1);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);

	/* window-1: step 0 and op 0 of step 1; window-1.1: ops 1 and 2 of step 1. */
	snprintf(w1, sizeof(w1), "%s/window-1", root);
	snprintf(w2, sizeof(w2), "%s/window-1.1", root);
	l1 = tw_list_kept(w1, &f, &n1);
	l2 = tw_list_kept(w2, &f, &n2);
	ck_assert_uint_eq(n1, 5);
	ck_assert_uint_eq(n2, 2);
	ck_assert(strstr(l2[0], "Mul.op1_1."));
	ck_assert(strstr(l2[1], "Mul.op2_1."));
	for (size_t i = 0; i < n2; i++)
		for (size_t j = 0; j < n1; j++)
			ck_assert_str_ne(l1[j], l2[i]);
	t_free_list(l1, n1);
	t_free_list(l2, n2);
	snprintf(w1, sizeof(w1), "%s/window-1/" TIME_DIR, root);
	t = tw_load_trigger(w1);
	ck_assert_str_eq(tw_str_member(t, "rule"), "signal");
	tw_check_steps(t, 0, 1);
	json_object_put(t);
	snprintf(w2, sizeof(w2), "%s/window-1.1/" TIME_DIR, root);
	t = tw_load_trigger(w2);
	ck_assert_str_eq(tw_str_member(t, "rule"), "nonfinite");
	ck_assert_str_eq(tw_str_member(t, "tensor"), "op2_1.output.0");
	tw_check_steps(t, 1, 1);
	json_object_put(t);
	tw_cleanup(root);
}
END_TEST

/* Two sessions take SIGUSR1 together: both persist; the handler stays while one is left
 * and goes back to the default after the last; a later session installs it again. */
START_TEST(test_signal_two_sessions)
{
	char *root = t_tmpdir("window_sig2");
	struct adump_session *s[3] = { NULL };
	struct adump_host_stream *hs[3];
	struct adump_window_info info;
	struct sigaction now;
	char dir[4200];

	for (unsigned i = 0; i < 2; i++) {
		struct adump_config cfg;

		snprintf(dir, sizeof(dir), "%s/s%u", root, i);
		cfg = tw_window_config(dir, ADUMP_OUTPUT_CANN, 2);
		cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
		ck_assert_int_eq(adump_session_create(&cfg, &s[i]), 0);
		ck_assert_int_eq(adump_host_stream_open(s[i], NULL, &hs[i]), 0);
		dump_one(hs[i], 0, i, false, 1);
		ck_assert_int_eq(adump_host_stream_sync(hs[i]), 0);
	}
	ck_assert_int_eq(raise(SIGUSR1), 0);
	tw_wait_persists(s[0], 1, &info);
	tw_wait_persists(s[1], 1, &info);
	ck_assert_int_eq(adump_host_stream_close(hs[0]), 0);
	ck_assert_int_eq(adump_session_destroy(s[0]), 0);
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &now), 0);
	ck_assert(now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN);
	dump_one(hs[1], 0, 3, false, 1);
	ck_assert_int_eq(adump_host_stream_sync(hs[1]), 0);
	ck_assert_int_eq(raise(SIGUSR1), 0);
	tw_wait_persists(s[1], 2, &info);
	ck_assert_int_eq(adump_host_stream_close(hs[1]), 0);
	ck_assert_int_eq(adump_session_destroy(s[1]), 0);
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &now), 0);
	ck_assert(now.sa_handler == SIG_DFL);
	{
		struct adump_config cfg;

		snprintf(dir, sizeof(dir), "%s/s2", root);
		cfg = tw_window_config(dir, ADUMP_OUTPUT_CANN, 2);
		cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
		ck_assert_int_eq(adump_session_create(&cfg, &s[2]), 0);
		ck_assert_int_eq(adump_host_stream_open(s[2], NULL, &hs[2]), 0);
		dump_one(hs[2], 0, 2, false, 1);
		ck_assert_int_eq(adump_host_stream_sync(hs[2]), 0);
		ck_assert_int_eq(raise(SIGUSR1), 0);
		tw_wait_persists(s[2], 1, &info);
		ck_assert_int_eq(adump_host_stream_close(hs[2]), 0);
		ck_assert_int_eq(adump_session_destroy(s[2]), 0);
	}
	/* Each window holds its own session's dump(s). */
	snprintf(dir, sizeof(dir), "%s/s0/window-0/" TIME_DIR "/0", root);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	snprintf(dir, sizeof(dir), "%s/s1/window-0/" TIME_DIR "/0", root);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	snprintf(dir, sizeof(dir), "%s/s1/window-0.1/" TIME_DIR "/0", root);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	snprintf(dir, sizeof(dir), "%s/s2/window-0/" TIME_DIR "/0", root);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	tw_cleanup(root);
}
END_TEST

/* Sessions taking SIGUSR1 made and destroyed on two threads at once: the handler's thread
 * and pipe are set up and torn down under one lock, never one thread's over another's. */
static char *churn_root;

static void *churn(void *arg)
{
	uintptr_t id = (uintptr_t)arg;

	for (unsigned i = 0; i < 30; i++) {
		struct adump_config cfg;
		struct adump_session *s = NULL;
		char dir[4200];

		snprintf(dir, sizeof(dir), "%s/t%u_%u", churn_root, (unsigned)id, i);
		cfg = tw_window_config(dir, ADUMP_OUTPUT_CANN, 1);
		cfg.worker_count = 1;
		cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
		if (adump_session_create(&cfg, &s) < 0 || adump_session_destroy(s) < 0)
			return (void *)1;
	}
	return NULL;
}

START_TEST(test_signal_sessions_on_two_threads)
{
	pthread_t th[2];
	void *ret[2];
	struct sigaction now;

	churn_root = t_tmpdir("window_churn");
	for (uintptr_t i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, churn, (void *)i), 0);
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_join(th[i], &ret[i]), 0);
		ck_assert_ptr_null(ret[i]);
	}
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &now), 0);
	ck_assert(now.sa_handler == SIG_DFL);
	tw_cleanup(churn_root);
}
END_TEST

/* SIGUSR1 and persist calls from another thread all along a run, the steps persisting too:
 * every window's files are whole and the tensor capture's, none is written twice, and the
 * step with the NaN is in one of them. */
static void signal_storm(enum adump_output_format format, bool set_dir, unsigned streams)
{
	char *root = t_tmpdir("window_storm");
	char win[4200], ref[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	struct filter f = { .lo = -1, .no_trigger = true, .no_losses = true };
	char **seen = NULL;
	size_t seen_count = 0, bad_files = 0;
	DIR *d;
	struct dirent *e;

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(ref, sizeof(ref), "%s/ref", root);
	p.steps = 12;
	p.bad_step = 8;
	p.bad_op = 2;
	p.bad_value = NAN;
	p.signal_storm = true;
	p.set_dir = set_dir;
	p.streams = streams;
	cfg = tw_window_config(win, format, 3);
	cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
	cfg.window_persists = 100000;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.last.persists_skipped, 0);
	/* A directory each, the windows of one step too (window-<step>.<n>); signals still in
	 * the pipe at the end may have written more. */
	ck_assert_uint_gt(o.last.persists, 3);
	ck_assert_uint_ge(tw_window_dirs(win), o.last.persists);
	p.signal_storm = false;
	cfg = tw_base_config(ref, format);
	tw_run(&cfg, &p, &r);
	d = opendir(win);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char dir[4200];
		size_t n;
		char **files;

		if (strncmp(e->d_name, "window-", 7))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", win, e->d_name);
		files = tw_list_kept(dir, &f, &n);
		seen = realloc(seen, (seen_count + n) * sizeof(*seen));
		for (size_t i = 0; i < n; i++) {
			char pa[4200], pb[4200];

			snprintf(pa, sizeof(pa), "%s/%s", dir, files[i]);
			snprintf(pb, sizeof(pb), "%s/%s", ref, files[i]);
			ck_assert_msg(tw_same_bytes(pa, pb), "%s and %s differ", pa, pb);
			for (size_t j = 0; j < seen_count; j++)
				ck_assert_msg(strcmp(seen[j], files[i]), "%s twice", files[i]);
			if (tw_step_of(files[i]) == p.bad_step)
				bad_files++;
			seen[seen_count++] = files[i];
		}
		free(files);
	}
	closedir(d);
	ck_assert_uint_eq(bad_files, p.ops * streams);
	t_free_list(seen, seen_count);
	tw_cleanup(root);
}

START_TEST(test_signal_storm)
{
	signal_storm(ADUMP_OUTPUT_CANN, false, 1);
	signal_storm(ADUMP_OUTPUT_CANN, true, 2);
}
END_TEST

/* Three windows in one step (two signals, then a NaN): each in a directory of its own,
 * window-0, window-0.1, window-0.2, each holding what came since the one before. */
START_TEST(test_three_windows_of_one_step)
{
	char *root = t_tmpdir("window_three");
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 2);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs;
	struct adump_window_info info;
	static const char *const names[3] = { "window-0", "window-0.1", "window-0.2" };
	static const char *const rules[3] = { "signal", "signal", "nonfinite" };

	cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (unsigned i = 0; i < 2; i++) {
		dump_one(hs, 0, i, false, 1);
		ck_assert_int_eq(adump_host_stream_sync(hs), 0);
		ck_assert_int_eq(raise(SIGUSR1), 0);
		tw_wait_persists(s, i + 1, &info);
	}
	dump_one(hs, 0, 2, false, NAN);
	ck_assert_int_eq(adump_session_step(s), 0);
	ck_assert_int_eq(adump_session_window(s, &info), 0);
	ck_assert_uint_eq(info.persists, 3);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_uint_eq(tw_window_dirs(root), 3);
	for (unsigned i = 0; i < 3; i++) {
		char dir[4200], want[32];
		struct json_object *t;
		size_t n;
		char **files;

		snprintf(dir, sizeof(dir), "%s/%s/" TIME_DIR, root, names[i]);
		files = t_list_files(dir, &n);
		ck_assert_uint_eq(n, 2);
		snprintf(want, sizeof(want), "0/Mul.op%u_0.", i);
		ck_assert_msg(!strncmp(files[0], want, strlen(want)), "%s: %s", dir, files[0]);
		ck_assert_str_eq(files[1], "trigger.json");
		t_free_list(files, n);
		t = tw_load_trigger(dir);
		ck_assert_str_eq(tw_str_member(t, "rule"), rules[i]);
		snprintf(dir, sizeof(dir), "%s/%s", root, names[i]);
		ck_assert_str_eq(tw_str_member(t, "window"), dir);
		json_object_put(t);
	}
	tw_cleanup(root);
}
END_TEST

/* A window written mid-step (SIGUSR1) empties the window: the step's later dumps of a keyed
 * tensor (stats_keys) copy it again rather than share the copy that went with the written
 * window, and the next window (a NaN a step later) holds their bytes, as the tensor capture
 * writes them. */
START_TEST(test_keyed_tensor_after_a_signal_window)
{
	char *root = t_tmpdir("window_sig_keyed");
	char win[4200], saved[4200], wroot[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	struct sigaction sa;
	struct filter window = { .lo = -1, .no_trigger = true };

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(saved, sizeof(saved), "%s/saved", root);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	tw_keyed = TW_KEYED_STEP;
	cfg = tw_window_config(win, ADUMP_OUTPUT_CANN, 2);
	cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
	p.steps = 6;
	p.signal_step = 3;
	p.signal_op = 1;
	p.bad_step = 4;
	p.bad_op = 1;
	p.bad_value = NAN;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.signal_info.persists, 1);
	ck_assert_uint_eq(o.info[4].persists, 2);
	/* window-4: step 3's dumps after the signal's window, and step 4's. */
	snprintf(wroot, sizeof(wroot), "%s/window-4", win);
	tw_set_aside(wroot, saved);
	cfg = tw_base_config(wroot, ADUMP_OUTPUT_CANN);
	p.signal_step = -1;
	tw_run(&cfg, &p, &r);
	ck_assert_int_eq(r.destroy_ret, 0);
	ck_assert_uint_eq(tw_same_in(saved, &window, wroot), 2 + p.ops);
	tw_keyed = TW_NOT_SHARED;
	sa.sa_handler = SIG_DFL;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	tw_cleanup(root);
}
END_TEST

static Suite *window_signal_suite(void)
{
	Suite *s = suite_create("window_signal");
	TCase *sig = tcase_create("signal");

	tcase_set_timeout(sig, 120);
	tcase_add_test(sig, test_trigger_signal);
	tcase_add_test(sig, test_signal_while_a_file_is_written);
	tcase_add_test(sig, test_signal_two_sessions);
	tcase_add_test(sig, test_signal_sessions_on_two_threads);
	tcase_add_test(sig, test_signal_storm);
	tcase_add_test(sig, test_three_windows_of_one_step);
	tcase_add_test(sig, test_keyed_tensor_after_a_signal_window);
	suite_add_tcase(s, sig);
	return s;
}

int main(void)
{
	return t_run_suite(window_signal_suite());
}
