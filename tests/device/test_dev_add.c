/* SPDX-License-Identifier: Apache-2.0 */
/* The Add kernel: results for float32, float16 and int32 against a host computation on
 * seeded random data, launch-time rejection of bad arguments, run-time detection of memory
 * freed while queued, and compute pacing. */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "common/common.h"
#include "dev_helpers.h"

static struct adump_dev *dev;
static struct adump_dev_stream *stream;

static void setup(void)
{
	ck_assert_int_eq(adump_dev_open(0, &dev), 0);
	ck_assert_int_eq(adump_dev_stream_create(dev, &stream), 0);
}

static void teardown(void)
{
	ck_assert_int_eq(adump_dev_stream_destroy(stream), 0);
	adump_dev_close(dev);
}

/* A random float in [-range, range). */
static float rand_float(uint64_t *rng, float range)
{
	return ((float)(t_rand(rng) >> 40) / (float)(1u << 24) * 2.0f - 1.0f) * range;
}

static const int64_t shape_3d[] = { 7, 13, 29 };   /* 2639 elements: not a round number */

START_TEST(test_add_float)
{
	uint64_t rng = t_seed();
	struct adump_dev_tensor a = t_dev_tensor(dev, ADUMP_DT_FLOAT, 3, shape_3d);
	struct adump_dev_tensor b = t_dev_tensor(dev, ADUMP_DT_FLOAT, 3, shape_3d);
	struct adump_dev_tensor c = t_dev_tensor(dev, ADUMP_DT_FLOAT, 3, shape_3d);
	size_t n = a.bytes / sizeof(float);
	float *ha = malloc(a.bytes), *hb = malloc(b.bytes), *hc;
	double alpha = rand_float(&rng, 4.0f);

	for (size_t i = 0; i < n; i++) {
		ha[i] = rand_float(&rng, 1000.0f);
		hb[i] = rand_float(&rng, 1000.0f);
	}
	t_dev_upload(dev, &a, ha);
	t_dev_upload(dev, &b, hb);
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, alpha, &c, NULL), 0);
	ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
	hc = t_dev_download(dev, &c);
	for (size_t i = 0; i < n; i++) {
		float want = ha[i] + (float)alpha * hb[i];

		/* One rounding of slack, for a compiler that fuses the multiply-add. */
		ck_assert_msg(fabsf(hc[i] - want) <= 1e-6f * fmaxf(1.0f, fabsf(want)),
			      "element %zu: got %.9g want %.9g", i, hc[i], want);
	}
	free(ha);
	free(hb);
	free(hc);
	t_dev_tensor_free(dev, &a);
	t_dev_tensor_free(dev, &b);
	t_dev_tensor_free(dev, &c);
}
END_TEST

START_TEST(test_add_float16)
{
	uint64_t rng = t_seed() + 1;
	struct adump_dev_tensor a = t_dev_tensor(dev, ADUMP_DT_FLOAT16, 3, shape_3d);
	struct adump_dev_tensor b = t_dev_tensor(dev, ADUMP_DT_FLOAT16, 3, shape_3d);
	struct adump_dev_tensor c = t_dev_tensor(dev, ADUMP_DT_FLOAT16, 3, shape_3d);
	size_t n = a.bytes / sizeof(_Float16);
	_Float16 *ha = malloc(a.bytes), *hb = malloc(b.bytes), *hc;
	double alpha = -0.75;

	ck_assert_uint_eq(a.bytes, 2639 * 2);
	for (size_t i = 0; i < n; i++) {
		ha[i] = (_Float16)rand_float(&rng, 100.0f);
		hb[i] = (_Float16)rand_float(&rng, 100.0f);
	}
	t_dev_upload(dev, &a, ha);
	t_dev_upload(dev, &b, hb);
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, alpha, &c, NULL), 0);
	ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
	hc = t_dev_download(dev, &c);
	for (size_t i = 0; i < n; i++) {
		float want = (float)(_Float16)((float)ha[i] + (float)alpha * (float)hb[i]);
		float got = (float)hc[i];
		/* Half precision has an 11-bit significand: allow one unit in the last place. */
		float ulp = fmaxf(fabsf(want) / 1024.0f, 1.0f / (1 << 24));

		ck_assert_msg(fabsf(got - want) <= ulp, "element %zu: got %g want %g", i,
			      (double)got, (double)want);
	}
	free(ha);
	free(hb);
	free(hc);
	t_dev_tensor_free(dev, &a);
	t_dev_tensor_free(dev, &b);
	t_dev_tensor_free(dev, &c);
}
END_TEST

