/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor statistics: one pass over a tensor's elements keeps what both the capture's
 * statistics files (CANN's rules) and the reader's statistics (finite values) are read from
 * (common/common.h, "Tensor statistics").
 *
 * One file past 600 lines on purpose: the portable and the AVX2 passes must compute the same
 * sums bit for bit (see "Floating types" below), over the same lanes, blocks and fold
 * (lanes_total, block_fold, publish, add_sum), and the dispatch between them is per call.
 * Kept side by side, a change to one path is made and read beside the other, and the shared
 * helpers stay static inline in the statistics loop of every capture. */
#include <math.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>

#include "common/common.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "tstats.c reads little-endian tensor data with host loads"
#endif

enum adump_tstats_kind adump_tstats_kind_of(int32_t dtype, uint32_t *elem_bytes)
{
	enum adump_tstats_kind kind;
	uint32_t bytes;

	switch (dtype) {
	case ADUMP_DT_FLOAT16: kind = ADUMP_TSTATS_F16; bytes = 2; break;
	case ADUMP_DT_BF16: kind = ADUMP_TSTATS_BF16; bytes = 2; break;
	case ADUMP_DT_FLOAT: kind = ADUMP_TSTATS_F32; bytes = 4; break;
	case ADUMP_DT_DOUBLE: kind = ADUMP_TSTATS_F64; bytes = 8; break;
	case ADUMP_DT_INT8: kind = ADUMP_TSTATS_SINT; bytes = 1; break;
	case ADUMP_DT_INT16: kind = ADUMP_TSTATS_SINT; bytes = 2; break;
	case ADUMP_DT_INT32: kind = ADUMP_TSTATS_SINT; bytes = 4; break;
	case ADUMP_DT_INT64: kind = ADUMP_TSTATS_SINT; bytes = 8; break;
	case ADUMP_DT_UINT8: kind = ADUMP_TSTATS_UINT; bytes = 1; break;
	case ADUMP_DT_UINT16: kind = ADUMP_TSTATS_UINT; bytes = 2; break;
	case ADUMP_DT_UINT32: kind = ADUMP_TSTATS_UINT; bytes = 4; break;
	case ADUMP_DT_UINT64: kind = ADUMP_TSTATS_UINT; bytes = 8; break;
	case ADUMP_DT_BOOL: kind = ADUMP_TSTATS_BOOL; bytes = 1; break;
	default: kind = ADUMP_TSTATS_NONE; bytes = 0; break;
	}
	if (elem_bytes)
		*elem_bytes = bytes;
	return kind;
}

void adump_tstats_init(struct adump_tstats *s, int32_t dtype)
{
	memset(s, 0, sizeof(*s));
	s->kind = adump_tstats_kind_of(dtype, &s->elem_bytes);
	s->max = -INFINITY;
	s->min = INFINITY;
	s->smax = INT64_MIN;
	s->smin = INT64_MAX;
	s->umin = UINT64_MAX;
}

static float half_table[65536];
static pthread_once_t half_once = PTHREAD_ONCE_INIT;

static void half_table_fill(void)
{
	for (uint32_t h = 0; h < 65536; h++)
		half_table[h] = adump_half_to_float((uint16_t)h);
}

/* Neumaier: the running sum and what it lost. */
static inline void add_sum(double v, double *sum, double *comp)
{
	double t = *sum + v;

	if (fabs(*sum) >= fabs(v))
		*comp += (*sum - t) + v;
	else
		*comp += (v - t) + *sum;
	*sum = t;
}

/* ---- Floating types ----
 *
 * Both paths compute the same thing, bit for bit: element i of the tensor is added (in double,
 * every float converts exactly) to lane i % LANES of the open block, and every BLOCK elements
 * the lanes are added up in a fixed order and folded into the blocks' Neumaier total. Accuracy:
 * a block's plain double sum is off by at most about (BLOCK / LANES) * 2^-53 = 1.4e-14 of the
 * sum of its elements' magnitudes, and the compensated fold keeps that bound whatever the
 * number of blocks, so a sum over billions of elements is as good as over one block. The sum
 * of squares is summed the same way, its blocks in plain double. Extremes are exact (order
 * does not change a maximum, except which of +0 and -0 it is: the first zero seen decides, as
 * in a running comparison). Non-finite values are counted and kept out of the sum; from the
 * first one on, every element also goes into all_sum one by one in order, as before. */
#define LANES ADUMP_TSTATS_LANES
#define BLOCK ADUMP_TSTATS_BLOCK
_Static_assert(BLOCK % LANES == 0 && LANES == 16, "the vector path adds 16 lanes");

static double lanes_total(const double *lane)
{
	double t[8];

	for (int i = 0; i < 8; i++)
		t[i] = lane[i] + lane[i + 8];
	for (int i = 0; i < 4; i++)
		t[i] += t[i + 4];
	return (t[0] + t[2]) + (t[1] + t[3]);
}

static void block_fold(struct adump_tstats *s)
{
	add_sum(lanes_total(s->lane_sum), &s->block_sum, &s->block_compensation);
	s->block_squares += lanes_total(s->lane_squares);
	memset(s->lane_sum, 0, sizeof(s->lane_sum));
	memset(s->lane_squares, 0, sizeof(s->lane_squares));
}

/* The public fields whole again after a feed: the open block counted in, a zero extreme
 * given the first zero's sign. */
static void publish(struct adump_tstats *s)
{
	double sum = s->block_sum, comp = s->block_compensation;

	add_sum(lanes_total(s->lane_sum), &sum, &comp);
	s->sum = sum;
	s->compensation = comp;
	s->sum_squares = s->block_squares + lanes_total(s->lane_squares);
	if (s->has_zero) {
		if (s->max == 0)
			s->max = s->first_zero;
		if (s->min == 0)
			s->min = s->first_zero;
	}
}

/* The portable path, element by element: CONV turns the loaded T into a double. */
#define PORTABLE_FLOAT(name, T, CONV)                                                    \
	static void portable_##name(struct adump_tstats *s, const uint8_t *p, size_t n)  \
	{                                                                                \
		double mx = s->max, mn = s->min;                                         \
		uint64_t index = s->count;                                               \
                                                                                         \
		for (size_t i = 0; i < n; i++) {                                         \
			unsigned lane = (unsigned)(index % LANES);                       \
			T x;                                                             \
			double v;                                                        \
                                                                                         \
			memcpy(&x, p + i * sizeof(T), sizeof(T));                        \
			v = CONV(x);                                                     \
			if (__builtin_expect(isfinite(v), 1)) {                          \
				if (v > mx)                                              \
					mx = v;                                          \
				if (v < mn)                                              \
					mn = v;                                          \
				if (v == 0 && !s->has_zero) {                            \
					s->has_zero = true;                              \
					s->first_zero = v;                               \
				}                                                        \
				s->lane_sum[lane] += v;                                  \
			} else {                                                         \
				if (isnan(v))                                            \
					s->nan_count++;                                  \
				else if (v > 0)                                          \
					s->pos_inf_count++;                              \
				else                                                     \
					s->neg_inf_count++;                              \
				if (!s->has_nonfinite) {                                 \
					/* Any finite start gives the same NaN. */       \
					s->all_sum = s->block_sum;                       \
					s->all_compensation = s->block_compensation;     \
					s->has_nonfinite = true;                         \
				}                                                        \
			}                                                                \
			if (__builtin_expect(s->has_nonfinite, 0))                       \
				add_sum(v, &s->all_sum, &s->all_compensation);           \
			s->lane_squares[lane] += v * v;                                  \
			if (++index % BLOCK == 0)                                        \
				block_fold(s);                                           \
		}                                                                        \
		s->max = mx;                                                             \
		s->min = mn;                                                             \
		s->count = index;                                                        \
	}

#define AS_DOUBLE(x) ((double)(x))
#define HALF(x) ((double)half_table[(x)])
#define BF16(x) ((double)adump_bf16_to_float(x))

PORTABLE_FLOAT(f16, uint16_t, HALF)
PORTABLE_FLOAT(bf16, uint16_t, BF16)
PORTABLE_FLOAT(f32, float, AS_DOUBLE)
PORTABLE_FLOAT(f64, double, AS_DOUBLE)

static void portable_float(struct adump_tstats *s, const uint8_t *p, size_t n)
{
	switch (s->kind) {
	case ADUMP_TSTATS_F16: portable_f16(s, p, n); break;
	case ADUMP_TSTATS_BF16: portable_bf16(s, p, n); break;
	case ADUMP_TSTATS_F32: portable_f32(s, p, n); break;
	default: portable_f64(s, p, n); break;
	}
}

#if defined(__x86_64__) && defined(__GNUC__)
#define TSTATS_HAVE_AVX2 1
#include <cpuid.h>
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,f16c,fma")))
/* How far ahead of the group being summed the vector paths ask for the tensor's lines:
 * memory's latency is the bound of a pass this short of arithmetic (a cold 64 MiB float
 * tensor: 10-11 GB/s without, 18-19 with, on the test machine). A prefetch past the end
 * faults nowhere. */
#define PREFETCH_AHEAD 2048

/* Eight elements of a 2- or 4-byte floating type as floats (all exactly). */
static inline AVX2 __m256 load8(const uint8_t *p, enum adump_tstats_kind kind)
{
	if (kind == ADUMP_TSTATS_F32)
		return _mm256_loadu_ps((const float *)(const void *)p);
	if (kind == ADUMP_TSTATS_F16)
		return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
	return _mm256_castsi256_ps(_mm256_slli_epi32(
		_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)), 16));
}

