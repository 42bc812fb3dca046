/* SPDX-License-Identifier: Apache-2.0 */
/* Exception dump through the shim (reference §1.4, §2.5.5-6): acldumpGetExceptionInfoPath and
 * acldumpSaveExceptionInfo with every check in CANN's order, the written file (name, mode,
 * header), path priority from the environment, and a root that cannot be left: not with
 * "..", not with an absolute name, not through a planted symlink. */
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl_test.h"
#include "dump_data.pb-c.h"

static char *dir, *exc_config;

static void setup(void)
{
	char *json;

	unsetenv("ASCEND_DUMP_PATH");
	unsetenv("ASCEND_WORK_PATH");
	unsetenv("ASCEND_DUMP_SCENE");
	unsetenv("NPU_COLLECT_PATH");
	dir = t_tmpdir("acl-exc");
	ck_assert_ptr_nonnull(dir);
	ck_assert(asprintf(&json, "{\"dump\": {\"dump_path\": \"%s\", \"dump_scene\": \"aic_err_brief_dump\"}}", dir) > 0);
	exc_config = t_acl_write(dir, "acl.json", json);
	free(json);
	t_acl_log_capture();
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
	free(exc_config);
}

static void fill(acldumpTensorInfo *t, acldumpTensorType type, void *dev)
{
	memset(t, 0, sizeof(*t));
	t->type = type;
	t->tensorSize = 32;
	t->format = ACL_FORMAT_ND;
	t->dataType = ACL_FLOAT;
	t->tensorAddr = dev;
	t->addrType = ACL_DUMP_ADDR_RAW;
	t->placement = ACL_DUMP_PLACEMENT_DEVICE;
	t->shapeNum = t->originShapeNum = 2;
	t->shape[0] = t->originShape[0] = 4;
	t->shape[1] = t->originShape[1] = 2;
}

static const char *count_needle;
static size_t count_result;
static int count_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_F && strstr(path, count_needle))
		count_result++;
	return 0;
}

/* Files below @root whose path contains @needle (t_count_files() matches suffixes only, and
 * a custom exception file ends in its time stamp). */
static size_t count_named(const char *root, const char *needle)
{
	count_needle = needle;
	count_result = 0;
	nftw(root, count_one, 16, FTW_PHYS);
	return count_result;
}

START_TEST(test_get_path_codes)
{
	char path[4096], tiny[5], expect[4096];

	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(NULL, sizeof(path)), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, 0), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, 1), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, sizeof(path)), ACL_ERROR_FAILURE);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);

	ck_assert_int_eq(aclInit(exc_config), ACL_SUCCESS);
	ck_assert_int_eq(aclrtSetDevice(2), ACL_SUCCESS);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(tiny, sizeof(tiny)), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, sizeof(path)), ACL_SUCCESS);
	snprintf(expect, sizeof(expect), "%s/extra-info/data-dump/2", dir);
	ck_assert_str_eq(path, expect);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, strlen(expect)), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, strlen(expect) + 1), ACL_SUCCESS);
	/* Types 1-3: no device id. 4-5: no data dump configured. */
	snprintf(expect, sizeof(expect), "%s/extra-info/data-dump/", dir);
	ck_assert_str_eq(acldumpGetPath(AIC_ERR_BRIEF_DUMP), expect);
	ck_assert_str_eq(acldumpGetPath(AIC_ERR_DETAIL_DUMP), expect);
	ck_assert_ptr_null(acldumpGetPath(DATA_DUMP));
	ck_assert_ptr_null(acldumpGetPath(OVERFLOW_DUMP));
	ck_assert_ptr_null(acldumpGetPath((acldumpType)0));
	ck_assert_ptr_null(acldumpGetPath((acldumpType)6));
	ck_assert_int_eq(aclrtResetDeviceForce(2), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
}
END_TEST

