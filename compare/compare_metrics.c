/* SPDX-License-Identifier: Apache-2.0 */
/* The arithmetic of `adump compare`: msaccucmp's ten algorithms and msprobe's tensor metrics,
 * accumulated chunk by chunk over float32 values (both sides are cast to float32 first, as
 * msaccucmp does) with float64 sums, and printed the way msaccucmp prints them. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/compare_int.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

static bool has_avx2(void);

static const char *const alg_names[ADUMP_COMPARE_ALG_COUNT] = {
	"CosineSimilarity",          "MaxAbsoluteError",  "AccumulatedRelativeError",
	"RelativeEuclideanDistance", "KullbackLeiblerDivergence", "StandardDeviation",
	"MeanAbsoluteError",         "RootMeanSquareError",       "MaxRelativeError",
	"MeanRelativeError",
};

const char *adump_compare_alg_name(enum adump_compare_alg alg)
{
	return (unsigned)alg < ADUMP_COMPARE_ALG_COUNT ? alg_names[alg] : NULL;
}

uint32_t adump_compare_elem_bytes(int32_t dtype)
{
	switch (dtype) {
	case ADUMP_DT_INT8:
	case ADUMP_DT_UINT8:
	case ADUMP_DT_BOOL:
		return 1;
	case ADUMP_DT_FLOAT16:
	case ADUMP_DT_BF16:
	case ADUMP_DT_INT16:
	case ADUMP_DT_UINT16:
		return 2;
	case ADUMP_DT_FLOAT:
	case ADUMP_DT_INT32:
	case ADUMP_DT_UINT32:
		return 4;
	case ADUMP_DT_DOUBLE:
	case ADUMP_DT_INT64:
	case ADUMP_DT_UINT64:
		return 8;
	default:
		return 0;
	}
}

const char *adump_compare_dtype_name(int32_t dtype)
{
	switch (dtype) {
	case ADUMP_DT_FLOAT: return "float32";
	case ADUMP_DT_FLOAT16: return "float16";
	case ADUMP_DT_DOUBLE: return "float64";
	case ADUMP_DT_INT8: return "int8";
	case ADUMP_DT_INT16: return "int16";
	case ADUMP_DT_INT32: return "int32";
	case ADUMP_DT_INT64: return "int64";
	case ADUMP_DT_UINT8: return "uint8";
	case ADUMP_DT_UINT16: return "uint16";
	case ADUMP_DT_UINT32: return "uint32";
	case ADUMP_DT_UINT64: return "uint64";
	case ADUMP_DT_BOOL: return "bool";
	case ADUMP_DT_COMPLEX64: return "complex64";
	case ADUMP_DT_COMPLEX128: return "complex128";
	case ADUMP_DT_BF16: return "bfloat16";
	case ADUMP_DT_UINT1: return "uint1";
	case ADUMP_DT_UNDEFINED: return "int8";
	case ADUMP_DT_RESOURCE: return "int64";
	case ADUMP_DT_FLOAT8_E4M3FN: return "float8_e4m3fn";
	case ADUMP_DT_HIFLOAT8: return "hifloat8";
	case ADUMP_DT_FLOAT8_E5M2: return "float8_e5m2";
	default: return "NaN";
	}
}

#define CONVERT(type, expr)                                   \
	do {                                                  \
		const unsigned char *p = raw;                 \
		for (size_t i = 0; i < n; i++, p += sizeof(type)) { \
			type v;                               \
			memcpy(&v, p, sizeof(v));             \
			out[i] = (expr);                      \
		}                                             \
	} while (0)

/* float16 -> float32 by table: the reader's conversion, looked up instead of recomputed. */
static float half_table[1 << 16];
static pthread_once_t half_once = PTHREAD_ONCE_INIT;

static void half_table_fill(void)
{
	for (uint32_t h = 0; h < (1u << 16); h++)
		half_table[h] = adump_half_to_float((uint16_t)h);
}

#if defined(__x86_64__)
/* float16 and int32 eight at a time; return how many were converted (the rest is left to the
 * portable loops). vcvtph2ps is exact, as the table is; vcvtdq2ps rounds to nearest, as the
 * C conversion does. */
__attribute__((target("avx2,f16c"))) static size_t half_run_f16c(const void *raw, size_t n, float *out)
{
	const unsigned char *p = raw;
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * i))));
	return i;
}

__attribute__((target("avx2"))) static size_t int32_run_avx2(const void *raw, size_t n, float *out)
{
	const unsigned char *p = raw;
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(out + i, _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(p + 4 * i))));
	return i;
}
#endif

void adump_compare_to_float(int32_t dtype, const void *raw, size_t n, float *out)
{
#if defined(__x86_64__)
	if ((dtype == ADUMP_DT_FLOAT16 || dtype == ADUMP_DT_INT32) && has_avx2()) {
		size_t done = dtype == ADUMP_DT_FLOAT16 ? half_run_f16c(raw, n, out)
							: int32_run_avx2(raw, n, out);
		size_t eb = dtype == ADUMP_DT_FLOAT16 ? 2 : 4;

		raw = (const unsigned char *)raw + done * eb;
		out += done;
		n -= done;
	}
#endif
	switch (dtype) {
	case ADUMP_DT_FLOAT:
		memcpy(out, raw, n * sizeof(float));
		break;
	case ADUMP_DT_FLOAT16:
		pthread_once(&half_once, half_table_fill);
		CONVERT(uint16_t, half_table[v]);
		break;
	case ADUMP_DT_BF16:
		CONVERT(uint16_t, adump_bf16_to_float(v));
		break;
	case ADUMP_DT_DOUBLE:
		CONVERT(double, (float)v);
		break;
	case ADUMP_DT_INT8:
		CONVERT(int8_t, (float)v);
		break;
	case ADUMP_DT_UINT8:
		CONVERT(uint8_t, (float)v);
		break;
	case ADUMP_DT_BOOL:
		CONVERT(uint8_t, v ? 1.0f : 0.0f);
		break;
	case ADUMP_DT_INT16:
		CONVERT(int16_t, (float)v);
		break;
	case ADUMP_DT_UINT16:
		CONVERT(uint16_t, (float)v);
		break;
	case ADUMP_DT_INT32:
		CONVERT(int32_t, (float)v);
		break;
	case ADUMP_DT_UINT32:
		CONVERT(uint32_t, (float)v);
		break;
	case ADUMP_DT_INT64:
		CONVERT(int64_t, (float)v);
		break;
	case ADUMP_DT_UINT64:
		CONVERT(uint64_t, (float)v);
		break;
	default:
		memset(out, 0, n * sizeof(float));
		break;
	}
}

/* ---- accumulation ------------------------------------------------------------------------ */

/* float64 machine epsilon: msaccucmp's FLOAT_EPSILON, compared against float32 data. */
#define EPS64 2.220446049250313e-16
#define EPS32 1.1920929e-07
#define MINIMUM_VALUE 0.001

/* A sum kept as value + compensation (Neumaier): each chunk's plain float64 sum goes in here,
 * so the error stays at a chunk's worth of float64 rounding whatever the tensor's length. */
