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

/* The statistics of a series point, in this order in report_point.value. */
enum { REPORT_STAT_MAX = 0, REPORT_STAT_MIN = 1, REPORT_STAT_MEAN = 2, REPORT_STAT_NORM = 3 };
#define REPORT_POINT_HAS_COUNTS (1u << 4)       /* report_point.has: the NaN/Inf counts */
#define REPORT_POINT_NONFINITE 1u               /* report_point.flags (report.h's rule) */
#define REPORT_POINT_SPIKE 2u

/* One tensor's statistics over steps (a series report): its points are
 * points[point_first .. point_first + point_count), by step. */
struct report_series {
	const char *name, *dtype, *shape;
	int64_t rank;
	int64_t last_step;                      /* while loading: the step of its last point */
	size_t point_first, point_count;
};

struct report_point {
	uint32_t series;
	uint32_t order;                         /* read order, the tie-break within a step */
	int64_t step;
	double value[4];                        /* REPORT_STAT_*; meaningful where has says */
	uint64_t nan_count, inf_count;
	uint8_t has;                            /* bit k: value[k]; REPORT_POINT_HAS_COUNTS */
	uint8_t flags;                          /* REPORT_POINT_NONFINITE | REPORT_POINT_SPIKE */
	const char *why;                        /* the anomaly in words, or NULL */
};

/* A flight recorder trigger.json (strings NULL where it has none). */
struct report_trigger {
	int64_t step, rank;
	const char *rule, *tensor, *reason, *value, *path;
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
	/* A series report's (the rows and pairs above stay empty). */
	struct report_series *series;
	size_t series_count, series_cap;
	struct report_point *points;
	size_t point_count, point_cap;
	struct report_trigger *triggers;
	size_t trigger_count, trigger_cap;
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
/* A statistics capture under @dir (load_series.c): makes @r a series report. */
int report_load_series(struct adump_report *r, const char *dir, char *msg, size_t cap);
/* Its points sorted into series and each judged (series_judge.c). Return: 0 or -ENOMEM. */
int report_series_judge(struct adump_report *r);

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
