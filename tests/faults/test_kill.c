/* SPDX-License-Identifier: Apache-2.0 */
/* SIGKILL at random points of a 4-stream capture: a child process captures Adds without end
 * (file sink buffered and O_DIRECT, both also with files made as <name>.part, and the packed
 * sink) and is killed after a seeded random delay, 20 times in all. Afterwards:
 *   - every named file (and packed entry) is a whole dump: `adump verify` finds nothing bad
 *     or failed, and an independent parse (protobuf-c directly, not the reader) agrees;
 *   - leftovers (.part files, a cut index line, unindexed segment bytes) are listed by
 *     `adump verify` and removed by `adump verify --clean`, after which the capture passes
 *     (or holds nothing, for a kill before the first file) and unpacks whole, unless dumps
 *     handed over were never written: those the journal names stay reported (missing),
 *     and verify exits 1 for them.
 * ADUMP_TEST_SEED replays the delays. */
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
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "adump/adump.h"
#include "adump/reader.h"
#include "common/common.h"
#include "fault_helpers.h"
#include "helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif
#define TOOL "timeout 300 " ADUMP_TOOL

#define STREAMS 4
#define MAX_BYTES (64u << 10)           /* largest tensor: keeps 20 runs to some 100 MB */

enum kind { KIND_BUFFERED, KIND_DIRECT, KIND_PACKED, KIND_COUNT };

static const char *const kind_names[KIND_COUNT] = { "buffered", "direct", "packed" };
static char *dir;
static uint64_t seed;

static void setup(void)
{
	dir = t_tmpdir("kill");
	ck_assert_ptr_nonnull(dir);
	seed = t_seed();
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

/* ---- the child: capture until killed ---- */

static void quiet(enum adump_log_level level, const char *module, const char *msg, void *user)
{
	(void)level;
	(void)module;
	(void)msg;
	(void)user;
}

/* Never returns: captures into <out>/run until a signal ends the process. */
static void child_capture(const char *out, enum kind kind, bool is_part, uint64_t rng)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct t_load load = { .stream_count = STREAMS, .max_bytes = MAX_BYTES, .seed = rng };
	struct adump_session *s;

	adump_set_log_fn(quiet, NULL);
	/* Files made as <name>.part and renamed, as where O_TMPFILE cannot be used. */
	if (is_part)
		adump_testpoint_arm("pubfile.unnamed", -EOPNOTSUPP, 1, 1);
	cfg.dump_path = out;
	cfg.time_dir = "run";
	cfg.pool_bytes = 32u << 20;
	cfg.stream_max = STREAMS;
	cfg.io = kind == KIND_DIRECT ? ADUMP_IO_DIRECT : ADUMP_IO_BUFFERED;
	cfg.layout = kind == KIND_PACKED ? ADUMP_LAYOUT_PACKED : ADUMP_LAYOUT_FILES;
	if (adump_session_create(&cfg, &s) < 0)
		_exit(2);
	t_load_run(s, &load);   /* op_count 0: returns only on an error */
	_exit(3);
}

/* ---- the parent: kill, then check ---- */

static size_t whole_count;
static char broken[PATH_MAX + 128];

/* Every file whose name claims a whole dump (not .part, not a packed index or segment). */
static int check_named(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	const char *why;

	(void)st;
	(void)ftw;
	if (flag != FTW_F || strstr(path, "/packed/") || strstr(path, ".part") ||
	    strstr(path, "/adump-journal-"))
		return 0;
	why = t_dump_check_whole(path, 2, 1);
	if (why && !broken[0])
		snprintf(broken, sizeof(broken), "%s: %s", path, why);
	whole_count += !why;
	return 0;
}

/* `adump verify --json [@flags] @path`: the counts that matter, and its exit code. */
struct verdicts {
	int rc;
	int64_t ok, bad, part, failed, index_leftover, segment_leftover, removed, entries;
	int64_t missing;                /* handed over, never written (the journal) */
};

static int64_t count_of(json_object *doc, const char *key)
{
	json_object *v;

	ck_assert_msg(json_object_object_get_ex(doc, key, &v), "verify --json lacks %s", key);
	return json_object_get_int64(v);
}

static struct verdicts run_verify(const char *path, const char *flags)
{
	struct verdicts v;
	json_object *doc;
	char *out;

