/* SPDX-License-Identifier: Apache-2.0 */
/* report/: reading what `adump compare` wrote: a result_<ts>.csv (msaccucmp's columns, verdicts
 * judged again from the cells), a --recursive summary_<ts>.csv with each pair's result, or a
 * directory holding them. Records are bounded; a short or cut file is an error naming the line. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adump/adump.h"
#include "report/report_int.h"

#define MAX_RECORD_BYTES (4u << 20)
#define MAX_CELLS 512

/* One CSV record: cells point into buf. */
struct csv_record {
	char *buf;
	size_t len, cap;
	size_t starts[MAX_CELLS];
	const char *cells[MAX_CELLS];
	int count;
	bool has_end;                           /* ended by a line end (not by EOF) */
};

static int rec_put(struct csv_record *rec, char ch)
{
	if (rec->len + 1 >= rec->cap) {
		size_t cap = rec->cap ? rec->cap * 2 : 4096;
		char *p;

		if (cap > MAX_RECORD_BYTES)
			return -E2BIG;
		p = realloc(rec->buf, cap);
		if (!p)
			return -ENOMEM;
		rec->buf = p;
		rec->cap = cap;
	}
	rec->buf[rec->len++] = ch;
	return 0;
}

/* The next record of @f (Python csv's quoting: "" inside quotes, line ends inside quotes kept).
 * Return: 1 a record, 0 end of file, -E2BIG too long or too many cells, -ADUMP_ERR_CORRUPT a
 * quote left open at the end, -ENOMEM. */
static int csv_next(FILE *f, struct csv_record *rec)
{
	bool in_quotes = false, any = false;
	int ch, ret;

	rec->len = 0;
	rec->count = 0;
	rec->has_end = false;
	rec->starts[rec->count++] = 0;
	while ((ch = getc(f)) != EOF) {
		any = true;
		if (in_quotes) {
			if (ch == '"') {
				int next = getc(f);

				if (next != '"') {
					in_quotes = false;
					if (next != EOF)
						ungetc(next, f);
					continue;
				}
			}
		} else if (ch == '"') {
			in_quotes = true;
			continue;
		} else if (ch == ',') {
			if ((ret = rec_put(rec, '\0')) < 0)
				return ret;
			if (rec->count == MAX_CELLS)
				return -E2BIG;
			rec->starts[rec->count++] = rec->len;
			continue;
		} else if (ch == '\r' || ch == '\n') {
			if (ch == '\r') {
				int next = getc(f);

				if (next != '\n' && next != EOF)
					ungetc(next, f);
			}
			rec->has_end = true;
			break;
		}
		if ((ret = rec_put(rec, (char)ch)) < 0)
			return ret;
	}
	if (!any)
		return 0;
	if (in_quotes)
		return -ADUMP_ERR_CORRUPT;
	if ((ret = rec_put(rec, '\0')) < 0)
		return ret;
	for (int i = 0; i < rec->count; i++)
		rec->cells[i] = rec->buf + rec->starts[i];
	return 1;
}

enum report_file_kind report_file_sniff(FILE *f)
{
	char head[64] = "";
	size_t n = fread(head, 1, sizeof(head) - 1, f);

	head[n] = '\0';
	rewind(f);
	if (!strncmp(head, "Index,OpType,NPUDump,", 21))
		return REPORT_FILE_RESULT_CSV;
	if (!strncmp(head, "Pair,Step,Rank,NPUDump,GroundTruth,", 35))
		return REPORT_FILE_SUMMARY_CSV;
	for (size_t i = 0; i < n; i++)
		if (head[i] != ' ' && head[i] != '\n' && head[i] != '\r' && head[i] != '\t')
			return head[i] == '{' || head[i] == '[' ? REPORT_FILE_JSON : REPORT_FILE_UNKNOWN;
	return REPORT_FILE_UNKNOWN;
}

static int csv_error(int ret, const char *path, unsigned long line, char *msg, size_t cap)
{
	if (ret == -E2BIG)
		snprintf(msg, cap, "%s: line %lu: a record longer than 4 MiB or of more than %d "
			 "cells: not an adump compare result", path, line, MAX_CELLS);
	else if (ret == -ADUMP_ERR_CORRUPT)
		snprintf(msg, cap, "%s: line %lu: a quoted cell runs to the end of the file: the "
			 "file is truncated", path, line);
	else
		snprintf(msg, cap, "%s: %s", path, strerror(-ret));
	return ret == -E2BIG ? -ADUMP_ERR_CORRUPT : ret;
}

