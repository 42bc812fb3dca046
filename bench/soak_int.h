/* SPDX-License-Identifier: Apache-2.0 */
/* The soak's state, shared by its run (bench/soak.c) and its verification of what the run
 * wrote or delivered (bench/soak_verify.c). */
#ifndef ADUMP_BENCH_SOAK_INT_H
#define ADUMP_BENCH_SOAK_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench/bench.h"

struct soak_op {
	uint64_t count;                         /* floats per tensor */
	uint64_t self_at, other_at;             /* float offsets into the pattern */
	uint32_t crc[3];                        /* self, other, out, taken at launch */
	unsigned seen;                          /* times found in the dumps */
};

/* A file being delivered to the callback sink: chunks come in order per file. Checked as
 * it streams: only its head (length and header) is kept, each tensor's CRC32C is taken
 * chunk by chunk, so the verifier's memory does not grow with the files in flight (holding
 * them whole, it made the callback soak's RSS climb 1.16x whatever the writer). */
struct soak_partial {
	struct soak_partial *next;
	char *name;
	unsigned char *head;                    /* the first bytes, until the header parses */
	size_t head_len, head_cap;
	bool is_parsed, is_bad;
	uint64_t len;                           /* bytes delivered so far */
	uint64_t file_bytes;                    /* from the header */
	struct soak_op *op;
	uint64_t tensor_at[3], tensor_bytes[3];
	uint32_t crc[3];
};

struct adump_bench_soak {
	struct adump_bench_soak_opts o;
	uint64_t max_count;                     /* floats in the largest tensor */
	float *pattern;                         /* host copy of the device pattern */
	void *dev_pattern;
	struct adump_dev *dev;
	struct soak_op **ops;                   /* per stream */
	unsigned *op_count;
	uint64_t *stream_max;                   /* floats in each stream's largest tensor */
	void **out;                             /* per stream, made resident before the run */
	uint64_t op_total, tensor_bytes;
	_Atomic uint64_t launched;              /* tensor bytes (or ops) launched so far */
	pthread_mutex_t lock;                   /* seen, corrupt, rss[], partials */
	uint64_t corrupt, verified_bytes;
	char first[256];
	uint64_t rss[ADUMP_BENCH_SOAK_RSS_MAX];
	unsigned rss_count;
	struct soak_partial *open;
	uint64_t out_of_order;
};

#endif
