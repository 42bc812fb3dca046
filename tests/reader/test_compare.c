/* SPDX-License-Identifier: Apache-2.0 */
/* adump compare's engine: every algorithm against an independent float64 computation on random
 * and edge data (NaN/Inf on one side and both, zeros, scalars, bool, float16, bfloat16, int32,
 * int64, empty, length mismatch), msaccucmp's op matching (one-sided ops, repeated timestamps,
 * count and shape mismatches, unreadable files, FFTS+ subtask dumps merged), and the result CSV
 * parsed back cell by cell. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

#include "adump/compare.h"
#include "capture_helpers.h"
#include "reader_helpers.h"

#define EPS64 2.220446049250313e-16

/* compare/compare_int.h: the portable kernels instead of the AVX2 ones; the conversion. */
void adump_compare_simd_set(bool is_enabled);
void adump_compare_to_float(int32_t dtype, const void *raw, size_t n, float *out);
/* ... and the AVX2 KL kernel where the AVX-512 one would run. */
void adump_compare_avx512_set(bool is_enabled);

/* ---- an independent reference: msaccucmp's formulas, literally, in float64 ----------------- */

struct ref {
	double v[ADUMP_COMPARE_ALG_COUNT];
	double mean[2], std[2];
};

static void ref_compute(const float *x, const float *y, size_t n, struct ref *r)
{
	double sxx = 0, syy = 0, sxy = 0, sdd = 0, sab = 0, srel = 0, mabs = -INFINITY,
	       mrel = -INFINITY, mn[2] = { INFINITY, INFINITY }, mx[2] = { -INFINITY, -INFINITY };
	const float *v[2] = { x, y };

	for (size_t i = 0; i < n; i++) {
		float d = x[i] - y[i];
		float rel = fabsf(y[i]) > EPS64 ? fabsf(x[i] / y[i] - 1.0f) : 0.0f;

		sxx += (double)x[i] * x[i];
		syy += (double)y[i] * y[i];
		sxy += (double)x[i] * y[i];
		sdd += (double)d * d;
		sab += fabs((double)d);
		srel += rel;
		if (isnan(d) || isnan(mabs) || fabs(d) > mabs)
			mabs = isnan(mabs) ? mabs : fabs((double)d);
		if (isnan(rel) || isnan(mrel) || rel > mrel)
			mrel = isnan(mrel) ? mrel : rel;
		for (int s = 0; s < 2; s++) {
			if (isnan(v[s][i]) || isnan(mn[s]) || v[s][i] < mn[s])
				mn[s] = isnan(mn[s]) ? mn[s] : v[s][i];
			if (isnan(v[s][i]) || isnan(mx[s]) || v[s][i] > mx[s])
				mx[s] = isnan(mx[s]) ? mx[s] : v[s][i];
		}
	}
	r->v[ADUMP_COMPARE_COSINE] = fmin(sxy / (sqrt(sxx) * sqrt(syy)), 1.0);
	if (isnan(sxy / (sqrt(sxx) * sqrt(syy))))
		r->v[ADUMP_COMPARE_COSINE] = NAN;
	r->v[ADUMP_COMPARE_MAX_ABS] = mabs;
	r->v[ADUMP_COMPARE_ACC_REL] = srel;
	r->v[ADUMP_COMPARE_REL_EUCLID] = sqrt(syy) <= EPS64 ? 0 : sqrt(sdd / syy);
	r->v[ADUMP_COMPARE_MEAN_ABS] = sab / (double)n;
	r->v[ADUMP_COMPARE_RMSE] = sqrt(sdd / (double)n);
	r->v[ADUMP_COMPARE_MAX_REL] = mrel;
	r->v[ADUMP_COMPARE_MEAN_REL] = srel / (double)n;
	r->v[ADUMP_COMPARE_STD] = NAN;
	/* Mean and population std, two passes. */
	for (int s = 0; s < 2; s++) {
		double sum = 0, m2 = 0;

		for (size_t i = 0; i < n; i++)
			sum += v[s][i];
		r->mean[s] = sum / (double)n;
		for (size_t i = 0; i < n; i++)
			m2 += (v[s][i] - r->mean[s]) * (v[s][i] - r->mean[s]);
		r->std[s] = sqrt(m2 / (double)n);
	}
	/* KL: normalise each side to [0,1], clamp at float32 epsilon, make distributions. */
	double *p = malloc(n * sizeof(double)), *q = malloc(n * sizeof(double)), sp = 0, sq = 0,
	       kl = 0;

	ck_assert(p && q);
	for (size_t i = 0; i < n; i++) {
		double rx = mx[0] - mn[0], ry = mx[1] - mn[1];

		p[i] = rx != 0 ? (x[i] - mn[0]) / rx : x[i];
		q[i] = ry != 0 ? (y[i] - mn[1]) / ry : y[i];
		/* np.maximum() keeps a NaN. */
		p[i] = isnan(p[i]) || p[i] > 1.1920929e-07 ? p[i] : 1.1920929e-07;
		q[i] = isnan(q[i]) || q[i] > 1.1920929e-07 ? q[i] : 1.1920929e-07;
		if (isnan((double)x[i]) || isnan(rx))
			p[i] = NAN;
		if (isnan((double)y[i]) || isnan(ry))
			q[i] = NAN;
		sp += p[i];
		sq += q[i];
	}
	for (size_t i = 0; i < n; i++)
		kl += p[i] / sp * log((p[i] / sp) / (q[i] / sq));
	r->v[ADUMP_COMPARE_KL] = fabs(kl) < EPS64 ? 0 : kl;
	free(p);
	free(q);
}

static void assert_close(double got, double want, double tol, const char *what)
{
	if (isnan(want)) {
		ck_assert_msg(isnan(got), "%s: got %.17g, want nan", what, got);
		return;
	}
	if (isinf(want)) {
		ck_assert_msg(got == want, "%s: got %.17g, want %g", what, got, want);
		return;
	}
	ck_assert_msg(fabs(got - want) <= tol * fmax(1.0, fabs(want)), "%s: got %.17g, want %.17g",
		      what, got, want);
}

/* Compare @x and @y (float32) through adump_compare_buffers() and against the reference. */
static void check_f32(const float *x, const float *y, size_t n, const char *label)
{
	struct adump_compare_metrics m;
	char cells[ADUMP_COMPARE_ALG_COUNT][ADUMP_COMPARE_CELL_BYTES], msg[4096], what[128];
	uint64_t dims[1] = { n };
	struct ref r;

	ck_assert_int_eq(adump_compare_buffers(ADUMP_DT_FLOAT, x, n, ADUMP_DT_FLOAT, y, n, dims, 1,
					       &m, cells, msg, sizeof(msg)),
			 0);
	ref_compute(x, y, n, &r);
	/* A [1] shape is msaccucmp's scalar: cosine 1 whatever the data. */
	if (n == 1)
		r.v[ADUMP_COMPARE_COSINE] = 1;
	for (int a = 0; a < ADUMP_COMPARE_ALG_COUNT; a++) {
		if (a == ADUMP_COMPARE_STD)
			continue;
		/* msaccucmp's special cases of the cosine are checked by the edge tests. */
		if (a == ADUMP_COMPARE_COSINE && (sqrt(sqrt(r.v[ADUMP_COMPARE_COSINE])) <= EPS64))
			continue;
		snprintf(what, sizeof(what), "%s %s", label, adump_compare_alg_name(a));
		assert_close(m.value[a], r.v[a], 1e-9, what);
	}
	for (int s = 0; s < 2; s++) {
		snprintf(what, sizeof(what), "%s mean[%d]", label, s);
		if (fabs(r.mean[s]) >= 0.001)
			assert_close(m.mean[s], r.mean[s], 1e-9, what);
		snprintf(what, sizeof(what), "%s std[%d]", label, s);
		if (fabs(r.std[s]) >= 0.001)
			assert_close(m.std[s], r.std[s], 1e-9, what);
	}
}

static float *randf(size_t n, uint64_t *rng, double scale)
{
	float *v = malloc((n ? n : 1) * sizeof(float));

	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < n; i++)
		v[i] = (float)(((double)(t_rand(rng) >> 11) / (double)(1ull << 53) - 0.5) * scale);
	return v;
}

START_TEST(test_metrics_random)
{
	uint64_t rng = t_seed();
	/* Longer than one internal chunk of adump_compare_buffers(), and a length that is not a
	 * multiple of it. */
	const size_t sizes[] = { 1, 2, 7, 1000, 1024, 5000 };

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		float *x = randf(n, &rng, 10), *y = malloc(n * sizeof(float));
		char label[64];

		for (size_t i = 0; i < n; i++)
			y[i] = x[i] + (float)((double)(t_rand(&rng) % 1000) * 1e-4);
		snprintf(label, sizeof(label), "random n=%zu", n);
		check_f32(x, y, n, label);
		/* Zeros in the reference (relative errors skip them), on the vector path too. */
		for (size_t i = 0; i < n; i += 5)
			y[i] = 0;
		snprintf(label, sizeof(label), "reference zeros n=%zu", n);
		check_f32(x, y, n, label);
		/* A NaN on my side, an Inf in the reference. */
		if (n > 8) {
			x[n / 2] = NAN;
			y[n / 3] = INFINITY;
			snprintf(label, sizeof(label), "nan and inf n=%zu", n);
			check_f32(x, y, n, label);
			x[n / 2] = 1;
			check_f32(x, y, n, label);
		}
		snprintf(label, sizeof(label), "unrelated n=%zu", n);
		free(y);
		y = randf(n, &rng, 1e3);
		check_f32(x, y, n, label);
		free(x);
		free(y);
	}
}
END_TEST

/* Run msaccucmp's metrics on @x/@y and return the cell of @alg and the messages. */
static void cells_of(int32_t dx, const void *x, uint64_t nx, int32_t dy, const void *y, uint64_t ny,
		     const uint64_t *dims, uint32_t dim_count,
		     char (*cells)[ADUMP_COMPARE_CELL_BYTES], char *msg, size_t cap,
		     struct adump_compare_metrics *m)
{
	ck_assert_int_eq(adump_compare_buffers(dx, x, nx, dy, y, ny, dims, dim_count, m, cells, msg,
					       cap),
			 0);
}

