/* SPDX-License-Identifier: Apache-2.0 */
/* `adump verify --clean` on part of a packed capture: given a segment, or one index and the
 * segments, it reads the whole capture first and removes only what no index of it holds; an
 * index that is a FIFO, a link or unreadable, or segments without any index, make it refuse
 * with an error and remove nothing. Description: bug fixed in "tools/verify: --clean reads
 * the whole capture and acts only when every index of it reads"; see issue 30. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif
#define TOOL "timeout 120 " ADUMP_TOOL
#define ENTRIES 16                      /* 2 streams x 8 ops */

static char *dir;
static char run[PATH_MAX], packed[PATH_MAX + 16];

/* The files of packed/ and their sizes, to tell that nothing was touched. */
struct listing {
	char names[32][64];
	off_t sizes[32];
	unsigned count;
};

static void list_packed(struct listing *l)
{
	DIR *d = opendir(packed);
	struct dirent *e;
	struct stat st;
	char path[PATH_MAX + 96];

	ck_assert_ptr_nonnull(d);
	l->count = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		ck_assert_uint_lt(l->count, 32);
		snprintf(path, sizeof(path), "%s/%s", packed, e->d_name);
		ck_assert_int_eq(lstat(path, &st), 0);
		snprintf(l->names[l->count], sizeof(l->names[0]), "%s", e->d_name);
		l->sizes[l->count++] = st.st_size;
	}
	closedir(d);
}

static void same_listing(const struct listing *a, const struct listing *b)
{
	ck_assert_uint_eq(a->count, b->count);
	for (unsigned i = 0; i < a->count; i++) {
		unsigned j;

		for (j = 0; j < b->count && strcmp(a->names[i], b->names[j]); j++)
			;
		ck_assert_msg(j < b->count, "%s gone", a->names[i]);
		ck_assert_msg(a->sizes[i] == b->sizes[j], "%s: %lld bytes, now %lld", a->names[i],
			      (long long)a->sizes[i], (long long)b->sizes[j]);
	}
}

static void setup(void)
{
	char parent[PATH_MAX];
	DIR *d;
	struct dirent *e;

	dir = t_tmpdir("vclean");
	ck_assert_ptr_nonnull(dir);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "bench --out %s/cap --sink packed --streams 2 "
				    "--ops 8 --min-size 64 --max-size 8K --no-warmup", dir), 0);
	snprintf(parent, sizeof(parent), "%s/cap", dir);
	d = opendir(parent);
	ck_assert_ptr_nonnull(d);
	run[0] = '\0';
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			snprintf(run, sizeof(run), "%s/%s", parent, e->d_name);
	closedir(d);
	ck_assert(run[0]);
	snprintf(packed, sizeof(packed), "%s/packed", run);
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

static off_t size_of(const char *name)
{
	char path[PATH_MAX + 96];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", packed, name);
	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void append(const char *name, const char *bytes)
{
	char path[PATH_MAX + 96];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", packed, name);
	fd = open(path, O_WRONLY | O_APPEND);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, bytes, strlen(bytes)), (ssize_t)strlen(bytes));
	close(fd);
}

/* `adump verify --json` of the capture: passes with every entry ok. */
static void capture_whole(void)
{
	json_object *doc, *v;
	char *out;
	int rc = t_run_tool(TOOL, dir, "verify --json --quiet %s", run);

	out = t_slurp(dir, "stdout");
	doc = json_tokener_parse(out);
	ck_assert_msg(doc, "%s", out);
	ck_assert(json_object_object_get_ex(doc, "ok", &v));
	ck_assert_int_eq(json_object_get_int64(v), ENTRIES);
	ck_assert_msg(rc == 0, "%s", out);
	json_object_put(doc);
	free(out);
}

/* One segment as the argument: its entries are indexed (the whole capture is read), so
 * nothing goes; bytes after its last entry do. */
START_TEST(test_segment_argument)
{
	struct listing before, after;
	off_t bytes = size_of("w0-0.seg");
	int rc;

	ck_assert_int_gt(bytes, 0);
	list_packed(&before);
	rc = t_run_tool(TOOL, dir, "verify --clean --quiet %s/w0-0.seg", packed);
	ck_assert_int_eq(rc, 0);
	list_packed(&after);
	same_listing(&before, &after);
	capture_whole();
	append("w0-0.seg", "unindexed tail");
	rc = t_run_tool(TOOL, dir, "verify --clean --quiet %s/w0-0.seg", packed);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(size_of("w0-0.seg"), bytes);
	capture_whole();
}
END_TEST

