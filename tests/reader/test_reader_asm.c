/* SPDX-License-Identifier: Apache-2.0 */
/* The chunk assembler: in-order, appended and shuffled chunks rebuild the file byte for byte;
 * duplicates, overlaps, a second last chunk, bytes beyond the last one and missing chunks are
 * reported; absurd offsets and the memory limits never lead to large allocations. */
#include <pthread.h>
#include <stdio.h>

#include "reader_helpers.h"

struct piece {
	uint64_t start;
	size_t len;
};

/* Cut [0, len) into pieces of 1..max_piece bytes. Returns the count. */
static size_t cut(size_t len, size_t max_piece, struct piece *out, uint64_t *state)
{
	size_t n = 0;

	for (uint64_t pos = 0; pos < len;) {
		size_t l = 1 + (size_t)(t_rand(state) % max_piece);

		if (l > len - pos)
			l = len - pos;
		out[n++] = (struct piece){ pos, l };
		pos += l;
	}
	return n;
}

static void shuffle(struct piece *p, size_t n, uint64_t *state)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)(t_rand(state) % i);
		struct piece tmp = p[i - 1];

		p[i - 1] = p[j];
		p[j] = tmp;
	}
}

static void expect_err(struct adump_asm *a, int got, int want, const char *what)
{
	char msg[512];

	adump_asm_error(a, msg, sizeof(msg));
	ck_assert_msg(got == want, "expected %d got %d (%s)", want, got, msg);
	ck_assert_msg(strstr(msg, what), "'%s' not in '%s'", what, msg);
}

START_TEST(test_append_in_order)
{
	unsigned char data[1000];
	uint64_t state = 42;
	struct adump_asm *a;
	void *out;
	size_t len;

	rt_fill(data, sizeof(data), &state);
	ck_assert_int_eq(adump_asm_create(NULL, &a), 0);
	for (size_t pos = 0; pos < sizeof(data); pos += 100)
		ck_assert_int_eq(adump_asm_feed(a, "f", ADUMP_ASM_APPEND, data + pos, 100,
						pos + 100 == sizeof(data)),
				 pos + 100 == sizeof(data) ? 1 : 0);
	ck_assert_int_eq(adump_asm_take(a, "f", &out, &len), 0);
	ck_assert_uint_eq(len, sizeof(data));
	ck_assert_mem_eq(out, data, sizeof(data));
	free(out);
	ck_assert_uint_eq(adump_asm_file_count(a), 0);
	ck_assert_uint_eq(adump_asm_buffered_bytes(a), 0);
	ck_assert_int_eq(adump_asm_take(a, "f", &out, &len), -ADUMP_ERR_NOT_FOUND);
	adump_asm_destroy(a);
}
END_TEST

START_TEST(test_shuffled)
{
	uint64_t state = t_seed();
	static unsigned char data[20000];
	static struct piece pieces[20000];
	struct adump_asm *a;

	ck_assert_int_eq(adump_asm_create(NULL, &a), 0);
	for (int iter = 0; iter < 200; iter++) {
		size_t len = 1 + (size_t)(t_rand(&state) % sizeof(data));
		size_t n = cut(len, 1 + (size_t)(t_rand(&state) % 3000), pieces, &state);
		void *out;
		size_t out_len;

		rt_fill(data, len, &state);
		shuffle(pieces, n, &state);
		for (size_t i = 0; i < n; i++) {
			int ret = adump_asm_feed(a, "shuf", (int64_t)pieces[i].start,
						 data + pieces[i].start, pieces[i].len,
						 pieces[i].start + pieces[i].len == len);

			ck_assert_int_eq(ret, i + 1 == n ? 1 : 0);
		}
		ck_assert_int_eq(adump_asm_finish(a, "shuf"), 0);
		ck_assert_int_eq(adump_asm_take(a, "shuf", &out, &out_len), 0);
		ck_assert_uint_eq(out_len, len);
		ck_assert_mem_eq(out, data, len);
		free(out);
		ck_assert_uint_eq(adump_asm_buffered_bytes(a), 0);
	}
	adump_asm_destroy(a);
}
END_TEST

