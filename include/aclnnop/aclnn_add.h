/* SPDX-License-Identifier: Apache-2.0 */
/* CANN-compatible aclnnAdd: out = self + alpha × other, in two phases (workspace size and
 * executor, then launch on a stream). Runs on adump's simulated NPU; dumped when dump is on. */
#ifndef ADUMP_ACLNNOP_ACLNN_ADD_H
#define ADUMP_ACLNNOP_ACLNN_ADD_H

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * aclnnAddGetWorkspaceSize() - check arguments and build an executor for one aclnnAdd.
 * Return: ACLNN_SUCCESS; ACLNN_ERR_PARAM_NULLPTR for NULL arguments; ACLNN_ERR_PARAM_INVALID
 * for mismatched shapes or dtypes or an unsupported dtype. The executor is consumed by
 * aclnnAdd().
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor *self, const aclTensor *other,
							 const aclScalar *alpha, aclTensor *out,
							 uint64_t *workspaceSize,
							 aclOpExecutor **executor);
/**
 * aclnnAdd() - launch on @stream and free @executor.
 * Return: ACLNN_SUCCESS; ACLNN_ERR_PARAM_NULLPTR; ACLNN_ERR_PARAM_INVALID for an unknown
 * stream; ACLNN_ERR_RUNTIME_ERROR when the device refuses the launch.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnAdd(void *workspace, uint64_t workspaceSize,
					 aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif
#endif
