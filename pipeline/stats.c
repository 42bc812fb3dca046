/* SPDX-License-Identifier: Apache-2.0 */
/* Streaming statistics for stats dump (reference §2.4): a file's payload, fed in chunks cut
 * anywhere, is split into each tensor's whole elements for common/tstats.c (or its statistics
 * come computed at handover, adump_statacc_record()), and printed by
 * CANN's device-side rules (adump_tstats_cann_*()). Numbers print like a C++ ostream (%g,
 * six significant digits); integer types print exactly. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adump/adump.h"
#include "common/common.h"
#include "pipeline/stats.h"
#include "ring/ring.h"

static bool is_stat_tensor(const struct adump_tensor *t)
{
	return (t->kind == ADUMP_TENSOR_INPUT || t->kind == ADUMP_TENSOR_OUTPUT) &&
	       adump_tstats_kind_of(t->dtype, NULL) != ADUMP_TSTATS_NONE;
}

/* Per-tensor state: the statistics themselves are common/tstats.c's. */
struct statacc_priv {
	struct adump_tstats s;
	bool is_incomplete;             /* a gap in the feed: stats print as NA */
};

int adump_statacc_init(struct adump_statacc *acc, const struct adump_op *op, uint32_t stats_mask)
{
	if (!acc || !op || (op->tensor_count && !op->tensors))
		return -EINVAL;
	memset(acc, 0, sizeof(*acc));
	acc->op = op;
	acc->stats_mask = stats_mask ? stats_mask & ADUMP_STAT_ALL : ADUMP_STAT_DEFAULT;
	if (op->tensor_count) {
		acc->tensors = calloc(op->tensor_count, sizeof(struct statacc_priv));
		if (!acc->tensors)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < op->tensor_count; i++)
		adump_tstats_init(&((struct statacc_priv *)acc->tensors)[i].s, op->tensors[i].dtype);
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
			uint32_t elem_bytes = pv->s.elem_bytes;
			uint64_t whole_end = acc->tensor_start + t->bytes / elem_bytes * elem_bytes;
			const uint8_t *q = p;
			size_t left = take;
			uint64_t pos = acc->next_offset;

			/* Trailing bytes that do not make a whole element are not counted. */
			if (pos + left > whole_end)
				left = pos < whole_end ? (size_t)(whole_end - pos) : 0;
			if (acc->partial_bytes && left) {
				size_t need = elem_bytes - acc->partial_bytes;
				size_t n = need < left ? need : left;

				memcpy(acc->partial + acc->partial_bytes, q, n);
				acc->partial_bytes += (uint32_t)n;
				q += n;
				left -= n;
				if (acc->partial_bytes == elem_bytes) {
					adump_tstats_add(&pv->s, acc->partial, 1);
					acc->partial_bytes = 0;
				}
			}
			if (left >= elem_bytes) {
				size_t n = left / elem_bytes;

				adump_tstats_add(&pv->s, q, n);
				q += n * elem_bytes;
				left -= n * elem_bytes;
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

void adump_statacc_record(struct adump_statacc *acc, const struct adump_rec *rec)
{
	const struct adump_op_rec *op = rec->op;

	if (!op->tstats) {
		if (rec->len)
			adump_statacc_feed(acc, rec->offset, adump_rec_data(rec), rec->len);
		return;
	}
	if (acc->has_handover)
		return;
	/* The producer's statistics cover every element of every tensor: as if all bytes had
	 * been fed. Tensors without statistics stay as adump_statacc_init() left them. */
	for (uint32_t i = 0; i < acc->op->tensor_count; i++)
		if (is_stat_tensor(&acc->op->tensors[i]))
			priv(acc, i)->s = op->tstats[i];
	acc->has_handover = true;
	acc->tensor_index = acc->op->tensor_count;
	acc->next_offset = op->payload_bytes;
	acc->partial_bytes = 0;
}

const struct adump_tstats *adump_statacc_tensor(const struct adump_statacc *acc, uint32_t index)
{
	const struct adump_tensor *t;
	const struct statacc_priv *pv;

	if (!acc->op || index >= acc->op->tensor_count)
		return NULL;
	t = &acc->op->tensors[index];
	pv = (const struct statacc_priv *)acc->tensors + index;
	if (!is_stat_tensor(t) || pv->is_incomplete || pv->s.count != t->bytes / pv->s.elem_bytes)
		return NULL;
	return &pv->s;
}

static void put_double(FILE *f, double v)
{
	fprintf(f, "%g", v);
}

static void put_extreme(FILE *f, const struct adump_tstats *s, bool is_max)
{
	if (s->kind == ADUMP_TSTATS_SINT)
		fprintf(f, "%lld", (long long)(is_max ? s->smax : s->smin));
	else if (s->kind == ADUMP_TSTATS_UINT || s->kind == ADUMP_TSTATS_BOOL)
		fprintf(f, "%llu", (unsigned long long)(is_max ? s->umax : s->umin));
	else
		put_double(f, is_max ? adump_tstats_cann_max(s) : adump_tstats_cann_min(s));
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
static void put_stat(FILE *f, const struct statacc_priv *pv, uint32_t bit, uint64_t count)
{
	const struct adump_tstats *s = &pv->s;

	if (pv->is_incomplete || s->count != count) {
		fputs("NA", f);
		return;
	}
	switch (bit) {
	case ADUMP_STAT_MAX:
	case ADUMP_STAT_MIN:
		if (!count)
			fputc('0', f);
		else
			put_extreme(f, s, bit == ADUMP_STAT_MAX);
		break;
	case ADUMP_STAT_AVG: put_double(f, adump_tstats_cann_mean(s)); break;
	case ADUMP_STAT_NAN: fprintf(f, "%llu", (unsigned long long)s->nan_count); break;
	case ADUMP_STAT_NEG_INF: fprintf(f, "%llu", (unsigned long long)s->neg_inf_count); break;
	case ADUMP_STAT_POS_INF: fprintf(f, "%llu", (unsigned long long)s->pos_inf_count); break;
	case ADUMP_STAT_L2NORM: put_double(f, adump_tstats_l2norm(s)); break;
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
			const char *dt = adump_dtype_name(t->dtype);
			const char *fmt = adump_format_name(t->format);
			uint64_t count;

			if ((int)t->kind != kind)
				continue;
			fprintf(f, "%s,%u,%llu,%s,%s,", kind == ADUMP_TENSOR_INPUT ? "Input" : "Output",
				index++, (unsigned long long)t->bytes, dt ? dt : "DT_UNDEFINED",
				fmt ? fmt : "-");
			put_shape(f, t);
			if (pv->s.kind == ADUMP_TSTATS_NONE) {
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
			count = t->bytes / pv->s.elem_bytes;
			if (is_fixed) {
				for (size_t c = 0; c < 7; c++) {
					fputc(',', f);
					if (!stat_columns[c].bit)
						fprintf(f, "%llu", (unsigned long long)count);
					else
						put_stat(f, pv, stat_columns[c].bit, count);
				}
			} else {
				fprintf(f, ",%llu", (unsigned long long)count);
				for (size_t c = 0; c < 8; c++) {
					if (!(stat_columns[c].bit & acc->stats_mask))
						continue;
					fputc(',', f);
					put_stat(f, pv, stat_columns[c].bit, count);
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
