/* SPDX-License-Identifier: Apache-2.0 */
/* common/pubfile.c: a file shows up under its name only complete, replaces an older one
 * atomically, and a failed one is kept as <name>.failed or removed; both with O_TMPFILE and
 * with the "<name>.part" fallback of filesystems without it, and where unnamed files cannot
 * be linked in (copied out; later files use ".part"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "helpers.h"

static const char payload[] = "complete dump bytes";

/* Writes @text into a new pubfile for @path and leaves it open. */
static void start(struct adump_pubfile *pf, const char *path, const char *text)
{
	ck_assert_int_eq(adump_pubfile_open(pf, path, 0, 0640), 0);
	ck_assert_int_ge(pf->fd, 0);
	ck_assert_int_eq(adump_write_all(pf->fd, text, strlen(text)), 0);
}

/* The end of every test: no testpoint left armed, the directory gone. */
static void finish(char *dir)
{
	adump_testpoint_disarm_all();
	ck_assert_int_eq(t_rmtree(dir), 0);
	free(dir);
}

static void assert_content(const char *path, const char *text)
{
	size_t len;
	char *data = t_read_file(path, &len);

	ck_assert_msg(data, "%s missing", path);
	ck_assert_uint_eq(len, strlen(text));
	ck_assert_mem_eq(data, text, len);
	free(data);
}

/* @path, just published, is @dir's only file and has the mode asked for under umask @um. */
static void assert_sole_file(const char *dir, const char *path, mode_t um)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0640 & ~um);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
}

static void check_publish(int use_part)
{
	char *dir = t_tmpdir("pubfile");
	char path[4200];
	struct adump_pubfile pf;
	mode_t um = umask(0);

	umask(um);
	if (use_part)
		adump_testpoint_arm("pubfile.unnamed", -EOPNOTSUPP, 1, 1);
	snprintf(path, sizeof(path), "%s/Add.op.1.2.3", dir);
	start(&pf, path, payload);
	ck_assert_int_eq(pf.is_unnamed, !use_part);
	/* While written, nothing carries the final name; only the fallback has a .part. */
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_uint_eq(t_count_files(dir, ""), use_part ? 1 : 0);
	ck_assert_uint_eq(t_count_files(dir, ".part"), use_part ? 1 : 0);
	ck_assert_int_eq(adump_pubfile_close(&pf, path, 0, ".failed"), 0);
	ck_assert_int_eq(pf.fd, -1);
	assert_content(path, payload);
	assert_sole_file(dir, path, um);

	/* A second file of the same name replaces the first whole. */
	start(&pf, path, "newer");
	assert_content(path, payload);
	ck_assert_int_eq(adump_pubfile_close(&pf, path, 0, NULL), 0);
	assert_content(path, "newer");
	ck_assert_uint_eq(t_count_files(dir, ""), 1);

	/* A failed file: kept for inspection under the suffix, the good one untouched. */
	start(&pf, path, "partial");
	ck_assert_int_eq(adump_pubfile_close(&pf, path, -ADUMP_ERR_WRITE, ".failed"),
			 -ADUMP_ERR_WRITE);
	assert_content(path, "newer");
	snprintf(path + strlen(path), sizeof(path) - strlen(path), ".failed");
	assert_content(path, "partial");
	ck_assert_uint_eq(t_count_files(dir, ""), 2);
	/* ... and without a suffix, gone without a trace. */
	path[strlen(path) - strlen(".failed")] = '\0';
	start(&pf, path, "lost");
	ck_assert_int_eq(adump_pubfile_close(&pf, path, -EIO, NULL), -EIO);
	assert_content(path, "newer");
	ck_assert_uint_eq(t_count_files(dir, ""), 2);
	ck_assert_uint_eq(t_count_files(dir, ".part"), 0);

	finish(dir);
}

START_TEST(test_publish_unnamed)
{
	check_publish(0);
}
END_TEST

START_TEST(test_publish_part_fallback)
{
	check_publish(1);
}
END_TEST

/* Where unnamed files cannot be linked in (no /proc, no CAP_DAC_READ_SEARCH), the data is
 * copied out under the name, nothing is lost, and later files fall back to ".part". */
