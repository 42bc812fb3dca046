/* SPDX-License-Identifier: Apache-2.0 */
/* proto/: DumpData header (de)serialisation for other modules. */
#ifndef ADUMP_PROTO_H
#define ADUMP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/adump.h"

/* Build an op's header (8-byte length + DumpData) in a malloc'd buffer; caller frees.
 * Return: 0, -ADUMP_ERR_CONFIG, -ENOMEM. */
int adump_dump_header_alloc(const struct adump_op *op, void **out, size_t *len);

/* CRC32C (ISA-L) of @len bytes at @data, continuing @crc (0 to start): the packed index's. */
uint32_t adump_crc32c(uint32_t crc, const void *data, size_t len);

/* Packed layout index line (proto/packed.c): the one writer and the one parser. */
#define ADUMP_PACKED_LINE_FIXED_BYTES 112       /* a line beyond its file name, at most */
#define ADUMP_PACKED_TAG_MAX 24                 /* a session tag's bytes, NUL included */
struct adump_packed_line {
	const char *name;                       /* <device_id>/<file name>, in the line */
	const char *segment;                    /* segment file name, in the line */
	uint64_t offset;
	uint64_t length;
	uint32_t crc32c;
};
/* One index line at @dst (ADUMP_PACKED_LINE_FIXED_BYTES + @rel_len bytes are enough), as
 * "%s\tw%u-%u.seg\t%llu\t%llu\t%08x\n", the segment named "w%u.%s-%u.seg" when the session
 * has a @tag (not ""; lowercase letters and digits, shorter than ADUMP_PACKED_TAG_MAX).
 * Return: its length. */
size_t adump_packed_line_put(char *dst, const char *rel, size_t rel_len, unsigned worker,
			     const char *tag, uint32_t seg_number, uint64_t base, uint64_t len,
			     uint32_t crc);
/* Decimal digits of @v at @dst (no NUL). Return: the byte after them. */
char *adump_decimal_put(char *dst, uint64_t v);
/* Split a complete line (newline removed) in place into @out (which points into @line).
 * Return: NULL when well formed, otherwise what is wrong. */
const char *adump_packed_line_parse(char *line, struct adump_packed_line *out);

#endif
