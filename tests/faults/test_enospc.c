/* SPDX-License-Identifier: Apache-2.0 */
/* A real full disk: a 32 MiB tmpfs, mounted in a private mount namespace, filled by a
 * 4-stream capture of about 100 MiB with no disk guard (file sink with each writer, and the
 * packed sink). Every file under a dump's name is whole; every other one is .failed or
 * absent; every launched op is accounted for as completed or failed; the flush, the stats
 * and the loss log give ENOSPC; no call waits without end (the test's timeout); and once
 * space is freed, a new session on the same dump directory captures whole files again.
 * With the disk guard on (a 4 MiB floor), the same capture never meets ENOSPC: the files
 * that would not fit are skipped whole, counted and logged as disk_guard, and capture
 * resumes within the session once space is freed.
 * Needs CAP_SYS_ADMIN (unshare, mount): skipped with 77 without it. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "adump/adump.h"
#include "adump/reader.h"
#include "fault_helpers.h"
#include "helpers.h"

#define STREAMS 4
#define OPS 96                          /* per stream: about 90 MiB in all */
#define MAX_BYTES (1u << 20)            /* tensors up to 1 MiB: files up to 3 MiB */

static char *dir, mnt[4200];

static void setup(void)
{
	dir = t_tmpdir("enospc");
	ck_assert_ptr_nonnull(dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	ck_assert_int_eq(mkdir(mnt, 0755), 0);
	ck_assert_int_eq(t_mount_small_fs(mnt), 0);
}

static void teardown(void)
{
	umount2(mnt, MNT_DETACH);
	t_rmtree(dir);
	free(dir);
}

static struct {
	size_t whole, failed, part, other;
	char broken[4400];
} seen;

static int look(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	const char *why;

	(void)st;
	(void)ftw;
	/* The loss log, and the hand-over journal of a session still open. */
	if (flag != FTW_F || strstr(path, "/packed/") || strstr(path, ADUMP_LOSS_LOG_NAME) ||
	    strstr(path, "/adump-journal-"))
		return 0;
	if (strstr(path, ".failed")) {
		seen.failed++;
	} else if (strstr(path, ".part")) {
		seen.part++;
	} else if ((why = t_dump_check_whole(path, 2, 1))) {
		if (!seen.broken[0])
			snprintf(seen.broken, sizeof(seen.broken), "%s: %s", path, why);
		seen.other++;
	} else {
		seen.whole++;
	}
	return 0;
}

static void scan(const char *path)
{
	memset(&seen, 0, sizeof(seen));
	ck_assert_int_eq(nftw(path, look, 16, FTW_PHYS), 0);
	ck_assert_msg(!seen.broken[0], "a complete-looking file is not whole: %s", seen.broken);
	ck_assert_uint_eq(seen.part, 0);
}

/* The loss log of @run agrees with the stats, cause by cause, line by line. */
static void check_loss_log(const char *run, const struct adump_stats *st)
{
	uint64_t by_cause[ADUMP_LOSS_CAUSE_COUNT] = { 0 };
	const struct adump_reader_loss *e;
	struct adump_reader_losses *l;
	int ret;

	ck_assert_int_eq(adump_reader_losses_open(run, &l), 0);
	while ((ret = adump_reader_losses_next(l, &e)) > 0) {
		ck_assert_msg(e->is_valid, "line %u: %s", e->line, e->message);
		by_cause[e->cause]++;
	}
	ck_assert_int_eq(ret, 0);
	adump_reader_losses_close(l);
	for (int i = 0; i < ADUMP_LOSS_CAUSE_COUNT; i++)
		ck_assert_msg(by_cause[i] == st->losses[i], "%s: %llu lines, %llu counted",
			      adump_loss_cause_name(i), (unsigned long long)by_cause[i],
			      (unsigned long long)st->losses[i]);
}

static struct adump_session *make_session(const char *time_dir, enum adump_writer_kind writer,
					  enum adump_layout layout, uint64_t min_free)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;

	cfg.dump_path = mnt;
	cfg.time_dir = time_dir;
	cfg.writer = writer;
	cfg.layout = layout;
	cfg.pool_bytes = 32u << 20;
	cfg.stream_max = STREAMS;
	cfg.min_free_bytes = min_free;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	return s;
}

