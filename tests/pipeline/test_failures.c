/* SPDX-License-Identifier: Apache-2.0 */
/* Failures are reported, never hidden: a removed directory, a failing write, a full staging
 * pool under the drop policy, io_uring unavailable. Nothing crashes or hangs, files that lost
 * data never carry a final name, and what was captured before stays intact. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture_helpers.h"
#include "common/common.h"

#define TIME_DIR "20260103000000"

static struct adump_session *make_session(const char *root, enum adump_writer_kind writer,
					  enum adump_on_full on_full, size_t chunk, size_t pool)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;

	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.writer = writer;
	cfg.on_full = on_full;
	cfg.chunk_bytes = chunk;
	cfg.pool_bytes = pool;
	cfg.stream_max = 1;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	return s;
}

/* One dumped float Add of @count elements on @stream. */
static int launch(struct adump_dev *dev, struct adump_dev_stream *stream, uint64_t count,
		  const char *name, void **mem)
{
	struct adump_dev_tensor t = { .dtype = ADUMP_DT_FLOAT, .format = ADUMP_FORMAT_ND,
				      .dim_count = 1, .dims = { (int64_t)count }, .bytes = count * 4 };
	struct adump_dev_dump dump = { .op_type = "Add", .op_name = name, .tensor_mask = ADUMP_DUMP_ALL };

	if (!*mem) {
		ck_assert_int_eq(adump_dev_malloc(dev, count * 4, mem), 0);
		memset(*mem, 0, count * 4);
	}
	t.data = *mem;
	return adump_dev_launch_add(stream, &t, &t, 1.0, &t, &dump);
}

/* Device 0, a new stream, attached to @s. */
static void attach_stream(struct adump_session *s, struct adump_dev **dev,
			  struct adump_dev_stream **stream)
{
	ck_assert_int_eq(adump_dev_open(0, dev), 0);
	ck_assert_int_eq(adump_dev_stream_create(*dev, stream), 0);
	ck_assert_int_eq(adump_session_attach(s, *stream), 0);
}

/* The stream (detached already), its tensor memory and the device reference. */
static void release_stream(struct adump_dev *dev, struct adump_dev_stream *stream, void *mem)
{
	adump_dev_stream_destroy(stream);
	adump_dev_free(dev, mem);
	adump_dev_close(dev);
}

/* Every file of @from into the new directory @to. */
static void move_files(const char *from, const char *to)
{
	DIR *d = opendir(from);
	struct dirent *e;
	int to_fd;

	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(mkdir(to, 0750), 0);
	to_fd = open(to, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(to_fd, 0);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			ck_assert_int_eq(renameat(dirfd(d), e->d_name, to_fd, e->d_name), 0);
	close(to_fd);
	closedir(d);
}

static void removed_directory(enum adump_writer_kind writer)
{
	char *root = t_tmpdir("fail");
	struct adump_session *s = make_session(root, writer, ADUMP_ON_FULL_BLOCK, 0, 0);
	struct adump_dev *dev;
	struct adump_dev_stream *stream;
	struct adump_stats st;
	void *mem = NULL;
	char dir[4200];

	attach_stream(s, &dev, &stream);
	ck_assert_int_eq(launch(dev, stream, 1000, "before", &mem), 0);
	ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
	snprintf(dir, sizeof(dir), "%s/%s/0", root, TIME_DIR);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);

	/* Keep the first file, then take the directory away under the session: removed (a
	 * directory renamed away would still get the files of the worker holding it). */
	char saved[4200];
	snprintf(saved, sizeof(saved), "%s/saved", root);
	move_files(dir, saved);
	ck_assert_int_eq(rmdir(dir), 0);
	ck_assert_int_eq(launch(dev, stream, 1000, "after", &mem), 0);
	ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
	ck_assert_int_eq(adump_session_flush(s), -ENOENT);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, 1);
	ck_assert_uint_eq(st.files_failed, 1);
	ck_assert_uint_ge(st.write_errors, 1);
	ck_assert_int_eq(st.first_error, -ENOENT);
	/* What was captured before is intact. */
	ck_assert_uint_eq(t_count_files(saved, ""), 1);
	ck_assert_int_eq(adump_session_detach(s, stream), 0);
	ck_assert_int_eq(adump_session_destroy(s), -ENOENT);
	release_stream(dev, stream, mem);
	t_rmtree(root);
	free(root);
}

/* The process out of file descriptors (RLIMIT_NOFILE reached): the file fails with EMFILE,
 * counted, with a line that says what to do; the file before is intact, and none hangs. */