static void ksum_add(struct adump_compare_ksum *k, double v)
{
	double t = k->sum + v;

	/* Once infinite or NaN the compensation means nothing (inf - inf would make it NaN). */
	if (!isfinite(t)) {
		k->sum = t;
		k->comp = 0;
		return;
	}
	if (fabs(k->sum) >= fabs(v))
		k->comp += (k->sum - t) + v;
	else
		k->comp += (v - t) + k->sum;
	k->sum = t;
}

static double ksum_get(const struct adump_compare_ksum *k)
{
	return isfinite(k->sum) ? k->sum + k->comp : k->sum;
}

/* max that keeps a NaN once seen, as numpy's max does. */
static inline double nanmax(double m, double v)
{
	return (v > m || v != v) && m == m ? v : m;
}

static inline double nanmin(double m, double v)
{
	return (v < m || v != v) && m == m ? v : m;
}

void adump_compare_acc_init(struct adump_compare_acc *a)
{
	memset(a, 0, sizeof(*a));
	a->max_abs = -INFINITY;
	a->max_rel = -INFINITY;
	a->max_abs_x = -INFINITY;
	a->fin_max_abs = -INFINITY;
	for (int s = 0; s < 2; s++) {
		a->min[s] = INFINITY;
		a->max[s] = -INFINITY;
	}
}

/* The chunk kernel works on LANES independent partial results at a time, so the compiler can
 * keep them in vector registers without reordering any one sum; NaNs are counted apart and
 * restored at the end, which keeps the maxima branch-free. */
#define LANES 8

struct lanes {
	double sxx[LANES], syy[LANES], sxy[LANES], sdd[LANES], sabs[LANES], srel[LANES];
	double sx[LANES], sy[LANES];
	float max_abs[LANES], max_rel[LANES], max_abs_x[LANES];
	float min_x[LANES], max_x[LANES], min_y[LANES], max_y[LANES];
	uint32_t nan_d[LANES], nan_r[LANES], nan_x[LANES], nan_y[LANES];
	uint32_t inf_x[LANES], inf_y[LANES];
};

static void lanes_run_scalar(struct lanes *l, const float *restrict x, const float *restrict y,
			     size_t n)
{
	for (size_t i = 0; i < n; i += LANES) {
		for (size_t j = 0; j < LANES; j++) {
			/* Element-wise steps are float32, as numpy does them on float32 arrays
			 * (so a maximum is exactly msaccucmp's); only the sums are float64. */
			float xf = x[i + j], yf = y[i + j], df = xf - yf, af = fabsf(df);
			/* msaccucmp: |x / y - 1| where |y| > EPS64, else 0 (NaN y fails the test). */
			float rf = fabsf(yf) > (float)EPS64 ? fabsf(xf / yf - 1.0f) : 0.0f;
			double xv = xf, yv = yf, d = df;

			l->sxx[j] += xv * xv;
			l->syy[j] += yv * yv;
			l->sxy[j] += xv * yv;
			l->sdd[j] += d * d;
			l->sabs[j] += af;
			l->srel[j] += rf;
			l->sx[j] += xv;
			l->sy[j] += yv;
			l->nan_d[j] += af != af;
			l->nan_r[j] += rf != rf;
			l->nan_x[j] += xf != xf;
			l->nan_y[j] += yf != yf;
			l->inf_x[j] += fabsf(xf) == INFINITY;
			l->inf_y[j] += fabsf(yf) == INFINITY;
			l->max_abs[j] = af > l->max_abs[j] ? af : l->max_abs[j];
			l->max_rel[j] = rf > l->max_rel[j] ? rf : l->max_rel[j];
			l->max_abs_x[j] = fabsf(xf) > l->max_abs_x[j] ? fabsf(xf) : l->max_abs_x[j];
			l->min_x[j] = xf < l->min_x[j] ? xf : l->min_x[j];
			l->max_x[j] = xf > l->max_x[j] ? xf : l->max_x[j];
			l->min_y[j] = yf < l->min_y[j] ? yf : l->min_y[j];
			l->max_y[j] = yf > l->max_y[j] ? yf : l->max_y[j];
		}
	}
}

/* Sum of squared deviations from @mean, in lanes as above. */
static double m2_run_scalar(const float *restrict v, size_t n, double mean)
{
	double acc[LANES] = { 0 }, t = 0;

	for (size_t i = 0; i < n; i += LANES)
		for (size_t j = 0; j < LANES; j++) {
			double e = v[i + j] - mean;

			acc[j] += e * e;
		}
	for (size_t j = 0; j < LANES; j++)
		t += acc[j];
	return t;
}

/* msprobe's relative error |(x - y) / y|, EPS64 added to both where y is 0. */
static void msprobe_run(struct adump_compare_acc *a, const float *x, const float *y, size_t n)
{
	uint64_t below1 = 0, below5 = 0;

	for (size_t i = 0; i < n; i++) {
		double xv = x[i], yv = y[i];
		double rp = yv == 0 ? fabs(((xv + EPS64) - EPS64) / EPS64) : fabs((xv - yv) / yv);

		below1 += rp < 0.001;
		below5 += rp < 0.005;
	}
	a->below1 += below1;
	a->below5 += below5;
}

#if defined(__x86_64__)
/* The same kernel, eight floats a step: float32 element-wise steps as above, the float64 sums
 * kept in 4-wide vectors (each half of the eight into the same accumulators). maxps returns
 * its second operand when either is NaN, so the running maxima skip NaNs, which are counted. */
