/* SPDX-License-Identifier: Apache-2.0 */
/* Packed layout: a worker appends every dump file it writes to its current segment file
 * (<dir>/packed/w<worker>-<n>.seg, rolled at segment_bytes) and, once all of a file's writes
 * have completed, appends one line to its index (<dir>/packed/w<worker>.idx):
 *
 *     <device_id>/<file name>\t<segment file>\t<offset>\t<length>\t<crc32c hex>\n
 *
 * Data is always written before its index line, and lines go out whole, in batches of one
 * write() (when the batch fills, before the worker sleeps, when it stops), so a crash leaves
 * an index whose complete lines all describe valid data. CRC32C is computed by
 * ISA-L (crc32_iscsi) while the chunks pass, in file order. */
#include <errno.h>
#include <fcntl.h>
#include <isa-l/crc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "pipeline/worker_int.h"

#define MODULE "packed"
#define DEFAULT_SEGMENT_BYTES (1ull << 30)
#define INDEX_BATCH_BYTES (64u << 10)   /* index lines gathered before one write() */

uint32_t adump_crc32c(uint32_t crc, const void *data, size_t len)
{
	/* ISA-L's iSCSI CRC is CRC32C with the init and final inversions left to the caller. */
	return ~crc32_iscsi((unsigned char *)data, (int)len, ~crc);
}

static int segment_open(struct adump_worker *w)
{
	struct packed_state *p = &w->ext->packed;
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/packed/w%u-%u.seg", w->session->dir, w->index, p->seg_number);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, ADUMP_FILE_MODE);
	if (fd < 0)
		return -errno;
	p->seg_fd = fd;
	p->seg_offset = 0;
	return 0;
}

int adump_packed_worker_init(struct adump_worker *w)
{
	struct packed_state *p = &w->ext->packed;
	char path[4200];
	int ret;

	snprintf(path, sizeof(path), "%s/packed", w->session->dir);
	ret = adump_mkdir_p(path, 0750);
	if (ret < 0)
		return ret;
	snprintf(path, sizeof(path), "%s/packed/w%u.idx", w->session->dir, w->index);
	p->index_buf = malloc(INDEX_BATCH_BYTES);
	if (!p->index_buf)
		return -ENOMEM;
	p->index_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, ADUMP_FILE_MODE);
	if (p->index_fd < 0)
		return -errno;
	return segment_open(w);
}

void adump_packed_worker_fini(struct adump_worker *w)
{
	struct packed_state *p = &w->ext->packed;

	if (p->index_fd >= 0 && adump_packed_flush(w) < 0)
		adump_log(ADUMP_LOG_ERROR, MODULE, "worker %u: index lines lost at stop", w->index);
	free(p->index_buf);
	p->index_buf = NULL;
	for (uint32_t i = 0; i < p->old_count; i++)
		close(p->old_fds[i]);
	free(p->old_fds);
	p->old_fds = NULL;
	p->old_count = 0;
	if (p->seg_fd >= 0)
		close(p->seg_fd);
	if (p->index_fd >= 0)
		close(p->index_fd);
	p->seg_fd = p->index_fd = -1;
}

int adump_packed_place(struct adump_worker *w, struct file_state *fs)
{
	struct packed_state *p = &w->ext->packed;
	uint64_t limit = w->session->cfg.segment_bytes ? w->session->cfg.segment_bytes
						       : DEFAULT_SEGMENT_BYTES;
	uint64_t total = fs->header_len + fs->op->payload_bytes;
	int ret;

	if (p->seg_offset && p->seg_offset + total > limit) {
		/* Writes may still be in flight on the full segment: keep it open until the
		 * worker stops. */
		int *fds = realloc(p->old_fds, (p->old_count + 1) * sizeof(*fds));

		if (!fds)
			return -ENOMEM;
		p->old_fds = fds;
		p->old_fds[p->old_count++] = p->seg_fd;
		p->seg_fd = -1;
		p->seg_number++;
		ret = segment_open(w);
		if (ret < 0)
			return ret;
	}
	if (p->seg_fd < 0)
		return -EBADF;
	fs->fd = p->seg_fd;
	fs->seg_number = p->seg_number;
	fs->base = p->seg_offset;
	p->seg_offset += total;
	return 0;
}

int adump_packed_flush(struct adump_worker *w)
{
	struct packed_state *p = &w->ext->packed;
	int ret = adump_write_all(p->index_fd, p->index_buf, p->index_len);

	if (ret < 0) {
		adump_session_set_error(w->session, ret);
		adump_log_once(ADUMP_LOG_ERROR, MODULE, "writing the index: %s", adump_strerror(ret));
	}
	p->index_len = 0;
	return ret;
}

int adump_packed_index(struct adump_worker *w, struct file_state *fs)
{
	struct packed_state *p = &w->ext->packed;
	const char *rel = fs->path + strlen(w->session->dir) + 1;
	char line[4400];
	int n, ret = ADUMP_TESTPOINT("packed.index");

	if (ret)
		return ret;
	n = snprintf(line, sizeof(line), "%s\tw%u-%u.seg\t%llu\t%llu\t%08x\n", rel, w->index,
		     fs->seg_number, (unsigned long long)fs->base,
		     (unsigned long long)(fs->header_len + fs->op->payload_bytes), fs->crc);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -ENAMETOOLONG;
	if (p->index_len + (size_t)n > INDEX_BATCH_BYTES) {
		ret = adump_packed_flush(w);
		if (ret < 0)
			return ret;
	}
	memcpy(p->index_buf + p->index_len, line, (size_t)n);
	p->index_len += (size_t)n;
	return 0;
}
