/* SPDX-License-Identifier: Apache-2.0 */
/* ADUMP_ACL_COMPAT_VERSION 0: the acl_dump.h surface before the exception-info API. */
#include "acl/acl.h"
#include "acl/acl_dump.h"
#include "aclnnop/aclnn_add.h"

#ifdef ACL_DUMP_MAX_SHAPE_NUM
#error "ADUMP_ACL_COMPAT_VERSION 0 must not declare the exception-info API"
#endif
_Static_assert(sizeof(acldumpChunk) == 4120, "acldumpChunk is 4120 bytes");

int adump_test_headers_v0(void)
{
	return acldumpGetPath(DATA_DUMP) != 0;
}
