/* SPDX-License-Identifier: Apache-2.0 */
/* The chunk kernels of `adump compare`'s metrics, each in a portable form and (on x86-64) an
 * AVX2 one: the per-lane sums, maxima and NaN/Inf counts of a chunk, its sum of squared
 * deviations, and KL's second pass (also on AVX-512, with its own logarithm); and which of
 * them this processor runs, which the tests can turn down to the portable ones. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "compare/compare_int.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#define EPS32 1.1920929e-07

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
bool adump_compare_has_avx2(void)
{
#if defined(__x86_64__)
	return !atomic_load_explicit(&is_simd_off, memory_order_relaxed) &&
	       __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
#else
	return false;
#endif
}

void adump_compare_lanes_run(struct lanes *l, const float *x, const float *y, size_t n)
{
#if defined(__x86_64__)
	if (adump_compare_has_avx2()) {
		lanes_run_avx2(l, x, y, n);
		return;
	}
#endif
	lanes_run_scalar(l, x, y, n);
}

double adump_compare_m2_run(const float *v, size_t n, double mean)
{
#if defined(__x86_64__)
	if (adump_compare_has_avx2())
		return m2_run_avx2(v, n, mean);
#endif
	return m2_run_scalar(v, n, mean);
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

void adump_compare_kl_run(const float *x, const float *y, size_t n, const double mm[4],
			  double out[3])
{
	size_t body = n / LANES * LANES;

#if defined(__x86_64__)
	if (has_avx512())
		kl_run_avx512(x, y, body, mm, out);
	else if (adump_compare_has_avx2())
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
}
