/* SPDX-License-Identifier: Apache-2.0 */
/* The result rows of a compare: a row's head columns (Index, OpType, the names, dtypes,
 * addresses, tensor and shape), the NaN-filled row of an op that could not be compared, the
 * row of one tensor pair (its metrics, the selected algorithms' cells and messages, OverFlow,
 * msprobe's columns, the verdict) and that of one pair of statistics. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/compare_int.h"

#define FP16_MAX 65504.0

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

/* A row with every column "NaN" but the ones given; @cells_set fills the rest. */
static struct cmp_row *op_row_add(struct adump_compare *c, struct cmp_op *op)
{
	struct cmp_row *row;

	/* Grown by doubling: an op of 64,000 tensors took minutes one row at a time. */
	if (op->row_count == op->row_cap) {
		uint32_t cap = op->row_cap ? op->row_cap * 2 : 4;
		struct cmp_row *rows = realloc(op->rows, cap * sizeof(*rows));

		if (!rows)
			return NULL;
		op->rows = rows;
		op->row_cap = cap;
	}
	row = &op->rows[op->row_count];
	memset(row, 0, sizeof(*row));
	row->cells = calloc(c->column_count, sizeof(char *));
	if (!row->cells)
		return NULL;
	op->row_count++;
	row->pub.index = op->id;
	row->pub.cosine = NAN;
	row->pub.max_relative_error = NAN;
	row->pub.op_name = op->name;
	row->pub.timestamp = op->file[MY] ? op->file[MY]->timestamp : 0;
	if (op->module) {
		row->module = xstrdup(op->module);
		row->pub.module = row->module;
	}
	return row;
}

static void row_set(struct cmp_row *row, uint32_t col, const char *text)
{
	free(row->cells[col]);
	row->cells[col] = xstrdup(text);
}

/* Columns 0-9 (and OverFlow): Index, OpType, the names, dtypes, addresses, tensor, shape. */
static void row_head(struct adump_compare *c, struct cmp_row *row, struct cmp_op *op,
		     const char *op_type, const struct adump_tensor *t[2], const char *tensor_id)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)op->id);
	row_set(row, 0, buf);
	row_set(row, 1, op_type ? op_type : "NaN");
	row_set(row, 2, op->file[MY] ? (op->shown ? op->shown : op->name) : "*");
	row_set(row, 5, op->file[GOLDEN] ? (op->shown ? op->shown : op->name) : "*");
	for (int s = 0; s < 2; s++) {
		row_set(row, 3 + 3 * s, t[s] ? adump_compare_dtype_name(t[s]->dtype) : "NaN");
		if (t[s] && t[s]->address)
			snprintf(buf, sizeof(buf), "%llu", (unsigned long long)t[s]->address);
		else
			snprintf(buf, sizeof(buf), "NaN");
		row_set(row, 4 + 3 * s, buf);
	}
	row_set(row, 8, tensor_id ? tensor_id : "NaN");
	if (t[MY]) {
		char shape[ADUMP_MAX_DIMS * 21 + 3];
		size_t len = 0;

		shape[len++] = '[';
		for (uint32_t d = 0; d < t[MY]->dim_count && d < ADUMP_MAX_DIMS; d++)
			len += (size_t)snprintf(shape + len, sizeof(shape) - len, "%s%llu", d ? "," : "",
						(unsigned long long)t[MY]->dims[d]);
		snprintf(shape + len, sizeof(shape) - len, "]");
		row_set(row, 9, shape);
	} else {
		row_set(row, 9, "NaN");
	}
	row->pub.tensor_id = row->cells[8];
	for (uint32_t i = 10; i < c->column_count; i++)
		if (!row->cells[i])
			row_set(row, i, "NaN");
}

const char *adump_compare_module_of(const struct adump_reader_header *h, const char *name)
{
	for (uint32_t i = 0; i < h->attr_count; i++)
		if (h->attrs[i].name && !strcmp(h->attrs[i].name, "module") && h->attrs[i].value &&
		    h->attrs[i].value[0])
			return h->attrs[i].value;
	if (h->op_name && !strncmp(h->op_name, "Module.", 7))
		return h->op_name;
	if (!strncmp(name, "Module.", 7) || !strncmp(name, "Module_", 7))
		return name;
	return NULL;
}