START_TEST(test_metrics_edges)
{
	char cells[ADUMP_COMPARE_ALG_COUNT][ADUMP_COMPARE_CELL_BYTES], msg[4096];
	struct adump_compare_metrics m;
	uint64_t d4[1] = { 4 }, d0[1] = { 0 }, scalar1[1] = { 1 };
	float a[4] = { 1, 2, 3, 4 }, b[4] = { 1, 2, 3, 4 }, z[4] = { 0, 0, 0, 0 };
	float nan1[4] = { 1, NAN, 3, 4 }, inf1[4] = { 1, INFINITY, 3, 4 };

	/* Identical: cosine 1, every error 0. */
	cells_of(ADUMP_DT_FLOAT, a, 4, ADUMP_DT_FLOAT, b, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_COSINE], "1.000000");
	for (int i = 1; i < ADUMP_COMPARE_ALG_COUNT; i++)
		if (i != ADUMP_COMPARE_STD)
			ck_assert_str_eq(cells[i], "0.000000");
	ck_assert_str_eq(cells[ADUMP_COMPARE_STD], "(2.500;1.118),(2.500;1.118)");
	ck_assert_str_eq(msg, "");

	/* NaN on my side: cosine, max abs, sums NaN; relative ones NaN too (x/y is NaN). */
	cells_of(ADUMP_DT_FLOAT, nan1, 4, ADUMP_DT_FLOAT, b, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_COSINE], "nan");
	ck_assert_str_eq(cells[ADUMP_COMPARE_MAX_ABS], "nan");
	ck_assert_str_eq(cells[ADUMP_COMPARE_MAX_REL], "nan");
	ck_assert_str_eq(cells[ADUMP_COMPARE_KL], "nan");
	/* NaN in the ground truth: relative errors skip the element (|NaN| > eps is false). */
	cells_of(ADUMP_DT_FLOAT, b, 4, ADUMP_DT_FLOAT, nan1, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_ACC_REL], "0.000000");
	ck_assert_str_eq(cells[ADUMP_COMPARE_MAX_ABS], "nan");
	/* NaN on both sides. */
	cells_of(ADUMP_DT_FLOAT, nan1, 4, ADUMP_DT_FLOAT, nan1, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_COSINE], "nan");
	ck_assert_str_eq(cells[ADUMP_COMPARE_RMSE], "nan");
	/* Inf on my side: inf errors; a same-sign inf on both sides: inf - inf is NaN. */
	cells_of(ADUMP_DT_FLOAT, inf1, 4, ADUMP_DT_FLOAT, b, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_COSINE], "nan");
	ck_assert_str_eq(cells[ADUMP_COMPARE_MAX_ABS], "inf");
	ck_assert_str_eq(cells[ADUMP_COMPARE_ACC_REL], "inf");
	ck_assert_str_eq(cells[ADUMP_COMPARE_MEAN_ABS], "inf");
	cells_of(ADUMP_DT_FLOAT, inf1, 4, ADUMP_DT_FLOAT, inf1, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_MAX_ABS], "nan");
	/* Inf in the ground truth, finite x: that element's relative error is |0 - 1| = 1. */
	cells_of(ADUMP_DT_FLOAT, b, 4, ADUMP_DT_FLOAT, inf1, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_ACC_REL], "1.000000");
	ck_assert_str_eq(cells[ADUMP_COMPARE_MAX_REL], "1.000000");

	/* Zeros: both -> the literal 1.0; one side -> NaN and the message naming that side. */
	cells_of(ADUMP_DT_FLOAT, z, 4, ADUMP_DT_FLOAT, z, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_COSINE], "1.0");
	ck_assert_str_eq(cells[ADUMP_COMPARE_REL_EUCLID], "0.000000");
	cells_of(ADUMP_DT_FLOAT, z, 4, ADUMP_DT_FLOAT, a, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_COSINE], "NaN");
	ck_assert_str_eq(msg, "Cannot compare by Cosine Similarity. All the data is zero in my output.");
	cells_of(ADUMP_DT_FLOAT, a, 4, ADUMP_DT_FLOAT, z, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(msg, "Cannot compare by Cosine Similarity. All the data is zero in ground truth.");
	/* The reference all zero: RelativeEuclideanDistance 0 even though x is not. */
	ck_assert_str_eq(cells[ADUMP_COMPARE_REL_EUCLID], "0.000000");
	ck_assert_str_eq(cells[ADUMP_COMPARE_MAX_REL], "0.000000");

	/* Scalars ([] and [1]): cosine 1 whatever the data, with its message. */
	float s1 = 3, s2 = -7;
	cells_of(ADUMP_DT_FLOAT, &s1, 1, ADUMP_DT_FLOAT, &s2, 1, NULL, 0, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_COSINE], "1.000000");
	ck_assert_str_eq(msg, "This tensor is scalar.");
	ck_assert_str_eq(cells[ADUMP_COMPARE_MAX_ABS], "10.000000");
	cells_of(ADUMP_DT_FLOAT, &s1, 1, ADUMP_DT_FLOAT, &s2, 1, scalar1, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_COSINE], "1.000000");

	/* Empty: max() raises in numpy, means are NaN. */
	cells_of(ADUMP_DT_FLOAT, a, 0, ADUMP_DT_FLOAT, b, 0, d0, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_COSINE], "1.0");
	ck_assert_str_eq(cells[ADUMP_COMPARE_MAX_ABS], "NaN");
	ck_assert_str_eq(cells[ADUMP_COMPARE_MEAN_ABS], "nan");
	ck_assert_str_eq(cells[ADUMP_COMPARE_STD], "(nan;nan),(nan;nan)");
	ck_assert_str_eq(msg, "Failed to execute 'compare' in 'MaxAbsoluteError'. zero-size array to "
			      "reduction operation maximum which has no identity,Failed to execute "
			      "'compare' in 'KullbackLeiblerDivergence'. zero-size array to reduction "
			      "operation maximum which has no identity,Failed to execute 'compare' in "
			      "'MaxRelativeError'. zero-size array to reduction operation maximum which "
			      "has no identity");

	/* Length mismatch: every algorithm NaN, with the message. */
	cells_of(ADUMP_DT_FLOAT, a, 4, ADUMP_DT_FLOAT, b, 3, d4, 1, cells, msg, sizeof(msg), &m);
	for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++)
		ck_assert_str_eq(cells[i], "NaN");
	ck_assert_ptr_nonnull(strstr(msg, "does not match"));

	/* Bool on both sides: only cosine (and RelativeEuclideanDistance if y is all false). */
	unsigned char bx[4] = { 1, 0, 1, 1 }, by[4] = { 1, 1, 0, 1 }, bz[4] = { 0 };
	cells_of(ADUMP_DT_BOOL, bx, 4, ADUMP_DT_BOOL, by, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_COSINE], "0.666667");
	for (int i = 1; i < ADUMP_COMPARE_ALG_COUNT; i++)
		ck_assert_str_eq(cells[i], "NaN");
	ck_assert_ptr_nonnull(strstr(msg, "Algorithm MaxAbsoluteError does not support Boolean types."));
	ck_assert_ptr_nonnull(strstr(msg, "numpy boolean subtract"));
	cells_of(ADUMP_DT_BOOL, bx, 4, ADUMP_DT_BOOL, bz, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_REL_EUCLID], "0.000000");
	/* Bool against float: cast, every algorithm runs. */
	float fb[4] = { 1, 1, 0, 1 };
	cells_of(ADUMP_DT_BOOL, bx, 4, ADUMP_DT_FLOAT, fb, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_MAX_ABS], "1.000000");
	ck_assert_str_eq(cells[ADUMP_COMPARE_MEAN_ABS], "0.500000");

	/* A constant tensor: KL scales by itself only when max != min. */
	float c1[4] = { 2, 2, 2, 2 };
	cells_of(ADUMP_DT_FLOAT, c1, 4, ADUMP_DT_FLOAT, c1, 4, d4, 1, cells, msg, sizeof(msg), &m);
	ck_assert_str_eq(cells[ADUMP_COMPARE_KL], "0.000000");
}
END_TEST

/* float16, bfloat16, int32, int64: values converted to float32 first, then the same metrics. */
START_TEST(test_metrics_dtypes)
{
	uint64_t rng = t_seed() + 1;
	enum { N = 3000 };
	_Float16 hx[N], hy[N];
	uint16_t bx[N], by[N];
	int32_t ix[N], iy[N];
	int64_t lx[N], ly[N];
	float fx[N], fy[N];
	struct adump_compare_metrics m;
	uint64_t dims[1] = { N };
	struct ref r;
	struct {
		int32_t dtype;
		const void *x, *y;
	} cases[] = {
		{ ADUMP_DT_FLOAT16, hx, hy },
		{ ADUMP_DT_BF16, bx, by },
		{ ADUMP_DT_INT32, ix, iy },
		{ ADUMP_DT_INT64, lx, ly },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (int i = 0; i < N; i++) {
			double v = ((double)(t_rand(&rng) % 20001) - 10000) / 100.0;
			double w = v + (double)(t_rand(&rng) % 7) / 50.0;
			uint32_t u;
			float f;

			switch (cases[c].dtype) {
			case ADUMP_DT_FLOAT16:
				hx[i] = (_Float16)v;
				hy[i] = (_Float16)w;
				fx[i] = (float)hx[i];
				fy[i] = (float)hy[i];
				break;
			case ADUMP_DT_BF16:
				f = (float)v;
				memcpy(&u, &f, 4);
				bx[i] = (uint16_t)(u >> 16);
				u = (uint32_t)bx[i] << 16;
				memcpy(&fx[i], &u, 4);
				f = (float)w;
				memcpy(&u, &f, 4);
				by[i] = (uint16_t)(u >> 16);
				u = (uint32_t)by[i] << 16;
				memcpy(&fy[i], &u, 4);
				break;
			case ADUMP_DT_INT32:
				ix[i] = (int32_t)(v * 100);
				iy[i] = (int32_t)(w * 100);
				fx[i] = (float)ix[i];
				fy[i] = (float)iy[i];
				break;
			default:
				/* Beyond float32's 24 bits: the cast rounds, as numpy's does. */
				lx[i] = (int64_t)(v * 1e9) * 1000 + 7;
				ly[i] = (int64_t)(w * 1e9) * 1000 + 3;
				fx[i] = (float)lx[i];
				fy[i] = (float)ly[i];
				break;
			}
		}
		ck_assert_int_eq(adump_compare_buffers(cases[c].dtype, cases[c].x, N, cases[c].dtype,
						       cases[c].y, N, dims, 1, &m, NULL, NULL, 0),
				 0);
		ref_compute(fx, fy, N, &r);
		for (int a = 0; a < ADUMP_COMPARE_ALG_COUNT; a++)
			if (a != ADUMP_COMPARE_STD)
				assert_close(m.value[a], r.v[a], 1e-9, adump_compare_alg_name(a));
	}
	/* A dtype without numbers is refused. */
	ck_assert_int_eq(adump_compare_buffers(ADUMP_DT_STRING, hx, 1, ADUMP_DT_FLOAT, fx, 1, dims, 1,
					       &m, NULL, NULL, 0),
			 -ADUMP_ERR_UNSUPPORTED);
}
END_TEST

/* The vector conversions (F16C, AVX2) give the portable loops' values: every float16 bit
 * pattern (NaNs only as NaNs), int32 values past float32's 24-bit mantissa (rounding). */