__attribute__((target("avx2"))) static void lanes_run_avx2(struct lanes *l, const float *x,
							   const float *y, size_t n)
{
	const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	const __m256 eps = _mm256_set1_ps((float)EPS64), one = _mm256_set1_ps(1.0f);
	__m256d sxx = _mm256_setzero_pd(), syy = sxx, sxy = sxx, sdd = sxx, sab = sxx, srl = sxx,
		sx = sxx, sy = sxx;
	__m256 mab = _mm256_loadu_ps(l->max_abs), mrl = _mm256_loadu_ps(l->max_rel),
	       max = _mm256_loadu_ps(l->max_abs_x), mnx = _mm256_loadu_ps(l->min_x),
	       mxx = _mm256_loadu_ps(l->max_x), mny = _mm256_loadu_ps(l->min_y),
	       mxy = _mm256_loadu_ps(l->max_y);
	const __m256 inf = _mm256_set1_ps(INFINITY);
	__m256i nd = _mm256_setzero_si256(), nr = nd, nx = nd, ny = nd, ix = nd, iy = nd;

	for (size_t i = 0; i < n; i += 8) {
		__m256 xf = _mm256_loadu_ps(x + i), yf = _mm256_loadu_ps(y + i);
		__m256 af = _mm256_and_ps(_mm256_sub_ps(xf, yf), abs_mask);
		__m256 df = _mm256_sub_ps(xf, yf);
		__m256 rf = _mm256_and_ps(_mm256_sub_ps(_mm256_div_ps(xf, yf), one), abs_mask);

		rf = _mm256_and_ps(rf, _mm256_cmp_ps(_mm256_and_ps(yf, abs_mask), eps, _CMP_GT_OQ));
		/* A NaN lane's mask is all ones: subtracting it counts one. */
		nd = _mm256_sub_epi32(nd, _mm256_castps_si256(_mm256_cmp_ps(af, af, _CMP_UNORD_Q)));
		nr = _mm256_sub_epi32(nr, _mm256_castps_si256(_mm256_cmp_ps(rf, rf, _CMP_UNORD_Q)));
		nx = _mm256_sub_epi32(nx, _mm256_castps_si256(_mm256_cmp_ps(xf, xf, _CMP_UNORD_Q)));
		ny = _mm256_sub_epi32(ny, _mm256_castps_si256(_mm256_cmp_ps(yf, yf, _CMP_UNORD_Q)));
		ix = _mm256_sub_epi32(ix, _mm256_castps_si256(_mm256_cmp_ps(
						  _mm256_and_ps(xf, abs_mask), inf, _CMP_EQ_OQ)));
		iy = _mm256_sub_epi32(iy, _mm256_castps_si256(_mm256_cmp_ps(
						  _mm256_and_ps(yf, abs_mask), inf, _CMP_EQ_OQ)));
		mab = _mm256_max_ps(af, mab);
		mrl = _mm256_max_ps(rf, mrl);
		max = _mm256_max_ps(_mm256_and_ps(xf, abs_mask), max);
		mnx = _mm256_min_ps(xf, mnx);
		mxx = _mm256_max_ps(xf, mxx);
		mny = _mm256_min_ps(yf, mny);
		mxy = _mm256_max_ps(yf, mxy);
		for (int h = 0; h < 2; h++) {
			__m256d xv = _mm256_cvtps_pd(h ? _mm256_extractf128_ps(xf, 1) : _mm256_castps256_ps128(xf));
			__m256d yv = _mm256_cvtps_pd(h ? _mm256_extractf128_ps(yf, 1) : _mm256_castps256_ps128(yf));
			__m256d dv = _mm256_cvtps_pd(h ? _mm256_extractf128_ps(df, 1) : _mm256_castps256_ps128(df));
			__m256d av = _mm256_cvtps_pd(h ? _mm256_extractf128_ps(af, 1) : _mm256_castps256_ps128(af));
			__m256d rv = _mm256_cvtps_pd(h ? _mm256_extractf128_ps(rf, 1) : _mm256_castps256_ps128(rf));

			sxx = _mm256_add_pd(sxx, _mm256_mul_pd(xv, xv));
			syy = _mm256_add_pd(syy, _mm256_mul_pd(yv, yv));
			sxy = _mm256_add_pd(sxy, _mm256_mul_pd(xv, yv));
			sdd = _mm256_add_pd(sdd, _mm256_mul_pd(dv, dv));
			sab = _mm256_add_pd(sab, av);
			srl = _mm256_add_pd(srl, rv);
			sx = _mm256_add_pd(sx, xv);
			sy = _mm256_add_pd(sy, yv);
		}
	}
	double t[4];
	uint32_t c[8];
#define FOLD(vec, field)                                  \
	do {                                              \
		_mm256_storeu_pd(t, vec);                 \
		for (int k = 0; k < 4; k++)               \
			l->field[k] += t[k];              \
	} while (0)
	FOLD(sxx, sxx);
	FOLD(syy, syy);
	FOLD(sxy, sxy);
	FOLD(sdd, sdd);
	FOLD(sab, sabs);
	FOLD(srl, srel);
	FOLD(sx, sx);
	FOLD(sy, sy);
#undef FOLD
#define COUNT(vec, field)                                       \
	do {                                                    \
		_mm256_storeu_si256((__m256i *)c, vec);         \
		for (int k = 0; k < 8; k++)                     \
			l->field[k] += c[k];                    \
	} while (0)
	COUNT(nd, nan_d);
	COUNT(nr, nan_r);
	COUNT(nx, nan_x);
	COUNT(ny, nan_y);
	COUNT(ix, inf_x);
	COUNT(iy, inf_y);
#undef COUNT
	_mm256_storeu_ps(l->max_abs, mab);
	_mm256_storeu_ps(l->max_rel, mrl);
	_mm256_storeu_ps(l->max_abs_x, max);
	_mm256_storeu_ps(l->min_x, mnx);
	_mm256_storeu_ps(l->max_x, mxx);
	_mm256_storeu_ps(l->min_y, mny);
	_mm256_storeu_ps(l->max_y, mxy);
}

__attribute__((target("avx2"))) static double m2_run_avx2(const float *v, size_t n, double mean)
{
	__m256d acc = _mm256_setzero_pd(), m = _mm256_set1_pd(mean);
	double t[4];

	for (size_t i = 0; i < n; i += 4) {
		__m256d e = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(v + i)), m);

		acc = _mm256_add_pd(acc, _mm256_mul_pd(e, e));
	}
	_mm256_storeu_pd(t, acc);
	return t[0] + t[1] + t[2] + t[3];
}

/* ln(v) for positive normal doubles, without a division (the divide unit was what KL waited
 * on): v = 2^e m with m in [1, 2), c = m rounded to a multiple of 1/128 (1 <= c <= 2, so
 * ln 1 is exactly 0), u = m (1/c) - 1 by one FMA, |u| <= 2^-8; then
 * ln v = e ln 2 - ln(1/c) + ln(1 + u), ln(1 + u) by its series to u^6 (truncation below
 * 2^-56 / 7 = 2e-18). 1/c and ln(1/c) come from a table filled once with libm's log. */
#define LOG_TABLE_STEPS 128
static double log_inv_c[LOG_TABLE_STEPS + 1], log_ln_inv_c[LOG_TABLE_STEPS + 1];
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_table_fill(void)
{
	for (int k = 0; k <= LOG_TABLE_STEPS; k++) {
		log_inv_c[k] = 1.0 / (1.0 + (double)k / LOG_TABLE_STEPS);
		log_ln_inv_c[k] = log(log_inv_c[k]);
	}
}

__attribute__((target("avx2,fma"))) static inline __m256d log_avx2(__m256d v)
{
	const __m256i mant_mask = _mm256_set1_epi64x(0x000fffffffffffffLL);
	const __m256i bias_bits = _mm256_set1_epi64x(0x4330000000000000LL);     /* 2^52 */
	__m256i bits = _mm256_castpd_si256(v), mant = _mm256_and_si256(bits, mant_mask);
	/* The nearest multiple of 1/128: the mantissa's top 7 bits, rounded (0..128). */
	__m256i k = _mm256_srli_epi64(_mm256_add_epi64(mant, _mm256_set1_epi64x(1LL << 44)), 45);
	__m256d m = _mm256_castsi256_pd(_mm256_or_si256(mant, _mm256_set1_epi64x(0x3ff0000000000000LL)));
	/* The biased exponent as a double: its bits under 2^52's, minus 2^52 + 1023. */
	__m256d e = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(bits, 52),
								       bias_bits)),
				  _mm256_set1_pd(4503599627370496.0 + 1023.0));
	__m256d u = _mm256_fmsub_pd(m, _mm256_i64gather_pd(log_inv_c, k, 8), _mm256_set1_pd(1.0));
	__m256d p = _mm256_set1_pd(-1.0 / 6);

	p = _mm256_fmadd_pd(p, u, _mm256_set1_pd(1.0 / 5));
	p = _mm256_fmadd_pd(p, u, _mm256_set1_pd(-1.0 / 4));
	p = _mm256_fmadd_pd(p, u, _mm256_set1_pd(1.0 / 3));
	p = _mm256_fmadd_pd(p, u, _mm256_set1_pd(-1.0 / 2));
	p = _mm256_fmadd_pd(p, u, _mm256_set1_pd(1.0));
	return _mm256_add_pd(_mm256_fmsub_pd(e, _mm256_set1_pd(0.69314718055994530942),
					     _mm256_i64gather_pd(log_ln_inv_c, k, 8)),
			     _mm256_mul_pd(p, u));
}