/* The largest (@is_max) or smallest of @n floats, the first of equals. */
static inline double extreme_of(const float *f, int n, bool is_max)
{
	float r = f[0];

	for (int i = 1; i < n; i++)
		r = is_max ? (f[i] > r ? f[i] : r) : (f[i] < r ? f[i] : r);
	return r;
}

static inline AVX2 double hmax_ps(__m256 v, bool is_max)
{
	float f[8];

	_mm256_storeu_ps(f, v);
	return extreme_of(f, 8, is_max);
}

/* The lane sums simd_float() carries in registers, back to @s. */
static inline AVX2 void lanes_store(struct adump_tstats *s, __m256d s0, __m256d s1, __m256d s2,
				    __m256d s3, __m256d q0, __m256d q1, __m256d q2, __m256d q3)
{
	_mm256_storeu_pd(s->lane_sum, s0);
	_mm256_storeu_pd(s->lane_sum + 4, s1);
	_mm256_storeu_pd(s->lane_sum + 8, s2);
	_mm256_storeu_pd(s->lane_sum + 12, s3);
	_mm256_storeu_pd(s->lane_squares, q0);
	_mm256_storeu_pd(s->lane_squares + 4, q1);
	_mm256_storeu_pd(s->lane_squares + 8, q2);
	_mm256_storeu_pd(s->lane_squares + 12, q3);
}

/* lanes_total() of the 16 lanes in registers, 4 each (@l0: lanes 0-3, ...): the same
 * additions in the same order, so the same bits, without the lanes' round trip through
 * memory at every block. */
