/* SPDX-License-Identifier: Apache-2.0 */
/* adump compare of statistics dumps (content=stats, "<dump name>.csv"): the CSV read into a
 * header the tensor checks understand, and msprobe's summary-mode cells (compare.md B.4). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare/compare_int.h"

#define STATS_FILE_MAX ((long)64 << 20)

/* Index of a name in a table printed by a *_name() function; -1 when none prints it. */
static int32_t name_lookup(const char *(*name)(int32_t), const char *text)
{
	for (int32_t i = 0; i < 1024; i++) {
		const char *n = name(i);

		if (n && !strcmp(n, text))
			return i;
	}
	return -1;
}

/* Split one line at commas in place (the stats CSV never quotes). */
static uint32_t fields_split(char *line, char **field, uint32_t cap)
{
	uint32_t n = 0;

	for (char *p = line;; p++) {
		if (n < cap)
			field[n] = p;
		n++;
		p = strchr(p, ',');
		if (!p)
			break;
		*p = '\0';
	}
	return n;
}

static bool shape_parse(const char *text, struct adump_tensor *t)
{
	const char *p = text;

	t->dim_count = 0;
	if (!strcmp(text, "-"))
		return true;
	while (*p) {
		char *end;

		if (t->dim_count == ADUMP_MAX_DIMS || *p < '0' || *p > '9')
			return false;
		t->dims[t->dim_count++] = strtoull(p, &end, 10);
		p = end;
		if (*p == 'x')
			p++;
		else if (*p)
			return false;
	}
	return true;
}

static void stat_parse(const char *text, struct adump_compare_stat *st)
{
	char *end;

	st->text = text;
	st->is_present = false;
	st->value = NAN;
	if (!text || !text[0] || !strcmp(text, "NA"))
		return;
	st->value = strtod(text, &end);
	st->is_present = *end == '\0';
}

static int cmp_tensor(const void *a, const void *b)
{
	const struct adump_compare_stats_tensor *x = a, *y = b;

	if (x->t.info.kind != y->t.info.kind)
		return x->t.info.kind < y->t.info.kind ? -1 : 1;
	return x->t.index < y->t.index ? -1 : x->t.index > y->t.index;
}

