/* SPDX-License-Identifier: Apache-2.0 */
/* LZ4 frames as sources: the decompressed content of one frame (a .lz4 dump file), read
 * forward through liblz4's frame decoder with one block of output held at a time. A read
 * behind that block starts over from the frame's first byte; the parser and the payload
 * readers go front to back, so that is rare. */
#include <errno.h>
#include <lz4frame.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/reader.h"

/* Compressed bytes read from the underlying source at a time. */
#define LZ4_IN_BYTES ((size_t)256 << 10)
/* LZ4 encodes at most about 255 output bytes per input byte (a match length is extended by
 * one byte per 255), so content beyond this many times the frame's size is a lie. */
#define LZ4_RATIO_MAX 256u

struct lz4_ctx {
	struct adump_reader_source *in;         /* the compressed frame; owned */
	uint64_t content_bytes;                 /* from the frame header */
	LZ4F_dctx *dctx;
	unsigned char *in_buf;
	size_t in_len, in_pos;                  /* in_buf[in_pos, in_len) not yet decoded */
	uint64_t in_offset;                     /* next compressed byte to read */
	unsigned char *block;                   /* the decoded window */
	size_t block_cap;
	uint64_t block_start;                   /* content offset of block[0] */
	size_t block_len;
	bool is_done;                           /* the decoder passed the frame's end mark */
	char error[256];
};

