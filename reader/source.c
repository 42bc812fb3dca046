/* SPDX-License-Identifier: Apache-2.0 */
/* Sources: the bytes of one logical dump file, read at absolute offsets. Regular files use
 * pread so payloads are never loaded whole; memory buffers are read and mapped directly. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "reader/reader.h"

int adump_reader_source_create(const struct adump_reader_source_ops *ops, void *ctx,
			       uint64_t size, struct adump_reader_source **out)
{
	struct adump_reader_source *src;

	if (!ops || !ops->read_at || !out)
		return -ADUMP_ERR_CONFIG;
	src = calloc(1, sizeof(*src));
	if (!src)
		return -ENOMEM;
	src->ops = ops;
	src->ctx = ctx;
	src->size = size;
	*out = src;
	return 0;
}

uint64_t adump_reader_source_size(const struct adump_reader_source *src)
{
	return src->size;
}

int adump_reader_source_read_at(struct adump_reader_source *src, uint64_t offset, void *buf,
				size_t len)
{
	char *p = buf;

	if (offset > src->size || len > src->size - offset)
		return -ADUMP_ERR_INCOMPLETE;
	while (len) {
		long got = src->ops->read_at(src->ctx, offset, p, len);

		if (got < 0)
			return (int)got;
		/* A source that ends before its declared size was truncated under us. */
		if (got == 0)
			return -ADUMP_ERR_INCOMPLETE;
		p += got;
		offset += (uint64_t)got;
		len -= (size_t)got;
	}
	return 0;
}

const void *adump_reader_source_map(struct adump_reader_source *src, uint64_t offset, size_t len)
{
	if (!src->ops->map || offset > src->size || len > src->size - offset)
		return NULL;
	return src->ops->map(src->ctx, offset, len);
}

void adump_reader_source_destroy(struct adump_reader_source *src)
{
	if (!src)
		return;
	if (src->ops->close)
		src->ops->close(src->ctx);
	free(src);
}

/* ---- regular files ---- */

struct file_ctx {
	int fd;
};

static long file_read_at(void *ctx, uint64_t offset, void *buf, size_t len)
{
	struct file_ctx *f = ctx;
	ssize_t got;

	if (len > (1u << 30))
		len = 1u << 30;
	do
		got = pread(f->fd, buf, len, (off_t)offset);
	while (got < 0 && errno == EINTR);
	return got < 0 ? -errno : (long)got;
}

static void file_close(void *ctx)
{
	struct file_ctx *f = ctx;

	close(f->fd);
	free(f);
}

static void file_willneed(void *ctx, uint64_t offset, uint64_t len)
{
	struct file_ctx *f = ctx;

	/* Advice only: a failure costs speed, not data. */
	(void)posix_fadvise(f->fd, (off_t)offset, (off_t)len, POSIX_FADV_WILLNEED);
}

static const struct adump_reader_source_ops file_ops = {
	.read_at = file_read_at,
	.close = file_close,
};

static const struct adump_reader_source_int_ops file_int_ops = {
	.willneed = file_willneed,
};

int adump_reader_source_open_file(const char *path, struct adump_reader_source **out)
{
	struct file_ctx *f;
	struct stat st;
	int fd, ret;

	if (!path || !out)
		return -ADUMP_ERR_CONFIG;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto err_close;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto err_close;
	}
	f = malloc(sizeof(*f));
	if (!f) {
		ret = -ENOMEM;
		goto err_close;
	}
	f->fd = fd;
	ret = adump_reader_source_create(&file_ops, f, (uint64_t)st.st_size, out);
	if (ret < 0)
		goto err_free;
	(*out)->int_ops = &file_int_ops;
	return 0;
err_free:
	free(f);
err_close:
	close(fd);
	return ret;
}

/* ---- memory ---- */

struct mem_ctx {
	const unsigned char *buf;
	size_t len;
	bool is_owned;
};

static long mem_read_at(void *ctx, uint64_t offset, void *buf, size_t len)
{
	struct mem_ctx *m = ctx;

	if (offset >= m->len)
		return 0;
	if (len > m->len - offset)
		len = m->len - (size_t)offset;
	memcpy(buf, m->buf + offset, len);
	return (long)len;
}

static const void *mem_map(void *ctx, uint64_t offset, size_t len)
{
	struct mem_ctx *m = ctx;

	(void)len;
	return m->buf + offset;
}

static void mem_close(void *ctx)
{
	struct mem_ctx *m = ctx;

	if (m->is_owned)
		free((void *)m->buf);
	free(m);
}

static const struct adump_reader_source_ops mem_ops = {
	.read_at = mem_read_at,
	.map = mem_map,
	.close = mem_close,
};

int adump_reader_source_open_mem(const void *buf, size_t len, bool take_ownership,
				 struct adump_reader_source **out)
{
	struct mem_ctx *m;
	int ret;

	if ((!buf && len) || !out)
		return -ADUMP_ERR_CONFIG;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->buf = buf;
	m->len = len;
	m->is_owned = take_ownership;
	ret = adump_reader_source_create(&mem_ops, m, len, out);
	if (ret < 0)
		free(m);
	return ret;
}

const char *adump_reader_source_strerror(struct adump_reader_source *src, int ret)
{
	const char *msg = src && src->int_ops && src->int_ops->error ? src->int_ops->error(src->ctx)
								      : "";

	return msg[0] ? msg : adump_strerror(ret);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int adump_reader_source_open_path(const char *path, struct adump_reader_source **out, char *msg,
				  size_t cap)
{
	struct adump_reader_source *file;
	unsigned char magic[4];
	int ret;

	/* The one place a path becomes a source; the parser above only ever sees a source.
	 * Packed entries are not paths: adump_reader_open_packed() opens them. */
	msg[0] = '\0';
	ret = adump_reader_source_open_file(path, &file);
	if (ret < 0) {
		snprintf(msg, cap, "%s", ret == -EINVAL ? "not a regular file (a FIFO, socket or device)"
							: adump_strerror(ret));
		return ret;
	}
	/* A plain dump starts with its header length, whose low 32 bits can never be the LZ4
	 * magic (that length would be far beyond ADUMP_READER_HEADER_MAX), so the magic alone
	 * tells an LZ4 frame; the suffix sends a damaged frame there too, for a better message. */
	if (has_suffix(path, ".lz4") ||
	    (file->size >= 4 && file->ops->read_at(file->ctx, 0, magic, 4) == 4 &&
	     magic[0] == 0x04 && magic[1] == 0x22 && magic[2] == 0x4d && magic[3] == 0x18))
		return adump_reader_lz4_wrap(file, out, msg, cap);
	*out = file;
	return 0;
}
