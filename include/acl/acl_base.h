/* SPDX-License-Identifier: Apache-2.0 */
/* CANN-compatible base types: aclError and its values, aclDataType, aclFormat, the export
 * macros and the opaque runtime handles. Names and numbers follow CANN's acl_base_rt.h and
 * rt_error_codes.h (see ../shared/reference/cann-dump.md §1.6 and §9); this file is the
 * single place the acl shim takes its error values from. */
#ifndef ADUMP_ACL_ACL_BASE_H
#define ADUMP_ACL_ACL_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which generation of CANN's acl_dump.h surface the headers declare: 0 = the 2026-01/02
 * API (callback, op-info, acldumpGetPath(acldumpType)); 1 (default) adds the 2026-08
 * exception-info API (acldumpTensorInfo, acldumpSaveExceptionInfo,
 * acldumpGetExceptionInfoPath). The library always provides everything. */
#ifndef ADUMP_ACL_COMPAT_VERSION
#define ADUMP_ACL_COMPAT_VERSION 1
#endif

/* As in CANN, functions are exported only when the library itself is built
 * (FUNC_VISIBILITY defined); users see plain declarations. */
#if defined(_MSC_VER)
#ifdef FUNC_VISIBILITY
#define ACL_FUNC_VISIBILITY _declspec(dllexport)
#else
#define ACL_FUNC_VISIBILITY
#endif
#else
#ifdef FUNC_VISIBILITY
#define ACL_FUNC_VISIBILITY __attribute__((visibility("default")))
#else
#define ACL_FUNC_VISIBILITY
#endif
#endif

typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclrtContext;
typedef int aclError;
typedef uint16_t aclFloat16;

/* CANN declares these as static const int, not macros or enums; keep that so code that
 * compares or casts them behaves the same. */
static const int ACL_ERROR_NONE = 0;
static const int ACL_SUCCESS = 0;

static const int ACL_ERROR_INVALID_PARAM = 100000;
static const int ACL_ERROR_UNINITIALIZE = 100001;
static const int ACL_ERROR_REPEAT_INITIALIZE = 100002;
static const int ACL_ERROR_INVALID_FILE = 100003;
static const int ACL_ERROR_WRITE_FILE = 100004;
static const int ACL_ERROR_INVALID_FILE_SIZE = 100005;
static const int ACL_ERROR_PARSE_FILE = 100006;
static const int ACL_ERROR_FILE_MISSING_ATTR = 100007;
static const int ACL_ERROR_FILE_ATTR_INVALID = 100008;
static const int ACL_ERROR_INVALID_DUMP_CONFIG = 100009;
static const int ACL_ERROR_INVALID_PROFILING_CONFIG = 100010;
static const int ACL_ERROR_UNSUPPORTED_DATA_TYPE = 100026;
static const int ACL_ERROR_FORMAT_NOT_MATCH = 100027;
static const int ACL_ERROR_REPEAT_FINALIZE = 100037;
static const int ACL_ERROR_DUMP_ALREADY_RUN = 100044;
static const int ACL_ERROR_DUMP_NOT_RUN = 100045;

static const int ACL_ERROR_BAD_ALLOC = 200000;
static const int ACL_ERROR_API_NOT_SUPPORT = 200001;
static const int ACL_ERROR_INVALID_DEVICE = 200002;
static const int ACL_ERROR_MEMORY_ADDRESS_UNALIGNED = 200003;
static const int ACL_ERROR_RESOURCE_NOT_MATCH = 200004;
static const int ACL_ERROR_INVALID_RESOURCE_HANDLE = 200005;
static const int ACL_ERROR_FEATURE_UNSUPPORTED = 200006;

static const int ACL_ERROR_STORAGE_OVER_LIMIT = 300000;

static const int ACL_ERROR_INTERNAL_ERROR = 500000;
static const int ACL_ERROR_FAILURE = 500001;
static const int ACL_ERROR_GE_FAILURE = 500002;
static const int ACL_ERROR_RT_FAILURE = 500003;
static const int ACL_ERROR_DRV_FAILURE = 500004;
static const int ACL_ERROR_PROFILING_FAILURE = 500005;

/* Runtime (RTS) codes, macros as in CANN's error_codes/rt_error_codes.h. */
#ifndef ACL_ERROR_RT_PARAM_INVALID
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_STREAM_CONTEXT 107003
#define ACL_ERROR_RT_INVALID_HANDLE 107017
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_INTERNAL_ERROR 507000
#endif

typedef enum {
	ACL_DT_UNDEFINED = -1,
	ACL_FLOAT = 0,
	ACL_FLOAT16 = 1,
	ACL_INT8 = 2,
	ACL_INT32 = 3,
	ACL_UINT8 = 4,
	ACL_INT16 = 6,
	ACL_UINT16 = 7,
	ACL_UINT32 = 8,
	ACL_INT64 = 9,
	ACL_UINT64 = 10,
	ACL_DOUBLE = 11,
	ACL_BOOL = 12,
	ACL_STRING = 13,
	ACL_COMPLEX64 = 16,
	ACL_COMPLEX128 = 17,
	ACL_BF16 = 27,
	ACL_INT4 = 29,
	ACL_UINT1 = 30,
	ACL_COMPLEX32 = 33,
	ACL_HIFLOAT8 = 34,
	ACL_FLOAT8_E5M2 = 35,
	ACL_FLOAT8_E4M3FN = 36,
	ACL_FLOAT8_E8M0 = 37,
	ACL_FLOAT6_E3M2 = 38,
	ACL_FLOAT6_E2M3 = 39,
	ACL_FLOAT4_E2M1 = 40,
	ACL_FLOAT4_E1M2 = 41,
} aclDataType;

typedef enum {
	ACL_FORMAT_UNDEFINED = -1,
	ACL_FORMAT_NCHW = 0,
	ACL_FORMAT_NHWC = 1,
	ACL_FORMAT_ND = 2,
	ACL_FORMAT_NC1HWC0 = 3,
	ACL_FORMAT_FRACTAL_Z = 4,
	ACL_FORMAT_NC1HWC0_C04 = 12,
	ACL_FORMAT_HWCN = 16,
	ACL_FORMAT_NDHWC = 27,
	ACL_FORMAT_FRACTAL_NZ = 29,
	ACL_FORMAT_NCDHW = 30,
	ACL_FORMAT_NDC1HWC0 = 32,
	ACL_FRACTAL_Z_3D = 33,
	ACL_FORMAT_NC = 35,
	ACL_FORMAT_NCL = 47,
} aclFormat;

typedef enum {
	ACL_DEBUG = 0,
	ACL_INFO = 1,
	ACL_WARNING = 2,
	ACL_ERROR = 3,
} aclLogLevel;

#ifdef __cplusplus
}
#endif
#endif