START_TEST(test_to_float_simd)
{
	const size_t n = 65536 + 5;     /* a tail the vector loop leaves to the portable one */
	uint16_t *h = malloc(n * sizeof(*h));
	int32_t *v = malloc(n * sizeof(*v));
	float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
	uint64_t rng = t_seed() + 7;

	ck_assert(h && v && a && b);
	for (size_t i = 0; i < n; i++) {
		h[i] = (uint16_t)i;
		v[i] = (int32_t)(uint32_t)t_rand(&rng);
	}
	v[0] = INT32_MIN;
	v[1] = INT32_MAX;
	v[2] = 16777217;                /* 2^24 + 1: a tie, to even */
	v[3] = -16777219;
	for (int k = 0; k < 2; k++) {
		int32_t dtype = k ? ADUMP_DT_INT32 : ADUMP_DT_FLOAT16;
		const void *raw = k ? (const void *)v : (const void *)h;

		adump_compare_simd_set(false);
		adump_compare_to_float(dtype, raw, n, a);
		adump_compare_simd_set(true);
		adump_compare_to_float(dtype, raw, n, b);
		for (size_t i = 0; i < n; i++) {
			if (isnan(a[i])) {
				ck_assert_msg(isnan(b[i]), "dtype %d element %zu: not NaN", dtype, i);
				continue;
			}
			ck_assert_msg(!memcmp(&a[i], &b[i], sizeof(float)),
				      "dtype %d element %zu: %a against %a", dtype, i, b[i], a[i]);
		}
	}
	free(h);
	free(v);
	free(a);
	free(b);
}
END_TEST

START_TEST(test_alg_parse)
{
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	char msg[256];

	ck_assert_int_eq(adump_compare_alg_parse(&cfg, "8,CosineSimilarity,8,4", msg, sizeof(msg)), 0);
	ck_assert_uint_eq(cfg.alg_count, 3);
	ck_assert_int_eq(cfg.algs[0], ADUMP_COMPARE_MAX_REL);
	ck_assert_int_eq(cfg.algs[1], ADUMP_COMPARE_COSINE);
	ck_assert_int_eq(cfg.algs[2], ADUMP_COMPARE_KL);
	ck_assert_int_eq(adump_compare_alg_parse(&cfg, "all", msg, sizeof(msg)), 0);
	ck_assert_uint_eq(cfg.alg_count, 0);
	ck_assert_int_eq(adump_compare_alg_parse(&cfg, "10", msg, sizeof(msg)), -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_compare_alg_parse(&cfg, "Cosine", msg, sizeof(msg)), -ADUMP_ERR_CONFIG);
	ck_assert_ptr_nonnull(strstr(msg, "Cosine"));
}
END_TEST

/* ---- directories of dumps ------------------------------------------------------------------ */

static char *dir;
static int32_t output_format = ADUMP_FORMAT_ND;   /* dump_write()'s output format */
static const char *file_name;                      /* dump_write()'s file name, when set */

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* Write <dir>/<side>/Add.<name>.1.2.<ts> (or <dir>/<side>/<file_name>) with float32 inputs @in
 * and outputs @out. */
static void dump_write(const char *side, const char *name, uint64_t ts, uint32_t in_count,
		       const float *const *in, const uint64_t *in_dims, uint32_t out_count,
		       const float *const *out, const uint64_t *out_dims, uint32_t dim_count)
{
	struct adump_tensor t[8];
	const void *data[8];
	char path[4096];
	uint32_t n = 0;
	uint64_t elems = 1;
	size_t len;
	void *buf;
	FILE *f;

	for (uint32_t d = 0; d < dim_count; d++)
		elems *= in_dims[d];
	for (uint32_t i = 0; i < in_count; i++, n++) {
		t[n] = rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, dim_count, in_dims, elems * 4);
		t[n].address = 4096 * (n + 1);
		data[n] = in[i];
	}
	elems = 1;
	for (uint32_t d = 0; d < dim_count; d++)
		elems *= out_dims[d];
	for (uint32_t i = 0; i < out_count; i++, n++) {
		t[n] = rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, dim_count, out_dims, elems * 4);
		t[n].format = output_format;
		data[n] = out[i];
	}
	struct adump_op op = { .op_type = "Add", .op_name = name, .task_id = 1, .stream_id = 2,
			       .timestamp_us = ts, .tensor_count = n, .tensors = t };

	buf = rt_dump_mem(&op, data, &len);
	snprintf(path, sizeof(path), "%s/%s", dir, side);
	mkdir(path, 0755);
	if (file_name)
		snprintf(path, sizeof(path), "%s/%s/%s", dir, side, file_name);
	else
		snprintf(path, sizeof(path), "%s/%s/Add.%s.1.2.%llu", dir, side, name,
			 (unsigned long long)ts);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

/* A minimal reader of Python csv output: quoted cells, doubled quotes, CRLF rows. */
static char ***csv_parse(const char *text, size_t *row_count, size_t *col_count)
{
	char ***rows = NULL, *cell = malloc(strlen(text) + 1);
	size_t nrows = 0, ncols = 0, len = 0;
	char **cur = NULL;
	const char *p = text;

	ck_assert_ptr_nonnull(cell);
	while (*p) {
		bool is_quoted = *p == '"';

		len = 0;
		if (is_quoted) {
			for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
				if (*p == '"')
					p++;
				cell[len++] = *p;
			}
			ck_assert_int_eq(*p, '"');
			p++;
		} else {
			while (*p && *p != ',' && *p != '\r')
				cell[len++] = *p++;
		}
		cell[len] = '\0';
		cur = realloc(cur, (ncols + 1) * sizeof(*cur));
		cur[ncols++] = strdup(cell);
		if (*p == ',') {
			p++;
			continue;
		}
		ck_assert_msg(p[0] == '\r' && p[1] == '\n', "row %zu does not end in CRLF", nrows);
		p += 2;
		rows = realloc(rows, (nrows + 1) * sizeof(*rows));
		rows[nrows++] = cur;
		if (*col_count == 0)
			*col_count = ncols;
		ck_assert_uint_eq(ncols, *col_count);
		cur = NULL;
		ncols = 0;
	}
	free(cell);
	*row_count = nrows;
	return rows;
}

static struct adump_compare *run_compare(const struct adump_compare_config *cfg)
{
	char my[4096], golden[4096], msg[1024];
	struct adump_compare *c;

