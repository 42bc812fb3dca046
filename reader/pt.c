/* SPDX-License-Identifier: Apache-2.0 */
/* One tensor as a .pt file (torch.save's zip serialization) from a buffer, for the exporter
 * (export/): the bytes around the tensor's are common/pt.c's, shared with the pipeline's
 * msprobe output. And a check that a file is such a zip (records, CRCs) for `adump verify`
 * and the tests. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/export.h"
#include "adump/types.h"
#include "common/common.h"
#include "reader/pt_int.h"

/* Check the arguments and lay out the zip around the tensor's bytes. */
static int pt_prepare(struct adump_pt *pt, const char *archive, int32_t dtype,
		      const uint64_t *dims, uint32_t dim_count, const void *data, uint64_t bytes,
		      char *msg, size_t cap)
{
	uint64_t numel = 1;
	unsigned bits = adump_dtype_bits(dtype);
	int ret;

	if (!adump_pt_dtype_name(dtype))
		return pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "dtype %d has no torch storage",
			    dtype);
	if (!adump_pt_archive_ok(archive) || dim_count > ADUMP_MAX_DIMS || (bytes && !data))
		return pt_fail(msg, cap, -EINVAL, "bad archive name or arguments");
	for (uint32_t i = 0; i < dim_count; i++)
		numel *= dims[i];
	if (numel * (bits / 8) != bytes)
		return pt_fail(msg, cap, -EINVAL, "%llu bytes for %llu elements of %u bits",
			    (unsigned long long)bytes, (unsigned long long)numel, bits);
	if (bytes >= 0xffffffffu - 4096)
		return pt_fail(msg, cap, -EFBIG, "%llu bytes: past what a zip without zip64 holds",
			    (unsigned long long)bytes);
	ret = adump_pt_init(pt, archive, dtype, dims, dim_count, bytes);
	if (ret < 0)
		return pt_fail(msg, cap, ret, "%s", adump_strerror(ret));
	adump_pt_set_crc(pt, adump_crc32(0, data, bytes));
	return 0;
}

/* The tensor's bytes go straight from @data, between the two parts built for them. */
static int pt_emit(int fd, const struct adump_pt *pt, const void *data, uint64_t bytes)
{
	int ret = adump_write_all(fd, pt->head, pt->head_len);

	if (!ret)
		ret = adump_write_all(fd, data, bytes);
	if (!ret)
		ret = adump_write_all(fd, pt->tail, pt->tail_len);
	return ret;
}

