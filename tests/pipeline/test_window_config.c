/* SPDX-License-Identifier: Apache-2.0 */
/* Window mode's configurations refused (issue 32), each field on its own, and what is right
 * passing; the window calls (persist, persist_note, window) refused outside window mode. */
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

/* ---- 7: configurations refused, calls outside window mode ---------------------------------- */

START_TEST(test_bad_config)
{
	char *root = t_tmpdir("window_cfg");
	struct adump_bound good = { .pattern = "*", .max_abs = 1 };
	struct adump_bound bad_bounds[] = {
		{ .pattern = NULL, .max_abs = 1 },
		{ .pattern = "", .max_abs = 1 },
		{ .pattern = "*", .max_abs = 0 },
		{ .pattern = "*", .max_abs = -3 },
		{ .pattern = "*", .max_abs = NAN },
		{ .pattern = "*", .max_abs = INFINITY },
	};
	struct adump_session *s = NULL;
	struct adump_config cfg;
	int cases = 0;

#define REFUSE(stmt)										\
	do {											\
		cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 2);				\
		stmt;										\
		ck_assert_msg(adump_config_check(&cfg) == -ADUMP_ERR_CONFIG, "accepted: %s",	\
			      #stmt);								\
		s = NULL;									\
		ck_assert_int_eq(adump_session_create(&cfg, &s), -ADUMP_ERR_CONFIG);		\
		ck_assert_ptr_null(s);								\
		cases++;									\
	} while (0)

	REFUSE(cfg.content = ADUMP_CONTENT_STATS);
	REFUSE(cfg.layout = ADUMP_LAYOUT_PACKED);
	REFUSE(cfg.compress = ADUMP_COMPRESS_LZ4);
	REFUSE(cfg.window_bytes = CHUNK - 1);
	REFUSE(cfg.triggers = 1u << 5);
	REFUSE(cfg.triggers = ADUMP_TRIGGER_ALL | 0x100);
	REFUSE(cfg.triggers = ADUMP_TRIGGER_BOUND);
	REFUSE((cfg.bounds = &good, cfg.bound_count = 1));
	REFUSE((cfg.triggers = ADUMP_TRIGGER_BOUND, cfg.bounds = NULL, cfg.bound_count = 1));
	for (unsigned i = 0; i < sizeof(bad_bounds) / sizeof(bad_bounds[0]); i++)
		REFUSE((cfg.triggers = ADUMP_TRIGGER_BOUND, cfg.bounds = &bad_bounds[i],
			cfg.bound_count = 1));
	REFUSE((cfg.triggers = ADUMP_TRIGGER_DEVIATION, cfg.deviation = -0.5));
	REFUSE((cfg.triggers = ADUMP_TRIGGER_DEVIATION, cfg.deviation = NAN));
	REFUSE((cfg.triggers = ADUMP_TRIGGER_DEVIATION, cfg.deviation = INFINITY));
	REFUSE(cfg.deviation = 0.5);            /* without the deviation trigger */
	REFUSE(cfg.deviation_steps = 4);
	REFUSE((cfg.window_steps = 0, cfg.window_bytes = 1u << 20));
	REFUSE((cfg.window_steps = 0, cfg.window_persists = 2));
	REFUSE((cfg.window_steps = 0, cfg.triggers = ADUMP_TRIGGER_NONFINITE));
	REFUSE((cfg.window_steps = 0, cfg.deviation = 1));
	REFUSE((cfg.window_steps = 0, cfg.deviation_steps = 3));
	REFUSE((cfg.window_steps = 0, cfg.bounds = &good, cfg.bound_count = 1));
	ck_assert_int_eq(cases, 26);
#undef REFUSE

	/* What is right passes, so the refusals above are of the field named. */
	cfg = tw_window_config(root, ADUMP_OUTPUT_CANN, 2);
	cfg.window_bytes = CHUNK;
	cfg.triggers = ADUMP_TRIGGER_ALL & ~ADUMP_TRIGGER_SIGNAL;
	cfg.bounds = &good;
	cfg.bound_count = 1;
	cfg.deviation = 0.5;
	cfg.deviation_steps = 4;
	ck_assert_int_eq(adump_config_check(&cfg), 0);
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);

	/* Outside window mode: the window calls are refused. */
	cfg = tw_base_config(root, ADUMP_OUTPUT_CANN);
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	{
		struct adump_window_info info;

		ck_assert_int_eq(adump_session_persist(s, "x"), -ADUMP_ERR_STATE);
		ck_assert_int_eq(adump_session_persist_note(s, "{}"), -ADUMP_ERR_STATE);
		ck_assert_int_eq(adump_session_window(s, &info), -ADUMP_ERR_STATE);
		ck_assert_int_eq(adump_session_step(s), 0);
	}
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_int_eq(adump_session_persist(NULL, "x"), -EINVAL);
	tw_cleanup(root);
}
END_TEST

static Suite *window_config_suite(void)
{
	Suite *s = suite_create("window_config");
	TCase *cf = tcase_create("config");

	tcase_set_timeout(cf, 60);
	tcase_add_test(cf, test_bad_config);
	suite_add_tcase(s, cf);
	return s;
}

int main(void)
{
	return t_run_suite(window_config_suite());
}