START_TEST(test_out_of_descriptors)
{
	char *root = t_tmpdir("fail");
	struct adump_session *s = make_session(root, ADUMP_WRITER_PWRITE, ADUMP_ON_FULL_BLOCK, 0, 0);
	struct adump_dev *dev;
	struct adump_dev_stream *stream;
	struct adump_stats st;
	struct rlimit old, low;
	void *mem = NULL;
	char dir[4200];
	int lowest;

	t_log_catch();
	attach_stream(s, &dev, &stream);
	ck_assert_int_eq(launch(dev, stream, 1000, "before", &mem), 0);
	ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
	/* No descriptor free: the lowest one not open becomes the limit. */
	lowest = dup(0);
	ck_assert_int_ge(lowest, 0);
	close(lowest);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)lowest;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	ck_assert_int_eq(launch(dev, stream, 1000, "after", &mem), 0);
	ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
	ck_assert_int_eq(adump_session_flush(s), -EMFILE);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, 1);
	ck_assert_uint_eq(st.files_failed, 1);
	ck_assert_msg(strstr(t_logged, "no file descriptor left") && strstr(t_logged, "ulimit -n"),
		      "%s", t_logged);
	snprintf(dir, sizeof(dir), "%s/%s/0", root, TIME_DIR);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	ck_assert_int_eq(adump_session_detach(s, stream), 0);
	ck_assert_int_eq(adump_session_destroy(s), -EMFILE);
	release_stream(dev, stream, mem);
	t_log_release();
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(test_removed_directory_uring)
{
	removed_directory(ADUMP_WRITER_AUTO);
}
END_TEST

START_TEST(test_removed_directory_pwrite)
{
	removed_directory(ADUMP_WRITER_PWRITE);
}
END_TEST

/* Three dumps of @count floats, the middle one with testpoint @point armed to fail with @err
 * on its @nth hit. Only that file fails: the session reports @err, counts one failed file and
 * one write error, and leaves one .failed beside the two complete files, no .part. */
static void good_bad_good(struct adump_session *s, const char *root, struct adump_dev *dev,
			  struct adump_dev_stream *stream, uint64_t count, void **mem,
			  const char *point, int err, unsigned nth)
{
	static const char *const names[] = { "good", "bad", "good_again" };
	struct adump_stats st;
	char dir[4200];

	for (int i = 0; i < 3; i++) {
		if (i == 1)
			adump_testpoint_arm(point, err, nth, 0);
		ck_assert_int_eq(launch(dev, stream, count, names[i], mem), 0);
		ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
		if (i == 1)
			adump_testpoint_disarm_all();
	}
	ck_assert_int_eq(adump_session_flush(s), err);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, 2);
	ck_assert_uint_eq(st.files_failed, 1);
	ck_assert_uint_eq(st.write_errors, 1);
	ck_assert_int_eq(st.first_error, err);
	snprintf(dir, sizeof(dir), "%s/%s/0", root, TIME_DIR);
	ck_assert_uint_eq(t_count_files(dir, ".failed"), 1);
	ck_assert_uint_eq(t_count_files(dir, ".part"), 0);
	ck_assert_uint_eq(t_count_files(dir, ""), 3);
}

static void failing_write(enum adump_writer_kind writer)
{
	char *root = t_tmpdir("fail");
	struct adump_session *s = make_session(root, writer, ADUMP_ON_FULL_BLOCK, 4096, 1u << 20);
	struct adump_dev *dev;
	struct adump_dev_stream *stream;
	void *mem = NULL;

	attach_stream(s, &dev, &stream);
	/* The 5th write of the second file fails with EIO: in its middle. */
	good_bad_good(s, root, dev, stream, 10000, &mem, "uring.write", -EIO, 5);
	ck_assert_int_eq(adump_session_detach(s, stream), 0);
	adump_session_destroy(s);
	release_stream(dev, stream, mem);
	t_rmtree(root);
	free(root);
}

START_TEST(test_failing_write_uring)
{
	failing_write(ADUMP_WRITER_AUTO);
}
END_TEST

START_TEST(test_failing_write_pwrite)
{
	failing_write(ADUMP_WRITER_PWRITE);
}
END_TEST

/* Direct I/O reserves a file's space before its data: a full disk fails that file up front,
 * and the files around it are written whole. */
