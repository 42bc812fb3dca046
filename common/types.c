/* SPDX-License-Identifier: Apache-2.0 */
/* Tables for data types and formats, validation of op descriptors, and stream ids. */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "common/common.h"

struct dtype_info {
	const char *name;
	unsigned bits;
};

static const struct dtype_info dtype_table[] = {
#define ADUMP_DTYPE_ROW(name, val, bits) [val] = { "DT_" #name, bits },
	ADUMP_DTYPE_LIST(ADUMP_DTYPE_ROW)
#undef ADUMP_DTYPE_ROW
};

unsigned adump_dtype_bits(int32_t dtype)
{
	if (dtype < 0 || (size_t)dtype >= sizeof(dtype_table) / sizeof(dtype_table[0]))
		return 0;
	return dtype_table[dtype].bits;
}

const char *adump_dtype_name(int32_t dtype)
{
	if (dtype < 0 || (size_t)dtype >= sizeof(dtype_table) / sizeof(dtype_table[0]))
		return NULL;
	return dtype_table[dtype].name;
}

static const char *const format_names[] = {
	"NCHW", "NHWC", "ND", "NC1HWC0", "FRACTAL_Z", "NC1C0HWPAD", "NHWC1C0", "FSR_NCHW",
	"FRACTAL_DECONV", "C1HWNC0", "FRACTAL_DECONV_TRANSPOSE", "FRACTAL_DECONV_SP_STRIDE_TRANS",
	"NC1HWC0_C04", "FRACTAL_Z_C04", "CHWN", "FRACTAL_DECONV_SP_STRIDE8_TRANS", "HWCN",
	"NC1KHKWHWC0", "BN_WEIGHT", "FILTER_HWCK", "HASHTABLE_LOOKUP_LOOKUPS",
	"HASHTABLE_LOOKUP_KEYS", "HASHTABLE_LOOKUP_VALUE", "HASHTABLE_LOOKUP_OUTPUT",
	"HASHTABLE_LOOKUP_HITS", "C1HWNCoC0", "MD", "NDHWC", "FRACTAL_ZZ", "FRACTAL_NZ", "NCDHW",
	"DHWCN", "NDC1HWC0", "FRACTAL_Z_3D", "CN", "NC", "DHWNC", "FRACTAL_Z_3D_TRANSPOSE",
	"FRACTAL_ZN_LSTM", "FRACTAL_Z_G", "RESERVED", "ALL", "NULL", "ND_RNN_BIAS",
	"FRACTAL_ZN_RNN", "YUV", "YUV_A", "NCL", "FRACTAL_Z_WINO", "C1HWC0",
};

const char *adump_format_name(int32_t format)
{
	if (format == 0xff)
		return "MAX";
	if (format < 0 || (size_t)format >= sizeof(format_names) / sizeof(format_names[0]))
		return NULL;
	return format_names[format];
}

/* Loss causes, as the loss log spells them: shared by the writer (pipeline/loss.c) and the
 * reader (reader/losses.c). */
#define LOSS_NAME(name, str) str,
static const char *const cause_names[] = { ADUMP_LOSS_CAUSE_LIST(LOSS_NAME) };
#undef LOSS_NAME

const char *adump_loss_cause_name(enum adump_loss_cause cause)
{
	return (unsigned)cause < ADUMP_LOSS_CAUSE_COUNT ? cause_names[cause] : "unknown";
}

int adump_loss_cause_parse(const char *name)
{
	for (int i = 0; name && i < ADUMP_LOSS_CAUSE_COUNT; i++)
		if (!strcmp(name, cause_names[i]))
			return i;
	return -1;
}

const char *adump_tensor_kind_name(enum adump_tensor_kind kind)
{
	switch (kind) {
	case ADUMP_TENSOR_INPUT:
		return "input";
	case ADUMP_TENSOR_OUTPUT:
		return "output";
	case ADUMP_TENSOR_BUFFER:
		return "buffer";
	case ADUMP_TENSOR_WORKSPACE:
		return "workspace";
	}
	return NULL;
}