/* Normalisation by multiplying with 1/range (a range of 0 leaves the value as it is: min 0,
 * factor 1); one division per four elements is left, p / q. */
__attribute__((target("avx2,fma"))) static void kl_run_avx2(const float *x, const float *y, size_t n,
							    const double mm[4], double out[3])
{
	const __m256d eps = _mm256_set1_pd(1.1920929e-07);
	double rx = mm[1] - mm[0], ry = mm[3] - mm[2];
	__m256d minx = _mm256_set1_pd(rx != 0 ? mm[0] : 0), miny = _mm256_set1_pd(ry != 0 ? mm[2] : 0);
	__m256d fx = _mm256_set1_pd(rx != 0 ? 1 / rx : 1), fy = _mm256_set1_pd(ry != 0 ? 1 / ry : 1);
	__m256d sa = _mm256_setzero_pd(), sb = sa, t = sa;
	double o[4];

	pthread_once(&log_once, log_table_fill);
	for (size_t i = 0; i < n; i += 4) {
		__m256d p = _mm256_cvtps_pd(_mm_loadu_ps(x + i)), q = _mm256_cvtps_pd(_mm_loadu_ps(y + i));

		p = _mm256_max_pd(_mm256_mul_pd(_mm256_sub_pd(p, minx), fx), eps);
		q = _mm256_max_pd(_mm256_mul_pd(_mm256_sub_pd(q, miny), fy), eps);
		sa = _mm256_add_pd(sa, p);
		sb = _mm256_add_pd(sb, q);
		t = _mm256_fmadd_pd(p, log_avx2(_mm256_div_pd(p, q)), t);
	}
	_mm256_storeu_pd(o, sa);
	out[0] += o[0] + o[1] + o[2] + o[3];
	_mm256_storeu_pd(o, sb);
	out[1] += o[0] + o[1] + o[2] + o[3];
	_mm256_storeu_pd(o, t);
	out[2] += o[0] + o[1] + o[2] + o[3];
}

/* The same on AVX-512, eight doubles a step, with no memory lookups: m in [0.75, 1.5) from
 * getmant/getexp (halved, exponent + 1, when m >= 1.5), c = the nearest multiple of 1/16
 * (c = 1 exactly near 1), 1/c and ln(1/c) picked from two registers by vpermt2pd, |u| below
 * 1/24, ln(1 + u) by its series to u^11 (truncation below 3e-18). */
static double log16_inv_c[16] __attribute__((aligned(64))), log16_ln_inv_c[16] __attribute__((aligned(64)));
static pthread_once_t log16_once = PTHREAD_ONCE_INIT;

static void log16_table_fill(void)
{
	for (int k = 0; k < 16; k++) {
		log16_inv_c[k] = 1.0 / (0.75 + k / 16.0);
		log16_ln_inv_c[k] = log(log16_inv_c[k]);
	}
}

__attribute__((target("avx512f,avx512dq"))) static inline __m512d log_avx512(__m512d v,
									  const __m512d tab[4])
{
	__m512d m = _mm512_getmant_pd(v, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
	__m512d e = _mm512_getexp_pd(v);
	__mmask8 big = _mm512_cmp_pd_mask(m, _mm512_set1_pd(1.5), _CMP_GE_OQ);

	m = _mm512_mask_mul_pd(m, big, m, _mm512_set1_pd(0.5));
	e = _mm512_mask_add_pd(e, big, e, _mm512_set1_pd(1.0));
	/* round(16 m - 12) in the low bits of 2^52 + it: the table index 0..12. */
	__m512i k = _mm512_castpd_si512(_mm512_fmadd_pd(m, _mm512_set1_pd(16.0),
							_mm512_set1_pd(4503599627370496.0 - 12.0)));
	__m512d u = _mm512_fmsub_pd(m, _mm512_permutex2var_pd(tab[0], k, tab[1]), _mm512_set1_pd(1.0));
	/* -(1 - u/2 + u^2/3 - ... - u^10/11), so that ln(1 + u) = -p u. */
	__m512d p = _mm512_set1_pd(-1.0 / 11);

	p = _mm512_fmadd_pd(p, u, _mm512_set1_pd(1.0 / 10));
	p = _mm512_fmadd_pd(p, u, _mm512_set1_pd(-1.0 / 9));
	p = _mm512_fmadd_pd(p, u, _mm512_set1_pd(1.0 / 8));
	p = _mm512_fmadd_pd(p, u, _mm512_set1_pd(-1.0 / 7));
	p = _mm512_fmadd_pd(p, u, _mm512_set1_pd(1.0 / 6));
	p = _mm512_fmadd_pd(p, u, _mm512_set1_pd(-1.0 / 5));
	p = _mm512_fmadd_pd(p, u, _mm512_set1_pd(1.0 / 4));
	p = _mm512_fmadd_pd(p, u, _mm512_set1_pd(-1.0 / 3));
	p = _mm512_fmadd_pd(p, u, _mm512_set1_pd(1.0 / 2));
	p = _mm512_fmadd_pd(p, u, _mm512_set1_pd(-1.0));
	return _mm512_fnmadd_pd(p, u, _mm512_fmsub_pd(e, _mm512_set1_pd(0.69314718055994530942),
						      _mm512_permutex2var_pd(tab[2], k, tab[3])));
}

__attribute__((target("avx512f,avx512dq"))) static void kl_run_avx512(const float *x, const float *y,
								       size_t n, const double mm[4],
								       double out[3])
{
	const __m512d eps = _mm512_set1_pd(1.1920929e-07);
	double rx = mm[1] - mm[0], ry = mm[3] - mm[2];
	__m512d minx = _mm512_set1_pd(rx != 0 ? mm[0] : 0), miny = _mm512_set1_pd(ry != 0 ? mm[2] : 0);
	__m512d fx = _mm512_set1_pd(rx != 0 ? 1 / rx : 1), fy = _mm512_set1_pd(ry != 0 ? 1 / ry : 1);
	__m512d sa = _mm512_setzero_pd(), sb = sa, t = sa, tab[4];

	pthread_once(&log16_once, log16_table_fill);
	tab[0] = _mm512_load_pd(log16_inv_c);
	tab[1] = _mm512_load_pd(log16_inv_c + 8);
	tab[2] = _mm512_load_pd(log16_ln_inv_c);
	tab[3] = _mm512_load_pd(log16_ln_inv_c + 8);
	for (size_t i = 0; i < n; i += 8) {
		__m512d p = _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), q = _mm512_cvtps_pd(_mm256_loadu_ps(y + i));

		p = _mm512_max_pd(_mm512_mul_pd(_mm512_sub_pd(p, minx), fx), eps);
		q = _mm512_max_pd(_mm512_mul_pd(_mm512_sub_pd(q, miny), fy), eps);
		sa = _mm512_add_pd(sa, p);
		sb = _mm512_add_pd(sb, q);
		t = _mm512_fmadd_pd(p, log_avx512(_mm512_div_pd(p, q), tab), t);
	}
	out[0] += _mm512_reduce_add_pd(sa);
	out[1] += _mm512_reduce_add_pd(sb);
	out[2] += _mm512_reduce_add_pd(t);
}
#endif

