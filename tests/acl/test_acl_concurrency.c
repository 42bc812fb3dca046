/* SPDX-License-Identifier: Apache-2.0 */
/* The CANN API from many threads (run under TSan in CI): 8 threads on 8 streams capturing at
 * once; streams created and destroyed while others capture; aclmdlFinalizeDump() while
 * threads keep launching. Every dump file is then opened and its output checked against its
 * inputs (out = self + other), so a lost, torn or mixed-up file fails, not just a crash.
 * Seeded: ADUMP_TEST_SEED replays a run. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ftw.h>

#include "acl/adump_acl.h"
#include "acl_test.h"
#include "adump/reader.h"

#define ELEMS 1024                      /* floats per tensor: 4 KiB */

static char *dir, *dump_dir, *json;
static uint64_t seed;

static void setup(void)
{
	dir = t_tmpdir("acl-conc");
	ck_assert_ptr_nonnull(dir);
	ck_assert(asprintf(&dump_dir, "%s/dump", dir) > 0);
	ck_assert_int_eq(mkdir(dump_dir, 0750), 0);
	ck_assert(asprintf(&json, "{\"dump\": {\"dump_path\": \"%s\", \"dump_list\": [], "
			   "\"dump_op_switch\": \"on\", \"dump_mode\": \"all\"}}", dump_dir) > 0);
	free(t_acl_write(dir, "acl.json", json));
	seed = t_seed();
	unsetenv("ASCEND_DUMP_PATH");
	unsetenv("ASCEND_WORK_PATH");
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
	free(dump_dir);
	free(json);
}

/* A stream and its Add operands: self = base + i, other = 2 * base, so each thread's files
 * carry values no other thread's have. */
struct adder {
	aclrtStream stream;
	void *dev[3];
	aclTensor *t[3];
	aclScalar *alpha;
	float base;
};

/* Thread failures are counted and reported by the main thread (ck_assert ends the process
 * only from the test's own thread). */
static _Atomic unsigned thread_errors;
static char first_error[256];
static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_error(const char *what, int code)
{
	pthread_mutex_lock(&error_lock);
	if (!first_error[0])
		snprintf(first_error, sizeof(first_error), "%s: %d", what, code);
	pthread_mutex_unlock(&error_lock);
	atomic_fetch_add(&thread_errors, 1);
}

#define TRY(call)                                                       \
	do {                                                            \
		int ret_ = (call);                                      \
		if (ret_ != 0) {                                        \
			note_error(#call, ret_);                              \
			return -1;                                      \
		}                                                       \
	} while (0)

static int adder_open(struct adder *a, float base)
{
	const int64_t shape[2] = { ELEMS / 4, 4 }, strides[2] = { 4, 1 };
	float host[ELEMS], one = 1.0f;

	memset(a, 0, sizeof(*a));
	a->base = base;
	TRY(aclrtCreateStream(&a->stream));
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < ELEMS; i++)
			host[i] = k == 0 ? base + (float)i : k == 1 ? 2 * base : 0;
		TRY(aclrtMalloc(&a->dev[k], sizeof(host), ACL_MEM_MALLOC_HUGE_FIRST));
		TRY(aclrtMemcpy(a->dev[k], sizeof(host), host, sizeof(host),
				ACL_MEMCPY_HOST_TO_DEVICE));
		a->t[k] = aclCreateTensor(shape, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 2,
					  a->dev[k]);
		if (!a->t[k]) {
			note_error("aclCreateTensor", -1);
			return -1;
		}
	}
	a->alpha = aclCreateScalar(&one, ACL_FLOAT);
	return a->alpha ? 0 : -1;
}

static int adder_launch(struct adder *a)
{
	aclOpExecutor *e = NULL;
	uint64_t ws = 0;

	TRY(aclnnAddGetWorkspaceSize(a->t[0], a->t[1], a->alpha, a->t[2], &ws, &e));
	TRY(aclnnAdd(NULL, 0, e, a->stream));
	return 0;
}

