/* SPDX-License-Identifier: Apache-2.0 */
/* Links planted where the capture creates files by name, each pointing outside the capture:
 * the loss log adump-losses.jsonl (a link, a dangling link, a FIFO), a dump's "<name>.part"
 * (where files cannot be made unnamed), the device folder and a timestamped capture folder.
 * The file outside stays as it was, nothing is created outside, nothing hangs, and the capture
 * either writes a file of its own or reports an error; and a stream directory set below the
 * capture through a link, or with "..". Description: bug fixed in "pipeline:
 * files created by name never through a planted link"; see issue 30. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "adump/adump.h"
#include "adump/host.h"
#include "common/common.h"
#include "helpers.h"

#define TIME_DIR "run"
#define OUTSIDE_TEXT "outside: must stay as it is\n"

static char *root;
static char dir[4200], outside[4200];

static void setup(void)
{
	FILE *f;

	root = t_tmpdir("planted");
	ck_assert_ptr_nonnull(root);
	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	snprintf(outside, sizeof(outside), "%s/outside", root);
	f = fopen(outside, "w");
	ck_assert_ptr_nonnull(f);
	fputs(OUTSIDE_TEXT, f);
	fclose(f);
	t_log_catch();
}

static void teardown(void)
{
	adump_testpoint_disarm_all();
	t_rmtree(root);
	free(root);
}

static void outside_untouched(void)
{
	char *text = t_slurp(root, "outside");

	ck_assert_str_eq(text, OUTSIDE_TEXT);
	free(text);
}

/* @count Adds into @time_dir (NULL: named by the time) with the file layout; the second
 * file's creation fails when @is_lossy, so the session has a loss to record. Return: the
 * session's drops, or a negative error from creating the session. */
static long capture(const char *time_dir, unsigned count, bool is_lossy, uint64_t *completed)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s;
	struct adump_host_stream *hs;
	struct adump_stats st;
	unsigned char data[512];
	int ret;

	memset(data, 0x5a, sizeof(data));
	cfg.dump_path = root;
	cfg.time_dir = time_dir;
	cfg.worker_count = 1;
	ret = adump_session_create(&cfg, &s);
	if (ret < 0)
		return ret;
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	if (is_lossy)
		adump_testpoint_arm("worker.open", -EIO, 2, 0);
	for (unsigned i = 0; i < count; i++) {
		struct adump_host_tensor t = { .data = data, .bytes = sizeof(data),
					       .dtype = ADUMP_DT_UINT8, .format = ADUMP_FORMAT_ND,
					       .dim_count = 1, .dims = { sizeof(data) } };

		ck_assert_int_eq(adump_host_dump(hs, "Add", "planted", &t, 1, NULL, 0), 0);
		adump_host_stream_sync(hs);
	}
	adump_host_stream_close(hs);
	adump_stats_get(s, &st);
	*completed = st.files_completed;
	adump_session_destroy(s);
	adump_testpoint_disarm_all();
	return (long)st.drops;
}

static void plant(const char *name, const char *target)
{
	char link[4400];

	snprintf(link, sizeof(link), "%s/%s", dir, name);
	ck_assert_int_eq(symlink(target, link), 0);
}

/* A link at the loss log's name: not written through; the error says why. */
START_TEST(test_loss_log_link)
{
	uint64_t completed;

	ck_assert_int_eq(mkdir(dir, 0750), 0);
	plant(ADUMP_LOSS_LOG_NAME, outside);
	ck_assert_int_eq(capture(TIME_DIR, 4, true, &completed), 1);
	ck_assert_uint_eq(completed, 3);
	outside_untouched();
	ck_assert_msg(strstr(t_logged, ADUMP_LOSS_LOG_NAME " is a symbolic link"), "%s", t_logged);
}
END_TEST

