/* SPDX-License-Identifier: Apache-2.0 */
/* A tensor as torch.save writes it (torch's zip serialization, as torch 1.13 reads it): an
 * uncompressed zip of three records under one top folder,
 *     <archive>/data.pkl   pickle protocol 2: _rebuild_tensor_v2(persistent storage "0",
 *                          offset 0, size, contiguous stride, requires_grad False, {})
 *     <archive>/data/0     the tensor's bytes, starting on a 64-byte boundary of the file
 *     <archive>/version    "3\n"
 * Each record's local header carries an extra field ("FB", padding) that puts its data on
 * a 64-byte boundary, as torch's writer does, so a reader may map the storage in place.
 * Written from C so that no torch.save runs on the training thread; the pickle uses only
 * what torch.load(weights_only=True) allows (the rebuild function, storage types,
 * OrderedDict). The zip is written by hand because it is three stored records with aligned
 * data, which the zip libraries do not let a caller place; CRC-32 is ISA-L's. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include "adump/export.h"
#include "adump/types.h"
#include "common/common.h"

#define PT_ALIGN 64
#define PT_MAX_ARCHIVE 200

struct pt_buf {
	unsigned char *p;
	size_t len, cap;
	int err;
};

static void buf_put(struct pt_buf *b, const void *d, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		unsigned char *p;

		while (cap < b->len + n)
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
}

static void buf_byte(struct pt_buf *b, unsigned char c)
{
	buf_put(b, &c, 1);
}

static void buf_le(struct pt_buf *b, uint64_t v, unsigned n)
{
	unsigned char d[8];

	for (unsigned i = 0; i < n; i++)
		d[i] = (unsigned char)(v >> (8 * i));
	buf_put(b, d, n);
}

/* ---- pickle ----------------------------------------------------------------------------- */

static void pk_global(struct pt_buf *b, const char *module, const char *name)
{
	buf_byte(b, 'c');
	buf_put(b, module, strlen(module));
	buf_byte(b, '\n');
	buf_put(b, name, strlen(name));
	buf_byte(b, '\n');
}

static void pk_str(struct pt_buf *b, const char *s)
{
	buf_byte(b, 'X');               /* BINUNICODE */
	buf_le(b, strlen(s), 4);
	buf_put(b, s, strlen(s));
}

static void pk_int(struct pt_buf *b, uint64_t v)
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

static void pk_tuple(struct pt_buf *b, const uint64_t *v, uint32_t n)
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

static void pickle_tensor(struct pt_buf *b, const char *storage, const uint64_t *dims,
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
	char name[PT_MAX_ARCHIVE + 16];
	const void *data;
	uint64_t len;
	uint32_t crc;
	uint64_t offset;                /* of its local header */
};

