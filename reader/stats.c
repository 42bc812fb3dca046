/* SPDX-License-Identifier: Apache-2.0 */
/* Per-tensor statistics (min, max, mean, NaN and Inf counts), streamed through the payload
 * one step at a time so a tensor of any size needs only a fixed buffer. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reader/reader_int.h"

bool adump_reader_stats_supported(int32_t dtype)
{
	switch (dtype) {
	case ADUMP_DT_FLOAT:
	case ADUMP_DT_FLOAT16:
	case ADUMP_DT_BF16:
	case ADUMP_DT_DOUBLE:
	case ADUMP_DT_INT8:
	case ADUMP_DT_UINT8:
	case ADUMP_DT_INT16:
	case ADUMP_DT_UINT16:
	case ADUMP_DT_INT32:
	case ADUMP_DT_UINT32:
	case ADUMP_DT_INT64:
	case ADUMP_DT_UINT64:
	case ADUMP_DT_BOOL:
		return true;
	default:
		return false;
	}
}

/* Values are summed plainly in blocks of ACCUM_BLOCK (error ~ ACCUM_BLOCK * eps relative),
 * and block sums with Neumaier compensation: accurate, and cheap per element. */
#define ACCUM_BLOCK 4096u

struct accum {
	struct adump_reader_stats *s;
	double sum;                     /* sum + compensation is the total of closed blocks */
	double compensation;
	double block;
	unsigned block_count;
};

#define ACCUM_INLINE static inline __attribute__((always_inline))

ACCUM_INLINE void sum_add(struct accum *a, double v)
{
	double t = a->sum + v;

	if (fabs(a->sum) >= fabs(v))
		a->compensation += (a->sum - t) + v;
	else
		a->compensation += (v - t) + a->sum;
	a->sum = t;
}

ACCUM_INLINE void block_add(struct accum *a, double v)
{
	a->block += v;
	if (++a->block_count == ACCUM_BLOCK) {
		sum_add(a, a->block);
		a->block = 0;
		a->block_count = 0;
	}
}

/* min and max start at +inf / -inf (or the integer extremes), so no first-element branch. */
ACCUM_INLINE void add_float(struct accum *a, double v)
{
	struct adump_reader_stats *s = a->s;

	if (isnan(v)) {
		s->nan_count++;
		return;
	}
	if (isinf(v)) {
		s->inf_count++;
		return;
	}
	if (v < s->min)
		s->min = v;
	if (v > s->max)
		s->max = v;
	block_add(a, v);
	s->finite_count++;
}

ACCUM_INLINE void add_int(struct accum *a, int64_t v)
{
	struct adump_reader_stats *s = a->s;

	if (v < s->min_int)
		s->min_int = v;
	if (v > s->max_int)
		s->max_int = v;
	block_add(a, (double)v);
	s->finite_count++;
}

ACCUM_INLINE void add_uint(struct accum *a, uint64_t v)
{
	struct adump_reader_stats *s = a->s;

	if (v < s->min_uint)
		s->min_uint = v;
	if (v > s->max_uint)
		s->max_uint = v;
	block_add(a, (double)v);
	s->finite_count++;
}

/* Payload bytes are little-endian, like the host this reader is built for. The switch is
 * outside the loops so each loop is a tight pass over one element type. */
static void add_elements(struct accum *a, int32_t dtype, const unsigned char *p, size_t count)
{
	switch (dtype) {
	case ADUMP_DT_FLOAT:
		for (size_t i = 0; i < count; i++) {
			float f;

			memcpy(&f, p + 4 * i, 4);
			add_float(a, f);
		}
		break;
	case ADUMP_DT_DOUBLE:
		for (size_t i = 0; i < count; i++) {
			double d;

			memcpy(&d, p + 8 * i, 8);
			add_float(a, d);
		}
		break;
	case ADUMP_DT_FLOAT16:
		for (size_t i = 0; i < count; i++) {
			uint16_t h;

			memcpy(&h, p + 2 * i, 2);
			add_float(a, adump_half_to_float(h));
		}
		break;
	case ADUMP_DT_BF16:
		for (size_t i = 0; i < count; i++) {
			uint16_t h;

			memcpy(&h, p + 2 * i, 2);
			add_float(a, adump_bf16_to_float(h));
		}
		break;
	case ADUMP_DT_INT8:
		for (size_t i = 0; i < count; i++)
			add_int(a, (int8_t)p[i]);
		break;
	case ADUMP_DT_BOOL:
		for (size_t i = 0; i < count; i++)
			add_int(a, p[i] != 0);
		break;
	case ADUMP_DT_UINT8:
		for (size_t i = 0; i < count; i++)
			add_uint(a, p[i]);
		break;
	case ADUMP_DT_INT16:
		for (size_t i = 0; i < count; i++) {
			int16_t v;

			memcpy(&v, p + 2 * i, 2);
			add_int(a, v);
		}
		break;
	case ADUMP_DT_UINT16:
		for (size_t i = 0; i < count; i++) {
			uint16_t v;

			memcpy(&v, p + 2 * i, 2);
			add_uint(a, v);
		}
		break;
	case ADUMP_DT_INT32:
		for (size_t i = 0; i < count; i++) {
			int32_t v;

			memcpy(&v, p + 4 * i, 4);
			add_int(a, v);
		}
		break;
	case ADUMP_DT_UINT32:
		for (size_t i = 0; i < count; i++) {
			uint32_t v;

			memcpy(&v, p + 4 * i, 4);
			add_uint(a, v);
		}
		break;
	case ADUMP_DT_INT64:
		for (size_t i = 0; i < count; i++) {
			int64_t v;

			memcpy(&v, p + 8 * i, 8);
			add_int(a, v);
		}
		break;
	case ADUMP_DT_UINT64:
		for (size_t i = 0; i < count; i++) {
			uint64_t v;

			memcpy(&v, p + 8 * i, 8);
			add_uint(a, v);
		}
		break;
	}
}

