/* SPDX-License-Identifier: Apache-2.0 */
/* Sizes as people write them: 512, 4K, 2M, 1G (also 4KiB, 4kb): powers of 1024. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/common.h"

int adump_size_parse(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	default:
		return -EINVAL;
	}
	if (*end) {
		end++;
		if (toupper((unsigned char)*end) == 'I')
			end++;
		if (toupper((unsigned char)*end) == 'B')
			end++;
		if (*end)
			return -EINVAL;
	}
	if (shift && v > (~0ULL >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}
