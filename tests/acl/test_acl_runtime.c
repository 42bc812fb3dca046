/* SPDX-License-Identifier: Apache-2.0 */
/* The runtime subset (reference §9) on the simulated NPU, with CANN's codes for bad
 * arguments: NULL pointers, unknown streams, double free, size 0, copies larger than destMax,
 * repeated init/finalize and bad aclInit configs. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "acl_test.h"

static char *dir;

static void setup(void)
{
	dir = t_tmpdir("acl-rt");
	ck_assert_ptr_nonnull(dir);
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

START_TEST(test_init_finalize_codes)
{
	ck_assert_int_eq(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
	/* Init/finalize cycle in one process. */
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
		ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	}
}
END_TEST

START_TEST(test_init_config_errors)
{
	char *bad_syntax = t_acl_write(dir, "syntax.json", "{\"dump\": ");
	char *bad_key = t_acl_write(dir, "key.json", "{\"dump\": {\"dump_mode\": \"both\", \"dump_op_switch\": \"on\", \"dump_path\": \"/tmp\"}}");
	char *empty = t_acl_write(dir, "empty.json", "");

	ck_assert_int_eq(aclInit("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE);
	ck_assert_int_eq(aclInit(dir), ACL_ERROR_INVALID_FILE);
	ck_assert_int_eq(aclInit(bad_syntax), ACL_ERROR_PARSE_FILE);
	ck_assert_int_eq(aclInit(bad_key), ACL_ERROR_INVALID_DUMP_CONFIG);
	/* A failed aclInit leaves the runtime uninitialised. */
	ck_assert_int_eq(aclmdlInitDump(), ACL_ERROR_UNINITIALIZE);
	ck_assert_int_eq(aclInit(empty), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	free(bad_syntax);
	free(bad_key);
	free(empty);
}
END_TEST

START_TEST(test_device_codes)
{
	int32_t id = -1;

	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
	ck_assert_int_eq(aclrtSetDevice(ADUMP_DEV_MAX), ACL_ERROR_RT_INVALID_DEVICEID);
	ck_assert_int_eq(aclrtGetDevice(&id), ACL_ERROR_RT_CONTEXT_NULL);
	ck_assert_int_eq(aclrtGetDevice(NULL), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(aclrtResetDevice(3), ACL_ERROR_RT_INVALID_DEVICEID);
	ck_assert_int_eq(aclrtSetDevice(1), ACL_SUCCESS);
	ck_assert_int_eq(aclrtGetDevice(&id), ACL_SUCCESS);
	ck_assert_int_eq(id, 1);
	ck_assert_int_eq(aclrtSetDevice(1), ACL_SUCCESS);
	ck_assert_int_eq(aclrtResetDevice(1), ACL_SUCCESS);    /* one reference left */
	ck_assert_int_eq(aclrtResetDevice(1), ACL_SUCCESS);
	ck_assert_int_eq(aclrtResetDevice(1), ACL_ERROR_RT_INVALID_DEVICEID);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
}
END_TEST

START_TEST(test_stream_codes)
{
	aclrtStream s = NULL, bogus = (aclrtStream)&s;

	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(aclrtCreateStream(&s), ACL_ERROR_RT_CONTEXT_NULL);
	ck_assert_int_eq(aclrtSetDevice(0), ACL_SUCCESS);
	ck_assert_int_eq(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(aclrtCreateStream(&s), ACL_SUCCESS);
	ck_assert_int_eq(aclrtSynchronizeStream(NULL), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(aclrtSynchronizeStream(bogus), ACL_ERROR_RT_PARAM_INVALID);
	ck_assert_int_eq(aclrtDestroyStream(NULL), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(aclrtDestroyStream(bogus), ACL_ERROR_RT_PARAM_INVALID);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	ck_assert_int_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	ck_assert_int_eq(aclrtDestroyStream(s), ACL_ERROR_RT_PARAM_INVALID);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_ERROR_RT_PARAM_INVALID);
	ck_assert_int_eq(aclrtResetDeviceForce(0), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
}
END_TEST

START_TEST(test_memory_codes)
{
	float host[8] = { 1 }, back[8];
	void *dev = NULL, *dev2 = NULL;

	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(aclrtMalloc(&dev, 32, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);
	ck_assert_int_eq(aclrtSetDevice(0), ACL_SUCCESS);
	ck_assert_int_eq(aclrtMalloc(NULL, 32, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(aclrtMalloc(&dev, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(aclrtMalloc(&dev, 32, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
	ck_assert_int_eq(aclrtMalloc(&dev2, 16, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);

	ck_assert_int_eq(aclrtMemcpy(NULL, 0, NULL, 0, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
	ck_assert_int_eq(aclrtMemcpy(NULL, 32, host, 32, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(aclrtMemcpy(dev, 32, NULL, 32, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(aclrtMemcpy(dev, 32, host, 32, (aclrtMemcpyKind)99), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(aclrtMemcpy(dev, 16, host, 32, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
	ck_assert_int_eq(aclrtMemcpy(dev2, 16, host, 32, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
	/* Host memory named as device memory. */
	ck_assert_int_eq(aclrtMemcpy(back, 32, host, 32, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
	ck_assert_int_eq(aclrtMemcpy(dev, 32, host, 32, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
	ck_assert_int_eq(aclrtMemcpy(back, 32, dev, 32, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
	ck_assert_mem_eq(back, host, 32);

	ck_assert_int_eq(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(aclrtFree(host), ACL_ERROR_RT_PARAM_INVALID);
	ck_assert_int_eq(aclrtFree(dev), ACL_SUCCESS);
	ck_assert_int_eq(aclrtFree(dev), ACL_ERROR_RT_PARAM_INVALID);   /* double free */
	ck_assert_int_eq(aclrtFree(dev2), ACL_SUCCESS);
	ck_assert_int_eq(aclrtResetDeviceForce(0), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
}
END_TEST

START_TEST(test_aclnn_add)
{
	aclrtStream s = t_acl_start(NULL);
	struct t_acl_add a;
	aclOpExecutor *e = NULL;
	uint64_t ws;
	float out[8];
	const int64_t shape3[2] = { 2, 4 };
	aclTensor *wrong;

	t_acl_add_setup(&a);
	ck_assert_int_eq(aclnnAddGetWorkspaceSize(NULL, a.other, a.alpha, a.out, &ws, &e), ACLNN_ERR_PARAM_NULLPTR);
	ck_assert_int_eq(aclnnAddGetWorkspaceSize(a.self, a.other, a.alpha, a.out, NULL, &e), ACLNN_ERR_PARAM_NULLPTR);
	wrong = aclCreateTensor(shape3, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, shape3, 2, a.self_dev);
	ck_assert_int_eq(aclnnAddGetWorkspaceSize(a.self, wrong, a.alpha, a.out, &ws, &e), ACLNN_ERR_PARAM_INVALID);
	aclDestroyTensor(wrong);
	ck_assert_int_eq(aclnnAdd(NULL, 0, NULL, s), ACLNN_ERR_PARAM_NULLPTR);
	ck_assert_int_eq(aclnnAddGetWorkspaceSize(a.self, a.other, a.alpha, a.out, &ws, &e), ACLNN_SUCCESS);
	ck_assert_int_eq(aclnnAdd(NULL, 0, e, (aclrtStream)&e), ACLNN_ERR_PARAM_INVALID);
	ck_assert_int_eq(aclnnAdd(NULL, 0, e, s), ACLNN_SUCCESS);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	ck_assert_int_eq(aclrtMemcpy(out, sizeof(out), a.out_dev, 32, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
	ck_assert(out[0] == 1.0f && out[7] == 10.0f);
	ck_assert_int_eq(aclDestroyTensor(NULL), ACLNN_ERR_PARAM_NULLPTR);
	ck_assert_ptr_null(aclCreateScalar(NULL, ACL_FLOAT));
	t_acl_add_teardown(&a);
	t_acl_stop(s);
}
END_TEST

static void *other_thread(void *arg)
{
	int32_t id = -1;

	(void)arg;
	/* Not set here yet: the process's last device. */
	ck_assert_int_eq(aclrtGetDevice(&id), ACL_SUCCESS);
	ck_assert_int_eq(id, 0);
	ck_assert_int_eq(aclrtSetDevice(3), ACL_SUCCESS);
	ck_assert_int_eq(aclrtGetDevice(&id), ACL_SUCCESS);
	ck_assert_int_eq(id, 3);
	return NULL;
}

/* The current device is per thread, as CANN's context is. */
START_TEST(test_device_per_thread)
{
	pthread_t th;
	int32_t id = -1;

	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(aclrtSetDevice(0), ACL_SUCCESS);
	ck_assert_int_eq(pthread_create(&th, NULL, other_thread, NULL), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(aclrtGetDevice(&id), ACL_SUCCESS);
	ck_assert_int_eq(id, 0);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl_runtime");
	TCase *tc = tcase_create("runtime");

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_init_finalize_codes);
	tcase_add_test(tc, test_init_config_errors);
	tcase_add_test(tc, test_device_codes);
	tcase_add_test(tc, test_stream_codes);
	tcase_add_test(tc, test_memory_codes);
	tcase_add_test(tc, test_aclnn_add);
	tcase_add_test(tc, test_device_per_thread);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