START_TEST(test_duplicate_and_overlap)
{
	unsigned char data[300];
	uint64_t state = 7;
	struct adump_asm *a;
	void *out;
	size_t len;

	rt_fill(data, sizeof(data), &state);
	ck_assert_int_eq(adump_asm_create(NULL, &a), 0);
	ck_assert_int_eq(adump_asm_feed(a, "d", 100, data + 100, 100, false), 0);
	expect_err(a, adump_asm_feed(a, "d", 100, data + 100, 100, false), -ADUMP_ERR_CORRUPT,
		   "d: chunk [100, 200) duplicates bytes [100, 200)");
	expect_err(a, adump_asm_feed(a, "d", 150, data + 150, 10, false), -ADUMP_ERR_CORRUPT,
		   "duplicates");
	expect_err(a, adump_asm_feed(a, "d", 50, data + 50, 60, false), -ADUMP_ERR_CORRUPT,
		   "chunk [50, 110) overlaps bytes [100, 200)");
	expect_err(a, adump_asm_feed(a, "d", 199, data + 199, 50, false), -ADUMP_ERR_CORRUPT,
		   "overlaps");
	/* Rejected chunks changed nothing: the file still completes correctly. */
	ck_assert_int_eq(adump_asm_feed(a, "d", 0, data, 100, false), 0);
	ck_assert_int_eq(adump_asm_feed(a, "d", 200, data + 200, 100, true), 1);
	expect_err(a, adump_asm_feed(a, "d", 0, data, 1, false), -ADUMP_ERR_CORRUPT,
		   "complete already");
	ck_assert_int_eq(adump_asm_take(a, "d", &out, &len), 0);
	ck_assert_uint_eq(len, sizeof(data));
	ck_assert_mem_eq(out, data, len);
	free(out);
	adump_asm_destroy(a);
}
END_TEST

START_TEST(test_last_chunk_rules)
{
	unsigned char data[300] = { 0 };
	struct adump_asm *a;
	void *out;
	size_t len;

	ck_assert_int_eq(adump_asm_create(NULL, &a), 0);
	ck_assert_int_eq(adump_asm_feed(a, "l", 200, data, 100, true), 0);
	expect_err(a, adump_asm_feed(a, "l", 100, data, 100, true), -ADUMP_ERR_CORRUPT,
		   "second last chunk");
	expect_err(a, adump_asm_feed(a, "l", 300, data, 1, false), -ADUMP_ERR_CORRUPT,
		   "beyond the last chunk");
	expect_err(a, adump_asm_feed(a, "l", 250, data, 100, false), -ADUMP_ERR_CORRUPT,
		   "beyond the last chunk");
	ck_assert_int_eq(adump_asm_take(a, "l", &out, &len), -ADUMP_ERR_INCOMPLETE);
	ck_assert_int_eq(adump_asm_feed(a, "l", 0, data, 200, false), 1);
	ck_assert_int_eq(adump_asm_take(a, "l", &out, &len), 0);
	free(out);

	/* A last chunk ending before bytes that arrived already. */
	ck_assert_int_eq(adump_asm_feed(a, "m", 500, data, 10, false), 0);
	expect_err(a, adump_asm_feed(a, "m", 0, data, 10, true), -ADUMP_ERR_CORRUPT,
		   "bytes up to 510 arrived already");
	/* An empty last chunk ends a file fed by appends. */
	ck_assert_int_eq(adump_asm_feed(a, "n", ADUMP_ASM_APPEND, data, 10, false), 0);
	ck_assert_int_eq(adump_asm_feed(a, "n", ADUMP_ASM_APPEND, NULL, 0, true), 1);
	ck_assert_int_eq(adump_asm_take(a, "n", &out, &len), 0);
	ck_assert_uint_eq(len, 10);
	free(out);
	/* An empty file. */
	ck_assert_int_eq(adump_asm_feed(a, "e", 0, NULL, 0, true), 1);
	ck_assert_int_eq(adump_asm_take(a, "e", &out, &len), 0);
	ck_assert_uint_eq(len, 0);
	free(out);
	expect_err(a, adump_asm_feed(a, "neg", -5, data, 1, false), -ADUMP_ERR_CORRUPT,
		   "negative offset");
	ck_assert_uint_eq(adump_asm_file_count(a), 1);  /* "m" */
	adump_asm_destroy(a);
}
END_TEST