int adump_compare_stats_load(const char *path, struct adump_compare_stats *out, char *msg,
			     size_t cap)
{
	static const char *const want[] = { "Input/Output", "Index", "Data Size", "Data Type",
					    "Format", "Shape", "Max Value", "Min Value",
					    "Avg Value", "l2norm", "Nan Count", "Negative Inf Count",
					    "Positive Inf Count" };
	enum { IO, INDEX, SIZE, DTYPE, FORMAT, SHAPE, STAT0, COLS = STAT0 + ADUMP_COMPARE_STAT_COUNT };
	int col[COLS];
	char *field[64], *line, *next;
	uint32_t n, lines = 0;
	/* A regular file only: a FIFO put where a statistics dump was listed is refused, never
	 * waited on. */
	int fd = adump_open_regular(path);
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	long len;

	memset(out, 0, sizeof(*out));
	if (!f) {
		int err = fd < 0 ? fd : -errno;

		if (fd >= 0)
			close(fd);
		snprintf(msg, cap, "cannot open %s: %s", path, adump_open_strerror(err));
		return err;
	}
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || len > STATS_FILE_MAX ||
	    fseek(f, 0, SEEK_SET)) {
		fclose(f);
		snprintf(msg, cap, "%s: not a statistics file of at most %ld bytes", path,
			 STATS_FILE_MAX);
		return -ADUMP_ERR_CORRUPT;
	}
	out->text = malloc((size_t)len + 1);
	if (!out->text || fread(out->text, 1, (size_t)len, f) != (size_t)len) {
		fclose(f);
		snprintf(msg, cap, "cannot read %s", path);
		return out->text ? -EIO : -ENOMEM;
	}
	fclose(f);
	out->text[len] = '\0';
	for (const char *p = out->text; *p; p++)
		lines += *p == '\n';
	out->tensors = calloc(lines + 1, sizeof(*out->tensors));
	out->header.tensors = NULL;
	if (!out->tensors)
		return -ENOMEM;
	line = out->text;
	next = strchr(line, '\n');
	if (next)
		*next++ = '\0';
	line[strcspn(line, "\r")] = '\0';
	n = fields_split(line, field, 64);
	for (int c = 0; c < COLS; c++) {
		col[c] = -1;
		for (uint32_t i = 0; i < n && i < 64; i++)
			if (!strcmp(field[i], want[c]))
				col[c] = (int)i;
		if (c < STAT0 && col[c] < 0) {
			snprintf(msg, cap, "%s: no \"%s\" column: not a statistics dump", path, want[c]);
			return -ADUMP_ERR_CORRUPT;
		}
	}
	for (uint32_t row = 1; next && *next; row++) {
		struct adump_compare_stats_tensor *st = &out->tensors[out->count];
		struct adump_tensor *t = &st->t.info;
		char *end;

		line = next;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line[strcspn(line, "\r")] = '\0';
		if (!line[0])
			continue;
		n = fields_split(line, field, 64);
		for (int c = 0; c < STAT0; c++)
			if ((uint32_t)col[c] >= n) {
				snprintf(msg, cap, "%s: line %u has %u cells", path, row + 1, n);
				return -ADUMP_ERR_CORRUPT;
			}
		if (!strcmp(field[col[IO]], "Input"))
			t->kind = ADUMP_TENSOR_INPUT;
		else if (!strcmp(field[col[IO]], "Output"))
			t->kind = ADUMP_TENSOR_OUTPUT;
		else {
			snprintf(msg, cap, "%s: line %u: Input/Output is \"%s\"", path, row + 1,
				 field[col[IO]]);
			return -ADUMP_ERR_CORRUPT;
		}
		st->t.index = (uint32_t)strtoul(field[col[INDEX]], &end, 10);
		if (*end || !field[col[INDEX]][0] || !shape_parse(field[col[SHAPE]], t)) {
			snprintf(msg, cap, "%s: line %u: bad Index or Shape", path, row + 1);
			return -ADUMP_ERR_CORRUPT;
		}
		t->bytes = strtoull(field[col[SIZE]], NULL, 10);
		t->dtype = name_lookup(adump_dtype_name, field[col[DTYPE]]);
		t->format = name_lookup(adump_format_name, field[col[FORMAT]]);
		for (int k = 0; k < ADUMP_COMPARE_STAT_COUNT; k++)
			stat_parse(col[STAT0 + k] >= 0 && (uint32_t)col[STAT0 + k] < n ?
				   field[col[STAT0 + k]] : NULL, &st->stat[k]);
		out->count++;
	}
	qsort(out->tensors, out->count, sizeof(*out->tensors), cmp_tensor);
	/* The header the tensor checks read: tensors by kind, each kind by index. */
	out->reader_tensors = calloc(out->count + 1, sizeof(*out->reader_tensors));
	if (!out->reader_tensors)
		return -ENOMEM;
	for (uint32_t i = 0; i < out->count; i++) {
		out->reader_tensors[i] = out->tensors[i].t;
		out->header.kind_count[out->tensors[i].t.info.kind]++;
	}
	out->header.tensors = out->reader_tensors;
	out->header.tensor_count = out->count;
	return 0;
}

void adump_compare_stats_free(struct adump_compare_stats *s)
{
	free(s->text);
	free(s->tensors);
	free(s->reader_tensors);
	memset(s, 0, sizeof(*s));
}

/* Python's str(float): the shortest text that reads back the same, ".0" on whole numbers. */
static void fmt_repr(char *buf, size_t cap, double v)
{
	if (isnan(v)) {
		snprintf(buf, cap, "Nan");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, cap, v > 0 ? "inf" : "-inf");
		return;
	}
	adump_py_float(v, buf, cap);
}

/* NaN/Inf the statistics show differently on the two sides: counts that differ, or a max/min
 * that is NaN or infinite on one side and not the same on the other. */
