/* SPDX-License-Identifier: Apache-2.0 */
/* CANN-compatible dump API (reference §1.1-§1.4): the chunk callback, op-info recording,
 * dump paths and custom exception info. Struct layouts match CANN's acl_dump.h byte for byte
 * (acldumpChunk is 4120 bytes, acldumpTensorInfo 456 on LP64). */
#ifndef ADUMP_ACL_ACL_DUMP_H
#define ADUMP_ACL_ACL_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "acl_base.h"

#if (defined(_WIN32) || defined(_WIN64) || defined(_MSC_VER))
#define ACL_DUMP_API __declspec(dllexport)
#define ACL_DUMP_WEAK
#else
#define ACL_DUMP_API __attribute__((visibility("default")))
/* Weak declarations let a program run against an older library that lacks the symbol (it
 * then resolves to NULL). CANN does not document the intent: inferred, UNVERIFIED. */
#define ACL_DUMP_WEAK __attribute__((weak))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ACL_DUMP_MAX_FILE_PATH_LENGTH 4096

/* One piece of one dump file handed to the callback; dataBuf follows the struct. */
typedef struct acldumpChunk {
	char fileName[ACL_DUMP_MAX_FILE_PATH_LENGTH];   /* absolute name the file would have */
	uint32_t bufLen;                                /* bytes in dataBuf */
	uint32_t isLastChunk;                           /* 1 on the file's final chunk, else 0 */
	int64_t offset;                                 /* file offset of dataBuf; -1 = append */
	int32_t flag;                                   /* reserved, 0 */
#ifdef __cplusplus
	uint8_t dataBuf[0];                             /* GNU zero-length array, as CANN */
#else
	uint8_t dataBuf[];
#endif
} acldumpChunk;

/**
 * acldumpRegCallback() - deliver dump data to @messageCallback instead of writing files.
 * The callback gets each chunk and sizeof(acldumpChunk) + bufLen; it runs on adump worker
 * threads, one file's chunks in order, different files concurrently. The chunk is borrowed
 * for the duration of the call. A non-zero return is logged and counted; delivery goes on.
 * The callback may call acldumpGetPath() but no other acl function (a launch or configuration
 * call on another thread may be waiting for the callback to finish).
 * @flag: must be 0 (no disk copy).
 * Return: ACL_SUCCESS; ACL_ERROR_FAILURE for a NULL callback or flag != 0.
 */
ACL_DUMP_API aclError acldumpRegCallback(int32_t (*const messageCallback)(const acldumpChunk *, int32_t),
					 int32_t flag);
/** acldumpUnregCallback() - go back to writing files (if dump is configured). */
ACL_DUMP_API void acldumpUnregCallback(void);

#define ACL_OP_DUMP_OP_AICORE_ARGS 0x00000001U

/**
 * aclopStartDumpArgs() - record op-info JSON files (reference §4) for every distinct aclnn
 * op signature executed until aclopStopDumpArgs(), under @path (created if missing).
 * Return: ACL_SUCCESS; ACL_ERROR_FAILURE for a NULL or empty path, a type without bit 0,
 * a second start, or a path that is not a read-write directory.
 */
ACL_FUNC_VISIBILITY aclError aclopStartDumpArgs(uint32_t dumpType, const char *path);
/** aclopStopDumpArgs() - stop recording; ACL_SUCCESS also when not started. */
ACL_FUNC_VISIBILITY aclError aclopStopDumpArgs(uint32_t dumpType);

typedef enum acldumpType {
	AIC_ERR_BRIEF_DUMP = 1,         /* lite exception dump */
	AIC_ERR_NORM_DUMP = 2,          /* exception dump with shapes, dtypes, formats, attrs */
	AIC_ERR_DETAIL_DUMP = 3,        /* NPU coredump */
	DATA_DUMP = 4,                  /* model or single-op dump */
	OVERFLOW_DUMP = 5               /* overflow operator dump */
} acldumpType;

