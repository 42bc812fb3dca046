/* SPDX-License-Identifier: Apache-2.0 */
/* The loss log of a capture (<dir>/adump-losses.jsonl): one JSON object per lost tensor,
 * parsed with json-c, line by line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "adump/reader.h"

struct adump_reader_losses {
	FILE *f;
	char *buf;
	size_t cap;
	json_object *obj;                       /* the current line's, until the next call */
	struct adump_reader_loss entry;
};

int adump_reader_losses_open(const char *path, struct adump_reader_losses **out)
{
	struct adump_reader_losses *l;
	struct stat st;
	char *log = NULL;
	FILE *f;

	if (!path || !out)
		return -EINVAL;
	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode)) {
		if (asprintf(&log, "%s/%s", path, ADUMP_LOSS_LOG_NAME) < 0)
			return -ENOMEM;
		path = log;
	}
	f = fopen(path, "re");
	free(log);
	if (!f)
		return -errno;
	l = calloc(1, sizeof(*l));
	if (!l) {
		fclose(f);
		return -ENOMEM;
	}
	l->f = f;
	*out = l;
	return 0;
}

static const char *str_of(json_object *o, const char *key, bool *is_ok)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string)) {
		*is_ok = false;
		return "";
	}
	return json_object_get_string(v);
}

static int64_t int_of(json_object *o, const char *key, bool *is_ok)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int)) {
		*is_ok = false;
		return 0;
	}
	return json_object_get_int64(v);
}

int adump_reader_losses_next(struct adump_reader_losses *l, const struct adump_reader_loss **out)
{
	struct adump_reader_loss *e = &l->entry;
	unsigned line = e->line + 1;
	bool is_ok = true;
	ssize_t len;

	json_object_put(l->obj);
	l->obj = NULL;
	errno = 0;
	len = getline(&l->buf, &l->cap, l->f);
	if (len < 0)
		return errno ? -errno : 0;
	memset(e, 0, sizeof(*e));
	e->line = line;
	e->cause = -1;
	e->index = -1;
	*out = e;
	if (l->buf[len - 1] != '\n') {
		e->message = "cut-short last line (no newline)";
		return 1;
	}
	l->obj = json_tokener_parse(l->buf);
	if (!l->obj || !json_object_is_type(l->obj, json_type_object)) {
		e->message = "not a JSON object";
		return 1;
	}
	e->file = str_of(l->obj, "file", &is_ok);
	e->stream_id = (uint32_t)int_of(l->obj, "stream", &is_ok);
	e->op_type = str_of(l->obj, "op_type", &is_ok);
	e->op_name = str_of(l->obj, "op_name", &is_ok);
	e->kind = str_of(l->obj, "kind", &is_ok);
	e->index = int_of(l->obj, "index", &is_ok);
	e->bytes = (uint64_t)int_of(l->obj, "bytes", &is_ok);
	e->cause_name = str_of(l->obj, "cause", &is_ok);
	e->cause = adump_loss_cause_parse(e->cause_name);
	e->time = str_of(l->obj, "time", &is_ok);
	if (!is_ok)
		e->message = "a field is missing or of the wrong type";
	else if (e->cause < 0)
		e->message = "unknown cause";
	else
		e->is_valid = true;
	if (!e->message)
		e->message = "";
	return 1;
}

void adump_reader_losses_close(struct adump_reader_losses *l)
{
	if (!l)
		return;
	json_object_put(l->obj);
	if (l->f)
		fclose(l->f);
	free(l->buf);
	free(l);
}