int adump_pt_write(const char *path, const char *archive, int32_t dtype, const uint64_t *dims,
		   uint32_t dim_count, const void *data, uint64_t bytes, char *msg, size_t cap)
{
	struct adump_pt pt;
	int fd = -1, ret;

	ret = pt_prepare(&pt, archive, dtype, dims, dim_count, data, bytes, msg, cap);
	if (ret < 0)
		return ret;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = pt_fail(msg, cap, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	ret = pt_emit(fd, &pt, data, bytes);
	if (ret) {
		pt_fail(msg, cap, ret, "%s: %s", path, strerror(-ret));
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		ret = pt_fail(msg, cap, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	fd = -1;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	if (ret)
		unlink(path);
	adump_pt_fini(&pt);
	return ret;
}

int adump_pt_write_at(int dir_fd, const char *name, const char *archive, int32_t dtype,
		      const uint64_t *dims, uint32_t dim_count, const void *data, uint64_t bytes,
		      char *msg, size_t cap)
{
	struct adump_outfile of;
	struct adump_pt pt;
	int ret;

	if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return pt_fail(msg, cap, -EINVAL, "%s: not one path component", name);
	ret = pt_prepare(&pt, archive, dtype, dims, dim_count, data, bytes, msg, cap);
	if (ret < 0)
		return ret;
	ret = adump_outfile_open(&of, dir_fd, 0644);
	if (ret < 0) {
		pt_fail(msg, cap, ret, "%s: %s", name, strerror(-ret));
		goto out;
	}
	ret = adump_outfile_publish(&of, pt_emit(of.fd, &pt, data, bytes), name, 0);
	if (ret < 0)
		pt_fail(msg, cap, ret, "%s: %s", name, strerror(-ret));
out:
	adump_pt_fini(&pt);
	return ret;
}

/* ---- checking ---------------------------------------------------------------------------- */

int adump_pt_check(const char *path, char *msg, size_t cap)
{
	unsigned char *buf = NULL;
	size_t len = 0, eocd = 0, at;
	unsigned count, found_pkl = 0, found_data = 0;
	struct stat st;
	bool has_eocd = false;
	int fd, ret = 0;

	fd = adump_open_regular(path);
	if (fd < 0)
		return pt_fail(msg, cap, fd, "%s: %s", path, adump_open_strerror(fd));
	if (fstat(fd, &st) < 0 || st.st_size < 22 || (uint64_t)st.st_size > 0xffffffffu) {
		ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: %lld bytes: not a torch zip file",
			   path, (long long)st.st_size);
		goto out;
	}
	len = (size_t)st.st_size;
	buf = malloc(len);
	if (!buf) {
		ret = pt_fail(msg, cap, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(fd, buf + done, len - done, (off_t)done);

		if (n <= 0) {
			ret = pt_fail(msg, cap, n < 0 ? -errno : -ADUMP_ERR_CORRUPT, "%s: read failed",
				   path);
			goto out;
		}
		done += (size_t)n;
	}
	/* the end of central directory record: last 22 bytes, or before a comment that ends
	 * the file (as the reader, pt_zip.c, wants it) */
	for (size_t i = len - 22 + 1; i-- > 0 && len - i <= 22 + 0xffff;) {
		if (pt_le(buf + i, 4) == 0x06054b50 && i + 22 + pt_le(buf + i + 20, 2) == len) {
			eocd = i;
			has_eocd = true;
			break;
		}
	}
	if (!has_eocd) {
		ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: no zip end record (cut short?)", path);
		goto out;
	}
	count = pt_le(buf + eocd + 10, 2);
	at = pt_le(buf + eocd + 16, 4);
	for (unsigned i = 0; i < count; i++) {
		size_t name_len, local, data_at, size;
		uint32_t crc;
		const char *name;

		if (at + 46 > eocd || pt_le(buf + at, 4) != 0x02014b50) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: central directory entry %u bad",
				   path, i);
			goto out;
		}
		crc = pt_le(buf + at + 16, 4);
		size = pt_le(buf + at + 20, 4);
		name_len = pt_le(buf + at + 28, 2);
		local = pt_le(buf + at + 42, 4);
		name = (const char *)buf + at + 46;
		/* The entry's name (and the extra field and comment after it, skipped below)
		 * lie inside the central directory, or the entry is damaged. */
		if (at + 46 + name_len + pt_le(buf + at + 30, 2) + pt_le(buf + at + 32, 2) > eocd) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: central directory entry %u "
				   "runs past the directory's end", path, i);
			goto out;
		}
		if (pt_le(buf + at + 10, 2) != 0 || size != pt_le(buf + at + 24, 4) ||
		    local + 30 > len || pt_le(buf + local, 4) != 0x04034b50) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: record %u is compressed or its "
				   "local header is missing", path, i);
			goto out;
		}
		data_at = local + 30 + pt_le(buf + local + 26, 2) + pt_le(buf + local + 28, 2);
		if (data_at + size > len ||
		    (uint32_t)adump_crc32(0, buf + data_at, size) != crc) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: record %.*s: data cut short or "
				   "CRC mismatch", path, (int)name_len, name);
			goto out;
		}
		if (name_len > 9 && memcmp(name + name_len - 9, "/data.pkl", 9) == 0)
			found_pkl++;
		if (name_len > 7 && memcmp(name + name_len - 7, "/data/0", 7) == 0)
			found_data++;
		at += 46 + name_len + pt_le(buf + at + 30, 2) + pt_le(buf + at + 32, 2);
	}
	if (found_pkl != 1)
		ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: no data.pkl record: not a torch file",
			   path);
	(void)found_data;                /* a tensor with no elements has no storage record */
out:
	free(buf);
	close(fd);
	return ret;
}
