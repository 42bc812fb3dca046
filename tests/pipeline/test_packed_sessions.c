/* SPDX-License-Identifier: Apache-2.0 */
/* A packed capture directory shared by several sessions: a second session of the process, or
 * a second process at the same time, writes into the same <dir>/packed and every entry of
 * every session reads back bit-exact afterwards (none truncated, clobbered or lost); links
 * planted where the packed layout creates its index, its segments or its directory are never
 * followed. Description: bug fixed in "pipeline/packed: each session creates its own index
 * and segments (O_EXCL, never through a link)"; see issue 30. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "adump/adump.h"
#include "adump/host.h"
#include "adump/reader.h"
#include "helpers.h"

#define TIME_DIR "run"
#define DUMPS 40                        /* per session */
#define OUTSIDE_TEXT "outside: must stay as it is\n"

static char *root;
static char dir[4200];

static void setup(void)
{
	root = t_tmpdir("psessions");
	ck_assert_ptr_nonnull(root);
	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
}

static void teardown(void)
{
	t_rmtree(root);
	free(root);
}

/* Payload byte @j of dump @i of session @k: every dump's bytes are its own. */
static unsigned char pattern(unsigned k, unsigned i, uint64_t j)
{
	return (unsigned char)(k * 131u + i * 7u + j * 13u + (j >> 8));
}

static uint64_t size_of(unsigned k, unsigned i)
{
	/* Small ones go through the batches, large ones are written file by file. */
	return i % 5 == 4 ? (200u << 10) + i * 3 + k : 100 + i * 37 + k;
}

/* Session @k: DUMPS Adds named "s<k>d<i>" into the shared directory. */
static int capture(unsigned k, uint64_t segment_bytes)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s;
	struct adump_host_stream *hs;
	unsigned char *data = malloc(256u << 10);
	int ret;

	if (!data)
		return -ENOMEM;
	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.stream_max = 2;
	cfg.worker_count = 2;
	cfg.layout = ADUMP_LAYOUT_PACKED;
	cfg.segment_bytes = segment_bytes;
	ret = adump_session_create(&cfg, &s);
	if (ret < 0) {
		free(data);
		return ret;
	}
	ret = adump_host_stream_open(s, NULL, &hs);
	for (unsigned i = 0; ret == 0 && i < DUMPS; i++) {
		uint64_t bytes = size_of(k, i);
		struct adump_host_tensor t = { .data = data, .bytes = bytes, .dtype = ADUMP_DT_UINT8,
					       .format = ADUMP_FORMAT_ND, .dim_count = 1,
					       .dims = { (int64_t)bytes } };
		char name[32];

		for (uint64_t j = 0; j < bytes; j++)
			data[j] = pattern(k, i, j);
		snprintf(name, sizeof(name), "s%ud%u", k, i);
		ret = adump_host_dump(hs, "Add", name, &t, 1, NULL, 0);
		if (i % 8 == 7 && ret == 0)
			ret = adump_host_stream_sync(hs);
	}
	if (ret == 0)
		ret = adump_host_stream_sync(hs);
	if (ret == 0)
		ret = adump_host_stream_close(hs);
	adump_session_destroy(s);
	free(data);
	return ret;
}

/* Every entry of the capture: well formed, its CRC32C right, its payload the pattern of
 * the session and dump its op name gives, and each (session, dump) exactly once. Return:
 * the number of entries. */
static unsigned check_entries(unsigned session_count)
{
	static bool seen[8][DUMPS];
	struct adump_reader_packed *p;
	const struct adump_reader_packed_entry *e;
	struct adump_reader *r;
	unsigned char *buf = malloc(256u << 10);
	unsigned count = 0;
	int ret;

	memset(seen, 0, sizeof(seen));
	ck_assert_int_eq(adump_reader_create(&r), 0);
	ck_assert_int_eq(adump_reader_packed_open(dir, &p), 0);
	while ((ret = adump_reader_packed_next(p, &e)) > 0) {
		const struct adump_reader_header *h;
		unsigned k, i;

		ck_assert_msg(e->status == ADUMP_PACKED_ENTRY, "%s line %u: %s", e->index_path,
			      e->line, e->message);
		ck_assert_msg(adump_reader_open_packed(r, p, e, true) == 0, "%s",
			      adump_reader_error(r));
		h = adump_reader_header(r);
		ck_assert_msg(sscanf(h->op_name, "s%ud%u", &k, &i) == 2, "%s", h->op_name);
		ck_assert_uint_lt(k, session_count);
		ck_assert_uint_lt(i, DUMPS);
		ck_assert_msg(!seen[k][i], "s%ud%u twice", k, i);
		seen[k][i] = true;
		ck_assert_uint_eq(h->tensor_count, 1);
		ck_assert_uint_eq(h->tensors[0].info.bytes, size_of(k, i));
		ck_assert_int_eq(adump_reader_read(r, 0, 0, buf, size_of(k, i)), 0);
		for (uint64_t j = 0; j < size_of(k, i); j++)
			ck_assert_msg(buf[j] == pattern(k, i, j), "%s: byte %llu", e->name,
				      (unsigned long long)j);
		adump_reader_close(r);
		count++;
	}
	ck_assert_int_eq(ret, 0);
	adump_reader_packed_close(p);
	adump_reader_destroy(r);
	free(buf);
	for (unsigned k = 0; k < session_count; k++)
		for (unsigned i = 0; i < DUMPS; i++)
			ck_assert_msg(seen[k][i], "s%ud%u missing", k, i);
	return count;
}