static inline AVX2 double lanes_total256(__m256d l0, __m256d l1, __m256d l2, __m256d l3)
{
	/* t[i] = lane[i] + lane[i + 8], then t[i] += t[i + 4] */
	__m256d u = _mm256_add_pd(_mm256_add_pd(l0, l2), _mm256_add_pd(l1, l3));
	/* t[0] + t[2], t[1] + t[3] */
	__m128d v = _mm_add_pd(_mm256_castpd256_pd128(u), _mm256_extractf128_pd(u, 1));

	return _mm_cvtsd_f64(_mm_add_sd(v, _mm_unpackhi_pd(v, v)));
}

/* A vector path's end: its extremes into @s, the elements it took counted. */
static inline void minmax_done(struct adump_tstats *s, double max, double min, uint64_t index)
{
	if (max > s->max)
		s->max = max;
	if (min < s->min)
		s->min = min;
	s->count = index;
}

/* One group of 16 elements of @kind at @q (@x0, @x1: them as floats) into the extremes and
 * the lanes (@s: the sums of lanes 0-3, 4-7, 8-11 and 12-15, @q2: their squares), unchecked. */
static inline __attribute__((always_inline)) AVX2 void group256(
	const uint8_t *q, __m256 x0, __m256 x1, enum adump_tstats_kind kind, __m256 *vmax,
	__m256 *vmin, __m256d *s0, __m256d *s1, __m256d *s2, __m256d *s3, __m256d *q0,
	__m256d *q1, __m256d *q2, __m256d *q3)
{
	__m256d d0, d1, d2, d3;

	*vmax = _mm256_max_ps(_mm256_max_ps(*vmax, x0), x1);
	*vmin = _mm256_min_ps(_mm256_min_ps(*vmin, x0), x1);
	if (kind == ADUMP_TSTATS_F32) {
		/* Each quarter converted from memory: no extraction from the register. */
		const float *f = (const float *)(const void *)q;

		d0 = _mm256_cvtps_pd(_mm_loadu_ps(f));
		d1 = _mm256_cvtps_pd(_mm_loadu_ps(f + 4));
		d2 = _mm256_cvtps_pd(_mm_loadu_ps(f + 8));
		d3 = _mm256_cvtps_pd(_mm_loadu_ps(f + 12));
	} else {
		d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(x0));
		d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(x0, 1));
		d2 = _mm256_cvtps_pd(_mm256_castps256_ps128(x1));
		d3 = _mm256_cvtps_pd(_mm256_extractf128_ps(x1, 1));
	}
	/* A float's square is exact in double (two 24-bit significands): fused with its sum it
	 * rounds once, as the product and the sum apart do, in one instruction rather than two
	 * (the pass is bound by them: a fifth faster warm). The file is built with
	 * -ffp-contract=off, so only these are fused. */
	*s0 = _mm256_add_pd(*s0, d0);
	*q0 = _mm256_fmadd_pd(d0, d0, *q0);
	*s1 = _mm256_add_pd(*s1, d1);
	*q1 = _mm256_fmadd_pd(d1, d1, *q1);
	*s2 = _mm256_add_pd(*s2, d2);
	*q2 = _mm256_fmadd_pd(d2, d2, *q2);
	*s3 = _mm256_add_pd(*s3, d3);
	*q3 = _mm256_fmadd_pd(d3, d3, *q3);
}

/* Whether the 16 floats of a group are all finite. */
static inline AVX2 bool group_finite(__m256 x0, __m256 x1)
{
	const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	const __m256 inf = _mm256_set1_ps(INFINITY);

	return _mm256_movemask_ps(
		       _mm256_and_ps(_mm256_cmp_ps(_mm256_and_ps(x0, abs_mask), inf, _CMP_LT_OQ),
				     _mm256_cmp_ps(_mm256_and_ps(x1, abs_mask), inf, _CMP_LT_OQ))) ==
	       0xff;
}

/* Whether four vectors of lane sums are all finite. */
static inline AVX2 bool lanes_finite(__m256d s0, __m256d s1, __m256d s2, __m256d s3)
{
	const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
	const __m256d inf = _mm256_set1_pd(INFINITY);
	__m256d a = _mm256_and_pd(_mm256_cmp_pd(_mm256_and_pd(s0, abs_mask), inf, _CMP_LT_OQ),
				  _mm256_cmp_pd(_mm256_and_pd(s1, abs_mask), inf, _CMP_LT_OQ));
	__m256d b = _mm256_and_pd(_mm256_cmp_pd(_mm256_and_pd(s2, abs_mask), inf, _CMP_LT_OQ),
				  _mm256_cmp_pd(_mm256_and_pd(s3, abs_mask), inf, _CMP_LT_OQ));

	return _mm256_movemask_pd(_mm256_and_pd(a, b)) == 0xf;
}

/* The first zero of the @groups groups of @kind at @p, if there is one, into @s. */
static inline __attribute__((always_inline)) AVX2 bool find_zero(
	struct adump_tstats *s, const uint8_t *p, size_t groups, enum adump_tstats_kind kind,
	size_t elem_bytes)
{
	const __m256 zero = _mm256_setzero_ps();

	for (size_t g = 0; g < groups; g++, p += LANES * elem_bytes) {
		__m256 x0 = load8(p, kind), x1 = load8(p + 8 * elem_bytes, kind);
		unsigned z = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(x0, zero, _CMP_EQ_OQ)) |
			     (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(x1, zero, _CMP_EQ_OQ)) << 8;

		if (z) {
			float f[16];

			_mm256_storeu_ps(f, x0);
			_mm256_storeu_ps(f + 8, x1);
			s->has_zero = true;
			s->first_zero = f[__builtin_ctz(z)];
			return true;
		}
	}
	return false;
}

