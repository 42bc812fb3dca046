/* SPDX-License-Identifier: Apache-2.0 */
/* Streaming statistics for stats dump (reference §2.4). Semantics follow CANN's device-side
 * writer: max/min start at the first element and take later ones that compare greater/less
 * (so NaN never replaces a number), the mean covers every element (a compensated sum over
 * the count), and a tensor with infinities of one sign only has that infinity as its mean. Numbers print like
 * a C++ ostream (%g, six significant digits); integer types print exactly. */
#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adump/adump.h"
#include "common/common.h"
#include "pipeline/stats.h"

enum elem_kind { ELEM_NONE = 0, ELEM_F16, ELEM_BF16, ELEM_F32, ELEM_F64, ELEM_SINT, ELEM_UINT,
		 ELEM_BOOL };

struct elem_type {
	enum elem_kind kind;
	uint32_t bytes;
};

static struct elem_type elem_type_of(int32_t dtype)
{
	switch (dtype) {
	case ADUMP_DT_FLOAT16: return (struct elem_type){ ELEM_F16, 2 };
	case ADUMP_DT_BF16: return (struct elem_type){ ELEM_BF16, 2 };
	case ADUMP_DT_FLOAT: return (struct elem_type){ ELEM_F32, 4 };
	case ADUMP_DT_DOUBLE: return (struct elem_type){ ELEM_F64, 8 };
	case ADUMP_DT_INT8: return (struct elem_type){ ELEM_SINT, 1 };
	case ADUMP_DT_INT16: return (struct elem_type){ ELEM_SINT, 2 };
	case ADUMP_DT_INT32: return (struct elem_type){ ELEM_SINT, 4 };
	case ADUMP_DT_INT64: return (struct elem_type){ ELEM_SINT, 8 };
	case ADUMP_DT_UINT8: return (struct elem_type){ ELEM_UINT, 1 };
	case ADUMP_DT_UINT16: return (struct elem_type){ ELEM_UINT, 2 };
	case ADUMP_DT_UINT32: return (struct elem_type){ ELEM_UINT, 4 };
	case ADUMP_DT_UINT64: return (struct elem_type){ ELEM_UINT, 8 };
	case ADUMP_DT_BOOL: return (struct elem_type){ ELEM_BOOL, 1 };
	default: return (struct elem_type){ ELEM_NONE, 0 };
	}
}

