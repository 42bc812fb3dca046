/* SPDX-License-Identifier: Apache-2.0 */
/* adump_op_rec: an op descriptor deep-copied into one allocation, so the producer's
 * arguments can go away while the file is still being written. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "common/journal.h"

static size_t str_size(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

static char *put_str(char **pos, const char *s)
{
	char *dst = *pos;
	size_t n = str_size(s);

	if (!s)
		return NULL;
	memcpy(dst, s, n);
	*pos += n;
	return dst;
}

/* The producer's hook bytes come first after the record, 16-byte aligned. */
#define HOOK_ALIGN 16u

static size_t hook_size(size_t hook_bytes)
{
	return (hook_bytes + HOOK_ALIGN - 1) / HOOK_ALIGN * HOOK_ALIGN;
}

size_t adump_op_copy_size(const struct adump_op *op)
{
	size_t bytes = op->tensor_count * sizeof(struct adump_tensor) +
		       op->attr_count * sizeof(struct adump_attr) + str_size(op->op_type) +
		       str_size(op->op_name) + str_size(op->dfx_message);

	for (uint32_t i = 0; i < op->attr_count; i++)
		bytes += str_size(op->attrs[i].name) + str_size(op->attrs[i].value);
	return bytes;
}

uint64_t adump_op_copy(struct adump_op *dst, const struct adump_op *op, void *mem)
{
	char *pos = mem;
	uint64_t payload = 0;

	*dst = *op;
	struct adump_tensor *tensors = (struct adump_tensor *)pos;
	if (op->tensor_count)
		memcpy(tensors, op->tensors, op->tensor_count * sizeof(*tensors));
	pos += op->tensor_count * sizeof(*tensors);
	for (uint32_t i = 0; i < op->tensor_count; i++)
		payload += tensors[i].bytes;
	dst->tensors = op->tensor_count ? tensors : NULL;

	struct adump_attr *attrs = (struct adump_attr *)pos;
	pos += op->attr_count * sizeof(*attrs);
	for (uint32_t i = 0; i < op->attr_count; i++) {
		attrs[i].name = put_str(&pos, op->attrs[i].name);
		attrs[i].value = put_str(&pos, op->attrs[i].value);
	}
	dst->attrs = op->attr_count ? attrs : NULL;
	dst->op_type = put_str(&pos, op->op_type);
	dst->op_name = put_str(&pos, op->op_name);
	dst->dfx_message = put_str(&pos, op->dfx_message);
	return payload;
}

int adump_op_rec_create_hooked(const struct adump_op *op, struct adump_freelist *fl,
			       const struct adump_op_hooks *hooks, const void *hook_data,
			       size_t hook_bytes, struct adump_op_rec **out)
{
	struct adump_op_rec *rec;
	size_t head = hook_size(sizeof(*rec)), hook = hook_size(hook_bytes);
	char *pos;
	int ret;

	ret = adump_op_check(op);
	if (ret < 0)
		return ret;
	rec = adump_freelist_alloc(fl, head + hook + adump_op_copy_size(op));
	if (!rec)
		return -ENOMEM;
	rec->payload_bytes = 0;
	atomic_init(&rec->is_failed, 0);
	rec->loss_offset = 0;
	rec->loss_len = 0;
	rec->priv = NULL;
	rec->header = NULL;
	rec->header_len = 0;
	rec->hooks = hooks;
	rec->hook_data = NULL;
	rec->dir = NULL;
	rec->tstats = NULL;
	rec->has_payload = false;
	rec->is_window_held = false;
	rec->window_entry = NULL;
	rec->status = -ADUMP_ERR_WRITE;
	rec->journal_slot = NULL;
	rec->journal_held = NULL;
	pos = (char *)rec + head;
	if (hook_bytes) {
		rec->hook_data = pos;
		memcpy(pos, hook_data, hook_bytes);
		pos += hook;
	}
	rec->payload_bytes = adump_op_copy(&rec->op, op, pos);
	*out = rec;
	return 0;
}

int adump_op_rec_create(const struct adump_op *op, struct adump_freelist *fl,
			struct adump_op_rec **out)
{
	return adump_op_rec_create_hooked(op, fl, NULL, NULL, 0, out);
}

int adump_op_rec_check(struct adump_op_rec *rec)
{
	return rec->hooks && rec->hooks->check ? rec->hooks->check(rec) : 0;
}

void adump_op_rec_destroy(struct adump_op_rec *rec)
{
	if (!rec)
		return;
	/* The consumer destroys the record once the file is finished: published, or failed
	 * with its loss lines written. From here the journal need not speak for it. */
	if (rec->journal_slot)
		adump_journal_slot_done(rec->journal_slot);
	if (rec->hooks && rec->hooks->release)
		rec->hooks->release(rec);
	free(rec->header);
	free(rec->tstats);
	adump_freelist_free(rec);
}