	snprintf(my, sizeof(my), "%s/my", dir);
	snprintf(golden, sizeof(golden), "%s/golden", dir);
	ck_assert_msg(adump_compare_open(cfg, my, golden, &c, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert_int_eq(adump_compare_run(c), 0);
	return c;
}

static int find_row(const struct adump_compare *c, const char *tensor_id)
{
	for (uint64_t i = 0; i < adump_compare_row_count(c); i++)
		if (!strcmp(adump_compare_row(c, i)->tensor_id, tensor_id))
			return (int)i;
	return -1;
}

static const char *cell(const struct adump_compare *c, int row, const char *column)
{
	ck_assert_int_ge(row, 0);
	for (uint32_t i = 0; i < adump_compare_column_count(c); i++)
		if (!strcmp(adump_compare_column(c, i), column))
			return adump_compare_row(c, (uint64_t)row)->cells[i];
	ck_abort_msg("no column %s", column);
	return NULL;
}

START_TEST(test_identical_dirs)
{
	uint64_t rng = t_seed() + 2, dims[2] = { 37, 41 };
	float *a = randf(37 * 41, &rng, 4), *b = randf(37 * 41, &rng, 4), *o = randf(37 * 41, &rng, 4);
	const float *in[2] = { a, b }, *out[1] = { o };
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare_summary s;
	struct adump_compare *c;

	dir = t_tmpdir("compare");
	for (int k = 0; k < 12; k++) {
		char name[32];

		snprintf(name, sizeof(name), "op_%d", k);
		dump_write("my", name, 1764590000000000ull + 10 * (uint64_t)k, 2, in, dims, 1, out, dims, 2);
		dump_write("golden", name, 1764590000000005ull + 10 * (uint64_t)k, 2, in, dims, 1, out,
			   dims, 2);
	}
	cfg.thread_count = 3;
	cfg.chunk_elements = 100;       /* many chunks per tensor */
	c = run_compare(&cfg);
	ck_assert_uint_eq(adump_compare_row_count(c), 36);
	for (uint64_t i = 0; i < 36; i++) {
		const struct adump_compare_row *row = adump_compare_row(c, i);

		ck_assert_uint_eq(row->index, i / 3);          /* op order, timestamps ascending */
		ck_assert(row->is_compared);
		ck_assert_str_eq(cell(c, (int)i, "CosineSimilarity"), "1.000000");
		ck_assert_str_eq(cell(c, (int)i, "MaxAbsoluteError"), "0.000000");
		ck_assert_str_eq(cell(c, (int)i, "MeanRelativeError"), "0.000000");
		ck_assert_str_eq(cell(c, (int)i, "CompareFailReason"), "");
		ck_assert_str_eq(cell(c, (int)i, "Shape"), "[37,41]");
	}
	adump_compare_summary_get(c, &s);
	ck_assert_int_eq(s.exit_code, 0);
	ck_assert_int_eq(s.first_divergent_row, -1);
	ck_assert_uint_eq(s.bytes[0], 36ull * 37 * 41 * 4);
	adump_compare_close(c);
	free(a);
	free(b);
	free(o);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* KullbackLeiblerDivergence skips its second pass only when both sides are the same bytes:
 * a tensor that differs in the last element of its last chunk gets the KL of
 * adump_compare_buffers() (which always makes both passes), a same-bytes one 0. */
START_TEST(test_kl_identical_skip)
{
	uint64_t rng = t_seed() + 9, dims[2] = { 37, 41 };
	const size_t n = 37 * 41;
	float *a = randf(n, &rng, 4), *o = randf(n, &rng, 4), *p = malloc(n * sizeof(float));
	const float *in[1] = { a }, *out_my[1] = { p }, *out_golden[1] = { o };
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	char cells[ADUMP_COMPARE_ALG_COUNT][ADUMP_COMPARE_CELL_BYTES], msg[1024];
	struct adump_compare_metrics m;
	struct adump_compare *c;

	ck_assert_ptr_nonnull(p);
	memcpy(p, o, n * sizeof(float));
	p[n - 1] = 40;                  /* a new maximum: every element's normalised value moves */
	ck_assert_int_eq(adump_compare_buffers(ADUMP_DT_FLOAT, p, n, ADUMP_DT_FLOAT, o, n, dims, 2,
					       &m, cells, msg, sizeof(msg)),
			 0);
	ck_assert_str_ne(cells[ADUMP_COMPARE_KL], "0.000000");
	dir = t_tmpdir("compare");
	dump_write("my", "op_0", 1764590000000000ull, 1, in, dims, 1, out_my, dims, 2);
	dump_write("golden", "op_0", 1764590000000005ull, 1, in, dims, 1, out_golden, dims, 2);
	cfg.chunk_elements = 100;       /* the difference is in the 16th chunk */
	c = run_compare(&cfg);
	ck_assert_uint_eq(adump_compare_row_count(c), 2);
	ck_assert_str_eq(cell(c, find_row(c, "op_0:input:0"), "KullbackLeiblerDivergence"),
			 "0.000000");
	ck_assert_str_eq(cell(c, find_row(c, "op_0:output:0"), "KullbackLeiblerDivergence"),
			 cells[ADUMP_COMPARE_KL]);
	adump_compare_close(c);
	free(a);
	free(o);
	free(p);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_matching)
{
	uint64_t rng = t_seed() + 3, d6[1] = { 6 }, d23[2] = { 2, 3 }, d32[2] = { 3, 2 };
	float *a = randf(6, &rng, 4), *b = randf(6, &rng, 4), *neg = malloc(6 * sizeof(float));
	const float *one[1] = { a }, *two[2] = { a, b }, *negs[1] = { neg };
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare_summary s;
	struct adump_compare *c;
	uint64_t t = 1764590000000000ull;
	char path[4096];
	int r;

	for (int i = 0; i < 6; i++)
		neg[i] = -a[i];
	dir = t_tmpdir("compare");
	/* Ordered by my side's timestamps: late (2 files, its latest after first) comes last. */
	dump_write("my", "late", t + 1, 1, one, d6, 1, one, d6, 1);
	dump_write("my", "first", t + 10, 1, one, d6, 1, one, d6, 1);
	dump_write("my", "late", t + 100, 1, one, d6, 1, one, d6, 1);
	/* The ground truth's latest "late" matches; an older one differs. */
	dump_write("golden", "late", t + 2, 1, negs, d6, 1, negs, d6, 1);
	dump_write("golden", "late", t + 90, 1, one, d6, 1, one, d6, 1);
	dump_write("golden", "first", t + 11, 1, one, d6, 1, one, d6, 1);
	/* One-sided ops. */
	dump_write("my", "only_my", t + 20, 1, one, d6, 1, one, d6, 1);
	dump_write("golden", "only_golden", t + 5, 1, one, d6, 1, one, d6, 1);
	/* Count mismatch on inputs: only the outputs are compared. */
	dump_write("my", "count", t + 30, 2, two, d6, 1, one, d6, 1);
	dump_write("golden", "count", t + 30, 1, one, d6, 1, negs, d6, 1);
	/* Shape mismatch on outputs: only the inputs are compared. */
	dump_write("my", "shape", t + 40, 1, one, d23, 1, one, d23, 2);
	dump_write("golden", "shape", t + 40, 1, one, d23, 1, one, d32, 2);
	/* Both groups fail: one NaN row with both messages. */
	dump_write("my", "both", t + 50, 2, two, d23, 1, one, d23, 2);
	dump_write("golden", "both", t + 50, 1, one, d23, 1, one, d32, 2);
	/* Format mismatch on outputs: only the inputs are compared. */
	dump_write("my", "format", t + 45, 1, one, d6, 1, one, d6, 1);
	output_format = ADUMP_FORMAT_NCHW;
	dump_write("golden", "format", t + 45, 1, one, d6, 1, one, d6, 1);
	output_format = ADUMP_FORMAT_ND;
	/* A file that is not a dump, and a truncated dump. */
	snprintf(path, sizeof(path), "%s/my/Add.broken.1.2.%llu", dir, (unsigned long long)(t + 60));
	ck_assert_int_eq(write_text(path, "garbage"), 0);
	dump_write("golden", "broken", t + 60, 1, one, d6, 1, one, d6, 1);
	snprintf(path, sizeof(path), "%s/my/notes.txt", dir);
	ck_assert_int_eq(write_text(path, "not a dump"), 0);

	cfg.has_overflow = true;
	c = run_compare(&cfg);
	/* Ids: first 0, only_my 1, count 2, shape 3, format 4, both 5, broken 6, late 7,
	 * only_golden 8. */
	r = find_row(c, "first:output:0");
	ck_assert_str_eq(cell(c, r, "Index"), "0");
	ck_assert_str_eq(cell(c, r, "OverFlow"), "NaN");
	r = find_row(c, "late:output:0");
	ck_assert_str_eq(cell(c, r, "Index"), "7");
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "1.000000");
	for (uint64_t i = 0; i < adump_compare_row_count(c); i++) {
		const struct adump_compare_row *row = adump_compare_row(c, i);

		if (!strcmp(row->op_name, "only_my")) {
			ck_assert_str_eq(row->cells[0], "1");
			ck_assert_str_eq(row->cells[1], "NaN");
			ck_assert_str_eq(row->cells[5], "*");
			ck_assert_str_eq(cell(c, (int)i, "CompareFailReason"),
					 "[only_my] There is no the ground truth dump file for the op \"only_my\".");
		}
		if (!strcmp(row->op_name, "only_golden")) {
			ck_assert_str_eq(row->cells[0], "8");
			ck_assert_str_eq(row->cells[2], "*");
			ck_assert_str_eq(cell(c, (int)i, "CompareFailReason"),
					 "[only_golden] There is no the my output dump file for the op \"only_golden\".");
		}
		if (!strcmp(row->op_name, "both")) {
			ck_assert_str_eq(cell(c, (int)i, "CompareFailReason"),
					 "[both] The number of input does not match (2 vs 1).,[both] The shape "
					 "does not match ((2, 3) vs (3, 2)) for both:output:0.");
			ck_assert_str_eq(cell(c, (int)i, "TensorIndex"), "NaN");
			ck_assert_str_eq(cell(c, (int)i, "CosineSimilarity"), "NaN");
		}
		if (!strcmp(row->op_name, "broken"))
			ck_assert_ptr_nonnull(strstr(cell(c, (int)i, "CompareFailReason"), "[broken] "));
		ck_assert_uint_ge(row->index, i ? adump_compare_row(c, i - 1)->index : 0);
	}
	ck_assert_int_lt(find_row(c, "count:input:0"), 0);
	r = find_row(c, "count:output:0");
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "-1.000000");
	ck_assert_int_ge(find_row(c, "shape:input:0"), 0);
	ck_assert_int_lt(find_row(c, "shape:output:0"), 0);
	ck_assert_int_ge(find_row(c, "format:input:0"), 0);
	ck_assert_int_lt(find_row(c, "format:output:0"), 0);
	adump_compare_summary_get(c, &s);
	ck_assert_uint_eq(s.op_count, 9);
	ck_assert_uint_eq(s.matched_count, 7);
	ck_assert_uint_eq(s.my_only_count, 1);
	ck_assert_uint_eq(s.golden_only_count, 1);
	ck_assert_int_eq(s.exit_code, 2);       /* the first op with a code: only_my */
	ck_assert_int_eq(s.first_divergent_row, find_row(c, "count:output:0"));

	/* The CSV, parsed back, holds the header and every cell. */
	snprintf(path, sizeof(path), "%s/result.csv", dir);
	FILE *f = fopen(path, "wb");
	ck_assert_int_eq(adump_compare_write_csv(c, f), 0);
	fclose(f);
	char *text = t_slurp(dir, "result.csv");
	size_t rows = 0, cols = 0;
	char ***csv = csv_parse(text, &rows, &cols);

	ck_assert_uint_eq(rows, adump_compare_row_count(c) + 1);
	ck_assert_uint_eq(cols, adump_compare_column_count(c));
	ck_assert_str_eq(csv[0][0], "Index");
	ck_assert_str_eq(csv[0][3], "DataType");
	ck_assert_str_eq(csv[0][6], "DataType");
	ck_assert_str_eq(csv[0][10], "OverFlow");
	ck_assert_str_eq(csv[0][cols - 1], "CompareFailReason");
	for (size_t i = 0; i < rows; i++) {
		for (size_t k = 0; k < cols; k++) {
			const char *want = i ? adump_compare_row(c, i - 1)->cells[k]
					     : adump_compare_column(c, (uint32_t)k);

			ck_assert_str_eq(csv[i][k], want);
			free(csv[i][k]);
		}
		free(csv[i]);
	}
	free(csv);
	free(text);

	/* The advisor names the first op below 0.99. */
	snprintf(path, sizeof(path), "%s/advice.txt", dir);
	f = fopen(path, "wb");
	ck_assert_int_eq(adump_compare_write_advice(c, f), 0);
	fclose(f);
	text = t_slurp(dir, "advice.txt");
	ck_assert_ptr_nonnull(strstr(text, "Detection Type: Global Consistency\nOperator Index: 2\n"));
	free(text);
	adump_compare_close(c);
	free(a);
	free(b);
	free(neg);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* Names msaccucmp reads its own way: FFTS+ subtasks (timestamp in field 4, the last thread's
 * file compared), manual slices and SGT graph prefixes cut from the op name, a name left with
 * "_lxslice" inside skipped, and a 16-digit rule for the timestamp. */
START_TEST(test_ffts_names)
{
	static const struct {
		const char *side, *file;
		bool is_neg;
	} files[] = {
		/* Threads 2 and 10: 10 is the last (by number; by name 2 would be). */
		{ "my", "Add.ff.1.2.1764590000000050.4.0.10.0", false },
		{ "my", "Add.ff.1.2.1764590000000050.4.0.2.0", true },
		{ "golden", "Add.ff.1.2.1764590000000050.4.0.10.0", false },
		{ "golden", "Add.ff.1.2.1764590000000050.4.0.2.0", false },
		/* Manual slices of "conv": slice 1 is the last. */
		{ "my", "Add.conv_lxslice1.1.2.1764590000000020.4.0.0.0", false },
		{ "my", "Add.conv_lxslice0.1.2.1764590000000020.4.0.0.0", true },
		{ "golden", "Add.conv.1.2.1764590000000020", false },
		/* The SGT graph prefix goes: my relu matches golden relu. */
		{ "my", "Add.partition0_sgt_graph_3_relu.1.2.1764590000000030", false },
		{ "golden", "Add.relu.1.2.1764590000000030", false },
		/* Task type 0 with the subtask fields: the last field is the timestamp, not 16
		 * digits, so 0: this op comes first. */
		{ "my", "Add.zero.1.2.1764590000000090.0.0.0.0", false },
		{ "golden", "Add.zero.1.2.1764590000000090.0.0.0.0", false },
		{ "my", "Add.norm.1.2.1764590000000010", false },
		{ "golden", "Add.norm.1.2.1764590000000010", false },
		/* "_lxslice" not at the end: skipped on both sides. */
		{ "my", "Add.a_lxslice0_b.1.2.1764590000000040", false },
		{ "golden", "Add.a_lxslice0_b.1.2.1764590000000040", false },
	};
	static const char *const order[] = { "zero", "norm", "conv", "relu", "ff" };
	uint64_t rng = t_seed() + 9, d6[1] = { 6 };
	float *a = randf(6, &rng, 4), *neg = malloc(6 * sizeof(float));
	const float *one[1] = { a }, *negs[1] = { neg };
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare_summary s;
	struct adump_compare *c;
	char id[64];
	int r;

	for (int i = 0; i < 6; i++)
		neg[i] = -a[i];
	dir = t_tmpdir("compare");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const float *const *out = files[i].is_neg ? negs : one;

		file_name = files[i].file;
		dump_write(files[i].side, "x", 0, 1, one, d6, 1, out, d6, 1);
	}
	file_name = NULL;
	c = run_compare(&cfg);
	adump_compare_summary_get(c, &s);
	ck_assert_uint_eq(s.op_count, 5);
	ck_assert_uint_eq(s.matched_count, 5);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		snprintf(id, sizeof(id), "%s:output:0", order[i]);
		r = find_row(c, id);
		ck_assert_msg(r >= 0, "no row %s", id);
		ck_assert_uint_eq(adump_compare_row(c, (uint64_t)r)->index, i);
		ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "1.000000");
	}
	adump_compare_close(c);
	free(a);
	free(neg);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* One dump file <dir>/<side>/<file> ("Conv2D.<op name>..."): float32 tensors (@in_count
 * inputs, then outputs), tensor i of rank @rank[i] with dims @dims[i] and values @data[i];
 * @attr, when set, is attr[0]'s value (an FFTS+ cut as JSON). */
