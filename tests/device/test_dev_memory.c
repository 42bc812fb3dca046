/* SPDX-License-Identifier: Apache-2.0 */
/* Device open/close and device memory: allocation, the registry's pointer checks (double
 * free, unknown and interior pointers, ranges past an allocation) and every copy kind. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "adump/device.h"
#include "common/common.h"
#include "helpers.h"

static struct adump_dev *dev;

static void setup(void)
{
	ck_assert_int_eq(adump_dev_open(0, &dev), 0);
}

static void teardown(void)
{
	adump_dev_close(dev);
	dev = NULL;
}

START_TEST(test_open_by_id)
{
	struct adump_dev *a, *b, *c;

	ck_assert_int_eq(adump_dev_open(-1, &a), -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_open(ADUMP_DEV_MAX, &a), -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_open(3, &a), 0);
	ck_assert_int_eq(adump_dev_open(3, &b), 0);
	ck_assert_int_eq(adump_dev_open(ADUMP_DEV_MAX - 1, &c), 0);
	ck_assert_ptr_eq(a, b);
	ck_assert_ptr_ne(a, c);
	ck_assert_int_eq(adump_dev_id(a), 3);
	ck_assert_int_eq(adump_dev_id(c), ADUMP_DEV_MAX - 1);
	adump_dev_close(a);
	adump_dev_close(b);
	adump_dev_close(c);
	adump_dev_close(NULL);
}
END_TEST

START_TEST(test_memory_survives_until_last_close)
{
	struct adump_dev *again;
	void *p;

	ck_assert_int_eq(adump_dev_open(0, &again), 0);
	ck_assert_int_eq(adump_dev_malloc(again, 100, &p), 0);
	adump_dev_close(again);
	/* The fixture still holds a reference, so the allocation is alive. */
	ck_assert(adump_dev_is_device_ptr(dev, p, 100));
	ck_assert_int_eq(adump_dev_free(dev, p), 0);
}
END_TEST

START_TEST(test_malloc_free)
{
	void *p[64];

	for (int i = 0; i < 64; i++) {
		size_t bytes = 1 + (size_t)i * 977;

		ck_assert_int_eq(adump_dev_malloc(dev, bytes, &p[i]), 0);
		ck_assert_uint_eq((uintptr_t)p[i] % 64, 0);
		memset(p[i], i, bytes);
		ck_assert(adump_dev_is_device_ptr(dev, p[i], bytes));
		ck_assert(!adump_dev_is_device_ptr(dev, p[i], bytes + 1));
		ck_assert(adump_dev_is_device_ptr(dev, (char *)p[i] + bytes - 1, 1));
		ck_assert(!adump_dev_is_device_ptr(dev, (char *)p[i] + bytes, 1));
	}
	/* Free in an order unrelated to the addresses' order. */
	for (int i = 0; i < 64; i += 2)
		ck_assert_int_eq(adump_dev_free(dev, p[i]), 0);
	for (int i = 1; i < 64; i += 2) {
		ck_assert(adump_dev_is_device_ptr(dev, p[i], 1));
		ck_assert_int_eq(adump_dev_free(dev, p[i]), 0);
	}
	for (int i = 0; i < 64; i++)
		ck_assert(!adump_dev_is_device_ptr(dev, p[i], 1));
}
END_TEST

START_TEST(test_free_errors)
{
	int host_var = 0;
	void *p, *host = malloc(16);

	ck_assert_int_eq(adump_dev_malloc(dev, 256, &p), 0);
	ck_assert_int_eq(adump_dev_free(dev, (char *)p + 8), -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_free(dev, &host_var), -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_free(dev, host), -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_free(dev, NULL), -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_free(dev, p), 0);
	ck_assert_int_eq(adump_dev_free(dev, p), -ADUMP_ERR_NOT_FOUND);
	free(host);
}
END_TEST

START_TEST(test_malloc_zero_is_too_big)
{
	void *p = (void *)&p;

	ck_assert_int_eq(adump_dev_malloc(dev, 0, &p), -ADUMP_ERR_TOO_BIG);
	ck_assert_ptr_eq(p, (void *)&p);        /* untouched on failure */
}
END_TEST

START_TEST(test_memory_is_per_device)
{
	struct adump_dev *other;
	void *p;

	ck_assert_int_eq(adump_dev_open(1, &other), 0);
	ck_assert_int_eq(adump_dev_malloc(dev, 64, &p), 0);
	ck_assert(!adump_dev_is_device_ptr(other, p, 1));
	ck_assert_int_eq(adump_dev_free(other, p), -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_memcpy(other, p, 64, "x", 1, ADUMP_COPY_HOST_TO_DEVICE),
			 -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_free(dev, p), 0);
	adump_dev_close(other);
}
END_TEST

