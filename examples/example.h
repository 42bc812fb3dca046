/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the four samples: logging, error checks and the {4,2} float Add they all run
 * (self = 0..7, other = 1,1,1,2,2,2,3,3, alpha = 1), written against the CANN-compatible API
 * only. */
#ifndef ADUMP_EXAMPLE_H
#define ADUMP_EXAMPLE_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "acl/acl_dump.h"
#include "aclnnop/aclnn_add.h"

#define INFO_LOG(...) (printf("[INFO]  " __VA_ARGS__), printf("\n"))
#define ERROR_LOG(...) (printf("[ERROR]  " __VA_ARGS__), printf("\n"))

#define CHECK_ERROR(call)                                                                 \
	do {                                                                              \
		int ret_ = (int)(call);                                                   \
		if (ret_ != ACL_SUCCESS) {                                                \
			ERROR_LOG("%s returned error code %d", #call, ret_);              \
			return 1;                                                         \
		}                                                                         \
	} while (0)

#define EX_ELEMS 8

struct ex_add {
	void *self_dev, *other_dev, *out_dev;
	aclTensor *self, *other, *out;
	aclScalar *alpha;
	float result[EX_ELEMS];
};

static inline int ex_tensor(const float *host, void **dev, aclTensor **tensor)
{
	const int64_t shape[2] = { 4, 2 }, strides[2] = { 2, 1 };
	const size_t bytes = EX_ELEMS * sizeof(float);

	CHECK_ERROR(aclrtMalloc(dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
	CHECK_ERROR(aclrtMemcpy(*dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
	*tensor = aclCreateTensor(shape, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 2, *dev);
	return *tensor ? 0 : 1;
}

/* aclInit(@config) -> aclrtSetDevice(0) -> aclrtCreateStream. */
static inline int ex_init(const char *config, aclrtStream *stream)
{
	CHECK_ERROR(aclInit(config));
	CHECK_ERROR(aclrtSetDevice(0));
	CHECK_ERROR(aclrtCreateStream(stream));
	return 0;
}

/* Create the tensors, run aclnnAdd, synchronize, copy the result back and check it. */
static inline int ex_run_add(aclrtStream stream, struct ex_add *a)
{
	static const float self[EX_ELEMS] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	static const float other[EX_ELEMS] = { 1, 1, 1, 2, 2, 2, 3, 3 };
	static const float zero[EX_ELEMS] = { 0 };
	float alpha = 1.0f;
	uint64_t workspace_size = 0;
	aclOpExecutor *executor = NULL;

	memset(a, 0, sizeof(*a));
	if (ex_tensor(self, &a->self_dev, &a->self) || ex_tensor(other, &a->other_dev, &a->other) ||
	    ex_tensor(zero, &a->out_dev, &a->out))
		return 1;
	a->alpha = aclCreateScalar(&alpha, ACL_FLOAT);
	if (!a->alpha)
		return 1;
	CHECK_ERROR(aclnnAddGetWorkspaceSize(a->self, a->other, a->alpha, a->out, &workspace_size,
					     &executor));
	CHECK_ERROR(aclnnAdd(NULL, workspace_size, executor, stream));
	CHECK_ERROR(aclrtSynchronizeStream(stream));
	CHECK_ERROR(aclrtMemcpy(a->result, sizeof(a->result), a->out_dev, sizeof(a->result),
				ACL_MEMCPY_DEVICE_TO_HOST));
	for (int i = 0; i < EX_ELEMS; i++)
		INFO_LOG("result[%d] is: %f", i, a->result[i]);
	if (a->result[0] != 1.0f) {
		ERROR_LOG("result[0] is %f, expected 1.0", a->result[0]);
		return 1;
	}
	return 0;
}

static inline int ex_free_add(struct ex_add *a)
{
	aclDestroyTensor(a->self);
	aclDestroyTensor(a->other);
	aclDestroyTensor(a->out);
	aclDestroyScalar(a->alpha);
	CHECK_ERROR(aclrtFree(a->self_dev));
	CHECK_ERROR(aclrtFree(a->other_dev));
	CHECK_ERROR(aclrtFree(a->out_dev));
	return 0;
}

static const char *ex_count_suffix;
static size_t ex_counted;

static int ex_count_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	size_t n = strlen(path), k = strlen(ex_count_suffix);

	(void)st;
	/* adump's hand-over journal lives only while a capture runs: not a dump file. */
	if (!strncmp(path + ftw->base, "adump-journal-", 14))
		return 0;
	if (flag == FTW_F && n >= k && !strcmp(path + n - k, ex_count_suffix))
		ex_counted++;
	return 0;
}

/* Regular files below @dir whose names end in @suffix ("" = all); 0 if @dir is missing. */
static inline size_t ex_count_files(const char *dir, const char *suffix)
{
	ex_count_suffix = suffix;
	ex_counted = 0;
	if (!dir || nftw(dir, ex_count_one, 16, FTW_PHYS) != 0)
		return 0;
	return ex_counted;
}

static inline int ex_fini(aclrtStream stream)
{
	CHECK_ERROR(aclrtDestroyStream(stream));
	CHECK_ERROR(aclrtResetDeviceForce(0));
	CHECK_ERROR(aclFinalize());
	return 0;
}

#endif
