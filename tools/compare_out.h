/* SPDX-License-Identifier: Apache-2.0 */
/* tools/: what `adump compare`'s files share: result files that never overwrite one another,
 * and the pair-by-pair run of --recursive (cmd_compare_pairs.c). */
#ifndef ADUMP_TOOLS_COMPARE_OUT_H
#define ADUMP_TOOLS_COMPARE_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "adump/compare.h"

/* Create "<dir>/<stem><ext>", or where that name is taken "<dir>/<stem>_<k><ext>" with the
 * first free k (O_EXCL: two compares in one second into one directory both keep theirs).
 * Return: the open file with its path in @path; NULL with errno set. */
FILE *compare_out_create(const char *dir, const char *stem, const char *ext, char *path,
			 size_t cap);

/* compare_pairs_run(): both roots are one capture directory each, nothing below to pair. */
#define COMPARE_PAIRS_ONE (-1)

/* `adump compare --recursive` of two directories: each capture directory paired with its
 * counterpart and compared on its own; @html (NULL: none) the page of every pair.
 * Return: the exit status, or COMPARE_PAIRS_ONE. */
int compare_pairs_run(const struct adump_compare_config *cfg, const char *my,
		      const char *golden, const char *out_dir, bool is_json, bool is_quiet,
		      const char *html);

#endif