	v.rc = t_run_tool(TOOL, dir, "verify --json %s %s", flags, path);
	out = t_slurp(dir, "stdout");
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "verify %s: not JSON: %s", flags, out);
	v.ok = count_of(doc, "ok");
	v.bad = count_of(doc, "bad");
	v.part = count_of(doc, "part");
	v.failed = count_of(doc, "failed");
	v.index_leftover = count_of(doc, "index_leftover");
	v.segment_leftover = count_of(doc, "segment_leftover");
	v.removed = count_of(doc, "removed");
	v.entries = count_of(doc, "packed_entries");
	/* A reused pid makes a dead capture's journal read as one in progress: the same. */
	v.missing = count_of(doc, "missing") + count_of(doc, "in_progress");
	json_object_put(doc);
	free(out);
	return v;
}

/* Totals over all kills: what the faults left and what survived. */
struct totals {
	unsigned kills;
	size_t whole_files;             /* named files of the file sink, parsed whole */
	unsigned packed_runs;
};

static size_t part_count;

static int count_part(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	part_count += flag == FTW_F && strstr(path, ".part") != NULL;
	return 0;
}

static off_t data_bytes;

static int add_size(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag == FTW_F)
		data_bytes += st->st_size;
	return 0;
}

/* Whether any file below @run holds data yet. */
static bool has_data(const char *run)
{
	data_bytes = 0;
	if (nftw(run, add_size, 16, FTW_PHYS) < 0)
		return false;
	return data_bytes > 0;
}

/* One capture into <dir>/kills/<kind>-<n>/run, killed @delay_ms after its first bytes reached
 * the disk (with @is_early: after the fork, maybe before anything exists). Its named files
 * are checked here; the tool checks all runs at the end. */
static void kill_once(enum kind kind, bool is_part, bool is_early, unsigned delay_ms,
		      uint64_t rng, struct totals *t)
{
	char out[PATH_MAX], run[PATH_MAX + 8];
	struct timespec ts = { .tv_sec = delay_ms / 1000,
			       .tv_nsec = (long)(delay_ms % 1000) * 1000000 };
	int status;
	pid_t pid;

	snprintf(out, sizeof(out), "%s/kills/%s-%u", dir, kind_names[kind], t->kills);
	ck_assert_int_eq(mkdir(out, 0755), 0);
	snprintf(run, sizeof(run), "%s/run", out);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		child_capture(out, kind, is_part, rng);
	/* Sanitizer builds take long to start capturing: time the kill from the first bytes
	 * on disk. */
	for (unsigned waited = 0; !is_early && !has_data(run) && waited < 30000; waited += 2)
		usleep(2000);
	nanosleep(&ts, NULL);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "%s: the capture ended by itself (status %d) before the kill at %u ms",
		      out, status, delay_ms);
	t->kills++;
	if (access(run, F_OK) < 0)
		return;         /* killed before the session made its directory */
	/* Every file under a dump's name is whole, judged without reader/. */
	whole_count = 0;
	broken[0] = '\0';
	ck_assert_int_eq(nftw(run, check_named, 16, FTW_PHYS), 0);
	ck_assert_msg(!broken[0], "kill at %u ms (seed %llu): %s", delay_ms,
		      (unsigned long long)seed, broken);
	t->whole_files += whole_count;
	t->packed_runs += kind == KIND_PACKED;
	/* Unnamed files leave nothing behind. */
	part_count = 0;
	ck_assert_int_eq(nftw(run, count_part, 16, FTW_PHYS), 0);
	if (!is_part && kind != KIND_PACKED)
		ck_assert_uint_eq(part_count, 0);
}

/* Whether directory @packed holds a file named as a packed index. */
static bool has_index(const char *packed)
{
	DIR *d = opendir(packed);
	struct dirent *de;
	bool found = false;

	ck_assert_ptr_nonnull(d);
	while (!found && (de = readdir(d)))
		found = adump_reader_packed_file_kind(de->d_name) == ADUMP_PACKED_FILE_INDEX;
	closedir(d);
	return found;
}

/* Each killed packed capture unpacks to as many whole files as it has entries. */
static void unpack_packed_runs(const struct totals *t)
{
	for (unsigned k = 0; k < t->kills; k++) {
		char run[PATH_MAX], packed[PATH_MAX + 8], unpacked[PATH_MAX];
		const struct adump_reader_packed_entry *e;
		struct adump_reader_packed *p;
		long entries = 0;

		snprintf(run, sizeof(run), "%s/kills/packed-%u/run", dir, k);
		snprintf(packed, sizeof(packed), "%s/packed", run);
		if (access(packed, F_OK) < 0)
			continue;
		/* Killed between making packed/ and its first index: no packed capture yet. */
		if (!has_index(packed)) {
			ck_assert_int_eq(adump_reader_packed_open(packed, &p), -ADUMP_ERR_NOT_FOUND);
			continue;
		}
		ck_assert_int_eq(adump_reader_packed_open(packed, &p), 0);
		while (adump_reader_packed_next(p, &e) > 0)
			entries += e->status == ADUMP_PACKED_ENTRY;
		adump_reader_packed_close(p);
		if (!entries)
			continue;
		snprintf(unpacked, sizeof(unpacked), "%s/kills/packed-%u/unpacked", dir, k);
		ck_assert_int_eq(adump_unpack(run, unpacked), entries);
		whole_count = 0;
		broken[0] = '\0';
		ck_assert_int_eq(nftw(unpacked, check_named, 16, FTW_PHYS), 0);
		ck_assert_msg(!broken[0], "%s", broken);
		ck_assert_int_eq(whole_count, (size_t)entries);
		t_rmtree(unpacked);
	}
}

