/* SPDX-License-Identifier: Apache-2.0 */
/* What a comparison hands back: its columns and rows, the summary, msaccucmp's result CSV and
 * its advisor's three lines. */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "compare/compare_int.h"

/* ---- results ------------------------------------------------------------------------------ */

uint32_t adump_compare_column_count(const struct adump_compare *c)
{
	return c ? c->column_count : 0;
}

const char *adump_compare_column(const struct adump_compare *c, uint32_t i)
{
	return c && i < c->column_count ? c->columns[i] : NULL;
}

uint64_t adump_compare_row_count(const struct adump_compare *c)
{
	return c ? c->row_count : 0;
}

const struct adump_compare_row *adump_compare_row(const struct adump_compare *c, uint64_t i)
{
	return c && i < c->row_count ? &c->rows[i]->pub : NULL;
}

void adump_compare_summary_get(const struct adump_compare *c, struct adump_compare_summary *out)
{
	bool has_overflow_col;
	uint32_t of_col = 0;

	memset(out, 0, sizeof(*out));
	out->first_divergent_row = -1;
	out->first_nonfinite_row = -1;
	out->first_overflow_row = -1;
	if (!c)
		return;
	has_overflow_col = c->cfg.has_overflow;
	if (has_overflow_col)
		of_col = c->alg_column - 1;
	out->op_count = c->op_count;
	for (size_t i = 0; i < c->op_count; i++) {
		const struct cmp_op *op = &c->ops[i];

		if (op->file[MY] && op->file[GOLDEN])
			out->matched_count++;
		else if (op->file[MY])
			out->my_only_count++;
		else
			out->golden_only_count++;
		if (!out->exit_code && op->code)
			out->exit_code = op->code;
	}
	if (!out->matched_count)
		out->exit_code = 2;
	for (int s = 0; s < 2; s++)
		out->bytes[s] = atomic_load_explicit(&c->bytes[s], memory_order_relaxed);
	for (uint64_t i = 0; i < c->row_count; i++) {
		const struct cmp_row *row = c->rows[i];

		if (row->pub.is_compared)
			out->tensor_count++;
		else
			out->failed_count++;
		if (row->pub.verdict == ADUMP_COMPARE_WARNING)
			out->warning_count++;
		if (row->pub.verdict == ADUMP_COMPARE_ERROR)
			out->error_count++;
		/* Rows are in op order (msaccucmp's Index); execution order is my output's
		 * timestamps, which can differ from it. */
		if ((row->pub.verdict == ADUMP_COMPARE_WARNING ||
		     row->pub.verdict == ADUMP_COMPARE_ERROR) &&
		    (out->first_divergent_row < 0 ||
		     row->pub.timestamp < c->rows[out->first_divergent_row]->pub.timestamp))
			out->first_divergent_row = (int64_t)i;
		if (row->pub.is_compared && row->pub.metrics.nonfinite_diff_count) {
			out->nonfinite_count++;
			if (out->first_nonfinite_row < 0 ||
			    row->pub.timestamp < c->rows[out->first_nonfinite_row]->pub.timestamp)
				out->first_nonfinite_row = (int64_t)i;
		}
		if (has_overflow_col && out->first_overflow_row < 0 &&
		    !strcmp(row->cells[of_col], "YES"))
			out->first_overflow_row = (int64_t)i;
	}
	if (out->nonfinite_count)
		out->exit_code = ADUMP_COMPARE_EXIT_NONFINITE;
}