/* A dangling link at that name: following it would create a file outside. */
START_TEST(test_loss_log_dangling_link)
{
	char target[4400];
	struct stat st;
	uint64_t completed;

	snprintf(target, sizeof(target), "%s/created-outside", root);
	ck_assert_int_eq(mkdir(dir, 0750), 0);
	plant(ADUMP_LOSS_LOG_NAME, target);
	ck_assert_int_eq(capture(TIME_DIR, 3, true, &completed), 1);
	ck_assert_int_eq(lstat(target, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

/* A FIFO at that name: no hang, not written. */
START_TEST(test_loss_log_fifo)
{
	char path[4400];
	uint64_t completed;

	ck_assert_int_eq(mkdir(dir, 0750), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, ADUMP_LOSS_LOG_NAME);
	ck_assert_int_eq(mkfifo(path, 0644), 0);
	ck_assert_int_eq(capture(TIME_DIR, 3, true, &completed), 1);
	ck_assert_msg(strstr(t_logged, "not a regular file"), "%s", t_logged);
}
END_TEST

/* Where files cannot be made unnamed they are written as "<name>.part": a link planted at
 * that name is not written through; the file is published under its own name. */
START_TEST(test_part_name_link)
{
	struct adump_pubfile pf;
	char path[4400], part[4500];
	struct stat st;
	size_t len;
	char *text;

	ck_assert_int_eq(mkdir(dir, 0750), 0);
	snprintf(path, sizeof(path), "%s/dump", dir);
	snprintf(part, sizeof(part), "%s.part", path);
	ck_assert_int_eq(symlink(outside, part), 0);
	adump_testpoint_arm("pubfile.unnamed", -EOPNOTSUPP, 1, 1);
	ck_assert_int_eq(adump_pubfile_open(&pf, path, 0, 0644), 0);
	ck_assert_int_eq(adump_write_all(pf.fd, "ours\n", 5), 0);
	ck_assert_int_eq(adump_pubfile_close(&pf, path, 0, NULL), 0);
	outside_untouched();
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	text = t_read_file(path, &len);
	ck_assert_uint_eq(len, 5);
	ck_assert(!memcmp(text, "ours\n", 5));
	free(text);
}
END_TEST

/* The device folder a link to a folder outside: no dump is written there. */
START_TEST(test_device_dir_link)
{
	char target[4400];
	uint64_t completed;

	snprintf(target, sizeof(target), "%s/elsewhere", root);
	ck_assert_int_eq(mkdir(dir, 0750), 0);
	ck_assert_int_eq(mkdir(target, 0750), 0);
	plant("0", target);
	ck_assert_int_eq(capture(TIME_DIR, 3, false, &completed), 3);
	ck_assert_uint_eq(completed, 0);
	ck_assert_uint_eq(t_count_files(target, ""), 0);
	ck_assert_msg(strstr(t_logged, "not a directory of its own"), "%s", t_logged);
}
END_TEST

/* A link planted at the name of the folder the session names by the time (a shared dump
 * path: every second of the next minute): refused. */
START_TEST(test_time_dir_link)
{
	char target[4400], link[4400], stamp[32];
	time_t now = time(NULL);
	uint64_t completed;

	snprintf(target, sizeof(target), "%s/elsewhere", root);
	ck_assert_int_eq(mkdir(target, 0750), 0);
	for (time_t t = now - 1; t < now + 60; t++) {
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
		snprintf(link, sizeof(link), "%s/%s", root, stamp);
		ck_assert_int_eq(symlink(target, link), 0);
	}
	ck_assert_int_eq(capture(NULL, 1, false, &completed), -ENOTDIR);
	ck_assert_uint_eq(t_count_files(target, ""), 0);
}
END_TEST

/* A session writing below @path (its own folder TIME_DIR) and a host stream of it. */
static void open_stream(const char *path, struct adump_session **s,
			struct adump_host_stream **hs)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;

	cfg.dump_path = path;
	cfg.time_dir = TIME_DIR;
	cfg.worker_count = 1;
	ck_assert_int_eq(adump_session_create(&cfg, s), 0);
	ck_assert_int_eq(adump_host_stream_open(*s, NULL, hs), 0);
}

/* 512 zero bytes: a dump whose content does not matter. */
static unsigned char zeros[512];
static const struct adump_host_tensor small = {
	.data = zeros, .bytes = sizeof(zeros), .dtype = ADUMP_DT_UINT8,
	.format = ADUMP_FORMAT_ND, .dim_count = 1, .dims = { sizeof(zeros) },
};

/* adump_host_stream_set_dir() below dump_path, through a link planted at a step's name
 * (a shared dump path): refused, nothing made or written outside, the stream keeps writing
 * where it did. Description: bug fixed in "session: stream directories below dump_path
 * made without following a link". */
START_TEST(test_stream_dir_link)
{
	struct adump_session *s;
	struct adump_host_stream *hs;
	struct adump_stats st;
	char target[4400], link[4400], path[4400];

	snprintf(target, sizeof(target), "%s/elsewhere", root);
	ck_assert_int_eq(mkdir(target, 0750), 0);
	snprintf(link, sizeof(link), "%s/step1", root);
	ck_assert_int_eq(symlink(target, link), 0);
	open_stream(root, &s, &hs);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "step0/rank0"), 0);
	ck_assert_int_eq(adump_host_dump(hs, "Add", "step0", &small, 1, NULL, 0), 0);
	/* Relative and absolute alike */
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "step1/rank0"), -ENOTDIR);
	ck_assert_msg(strstr(t_logged, "not a directory of its own"), "%s", t_logged);
	snprintf(path, sizeof(path), "%s/step1/rank0", root);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, path), -ENOTDIR);
	snprintf(path, sizeof(path), "%s//step1/rank0", root);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, path), -ENOTDIR);
	ck_assert_int_eq(adump_host_dump(hs, "Add", "still_step0", &small, 1, NULL, 0), 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, 2);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_uint_eq(t_count_files(target, ""), 0);
	snprintf(path, sizeof(path), "%s/step0/rank0/0", root);
	ck_assert_uint_eq(t_count_files(path, ""), 2);
}
END_TEST

/* Renames @dir (below root) to "<dir>.moved" and puts a link to @target at its name: a
 * directory swapped for a link in a shared dump path. */
