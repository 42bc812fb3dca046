/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor metadata shared by every part of adump: data types and formats in the numbering of
 * the dump file's DumpData header (CANN's toolkit.dumpdata OutputDataType / OutputFormat),
 * and the op and tensor descriptors that say what one dump file holds. */
#ifndef ADUMP_TYPES_H
#define ADUMP_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "adump/adump_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, proto value, bits per element; 0 = no fixed element size) */
#define ADUMP_DTYPE_LIST(X)                 \
	X(UNDEFINED, 0, 0)                  \
	X(FLOAT, 1, 32)                     \
	X(FLOAT16, 2, 16)                   \
	X(INT8, 3, 8)                       \
	X(UINT8, 4, 8)                      \
	X(INT16, 5, 16)                     \
	X(UINT16, 6, 16)                    \
	X(INT32, 7, 32)                     \
	X(INT64, 8, 64)                     \
	X(UINT32, 9, 32)                    \
	X(UINT64, 10, 64)                   \
	X(BOOL, 11, 8)                      \
	X(DOUBLE, 12, 64)                   \
	X(STRING, 13, 0)                    \
	X(DUAL_SUB_INT8, 14, 8)             \
	X(DUAL_SUB_UINT8, 15, 8)            \
	X(COMPLEX64, 16, 64)                \
	X(COMPLEX128, 17, 128)              \
	X(QINT8, 18, 8)                     \
	X(QINT16, 19, 16)                   \
	X(QINT32, 20, 32)                   \
	X(QUINT8, 21, 8)                    \
	X(QUINT16, 22, 16)                  \
	X(RESOURCE, 23, 0)                  \
	X(STRING_REF, 24, 0)                \
	X(DUAL, 25, 0)                      \
	X(VARIANT, 26, 0)                   \
	X(BF16, 27, 16)                     \
	X(INT4, 28, 4)                      \
	X(UINT1, 29, 1)                     \
	X(INT2, 30, 2)                      \
	X(UINT2, 31, 2)                     \
	X(COMPLEX32, 32, 32)                \
	X(HIFLOAT8, 33, 8)                  \
	X(FLOAT8_E5M2, 34, 8)               \
	X(FLOAT8_E4M3FN, 35, 8)             \
	X(FLOAT8_E8M0, 36, 8)               \
	X(FLOAT6_E3M2, 37, 6)               \
	X(FLOAT6_E2M3, 38, 6)               \
	X(FLOAT4_E2M1, 39, 4)               \
	X(FLOAT4_E1M2, 40, 4)

#define ADUMP_DTYPE_ENUM(name, val, bits) ADUMP_DT_##name = (val),
enum adump_dtype { ADUMP_DTYPE_LIST(ADUMP_DTYPE_ENUM) ADUMP_DT_COUNT };
#undef ADUMP_DTYPE_ENUM

/* Formats most callers name; any value of OutputFormat (0..49, 255) is accepted. */
enum adump_format {
	ADUMP_FORMAT_NCHW = 0,
	ADUMP_FORMAT_NHWC = 1,
	ADUMP_FORMAT_ND = 2,
	ADUMP_FORMAT_NC1HWC0 = 3,
	ADUMP_FORMAT_FRACTAL_Z = 4,
	ADUMP_FORMAT_HWCN = 16,
	ADUMP_FORMAT_NDHWC = 27,
	ADUMP_FORMAT_FRACTAL_NZ = 29,
	ADUMP_FORMAT_NCDHW = 30,
	ADUMP_FORMAT_RESERVED = 40,
	ADUMP_FORMAT_NC = 35,
	ADUMP_FORMAT_NCL = 47,
};

#define ADUMP_MAX_DIMS 25

/* Where a tensor goes in the file: all inputs, then outputs, buffers, workspaces. */
enum adump_tensor_kind {
	ADUMP_TENSOR_INPUT = 0,
	ADUMP_TENSOR_OUTPUT = 1,
	ADUMP_TENSOR_BUFFER = 2,
	ADUMP_TENSOR_WORKSPACE = 3,
};

struct adump_tensor {
	enum adump_tensor_kind kind;
	int32_t dtype;                          /* enum adump_dtype */
	int32_t format;                         /* OutputFormat numbering */
	int32_t sub_format;
	uint32_t dim_count;                     /* <= ADUMP_MAX_DIMS */
	uint32_t orig_dim_count;                /* <= ADUMP_MAX_DIMS */
	uint64_t dims[ADUMP_MAX_DIMS];
	uint64_t orig_dims[ADUMP_MAX_DIMS];
	uint64_t address;                       /* device address, recorded in the header */
	uint64_t bytes;                         /* payload size; 0 contributes no bytes */
	uint32_t arg_index;
};

struct adump_attr {
	const char *name;
	const char *value;
};

/* One operator's dump: what goes into one dump file. Tensors must be ordered by kind
 * (inputs, outputs, buffers, workspaces) because that is the payload order on disk. */
struct adump_op {
	const char *op_type;
	const char *op_name;
	uint32_t device_id;
	uint32_t stream_id;
	uint32_t task_id;
	uint64_t timestamp_us;                  /* names the file and fills dump_time */
	uint32_t tensor_count;
	const struct adump_tensor *tensors;
	uint32_t attr_count;
	const struct adump_attr *attrs;
	const char *dfx_message;                /* may be NULL */
};

/**
 * adump_dtype_bits() - bits per element of a data type.
 * @dtype: an enum adump_dtype value.
 *
 * Return: the element width in bits, or 0 for types without a fixed width and unknown values.
 */
ADUMP_API unsigned adump_dtype_bits(int32_t dtype);

/**
 * adump_dtype_name() - the DumpData enum name of a data type, e.g. "DT_FLOAT16".
 * Return: a static string, or NULL for an unknown value.
 */
ADUMP_API const char *adump_dtype_name(int32_t dtype);

/**
 * adump_format_name() - the format name without its FORMAT_ prefix, e.g. "NCHW".
 * Return: a static string, or NULL for an unknown value.
 */
ADUMP_API const char *adump_format_name(int32_t format);

/**
 * adump_tensor_kind_name() - "input", "output", "buffer" or "workspace"; NULL if @kind is
 * none of them.
 */
ADUMP_API const char *adump_tensor_kind_name(enum adump_tensor_kind kind);

/**
 * adump_op_check() - validate an op descriptor before it is dumped.
 * Return: 0, or -ADUMP_ERR_CONFIG (and a log line naming the field) when a count, dimension
 * count or kind order is out of range or a required name is missing.
 */
ADUMP_API int adump_op_check(const struct adump_op *op);

#ifdef __cplusplus
}
#endif
#endif