/* Synchronise, check the result on the device, release everything. */
static int adder_close(struct adder *a)
{
	float host[ELEMS];
	int rc = 0;

	if (aclrtSynchronizeStream(a->stream) != ACL_SUCCESS) {
		note_error("aclrtSynchronizeStream", -1);
		rc = -1;
	}
	if (aclrtMemcpy(host, sizeof(host), a->dev[2], sizeof(host), ACL_MEMCPY_DEVICE_TO_HOST) ==
	    ACL_SUCCESS) {
		for (int i = 0; i < ELEMS; i++)
			if (host[i] != 3 * a->base + (float)i) {
				note_error("device result", i);
				rc = -1;
				break;
			}
	}
	for (int k = 0; k < 3; k++) {
		aclDestroyTensor(a->t[k]);
		aclrtFree(a->dev[k]);
	}
	aclDestroyScalar(a->alpha);
	if (aclrtDestroyStream(a->stream) != ACL_SUCCESS) {
		note_error("aclrtDestroyStream", -1);
		rc = -1;
	}
	return rc;
}

static size_t file_count;
static size_t bad_count;
static char bad_first[512];
static struct adump_reader *reader;

/* Every file below the dump directory: a complete dump of one Add whose output is the sum
 * of its inputs, element by element. */
static int check_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	const struct adump_reader_header *h;
	float in0[ELEMS], in1[ELEMS], out[ELEMS];
	const char *why = NULL;

	(void)st;
	(void)ftw;
	if (flag != FTW_F)
		return 0;
	file_count++;
	if (adump_reader_open(reader, path) < 0) {
		why = adump_reader_error(reader);
	} else {
		h = adump_reader_header(reader);
		if (h->tensor_count != 3 || h->tensors[0].info.bytes != sizeof(in0) ||
		    h->tensors[2].info.bytes != sizeof(out))
			why = "not the 3 tensors of an Add";
		else if (adump_reader_read(reader, 0, 0, in0, sizeof(in0)) < 0 ||
			 adump_reader_read(reader, 1, 0, in1, sizeof(in1)) < 0 ||
			 adump_reader_read(reader, 2, 0, out, sizeof(out)) < 0)
			why = "unreadable tensor";
		else
			for (int i = 0; i < ELEMS && !why; i++)
				if (out[i] != in0[i] + in1[i] || in0[i] != in0[0] + (float)i)
					why = "output is not self + other";
		adump_reader_close(reader);
	}
	if (why) {
		if (!bad_count++)
			snprintf(bad_first, sizeof(bad_first), "%s: %s", path, why);
	}
	return 0;
}

/* Checks every file; returns how many there are. */
static size_t check_files(void)
{
	file_count = bad_count = 0;
	ck_assert_int_eq(adump_reader_create(&reader), 0);
	ck_assert_int_eq(nftw(dump_dir, check_one, 16, FTW_PHYS), 0);
	adump_reader_destroy(reader);
	ck_assert_msg(bad_count == 0, "%zu bad files (seed %llu), first %s", bad_count,
		      (unsigned long long)seed, bad_first);
	return file_count;
}

static void set_dump_config(void)
{
	char *path = t_acl_write(dir, "mdl.json", json);

	ck_assert_int_eq(aclmdlSetDump(path), ACL_SUCCESS);
	free(path);
}

static void check_threads(void)
{
	ck_assert_msg(atomic_load(&thread_errors) == 0, "%u thread errors (seed %llu), first %s",
		      atomic_load(&thread_errors), (unsigned long long)seed, first_error);
}

/* ---- 8 threads, 8 streams ---- */

#define THREADS 8
#define OPS 24

struct worker {
	pthread_t thread;
	unsigned index;
	uint64_t rng;
	unsigned launched;
};

static void *eight_streams_main(void *arg)
{
	struct worker *w = arg;
	struct adder a;

	/* The current device is per thread in CANN. */
	if (aclrtSetDevice(0) != ACL_SUCCESS) {
		note_error("aclrtSetDevice", -1);
		return NULL;
	}
	if (adder_open(&a, (float)(w->index + 1) * 4096) == 0) {
		for (unsigned i = 0; i < OPS; i++) {
			if (adder_launch(&a) < 0)
				break;
			w->launched++;
			if (t_rand(&w->rng) % 4 == 0 && aclrtSynchronizeStream(a.stream) != ACL_SUCCESS)
				note_error("aclrtSynchronizeStream", -1);
		}
		adder_close(&a);
	}
	aclrtResetDevice(0);
	return NULL;
}

