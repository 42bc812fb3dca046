/* SPDX-License-Identifier: Apache-2.0 */
/* The hand-over journal (issue 30): a dump handed over is either on disk when the process
 * dies or named missing by `adump verify`, which then exits non-zero.
 *   - held: the worker held back (testpoint worker.hold), a child hands over dumps of
 *     large tensors and SIGKILLs itself: none is written, each must be reported missing;
 *   - race: the same without the hold, several times: each dump is on disk whole or
 *     reported missing, and verify passes only when none is missing;
 *   - live: a journal of a process still running is a capture in progress (BUSY);
 *   - clean: a session that ends cleanly leaves no journal, and verify passes;
 *   - forged: a journal that is not one (bad head, a symbolic link) is a problem, not read.
 * ADUMP_TEST_SEED is printed for the race's sizes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <limits.h>
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
#include "common/common.h"
#include "common/journal.h"
#include "helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif
#define TOOL "timeout 300 " ADUMP_TOOL

#define MAX_DUMPS 16

static char *dir;
static uint64_t seed;

static void setup(void)
{
	dir = t_tmpdir("journal");
	ck_assert_ptr_nonnull(dir);
	seed = t_seed();
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

static void quiet(enum adump_log_level level, const char *module, const char *msg, void *user)
{
	(void)level;
	(void)module;
	(void)msg;
	(void)user;
}

static struct adump_session *make_session(const char *out)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s;

	cfg.dump_path = out;
	cfg.time_dir = "run";
	cfg.pool_bytes = 64u << 20;
	cfg.stream_max = 1;
	cfg.io = ADUMP_IO_BUFFERED;
	if (adump_session_create(&cfg, &s) < 0)
		return NULL;
	return s;
}

static int dump_one(struct adump_host_stream *hs, unsigned i, const void *data, uint64_t bytes)
{
	struct adump_host_tensor t = { .data = data, .bytes = bytes, .dtype = ADUMP_DT_UINT8,
				       .format = ADUMP_FORMAT_ND, .dim_count = 1,
				       .dims = { (int64_t)bytes } };
	struct adump_host_op op = ADUMP_HOST_OP_INIT;
	char name[32];

	snprintf(name, sizeof(name), "big_%u", i);
	op.op_type = "Add";
	op.op_name = name;
	op.outputs = &t;
	op.output_count = 1;
	op.timestamp_us = 1000 + i;
	return adump_host_dump_op(hs, &op, NULL);
}

enum child_end { END_KILL, END_WAIT, END_CLOSE };

/* Where the child's stream writes (adump_host_stream_set_dir(), relative to its dump_path,
 * as adump.torch steers each step), or NULL: the session directory. */
static const char *child_stream_dir;

/* A capture of dump 0 (small, synced: on disk), then @count dumps of @bytes each handed
 * over (1..count), then: SIGKILL itself; or tell the parent on @ready_fd and wait to be
 * killed; or end the session cleanly. Never returns. */
static void child_capture(const char *out, bool is_held, unsigned count, const uint64_t *bytes,
			  enum child_end end, int ready_fd)
{
	struct adump_session *s;
	struct adump_host_stream *hs;
	static unsigned char small[4096];
	unsigned char *data;
	uint64_t max = 0;

	adump_set_log_fn(quiet, NULL);
	for (unsigned i = 0; i < count; i++)
		max = bytes[i] > max ? bytes[i] : max;
	data = malloc(max ? max : 1);
	if (!data)
		_exit(2);
	memset(data, 0x5a, max);
	s = make_session(out);
	if (!s || adump_host_stream_open(s, NULL, &hs) < 0)
		_exit(2);
	if (child_stream_dir && adump_host_stream_set_dir(hs, child_stream_dir) < 0)
		_exit(7);
	if (dump_one(hs, 0, small, sizeof(small)) < 0 || adump_host_stream_sync(hs) < 0)
		_exit(3);
	if (is_held)
		adump_testpoint_arm("worker.hold", -EAGAIN, 1, 1);
	for (unsigned i = 1; i <= count; i++)
		if (dump_one(hs, i, data, bytes[i - 1]) < 0)
			_exit(4);
	if (end == END_KILL)
		raise(SIGKILL);
	if (end == END_WAIT) {
		char c = 1;

		if (write(ready_fd, &c, 1) != 1)
			_exit(5);
		for (;;)
			pause();
	}
	if (adump_host_stream_close(hs) < 0 || adump_session_destroy(s) < 0)
		_exit(6);
	_exit(0);
}

