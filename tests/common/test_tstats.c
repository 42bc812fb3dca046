/* SPDX-License-Identifier: Apache-2.0 */
/* common/tstats.c: the vector path and the portable path give the same bits for every
 * floating type, with NaN and infinities at every lane, odd lengths, misaligned starts and
 * feeds split anywhere, and so does the pass that copies the bytes as it reads them (which
 * copies them all, and nothing else); sums stay accurate over many blocks; the results of
 * CANN's rules (first NaN, a zero extreme's sign, the NaN mean's sign) are those of a running
 * pass. The vector path is AVX-512's where the CPU has it, AVX2's with ADUMP_NO_AVX512 set
 * (ctest runs both: test_tstats, test_tstats_avx2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "helpers.h"

#define LANES ADUMP_TSTATS_LANES

static const int32_t float_dtypes[] = { ADUMP_DT_FLOAT, ADUMP_DT_FLOAT16, ADUMP_DT_BF16,
					ADUMP_DT_DOUBLE };

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* A random finite value of about unit size, sometimes large or tiny. */
static double rnd_value(void)
{
	double v = ((double)(rnd() % 2000001) - 1000000.0) / 1000000.0;

	switch (rnd() % 16) {
	case 0: return v * 60000.0;
	case 1: return v * 1e-6;
	case 2: return 0.0;
	default: return v;
	}
}

/* Element @i of @dtype at @out, from a double. */
static void put(int32_t dtype, uint8_t *out, size_t i, double v)
{
	switch (dtype) {
	case ADUMP_DT_FLOAT: {
		float f = (float)v;

		memcpy(out + 4 * i, &f, 4);
		break;
	}
	case ADUMP_DT_DOUBLE:
		memcpy(out + 8 * i, &v, 8);
		break;
	case ADUMP_DT_BF16: {
		float f = (float)v;
		uint32_t u;
		uint16_t h;

		memcpy(&u, &f, 4);
		h = (uint16_t)(u >> 16);
		memcpy(out + 2 * i, &h, 2);
		break;
	}
	default: {
		_Float16 h = (_Float16)v;      /* GCC's half type: rounds, keeps NaN signs */

		memcpy(out + 2 * i, &h, 2);
		break;
	}
	}
}

static void bits_eq(double a, double b, const char *what, const char *ctx)
{
	if (memcmp(&a, &b, sizeof(a)) != 0)
		ck_abort_msg("%s: %s differs: %.17g vs %.17g", ctx, what, a, b);
}

static void same(const struct adump_tstats *a, const struct adump_tstats *b, const char *ctx)
{
	ck_assert_msg(a->count == b->count && a->nan_count == b->nan_count &&
		      a->pos_inf_count == b->pos_inf_count && a->neg_inf_count == b->neg_inf_count &&
		      a->has_nonfinite == b->has_nonfinite, "%s: counts differ", ctx);
	bits_eq(a->first, b->first, "first", ctx);
	bits_eq(a->max, b->max, "max", ctx);
	bits_eq(a->min, b->min, "min", ctx);
	bits_eq(a->sum, b->sum, "sum", ctx);
	bits_eq(a->compensation, b->compensation, "compensation", ctx);
	bits_eq(a->sum_squares, b->sum_squares, "sum_squares", ctx);
	bits_eq(adump_tstats_cann_mean(a), adump_tstats_cann_mean(b), "cann mean", ctx);
	bits_eq(adump_tstats_cann_max(a), adump_tstats_cann_max(b), "cann max", ctx);
	bits_eq(adump_tstats_cann_min(a), adump_tstats_cann_min(b), "cann min", ctx);
}

/* adump_tstats_add_copy() against @want (the vector path's statistics): the same bits,
 * and the bytes copied, into @dst at 64-byte alignment plus @skew (float32 on the AVX2
 * path: 0 in one pass, 4 in two), whole and split at random. */