static void check_int32(double alpha, int32_t alpha_int)
{
	uint64_t rng = t_seed() + 2;
	const int64_t shape[] = { 1001 };
	struct adump_dev_tensor a = t_dev_tensor(dev, ADUMP_DT_INT32, 1, shape);
	struct adump_dev_tensor b = t_dev_tensor(dev, ADUMP_DT_INT32, 1, shape);
	struct adump_dev_tensor c = t_dev_tensor(dev, ADUMP_DT_INT32, 1, shape);
	int32_t *ha = malloc(a.bytes), *hb = malloc(b.bytes), *hc;

	for (int i = 0; i < 1001; i++) {
		ha[i] = (int32_t)(uint32_t)t_rand(&rng);    /* full range: sums overflow */
		hb[i] = (int32_t)(uint32_t)t_rand(&rng);
	}
	ha[0] = INT32_MAX;
	hb[0] = 1;
	t_dev_upload(dev, &a, ha);
	t_dev_upload(dev, &b, hb);
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, alpha, &c, NULL), 0);
	ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
	hc = t_dev_download(dev, &c);
	for (int i = 0; i < 1001; i++) {
		/* Two's complement wrap-around, computed in 64 bits and reduced mod 2^32. */
		int64_t wide = (int64_t)ha[i] + (int64_t)alpha_int * (int64_t)hb[i];
		uint32_t want = (uint32_t)((uint64_t)wide & 0xffffffffu);

		ck_assert_msg((uint32_t)hc[i] == want, "element %d: got %d want %d", i, hc[i],
			      (int32_t)want);
	}
	free(ha);
	free(hb);
	free(hc);
	t_dev_tensor_free(dev, &a);
	t_dev_tensor_free(dev, &b);
	t_dev_tensor_free(dev, &c);
}

START_TEST(test_add_int32)
{
	check_int32(1.0, 1);
	check_int32(-3.0, -3);
	check_int32(2.9, 2);                    /* alpha is truncated to int32 */
	check_int32(1e12, INT32_MAX);           /* and saturated */
}
END_TEST

/* In place (out is self) over lengths that are not a multiple of the vector width: each
 * element is read before it is written, whole blocks and the scalar tail alike. */
START_TEST(test_add_in_place_vectors)
{
	uint64_t rng = t_seed() + 3;
	const int64_t shape[] = { 1001 };
	struct adump_dev_tensor fa = t_dev_tensor(dev, ADUMP_DT_FLOAT, 3, shape_3d);
	struct adump_dev_tensor fb = t_dev_tensor(dev, ADUMP_DT_FLOAT, 3, shape_3d);
	struct adump_dev_tensor ia = t_dev_tensor(dev, ADUMP_DT_INT32, 1, shape);
	struct adump_dev_tensor ib = t_dev_tensor(dev, ADUMP_DT_INT32, 1, shape);
	size_t fn = fa.bytes / sizeof(float);
	float *hfa = malloc(fa.bytes), *hfb = malloc(fb.bytes), *fr;
	int32_t *hia = malloc(ia.bytes), *hib = malloc(ib.bytes), *ir;

	for (size_t i = 0; i < fn; i++) {
		hfa[i] = rand_float(&rng, 1000.0f);
		hfb[i] = rand_float(&rng, 1000.0f);
	}
	for (size_t i = 0; i < 1001; i++) {
		hia[i] = (int32_t)(uint32_t)t_rand(&rng);
		hib[i] = (int32_t)(uint32_t)t_rand(&rng);
	}
	t_dev_upload(dev, &fa, hfa);
	t_dev_upload(dev, &fb, hfb);
	t_dev_upload(dev, &ia, hia);
	t_dev_upload(dev, &ib, hib);
	ck_assert_int_eq(adump_dev_launch_add(stream, &fa, &fb, -1.5, &fa, NULL), 0);
	ck_assert_int_eq(adump_dev_launch_add(stream, &ia, &ib, 7.0, &ia, NULL), 0);
	ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
	fr = t_dev_download(dev, &fa);
	ir = t_dev_download(dev, &ia);
	for (size_t i = 0; i < fn; i++) {
		float want = hfa[i] + -1.5f * hfb[i];

		ck_assert_msg(fabsf(fr[i] - want) <= 1e-6f * fmaxf(1.0f, fabsf(want)),
			      "element %zu: got %.9g want %.9g", i, fr[i], want);
	}
	for (size_t i = 0; i < 1001; i++)
		ck_assert_msg((uint32_t)ir[i] == (uint32_t)hia[i] + 7u * (uint32_t)hib[i],
			      "element %zu: got %d", i, ir[i]);
	free(hfa);
	free(hfb);
	free(fr);
	free(hia);
	free(hib);
	free(ir);
	t_dev_tensor_free(dev, &fa);
	t_dev_tensor_free(dev, &fb);
	t_dev_tensor_free(dev, &ia);
	t_dev_tensor_free(dev, &ib);
}
END_TEST

