/* SPDX-License-Identifier: Apache-2.0 */
/* common/buf.c adump_strjoin(): strings joined into a fixed buffer as snprintf("%s%s...")
 * writes them (data names, .pt paths and zip entries, dump file names): the whole, or cut
 * and terminated at the buffer's end, and the whole length returned either way. And
 * adump_fnv1a64(), whose values `adump convert`'s mapping.csv holds: FNV-1a's published
 * test vectors. adump_decimal(), which dump file names and paths are made with. */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "helpers.h"

START_TEST(test_whole)
{
	char out[32];

	ck_assert_uint_eq(adump_strjoin(out, sizeof(out), (const char *const[]){ "Module.fc", ".",
				  "input", ".0.pt" }, 4), 20);
	ck_assert_str_eq(out, "Module.fc.input.0.pt");
	ck_assert_uint_eq(adump_strjoin(out, sizeof(out), (const char *const[]){ "", "" }, 2), 0);
	ck_assert_str_eq(out, "");
	ck_assert_uint_eq(adump_strjoin(out, sizeof(out), NULL, 0), 0);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_cut)
{
	char out[8], want[8];
	const char *const parts[] = { "abcde", "/", "fghij" };

	for (size_t cap = 1; cap <= sizeof(out); cap++) {
		memset(out, 'x', sizeof(out));
		ck_assert_uint_eq(adump_strjoin(out, cap, parts, 3), 11);
		snprintf(want, cap, "%s%s%s", parts[0], parts[1], parts[2]);
		ck_assert_str_eq(out, want);
		if (cap < sizeof(out))
			ck_assert_int_eq(out[cap], 'x');        /* nothing past @cap */
	}
}
END_TEST

START_TEST(test_fnv1a64)
{
	ck_assert_uint_eq(adump_fnv1a64("", 0), 0xcbf29ce484222325ull);
	ck_assert_uint_eq(adump_fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
	ck_assert_uint_eq(adump_fnv1a64("foobar", 6), 0x85944171f73967e8ull);
}
END_TEST

START_TEST(test_decimal)
{
	char num[24];

	ck_assert_str_eq(adump_decimal(0, num), "0");
	ck_assert_str_eq(adump_decimal(9, num), "9");
	ck_assert_str_eq(adump_decimal(10, num), "10");
	ck_assert_str_eq(adump_decimal(4294967295u, num), "4294967295");
	ck_assert_str_eq(adump_decimal(UINT64_MAX, num), "18446744073709551615");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("strjoin");
	TCase *tc = tcase_create("strjoin");

	tcase_add_test(tc, test_whole);
	tcase_add_test(tc, test_cut);
	tcase_add_test(tc, test_fnv1a64);
	tcase_add_test(tc, test_decimal);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
