/* SPDX-License-Identifier: Apache-2.0 */
/* Window mode's triggers (issue 32) and what trigger.json says of each: a non-finite value
 * (NaN, +-inf; an infinity held from a tensor's first dump never fires), triggers not asked
 * for, a bound on |x|, a deviation of a tensor's norm from its last steps', the call (and
 * the note whose members replace adump's), a trigger in the last step written at destroy. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adump/adump.h"
#include "capture_helpers.h"
#include "helpers.h"
#include "window_helpers.h"

/* ---- 4: the triggers ---------------------------------------------------------------------- */

/* A non-finite value at step 2 (of 4) in a window of @steps on device @device: the held steps,
 * trigger.json's fields. */
static void nonfinite(float bad, const char *want, unsigned steps, uint32_t device)
{
	char *root = t_tmpdir("window_nf");
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, steps);
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct json_object *t;
	struct filter f = { .lo = -1, .no_trigger = true };
	unsigned lo = steps > 2 ? 0 : 3 - steps;
	char dir[4200], prefix[64];
	const char *when;
	size_t n;
	char **files;
	int y, mo, d, h, mi, sec, us, end = 0;

	p.bad_step = 2;
	p.bad_op = 2;
	p.bad_value = bad;
	p.steps = 4;
	p.device_id = device;
	/* The same tensors every step: an infinity fires where a tensor held none before. */
	p.stable_names = true;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[1].persists, 0);
	ck_assert(!o.info[1].is_pending);
	ck_assert_uint_eq(o.info[2].persists, 1);
	ck_assert_uint_eq(o.info[3].persists, 1);
	ck_assert_uint_eq(tw_window_dirs(root), 1);
	t = tw_trigger_of(root, 2);
	ck_assert_str_eq(tw_str_member(t, "rule"), "nonfinite");
	ck_assert_str_eq(tw_str_member(t, "tensor"), "layer2.output.0");
	ck_assert_str_eq(tw_str_member(t, "op_name"), "layer2");
	ck_assert_str_eq(tw_str_member(t, "io"), "output");
	ck_assert_str_eq(tw_str_member(t, "value"), want);
	ck_assert_int_eq(json_object_get_int64(tw_member(t, "rank")), device);
	ck_assert(tw_is_null(t, "reason"));
	when = tw_str_member(t, "time");
	ck_assert_msg(sscanf(when, "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ%n", &y, &mo, &d, &h, &mi, &sec,
			     &us, &end) == 7 && end == (int)strlen(when) && y >= 2024,
		      "time %s", when);
	tw_check_steps(t, lo, 2);
	json_object_put(t);
	/* Every held step's dumps, under the stream's device directory. */
	snprintf(dir, sizeof(dir), "%s/window-2", root);
	snprintf(prefix, sizeof(prefix), TIME_DIR "/%u/Linear.", device);
	files = tw_list_kept(dir, &f, &n);
	ck_assert_uint_eq(n, (3 - lo) * p.ops);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(!strncmp(files[i], prefix, strlen(prefix)), "%s", files[i]);
	t_free_list(files, n);
	tw_cleanup(root);
}

START_TEST(test_trigger_nan)
{
	nonfinite(NAN, "nan", 2, 0);
}
END_TEST

START_TEST(test_trigger_inf)
{
	nonfinite(INFINITY, "inf", 1, 3);    /* only the step of the trigger */
}
END_TEST

START_TEST(test_trigger_neg_inf)
{
	nonfinite(-INFINITY, "-inf", 5, 0);  /* more than there were */
}
END_TEST

/* Infinities a tensor holds the first time it is dumped are meant (a causal mask's -inf):
 * no trigger; a NaN there fires. */