static void fill_the_disk(enum adump_writer_kind writer, enum adump_layout layout)
{
	struct t_load load = { .stream_count = STREAMS, .op_count = OPS, .max_bytes = MAX_BYTES,
			       .seed = t_seed() };
	struct adump_session *s = make_session("full", writer, layout, ADUMP_GUARD_OFF);
	struct adump_stats st;
	char run[4400];
	int ret;

	/* Launches and synchronisation succeed: the device ran every op; the disk is what
	 * failed, and the session says so. */
	ck_assert_int_eq(t_load_run(s, &load), 0);
	ck_assert_uint_eq(load.launched, STREAMS * OPS);
	ret = adump_session_flush(s);
	adump_stats_get(s, &st);
	ck_assert_msg(ret == -ENOSPC, "flush: %s", adump_strerror(ret));
	ck_assert_int_eq(st.first_error, -ENOSPC);
	ck_assert_int_eq(adump_session_error(s), -ENOSPC);
	ck_assert_uint_gt(st.files_completed, 0);
	ck_assert_uint_gt(st.files_failed, 0);
	ck_assert_uint_gt(st.write_errors, 0);
	/* Nothing lost without a record: each op is a complete or a failed file. */
	ck_assert_uint_eq(st.files_completed + st.files_failed, load.launched);
	/* The losses by cause: ENOSPC, with the rest of a failed file after_loss at most. */
	ck_assert_uint_gt(st.losses[ADUMP_LOSS_ENOSPC], 0);
	ck_assert_uint_eq(st.losses[ADUMP_LOSS_DISK_GUARD] + st.losses[ADUMP_LOSS_NO_BUFFER], 0);
	ck_assert_uint_eq(st.drops, 3 * st.files_failed);
	ck_assert_int_eq(adump_session_destroy(s), -ENOSPC);

	snprintf(run, sizeof(run), "%s/full", mnt);
	check_loss_log(run, &st);
	scan(run);
	if (layout == ADUMP_LAYOUT_PACKED) {
		ck_assert_uint_eq(seen.whole + seen.failed + seen.other, 0);
		ck_assert_uint_eq(t_packed_entries_whole(run), st.files_completed);
	} else {
		ck_assert_uint_eq(seen.whole, st.files_completed);
		ck_assert_uint_le(seen.failed, st.files_failed);
	}
	fprintf(stderr, "test_enospc: writer %d layout %d: %llu of %llu files whole, %llu failed "
		"(%zu .failed on disk), first error %s; tensors lost: %llu enospc, %llu other\n",
		writer, layout, (unsigned long long)st.files_completed,
		(unsigned long long)load.launched, (unsigned long long)st.files_failed, seen.failed,
		adump_strerror(st.first_error), (unsigned long long)st.losses[ADUMP_LOSS_ENOSPC],
		(unsigned long long)(st.drops - st.losses[ADUMP_LOSS_ENOSPC]));
}

/* Space freed: a new session on the same dump directory writes whole files again. */
static void after_space_is_freed(enum adump_writer_kind writer, enum adump_layout layout)
{
	struct t_load load = { .stream_count = STREAMS, .op_count = 4, .max_bytes = 64u << 10,
			       .seed = 7 };
	struct adump_session *s;
	struct adump_stats st;
	char path[4400];

	snprintf(path, sizeof(path), "%s/full", mnt);
	ck_assert_int_eq(t_rmtree(path), 0);
	s = make_session("again", writer, layout, ADUMP_GUARD_OFF);
	ck_assert_int_eq(t_load_run(s, &load), 0);
	ck_assert_int_eq(adump_session_flush(s), 0);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, load.launched);
	ck_assert_uint_eq(st.files_failed, 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	snprintf(path, sizeof(path), "%s/again", mnt);
	scan(path);
	if (layout == ADUMP_LAYOUT_PACKED)
		ck_assert_uint_eq(t_packed_entries_whole(path), load.launched);
	else
		ck_assert_uint_eq(seen.whole, load.launched);
	ck_assert_uint_eq(seen.failed, 0);
}

/* Removes the files in @path (the directory itself stays: the session made it). */
static void empty_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char file[4600];

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		if (e->d_type != DT_REG)
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		ck_assert_int_eq(unlink(file), 0);
	}
	closedir(d);
}

/* With the guard on: no write ever meets ENOSPC; what would not fit is skipped, counted and
 * logged as disk_guard, never opened; once space is freed, the same session captures again. */