/* Whole groups of LANES elements of @kind (f16, bf16 or f32, a constant where this is
 * inlined) from s->count (a multiple of LANES), until a group holds a non-finite value or
 * fewer than LANES are left. Return: the elements taken.
 *
 * The groups up to a block's end (a run) are summed unchecked, and their lanes looked at once
 * at the run's end: a float's magnitude is below 2^128 and a lane takes BLOCK / LANES = 128
 * of a block's elements, so a lane's sum (in double) is finite exactly when every element
 * added to it was. A run that holds a non-finite value is summed again from its start, group
 * by group, up to the first such group (the portable path counts it). Zeros are looked for
 * the same way, until the tensor's first. */
static inline __attribute__((always_inline)) AVX2 size_t simd_float_kind(
	struct adump_tstats *s, const uint8_t *p, size_t n, enum adump_tstats_kind kind,
	size_t elem_bytes, uint8_t *dst, size_t *copied)
{
	const __m256 zero = _mm256_setzero_ps();
	__m256d s0 = _mm256_loadu_pd(s->lane_sum), s1 = _mm256_loadu_pd(s->lane_sum + 4);
	__m256d s2 = _mm256_loadu_pd(s->lane_sum + 8), s3 = _mm256_loadu_pd(s->lane_sum + 12);
	__m256d q0 = _mm256_loadu_pd(s->lane_squares), q1 = _mm256_loadu_pd(s->lane_squares + 4);
	__m256d q2 = _mm256_loadu_pd(s->lane_squares + 8);
	__m256d q3 = _mm256_loadu_pd(s->lane_squares + 12);
	__m256 vmax = _mm256_set1_ps((float)s->max), vmin = _mm256_set1_ps((float)s->min);
	bool has_zero = s->has_zero;
	uint64_t index = s->count;
	size_t i = 0;

	while (n - i >= LANES) {
		size_t len = BLOCK - index % BLOCK, k;
		__m256 max_at = vmax, min_at = vmin, z = zero;

		if (len > n - i)
			len = (n - i) / LANES * LANES;
		/* The run's start, should it be summed again */
		lanes_store(s, s0, s1, s2, s3, q0, q1, q2, q3);
		for (k = i; k < i + len; k += LANES) {
			const uint8_t *q = p + k * elem_bytes;
			__m256 x0 = load8(q, kind), x1 = load8(q + 8 * elem_bytes, kind);

			_mm_prefetch((const char *)q + PREFETCH_AHEAD, _MM_HINT_T0);
			if (dst) {
				_mm256_stream_ps((float *)(void *)(dst + k * 4), x0);
				_mm256_stream_ps((float *)(void *)(dst + k * 4 + 32), x1);
			}
			if (__builtin_expect(!has_zero, 0))
				z = _mm256_or_ps(z, _mm256_or_ps(_mm256_cmp_ps(x0, zero, _CMP_EQ_OQ),
								 _mm256_cmp_ps(x1, zero, _CMP_EQ_OQ)));
			group256(q, x0, x1, kind, &vmax, &vmin, &s0, &s1, &s2, &s3, &q0, &q1, &q2,
				 &q3);
		}
		if (dst)
			*copied = i + len;
		if (__builtin_expect(!lanes_finite(s0, s1, s2, s3), 0)) {
			s0 = _mm256_loadu_pd(s->lane_sum);
			s1 = _mm256_loadu_pd(s->lane_sum + 4);
			s2 = _mm256_loadu_pd(s->lane_sum + 8);
			s3 = _mm256_loadu_pd(s->lane_sum + 12);
			q0 = _mm256_loadu_pd(s->lane_squares);
			q1 = _mm256_loadu_pd(s->lane_squares + 4);
			q2 = _mm256_loadu_pd(s->lane_squares + 8);
			q3 = _mm256_loadu_pd(s->lane_squares + 12);
			vmax = max_at;
			vmin = min_at;
			for (k = i; k < i + len; k += LANES) {
				const uint8_t *q = p + k * elem_bytes;
				__m256 x0 = load8(q, kind), x1 = load8(q + 8 * elem_bytes, kind);

				if (!group_finite(x0, x1))
					break;
				if (!has_zero)
					has_zero = find_zero(s, q, 1, kind, elem_bytes);
				group256(q, x0, x1, kind, &vmax, &vmin, &s0, &s1, &s2, &s3, &q0,
					 &q1, &q2, &q3);
			}
			index += k - i;
			i = k;
			break;
		}
		if (__builtin_expect(_mm256_movemask_ps(z) != 0, 0))
			has_zero = find_zero(s, p + i * elem_bytes, len / LANES, kind, elem_bytes);
		i += len;
		index += len;
		if (index % BLOCK == 0) {
			add_sum(lanes_total256(s0, s1, s2, s3), &s->block_sum,
				&s->block_compensation);
			s->block_squares += lanes_total256(q0, q1, q2, q3);
			s0 = s1 = s2 = s3 = q0 = q1 = q2 = q3 = _mm256_setzero_pd();
		}
	}
	lanes_store(s, s0, s1, s2, s3, q0, q1, q2, q3);
	minmax_done(s, hmax_ps(vmax, true), hmax_ps(vmin, false), index);
	return i;
}

static AVX2 size_t simd_float(struct adump_tstats *s, const uint8_t *p, size_t n,
			      enum adump_tstats_kind kind, size_t elem_bytes)
{
	switch (kind) {
	case ADUMP_TSTATS_F32: return simd_float_kind(s, p, n, ADUMP_TSTATS_F32, 4, NULL, NULL);
	case ADUMP_TSTATS_F16: return simd_float_kind(s, p, n, ADUMP_TSTATS_F16, 2, NULL, NULL);
	default: return simd_float_kind(s, p, n, kind, elem_bytes, NULL, NULL);
	}
}

