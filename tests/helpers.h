/* SPDX-License-Identifier: Apache-2.0 */
/* Shared test helpers, t_ prefix: temporary directories, seeds, file comparison. */
#ifndef ADUMP_TEST_HELPERS_H
#define ADUMP_TEST_HELPERS_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A fresh empty directory under $ADUMP_TEST_TMP (or /tmp); caller frees the string. */
char *t_tmpdir(const char *tag);
/* rm -rf; returns 0 or -errno. */
int t_rmtree(const char *path);
/* The seed for this run: $ADUMP_TEST_SEED or a time-based one, printed once. */
uint64_t t_seed(void);
/* xorshift64* step. */
uint64_t t_rand(uint64_t *state);
/* Whole file into a malloc'd buffer; *len set. NULL on error. */
void *t_read_file(const char *path, size_t *len);
/* Number of regular files below @dir (recursive) whose names end in @suffix ("" = all),
 * a live session's hand-over journal (adump-journal-*) left out. */
size_t t_count_files(const char *dir, const char *suffix);
/* Runs "<tool> <printf args>" with stdout and stderr in @out_dir/stdout and @out_dir/stderr.
 * Return: the exit status (128 if it did not exit normally). */
int t_run_tool(const char *tool, const char *out_dir, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* @dir/@name as a NUL-terminated malloc'd string; ck_assert when unreadable. */
char *t_slurp(const char *dir, const char *name);
/* Kernel features a test may need. liburing's habit: a feature this machine refuses makes
 * the test report skip (exit 77), never fail and never pass without having run. */
enum t_feature {
	T_URING,                                /* io_uring setup */
	T_DIRECT,                               /* O_DIRECT on the test directory's filesystem */
	T_OPENAT2,                              /* openat2() with RESOLVE_BENEATH */
};
/* 0 if @f works here, else the -errno it was refused with (probed once per process). */
int t_feature_probe(enum t_feature f);
/* Whether @f works here; if not, prints why @test is skipped and counts the skip. */
bool t_feature_need(enum t_feature f, const char *test);
/* tcase_add_test() for a test that needs @f: left out (and counted as skipped) if refused. */
#define t_tcase_add_test_needing(tc, f, tf)                                             \
	do {                                                                            \
		if (t_feature_need((f), #tf))                                           \
			tcase_add_test((tc), tf);                                       \
	} while (0)
/* The packed capture under @dir (<dir>/packed): every index line whole (a cut-short line,
 * what a crash leaves, fails the test), every entry opening with its CRC32C checked. Return:
 * the number of entries. */
uint64_t t_packed_entries_whole(const char *dir);
/* The library's WARN and ERROR lines ("<module>: <message>\n") from now on, the ones before
 * forgotten (t_log_catch()), into t_logged; t_log_release() gives the log back. */
extern char t_logged[8192];
void t_log_catch(void);
void t_log_release(void);
/* Run Suite @s with its own runner; returns the process exit code: 1 if a test failed,
 * else 77 if a test was left out for a refused feature (the rest passed), else 0. */
int t_run_suite(Suite *s);

#endif
