/* SPDX-License-Identifier: Apache-2.0 */
/* The packed layout's index line, written by pipeline/out_packed.c and read by reader/ (the
 * packed list and adump_unpack()), and the CRC32C both sides compute over a file's bytes:
 *
 *     <device_id>/<file name>\t<segment file>\t<offset>\t<length>\t<crc32c hex>\n
 */
#include <errno.h>
#include <isa-l/crc.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"

uint32_t adump_crc32c(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;

	/* ISA-L's iSCSI CRC is CRC32C with the init and final inversions left to the caller;
	 * it takes an int length, so a long buffer goes in pieces. */
	while (len) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;

		crc = ~crc32_iscsi((unsigned char *)p, n, ~crc);
		p += n;
		len -= (size_t)n;
	}
	return crc;
}

char *adump_decimal_put(char *dst, uint64_t v)
{
	char tmp[20];
	unsigned n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*dst++ = tmp[--n];
	return dst;
}

size_t adump_packed_line_put(char *dst, const char *rel, size_t rel_len, unsigned worker,
			     const char *tag, uint32_t seg_number, uint64_t base, uint64_t len,
			     uint32_t crc)
{
	static const char hex[] = "0123456789abcdef";
	char *p = dst;

	memcpy(p, rel, rel_len);
	p += rel_len;
	*p++ = '\t';
	*p++ = 'w';
	p = adump_decimal_put(p, worker);
	if (tag[0]) {
		size_t tag_len = strnlen(tag, ADUMP_PACKED_TAG_MAX - 1);

		*p++ = '.';
		memcpy(p, tag, tag_len);
		p += tag_len;
	}
	*p++ = '-';
	p = adump_decimal_put(p, seg_number);
	memcpy(p, ".seg\t", 5);
	p += 5;
	p = adump_decimal_put(p, base);
	*p++ = '\t';
	p = adump_decimal_put(p, len);
	*p++ = '\t';
	for (int shift = 28; shift >= 0; shift -= 4)
		*p++ = hex[(crc >> shift) & 0xf];
	*p++ = '\n';
	return (size_t)(p - dst);
}

static bool parse_u64(const char *s, int base, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return false;
	errno = 0;
	*out = strtoull(s, &end, base);
	return !*end && errno == 0;
}

const char *adump_packed_line_parse(char *line, struct adump_packed_line *out)
{
	char *fields[5], *tab;
	uint64_t crc;
	int n = 0;

	fields[n++] = line;
	while (n < 5 && (tab = strchr(fields[n - 1], '\t'))) {
		*tab = '\0';
		fields[n++] = tab + 1;
	}
	if (n != 5 || strchr(fields[4], '\t'))
		return "expected 5 tab-separated fields";
	if (!fields[0][0] || fields[0][0] == '/' || strstr(fields[0], ".."))
		return "bad file name";
	if (!fields[1][0] || strchr(fields[1], '/'))
		return "bad segment name";
	if (!parse_u64(fields[2], 10, &out->offset) || !parse_u64(fields[3], 10, &out->length) ||
	    out->offset > UINT64_MAX - out->length)
		return "bad offset or length";
	if (strlen(fields[4]) > 8 || !parse_u64(fields[4], 16, &crc))
		return "bad CRC32C";
	out->name = fields[0];
	out->segment = fields[1];
	out->crc32c = (uint32_t)crc;
	return NULL;
}
