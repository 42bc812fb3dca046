/* SPDX-License-Identifier: Apache-2.0 */
/* What export/'s files share: the export's context (one rank directory at a time), its error
 * message, and the functions each file gives the others. export.c lists a rank directory's
 * dumps and writes its json files; export_entry.c makes one dump's dump.json entry and .pt
 * files; export_construct.c makes construct.json. */
#ifndef ADUMP_EXPORT_INT_H
#define ADUMP_EXPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <json-c/json.h>

#include "common/common.h"
#include "reader/reader.h"

struct ex_ctx {
	unsigned flags;
	char *msg;
	size_t cap;
	struct adump_reader *r;
	const char *data_dir;           /* absolute dump_tensor_data, NULL: no .pt files */
	int data_fd;                    /* dump_tensor_data's, opened without following a link */
	unsigned char *buf;             /* one tensor's bytes */
	size_t buf_cap;
	bool op_level;
};

/* @fmt into the context's message; returns @ret. */
ADUMP_HIDDEN int ex_fail(struct ex_ctx *c, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && strcmp(s + n - m, suf) == 0;
}

/* export_entry.c: dump (or statistics .csv) @path as its entry of @data, its tensors' .pt
 * files into c->data_fd; @construct (or NULL) gains an op's module call; @is_module: a module
 * call's entry. Return: 0 or a negative code, the context's message saying why. */
ADUMP_HIDDEN int ex_export_dump(struct ex_ctx *c, const char *path, struct json_object *data,
				struct json_object *construct, bool *is_module);
ADUMP_HIDDEN int ex_export_csv(struct ex_ctx *c, const char *path, struct json_object *data,
			       struct json_object *construct, bool *is_module);

/* export_construct.c: construct.json inferred from @data's names, and the capture's own with
 * msprobe's parameters_grad names (takes @in; NULL if it is not an object). */
ADUMP_HIDDEN void ex_construct_infer(struct json_object *data, struct json_object *construct);
ADUMP_HIDDEN struct json_object *ex_construct_fix(struct json_object *in);

#endif