START_TEST(test_missing_chunks)
{
	unsigned char data[400] = { 0 };
	struct adump_asm *a;

	ck_assert_int_eq(adump_asm_create(NULL, &a), 0);
	ck_assert_int_eq(adump_asm_feed(a, "gap", 0, data, 100, false), 0);
	ck_assert_int_eq(adump_asm_feed(a, "gap", 300, data, 100, true), 0);
	ck_assert_int_eq(adump_asm_feed(a, "gap", 100, data, 50, false), 0);
	expect_err(a, adump_asm_finish(a, "gap"), -ADUMP_ERR_INCOMPLETE,
		   "bytes [150, 300) of 400 never arrived");
	ck_assert_uint_eq(adump_asm_file_count(a), 0);
	ck_assert_uint_eq(adump_asm_buffered_bytes(a), 0);

	ck_assert_int_eq(adump_asm_feed(a, "nolast", 0, data, 100, false), 0);
	expect_err(a, adump_asm_finish(a, "nolast"), -ADUMP_ERR_INCOMPLETE,
		   "last chunk never came");
	ck_assert_int_eq(adump_asm_feed(a, "head", 100, data, 100, true), 0);
	expect_err(a, adump_asm_finish(a, "head"), -ADUMP_ERR_INCOMPLETE,
		   "bytes [0, 100) of 200");
	expect_err(a, adump_asm_finish(a, "none"), -ADUMP_ERR_NOT_FOUND, "no such file");
	adump_asm_destroy(a);
}
END_TEST

START_TEST(test_limits)
{
	struct adump_asm_config cfg = { .file_max_bytes = 1 << 20, .total_max_bytes = 1 << 16,
					.file_max_count = 3 };
	static unsigned char data[1 << 16];
	struct adump_asm *a;

	ck_assert_int_eq(adump_asm_create(&cfg, &a), 0);
	expect_err(a, adump_asm_feed(a, "far", INT64_MAX - 4, data, 10, false),
		   -ADUMP_ERR_TOO_BIG, "file limit");
	expect_err(a, adump_asm_feed(a, "far", (int64_t)1 << 40, data, 1, true),
		   -ADUMP_ERR_TOO_BIG, "file limit");
	/* Within the file limit, a far offset costs only the bytes sent. */
	ck_assert_int_eq(adump_asm_feed(a, "far", (1 << 20) - 1, data, 1, true), 0);
	ck_assert_uint_lt(adump_asm_buffered_bytes(a), 1024);
	expect_err(a, adump_asm_feed(a, "big", 0, data, sizeof(data), false), -ADUMP_ERR_TOO_BIG,
		   "limit");
	ck_assert_int_eq(adump_asm_feed(a, "f2", 0, data, 10, false), 0);
	ck_assert_int_eq(adump_asm_feed(a, "f3", 0, data, 10, false), 0);
	expect_err(a, adump_asm_feed(a, "f4", 0, data, 10, false), -ADUMP_ERR_TOO_BIG,
		   "incomplete files held");
	ck_assert_uint_eq(adump_asm_file_count(a), 3);
	/* A flood of 1-byte chunks is charged its bookkeeping and stops at the limit. */
	int ret = 0;
	for (int64_t off = 100; ret == 0; off += 2)
		ret = adump_asm_feed(a, "f2", off, data, 1, false);
	ck_assert_int_eq(ret, -ADUMP_ERR_TOO_BIG);
	ck_assert_uint_le(adump_asm_buffered_bytes(a), 1 << 16);
	adump_asm_destroy(a);
}
END_TEST

