/* SPDX-License-Identifier: Apache-2.0 */
/* Session API contracts: configuration errors name the field, attach/detach rules, stats. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture_helpers.h"
#include "common/common.h"

START_TEST(test_config_errors)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;

	ck_assert_int_eq(adump_config_check(NULL), -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_config_check(&cfg), -ADUMP_ERR_CONFIG);        /* no dump_path */
	cfg.dump_path = "/tmp";
	ck_assert_int_eq(adump_config_check(&cfg), 0);
	cfg.chunk_bytes = 100;
	ck_assert_int_eq(adump_config_check(&cfg), -ADUMP_ERR_CONFIG);
	cfg.chunk_bytes = 1u << 20;
	cfg.pool_bytes = 4u << 20;                                             /* 4 chunks, 16 streams */
	ck_assert_int_eq(adump_config_check(&cfg), -ADUMP_ERR_CONFIG);
	cfg.stream_max = 2;
	ck_assert_int_eq(adump_config_check(&cfg), 0);
	cfg.stream_max = 65;
	ck_assert_int_eq(adump_config_check(&cfg), -ADUMP_ERR_CONFIG);
	cfg.stream_max = 2;
	cfg.sink = ADUMP_SINK_CALLBACK;
	ck_assert_int_eq(adump_config_check(&cfg), -ADUMP_ERR_CONFIG);        /* no chunk_fn */
	cfg.sink = ADUMP_SINK_FILE;
	cfg.time_dir = "../escape";
	ck_assert_int_eq(adump_config_check(&cfg), -ADUMP_ERR_CONFIG);
	cfg.time_dir = NULL;
	cfg.on_full = (enum adump_on_full)7;
	ck_assert_int_eq(adump_config_check(&cfg), -ADUMP_ERR_CONFIG);
	cfg.on_full = ADUMP_ON_FULL_BLOCK;
	cfg.struct_size = 8;
	ck_assert_int_eq(adump_session_create(&cfg, &s), -ADUMP_ERR_CONFIG);
	ck_assert_ptr_null(s);
	ck_assert_str_eq(adump_strerror(-ADUMP_ERR_CONFIG), "invalid configuration");
	ck_assert_str_eq(adump_strerror(-ENOENT), "No such file or directory");
	ck_assert_int_eq(adump_session_destroy(NULL), 0);
}
END_TEST

START_TEST(test_dump_path_not_creatable)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	char *tmp = t_tmpdir("session"), path[4200];

	/* A regular file where a directory must go. */
	snprintf(path, sizeof(path), "%s/file", tmp);
	FILE *f = fopen(path, "w");
	fclose(f);
	snprintf(path, sizeof(path), "%s/file/sub", tmp);
	cfg.dump_path = path;
	ck_assert_int_eq(adump_session_create(&cfg, &s), -ENOTDIR);
	ck_assert_ptr_null(s);
	t_rmtree(tmp);
	free(tmp);
}
END_TEST

/* Ranks writing one window share its root and the persist session's own directory there;
 * each removes that directory when done if it is empty. A session being made in it by
 * another rank meanwhile makes it again and is made whole. Here a child plays the other
 * rank: told a session is being made, it removes the directory once, as soon as it is
 * there. Made in a fresh directory each time, 300 sessions. */
START_TEST(test_shared_dir_removed_by_another_process)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	char *tmp = t_tmpdir("session"), dir[4200];
	int go[2];
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/shared", tmp);
	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char c;

		close(go[1]);
		while (read(go[0], &c, 1) == 1) {
			uint64_t end = adump_now_ns() + 5000000;

			while (rmdir(dir) < 0 && adump_now_ns() < end)
				;
		}
		_exit(0);
	}
	close(go[0]);
	cfg.dump_path = tmp;
	cfg.time_dir = "shared";
	cfg.chunk_bytes = 64u << 10;
	cfg.pool_bytes = 256u << 10;
	cfg.stream_max = 1;
	for (int i = 0; i < 300; i++) {
		struct adump_session *s = NULL;
		struct stat st;

		ck_assert_int_eq(write(go[1], "x", 1), 1);
		ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
		/* Its journal is in it: nobody's rmdir() takes it now. */
		ck_assert_int_eq(stat(dir, &st), 0);
		ck_assert_int_eq(adump_session_destroy(s), 0);
		rmdir(dir);
	}
	close(go[1]);
	waitpid(pid, NULL, 0);
	t_rmtree(tmp);
	free(tmp);
}
END_TEST

