/* SPDX-License-Identifier: Apache-2.0 */
/* What scan/'s files share: a scan's state and each dump's result (scan.c reads the dumps on
 * a pool of threads), the element kernels that count non-finite values (scan_kernels.c), and
 * the classification in execution order (scan_order.c). Private to scan/. */
#ifndef ADUMP_SCAN_INT_H
#define ADUMP_SCAN_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/scan.h"
#include "common/common.h"
#include "compare/compare.h"

#define FP16_MAX 65504.0
/* Bytes read per step from a dump that is not in memory. */
#define STEP_BYTES ((size_t)1 << 20)

struct scan_result {
	struct adump_scan_counts counts[2];     /* inputs, outputs */
	char first[48];                         /* first anomalous tensor: "output:0" */
	char first_input[96];                   /* first anomalous input: "input:1", "the weight" */
	bool has_arg;                           /* an anomalous input that is no parameter */
	bool has_uninit;                        /* NaN/Inf in memory no op wrote (not counted) */
	char *op_name;                          /* the header's; NULL: the file name's */
	char *module;                           /* the header's `module` attribute, or NULL */
	char *message;                          /* unreadable: why */
	char *note;                             /* entered, enclosing: where from */
	uint64_t bytes;
};

struct adump_scan {
	struct adump_scan_config cfg;
	struct cmp_side side;
	struct scan_result *res;                /* per file, in the files' order */
	struct adump_scan_op *ops;
	uint64_t op_count;
	_Atomic size_t next;
	_Atomic uint64_t bytes;
	bool is_run;
};

/* A floating-point dtype's bit patterns (scan_kernels.c). */
struct scan_bits {
	unsigned width;                 /* bytes per element: 2 or 4 */
	uint32_t magnitude;             /* sign cleared */
	uint32_t exponent;              /* exponent all ones: Inf (mantissa 0) or NaN */
	uint32_t limit;                 /* float16: the largest finite value; else exponent */
};

static inline bool adump_scan_is_bad(const struct adump_scan_counts *c)
{
	return c->nan_count || c->inf_count || c->limit_count;
}

/* false: @dtype is no 2- or 4-byte float scan counts. */
ADUMP_HIDDEN bool adump_scan_bits_of(int32_t dtype, struct scan_bits *b);
/* One tensor of 2- or 4-byte floats: NaN, Inf and limit counts, read piece by piece
 * (@buf: STEP_BYTES). Return: 0 or the reader's error. */
ADUMP_HIDDEN int adump_scan_floats(struct adump_reader *rd, uint32_t tensor,
				   const struct scan_bits *b, uint64_t bytes, unsigned char *buf,
				   struct adump_scan_counts *c, bool *is_limit);
/* Sort the anomalous dumps, in execution order, into s->ops. Return: 0 or -ENOMEM. */
ADUMP_HIDDEN int adump_scan_classify(struct adump_scan *s);

#endif
