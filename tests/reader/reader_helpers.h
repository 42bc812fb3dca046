/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the reader suites: build dump files in memory or on disk from tensor lists. */
#ifndef ADUMP_TEST_READER_HELPERS_H
#define ADUMP_TEST_READER_HELPERS_H

#include <stdlib.h>
#include <string.h>

#include "adump/adump.h"
#include "adump/reader.h"
#include "helpers.h"

static inline struct adump_tensor rt_tensor(enum adump_tensor_kind kind, int32_t dtype,
					    uint32_t dim_count, const uint64_t *dims,
					    uint64_t bytes)
{
	struct adump_tensor t = { .kind = kind, .dtype = dtype, .format = ADUMP_FORMAT_ND };

	t.dim_count = dim_count;
	t.orig_dim_count = dim_count;
	for (uint32_t i = 0; i < dim_count; i++)
		t.dims[i] = t.orig_dims[i] = dims[i];
	t.bytes = bytes;
	return t;
}

/* Header + payloads of @op in one malloc'd buffer; payload i is @data[i]. */
static inline void *rt_dump_mem(const struct adump_op *op, const void *const *data, size_t *len)
{
	long hdr = adump_dump_header_pack(op, NULL, 0);
	size_t total, pos;
	char *buf;

	ck_assert_int_gt(hdr, 0);
	total = (size_t)hdr;
	for (uint32_t i = 0; i < op->tensor_count; i++)
		total += op->tensors[i].bytes;
	buf = malloc(total ? total : 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(adump_dump_header_pack(op, buf, total), hdr);
	pos = (size_t)hdr;
	for (uint32_t i = 0; i < op->tensor_count; i++) {
		if (op->tensors[i].bytes)
			memcpy(buf + pos, data[i], op->tensors[i].bytes);
		pos += op->tensors[i].bytes;
	}
	*len = total;
	return buf;
}

/* Pseudo-random bytes. */
static inline void rt_fill(void *buf, size_t len, uint64_t *state)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(t_rand(state) >> 56);
}

#endif
