/* SPDX-License-Identifier: Apache-2.0 */
/* report/: the rows of a report, from a compare or a scan in memory or from a result's cells,
 * with their verdicts; strings in one arena, rows and text bounded. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "adump/adump.h"
#include "report/report_int.h"

#ifndef ADUMP_CHARTJS_PATH
#define ADUMP_CHARTJS_PATH "/usr/share/javascript/chart.js/chart.min.js"
#endif

#define BLOCK_BYTES (1u << 20)

struct report_block {
	struct report_block *next;
	size_t used, cap;
	char data[];
};

const char *adump_report_chartjs_default(void)
{
	return ADUMP_CHARTJS_PATH;
}

int adump_report_exit_code(int err)
{
	if (err >= 0)
		return 0;
	if (err == -E2BIG)
		return ADUMP_REPORT_EXIT_LIMIT;
	if (err == -ADUMP_ERR_CORRUPT || err == -ADUMP_ERR_NOT_FOUND)
		return ADUMP_REPORT_EXIT_INPUT;
	if (err == -ENOMEM)
		return ADUMP_REPORT_EXIT_WRITE;
	return ADUMP_REPORT_EXIT_PATH;
}

const char *report_strn(struct adump_report *r, const char *s, size_t len, int *err)
{
	struct report_block *b = r->blocks;
	char *p;

	if (!s)
		return NULL;
	if (len == SIZE_MAX)
		len = strlen(s);
	if (r->text_bytes + len + 1 > ADUMP_REPORT_MAX_TEXT_BYTES) {
		*err = -E2BIG;
		return NULL;
	}
	if (!b || b->cap - b->used < len + 1) {
		size_t cap = len + 1 > BLOCK_BYTES ? len + 1 : BLOCK_BYTES;

		b = malloc(sizeof(*b) + cap);
		if (!b) {
			*err = -ENOMEM;
			return NULL;
		}
		b->used = 0;
		b->cap = cap;
		b->next = r->blocks;
		r->blocks = b;
	}
	p = b->data + b->used;
	memcpy(p, s, len);
	p[len] = '\0';
	b->used += len + 1;
	r->text_bytes += len + 1;
	return p;
}

int adump_report_create(enum adump_report_kind kind, const char *title, struct adump_report **out)
{
	struct adump_report *r = calloc(1, sizeof(*r));
	int err = 0;

	if (!r)
		return -ENOMEM;
	r->kind = kind;
	r->title = report_strn(r, title, SIZE_MAX, &err);
	if (err) {
		adump_report_destroy(r);
		return err;
	}
	*out = r;
	return 0;
}

void adump_report_destroy(struct adump_report *r)
{
	if (!r)
		return;
	while (r->blocks) {
		struct report_block *b = r->blocks;

		r->blocks = b->next;
		free(b);
	}
	free(r->construct);
	free(r->rows);
	free(r->pairs);
	free(r->series);
	free(r->points);
	free(r->triggers);
	free(r);
}

int adump_report_source_set(struct adump_report *r, const char *source)
{
	int err = 0;

	r->source = report_strn(r, source, SIZE_MAX, &err);
	return err;
}

struct report_row *report_row_new(struct adump_report *r, int *err)
{
	struct report_row *row;

	if (r->row_count >= ADUMP_REPORT_MAX_ROWS) {
		*err = -E2BIG;
		return NULL;
	}
	if (r->row_count == r->row_cap) {
		size_t cap = r->row_cap ? r->row_cap * 2 : 256;
		struct report_row *rows = realloc(r->rows, cap * sizeof(*rows));

		if (!rows) {
			*err = -ENOMEM;
			return NULL;
		}
		r->rows = rows;
		r->row_cap = cap;
	}
	row = &r->rows[r->row_count++];
	memset(row, 0, sizeof(*row));
	row->cosine = row->max_rel = row->max_abs = row->scaled = NAN;
	if (r->pair_count)
		r->pairs[r->pair_count - 1].row_count++;
	return row;
}

struct report_pair *report_pair_new(struct adump_report *r, const char *label, int64_t step,
				    int64_t rank, int code, const char *message, int *err)
{
	struct report_pair *p;

	if (r->pair_count == r->pair_cap) {
		size_t cap = r->pair_cap ? r->pair_cap * 2 : 16;
		struct report_pair *pairs = realloc(r->pairs, cap * sizeof(*pairs));

		if (!pairs) {
			*err = -ENOMEM;
			return NULL;
		}
		r->pairs = pairs;
		r->pair_cap = cap;
	}
	p = &r->pairs[r->pair_count];
	memset(p, 0, sizeof(*p));
	p->label = report_strn(r, label && strcmp(label, ".") ? label : "", SIZE_MAX, err);
	p->message = report_strn(r, message ? message : "", SIZE_MAX, err);
	if (*err)
		return NULL;
	p->step = step;
	p->rank = rank;
	p->code = code;
	p->row_first = r->row_count;
	p->first = -1;
	r->pair_count++;
	return p;
}

bool report_columns_find(struct report_columns *cols, const char *const *names, int count)
{
	static const char *const head[] = { "Index", "OpType", "NPUDump", "DataType", "Address",
					    "GroundTruth", "DataType", "Address", "TensorIndex",
					    "Shape" };
	static const char *const stat[] = { "max", "min", "mean", "l2norm" };
	int dt = 0;

	memset(cols, -1, sizeof(*cols));
	cols->is_stats = false;
	cols->count = count;
	if (count < 10)
		return false;
	for (int i = 0; i < 10; i++)
		if (!names[i] || strcmp(names[i], head[i]))
			return false;
	cols->index = 0;
	cols->type = 1;
	cols->my = 2;
	cols->golden = 5;
	cols->tensor = 8;
	cols->shape = 9;
	for (int i = 0; i < count; i++) {
		const char *n = names[i];

		if (!strcmp(n, "DataType") && dt < 2)
			cols->dtype[dt++] = i;
		else if (!strcmp(n, "CosineSimilarity"))
			cols->cosine = i;
		else if (!strcmp(n, "MaxAbsoluteError"))
			cols->max_abs = i;
		else if (!strcmp(n, "MaxRelativeError"))
			cols->max_rel = i;
		else if (!strcmp(n, "StandardDeviation"))
			cols->std = i;
		else if (!strcmp(n, "CompareFailReason"))
			cols->reason = i;
		else if (!strcmp(n, "Result"))
			cols->result = i;
		else if (!strcmp(n, "Max diff"))
			cols->is_stats = true;
		for (int k = 0; k < 4; k++) {
			if (!strncmp(n, "NPU ", 4) && !strcmp(n + 4, stat[k]))
				cols->npu[k] = i;
			if (!strncmp(n, "Bench ", 6) && !strcmp(n + 6, stat[k]))
				cols->bench[k] = i;
		}
	}
	return cols->reason >= 0;
}

static double cell_number(const char *const *cells, int i)
{
	const char *s;
	char *end;
	double v;

	if (i < 0 || !(s = cells[i]) || !*s)
		return NAN;
	v = strtod(s, &end);
	if (end == s || (*end && *end != '%'))
		return NAN;
	return v;
}

static const char *cell(const char *const *cells, int i)
{
	return i >= 0 && cells[i] ? cells[i] : "";
}

static bool is_none(const char *s)
{
	return !*s || !strcmp(s, "NaN") || !strcmp(s, "N/A") || !strcmp(s, "*");
}

int report_row_cells(struct adump_report *r, struct report_row *row,
		     const struct report_columns *cols, const char *const *cells)
{
	static const char *const stat[] = { "max", "min", "mean", "l2norm" };
	const char *my = cell(cells, cols->my), *tensor = cell(cells, cols->tensor);
	char buf[1024];
	int err = 0;

	row->index = (uint64_t)strtoull(cell(cells, cols->index), NULL, 10);
	row->type = report_strn(r, cell(cells, cols->type), SIZE_MAX, &err);
	row->op = report_strn(r, is_none(my) ? cell(cells, cols->golden) : my, SIZE_MAX, &err);
	row->tensor = report_strn(r, is_none(tensor) ? "" : tensor, SIZE_MAX, &err);
	for (int s = 0; s < 2; s++)
		row->dtype[s] = report_strn(r, cell(cells, cols->dtype[s]), SIZE_MAX, &err);
	row->shape = report_strn(r, cell(cells, cols->shape), SIZE_MAX, &err);
	row->reason = report_strn(r, cell(cells, cols->reason), SIZE_MAX, &err);
	row->cosine = cell_number(cells, cols->cosine);
	row->max_abs = cell_number(cells, cols->max_abs);
	row->max_rel = cell_number(cells, cols->max_rel);
	if (cols->std >= 0 && cells[cols->std][0] == '(') {
		/* "(mean;std),(mean;std)": my output's, then the ground truth's. */
		const char *s = cells[cols->std], *mid = strstr(s, "),(");
		double m[2], d[2];

		if (mid && sscanf(s, "(%lf;%lf)", &m[0], &d[0]) == 2 &&
		    sscanf(mid + 2, "(%lf;%lf)", &m[1], &d[1]) == 2)
			for (int k = 0; k < 2; k++) {
				snprintf(buf, sizeof(buf), "mean %.6g, std %.6g", m[k], d[k]);
				row->stats[k] = report_strn(r, buf, SIZE_MAX, &err);
			}
	}
	if (cols->npu[0] >= 0) {
		for (int side = 0; side < 2; side++) {
			const int *at = side ? cols->bench : cols->npu;
			size_t len = 0;

			buf[0] = '\0';
			for (int k = 0; k < 4 && len < sizeof(buf); k++)
				if (at[k] >= 0)
					len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s %s",
								 len ? ", " : "", stat[k],
								 cell(cells, at[k]));
			row->stats[side] = report_strn(r, buf, SIZE_MAX, &err);
		}
	}
	return err;
}