int report_load_result_csv(struct adump_report *r, const char *path, const char *label,
			   int64_t step, int64_t rank, int code, char *msg, size_t cap)
{
	struct csv_record head = { 0 }, rec = { 0 };
	struct report_columns cols;
	struct report_pair *p;
	unsigned long line = 1;
	int ret, err = 0;
	FILE *f = fopen(path, "rb");

	if (!f) {
		ret = -errno;
		snprintf(msg, cap, "%s: %s", path, strerror(errno));
		return ret;
	}
	ret = csv_next(f, &head);
	if (ret <= 0 || !report_columns_find(&cols, head.cells, head.count)) {
		ret = ret < 0 ? csv_error(ret, path, line, msg, cap) : -ADUMP_ERR_CORRUPT;
		if (ret == -ADUMP_ERR_CORRUPT && !msg[0])
			snprintf(msg, cap, "%s: not an adump compare result (its header is not "
				 "Index,OpType,NPUDump,DataType,...,CompareFailReason)", path);
		goto out;
	}
	p = report_pair_new(r, label, step, rank, code, NULL, &err);
	if (!p) {
		ret = err;
		snprintf(msg, cap, "%s: %s", path, strerror(-err));
		goto out;
	}
	p->is_rejudged = true;
	while ((ret = csv_next(f, &rec)) > 0) {
		struct report_row *row;

		line++;
		if (rec.count != head.count || !rec.has_end) {
			snprintf(msg, cap, "%s: line %lu: %s (%d cells, the header has %d): the file "
				 "is truncated or not one adump compare wrote", path, line,
				 rec.has_end ? "a row of another width" : "the last row has no line end",
				 rec.count, head.count);
			ret = -ADUMP_ERR_CORRUPT;
			goto out;
		}
		row = report_row_new(r, &err);
		if (row)
			err = report_row_cells(r, row, &cols, rec.cells);
		if (err) {
			ret = err;
			snprintf(msg, cap, "%s: line %lu: %s", path, line, err == -E2BIG ?
				 "more rows or text than a report holds (1,000,000 rows, 512 MiB)" :
				 strerror(-err));
			goto out;
		}
		report_row_judge(r, row, &cols, rec.cells);
	}
	if (ret < 0) {
		ret = csv_error(ret, path, line + 1, msg, cap);
		goto out;
	}
	report_pair_first(r, &r->pairs[r->pair_count - 1]);
	ret = 0;
out:
	free(head.buf);
	free(rec.buf);
	fclose(f);
	return ret;
}

/* A pair's result named in the summary: as written (relative to where compare ran), else the
 * same file name beside the summary. */
static void result_path(const char *summary, const char *result, char *out, size_t cap)
{
	const char *slash = strrchr(summary, '/'), *base = strrchr(result, '/');
	struct stat st;

	if (stat(result, &st) == 0) {
		snprintf(out, cap, "%s", result);
		return;
	}
	base = base ? base + 1 : result;
	if (slash)
		snprintf(out, cap, "%.*s/%s", (int)(slash - summary), summary, base);
	else
		snprintf(out, cap, "%s", base);
}

int report_load_summary_csv(struct adump_report *r, const char *path, char *msg, size_t cap)
{
	static const char *const head_names[] = { "Pair", "Step", "Rank", "NPUDump", "GroundTruth",
		"Ops", "Matched", "MyOnly", "GroundTruthOnly", "FirstDivergentIndex",
		"FirstDivergentOp", "FirstDivergentTensor", "ExitCode", "Result", "Message" };
	struct csv_record head = { 0 }, rec = { 0 };
	unsigned long line = 1;
	char res[4096];
	int ret, err = 0;
	FILE *f = fopen(path, "rb");

	if (!f) {
		ret = -errno;
		snprintf(msg, cap, "%s: %s", path, strerror(errno));
		return ret;
	}
	ret = csv_next(f, &head);
	if (ret < 0) {
		ret = csv_error(ret, path, line, msg, cap);
		goto out;
	}
	if (ret == 0 || head.count != 15) {
		ret = -ADUMP_ERR_CORRUPT;
		goto bad;
	}
	for (int i = 0; i < 15; i++)
		if (strcmp(head.cells[i], head_names[i]))
			goto bad;
	while ((ret = csv_next(f, &rec)) > 0) {
		const char *const *c = rec.cells;
		int64_t step, rank;
		int code;

		line++;
		if (rec.count != 15 || !rec.has_end) {
			snprintf(msg, cap, "%s: line %lu: %s: the file is truncated", path, line,
				 rec.has_end ? "a row of another width" : "the last row has no line end");
			ret = -ADUMP_ERR_CORRUPT;
			goto out;
		}
		step = strtoll(c[1], NULL, 10);
		rank = strtoll(c[2], NULL, 10);
		code = (int)strtol(c[12], NULL, 10);
		if (!c[13][0]) {
			err = adump_report_add_pair_empty(r, c[0], step, rank, code, c[14]);
			if (err) {
				ret = err;
				snprintf(msg, cap, "%s: %s", path, strerror(-err));
				goto out;
			}
			continue;
		}
		result_path(path, c[13], res, sizeof(res));
		ret = report_load_result_csv(r, res, c[0], step, rank, code, msg, cap);
		if (ret < 0)
			goto out;
		r->pairs[r->pair_count - 1].message = report_strn(r, c[14], SIZE_MAX, &err);
	}
	if (ret < 0) {
		ret = csv_error(ret, path, line + 1, msg, cap);
		goto out;
	}
	ret = 0;
	goto out;
bad:
	snprintf(msg, cap, "%s: not an adump compare --recursive summary (its header is not "
		 "Pair,Step,Rank,NPUDump,GroundTruth,...,Message)", path);
	ret = -ADUMP_ERR_CORRUPT;
out:
	free(head.buf);
	free(rec.buf);
	fclose(f);
	return ret;
}