static _Atomic bool is_simd_off, is_avx512_off;

void adump_compare_simd_set(bool is_enabled)
{
	atomic_store_explicit(&is_simd_off, !is_enabled, memory_order_relaxed);
}

void adump_compare_avx512_set(bool is_enabled)
{
	atomic_store_explicit(&is_avx512_off, !is_enabled, memory_order_relaxed);
}

static bool has_avx512(void)
{
#if defined(__x86_64__)
	return !atomic_load_explicit(&is_simd_off, memory_order_relaxed) &&
	       !atomic_load_explicit(&is_avx512_off, memory_order_relaxed) &&
	       __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#else
	return false;
#endif
}

#if defined(__x86_64__)
/* F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports() has no "f16c". */
static bool has_f16c(void)
{
	unsigned int eax, ebx, ecx, edx;

	return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
}
#endif

/* AVX2 with FMA and F16C, which every AVX2 processor has. */
static bool has_avx2(void)
{
#if defined(__x86_64__)
	return !atomic_load_explicit(&is_simd_off, memory_order_relaxed) &&
	       __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
#else
	return false;
#endif
}

static void lanes_run(struct lanes *l, const float *x, const float *y, size_t n)
{
#if defined(__x86_64__)
	if (has_avx2()) {
		lanes_run_avx2(l, x, y, n);
		return;
	}
#endif
	lanes_run_scalar(l, x, y, n);
}

static double m2_run(const float *v, size_t n, double mean)
{
#if defined(__x86_64__)
	if (has_avx2())
		return m2_run_avx2(v, n, mean);
#endif
	return m2_run_scalar(v, n, mean);
}

/* A chunk holding NaN or Inf, element by element: elements where one side is NaN and the other
 * is not, or one is infinite and the other is not that same infinity, are counted (the first
 * one's index kept); the verdict's sums and maxima take the elements finite on both sides. */
static void nonfinite_scan(struct adump_compare_acc *a, const float *x, const float *y, size_t n)
{
	double sxx = 0, syy = 0, sxy = 0, max_abs = a->fin_max_abs, max_y = a->fin_max_y;

	for (size_t i = 0; i < n; i++) {
		float xf = x[i], yf = y[i];
		bool is_diff;

		if (isfinite(xf) && isfinite(yf)) {
			double xv = xf, yv = yf, d = fabsf(xf - yf);

			sxx += xv * xv;
			syy += yv * yv;
			sxy += xv * yv;
			max_abs = d > max_abs ? d : max_abs;
			max_y = fabs(yv) > max_y ? fabs(yv) : max_y;
			continue;
		}
		is_diff = xf != xf ? yf == yf : (yf != yf || xf != yf);
		if (!is_diff)
			continue;
		if (!a->nonfinite_diff_count)
			a->first_nonfinite_diff = a->count + i;
		a->nonfinite_diff_count++;
	}
	ksum_add(&a->fin_sxx, sxx);
	ksum_add(&a->fin_syy, syy);
	ksum_add(&a->fin_sxy, sxy);
	a->fin_max_abs = max_abs;
	a->fin_max_y = max_y;
}

void adump_compare_acc_add(struct adump_compare_acc *a, const float *x, const float *y, size_t n)
{
	struct lanes l;
	size_t body = n / LANES * LANES;
	double sums[8] = { 0 };
	double max_abs = a->max_abs, max_rel = a->max_rel, max_abs_x = a->max_abs_x;
	double min_x = a->min[0], max_x = a->max[0], min_y = a->min[1], max_y = a->max[1];
	uint64_t nan_d = 0, nan_r = 0, nan_x = 0, nan_y = 0, inf_x = 0, inf_y = 0;

	if (!n)
		return;
	memset(&l, 0, sizeof(l));
	for (int j = 0; j < LANES; j++) {
		l.max_abs[j] = l.max_rel[j] = l.max_abs_x[j] = -INFINITY;
		l.max_x[j] = l.max_y[j] = -INFINITY;
		l.min_x[j] = l.min_y[j] = INFINITY;
	}
	lanes_run(&l, x, y, body);
	/* The tail (fewer than LANES elements) one by one, into lane 0. */
	for (size_t i = body; i < n; i++) {
		float xf = x[i], yf = y[i], df = xf - yf, af = fabsf(df);
		float rf = fabsf(yf) > (float)EPS64 ? fabsf(xf / yf - 1.0f) : 0.0f;
		double xv = xf, yv = yf, d = df;

		l.sxx[0] += xv * xv;
		l.syy[0] += yv * yv;
		l.sxy[0] += xv * yv;
		l.sdd[0] += d * d;
		l.sabs[0] += af;
		l.srel[0] += rf;
		l.sx[0] += xv;
		l.sy[0] += yv;
		l.nan_d[0] += af != af;
		l.nan_r[0] += rf != rf;
		l.nan_x[0] += xf != xf;
		l.nan_y[0] += yf != yf;
		l.inf_x[0] += fabsf(xf) == INFINITY;
		l.inf_y[0] += fabsf(yf) == INFINITY;
		l.max_abs[0] = af > l.max_abs[0] ? af : l.max_abs[0];
		l.max_rel[0] = rf > l.max_rel[0] ? rf : l.max_rel[0];
		l.max_abs_x[0] = fabsf(xf) > l.max_abs_x[0] ? fabsf(xf) : l.max_abs_x[0];
		l.min_x[0] = xf < l.min_x[0] ? xf : l.min_x[0];
		l.max_x[0] = xf > l.max_x[0] ? xf : l.max_x[0];
		l.min_y[0] = yf < l.min_y[0] ? yf : l.min_y[0];
		l.max_y[0] = yf > l.max_y[0] ? yf : l.max_y[0];
	}
	for (int j = 0; j < LANES; j++) {
		sums[0] += l.sxx[j];
		sums[1] += l.syy[j];
		sums[2] += l.sxy[j];
		sums[3] += l.sdd[j];
		sums[4] += l.sabs[j];
		sums[5] += l.srel[j];
		sums[6] += l.sx[j];
		sums[7] += l.sy[j];
		nan_d += l.nan_d[j];
		nan_r += l.nan_r[j];
		nan_x += l.nan_x[j];
		nan_y += l.nan_y[j];
		inf_x += l.inf_x[j];
		inf_y += l.inf_y[j];
		max_abs = nanmax(max_abs, l.max_abs[j]);
		max_rel = nanmax(max_rel, l.max_rel[j]);
		max_abs_x = nanmax(max_abs_x, l.max_abs_x[j]);
		min_x = nanmin(min_x, l.min_x[j]);
		max_x = nanmax(max_x, l.max_x[j]);
		min_y = nanmin(min_y, l.min_y[j]);
		max_y = nanmax(max_y, l.max_y[j]);
	}
	a->nan[0] += nan_x;
	a->nan[1] += nan_y;
	a->inf[0] += inf_x;
	a->inf[1] += inf_y;
	/* Where non-finite values are, they are rare: the chunk is looked at again, element by
	 * element, only when it holds some, to find where the sides' NaN/Inf differ. */
	if (nan_x | nan_y | inf_x | inf_y) {
		nonfinite_scan(a, x, y, n);
	} else {
		double chunk_abs = -INFINITY, chunk_y = 0;

		for (int j = 0; j < LANES; j++) {
			chunk_abs = l.max_abs[j] > chunk_abs ? l.max_abs[j] : chunk_abs;
			if (l.min_y[j] <= l.max_y[j])   /* a lane that saw elements */
				chunk_y = fmax(chunk_y, fmax(fabs(l.min_y[j]), fabs(l.max_y[j])));
		}
		ksum_add(&a->fin_sxx, sums[0]);
		ksum_add(&a->fin_syy, sums[1]);
		ksum_add(&a->fin_sxy, sums[2]);
		a->fin_max_abs = chunk_abs > a->fin_max_abs ? chunk_abs : a->fin_max_abs;
		a->fin_max_y = chunk_y > a->fin_max_y ? chunk_y : a->fin_max_y;
	}
	/* numpy's max() is NaN once any element is. */
	if (nan_d)
		max_abs = NAN;
	if (nan_r)
		max_rel = NAN;
	if (nan_x)
		max_abs_x = min_x = max_x = NAN;
	if (nan_y)
		min_y = max_y = NAN;
	ksum_add(&a->sxx, sums[0]);
	ksum_add(&a->syy, sums[1]);
	ksum_add(&a->sxy, sums[2]);
	ksum_add(&a->sdd, sums[3]);
	ksum_add(&a->sabs, sums[4]);
	ksum_add(&a->srel, sums[5]);
	ksum_add(&a->sum[0], sums[6]);
	ksum_add(&a->sum[1], sums[7]);
	a->max_abs = max_abs;
	a->max_rel = max_rel;
	a->max_abs_x = max_abs_x;
	a->min[0] = min_x;
	a->max[0] = max_x;
	a->min[1] = min_y;
	a->max[1] = max_y;
	if (a->has_msprobe)
		msprobe_run(a, x, y, n);
	/* Mean and spread by Chan's parallel update: the chunk's own mean and M2, merged. */
	const float *v[2] = { x, y };
	for (int s = 0; s < 2; s++) {
		double mean = sums[6 + s] / (double)n, m2, delta;
		uint64_t total = a->count + n;

		m2 = m2_run(v[s], body, mean);
		for (size_t i = body; i < n; i++)
			m2 += (v[s][i] - mean) * (v[s][i] - mean);
		delta = mean - a->mean[s];
		if (a->count == 0) {
			a->mean[s] = mean;
			a->m2[s] = m2;
		} else {
			a->mean[s] += delta * (double)n / (double)total;
			a->m2[s] += m2 + delta * delta * (double)a->count * (double)n / (double)total;
		}
	}
	a->count += n;
}