/* O_DIRECT needs a filesystem that takes it (tmpfs does not). */
static bool is_direct_usable(void)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/direct-probe", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_DIRECT, 0600);
	if (fd >= 0)
		close(fd);
	unlink(path);
	return fd >= 0;
}

START_TEST(test_sigkill_at_random_points)
{
	/* 20 kills: 7 buffered (3 with .part files), 7 O_DIRECT (3 with .part), 6 packed. */
	static const struct {
		enum kind kind;
		bool is_part;
		unsigned count;
	} plan[] = {
		{ KIND_BUFFERED, false, 4 }, { KIND_BUFFERED, true, 3 }, { KIND_DIRECT, false, 4 },
		{ KIND_DIRECT, true, 3 },    { KIND_PACKED, false, 6 },
	};
	struct totals t = { 0 };
	struct verdicts before, clean, after;
	uint64_t rng = seed;
	bool has_direct = is_direct_usable();
	char kills[PATH_MAX];

	snprintf(kills, sizeof(kills), "%s/kills", dir);
	ck_assert_int_eq(mkdir(kills, 0755), 0);
	if (!has_direct)
		fprintf(stderr, "test_kill: O_DIRECT not supported under %s: direct kills skipped\n",
			dir);
	for (size_t p = 0; p < sizeof(plan) / sizeof(plan[0]); p++) {
		if (plan[p].kind == KIND_DIRECT && !has_direct)
			continue;
		for (unsigned i = 0; i < plan[p].count; i++) {
			/* One kill in five from the fork (start-up included), the others
			 * 1-200 ms after the first bytes were written. */
			bool is_early = t_rand(&rng) % 5 == 0;
			unsigned delay_ms = 1 + (unsigned)(t_rand(&rng) % 200);

			kill_once(plan[p].kind, plan[p].is_part, is_early, delay_ms, t_rand(&rng),
				  &t);
		}
	}

	/* The tool over every run: nothing bad or failed, the named files it counts are the
	 * ones parsed whole above (plus packed entries); leftovers listed, then removed; what
	 * remains passes. */
	before = run_verify(kills, "");
	ck_assert_msg(before.bad == 0 && before.failed == 0, "seed %llu: %lld bad, %lld failed",
		      (unsigned long long)seed, (long long)before.bad, (long long)before.failed);
	ck_assert_int_eq(before.ok - before.entries, (int64_t)t.whole_files);
	clean = run_verify(kills, "--clean");
	ck_assert_int_eq(clean.removed,
			 before.part + before.index_leftover + before.segment_leftover);
	ck_assert_int_eq(clean.ok, before.ok);
	after = run_verify(kills, "");
	ck_assert_int_eq(after.part + after.index_leftover + after.segment_leftover + after.bad +
			 after.failed, 0);
	ck_assert_int_eq(after.ok, before.ok);
	/* What was handed over and never written stays reported: --clean keeps the journal. */
	ck_assert_int_eq(after.missing, before.missing);
	ck_assert_int_eq(after.rc, after.ok && !after.missing ? 0 : 1);
	unpack_packed_runs(&t);
	fprintf(stderr, "test_kill: %u kills survived: %lld whole files and packed entries "
		"verified, %lld leftovers listed and removed (%lld .part, %lld cut index lines, "
		"%lld segment tails), %lld dumps handed over and never written reported\n",
		t.kills, (long long)after.ok, (long long)clean.removed, (long long)before.part,
		(long long)before.index_leftover, (long long)before.segment_leftover,
		(long long)before.missing);
	ck_assert_uint_ge(t.kills, 13);
	/* Most kills land after files were written: a run with none at all is not a test. */
	ck_assert_int_gt(after.ok, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kill");
	TCase *tc = tcase_create("sigkill");

	tcase_set_timeout(tc, 600);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sigkill_at_random_points);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
