/* SPDX-License-Identifier: Apache-2.0 */
/* acldumpRegCallback / acldumpUnregCallback: argument codes, chunks that reassemble (by
 * offset) to exactly the bytes the file sink writes, len = sizeof(acldumpChunk) + bufLen,
 * everything delivered when aclrtSynchronizeStream returns, callback errors counted but not
 * fatal, and files again after unregistering. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl_test.h"
#include "dump_data.pb-c.h"

#define ROWS 512
#define COLS 1024                       /* 2 MiB per float tensor: several chunks */

static char *dir, *config;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *assembled;
static size_t assembled_len;
static char first_name[ACL_DUMP_MAX_FILE_PATH_LENGTH];
static unsigned chunk_count, last_count, bad_len_count, name_changes;
static int fail_every;
static useconds_t delay_us;

static int32_t collect(const acldumpChunk *c, int32_t len)
{
	pthread_mutex_lock(&lock);
	if ((size_t)len != sizeof(acldumpChunk) + c->bufLen || c->flag != 0)
		bad_len_count++;
	if (!chunk_count)
		snprintf(first_name, sizeof(first_name), "%s", c->fileName);
	else if (strcmp(first_name, c->fileName))
		name_changes++;
	if (c->offset >= 0 && (size_t)c->offset + c->bufLen > assembled_len) {
		assembled = realloc(assembled, (size_t)c->offset + c->bufLen);
		memset(assembled + assembled_len, 0, (size_t)c->offset + c->bufLen - assembled_len);
		assembled_len = (size_t)c->offset + c->bufLen;
	}
	memcpy(assembled + c->offset, c->dataBuf, c->bufLen);
	chunk_count++;
	last_count += c->isLastChunk;
	pthread_mutex_unlock(&lock);
	if (delay_us)
		usleep(delay_us);
	return fail_every && chunk_count % (unsigned)fail_every == 0 ? -1 : 0;
}

static void setup(void)
{
	char *json;

	dir = t_tmpdir("acl-cb");
	ck_assert_ptr_nonnull(dir);
	ck_assert(asprintf(&json, "{\"dump\": {\"dump_path\": \"%s\", \"dump_list\": [], \"dump_op_switch\": \"on\", "
			   "\"dump_mode\": \"all\"}}", dir) > 0);
	config = t_acl_write(dir, "acl.json", json);
	free(json);
	t_acl_log_capture();
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
	free(config);
	free(assembled);
	assembled = NULL;
	assembled_len = 0;
}

START_TEST(test_reg_codes)
{
	ck_assert_int_eq(acldumpRegCallback(NULL, 0), ACL_ERROR_FAILURE);
	ck_assert(t_acl_log_has("messageCallback cannot be a NULL pointer"));
	ck_assert_int_eq(acldumpRegCallback(collect, 1), ACL_ERROR_FAILURE);
	ck_assert_int_eq(acldumpRegCallback(collect, -1), ACL_ERROR_FAILURE);
	ck_assert_int_eq(acldumpRegCallback(collect, 0), ACL_SUCCESS);
	acldumpUnregCallback();
	acldumpUnregCallback();         /* unconditional */
}
END_TEST

/* The only regular file below @root, read whole. */
static char found[4096];
static int find_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	/* Not acl.json, nor the open session's hand-over journal. */
	if (flag == FTW_F && !strstr(path, "acl.json") &&
	    strncmp(path + ftw->base, "adump-journal-", 14))
		snprintf(found, sizeof(found), "%s", path);
	return 0;
}

