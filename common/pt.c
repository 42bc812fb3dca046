/* SPDX-License-Identifier: Apache-2.0 */
/* A tensor as torch.save writes it (torch's zip serialization, as torch 1.13 reads it): an
 * uncompressed zip of three records under one top folder,
 *     <archive>/data.pkl   pickle protocol 2: _rebuild_tensor_v2(persistent storage "0",
 *                          offset 0, size, contiguous stride, requires_grad False, {})
 *     <archive>/data/0     the tensor's bytes, starting on a 64-byte boundary of the file
 *     <archive>/version    "3\n"
 * Each record's local header carries an extra field ("FB", padding) that puts its data on
 * a 64-byte boundary, as torch's writer does, so a reader may map the storage in place.
 * Only the bytes around the tensor's are built here (struct adump_pt): the pipeline writes
 * the tensor's bytes from its staging buffers at their offset and these around them, the
 * reader's exporter from its own buffer. The pickle uses only what
 * torch.load(weights_only=True) allows (the rebuild function, storage types, OrderedDict).
 * The zip is built by hand because it is three stored records with aligned data, which the
 * zip libraries do not let a caller place; CRC-32 is ISA-L's. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/crc.h>

#include "adump/export.h"
#include "common/common.h"

#define PT_ALIGN 64

/* The pickle is written a byte at a time: where there is room, without a call. */
static inline void buf_byte(struct adump_buf *b, unsigned char c)
{
	if (b->err || b->len + 2 > b->cap) {
		adump_buf_put(b, &c, 1);
		return;
	}
	b->p[b->len++] = c;
	b->p[b->len] = '\0';
}

