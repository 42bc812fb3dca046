/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a numpy .npy file (format 1.x or 2.x, C order, little-endian numeric dtypes) for
 * `adump compare MY.npy GOLDEN.npy`: the header's dict parsed, its shape checked to hold an
 * element count that neither overflows nor runs past the file. The file is read into memory,
 * never mapped: a file cut short while compared would kill a mapping's reader with SIGBUS,
 * where a read stops at its new end and says so. The counterpart of npy.c's writer. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/reader.h"

static const struct {
	const char *descr;
	int32_t dtype;
	uint32_t bytes;
} npy_types[] = {
	{ "<f4", ADUMP_DT_FLOAT, 4 },  { "<f2", ADUMP_DT_FLOAT16, 2 }, { "<f8", ADUMP_DT_DOUBLE, 8 },
	{ "|i1", ADUMP_DT_INT8, 1 },   { "<i2", ADUMP_DT_INT16, 2 },   { "<i4", ADUMP_DT_INT32, 4 },
	{ "<i8", ADUMP_DT_INT64, 8 },  { "|u1", ADUMP_DT_UINT8, 1 },   { "<u2", ADUMP_DT_UINT16, 2 },
	{ "<u4", ADUMP_DT_UINT32, 4 }, { "<u8", ADUMP_DT_UINT64, 8 },  { "|b1", ADUMP_DT_BOOL, 1 },
};

static int npy_fail(struct adump_reader_npy *n, char *msg, size_t cap, int ret, const char *fmt,
		    ...) __attribute__((format(printf, 5, 6)));

static int npy_fail(struct adump_reader_npy *n, char *msg, size_t cap, int ret, const char *fmt,
		    ...)
{
	va_list ap;

	if (msg && cap) {
		va_start(ap, fmt);
		vsnprintf(msg, cap, fmt, ap);
		va_end(ap);
	}
	adump_reader_npy_unmap(n);
	return ret;
}

/* The shape tuple at @sh ("(2, 3)" past its parenthesis) into @n's dims and count. */
static int npy_shape(struct adump_reader_npy *n, const char *sh, const char *path, char *msg,
		     size_t cap)
{
	n->count = 1;
	while (*sh == ' ')
		sh++;
	while (*sh != ')') {
		char *end;
		unsigned long long v;

		if (*sh < '0' || *sh > '9')
			return npy_fail(n, msg, cap, -ADUMP_ERR_CORRUPT, "%s: unsupported numpy shape: a "
					"dimension that is not a count", path);
		errno = 0;
		v = strtoull(sh, &end, 10);
		if (errno)
			return npy_fail(n, msg, cap, -ADUMP_ERR_CORRUPT, "%s: unsupported numpy "
					"shape: a dimension past 64 bits", path);
		if (n->dim_count == ADUMP_MAX_DIMS)
			return npy_fail(n, msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: unsupported "
					"numpy shape: more than %d dimensions", path,
					ADUMP_MAX_DIMS);
		if (__builtin_mul_overflow(n->count, (uint64_t)v, &n->count))
			return npy_fail(n, msg, cap, -ADUMP_ERR_CORRUPT, "%s: the shape's element "
					"count overflows 64 bits", path);
		n->dims[n->dim_count++] = v;
		sh = end;
		while (*sh == ',' || *sh == ' ')
			sh++;
	}
	return 0;
}

int adump_reader_npy_map(const char *path, struct adump_reader_npy *n, char *msg, size_t cap)
{
	const unsigned char *p;
	uint64_t header, prefix;
	const char *d, *sh;
	uint32_t elem = 0;
	char dict[4096];
	struct stat st;
	int fd, ret;

	memset(n, 0, sizeof(*n));
	fd = adump_open_regular(path);
	if (fd < 0)
		return npy_fail(n, msg, cap, fd, "%s: %s", path, adump_open_strerror(fd));
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return npy_fail(n, msg, cap, ret, "%s: %s", path, strerror(-ret));
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0 || (uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		return npy_fail(n, msg, cap, -ADUMP_ERR_CORRUPT, "%s: not a numpy file (%s)", path,
				st.st_size ? "too large" : "empty");
	}
	n->map_bytes = (size_t)st.st_size;
	n->map = malloc(n->map_bytes);
	if (!n->map) {
		close(fd);
		return npy_fail(n, msg, cap, -ENOMEM, "%s: no memory for its %zu bytes", path,
				n->map_bytes);
	}
	for (size_t done = 0; done < n->map_bytes;) {
		ssize_t got = pread(fd, (char *)n->map + done, n->map_bytes - done, (off_t)done);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			ret = got < 0 ? -errno : -ADUMP_ERR_INCOMPLETE;
			close(fd);
			return npy_fail(n, msg, cap, ret, "%s: %s", path, got < 0 ? strerror(-ret) :
					"the file was cut short while read");
		}
		done += (size_t)got;
	}
	close(fd);
	p = n->map;
	if (n->map_bytes < 10 || memcmp(p, "\x93NUMPY", 6) || (p[6] != 1 && p[6] != 2) ||
	    (p[6] == 2 && n->map_bytes < 12))
		return npy_fail(n, msg, cap, -ADUMP_ERR_CORRUPT, "%s: not a numpy file", path);
	prefix = p[6] == 1 ? 10 : 12;
	header = prefix + (p[6] == 1 ? (uint64_t)(p[8] | p[9] << 8)
				     : (uint64_t)(p[8] | p[9] << 8 | p[10] << 16 |
						  (uint32_t)p[11] << 24));
	if (header > n->map_bytes || header - prefix >= sizeof(dict))
		return npy_fail(n, msg, cap, -ADUMP_ERR_CORRUPT, "%s: numpy header runs past the "
				"file", path);
	memcpy(dict, p + prefix, header - prefix);
	dict[header - prefix] = '\0';
	d = strstr(dict, "'descr': '");
	sh = strstr(dict, "'shape': (");
	if (!d || !sh || strstr(dict, "'fortran_order': True"))
		return npy_fail(n, msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: unsupported numpy header "
				"%s", path, dict);
	n->dtype = -1;
	for (size_t i = 0; i < sizeof(npy_types) / sizeof(npy_types[0]); i++)
		if (!strncmp(d + 10, npy_types[i].descr, 3) && d[13] == '\'') {
			n->dtype = npy_types[i].dtype;
			elem = npy_types[i].bytes;
		}
	if (n->dtype < 0)
		return npy_fail(n, msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: dtype %.6s is not "
				"compared", path, d + 10);
	ret = npy_shape(n, sh + 10, path, msg, cap);
	if (ret < 0)
		return ret;
	if (n->count > (n->map_bytes - header) / elem)
		return npy_fail(n, msg, cap, -ADUMP_ERR_INCOMPLETE, "%s: %llu elements do not fit "
				"in the file", path, (unsigned long long)n->count);
	n->data = p + header;
	return 0;
}

void adump_reader_npy_unmap(struct adump_reader_npy *n)
{
	free(n->map);
	memset(n, 0, sizeof(*n));
}