static void verify_passes(void)
{
	char *out;
	int rc = t_run_tool(ADUMP_TOOL, root, "verify --quiet %s", dir);

	out = t_slurp(root, "stdout");
	ck_assert_msg(rc == 0 && strstr(out, ": passed"), "rc %d: %s", rc, out);
	ck_assert_msg(strstr(out, "0 bad"), "%s", out);
	free(out);
}

/* Two sessions of one process, one after the other, into the same directory: the second
 * names its own files; the first one's are whole. */
START_TEST(test_second_session_keeps_the_first)
{
	ck_assert_int_eq(capture(0, 1u << 20), 0);
	ck_assert_int_eq(capture(1, 1u << 20), 0);
	ck_assert_int_eq(capture(2, 1u << 20), 0);
	ck_assert_uint_eq(check_entries(3), 3 * DUMPS);
	ck_assert_uint_eq(t_count_files(dir, ".idx"), 3);       /* one stream: one worker each */
	verify_passes();
}
END_TEST

/* A second process writing at the same time as the first. */
START_TEST(test_two_processes_at_once)
{
	pid_t child[2];
	int status;

	for (unsigned k = 0; k < 2; k++) {
		child[k] = fork();
		ck_assert_int_ge(child[k], 0);
		if (child[k] == 0)
			_exit(capture(k, 256u << 10) == 0 ? 0 : 1);
	}
	for (unsigned k = 0; k < 2; k++) {
		ck_assert_int_eq(waitpid(child[k], &status, 0), child[k]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %u: %d", k,
			      status);
	}
	ck_assert_uint_eq(check_entries(2), 2 * DUMPS);
	verify_passes();
}
END_TEST

static void put_outside(const char *path)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(OUTSIDE_TEXT, f);
	fclose(f);
}

static void outside_untouched(const char *path)
{
	char *text = t_slurp(root, strrchr(path, '/') + 1);

	ck_assert_str_eq(text, OUTSIDE_TEXT);
	free(text);
}

/* Links planted at the names the packed layout creates (an index, the first segments)
 * point outside the capture: the files they point to stay as they were and the capture
 * writes files of its own. */
START_TEST(test_planted_links_not_followed)
{
	char packed[4300], link[4400], target[4400];
	const char *names[] = { "w0.idx", "w1.idx", "w0-0.seg", "w1-0.seg" };
	struct stat st;

	snprintf(packed, sizeof(packed), "%s/packed", dir);
	ck_assert_int_eq(mkdir(dir, 0750), 0);
	ck_assert_int_eq(mkdir(packed, 0750), 0);
	for (unsigned i = 0; i < 4; i++) {
		snprintf(target, sizeof(target), "%s/outside%u", root, i);
		put_outside(target);
		snprintf(link, sizeof(link), "%s/%s", packed, names[i]);
		ck_assert_int_eq(symlink(target, link), 0);
	}
	/* A dangling one too: following it would create a file outside. */
	snprintf(target, sizeof(target), "%s/created-outside", root);
	snprintf(link, sizeof(link), "%s/w1-1.seg", packed);
	ck_assert_int_eq(symlink(target, link), 0);
	ck_assert_int_eq(capture(0, 64u << 10), 0);
	for (unsigned i = 0; i < 4; i++) {
		snprintf(target, sizeof(target), "%s/outside%u", root, i);
		outside_untouched(target);
		snprintf(link, sizeof(link), "%s/%s", packed, names[i]);
		ck_assert_int_eq(lstat(link, &st), 0);
		ck_assert(S_ISLNK(st.st_mode));
	}
	snprintf(target, sizeof(target), "%s/created-outside", root);
	ck_assert_int_eq(lstat(target, &st), -1);
	/* The links are not the capture's (what a reader makes of them is the reader's
	 * business): without them, the capture is whole. */
	for (unsigned i = 0; i < 4; i++) {
		snprintf(link, sizeof(link), "%s/%s", packed, names[i]);
		ck_assert_int_eq(unlink(link), 0);
	}
	snprintf(link, sizeof(link), "%s/w1-1.seg", packed);
	ck_assert_int_eq(unlink(link), 0);
	ck_assert_uint_eq(check_entries(1), DUMPS);
	verify_passes();
}
END_TEST

/* The packed directory itself a link to a directory outside: refused with an error, nothing
 * written there. */
START_TEST(test_planted_packed_dir_refused)
{
	char packed[4300], target[4400];
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;

	snprintf(packed, sizeof(packed), "%s/packed", dir);
	snprintf(target, sizeof(target), "%s/elsewhere", root);
	ck_assert_int_eq(mkdir(dir, 0750), 0);
	ck_assert_int_eq(mkdir(target, 0750), 0);
	ck_assert_int_eq(symlink(target, packed), 0);
	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.layout = ADUMP_LAYOUT_PACKED;
	ck_assert_int_eq(adump_session_create(&cfg, &s), -ENOTDIR);
	ck_assert_ptr_null(s);
	ck_assert_uint_eq(t_count_files(target, ""), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("packed_sessions");
	TCase *tc = tcase_create("sessions");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_second_session_keeps_the_first);
	tcase_add_test(tc, test_two_processes_at_once);
	tcase_add_test(tc, test_planted_links_not_followed);
	tcase_add_test(tc, test_planted_packed_dir_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return t_run_suite(suite());
}
