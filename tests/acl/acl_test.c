/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the acl suites. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_test.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_text;
static size_t log_len;

static void capture(enum adump_log_level level, const char *module, const char *msg, void *user)
{
	size_t n = strlen(module) + strlen(msg) + 4;
	char *t;

	(void)level;
	(void)user;
	pthread_mutex_lock(&log_lock);
	t = realloc(log_text, log_len + n + 1);
	if (t) {
		log_text = t;
		log_len += (size_t)sprintf(log_text + log_len, "%s: %s\n", module, msg);
	}
	pthread_mutex_unlock(&log_lock);
	fprintf(stderr, "log: %s: %s\n", module, msg);
}

void t_acl_log_capture(void)
{
	pthread_mutex_lock(&log_lock);
	free(log_text);
	log_text = NULL;
	log_len = 0;
	pthread_mutex_unlock(&log_lock);
	adump_set_log_fn(capture, NULL);
}

int t_acl_log_has(const char *needle)
{
	int found;

	pthread_mutex_lock(&log_lock);
	found = log_text && strstr(log_text, needle) != NULL;
	pthread_mutex_unlock(&log_lock);
	return found;
}

int t_acl_log_count(const char *needle)
{
	const char *p;
	int count = 0;

	pthread_mutex_lock(&log_lock);
	for (p = log_text; p && (p = strstr(p, needle)); p += strlen(needle))
		count++;
	pthread_mutex_unlock(&log_lock);
	return count;
}

char *t_acl_write(const char *dir, const char *name, const char *text)
{
	char *path;
	FILE *f;

	ck_assert(asprintf(&path, "%s/%s", dir, name) > 0);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

static void make_tensor(const float *host, void **dev, aclTensor **t)
{
	const int64_t shape[2] = { 4, 2 }, strides[2] = { 2, 1 };

	ck_assert_int_eq(aclrtMalloc(dev, 32, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
	ck_assert_int_eq(aclrtMemcpy(*dev, 32, host, 32, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
	*t = aclCreateTensor(shape, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 2, *dev);
	ck_assert_ptr_nonnull(*t);
}

void t_acl_add_setup(struct t_acl_add *a)
{
	static const float self[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	static const float other[8] = { 1, 1, 1, 2, 2, 2, 3, 3 };
	static const float zero[8] = { 0 };
	float alpha = 1.0f;

	memset(a, 0, sizeof(*a));
	make_tensor(self, &a->self_dev, &a->self);
	make_tensor(other, &a->other_dev, &a->other);
	make_tensor(zero, &a->out_dev, &a->out);
	a->alpha = aclCreateScalar(&alpha, ACL_FLOAT);
	ck_assert_ptr_nonnull(a->alpha);
}

int t_acl_add_launch(struct t_acl_add *a, aclrtStream stream)
{
	aclOpExecutor *e = NULL;
	uint64_t ws = 1;

	ck_assert_int_eq(aclnnAddGetWorkspaceSize(a->self, a->other, a->alpha, a->out, &ws, &e), 0);
	ck_assert_uint_eq(ws, 0);
	return aclnnAdd(NULL, 0, e, stream);
}

void t_acl_add_teardown(struct t_acl_add *a)
{
	aclDestroyTensor(a->self);
	aclDestroyTensor(a->other);
	aclDestroyTensor(a->out);
	aclDestroyScalar(a->alpha);
	ck_assert_int_eq(aclrtFree(a->self_dev), ACL_SUCCESS);
	ck_assert_int_eq(aclrtFree(a->other_dev), ACL_SUCCESS);
	ck_assert_int_eq(aclrtFree(a->out_dev), ACL_SUCCESS);
}

void t_acl_big_setup(struct t_acl_big *b, int64_t rows, int64_t cols)
{
	const int64_t shape[2] = { rows, cols };
	size_t bytes = (size_t)rows * (size_t)cols * sizeof(float);
	float *host = malloc(bytes), alpha = 2.0f;

	ck_assert_ptr_nonnull(host);
	for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
		host[i] = (float)(i % 1000);
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(aclrtMalloc(&b->dev[k], bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
		ck_assert_int_eq(aclrtMemcpy(b->dev[k], bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
		b->t[k] = aclCreateTensor(shape, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, shape, 2, b->dev[k]);
		ck_assert_ptr_nonnull(b->t[k]);
	}
	b->alpha = aclCreateScalar(&alpha, ACL_FLOAT);
	ck_assert_ptr_nonnull(b->alpha);
	free(host);
}

void t_acl_big_launch(struct t_acl_big *b, aclrtStream stream)
{
	aclOpExecutor *e;
	uint64_t ws;

	ck_assert_int_eq(aclnnAddGetWorkspaceSize(b->t[0], b->t[1], b->alpha, b->t[2], &ws, &e), 0);
	ck_assert_int_eq(aclnnAdd(NULL, 0, e, stream), 0);
	ck_assert_int_eq(aclrtSynchronizeStream(stream), ACL_SUCCESS);
}

void t_acl_big_teardown(struct t_acl_big *b)
{
	for (int k = 0; k < 3; k++) {
		aclDestroyTensor(b->t[k]);
		ck_assert_int_eq(aclrtFree(b->dev[k]), ACL_SUCCESS);
	}
	aclDestroyScalar(b->alpha);
}

aclrtStream t_acl_start(const char *config)
{
	aclrtStream s = NULL;

	ck_assert_int_eq(aclInit(config), ACL_SUCCESS);
	ck_assert_int_eq(aclrtSetDevice(0), ACL_SUCCESS);
	ck_assert_int_eq(aclrtCreateStream(&s), ACL_SUCCESS);
	return s;
}

void t_acl_stop(aclrtStream stream)
{
	ck_assert_int_eq(aclrtDestroyStream(stream), ACL_SUCCESS);
	ck_assert_int_eq(aclrtResetDeviceForce(0), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
}
