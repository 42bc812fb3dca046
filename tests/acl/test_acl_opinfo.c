/* SPDX-License-Identifier: Apache-2.0 */
/* aclopStartDumpArgs / aclopStopDumpArgs (reference §1.4, §4): every failure case, and the
 * op-info JSON files: one set per distinct signature, the keys OPB writes, no tensor data. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl_test.h"

static char *dir;

static void setup(void)
{
	dir = t_tmpdir("acl-opinfo");
	ck_assert_ptr_nonnull(dir);
	t_acl_log_capture();
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

START_TEST(test_start_stop_codes)
{
	char *file = t_acl_write(dir, "plain", "x"), *deep;

	ck_assert(asprintf(&deep, "%s/a/b/c", dir) > 0);
	ck_assert_int_eq(aclopStartDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS, NULL), ACL_ERROR_FAILURE);
	ck_assert_int_eq(aclopStartDumpArgs(0, dir), ACL_ERROR_FAILURE);
	ck_assert_int_eq(aclopStartDumpArgs(2, dir), ACL_ERROR_FAILURE);
	ck_assert_int_eq(aclopStartDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS, ""), ACL_ERROR_FAILURE);
	ck_assert_int_eq(aclopStartDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS, file), ACL_ERROR_FAILURE);
	ck_assert_int_eq(aclopStopDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS), ACL_SUCCESS);   /* not started */
	ck_assert_int_eq(aclopStartDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS | 2, deep), ACL_SUCCESS);
	ck_assert_int_eq(aclopStartDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS, deep), ACL_ERROR_FAILURE);
	ck_assert(t_acl_log_has("called repeatedly"));
	ck_assert_int_eq(access(deep, W_OK), 0);        /* created recursively */
	ck_assert_int_eq(aclopStopDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS), ACL_SUCCESS);
	ck_assert_int_eq(aclopStopDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS), ACL_SUCCESS);
	ck_assert_int_eq(aclopStartDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS, deep), ACL_SUCCESS);
	ck_assert_int_eq(aclopStopDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS), ACL_SUCCESS);
	free(file);
	free(deep);
}
END_TEST

static struct json_object *load(const char *folder, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%ld%s/%s", dir, (long)getpid(), folder, name);
	return json_object_from_file(path);
}

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "missing key %s", key);
	return json_object_get_string(v);
}

START_TEST(test_files_per_signature)
{
	aclrtStream s = t_acl_start(NULL);
	struct t_acl_add a;
	struct json_object *o, *in, *t, *v;
	char sub[4096];

	t_acl_add_setup(&a);
	ck_assert_int_eq(aclopStartDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS, dir), ACL_SUCCESS);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	snprintf(sub, sizeof(sub), "%s/%ld_debug", dir, (long)getpid());
	ck_assert_uint_eq(t_count_files(sub, ".json"), 1);
	snprintf(sub, sizeof(sub), "%s/%ld_opcompile", dir, (long)getpid());
	ck_assert_uint_eq(t_count_files(sub, ".json"), 1);
	/* Add is not on the white-list of <path>/<pid>/. */
	snprintf(sub, sizeof(sub), "%s/%ld", dir, (long)getpid());
	ck_assert_uint_eq(t_count_files(sub, ""), 0);

	o = load("_debug", "Add_float_ND_4_2_0.json");
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(str(o, "op_type"), "Add");
	ck_assert_str_eq(str(o, "tune_mode"), "all");
	ck_assert_str_eq(str(o, "deterministic"), "false");
	ck_assert(json_object_object_get_ex(o, "impl_mode", NULL));
	ck_assert(json_object_object_get_ex(o, "bin_type", NULL));
	ck_assert(json_object_object_get_ex(o, "bin_info", NULL));
	ck_assert(json_object_object_get_ex(o, "inputs", &in));
	ck_assert_uint_eq(json_object_array_length(in), 2);
	t = json_object_array_get_idx(in, 1);
	ck_assert_str_eq(str(t, "name"), "x2");
	ck_assert_str_eq(str(t, "dtype"), "float");
	ck_assert_str_eq(str(t, "format"), "ND");
	ck_assert_str_eq(str(t, "origin_format"), "ND");
	ck_assert_str_eq(str(t, "param_type"), "required");
	ck_assert(json_object_object_get_ex(t, "shape", &v));
	ck_assert_int_eq(json_object_get_int(json_object_array_get_idx(v, 0)), 4);
	ck_assert_int_eq(json_object_get_int(json_object_array_get_idx(v, 1)), 2);
	ck_assert(json_object_object_get_ex(o, "outputs", &v));
	ck_assert_uint_eq(json_object_array_length(v), 1);
	ck_assert(json_object_object_get_ex(o, "attrs", &v));
	ck_assert_str_eq(str(json_object_array_get_idx(v, 0), "name"), "alpha");
	json_object_put(o);
	o = load("_opcompile", "Add_float_ND_4_2_0.json");
	ck_assert_ptr_nonnull(o);
	ck_assert(!json_object_object_get_ex(o, "bin_type", NULL));
	json_object_put(o);

	/* Stopped: nothing new. Restarted: the signature is new again for this recording. */
	ck_assert_int_eq(aclopStopDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS), ACL_SUCCESS);
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	snprintf(sub, sizeof(sub), "%s/%ld_debug", dir, (long)getpid());
	ck_assert_uint_eq(t_count_files(sub, ".json"), 1);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	t_acl_add_teardown(&a);
	t_acl_stop(s);
}
END_TEST

/* A directory this process cannot write: a 0500 one, or (as root, which ignores modes)
 * /proc/self. NULL when there is none. */
static const char *readonly_dir(void)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/ro", dir);
	ck_assert_int_eq(mkdir(path, 0500), 0);
	if (access(path, W_OK) < 0)
		return path;
	if (access("/proc/self", W_OK) < 0)
		return "/proc/self";
	return NULL;
}

START_TEST(test_start_needs_read_write)
{
	const char *ro = readonly_dir();
	struct adump_acl_cfg cfg;
	char *json;

	if (!ro) {
		fprintf(stderr, "skipped: no read-only directory available\n");
		return;
	}
	ck_assert_int_eq(aclopStartDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS, ro), ACL_ERROR_FAILURE);
	ck_assert(t_acl_log_has("is not a read-write directory"));
	/* acl.json dump_path has the same rule. */
	ck_assert(asprintf(&json, "{\"dump\":{\"dump_path\":\"%s\",\"dump_op_switch\":\"on\"}}", ro) > 0);
	ck_assert_int_eq(adump_acl_cfg_parse(json, strlen(json), "acl.json", &cfg), -ADUMP_ERR_CONFIG);
	ck_assert(t_acl_log_has("is not readable and writable"));
	free(json);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl_opinfo");
	TCase *tc = tcase_create("opinfo");

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_start_stop_codes);
	tcase_add_test(tc, test_files_per_signature);
	tcase_add_test(tc, test_start_needs_read_write);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