static void fill_pattern(unsigned char *buf, size_t n, uint64_t *rng)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)t_rand(rng);
}

START_TEST(test_memcpy_kinds)
{
	enum { N = 5000 };
	uint64_t rng = t_seed();
	unsigned char *src = malloc(N), *back = malloc(N), *host2 = malloc(N);
	void *d1, *d2;

	fill_pattern(src, N, &rng);
	ck_assert_int_eq(adump_dev_malloc(dev, N, &d1), 0);
	ck_assert_int_eq(adump_dev_malloc(dev, N, &d2), 0);

	ck_assert_int_eq(adump_dev_memcpy(dev, d1, N, src, N, ADUMP_COPY_HOST_TO_DEVICE), 0);
	ck_assert_int_eq(adump_dev_memcpy(dev, d2, N, d1, N, ADUMP_COPY_DEVICE_TO_DEVICE), 0);
	memset(back, 0, N);
	ck_assert_int_eq(adump_dev_memcpy(dev, back, N, d2, N, ADUMP_COPY_DEVICE_TO_HOST), 0);
	ck_assert_mem_eq(back, src, N);
	ck_assert_int_eq(adump_dev_memcpy(dev, host2, N, back, N, ADUMP_COPY_HOST_TO_HOST), 0);
	ck_assert_mem_eq(host2, src, N);

	/* DEFAULT infers the direction from the addresses. */
	fill_pattern(src, N, &rng);
	ck_assert_int_eq(adump_dev_memcpy(dev, d1, N, src, N, ADUMP_COPY_DEFAULT), 0);
	ck_assert_int_eq(adump_dev_memcpy(dev, d2, N, d1, N, ADUMP_COPY_DEFAULT), 0);
	ck_assert_int_eq(adump_dev_memcpy(dev, back, N, d2, N, ADUMP_COPY_DEFAULT), 0);
	ck_assert_mem_eq(back, src, N);

	/* Into the middle of an allocation, up to its very end. */
	ck_assert_int_eq(adump_dev_memcpy(dev, (char *)d1 + N - 100, 100, src, 100,
					  ADUMP_COPY_HOST_TO_DEVICE), 0);
	ck_assert_int_eq(adump_dev_memcpy(dev, back, N, (char *)d1 + N - 100, 100,
					  ADUMP_COPY_DEVICE_TO_HOST), 0);
	ck_assert_mem_eq(back, src, 100);
	/* Zero bytes is a no-op. */
	ck_assert_int_eq(adump_dev_memcpy(dev, d1, 0, src, 0, ADUMP_COPY_HOST_TO_DEVICE), 0);

	ck_assert_int_eq(adump_dev_free(dev, d1), 0);
	ck_assert_int_eq(adump_dev_free(dev, d2), 0);
	free(src);
	free(back);
	free(host2);
}
END_TEST