/* simd_float() of float32 elements, each group also stored at @dst (32-byte aligned where
 * @p's groups start) with non-temporal stores, in the same pass: the tensor is read once
 * and its copy not read into the cache. *@copied: the elements copied, at least those
 * taken (a run is copied whole before it is looked at). */
static AVX2 size_t simd_f32_copy(struct adump_tstats *s, const uint8_t *p, size_t n,
				 uint8_t *dst, size_t *copied)
{
	*copied = 0;
	return simd_float_kind(s, p, n, ADUMP_TSTATS_F32, 4, dst, copied);
}

static inline AVX2 double hmax_pd(__m256d v, bool is_max)
{
	double f[4];
	double r;

	_mm256_storeu_pd(f, v);
	r = f[0];
	for (int i = 1; i < 4; i++)
		r = is_max ? (f[i] > r ? f[i] : r) : (f[i] < r ? f[i] : r);
	return r;
}

/* simd_float() with 512-bit vectors: the same lanes (s_lo holds lanes 0-7, s_hi 8-15, each
 * the sum of its elements in order) and the same arithmetic, half the instructions; a square
 * fused with its sum, as group256() has it. */
#define AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,f16c")))

static inline AVX512 __m512 load16(const uint8_t *p, enum adump_tstats_kind kind)
{
	if (kind == ADUMP_TSTATS_F32)
		return _mm512_loadu_ps((const float *)(const void *)p);
	if (kind == ADUMP_TSTATS_F16)
		return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
	return _mm512_castsi512_ps(_mm512_slli_epi32(
		_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p)), 16));
}

static inline AVX512 double hmax16(__m512 v, bool is_max)
{
	float f[16];

	_mm512_storeu_ps(f, v);
	return extreme_of(f, 16, is_max);
}

/* The lane sums simd_float512() carries in registers, back to @s. */
static inline AVX512 void lanes_store512(struct adump_tstats *s, __m512d s_lo, __m512d s_hi,
					 __m512d q_lo, __m512d q_hi)
{
	_mm512_storeu_pd(s->lane_sum, s_lo);
	_mm512_storeu_pd(s->lane_sum + 8, s_hi);
	_mm512_storeu_pd(s->lane_squares, q_lo);
	_mm512_storeu_pd(s->lane_squares + 8, q_hi);
}

/* lanes_total() of the 16 lanes @lo (0-7) and @hi (8-15) in registers: the same additions
 * in the same order, so the same bits, without the lanes' round trip through memory. */
static inline AVX512 double lanes_total512(__m512d lo, __m512d hi)
{
	__m512d t = _mm512_add_pd(lo, hi);                       /* t[i] = lane[i] + lane[i + 8] */
	__m256d u = _mm256_add_pd(_mm512_castpd512_pd256(t),     /* t[i] += t[i + 4] */
				  _mm512_extractf64x4_pd(t, 1));
	__m128d v = _mm_add_pd(_mm256_castpd256_pd128(u),        /* t[0] + t[2], t[1] + t[3] */
			       _mm256_extractf128_pd(u, 1));

	return _mm_cvtsd_f64(_mm_add_sd(v, _mm_unpackhi_pd(v, v)));
}

/* One group of 16 elements of @kind at @q into the lanes and extremes; false (nothing
 * taken) if it holds a non-finite value. Until the tensor's first zero (@has_zero false)
 * one classification finds zeros as well as non-finite values, and only a group holding
 * either pays for telling them apart. */
static inline __attribute__((always_inline)) AVX512 bool group512(
	struct adump_tstats *s, const uint8_t *q, enum adump_tstats_kind kind, bool *has_zero,
	__m512 *vmax, __m512 *vmin, __m512d *s_lo, __m512d *s_hi, __m512d *q_lo, __m512d *q_hi)
{
	__m512 x = load16(q, kind);
	__m512d lo, hi;

	/* NaN (0x01, 0x80) or infinite (0x08, 0x10); +0 (0x02) and -0 (0x04) */
	if (__builtin_expect(!*has_zero, 0) ? _mm512_fpclass_ps_mask(x, 0x9f) != 0 :
	    _mm512_fpclass_ps_mask(x, 0x99) != 0) {
		unsigned z;

		if (_mm512_fpclass_ps_mask(x, 0x99))
			return false;           /* the portable path counts it */
		z = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ);
		if (z) {
			float f[16];

			_mm512_storeu_ps(f, x);
			s->has_zero = *has_zero = true;
			s->first_zero = f[__builtin_ctz(z)];
		}
	}
	*vmax = _mm512_max_ps(*vmax, x);
	*vmin = _mm512_min_ps(*vmin, x);
	if (kind == ADUMP_TSTATS_F32) {
		/* Each half converted from memory: no extraction from the register. */
		lo = _mm512_cvtps_pd(_mm256_loadu_ps((const float *)(const void *)q));
		hi = _mm512_cvtps_pd(_mm256_loadu_ps((const float *)(const void *)(q + 32)));
	} else {
		lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
		hi = _mm512_cvtps_pd(_mm256_castsi256_ps(
			_mm512_extracti64x4_epi64(_mm512_castps_si512(x), 1)));
	}
	*s_lo = _mm512_add_pd(*s_lo, lo);
	*s_hi = _mm512_add_pd(*s_hi, hi);
	*q_lo = _mm512_fmadd_pd(lo, lo, *q_lo);         /* exact squares: group256()'s */
	*q_hi = _mm512_fmadd_pd(hi, hi, *q_hi);
	return true;
}

