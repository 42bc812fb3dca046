/* SPDX-License-Identifier: Apache-2.0 */
/* CANN-compatible umbrella header. CANN's acl.h pulls in acl_rt.h (which includes
 * acl_base.h), acl_op.h and acl_mdl.h; adump has no op-model or model-loading API, so it
 * pulls in the runtime and, for convenience, the dump API. */
#ifndef ADUMP_ACL_ACL_H
#define ADUMP_ACL_ACL_H

#include "acl_base.h"
#include "acl_rt.h"
#include "acl_dump.h"

#endif
