/* SPDX-License-Identifier: Apache-2.0 */
/* Streaming tensor statistics for "dump_data": "stats": a worker feeds a dump file's payload
 * chunks as they pass (in payload order, split anywhere) and gets the statistics CSV of
 * reference §2.4 at the end: no second pass, no copy of a whole tensor. */
#ifndef ADUMP_PIPELINE_STATS_H
#define ADUMP_PIPELINE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/types.h"
#include "common/common.h"

/* One dump file's accumulator. Caller-owned storage; the fields are private. */
struct adump_statacc {
	const struct adump_op *op;      /* borrowed until adump_statacc_fini() */
	uint32_t stats_mask;
	uint64_t next_offset;           /* payload offset the next feed should start at */
	uint32_t tensor_index;          /* tensor holding next_offset */
	uint64_t tensor_start;          /* its first payload byte */
	uint8_t partial[16];            /* an element split across feeds */
	uint32_t partial_bytes;
	bool has_handover;              /* took a producer's statistics */
	void *tensors;                  /* private: one accumulator per op tensor */
};

/**
 * adump_statacc_init() - start the statistics of one dump file.
 * @acc:        caller storage.
 * @op:         the file's op; borrowed (with its tensors) until adump_statacc_fini().
 * @stats_mask: statistics to print, CANN's selection bits (acl.json dump_stats), which
 *              adump.h names ADUMP_STAT_*: Max 1<<0, Min 1<<1, Avg 1<<2, Nan 1<<3,
 *              Negative Inf 1<<4, Positive Inf 1<<5, L2norm 1<<6. 0 means the default six
 *              (0x3f), which print in the fixed column layout of reference §2.4.
 *
 * Allocates one accumulator per tensor, once per file (not per chunk).
 * Return: 0, -EINVAL for a NULL argument, -ENOMEM. Any thread; one thread per @acc.
 */
int adump_statacc_init(struct adump_statacc *acc, const struct adump_op *op, uint32_t stats_mask);

/**
 * adump_statacc_feed() - accumulate @len payload bytes starting at @payload_offset (0 = the
 * first byte after the header: inputs, then outputs, buffers, workspaces). Feeds come in
 * payload order and may split elements and tensors anywhere. A feed that starts past the
 * expected offset marks the skipped tensors incomplete (NA); bytes already seen are ignored.
 * Buffers, workspaces and unsupported dtypes are skipped. @data is borrowed for the call.
 */
void adump_statacc_feed(struct adump_statacc *acc, uint64_t payload_offset, const void *data,
			size_t len);

struct adump_rec;

/**
 * adump_statacc_record() - what an output kind calls for each record of a file it keeps
 * statistics of (in @acc), whatever the record carries: payload bytes are fed
 * (adump_statacc_feed()); statistics the producer computed at handover (rec->op->tstats, a
 * host stream of a statistics session) are taken whole, once. Either way @acc ends up with
 * the same statistics and the same CSV. Worker thread of the file.
 */
void adump_statacc_record(struct adump_statacc *acc, const struct adump_rec *rec);

struct adump_tstats;

/**
 * adump_statacc_tensor() - tensor @index's statistics (common/common.h, read through the
 * adump_tstats_*() functions or its public fields), or NULL when it has none: not an input
 * or output, a dtype without statistics, or not fully fed (a gap or a drop: its CSV row
 * prints NA). Valid until the next call on @acc.
 */
const struct adump_tstats *adump_statacc_tensor(const struct adump_statacc *acc, uint32_t index);

/**
 * adump_statacc_csv() - the CSV text (reference §2.4): a header line, then one row per input
 * and per output. Tensors not fully fed print NA in their statistic columns.
 * @out: receives a NUL-terminated malloc'd string; the caller frees. @len: its length.
 * Return: 0 or -ENOMEM.
 */
int adump_statacc_csv(struct adump_statacc *acc, char **out, size_t *len);

/** adump_statacc_fini() - free the accumulators. NULL or an unused @acc is fine. */
void adump_statacc_fini(struct adump_statacc *acc);

#endif