/* Argument checks, in order: name, "..", tensors, count, enabled, then each tensor. */
START_TEST(test_save_codes_in_order)
{
	acldumpTensorInfo t[1];
	int64_t fake[4];
	void *dev;
	static const struct {
		const char *name;
		int field;      /* which tensor field to break, 0 = none */
		int acl;
	} cases[] = {
		{ "a", 1, ACL_ERROR_INVALID_PARAM },    /* shapeNum 26 */
		{ "a", 2, ACL_ERROR_INVALID_PARAM },    /* originShapeNum 26 */
		{ "a", 3, ACL_ERROR_INVALID_PARAM },    /* type 3 */
		{ "a", 4, ACL_ERROR_INVALID_PARAM },    /* addrType PTR */
		{ "a", 5, ACL_ERROR_INVALID_PARAM },    /* placement HOST */
		{ "a", 6, ACL_ERROR_INVALID_PARAM },    /* placement END */
		{ "a", 7, ACL_ERROR_INVALID_PARAM },    /* tensorAddr NULL */
		{ "a", 8, ACL_ERROR_INVALID_PARAM },    /* tensorSize 0 */
		{ "a", 9, ACL_ERROR_INVALID_PARAM },    /* addrType PTR_PTR */
	};

	fill(&t[0], ACL_DUMP_TENSOR_INPUT, fake);
	/* Not enabled: parameter checks still come first. */
	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(acldumpSaveExceptionInfo(NULL, "u", t, 1), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpSaveExceptionInfo("", "u", t, 1), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpSaveExceptionInfo("..", "u", t, 1), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpSaveExceptionInfo("a/../b", "u", t, 1), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpSaveExceptionInfo("a/..", "u", t, 1), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpSaveExceptionInfo("a", "u", NULL, 1), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpSaveExceptionInfo("a", "u", t, 0), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpSaveExceptionInfo("a", "u", t, 1), ACL_ERROR_FAILURE);
	t[0].shapeNum = 26;     /* tensor checks come after the enabled check */
	ck_assert_int_eq(acldumpSaveExceptionInfo("a", "u", t, 1), ACL_ERROR_FAILURE);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);

	ck_assert_int_eq(aclInit(exc_config), ACL_SUCCESS);
	ck_assert_int_eq(aclrtSetDevice(0), ACL_SUCCESS);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fill(&t[0], ACL_DUMP_TENSOR_INPUT, fake);
		switch (cases[i].field) {
		case 1: t[0].shapeNum = ACL_DUMP_MAX_SHAPE_NUM + 1; break;
		case 2: t[0].originShapeNum = ACL_DUMP_MAX_SHAPE_NUM + 1; break;
		case 3: t[0].type = (acldumpTensorType)3; break;
		case 4: t[0].addrType = ACL_DUMP_ADDR_PTR; break;
		case 5: t[0].placement = ACL_DUMP_PLACEMENT_HOST; break;
		case 6: t[0].placement = ACL_DUMP_PLACEMENT_END; break;
		case 7: t[0].tensorAddr = NULL; break;
		case 8: t[0].tensorSize = 0; break;
		case 9: t[0].addrType = ACL_DUMP_ADDR_PTR_PTR; break;
		}
		if (acldumpSaveExceptionInfo(cases[i].name, "u", t, 1) != cases[i].acl)
			ck_abort_msg("case %zu", i);
	}
	/* A valid-looking tensor whose address is not device memory: the copy fails. */
	fill(&t[0], ACL_DUMP_TENSOR_INPUT, fake);
	ck_assert_int_eq(acldumpSaveExceptionInfo("a", "u", t, 1), ACL_ERROR_FAILURE);
	ck_assert_uint_eq(count_named(dir, ".custom."), 0);
	/* Regression (found by fuzz_acl_exception): a device address with a size no buffer has
	 * was allocated on the host before the copy checked it (SIZE_MAX: an ASan abort). */
	ck_assert_int_eq(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
	fill(&t[0], ACL_DUMP_TENSOR_INPUT, dev);
	t[0].tensorSize = SIZE_MAX;
	ck_assert_int_eq(acldumpSaveExceptionInfo("a", "u", t, 1), ACL_ERROR_FAILURE);
	ck_assert(t_acl_log_has("are not device memory"));
	t[0].tensorSize = 65;
	ck_assert_int_eq(acldumpSaveExceptionInfo("a", "u", t, 1), ACL_ERROR_FAILURE);
	/* Control characters in a name are refused (the fuzzer's names). */
	t[0].tensorSize = 64;
	ck_assert_int_eq(acldumpSaveExceptionInfo("a\nb", "u", t, 1), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpSaveExceptionInfo("a\x1b[0m", "u", t, 1), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(acldumpSaveExceptionInfo("dir\t/b", "u", t, 1), ACL_ERROR_INVALID_PARAM);
	ck_assert_uint_eq(count_named(dir, ".custom."), 0);
	/* Regression (found by fuzz_acl_exception): a name of short components whose whole path
	 * passes PATH_MAX was written, beyond what any tool could open by name. */
	{
		char long_name[4040];

		memset(long_name, 'n', sizeof(long_name) - 1);
		long_name[sizeof(long_name) - 1] = '\0';
		for (size_t i = 200; i < sizeof(long_name) - 1; i += 201)
			long_name[i] = '/';
		ck_assert_int_eq(acldumpSaveExceptionInfo(long_name, "u", t, 1),
				 ACL_ERROR_INVALID_PARAM);
		ck_assert(t_acl_log_has("File name too long"));
	}
	ck_assert_uint_eq(count_named(dir, ".custom."), 0);
	ck_assert_int_eq(acldumpSaveExceptionInfo("a", "u", t, 1), ACL_SUCCESS);
	ck_assert_uint_eq(count_named(dir, ".custom."), 1);
	ck_assert_int_eq(aclrtFree(dev), ACL_SUCCESS);
	ck_assert_int_eq(aclrtResetDeviceForce(0), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
}
END_TEST

static char found[4096];
static const char *want;
static int find_path(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_F && strstr(path, want)) {
		snprintf(found, sizeof(found), "%s", path);
		return 1;
	}
	return 0;
}

static const char *find(const char *root, const char *needle)
{
	found[0] = '\0';
	want = needle;
	return nftw(root, find_path, 16, FTW_PHYS) == 1 ? found : NULL;
}

START_TEST(test_save_writes_file)
{
	aclrtStream s = t_acl_start(exc_config);
	acldumpTensorInfo t[3];
	struct t_acl_add a;
	char root[4096], expect_prefix[4096];
	const char *path;
	struct stat st;
	uint8_t *file;
	size_t len;
	uint64_t h;
	float host[8];
	Toolkit__Dumpdata__DumpData *d;

	t_acl_add_setup(&a);
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	/* Output listed first: the file still holds inputs before outputs. */
	fill(&t[0], ACL_DUMP_TENSOR_OUTPUT, a.out_dev);
	fill(&t[1], ACL_DUMP_TENSOR_INPUT, a.self_dev);
	fill(&t[2], ACL_DUMP_TENSOR_INPUT, a.other_dev);
	ck_assert_int_eq(acldumpSaveExceptionInfo("sub/dir/info", "tag=1", t, 3), ACL_SUCCESS);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(root, sizeof(root)), ACL_SUCCESS);
	path = find(root, "/sub/dir/info.custom.");
	ck_assert_ptr_nonnull(path);
	snprintf(expect_prefix, sizeof(expect_prefix), "%s/sub/dir/info.custom.", root);
	ck_assert_int_eq(strncmp(path, expect_prefix, strlen(expect_prefix)), 0);
	ck_assert_uint_eq(strlen(path + strlen(expect_prefix)), 17);    /* YYYYMMDDhhmmssmmm */
	ck_assert_uint_eq(strspn(path + strlen(expect_prefix), "0123456789"), 17);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0400);

	file = t_read_file(path, &len);
	memcpy(&h, file, 8);
	d = toolkit__dumpdata__dump_data__unpack(NULL, h, file + 8);
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->version, "2.0");
	ck_assert_str_eq(d->op_name, strrchr(path, '/') + 1);
	ck_assert_uint_eq(d->n_input, 2);
	ck_assert_uint_eq(d->n_output, 1);
	ck_assert_uint_eq(d->input[0]->size, 32);
	ck_assert_int_eq(d->input[0]->data_type, 1);    /* DT_FLOAT */
	ck_assert_int_eq(d->input[0]->format, 2);       /* FORMAT_ND */
	ck_assert_uint_eq(d->n_attr, 1);
	ck_assert_str_eq(d->attr[0]->name, "user_tag");
	ck_assert_str_eq(d->attr[0]->value, "tag=1");
	ck_assert_ptr_nonnull(strstr(d->dfx_message, "output[0]"));
	ck_assert_uint_eq(len, 8 + h + 96);
	ck_assert_int_eq(aclrtMemcpy(host, 32, a.out_dev, 32, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
	ck_assert_mem_eq(file + 8 + h + 64, host, 32);  /* output after both inputs */
	toolkit__dumpdata__dump_data__free_unpacked(d, NULL);
	free(file);

	/* No user tag: no attribute. An absolute name stays beneath the root. */
	ck_assert_int_eq(acldumpSaveExceptionInfo("/abs/plain", NULL, t, 1), ACL_SUCCESS);
	path = find(root, "/abs/plain.custom.");
	ck_assert_ptr_nonnull(path);
	ck_assert_int_eq(strncmp(path, root, strlen(root)), 0);
	file = t_read_file(path, &len);
	memcpy(&h, file, 8);
	d = toolkit__dumpdata__dump_data__unpack(NULL, h, file + 8);
	ck_assert_uint_eq(d->n_attr, 0);
	toolkit__dumpdata__dump_data__free_unpacked(d, NULL);
	free(file);

	t_acl_add_teardown(&a);
	t_acl_stop(s);
}
END_TEST

START_TEST(test_symlink_cannot_escape)
{
	aclrtStream s = t_acl_start(exc_config);
	acldumpTensorInfo t[1];
	struct t_acl_add a;
	char root[4096], *outside, link[4200];

	outside = t_tmpdir("acl-exc-outside");
	t_acl_add_setup(&a);
	fill(&t[0], ACL_DUMP_TENSOR_INPUT, a.self_dev);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(root, sizeof(root)), ACL_SUCCESS);
	/* A directory symlink planted inside the root, pointing outside it. */
	snprintf(link, sizeof(link), "%s/evil", root);
	ck_assert_int_eq(symlink(outside, link), 0);
	ck_assert_int_eq(acldumpSaveExceptionInfo("evil/x", "u", t, 1), ACL_ERROR_FAILURE);
	ck_assert_int_eq(acldumpSaveExceptionInfo("evil/deeper/x", "u", t, 1), ACL_ERROR_FAILURE);
	/* A relative symlink to the parent. */
	snprintf(link, sizeof(link), "%s/up", root);
	ck_assert_int_eq(symlink("..", link), 0);
	ck_assert_int_eq(acldumpSaveExceptionInfo("up/x", "u", t, 1), ACL_ERROR_FAILURE);
	ck_assert_uint_eq(t_count_files(outside, ""), 0);
	ck_assert_uint_eq(count_named(dir, ".custom."), 0);
	ck_assert_ptr_null(find(outside, "deeper"));
	/* A symlink inside the root that stays inside is fine. */
	snprintf(link, sizeof(link), "%s/real", root);
	ck_assert_int_eq(mkdir(link, 0750), 0);
	snprintf(link, sizeof(link), "%s/alias", root);
	ck_assert_int_eq(symlink("real", link), 0);
	ck_assert_int_eq(acldumpSaveExceptionInfo("alias/ok", "u", t, 1), ACL_SUCCESS);
	ck_assert_ptr_nonnull(find(root, "/real/ok.custom."));
	t_rmtree(outside);
	free(outside);
	t_acl_add_teardown(&a);
	t_acl_stop(s);
}
END_TEST