static void ffts_write(const char *side, const char *file, uint32_t in_count, uint32_t count,
		       const uint32_t *rank, const uint64_t (*dims)[4], const float *const *data,
		       const char *attr)
{
	char op_name[64];
	struct adump_attr at = { .name = "ffts", .value = attr };
	struct adump_tensor t[8];
	char path[4096];
	size_t len;
	void *buf;
	FILE *f;

	for (uint32_t i = 0; i < count; i++) {
		uint64_t n = 1;

		for (uint32_t d = 0; d < rank[i]; d++)
			n *= dims[i][d];
		t[i] = rt_tensor(i < in_count ? ADUMP_TENSOR_INPUT : ADUMP_TENSOR_OUTPUT,
				 ADUMP_DT_FLOAT, rank[i], dims[i], n * 4);
	}
	/* The header's op name: the file's, "_hdr" added to tell them apart. */
	snprintf(op_name, sizeof(op_name), "%.*s_hdr", (int)strcspn(file + 7, "."), file + 7);
	struct adump_op op = { .op_type = "Conv2D", .op_name = op_name, .task_id = 1,
			       .stream_id = 2, .timestamp_us = 1, .tensor_count = count,
			       .tensors = t, .attr_count = attr ? 1 : 0, .attrs = &at };

	buf = rt_dump_mem(&op, (const void *const *)data, &len);
	snprintf(path, sizeof(path), "%s/%s", dir, side);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, side, file);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

/* x[:, from:from+n, :] of x, a [a, b, c] array. */
static float *cut_axis1(const float *x, uint64_t a, uint64_t b, uint64_t c, uint64_t from,
			uint64_t n)
{
	float *y = malloc(a * n * c * sizeof(float));

	ck_assert_ptr_nonnull(y);
	for (uint64_t i = 0; i < a; i++)
		memcpy(y + i * n * c, x + (i * b + from) * c, n * c * sizeof(float));
	return y;
}

/* FFTS+ subtask dumps merged as msaccucmp merges them, against a ground truth dumped whole:
 * manual slices cut along axis 1 (each slice's shape from its own header) and automatic
 * threads cut unevenly along axis 0 (shapes from output_tensor_slice, the headers saying
 * otherwise), an output without a cut taken from the first subtask, and a cut that names no
 * axis (the latest subtask compared, named by its header as any dump with attributes). A
 * subtask whose bytes do not fill its slice's shape gives the op a message instead of rows.
 * msaccucmp (msprobe 2ee62ed6) gave the same rows and values on these files. */
START_TEST(test_ffts_merge)
{
	static const char manual_attr[] =
		"{\"threadMode\": false, \"slice_instance_num\": 2, "
		"\"outputCutList\": [[1, 2, 1], [1, 1]]}";
	static const char auto_attr[] =
		"{\"threadMode\": true, \"slice_instance_num\": 3, \"outputCutList\": [[3, 1]], "
		"\"output_tensor_slice\": ["
		"[[{\"lower\": 0, \"higher\": 2}, {\"lower\": 0, \"higher\": 4}]], "
		"[[{\"lower\": 2, \"higher\": 3}, {\"lower\": 0, \"higher\": 4}]], "
		"[[{\"lower\": 3, \"higher\": 6}, {\"lower\": 0, \"higher\": 4}]]]}";
	static const char no_cut_attr[] =
		"{\"threadMode\": false, \"slice_instance_num\": 2, \"outputCutList\": [[1, 1]]}";
	uint64_t rng = t_seed() + 11;
	float *x = randf(6, &rng, 4), *full = randf(4 * 6 * 5, &rng, 4), *small = randf(4, &rng, 4);
	float *grid = randf(6 * 4, &rng, 4), *other = randf(6 * 4, &rng, 4);
	float *slice[2] = { cut_axis1(full, 4, 6, 5, 0, 3), cut_axis1(full, 4, 6, 5, 3, 3) };
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare *c;
	int r;

	dir = t_tmpdir("compare");
	/* Manual: conv's output 0 [4, 6, 5] in two slices [4, 3, 5]; output 1 not cut. */
	{
		static const uint32_t rank[3] = { 1, 3, 2 };
		static const uint64_t whole[3][4] = { { 6 }, { 4, 6, 5 }, { 2, 2 } };
		static const uint64_t part[3][4] = { { 6 }, { 4, 3, 5 }, { 2, 2 } };
		const float *g[3] = { x, full, small }, *m0[3] = { x, slice[0], small },
			    *m1[3] = { x, slice[1], grid };

		ffts_write("golden", "Conv2D.conv.1.2.1764590000000010", 1, 3, rank, whole, g, NULL);
		/* Slice 1 written first and with an earlier timestamp: order is by slice. */
		ffts_write("my", "Conv2D.conv_lxslice1.1.2.1764590000000009.4.0.0.0", 1, 3, rank,
			   part, m1, manual_attr);
		ffts_write("my", "Conv2D.conv_lxslice0.1.2.1764590000000010.4.0.0.0", 1, 3, rank,
			   part, m0, manual_attr);
	}
	/* Automatic: ff's output [6, 4] in threads of 2, 1 and 3 rows, their headers flat. */
	{
		static const uint32_t rank[2] = { 1, 1 };
		static const uint64_t whole_dims[2][4] = { { 6 }, { 6, 4 } };
		static const uint32_t whole_rank[2] = { 1, 2 };
		uint64_t dims[3][2][4] = { { { 6 }, { 8 } }, { { 6 }, { 4 } }, { { 6 }, { 12 } } };
		const float *g[2] = { x, grid };
		char name[128];

		ffts_write("golden", "Conv2D.ff.1.2.1764590000000020", 1, 2, whole_rank, whole_dims,
			   g, NULL);
		for (int k = 0, row = 0; k < 3; row += (int)dims[k][1][0] / 4, k++) {
			const float *m[2] = { x, grid + row * 4 };

			snprintf(name, sizeof(name), "Conv2D.ff.1.2.17645900000000%d.4.0.%d.0", 20 + k,
				 k);
			ffts_write("my", name, 1, 2, rank, dims[k], m, auto_attr);
		}
	}
	/* No cut axis: the latest subtask (thread 0 here) is compared. */
	{
		static const uint32_t rank[2] = { 1, 2 };
		static const uint64_t d[2][4] = { { 6 }, { 6, 4 } };
		const float *g[2] = { x, other }, *wrong[2] = { x, grid };

		ffts_write("golden", "Conv2D.nocut.1.2.1764590000000030", 1, 2, rank, d, g, NULL);
		ffts_write("my", "Conv2D.nocut.1.2.1764590000000031.4.0.0.0", 1, 2, rank, d, g,
			   no_cut_attr);
		ffts_write("my", "Conv2D.nocut.1.2.1764590000000030.4.0.1.0", 1, 2, rank, d, wrong,
			   no_cut_attr);
	}
	/* Attributes that are not JSON: the last subtask is compared (msaccucmp fails). */
	{
		static const uint32_t rank[2] = { 1, 2 };
		static const uint64_t d[2][4] = { { 6 }, { 6, 4 } };
		const float *g[2] = { x, other }, *wrong[2] = { x, grid };

		ffts_write("golden", "Conv2D.junk.1.2.1764590000000050", 1, 2, rank, d, g, NULL);
		ffts_write("my", "Conv2D.junk.1.2.1764590000000051.4.0.0.0", 1, 2, rank, d, wrong,
			   "{not json");
		ffts_write("my", "Conv2D.junk.1.2.1764590000000050.4.0.1.0", 1, 2, rank, d, g,
			   "{not json");
	}
	/* A thread whose bytes do not fill its slice: 5 floats for [2, 4]. */
	{
		static const uint32_t rank[2] = { 1, 1 };
		static const uint64_t d[2][4] = { { 6 }, { 24 } }, short_d[2][4] = { { 6 }, { 5 } };
		static const uint32_t g_rank[2] = { 1, 2 };
		static const uint64_t g_d[2][4] = { { 6 }, { 6, 4 } };
		const float *g[2] = { x, grid };

		ffts_write("golden", "Conv2D.bad.1.2.1764590000000040", 1, 2, g_rank, g_d, g, NULL);
		ffts_write("my", "Conv2D.bad.1.2.1764590000000040.4.0.0.0", 1, 2, rank, short_d, g,
			   auto_attr);
		ffts_write("my", "Conv2D.bad.1.2.1764590000000041.4.0.1.0", 1, 2, rank, d, g,
			   auto_attr);
	}
	c = run_compare(&cfg);
	r = find_row(c, "conv:output:0");
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "1.000000");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	ck_assert_str_eq(cell(c, r, "Shape"), "[4,6,5]");
	/* Not cut: the first slice's output, which is the ground truth's. */
	r = find_row(c, "conv:output:1");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	r = find_row(c, "conv:input:0");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	r = find_row(c, "ff:output:0");
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "1.000000");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	ck_assert_str_eq(cell(c, r, "Shape"), "[6,4]");
	/* Not merged, and with attributes: named by its header, as msaccucmp names it. */
	ck_assert_int_lt(find_row(c, "nocut:output:0"), 0);
	r = find_row(c, "nocut_hdr:output:0");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	ck_assert_str_eq(cell(c, r, "NPUDump"), "nocut_hdr");
	ck_assert_str_eq(cell(c, r, "GroundTruth"), "nocut_hdr");
	/* One name per op (issue 30): the row's op name is the one its cells show. */
	ck_assert_str_eq(adump_compare_row(c, (uint64_t)r)->op_name, "nocut_hdr");
	r = find_row(c, "junk_hdr:output:0");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	r = find_row(c, "bad:output:0");
	ck_assert_int_lt(r, 0);
	for (r = 0; r < (int)adump_compare_row_count(c); r++)
		if (!strcmp(adump_compare_row(c, (uint64_t)r)->op_name, "bad"))
			break;
	ck_assert_int_lt(r, (int)adump_compare_row_count(c));
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "NaN");
	ck_assert_ptr_nonnull(strstr(cell(c, r, "CompareFailReason"), "doesn't match the shape"));
	adump_compare_close(c);

	/* A wrong merge would not be found equal: thread 1 changed by 0.5 in one element. */
	{
		static const uint32_t rank[2] = { 1, 1 };
		uint64_t d[2][4] = { { 6 }, { 4 } };
		float row[4];
		const float *m[2] = { x, row };

		memcpy(row, grid + 2 * 4, sizeof(row));
		row[3] += 0.5f;
		ffts_write("my", "Conv2D.ff.1.2.1764590000000021.4.0.1.0", 1, 2, rank, d, m,
			   auto_attr);
	}
	c = run_compare(&cfg);
	r = find_row(c, "ff:output:0");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.500000");
	adump_compare_close(c);
	free(x);
	free(full);
	free(small);
	free(grid);
	free(other);
	free(slice[0]);
	free(slice[1]);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* Random cuts: a tensor of rank 1-4 split into 2-4 manual slices along a random axis, compared
 * with the whole through small read chunks (7 elements, so reads end inside a slice's run):
 * the merge gathers exactly the whole tensor, element for element. The last round cuts a
 * [20000, 4] tensor along its last axis: runs of one element from slices of 80,000 bytes,
 * more than one read-ahead window holds. */
START_TEST(test_ffts_merge_random)
{
	uint64_t rng = t_seed() + 12;
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	char name[128], attr[256];

	cfg.chunk_elements = 7;
	for (int round = 0; round < 25; round++) {
		uint32_t rank[2] = { 1, 1 + (uint32_t)(t_rand(&rng) % 4) }, parts = 2 + t_rand(&rng) % 3;
		uint64_t whole[2][4] = { { 1 } }, part[2][4] = { { 1 } }, n = 1, outer = 1, inner = 1;
		uint32_t axis = (uint32_t)(t_rand(&rng) % rank[1]);
		uint64_t along[4], at = 0;
		bool is_long = round == 24;
		size_t len = 0;
		float *full, one = 1;
		struct adump_compare *c;
		int r;

		if (is_long) {
			rank[1] = 2;
			axis = 1;
			parts = 4;
		}
		for (uint32_t d = 0; d < rank[1]; d++) {
			whole[1][d] = is_long ? 20000 : 1 + t_rand(&rng) % 5;
			if (d < axis)
				outer *= whole[1][d];
			if (d > axis)
				inner *= whole[1][d];
		}
		whole[1][axis] = 0;
		for (uint32_t k = 0; k < parts; k++)
			whole[1][axis] += along[k] = is_long ? 1 : 1 + t_rand(&rng) % 4;
		for (uint32_t d = 0; d < rank[1]; d++)
			n *= whole[1][d];
		full = randf(n, &rng, 4);
		dir = t_tmpdir("compare");
		len += (size_t)snprintf(attr, sizeof(attr), "{\"threadMode\": false, "
					"\"slice_instance_num\": %u, \"outputCutList\": [[", parts);
		for (uint32_t d = 0; d < rank[1]; d++)
			len += (size_t)snprintf(attr + len, sizeof(attr) - len, "%s%d", d ? ", " : "",
						d == axis ? (int)parts : 1);
		snprintf(attr + len, sizeof(attr) - len, "]]}");
		{
			const float *g[2] = { &one, full };

			ffts_write("golden", "Conv2D.cut.1.2.1764590000000010", 1, 2, rank, whole, g,
				   NULL);
		}
		for (uint32_t k = 0; k < parts; k++) {
			float *slice = malloc(outer * along[k] * inner * sizeof(float));
			const float *m[2] = { &one, slice };

			ck_assert_ptr_nonnull(slice);
			for (uint64_t o = 0; o < outer; o++)
				memcpy(slice + o * along[k] * inner,
				       full + (o * whole[1][axis] + at) * inner,
				       along[k] * inner * sizeof(float));
			memcpy(part, whole, sizeof(part));
			part[1][axis] = along[k];
			snprintf(name, sizeof(name), "Conv2D.cut_lxslice%u.1.2.1764590000000010.4.0.0.0",
				 k);
			ffts_write("my", name, 1, 2, rank, part, m, attr);
			at += along[k];
			free(slice);
		}
		c = run_compare(&cfg);
		r = find_row(c, "cut:output:0");
		ck_assert_msg(!strcmp(cell(c, r, "MaxAbsoluteError"), "0.000000"),
			      "round %d: rank %u, axis %u, %u parts: max abs %s", round, rank[1], axis,
			      parts, cell(c, r, "MaxAbsoluteError"));
		adump_compare_close(c);
		free(full);
		t_rmtree(dir);
		free(dir);
	}
}
END_TEST

START_TEST(test_open_errors)
{
	struct adump_compare *c = NULL;
	char msg[1024], path[4096];

	dir = t_tmpdir("compare");
	snprintf(path, sizeof(path), "%s/empty", dir);
	mkdir(path, 0755);
	ck_assert_int_eq(adump_compare_open(NULL, path, path, &c, msg, sizeof(msg)),
			 -ADUMP_ERR_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(msg, "no dump files"));
	snprintf(path, sizeof(path), "%s/missing", dir);
	ck_assert_int_eq(adump_compare_open(NULL, path, path, &c, msg, sizeof(msg)), -ENOENT);
	ck_assert_ptr_null(c);
	t_rmtree(dir);
	free(dir);
}
END_TEST


/* ---- statistics dumps (content=stats): msprobe's summary mode ------------------------------ */

#define STATS_HEAD "Input/Output,Index,Data Size,Data Type,Format,Shape,Count,Max Value,Min Value," \
		   "Avg Value,l2norm\n"

static void stats_write(const char *side, const char *name, const char *rows)
{
	char path[4096], *text;

	snprintf(path, sizeof(path), "%s/%s", dir, side);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/Add.%s.1.2.100.csv", dir, side, name);
	ck_assert_int_ge(asprintf(&text, STATS_HEAD "%s", rows), 0);
	ck_assert_int_eq(write_text(path, text), 0);
	free(text);
}

/* Python's str() of the relative error of @n against @b, '%' appended: what msprobe writes. */
static void check_stat_cells(const struct adump_compare *c, int row, const char *stat,
			     double n, double b)
{
	char col[64];
	const char *d, *r;
	double want = n - b, got;

	snprintf(col, sizeof(col), "%s diff", stat);
	d = cell(c, row, col);
	snprintf(col, sizeof(col), "%sRelativeErr", !strcmp(stat, "L2norm") ? "Norm" : stat);
	r = cell(c, row, col);
	got = strtod(d, NULL);
	ck_assert_msg(got == want, "%s diff %s, want %.17g", stat, d, want);
	got = strtod(r, NULL);
	ck_assert_msg(r[strlen(r) - 1] == '%', "%s rel %s", stat, r);
	ck_assert_msg(got == fabs(want / b * 100.0), "%s rel %s, want %.17g", stat, r,
		      fabs(want / b * 100.0));
}

/* One float32 dump <dir>/<side>/MatMul.<name>.1.2.<ts>: input 0 and output 0 of @n values;
 * @module, when set, the header's `module` attribute (adump.torch at level="op"). */
static void verdict_write(const char *side, const char *name, uint64_t ts, const char *module,
			  const float *in, const float *out, uint32_t n)
{
	struct adump_attr at = { .name = "module", .value = module };
	uint64_t dims[1] = { n };
	struct adump_tensor t[2] = { rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 1, dims, n * 4),
				     rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, 1, dims, n * 4) };
	struct adump_op op = { .op_type = "MatMul", .op_name = name, .task_id = 1, .stream_id = 2,
			       .timestamp_us = ts, .tensor_count = 2, .tensors = t,
			       .attr_count = module ? 1 : 0, .attrs = &at };
	const void *data[2] = { in, out };
	char path[4096];
	size_t len;
	void *buf = rt_dump_mem(&op, data, &len);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, side);
	mkdir(path, 0755);
	/* msaccucmp reads a timestamp of 16 digits only. */
	snprintf(path, sizeof(path), "%s/%s/MatMul.%s.1.2.%llu", dir, side, name,
		 (unsigned long long)(1700000000000000ull + ts));
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

