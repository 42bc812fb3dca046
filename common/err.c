/* SPDX-License-Identifier: Apache-2.0 */
/* adump_strerror(): one function for both error ranges, strings from the X-macro list. */
#include <string.h>

#include "adump/adump_err.h"

const char *adump_strerror(int ret)
{
	int code = ret < 0 ? -ret : ret;

	switch (code) {
#define ADUMP_ERR_CASE(name, val, str) \
	case val:                      \
		return str;
		ADUMP_ERR_LIST(ADUMP_ERR_CASE)
#undef ADUMP_ERR_CASE
	default:
		break;
	}
	if (code == 0)
		return "success";
	if (code < 4096)
		return strerror(code);
	return "unknown error";
}
