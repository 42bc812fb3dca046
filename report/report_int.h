/* SPDX-License-Identifier: Apache-2.0 */
/* report/: the rows a report holds, shared by the loaders (model.c, load_csv.c, load_json.c)
 * and the page writer (html.c). */
#ifndef ADUMP_REPORT_INT_H
#define ADUMP_REPORT_INT_H

#include <stdio.h>

#include "report/report.h"

/* A scan row's kind, as adump scan names it. */
enum report_scan_kind {
	REPORT_SCAN_NONE = 0,
	REPORT_SCAN_ORIGIN = 1,
	REPORT_SCAN_REACHED = 2,
	REPORT_SCAN_UNREADABLE = 3,
};

/* One tensor pair of a compare, or one op a scan listed. Strings live in the report's arena
 * (NULL: none). */
struct report_row {
	uint64_t index;                         /* compare: Index; scan: execution order */
	const char *type, *op, *tensor, *module, *reason;
	const char *dtype[2], *shape, *stats[2];
	double cosine, max_rel, max_abs, scaled;        /* NaN: not a number */
	/* compare: NaN, Inf of my output, then of the ground truth; scan: NaN, Inf, fp16 limit
	 * of the inputs, then of the outputs. */
	uint64_t counts[6];
	bool has_counts;
	uint8_t verdict;                        /* enum adump_compare_verdict */
	uint8_t scan_kind;                      /* enum report_scan_kind */
};

struct report_pair {
	const char *label, *message;
	int64_t step, rank;
	int code;
	size_t row_first, row_count;
	int64_t first;                          /* first divergent row within the pair, or -1 */
	bool is_rejudged;                       /* verdicts judged again from CSV cells */
};

struct report_block;

struct adump_report {
	enum adump_report_kind kind;
	const char *title, *source;
	char *construct;                        /* construct.json as JSON text, or NULL */
	struct report_row *rows;
	size_t row_count, row_cap;
	struct report_pair *pairs;
	size_t pair_count, pair_cap;
	struct report_block *blocks;            /* the string arena */
	size_t text_bytes;
};

/* A copy of @s (up to @len bytes; SIZE_MAX: strlen) in @r's arena; NULL for NULL @s. Sets
 * *@err to -ENOMEM or -E2BIG (past ADUMP_REPORT_MAX_TEXT_BYTES) and returns NULL then. */
const char *report_strn(struct adump_report *r, const char *s, size_t len, int *err);
/* A new row, zeroed but for the metrics (NaN); NULL with *@err set past the row limit. */
struct report_row *report_row_new(struct adump_report *r, int *err);
/* A new pair, its rows those added after it. */
struct report_pair *report_pair_new(struct adump_report *r, const char *label, int64_t step,
				    int64_t rank, int code, const char *message, int *err);

/* Where each column of a compare result sits (-1: absent), found by the header's names. */
struct report_columns {
	int index, type, my, golden, dtype[2], tensor, shape, cosine, max_abs, max_rel, std;
	int reason, result, npu[4], bench[4];
	bool is_stats;
	int count;
};

/* Whether @names (@count of them) is a compare result's header; fills @cols. */
bool report_columns_find(struct report_columns *cols, const char *const *names, int count);
/* A row from its cells (the CSV's or the C row's), without verdict or module. */
int report_row_cells(struct adump_report *r, struct report_row *row,
		     const struct report_columns *cols, const char *const *cells);
/* The verdict from the cells alone (a CSV): NaN/Inf reason, msprobe floor, the default
 * limits by cosine and max abs error, statistics mode's Result. */
void report_row_judge(struct adump_report *r, struct report_row *row,
		      const struct report_columns *cols, const char *const *cells);
/* The pair's first divergent row: the first in row order whose verdict is warning or error. */
void report_pair_first(struct adump_report *r, struct report_pair *p);

/* Loaders (load_csv.c, load_json.c): add what @path holds to @r. */
int report_load_result_csv(struct adump_report *r, const char *path, const char *label,
			   int64_t step, int64_t rank, int code, char *msg, size_t cap);
int report_load_summary_csv(struct adump_report *r, const char *path, char *msg, size_t cap);
int report_load_json(struct adump_report *r, const char *path, char *msg, size_t cap);

/* What kind of result file @path's first bytes say it is. */
enum report_file_kind {
	REPORT_FILE_UNKNOWN = 0,
	REPORT_FILE_RESULT_CSV,
	REPORT_FILE_SUMMARY_CSV,
	REPORT_FILE_JSON,
};
enum report_file_kind report_file_sniff(FILE *f);

/* JSON text of @s: quoted, with <, >, &, U+2028/2029 and controls as \u escapes and bytes that
 * are not UTF-8 as U+FFFD; NULL as null. */
void report_json_str(FILE *f, const char *s);
/* A JSON text (already valid JSON) written with the same escapes inside its strings. */
void report_json_raw(FILE *f, const char *json);

#endif