START_TEST(test_add_in_place_scalar_and_empty)
{
	const int64_t zero_dim[] = { 4, 0 };
	struct adump_dev_tensor a = t_dev_tensor(dev, ADUMP_DT_FLOAT, 0, NULL);   /* scalar */
	struct adump_dev_tensor b = t_dev_tensor(dev, ADUMP_DT_FLOAT, 0, NULL);
	struct adump_dev_tensor e1 = t_dev_tensor(dev, ADUMP_DT_INT32, 2, zero_dim);
	struct adump_dev_tensor e2 = t_dev_tensor(dev, ADUMP_DT_INT32, 2, zero_dim);
	float x = 1.5f, y = 2.0f, *r;

	ck_assert_uint_eq(a.bytes, 4);
	ck_assert_uint_eq(e1.bytes, 0);
	t_dev_upload(dev, &a, &x);
	t_dev_upload(dev, &b, &y);
	/* a = a + 2 b, twice, in place. */
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, 2.0, &a, NULL), 0);
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, 2.0, &a, NULL), 0);
	ck_assert_int_eq(adump_dev_launch_add(stream, &e1, &e2, 1.0, &e1, NULL), 0);
	ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
	r = t_dev_download(dev, &a);
	ck_assert_float_eq(*r, 9.5f);
	free(r);
	t_dev_tensor_free(dev, &a);
	t_dev_tensor_free(dev, &b);
	t_dev_tensor_free(dev, &e1);
	t_dev_tensor_free(dev, &e2);
}
END_TEST

START_TEST(test_add_rejects_bad_arguments)
{
	const int64_t shape[] = { 4, 8 }, shape_t[] = { 8, 4 }, shape_long[] = { 4, 8, 1 };
	struct adump_dev_tensor a = t_dev_tensor(dev, ADUMP_DT_FLOAT, 2, shape);
	struct adump_dev_tensor b = t_dev_tensor(dev, ADUMP_DT_FLOAT, 2, shape);
	struct adump_dev_tensor c = t_dev_tensor(dev, ADUMP_DT_FLOAT, 2, shape);
	struct adump_dev_tensor h = t_dev_tensor(dev, ADUMP_DT_FLOAT16, 2, shape);
	struct adump_dev_tensor t = t_dev_tensor(dev, ADUMP_DT_FLOAT, 2, shape_t);
	struct adump_dev_tensor l = t_dev_tensor(dev, ADUMP_DT_FLOAT, 3, shape_long);
	struct adump_dev_tensor x;
	float host[32];
	const struct adump_dev_dump no_name = { .op_type = "Add", .op_name = "",
						.tensor_mask = ADUMP_DUMP_ALL };

	ck_assert_int_eq(adump_dev_launch_add(stream, NULL, &b, 1, &c, NULL), -EINVAL);
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, NULL, 1, &c, NULL), -EINVAL);
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, 1, NULL, NULL), -EINVAL);
	ck_assert_int_eq(adump_dev_launch_add(NULL, &a, &b, 1, &c, NULL), -EINVAL);
	/* Mixed dtypes. */
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &h, 1, &c, NULL), -EINVAL);
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, 1, &h, NULL), -EINVAL);
	/* Same element count, different shape; and a trailing 1 is still a different shape. */
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &t, 1, &c, NULL), -EINVAL);
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, 1, &l, NULL), -EINVAL);
	/* Sizes that disagree with the shape. */
	x = c;
	x.bytes -= 4;
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, 1, &x, NULL), -EINVAL);
	x = a;
	x.bytes += 4;
	ck_assert_int_eq(adump_dev_launch_add(stream, &x, &b, 1, &c, NULL), -EINVAL);
	/* Bad dimensions. */
	x = a;
	x.dims[0] = -4;
	x.bytes = 0;
	ck_assert_int_eq(adump_dev_launch_add(stream, &x, &x, 1, &x, NULL), -EINVAL);
	x = a;
	x.dim_count = ADUMP_MAX_DIMS + 1;
	ck_assert_int_eq(adump_dev_launch_add(stream, &x, &x, 1, &x, NULL), -EINVAL);
	/* Dtypes Add does not implement. */
	x = a;
	x.dtype = ADUMP_DT_INT64;
	x.bytes = 32 * 8;
	ck_assert_int_eq(adump_dev_launch_add(stream, &x, &x, 1, &x, NULL),
			 -ADUMP_ERR_UNSUPPORTED);
	x.dtype = 999;
	ck_assert_int_eq(adump_dev_launch_add(stream, &x, &x, 1, &x, NULL),
			 -ADUMP_ERR_UNSUPPORTED);
	/* Data outside device memory: host memory, and a range past the allocation's end. */
	x = a;
	x.data = host;
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, 1, &x, NULL), -ADUMP_ERR_NOT_FOUND);
	x = a;
	x.data = (char *)a.data + 4;
	ck_assert_int_eq(adump_dev_launch_add(stream, &x, &b, 1, &c, NULL), -ADUMP_ERR_NOT_FOUND);
	/* A dump request needs both names. */
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, 1, &c, &no_name), -EINVAL);
	/* Nothing was queued, so nothing failed. */
	ck_assert_int_eq(adump_dev_stream_sync(stream), 0);

	t_dev_tensor_free(dev, &a);
	t_dev_tensor_free(dev, &b);
	t_dev_tensor_free(dev, &c);
	t_dev_tensor_free(dev, &h);
	t_dev_tensor_free(dev, &t);
	t_dev_tensor_free(dev, &l);
}
END_TEST