START_TEST(test_eight_threads_eight_streams)
{
	struct worker w[THREADS];
	unsigned launched = 0;

	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(aclrtSetDevice(0), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
	set_dump_config();
	for (unsigned i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .index = i, .rng = seed + i };
		ck_assert_int_eq(pthread_create(&w[i].thread, NULL, eight_streams_main, &w[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++) {
		pthread_join(w[i].thread, NULL);
		launched += w[i].launched;
	}
	check_threads();
	ck_assert_uint_eq(launched, THREADS * OPS);
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclrtResetDeviceForce(0), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	ck_assert_uint_eq(check_files(), THREADS * OPS);
}
END_TEST

/* ---- streams created and destroyed while others capture ---- */

#define STEADY 4
#define CHURN 2
#define CHURN_ROUNDS 12
#define STEADY_MAX 400

static _Atomic bool is_churn_done;

static void *steady_main(void *arg)
{
	struct worker *w = arg;
	struct adder a;

	if (aclrtSetDevice(0) != ACL_SUCCESS) {
		note_error("aclrtSetDevice", -1);
		return NULL;
	}
	if (adder_open(&a, (float)(w->index + 1) * 4096) == 0) {
		/* At least OPS launches, and on until the churn is over (at most STEADY_MAX), so
		 * streams come and go while this one captures. */
		while (w->launched < OPS || (!atomic_load(&is_churn_done) && w->launched < STEADY_MAX)) {
			if (adder_launch(&a) < 0)
				break;
			w->launched++;
			if (w->launched % 8 == 0 && aclrtSynchronizeStream(a.stream) != ACL_SUCCESS)
				note_error("aclrtSynchronizeStream", -1);
		}
		adder_close(&a);
	}
	aclrtResetDevice(0);
	return NULL;
}

static void *churn_main(void *arg)
{
	struct worker *w = arg;

	if (aclrtSetDevice(0) != ACL_SUCCESS) {
		note_error("aclrtSetDevice", -1);
		return NULL;
	}
	for (unsigned round = 0; round < CHURN_ROUNDS; round++) {
		struct adder a;
		unsigned ops = 1 + (unsigned)(t_rand(&w->rng) % 3);

		if (adder_open(&a, (float)(64 + w->index * CHURN_ROUNDS + round) * 4096) < 0)
			break;
		for (unsigned i = 0; i < ops; i++) {
			if (adder_launch(&a) < 0)
				break;
			w->launched++;
		}
		/* Destroyed with its ops still queued half of the time: destroy must sync. */
		if (t_rand(&w->rng) % 2 && aclrtSynchronizeStream(a.stream) != ACL_SUCCESS)
			note_error("aclrtSynchronizeStream", -1);
		adder_close(&a);
	}
	aclrtResetDevice(0);
	return NULL;
}

START_TEST(test_streams_come_and_go)
{
	struct worker w[STEADY + CHURN];
	unsigned launched = 0;

	atomic_store(&is_churn_done, false);
	{
		char *path = t_acl_write(dir, "init.json", json);

		ck_assert_int_eq(aclInit(path), ACL_SUCCESS);
		free(path);
	}
	ck_assert_int_eq(aclrtSetDevice(0), ACL_SUCCESS);
	for (unsigned i = 0; i < STEADY + CHURN; i++) {
		w[i] = (struct worker){ .index = i, .rng = seed * 31 + i };
		ck_assert_int_eq(pthread_create(&w[i].thread, NULL,
						i < STEADY ? steady_main : churn_main, &w[i]), 0);
	}
	for (unsigned i = STEADY; i < STEADY + CHURN; i++)
		pthread_join(w[i].thread, NULL);
	atomic_store(&is_churn_done, true);
	for (unsigned i = 0; i < STEADY; i++)
		pthread_join(w[i].thread, NULL);
	for (unsigned i = 0; i < STEADY + CHURN; i++)
		launched += w[i].launched;
	check_threads();
	ck_assert_int_eq(aclrtResetDeviceForce(0), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	ck_assert_uint_eq(check_files(), launched);
}
END_TEST

/* ---- aclmdlFinalizeDump under load ---- */

#define LOADERS 4
#define BURST 48                        /* launches per loader, unsynchronised, before finalize */
#define LOADER_MAX 400                  /* launches per loader in all, at most */

static _Atomic unsigned launched_total, burst_done;
static _Atomic bool is_racing, is_stopping;

static void *loader_main(void *arg)
{
	struct worker *w = arg;
	struct adder a;

	if (aclrtSetDevice(0) != ACL_SUCCESS) {
		note_error("aclrtSetDevice", -1);
		atomic_fetch_add(&burst_done, 1);
		return NULL;
	}
	if (adder_open(&a, (float)(w->index + 1) * 4096) == 0) {
		/* A burst without synchronising: the ops pile up in the pipeline. Then, when
		 * racing, launch on while the main thread finalizes. */
		for (unsigned i = 0; i < BURST && adder_launch(&a) == 0; i++)
			atomic_fetch_add(&launched_total, 1);
		atomic_fetch_add(&burst_done, 1);
		while (atomic_load(&is_racing) && !atomic_load(&is_stopping) &&
		       atomic_load(&launched_total) < LOADERS * LOADER_MAX) {
			if (adder_launch(&a) < 0)
				break;
			atomic_fetch_add(&launched_total, 1);
		}
		while (!atomic_load(&is_stopping))
			sched_yield();
		adder_close(&a);
	} else {
		atomic_fetch_add(&burst_done, 1);
	}
	aclrtResetDevice(0);
	return NULL;
}

/* @is_race: loaders go on launching while aclmdlFinalizeDump() runs; otherwise finalize
 * runs with the bursts in flight and nothing else. */
static void finalize_under_load(bool is_race)
{
	struct worker w[LOADERS];
	unsigned before, after, files;

	atomic_store(&launched_total, 0);
	atomic_store(&burst_done, 0);
	atomic_store(&is_racing, is_race);
	atomic_store(&is_stopping, false);
	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(aclrtSetDevice(0), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
	set_dump_config();
	for (unsigned i = 0; i < LOADERS; i++) {
		w[i] = (struct worker){ .index = i };
		ck_assert_int_eq(pthread_create(&w[i].thread, NULL, loader_main, &w[i]), 0);
	}
	while (atomic_load(&burst_done) < LOADERS)
		sched_yield();
	/* Every launch that returned before finalize began must be in a file when it
	 * returns; launches racing it may or may not be. The test's timeout catches a hang. */
	before = atomic_load(&launched_total);
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_SUCCESS);
	files = (unsigned)check_files();
	after = atomic_load(&launched_total);
	atomic_store(&is_stopping, true);
	for (unsigned i = 0; i < LOADERS; i++)
		pthread_join(w[i].thread, NULL);
	check_threads();
	ck_assert_uint_ge(before, LOADERS * BURST);
	if (is_race)
		ck_assert_msg(files >= before && files <= after, "%u files, %u launches before "
			      "finalize, %u when it returned (seed %llu)", files, before, after,
			      (unsigned long long)seed);
	else
		ck_assert_uint_eq(files, before);
	/* Launches after finalize dump nothing. */
	ck_assert_uint_eq(check_files(), files);
	ck_assert_int_eq(aclrtResetDeviceForce(0), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
}

START_TEST(test_finalize_flushes_in_flight)
{
	finalize_under_load(false);
}
END_TEST

START_TEST(test_finalize_races_launches)
{
	finalize_under_load(true);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl_concurrency");
	TCase *tc = tcase_create("threads");

	tcase_set_timeout(tc, 240);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_eight_threads_eight_streams);
	tcase_add_test(tc, test_streams_come_and_go);
	tcase_add_test(tc, test_finalize_flushes_in_flight);
	tcase_add_test(tc, test_finalize_races_launches);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
