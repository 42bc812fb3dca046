/* SPDX-License-Identifier: Apache-2.0 */
/* numpy .npy (format 1.0) output for `adump convert`: dtype descriptors, the header exactly as
 * numpy.save writes it, and streaming payload copies (bfloat16 widened to float32). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader/reader.h"

const char *adump_reader_npy_descr(int32_t dtype)
{
	switch (dtype) {
	case ADUMP_DT_FLOAT:
	case ADUMP_DT_BF16:
		return "<f4";
	case ADUMP_DT_FLOAT16:
		return "<f2";
	case ADUMP_DT_DOUBLE:
		return "<f8";
	case ADUMP_DT_INT8:
	case ADUMP_DT_QINT8:
	case ADUMP_DT_DUAL_SUB_INT8:
		return "|i1";
	case ADUMP_DT_UINT8:
	case ADUMP_DT_QUINT8:
	case ADUMP_DT_DUAL_SUB_UINT8:
		return "|u1";
	case ADUMP_DT_INT16:
	case ADUMP_DT_QINT16:
		return "<i2";
	case ADUMP_DT_UINT16:
	case ADUMP_DT_QUINT16:
		return "<u2";
	case ADUMP_DT_INT32:
	case ADUMP_DT_QINT32:
		return "<i4";
	case ADUMP_DT_UINT32:
		return "<u4";
	case ADUMP_DT_INT64:
		return "<i8";
	case ADUMP_DT_UINT64:
		return "<u8";
	case ADUMP_DT_BOOL:
		return "|b1";
	case ADUMP_DT_COMPLEX64:
		return "<c8";
	case ADUMP_DT_COMPLEX128:
		return "<c16";
	default:
		return NULL;
	}
}

#define NPY_ALIGN 64
#define NPY_PREFIX_BYTES 10             /* magic (6) + version (2) + header length (2) */
#define NPY_GROWTH_DIGITS 21            /* numpy's GROWTH_AXIS_MAX_DIGITS */

