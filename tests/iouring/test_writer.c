/* SPDX-License-Identifier: Apache-2.0 */
/* iouring/ on its own: both backends (pwrite inline and with its I/O threads) complete every
 * request whole and exactly once, at its offset, through short writes and -EAGAIN; errors
 * reach the one request they hit; a refused io_uring falls back (AUTO) or fails (URING); the
 * doorbell wakes a blocked wait. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/common.h"
#include "helpers.h"
#include "iouring/writer.h"

#define REQ_COUNT 48
#define REQ_BYTES 8192

static char *dir;
/* The pwrite backend's I/O threads in writers this test opens (0: inline). */
static unsigned pool_threads;
static size_t pool_inline_bytes;                /* ... and their inline write limit */

static void setup(void)
{
	dir = t_tmpdir("writer");
	ck_assert_ptr_nonnull(dir);
}

static void teardown(void)
{
	adump_testpoint_disarm_all();
	pool_threads = 0;
	pool_inline_bytes = 0;
	t_rmtree(dir);
	free(dir);
}

static struct adump_writer *writer_open(enum adump_writer_kind kind, int doorbell_fd)
{
	struct adump_writer_cfg cfg = { .kind = kind, .depth = 8, .doorbell_fd = doorbell_fd,
					.threads = pool_threads, .inline_bytes = pool_inline_bytes };
	struct adump_writer *w = NULL;

	ck_assert_int_eq(adump_writer_create(&cfg, &w), 0);
	ck_assert_int_eq(adump_writer_backend(w), kind);
	return w;
}

static int file_open(const char *name)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0640);
	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Waits until every request has come back; each must come back once. Return: how many
 * came back, in @order. */
static unsigned reap_all(struct adump_writer *w, struct adump_wreq *reqs, unsigned count,
			 unsigned *order)
{
	unsigned seen = 0;

	ck_assert_int_eq(adump_writer_submit(w), 0);
	while (adump_writer_in_flight(w)) {
		struct adump_wreq *done[8];
		bool doorbell;
		int n = adump_writer_wait(w, done, 8, true, &doorbell);

		ck_assert_int_ge(n, 0);
		for (int i = 0; i < n; i++) {
			unsigned idx = (unsigned)(done[i] - reqs);

			ck_assert_uint_lt(idx, count);
			ck_assert_ptr_null(done[i]->owner);     /* not returned twice */
			done[i]->owner = done[i];
			order[seen++] = idx;
		}
	}
	return seen;
}

/* REQ_COUNT writes of distinct bytes, queued in reverse file order, each returned once with
 * its whole length (or -EIO for the one at @expect_res_fail_index), then the file read back. */
static void write_and_check(enum adump_writer_kind kind, int expect_res_fail_index)
{
	struct adump_writer *w = writer_open(kind, -1);
	static struct adump_wreq reqs[REQ_COUNT];
	static unsigned char data[REQ_COUNT * REQ_BYTES], back[REQ_COUNT * REQ_BYTES];
	unsigned order[REQ_COUNT];
	uint64_t seed = t_seed();
	int fd = file_open("data");

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)t_rand(&seed);
	memset(reqs, 0, sizeof(reqs));
	for (unsigned i = 0; i < REQ_COUNT; i++) {
		unsigned k = REQ_COUNT - 1 - i;

		reqs[i] = (struct adump_wreq){ .fd = fd, .buf_index = -1,
					       .buf = data + (size_t)k * REQ_BYTES,
					       .len = REQ_BYTES, .offset = (uint64_t)k * REQ_BYTES };
		ck_assert_int_eq(adump_writer_write(w, &reqs[i]), 0);
	}
	ck_assert_uint_eq(reap_all(w, reqs, REQ_COUNT, order), REQ_COUNT);
	for (unsigned i = 0; i < REQ_COUNT; i++) {
		if ((int)i == expect_res_fail_index)
			ck_assert_int_eq(reqs[i].res, -EIO);
		else
			ck_assert_int_eq(reqs[i].res, REQ_BYTES);
	}
	ck_assert_uint_eq(adump_writer_in_flight(w), 0);
	if (expect_res_fail_index < 0) {
		ck_assert_int_eq(pread(fd, back, sizeof(back), 0), (ssize_t)sizeof(back));
		ck_assert_int_eq(memcmp(back, data, sizeof(data)), 0);
	}
	/* pwrite inline completes synchronously, so in the order the writes were queued. */
	if (kind == ADUMP_WRITER_PWRITE && !pool_threads)
		for (unsigned i = 0; i < REQ_COUNT; i++)
			ck_assert_uint_eq(order[i], i);
	close(fd);
	adump_writer_destroy(w);
}