static void buf_le(struct adump_buf *b, uint64_t v, unsigned n)
{
	unsigned char d[8];

	for (unsigned i = 0; i < n; i++)
		d[i] = (unsigned char)(v >> (8 * i));
	adump_buf_put(b, d, n);
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

uint32_t adump_crc32(uint32_t crc, const void *data, size_t len)
{
	return (uint32_t)crc32_gzip_refl(crc, (const unsigned char *)data, len);
}

/* ---- pickle ----------------------------------------------------------------------------- */

static void pk_global(struct adump_buf *b, const char *module, const char *name)
{
	buf_byte(b, 'c');
	adump_buf_put(b, module, strlen(module));
	buf_byte(b, '\n');
	adump_buf_put(b, name, strlen(name));
	buf_byte(b, '\n');
}

static void pk_str(struct adump_buf *b, const char *s)
{
	buf_byte(b, 'X');               /* BINUNICODE */
	buf_le(b, strlen(s), 4);
	adump_buf_put(b, s, strlen(s));
}

static void pk_int(struct adump_buf *b, uint64_t v)
{
	if (v < 0x100) {
		buf_byte(b, 'K');       /* BININT1 */
		buf_byte(b, (unsigned char)v);
	} else if (v < 0x10000) {
		buf_byte(b, 'M');       /* BININT2 */
		buf_le(b, v, 2);
	} else if (v < 0x80000000u) {
		buf_byte(b, 'J');       /* BININT, signed 4 bytes */
		buf_le(b, v, 4);
	} else {
		buf_byte(b, 0x8a);      /* LONG1: 8 bytes little endian, two's complement */
		buf_byte(b, 8);
		buf_le(b, v, 8);
	}
}

static void pk_tuple(struct adump_buf *b, const uint64_t *v, uint32_t n)
{
	if (n == 0) {
		buf_byte(b, ')');       /* EMPTY_TUPLE */
		return;
	}
	if (n > 3)
		buf_byte(b, '(');       /* MARK */
	for (uint32_t i = 0; i < n; i++)
		pk_int(b, v[i]);
	buf_byte(b, n == 1 ? 0x85 : n == 2 ? 0x86 : n == 3 ? 0x87 : 't');
}

static const char *storage_name(int32_t dtype)
{
	switch (dtype) {
	case ADUMP_DT_FLOAT: return "FloatStorage";
	case ADUMP_DT_FLOAT16: return "HalfStorage";
	case ADUMP_DT_BF16: return "BFloat16Storage";
	case ADUMP_DT_DOUBLE: return "DoubleStorage";
	case ADUMP_DT_INT8: return "CharStorage";
	case ADUMP_DT_UINT8: return "ByteStorage";
	case ADUMP_DT_INT16: return "ShortStorage";
	case ADUMP_DT_INT32: return "IntStorage";
	case ADUMP_DT_INT64: return "LongStorage";
	case ADUMP_DT_BOOL: return "BoolStorage";
	case ADUMP_DT_COMPLEX64: return "ComplexFloatStorage";
	case ADUMP_DT_COMPLEX128: return "ComplexDoubleStorage";
	default: return NULL;
	}
}

const char *adump_pt_dtype_name(int32_t dtype)
{
	switch (dtype) {
	case ADUMP_DT_FLOAT: return "torch.float32";
	case ADUMP_DT_FLOAT16: return "torch.float16";
	case ADUMP_DT_BF16: return "torch.bfloat16";
	case ADUMP_DT_DOUBLE: return "torch.float64";
	case ADUMP_DT_INT8: return "torch.int8";
	case ADUMP_DT_UINT8: return "torch.uint8";
	case ADUMP_DT_INT16: return "torch.int16";
	case ADUMP_DT_INT32: return "torch.int32";
	case ADUMP_DT_INT64: return "torch.int64";
	case ADUMP_DT_BOOL: return "torch.bool";
	case ADUMP_DT_COMPLEX64: return "torch.complex64";
	case ADUMP_DT_COMPLEX128: return "torch.complex128";
	default: return NULL;
	}
}

static void pickle_tensor(struct adump_buf *b, const char *storage, const uint64_t *dims,
			  uint32_t n, uint64_t numel)
{
	uint64_t stride[ADUMP_MAX_DIMS];
	uint64_t s = 1;

	for (uint32_t i = n; i-- > 0;) {
		stride[i] = s;
		s *= dims[i] ? dims[i] : 1;
	}
	buf_byte(b, 0x80);              /* PROTO 2 */
	buf_byte(b, 2);
	pk_global(b, "torch._utils", "_rebuild_tensor_v2");
	buf_byte(b, '(');               /* the call's arguments */
	/* persistent id ("storage", storage type, key, location, numel) */
	buf_byte(b, '(');
	pk_str(b, "storage");
	pk_global(b, "torch", storage);
	pk_str(b, "0");
	pk_str(b, "cpu");
	pk_int(b, numel);
	buf_byte(b, 't');
	buf_byte(b, 'Q');               /* BINPERSID */
	pk_int(b, 0);                   /* storage offset */
	pk_tuple(b, dims, n);
	pk_tuple(b, stride, n);
	buf_byte(b, 0x89);              /* requires_grad False */
	pk_global(b, "collections", "OrderedDict");
	buf_byte(b, ')');
	buf_byte(b, 'R');               /* OrderedDict(): backward hooks */
	buf_byte(b, 't');
	buf_byte(b, 'R');
	buf_byte(b, '.');
}

/* ---- zip -------------------------------------------------------------------------------- */

struct pt_rec {
	char name[ADUMP_PT_ARCHIVE_MAX + 16];
	uint64_t len;
	uint32_t crc;
	uint64_t offset;                /* of its local header */
};

/* Local header of @r at @pos, padded so its data starts on a PT_ALIGN boundary. Return:
 * where its CRC field is in @b. */
static size_t zip_local(struct adump_buf *b, struct pt_rec *r, uint64_t pos)
{
	size_t name_len = strlen(r->name);
	uint64_t data_at = pos + 30 + name_len + 4;
	size_t pad = (size_t)((PT_ALIGN - data_at % PT_ALIGN) % PT_ALIGN);
	size_t crc_at;

	r->offset = pos;
	buf_le(b, 0x04034b50, 4);
	buf_le(b, 20, 2);               /* version needed */
	buf_le(b, 0x0800, 2);           /* UTF-8 names */
	buf_le(b, 0, 2);                /* stored */
	buf_le(b, 0, 4);                /* time, date */
	crc_at = b->len;
	buf_le(b, r->crc, 4);
	buf_le(b, r->len, 4);
	buf_le(b, r->len, 4);
	buf_le(b, name_len, 2);
	buf_le(b, 4 + pad, 2);
	adump_buf_put(b, r->name, name_len);
	buf_le(b, 0x4246, 2);           /* "FB": torch's padding field */
	buf_le(b, pad, 2);
	for (size_t i = 0; i < pad; i++)
		buf_byte(b, 'Z');
	return crc_at;
}

static size_t zip_central(struct adump_buf *b, const struct pt_rec *r)
{
	size_t name_len = strlen(r->name);
	size_t crc_at;

	buf_le(b, 0x02014b50, 4);
	buf_le(b, 20, 2);               /* made by */
	buf_le(b, 20, 2);
	buf_le(b, 0x0800, 2);
	buf_le(b, 0, 2);
	buf_le(b, 0, 4);
	crc_at = b->len;
	buf_le(b, r->crc, 4);
	buf_le(b, r->len, 4);
	buf_le(b, r->len, 4);
	buf_le(b, name_len, 2);
	buf_le(b, 0, 2);                /* extra */
	buf_le(b, 0, 2);                /* comment */
	buf_le(b, 0, 2);                /* disk */
	buf_le(b, 0, 2);                /* internal attributes */
	buf_le(b, 0, 4);                /* external attributes */
	buf_le(b, r->offset, 4);
	adump_buf_put(b, r->name, name_len);
	return crc_at;
}

static bool archive_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

bool adump_pt_archive_ok(const char *archive)
{
	size_t n = archive ? strlen(archive) : 0;

	if (n == 0 || n > ADUMP_PT_ARCHIVE_MAX)
		return false;
	for (const char *p = archive; *p; p++)
		if (!archive_char_ok(*p))
			return false;
	return true;
}

int adump_pt_archive_name(const char *data_name, char *out, size_t cap)
{
	size_t n = strlen(data_name);

	if (n > 3 && strcmp(data_name + n - 3, ".pt") == 0)
		n -= 3;
	if (n > ADUMP_PT_ARCHIVE_MAX)
		n = ADUMP_PT_ARCHIVE_MAX;
	if (n == 0 || n >= cap)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		out[i] = archive_char_ok(data_name[i]) ? data_name[i] : '_';
	out[n] = '\0';
	return 0;
}

int adump_pt_init(struct adump_pt *pt, const char *archive, int32_t dtype, const uint64_t *dims,
		  uint32_t dim_count, uint64_t bytes)
{
	static const char version[] = "3\n";
	const char *storage = storage_name(dtype);
	struct adump_buf pkl = { 0 }, out = { 0 };
	struct pt_rec rec[3];
	size_t crc_local, crc_central, cd_len;
	uint64_t numel = 1, cd_at, pos;
	unsigned bits = adump_dtype_bits(dtype);
	int ret;

	memset(pt, 0, sizeof(*pt));
	if (!storage)
		return -ADUMP_ERR_UNSUPPORTED;
	if (!adump_pt_archive_ok(archive) || dim_count > ADUMP_MAX_DIMS || (dim_count && !dims))
		return -EINVAL;
	for (uint32_t i = 0; i < dim_count; i++)
		numel *= dims[i];
	if (numel * (bits / 8) != bytes)
		return -EINVAL;
	if (bytes >= 0xffffffffu - 4096)
		return -EFBIG;                  /* past what a zip without zip64 holds */
	pickle_tensor(&pkl, storage, dims, dim_count, numel);
	if (pkl.err) {
		ret = pkl.err;
		goto out;
	}
	/* Fits: the archive name is at most ADUMP_PT_ARCHIVE_MAX. */
	adump_strjoin(rec[0].name, sizeof(rec[0].name), (const char *const[]){ archive,
		      "/data.pkl" }, 2);
	rec[0].len = pkl.len;
	rec[0].crc = adump_crc32(0, pkl.p, pkl.len);
	adump_strjoin(rec[1].name, sizeof(rec[1].name), (const char *const[]){ archive,
		      "/data/0" }, 2);
	rec[1].len = bytes;
	rec[1].crc = 0;                         /* adump_pt_set_crc() */
	adump_strjoin(rec[2].name, sizeof(rec[2].name), (const char *const[]){ archive,
		      "/version" }, 2);
	rec[2].len = 2;
	rec[2].crc = adump_crc32(0, version, 2);

	/* Head: data.pkl's record, then data/0's local header; the tensor's bytes follow. */
	zip_local(&out, &rec[0], 0);
	adump_buf_put(&out, pkl.p, pkl.len);
	crc_local = zip_local(&out, &rec[1], out.len);
	pt->head_len = out.len;
	pt->data_offset = out.len;
	pt->data_bytes = bytes;
	/* Tail: the version record, the central directory and its end record. */
	pos = out.len + bytes;
	zip_local(&out, &rec[2], pos);
	adump_buf_put(&out, version, 2);
	cd_at = pos + (out.len - pt->head_len);
	cd_len = out.len;
	zip_central(&out, &rec[0]);
	crc_central = zip_central(&out, &rec[1]);
	zip_central(&out, &rec[2]);
	cd_len = out.len - cd_len;
	buf_le(&out, 0x06054b50, 4);            /* end of central directory */
	buf_le(&out, 0, 4);
	buf_le(&out, 3, 2);
	buf_le(&out, 3, 2);
	buf_le(&out, cd_len, 4);
	buf_le(&out, cd_at, 4);
	buf_le(&out, 0, 2);
	if (out.err) {
		ret = out.err;
		goto out;
	}
	pt->mem = out.p;
	pt->head = out.p;
	pt->tail = out.p + pt->head_len;
	pt->tail_len = out.len - pt->head_len;
	pt->crc_at[0] = crc_local;
	pt->crc_at[1] = crc_central;
	pt->file_bytes = pt->head_len + bytes + pt->tail_len;
	out.p = NULL;
	ret = 0;
out:
	free(pkl.p);
	free(out.p);
	return ret;
}

void adump_pt_set_crc(struct adump_pt *pt, uint32_t crc)
{
	put_le32(pt->mem + pt->crc_at[0], crc);
	put_le32(pt->mem + pt->crc_at[1], crc);
}

void adump_pt_fini(struct adump_pt *pt)
{
	if (!pt)
		return;
	free(pt->mem);
	memset(pt, 0, sizeof(*pt));
}

/* ---- numbers as msprobe's dump.json holds them ------------------------------------------- */


/* @v as Python's repr(float) writes it: the fewest significant digits that read back as
 * @v, positional between 1e-4 and 1e16, ".0" on integral values. */
void adump_py_float(double v, char *out, size_t cap)
{
	char digits[24], *o = out, *end = out + cap - 1;
	int exp, n;

	if (cap == 0)
		return;
	if (isnan(v) || isinf(v) || v == 0) {
		snprintf(out, cap, "%s", isnan(v) ? "NaN" : isinf(v) ? (v > 0 ? "Infinity" :
			 "-Infinity") : signbit(v) ? "-0.0" : "0.0");
		return;
	}
	n = adump_shortest_digits(v, digits, sizeof(digits), &exp);
	if (v < 0 && o < end)
		*o++ = '-';
	if (exp < -4 || exp >= 16) {
		/* Python: the digits as d[.ddd], 'e', the exponent's sign and 2 or 3 digits. */
		int a = exp < 0 ? -exp : exp;

		for (int i = 0; i < n && o < end; i++) {
			*o++ = digits[i];
			if (i == 0 && n > 1 && o < end)
				*o++ = '.';
		}
		for (int i = 0; i < 2 && o < end; i++)
			*o++ = i ? (exp < 0 ? '-' : '+') : 'e';
		if (a >= 100 && o < end)
			*o++ = (char)('0' + a / 100);
		for (int i = 0; i < 2 && o < end; i++)
			*o++ = (char)('0' + (i ? a % 10 : a / 10 % 10));
	} else if (exp < 0) {
		/* Positional: "0.", zeros, the digits; or the integral part (zero-padded), '.',
		 * the rest or "0". */
		for (int i = 0; i < 2 && o < end; i++)
			*o++ = "0."[i];
		for (int i = 0; i < -exp - 1 && o < end; i++)
			*o++ = '0';
		for (int i = 0; i < n && o < end; i++)
			*o++ = digits[i];
	} else {
		for (int i = 0; i <= exp && o < end; i++)
			*o++ = i < n ? digits[i] : '0';
		if (o < end)
			*o++ = '.';
		if (n <= exp + 1 && o < end)
			*o++ = '0';
		for (int i = exp + 1; i < n && o < end; i++)
			*o++ = digits[i];
	}
	*o = '\0';
}

/* @v rounded to the nearest float16 value, ties to even (what a cast to _Float16 gives,
 * which clang 14 lacks on x86-64). */
static double round_half(double v)
{
	double a = fabs(v), q;
	int e;

	if (!isfinite(v) || a == 0)
		return v;
	if (a >= 65520.0)               /* past 65504 by half its ulp: infinity */
		return copysign(INFINITY, v);
	frexp(a, &e);                   /* a in [2^(e-1), 2^e) */
	/* 11 significant bits for normals, a fixed quantum of 2^-24 below 2^-14 */
	q = e - 1 >= -14 ? ldexp(1.0, e - 11) : ldexp(1.0, -24);
	return copysign(nearbyint(a / q) * q, v);
}

/* The value a statistic of a tensor of @dtype has in torch: computed in that dtype. */
double adump_torch_round(double v, int32_t dtype)
{
	union {
		float f;
		uint32_t u;
	} b;

	switch (dtype) {
	case ADUMP_DT_FLOAT:
		return (float)v;
	case ADUMP_DT_FLOAT16:
		return round_half(v);
	case ADUMP_DT_BF16:
		b.f = (float)v;
		if (!isnan(b.f))
			b.u = (b.u + 0x7fff + ((b.u >> 16) & 1)) & 0xffff0000u;
		return b.f;
	default:
		return v;
	}
}

