/* SPDX-License-Identifier: Apache-2.0 */
/* Shared test helpers, t_ prefix: temporary directories, seeds, file comparison. */
#ifndef ADUMP_TEST_HELPERS_H
#define ADUMP_TEST_HELPERS_H

#include <check.h>
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
/* Number of regular files below @dir (recursive) whose names end in @suffix ("" = all). */
size_t t_count_files(const char *dir, const char *suffix);
/* Runs "<tool> <printf args>" with stdout and stderr in @out_dir/stdout and @out_dir/stderr.
 * Return: the exit status (128 if it did not exit normally). */
int t_run_tool(const char *tool, const char *out_dir, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* @dir/@name as a NUL-terminated malloc'd string; ck_assert when unreadable. */
char *t_slurp(const char *dir, const char *name);
/* Run Suite @s with its own runner; returns the process exit code. */
int t_run_suite(Suite *s);

#endif