START_TEST(test_trigger_inf_from_the_start)
{
	for (int k = 0; k < 2; k++) {
		char *root = t_tmpdir("window_inf0");
		struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 2);
		struct plan p = PLAN_INIT;
		struct outcome o;

		p.bad_step = 0;
		p.bad_op = 1;
		p.bad_value = k ? NAN : -INFINITY;
		p.steps = 3;
		p.stable_names = true;
		tw_run(&cfg, &p, &o);
		ck_assert_int_eq(o.destroy_ret, 0);
		ck_assert_uint_eq(o.info[2].persists, k ? 1 : 0);
		ck_assert_uint_eq(tw_window_dirs(root), k ? 1 : 0);
		tw_cleanup(root);
	}
}
END_TEST

/* Triggers not asked for do not fire: a NaN with only the call trigger (always on). */
START_TEST(test_trigger_not_asked_for)
{
	char *root = t_tmpdir("window_off");
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 2);
	struct plan p = PLAN_INIT;
	struct outcome o;

	cfg.triggers = ADUMP_TRIGGER_CALL;
	p.bad_step = 1;
	p.bad_op = 0;
	p.bad_value = NAN;
	p.call_step = 4;
	p.call_reason = "asked";
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[3].persists, 0);
	ck_assert_uint_eq(o.info[4].persists, 1);
	ck_assert_uint_eq(tw_window_dirs(root), 1);
	tw_cleanup(root);
}
END_TEST

START_TEST(test_trigger_bound)
{
	char *root = t_tmpdir("window_bound");
	char r1[4200], r2[4200], r3[4200];
	struct adump_bound b[2] = { { .pattern = "*.layer2.*.output.0", .max_abs = 100 },
				    { .pattern = "*.layer3.*", .max_abs = 1e6 } };
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct json_object *t;

	snprintf(r1, sizeof(r1), "%s/above", root);
	snprintf(r2, sizeof(r2), "%s/below", root);
	snprintf(r3, sizeof(r3), "%s/nomatch", root);
	p.steps = 4;
	p.bad_step = 2;
	p.bad_op = 2;
	p.bad_value = -250.5f;          /* |x| above layer2's bound, below layer3's */

	cfg = tw_window_config(r1, ADUMP_OUTPUT_CANN, 2);
	cfg.triggers = ADUMP_TRIGGER_BOUND;
	cfg.bounds = b;
	cfg.bound_count = 2;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.step_ret[0], 0);
	ck_assert_uint_eq(o.info[1].persists, 0);
	ck_assert_uint_eq(o.info[2].persists, 1);
	t = tw_trigger_of(r1, 2);
	ck_assert_str_eq(tw_str_member(t, "rule"), "bound");
	ck_assert_str_eq(tw_str_member(t, "tensor"), "Functional.layer2.2.forward.output.0");
	ck_assert_double_eq_tol(json_object_get_double(tw_member(t, "value")), 250.5, 1e-9);
	ck_assert_double_eq_tol(json_object_get_double(tw_member(t, "threshold")), 100, 1e-9);
	json_object_put(t);

	/* A value below the bound, and a large one where no pattern matches: nothing. */
	p.bad_value = 99.0f;
	b[1].max_abs = 1000;
	cfg.dump_path = r2;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[3].persists, 0);
	ck_assert_uint_eq(tw_window_dirs(r2), 0);
	p.bad_op = 1;
	p.bad_value = 5000.0f;          /* layer1 (no bound) and layer2 (bound 100) */
	b[0].pattern = "*.layer1.*.input.0";    /* layer1's input: finite, small */
	b[1].pattern = "*.layer0.*";
	tw_run(&cfg, &p, &o);
	ck_assert_uint_eq(o.info[3].persists, 0);

	/* A pattern that matches nothing in step 0: its step reports a config error. */
	b[1].pattern = "no.such.tensor";
	cfg.dump_path = r3;
	p.bad_step = -1;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.step_ret[0], -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(o.step_ret[1], 0);
	tw_cleanup(root);
}
END_TEST

/* L2 norm of a step's output of op 0 as the plan makes it. */
static double norm_of(const struct plan *p, unsigned step)
{
	double sum = 0;

	for (uint64_t e = 0; e < tw_elems_of(0); e++) {
		double v = tw_value(p, step, 1, e);

		sum += v * v;
	}
	return sqrt(sum);
}