bool adump_compare_kl_needed(const struct adump_compare_acc *a)
{
	return a->count && isfinite(a->min[0]) && isfinite(a->max[0]) && isfinite(a->min[1]) &&
	       isfinite(a->max[1]);
}

/* msaccucmp's _normalized(): scale to [0, 1] by min and max (unless they are equal), then
 * clamp below at float32's epsilon. */
static inline double kl_norm(double v, double min, double range)
{
	double t = range != 0 ? (v - min) / range : v;

	return t > EPS32 ? t : EPS32;
}

/* Second pass: KL = sum p ln(p/q) with p = a/Sa, q = b/Sb
 *                 = (1/Sa) sum a ln(a/b) + ln(Sb/Sa). */
static void kl_run_scalar(const float *restrict x, const float *restrict y, size_t n,
			  const double mm[4], double out[3])
{
	double sa[LANES] = { 0 }, sb[LANES] = { 0 }, t[LANES] = { 0 };
	double rx = mm[1] - mm[0], ry = mm[3] - mm[2];

	for (size_t i = 0; i < n; i += LANES)
		for (size_t j = 0; j < LANES; j++) {
			double p = kl_norm(x[i + j], mm[0], rx), q = kl_norm(y[i + j], mm[2], ry);

			sa[j] += p;
			sb[j] += q;
			t[j] += p * log(p / q);
		}
	for (size_t j = 0; j < LANES; j++) {
		out[0] += sa[j];
		out[1] += sb[j];
		out[2] += t[j];
	}
}

/* Second pass: KL = sum p ln(p/q) with p = a/Sa, q = b/Sb
 *                 = (1/Sa) sum a ln(a/b) + ln(Sb/Sa). */
void adump_compare_acc_kl(struct adump_compare_acc *a, const float *x, const float *y, size_t n)
{
	const double mm[4] = { a->min[0], a->max[0], a->min[1], a->max[1] };
	size_t body = n / LANES * LANES;
	double out[3] = { 0, 0, 0 };

#if defined(__x86_64__)
	if (has_avx512())
		kl_run_avx512(x, y, body, mm, out);
	else if (has_avx2())
		kl_run_avx2(x, y, body, mm, out);
	else
#endif
		kl_run_scalar(x, y, body, mm, out);
	for (size_t i = body; i < n; i++) {
		double p = kl_norm(x[i], mm[0], mm[1] - mm[0]), q = kl_norm(y[i], mm[2], mm[3] - mm[2]);

		out[0] += p;
		out[1] += q;
		out[2] += p * log(p / q);
	}
	ksum_add(&a->kl_sa, out[0]);
	ksum_add(&a->kl_sb, out[1]);
	ksum_add(&a->kl_t, out[2]);
}

/* ---- printing ------------------------------------------------------------------------------ */

/* Python's '{:.6f}'.format(v): "nan" whatever the sign bit, "inf", "-inf". */
static void fmt6(char *buf, size_t cap, double v)
{
	if (isnan(v))
		snprintf(buf, cap, "nan");
	else if (isinf(v))
		snprintf(buf, cap, v > 0 ? "inf" : "-inf");
	else
		snprintf(buf, cap, "%.6f", v);
}

static void fmt3(char *buf, size_t cap, double v)
{
	if (isnan(v))
		snprintf(buf, cap, "nan");
	else if (isinf(v))
		snprintf(buf, cap, v > 0 ? "inf" : "-inf");
	else
		snprintf(buf, cap, "%.3f", v);
}

