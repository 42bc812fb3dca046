/* SPDX-License-Identifier: Apache-2.0 */
/* reader/: internals shared by the parser, statistics, .npy writer and chunk assembler. */
#ifndef ADUMP_READER_INT_H
#define ADUMP_READER_INT_H

#include <stdarg.h>

#include "adump/reader.h"
#include "common/common.h"

struct adump_reader_source {
	const struct adump_reader_source_ops *ops;
	void *ctx;
	uint64_t size;
};

/* Bytes read per step when streaming a payload. */
#define ADUMP_READER_STEP_BYTES ((size_t)1 << 20)

ADUMP_HIDDEN const void *adump_reader_source_map(struct adump_reader_source *src,
						 uint64_t offset, size_t len);

/* Open the source for a path: a plain dump file today; containers plug in here. */
ADUMP_HIDDEN int adump_reader_source_open_path(const char *path, struct adump_reader_source **out);

/* Record a failure message "<name>: <fmt...>" in the reader and return @ret. */
ADUMP_HIDDEN int adump_reader_fail(struct adump_reader *r, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* float16 / bfloat16 bit patterns to float. */
ADUMP_HIDDEN float adump_half_to_float(uint16_t h);
static inline float adump_bf16_to_float(uint16_t b)
{
	union {
		uint32_t u;
		float f;
	} v = { .u = (uint32_t)b << 16 };

	return v.f;
}

#endif