/* Each request comes back only once all its bytes are in the file, also when a short write
 * left a rest to resubmit: read back at the moment of completion. */
static void complete_means_written(enum adump_writer_kind kind)
{
	struct adump_writer *w = writer_open(kind, -1);
	struct adump_wreq reqs[4];
	static unsigned char data[4][REQ_BYTES];
	unsigned char back[REQ_BYTES];
	unsigned returned = 0;
	int fd = file_open("whole");

	adump_testpoint_arm("uring.short", 1, 1, 1);    /* every write short */
	memset(reqs, 0, sizeof(reqs));
	for (unsigned i = 0; i < 4; i++) {
		memset(data[i], 'a' + (int)i, REQ_BYTES);
		reqs[i] = (struct adump_wreq){ .fd = fd, .buf_index = -1, .buf = data[i],
					       .len = REQ_BYTES, .offset = (uint64_t)i * REQ_BYTES };
		ck_assert_int_eq(adump_writer_write(w, &reqs[i]), 0);
	}
	ck_assert_int_eq(adump_writer_submit(w), 0);
	while (returned < 4) {
		struct adump_wreq *done[4];
		bool doorbell;
		int n = adump_writer_wait(w, done, 4, true, &doorbell);

		ck_assert_int_ge(n, 0);
		for (int i = 0; i < n; i++) {
			ck_assert_int_eq(done[i]->res, REQ_BYTES);
			ck_assert_uint_eq(done[i]->done, REQ_BYTES);
			ck_assert_int_eq(pread(fd, back, REQ_BYTES, (off_t)done[i]->offset),
					 REQ_BYTES);
			ck_assert_int_eq(memcmp(back, done[i]->buf, REQ_BYTES), 0);
		}
		returned += (unsigned)n;
	}
	ck_assert_uint_eq(adump_writer_in_flight(w), 0);
	close(fd);
	adump_writer_destroy(w);
}

START_TEST(test_writes_land_uring)
{
	write_and_check(ADUMP_WRITER_URING, -1);
}
END_TEST

START_TEST(test_writes_land_pwrite)
{
	write_and_check(ADUMP_WRITER_PWRITE, -1);
}
END_TEST

START_TEST(test_short_writes_uring)
{
	adump_testpoint_arm("uring.short", 1, 2, 2);    /* every other completion short */
	write_and_check(ADUMP_WRITER_URING, -1);
	adump_testpoint_disarm_all();
	complete_means_written(ADUMP_WRITER_URING);
}
END_TEST

START_TEST(test_short_writes_pwrite)
{
	adump_testpoint_arm("uring.short", 1, 2, 2);
	write_and_check(ADUMP_WRITER_PWRITE, -1);
	adump_testpoint_disarm_all();
	complete_means_written(ADUMP_WRITER_PWRITE);
}
END_TEST

START_TEST(test_eagain_retried_uring)
{
	/* The kernel answers -EAGAIN to every third completion: each is resubmitted. */
	adump_testpoint_arm("uring.eagain", 1, 3, 2);
	write_and_check(ADUMP_WRITER_URING, -1);
}
END_TEST