static void msg_add(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void msg_add(char *msg, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(msg);
	va_list ap;

	if (len && len + 1 < cap) {
		msg[len++] = ',';
		msg[len] = '\0';
	}
	if (len + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(msg + len, cap - len, fmt, ap);
	va_end(ap);
}

#define NO_IDENTITY "zero-size array to reduction operation maximum which has no identity"

void adump_compare_acc_finish(const struct adump_compare_acc *a, bool is_scalar, bool is_bool,
			      const char *my_file, const char *golden_file,
			      struct adump_compare_metrics *m, char (*cells)[ADUMP_COMPARE_CELL_BYTES], char **msgs,
			      size_t cap)
{
	double n = (double)a->count, nx, ny, v;
	char (*c)[ADUMP_COMPARE_CELL_BYTES] = cells;

	memset(m, 0, sizeof(*m));
	m->element_count = a->count;
	for (int s = 0; s < 2; s++) {
		m->nan_count[s] = a->nan[s];
		m->inf_count[s] = a->inf[s];
	}
	m->nonfinite_diff_count = a->nonfinite_diff_count;
	m->first_nonfinite_diff = a->nonfinite_diff_count ? a->first_nonfinite_diff : UINT64_MAX;
	/* Over the elements finite on both sides: what the verdict judges once the NaN/Inf
	 * rule has had its say (msaccucmp's cells are NaN as soon as one element is). */
	m->finite_max_abs = a->count ? (a->fin_max_abs < 0 ? 0.0 : a->fin_max_abs) : NAN;
	m->max_abs_golden = a->count ? a->fin_max_y : NAN;
	nx = sqrt(ksum_get(&a->fin_sxx));
	ny = sqrt(ksum_get(&a->fin_syy));
	m->finite_cosine = !a->count ? NAN : nx <= EPS64 && ny <= EPS64 ? 1.0 :
			   nx <= EPS64 || ny <= EPS64 ? 0.0 : ksum_get(&a->fin_sxy) / nx / ny;
	if (m->finite_cosine > 1.0)
		m->finite_cosine = 1.0;
	/* The largest error against the golden side's scale: what a tensor of small values
	 * (gradients, scaled activations) shows where the absolute error reads 0.000000. */
	m->scaled_error = !a->count ? NAN : m->finite_max_abs == 0 ? 0.0 :
			  m->max_abs_golden > 0 ? m->finite_max_abs / m->max_abs_golden : INFINITY;
	for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++) {
		m->value[i] = NAN;
		snprintf(c[i], ADUMP_COMPARE_CELL_BYTES, "NaN");
		msgs[i][0] = '\0';
	}

	/* CosineSimilarity. */
	nx = sqrt(ksum_get(&a->sxx));
	ny = sqrt(ksum_get(&a->syy));
	if (is_scalar) {
		m->value[ADUMP_COMPARE_COSINE] = 1;
		fmt6(c[ADUMP_COMPARE_COSINE], ADUMP_COMPARE_CELL_BYTES, 1);
		snprintf(msgs[ADUMP_COMPARE_COSINE], cap, "This tensor is scalar.");
	} else if (nx <= EPS64 && ny < EPS64) {
		m->value[ADUMP_COMPARE_COSINE] = 1;
		snprintf(c[ADUMP_COMPARE_COSINE], ADUMP_COMPARE_CELL_BYTES, "1.0");
	} else if (sqrt(nx) <= EPS64) {
		snprintf(msgs[ADUMP_COMPARE_COSINE], cap,
			 "Cannot compare by Cosine Similarity. All the data is zero in %s.", my_file);
	} else if (sqrt(ny) <= EPS64) {
		snprintf(msgs[ADUMP_COMPARE_COSINE], cap,
			 "Cannot compare by Cosine Similarity. All the data is zero in %s.",
			 golden_file);
	} else {
		v = ksum_get(&a->sxy) / nx / ny;
		v = v > 1.0 ? 1.0 : v;  /* Python's min(v, 1.0) keeps a NaN */
		m->value[ADUMP_COMPARE_COSINE] = v;
		fmt6(c[ADUMP_COMPARE_COSINE], ADUMP_COMPARE_CELL_BYTES, v);
	}

	/* Both sides bool: msaccucmp keeps the data bool and runs only the two algorithms that
	 * accept it; RelativeEuclideanDistance then fails on numpy's bool subtraction unless the
	 * reference is all false. */
	if (is_bool) {
		for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++)
			if (i != ADUMP_COMPARE_COSINE && i != ADUMP_COMPARE_REL_EUCLID)
				snprintf(msgs[i], cap, "Algorithm %s does not support Boolean types.",
					 alg_names[i]);
		if (sqrt(ksum_get(&a->syy)) <= EPS64) {
			m->value[ADUMP_COMPARE_REL_EUCLID] = 0;
			fmt6(c[ADUMP_COMPARE_REL_EUCLID], ADUMP_COMPARE_CELL_BYTES, 0);
		} else {
			snprintf(msgs[ADUMP_COMPARE_REL_EUCLID], cap,
				 "Failed to execute 'compare' in 'RelativeEuclideanDistance'. numpy "
				 "boolean subtract, the `-` operator, is not supported, use the "
				 "bitwise_xor, the `^` operator, or the logical_xor function instead.");
		}
		m->one_thousandth = m->five_thousandths = m->euclid = m->max_abs_x = NAN;
		return;
	}

	/* MaxAbsoluteError, MaxRelativeError: numpy's max() of an empty array raises. */
	if (a->count) {
		m->value[ADUMP_COMPARE_MAX_ABS] = a->max_abs;
		fmt6(c[ADUMP_COMPARE_MAX_ABS], ADUMP_COMPARE_CELL_BYTES, a->max_abs);
	} else {
		snprintf(msgs[ADUMP_COMPARE_MAX_ABS], cap,
			 "Failed to execute 'compare' in 'MaxAbsoluteError'. " NO_IDENTITY);
	}

	v = ksum_get(&a->srel);
	m->value[ADUMP_COMPARE_ACC_REL] = v;
	fmt6(c[ADUMP_COMPARE_ACC_REL], ADUMP_COMPARE_CELL_BYTES, v);

	/* RelativeEuclideanDistance: 0 when the reference is all zero, whatever x is. */
	v = ksum_get(&a->syy);
	v = sqrt(v) <= EPS64 ? 0.0 : sqrt(ksum_get(&a->sdd) / v);
	m->value[ADUMP_COMPARE_REL_EUCLID] = v;
	fmt6(c[ADUMP_COMPARE_REL_EUCLID], ADUMP_COMPARE_CELL_BYTES, v);

	/* KullbackLeiblerDivergence. */
	if (!a->count) {
		snprintf(msgs[ADUMP_COMPARE_KL], cap,
			 "Failed to execute 'compare' in 'KullbackLeiblerDivergence'. " NO_IDENTITY);
	} else {
		if (!adump_compare_kl_needed(a)) {
			v = NAN;
		} else if (a->is_identical) {
			v = 0.0;
		} else {
			double sa = ksum_get(&a->kl_sa), sb = ksum_get(&a->kl_sb);

			v = ksum_get(&a->kl_t) / sa + log(sb / sa);
			if (fabs(v) < EPS64)
				v = 0.0;
		}
		m->value[ADUMP_COMPARE_KL] = v;
		fmt6(c[ADUMP_COMPARE_KL], ADUMP_COMPARE_CELL_BYTES, v);
		if (isinf(v) && v > 0)
			snprintf(msgs[ADUMP_COMPARE_KL], cap,
				 "Cannot compare by KL Divergence. The data contains 0 in '%s'.",
				 golden_file);
	}

	/* StandardDeviation: "(mean;std),(mean;std)", population std, small values as 0. */
	for (int s = 0; s < 2; s++) {
		/* The mean from the plain sum (numpy's: inf stays inf); the spread from the
		 * merged M2, NaN once the mean is not finite, as numpy's std is then. */
		double mean = a->count ? ksum_get(&a->sum[s]) / n : NAN;
		double sd = a->count && isfinite(mean) ? sqrt(a->m2[s] / n) : NAN;

		m->mean[s] = fabs(mean) < MINIMUM_VALUE ? 0.0 : mean;
		m->std[s] = fabs(sd) < MINIMUM_VALUE ? 0.0 : sd;
	}
	{
		char t[4][72];

		fmt3(t[0], sizeof(t[0]), m->mean[0]);
		fmt3(t[1], sizeof(t[1]), m->std[0]);
		fmt3(t[2], sizeof(t[2]), m->mean[1]);
		fmt3(t[3], sizeof(t[3]), m->std[1]);
		snprintf(c[ADUMP_COMPARE_STD], ADUMP_COMPARE_CELL_BYTES, "(%s;%s),(%s;%s)", t[0], t[1], t[2], t[3]);
	}

	/* Means of an empty array are NaN in numpy (a warning, not an exception). */
	v = a->count ? ksum_get(&a->sabs) / n : NAN;
	m->value[ADUMP_COMPARE_MEAN_ABS] = v;
	fmt6(c[ADUMP_COMPARE_MEAN_ABS], ADUMP_COMPARE_CELL_BYTES, v);
	v = a->count ? sqrt(ksum_get(&a->sdd) / n) : NAN;
	m->value[ADUMP_COMPARE_RMSE] = v;
	fmt6(c[ADUMP_COMPARE_RMSE], ADUMP_COMPARE_CELL_BYTES, v);
	if (a->count) {
		m->value[ADUMP_COMPARE_MAX_REL] = a->max_rel;
		fmt6(c[ADUMP_COMPARE_MAX_REL], ADUMP_COMPARE_CELL_BYTES, a->max_rel);
	} else {
		snprintf(msgs[ADUMP_COMPARE_MAX_REL], cap,
			 "Failed to execute 'compare' in 'MaxRelativeError'. " NO_IDENTITY);
	}
	v = a->count ? ksum_get(&a->srel) / n : NAN;
	m->value[ADUMP_COMPARE_MEAN_REL] = v;
	fmt6(c[ADUMP_COMPARE_MEAN_REL], ADUMP_COMPARE_CELL_BYTES, v);

	m->one_thousandth = a->count ? (double)a->below1 / n : NAN;
	m->five_thousandths = a->count ? (double)a->below5 / n : NAN;
	m->euclid = sqrt(ksum_get(&a->sdd));
	m->max_abs_x = a->count ? a->max_abs_x : NAN;
}

