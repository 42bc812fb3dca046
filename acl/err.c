/* SPDX-License-Identifier: Apache-2.0 */
/* The one place native results become acl codes, plus the acl <-> DumpData numbering of
 * data types and formats (reference §9: aclDataType is GE numbering, the dump header uses
 * OutputDataType). */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "acl/acl_int.h"

/* Table, not switch: the acl values are `static const int` in acl_base.h (as in CANN),
 * which C does not accept as case labels. */
aclError adump_acl_err_from(int ret)
{
	static const struct {
		int native;
		int acl;
	} table[] = {
		{ -EINVAL, 100000 /* ACL_ERROR_INVALID_PARAM */ },
		{ -ENOMEM, 200000 /* ACL_ERROR_BAD_ALLOC */ },
		{ -ENOENT, 100003 /* ACL_ERROR_INVALID_FILE */ },
		{ -EACCES, 100003 },
		{ -EPERM, 100003 },
		{ -EISDIR, 100003 },
		{ -ENOTDIR, 100003 },
		{ -ELOOP, 100003 },
		{ -ENAMETOOLONG, 100003 },
		{ -ENOSPC, 100004 /* ACL_ERROR_WRITE_FILE */ },
		{ -EIO, 100004 },
		{ -EDQUOT, 100004 },
		{ -ADUMP_ERR_CORRUPT, 100006 /* ACL_ERROR_PARSE_FILE */ },
		{ -ADUMP_ERR_CONFIG, 100009 /* ACL_ERROR_INVALID_DUMP_CONFIG */ },
		{ -ADUMP_ERR_WRITE, 100004 },
		{ -ADUMP_ERR_NOT_FOUND, ACL_ERROR_RT_PARAM_INVALID },
		{ -ADUMP_ERR_TOO_BIG, ACL_ERROR_RT_PARAM_INVALID },
		{ -ADUMP_ERR_STATE, ACL_ERROR_RT_PARAM_INVALID },
		{ -ADUMP_ERR_UNSUPPORTED, 200006 /* ACL_ERROR_FEATURE_UNSUPPORTED */ },
		{ -ADUMP_ERR_DROPPED, 500001 /* ACL_ERROR_FAILURE */ },
		{ -ADUMP_ERR_SHUTDOWN, 500001 },
		{ -ADUMP_ERR_CALLBACK, 500001 },
		{ -ADUMP_ERR_INCOMPLETE, 500001 },
	};

	if (ret >= 0)
		return ACL_SUCCESS;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].native == ret)
			return table[i].acl;
	return ACL_ERROR_FAILURE;
}

aclnnStatus adump_aclnn_status_from(int ret)
{
	if (ret >= 0)
		return ACLNN_SUCCESS;
	if (ret == -EINVAL || ret == -ADUMP_ERR_UNSUPPORTED || ret == -ADUMP_ERR_NOT_FOUND)
		return ACLNN_ERR_PARAM_INVALID;
	return ACLNN_ERR_RUNTIME_ERROR;
}

int32_t adump_acl_dtype_to_native(int32_t acl_dtype)
{
	switch (acl_dtype) {
	case ACL_FLOAT: return ADUMP_DT_FLOAT;
	case ACL_FLOAT16: return ADUMP_DT_FLOAT16;
	case ACL_INT8: return ADUMP_DT_INT8;
	case ACL_INT32: return ADUMP_DT_INT32;
	case ACL_UINT8: return ADUMP_DT_UINT8;
	case ACL_INT16: return ADUMP_DT_INT16;
	case ACL_UINT16: return ADUMP_DT_UINT16;
	case ACL_UINT32: return ADUMP_DT_UINT32;
	case ACL_INT64: return ADUMP_DT_INT64;
	case ACL_UINT64: return ADUMP_DT_UINT64;
	case ACL_DOUBLE: return ADUMP_DT_DOUBLE;
	case ACL_BOOL: return ADUMP_DT_BOOL;
	case ACL_STRING: return ADUMP_DT_STRING;
	case ACL_COMPLEX64: return ADUMP_DT_COMPLEX64;
	case ACL_COMPLEX128: return ADUMP_DT_COMPLEX128;
	case ACL_BF16: return ADUMP_DT_BF16;
	case ACL_INT4: return ADUMP_DT_INT4;
	case ACL_UINT1: return ADUMP_DT_UINT1;
	case ACL_COMPLEX32: return ADUMP_DT_COMPLEX32;
	case ACL_HIFLOAT8: return ADUMP_DT_HIFLOAT8;
	case ACL_FLOAT8_E5M2: return ADUMP_DT_FLOAT8_E5M2;
	case ACL_FLOAT8_E4M3FN: return ADUMP_DT_FLOAT8_E4M3FN;
	case ACL_FLOAT8_E8M0: return ADUMP_DT_FLOAT8_E8M0;
	case ACL_FLOAT6_E3M2: return ADUMP_DT_FLOAT6_E3M2;
	case ACL_FLOAT6_E2M3: return ADUMP_DT_FLOAT6_E2M3;
	case ACL_FLOAT4_E2M1: return ADUMP_DT_FLOAT4_E2M1;
	case ACL_FLOAT4_E1M2: return ADUMP_DT_FLOAT4_E1M2;
	default: return ADUMP_DT_UNDEFINED;
	}
}

int32_t adump_acl_format_to_native(int32_t acl_format)
{
	if (acl_format < 0)
		return ADUMP_FORMAT_RESERVED;
	/* GE packs sub-format and C0 format above bit 8; the header's format is the primary. */
	return acl_format & 0xff;
}

void adump_acl_dtype_json_name(int32_t acl_dtype, char *buf, size_t cap)
{
	int32_t native = adump_acl_dtype_to_native(acl_dtype);
	const char *n = adump_dtype_name(native);
	size_t i = 0;

	if (!n || native == ADUMP_DT_UNDEFINED)
		n = "undefined";
	if (!strncmp(n, "DT_", 3))
		n += 3;
	for (; n[i] && i + 1 < cap; i++)
		buf[i] = (char)tolower((unsigned char)n[i]);
	if (cap)
		buf[i] = '\0';
}
