/* SPDX-License-Identifier: Apache-2.0 */
/* Four threads on four ACL streams: while one stream's dumps are held back (its executor
 * waits, its queue fills and its aclnnAdd blocks), the other three keep launching and
 * synchronising. acl/ holds no lock across a call that waits for the device or the pipeline,
 * so one back-pressured stream never stalls the other threads' ACL calls. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "acl_test.h"

#define THREADS 4
#define FREE_LAUNCHES 40                /* per free thread, each followed by a sync */
#define QUEUE_SLOTS 1024                /* device/stream.c STREAM_QUEUE_SLOTS */
#define HELD_LAUNCHES (QUEUE_SLOTS + 64)        /* beyond the stream's queue: it blocks */

static char *dir, *config;

struct worker_arg {
	aclrtStream stream;
	unsigned launches;
	bool is_sync_each;
	_Atomic unsigned done;
	int error;
};

static void *launcher(void *p)
{
	struct worker_arg *a = p;
	struct t_acl_add add;

	/* CANN's current device is per thread. */
	if (aclrtSetDevice(0) != ACL_SUCCESS) {
		a->error = -1;
		return NULL;
	}
	t_acl_add_setup(&add);
	for (unsigned i = 0; i < a->launches && !a->error; i++) {
		if (t_acl_add_launch(&add, a->stream) != ACLNN_SUCCESS)
			a->error = -2;
		else if (a->is_sync_each && aclrtSynchronizeStream(a->stream) != ACL_SUCCESS)
			a->error = -3;
		atomic_fetch_add(&a->done, 1);
	}
	if (!a->error && aclrtSynchronizeStream(a->stream) != ACL_SUCCESS)
		a->error = -4;
	t_acl_add_teardown(&add);
	aclrtResetDevice(0);
	return NULL;
}

static void setup(void)
{
	char *json;

	dir = t_tmpdir("acl-streams");
	ck_assert_ptr_nonnull(dir);
	ck_assert(asprintf(&json, "{\"dump\": {\"dump_path\": \"%s\", \"dump_list\": [], "
			   "\"dump_op_switch\": \"on\", \"dump_mode\": \"all\"}}", dir) > 0);
	config = t_acl_write(dir, "acl.json", json);
	free(json);
}

static void teardown(void)
{
	adump_testpoint_disarm_all();
	t_rmtree(dir);
	free(dir);
	free(config);
}

START_TEST(test_held_stream_does_not_stall_others)
{
	aclrtStream streams[THREADS];
	struct worker_arg args[THREADS];
	pthread_t threads[THREADS];
	struct adump_acl_stream *held;

	ck_assert_int_eq(aclInit(config), ACL_SUCCESS);
	ck_assert_int_eq(aclrtSetDevice(0), ACL_SUCCESS);
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(aclrtCreateStream(&streams[i]), ACL_SUCCESS);
	held = streams[0];
	/* Stream 0's executor waits before each dump: its queue fills, its launches block. */
	adump_testpoint_arm("dev.dump_stall", (int)adump_dev_stream_id(held->dev_stream) + 1, 1, 1);
	for (int i = 0; i < THREADS; i++)
		args[i] = (struct worker_arg){ .stream = streams[i],
					       .launches = i ? FREE_LAUNCHES : HELD_LAUNCHES,
					       .is_sync_each = i != 0 };
	/* The held stream's queue fills first; its next launch then blocks in the device. */
	ck_assert_int_eq(pthread_create(&threads[0], NULL, launcher, &args[0]), 0);
	while (atomic_load(&args[0].done) < QUEUE_SLOTS && !args[0].error)
		usleep(1000);
	usleep(20000);
	for (int i = 1; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&threads[i], NULL, launcher, &args[i]), 0);
	/* The other three finish every launch and sync while stream 0 is still held (with a
	 * lock held across its blocked launch they would wait here until the timeout). */
	for (int i = 1; i < THREADS; i++) {
		ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
		ck_assert_int_eq(args[i].error, 0);
		ck_assert_uint_eq(atomic_load(&args[i].done), FREE_LAUNCHES);
	}
	ck_assert_uint_lt(atomic_load(&args[0].done), HELD_LAUNCHES);
	adump_testpoint_disarm_all();
	ck_assert_int_eq(pthread_join(threads[0], NULL), 0);
	ck_assert_int_eq(args[0].error, 0);
	ck_assert_uint_eq(atomic_load(&args[0].done), HELD_LAUNCHES);
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(aclrtDestroyStream(streams[i]), ACL_SUCCESS);
	ck_assert_int_eq(aclrtResetDeviceForce(0), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	/* Every launch dumped: one file per op. */
	ck_assert_uint_eq(t_count_files(dir, ""), 1 + 3 * FREE_LAUNCHES + HELD_LAUNCHES);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl_streams");
	TCase *tc = tcase_create("streams");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_held_stream_does_not_stall_others);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