int adump_compare_row_failed(struct adump_compare *c, struct cmp_op *op, const char *op_type,
			     const char *message)
{
	const struct adump_tensor *none[2] = { NULL, NULL };
	struct cmp_row *row = op_row_add(c, op);

	if (!row)
		return -ENOMEM;
	row_head(c, row, op, op_type, none, NULL);
	if (c->cfg.has_msprobe)
		row_set(row, c->column_count - 2, "None");
	row_set(row, c->column_count - 1, message);
	return 0;
}

/* The name an op's api is read from: dump.json's for an msprobe entry (Aten.empty...), else
 * the header's or the file name's. */
static const char *op_api_name(const struct cmp_op *op)
{
	const struct cmp_file *f = op->file[MY];

	return f->ms && f->hname ? f->hname : op->shown ? op->shown : op->name;
}

/* The row of a tensor no op wrote (adump_is_uninit()): not compared, its own verdict. */
static int uninit_row(struct adump_compare *c, struct cmp_op *op, const char *op_type,
		      const struct adump_tensor *t[2], const char *tensor_id)
{
	struct cmp_row *row = op_row_add(c, op);
	char text[4200];

	if (!row)
		return -ENOMEM;
	snprintf(text, sizeof(text), "[%.4000s] uninitialized memory (what torch.empty and its kin "
		 "return, or what an op overwrites unread): not compared.", tensor_id);
	row_head(c, row, op, op_type, t, tensor_id);
	if (c->cfg.has_msprobe && !c->is_stats)
		row_set(row, c->column_count - 2, "None");
	row_set(row, c->column_count - 1, text);
	row->pub.verdict = ADUMP_COMPARE_UNINITIALIZED;
	row->reason = xstrdup("uninitialized memory: not compared");
	return 0;
}

int adump_compare_tensor_row(struct cmp_worker *w, struct cmp_op *op, const char *op_type,
			     enum adump_tensor_kind kind, uint32_t i, uint32_t first[2])
{
	struct adump_compare *c = w->c;
	const struct adump_reader_header *const *h = w->h;
	const struct adump_tensor *t[2];
	uint32_t idx[2] = { first[MY] + i, first[GOLDEN] + i };
	int32_t dtype[2];
	uint64_t count[2];
	char tensor_id[4096 + 32], cells[ADUMP_COMPARE_ALG_COUNT][ADUMP_COMPARE_CELL_BYTES];
	struct adump_compare_metrics m;
	struct adump_compare_acc acc;
	struct cmp_row *row;
	bool has_kl = false, is_ok = true;