/* simd_float() with AVX-512 for one @kind (a constant where it is inlined): each block's
 * lanes are added up in registers (lanes_total512()). */
static inline __attribute__((always_inline)) AVX512 size_t simd_float512_kind(
	struct adump_tstats *s, const uint8_t *p, size_t n, enum adump_tstats_kind kind,
	size_t elem_bytes)
{
	__m512d s_lo = _mm512_loadu_pd(s->lane_sum), s_hi = _mm512_loadu_pd(s->lane_sum + 8);
	__m512d q_lo = _mm512_loadu_pd(s->lane_squares);
	__m512d q_hi = _mm512_loadu_pd(s->lane_squares + 8);
	__m512 vmax = _mm512_set1_ps((float)s->max), vmin = _mm512_set1_ps((float)s->min);
	bool has_zero = s->has_zero;
	uint64_t index = s->count;
	size_t i = 0;

	while (n - i >= LANES) {
		_mm_prefetch((const char *)p + i * elem_bytes + PREFETCH_AHEAD, _MM_HINT_T0);
		if (!group512(s, p + i * elem_bytes, kind, &has_zero, &vmax, &vmin, &s_lo, &s_hi,
			      &q_lo, &q_hi))
			break;
		i += LANES;
		index += LANES;
		if (index % BLOCK == 0) {
			add_sum(lanes_total512(s_lo, s_hi), &s->block_sum, &s->block_compensation);
			s->block_squares += lanes_total512(q_lo, q_hi);
			s_lo = s_hi = q_lo = q_hi = _mm512_setzero_pd();
		}
	}
	lanes_store512(s, s_lo, s_hi, q_lo, q_hi);
	minmax_done(s, hmax16(vmax, true), hmax16(vmin, false), index);
	return i;
}

static AVX512 size_t simd_float512(struct adump_tstats *s, const uint8_t *p, size_t n,
				   enum adump_tstats_kind kind, size_t elem_bytes)
{
	switch (kind) {
	case ADUMP_TSTATS_F32: return simd_float512_kind(s, p, n, ADUMP_TSTATS_F32, 4);
	case ADUMP_TSTATS_F16: return simd_float512_kind(s, p, n, ADUMP_TSTATS_F16, 2);
	default: return simd_float512_kind(s, p, n, kind, elem_bytes);
	}
}

/* simd_float() for f64. */
static AVX2 size_t simd_f64(struct adump_tstats *s, const uint8_t *p, size_t n)
{
	const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
	const __m256d inf = _mm256_set1_pd(INFINITY), zero = _mm256_setzero_pd();
	__m256d acc[4], sq[4];
	__m256d vmax = _mm256_set1_pd(s->max), vmin = _mm256_set1_pd(s->min);
	uint64_t index = s->count;
	size_t i = 0;

	for (int k = 0; k < 4; k++) {
		acc[k] = _mm256_loadu_pd(s->lane_sum + 4 * k);
		sq[k] = _mm256_loadu_pd(s->lane_squares + 4 * k);
	}
	while (n - i >= LANES) {
		const double *q = (const double *)(const void *)(p + i * 8);
		__m256d x[4], fin;

		for (int k = 0; k < 4; k++)
			x[k] = _mm256_loadu_pd(q + 4 * k);
		fin = _mm256_cmp_pd(_mm256_and_pd(x[0], abs_mask), inf, _CMP_LT_OQ);
		for (int k = 1; k < 4; k++)
			fin = _mm256_and_pd(fin, _mm256_cmp_pd(_mm256_and_pd(x[k], abs_mask), inf,
							       _CMP_LT_OQ));
		if (_mm256_movemask_pd(fin) != 0xf)
			break;
		if (__builtin_expect(!s->has_zero, 0)) {
			unsigned z = 0;

			for (int k = 0; k < 4; k++)
				z |= (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(x[k], zero,
										_CMP_EQ_OQ)) << (4 * k);
			if (z) {
				s->has_zero = true;
				memcpy(&s->first_zero, q + __builtin_ctz(z), sizeof(double));
			}
		}
		for (int k = 0; k < 4; k++) {
			vmax = _mm256_max_pd(vmax, x[k]);
			vmin = _mm256_min_pd(vmin, x[k]);
			acc[k] = _mm256_add_pd(acc[k], x[k]);
			sq[k] = _mm256_add_pd(sq[k], _mm256_mul_pd(x[k], x[k]));
		}
		i += LANES;
		index += LANES;
		if (index % BLOCK == 0) {
			for (int k = 0; k < 4; k++) {
				_mm256_storeu_pd(s->lane_sum + 4 * k, acc[k]);
				_mm256_storeu_pd(s->lane_squares + 4 * k, sq[k]);
			}
			block_fold(s);
			for (int k = 0; k < 4; k++)
				acc[k] = sq[k] = _mm256_setzero_pd();
		}
	}
	for (int k = 0; k < 4; k++) {
		_mm256_storeu_pd(s->lane_sum + 4 * k, acc[k]);
		_mm256_storeu_pd(s->lane_squares + 4 * k, sq[k]);
	}
	minmax_done(s, hmax_pd(vmax, true), hmax_pd(vmin, false), index);
	return i;
}

/* 0 not looked at yet, 1 none, 2 AVX2 + F16C + FMA, 3 also AVX-512 (F, VL, BW, DQ) */
static int simd_state;