/* One index and every segment: the other index's segment stays whole. */
START_TEST(test_index_subset_argument)
{
	struct listing before, after;
	int rc;

	ck_assert_int_gt(size_of("w1.idx"), 0);
	ck_assert_int_gt(size_of("w1-0.seg"), 0);
	list_packed(&before);
	rc = t_run_tool(TOOL, dir, "verify --clean --quiet %s/w0.idx %s/w0-0.seg %s/w1-0.seg",
			packed, packed, packed);
	ck_assert_int_eq(rc, 0);
	list_packed(&after);
	same_listing(&before, &after);
	/* The packed directory itself stands for the capture too. */
	rc = t_run_tool(TOOL, dir, "verify --clean --quiet %s/", packed);
	ck_assert_int_eq(rc, 0);
	list_packed(&after);
	same_listing(&before, &after);
	capture_whole();
}
END_TEST

/* An index that is not a regular file, or does not read: --clean removes nothing at all (not
 * the segment it may describe, not a leftover elsewhere) and says why. */
static void refused(const char *what)
{
	struct listing before, after;
	char part[PATH_MAX + 32], device[PATH_MAX + 8], *err;
	struct stat st;
	int rc;

	/* A leftover beside the packed files, which a clean would remove. */
	snprintf(device, sizeof(device), "%s/0", run);
	mkdir(device, 0750);
	snprintf(part, sizeof(part), "%s/Add.x.1.2.3.part", device);
	close(open(part, O_WRONLY | O_CREAT, 0644));
	append("w1-0.seg", "tail");
	list_packed(&before);
	rc = t_run_tool(TOOL, dir, "verify --clean --quiet %s", run);
	err = t_slurp(dir, "stderr");
	ck_assert_msg(rc == 1, "rc %d: %s", rc, err);
	ck_assert_msg(strstr(err, what) && strstr(err, "nothing removed"), "%s", err);
	free(err);
	list_packed(&after);
	same_listing(&before, &after);
	ck_assert_int_eq(stat(part, &st), 0);
	/* The same through a segment argument. */
	rc = t_run_tool(TOOL, dir, "verify --clean --quiet %s/w0-0.seg", packed);
	ck_assert_int_eq(rc, 1);
	list_packed(&after);
	same_listing(&before, &after);
	/* Without --clean it is a problem. */
	rc = t_run_tool(TOOL, dir, "verify --quiet %s", run);
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(stat(part, &st), 0);
}

START_TEST(test_fifo_index_refused)
{
	char path[PATH_MAX + 96], saved[PATH_MAX + 96];

	snprintf(path, sizeof(path), "%s/w1.idx", packed);
	snprintf(saved, sizeof(saved), "%s/saved-w1", dir);
	ck_assert_int_eq(rename(path, saved), 0);
	ck_assert_int_eq(mkfifo(path, 0644), 0);
	refused("w1.idx: index not a regular file (a FIFO)");
}
END_TEST

START_TEST(test_link_index_refused)
{
	char path[PATH_MAX + 96], saved[PATH_MAX + 96];

	snprintf(path, sizeof(path), "%s/w1.idx", packed);
	snprintf(saved, sizeof(saved), "%s/saved-w1", dir);
	ck_assert_int_eq(rename(path, saved), 0);
	ck_assert_int_eq(symlink(saved, path), 0);
	refused("w1.idx: index not a regular file (a symbolic link)");
}
END_TEST

START_TEST(test_unreadable_index_refused)
{
	char path[PATH_MAX + 96];

	if (geteuid() == 0) {
		printf("skipped: root reads a file of mode 0\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/w1.idx", packed);
	ck_assert_int_eq(chmod(path, 0), 0);
	refused("w1.idx: index Permission denied");
	chmod(path, 0644);
}
END_TEST

/* Segments whose indexes are all gone: what they hold is unknown, so they stay. */
START_TEST(test_segments_without_index_refused)
{
	char path[PATH_MAX + 96], saved[PATH_MAX + 96];

	for (unsigned k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/w%u.idx", packed, k);
		snprintf(saved, sizeof(saved), "%s/saved-w%u", dir, k);
		ck_assert_int_eq(rename(path, saved), 0);
	}
	refused("and no index");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("verify_clean");
	TCase *tc = tcase_create("clean");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_segment_argument);
	tcase_add_test(tc, test_index_subset_argument);
	tcase_add_test(tc, test_fifo_index_refused);
	tcase_add_test(tc, test_link_index_refused);
	tcase_add_test(tc, test_unreadable_index_refused);
	tcase_add_test(tc, test_segments_without_index_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return t_run_suite(suite());
}
