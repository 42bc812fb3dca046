/* SPDX-License-Identifier: Apache-2.0 */
/* adump compare's metrics: every algorithm against an independent float64 computation on random
 * and edge data (NaN/Inf on one side and both, zeros, scalars, bool, float16, bfloat16, int32,
 * int64, empty, length mismatch), on the portable kernels, the AVX2 and the AVX-512 ones; the
 * conversion to float32, the algorithm list, and KL's second pass skipped only for the same
 * bytes. Op matching is in test_compare_match.c, FFTS+ subtask dumps in test_compare_ffts.c,
 * statistics dumps in test_compare_stats.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

#include "adump/compare.h"
#include "compare_helpers.h"

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
	tcase_add_test(td, test_kl_identical_skip);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, td);
	return t_run_suite(s);
}
