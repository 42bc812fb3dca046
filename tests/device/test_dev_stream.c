/* SPDX-License-Identifier: Apache-2.0 */
/* Streams: unique ids, many launches then one sync, in-order execution shown by chains of
 * dependent Adds, several streams at once, and destroy without a prior sync. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <time.h>

#include "dev_helpers.h"

static struct adump_dev *dev;

static void setup(void)
{
	ck_assert_int_eq(adump_dev_open(0, &dev), 0);
}

static void teardown(void)
{
	adump_dev_close(dev);
}

START_TEST(test_stream_ids)
{
	struct adump_dev_stream *s[4];

	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(adump_dev_stream_create(dev, &s[i]), 0);
		ck_assert_ptr_eq(adump_dev_stream_dev(s[i]), dev);
		ck_assert_ptr_null(adump_dev_stream_port(s[i]));
		ck_assert_uint_ge(adump_dev_stream_id(s[i]), 1);
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(adump_dev_stream_id(s[i]), adump_dev_stream_id(s[j]));
	}
	ck_assert_int_eq(adump_dev_stream_sync(s[0]), 0);   /* nothing launched */
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(adump_dev_stream_destroy(s[i]), 0);
	ck_assert_int_eq(adump_dev_stream_destroy(NULL), 0);
	ck_assert_int_eq(adump_dev_stream_create(NULL, &s[0]), -EINVAL);
}
END_TEST

/* acc += ones, @launch_count times, in place: only in-order execution ends at the count. */
static void run_counter(struct adump_dev_stream *s, int launch_count, int sync_every)
{
	const int64_t shape[] = { 257 };
	struct adump_dev_tensor acc = t_dev_tensor(dev, ADUMP_DT_INT32, 1, shape);
	struct adump_dev_tensor ones = t_dev_tensor(dev, ADUMP_DT_INT32, 1, shape);
	int32_t host[257], *got;

	for (int i = 0; i < 257; i++)
		host[i] = 1;
	t_dev_upload(dev, &ones, host);
	for (int i = 0; i < 257; i++)
		host[i] = -i;
	t_dev_upload(dev, &acc, host);
	for (int i = 1; i <= launch_count; i++) {
		ck_assert_int_eq(adump_dev_launch_add(s, &acc, &ones, 1.0, &acc, NULL), 0);
		if (sync_every && i % sync_every == 0)
			ck_assert_int_eq(adump_dev_stream_sync(s), 0);
	}
	ck_assert_int_eq(adump_dev_stream_sync(s), 0);
	got = t_dev_download(dev, &acc);
	for (int i = 0; i < 257; i++)
		ck_assert_int_eq(got[i], launch_count - i);
	free(got);
	t_dev_tensor_free(dev, &acc);
	t_dev_tensor_free(dev, &ones);
}

START_TEST(test_many_launches_then_sync)
{
	struct adump_dev_stream *s;

	ck_assert_int_eq(adump_dev_stream_create(dev, &s), 0);
	/* Far more than the queue holds, so launch must wait for room. */
	run_counter(s, 50000, 0);
	run_counter(s, 3000, 7);
	ck_assert_int_eq(adump_dev_stream_destroy(s), 0);
}
END_TEST

START_TEST(test_chained_float_adds)
{
	const int64_t shape[] = { 3, 5 };
	struct adump_dev_stream *s;
	struct adump_dev_tensor t[8];
	float host[15], *got;

	ck_assert_int_eq(adump_dev_stream_create(dev, &s), 0);
	for (int i = 0; i < 8; i++)
		t[i] = t_dev_tensor(dev, ADUMP_DT_FLOAT, 2, shape);
	for (int i = 0; i < 15; i++)
		host[i] = (float)i;
	t_dev_upload(dev, &t[0], host);
	t_dev_upload(dev, &t[1], host);
	/* Fibonacci: t[k] = t[k-1] + t[k-2], each launch reading the previous ones' output. */
	for (int k = 2; k < 8; k++)
		ck_assert_int_eq(adump_dev_launch_add(s, &t[k - 1], &t[k - 2], 1.0, &t[k], NULL), 0);
	ck_assert_int_eq(adump_dev_stream_sync(s), 0);
	got = t_dev_download(dev, &t[7]);
	for (int i = 0; i < 15; i++)
		ck_assert_float_eq(got[i], 21.0f * (float)i);  /* fib(8) = 21 */
	free(got);
	for (int i = 0; i < 8; i++)
		t_dev_tensor_free(dev, &t[i]);
	ck_assert_int_eq(adump_dev_stream_destroy(s), 0);
}
END_TEST

static void *counter_thread(void *arg)
{
	run_counter(arg, 20000, 0);
	return NULL;
}