	for (int s = 0; s < 2; s++) {
		t[s] = &h[s]->tensors[idx[s]].info;
		dtype[s] = t[s]->dtype;
	}
	snprintf(tensor_id, sizeof(tensor_id), "%s:%s:%u", op->shown ? op->shown : op->name,
		 kind == ADUMP_TENSOR_INPUT ? "input" : "output", i);
	if (adump_is_uninit(op_type, op_api_name(op), kind, i))
		return uninit_row(c, op, op_type, t, tensor_id);
	row = op_row_add(c, op);
	if (!row)
		return -ENOMEM;
	row_head(c, row, op, op_type, t, tensor_id);
	w->msg[0] = '\0';
	for (int s = 0; s < 2 && is_ok; s++) {
		uint32_t eb = adump_compare_elem_bytes(dtype[s]);
		uint64_t elements = adump_compare_dims_elements(t[s]->dims, t[s]->dim_count);

		if (!eb) {
			snprintf(w->msg, sizeof(w->msg), "[%s] %s: data type %s (%d) has no numeric "
				 "comparison.", op->name, s == MY ? "my output" : "ground truth",
				 adump_compare_dtype_name(dtype[s]), dtype[s]);
			is_ok = false;
		} else if (t[s]->bytes % eb && t[s]->bytes / eb < elements) {
			snprintf(w->msg, sizeof(w->msg), "[%s] %s: %llu bytes is not a whole number "
				 "of %s elements.", op->name, s == MY ? "my output" : "ground truth",
				 (unsigned long long)t[s]->bytes, adump_compare_dtype_name(dtype[s]));
			is_ok = false;
		} else {
			/* msaccucmp reads as many elements as the shape holds (fewer if the payload
			 * is short): bytes past them are not compared. */
			count[s] = t[s]->bytes / eb < elements ? t[s]->bytes / eb : elements;
		}
	}
	if (is_ok && count[MY] != count[GOLDEN]) {
		snprintf(w->msg, sizeof(w->msg),
			 "The my output dump data size (%llu) in ''%s'' does not match the ground "
			 "truth dump data size (%llu) in ''%s''.",
			 (unsigned long long)count[MY], w->path[MY],
			 (unsigned long long)count[GOLDEN], w->path[GOLDEN]);
		is_ok = false;
	}
	for (uint32_t k = 0; k < c->cfg.alg_count; k++)
		has_kl |= c->cfg.algs[k] == ADUMP_COMPARE_KL;
	if (is_ok && adump_compare_tensor_stream(w, idx, count[MY], dtype, has_kl, &acc) < 0) {
		char text[MSG_BYTES];

		memcpy(text, w->msg, sizeof(text));
		snprintf(w->msg, sizeof(w->msg), "[%.*s] %.*s", 2048, op->name, MSG_BYTES - 2100,
			 text);
		is_ok = false;
	}
	if (!is_ok) {
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", w->msg);
		row_set(row, c->column_count - 1, w->msg);
		if (c->cfg.has_msprobe)
			row_set(row, c->column_count - 2, "None");
		return 0;
	}
	{
		char *msgs[ADUMP_COMPARE_ALG_COUNT];

		for (int k = 0; k < ADUMP_COMPARE_ALG_COUNT; k++)
			msgs[k] = w->alg_msgs[k];
		adump_compare_acc_finish(&acc, adump_compare_is_scalar(t[MY]->dims, t[MY]->dim_count),
					 dtype[MY] == ADUMP_DT_BOOL && dtype[GOLDEN] == ADUMP_DT_BOOL,
					 w->path[MY], w->path[GOLDEN], &m, cells, msgs,
					 MSG_BYTES);
	}
	/* A shape holding a 0 reaches msaccucmp's cosine unflattened: the norm over the last axis
	 * has prod(dims[:-1]) elements, and numpy's truth test of it decides the branch. */
	if (count[MY] == 0 && t[MY]->dim_count >= 2 && !adump_compare_is_scalar(t[MY]->dims, t[MY]->dim_count)) {
		uint64_t lead = 1;

		for (uint32_t d = 0; d + 1 < t[MY]->dim_count; d++)
			lead *= t[MY]->dims[d];
		if (lead == 0) {
			m.value[ADUMP_COMPARE_COSINE] = 0;
			adump_compare_fmt6(cells[ADUMP_COMPARE_COSINE], ADUMP_COMPARE_CELL_BYTES, 0);
		} else if (lead > 1) {
			m.value[ADUMP_COMPARE_COSINE] = NAN;
			snprintf(cells[ADUMP_COMPARE_COSINE], ADUMP_COMPARE_CELL_BYTES, "NaN");
			snprintf(w->alg_msgs[ADUMP_COMPARE_COSINE], MSG_BYTES,
				 "Failed to execute 'compare' in 'CosineSimilarity'. The truth value of an "
				 "array with more than one element is ambiguous. Use a.any() or a.all()");
		}
	}
	/* Only the selected algorithms' messages, in their column order. */
	w->msg[0] = '\0';
	for (uint32_t k = 0; k < c->cfg.alg_count; k++) {
		enum adump_compare_alg alg = c->cfg.algs[k];

		row_set(row, c->alg_column + k, cells[alg]);
		if (w->alg_msgs[alg][0])
			adump_compare_msg_add(w->msg, sizeof(w->msg), w->alg_msgs[alg]);
	}
	if (c->cfg.has_overflow)
		row_set(row, c->alg_column - 1,
			dtype[MY] != ADUMP_DT_FLOAT16 ? "NaN"
			: m.max_abs_x >= FP16_MAX     ? "YES"
						      : "NO");
	if (c->cfg.has_msprobe) {
		char buf[64];
		uint32_t col = c->column_count - 5;

		adump_compare_fmt6(buf, sizeof(buf), m.one_thousandth);
		row_set(row, col, buf);
		adump_compare_fmt6(buf, sizeof(buf), m.five_thousandths);
		row_set(row, col + 1, buf);
		adump_compare_fmt6(buf, sizeof(buf), m.euclid);
		row_set(row, col + 2, buf);
		row_set(row, col + 3,
			adump_compare_accuracy_reached(m.value[ADUMP_COMPARE_COSINE], m.value[ADUMP_COMPARE_MAX_ABS]));
	}
	{
		char reason[1024];
		bool is_scalar = adump_compare_is_scalar(t[MY]->dims, t[MY]->dim_count);

		row->pub.verdict = adump_compare_verdict_judge(&c->thresholds, dtype[MY], dtype[GOLDEN],
							       is_scalar, &m, reason, sizeof(reason));
		row->reason = xstrdup(reason);
		/* A NaN/Inf difference is the one verdict the CSV shows: msaccucmp leaves the
		 * reason empty and the cells nan, which reads as nothing wrong. */
		if (m.nonfinite_diff_count) {
			adump_compare_msg_add(w->msg, sizeof(w->msg), reason);
			if (c->cfg.has_msprobe)
				row_set(row, c->column_count - 2, "No");
		}
	}
	row_set(row, c->column_count - 1, w->msg);
	row->pub.is_compared = true;
	row->pub.metrics = m;
	for (uint32_t k = 0; k < c->cfg.alg_count; k++) {
		if (c->cfg.algs[k] == ADUMP_COMPARE_COSINE)
			row->pub.cosine = m.value[ADUMP_COMPARE_COSINE];
		if (c->cfg.algs[k] == ADUMP_COMPARE_MAX_REL)
			row->pub.max_relative_error = m.value[ADUMP_COMPARE_MAX_REL];
	}
	return 0;
}

