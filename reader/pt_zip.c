/* SPDX-License-Identifier: Apache-2.0 */
/* torch.save's zip container, read for reader/pt_read.c: every record stored (never
 * compressed), zip64 end records as torch 1.13 and 2.x write them, sizes from the central
 * directory because torch's local headers leave them 0 behind a data descriptor. Only the
 * end records and the central directory are read whole (bounded by PT_CDIR_MAX and
 * PT_RECORD_MAX); records are located, and read only for their CRC-32. And the helpers the
 * .pt files share. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include "reader/pt_int.h"

int pt_fail(char *msg, size_t cap, int ret, const char *fmt, ...)
{
	va_list ap;

	if (msg && cap) {
		va_start(ap, fmt);
		vsnprintf(msg, cap, fmt, ap);
		va_end(ap);
	}
	return ret;
}

uint64_t pt_le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

int pt_read_exact(int fd, uint64_t off, void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ADUMP_ERR_INCOMPLETE;
		done += (size_t)n;
	}
	return 0;
}

/* The end records: the classic one (22 bytes, maybe a comment after it) and, where a field
 * is saturated or a zip64 locator precedes it, the zip64 one it points to. */
static int zip_end(struct pt_zip *z, const char *path, uint64_t *cdir_at, uint64_t *cdir_bytes,
		   uint64_t *entries, char *msg, size_t cap)
{
	uint64_t tail = z->file_bytes < PT_TAIL_BYTES ? z->file_bytes : PT_TAIL_BYTES;
	uint64_t base = z->file_bytes - tail;
	unsigned char *buf = malloc(tail ? tail : 1);
	int64_t eocd = -1;
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = pt_read_exact(z->fd, base, buf, tail);
	if (ret < 0) {
		free(buf);
		return pt_fail(msg, cap, ret, "%s: reading the zip end records: %s", path,
			       adump_strerror(ret));
	}
	for (int64_t i = (int64_t)tail - 22; i >= 0; i--)
		if (pt_le(buf + i, 4) == 0x06054b50 &&
		    (uint64_t)i + 22 + pt_le(buf + i + 20, 2) == tail) {
			eocd = i;
			break;
		}
	if (eocd < 0) {
		free(buf);
		return pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: no zip end record (cut short, or "
			       "not a torch.save file)", path);
	}
	*entries = pt_le(buf + eocd + 10, 2);
	*cdir_bytes = pt_le(buf + eocd + 12, 4);
	*cdir_at = pt_le(buf + eocd + 16, 4);
	if (eocd >= 20 && pt_le(buf + eocd - 20, 4) == 0x07064b50) {
		uint64_t at64 = pt_le(buf + eocd - 20 + 8, 8);
		unsigned char rec[56];

		if (at64 > z->file_bytes || z->file_bytes - at64 < 56 ||
		    pt_read_exact(z->fd, at64, rec, sizeof(rec)) < 0 || pt_le(rec, 4) != 0x06064b50) {
			free(buf);
			return pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: the zip64 end record the "
				       "locator points to (at %llu) is missing", path,
				       (unsigned long long)at64);
		}
		*entries = pt_le(rec + 32, 8);
		*cdir_bytes = pt_le(rec + 40, 8);
		*cdir_at = pt_le(rec + 48, 8);
	}
	free(buf);
	if (*cdir_at > z->file_bytes || *cdir_bytes > z->file_bytes - *cdir_at ||
	    *cdir_bytes > PT_CDIR_MAX || *entries > PT_RECORD_MAX)
		return pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: zip central directory out of "
			       "bounds (%llu records, %llu bytes at %llu of %llu)", path,
			       (unsigned long long)*entries, (unsigned long long)*cdir_bytes,
			       (unsigned long long)*cdir_at, (unsigned long long)z->file_bytes);
	return 0;
}

/* The zip64 extended information extra field replaces saturated sizes and offset, in order. */
static void zip64_extra(const unsigned char *x, size_t n, uint64_t *usize, uint64_t *csize,
			uint64_t *local)
{
	for (size_t at = 0; at + 4 <= n;) {
		size_t id = pt_le(x + at, 2), len = pt_le(x + at + 2, 2), k = at + 4;

		if (at + 4 + len > n)
			return;
		if (id == 1) {
			uint64_t *field[3] = { usize, csize, local };

			for (int f = 0; f < 3; f++)
				if (*field[f] == 0xffffffffu && k + 8 <= at + 4 + len) {
					*field[f] = pt_le(x + k, 8);
					k += 8;
				}
		}
		at += 4 + len;
	}
}