static void swap_for_link(const char *dir, const char *target)
{
	char from[4400], to[4400];

	snprintf(from, sizeof(from), "%s/%s", root, dir);
	snprintf(to, sizeof(to), "%s/%s.moved", root, dir);
	ck_assert_int_eq(rename(from, to), 0);
	ck_assert_int_eq(symlink(target, from), 0);
}

/* A link swapped in for a stream's directory after it was set: a file whose directory is
 * opened after the swap is refused (-ELOOP, a failed file, the session's error); the files of
 * a directory a worker already holds go on into the directory itself; nothing is written
 * through the link. Description: bug fixed in "pipeline: a session's files below dump_path
 * are made through no link". */
START_TEST(test_stream_dir_swapped)
{
	struct adump_session *s;
	struct adump_host_stream *hs;
	struct adump_stats st;
	char target[4400], path[4400];

	snprintf(target, sizeof(target), "%s/elsewhere", root);
	snprintf(path, sizeof(path), "%s/rank0/0", target);
	ck_assert_int_eq(adump_mkdir_p(path, 0750), 0);
	/* One worker: the directory held is that of the stream's last file. */
	open_stream(root, &s, &hs);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "step1/rank0"), 0);
	ck_assert_int_eq(adump_host_dump(hs, "Add", "before", &small, 1, NULL, 0), 0);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	swap_for_link("step1", target);
	ck_assert_int_eq(adump_host_dump(hs, "Add", "held", &small, 1, NULL, 0), 0);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "step2/rank0"), 0);
	swap_for_link("step2", target);
	ck_assert_int_eq(adump_host_dump(hs, "Add", "after", &small, 1, NULL, 0), 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, 2);
	ck_assert_uint_eq(st.files_failed, 1);
	ck_assert_int_eq(adump_session_destroy(s), -ELOOP);
	ck_assert_msg(strstr(t_logged, "creating"), "%s", t_logged);
	ck_assert_uint_eq(t_count_files(path, ""), 0);
	snprintf(path, sizeof(path), "%s/step1.moved/rank0/0", root);
	ck_assert_uint_eq(t_count_files(path, ""), 2);
}
END_TEST

/* A stream's directory removed and made again after a worker opened it: the next file goes
 * into the new one, not lost in the one removed. */
START_TEST(test_stream_dir_remade)
{
	struct adump_session *s;
	struct adump_host_stream *hs;
	struct adump_stats st;
	char path[4400];

	open_stream(root, &s, &hs);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "step1"), 0);
	ck_assert_int_eq(adump_host_dump(hs, "Add", "before", &small, 1, NULL, 0), 0);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	snprintf(path, sizeof(path), "%s/step1", root);
	ck_assert_int_eq(t_rmtree(path), 0);
	snprintf(path, sizeof(path), "%s/step1/0", root);
	ck_assert_int_eq(adump_mkdir_p(path, 0750), 0);
	ck_assert_int_eq(adump_host_dump(hs, "Add", "again", &small, 1, NULL, 0), 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, 2);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_uint_eq(t_count_files(path, ""), 1);
}
END_TEST

/* A ".." component anywhere in a stream directory: refused before anything is made. */
START_TEST(test_stream_dir_dotdot)
{
	struct adump_session *s;
	struct adump_host_stream *hs;
	char path[4400];
	struct stat sb;

	ck_assert_int_eq(mkdir(dir, 0750), 0);
	snprintf(path, sizeof(path), "%s/", dir);
	open_stream(path, &s, &hs);             /* a trailing slash: the same directory */
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "../up"), -EINVAL);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "step0/../../up"), -EINVAL);
	snprintf(path, sizeof(path), "%s/step0/../../up", dir);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, path), -EINVAL);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, ".."), -EINVAL);
	ck_assert_msg(strstr(t_logged, "a '..' component"), "%s", t_logged);
	/* Names that only hold dots are names; an absolute path below dump_path is below it */
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "step0/..x/..."), 0);
	snprintf(path, sizeof(path), "%s/step1", dir);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, path), 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	snprintf(path, sizeof(path), "%s/up", root);
	ck_assert_int_eq(lstat(path, &sb), -1);
	ck_assert_int_eq(lstat(dir, &sb), 0);
	snprintf(path, sizeof(path), "%s/step0/..x/.../0", dir);
	ck_assert_int_eq(lstat(path, &sb), 0);
	snprintf(path, sizeof(path), "%s/step1/0", dir);
	ck_assert_int_eq(lstat(path, &sb), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("planted_links");
	TCase *tc = tcase_create("links");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_loss_log_link);
	tcase_add_test(tc, test_loss_log_dangling_link);
	tcase_add_test(tc, test_loss_log_fifo);
	tcase_add_test(tc, test_part_name_link);
	tcase_add_test(tc, test_device_dir_link);
	tcase_add_test(tc, test_time_dir_link);
	tcase_add_test(tc, test_stream_dir_link);
	tcase_add_test(tc, test_stream_dir_swapped);
	tcase_add_test(tc, test_stream_dir_remade);
	tcase_add_test(tc, test_stream_dir_dotdot);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return t_run_suite(suite());
}