static bool stats_nonfinite(const struct adump_compare_stat my[ADUMP_COMPARE_STAT_COUNT],
			    const struct adump_compare_stat golden[ADUMP_COMPARE_STAT_COUNT],
			    char *reason, size_t cap)
{
	static const char *const what[ADUMP_COMPARE_STAT_COUNT] = {
		"max", "min", "mean", "l2norm", "NaN count", "-Inf count", "+Inf count"
	};
	size_t len = 0;

	for (int k = 0; k < ADUMP_COMPARE_STAT_COUNT; k++) {
		double n = my[k].value, b = golden[k].value;
		bool is_diff;

		if (k == 2 || k == 3)   /* mean and l2norm follow from the counts and max/min */
			continue;
		if (k >= 4)
			is_diff = my[k].is_present && golden[k].is_present && n != b;
		else
			is_diff = (!isfinite(n) || !isfinite(b)) && my[k].is_present &&
				  golden[k].is_present && !(n == b || (isnan(n) && isnan(b)));
		if (is_diff && len < cap)
			len += (size_t)snprintf(reason + len, cap - len, "%s%s differs: %s vs %s",
						len ? "; " : "", what[k], my[k].text, golden[k].text);
	}
	return len > 0;
}

/* Unit roundoff of float32 (2^-24): statistics are summed in float32 at worst (msprobe's torch
 * ones; adump's own are summed in double). */
#define F32_ROUNDOFF 5.9604644775390625e-8

/* The verdict's limits on statistics, judged by the tensor's scale s = the ground truth's
 * max(|max|, |min|) (README "Verdicts"): each statistic's difference as a share of the largest
 * difference it could show if every element differed by s at most, less what summing n
 * float32 terms in another order can change by itself ((n - 1) u of the sum of magnitudes,
 * whatever the order). So max and min: |d| / s; mean: |d| / s - 2 (n - 1) u; l2norm:
 * (|d| - (n - 1) u max(l2norm)) / (sqrt(n) s), since |norm(x) - norm(y)| <= sqrt(n) max
 * |x - y|. Two sides within the tensor-mode limits elementwise thus pass here too. */
static enum adump_compare_verdict stats_limits(const struct adump_compare_stat my[4],
					       const struct adump_compare_stat golden[4],
					       const struct adump_compare_limits *lim,
					       uint64_t element_count, char *reason, size_t cap)
{
	static const char *const what[4] = { "max", "min", "mean", "l2norm" };
	double scale = fmax(fabs(golden[0].value), fabs(golden[1].value)), worst = 0;
	double n = element_count ? (double)element_count : 1.0;
	double rounding = 2.0 * (n - 1.0) * F32_ROUNDOFF;
	int worst_k = -1;

	if (!golden[0].is_present || !golden[1].is_present || !isfinite(scale))
		scale = NAN;    /* no scale: only l2norm against itself, the rest not judged */
	for (int k = 0; k < 4; k++) {
		double d, den;

		if (!my[k].is_present || !golden[k].is_present || !isfinite(my[k].value) ||
		    !isfinite(golden[k].value) || my[k].value == golden[k].value)
			continue;
		d = fabs(my[k].value - golden[k].value);
		if (k == 3) {
			d = fmax(0, d - rounding / 2 * fmax(fabs(my[3].value),
							    fabs(golden[3].value)));
			den = isnan(scale) ? fabs(golden[3].value) : sqrt(n) * scale;
		} else {
			if (isnan(scale))
				continue;
			den = scale;
		}
		d = den > 0 ? d / den : d > 0 ? INFINITY : 0;
		if (k == 2)
			d = fmax(0, d - rounding);
		if (d > worst) {
			worst = d;
			worst_k = k;
		}
	}
	if (worst_k < 0 || !(worst > lim->scaled_warning))
		return ADUMP_COMPARE_PASS;
	snprintf(reason, cap, "%s differs by %.6g of %sthe tensor's scale max|x|%s "
		 "(%s %.6g)", what[worst_k], worst, worst_k == 3 && !isnan(scale) ? "sqrt(n) x " : "",
		 worst_k >= 2 ? ", beyond float32 rounding" : "",
		 worst > lim->scaled ? "limit" : "warning limit",
		 worst > lim->scaled ? lim->scaled : lim->scaled_warning);
	return worst > lim->scaled ? ADUMP_COMPARE_ERROR : ADUMP_COMPARE_WARNING;
}