static int32_t dtype_code(const char *name)
{
	if (!strcmp(name, "float16") || !strcmp(name, "DT_FLOAT16"))
		return ADUMP_DT_FLOAT16;
	if (!strcmp(name, "bfloat16") || !strcmp(name, "DT_BF16"))
		return ADUMP_DT_BF16;
	if (!strcmp(name, "float32") || !strcmp(name, "DT_FLOAT") || !strcmp(name, "float"))
		return ADUMP_DT_FLOAT;
	if (!strcmp(name, "float64") || !strcmp(name, "DT_DOUBLE"))
		return ADUMP_DT_DOUBLE;
	return ADUMP_DT_INT32;
}

void report_row_judge(struct adump_report *r, struct report_row *row,
		      const struct report_columns *cols, const char *const *cells)
{
	const char *why = cell(cells, cols->reason), *nan = strstr(why, "NaN/Inf differ at ");
	struct adump_compare_metrics m;
	unsigned long long n, first, c[4];
	char reason[512];
	int err = 0;

	if (nan && sscanf(nan, "NaN/Inf differ at %llu elements, the first at index %llu (my "
			  "output: %llu NaN, %llu Inf; ground truth: %llu NaN, %llu Inf)", &n,
			  &first, &c[0], &c[1], &c[2], &c[3]) == 6) {
		row->verdict = ADUMP_COMPARE_ERROR;
		for (int k = 0; k < 4; k++)
			row->counts[k] = c[k];
		row->has_counts = true;
		return;
	}
	if (cols->is_stats) {
		row->verdict = !strcmp(cell(cells, cols->result), "Warning") ? ADUMP_COMPARE_WARNING
		    : !strcmp(cell(cells, cols->result), "") && is_none(cell(cells, cols->tensor))
			? ADUMP_COMPARE_NONE : ADUMP_COMPARE_PASS;
		return;
	}
	if (isnan(row->cosine) && isnan(row->max_abs)) {
		row->verdict = ADUMP_COMPARE_NONE;
		return;
	}
	memset(&m, 0, sizeof(m));
	m.element_count = 1;
	m.finite_cosine = row->cosine;
	m.finite_max_abs = isnan(row->max_abs) ? 0 : row->max_abs;
	m.scaled_error = NAN;   /* not in the CSV */
	m.first_nonfinite_diff = UINT64_MAX;
	row->verdict = (uint8_t)adump_compare_verdict_judge(
		NULL, dtype_code(row->dtype[0]), dtype_code(row->dtype[1]),
		!strcmp(row->shape, "[]") || !strcmp(row->shape, "[1]"), &m, reason, sizeof(reason));
	if (row->verdict != ADUMP_COMPARE_PASS && !row->reason[0])
		row->reason = report_strn(r, reason, SIZE_MAX, &err);
}

