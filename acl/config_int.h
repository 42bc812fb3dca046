/* SPDX-License-Identifier: Apache-2.0 */
/* What acl/config.c (the document, the dump section's keys) and acl/config_select.c (the
 * selection keys and the answer to "is this op dumped") share: the rejection every bad key
 * gets, and the parsers one calls in the other. */
#ifndef ADUMP_ACL_CONFIG_INT_H
#define ADUMP_ACL_CONFIG_INT_H

#include <stdio.h>

#include <json-c/json.h>

#include "acl/acl_int.h"

#define MOD "acl"

/* Every rejection logs "acl.json: <key>: <why>" and returns -ADUMP_ERR_CONFIG. */
#define REJECT(key, ...)                                                         \
	do {                                                                     \
		char why_[256];                                                  \
		snprintf(why_, sizeof(why_), __VA_ARGS__);                       \
		adump_log(ADUMP_LOG_ERROR, MOD, "%s: dump.%s: %s", origin, key, why_); \
		return -ADUMP_ERR_CONFIG;                                        \
	} while (0)

/* @arr as a non-empty array of non-empty strings, copied into *@out (*@count of them). */
ADUMP_HIDDEN int adump_acl_string_array(struct json_object *arr, const char *key,
					const char *origin, char ***out, size_t *count);

/* config_select.c: an optype_blacklist / opname_blacklist array; one dump_list item; the
 * dump_step string ("0|3-5|7"). Each rejects with REJECT's message or returns -ENOMEM. */
ADUMP_HIDDEN int adump_acl_parse_blacklist(struct json_object *arr, const char *key,
					   const char *origin, struct adump_acl_blacklist **out,
					   size_t *count);
ADUMP_HIDDEN int adump_acl_parse_list_entry(struct json_object *item, size_t idx,
					    const struct adump_acl_cfg *cfg, const char *origin,
					    struct adump_acl_list_entry *e);
ADUMP_HIDDEN int adump_acl_parse_steps(const char *s, const char *origin,
				       struct adump_acl_cfg *cfg);

#endif