START_TEST(test_publish_without_link)
{
	char *dir = t_tmpdir("pubfile");
	char path[4200];
	struct adump_pubfile pf;
	mode_t um = umask(0);

	umask(um);
	adump_testpoint_arm("pubfile.link", -EPERM, 1, 1);
	snprintf(path, sizeof(path), "%s/Add.op.1.2.3", dir);
	start(&pf, path, "kept whole");
	ck_assert(pf.is_unnamed);
	ck_assert_int_eq(adump_pubfile_close(&pf, path, 0, ".failed"), 0);
	assert_content(path, "kept whole");
	assert_sole_file(dir, path, um);
	/* The next file is made the old way. */
	start(&pf, path, "second");
	ck_assert(!pf.is_unnamed);
	ck_assert_uint_eq(t_count_files(dir, ".part"), 1);
	ck_assert_int_eq(adump_pubfile_close(&pf, path, 0, NULL), 0);
	assert_content(path, "second");
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	finish(dir);
}
END_TEST

/* Where linkat(AT_EMPTY_PATH) is refused (a kernel that asks for CAP_DAC_READ_SEARCH), the
 * file is linked in through /proc/self/fd, and so are later ones: still unnamed until whole. */
START_TEST(test_publish_without_empty_path)
{
	char *dir = t_tmpdir("pubfile");
	char path[4200];
	struct adump_pubfile pf;

	adump_testpoint_arm("pubfile.empty_path", -ENOENT, 1, 1);
	snprintf(path, sizeof(path), "%s/Add.op.7.8.9", dir);
	for (int i = 0; i < 2; i++) {
		start(&pf, path, i ? "second" : "first");
		ck_assert(pf.is_unnamed);
		ck_assert_uint_eq(t_count_files(dir, ""), i);
		ck_assert_int_eq(adump_pubfile_close(&pf, path, 0, NULL), 0);
		assert_content(path, i ? "second" : "first");
		ck_assert_uint_eq(t_count_files(dir, ""), 1);
	}
	finish(dir);
}
END_TEST

/* A failed unnamed file that cannot be linked in is copied out as .failed. (Its own test:
 * the fallback above lasts for the rest of the process.) */
START_TEST(test_failed_without_link)
{
	char *dir = t_tmpdir("pubfile");
	char path[4200], failed[4300];
	struct adump_pubfile pf;

	snprintf(path, sizeof(path), "%s/Add.op.4.5.6", dir);
	snprintf(failed, sizeof(failed), "%s.failed", path);
	start(&pf, path, "partial");                  /* opened before linking breaks */
	adump_testpoint_arm("pubfile.link", -EPERM, 1, 1);
	ck_assert(pf.is_unnamed);
	ck_assert_int_eq(adump_pubfile_close(&pf, path, -EIO, ".failed"), -EIO);
	ck_assert_int_eq(access(path, F_OK), -1);
	assert_content(failed, "partial");
	finish(dir);
}
END_TEST

START_TEST(test_open_errors)
{
	char *dir = t_tmpdir("pubfile");
	char path[4200];
	struct adump_pubfile pf;

	/* A directory that does not exist is an error from the open, nothing created. */
	snprintf(path, sizeof(path), "%s/missing/file", dir);
	ck_assert_int_eq(adump_pubfile_open(&pf, path, 0, 0640), -ENOENT);
	ck_assert_int_eq(pf.fd, -1);
	/* Closing what never opened reports the caller's status (or EBADF). */
	ck_assert_int_eq(adump_pubfile_close(&pf, path, -EIO, ".failed"), -EIO);
	ck_assert_int_eq(adump_pubfile_close(&pf, path, 0, NULL), -EBADF);
	ck_assert_uint_eq(t_count_files(dir, ""), 0);
	finish(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pubfile");
	TCase *tc = tcase_create("pubfile");

	tcase_add_test(tc, test_publish_unnamed);
	tcase_add_test(tc, test_publish_part_fallback);
	/* In this order, so that CK_FORK=no works too: the fallback to ".part" that
	 * test_publish_without_link sets lasts for the rest of the process. */
	tcase_add_test(tc, test_failed_without_link);
	tcase_add_test(tc, test_publish_without_link);
	tcase_add_test(tc, test_publish_without_empty_path);
	tcase_add_test(tc, test_open_errors);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
