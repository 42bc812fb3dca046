/* SPDX-License-Identifier: Apache-2.0 */
/* Compare's memory against what a header claims (issue 30 item 5): small DumpData files whose
 * headers claim a million tensors, or a million empty entries, are compared in a child whose
 * peak RSS must stay within a bound of what the files hold, and each op's row must say why it
 * was refused. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adump/compare.h"
#include "helpers.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* The bound the test holds compare to: a process's own footprint plus a few times the bytes
 * of the two files. The old parser took ~600x (2.6 GB for two 2.2 MB files). */
#define RSS_BASE_KB (64u << 10)
#define RSS_PER_FILE_BYTE 4u

enum claim { MANY_INPUTS, MANY_DIM_RANGES, CAP_INPUTS };

static size_t varint_put(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

/* A dump of op "abc" whose header holds @n empty entries of the kind @what says. */
static size_t dump_write(const char *path, enum claim what, size_t n)
{
	size_t cap = 2 * n + 64, len = 0, pos = 8;
	unsigned char *buf = malloc(cap);
	FILE *f;

	ck_assert_ptr_nonnull(buf);
	memcpy(buf + pos, "\x32\x03" "abc", 5);         /* op_name */
	pos += 5;
	if (what == MANY_DIM_RANGES) {                  /* one output, n empty dim_range */
		buf[pos++] = 0x1a;
		pos += varint_put(buf + pos, 2 * (uint64_t)n);
	}
	for (size_t i = 0; i < n; i++) {
		buf[pos++] = what == MANY_DIM_RANGES ? 0x52 : 0x22;     /* dim_range / input */
		buf[pos++] = 0;
	}
	len = pos - 8;
	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)(len >> (8 * i));
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, pos, f), pos);
	ck_assert_int_eq(fclose(f), 0);
	free(buf);
	return pos;
}

/* Compare the two sides in a child; its exit status says whether the one row named @expect. */
static int child_compare(const char *my, const char *golden, const char *expect)
{
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare *c;
	const struct adump_compare_row *row;
	char msg[512];

	cfg.thread_count = 2;
	if (adump_compare_open(&cfg, my, golden, &c, msg, sizeof(msg)) < 0)
		return 2;
	if (adump_compare_run(c) < 0 || adump_compare_row_count(c) != 1)
		return 3;
	row = adump_compare_row(c, 0);
	if (!strstr(row->cells[row->cell_count - 1], expect)) {
		fprintf(stderr, "row says: %s\n", row->cells[row->cell_count - 1]);
		return 4;
	}
	adump_compare_close(c);
	return 0;
}

static void claim_check(enum claim what, size_t n, const char *expect)
{
	char *dir = t_tmpdir("compare_memory"), my[4096], golden[4096], file[4200];
	struct rusage ru;
	size_t bytes;
	pid_t pid;
	int status;

	snprintf(my, sizeof(my), "%s/my", dir);
	snprintf(golden, sizeof(golden), "%s/golden", dir);
	ck_assert_int_eq(mkdir(my, 0755), 0);
	ck_assert_int_eq(mkdir(golden, 0755), 0);
	snprintf(file, sizeof(file), "%s/Add.abc.1.2.1000", my);
	bytes = dump_write(file, what, n);
	snprintf(file, sizeof(file), "%s/Add.abc.1.2.1000", golden);
	bytes += dump_write(file, what, n);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(child_compare(my, golden, expect));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
	/* ru_maxrss is in KB on Linux; a sanitizer's shadow memory and quarantine are not
	 * compare's, so only the plain build holds the bound (the refusals hold in every build). */
	if (!SANITIZED)
		ck_assert_msg((uint64_t)ru.ru_maxrss < RSS_BASE_KB + RSS_PER_FILE_BYTE * bytes / 1024,
			      "peak RSS %ld KB for %zu bytes of dumps", ru.ru_maxrss, bytes);
	free(dir);
}

/* 2.2 MB of two-byte inputs: more tensors than a header may hold, refused before parsing. */
START_TEST(test_million_tensors)
{
	claim_check(MANY_INPUTS, 1100000, "at most 65536");
}
END_TEST

/* One output with a million empty dim ranges: the parse's allocation budget refuses it. */
START_TEST(test_million_dim_ranges)
{
	claim_check(MANY_DIM_RANGES, 1100000, "memory per header byte");
}
END_TEST

/* As many empty inputs as the tensor cap allows: two bytes each, refused by the budget. */
START_TEST(test_cap_of_empty_inputs)
{
	claim_check(CAP_INPUTS, 65536, "memory per header byte");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("compare_memory");
	TCase *tc = tcase_create("claims");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_million_tensors);
	tcase_add_test(tc, test_million_dim_ranges);
	tcase_add_test(tc, test_cap_of_empty_inputs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return t_run_suite(suite());
}