/**
 * acldumpGetPath() - where a kind of dump goes.
 * Return: for types 1-3 "<exception path>/extra-info/data-dump/" (created); for 4 and 5 the
 * current data-dump directory "<dump_path>/<YYYYMMDDhhmmss>", or NULL when none is
 * configured; NULL for other values. The string stays valid until the configuration changes.
 */
ACL_FUNC_VISIBILITY const char *acldumpGetPath(acldumpType dumpType);

#if ADUMP_ACL_COMPAT_VERSION >= 1
#define ACL_DUMP_MAX_SHAPE_NUM 25

typedef enum acldumpTensorType {
	ACL_DUMP_TENSOR_INPUT = 0,
	ACL_DUMP_TENSOR_OUTPUT,
	ACL_DUMP_TENSOR_WORKSPACE
} acldumpTensorType;

typedef enum acldumpTensorAddressType {
	ACL_DUMP_ADDR_PTR = 0,          /* level-2 address: dereference once */
	ACL_DUMP_ADDR_PTR_PTR,          /* level-3 address: dereference twice */
	ACL_DUMP_ADDR_RAW               /* the data address itself */
} acldumpTensorAddressType;

typedef enum acldumpTensorPlacement {
	ACL_DUMP_PLACEMENT_DEVICE = 0,
	ACL_DUMP_PLACEMENT_HOST,
	ACL_DUMP_PLACEMENT_END          /* boundary, not a valid placement */
} acldumpTensorPlacement;

typedef struct acldumpTensorInfo {
	acldumpTensorType type;
	size_t tensorSize;                              /* bytes, > 0 */
	int32_t format;                                 /* GE format; primary in bits 0-7 */
	int32_t dataType;                               /* GE / aclDataType numbering */
	int64_t *tensorAddr;                            /* raw device address */
	acldumpTensorAddressType addrType;              /* must be ACL_DUMP_ADDR_RAW */
	acldumpTensorPlacement placement;               /* must be ACL_DUMP_PLACEMENT_DEVICE */
	uint32_t argsOffset;
	uint32_t shapeNum;                              /* <= ACL_DUMP_MAX_SHAPE_NUM */
	uint32_t originShapeNum;                        /* <= ACL_DUMP_MAX_SHAPE_NUM */
	uint64_t shape[ACL_DUMP_MAX_SHAPE_NUM];
	uint64_t originShape[ACL_DUMP_MAX_SHAPE_NUM];
} acldumpTensorInfo;

/**
 * acldumpSaveExceptionInfo() - copy @tensors from the device into a dump file
 * "<exception root>/<fileName>.custom.<YYYYMMDDhhmmssmmm>", mode 0400 once written.
 * @fileName: relative name; may name sub-folders (created) but never leaves the root.
 * @userTag:  stored as attribute "user_tag" when non-empty; may be NULL.
 * Return: ACL_SUCCESS; ACL_ERROR_INVALID_PARAM for a NULL/empty fileName, a ".." segment,
 * NULL tensors, tensorCount 0, a control character in fileName or a file path that would be
 * PATH_MAX or longer (adump's checks) or an invalid tensor; ACL_ERROR_FAILURE when exception dump is not enabled, a tensor's
 * tensorSize bytes at tensorAddr are not device memory, or the file cannot be written.
 */
ACL_DUMP_WEAK ACL_FUNC_VISIBILITY aclError acldumpSaveExceptionInfo(const char *fileName,
								    const char *userTag,
								    const acldumpTensorInfo *tensors,
								    size_t tensorCount);

/**
 * acldumpGetExceptionInfoPath() - the exception root "<path>/extra-info/data-dump/<device>"
 * (created, canonical) into @path, NUL-terminated.
 * Return: ACL_SUCCESS; ACL_ERROR_INVALID_PARAM for a NULL path, maxLen <= 1 or a buffer too
 * small; ACL_ERROR_FAILURE when exception dump is not enabled.
 */
ACL_DUMP_WEAK ACL_FUNC_VISIBILITY aclError acldumpGetExceptionInfoPath(char *path, size_t maxLen);
#endif /* ADUMP_ACL_COMPAT_VERSION >= 1 */

#ifdef __cplusplus
}
#endif
#endif
