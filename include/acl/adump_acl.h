/* SPDX-License-Identifier: Apache-2.0 */
/* adump extensions to the CANN-compatible API. CANN advances dump_step from the training
 * loop (GE); adump's shim has no graph executor, so the program says when a step ends. */
#ifndef ADUMP_ACL_ADUMP_ACL_H
#define ADUMP_ACL_ADUMP_ACL_H

#include <stdint.h>

#include "adump/adump_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * adump_acl_step_advance() - end the current iteration: ops launched afterwards belong to
 * the next step, which acl.json "dump_step" selects. The counter starts at 0 with aclInit().
 * Return: the new step number. Any thread.
 */
ADUMP_API uint64_t adump_acl_step_advance(void);

/** adump_acl_step_get() - the current step number. Any thread. */
ADUMP_API uint64_t adump_acl_step_get(void);

#ifdef __cplusplus
}
#endif
#endif
