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

/* A buffer for bytes the worker produced itself (compressed data), written once. */
struct out_buf {
	struct adump_chunk_write write;         /* first: the completion finds the buffer */
	struct out_buf *next_free;
	size_t cap;
	unsigned char mem[];
};

/* Per worker (w->out_state). */
struct lz4_worker {
	LZ4F_cctx **free_cctx;                  /* contexts not in use */
	unsigned free_cctx_count;
	unsigned cctx_cap;
	struct out_buf *free_out;               /* output buffers not in flight */
	unsigned free_out_count;
	unsigned out_count;                     /* allocated */
	size_t out_cap;                         /* bytes per output buffer */
};

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

static int lz4_worker_init(struct adump_worker *w)
{
	LZ4F_preferences_t p = frame_prefs(0);
	struct lz4_worker *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	w->out_state = x;
	/* One buffer must hold a whole compressed chunk, or a frame's header or end mark. */
	x->out_cap = LZ4F_compressBound(w->session->chunk_bytes, &p) + LZ4F_HEADER_SIZE_MAX + 64;
	x->cctx_cap = 16;
	x->free_cctx = calloc(x->cctx_cap, sizeof(*x->free_cctx));
	return x->free_cctx ? 0 : -ENOMEM;
}

static void lz4_worker_fini(struct adump_worker *w)
{
	struct lz4_worker *x = w->out_state;

	if (!x)
		return;
	for (unsigned i = 0; i < x->free_cctx_count; i++)
		LZ4F_freeCompressionContext(x->free_cctx[i]);
	free(x->free_cctx);
	x->free_cctx = NULL;
	while (x->free_out) {
		struct out_buf *next = x->free_out->next_free;

		free(x->free_out);
		x->free_out = next;
	}
	free(x);
	w->out_state = NULL;
}

static void out_buf_put(struct adump_worker *w, struct out_buf *ob)
{
	struct lz4_worker *x = w->out_state;

	ob->next_free = x->free_out;
	x->free_out = ob;
	x->free_out_count++;
}

/* A new output buffer while fewer than OUT_BUF_MAX exist, or NULL. */
static struct out_buf *out_buf_new(struct lz4_worker *x)
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

/* Make @count output buffers available for the next record without waiting.
 * Return: 0, or -EBUSY when they are all in flight. */
static int reserve(struct adump_worker *w, unsigned count)
{
	struct lz4_worker *x = w->out_state;

	while (x->free_out_count < count) {
		struct out_buf *ob = out_buf_new(x);

		if (!ob)
			/* All made, or no memory: the ones in flight come back (retry), or, with
			 * none at all, the file fails in out_buf_get(). */
			return x->out_count > x->free_out_count ? -EBUSY : 0;
		out_buf_put(w, ob);
	}
	return 0;
}

/* An output buffer: a free one (reserve() made them available), else a new one.
 * Never waits. */
static struct out_buf *out_buf_get(struct adump_worker *w)
{
	struct lz4_worker *x = w->out_state;
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
		out_buf_put(w, ob);
		return;
	}
	ob->write = (struct adump_chunk_write){
		.req = { .fd = fs->fd, .buf_index = -1, .buf = ob->mem, .len = len,
			 .offset = fs->out_offset },
		.file = fs, .priv = ob,
	};
	fs->out_offset += len;
	if (!adump_submit_write(w, &ob->write))
		out_buf_put(w, ob);
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
		out_buf_put(w, ob);
		adump_file_fail(w->session, fs, -ADUMP_ERR_CORRUPT, "compressing");
		return;
	}
	write_out(w, fs, ob, n);
}

static void lz4_begin(struct adump_worker *w, struct file_state *fs)
{
	struct lz4_worker *x = w->out_state;
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
		out_buf_put(w, ob);
		adump_file_fail(w->session, fs, -ADUMP_ERR_CORRUPT, "starting the frame of");
		return;
	}
	write_out(w, fs, ob, n);
	compress_into(w, fs, fs->header, fs->header_len, false);
	if (fs->op->payload_bytes == 0)
		compress_into(w, fs, NULL, 0, true);
}

/* The LZ4 output buffers the record needs: the frame's start and the header with the
 * first record, one for the data, one for the frame's end with the last. */
static unsigned buffers_needed(const struct adump_rec *rec, const struct file_state *fs)
{
	const struct adump_op_rec *op = rec->op;
	bool is_last = (rec->flags & ADUMP_REC_LAST) != 0;
	unsigned n = 0;

	if (!fs)
		n += 2 + (op->payload_bytes == 0);
	return n + (rec->len != 0) + (is_last && op->payload_bytes != 0);
}

static int lz4_prepare(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec)
{
	(void)chan;
	return reserve(w, buffers_needed(rec, rec->op->priv)) == -EBUSY ? -EBUSY : 0;
}

static void lz4_file_begin(struct adump_worker *w, struct file_state *fs, bool is_whole)
{
	(void)is_whole;
	if (adump_file_header(w->session, fs) == 0 && adump_file_create(w, fs, ".lz4") == 0)
		lz4_begin(w, fs);
}

/* Compressed into worker buffers: the staging buffer is free again at once. */
static void lz4_record(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
		       struct file_state *fs)
{
	if (rec->len)
		compress_into(w, fs, adump_rec_data(rec), rec->len, false);
	if ((rec->flags & ADUMP_REC_LAST) && fs->op->payload_bytes != 0)
		compress_into(w, fs, NULL, 0, true);
	adump_record_done(w, chan, rec, fs);
}

static void lz4_write_done(struct adump_worker *w, struct adump_chunk_write *cw)
{
	if (cw->priv)
		out_buf_put(w, cw->priv);
}

static void lz4_file_end(struct adump_worker *w, struct file_state *fs)
{
	struct lz4_worker *x = w->out_state;

	if (fs->fd >= 0)
		adump_file_publish(w, fs, ".lz4");
	if (!fs->cctx)
		return;
	if (x->free_cctx_count < x->cctx_cap)
		x->free_cctx[x->free_cctx_count++] = fs->cctx;
	else
		LZ4F_freeCompressionContext(fs->cctx);
	fs->cctx = NULL;
}

const struct adump_output_ops adump_out_lz4 = {
	.name = "lz4",
	.worker_init = lz4_worker_init,
	.worker_fini = lz4_worker_fini,
	.record_prepare = lz4_prepare,
	.file_begin = lz4_file_begin,
	.record = lz4_record,
	.write_done = lz4_write_done,
	.file_end = lz4_file_end,
};