long adump_reader_npy_header(const char *descr, const uint64_t *dims, uint32_t dim_count,
			     void *buf, size_t cap)
{
	char dict[1024];                        /* 25 dims of 20 digits fit with room to spare */
	size_t len, hlen, pad, total;
	int n;

	if (!descr || strlen(descr) > 8 || dim_count > ADUMP_MAX_DIMS || (dim_count && !dims))
		return -ADUMP_ERR_CONFIG;
	n = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (",
		     descr);
	len = (size_t)n;
	for (uint32_t i = 0; i < dim_count; i++)
		len += (size_t)snprintf(dict + len, sizeof(dict) - len, "%s%llu", i ? ", " : "",
					(unsigned long long)dims[i]);
	/* Python writes a 1-tuple as "(5,)". */
	len += (size_t)snprintf(dict + len, sizeof(dict) - len, "%s), }",
				dim_count == 1 ? "," : "");
	/* numpy leaves room to grow the first axis in place. */
	if (dim_count) {
		char first[24];
		int digits = snprintf(first, sizeof(first), "%llu", (unsigned long long)dims[0]);

		for (int i = digits; i < NPY_GROWTH_DIGITS; i++)
			dict[len++] = ' ';
	}
	hlen = len + 1;
	pad = NPY_ALIGN - (NPY_PREFIX_BYTES + hlen) % NPY_ALIGN;
	total = NPY_PREFIX_BYTES + hlen + pad;
	if (hlen + pad > 0xffff)
		return -ADUMP_ERR_TOO_BIG;
	if (!buf)
		return (long)total;
	if (cap < total)
		return -ADUMP_ERR_TOO_BIG;
	unsigned char *p = buf;
	memcpy(p, "\x93NUMPY\x01\x00", 8);
	p[8] = (unsigned char)((hlen + pad) & 0xff);
	p[9] = (unsigned char)((hlen + pad) >> 8);
	memcpy(p + NPY_PREFIX_BYTES, dict, len);
	memset(p + NPY_PREFIX_BYTES + len, ' ', pad);
	p[total - 1] = '\n';
	return (long)total;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Copy a payload to @fd in steps; with @widen_bf16 each 2-byte bfloat16 becomes a float. */
static int copy_payload(struct adump_reader *r, uint32_t tensor, int fd, bool widen_bf16)
{
	const struct adump_reader_tensor *t = &adump_reader_header(r)->tensors[tensor];
	size_t step = ADUMP_READER_STEP_BYTES;
	unsigned char *buf;
	float *wide = NULL;
	uint64_t done = 0;
	int ret = 0;

	/* Small payloads get a buffer of their own size; large ones stream in 1 MiB steps. */
	if (t->info.bytes < step)
		step = t->info.bytes ? (size_t)t->info.bytes : 1;
	buf = malloc(step);
	if (widen_bf16)
		wide = malloc(step * 2);
	if (!buf || (widen_bf16 && !wide)) {
		ret = adump_reader_fail(r, -ENOMEM, "out of memory for a copy buffer");
		goto out;
	}
	while (done < t->info.bytes) {
		size_t n = t->info.bytes - done < step ? (size_t)(t->info.bytes - done) : step;

		ret = adump_reader_read(r, tensor, done, buf, n);
		if (ret < 0)
			goto out;
		if (widen_bf16) {
			for (size_t i = 0; i < n / 2; i++) {
				uint16_t b;

				memcpy(&b, buf + 2 * i, 2);
				wide[i] = adump_bf16_to_float(b);
			}
			ret = write_all(fd, wide, n / 2 * sizeof(float));
		} else {
			ret = write_all(fd, buf, n);
		}
		if (ret < 0) {
			adump_reader_fail(r, ret, "writing: %s", adump_strerror(ret));
			goto out;
		}
		done += n;
	}
out:
	free(wide);
	free(buf);
	return ret;
}

int adump_reader_save_npy(struct adump_reader *r, uint32_t tensor, const uint64_t *dims,
			  uint32_t dim_count, int fd)
{
	const struct adump_reader_header *h = adump_reader_header(r);
	const struct adump_reader_tensor *t;
	struct adump_tensor shaped;
	const char *descr;
	uint64_t expect;
	char header[4096];
	long header_len;
	int ret;

	if (!h || tensor >= h->tensor_count || dim_count > ADUMP_MAX_DIMS)
		return -ADUMP_ERR_CONFIG;
	t = &h->tensors[tensor];
	descr = adump_reader_npy_descr(t->info.dtype);
	if (!descr)
		return adump_reader_fail(r, -ADUMP_ERR_UNSUPPORTED,
					 "%s %u: numpy has no dtype for %s",
					 adump_reader_kind_name(t->info.kind), t->index,
					 adump_dtype_name(t->info.dtype) ? adump_dtype_name(t->info.dtype)
									 : "an unknown dtype");
	shaped = t->info;
	shaped.dim_count = dim_count;
	if (dim_count)
		memcpy(shaped.dims, dims, dim_count * sizeof(uint64_t));
	ret = adump_reader_tensor_expected_bytes(&shaped, &expect);
	if (ret < 0 || expect != t->info.bytes)
		return adump_reader_fail(r, -ADUMP_ERR_CONFIG,
					 "%s %u: the shape does not cover its %llu bytes",
					 adump_reader_kind_name(t->info.kind), t->index,
					 (unsigned long long)t->info.bytes);
	header_len = adump_reader_npy_header(descr, dims, dim_count, header, sizeof(header));
	if (header_len < 0)
		return adump_reader_fail(r, (int)header_len, "npy header does not fit");
	ret = write_all(fd, header, (size_t)header_len);
	if (ret < 0)
		return adump_reader_fail(r, ret, "writing: %s", adump_strerror(ret));
	return copy_payload(r, tensor, fd, t->info.dtype == ADUMP_DT_BF16);
}

int adump_reader_save_raw(struct adump_reader *r, uint32_t tensor, int fd)
{
	const struct adump_reader_header *h = adump_reader_header(r);

	if (!h || tensor >= h->tensor_count)
		return -ADUMP_ERR_CONFIG;
	return copy_payload(r, tensor, fd, false);
}
