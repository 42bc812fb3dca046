/* SPDX-License-Identifier: Apache-2.0 */
/* tools/: what `adump compare`'s files share: result files that never overwrite one another,
 * and the pair-by-pair run of --recursive (cmd_compare_pairs.c). */
#ifndef ADUMP_TOOLS_COMPARE_OUT_H
#define ADUMP_TOOLS_COMPARE_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "adump/compare.h"
#include "common/common.h"

/* msaccucmp's CompareError codes the command can end with. */
enum {
	EXIT_NO_DUMP = 2,
	EXIT_INVALID_PATH = 3,
	EXIT_INVALID_PARAM = 6,
	EXIT_WRITE = 19,
	EXIT_INVALID_SHAPE = 23,
	EXIT_INVALID_ALG = 31,
};

/* A result file being written (common/outfile.c): under a temporary name in its directory,
 * published whole by compare_out_finish(), never through a link planted at its name. */
struct compare_out {
	struct adump_outfile of;
	int dir_fd;
};
/* Start a file in @dir. Return: its stream (owned by @o), or NULL with errno set. */
FILE *compare_out_start(struct compare_out *o, const char *dir);
/* Publish it if @status is 0: as "<dir>/<stem><ext>", or with @is_new where that name is
 * taken "<dir>/<stem>_<k><ext>" with the first free k (two compares in one second into one
 * directory both keep theirs); without @is_new replacing what has the name. The path goes to
 * @path. On any error nothing is left under the name (an older file of it stays as it was).
 * Return: 0, @status, or the -errno of writing, syncing or renaming. */
int compare_out_finish(struct compare_out *o, int status, const char *dir, const char *stem,
		       const char *ext, bool is_new, char *path, size_t cap);

/* --plot (compare_plot.c): DIR/compare_<stamp>.png and .svg of the rows' cosine and max
 * relative error, by gnuplot. Return: 0 and the two paths in @msg, or a negative code and
 * why in @msg. */
int compare_plot(const struct adump_compare *c, const struct adump_compare_summary *s,
		 const char *dir, const char *stamp, char *msg, size_t cap);

/* compare_pairs_run(): both roots are one capture directory each, nothing below to pair. */
#define COMPARE_PAIRS_ONE (-1)

/* `adump compare --recursive` of two directories: each capture directory paired with its
 * counterpart and compared on its own; @fail_on as compare_fail_on(); @html (NULL: none)
 * the page of every pair.
 * Return: the exit status, or COMPARE_PAIRS_ONE. */
int compare_pairs_run(const struct adump_compare_config *cfg, const char *my,
		      const char *golden, const char *out_dir, bool is_json, bool is_quiet,
		      enum adump_compare_verdict fail_on, const char *html);

/* --fail-on: ADUMP_COMPARE_EXIT_VERDICT in place of a status 0 when a row of @s has a verdict
 * at or above @fail_on (ADUMP_COMPARE_NONE: off); @code otherwise. */
int compare_fail_on(int code, const struct adump_compare_summary *s,
		    enum adump_compare_verdict fail_on);

/* Two .npy files (compare_npy.c): msaccucmp's single-file compare, @has_algs: cfg->algs
 * chosen, else its eight. Return: the exit status. */
int compare_npy(const struct adump_compare_config *cfg, const char *my, const char *golden,
		const char *out_dir, bool has_algs);

#endif
