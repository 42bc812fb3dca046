/* SPDX-License-Identifier: Apache-2.0 */
/* tools/: the --html of `adump compare` and `adump scan` (cmd_report.c): the report of what
 * the command just computed, written with report/'s page writer. */
#ifndef ADUMP_TOOLS_HTML_OUT_H
#define ADUMP_TOOLS_HTML_OUT_H

#include "adump/compare.h"
#include "adump/scan.h"
#include "report/report.h"

/* One compare's report to @html; @my (its dump path) is where construct.json is looked for.
 * Says what failed on stderr. Return: 0, or the exit status to end with. */
int html_out_compare(const struct adump_compare *c, const char *my, const char *html, int code,
		     bool is_quiet);
/* A scan's report to @html, likewise. */
int html_out_scan(const struct adump_scan *s, const char *path, const char *html, bool is_quiet);
/* --recursive: a report the pairs are added to (NULL on failure, said on stderr), then
 * written and destroyed. */
struct adump_report *html_out_pairs_begin(const char *my);
int html_out_pairs_end(struct adump_report *r, const char *html, bool is_quiet);

#endif