static bool is_stat_tensor(const struct adump_tensor *t)
{
	return (t->kind == ADUMP_TENSOR_INPUT || t->kind == ADUMP_TENSOR_OUTPUT) &&
	       elem_type_of(t->dtype).kind != ELEM_NONE;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "stats.c reads little-endian device data with host loads"
#endif

/* Per-tensor state. Sums use Neumaier compensation, so the mean does not depend on how the
 * payload was split and stays accurate over billions of elements. */
struct statacc_priv {
	double max;                     /* floating types */
	double min;
	int64_t smax, smin;             /* signed integers: exact */
	uint64_t umax, umin;            /* unsigned integers and bool: exact */
	double sum;
	double compensation;
	double sum_squares;             /* for L2norm */
	uint64_t seen_count;            /* elements accumulated so far */
	uint64_t nan_count;
	uint64_t neg_inf_count;
	uint64_t pos_inf_count;
	bool is_incomplete;             /* a gap in the feed: stats print as NA */
};

static float half_table[65536];
static pthread_once_t half_once = PTHREAD_ONCE_INIT;

static void half_table_fill(void)
{
	for (uint32_t h = 0; h < 65536; h++)
		half_table[h] = adump_half_to_float((uint16_t)h);
}

/* Sum, squares and the non-finite counts of one value. */
static inline void add_sum(double v, double *sum, double *comp, double *sq)
{
	double t = *sum + v;

	if (fabs(*sum) >= fabs(v))
		*comp += (*sum - t) + v;
	else
		*comp += (v - t) + *sum;
	*sum = t;
	*sq += v * v;
}

/* Floating types: CONV turns the loaded T into a double. max/min start at the first element
 * (a NaN there stays, as in CANN); later NaNs never compare. */
#define FEED_FLOAT(name, T, CONV)                                                        \
	static void feed_##name(struct statacc_priv *pv, const uint8_t *p, size_t n)    \
	{                                                                                \
		double mx = pv->max, mn = pv->min, sum = pv->sum;                        \
		double comp = pv->compensation, sq = pv->sum_squares;                    \
		uint64_t nan = 0, ninf = 0, pinf = 0;                                    \
                                                                                         \
		if (!n)                                                                  \
			return;                                                          \
		if (!pv->seen_count) {                                                   \
			T x0;                                                            \
			memcpy(&x0, p, sizeof(T));                                       \
			mx = mn = CONV(x0);                                              \
		}                                                                        \
		for (size_t i = 0; i < n; i++) {                                         \
			T x;                                                             \
			double v;                                                        \
                                                                                         \
			memcpy(&x, p + i * sizeof(T), sizeof(T));                        \
			v = CONV(x);                                                     \
			if (v > mx)                                                      \
				mx = v;                                                  \
			if (v < mn)                                                      \
				mn = v;                                                  \
			if (__builtin_expect(!isfinite(v), 0)) {                         \
				if (isnan(v))                                            \
					nan++;                                           \
				else if (v > 0)                                          \
					pinf++;                                          \
				else                                                     \
					ninf++;                                          \
			}                                                                \
			add_sum(v, &sum, &comp, &sq);                                    \
		}                                                                        \
		pv->max = mx;                                                            \
		pv->min = mn;                                                            \
		pv->sum = sum;                                                           \
		pv->compensation = comp;                                                 \
		pv->sum_squares = sq;                                                    \
		pv->nan_count += nan;                                                    \
		pv->neg_inf_count += ninf;                                               \
		pv->pos_inf_count += pinf;                                               \
		pv->seen_count += n;                                                     \
	}

/* Integer types: exact extremes in @MX/@MN (smax/smin or umax/umin). */
#define FEED_INT(name, T, MX, MN, CONV)                                                  \
	static void feed_##name(struct statacc_priv *pv, const uint8_t *p, size_t n)    \
	{                                                                                \
		double sum = pv->sum, comp = pv->compensation, sq = pv->sum_squares;     \
                                                                                         \
		if (!n)                                                                  \
			return;                                                          \
		if (!pv->seen_count) {                                                   \
			T x0;                                                            \
			memcpy(&x0, p, sizeof(T));                                       \
			pv->MX = pv->MN = CONV(x0);                                      \
		}                                                                        \
		for (size_t i = 0; i < n; i++) {                                         \
			T x;                                                             \
                                                                                         \
			memcpy(&x, p + i * sizeof(T), sizeof(T));                        \
			if (CONV(x) > pv->MX)                                            \
				pv->MX = CONV(x);                                        \
			if (CONV(x) < pv->MN)                                            \
				pv->MN = CONV(x);                                        \
			add_sum((double)CONV(x), &sum, &comp, &sq);                      \
		}                                                                        \
		pv->sum = sum;                                                           \
		pv->compensation = comp;                                                 \
		pv->sum_squares = sq;                                                    \
		pv->seen_count += n;                                                     \
	}

#define AS_DOUBLE(x) ((double)(x))
#define HALF(x) ((double)half_table[(x)])
#define BF16(x) ((double)adump_bf16_to_float(x))
#define AS_BOOL(x) ((uint64_t)((x) != 0))
#define AS_SIGNED(x) ((int64_t)(x))
#define AS_UNSIGNED(x) ((uint64_t)(x))

FEED_FLOAT(f16, uint16_t, HALF)
FEED_FLOAT(bf16, uint16_t, BF16)
FEED_FLOAT(f32, float, AS_DOUBLE)
FEED_FLOAT(f64, double, AS_DOUBLE)
FEED_INT(s8, int8_t, smax, smin, AS_SIGNED)
FEED_INT(s16, int16_t, smax, smin, AS_SIGNED)
FEED_INT(s32, int32_t, smax, smin, AS_SIGNED)
FEED_INT(s64, int64_t, smax, smin, AS_SIGNED)
FEED_INT(u8, uint8_t, umax, umin, AS_UNSIGNED)
FEED_INT(u16, uint16_t, umax, umin, AS_UNSIGNED)
FEED_INT(u32, uint32_t, umax, umin, AS_UNSIGNED)
FEED_INT(u64, uint64_t, umax, umin, AS_UNSIGNED)
FEED_INT(bool, uint8_t, umax, umin, AS_BOOL)

/* @n whole elements at @p. */
static void feed_elements(struct statacc_priv *pv, struct elem_type et, const uint8_t *p, size_t n)
{
	switch (et.kind) {
	case ELEM_F16: feed_f16(pv, p, n); break;
	case ELEM_BF16: feed_bf16(pv, p, n); break;
	case ELEM_F32: feed_f32(pv, p, n); break;
	case ELEM_F64: feed_f64(pv, p, n); break;
	case ELEM_BOOL: feed_bool(pv, p, n); break;
	case ELEM_SINT:
		switch (et.bytes) {
		case 1: feed_s8(pv, p, n); break;
		case 2: feed_s16(pv, p, n); break;
		case 4: feed_s32(pv, p, n); break;
		default: feed_s64(pv, p, n); break;
		}
		break;
	case ELEM_UINT:
		switch (et.bytes) {
		case 1: feed_u8(pv, p, n); break;
		case 2: feed_u16(pv, p, n); break;
		case 4: feed_u32(pv, p, n); break;
		default: feed_u64(pv, p, n); break;
		}
		break;
	default:
		break;
	}
}

int adump_statacc_init(struct adump_statacc *acc, const struct adump_op *op, uint32_t stats_mask)
{
	if (!acc || !op || (op->tensor_count && !op->tensors))
		return -EINVAL;
	memset(acc, 0, sizeof(*acc));
	acc->op = op;
	acc->stats_mask = stats_mask ? stats_mask & ADUMP_STAT_ALL : ADUMP_STAT_DEFAULT;
	pthread_once(&half_once, half_table_fill);
	if (op->tensor_count) {
		acc->tensors = calloc(op->tensor_count, sizeof(struct statacc_priv));
		if (!acc->tensors)
			return -ENOMEM;
	}
	return 0;
}

static struct statacc_priv *priv(struct adump_statacc *acc, uint32_t i)
{
	return (struct statacc_priv *)acc->tensors + i;
}

void adump_statacc_feed(struct adump_statacc *acc, uint64_t payload_offset, const void *data,
			size_t len)
{
	const uint8_t *p = data;
	const struct adump_op *op = acc->op;

	if (payload_offset < acc->next_offset) {
		/* Bytes seen already: skip the overlap. */
		uint64_t skip = acc->next_offset - payload_offset;

		if (skip >= len)
			return;
		p += skip;
		len -= (size_t)skip;
		payload_offset = acc->next_offset;
	}
	if (payload_offset > acc->next_offset) {
		/* A gap: every tensor with bytes inside [next_offset, payload_offset) cannot be
		 * complete. */
		while (acc->tensor_index < op->tensor_count) {
			const struct adump_tensor *t = &op->tensors[acc->tensor_index];
			uint64_t end = acc->tensor_start + t->bytes;

			if (t->bytes && end > acc->next_offset && acc->tensor_start < payload_offset)
				priv(acc, acc->tensor_index)->is_incomplete = true;
			if (payload_offset < end)
				break;
			acc->tensor_start = end;
			acc->tensor_index++;
		}
		acc->partial_bytes = 0;
		acc->next_offset = payload_offset;
	}
	while (len && acc->tensor_index < op->tensor_count) {
		const struct adump_tensor *t = &op->tensors[acc->tensor_index];
		uint64_t end = acc->tensor_start + t->bytes;
		uint64_t in_tensor = end - acc->next_offset;
		size_t take = in_tensor < len ? (size_t)in_tensor : len;

		if (in_tensor == 0) {
			acc->tensor_index++;
			acc->tensor_start = end;
			acc->partial_bytes = 0;
			continue;
		}
		if (is_stat_tensor(t)) {
			struct statacc_priv *pv = priv(acc, acc->tensor_index);
			struct elem_type et = elem_type_of(t->dtype);
			uint64_t whole_end = acc->tensor_start + t->bytes / et.bytes * et.bytes;
			const uint8_t *q = p;
			size_t left = take;
			uint64_t pos = acc->next_offset;

			/* Trailing bytes that do not make a whole element are not counted. */
			if (pos + left > whole_end)
				left = pos < whole_end ? (size_t)(whole_end - pos) : 0;
			if (acc->partial_bytes && left) {
				size_t need = et.bytes - acc->partial_bytes;
				size_t n = need < left ? need : left;

				memcpy(acc->partial + acc->partial_bytes, q, n);
				acc->partial_bytes += (uint32_t)n;
				q += n;
				left -= n;
				if (acc->partial_bytes == et.bytes) {
					feed_elements(pv, et, acc->partial, 1);
					acc->partial_bytes = 0;
				}
			}
			if (left >= et.bytes) {
				size_t n = left / et.bytes;

				feed_elements(pv, et, q, n);
				q += n * et.bytes;
				left -= n * et.bytes;
			}
			if (left) {
				memcpy(acc->partial, q, left);
				acc->partial_bytes = (uint32_t)left;
			}
		}
		p += take;
		len -= take;
		acc->next_offset += take;
		if (acc->next_offset == end) {
			acc->tensor_index++;
			acc->tensor_start = end;
			acc->partial_bytes = 0;
		}
	}
	if (len)
		acc->next_offset += len;        /* past the last tensor: nothing to count */
}

static void put_double(FILE *f, double v)
{
	fprintf(f, "%g", v);
}

static void put_extreme(FILE *f, const struct statacc_priv *pv, struct elem_type et, bool is_max)
{
	if (et.kind == ELEM_SINT)
		fprintf(f, "%lld", (long long)(is_max ? pv->smax : pv->smin));
	else if (et.kind == ELEM_UINT || et.kind == ELEM_BOOL)
		fprintf(f, "%llu", (unsigned long long)(is_max ? pv->umax : pv->umin));
	else
		put_double(f, is_max ? pv->max : pv->min);
}

/* As CANN: infinities of one sign only make the mean that infinity. */
static double final_avg(const struct statacc_priv *s)
{
	if (s->neg_inf_count && !s->pos_inf_count)
		return -INFINITY;
	if (s->pos_inf_count && !s->neg_inf_count)
		return INFINITY;
	return s->seen_count ? (s->sum + s->compensation) / (double)s->seen_count : 0.0;
}

static void put_shape(FILE *f, const struct adump_tensor *t)
{
	if (!t->dim_count) {
		fputc('-', f);
		return;
	}
	for (uint32_t i = 0; i < t->dim_count; i++)
		fprintf(f, "%s%llu", i ? "x" : "", (unsigned long long)t->dims[i]);
}

/* One stat column: @bit selects which; NA when the tensor was not fully fed. */
static void put_stat(FILE *f, const struct statacc_priv *pv, struct elem_type et, uint32_t bit,
		     uint64_t count)
{
	const struct statacc_priv *s = pv;

	if (s->is_incomplete || s->seen_count != count) {
		fputs("NA", f);
		return;
	}
	switch (bit) {
	case ADUMP_STAT_MAX:
	case ADUMP_STAT_MIN:
		if (!count)
			fputc('0', f);
		else
			put_extreme(f, pv, et, bit == ADUMP_STAT_MAX);
		break;
	case ADUMP_STAT_AVG: put_double(f, final_avg(s)); break;
	case ADUMP_STAT_NAN: fprintf(f, "%llu", (unsigned long long)s->nan_count); break;
	case ADUMP_STAT_NEG_INF: fprintf(f, "%llu", (unsigned long long)s->neg_inf_count); break;
	case ADUMP_STAT_POS_INF: fprintf(f, "%llu", (unsigned long long)s->pos_inf_count); break;
	case ADUMP_STAT_L2NORM: put_double(f, sqrt(s->sum_squares)); break;
	}
}

static const struct {
	uint32_t bit;
	const char *name;
} stat_columns[] = {
	{ ADUMP_STAT_MAX, "Max Value" },
	{ ADUMP_STAT_MIN, "Min Value" },
	{ ADUMP_STAT_AVG, "Avg Value" },
	{ 0, "Count" },
	{ ADUMP_STAT_NAN, "Nan Count" },
	{ ADUMP_STAT_NEG_INF, "Negative Inf Count" },
	{ ADUMP_STAT_POS_INF, "Positive Inf Count" },
	{ ADUMP_STAT_L2NORM, "l2norm" },
};

int adump_statacc_csv(struct adump_statacc *acc, char **out, size_t *len)
{
	/* The default six print in the fixed layout of CANN's device writer; any other
	 * selection prints Count first, then the selected columns in order (host writer). */
	bool is_fixed = acc->stats_mask == ADUMP_STAT_DEFAULT;
	const struct adump_op *op = acc->op;
	size_t n_len = 0;
	char *text = NULL;
	FILE *f = open_memstream(&text, &n_len);

	if (!f)
		return -ENOMEM;
	fputs("Input/Output,Index,Data Size,Data Type,Format,Shape", f);
	if (is_fixed) {
		for (size_t c = 0; c < 7; c++)
			fprintf(f, ",%s", stat_columns[c].name);
	} else {
		fputs(",Count", f);
		for (size_t c = 0; c < 8; c++)
			if (stat_columns[c].bit & acc->stats_mask)
				fprintf(f, ",%s", stat_columns[c].name);
	}
	fputc('\n', f);
	for (int kind = ADUMP_TENSOR_INPUT; kind <= ADUMP_TENSOR_OUTPUT; kind++) {
		uint32_t index = 0;

		for (uint32_t i = 0; i < op->tensor_count; i++) {
			const struct adump_tensor *t = &op->tensors[i];
			const struct statacc_priv *pv = priv(acc, i);
			struct elem_type et = elem_type_of(t->dtype);
			const char *dt = adump_dtype_name(t->dtype);
			const char *fmt = adump_format_name(t->format);
			uint64_t count;

			if ((int)t->kind != kind)
				continue;
			fprintf(f, "%s,%u,%llu,%s,%s,", kind == ADUMP_TENSOR_INPUT ? "Input" : "Output",
				index++, (unsigned long long)t->bytes, dt ? dt : "DT_UNDEFINED",
				fmt ? fmt : "-");
			put_shape(f, t);
			if (et.kind == ELEM_NONE) {
				/* Unsupported dtype: every stat column empty. */
				size_t cols = is_fixed ? 7 : 1;

				for (size_t c = 0; !is_fixed && c < 8; c++)
					if (stat_columns[c].bit & acc->stats_mask)
						cols++;
				for (size_t c = 0; c < cols; c++)
					fputc(',', f);
				fputc('\n', f);
				continue;
			}
			count = t->bytes / et.bytes;
			if (is_fixed) {
				for (size_t c = 0; c < 7; c++) {
					fputc(',', f);
					if (!stat_columns[c].bit)
						fprintf(f, "%llu", (unsigned long long)count);
					else
						put_stat(f, pv, et, stat_columns[c].bit, count);
				}
			} else {
				fprintf(f, ",%llu", (unsigned long long)count);
				for (size_t c = 0; c < 8; c++) {
					if (!(stat_columns[c].bit & acc->stats_mask))
						continue;
					fputc(',', f);
					put_stat(f, pv, et, stat_columns[c].bit, count);
				}
			}
			fputc('\n', f);
		}
	}
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	*out = text;
	if (len)
		*len = n_len;
	return 0;
}

void adump_statacc_fini(struct adump_statacc *acc)
{
	if (!acc)
		return;
	free(acc->tensors);
	acc->tensors = NULL;
	acc->op = NULL;
}