/* A failed write is that request's result; the others still complete. */
static void error_reaches_its_request(enum adump_writer_kind kind)
{
	struct adump_writer *w = writer_open(kind, -1);
	struct adump_wreq reqs[3];
	unsigned order[3];
	char buf[64] = "x";
	int fd = file_open("err");

	memset(reqs, 0, sizeof(reqs));
	for (unsigned i = 0; i < 3; i++)
		reqs[i] = (struct adump_wreq){ .fd = i == 1 ? -1 : fd, .buf_index = -1, .buf = buf,
					       .len = sizeof(buf), .offset = i * sizeof(buf) };
	for (unsigned i = 0; i < 3; i++)
		ck_assert_int_eq(adump_writer_write(w, &reqs[i]), 0);
	ck_assert_uint_eq(reap_all(w, reqs, 3, order), 3);
	ck_assert_int_eq(reqs[0].res, (int)sizeof(buf));
	ck_assert_int_eq(reqs[1].res, -EBADF);
	ck_assert_int_eq(reqs[2].res, (int)sizeof(buf));
	close(fd);
	adump_writer_destroy(w);
}

START_TEST(test_error_reaches_its_request_uring)
{
	error_reaches_its_request(ADUMP_WRITER_URING);
}
END_TEST

START_TEST(test_error_reaches_its_request_pwrite)
{
	adump_testpoint_arm("uring.write", -EIO, 5, 0);
	write_and_check(ADUMP_WRITER_PWRITE, 4);
}
END_TEST

/* Completion order is the kernel's (or the I/O threads'): find the failed one by its result. */
static void injected_error(enum adump_writer_kind kind)
{
	adump_testpoint_arm("uring.write", -EIO, 5, 0);
	struct adump_writer *w = writer_open(kind, -1);
	struct adump_wreq reqs[8];
	unsigned order[8], failed = 0;
	char buf[32] = "y";
	int fd = file_open("inj");

	memset(reqs, 0, sizeof(reqs));
	for (unsigned i = 0; i < 8; i++) {
		reqs[i] = (struct adump_wreq){ .fd = fd, .buf_index = -1, .buf = buf,
					       .len = sizeof(buf), .offset = i * sizeof(buf) };
		ck_assert_int_eq(adump_writer_write(w, &reqs[i]), 0);
	}
	ck_assert_uint_eq(reap_all(w, reqs, 8, order), 8);
	for (unsigned i = 0; i < 8; i++) {
		if (reqs[i].res == -EIO)
			failed++;
		else
			ck_assert_int_eq(reqs[i].res, (int)sizeof(buf));
	}
	ck_assert_uint_eq(failed, 1);
	close(fd);
	adump_writer_destroy(w);
}

START_TEST(test_injected_error_uring)
{
	injected_error(ADUMP_WRITER_URING);
}
END_TEST

/* The pwrite backend with I/O threads: as asynchronous as io_uring, every request whole and
 * once (in any order), short writes continued, errors on their own request, syncs run. */
START_TEST(test_pool_writes_land)
{
	pool_threads = 3;
	write_and_check(ADUMP_WRITER_PWRITE, -1);
	adump_testpoint_arm("uring.short", 1, 2, 2);
	write_and_check(ADUMP_WRITER_PWRITE, -1);
	/* Small buffered writes on the owner's thread, completed through the same list. */
	pool_inline_bytes = REQ_BYTES;
	write_and_check(ADUMP_WRITER_PWRITE, -1);
	pool_inline_bytes = 0;
	adump_testpoint_disarm_all();
	complete_means_written(ADUMP_WRITER_PWRITE);
	error_reaches_its_request(ADUMP_WRITER_PWRITE);
	injected_error(ADUMP_WRITER_PWRITE);
}
END_TEST

/* AUTO takes pwrite when io_uring setup is refused; URING reports the refusal; an error
 * that is not a refusal is not papered over. */
START_TEST(test_setup_refused_falls_back)
{
	struct adump_writer_cfg cfg = { .kind = ADUMP_WRITER_AUTO, .depth = 8, .doorbell_fd = -1 };
	struct adump_writer *w = NULL;

	adump_testpoint_arm("uring.setup", -EPERM, 1, 1);
	ck_assert_int_eq(adump_writer_create(&cfg, &w), 0);
	ck_assert_int_eq(adump_writer_backend(w), ADUMP_WRITER_PWRITE);
	adump_writer_destroy(w);
	w = NULL;
	cfg.kind = ADUMP_WRITER_URING;
	ck_assert_int_eq(adump_writer_create(&cfg, &w), -EPERM);
	ck_assert_ptr_null(w);
	ck_assert_int_eq(adump_writer_probe_uring(), -EPERM);
	adump_testpoint_disarm_all();
	adump_testpoint_arm("uring.setup", -EMFILE, 1, 1);
	cfg.kind = ADUMP_WRITER_AUTO;
	ck_assert_int_eq(adump_writer_create(&cfg, &w), -EMFILE);
	ck_assert_ptr_null(w);
}
END_TEST