int adump_op_check(const struct adump_op *op)
{
	if (!op) {
		adump_log(ADUMP_LOG_ERROR, "op", "op descriptor is NULL");
		return -ADUMP_ERR_CONFIG;
	}
	if (!op->op_type || !op->op_type[0] || !op->op_name || !op->op_name[0]) {
		adump_log(ADUMP_LOG_ERROR, "op", "op_type and op_name must be non-empty");
		return -ADUMP_ERR_CONFIG;
	}
	if (op->tensor_count && !op->tensors) {
		adump_log(ADUMP_LOG_ERROR, "op", "%s: tensor_count %u but tensors is NULL",
			  op->op_name, op->tensor_count);
		return -ADUMP_ERR_CONFIG;
	}
	if (op->attr_count && !op->attrs) {
		adump_log(ADUMP_LOG_ERROR, "op", "%s: attr_count %u but attrs is NULL", op->op_name,
			  op->attr_count);
		return -ADUMP_ERR_CONFIG;
	}
	for (uint32_t i = 0; i < op->attr_count; i++) {
		if (!op->attrs[i].name || !op->attrs[i].value) {
			adump_log(ADUMP_LOG_ERROR, "op", "%s: attr %u has a NULL name or value",
				  op->op_name, i);
			return -ADUMP_ERR_CONFIG;
		}
	}
	int prev_kind = ADUMP_TENSOR_INPUT;
	for (uint32_t i = 0; i < op->tensor_count; i++) {
		const struct adump_tensor *t = &op->tensors[i];

		if ((int)t->kind < ADUMP_TENSOR_INPUT || t->kind > ADUMP_TENSOR_WORKSPACE ||
		    (int)t->kind < prev_kind) {
			adump_log(ADUMP_LOG_ERROR, "op",
				  "%s: tensor %u: kind %d out of order (inputs, outputs, buffers, "
				  "workspaces)", op->op_name, i, (int)t->kind);
			return -ADUMP_ERR_CONFIG;
		}
		prev_kind = t->kind;
		if (t->dim_count > ADUMP_MAX_DIMS || t->orig_dim_count > ADUMP_MAX_DIMS) {
			adump_log(ADUMP_LOG_ERROR, "op", "%s: tensor %u: more than %d dimensions",
				  op->op_name, i, ADUMP_MAX_DIMS);
			return -ADUMP_ERR_CONFIG;
		}
	}
	return 0;
}

void adump_tensor_describe(struct adump_tensor *dst, enum adump_tensor_kind kind,
			   uint32_t arg_index, int32_t dtype, int32_t format, uint32_t dim_count,
			   const int64_t *dims, uint32_t orig_dim_count, const int64_t *orig_dims,
			   const void *data, uint64_t bytes)
{
	memset(dst, 0, sizeof(*dst));
	dst->kind = kind;
	dst->dtype = dtype;
	dst->format = format;
	dst->dim_count = dim_count;
	for (uint32_t i = 0; i < dim_count; i++)
		dst->dims[i] = (uint64_t)dims[i];
	if (orig_dim_count == 0) {
		dst->orig_dim_count = dim_count;
		memcpy(dst->orig_dims, dst->dims, sizeof(dst->dims));
	} else {
		dst->orig_dim_count = orig_dim_count;
		for (uint32_t i = 0; i < orig_dim_count; i++)
			dst->orig_dims[i] = (uint64_t)orig_dims[i];
	}
	dst->address = (uint64_t)(uintptr_t)data;
	dst->bytes = bytes;
	dst->arg_index = arg_index;
}

uint32_t adump_stream_id_next(void)
{
	static _Atomic uint32_t next_id = 1;

	return atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
}

float adump_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
	union {
		uint32_t u;
		float f;
	} v;

	if (exp == 0x1f) {
		v.u = sign | 0x7f800000u | (mant << 13);
	} else if (exp) {
		v.u = sign | ((exp + 112) << 23) | (mant << 13);
	} else if (mant) {
		/* Subnormal half: value is mant * 2^-24, exact in float. */
		v.f = (float)mant * 0x1p-24f;
		v.u |= sign;
	} else {
		v.u = sign;
	}
	return v.f;
}
