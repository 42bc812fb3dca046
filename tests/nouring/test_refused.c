/* SPDX-License-Identifier: Apache-2.0 */
/* Run under adump_no_uring (ctest does): with io_uring refused as a container refuses it,
 * the probe sees EPERM, an AUTO session captures everything with pwrite and says why, and a
 * session that insists on io_uring reports the refusal instead of writing another way. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "capture_helpers.h"
#include "iouring/writer.h"

START_TEST(test_probe_refused)
{
	ck_assert_int_eq(adump_writer_probe_uring(), -EPERM);
}
END_TEST

START_TEST(test_auto_falls_back)
{
	char *tmp = t_tmpdir("nouring");
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	struct adump_stats st;
	struct t_workload w = {
		.stream_count = 2, .op_count = 40, .min_bytes = 1, .max_bytes = 4u << 20,
		.chunk_bytes = 2u << 20, .seed = t_seed(),
	};
	char dir[4200];

	cfg.dump_path = tmp;
	cfg.time_dir = "20260101000000";
	cfg.stream_max = 2;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(t_workload_run(s, &w), 0);
	adump_stats_get(s, &st);
	ck_assert_int_eq(st.backend, ADUMP_WRITER_PWRITE);
	ck_assert_int_eq(st.backend_reason, ADUMP_WRITER_REASON_REFUSED);
	ck_assert_int_eq(st.backend_error, -EPERM);
	ck_assert_uint_eq(st.files_completed, 80);
	ck_assert_uint_eq(st.files_failed, 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	snprintf(dir, sizeof(dir), "%s/20260101000000", tmp);
	t_check_capture(dir, &w);
	t_workload_free(&w);
	t_rmtree(tmp);
	free(tmp);
}
END_TEST

START_TEST(test_uring_required_fails)
{
	char *tmp = t_tmpdir("nouring");
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;

	cfg.dump_path = tmp;
	cfg.writer = ADUMP_WRITER_URING;
	ck_assert_int_eq(adump_session_create(&cfg, &s), -EPERM);
	ck_assert_ptr_null(s);
	cfg.writer = ADUMP_WRITER_PWRITE;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	t_rmtree(tmp);
	free(tmp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nouring");
	TCase *tc = tcase_create("refused");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_probe_refused);
	tcase_add_test(tc, test_auto_falls_back);
	tcase_add_test(tc, test_uring_required_fails);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