static void compare_copy(int32_t dtype, const uint8_t *p, size_t n,
			 const struct adump_tstats *want, size_t skew, const char *ctx)
{
	static uint8_t *dst;
	struct adump_tstats c;
	size_t done = 0;
	uint32_t eb;

	if (!dst)
		dst = aligned_alloc(64, 9000 * 8 + 128);
	ck_assert_ptr_nonnull(dst);
	for (int split = 0; split < 2; split++) {
		adump_tstats_init(&c, dtype);
		eb = c.elem_bytes;
		memset(dst, 0xa5, n * eb + 128);
		for (done = 0; done < n;) {
			size_t k = split ? 1 + (size_t)(rnd() % (n - done < 70 ? n - done : 70))
					 : n;

			adump_tstats_add_copy(&c, p + done * eb, k, dst + skew + done * eb);
			done += k;
		}
		same(want, &c, ctx);
		ck_assert_msg(memcmp(dst + skew, p, n * eb) == 0, "%s: the copy differs", ctx);
		ck_assert_msg(dst[skew + n * eb] == 0xa5 && (!skew || dst[skew - 1] == 0xa5),
			      "%s: the copy wrote past its bytes", ctx);
	}
}

/* Vector against portable, whole and split at random, for one buffer; the copying pass
 * against both. */
static void compare_paths(int32_t dtype, const uint8_t *p, size_t n, const char *ctx)
{
	struct adump_tstats v, q, split;
	uint32_t eb;
	size_t done = 0;

	adump_tstats_init(&v, dtype);
	adump_tstats_init(&q, dtype);
	adump_tstats_init(&split, dtype);
	eb = v.elem_bytes;
	adump_tstats_add(&v, p, n);
	adump_tstats_add_portable(&q, p, n);
	same(&v, &q, ctx);
	while (done < n) {
		size_t k = 1 + (size_t)(rnd() % (n - done < 70 ? n - done : 70));

		adump_tstats_add(&split, p + done * eb, k);
		done += k;
	}
	same(&v, &split, ctx);
	compare_copy(dtype, p, n, &v, 0, ctx);
	compare_copy(dtype, p, n, &v, 4, ctx);
}

START_TEST(test_paths_agree)
{
	static const size_t lengths[] = { 1, 2, 15, 16, 17, 31, 33, 2047, 2049, 4111 };
	static const double specials[] = { NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0 };
	int32_t dtype = float_dtypes[_i];
	uint8_t *buf = malloc(9000 * 8 + 8);
	char ctx[160];

	if (!adump_tstats_has_simd())
		fprintf(stderr, "test_tstats: no AVX2+F16C here: the portable path against itself\n");
	for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++) {
		size_t n = lengths[li];

		for (size_t misalign = 0; misalign < 4; misalign++) {
			uint8_t *p = buf + misalign;

			for (size_t i = 0; i < n; i++)
				put(dtype, p, i, rnd_value() + (misalign == 3 ? 100.0 : 0.0));
			snprintf(ctx, sizeof(ctx), "dtype %d n %zu +%zu finite", dtype, n, misalign);
			compare_paths(dtype, p, n, ctx);
			/* One special value at each position, and a second one as far from the
			 * end (both infinities, or NaN then inf). */
			for (size_t sp = 0; sp < sizeof(specials) / sizeof(specials[0]); sp++) {
				/* Every lane of the first group (two for short tensors), then some
				 * inside a block and in a second one (the vector path looks at a
				 * block's groups only at its end). */
				static const size_t inner[] = { 100, 1000, 2047, 2050, 3001 };
				size_t pos_end = n <= 64 ? 2 * LANES + 3 : LANES + 1;
				size_t n_pos = pos_end + sizeof(inner) / sizeof(inner[0]);

				for (size_t pi = 0; pi < n_pos; pi++) {
					size_t pos = pi < pos_end ? pi : inner[pi - pos_end];
					size_t at[2] = { pos, n - 1 - pos % n };
					uint8_t saved[2][8];
					uint32_t eb = adump_dtype_bits(dtype) / 8;

					if (pos >= n)
						continue;

					memcpy(saved[0], p + at[0] * eb, eb);
					memcpy(saved[1], p + at[1] * eb, eb);
					put(dtype, p, at[0], specials[sp]);
					snprintf(ctx, sizeof(ctx), "dtype %d n %zu +%zu special %zu at %zu",
						 dtype, n, misalign, sp, pos);
					compare_paths(dtype, p, n, ctx);
					put(dtype, p, at[1], specials[(sp + 2) % 4]);
					snprintf(ctx, sizeof(ctx), "dtype %d n %zu +%zu specials %zu at %zu,%zu",
						 dtype, n, misalign, sp, at[0], at[1]);
					compare_paths(dtype, p, n, ctx);
					memcpy(p + at[1] * eb, saved[1], eb);
					memcpy(p + at[0] * eb, saved[0], eb);
				}
			}
		}
	}
	free(buf);
}
END_TEST