/* F16C from CPUID itself: clang (14) has no "f16c" for __builtin_cpu_supports(). */
static bool cpu_has_f16c(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

bool adump_tstats_has_simd(void)
{
	int st = __atomic_load_n(&simd_state, __ATOMIC_RELAXED);

	if (!st) {
		__builtin_cpu_init();
		st = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
		     cpu_has_f16c() ? 2 : 1;
		if (st == 2 && __builtin_cpu_supports("avx512f") &&
		    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
		    __builtin_cpu_supports("avx512dq") &&
		    !getenv("ADUMP_NO_AVX512"))
			st = 3;
		__atomic_store_n(&simd_state, st, __ATOMIC_RELAXED);
	}
	return st >= 2;
}

/* As much as the vector path takes from s->count on (0 without one). With @dst (float32 on
 * the AVX2 path only: adump_tstats_add_copy()) the elements are stored there as they are
 * read (simd_f32_copy()), *@copied of them. */
static size_t simd_add(struct adump_tstats *s, const uint8_t *p, size_t n, uint8_t *dst,
		       size_t *copied)
{
	if (dst)
		return simd_f32_copy(s, p, n, dst, copied);
	if (s->kind == ADUMP_TSTATS_F64)
		return simd_f64(s, p, n);
	if (__atomic_load_n(&simd_state, __ATOMIC_RELAXED) == 3)
		return simd_float512(s, p, n, s->kind, s->elem_bytes);
	return simd_float(s, p, n, s->kind, s->elem_bytes);
}
#else
bool adump_tstats_has_simd(void)
{
	return false;
}

static size_t simd_add(struct adump_tstats *s, const uint8_t *p, size_t n, uint8_t *dst,
		       size_t *copied)
{
	(void)s;
	(void)p;
	(void)n;
	(void)dst;
	*copied = 0;
	return 0;
}
#endif

/* The first element as a double (a NaN keeps its sign: it prints). */
static double first_of(enum adump_tstats_kind kind, const uint8_t *p)
{
	uint16_t h;
	float f;
	double d;

	switch (kind) {
	case ADUMP_TSTATS_F32:
		memcpy(&f, p, 4);
		return f;
	case ADUMP_TSTATS_F64:
		memcpy(&d, p, 8);
		return d;
	case ADUMP_TSTATS_F16:
		memcpy(&h, p, 2);
		return HALF(h);
	default:
		memcpy(&h, p, 2);
		return BF16(h);
	}
}

/* @n elements at @p; with @dst (adump_tstats_add_copy(): float32 on the AVX2 path, its
 * groups 32-byte aligned there) their bytes copied to it too: what the vector path stored
 * as it read them, the rest around it. */
static void add_float(struct adump_tstats *s, const uint8_t *p, size_t n, bool is_simd,
		      uint8_t *dst)
{
	size_t eb = s->elem_bytes, i = 0, copied = 0;

	if (s->kind == ADUMP_TSTATS_F16)
		pthread_once(&half_once, half_table_fill);
	if (!s->count)
		s->first = first_of(s->kind, p);
	while (i < n && is_simd && !s->has_nonfinite) {
		size_t head = (size_t)((LANES - s->count % LANES) % LANES), done, c = 0;

		if (head > n - i)
			head = n - i;
		portable_float(s, p + i * eb, head);
		i += head;
		if (dst && copied < i) {
			memcpy(dst + copied * eb, p + copied * eb, (i - copied) * eb);
			copied = i;
		}
		done = simd_add(s, p + i * eb, n - i, dst ? dst + i * eb : NULL, &c);
		if (i + c > copied)
			copied = i + c;
		i += done;
		/* A group with a non-finite value, or the last few: element by element. */
		head = n - i < LANES ? n - i : LANES;
		portable_float(s, p + i * eb, head);
		i += head;
	}
	if (i < n)
		portable_float(s, p + i * eb, n - i);
	/* The rest, and the store fence the vector path's stores need */
	if (dst)
		adump_copy_nt(dst + copied * eb, p + copied * eb, (n - copied) * eb);
	publish(s);
}
/* Integer types: exact extremes in MX/MN (smax/smin or umax/umin). */
#define ADD_INT(name, T, MX, MN, CONV)                                                   \
	static void add_##name(struct adump_tstats *s, const uint8_t *p, size_t n)       \
	{                                                                                \
		double sum = s->sum, comp = s->compensation, sq = s->sum_squares;        \
                                                                                         \
		for (size_t i = 0; i < n; i++) {                                         \
			T x;                                                             \
			double v;                                                        \
                                                                                         \
			memcpy(&x, p + i * sizeof(T), sizeof(T));                        \
			if (CONV(x) > s->MX)                                             \
				s->MX = CONV(x);                                         \
			if (CONV(x) < s->MN)                                             \
				s->MN = CONV(x);                                         \
			v = (double)CONV(x);                                             \
			add_sum(v, &sum, &comp);                                         \
			sq += v * v;                                                     \
		}                                                                        \
		s->sum = sum;                                                            \
		s->compensation = comp;                                                  \
		s->sum_squares = sq;                                                     \
		s->count += n;                                                           \
	}

#define AS_BOOL(x) ((uint64_t)((x) != 0))
#define AS_SIGNED(x) ((int64_t)(x))
#define AS_UNSIGNED(x) ((uint64_t)(x))

ADD_INT(s8, int8_t, smax, smin, AS_SIGNED)
ADD_INT(s16, int16_t, smax, smin, AS_SIGNED)
ADD_INT(s32, int32_t, smax, smin, AS_SIGNED)
ADD_INT(s64, int64_t, smax, smin, AS_SIGNED)
ADD_INT(u8, uint8_t, umax, umin, AS_UNSIGNED)
ADD_INT(u16, uint16_t, umax, umin, AS_UNSIGNED)
ADD_INT(u32, uint32_t, umax, umin, AS_UNSIGNED)
ADD_INT(u64, uint64_t, umax, umin, AS_UNSIGNED)
ADD_INT(bool, uint8_t, umax, umin, AS_BOOL)

static void add(struct adump_tstats *s, const uint8_t *p, size_t count, bool is_simd)
{
	if (!count)
		return;
	switch (s->kind) {
	case ADUMP_TSTATS_F16:
	case ADUMP_TSTATS_BF16:
	case ADUMP_TSTATS_F32:
	case ADUMP_TSTATS_F64:
		add_float(s, p, count, is_simd, NULL);
		break;
	case ADUMP_TSTATS_BOOL: add_bool(s, p, count); break;
	case ADUMP_TSTATS_SINT:
		switch (s->elem_bytes) {
		case 1: add_s8(s, p, count); break;
		case 2: add_s16(s, p, count); break;
		case 4: add_s32(s, p, count); break;
		default: add_s64(s, p, count); break;
		}
		break;
	case ADUMP_TSTATS_UINT:
		switch (s->elem_bytes) {
		case 1: add_u8(s, p, count); break;
		case 2: add_u16(s, p, count); break;
		case 4: add_u32(s, p, count); break;
		default: add_u64(s, p, count); break;
		}
		break;
	default:
		break;
	}
}

/* Copy @len bytes with non-temporal stores: a copy read again only later (a window's,
 * if a trigger fires) does not read the destination's lines into the cache first nor evict
 * the source from it. Ends with a store fence: the bytes are ordered before whatever the
 * caller publishes after them. */
void adump_copy_nt(void *to, const void *from, size_t len)
{
#if defined(TSTATS_HAVE_AVX2) && defined(__SSE2__)
	unsigned char *dst = to;
	const unsigned char *src = from;
	size_t head = (size_t)(-(uintptr_t)dst & 15u);

	if (head > len)
		head = len;
	memcpy(dst, src, head);
	dst += head;
	src += head;
	len -= head;
	for (; len >= 64; dst += 64, src += 64, len -= 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)src);
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(const void *)(src + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(const void *)(src + 48));

		_mm_stream_si128((__m128i *)(void *)dst, a);
		_mm_stream_si128((__m128i *)(void *)(dst + 16), b);
		_mm_stream_si128((__m128i *)(void *)(dst + 32), c);
		_mm_stream_si128((__m128i *)(void *)(dst + 48), d);
	}
	memcpy(dst, src, len);
	_mm_sfence();