enum adump_compare_verdict
adump_compare_stats_cells(const struct adump_compare_stat my[ADUMP_COMPARE_STAT_COUNT],
			  const struct adump_compare_stat golden[ADUMP_COMPARE_STAT_COUNT],
			  const struct adump_compare_limits *lim, uint64_t element_count,
			  char (*cells)[ADUMP_COMPARE_CELL_BYTES], double diff[4], char *reason,
			  size_t cap)
{
	enum adump_compare_verdict v;

	for (int k = 0; k < 4; k++) {
		char *d = cells[k], *rel = cells[4 + k];
		double n = my[k].value, b = golden[k].value, r;

		snprintf(cells[8 + k], ADUMP_COMPARE_CELL_BYTES, "%s",
			 my[k].is_present ? my[k].text : "N/A");
		snprintf(cells[12 + k], ADUMP_COMPARE_CELL_BYTES, "%s",
			 golden[k].is_present ? golden[k].text : "N/A");
		diff[k] = NAN;
		if (!my[k].is_present || !golden[k].is_present) {
			snprintf(d, ADUMP_COMPARE_CELL_BYTES, "N/A");
			snprintf(rel, ADUMP_COMPARE_CELL_BYTES, "N/A");
			continue;
		}
		if (n == b) {
			diff[k] = 0;
			snprintf(d, ADUMP_COMPARE_CELL_BYTES, "0");
			snprintf(rel, ADUMP_COMPARE_CELL_BYTES, "0%%");
			continue;
		}
		diff[k] = n - b;
		fmt_repr(d, ADUMP_COMPARE_CELL_BYTES, diff[k]);
		r = b == 0 ? INFINITY : fabs(diff[k] / b * 100.0);
		fmt_repr(rel, ADUMP_COMPARE_CELL_BYTES, r);
		if (isfinite(r))
			strncat(rel, "%", ADUMP_COMPARE_CELL_BYTES - strlen(rel) - 1);
	}
	reason[0] = '\0';
	/* Result is Warning where the verdict is not pass: msprobe's older rule (a statistic
	 * off by half of itself) flagged a mean of 1.5e-11 against 2.3e-10 on a tensor of scale
	 * 4.7, a float32 summation order's difference, where msprobe's newer compare passes. */
	if (stats_nonfinite(my, golden, reason, cap))
		v = ADUMP_COMPARE_ERROR;
	else
		v = lim ? stats_limits(my, golden, lim, element_count, reason, cap)
			: ADUMP_COMPARE_PASS;
	snprintf(cells[16], ADUMP_COMPARE_CELL_BYTES, "%s",
		 v == ADUMP_COMPARE_PASS ? "" : "Warning");
	return v;
}

int adump_compare_stats_msprobe(const struct adump_msprobe *m, uint32_t entry,
				struct adump_compare_stats *out)
{
	const struct adump_msprobe_entry *e = &m->entries[entry];

	memset(out, 0, sizeof(*out));
	out->tensors = calloc(e->count + 1, sizeof(*out->tensors));
	out->reader_tensors = calloc(e->count + 1, sizeof(*out->reader_tensors));
	if (!out->tensors || !out->reader_tensors)
		return -ENOMEM;
	/* dump.json lists inputs before outputs already; the texts stay dump.json's (borrowed
	 * from @m, which outlives the comparison). */
	for (uint32_t i = 0; i < e->count; i++) {
		const struct adump_msprobe_tensor *mt = &m->tensors[e->first + i];
		struct adump_compare_stats_tensor *st = &out->tensors[i];
		struct adump_tensor *t = &st->t.info;

		t->kind = mt->kind;
		t->dtype = mt->dtype;
		t->format = ADUMP_FORMAT_ND;
		t->dim_count = mt->dim_count;
		memcpy(t->dims, mt->dims, sizeof(mt->dims));
		st->t.index = mt->index;
		for (int k = 0; k < ADUMP_COMPARE_STAT_COUNT; k++) {
			st->stat[k].value = NAN;
			st->stat[k].text = "";
		}
		for (int k = 0; k < ADUMP_MSPROBE_STAT_COUNT; k++)
			if (mt->stat_text[k]) {
				st->stat[k].text = mt->stat_text[k];
				st->stat[k].value = mt->stat[k];
				st->stat[k].is_present = true;
			}
		out->reader_tensors[i] = st->t;
		out->header.kind_count[t->kind]++;
		out->count++;
	}
	out->header.tensors = out->reader_tensors;
	out->header.tensor_count = out->count;
	return 0;
}