START_TEST(test_trigger_deviation)
{
	char *root = t_tmpdir("window_dev");
	char r1[4200], r2[4200];
	/* K = 3, factor 2: step 2 (norm x50) has only two before it; step 3 (1.9 x the mean of
	 * 1, 1, 50... no: of its last three) does not exceed; step 5 does. */
	static const double early[] = { 1, 1, 50, 1, 1, 1 };
	static const double scales[] = { 1, 1, 1, 1.9, 1, 3.5, 1 };
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct json_object *t;
	double mean, want_value;

	snprintf(r1, sizeof(r1), "%s/early", root);
	snprintf(r2, sizeof(r2), "%s/fires", root);
	p.ops = 1;
	p.stable_names = true;
	p.steps = 3;
	p.scales = early;
	cfg = tw_window_config(r1, ADUMP_OUTPUT_CANN, 2);
	cfg.triggers = ADUMP_TRIGGER_DEVIATION;
	cfg.deviation = 1.0;
	cfg.deviation_steps = 3;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[2].persists, 0);
	ck_assert_uint_eq(tw_window_dirs(r1), 0);

	p.steps = 7;
	p.scales = scales;
	cfg.dump_path = r2;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[4].persists, 0);
	ck_assert_uint_eq(o.info[5].persists, 1);
	ck_assert_uint_eq(o.info[6].persists, 1);
	ck_assert_uint_eq(tw_window_dirs(r2), 1);
	t = tw_trigger_of(r2, 5);
	ck_assert_str_eq(tw_str_member(t, "rule"), "deviation");
	ck_assert_int_eq(json_object_get_int64(tw_member(t, "step")), 5);
	/* The first tensor to fire: layer0's input is step-scaled as its output is. */
	ck_assert_str_eq(tw_str_member(t, "tensor"), "layer0.input.0");
	mean = 0;
	{
		double in[7];

		for (unsigned k = 0; k < 7; k++) {
			double sum = 0;

			for (uint64_t e = 0; e < tw_elems_of(0); e++) {
				double v = tw_value(&p, k, 0, e);

				sum += v * v;
			}
			in[k] = sqrt(sum);
		}
		mean = (in[2] + in[3] + in[4]) / 3;
		want_value = in[5];
	}
	ck_assert_double_eq_tol(json_object_get_double(tw_member(t, "value")), want_value,
				want_value * 1e-5);
	ck_assert_double_eq_tol(json_object_get_double(tw_member(t, "threshold")), 2 * mean,
				mean * 1e-5);
	ck_assert(norm_of(&p, 5) > 2 * mean);
	tw_check_steps(t, 4, 5);
	json_object_put(t);
	tw_cleanup(root);
}
END_TEST