START_TEST(test_streams_in_parallel)
{
	struct adump_dev_stream *s[3];
	pthread_t threads[3];

	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(adump_dev_stream_create(dev, &s[i]), 0);
		ck_assert_int_eq(pthread_create(&threads[i], NULL, counter_thread, s[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
		ck_assert_int_eq(adump_dev_stream_destroy(s[i]), 0);
	}
}
END_TEST

START_TEST(test_destroy_without_sync)
{
	const int64_t shape[] = { 64 };
	struct adump_dev_stream *s;
	struct adump_dev_tensor acc = t_dev_tensor(dev, ADUMP_DT_FLOAT, 1, shape);
	struct adump_dev_tensor ones = t_dev_tensor(dev, ADUMP_DT_FLOAT, 1, shape);
	const struct adump_dev_dump dump = { .op_type = "Add", .op_name = "add_unbound",
					     .tensor_mask = ADUMP_DUMP_ALL };
	float host[64], *got;

	for (int i = 0; i < 64; i++)
		host[i] = 1.0f;
	t_dev_upload(dev, &ones, host);
	for (int i = 0; i < 64; i++)
		host[i] = 0.0f;
	t_dev_upload(dev, &acc, host);
	ck_assert_int_eq(adump_dev_stream_create(dev, &s), 0);
	/* Dump requests on a stream without a channel are accepted and ignored. */
	for (int i = 0; i < 5000; i++)
		ck_assert_int_eq(adump_dev_launch_add(s, &acc, &ones, 0.5, &acc, i % 2 ? &dump : NULL),
				 0);
	ck_assert_int_eq(adump_dev_stream_destroy(s), 0);
	got = t_dev_download(dev, &acc);
	for (int i = 0; i < 64; i++)
		ck_assert_float_eq(got[i], 2500.0f);
	free(got);
	t_dev_tensor_free(dev, &acc);
	t_dev_tensor_free(dev, &ones);
}
END_TEST

START_TEST(test_destroy_reports_kernel_error)
{
	const int64_t shape[] = { 16 };
	struct adump_dev_stream *s;
	struct adump_dev_tensor a = t_dev_tensor(dev, ADUMP_DT_FLOAT, 1, shape);
	struct adump_dev_tensor b = t_dev_tensor(dev, ADUMP_DT_FLOAT, 1, shape);

	ck_assert_int_eq(adump_dev_stream_create(dev, &s), 0);
	/* Hold the executor ~50 ms so the free lands while the second task is queued. */
	adump_dev_set_compute_gbps(dev, 0.000004);
	ck_assert_int_eq(adump_dev_launch_add(s, &a, &a, 1.0, &a, NULL), 0);
	ck_assert_int_eq(adump_dev_launch_add(s, &a, &a, 1.0, &b, NULL), 0);
	t_dev_tensor_free(dev, &b);
	ck_assert_int_eq(adump_dev_stream_destroy(s), -EINVAL);
	adump_dev_set_compute_gbps(dev, 0);
	t_dev_tensor_free(dev, &a);
}
END_TEST

START_TEST(test_stream_keeps_device)
{
	struct adump_dev *own;
	struct adump_dev_stream *s;
	const int64_t shape[] = { 4 };
	struct adump_dev_tensor a;

	/* A device only the stream references stays usable until the stream goes. */
	ck_assert_int_eq(adump_dev_open(5, &own), 0);
	ck_assert_int_eq(adump_dev_stream_create(own, &s), 0);
	adump_dev_close(own);
	a = t_dev_tensor(adump_dev_stream_dev(s), ADUMP_DT_FLOAT, 1, shape);
	ck_assert_int_eq(adump_dev_launch_add(s, &a, &a, 1.0, &a, NULL), 0);
	ck_assert_int_eq(adump_dev_stream_sync(s), 0);
	ck_assert_int_eq(adump_dev_stream_destroy(s), 0);   /* frees the device and `a` */
}
END_TEST

struct syncer {
	struct adump_dev_stream *stream;
	_Atomic int is_stopping;
	int error;
};

static void *syncer_main(void *arg)
{
	struct syncer *y = arg;

	while (!atomic_load_explicit(&y->is_stopping, memory_order_acquire)) {
		int ret = adump_dev_stream_sync(y->stream);

		if (ret < 0 && y->error == 0)
			y->error = ret;
	}
	return NULL;
}

START_TEST(test_sync_from_another_thread)
{
	struct syncer y = { 0 };
	pthread_t thread;

	ck_assert_int_eq(adump_dev_stream_create(dev, &y.stream), 0);
	/* Sync is any-thread: a second thread syncing all along must not disturb the order. */
	ck_assert_int_eq(pthread_create(&thread, NULL, syncer_main, &y), 0);
	run_counter(y.stream, 20000, 0);
	atomic_store_explicit(&y.is_stopping, 1, memory_order_release);
	ck_assert_int_eq(pthread_join(thread, NULL), 0);
	ck_assert_int_eq(y.error, 0);
	ck_assert_int_eq(adump_dev_stream_destroy(y.stream), 0);
}
END_TEST

static uint64_t cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

START_TEST(test_idle_streams_sleep)
{
	struct adump_dev_stream *s[8];
	const struct timespec pause = { .tv_sec = 0, .tv_nsec = 300000000 };
	uint64_t before, used;

	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(adump_dev_stream_create(dev, &s[i]), 0);
	run_counter(s[0], 100, 0);
	before = cpu_ns();
	nanosleep(&pause, NULL);
	used = cpu_ns() - before;
	/* Eight idle executors over 300 ms: spinning would burn ~600 ms of CPU on two cores. */
	ck_assert_msg(used < 30000000u, "idle streams used %llu ns of CPU",
		      (unsigned long long)used);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(adump_dev_stream_destroy(s[i]), 0);
}
END_TEST

static Suite *stream_suite(void)
{
	Suite *s = suite_create("device_stream");
	TCase *tc = tcase_create("stream");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_stream_ids);
	tcase_add_test(tc, test_many_launches_then_sync);
	tcase_add_test(tc, test_chained_float_adds);
	tcase_add_test(tc, test_streams_in_parallel);
	tcase_add_test(tc, test_destroy_without_sync);
	tcase_add_test(tc, test_destroy_reports_kernel_error);
	tcase_add_test(tc, test_stream_keeps_device);
	tcase_add_test(tc, test_sync_from_another_thread);
	tcase_add_test(tc, test_idle_streams_sleep);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return t_run_suite(stream_suite());
}
