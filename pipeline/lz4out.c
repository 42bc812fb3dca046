/* SPDX-License-Identifier: Apache-2.0 */
/* LZ4 output: each dump file becomes one standard LZ4 frame (<name>.lz4) that `lz4 -d`
 * restores to the exact dump file. The worker compresses each chunk as it passes, into
 * buffers of its own, so the staging buffer goes back to the device at once; the frame is
 * written sequentially, several writes in flight. Blocks that do not shrink are stored
 * uncompressed by liblz4 itself, as the frame format allows. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "pipeline/worker_int.h"

#define MODULE "lz4"
/* Output buffers in flight per worker. They live outside the staging pool, so they count
 * against the memory bound (pool + 64 MiB): with 2 MiB chunks, 8 per worker is 16 MiB. */
#define OUT_BUF_MAX 8

static LZ4F_preferences_t frame_prefs(uint64_t content_size)
{
	LZ4F_preferences_t p;

	memset(&p, 0, sizeof(p));
	p.frameInfo.blockSizeID = LZ4F_max4MB;
	p.frameInfo.blockMode = LZ4F_blockIndependent;
	p.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
	p.frameInfo.contentSize = content_size;
	p.compressionLevel = 1;
	/* Every update emits its blocks directly, without buffering (and copying) input. */
	p.autoFlush = 1;
	return p;
}

int adump_lz4_worker_init(struct adump_worker *w, size_t chunk_bytes)
{
	LZ4F_preferences_t p = frame_prefs(0);
	struct worker_ext *x = w->ext;

	/* One buffer must hold a whole compressed chunk, or a frame's header or end mark. */
	x->out_cap = LZ4F_compressBound(chunk_bytes, &p) + LZ4F_HEADER_SIZE_MAX + 64;
	x->cctx_cap = 16;
	x->free_cctx = calloc(x->cctx_cap, sizeof(*x->free_cctx));
	return x->free_cctx ? 0 : -ENOMEM;
}

void adump_lz4_worker_fini(struct adump_worker *w)
{
	struct worker_ext *x = w->ext;

	for (unsigned i = 0; i < x->free_cctx_count; i++)
		LZ4F_freeCompressionContext(x->free_cctx[i]);
	free(x->free_cctx);
	x->free_cctx = NULL;
	while (x->free_out) {
		struct out_buf *next = x->free_out->next_free;

		free(x->free_out);
		x->free_out = next;
	}
}

void adump_out_buf_put(struct adump_worker *w, struct out_buf *ob)
{
	ob->next_free = w->ext->free_out;
	w->ext->free_out = ob;
	w->ext->free_out_count++;
}

/* A new output buffer while fewer than OUT_BUF_MAX exist, or NULL. */
static struct out_buf *out_buf_new(struct worker_ext *x)
{
	struct out_buf *ob;

	if (x->out_count >= OUT_BUF_MAX)
		return NULL;
	ob = malloc(sizeof(*ob) + x->out_cap);
	if (ob) {
		ob->cap = x->out_cap;
		x->out_count++;
	}
	return ob;
}

int adump_lz4_reserve(struct adump_worker *w, unsigned count)
{
	struct worker_ext *x = w->ext;

	while (x->free_out_count < count) {
		struct out_buf *ob = out_buf_new(x);

		if (!ob)
			/* All made, or no memory: the ones in flight come back (retry), or, with
			 * none at all, the file fails in out_buf_get(). */
			return x->out_count > x->free_out_count ? -EBUSY : 0;
		adump_out_buf_put(w, ob);
	}
	return 0;
}

/* An output buffer: a free one (adump_lz4_reserve() made them available), else a new one.
 * Never waits. */
static struct out_buf *out_buf_get(struct adump_worker *w)
{
	struct worker_ext *x = w->ext;
	struct out_buf *ob = x->free_out;

	if (!ob)
		return out_buf_new(x);
	x->free_out = ob->next_free;
	x->free_out_count--;
	return ob;
}

/* Queue @len bytes of @ob at the frame's current end. */
static void write_out(struct adump_worker *w, struct file_state *fs, struct out_buf *ob, size_t len)
{
	if (len == 0) {
		adump_out_buf_put(w, ob);
		return;
	}
	ob->write = (struct adump_chunk_write){
		.req = { .fd = fs->fd, .buf_index = -1, .buf = ob->mem, .len = len,
			 .offset = fs->out_offset },
		.file = fs, .out_buf = ob,
	};
	fs->out_offset += len;
	if (!adump_submit_write(w, &ob->write))
		adump_out_buf_put(w, ob);
}

static void compress_into(struct adump_worker *w, struct file_state *fs, const void *data,
			  size_t len, bool is_end)
{
	struct out_buf *ob;
	size_t n;

	if (fs->is_failed)
		return;
	ob = out_buf_get(w);
	if (!ob) {
		adump_file_fail(w->session, fs, -ENOMEM, "compressing");
		return;
	}
	n = is_end ? LZ4F_compressEnd(fs->cctx, ob->mem, ob->cap, NULL)
		   : LZ4F_compressUpdate(fs->cctx, ob->mem, ob->cap, data, len, NULL);
	if (LZ4F_isError(n)) {
		adump_log_once(ADUMP_LOG_ERROR, MODULE, "compression failed: %s", LZ4F_getErrorName(n));
		adump_out_buf_put(w, ob);
		adump_file_fail(w->session, fs, -ADUMP_ERR_CORRUPT, "compressing");
		return;
	}
	write_out(w, fs, ob, n);
}

void adump_lz4_begin(struct adump_worker *w, struct file_state *fs)
{
	struct worker_ext *x = w->ext;
	LZ4F_preferences_t p = frame_prefs(fs->header_len + fs->op->payload_bytes);
	struct out_buf *ob;
	size_t n;

	if (x->free_cctx_count) {
		fs->cctx = x->free_cctx[--x->free_cctx_count];
	} else {
		n = LZ4F_createCompressionContext(&fs->cctx, LZ4F_VERSION);
		if (LZ4F_isError(n)) {
			fs->cctx = NULL;
			adump_file_fail(w->session, fs, -ENOMEM, "starting the frame of");
			return;
		}
	}
	ob = out_buf_get(w);
	if (!ob) {
		adump_file_fail(w->session, fs, -ENOMEM, "starting the frame of");
		return;
	}
	n = LZ4F_compressBegin(fs->cctx, ob->mem, ob->cap, &p);
	if (LZ4F_isError(n)) {
		adump_out_buf_put(w, ob);
		adump_file_fail(w->session, fs, -ADUMP_ERR_CORRUPT, "starting the frame of");
		return;
	}
	write_out(w, fs, ob, n);
	compress_into(w, fs, fs->header, fs->header_len, false);
	if (fs->op->payload_bytes == 0)
		compress_into(w, fs, NULL, 0, true);
}

void adump_lz4_data(struct adump_worker *w, struct file_state *fs, const void *data, size_t len,
		    bool is_last)
{
	if (len)
		compress_into(w, fs, data, len, false);
	if (is_last && fs->op->payload_bytes != 0)
		compress_into(w, fs, NULL, 0, true);
}

void adump_lz4_release(struct adump_worker *w, struct file_state *fs)
{
	struct worker_ext *x = w->ext;

	if (x->free_cctx_count < x->cctx_cap)
		x->free_cctx[x->free_cctx_count++] = fs->cctx;
	else
		LZ4F_freeCompressionContext(fs->cctx);
	fs->cctx = NULL;
}