static int fail(char *msg, size_t cap, int ret, const char *fmt, ...)
{
	va_list ap;

	if (msg && cap) {
		va_start(ap, fmt);
		vsnprintf(msg, cap, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* Local header of @r at @pos, padded so its data starts on a PT_ALIGN boundary. */
static void zip_local(struct pt_buf *b, struct pt_rec *r, uint64_t pos)
{
	size_t name_len = strlen(r->name);
	uint64_t data_at = pos + 30 + name_len + 4;
	size_t pad = (size_t)((PT_ALIGN - data_at % PT_ALIGN) % PT_ALIGN);

	r->offset = pos;
	buf_le(b, 0x04034b50, 4);
	buf_le(b, 20, 2);               /* version needed */
	buf_le(b, 0x0800, 2);           /* UTF-8 names */
	buf_le(b, 0, 2);                /* stored */
	buf_le(b, 0, 4);                /* time, date */
	buf_le(b, r->crc, 4);
	buf_le(b, r->len, 4);
	buf_le(b, r->len, 4);
	buf_le(b, name_len, 2);
	buf_le(b, 4 + pad, 2);
	buf_put(b, r->name, name_len);
	buf_le(b, 0x4246, 2);           /* "FB": torch's padding field */
	buf_le(b, pad, 2);
	for (size_t i = 0; i < pad; i++)
		buf_byte(b, 'Z');
}

static void zip_central(struct pt_buf *b, const struct pt_rec *r)
{
	size_t name_len = strlen(r->name);

	buf_le(b, 0x02014b50, 4);
	buf_le(b, 20, 2);               /* made by */
	buf_le(b, 20, 2);
	buf_le(b, 0x0800, 2);
	buf_le(b, 0, 2);
	buf_le(b, 0, 4);
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
	buf_put(b, r->name, name_len);
}

static bool archive_ok(const char *a)
{
	size_t n = strlen(a);

	if (n == 0 || n > PT_MAX_ARCHIVE)
		return false;
	for (const char *p = a; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' || *p == '-'))
			return false;
	return true;
}

int adump_pt_write(const char *path, const char *archive, int32_t dtype, const uint64_t *dims,
		   uint32_t dim_count, const void *data, uint64_t bytes, char *msg, size_t cap)
{
	static const char version[] = "3\n";
	const char *storage = storage_name(dtype);
	struct pt_buf pkl = { 0 }, out = { 0 };
	struct pt_rec rec[3];
	uint64_t numel = 1, pos = 0, cd_at;
	unsigned bits = adump_dtype_bits(dtype);
	int fd = -1, ret;

	if (!storage)
		return fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "dtype %d has no torch storage",
			    dtype);
	if (!archive || !archive_ok(archive) || dim_count > ADUMP_MAX_DIMS || (bytes && !data))
		return fail(msg, cap, -EINVAL, "bad archive name or arguments");
	for (uint32_t i = 0; i < dim_count; i++)
		numel *= dims[i];
	if (numel * (bits / 8) != bytes)
		return fail(msg, cap, -EINVAL, "%llu bytes for %llu elements of %u bits",
			    (unsigned long long)bytes, (unsigned long long)numel, bits);
	if (bytes >= 0xffffffffu - 4096)
		return fail(msg, cap, -EFBIG, "%llu bytes: past what a zip without zip64 holds",
			    (unsigned long long)bytes);
	pickle_tensor(&pkl, storage, dims, dim_count, numel);
	if (pkl.err) {
		ret = fail(msg, cap, pkl.err, "out of memory");
		goto out;
	}
	snprintf(rec[0].name, sizeof(rec[0].name), "%s/data.pkl", archive);
	rec[0].data = pkl.p;
	rec[0].len = pkl.len;
	snprintf(rec[1].name, sizeof(rec[1].name), "%s/data/0", archive);
	rec[1].data = data;
	rec[1].len = bytes;
	snprintf(rec[2].name, sizeof(rec[2].name), "%s/version", archive);
	rec[2].data = version;
	rec[2].len = 2;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = fail(msg, cap, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	/* Headers are built in memory; the tensor's bytes go straight from @data. */
	for (int i = 0; i < 3; i++) {
		rec[i].crc = (uint32_t)crc32_gzip_refl(0, (const unsigned char *)rec[i].data,
						       rec[i].len);
		out.len = 0;
		zip_local(&out, &rec[i], pos);
		if (out.err) {
			ret = fail(msg, cap, out.err, "out of memory");
			goto out;
		}
		ret = adump_write_all(fd, out.p, out.len);
		if (!ret)
			ret = adump_write_all(fd, rec[i].data, rec[i].len);
		if (ret) {
			fail(msg, cap, ret, "%s: %s", path, strerror(-ret));
			goto out;
		}
		pos += out.len + rec[i].len;
	}
	cd_at = pos;
	out.len = 0;
	for (int i = 0; i < 3; i++)
		zip_central(&out, &rec[i]);
	buf_le(&out, 0x06054b50, 4);    /* end of central directory */
	buf_le(&out, 0, 4);
	buf_le(&out, 3, 2);
	buf_le(&out, 3, 2);
	buf_le(&out, out.len - 12, 4);
	buf_le(&out, cd_at, 4);
	buf_le(&out, 0, 2);
	if (out.err) {
		ret = fail(msg, cap, out.err, "out of memory");
		goto out;
	}
	ret = adump_write_all(fd, out.p, out.len);
	if (ret) {
		fail(msg, cap, ret, "%s: %s", path, strerror(-ret));
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		ret = fail(msg, cap, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	fd = -1;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	if (ret)
		unlink(path);
	free(pkl.p);
	free(out.p);
	return ret;
}

/* ---- checking ---------------------------------------------------------------------------- */

static uint32_t rd_le(const unsigned char *p, unsigned n)
{
	uint32_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

int adump_pt_check(const char *path, char *msg, size_t cap)
{
	unsigned char *buf = NULL;
	size_t len = 0, eocd = 0, at;
	unsigned count, found_pkl = 0, found_data = 0;
	struct stat st;
	bool has_eocd = false;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(msg, cap, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_size < 22 || (uint64_t)st.st_size > 0xffffffffu) {
		ret = fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: %lld bytes: not a torch zip file",
			   path, (long long)st.st_size);
		goto out;
	}
	len = (size_t)st.st_size;
	buf = malloc(len);
	if (!buf) {
		ret = fail(msg, cap, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(fd, buf + done, len - done, (off_t)done);

		if (n <= 0) {
			ret = fail(msg, cap, n < 0 ? -errno : -ADUMP_ERR_CORRUPT, "%s: read failed",
				   path);
			goto out;
		}
		done += (size_t)n;
	}
	/* the end of central directory record: last 22 bytes, or before a comment */
	for (size_t i = len - 22 + 1; i-- > 0 && len - i <= 22 + 0xffff;) {
		if (rd_le(buf + i, 4) == 0x06054b50) {
			eocd = i;
			has_eocd = true;
			break;
		}
	}
	if (!has_eocd) {
		ret = fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: no zip end record (cut short?)", path);
		goto out;
	}
	count = rd_le(buf + eocd + 10, 2);
	at = rd_le(buf + eocd + 16, 4);
	for (unsigned i = 0; i < count; i++) {
		size_t name_len, local, data_at, size;
		uint32_t crc;
		const char *name;

		if (at + 46 > eocd || rd_le(buf + at, 4) != 0x02014b50) {
			ret = fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: central directory entry %u bad",
				   path, i);
			goto out;
		}
		crc = rd_le(buf + at + 16, 4);
		size = rd_le(buf + at + 20, 4);
		name_len = rd_le(buf + at + 28, 2);
		local = rd_le(buf + at + 42, 4);
		name = (const char *)buf + at + 46;
		if (rd_le(buf + at + 10, 2) != 0 || size != rd_le(buf + at + 24, 4) ||
		    local + 30 > len || rd_le(buf + local, 4) != 0x04034b50) {
			ret = fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: record %u is compressed or its "
				   "local header is missing", path, i);
			goto out;
		}
		data_at = local + 30 + rd_le(buf + local + 26, 2) + rd_le(buf + local + 28, 2);
		if (data_at + size > len ||
		    (uint32_t)crc32_gzip_refl(0, buf + data_at, size) != crc) {
			ret = fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: record %.*s: data cut short or "
				   "CRC mismatch", path, (int)name_len, name);
			goto out;
		}
		if (name_len > 9 && memcmp(name + name_len - 9, "/data.pkl", 9) == 0)
			found_pkl++;
		if (name_len > 7 && memcmp(name + name_len - 7, "/data/0", 7) == 0)
			found_data++;
		at += 46 + name_len + rd_le(buf + at + 30, 2) + rd_le(buf + at + 32, 2);
	}
	if (found_pkl != 1)
		ret = fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: no data.pkl record: not a torch file",
			   path);
	(void)found_data;                /* a tensor with no elements has no storage record */
out:
	free(buf);
	close(fd);
	return ret;
}