START_TEST(test_direct_no_space_fails_one_file)
{
	char *root = t_tmpdir("fail");
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	struct adump_dev *dev;
	struct adump_dev_stream *stream;
	void *mem = NULL;
	char dir[4200];

	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.io = ADUMP_IO_DIRECT;
	cfg.chunk_bytes = 64u << 10;
	cfg.pool_bytes = 1u << 20;
	cfg.stream_max = 1;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	attach_stream(s, &dev, &stream);
	good_bad_good(s, root, dev, stream, 50000, &mem, "worker.preallocate", -ENOSPC, 1);
	snprintf(dir, sizeof(dir), "%s/%s/0", root, TIME_DIR);
	/* The complete files parse and hold exactly header + payload (the padding was cut). */
	size_t count = 0, complete = 0;
	char **list = t_list_files(dir, &count);

	for (size_t i = 0; i < count; i++) {
		struct t_dump d;
		char path[4300];

		if (strstr(list[i], ".failed"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, list[i]);
		t_dump_load(path, &d);
		ck_assert_uint_eq(d.len, d.payload_base + 3 * 50000 * sizeof(float));
		t_dump_free(&d);
		complete++;
	}
	ck_assert_uint_eq(complete, 2);
	t_free_list(list, count);
	ck_assert_int_eq(adump_session_detach(s, stream), 0);
	adump_session_destroy(s);
	release_stream(dev, stream, mem);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(test_drop_policy_never_completes_a_lossy_file)
{
	char *root = t_tmpdir("fail");
	/* Two 4 KiB buffers for 8 x 1.2 MB ops: the producer outruns the worker. */
	struct adump_session *s = make_session(root, ADUMP_WRITER_AUTO, ADUMP_ON_FULL_DROP, 4096, 8192);
	struct adump_dev *dev;
	struct adump_dev_stream *stream;
	struct adump_stats st;
	void *mem = NULL;
	char dir[4200];
	int ret = 0;

	attach_stream(s, &dev, &stream);
	for (int i = 0; i < 8; i++) {
		char name[16];

		snprintf(name, sizeof(name), "op%d", i);
		ck_assert_int_eq(launch(dev, stream, 100000, name, &mem), 0);
	}
	ret = adump_dev_stream_sync(stream);
	adump_stats_get(s, &st);
	ck_assert_int_eq(adump_session_detach(s, stream), 0);
	ck_assert_uint_eq(st.files_completed + st.files_failed, 8);
	snprintf(dir, sizeof(dir), "%s/%s/0", root, TIME_DIR);
	ck_assert_uint_eq(t_count_files(dir, ".part"), 0);
	ck_assert_uint_eq(t_count_files(dir, ".failed"), st.files_failed);
	if (st.drops) {
		ck_assert_int_eq(ret, -ADUMP_ERR_DROPPED);
		ck_assert_uint_gt(st.files_failed, 0);
		ck_assert_int_eq(adump_session_error(s), -ADUMP_ERR_DROPPED);
	}
	/* Every file with a final name is complete: 8 + header + 3 tensors. */
	size_t n;
	char **files = t_list_files(dir, &n);
	for (size_t i = 0; i < n; i++) {
		char path[4200];
		struct t_dump d;

		if (strstr(files[i], ".failed"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		t_dump_load(path, &d);
		ck_assert_uint_eq(d.len, d.payload_base + 3 * 400000);
		t_dump_free(&d);
	}
	t_free_list(files, n);
	adump_session_destroy(s);
	release_stream(dev, stream, mem);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(test_uring_unavailable_falls_back)
{
	char *root = t_tmpdir("fail");
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	struct adump_stats st;
	struct t_workload w = { .stream_count = 2, .op_count = 10, .min_bytes = 1,
				.max_bytes = 1u << 20, .seed = t_seed() };
	char dir[4200];

	adump_testpoint_arm("uring.setup", -EPERM, 1, 1);
	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.stream_max = 2;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(t_workload_run(s, &w), 0);
	adump_stats_get(s, &st);
	ck_assert_int_eq(st.backend, ADUMP_WRITER_PWRITE);
	ck_assert_uint_eq(st.files_completed, 20);
	adump_session_destroy(s);
	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	t_check_capture(dir, &w);
	t_workload_free(&w);

	/* Asking for io_uring explicitly fails instead of falling back. */
	cfg.writer = ADUMP_WRITER_URING;
	s = NULL;
	ck_assert_int_eq(adump_session_create(&cfg, &s), -EPERM);
	ck_assert_ptr_null(s);
	adump_testpoint_disarm_all();
	t_rmtree(root);
	free(root);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("failures");
	TCase *tc = tcase_create("reported");

	tcase_set_timeout(tc, 120);
	t_tcase_add_test_needing(tc, T_URING, test_removed_directory_uring);
	tcase_add_test(tc, test_removed_directory_pwrite);
	tcase_add_test(tc, test_out_of_descriptors);
	t_tcase_add_test_needing(tc, T_URING, test_failing_write_uring);
	tcase_add_test(tc, test_failing_write_pwrite);
	t_tcase_add_test_needing(tc, T_DIRECT, test_direct_no_space_fails_one_file);
	tcase_add_test(tc, test_drop_policy_never_completes_a_lossy_file);
	tcase_add_test(tc, test_uring_unavailable_falls_back);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