void adump_compare_csv_cell(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

int adump_compare_write_csv(const struct adump_compare *c, FILE *f)
{
	if (!c || !f)
		return -ADUMP_ERR_CONFIG;
	/* A failed write leaves its errno (EFBIG, ENOSPC): what is returned. */
	errno = 0;
	for (uint32_t i = 0; i < c->column_count; i++) {
		if (i)
			fputc(',', f);
		adump_compare_csv_cell(f, c->columns[i]);
	}
	fputs("\r\n", f);
	for (uint64_t r = 0; r < c->row_count; r++) {
		for (uint32_t i = 0; i < c->column_count; i++) {
			if (i)
				fputc(',', f);
			adump_compare_csv_cell(f, c->rows[r]->cells[i]);
		}
		fputs("\r\n", f);
	}
	return ferror(f) ? (errno ? -errno : -EIO) : 0;
}

#define OVERFLOW_SUGGEST "Float16 data overflow occurs. Rectify the fault and perform comparison again."
#define CONSISTENCY_SUGGEST                                                                        \
	"All data in the comparison result meets the accuracy requirements. If data accuracy of "   \
	"the model is still not up to standard in practical application, please check the "        \
	"post-processing process of model outputs."
#define PROBLEM_SUGGEST                                                                            \
	"The accuracy of some tensors is low, resulting in an unqualified final accuracy. This may " \
	"be caused by quantization. Calibrate the data or contact Huawei for further diagnosis. "
#define NONFINITE_SUGGEST                                                                          \
	"NaN or Inf values differ between my output and the ground truth, first in this operator. " \
	"Check its inputs and parameters (weights, scales) for NaN/Inf and the operator for "       \
	"overflow or division by zero; the ops after it inherit the values."
#define VERDICT_SUGGEST                                                                            \
	"The first tensor in execution order whose verdict is not pass is in this operator. Check " \
	"the operator and its inputs; the rows after it may only inherit the difference."
#define DEVIATION_SUGGEST                                                                          \
	"The accuracy of some tensors is low, while the final accuracy is qualified. This may be "  \
	"caused by Ascend internal optimization. Ignore or contact Huawei for further diagnosis. "

bool adump_compare_is_self(const struct adump_compare_row *row)
{
	const char *m = row->module, *o = row->op_name;

	if (!m || !o)
		return false;
	/* A file name holds the dotted module path with '_' for '.'. */
	for (; *m && *o; m++, o++)
		if (*m != *o && !(*m == '.' && *o == '_'))
			return false;
	return !*m && !*o;
}

/* Operator Index (msaccucmp's), and the op's name with the module it ran in. */
static const struct adump_compare_row *index_print(char *buf, size_t cap, char *name,
						   size_t name_cap,
						   const struct adump_compare_row *row)
{
	snprintf(buf, cap, "%llu", (unsigned long long)row->index);
	if (row->module && !adump_compare_is_self(row))
		snprintf(name, name_cap, "%s (in module %s)", row->op_name, row->module);
	else
		snprintf(name, name_cap, "%s", row->op_name);
	return row;
}

int adump_compare_write_advice(const struct adump_compare *c, FILE *f)
{
	struct adump_compare_summary sum;
	const char *type = "NA", *advice = "NA";
	char index[32] = "NA", name[8192];
	const struct adump_compare_row *named = NULL;
	bool has_cos = false;
	int64_t last = -1;

	if (!c || !f)
		return -ADUMP_ERR_CONFIG;
	errno = 0;
	adump_compare_summary_get(c, &sum);
	for (uint32_t k = 0; k < c->cfg.alg_count; k++)
		has_cos |= c->cfg.algs[k] == ADUMP_COMPARE_COSINE;
	for (uint64_t i = 0; i < c->row_count; i++)
		if (!isnan(c->rows[i]->pub.cosine))
			last = (int64_t)i;
	if (sum.first_nonfinite_row >= 0) {
		const struct adump_compare_row *row = &c->rows[sum.first_nonfinite_row]->pub;

		type = "NaN/Inf";
		named = index_print(index, sizeof(index), name, sizeof(name), row);
		advice = NONFINITE_SUGGEST;
	} else if (sum.first_overflow_row >= 0) {
		type = "FP16 Overflow";
		named = index_print(index, sizeof(index), name, sizeof(name),
				    &c->rows[sum.first_overflow_row]->pub);
		advice = OVERFLOW_SUGGEST;
	} else if (has_cos && last >= 0) {
		type = "Global Consistency";
		if (sum.first_divergent_row < 0) {
			advice = CONSISTENCY_SUGGEST;
		} else {
			const struct adump_compare_row *row = &c->rows[sum.first_divergent_row]->pub;

			named = index_print(index, sizeof(index), name, sizeof(name), row);
			/* msaccucmp's two messages when its own rule (a cosine below 0.99) finds
			 * the row; a row only the verdict finds gets the verdict's advice. */
			if (!(row->cosine < ADUMP_COMPARE_ACCURACY_THRESHOLD))
				advice = VERDICT_SUGGEST;
			else
				advice = c->rows[last]->pub.cosine < ADUMP_COMPARE_ACCURACY_THRESHOLD ?
						 PROBLEM_SUGGEST : DEVIATION_SUGGEST;
		}
	} else if (sum.first_divergent_row >= 0) {
		type = "Verdict";
		named = index_print(index, sizeof(index), name, sizeof(name), &c->rows[sum.first_divergent_row]->pub);
		advice = VERDICT_SUGGEST;
	}
	fprintf(f, "Detection Type: %s\nOperator Index: %s\nExpert Advice: %s\n", type, index,
		advice);
	/* msaccucmp's three lines, then the op (and the module it ran in) by name. */
	if (named)
		fprintf(f, "Operator Name: %s\n", name);
	return ferror(f) ? (errno ? -errno : -EIO) : 0;
}