#else
	memcpy(to, from, len);
#endif
}

/* The blocks adump_tstats_add_copy() takes at a time where it reads twice: one is read
 * again from the cache. */
#define COPY_BLOCK (64u << 10)

void adump_tstats_add_copy(struct adump_tstats *s, const void *data, size_t count, void *dst)
{
	const uint8_t *p = data;
	uint8_t *d = dst;
	size_t eb = s->elem_bytes, step = eb ? COPY_BLOCK / eb : 0;

#ifdef TSTATS_HAVE_AVX2
	if (s->kind == ADUMP_TSTATS_F32 && count && !s->has_nonfinite &&
	    adump_tstats_has_simd() && __atomic_load_n(&simd_state, __ATOMIC_RELAXED) == 2) {
		size_t head = (size_t)((LANES - s->count % LANES) % LANES);

		/* The groups' stores need 32-byte alignment */
		if (!((uintptr_t)(d + (head < count ? head : count) * 4) & 31u)) {
			add_float(s, p, count, true, d);
			return;
		}
	}
#endif
	if (!step) {
		adump_copy_nt(d, p, count * eb);
		return;
	}
	for (size_t k = 0; k < count; k += step) {
		size_t m = count - k < step ? count - k : step;

		adump_tstats_add(s, p + k * eb, m);
		adump_copy_nt(d + k * eb, p + k * eb, m * eb);
	}
}

void adump_tstats_add(struct adump_tstats *s, const void *data, size_t count)
{
	add(s, data, count, adump_tstats_has_simd());
}

void adump_tstats_add_portable(struct adump_tstats *s, const void *data, size_t count)
{
	add(s, data, count, false);
}

double adump_tstats_finite_mean(const struct adump_tstats *s)
{
	uint64_t n = adump_tstats_finite_count(s);

	return n ? (s->sum + s->compensation) / (double)n : 0.0;
}

double adump_tstats_cann_max(const struct adump_tstats *s)
{
	if (!s->count)
		return 0.0;
	if (isnan(s->first))
		return s->first;
	if (s->pos_inf_count)
		return INFINITY;
	return adump_tstats_finite_count(s) ? s->max : -INFINITY;
}

double adump_tstats_cann_min(const struct adump_tstats *s)
{
	if (!s->count)
		return 0.0;
	if (isnan(s->first))
		return s->first;
	if (s->neg_inf_count)
		return -INFINITY;
	return adump_tstats_finite_count(s) ? s->min : INFINITY;
}

double adump_tstats_cann_mean(const struct adump_tstats *s)
{
	if (s->neg_inf_count && !s->pos_inf_count)
		return -INFINITY;
	if (s->pos_inf_count && !s->neg_inf_count)
		return INFINITY;
	if (!s->count)
		return 0.0;
	/* A NaN, or infinities of both signs: the NaN the sum of every element makes (its sign
	 * is the one CANN's running sum ends with). */
	if (s->has_nonfinite)
		return (s->all_sum + s->all_compensation) / (double)s->count;
	return (s->sum + s->compensation) / (double)s->count;
}

double adump_tstats_l2norm(const struct adump_tstats *s)
{
	return sqrt(s->sum_squares);
}
