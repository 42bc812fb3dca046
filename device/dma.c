/* SPDX-License-Identifier: Apache-2.0 */
/* The DMA engine: after a dumped kernel ran, describe the op, then copy the selected tensors
 * (inputs, then outputs) chunk by chunk into the channel's staging buffers, one completion
 * record per chunk. Under ADUMP_ON_FULL_DROP a chunk that finds no free buffer is lost, the
 * rest of its file is skipped, and only the final record is still posted so the worker can
 * close the file as failed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "device/device_int.h"
#include "ring/ring.h"

#define DMA_MAX_TENSORS 3

/* Where the payload is read from: the selected tensors' bytes, back to back. */
struct payload_cursor {
	const unsigned char *data[DMA_MAX_TENSORS];
	uint64_t bytes[DMA_MAX_TENSORS];
	uint32_t count;
	uint32_t index;                         /* current tensor */
	uint64_t offset;                        /* within the current tensor */
};

static void tensor_describe(struct adump_tensor *dst, const struct adump_dev_tensor *src,
			    enum adump_tensor_kind kind, uint32_t arg_index)
{
	memset(dst, 0, sizeof(*dst));
	dst->kind = kind;
	dst->dtype = src->dtype;
	dst->format = src->format;
	dst->dim_count = src->dim_count;
	for (uint32_t i = 0; i < src->dim_count; i++)
		dst->dims[i] = (uint64_t)src->dims[i];
	if (src->orig_dim_count == 0) {
		dst->orig_dim_count = src->dim_count;
		memcpy(dst->orig_dims, dst->dims, sizeof(dst->dims));
	} else {
		dst->orig_dim_count = src->orig_dim_count;
		for (uint32_t i = 0; i < src->orig_dim_count; i++)
			dst->orig_dims[i] = (uint64_t)src->orig_dims[i];
	}
	dst->address = (uint64_t)(uintptr_t)src->data;
	dst->bytes = src->bytes;
	dst->arg_index = arg_index;
}

static void cursor_add(struct payload_cursor *c, const struct adump_dev_tensor *t)
{
	c->data[c->count] = t->data;
	c->bytes[c->count] = t->bytes;
	c->count++;
}

/* Copies the next @len payload bytes to @dst (NULL: skip them); a chunk may span tensors. */
static void cursor_take(struct payload_cursor *c, unsigned char *dst, uint64_t len)
{
	while (len) {
		uint64_t avail = c->bytes[c->index] - c->offset;
		uint64_t n = avail < len ? avail : len;

		if (n && dst) {
			memcpy(dst, c->data[c->index] + c->offset, n);
			dst += n;
		}
		len -= n;
		c->offset += n;
		if (c->offset == c->bytes[c->index]) {
			c->index++;
			c->offset = 0;
		}
	}
}

int adump_dev_dma_run(const struct adump_dev_task *task, uint32_t device_id, uint32_t stream_id)
{
	const struct adump_dev_dump_req *req = task->dump;
	struct adump_chan *chan = task->chan;
	struct adump_tensor tensors[DMA_MAX_TENSORS];
	struct payload_cursor cursor = { .count = 0 };
	struct adump_op_rec *op_rec;
	char alpha_text[32];
	uint64_t total = 0, chunk_bytes, chunk_count, first_bytes, skew = 0;
	uint32_t align;
	uint32_t tensor_count = 0;
	bool is_failed = false, is_posted = false;
	int ret;

	if (req->tensor_mask & ADUMP_DUMP_INPUTS) {
		tensor_describe(&tensors[tensor_count++], &req->self, ADUMP_TENSOR_INPUT, 0);
		tensor_describe(&tensors[tensor_count++], &req->other, ADUMP_TENSOR_INPUT, 1);
		cursor_add(&cursor, &req->self);
		cursor_add(&cursor, &req->other);
	}
	if (req->tensor_mask & ADUMP_DUMP_OUTPUTS) {
		tensor_describe(&tensors[tensor_count++], &req->out, ADUMP_TENSOR_OUTPUT, 0);
		cursor_add(&cursor, &req->out);
	}
	for (uint32_t i = 0; i < cursor.count; i++)
		total += cursor.bytes[i];

	/* Record alpha as the kernel used it, so the dump matches the computation. */
	if (task->dtype == ADUMP_DT_INT32)
		snprintf(alpha_text, sizeof(alpha_text), "%d", adump_dev_alpha_int32(task->alpha));
	else
		snprintf(alpha_text, sizeof(alpha_text), "%.9g", (double)(float)task->alpha);
	struct adump_attr attr = { .name = "alpha", .value = alpha_text };
	struct adump_op op = {
		.op_type = req->op_type,
		.op_name = req->op_name,
		.device_id = device_id,
		.stream_id = stream_id,
		.task_id = task->task_id,
		.timestamp_us = adump_wall_us(),
		.tensor_count = tensor_count,
		.tensors = tensors,
		.attr_count = 1,
		.attrs = &attr,
	};
	ret = ADUMP_TESTPOINT("device.dma");
	if (ret == 0)
		ret = adump_op_rec_create(&op, &op_rec);
	if (ret < 0) {
		adump_log_once(ADUMP_LOG_ERROR, "device", "dump of %s skipped: %s", req->op_name,
			       adump_strerror(ret));
		return ret;
	}

	/* With direct I/O the chunks are cut at aligned file offsets (see struct adump_rec):
	 * the first one is shorter by the header's misalignment and sits that far into its
	 * buffer. The header's length is all the engine needs of it. */
	chunk_bytes = adump_chan_buffer_bytes(chan);
	align = adump_chan_align(chan);
	if (align) {
		long header_bytes = adump_dump_header_pack(&op, NULL, 0);

		if (header_bytes < 0) {
			adump_op_rec_destroy(op_rec);
			return (int)header_bytes;
		}
		skew = (uint64_t)header_bytes % align;
	}
	first_bytes = chunk_bytes - skew;
	chunk_count = total <= first_bytes ? 1 : 1 + (total - first_bytes + chunk_bytes - 1) / chunk_bytes;
	for (uint64_t i = 0; i < chunk_count; i++) {
		uint64_t offset = i ? first_bytes + (i - 1) * chunk_bytes : 0;
		uint64_t cap = i ? chunk_bytes : first_bytes;
		uint64_t len = total - offset < cap ? total - offset : cap;
		bool is_last = i == chunk_count - 1;
		struct adump_rec *rec;

		if (is_failed && !is_last) {
			/* The file is lost already; keep the buffers for files that can complete. */
			adump_chan_count_drop_sp(chan);
			cursor_take(&cursor, NULL, len);
			continue;
		}
		/* The last record must reach the worker whatever the policy: it closes the file. */
		rec = adump_chan_reserve_sp(chan, is_last);
		if (!rec) {
			is_failed = true;
			/* Published to the worker by the release in the commit of the LAST record. */
			atomic_store_explicit(&op_rec->is_failed, 1, memory_order_relaxed);
			cursor_take(&cursor, NULL, len);
			continue;
		}
		rec->op = op_rec;
		rec->offset = offset;
		rec->len = (uint32_t)len;
		rec->flags = (is_posted ? 0 : ADUMP_REC_FIRST) | (is_last ? ADUMP_REC_LAST : 0);
		rec->buf_offset = i ? 0 : (uint32_t)skew;
		cursor_take(&cursor, (unsigned char *)rec->buf + rec->buf_offset, len);
		is_posted = true;
		/* After the LAST commit the worker may free op_rec at any time: no access below. */
		adump_chan_commit_sp(chan, rec);
	}
	return 0;
}
