/* SPDX-License-Identifier: Apache-2.0 */
/* common/log.c: a message holding a name a stranger wrote (an op name with a terminal escape
 * sequence, a carriage return, a newline forging a second line) reaches the log sink and
 * stderr as one line of text, control bytes written \xNN; and a message at the buffer's end
 * is cut, never overrun. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "helpers.h"

static char got[2048];

static void sink(enum adump_log_level level, const char *module, const char *msg, void *user)
{
	(void)level;
	(void)user;
	snprintf(got, sizeof(got), "%s: %s", module, msg);
}

START_TEST(test_sink_escaped)
{
	adump_set_log_fn(sink, NULL);
	adump_log(ADUMP_LOG_WARN, "t", "op %s done", "a\x1b[31mb\nadump: error: forged\r\x7f\tz");
	adump_set_log_fn(NULL, NULL);
	ck_assert_str_eq(got, "t: op a\\x1b[31mb\\x0aadump: error: forged\\x0d\\x7f z done");
}
END_TEST

START_TEST(test_stderr_escaped)
{
	char *dir = t_tmpdir("log"), path[4200], text[512] = "";
	int fd, saved = dup(2);
	FILE *f;

	snprintf(path, sizeof(path), "%s/stderr", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	dup2(fd, 2);
	adump_log(ADUMP_LOG_ERROR, "t", "name %s", "x\ny");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_gt(fread(text, 1, sizeof(text) - 1, f), 0);
	fclose(f);
	ck_assert_str_eq(text, "adump: error: t: name x\\x0ay\n");
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* 1000 control bytes: each would take four; the message is cut whole escapes short. */
START_TEST(test_long_cut)
{
	char name[1001];

	memset(name, '\x01', 1000);
	name[1000] = '\0';
	adump_set_log_fn(sink, NULL);
	adump_log(ADUMP_LOG_WARN, "t", "%s", name);
	adump_set_log_fn(NULL, NULL);
	ck_assert_uint_le(strlen(got), 3 + 1023);
	ck_assert_uint_eq((strlen(got) - 3) % 4, 0);
	ck_assert(!strncmp(got + 3, "\\x01\\x01", 8));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("escape");

	tcase_add_test(tc, test_sink_escaped);
	tcase_add_test(tc, test_stderr_escaped);
	tcase_add_test(tc, test_long_cut);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
