/* SPDX-License-Identifier: Apache-2.0 */
/* report/: the answer of a compare or a scan as one self-contained HTML page (`adump report`,
 * `adump compare --html`, `adump scan --html`, adump.report()): the first divergence in words,
 * Chart.js's chart of the metrics along the execution order, the module tree, the rows as a
 * table, a step x rank grid; of a statistics capture over steps, each tensor's series with its
 * anomalies and the flight recorder's triggers. Data goes into the page as escaped JSON, drawn
 * by DOM APIs only. */
#ifndef ADUMP_REPORT_H
#define ADUMP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/compare.h"
#include "adump/scan.h"

/* Exit statuses of `adump report` (and what adump_report_load()'s errors map to). */
enum {
	ADUMP_REPORT_EXIT_WRITE = 1,            /* the page could not be written, chart.js missing */
	ADUMP_REPORT_EXIT_USAGE = 2,
	ADUMP_REPORT_EXIT_PATH = 3,             /* a path that cannot be read */
	ADUMP_REPORT_EXIT_INPUT = 4,            /* not an adump result, truncated or malformed */
	ADUMP_REPORT_EXIT_LIMIT = 5,            /* more rows or bytes than a report holds */
};

/* Rows one report holds (all pairs together), and the bytes of text they may hold: past
 * either, loading or adding stops with -E2BIG and a message naming the limit. */
#define ADUMP_REPORT_MAX_ROWS 1000000u
#define ADUMP_REPORT_MAX_TEXT_BYTES (512u << 20)
/* The largest JSON result (compare --json, scan --json) read whole. */
#define ADUMP_REPORT_MAX_JSON_BYTES (256u << 20)

enum adump_report_kind {
	ADUMP_REPORT_COMPARE = 0,
	ADUMP_REPORT_SCAN = 1,
	ADUMP_REPORT_SERIES = 2,                /* a statistics capture over steps */
};

/* The series view's anomalies. A point (one tensor at one step) is marked
 *   - non-finite when a statistic it has (max, min, mean, norm) is NaN or infinite, or its NaN
 *     or Inf count is not 0;
 *   - a spike when its scale (the norm, where every point of the tensor has one; else the
 *     largest magnitude max(|max|, |min|)) is more than ADUMP_REPORT_SPIKE_FACTOR times, or
 *     less than 1 / ADUMP_REPORT_SPIKE_FACTOR of, the mean scale of the tensor's last
 *     ADUMP_REPORT_SPIKE_HISTORY earlier steps that were finite and not marked (at least
 *     ADUMP_REPORT_SPIKE_MIN_HISTORY of them; before that nothing is judged). Marked steps
 *     stay out of the history, so one spike does not hide the next or mark its return. */
#define ADUMP_REPORT_SPIKE_FACTOR 10.0
#define ADUMP_REPORT_SPIKE_HISTORY 5u
#define ADUMP_REPORT_SPIKE_MIN_HISTORY 3u

struct adump_report;

/* A new, empty report of @kind, titled @title (copied; NULL for none). Caller destroys. */
int adump_report_create(enum adump_report_kind kind, const char *title, struct adump_report **out);
void adump_report_destroy(struct adump_report *r);

/* Where the rows came from, shown on the page (copied). */
int adump_report_source_set(struct adump_report *r, const char *source);

/**
 * adump_report_add_compare() - one compared pair's rows, verdicts and modules as @c holds
 * them (after adump_compare_run()); @c is borrowed for the call only.
 * @label: the pair ("step0/rank0/0"; NULL or "." for a single compare), @step, @rank: -1 when
 * not known; @code: the pair's exit status.
 * Return: 0; -ENOMEM; -E2BIG past a limit (message in @msg).
 */
int adump_report_add_compare(struct adump_report *r, const struct adump_compare *c,
			     const char *label, int64_t step, int64_t rank, int code, char *msg,
			     size_t cap);

/* A pair without rows (no counterpart, or its compare failed), @why said on the page. */
int adump_report_add_pair_empty(struct adump_report *r, const char *label, int64_t step,
				int64_t rank, int code, const char *why);

/* The ops a scan listed (after adump_scan_run()); @s is borrowed for the call only. */
int adump_report_add_scan(struct adump_report *r, const struct adump_scan *s, char *msg,
			  size_t cap);

/**
 * adump_report_construct_find() - msprobe's construct.json ({node: parent}) beside or in
 * @dir, when there is one: the module tree is drawn from it. Absent is not an error.
 * Return: 0 (found or not); -ADUMP_ERR_CORRUPT for one that does not parse (message).
 */
int adump_report_construct_find(struct adump_report *r, const char *dir, char *msg, size_t cap);

/**
 * adump_report_load() - a report of a result @path: a directory `adump compare` wrote into
 * (its latest summary_<ts>.csv with each pair's result CSV, else its latest result_<ts>.csv),
 * one result or summary CSV, or the output of `adump compare --json` or `adump scan --json`.
 * From a CSV the verdicts are judged again from its cells (the scaled error is not in it).
 * A directory without result CSVs is read as a statistics capture over steps (a series
 * report): every <dump name>.csv of a content=stats session and msprobe dump.json beneath it,
 * step and rank from the step<N> and rank<R> directories above each (0 above none), and the
 * flight recorder's trigger.json files; links are not followed, only regular files read.
 * Return: 0 with *@out set; -errno for a path that cannot be read; -ADUMP_ERR_CORRUPT for a
 * file that is not such a result, truncated or malformed (a statistics CSV too);
 * -ADUMP_ERR_NOT_FOUND for a directory holding neither; -E2BIG past a limit; the message,
 * naming file and line, in @msg. adump_report_exit_code() maps them to exit statuses.
 */
int adump_report_load(const char *path, struct adump_report **out, char *msg, size_t cap);
int adump_report_exit_code(int err);

/* The Chart.js file inlined when none is given: found at configure time
 * (ADUMP_CHARTJS, default Debian's libjs-chart.js). */
const char *adump_report_chartjs_default(void);

/**
 * adump_report_write_html() - the page, written to "@path.tmp<pid>" then renamed to @path.
 * @chartjs: Chart.js's minified build to inline (NULL: adump_report_chartjs_default()).
 * Return: 0; -errno (message names the file: chart.js missing, cannot write).
 */
int adump_report_write_html(const struct adump_report *r, const char *path, const char *chartjs,
			    char *msg, size_t cap);

#endif