/* Header with dump_time cleared, repacked: the only field that differs between two runs. */
static uint8_t *normalised_header(const uint8_t *file, size_t len, size_t *hdr_len, size_t *out_len)
{
	uint64_t h;
	Toolkit__Dumpdata__DumpData *d;
	uint8_t *out;

	ck_assert_uint_ge(len, 8);
	memcpy(&h, file, 8);
	ck_assert_uint_le(h, len - 8);
	d = toolkit__dumpdata__dump_data__unpack(NULL, h, file + 8);
	ck_assert_ptr_nonnull(d);
	d->dump_time = 0;
	*out_len = toolkit__dumpdata__dump_data__get_packed_size(d);
	out = malloc(*out_len);
	toolkit__dumpdata__dump_data__pack(d, out);
	toolkit__dumpdata__dump_data__free_unpacked(d, NULL);
	*hdr_len = 8 + h;
	return out;
}

START_TEST(test_chunks_reassemble_to_file_bytes)
{
	aclrtStream s = t_acl_start(config);
	struct t_acl_big b;
	const char *data_dir;
	uint8_t *file, *h1, *h2;
	size_t file_len, hdr1, hdr2, n1, n2;

	t_acl_big_setup(&b, ROWS, COLS);
	/* 1: the file sink. */
	t_acl_big_launch(&b, s);
	data_dir = acldumpGetPath(DATA_DUMP);
	ck_assert_ptr_nonnull(data_dir);
	found[0] = '\0';
	ck_assert_int_eq(nftw(dir, find_one, 16, FTW_PHYS), 0);
	ck_assert_uint_eq(t_count_files(dir, ""), 2);   /* acl.json and the dump */
	file = t_read_file(found, &file_len);
	ck_assert_ptr_nonnull(file);
	ck_assert_uint_gt(file_len, 3u * ROWS * COLS * sizeof(float));

	/* 2: the same op through the callback: no new file, same bytes. */
	ck_assert_int_eq(acldumpRegCallback(collect, 0), ACL_SUCCESS);
	delay_us = 200;
	t_acl_big_launch(&b, s);
	/* aclrtSynchronizeStream returned: every chunk is in. */
	pthread_mutex_lock(&lock);
	ck_assert_uint_gt(chunk_count, 3);
	ck_assert_uint_eq(last_count, 1);
	ck_assert_uint_eq(bad_len_count, 0);
	ck_assert_uint_eq(name_changes, 0);
	ck_assert_uint_eq(assembled_len, file_len);
	ck_assert_int_eq(strncmp(first_name, acldumpGetPath(DATA_DUMP), strlen(acldumpGetPath(DATA_DUMP))), 0);
	ck_assert_ptr_nonnull(strstr(first_name, "/0/Add.aclnnAdd."));
	pthread_mutex_unlock(&lock);
	ck_assert_uint_eq(t_count_files(dir, ""), 2);

	h1 = normalised_header(file, file_len, &hdr1, &n1);
	h2 = normalised_header(assembled, assembled_len, &hdr2, &n2);
	ck_assert_uint_eq(hdr1, hdr2);
	ck_assert_uint_eq(n1, n2);
	ck_assert_mem_eq(h1, h2, n1);
	ck_assert(memcmp(file + hdr1, assembled + hdr2, file_len - hdr1) == 0);

	/* 3: unregistered, files again. */
	acldumpUnregCallback();
	t_acl_big_launch(&b, s);
	ck_assert_uint_eq(t_count_files(dir, ""), 3);

	free(h1);
	free(h2);
	free(file);
	t_acl_big_teardown(&b);
	t_acl_stop(s);
}
END_TEST

START_TEST(test_callback_errors_are_counted)
{
	aclrtStream s = t_acl_start(config);
	struct t_acl_add a;

	ck_assert_int_eq(acldumpRegCallback(collect, 0), ACL_SUCCESS);
	fail_every = 1;
	t_acl_add_setup(&a);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
		ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	}
	pthread_mutex_lock(&lock);
	ck_assert_uint_eq(last_count, 3);       /* delivery went on */
	pthread_mutex_unlock(&lock);
	ck_assert_uint_ge(atomic_load(&adump_acl_state()->callback_errors), 3);
	ck_assert(t_acl_log_has("dump callback returned -1"));
	acldumpUnregCallback();
	t_acl_add_teardown(&a);
	t_acl_stop(s);
}
END_TEST

