/* SPDX-License-Identifier: Apache-2.0 */
/* End to end: 4 streams x 100 Add ops with random sizes from 1 byte to 8 MiB (none a
 * multiple of the chunk size) captured to files; every file parses back, header fields are
 * right, payload bytes equal the sources, out == self + alpha*other, no .part left. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_helpers.h"

static void run_capture(enum adump_writer_kind writer, uint64_t chunk, unsigned workers,
			enum adump_io io)
{
	char *tmp = t_tmpdir("capture");
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	struct adump_stats st;
	struct t_workload w = {
		.stream_count = 4, .op_count = 100, .min_bytes = 1, .max_bytes = 8u << 20,
		.chunk_bytes = chunk ? chunk : 2u << 20, .seed = t_seed(),
	};
	char dir[4200];
	cfg.dump_path = tmp;
	cfg.time_dir = "20260101000000";
	cfg.writer = writer;
	cfg.chunk_bytes = chunk;
	cfg.worker_count = workers;
	cfg.io = io;
	cfg.stream_max = 4;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(t_workload_run(s, &w), 0);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, 400);
	ck_assert_uint_eq(st.files_failed, 0);
	ck_assert_uint_eq(st.write_errors, 0);
	ck_assert_uint_eq(st.drops, 0);
	ck_assert_uint_eq(st.writes_in_flight, 0);
	ck_assert_int_eq(st.first_error, 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);

	snprintf(dir, sizeof(dir), "%s/20260101000000", tmp);
	ck_assert_uint_eq(t_count_files(dir, ".part"), 0);
	ck_assert_uint_eq(t_count_files(dir, ".failed"), 0);
	t_check_capture(dir, &w);
	t_workload_free(&w);
	t_rmtree(tmp);
	free(tmp);
}

START_TEST(test_capture_uring_default_chunk)
{
	run_capture(ADUMP_WRITER_AUTO, 0, 0, ADUMP_IO_BUFFERED);
}
END_TEST

START_TEST(test_capture_small_chunks_one_worker)
{
	/* 64 KiB chunks: large tensors span many chunks and several are in flight per file. */
	run_capture(ADUMP_WRITER_AUTO, 64u << 10, 1, ADUMP_IO_BUFFERED);
}
END_TEST

START_TEST(test_capture_pwrite)
{
	run_capture(ADUMP_WRITER_PWRITE, 0, 2, ADUMP_IO_BUFFERED);
}
END_TEST

START_TEST(test_capture_direct_io)
{
	/* O_DIRECT: every write aligned, headers and tails through the first/last buffers. */
	run_capture(ADUMP_WRITER_AUTO, 64u << 10, 2, ADUMP_IO_DIRECT);
}
END_TEST

START_TEST(test_capture_direct_io_pwrite)
{
	run_capture(ADUMP_WRITER_PWRITE, 0, 2, ADUMP_IO_DIRECT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("capture");
	TCase *tc = tcase_create("end_to_end");

	tcase_set_timeout(tc, 600);
	t_tcase_add_test_needing(tc, T_URING, test_capture_uring_default_chunk);
	tcase_add_test(tc, test_capture_small_chunks_one_worker);
	tcase_add_test(tc, test_capture_pwrite);
	/* io_uring and O_DIRECT both: the pwrite case below covers O_DIRECT alone. */
	if (t_feature_need(T_URING, "test_capture_direct_io"))
		t_tcase_add_test_needing(tc, T_DIRECT, test_capture_direct_io);
	t_tcase_add_test_needing(tc, T_DIRECT, test_capture_direct_io_pwrite);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