void report_pair_first(struct adump_report *r, struct report_pair *p)
{
	for (size_t i = 0; i < p->row_count; i++) {
		uint8_t v = r->rows[p->row_first + i].verdict;

		if (v == ADUMP_COMPARE_WARNING || v == ADUMP_COMPARE_ERROR) {
			p->first = (int64_t)i;
			return;
		}
	}
}

int adump_report_add_compare(struct adump_report *r, const struct adump_compare *c,
			     const char *label, int64_t step, int64_t rank, int code, char *msg,
			     size_t cap)
{
	const char *names[512];
	uint32_t count = adump_compare_column_count(c);
	struct adump_compare_summary sum;
	struct report_columns cols;
	int err = 0;

	for (uint32_t i = 0; i < count && i < 512; i++)
		names[i] = adump_compare_column(c, i);
	if (count > 512 || !report_columns_find(&cols, names, (int)count)) {
		snprintf(msg, cap, "report: the compare's columns are not a result's");
		return -ADUMP_ERR_CORRUPT;
	}
	report_pair_new(r, label, step, rank, code, NULL, &err);
	for (uint64_t i = 0; !err && i < adump_compare_row_count(c); i++) {
		const struct adump_compare_row *cr = adump_compare_row(c, i);
		struct report_row *row = report_row_new(r, &err);

		if (!row || (err = report_row_cells(r, row, &cols, cr->cells)) < 0)
			break;
		row->verdict = (uint8_t)cr->verdict;
		if (cr->reason && cr->reason[0])
			row->reason = report_strn(r, cr->reason, SIZE_MAX, &err);
		if (cr->module && !adump_compare_is_self(cr))
			row->module = report_strn(r, cr->module, SIZE_MAX, &err);
		if (cr->is_compared) {
			row->scaled = cr->metrics.scaled_error;
			row->counts[0] = cr->metrics.nan_count[0];
			row->counts[1] = cr->metrics.inf_count[0];
			row->counts[2] = cr->metrics.nan_count[1];
			row->counts[3] = cr->metrics.inf_count[1];
			row->has_counts = true;
		}
	}
	if (err) {
		snprintf(msg, cap, "report: %s", err == -E2BIG ? "more rows or text than a report "
			 "holds (1,000,000 rows, 512 MiB)" : strerror(-err));
		return err;
	}
	adump_compare_summary_get(c, &sum);
	if (sum.first_divergent_row >= 0)
		r->pairs[r->pair_count - 1].first = sum.first_divergent_row;
	return 0;
}