START_TEST(test_take_reader)
{
	static const uint64_t dims[] = { 2, 3 };
	float in[6] = { 1, 2, 3, 4, 5, 6 }, out[6] = { 2, 4, 6, 8, 10, 12 };
	struct adump_tensor t[2] = {
		rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 2, dims, sizeof(in)),
		rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, 2, dims, sizeof(out)),
	};
	const void *data[2] = { in, out };
	struct adump_op op = { .op_type = "Mul", .op_name = "m", .tensor_count = 2, .tensors = t };
	struct adump_reader *r;
	struct adump_asm *a;
	size_t len;
	unsigned char *file = rt_dump_mem(&op, data, &len);
	float got[6];

	ck_assert_int_eq(adump_asm_create(NULL, &a), 0);
	ck_assert_int_eq(adump_reader_create(&r), 0);
	/* Header first, then the payload in reverse, through the callback chunk type. */
	struct adump_chunk c = { .file_name = "/x/Mul.m.0.0.0", .offset = 0, .data = file,
				 .len = 16 };
	ck_assert_int_eq(adump_asm_feed_chunk(a, &c), 0);
	c = (struct adump_chunk){ .file_name = "/x/Mul.m.0.0.0", .offset = len - 10,
				  .data = file + len - 10, .len = 10, .is_last = true };
	ck_assert_int_eq(adump_asm_feed_chunk(a, &c), 0);
	c = (struct adump_chunk){ .file_name = "/x/Mul.m.0.0.0", .offset = 16, .data = file + 16,
				  .len = len - 26 };
	ck_assert_int_eq(adump_asm_feed_chunk(a, &c), 1);
	ck_assert_int_eq(adump_asm_take_reader(a, "/x/Mul.m.0.0.0", r), 0);
	ck_assert_str_eq(adump_reader_header(r)->op_name, "m");
	ck_assert_int_eq(adump_reader_read(r, 1, 0, got, sizeof(got)), 0);
	ck_assert_mem_eq(got, out, sizeof(out));
	adump_reader_destroy(r);
	adump_asm_destroy(a);
	free(file);
}
END_TEST

struct feeder {
	struct adump_asm *a;
	int id;
	int ok;
};

static void *feed_thread(void *arg)
{
	struct feeder *f = arg;
	unsigned char data[4096];
	char name[32];

	memset(data, f->id, sizeof(data));
	f->ok = 1;
	for (int file = 0; file < 50; file++) {
		void *out;
		size_t len;

		snprintf(name, sizeof(name), "t%d.f%d", f->id, file);
		for (int i = 0; i < 16; i++)
			if (adump_asm_feed(f->a, name, ADUMP_ASM_APPEND, data, 256, i == 15) !=
			    (i == 15))
				f->ok = 0;
		if (adump_asm_take(f->a, name, &out, &len) || len != 4096 ||
		    memcmp(out, data, len))
			f->ok = 0;
		else
			free(out);
	}
	return NULL;
}

START_TEST(test_threads)
{
	struct feeder f[4];
	pthread_t th[4];
	struct adump_asm *a;

	ck_assert_int_eq(adump_asm_create(NULL, &a), 0);
	for (int i = 0; i < 4; i++) {
		f[i] = (struct feeder){ .a = a, .id = i + 1 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, feed_thread, &f[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert(f[i].ok);
	}
	ck_assert_uint_eq(adump_asm_file_count(a), 0);
	adump_asm_destroy(a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reader_asm");
	TCase *tc = tcase_create("assemble");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_append_in_order);
	tcase_add_test(tc, test_shuffled);
	tcase_add_test(tc, test_take_reader);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_duplicate_and_overlap);
	tcase_add_test(tc, test_last_chunk_rules);
	tcase_add_test(tc, test_missing_chunks);
	tcase_add_test(tc, test_limits);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