static bool is_signed_int(int32_t dtype)
{
	return dtype == ADUMP_DT_INT8 || dtype == ADUMP_DT_INT16 || dtype == ADUMP_DT_INT32 ||
	       dtype == ADUMP_DT_INT64 || dtype == ADUMP_DT_BOOL;
}

static bool is_unsigned_int(int32_t dtype)
{
	return dtype == ADUMP_DT_UINT8 || dtype == ADUMP_DT_UINT16 || dtype == ADUMP_DT_UINT32 ||
	       dtype == ADUMP_DT_UINT64;
}

int adump_reader_tensor_stats(struct adump_reader *r, uint32_t tensor,
			      struct adump_reader_stats *out)
{
	const struct adump_reader_header *h = adump_reader_header(r);
	const struct adump_reader_tensor *t;
	struct adump_reader_stats s = { 0 };
	struct accum a = { .s = &s };
	const unsigned char *mapped;
	unsigned char *buf = NULL;
	uint64_t done = 0;
	size_t elem, step;
	int ret = 0;

	if (!h || tensor >= h->tensor_count || !out)
		return -ADUMP_ERR_CONFIG;
	t = &h->tensors[tensor];
	if (!adump_reader_stats_supported(t->info.dtype))
		return adump_reader_fail(r, -ADUMP_ERR_UNSUPPORTED,
					 "%s %u: no statistics for dtype %d (%s)",
					 adump_reader_kind_name(t->info.kind), t->index,
					 t->info.dtype,
					 adump_dtype_name(t->info.dtype) ? adump_dtype_name(t->info.dtype)
									 : "unknown");
	elem = adump_dtype_bits(t->info.dtype) / 8;
	if (t->info.bytes % elem)
		return adump_reader_fail(r, -ADUMP_ERR_CORRUPT,
					 "%s %u: size %llu is not a whole number of %zu-byte %s "
					 "elements",
					 adump_reader_kind_name(t->info.kind), t->index,
					 (unsigned long long)t->info.bytes, elem,
					 adump_dtype_name(t->info.dtype));
	s.element_count = t->info.bytes / elem;
	s.is_integer = is_signed_int(t->info.dtype) || is_unsigned_int(t->info.dtype);
	s.min = INFINITY;
	s.max = -INFINITY;
	s.min_int = INT64_MAX;
	s.max_int = INT64_MIN;
	s.min_uint = UINT64_MAX;
	s.max_uint = 0;

	mapped = adump_reader_map(r, tensor);
	if (mapped) {
		add_elements(&a, t->info.dtype, mapped, (size_t)s.element_count);
	} else if (t->info.bytes) {
		/* A whole number of elements per step keeps elements from straddling reads. */
		step = ADUMP_READER_STEP_BYTES - ADUMP_READER_STEP_BYTES % elem;
		if (t->info.bytes < step)
			step = (size_t)t->info.bytes;
		buf = malloc(step);
		if (!buf)
			return adump_reader_fail(r, -ENOMEM, "out of memory for a read buffer");
		while (done < t->info.bytes) {
			size_t n = t->info.bytes - done < step ? (size_t)(t->info.bytes - done) : step;

			ret = adump_reader_read(r, tensor, done, buf, n);
			if (ret < 0)
				goto out;
			add_elements(&a, t->info.dtype, buf, n / elem);
			done += n;
		}
	}
	sum_add(&a, a.block);
	if (!s.is_integer) {
		/* The integer fields only mean something for integer dtypes. */
		s.min_int = s.max_int = 0;
		s.min_uint = s.max_uint = 0;
	}
	if (!s.finite_count) {
		/* No value entered min/max/mean: report zeros rather than the start values. */
		s.min = s.max = 0;
		s.min_int = s.max_int = 0;
		s.min_uint = s.max_uint = 0;
	} else {
		s.mean = (a.sum + a.compensation) / (double)s.finite_count;
	}
	if (s.finite_count && is_signed_int(t->info.dtype)) {
		s.min = (double)s.min_int;
		s.max = (double)s.max_int;
		s.min_uint = s.min_int < 0 ? 0 : (uint64_t)s.min_int;
		s.max_uint = s.max_int < 0 ? 0 : (uint64_t)s.max_int;
	} else if (s.finite_count && is_unsigned_int(t->info.dtype)) {
		s.min = (double)s.min_uint;
		s.max = (double)s.max_uint;
		s.min_int = s.min_uint > INT64_MAX ? INT64_MAX : (int64_t)s.min_uint;
		s.max_int = s.max_uint > INT64_MAX ? INT64_MAX : (int64_t)s.max_uint;
	}
	*out = s;
out:
	free(buf);
	return ret;
}