/* A sum over many blocks: 0.1f, 3M times, exact to 1e-13 of its magnitude (a naive running
 * float sum is off by percent; a naive double one by about 1e-11). */
START_TEST(test_sum_accuracy)
{
	size_t n = 3000000;
	float *data = malloc(n * sizeof(float));
	struct adump_tstats s;
	double want = (double)0.1f * (double)n, got;

	for (size_t i = 0; i < n; i++)
		data[i] = i % 2 ? 0.1f : -0.1f + 0.2f;   /* both are 0.1f, rounded as floats */
	want = 0;
	for (size_t i = 0; i < n; i++)
		want += (long double)data[i];
	adump_tstats_init(&s, ADUMP_DT_FLOAT);
	adump_tstats_add(&s, data, n);
	got = adump_tstats_cann_mean(&s) * (double)n;
	ck_assert_msg(fabs(got - want) <= 1e-13 * fabs(want), "sum %.17g, want %.17g", got, want);
	ck_assert_msg(fabs(s.sum_squares - want * want / (double)n) <= 1e-12 * s.sum_squares,
		      "sum of squares %.17g", s.sum_squares);
	/* Large terms cancelling, then small ones: the compensation keeps the small ones. */
	for (size_t i = 0; i < n; i++)
		data[i] = i < 2 * ADUMP_TSTATS_BLOCK ? (i % 2 ? -1e30f : 1e30f) : 1.0f;
	adump_tstats_init(&s, ADUMP_DT_FLOAT);
	adump_tstats_add(&s, data, n);
	ck_assert_msg(s.sum + s.compensation == (double)(n - 2 * ADUMP_TSTATS_BLOCK), "%.17g",
		      s.sum + s.compensation);
	free(data);
}
END_TEST

/* What a running comparison gives: the first of two equal zeros is the extreme; a first NaN
 * is both extremes; the mean of +inf alone is +inf. */
START_TEST(test_running_rules)
{
	float a[40];
	struct adump_tstats s;

	for (int i = 0; i < 40; i++)
		a[i] = -(float)(i + 1);
	a[20] = -0.0f;
	a[25] = 0.0f;
	adump_tstats_init(&s, ADUMP_DT_FLOAT);
	adump_tstats_add(&s, a, 40);
	ck_assert(s.max == 0 && signbit(s.max));
	a[20] = 0.0f;
	a[25] = -0.0f;
	adump_tstats_init(&s, ADUMP_DT_FLOAT);
	adump_tstats_add(&s, a, 40);
	ck_assert(s.max == 0 && !signbit(s.max));
	for (int i = 0; i < 40; i++)
		a[i] = (float)(i + 1);
	a[0] = -NAN;
	a[33] = INFINITY;
	adump_tstats_init(&s, ADUMP_DT_FLOAT);
	adump_tstats_add(&s, a, 40);
	ck_assert(isnan(adump_tstats_cann_max(&s)) && signbit(adump_tstats_cann_max(&s)));
	ck_assert_uint_eq(s.nan_count, 1);
	ck_assert_uint_eq(s.pos_inf_count, 1);
	ck_assert(s.max == 40 && s.min == 2);
	a[0] = 1.0f;
	adump_tstats_init(&s, ADUMP_DT_FLOAT);
	adump_tstats_add(&s, a, 40);
	ck_assert(isinf(adump_tstats_cann_mean(&s)) && adump_tstats_cann_mean(&s) > 0);
	ck_assert(adump_tstats_finite_mean(&s) == (double)(40 * 41 / 2 - 34) / 39.0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tstats");
	TCase *tc = tcase_create("tstats");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_paths_agree, 0,
			    (int)(sizeof(float_dtypes) / sizeof(float_dtypes[0])));
	tcase_add_test(tc, test_sum_accuracy);
	tcase_add_test(tc, test_running_rules);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