/* The latest (greatest name: the time stamp) <prefix>*.csv in @dir. */
static bool latest(const char *dir, const char *prefix, char *out, size_t cap)
{
	char best[1024] = "";
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return false;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (!strncmp(e->d_name, prefix, strlen(prefix)) && len > 4 && len < sizeof(best) &&
		    !strcmp(e->d_name + len - 4, ".csv") && strcmp(e->d_name, best) > 0)
			snprintf(best, sizeof(best), "%s", e->d_name);
	}
	closedir(d);
	if (!best[0])
		return false;
	snprintf(out, cap, "%s/%s", dir, best);
	return true;
}

static int load_file(struct adump_report *r, const char *path, char *msg, size_t cap)
{
	enum report_file_kind kind;
	FILE *f = fopen(path, "rb");
	int ret;

	if (!f) {
		ret = -errno;
		snprintf(msg, cap, "%s: %s", path, strerror(errno));
		return ret;
	}
	kind = report_file_sniff(f);
	fclose(f);
	switch (kind) {
	case REPORT_FILE_RESULT_CSV:
		return report_load_result_csv(r, path, NULL, -1, -1, 0, msg, cap);
	case REPORT_FILE_SUMMARY_CSV:
		return report_load_summary_csv(r, path, msg, cap);
	case REPORT_FILE_JSON:
		return report_load_json(r, path, msg, cap);
	default:
		snprintf(msg, cap, "%s: not an adump result (a result_<ts>.csv or summary_<ts>.csv "
			 "of adump compare, or the output of adump compare --json or adump scan "
			 "--json)", path);
		return -ADUMP_ERR_CORRUPT;
	}
}

int adump_report_load(const char *path, struct adump_report **out, char *msg, size_t cap)
{
	struct adump_report *r;
	char file[4096];
	struct stat st;
	int ret;

	msg[0] = '\0';
	if (stat(path, &st) < 0) {
		ret = -errno;
		snprintf(msg, cap, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (S_ISDIR(st.st_mode) && !latest(path, "summary_", file, sizeof(file)) &&
	    !latest(path, "result_", file, sizeof(file))) {
		/* No compare result: a statistics capture over steps, or nothing adump reads. */
		ret = adump_report_create(ADUMP_REPORT_SERIES, "adump statistics over steps", &r);
		if (ret == 0)
			ret = adump_report_source_set(r, path);
		if (ret == 0)
			ret = report_load_series(r, path, msg, cap);
		else
			snprintf(msg, cap, "report: %s", strerror(-ret));
		if (ret < 0) {
			adump_report_destroy(r);
			return ret;
		}
		*out = r;
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		snprintf(file, sizeof(file), "%s", path);
	ret = adump_report_create(ADUMP_REPORT_COMPARE, "adump compare", &r);
	if (ret < 0) {
		snprintf(msg, cap, "report: %s", strerror(-ret));
		return ret;
	}
	ret = adump_report_source_set(r, file);
	if (ret == 0)
		ret = load_file(r, file, msg, cap);
	if (ret < 0) {
		adump_report_destroy(r);
		return ret;
	}
	*out = r;
	return 0;
}