/* A data sync: run by io_uring, refused by pwrite (it would block the worker). */
START_TEST(test_datasync)
{
	struct adump_writer *w = writer_open(ADUMP_WRITER_PWRITE, -1);
	struct adump_wreq req = { .fd = -1, .is_datasync = true, .buf_index = -1 };
	unsigned order[1];
	int fd = file_open("sync");

	req.fd = fd;
	ck_assert_int_eq(adump_writer_write(w, &req), -EOPNOTSUPP);
	ck_assert_uint_eq(adump_writer_in_flight(w), 0);
	adump_writer_destroy(w);
	/* With I/O threads a sync runs on one of them. */
	pool_threads = 2;
	w = writer_open(ADUMP_WRITER_PWRITE, -1);
	ck_assert_int_eq(adump_writer_write(w, &req), 0);
	ck_assert_uint_eq(reap_all(w, &req, 1, order), 1);
	ck_assert_int_eq(req.res, 0);
	adump_writer_destroy(w);
	req.owner = NULL;
	if (t_feature_probe(T_URING) == 0) {
		w = writer_open(ADUMP_WRITER_URING, -1);
		ck_assert_int_eq(adump_writer_write(w, &req), 0);
		ck_assert_uint_eq(reap_all(w, &req, 1, order), 1);
		ck_assert_int_eq(req.res, 0);
		adump_writer_destroy(w);
	}
	close(fd);
}
END_TEST

/* The doorbell ends a blocked wait that has no request to wait for. */
static void doorbell_wakes(enum adump_writer_kind kind)
{
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct adump_writer *w;
	struct adump_wreq *done[1];
	uint64_t one = 1;
	bool doorbell = false;
	int tries = 0;

	ck_assert_int_ge(efd, 0);
	w = writer_open(kind, efd);
	ck_assert_int_eq(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
	/* A blocked wait may also end on its time slice first; the bell is seen soon after. */
	while (!doorbell && tries++ < 50)
		ck_assert_int_eq(adump_writer_wait(w, done, 1, true, &doorbell), 0);
	ck_assert(doorbell);
	adump_writer_destroy(w);
	close(efd);
}

START_TEST(test_doorbell_uring)
{
	doorbell_wakes(ADUMP_WRITER_URING);
}
END_TEST

START_TEST(test_doorbell_pwrite)
{
	doorbell_wakes(ADUMP_WRITER_PWRITE);
	pool_threads = 2;
	doorbell_wakes(ADUMP_WRITER_PWRITE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("writer");
	TCase *tc = tcase_create("writer");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	t_tcase_add_test_needing(tc, T_URING, test_writes_land_uring);
	tcase_add_test(tc, test_writes_land_pwrite);
	t_tcase_add_test_needing(tc, T_URING, test_short_writes_uring);
	tcase_add_test(tc, test_short_writes_pwrite);
	t_tcase_add_test_needing(tc, T_URING, test_eagain_retried_uring);
	t_tcase_add_test_needing(tc, T_URING, test_error_reaches_its_request_uring);
	tcase_add_test(tc, test_error_reaches_its_request_pwrite);
	tcase_add_test(tc, test_pool_writes_land);
	t_tcase_add_test_needing(tc, T_URING, test_injected_error_uring);
	tcase_add_test(tc, test_setup_refused_falls_back);
	tcase_add_test(tc, test_datasync);
	t_tcase_add_test_needing(tc, T_URING, test_doorbell_uring);
	tcase_add_test(tc, test_doorbell_pwrite);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