START_TEST(test_memcpy_errors)
{
	unsigned char host[256] = { 0 };
	void *d;

	ck_assert_int_eq(adump_dev_malloc(dev, 128, &d), 0);
	/* count > dst_max is checked before anything else about the copy. */
	ck_assert_int_eq(adump_dev_memcpy(dev, d, 64, host, 65, ADUMP_COPY_HOST_TO_DEVICE),
			 -ADUMP_ERR_TOO_BIG);
	ck_assert_int_eq(adump_dev_memcpy(dev, host, 10, d, 11, ADUMP_COPY_DEVICE_TO_HOST),
			 -ADUMP_ERR_TOO_BIG);
	ck_assert_int_eq(adump_dev_memcpy(dev, host, 10, host + 100, 11, ADUMP_COPY_HOST_TO_HOST),
			 -ADUMP_ERR_TOO_BIG);
	/* Ranges that leave the allocation. */
	ck_assert_int_eq(adump_dev_memcpy(dev, d, 256, host, 129, ADUMP_COPY_HOST_TO_DEVICE),
			 -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_memcpy(dev, (char *)d + 100, 256, host, 29,
					  ADUMP_COPY_HOST_TO_DEVICE), -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_memcpy(dev, host, 256, (char *)d + 1, 128,
					  ADUMP_COPY_DEVICE_TO_HOST), -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_memcpy(dev, (char *)d + 128, 256, host, 1,
					  ADUMP_COPY_HOST_TO_DEVICE), -ADUMP_ERR_NOT_FOUND);
	/* A host pointer where the kind says device. */
	ck_assert_int_eq(adump_dev_memcpy(dev, host, 256, host + 128, 8,
					  ADUMP_COPY_HOST_TO_DEVICE), -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_memcpy(dev, host, 256, host + 128, 8,
					  ADUMP_COPY_DEVICE_TO_HOST), -ADUMP_ERR_NOT_FOUND);
	ck_assert_int_eq(adump_dev_memcpy(dev, d, 128, host, 8, ADUMP_COPY_DEVICE_TO_DEVICE),
			 -ADUMP_ERR_NOT_FOUND);
	/* DEFAULT: the device side must still fit. */
	ck_assert_int_eq(adump_dev_memcpy(dev, d, 256, host, 200, ADUMP_COPY_DEFAULT),
			 -ADUMP_ERR_NOT_FOUND);
	/* Arguments. */
	ck_assert_int_eq(adump_dev_memcpy(dev, NULL, 8, host, 8, ADUMP_COPY_HOST_TO_HOST), -EINVAL);
	ck_assert_int_eq(adump_dev_memcpy(dev, host, 8, NULL, 8, ADUMP_COPY_HOST_TO_HOST), -EINVAL);
	ck_assert_int_eq(adump_dev_memcpy(dev, d, 8, host, 8, (enum adump_copy_kind)9), -EINVAL);
	/* A freed allocation is gone. */
	ck_assert_int_eq(adump_dev_free(dev, d), 0);
	ck_assert_int_eq(adump_dev_memcpy(dev, d, 8, host, 8, ADUMP_COPY_HOST_TO_DEVICE),
			 -ADUMP_ERR_NOT_FOUND);
}
END_TEST

/* Threads allocate, check and free at once; run under TSAN this checks the registry lock. */
static void *churn_main(void *arg)
{
	uint64_t rng = *(const uint64_t *)arg;    /* t_seed() is not thread-safe: seeded by main */
	void *mine[32] = { 0 };

	for (int round = 0; round < 2000; round++) {
		int i = (int)(t_rand(&rng) % 32);

		if (mine[i]) {
			if (!adump_dev_is_device_ptr(dev, mine[i], 8) || adump_dev_free(dev, mine[i]))
				return (void *)1;
			mine[i] = NULL;
		} else if (adump_dev_malloc(dev, 8 + t_rand(&rng) % 4096, &mine[i])) {
			return (void *)1;
		}
	}
	for (int i = 0; i < 32; i++)
		if (mine[i] && adump_dev_free(dev, mine[i]))
			return (void *)1;
	return NULL;
}

START_TEST(test_concurrent_alloc)
{
	pthread_t threads[4];
	uint64_t seeds[4];
	void *res;

	for (int i = 0; i < 4; i++) {
		seeds[i] = t_seed() + (uint64_t)i;
		ck_assert_int_eq(pthread_create(&threads[i], NULL, churn_main, &seeds[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(threads[i], &res), 0);
		ck_assert_ptr_null(res);
	}
}
END_TEST

#ifdef T_HAVE_TESTPOINTS
START_TEST(test_malloc_injected_failure)
{
	void *p = NULL;

	adump_testpoint_arm("device.malloc", -ENOMEM, 2, 0);
	ck_assert_int_eq(adump_dev_malloc(dev, 16, &p), 0);
	ck_assert_int_eq(adump_dev_malloc(dev, 16, &p), -ENOMEM);
	adump_testpoint_disarm_all();
	ck_assert(adump_dev_is_device_ptr(dev, p, 16));     /* the first one, untouched */
	ck_assert_int_eq(adump_dev_free(dev, p), 0);
}
END_TEST
#endif

static Suite *memory_suite(void)
{
	Suite *s = suite_create("device_memory");
	TCase *tc = tcase_create("memory");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_open_by_id);
	tcase_add_test(tc, test_memory_survives_until_last_close);
	tcase_add_test(tc, test_malloc_free);
	tcase_add_test(tc, test_free_errors);
	tcase_add_test(tc, test_malloc_zero_is_too_big);
	tcase_add_test(tc, test_memory_is_per_device);
	tcase_add_test(tc, test_memcpy_kinds);
	tcase_add_test(tc, test_memcpy_errors);
	tcase_add_test(tc, test_concurrent_alloc);
#ifdef T_HAVE_TESTPOINTS
	tcase_add_test(tc, test_malloc_injected_failure);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return t_run_suite(memory_suite());
}
