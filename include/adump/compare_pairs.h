/* SPDX-License-Identifier: Apache-2.0 */
/* Pairing two capture roots for `adump compare --recursive`: each capture directory of one
 * root (step<N>/rank<R>/0/, a CANN iteration directory, a packed capture) with its
 * counterpart in the other, so steps and ranks are compared pair by pair, never merged. */
#ifndef ADUMP_COMPARE_PAIRS_H
#define ADUMP_COMPARE_PAIRS_H

#include <stddef.h>
#include <stdint.h>

#include "adump/adump_err.h"
#include "adump/reader.h"

#ifdef __cplusplus
extern "C" {
#endif

struct adump_compare_pair {
	const char *my;                 /* the capture directory; NULL: on the ground truth only */
	const char *golden;             /* NULL: in my output only */
	const char *label;              /* its path below the root ("step0/rank0/0"; "." for the
					 * root), my side's where both have one */
	int64_t step, rank;             /* from step<N> and rank<R> in the path; -1 if absent */
};

struct adump_compare_pairs;

/**
 * adump_compare_pairs_list() - walk both roots together. A capture directory holds dump files
 * (or a packed capture) itself. Directories of the same name pair up; at a level where each
 * side has exactly one directory the other lacks (a time stamp, a device id) those two pair
 * up, unless either is named step<N> or rank<R>. Capture directories without a counterpart are listed with the other side NULL.
 * Pairs come in step, then rank, then path order. Names starting with '.' are skipped.
 * Return: 0; -ADUMP_ERR_NOT_FOUND when neither root holds a capture directory; -errno for a
 * root that cannot be read; -ENOMEM. The message is in @msg.
 */
ADUMP_API int adump_compare_pairs_list(const char *my, const char *golden,
				       struct adump_compare_pairs **out, char *msg, size_t cap);

/** adump_compare_pairs_count() - pairs listed, one-sided ones included. */
ADUMP_API size_t adump_compare_pairs_count(const struct adump_compare_pairs *p);

/** adump_compare_pairs_get() - pair @i; NULL out of range. Valid until free. */
ADUMP_API const struct adump_compare_pair *
adump_compare_pairs_get(const struct adump_compare_pairs *p, size_t i);

/** adump_compare_pairs_free() - NULL does nothing. */
ADUMP_API void adump_compare_pairs_free(struct adump_compare_pairs *p);

#ifdef __cplusplus
}
#endif
#endif
