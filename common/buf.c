/* SPDX-License-Identifier: Apache-2.0 */
/* A growable byte buffer: the .pt bytes around a tensor (common/pt.c), dump.json's text
 * (pipeline/out_msprobe.c); and strings joined into a fixed one (names, paths). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

void adump_buf_put(struct adump_buf *b, const void *d, size_t n)
{
	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 512;
		unsigned char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void adump_buf_str(struct adump_buf *b, const char *s)
{
	adump_buf_put(b, s, strlen(s));
}

size_t adump_strjoin(char *dst, size_t cap, const char *const *parts, size_t n)
{
	size_t len = 0, at = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(parts[i]), room = cap - 1 - at;

		memcpy(dst + at, parts[i], k < room ? k : room);
		at += k < room ? k : room;
		len += k;
	}
	dst[at] = '\0';
	return len;
}

const char *adump_decimal(uint64_t v, char out[24])
{
	char *p = out + 23;

	*p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	return p;
}

int adump_path_with(char *dst, size_t cap, const char *base, const char *suffix)
{
	return adump_strjoin(dst, cap, (const char *const[]){ base, suffix }, 2) < cap ? 0 :
	       -ENAMETOOLONG;
}
