/* SPDX-License-Identifier: Apache-2.0 */
/* adump_acl_err_from(): every native error maps to its acl code; unknown codes to the
 * generic failure. */
#include <errno.h>

#include "acl/acl_int.h"
#include "helpers.h"

static const struct {
	int native;
	int acl;
} cases[] = {
	{ 0, 0 },
	{ 5, 0 },
	{ -EINVAL, 100000 },
	{ -ENOMEM, 200000 },
	{ -ENOENT, 100003 },
	{ -EACCES, 100003 },
	{ -EISDIR, 100003 },
	{ -ENOSPC, 100004 },
	{ -EIO, 100004 },
	{ -ADUMP_ERR_CORRUPT, 100006 },
	{ -ADUMP_ERR_CONFIG, 100009 },
	{ -ADUMP_ERR_WRITE, 100004 },
	{ -ADUMP_ERR_NOT_FOUND, 107000 },
	{ -ADUMP_ERR_TOO_BIG, 107000 },
	{ -ADUMP_ERR_STATE, 107000 },
	{ -ADUMP_ERR_UNSUPPORTED, 200006 },
	{ -ADUMP_ERR_DROPPED, 500001 },
	{ -ADUMP_ERR_SHUTDOWN, 500001 },
	{ -ADUMP_ERR_CALLBACK, 500001 },
	{ -ADUMP_ERR_INCOMPLETE, 500001 },
	{ -EPIPE, 500001 },             /* unknown errno */
	{ -9999, 500001 },              /* unknown project code */
};

START_TEST(test_err_table)
{
	ck_assert_int_eq(adump_acl_err_from(cases[_i].native), cases[_i].acl);
}
END_TEST

START_TEST(test_dtype_numbering)
{
	char name[24];

	/* aclDataType (GE numbering) -> DumpData OutputDataType (reference §9). */
	ck_assert_int_eq(adump_acl_dtype_to_native(ACL_FLOAT), 1);
	ck_assert_int_eq(adump_acl_dtype_to_native(ACL_FLOAT16), 2);
	ck_assert_int_eq(adump_acl_dtype_to_native(ACL_INT32), 7);
	ck_assert_int_eq(adump_acl_dtype_to_native(ACL_INT64), 8);
	ck_assert_int_eq(adump_acl_dtype_to_native(ACL_BOOL), 11);
	ck_assert_int_eq(adump_acl_dtype_to_native(ACL_DOUBLE), 12);
	ck_assert_int_eq(adump_acl_dtype_to_native(ACL_BF16), 27);
	ck_assert_int_eq(adump_acl_dtype_to_native(ACL_DT_UNDEFINED), 0);
	ck_assert_int_eq(adump_acl_format_to_native(ACL_FORMAT_NCHW | (3 << 8)), 0);
	ck_assert_int_eq(adump_acl_format_to_native(ACL_FORMAT_UNDEFINED), 40);
	adump_acl_dtype_json_name(ACL_FLOAT16, name, sizeof(name));
	ck_assert_str_eq(name, "float16");
	adump_acl_dtype_json_name(ACL_BF16, name, sizeof(name));
	ck_assert_str_eq(name, "bf16");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl_err");
	TCase *tc = tcase_create("map");

	tcase_set_timeout(tc, 10);
	tcase_add_loop_test(tc, test_err_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_dtype_numbering);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