/* ---- what verify says ---- */

struct findings {
	int rc;
	int64_t ok, bad, missing, in_progress;
	bool is_reported[MAX_DUMPS + 1];        /* named in a MISSING or BUSY problem */
};

static int64_t count_of(json_object *doc, const char *key)
{
	json_object *v;

	ck_assert_msg(json_object_object_get_ex(doc, key, &v), "verify --json lacks %s", key);
	return json_object_get_int64(v);
}

static struct findings run_verify(const char *path)
{
	struct findings f = { 0 };
	json_object *doc, *problems;
	char *out;

	f.rc = t_run_tool(TOOL, dir, "verify --json %s", path);
	out = t_slurp(dir, "stdout");
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "verify: not JSON: %s", out);
	f.ok = count_of(doc, "ok");
	f.bad = count_of(doc, "bad");
	f.missing = count_of(doc, "missing");
	f.in_progress = count_of(doc, "in_progress");
	ck_assert(json_object_object_get_ex(doc, "problems", &problems));
	for (size_t i = 0; i < json_object_array_length(problems); i++) {
		json_object *p = json_object_array_get_idx(problems, i), *kind, *msg;
		const char *at;
		unsigned n;

		ck_assert(json_object_object_get_ex(p, "kind", &kind));
		ck_assert(json_object_object_get_ex(p, "message", &msg));
		if (strcmp(json_object_get_string(kind), "missing") &&
		    strcmp(json_object_get_string(kind), "in_progress"))
			continue;
		at = strstr(json_object_get_string(msg), "/0/Add.big_");
		ck_assert_msg(at && sscanf(at, "/0/Add.big_%u.", &n) == 1 && n <= MAX_DUMPS,
			      "a report naming no dump: %s", json_object_get_string(msg));
		f.is_reported[n] = true;
	}
	json_object_put(doc);
	free(out);
	return f;
}

/* Whether <run>/0 holds dump @i under its final name. */
static bool is_on_disk(const char *run, unsigned i)
{
	char pattern[64], path[PATH_MAX + 8];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "%s/0", run);
	snprintf(pattern, sizeof(pattern), "Add.big_%u.", i);
	d = opendir(path);
	if (!d)
		return false;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, pattern, strlen(pattern)) && !strstr(e->d_name, ".failed") &&
		    !strstr(e->d_name, ".part"))
			found = true;
	closedir(d);
	return found;
}

static size_t journal_count;

static int count_journal(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	journal_count += flag == FTW_F && strstr(path, "/" ADUMP_JOURNAL_PREFIX) != NULL;
	return 0;
}

static size_t journals_under(const char *path)
{
	journal_count = 0;
	ck_assert_int_eq(nftw(path, count_journal, 16, FTW_PHYS), 0);
	return journal_count;
}

static pid_t spawn(const char *out, bool is_held, unsigned count, const uint64_t *bytes,
		   enum child_end end, int ready_fd)
{
	pid_t pid;

	ck_assert_int_eq(mkdir(out, 0755), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		child_capture(out, is_held, count, bytes, end, ready_fd);
	return pid;
}

static void reap_killed(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "the capture ended otherwise (status %d)", status);
}

/* Deterministic: nothing handed over after the hold is written, so each is reported. */
START_TEST(test_kill_held)
{
	uint64_t bytes[4] = { 4u << 20, 4u << 20, 4u << 20, 4u << 20 };
	char out[PATH_MAX], run[PATH_MAX + 8];
	struct findings f;

	snprintf(out, sizeof(out), "%s/held", dir);
	snprintf(run, sizeof(run), "%s/run", out);
	reap_killed(spawn(out, true, 4, bytes, END_KILL, -1));
	ck_assert_uint_eq(journals_under(run), 1);
	f = run_verify(run);
	ck_assert_int_eq(f.ok, 1);              /* dump 0, written before the hold */
	ck_assert_int_eq(f.bad, 0);
	ck_assert_int_eq(f.missing, 4);
	ck_assert_int_eq(f.in_progress, 0);
	ck_assert_int_eq(f.rc, 1);
	for (unsigned i = 1; i <= 4; i++) {
		ck_assert_msg(!is_on_disk(run, i), "dump %u written despite the hold", i);
		ck_assert_msg(f.is_reported[i], "dump %u neither on disk nor reported missing", i);
	}
	ck_assert(!f.is_reported[0]);
}
END_TEST