/* ASCEND_DUMP_PATH > ASCEND_WORK_PATH > dump_path > ./ */
START_TEST(test_path_priority)
{
	char path[4096], expect[4096], *dump_env, *work_env, *cwd;

	dump_env = t_tmpdir("acl-exc-dump");
	work_env = t_tmpdir("acl-exc-work");
	cwd = t_tmpdir("acl-exc-cwd");

	setenv("ASCEND_DUMP_PATH", dump_env, 1);
	setenv("ASCEND_WORK_PATH", work_env, 1);
	ck_assert_int_eq(aclInit(exc_config), ACL_SUCCESS);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, sizeof(path)), ACL_SUCCESS);
	snprintf(expect, sizeof(expect), "%s/extra-info/data-dump/0", dump_env);
	ck_assert_str_eq(path, expect);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);

	unsetenv("ASCEND_DUMP_PATH");
	ck_assert_int_eq(aclInit(exc_config), ACL_SUCCESS);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, sizeof(path)), ACL_SUCCESS);
	snprintf(expect, sizeof(expect), "%s/extra-info/data-dump/0", work_env);
	ck_assert_str_eq(path, expect);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);

	unsetenv("ASCEND_WORK_PATH");
	ck_assert_int_eq(aclInit(exc_config), ACL_SUCCESS);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, sizeof(path)), ACL_SUCCESS);
	snprintf(expect, sizeof(expect), "%s/extra-info/data-dump/0", dir);
	ck_assert_str_eq(path, expect);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);

	/* Enabled by the environment alone; no dump_path: the working directory. */
	ck_assert_int_eq(chdir(cwd), 0);
	setenv("ASCEND_DUMP_SCENE", "aic_err_norm_dump", 1);
	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, sizeof(path)), ACL_SUCCESS);
	snprintf(expect, sizeof(expect), "%s/extra-info/data-dump/0", cwd);
	ck_assert_str_eq(path, expect);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	unsetenv("ASCEND_DUMP_SCENE");

	/* NPU_COLLECT_PATH enables norm exception dump into itself. */
	setenv("NPU_COLLECT_PATH", work_env, 1);
	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, sizeof(path)), ACL_SUCCESS);
	snprintf(expect, sizeof(expect), "%s/extra-info/data-dump/0", work_env);
	ck_assert_str_eq(path, expect);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	unsetenv("NPU_COLLECT_PATH");

	t_rmtree(dump_env);
	t_rmtree(work_env);
	t_rmtree(cwd);
	free(dump_env);
	free(work_env);
	free(cwd);
}
END_TEST

/* aclmdlSetDump with an exception scene enables exception dump; again: ignored, success. */
START_TEST(test_enable_through_setdump)
{
	char path[4096];

	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, sizeof(path)), ACL_ERROR_FAILURE);
	ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlSetDump(exc_config), ACL_SUCCESS);
	ck_assert_int_eq(acldumpGetExceptionInfoPath(path, sizeof(path)), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlSetDump(exc_config), ACL_SUCCESS);
	ck_assert(t_acl_log_has("exception dump is already enabled"));
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl_exception");
	TCase *tc = tcase_create("exception");

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_get_path_codes);
	tcase_add_test(tc, test_save_codes_in_order);
	tcase_add_test(tc, test_save_writes_file);
	t_tcase_add_test_needing(tc, T_OPENAT2, test_symlink_cannot_escape);
	tcase_add_test(tc, test_path_priority);
	tcase_add_test(tc, test_enable_through_setdump);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