START_TEST(test_trigger_call_and_note)
{
	char *root = t_tmpdir("window_call");
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 3);
	struct plan p = PLAN_INIT;
	struct adump_session *s = NULL;
	struct outcome o;
	struct json_object *t;

	/* The note: refused unless an object; its members replace adump's. */
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_session_persist_note(s, "[1, 2]"), -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_session_persist_note(s, "{\"rank\": "), -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_session_persist_note(s, "7"), -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_session_persist_note(s, ""), -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_session_persist_note(s, "{\"rank\": 5} trailing"),
			 -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_session_persist_note(s, "{\"rank\": 5} {\"rank\": 6}"),
			 -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_session_persist_note(s, NULL), 0);
	ck_assert_int_eq(adump_session_persist_note(s, " {\"rank\": 3, \"first_rank\": 1}\n"), 0);
	ck_assert_int_eq(adump_session_persist(s, "loss spike"), 0);
	{
		struct adump_window_info info;

		ck_assert_int_eq(adump_session_window(s, &info), 0);
		ck_assert(info.is_pending);
		ck_assert_str_eq(info.pending_rule, "call");
	}
	ck_assert_int_eq(adump_session_step(s), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	t = tw_trigger_of(root, 0);
	ck_assert_str_eq(tw_str_member(t, "rule"), "call");
	ck_assert_str_eq(tw_str_member(t, "reason"), "loss spike");
	ck_assert_int_eq(json_object_get_int64(tw_member(t, "rank")), 3);
	ck_assert_int_eq(json_object_get_int64(tw_member(t, "first_rank")), 1);
	ck_assert(tw_is_null(t, "tensor"));
	json_object_put(t);
	tw_cleanup(root);

	/* Through a run, the session directory named by the time (no time_dir): the window of
	 * the call's step, its steps, under the same directory name. */
	root = t_tmpdir("window_call");
	cfg.dump_path = root;
	cfg.time_dir = NULL;
	p.call_step = 3;
	p.call_reason = "loss 1e9 at step 3";
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[3].persists, 1);
	ck_assert_uint_eq(tw_window_dirs(root), 1);
	{
		DIR *d = opendir(root);
		struct dirent *e;
		char session[256] = "", dir[4200];
		size_t n;
		char **files;

		ck_assert_ptr_nonnull(d);
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' && strncmp(e->d_name, "window-", 7))
				snprintf(session, sizeof(session), "%s", e->d_name);
		closedir(d);
		ck_assert_str_ne(session, "");
		snprintf(dir, sizeof(dir), "%s/window-3/%s", root, session);
		t = tw_load_trigger(dir);
		files = t_list_files(dir, &n);
		ck_assert_uint_eq(n, 3 * p.ops + 1);
		t_free_list(files, n);
	}
	ck_assert_str_eq(tw_str_member(t, "rule"), "call");
	ck_assert_str_eq(tw_str_member(t, "reason"), "loss 1e9 at step 3");
	ck_assert_int_eq(json_object_get_int64(tw_member(t, "step")), 3);
	tw_check_steps(t, 1, 3);
	json_object_put(t);
	tw_cleanup(root);
}
END_TEST

/* A trigger in the last step, which ends with the session: the window is written then. */
START_TEST(test_trigger_of_last_step_persisted_at_destroy)
{
	char *root = t_tmpdir("window_last");
	struct adump_config cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 2);
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct json_object *t;
	struct filter f = { .lo = -1, .no_trigger = true };
	char dir[4200];
	size_t n;
	char **files;

	p.steps = 4;
	p.bad_step = 3;
	p.bad_op = 3;
	p.bad_value = NAN;
	p.no_last_step = true;
	tw_run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[2].persists, 0);
	ck_assert_uint_eq(tw_window_dirs(root), 1);
	t = tw_trigger_of(root, 3);
	ck_assert_str_eq(tw_str_member(t, "tensor"), "Functional.layer3.3.forward.output.0");
	tw_check_steps(t, 2, 3);
	json_object_put(t);
	snprintf(dir, sizeof(dir), "%s/window-3", root);
	files = tw_list_kept(dir, &f, &n);
	ck_assert_uint_eq(n, 2 * p.ops);
	t_free_list(files, n);
	tw_cleanup(root);
}
END_TEST

static Suite *window_triggers_suite(void)
{
	Suite *s = suite_create("window_triggers");
	TCase *tr = tcase_create("triggers");

	tcase_set_timeout(tr, 120);
	tcase_add_test(tr, test_trigger_nan);
	tcase_add_test(tr, test_trigger_inf);
	tcase_add_test(tr, test_trigger_neg_inf);
	tcase_add_test(tr, test_trigger_inf_from_the_start);
	tcase_add_test(tr, test_trigger_bound);
	tcase_add_test(tr, test_trigger_not_asked_for);
	tcase_add_test(tr, test_trigger_deviation);
	tcase_add_test(tr, test_trigger_call_and_note);
	tcase_add_test(tr, test_trigger_of_last_step_persisted_at_destroy);
	suite_add_tcase(s, tr);
	return s;
}

int main(void)
{
	return t_run_suite(window_triggers_suite());
}