static int lz4_fail(struct lz4_ctx *z, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int lz4_fail(struct lz4_ctx *z, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(z->error, sizeof(z->error), fmt, ap);
	va_end(ap);
	return ret;
}

static void restart(struct lz4_ctx *z)
{
	LZ4F_resetDecompressionContext(z->dctx);
	z->in_len = z->in_pos = 0;
	z->in_offset = 0;
	z->block_start = 0;
	z->block_len = 0;
	z->is_done = false;
}

/* Decode the next piece of the frame into the window (which may come out empty while the
 * decoder reads a header or gathers a block). Return: 0 or negative, message in z->error. */
static int step(struct lz4_ctx *z)
{
	uint64_t in_bytes = z->in->size;
	size_t dst, src, hint;

	if (z->in_pos == z->in_len) {
		size_t want = in_bytes - z->in_offset < LZ4_IN_BYTES ? (size_t)(in_bytes - z->in_offset)
								      : LZ4_IN_BYTES;
		long got;

		if (!want)
			return lz4_fail(z, -ADUMP_ERR_INCOMPLETE,
					"lz4 frame truncated: %llu compressed bytes end before the "
					"frame's end mark (%llu of %llu content bytes decoded)",
					(unsigned long long)in_bytes,
					(unsigned long long)(z->block_start + z->block_len),
					(unsigned long long)z->content_bytes);
		got = z->in->ops->read_at(z->in->ctx, z->in_offset, z->in_buf, want);
		if (got <= 0)
			return lz4_fail(z, got < 0 ? (int)got : -ADUMP_ERR_INCOMPLETE,
					"reading the compressed frame at byte %llu: %s",
					(unsigned long long)z->in_offset,
					got < 0 ? adump_strerror((int)got) : "file shrank");
		z->in_len = (size_t)got;
		z->in_pos = 0;
		z->in_offset += (uint64_t)got;
	}
	dst = z->block_cap;
	src = z->in_len - z->in_pos;
	hint = LZ4F_decompress(z->dctx, z->block, &dst, z->in_buf + z->in_pos, &src, NULL);
	if (LZ4F_isError(hint))
		return lz4_fail(z, -ADUMP_ERR_CORRUPT,
				"corrupt lz4 frame near compressed byte %llu: %s",
				(unsigned long long)(z->in_offset - (z->in_len - z->in_pos)),
				LZ4F_getErrorName(hint));
	z->in_pos += src;
	z->block_start += z->block_len;
	z->block_len = dst;
	if (z->block_start + dst > z->content_bytes)
		return lz4_fail(z, -ADUMP_ERR_CORRUPT,
				"corrupt lz4 frame: it decodes to more than the %llu content bytes "
				"its header records",
				(unsigned long long)z->content_bytes);
	if (hint == 0) {
		z->is_done = true;
		if (z->block_start + dst != z->content_bytes)
			return lz4_fail(z, -ADUMP_ERR_INCOMPLETE,
					"lz4 frame decodes to %llu bytes but its header records %llu",
					(unsigned long long)(z->block_start + dst),
					(unsigned long long)z->content_bytes);
	} else if (!src && !dst) {
		/* The decoder always takes input it is given; never spin if it does not. */
		return lz4_fail(z, -ADUMP_ERR_CORRUPT, "lz4 decoder made no progress");
	}
	return 0;
}

static long lz4_read_at(void *ctx, uint64_t offset, void *buf, size_t len)
{
	struct lz4_ctx *z = ctx;
	size_t n;
	int ret;

	z->error[0] = '\0';
	if (offset < z->block_start)
		restart(z);
	while (offset >= z->block_start + z->block_len) {
		if (z->is_done)
			return 0;
		ret = step(z);
		if (ret < 0) {
			/* Leave a state the next read can start over from. */
			restart(z);
			return ret;
		}
	}
	n = (size_t)(z->block_start + z->block_len - offset);
	if (n > len)
		n = len;
	memcpy(buf, z->block + (offset - z->block_start), n);
	return (long)n;
}

static const char *lz4_error(void *ctx)
{
	return ((struct lz4_ctx *)ctx)->error;
}

/* Decode to the end mark, where liblz4 compares the content checksum, and make sure
 * nothing follows the frame. */
static int lz4_check(void *ctx, char *msg, size_t cap)
{
	struct lz4_ctx *z = ctx;
	uint64_t end;
	int ret;

	z->error[0] = '\0';
	while (!z->is_done) {
		ret = step(z);
		if (ret < 0) {
			snprintf(msg, cap, "%s", z->error);
			restart(z);
			return ret;
		}
	}
	end = z->in_offset - (z->in_len - z->in_pos);
	if (end != z->in->size) {
		snprintf(msg, cap, "%llu bytes after the lz4 frame's end mark",
			 (unsigned long long)(z->in->size - end));
		return -ADUMP_ERR_CORRUPT;
	}
	return 0;
}

static void lz4_close(void *ctx)
{
	struct lz4_ctx *z = ctx;

	adump_reader_source_destroy(z->in);
	LZ4F_freeDecompressionContext(z->dctx);
	free(z->in_buf);
	free(z->block);
	free(z);
}

static const struct adump_reader_source_ops lz4_ops = {
	.read_at = lz4_read_at,
	.close = lz4_close,
};

static const struct adump_reader_source_int_ops lz4_int_ops = {
	.error = lz4_error,
	.check = lz4_check,
};

static size_t block_bytes(LZ4F_blockSizeID_t id)
{
	switch (id) {
	case LZ4F_max256KB:
		return (size_t)256 << 10;
	case LZ4F_max1MB:
		return (size_t)1 << 20;
	case LZ4F_max4MB:
		return (size_t)4 << 20;
	default:
		return (size_t)64 << 10;
	}
}

int adump_reader_lz4_wrap(struct adump_reader_source *compressed, struct adump_reader_source **out,
			  char *msg, size_t cap)
{
	unsigned char head[LZ4F_HEADER_SIZE_MAX];
	LZ4F_frameInfo_t info;
	struct lz4_ctx *z;
	size_t head_len, hint;
	long got;
	int ret;

	msg[0] = '\0';
	z = calloc(1, sizeof(*z));
	if (!z) {
		adump_reader_source_destroy(compressed);
		snprintf(msg, cap, "out of memory");
		return -ENOMEM;
	}
	z->in = compressed;
	if (LZ4F_isError(LZ4F_createDecompressionContext(&z->dctx, LZ4F_VERSION))) {
		snprintf(msg, cap, "out of memory for the lz4 decoder");
		ret = -ENOMEM;
		goto err;
	}
	head_len = compressed->size < sizeof(head) ? (size_t)compressed->size : sizeof(head);
	got = head_len ? compressed->ops->read_at(compressed->ctx, 0, head, head_len) : 0;
	if (got < 0) {
		snprintf(msg, cap, "reading the lz4 frame header: %s", adump_strerror((int)got));
		ret = (int)got;
		goto err;
	}
	head_len = (size_t)got;
	memset(&info, 0, sizeof(info));
	hint = LZ4F_getFrameInfo(z->dctx, &info, head, &head_len);
	if (LZ4F_isError(hint)) {
		snprintf(msg, cap, "not a valid lz4 frame (%llu bytes): %s",
			 (unsigned long long)compressed->size, LZ4F_getErrorName(hint));
		ret = -ADUMP_ERR_CORRUPT;
		goto err;
	}
	if (info.frameType != LZ4F_frame) {
		snprintf(msg, cap, "starts with a skippable lz4 frame, not a compressed dump");
		ret = -ADUMP_ERR_CORRUPT;
		goto err;
	}
	/* Every dump is at least 8 bytes, so 0 can only mean the size is not recorded. */
	if (!info.contentSize) {
		snprintf(msg, cap, "the lz4 frame does not record its content size; decompress it "
				   "with 'lz4 -d' first");
		ret = -ADUMP_ERR_UNSUPPORTED;
		goto err;
	}
	if (compressed->size > UINT64_MAX / LZ4_RATIO_MAX ||
	    info.contentSize > compressed->size * LZ4_RATIO_MAX) {
		snprintf(msg, cap, "corrupt lz4 frame: it claims %llu content bytes from %llu "
				   "compressed bytes, more than lz4 can encode",
			 (unsigned long long)info.contentSize, (unsigned long long)compressed->size);
		ret = -ADUMP_ERR_CORRUPT;
		goto err;
	}
	z->content_bytes = info.contentSize;
	z->block_cap = block_bytes(info.blockSizeID);
	z->in_buf = malloc(LZ4_IN_BYTES);
	z->block = malloc(z->block_cap);
	if (!z->in_buf || !z->block) {
		snprintf(msg, cap, "out of memory for the lz4 buffers");
		ret = -ENOMEM;
		goto err;
	}
	/* The header was only peeked at; decoding starts from byte 0. */
	restart(z);
	ret = adump_reader_source_create(&lz4_ops, z, z->content_bytes, out);
	if (ret < 0) {
		snprintf(msg, cap, "%s", adump_strerror(ret));
		goto err;
	}
	(*out)->int_ops = &lz4_int_ops;
	return 0;
err:
	lz4_close(z);
	return ret;
}

int adump_reader_source_open_lz4(struct adump_reader_source *compressed,
				 struct adump_reader_source **out)
{
	char msg[256];

	if (!compressed || !out) {
		adump_reader_source_destroy(compressed);
		return -ADUMP_ERR_CONFIG;
	}
	return adump_reader_lz4_wrap(compressed, out, msg, sizeof(msg));
}
