/* SPDX-License-Identifier: Apache-2.0 */
/* The producer side of one dump file, shared by every producer (a device stream's DMA
 * engine, a host stream): the payload cut into chunks the way the channel needs them, each
 * copied into a staging buffer (or, in zero copy, referenced) and committed, and the drop
 * policy applied, so that every producer's files look alike to the workers. */
#include <stdint.h>
#include <string.h>

#include "proto/proto.h"
#include "producer/producer.h"

/* Where the payload is read from: the tensors' bytes, back to back. */
struct payload_cursor {
	const unsigned char *const *data;
	const struct adump_tensor *tensors;
	uint32_t count;
	uint32_t index;                         /* current tensor */
	uint64_t offset;                        /* within the current tensor */
};

/* Skips empty tensors, so that the cursor rests on the tensor the next byte comes from. */
static void cursor_settle(struct payload_cursor *c)
{
	while (c->index < c->count && c->offset == c->tensors[c->index].bytes) {
		c->index++;
		c->offset = 0;
	}
}

/* Copies the next @len payload bytes to @dst (NULL: skip them); a chunk may span tensors. */
static void cursor_take(struct payload_cursor *c, unsigned char *dst, uint64_t len)
{
	while (len) {
		uint64_t avail = c->tensors[c->index].bytes - c->offset;
		uint64_t n = avail < len ? avail : len;

		if (n && dst) {
			memcpy(dst, c->data[c->index] + c->offset, n);
			dst += n;
		}
		len -= n;
		c->offset += n;
		cursor_settle(c);
	}
}

/* Zero copy: the next @len bytes as one pointer into the producer's memory, if they lie in
 * one tensor and the address suits @align (0: any); NULL otherwise. */
static const void *cursor_ref(const struct payload_cursor *c, uint64_t len, uint32_t align)
{
	const unsigned char *p;

	if (c->index >= c->count || c->tensors[c->index].bytes - c->offset < len)
		return NULL;
	p = c->data[c->index] + c->offset;
	return align && (uintptr_t)p % align ? NULL : p;
}

/* Where the payload's chunks are cut: @first_bytes, then @chunk_bytes each. Without zero
 * copy (or with an alignment, whose cuts are fixed) that is all; in zero copy the cuts also
 * fall at tensor ends, so that each record references one tensor. */
static uint64_t next_len(const struct payload_cursor *c, uint64_t offset, uint64_t total,
			 uint64_t cap, bool is_ref_cut)
{
	uint64_t len = total - offset < cap ? total - offset : cap;

	if (is_ref_cut && c->index < c->count && c->tensors[c->index].bytes - c->offset < len)
		len = c->tensors[c->index].bytes - c->offset;
	return len;
}

uint64_t adump_port_post_sp(struct adump_port *port, struct adump_op_rec *op_rec,
			    const void *const *data, bool is_ref)
{
	struct payload_cursor cursor = {
		.data = (const unsigned char *const *)data,
		.tensors = op_rec->op.tensors,
		.count = op_rec->op.tensor_count,
	};
	/* Statistics computed at handover leave no payload to carry, but with tensor content. */
	uint64_t total = op_rec->tstats && !op_rec->has_payload ? 0 : op_rec->payload_bytes;
	uint64_t chunk_bytes, first_bytes, skew = 0, offset = 0;
	struct adump_chan *chan = adump_port_chan(port);
	uint64_t drop_count = 0;
	uint32_t align;
	bool is_failed = false, is_posted = false, is_ref_cut;

	/* With direct I/O the chunks are cut at aligned file offsets (see struct adump_rec):
	 * the first one is shorter by the header's misalignment and sits that far into its
	 * buffer. The header is packed here, once: the worker writes this copy. One that
	 * cannot be packed (ENOMEM) is packed again by the worker, which fails the file if it
	 * cannot either; any cut does then. */
	chunk_bytes = adump_chan_buffer_bytes(chan);
	align = adump_chan_align(chan);
	if (align && adump_dump_header_alloc(&op_rec->op, &op_rec->header, &op_rec->header_len) == 0)
		skew = (uint64_t)op_rec->header_len % align;
	first_bytes = chunk_bytes - skew;
	is_ref_cut = is_ref && !align;
	/* Before the first commit: once the worker has a record, it may finish the file. */
	adump_port_journal_sp(port, op_rec);
	cursor_settle(&cursor);
	do {
		uint64_t len = next_len(&cursor, offset, total, offset ? chunk_bytes : first_bytes,
					is_ref_cut);
		bool is_last = offset + len == total;
		struct adump_rec *rec;

		if (is_failed && !is_last) {
			/* The file is lost already; keep the buffers for files that can complete. */
			adump_port_count_drop_sp(port);
			drop_count++;
			cursor_take(&cursor, NULL, len);
			offset += len;
			continue;
		}
		/* The last record must reach the worker whatever the policy: it closes the file. */
		rec = adump_port_reserve_sp(port, is_last);
		if (!rec) {
			is_failed = true;
			drop_count++;
			op_rec->loss_offset = offset;
			op_rec->loss_len = len;
			/* Published to the worker by the release in the commit of the LAST record. */
			atomic_store_explicit(&op_rec->is_failed, 1, memory_order_relaxed);
			cursor_take(&cursor, NULL, len);
			offset += len;
			continue;
		}
		rec->op = op_rec;
		rec->offset = offset;
		rec->len = (uint32_t)len;
		rec->flags = (is_posted ? 0 : ADUMP_REC_FIRST) | (is_last ? ADUMP_REC_LAST : 0);
		rec->buf_offset = offset ? 0 : (uint32_t)skew;
		/* The first chunk of an aligned file shares its buffer with the header's tail. */
		rec->ext = is_ref && len && !(align && offset == 0) ? cursor_ref(&cursor, len, align) :
								       NULL;
		if (rec->ext)
			cursor_take(&cursor, NULL, len);
		else
			cursor_take(&cursor, (unsigned char *)rec->buf + rec->buf_offset, len);
		is_posted = true;
		offset += len;
		/* After the LAST commit the worker may free op_rec at any time: no access below. */
		adump_port_commit_sp(port, rec);
	} while (offset < total);
	return drop_count;
}