/* Issue 22: NaN/Inf are divergences (whatever the cosine), the first divergent row is the
 * first not-pass verdict in execution order, the module is named beside the op, and the
 * CSV stays msaccucmp's but for the NaN/Inf reason. */
START_TEST(test_verdicts)
{
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare_summary s;
	const struct adump_compare_row *row;
	struct adump_compare *c;
	float x[64], noisy[64], nan_out[64], small[64], small2[64];
	char *text = NULL, msg[512];
	size_t len = 0;
	FILE *f;
	int r;

	for (int i = 0; i < 64; i++) {
		x[i] = (float)(i % 7) - 3.0f + 0.25f * (float)i;
		noisy[i] = x[i] * (1.0f + (i % 2 ? 0.003f : -0.003f));
		nan_out[i] = x[i];
		small[i] = x[i] * 1e-8f;
		small2[i] = x[i] * 1.5e-8f;
	}
	nan_out[5] = NAN;
	dir = t_tmpdir("compare");
	/* Execution order: clean (100), noise (200: cosine 0.99999, msaccucmp sees nothing),
	 * NaN (300, in a module), tiny values 1.5x (400). */
	for (int s2 = 0; s2 < 2; s2++) {
		const char *side = s2 ? "golden" : "my";

		verdict_write(side, "clean", 100, NULL, x, x, 64);
		verdict_write(side, "noise", 200, NULL, x, s2 ? x : noisy, 64);
		verdict_write(side, "nan", 300, "Module.layers.1.linear1.Linear.forward.0", x,
			      s2 ? x : nan_out, 64);
		verdict_write(side, "tiny", 400, NULL, x, s2 ? small2 : small, 64);
	}
	c = run_compare(&cfg);
	adump_compare_summary_get(c, &s);
	ck_assert_int_eq(s.exit_code, ADUMP_COMPARE_EXIT_NONFINITE);
	ck_assert_uint_eq(s.nonfinite_count, 1);

	r = find_row(c, "clean:output:0");
	ck_assert_int_eq(adump_compare_row(c, (uint64_t)r)->verdict, ADUMP_COMPARE_PASS);
	ck_assert_str_eq(adump_compare_row(c, (uint64_t)r)->reason, "");

	r = find_row(c, "noise:output:0");
	row = adump_compare_row(c, (uint64_t)r);
	ck_assert(row->cosine > 0.99);
	ck_assert_int_eq(row->verdict, ADUMP_COMPARE_ERROR);
	ck_assert_msg(strstr(row->reason, "max abs error / max |ground truth|"), "%s", row->reason);
	ck_assert_str_eq(cell(c, r, "CompareFailReason"), "");
	ck_assert_msg(s.first_divergent_row == r, "first divergent %lld: %s %s",
		      (long long)s.first_divergent_row,
		      adump_compare_row(c, (uint64_t)s.first_divergent_row)->tensor_id,
		      adump_compare_row(c, (uint64_t)s.first_divergent_row)->reason);

	r = find_row(c, "nan:output:0");
	row = adump_compare_row(c, (uint64_t)r);
	ck_assert_int_eq(s.first_nonfinite_row, r);
	ck_assert_int_eq(row->verdict, ADUMP_COMPARE_ERROR);
	ck_assert_str_eq(row->module, "Module.layers.1.linear1.Linear.forward.0");
	ck_assert_uint_eq(row->metrics.nan_count[0], 1);
	ck_assert_uint_eq(row->metrics.nan_count[1], 0);
	ck_assert_uint_eq(row->metrics.first_nonfinite_diff, 5);
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "nan");
	ck_assert_str_eq(cell(c, r, "CompareFailReason"),
			 "NaN/Inf differ at 1 elements, the first at index 5 (my output: 1 NaN, "
			 "0 Inf; ground truth: 0 NaN, 0 Inf)");
	ck_assert_ptr_null(adump_compare_row(c, (uint64_t)find_row(c, "noise:input:0"))->module);

	r = find_row(c, "tiny:output:0");
	row = adump_compare_row(c, (uint64_t)r);
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "1.000000");
	ck_assert_int_eq(row->verdict, ADUMP_COMPARE_ERROR);
	ck_assert(fabs(row->metrics.scaled_error - 1.0 / 3.0) < 1e-5);

	/* The advisor names the NaN first, with its module, never "All data ... meets". */
	f = open_memstream(&text, &len);
	ck_assert_int_eq(adump_compare_write_advice(c, f), 0);
	fclose(f);
	ck_assert_msg(strstr(text, "Detection Type: NaN/Inf\nOperator Index: 2\n") &&
		      strstr(text, "Operator Name: nan (in module "
				   "Module.layers.1.linear1.Linear.forward.0)\n"), "%s", text);
	ck_assert_ptr_null(strstr(text, "meets the accuracy requirements"));
	free(text);
	adump_compare_close(c);

	/* Looser limits: the noise passes, the NaN still fails (no limit turns it off). */
	cfg.thresholds = "scaled=1,scaled_warning=1,cosine_warning=0.99";
	c = run_compare(&cfg);
	adump_compare_summary_get(c, &s);
	ck_assert_int_eq(adump_compare_row(c, (uint64_t)find_row(c, "noise:output:0"))->verdict,
			 ADUMP_COMPARE_PASS);
	ck_assert_int_eq(s.first_divergent_row, find_row(c, "nan:output:0"));
	ck_assert_int_eq(s.exit_code, ADUMP_COMPARE_EXIT_NONFINITE);
	adump_compare_close(c);

	/* Limits that do not parse: the open fails naming the key. */
	cfg.thresholds = "cosine=0.9,float16.bogus=2";
	snprintf(msg, sizeof(msg), "%s/my", dir);
	{
		char golden[4096];

		snprintf(golden, sizeof(golden), "%s/golden", dir);
		ck_assert_int_eq(adump_compare_open(&cfg, msg, golden, &c, msg, sizeof(msg)),
				 -ADUMP_ERR_CONFIG);
	}
	ck_assert_msg(strstr(msg, "float16.bogus"), "%s", msg);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* The limits parser: keys alone or per class, values checked. */
