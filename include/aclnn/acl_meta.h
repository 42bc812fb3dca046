/* SPDX-License-Identifier: Apache-2.0 */
/* CANN-compatible aclnn base: opaque tensor, scalar and executor handles, aclnnStatus and the
 * constructors the aclnn operator headers rely on (reference §9). */
#ifndef ADUMP_ACLNN_ACL_META_H
#define ADUMP_ACLNN_ACL_META_H

#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t aclnnStatus;
typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;

#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000

/**
 * aclCreateTensor() - describe a tensor in device memory. Only contiguous tensors are
 * supported by adump's kernels. Return: a handle the caller frees with aclDestroyTensor(),
 * or NULL for invalid arguments.
 */
ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
					       aclDataType dataType, const int64_t *stride,
					       int64_t offset, aclFormat format,
					       const int64_t *storageDims, uint64_t storageDimsNum,
					       void *tensorData);
/** aclCreateScalar() - copy a scalar of @dataType from @value. NULL on bad arguments. */
ACL_FUNC_VISIBILITY aclScalar *aclCreateScalar(void *value, aclDataType dataType);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensor(const aclTensor *tensor);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyScalar(const aclScalar *scalar);

#ifdef __cplusplus
}
#endif
#endif
