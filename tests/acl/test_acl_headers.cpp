/* SPDX-License-Identifier: Apache-2.0 */
/* The acl headers as a C++17 program sees them: complete, warning-free, CANN's layouts. */
#include <stddef.h>

#include "acl/acl.h"
#include "acl/acl_dump.h"
#include "acl/adump_acl.h"
#include "aclnnop/aclnn_add.h"

static_assert(sizeof(acldumpChunk) == 4120, "acldumpChunk is 4120 bytes");
static_assert(offsetof(acldumpChunk, fileName) == 0, "fileName");
static_assert(offsetof(acldumpChunk, bufLen) == 4096, "bufLen");
static_assert(offsetof(acldumpChunk, isLastChunk) == 4100, "isLastChunk");
static_assert(offsetof(acldumpChunk, offset) == 4104, "offset");
static_assert(offsetof(acldumpChunk, flag) == 4112, "flag");
static_assert(offsetof(acldumpChunk, dataBuf) == 4116, "dataBuf");
static_assert(sizeof(acldumpTensorInfo) == 456, "acldumpTensorInfo is 456 bytes");
static_assert(offsetof(acldumpTensorInfo, tensorSize) == 8, "tensorSize");
static_assert(offsetof(acldumpTensorInfo, format) == 16, "format");
static_assert(offsetof(acldumpTensorInfo, dataType) == 20, "dataType");
static_assert(offsetof(acldumpTensorInfo, tensorAddr) == 24, "tensorAddr");
static_assert(offsetof(acldumpTensorInfo, addrType) == 32, "addrType");
static_assert(offsetof(acldumpTensorInfo, placement) == 36, "placement");
static_assert(offsetof(acldumpTensorInfo, argsOffset) == 40, "argsOffset");
static_assert(offsetof(acldumpTensorInfo, shapeNum) == 44, "shapeNum");
static_assert(offsetof(acldumpTensorInfo, originShapeNum) == 48, "originShapeNum");
static_assert(offsetof(acldumpTensorInfo, shape) == 56, "shape");
static_assert(offsetof(acldumpTensorInfo, originShape) == 256, "originShape");
static_assert(ACL_DUMP_MAX_FILE_PATH_LENGTH == 4096 && ACL_DUMP_MAX_SHAPE_NUM == 25, "limits");
static_assert(ACL_OP_DUMP_OP_AICORE_ARGS == 1u, "args type");
static_assert(AIC_ERR_BRIEF_DUMP == 1 && AIC_ERR_NORM_DUMP == 2 && AIC_ERR_DETAIL_DUMP == 3 &&
	       DATA_DUMP == 4 && OVERFLOW_DUMP == 5, "acldumpType");
static_assert(ACL_DUMP_TENSOR_WORKSPACE == 2 && ACL_DUMP_ADDR_RAW == 2 &&
	       ACL_DUMP_PLACEMENT_END == 2, "tensor enums");
static_assert(ACL_FLOAT == 0 && ACL_FLOAT16 == 1 && ACL_INT32 == 3 && ACL_BF16 == 27 &&
	       ACL_FLOAT4_E1M2 == 41, "aclDataType");
static_assert(ACL_FORMAT_ND == 2 && ACL_FORMAT_FRACTAL_NZ == 29 && ACL_FORMAT_NCL == 47, "aclFormat");
static_assert(ACL_MEMCPY_DEVICE_TO_HOST == 2 && ACL_MEMCPY_DEFAULT == 4, "aclrtMemcpyKind");

extern "C" int adump_test_headers_cxx_has_exception_api(void);
extern "C" int adump_test_headers_cxx_codes(void);

/* Weak declarations: a program can test for the symbol at run time. */
int adump_test_headers_cxx_has_exception_api(void)
{
	return acldumpSaveExceptionInfo != nullptr && acldumpGetExceptionInfoPath != nullptr;
}

/* The error values, as the reference lists them. */
int adump_test_headers_cxx_codes(void)
{
	return ACL_SUCCESS == 0 && ACL_ERROR_INVALID_PARAM == 100000 &&
	       ACL_ERROR_UNINITIALIZE == 100001 && ACL_ERROR_REPEAT_INITIALIZE == 100002 &&
	       ACL_ERROR_INVALID_FILE == 100003 && ACL_ERROR_WRITE_FILE == 100004 &&
	       ACL_ERROR_PARSE_FILE == 100006 && ACL_ERROR_INVALID_DUMP_CONFIG == 100009 &&
	       ACL_ERROR_DUMP_ALREADY_RUN == 100044 && ACL_ERROR_DUMP_NOT_RUN == 100045 &&
	       ACL_ERROR_BAD_ALLOC == 200000 && ACL_ERROR_API_NOT_SUPPORT == 200001 &&
	       ACL_ERROR_FEATURE_UNSUPPORTED == 200006 && ACL_ERROR_STORAGE_OVER_LIMIT == 300000 &&
	       ACL_ERROR_INTERNAL_ERROR == 500000 && ACL_ERROR_FAILURE == 500001;
}