START_TEST(test_thresholds_parse)
{
	struct adump_compare_thresholds t;
	char msg[256];

	ck_assert_int_eq(adump_compare_thresholds_parse(&t, NULL, msg, sizeof(msg)), 0);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_INTEGER].max_abs == 0);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_FLOAT16].scaled > t.of[ADUMP_COMPARE_CLASS_FLOAT32].scaled);
	ck_assert_int_eq(adump_compare_thresholds_parse(&t, "cosine=0.5, bfloat16.scaled=0.2",
							msg, sizeof(msg)), 0);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_FLOAT32].cosine == 0.5);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_BFLOAT16].cosine == 0.5);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_INTEGER].cosine == -1);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_BFLOAT16].scaled == 0.2);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_FLOAT32].scaled == 1e-3);
	ck_assert_int_eq(adump_compare_thresholds_parse(&t, "cosine=1.5", msg, sizeof(msg)),
			 -ADUMP_ERR_CONFIG);
	ck_assert_msg(strstr(msg, "cosine"), "%s", msg);
	ck_assert_int_eq(adump_compare_thresholds_parse(&t, "max_abs", msg, sizeof(msg)),
			 -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_compare_thresholds_parse(&t, "scaled=nan", msg, sizeof(msg)),
			 -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_compare_thresholds_parse(&t, "int.max_abs=1", msg, sizeof(msg)),
			 -ADUMP_ERR_CONFIG);
	ck_assert_msg(strstr(msg, "int.max_abs"), "%s", msg);
	ck_assert_int_eq(adump_compare_class_of(ADUMP_DT_FLOAT, ADUMP_DT_BF16),
			 ADUMP_COMPARE_CLASS_BFLOAT16);
	ck_assert_int_eq(adump_compare_class_of(ADUMP_DT_INT32, ADUMP_DT_INT64),
			 ADUMP_COMPARE_CLASS_INTEGER);
	ck_assert_int_eq(adump_compare_class_of(ADUMP_DT_INT32, ADUMP_DT_FLOAT),
			 ADUMP_COMPARE_CLASS_FLOAT32);
	{
		struct adump_compare_row row = { .op_name = "Module_a_b_Linear_forward_0",
						 .module = "Module.a.b.Linear.forward.0" };

		ck_assert(adump_compare_is_self(&row));
		row.module = "Module.a.c.Linear.forward.0";
		ck_assert(!adump_compare_is_self(&row));
		row.module = "Module.a.b.Linear.forward.00";
		ck_assert(!adump_compare_is_self(&row));
		row.module = NULL;
		ck_assert(!adump_compare_is_self(&row));
	}
}
END_TEST