int pt_zip_read(struct pt_zip *z, const char *path, char *msg, size_t cap)
{
	uint64_t cdir_at = 0, cdir_bytes = 0, entries = 0;
	unsigned char *cd;
	size_t at = 0;
	int ret = zip_end(z, path, &cdir_at, &cdir_bytes, &entries, msg, cap);

	if (ret < 0)
		return ret;
	cd = malloc(cdir_bytes ? cdir_bytes : 1);
	if (!cd)
		return -ENOMEM;
	ret = pt_read_exact(z->fd, cdir_at, cd, cdir_bytes);
	if (ret < 0) {
		ret = pt_fail(msg, cap, ret, "%s: reading the zip central directory: %s", path,
			      adump_strerror(ret));
		goto out;
	}
	for (uint64_t i = 0; i < entries; i++) {
		struct pt_record *r = &z->rec[z->count];
		uint64_t csize, usize, local, name_len, extra_len, comment_len;
		unsigned char lh[30];

		if (at + 46 > cdir_bytes || pt_le(cd + at, 4) != 0x02014b50) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: zip central directory entry "
				      "%llu is damaged", path, (unsigned long long)i);
			goto out;
		}
		name_len = pt_le(cd + at + 28, 2);
		extra_len = pt_le(cd + at + 30, 2);
		comment_len = pt_le(cd + at + 32, 2);
		if (at + 46 + name_len + extra_len + comment_len > cdir_bytes) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: zip central directory entry "
				      "%llu runs past the directory", path, (unsigned long long)i);
			goto out;
		}
		r->crc = (uint32_t)pt_le(cd + at + 16, 4);
		csize = pt_le(cd + at + 20, 4);
		usize = pt_le(cd + at + 24, 4);
		local = pt_le(cd + at + 42, 4);
		zip64_extra(cd + at + 46 + name_len, extra_len, &usize, &csize, &local);
		snprintf(r->name, sizeof(r->name), "%.*s", (int)(name_len < 255 ? name_len : 255),
			 (const char *)cd + at + 46);
		if (pt_le(cd + at + 10, 2) != 0 || csize != usize) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: zip record %s is "
				      "compressed (method %llu); torch.save stores records", path,
				      r->name, (unsigned long long)pt_le(cd + at + 10, 2));
			goto out;
		}
		if (local > z->file_bytes || z->file_bytes - local < 30 ||
		    pt_read_exact(z->fd, local, lh, sizeof(lh)) < 0 || pt_le(lh, 4) != 0x04034b50) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: zip record %s: its local "
				      "header (at %llu) is missing", path, r->name,
				      (unsigned long long)local);
			goto out;
		}
		r->data_at = local + 30 + pt_le(lh + 26, 2) + pt_le(lh + 28, 2);
		r->size = usize;
		if (r->data_at > z->file_bytes || r->size > z->file_bytes - r->data_at) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_INCOMPLETE, "%s: zip record %s (%llu bytes "
				      "at %llu) runs past the end of the file (%llu bytes): cut short",
				      path, r->name, (unsigned long long)r->size,
				      (unsigned long long)r->data_at,
				      (unsigned long long)z->file_bytes);
			goto out;
		}
		z->count++;
		at += 46 + name_len + extra_len + comment_len;
	}
out:
	free(cd);
	return ret;
}

int pt_zip_crc_check(struct pt_zip *z, const char *path, char *msg, size_t cap)
{
	unsigned char *buf = malloc(ADUMP_READER_STEP_BYTES);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (unsigned i = 0; i < z->count && ret == 0; i++) {
		const struct pt_record *r = &z->rec[i];
		uint32_t crc = 0;

		for (uint64_t off = 0; off < r->size && ret == 0;) {
			size_t n = r->size - off < ADUMP_READER_STEP_BYTES ? (size_t)(r->size - off)
									   : ADUMP_READER_STEP_BYTES;

			ret = pt_read_exact(z->fd, r->data_at + off, buf, n);
			if (ret == 0)
				crc = crc32_gzip_refl(crc, buf, n);
			off += n;
		}
		if (ret < 0)
			ret = pt_fail(msg, cap, ret, "%s: zip record %s: %s", path, r->name,
				      adump_strerror(ret));
		else if (crc != r->crc)
			ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: zip record %s: CRC-32 "
				      "%08x, the directory says %08x (damaged)", path, r->name, crc,
				      r->crc);
	}
	free(buf);
	return ret;
}

/* The record named <top>/<leaf> (torch puts every record under one top folder). */
const struct pt_record *pt_zip_find(const struct pt_zip *z, const char *leaf)
{
	size_t n = strlen(leaf);

	for (unsigned i = 0; i < z->count; i++) {
		const char *slash = strchr(z->rec[i].name, '/');

		if (slash && strlen(slash + 1) == n && !memcmp(slash + 1, leaf, n))
			return &z->rec[i];
	}
	return NULL;
}
