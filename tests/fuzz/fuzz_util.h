/* SPDX-License-Identifier: Apache-2.0 */
/* What the fuzz targets share: the invariant check that aborts naming the target (FUZZ_NAME,
 * defined before this is included) and writing an input's part as a file of a scratch
 * directory. */
#ifndef ADUMP_FUZZ_UTIL_H
#define ADUMP_FUZZ_UTIL_H

#include <stdio.h>
#include <stdlib.h>

static inline void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, FUZZ_NAME ": invariant failed: %s\n", what);
		abort();
	}
}

/* @len bytes of @data as <@dir>/<@name>; any failure aborts (the fuzzer's own fault). */
static inline void put(const char *dir, const char *name, const unsigned char *data,
		       size_t len)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0)
		abort();
}

#endif