START_TEST(test_attach_rules)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL, *other = NULL;
	struct adump_dev *dev;
	struct adump_dev_stream *a, *b;
	struct adump_stats st;
	char *tmp = t_tmpdir("session");

	cfg.dump_path = tmp;
	cfg.stream_max = 1;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_session_create(&cfg, &other), 0);
	ck_assert_int_eq(adump_dev_open(0, &dev), 0);
	ck_assert_int_eq(adump_dev_stream_create(dev, &a), 0);
	ck_assert_int_eq(adump_dev_stream_create(dev, &b), 0);
	ck_assert_int_eq(adump_session_attach(s, a), 0);
	ck_assert_int_eq(adump_session_attach(s, a), -ADUMP_ERR_STATE);
	ck_assert_int_eq(adump_session_attach(other, a), -ADUMP_ERR_STATE);
	ck_assert_int_eq(adump_session_attach(s, b), -ADUMP_ERR_TOO_BIG);   /* stream_max 1 */
	ck_assert_int_eq(adump_session_detach(other, a), -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_session_detach(s, b), -ADUMP_ERR_NOT_FOUND);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.stream_count, 1);
	ck_assert_uint_eq(st.streams[0].stream_id, adump_dev_stream_id(a));
	ck_assert_uint_eq(st.worker_count, 1);
	ck_assert(st.backend == ADUMP_WRITER_URING || st.backend == ADUMP_WRITER_PWRITE);
	ck_assert_int_eq(adump_session_detach(s, a), 0);
	/* Re-attach after detach, to the other session, works. */
	ck_assert_int_eq(adump_session_attach(other, a), 0);
	ck_assert_int_eq(adump_session_attach(s, b), 0);
	/* destroy detaches what is still attached. */
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_ptr_null(adump_dev_stream_port(b));
	ck_assert_int_eq(adump_session_destroy(other), 0);
	adump_dev_stream_destroy(a);
	adump_dev_stream_destroy(b);
	adump_dev_close(dev);
	t_rmtree(tmp);
	free(tmp);
}
END_TEST

START_TEST(test_file_name_sanitised)
{
	struct adump_op op = { .op_type = "Conv 2D", .op_name = "a/b\\c.d e", .task_id = 3,
			       .stream_id = 4, .timestamp_us = 1776242496294291ull };
	char buf[128];

	ck_assert_int_eq(adump_dump_file_name(&op, buf, sizeof(buf)),
			 (int)strlen("Conv_2D.a_b_c_d_e.3.4.1776242496294291"));
	ck_assert_str_eq(buf, "Conv_2D.a_b_c_d_e.3.4.1776242496294291");
	ck_assert_int_eq(adump_dump_file_name(&op, buf, 10), -ADUMP_ERR_TOO_BIG);
	/* Every byte outside [A-Za-z0-9_-] too: the name readers' pattern accepts (issue 30). */
	op.op_type = "Add-2";
	op.op_name = "<img>\n\x1b\xc3\xa9(x)";
	ck_assert_int_gt(adump_dump_file_name(&op, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "Add-2._img______x_.3.4.1776242496294291");
}
END_TEST

static struct adump_session *stats_session;
static uint64_t stats_calls;

/* A consumer that looks at the session's progress from inside the callback. */
static int stats_in_callback(const struct adump_chunk *chunk, void *user)
{
	struct adump_stats st;

	(void)chunk;
	(void)user;
	adump_stats_get(stats_session, &st);
	__atomic_fetch_add(&stats_calls, 1, __ATOMIC_RELAXED);
	return 0;
}

START_TEST(test_callback_may_read_stats_during_detach)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_dev *dev;
	struct adump_dev_stream *stream;
	struct adump_dev_tensor t = { .dtype = ADUMP_DT_FLOAT, .format = ADUMP_FORMAT_ND,
				      .dim_count = 1, .dims = { 65536 }, .bytes = 65536 * 4 };
	struct adump_dev_dump dump = { .op_type = "Add", .op_name = "add", .tensor_mask = ADUMP_DUMP_ALL };

	cfg.sink = ADUMP_SINK_CALLBACK;
	cfg.chunk_fn = stats_in_callback;
	cfg.chunk_bytes = 64u << 10;
	cfg.stream_max = 1;
	ck_assert_int_eq(adump_session_create(&cfg, &stats_session), 0);
	ck_assert_int_eq(adump_dev_open(0, &dev), 0);
	ck_assert_int_eq(adump_dev_stream_create(dev, &stream), 0);
	ck_assert_int_eq(adump_dev_malloc(dev, t.bytes, &t.data), 0);
	memset(t.data, 0, t.bytes);
	ck_assert_int_eq(adump_session_attach(stats_session, stream), 0);
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(adump_dev_launch_add(stream, &t, &t, 1.0, &t, &dump), 0);
	/* No sync: detach waits while chunks are still being delivered, and the callback
	 * takes the session's stats meanwhile. A detach that held the session lock while
	 * waiting would deadlock here. */
	ck_assert_int_eq(adump_session_detach(stats_session, stream), 0);
	ck_assert_uint_eq(stats_calls, 50 * (1 + 12));  /* header + 12 chunks of 64 KiB each */
	ck_assert_int_eq(adump_session_destroy(stats_session), 0);
	adump_dev_stream_destroy(stream);
	adump_dev_free(dev, t.data);
	adump_dev_close(dev);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("session");
	TCase *tc = tcase_create("api");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_config_errors);
	tcase_add_test(tc, test_dump_path_not_creatable);
	tcase_add_test(tc, test_shared_dir_removed_by_another_process);
	tcase_add_test(tc, test_attach_rules);
	tcase_add_test(tc, test_file_name_sanitised);
	tcase_add_test(tc, test_callback_may_read_stats_during_detach);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