bool adump_compare_is_scalar(const uint64_t *dims, uint32_t dim_count)
{
	uint64_t sum = 0;

	/* msaccucmp's get_shape_type(): the dims add up to their count ([], [1], [1,1], ...). */
	for (uint32_t i = 0; i < dim_count; i++)
		sum += dims[i];
	return sum == dim_count;
}

void adump_compare_msg_add(char *msg, size_t cap, const char *text)
{
	msg_add(msg, cap, "%s", text);
}

uint64_t adump_compare_dims_elements(const uint64_t *dims, uint32_t dim_count)
{
	uint64_t n = 1;

	for (uint32_t d = 0; d < dim_count && d < ADUMP_MAX_DIMS; d++)
		n = dims[d] && n > UINT64_MAX / dims[d] ? UINT64_MAX : n * dims[d];
	return n;
}

void adump_compare_dims_text(const uint64_t *dims, uint32_t dim_count, const char *brackets,
			     char *buf, size_t cap)
{
	size_t len = (size_t)snprintf(buf, cap, "%c", brackets[0]);

	for (uint32_t d = 0; d < dim_count && len < cap; d++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%llu", d ? ", " : "",
					(unsigned long long)dims[d]);
	if (len < cap)
		snprintf(buf + len, cap - len, "%c", brackets[1]);
}

void adump_compare_fmt6(char *buf, size_t cap, double v)
{
	fmt6(buf, cap, v);
}

int adump_compare_buffers(int32_t dtype_x, const void *x, uint64_t count_x, int32_t dtype_y,
			  const void *y, uint64_t count_y, const uint64_t *dims, uint32_t dim_count,
			  struct adump_compare_metrics *out, char (*cells)[ADUMP_COMPARE_CELL_BYTES], char *msg, size_t cap)
{
	uint32_t bx = adump_compare_elem_bytes(dtype_x), by = adump_compare_elem_bytes(dtype_y);
	char scratch[ADUMP_COMPARE_ALG_COUNT][ADUMP_COMPARE_CELL_BYTES];
	struct adump_compare_acc a;
	float fx[1024], fy[1024];

	if (!bx || !by || !out || (!x && count_x) || (!y && count_y))
		return -ADUMP_ERR_UNSUPPORTED;
	if (msg && cap)
		msg[0] = '\0';
	if (!cells)
		cells = scratch;
	if (count_x != count_y) {
		char text[256];

		memset(out, 0, sizeof(*out));
		for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++) {
			out->value[i] = NAN;
			snprintf(cells[i], ADUMP_COMPARE_CELL_BYTES, "NaN");
		}
		snprintf(text, sizeof(text),
			 "The my output dump data size (%llu) does not match the ground truth dump "
			 "data size (%llu).",
			 (unsigned long long)count_x, (unsigned long long)count_y);
		if (msg)
			msg_add(msg, cap, "%s", text);
		return 0;
	}
	adump_compare_acc_init(&a);
	a.has_msprobe = true;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1 && !adump_compare_kl_needed(&a))
			break;
		for (uint64_t off = 0; off < count_x; off += 1024) {
			size_t n = count_x - off < 1024 ? (size_t)(count_x - off) : 1024;

			adump_compare_to_float(dtype_x, (const char *)x + off * bx, n, fx);
			adump_compare_to_float(dtype_y, (const char *)y + off * by, n, fy);
			if (pass == 0)
				adump_compare_acc_add(&a, fx, fy, n);
			else
				adump_compare_acc_kl(&a, fx, fy, n);
		}
	}
	{
		char texts[ADUMP_COMPARE_ALG_COUNT][1024], *msgs[ADUMP_COMPARE_ALG_COUNT];

		for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++)
			msgs[i] = texts[i];
		adump_compare_acc_finish(&a, adump_compare_is_scalar(dims, dim_count),
					 dtype_x == ADUMP_DT_BOOL && dtype_y == ADUMP_DT_BOOL, "my output",
					 "ground truth", out, cells, msgs, sizeof(texts[0]));
		for (int i = 0; msg && i < ADUMP_COMPARE_ALG_COUNT; i++)
			if (texts[i][0])
				msg_add(msg, cap, "%s", texts[i]);
	}
	return 0;
}