int adump_report_add_pair_empty(struct adump_report *r, const char *label, int64_t step,
				int64_t rank, int code, const char *why)
{
	int err = 0;

	report_pair_new(r, label, step, rank, code, why, &err);
	return err;
}

int adump_report_add_scan(struct adump_report *r, const struct adump_scan *s, char *msg,
			  size_t cap)
{
	int err = 0;

	report_pair_new(r, NULL, -1, -1, 0, NULL, &err);
	for (uint64_t i = 0; !err && i < adump_scan_op_count(s); i++) {
		const struct adump_scan_op *op = adump_scan_op(s, i);
		struct report_row *row;

		if (op->kind == ADUMP_SCAN_UNINITIALIZED)
			continue;       /* uninitialized memory: no anomaly to show */
		row = report_row_new(r, &err);

		if (!row)
			break;
		row->index = op->order;
		row->type = report_strn(r, op->op_type, SIZE_MAX, &err);
		row->op = report_strn(r, op->op_name, SIZE_MAX, &err);
		row->tensor = report_strn(r, op->first_tensor, SIZE_MAX, &err);
		row->reason = report_strn(r, op->message, SIZE_MAX, &err);
		row->shape = report_strn(r, op->path, SIZE_MAX, &err);
		/* entered: where they came in, shown as the origin; enclosing: after them */
		row->scan_kind = op->kind == ADUMP_SCAN_ORIGIN || op->kind == ADUMP_SCAN_ENTERED
				 ? REPORT_SCAN_ORIGIN
				 : op->kind == ADUMP_SCAN_REACHED || op->kind == ADUMP_SCAN_ENCLOSING
				 ? REPORT_SCAN_REACHED
				 : REPORT_SCAN_UNREADABLE;
		row->verdict = row->scan_kind == REPORT_SCAN_ORIGIN    ? ADUMP_COMPARE_ERROR
			       : row->scan_kind == REPORT_SCAN_REACHED ? ADUMP_COMPARE_WARNING
								       : ADUMP_COMPARE_NONE;
		row->counts[0] = op->inputs.nan_count;
		row->counts[1] = op->inputs.inf_count;
		row->counts[2] = op->inputs.limit_count;
		row->counts[3] = op->outputs.nan_count;
		row->counts[4] = op->outputs.inf_count;
		row->counts[5] = op->outputs.limit_count;
		row->has_counts = true;
		if (row->scan_kind == REPORT_SCAN_ORIGIN && r->pairs[r->pair_count - 1].first < 0)
			r->pairs[r->pair_count - 1].first = (int64_t)(r->row_count - 1 -
							      r->pairs[r->pair_count - 1].row_first);
	}
	if (err)
		snprintf(msg, cap, "report: %s", err == -E2BIG ? "more rows or text than a report "
			 "holds (1,000,000 rows, 512 MiB)" : strerror(-err));
	return err;
}

int adump_report_construct_find(struct adump_report *r, const char *dir, char *msg, size_t cap)
{
	static const char *const where[] = { "%s/construct.json", "%s/../construct.json" };
	char path[4096];
	json_object *obj;

	if (r->construct || !dir)
		return 0;
	for (size_t k = 0; k < sizeof(where) / sizeof(where[0]); k++) {
		FILE *f;

		snprintf(path, sizeof(path), where[k], dir);
		f = fopen(path, "r");
		if (!f)
			continue;
		fclose(f);
		obj = json_object_from_file(path);
		if (!obj || !json_object_is_type(obj, json_type_object)) {
			json_object_put(obj);
			snprintf(msg, cap, "%s: not msprobe's construct.json ({node: parent})", path);
			return -ADUMP_ERR_CORRUPT;
		}
		r->construct = strdup(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN));
		json_object_put(obj);
		return r->construct ? 0 : -ENOMEM;
	}
	return 0;
}
