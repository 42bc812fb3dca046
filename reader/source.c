/* SPDX-License-Identifier: Apache-2.0 */
/* Sources: the bytes of one logical dump file, read at absolute offsets. Regular files use
 * pread so payloads are never loaded whole; memory buffers are read and mapped directly. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "reader/reader_int.h"

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

static const struct adump_reader_source_ops file_ops = {
	.read_at = file_read_at,
	.close = file_close,
};

int adump_reader_source_open_file(const char *path, struct adump_reader_source **out)
{
	struct file_ctx *f;
	struct stat st;
	int fd, ret;

	if (!path || !out)
		return -ADUMP_ERR_CONFIG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
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

int adump_reader_source_open_path(const char *path, struct adump_reader_source **out)
{
	/* The one place a path becomes a source. Other containers (issue 5: .lz4 frame files,
	 * packed segment directories) are recognised here and return their own ops; the parser
	 * above only ever sees a source. */
	return adump_reader_source_open_file(path, out);
}