/* Registered before aclInit: dump configured by aclInit goes to the callback from the start. */
START_TEST(test_callback_before_init)
{
	aclrtStream s;
	struct t_acl_add a;

	ck_assert_int_eq(acldumpRegCallback(collect, 0), ACL_SUCCESS);
	s = t_acl_start(config);
	t_acl_add_setup(&a);
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	pthread_mutex_lock(&lock);
	ck_assert_uint_eq(last_count, 1);
	pthread_mutex_unlock(&lock);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);   /* only acl.json */
	t_acl_add_teardown(&a);
	acldumpUnregCallback();
	t_acl_stop(s);
}
END_TEST

/* dump_data stats with a callback: the CSV text arrives as one chunk named <file>.csv. */
START_TEST(test_stats_through_callback)
{
	char *json, *cfg;
	aclrtStream s;
	struct t_acl_add a;

	ck_assert(asprintf(&json, "{\"dump\": {\"dump_path\": \"%s\", \"dump_op_switch\": \"on\", "
			   "\"dump_data\": \"stats\", \"dump_stats\": [\"Max\", \"Min\"]}}", dir) > 0);
	cfg = t_acl_write(dir, "stats.json", json);
	s = t_acl_start(cfg);
	ck_assert_int_eq(acldumpRegCallback(collect, 0), ACL_SUCCESS);
	t_acl_add_setup(&a);
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	pthread_mutex_lock(&lock);
	ck_assert_uint_eq(chunk_count, 1);
	ck_assert_uint_eq(last_count, 1);
	ck_assert_uint_eq(strlen(first_name) - strlen(strstr(first_name, ".csv")), strlen(first_name) - 4);
	ck_assert_str_eq((char *)assembled, "Input/Output,Index,Data Size,Data Type,Format,Shape,Count,Max Value,Min Value\n"
			 "Output,0,32,DT_FLOAT,ND,4x2,8,10,1\n");
	pthread_mutex_unlock(&lock);
	ck_assert_uint_eq(t_count_files(dir, ""), 2);   /* the two json files only */
	acldumpUnregCallback();
	t_acl_add_teardown(&a);
	t_acl_stop(s);
	free(json);
	free(cfg);
}
END_TEST

/* Several host threads, each with its own stream, launching while the callback runs on the
 * workers: every file arrives complete, once. */
#define THREADS 4
#define LAUNCHES 25

static void *launcher(void *arg)
{
	aclrtStream s = NULL;
	struct t_acl_add a;

	(void)arg;
	ck_assert_int_eq(aclrtSetDevice(0), ACL_SUCCESS);
	ck_assert_int_eq(aclrtCreateStream(&s), ACL_SUCCESS);
	t_acl_add_setup(&a);
	for (int i = 0; i < LAUNCHES; i++)
		ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	t_acl_add_teardown(&a);
	ck_assert_int_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	return NULL;
}

START_TEST(test_threads_and_streams)
{
	aclrtStream s = t_acl_start(config);
	pthread_t th[THREADS];

	ck_assert_int_eq(acldumpRegCallback(collect, 0), ACL_SUCCESS);
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, launcher, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
	pthread_mutex_lock(&lock);
	ck_assert_uint_eq(last_count, THREADS * LAUNCHES);
	ck_assert_uint_eq(bad_len_count, 0);
	pthread_mutex_unlock(&lock);
	acldumpUnregCallback();
	t_acl_stop(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl_callback");
	TCase *tc = tcase_create("callback");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_reg_codes);
	tcase_add_test(tc, test_chunks_reassemble_to_file_bytes);
	tcase_add_test(tc, test_callback_errors_are_counted);
	tcase_add_test(tc, test_callback_before_init);
	tcase_add_test(tc, test_stats_through_callback);
	tcase_add_test(tc, test_threads_and_streams);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