/* A count column of a statistics dump; 0 when absent or not a count. */
static uint64_t stat_count(const struct adump_compare_stat *st)
{
	return st->is_present && st->value >= 0 && st->value < 1e18 ? (uint64_t)st->value : 0;
}

int adump_compare_stats_row(struct adump_compare *c, struct cmp_op *op,
			    const struct adump_compare_stats st[2],
			    enum adump_tensor_kind kind, uint32_t i, const uint32_t first[2])
{
	const struct adump_compare_stats_tensor *x[2] = { &st[MY].tensors[first[MY] + i],
							   &st[GOLDEN].tensors[first[GOLDEN] + i] };
	const struct adump_tensor *t[2] = { &x[MY]->t.info, &x[GOLDEN]->t.info };
	char tensor_id[4096 + 32], cells[ADUMP_COMPARE_STATS_COLUMNS][ADUMP_COMPARE_CELL_BYTES];
	double diff[4];
	struct cmp_row *row;
	char reason[1024], message[1200];
	enum adump_compare_verdict verdict;
	bool is_nonfinite;

	snprintf(tensor_id, sizeof(tensor_id), "%s:%s:%u", op->name,
		 kind == ADUMP_TENSOR_INPUT ? "input" : "output", i);
	if (adump_is_uninit(op->file[MY]->op_type, op_api_name(op), kind, i))
		return uninit_row(c, op, op->file[MY]->op_type, t, tensor_id);
	row = op_row_add(c, op);
	if (!row)
		return -ENOMEM;
	verdict = adump_compare_stats_cells(x[MY]->stat, x[GOLDEN]->stat,
					    &c->thresholds.of[adump_compare_class_of(t[MY]->dtype,
										     t[GOLDEN]->dtype)],
					    adump_compare_dims_elements(t[GOLDEN]->dims,
									t[GOLDEN]->dim_count),
					    cells, diff, reason, sizeof(reason));
	for (uint32_t k = 0; k < ADUMP_COMPARE_STATS_COLUMNS; k++)
		row_set(row, c->alg_column + k, cells[k]);
	/* The CSV keeps msprobe's Err_message for a Warning, then adump's reason. */
	is_nonfinite = verdict == ADUMP_COMPARE_ERROR && strstr(reason, " differs: ");
	snprintf(message, sizeof(message), "%s%s%s",
		 verdict != ADUMP_COMPARE_PASS ? "Need double check api accuracy." : "",
		 verdict != ADUMP_COMPARE_PASS && reason[0] ? "," : "", reason);
	row_set(row, c->column_count - 1, message);
	row_head(c, row, op, op->file[MY]->op_type, t, tensor_id);
	row->pub.is_compared = true;
	row->pub.verdict = verdict;
	row->reason = xstrdup(verdict == ADUMP_COMPARE_PASS ? "" : reason);
	for (int s = 0; s < 2; s++) {
		const struct adump_compare_stat *st = x[s]->stat;

		row->pub.metrics.nan_count[s] = stat_count(&st[4]);
		row->pub.metrics.inf_count[s] = stat_count(&st[5]) + stat_count(&st[6]);
	}
	row->pub.metrics.first_nonfinite_diff = UINT64_MAX;
	if (is_nonfinite)                       /* NaN/Inf differ: no element to name */
		row->pub.metrics.nonfinite_diff_count = 1;
	return 0;
}