static void fill_with_guard(enum adump_writer_kind writer, enum adump_layout layout)
{
	struct t_load load = { .stream_count = STREAMS, .op_count = OPS, .max_bytes = MAX_BYTES,
			       .seed = t_seed() };
	struct t_load again = { .stream_count = STREAMS, .op_count = 4, .max_bytes = 64u << 10,
				.seed = 7 };
	struct adump_session *s = make_session("guarded", writer, layout, 4u << 20);
	struct timespec pause = { .tv_nsec = 150000000 };       /* past the statvfs cache */
	struct adump_stats st;
	char run[4400], dev_dir[4500];
	int ret;

	ck_assert_int_eq(t_load_run(s, &load), 0);
	ret = adump_session_flush(s);
	adump_stats_get(s, &st);
	ck_assert_msg(ret == -ADUMP_ERR_DISK_GUARD, "flush: %s", adump_strerror(ret));
	ck_assert_uint_eq(st.write_errors, 0);
	ck_assert_uint_gt(st.files_completed, 0);
	ck_assert_uint_gt(st.files_failed, 0);
	ck_assert_uint_eq(st.files_completed + st.files_failed, load.launched);
	ck_assert_uint_eq(st.losses[ADUMP_LOSS_ENOSPC], 0);
	ck_assert_uint_eq(st.losses[ADUMP_LOSS_DISK_GUARD], 3 * st.files_failed);
	ck_assert_uint_eq(st.drops, st.losses[ADUMP_LOSS_DISK_GUARD]);
	snprintf(run, sizeof(run), "%s/guarded", mnt);
	scan(run);
	ck_assert_uint_eq(seen.failed, 0);                      /* skipped files were never opened */
	check_loss_log(run, &st);
	fprintf(stderr, "test_enospc: guard on, writer %d layout %d: %llu of %llu files whole, "
		"%llu skipped (%llu tensors disk_guard), no ENOSPC\n", writer, layout,
		(unsigned long long)st.files_completed, (unsigned long long)load.launched,
		(unsigned long long)st.files_failed,
		(unsigned long long)st.losses[ADUMP_LOSS_DISK_GUARD]);
	if (layout == ADUMP_LAYOUT_PACKED) {
		ck_assert_uint_eq(t_packed_entries_whole(run), st.files_completed);
		ck_assert_int_eq(adump_session_destroy(s), -ADUMP_ERR_DISK_GUARD);
		return;
	}
	ck_assert_uint_eq(seen.whole, st.files_completed);

	/* Space returns: the session captures again. */
	uint64_t completed = st.files_completed;
	snprintf(dev_dir, sizeof(dev_dir), "%s/0", run);
	empty_dir(dev_dir);
	nanosleep(&pause, NULL);
	ck_assert_int_eq(t_load_run(s, &again), 0);
	adump_session_flush(s);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, completed + again.launched);
	ck_assert_uint_eq(st.write_errors, 0);
	ck_assert_int_eq(adump_session_destroy(s), -ADUMP_ERR_DISK_GUARD);
	scan(run);
	ck_assert_uint_eq(seen.whole, again.launched);
}

START_TEST(test_guard_files_uring)
{
	fill_with_guard(ADUMP_WRITER_AUTO, ADUMP_LAYOUT_FILES);
}
END_TEST

START_TEST(test_guard_packed)
{
	fill_with_guard(ADUMP_WRITER_AUTO, ADUMP_LAYOUT_PACKED);
}
END_TEST

START_TEST(test_guard_files_pwrite)
{
	fill_with_guard(ADUMP_WRITER_PWRITE, ADUMP_LAYOUT_FILES);
}
END_TEST

START_TEST(test_full_disk_files_uring)
{
	fill_the_disk(ADUMP_WRITER_AUTO, ADUMP_LAYOUT_FILES);
	after_space_is_freed(ADUMP_WRITER_AUTO, ADUMP_LAYOUT_FILES);
}
END_TEST

START_TEST(test_full_disk_files_pwrite)
{
	fill_the_disk(ADUMP_WRITER_PWRITE, ADUMP_LAYOUT_FILES);
	after_space_is_freed(ADUMP_WRITER_PWRITE, ADUMP_LAYOUT_FILES);
}
END_TEST

START_TEST(test_full_disk_packed)
{
	fill_the_disk(ADUMP_WRITER_AUTO, ADUMP_LAYOUT_PACKED);
	after_space_is_freed(ADUMP_WRITER_AUTO, ADUMP_LAYOUT_PACKED);
}
END_TEST

/* Whether this process may make a private mount namespace and mount a tmpfs in it; tried in
 * a child so that the namespace goes with it. */
static bool can_mount(void)
{
	char *probe = t_tmpdir("enospc-probe");
	int status = 1;
	pid_t pid;

	if (!probe)
		return false;
	pid = fork();
	if (pid == 0) {
		int ret = t_mount_small_fs(probe);

		if (ret < 0)
			fprintf(stderr, "test_enospc: mounting a tmpfs in a private mount namespace: "
				"%s\n", strerror(-ret));
		_exit(ret < 0 ? 1 : 0);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	rmdir(probe);
	free(probe);
	return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void)
{
	Suite *s = suite_create("enospc");
	TCase *tc = tcase_create("tmpfs");

	if (!can_mount()) {
		fprintf(stderr, "test_enospc: skipped: needs CAP_SYS_ADMIN for unshare(CLONE_NEWNS) "
			"and mount\n");
		return 77;
	}
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_full_disk_files_uring);
	tcase_add_test(tc, test_full_disk_files_pwrite);
	tcase_add_test(tc, test_full_disk_packed);
	tcase_add_test(tc, test_guard_files_uring);
	tcase_add_test(tc, test_guard_files_pwrite);
	tcase_add_test(tc, test_guard_packed);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