START_TEST(test_stats_values)
{
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare_summary s;
	struct adump_compare *c;
	char *text = NULL, ***rows;
	size_t len = 0, nrows = 0, ncols = 0;
	FILE *f;
	int r;

	dir = t_tmpdir("compare");
	/* Input 0: plain numbers; input 1: NaN and infinities; output 0: NA and a NaN l2norm;
	 * output 1: values whose differences are not round. */
	stats_write("my", "a", "Input,0,24,DT_FLOAT,ND,2x3,6,3,-1,0.5,4\n"
		    "Input,1,24,DT_FLOAT,ND,2x3,6,nan,-inf,inf,5\n"
		    "Output,0,24,DT_FLOAT,ND,2x3,6,1.5,0,NA,2\n"
		    "Output,1,24,DT_FLOAT,ND,2x3,6,0.1234567,-7.25,1e-05,123456.789\n");
	stats_write("golden", "a", "Input,0,24,DT_FLOAT,ND,2x3,6,2,-1,0.25,0\n"
		    "Input,1,24,DT_FLOAT,ND,2x3,6,1,-inf,1,5\n"
		    "Output,0,24,DT_FLOAT,ND,2x3,6,1.5,2,0.5,nan\n"
		    "Output,1,24,DT_FLOAT,ND,2x3,6,0.1,-7,3e-05,123456.7\n");
	cfg.has_msprobe = true;         /* ignored: statistics mode has its own columns */
	c = run_compare(&cfg);
	ck_assert_uint_eq(adump_compare_row_count(c), 4);
	ck_assert_str_eq(adump_compare_column(c, 10), "Max diff");
	ck_assert_str_eq(adump_compare_column(c, adump_compare_column_count(c) - 2), "Result");
	ck_assert_str_eq(adump_compare_column(c, adump_compare_column_count(c) - 1),
			 "CompareFailReason");
	ck_assert_uint_eq(adump_compare_column_count(c), 10 + 17 + 1);

	r = find_row(c, "a:input:0");
	ck_assert_str_eq(cell(c, r, "Max diff"), "1.0");
	ck_assert_str_eq(cell(c, r, "MaxRelativeErr"), "50.0%");
	ck_assert_str_eq(cell(c, r, "Min diff"), "0");
	ck_assert_str_eq(cell(c, r, "MinRelativeErr"), "0%");
	ck_assert_str_eq(cell(c, r, "Mean diff"), "0.25");
	ck_assert_str_eq(cell(c, r, "MeanRelativeErr"), "100.0%");
	ck_assert_str_eq(cell(c, r, "L2norm diff"), "4.0");
	ck_assert_str_eq(cell(c, r, "NormRelativeErr"), "inf");          /* Bench 0 */
	ck_assert_str_eq(cell(c, r, "NPU max"), "3");
	ck_assert_str_eq(cell(c, r, "Bench l2norm"), "0");
	ck_assert_str_eq(cell(c, r, "Result"), "Warning");               /* |4| / 4 > 0.5 */
	ck_assert_str_eq(cell(c, r, "CompareFailReason"), "Need double check api accuracy.");
	ck_assert_str_eq(cell(c, r, "DataType"), "float32");
	ck_assert_str_eq(cell(c, r, "Shape"), "[2,3]");
	ck_assert(adump_compare_row(c, (uint64_t)r)->is_compared);

	r = find_row(c, "a:input:1");
	ck_assert_str_eq(cell(c, r, "Max diff"), "Nan");
	ck_assert_str_eq(cell(c, r, "MaxRelativeErr"), "Nan");
	ck_assert_str_eq(cell(c, r, "Min diff"), "0");                   /* -inf both */
	ck_assert_str_eq(cell(c, r, "Mean diff"), "inf");
	ck_assert_str_eq(cell(c, r, "MeanRelativeErr"), "inf");
	ck_assert_str_eq(cell(c, r, "L2norm diff"), "0");
	ck_assert_str_eq(cell(c, r, "NPU max"), "nan");
	ck_assert_str_eq(cell(c, r, "NPU mean"), "inf");
	/* msprobe leaves Result empty here (inf/inf is no number); a NaN max where the bench's
	 * is 1 is a divergence (issue 22), and the reason says which statistic. */
	ck_assert_str_eq(cell(c, r, "Result"), "Warning");
	ck_assert_str_eq(cell(c, r, "CompareFailReason"),
			 "Need double check api accuracy.,max differs: nan vs 1");
	ck_assert_int_eq(adump_compare_row(c, (uint64_t)r)->verdict, ADUMP_COMPARE_ERROR);

	r = find_row(c, "a:output:0");
	ck_assert_str_eq(cell(c, r, "Min diff"), "-2.0");
	ck_assert_str_eq(cell(c, r, "MinRelativeErr"), "100.0%");
	ck_assert_str_eq(cell(c, r, "Mean diff"), "N/A");
	ck_assert_str_eq(cell(c, r, "MeanRelativeErr"), "N/A");
	ck_assert_str_eq(cell(c, r, "NPU mean"), "N/A");
	ck_assert_str_eq(cell(c, r, "Bench mean"), "0.5");
	ck_assert_str_eq(cell(c, r, "L2norm diff"), "Nan");
	ck_assert_str_eq(cell(c, r, "Result"), "Warning");

	r = find_row(c, "a:output:1");
	check_stat_cells(c, r, "Max", 0.1234567, 0.1);
	check_stat_cells(c, r, "Min", -7.25, -7);
	check_stat_cells(c, r, "Mean", 1e-05, 3e-05);
	check_stat_cells(c, r, "L2norm", 123456.789, 123456.7);
	/* Python's str() of the same numbers (python3 -c 'print(0.1234567 - 0.1)' ...). */
	ck_assert_str_eq(cell(c, r, "Max diff"), "0.023456699999999997");
	ck_assert_str_eq(cell(c, r, "Mean diff"), "-1.9999999999999998e-05");
	ck_assert_str_eq(cell(c, r, "MeanRelativeErr"), "66.66666666666666%");
	ck_assert_str_eq(cell(c, r, "L2norm diff"), "0.08900000000721775");
	ck_assert_str_eq(cell(c, r, "Result"), "Warning");              /* mean: 2e-5 / 3e-5 */

	adump_compare_summary_get(c, &s);
	ck_assert_uint_eq(s.matched_count, 1);
	ck_assert_uint_eq(s.tensor_count, 4);
	/* input:1's NaN max against a finite one: the NaN/Inf status, and the first
	 * divergent row in execution order is input:0 (its mean differs: a warning). */
	ck_assert_int_eq(s.exit_code, ADUMP_COMPARE_EXIT_NONFINITE);
	ck_assert_int_eq(s.first_nonfinite_row, find_row(c, "a:input:1"));
	ck_assert_int_eq(s.first_divergent_row, find_row(c, "a:input:0"));
	ck_assert_uint_eq(s.nonfinite_count, 1);

	/* The result CSV read back: the same cells. */
	f = open_memstream(&text, &len);
	ck_assert_int_eq(adump_compare_write_csv(c, f), 0);
	fclose(f);
	rows = csv_parse(text, &nrows, &ncols);
	ck_assert_uint_eq(nrows, 5);
	ck_assert_uint_eq(ncols, adump_compare_column_count(c));
	for (size_t i = 0; i < ncols; i++)
		ck_assert_str_eq(rows[0][i], adump_compare_column(c, (uint32_t)i));
	for (size_t k = 1; k < nrows; k++)
		for (size_t i = 0; i < ncols; i++)
			ck_assert_str_eq(rows[k][i], adump_compare_row(c, k - 1)->cells[i]);
	for (size_t k = 0; k < nrows; k++) {
		for (size_t i = 0; i < ncols; i++)
			free(rows[k][i]);
		free(rows[k]);
	}
	free(rows);
	free(text);
	adump_compare_close(c);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_stats_matching)
{
	uint64_t rng = t_seed() + 7, dims[1] = { 16 };
	float *a = randf(16, &rng, 2);
	const float *in[1] = { a };
	struct adump_compare *c;
	struct adump_compare_summary s;
	char path[4096];
	int r;

	dir = t_tmpdir("compare");
	stats_write("my", "ok", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n");
	stats_write("golden", "ok", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n");
	/* Only on my side. */
	stats_write("my", "lone", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n");
	/* Input counts differ, outputs agree: the outputs are still compared. */
	stats_write("my", "cnt", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n"
		    "Input,1,4,DT_FLOAT,ND,1,1,1,1,1,1\nOutput,0,4,DT_FLOAT,ND,1,1,2,2,2,2\n");
	stats_write("golden", "cnt", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n"
		    "Output,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n");
	/* Both counts differ: one row with both messages. */
	stats_write("my", "both", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n"
		    "Input,1,4,DT_FLOAT,ND,1,1,1,1,1,1\n");
	stats_write("golden", "both", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n"
		    "Output,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n");
	/* Statistics on one side, tensors on the other. */
	dump_write("my", "mixed", 100, 1, in, dims, 0, NULL, dims, 1);
	stats_write("golden", "mixed", "Input,0,64,DT_FLOAT,ND,16,16,1,1,1,1\n");
	/* Not a statistics file. */
	snprintf(path, sizeof(path), "%s/my/Add.bad.1.2.100.csv", dir);
	ck_assert_int_eq(write_text(path, "hello,world\n1,2\n"), 0);
	stats_write("golden", "bad", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n");

	c = run_compare(NULL);
	ck_assert_str_eq(adump_compare_column(c, 10), "Max diff");
	r = find_row(c, "ok:input:0");
	ck_assert_str_eq(cell(c, r, "Max diff"), "0");
	ck_assert_str_eq(cell(c, r, "CompareFailReason"), "");
	ck_assert_int_lt(find_row(c, "cnt:input:0"), 0);
	r = find_row(c, "cnt:output:0");
	ck_assert_str_eq(cell(c, r, "Max diff"), "1.0");
	ck_assert_str_eq(cell(c, r, "MaxRelativeErr"), "100.0%");
	for (uint64_t i = 0; i < adump_compare_row_count(c); i++) {
		const struct adump_compare_row *row = adump_compare_row(c, i);
		const char *why = row->cells[adump_compare_column_count(c) - 1];

		if (!strcmp(row->op_name, "lone"))
			ck_assert_str_eq(why, "[lone] There is no the ground truth dump file for the "
					 "op \"lone\".");
		else if (!strcmp(row->op_name, "both"))
			ck_assert_str_eq(why, "[both] The number of input does not match (2 vs 1).,"
					 "[both] The number of output does not match (0 vs 1).");
		else if (!strcmp(row->op_name, "mixed"))
			ck_assert_str_eq(why, "[mixed] The ground truth is a statistics dump and my "
					 "output a tensor dump: they cannot be compared.");
		else if (!strcmp(row->op_name, "bad"))
			ck_assert_msg(strstr(why, "no \"Input/Output\" column"), "%s", why);
		else
			continue;
		ck_assert(!row->is_compared);
		ck_assert_str_eq(row->cells[10], "NaN");
	}
	adump_compare_summary_get(c, &s);
	ck_assert_uint_eq(s.op_count, 6);
	ck_assert_uint_eq(s.my_only_count, 1);
	ck_assert_uint_eq(s.tensor_count, 2);
	ck_assert_uint_eq(s.failed_count, 4);
	adump_compare_close(c);

	/* With tensor dumps on both sides for one op, the comparison is of tensors: the
	 * statistics ops get a message, the tensor op is compared. */
	dump_write("golden", "tens", 100, 1, in, dims, 0, NULL, dims, 1);
	dump_write("my", "tens", 100, 1, in, dims, 0, NULL, dims, 1);
	c = run_compare(NULL);
	ck_assert_str_eq(adump_compare_column(c, 10), "CosineSimilarity");
	r = find_row(c, "tens:input:0");
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "1.000000");
	for (uint64_t i = 0; i < adump_compare_row_count(c); i++) {
		const struct adump_compare_row *row = adump_compare_row(c, i);

		if (!strcmp(row->op_name, "ok"))
			ck_assert_str_eq(row->cells[adump_compare_column_count(c) - 1],
					 "[ok] Both sides are statistics dumps, but other ops are "
					 "tensor dumps: compare statistics dumps on their own.");
	}
	adump_compare_close(c);
	free(a);
	t_rmtree(dir);
	free(dir);
}
END_TEST


/* A content=stats capture of the capture helpers' Add workload into <dir>/<side>. */
static void stats_capture(const char *side, uint64_t seed)
{
	struct t_workload wl = { .stream_count = 1, .op_count = 5, .min_bytes = 64,
				 .max_bytes = 16384, .chunk_bytes = 4000, .seed = seed };
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	char root[4096];

	snprintf(root, sizeof(root), "%s/%s", dir, side);
	cfg.dump_path = root;
	cfg.time_dir = "20260104000000";
	cfg.content = ADUMP_CONTENT_STATS;
	cfg.stats_mask = ADUMP_STAT_ALL;
	cfg.chunk_bytes = wl.chunk_bytes;
	cfg.stream_max = 1;
	cfg.worker_count = 1;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(t_workload_run(s, &wl), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	t_workload_free(&wl);
}

START_TEST(test_stats_capture)
{
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare_summary s;
	struct adump_compare *c;
	uint64_t seed = t_seed();

	dir = t_tmpdir("compare");
	stats_capture("my", seed);
	stats_capture("golden", seed);
	cfg.is_recursive = true;
	c = run_compare(&cfg);
	adump_compare_summary_get(c, &s);
	ck_assert_uint_eq(s.matched_count, 5);
	ck_assert_uint_eq(s.failed_count, 0);
	ck_assert_uint_eq(s.tensor_count, 5 * 3);       /* self, other, out */
	ck_assert_int_eq(s.exit_code, 0);
	for (uint64_t i = 0; i < adump_compare_row_count(c); i++) {
		static const char *const stat[] = { "max", "min", "mean", "l2norm" };
		static const char *const diff[] = { "Max diff", "Min diff", "Mean diff", "L2norm diff" };
		int r = (int)i;

		for (int k = 0; k < 4; k++) {
			char npu[32], bench[32];

			snprintf(npu, sizeof(npu), "NPU %s", stat[k]);
			snprintf(bench, sizeof(bench), "Bench %s", stat[k]);
			ck_assert_str_ne(cell(c, r, npu), "N/A");
			ck_assert_str_eq(cell(c, r, npu), cell(c, r, bench));
			ck_assert_str_eq(cell(c, r, diff[k]), "0");
		}
		ck_assert_str_eq(cell(c, r, "Result"), "");
		ck_assert_str_eq(cell(c, r, "CompareFailReason"), "");
	}
	adump_compare_close(c);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* The metric tests once more on the portable kernels. */
static void scalar_setup(void)
{
	adump_compare_simd_set(false);
}

static void scalar_teardown(void)
{
	adump_compare_simd_set(true);
}

/* ... and on AVX2 where the processor has AVX-512 (the same as metrics elsewhere). */
static void avx2_setup(void)
{
	adump_compare_avx512_set(false);
}

static void avx2_teardown(void)
{
	adump_compare_avx512_set(true);
}

int main(void)
{
	Suite *s = suite_create("compare");
	TCase *tc = tcase_create("metrics");
	TCase *ts = tcase_create("metrics_scalar");
	TCase *ta = tcase_create("metrics_avx2");
	TCase *td = tcase_create("dirs");

	tcase_set_timeout(tc, 60);
	tcase_set_timeout(td, 60);
	tcase_add_test(tc, test_metrics_random);
	tcase_add_test(tc, test_metrics_edges);
	tcase_add_test(tc, test_metrics_dtypes);
	tcase_add_test(tc, test_alg_parse);
	tcase_add_test(tc, test_to_float_simd);
	tcase_set_timeout(ts, 60);
	tcase_add_checked_fixture(ts, scalar_setup, scalar_teardown);
	tcase_add_test(ts, test_metrics_random);
	tcase_add_test(ts, test_metrics_edges);
	tcase_add_test(ts, test_metrics_dtypes);
	suite_add_tcase(s, ts);
	tcase_set_timeout(ta, 60);
	tcase_add_checked_fixture(ta, avx2_setup, avx2_teardown);
	tcase_add_test(ta, test_metrics_random);
	tcase_add_test(ta, test_metrics_dtypes);
	tcase_add_test(ta, test_kl_identical_skip);
	suite_add_tcase(s, ta);
	tcase_add_test(td, test_identical_dirs);
	tcase_add_test(td, test_kl_identical_skip);
	tcase_add_test(td, test_matching);
	tcase_add_test(td, test_ffts_names);
	tcase_add_test(td, test_ffts_merge);
	tcase_add_test(td, test_ffts_merge_random);
	tcase_add_test(td, test_open_errors);
	tcase_add_test(td, test_stats_values);
	tcase_add_test(td, test_verdicts);
	tcase_add_test(td, test_thresholds_parse);
	tcase_add_test(td, test_stats_matching);
	tcase_add_test(td, test_stats_capture);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, td);
	return t_run_suite(s);
}