/* The same for a stream writing into a directory of its own (what adump.torch does for each
 * step): its journal lies there, and verify of the whole capture names each dump. Before,
 * only the session directory had one, and verify passed. */
START_TEST(test_kill_held_stream_dir)
{
	uint64_t bytes[3] = { 1u << 20, 1u << 20, 1u << 20 };
	char out[PATH_MAX], sub[PATH_MAX + 8];
	struct findings f;
	pid_t pid;
	int status;

	child_stream_dir = "step1/rank0";
	snprintf(out, sizeof(out), "%s/held-dir", dir);
	snprintf(sub, sizeof(sub), "%s/step1/rank0", out);
	reap_killed(spawn(out, true, 3, bytes, END_KILL, -1));
	ck_assert_uint_eq(journals_under(sub), 1);
	f = run_verify(out);
	ck_assert_int_eq(f.ok, 1);
	ck_assert_int_eq(f.missing, 3);
	ck_assert_int_eq(f.rc, 1);
	for (unsigned i = 1; i <= 3; i++) {
		ck_assert_msg(!is_on_disk(sub, i), "dump %u written despite the hold", i);
		ck_assert_msg(f.is_reported[i], "dump %u neither on disk nor reported missing", i);
	}
	/* A clean end there leaves no journal anywhere, and verify passes. */
	snprintf(out, sizeof(out), "%s/clean-dir", dir);
	pid = spawn(out, false, 3, bytes, END_CLOSE, -1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
	ck_assert_uint_eq(journals_under(out), 0);
	f = run_verify(out);
	ck_assert_int_eq(f.ok, 4);
	ck_assert_int_eq(f.rc, 0);
	child_stream_dir = NULL;
}
END_TEST

/* The race of issue 30: killed right after the last hand-over returns, writes in flight. */
START_TEST(test_kill_race)
{
	unsigned missing_total = 0, written_total = 0;
	uint64_t rng = seed;

	for (unsigned k = 0; k < 6; k++) {
		uint64_t bytes[8];
		char out[PATH_MAX], run[PATH_MAX + 8];
		struct findings f;
		unsigned missing = 0;

		for (unsigned i = 0; i < 8; i++)
			bytes[i] = (1u << 20) + t_rand(&rng) % (6u << 20);
		snprintf(out, sizeof(out), "%s/race-%u", dir, k);
		snprintf(run, sizeof(run), "%s/run", out);
		reap_killed(spawn(out, false, 8, bytes, END_KILL, -1));
		f = run_verify(run);
		ck_assert_int_eq(f.bad, 0);
		for (unsigned i = 0; i <= 8; i++) {
			bool is_there = is_on_disk(run, i);

			ck_assert_msg(is_there || f.is_reported[i], "seed %llu, run %u: dump %u "
				      "neither on disk nor reported missing",
				      (unsigned long long)seed, k, i);
			ck_assert_msg(!(is_there && f.is_reported[i]), "dump %u on disk and reported "
				      "missing", i);
			missing += f.is_reported[i];
			written_total += is_there;
		}
		ck_assert_int_eq(f.missing, missing);
		ck_assert_int_eq(f.rc, missing ? 1 : 0);
		missing_total += missing;
	}
	fprintf(stderr, "test_journal: 6 kills: %u dumps on disk, %u reported missing\n",
		written_total, missing_total);
}
END_TEST

/* A journal whose process runs: its dumps are not yet written, a capture in progress. */
START_TEST(test_live_in_progress)
{
	uint64_t bytes[2] = { 1u << 20, 1u << 20 };
	char out[PATH_MAX], run[PATH_MAX + 8], c;
	struct findings f;
	int fds[2];
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	snprintf(out, sizeof(out), "%s/live", dir);
	snprintf(run, sizeof(run), "%s/run", out);
	pid = spawn(out, true, 2, bytes, END_WAIT, fds[1]);
	ck_assert_int_eq(read(fds[0], &c, 1), 1);
	f = run_verify(run);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	reap_killed(pid);
	close(fds[0]);
	close(fds[1]);
	ck_assert_int_eq(f.in_progress, 2);
	ck_assert_int_eq(f.missing, 0);
	ck_assert(f.is_reported[1] && f.is_reported[2]);
	ck_assert_int_eq(f.rc, 1);
	/* Once the process is gone the same journal names them missing. */
	f = run_verify(run);
	ck_assert_int_eq(f.missing, 2);
	ck_assert_int_eq(f.in_progress, 0);
}
END_TEST

/* A file of @bytes zero bytes, @name under @dir. */
static int plant(const char *dir, const char *name, size_t bytes)
{
	static const char zeros[4096];
	char path[PATH_MAX + 64];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	if (bytes > sizeof(zeros) || (bytes && write(fd, zeros, bytes) != (ssize_t)bytes))
		ret = -EIO;
	close(fd);
	return ret;
}

/* A clean end removes the journal; verify passes. */
START_TEST(test_clean_close)
{
	uint64_t bytes[4] = { 2u << 20, 3u << 20, 1u << 20, 5u << 20 };
	char out[PATH_MAX], run[PATH_MAX + 8];
	struct findings f;
	int status;
	pid_t pid;

	snprintf(out, sizeof(out), "%s/clean", dir);
	snprintf(run, sizeof(run), "%s/run", out);
	pid = spawn(out, false, 4, bytes, END_CLOSE, -1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
	ck_assert_uint_eq(journals_under(run), 0);
	f = run_verify(run);
	ck_assert_int_eq(f.ok, 5);
	ck_assert_int_eq(f.missing + f.in_progress + f.bad, 0);
	ck_assert_int_eq(f.rc, 0);
	/* A process killed while it made its journal (before its head was written: empty, or
	 * allocated and all zeros) had handed nothing over: no problem to report (test_kill's
	 * early kills found one as bad). */
	ck_assert_int_eq(plant(run, "adump-journal-2147483000-0", 0), 0);
	ck_assert_int_eq(plant(run, "adump-journal-2147483000-1", 2 * ADUMP_JOURNAL_SLOT_BYTES), 0);
	f = run_verify(run);
	ck_assert_int_eq(f.ok, 5);
	ck_assert_int_eq(f.missing + f.in_progress + f.bad, 0);
	ck_assert_int_eq(f.rc, 0);
}
END_TEST

/* While a session is open its journal exists; in-process, so no fork. */
START_TEST(test_journal_while_open)
{
	static unsigned char data[8192];
	struct adump_host_stream *hs;
	struct adump_session *s;
	char run[PATH_MAX];

	adump_set_log_fn(quiet, NULL);
	snprintf(run, sizeof(run), "%s/run", dir);
	s = make_session(dir);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(journals_under(run), 1);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	ck_assert_int_eq(dump_one(hs, 1, data, sizeof(data)), 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_uint_eq(journals_under(run), 0);
}
END_TEST

/* The only journal file in @path (not below), its inode in *@ino; 0 if none, 2 if more. */
static unsigned journal_in(const char *path, ino_t *ino)
{
	struct dirent *e;
	unsigned n = 0;
	DIR *d = opendir(path);

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, ADUMP_JOURNAL_PREFIX, strlen(ADUMP_JOURNAL_PREFIX))) {
			*ino = e->d_ino;
			n++;
		}
	closedir(d);
	return n;
}

/* A stream that moves from directory to directory (a training step each) takes its
 * journal along: the one of the directory it left, emptied and kept in the session's
 * directory, becomes a later directory's (the same file), and verify passes a kept one by.
 * A file put where a kept journal was is neither used nor removed. (The first move makes
 * a second journal: the new directory's is made before the old one's is let go.) */
START_TEST(test_journal_moves_with_the_stream)
{
	static unsigned char data[8192];
	char run[PATH_MAX], path[PATH_MAX + 16];
	struct adump_host_stream *hs;
	struct adump_session *s;
	ino_t seen[4] = { 0 }, planted = 0, ino;
	struct findings f;
	struct dirent *e;
	DIR *d;

	adump_set_log_fn(quiet, NULL);
	snprintf(run, sizeof(run), "%s/run", dir);
	s = make_session(dir);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (unsigned i = 0; i < 4; i++) {
		char rel[16];

		if (i == 3) {
			/* A file put in place of the kept journal (step1's). */
			d = opendir(run);
			ck_assert_ptr_nonnull(d);
			while ((e = readdir(d)))
				if (!strncmp(e->d_name, ADUMP_JOURNAL_PREFIX,
					     strlen(ADUMP_JOURNAL_PREFIX)) &&
				    e->d_ino == seen[1]) {
					struct stat st;

					snprintf(path, sizeof(path), "%s/%s", run, e->d_name);
					ck_assert_int_eq(unlink(path), 0);
					ck_assert_int_eq(plant(run, e->d_name, 100), 0);
					ck_assert_int_eq(stat(path, &st), 0);
					planted = st.st_ino;
				}
			closedir(d);
			ck_assert_uint_ne(planted, 0);
		}
		snprintf(rel, sizeof(rel), "step%u", i);
		ck_assert_int_eq(adump_host_stream_set_dir(hs, rel), 0);
		ck_assert_int_eq(dump_one(hs, i, data, sizeof(data)), 0);
		snprintf(path, sizeof(path), "%s/%s", dir, rel);
		ck_assert_uint_eq(journal_in(path, &seen[i]), 1);
		if (i) {
			snprintf(path, sizeof(path), "%s/step%u", dir, i - 1);
			ck_assert_uint_eq(journal_in(path, &ino), 0);
		}
		ck_assert_int_eq(adump_host_stream_sync(hs), 0);
		if (i == 1) {
			/* Both kept now: the session's own journal and step0's. */
			ck_assert_uint_eq(journals_under(run), 2);
			f = run_verify(run);
			ck_assert_int_eq(f.missing + f.in_progress + f.bad, 0);
		}
	}
	/* step1's journal was made while step0's was in use; step2's is step0's, moved. */
	ck_assert_uint_ne(seen[1], seen[0]);
	ck_assert_uint_eq(seen[2], seen[0]);
	/* step3's is not the planted file: a new one (which may have the inode number step1's
	 * had: that file is gone once let go). */
	ck_assert_uint_ne(seen[3], planted);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	/* At the end only the planted file is left, where it was put. */
	ck_assert_uint_eq(journals_under(dir), 1);
	ck_assert_uint_eq(journals_under(run), 1);
}
END_TEST

/* What is not a journal is a problem and never read as one. */
START_TEST(test_forged_journal)
{
	static const char junk[ADUMP_JOURNAL_SLOT_BYTES * 2] = "not a journal";
	char run[PATH_MAX], path[PATH_MAX + 64], link_path[PATH_MAX + 64];
	struct findings f;
	int fd;

	snprintf(run, sizeof(run), "%s/forged", dir);
	ck_assert_int_eq(mkdir(run, 0755), 0);
	snprintf(path, sizeof(path), "%s/" ADUMP_JOURNAL_PREFIX "1-0", run);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	f = run_verify(run);
	ck_assert_int_eq(f.bad, 1);
	ck_assert_int_eq(f.rc, 1);
	/* A link at a journal's name, given by name: refused, not followed. */
	unlink(path);
	snprintf(link_path, sizeof(link_path), "%s/" ADUMP_JOURNAL_PREFIX "2-0", run);
	ck_assert_int_eq(symlink("/etc/passwd", link_path), 0);
	f = run_verify(link_path);
	ck_assert_int_eq(f.bad, 1);
	ck_assert_int_eq(f.rc, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("journal");

	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_kill_held);
	tcase_add_test(tc, test_kill_held_stream_dir);
	tcase_add_test(tc, test_kill_race);
	tcase_add_test(tc, test_live_in_progress);
	tcase_add_test(tc, test_clean_close);
	tcase_add_test(tc, test_journal_while_open);
	tcase_add_test(tc, test_journal_moves_with_the_stream);
	tcase_add_test(tc, test_forged_journal);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
