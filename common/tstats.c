/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor statistics: one pass over a tensor's elements keeps what both the capture's
 * statistics files (CANN's rules) and the reader's statistics (finite values) are read from
 * (common/common.h, "Tensor statistics"). */
#include <math.h>
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

/* Neumaier: the running sum and what it lost, so the total is accurate over billions of
 * elements whatever their order of magnitude. */
static inline void add_sum(double v, double *sum, double *comp)
{
	double t = *sum + v;

	if (fabs(*sum) >= fabs(v))
		*comp += (*sum - t) + v;
	else
		*comp += (v - t) + *sum;
	*sum = t;
}

/* Floating types: CONV turns the loaded T into a double. Non-finite values are rare: they
 * are counted and kept apart, on the slow path. */
#define ADD_FLOAT(name, T, CONV)                                                         \
	static void add_##name(struct adump_tstats *s, const uint8_t *p, size_t n)       \
	{                                                                                \
		double mx = s->max, mn = s->min, sum = s->sum;                           \
		double comp = s->compensation, sq = s->sum_squares;                      \
                                                                                         \
		if (!s->count) {                                                         \
			T x0;                                                            \
			memcpy(&x0, p, sizeof(T));                                       \
			s->first = CONV(x0);                                             \
		}                                                                        \
		for (size_t i = 0; i < n; i++) {                                         \
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
				add_sum(v, &sum, &comp);                                 \
			} else {                                                         \
				if (isnan(v))                                            \
					s->nan_count++;                                  \
				else if (v > 0)                                          \
					s->pos_inf_count++;                              \
				else                                                     \
					s->neg_inf_count++;                              \
				if (!s->has_nonfinite) {                                 \
					s->all_sum = sum;                                \
					s->all_compensation = comp;                      \
					s->has_nonfinite = true;                         \
				}                                                        \
			}                                                                \
			if (__builtin_expect(s->has_nonfinite, 0))                       \
				add_sum(v, &s->all_sum, &s->all_compensation);           \
			sq += v * v;                                                     \
		}                                                                        \
		s->max = mx;                                                             \
		s->min = mn;                                                             \
		s->sum = sum;                                                            \
		s->compensation = comp;                                                  \
		s->sum_squares = sq;                                                     \
		s->count += n;                                                           \
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

#define AS_DOUBLE(x) ((double)(x))
#define HALF(x) ((double)half_table[(x)])
#define BF16(x) ((double)adump_bf16_to_float(x))
#define AS_BOOL(x) ((uint64_t)((x) != 0))
#define AS_SIGNED(x) ((int64_t)(x))
#define AS_UNSIGNED(x) ((uint64_t)(x))

ADD_FLOAT(f16, uint16_t, HALF)
ADD_FLOAT(bf16, uint16_t, BF16)
ADD_FLOAT(f32, float, AS_DOUBLE)
ADD_FLOAT(f64, double, AS_DOUBLE)
ADD_INT(s8, int8_t, smax, smin, AS_SIGNED)
ADD_INT(s16, int16_t, smax, smin, AS_SIGNED)
ADD_INT(s32, int32_t, smax, smin, AS_SIGNED)
ADD_INT(s64, int64_t, smax, smin, AS_SIGNED)
ADD_INT(u8, uint8_t, umax, umin, AS_UNSIGNED)
ADD_INT(u16, uint16_t, umax, umin, AS_UNSIGNED)
ADD_INT(u32, uint32_t, umax, umin, AS_UNSIGNED)
ADD_INT(u64, uint64_t, umax, umin, AS_UNSIGNED)
ADD_INT(bool, uint8_t, umax, umin, AS_BOOL)

void adump_tstats_add(struct adump_tstats *s, const void *data, size_t count)
{
	const uint8_t *p = data;

	if (!count)
		return;
	switch (s->kind) {
	case ADUMP_TSTATS_F16:
		pthread_once(&half_once, half_table_fill);
		add_f16(s, p, count);
		break;
	case ADUMP_TSTATS_BF16: add_bf16(s, p, count); break;
	case ADUMP_TSTATS_F32: add_f32(s, p, count); break;
	case ADUMP_TSTATS_F64: add_f64(s, p, count); break;
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