START_TEST(test_add_freed_while_queued)
{
	const int64_t shape[] = { 1024 };
	struct adump_dev_tensor a = t_dev_tensor(dev, ADUMP_DT_FLOAT, 1, shape);
	struct adump_dev_tensor b = t_dev_tensor(dev, ADUMP_DT_FLOAT, 1, shape);
	struct adump_dev_tensor c = t_dev_tensor(dev, ADUMP_DT_FLOAT, 1, shape);
	struct adump_dev_tensor gone = t_dev_tensor(dev, ADUMP_DT_FLOAT, 1, shape);

	/* 12 KiB at 0.0001 GB/s: the first kernel holds the executor for ~120 ms, long enough
	 * to free the second one's output while it waits in the queue. */
	adump_dev_set_compute_gbps(dev, 0.0001);
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, 1, &c, NULL), 0);
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, 1, &gone, NULL), 0);
	ck_assert_int_eq(adump_dev_free(dev, gone.data), 0);
	ck_assert_int_eq(adump_dev_stream_sync(stream), -EINVAL);
	adump_dev_set_compute_gbps(dev, 0);
	/* The error belongs to the tasks before that sync only. */
	ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, 1, &c, NULL), 0);
	ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
	t_dev_tensor_free(dev, &a);
	t_dev_tensor_free(dev, &b);
	t_dev_tensor_free(dev, &c);
}
END_TEST

START_TEST(test_add_compute_pacing)
{
	const int64_t shape[] = { 25000 };      /* 3 × 100 kB per kernel */
	struct adump_dev_tensor a = t_dev_tensor(dev, ADUMP_DT_FLOAT, 1, shape);
	struct adump_dev_tensor b = t_dev_tensor(dev, ADUMP_DT_FLOAT, 1, shape);
	struct adump_dev_tensor c = t_dev_tensor(dev, ADUMP_DT_FLOAT, 1, shape);
	uint64_t start, elapsed;

	/* 10 kernels × 300 kB at 0.1 GB/s = 30 ms at least. */
	adump_dev_set_compute_gbps(dev, 0.1);
	start = adump_now_ns();
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(adump_dev_launch_add(stream, &a, &b, 1, &c, NULL), 0);
	ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
	elapsed = adump_now_ns() - start;
	ck_assert_msg(elapsed >= 30000000u, "10 paced kernels took only %llu ns",
		      (unsigned long long)elapsed);
	ck_assert_msg(elapsed < 3000000000u, "pacing far too slow: %llu ns",
		      (unsigned long long)elapsed);
	adump_dev_set_compute_gbps(dev, 0);
	t_dev_tensor_free(dev, &a);
	t_dev_tensor_free(dev, &b);
	t_dev_tensor_free(dev, &c);
}
END_TEST

static Suite *add_suite(void)
{
	Suite *s = suite_create("device_add");
	TCase *tc = tcase_create("add");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_add_float);
	tcase_add_test(tc, test_add_float16);
	tcase_add_test(tc, test_add_int32);
	tcase_add_test(tc, test_add_in_place_vectors);
	tcase_add_test(tc, test_add_in_place_scalar_and_empty);
	tcase_add_test(tc, test_add_rejects_bad_arguments);
	tcase_add_test(tc, test_add_freed_while_queued);
	tcase_add_test(tc, test_add_compute_pacing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return t_run_suite(add_suite());
}
