/* SPDX-License-Identifier: Apache-2.0 */
/* msprobe's PyTorch layout read as dumps (reader/msprobe.h): dump.json parsed with json-c, one
 * dump per data entry, its tensors' descriptions and .pt names. The tensors' bytes are
 * located in their .pt files only when an entry is opened (msprobe_open.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reader/msprobe.h"
#include "reader/reader.h"

/* dump.json larger than this is refused before it is read (a 2-layer model's op-level
 * dump.json is a few MB). */
#define MSPROBE_JSON_MAX ((off_t)2 << 30)

bool adump_msprobe_is_dir(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/dump.json", dir) >= (int)sizeof(path))
		return false;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static const struct {
	const char *name;
	int32_t dtype;
} torch_dtypes[] = {
	{ "torch.float32", ADUMP_DT_FLOAT },   { "torch.float16", ADUMP_DT_FLOAT16 },
	{ "torch.bfloat16", ADUMP_DT_BF16 },   { "torch.float64", ADUMP_DT_DOUBLE },
	{ "torch.int8", ADUMP_DT_INT8 },       { "torch.uint8", ADUMP_DT_UINT8 },
	{ "torch.int16", ADUMP_DT_INT16 },     { "torch.int32", ADUMP_DT_INT32 },
	{ "torch.int64", ADUMP_DT_INT64 },     { "torch.bool", ADUMP_DT_BOOL },
	{ "torch.complex64", ADUMP_DT_COMPLEX64 }, { "torch.complex128", ADUMP_DT_COMPLEX128 },
	{ "torch.float", ADUMP_DT_FLOAT },     { "torch.half", ADUMP_DT_FLOAT16 },
	{ "torch.double", ADUMP_DT_DOUBLE },   { "torch.long", ADUMP_DT_INT64 },
	{ "torch.int", ADUMP_DT_INT32 },
};

static int32_t dtype_of(const char *name)
{
	for (size_t i = 0; name && i < sizeof(torch_dtypes) / sizeof(torch_dtypes[0]); i++)
		if (!strcmp(torch_dtypes[i].name, name))
			return torch_dtypes[i].dtype;
	return -1;
}

struct loader {
	struct adump_msprobe *m;
	uint32_t tensor_cap;
	char *args;                     /* argument labels, NUL-separated, grown as needed */
	size_t args_len, args_cap;
	int ret;
};

static bool is_tensor(struct json_object *v)
{
	struct json_object *type;

	return json_object_is_type(v, json_type_object) &&
	       json_object_object_get_ex(v, "type", &type) &&
	       json_object_is_type(type, json_type_string) &&
	       !strcmp(json_object_get_string(type), "torch.Tensor");
}

static const char *field_str(struct json_object *v, const char *key)
{
	struct json_object *f;

	if (!json_object_object_get_ex(v, key, &f) || !json_object_is_type(f, json_type_string))
		return NULL;
	return json_object_get_string(f);
}

/* Labels live in one buffer that may move: tensors keep offsets until the load ends. */
static size_t label_add(struct loader *l, const char *label)
{
	size_t n = strlen(label) + 1, at = l->args_len;

	if (l->args_len + n > l->args_cap) {
		size_t cap = l->args_cap ? l->args_cap : 4096;
		char *p;

		while (cap < l->args_len + n)
			cap *= 2;
		p = realloc(l->args, cap);
		if (!p) {
			l->ret = -ENOMEM;
			return 0;
		}
		l->args = p;
		l->args_cap = cap;
	}
	memcpy(l->args + at, label, n);
	l->args_len += n;
	return at;
}

static void tensor_add(struct loader *l, struct json_object *v, enum adump_tensor_kind kind,
		       const char *label)
{
	struct adump_msprobe *m = l->m;
	struct adump_msprobe_tensor *t;
	struct adump_msprobe_entry *e = &m->entries[m->entry_count];
	struct json_object *shape, *f;
	static const char *const stat_keys[ADUMP_MSPROBE_STAT_COUNT] = { "Max", "Min", "Mean",
									 "Norm" };

	if (l->ret < 0)
		return;
	if (m->tensor_count == l->tensor_cap) {
		uint32_t cap = l->tensor_cap ? 2 * l->tensor_cap : 256;
		struct adump_msprobe_tensor *p = realloc(m->tensors, cap * sizeof(*p));

		if (!p) {
			l->ret = -ENOMEM;
			return;
		}
		m->tensors = p;
		l->tensor_cap = cap;
	}
	t = &m->tensors[m->tensor_count];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->index = e->kind_count[kind == ADUMP_TENSOR_OUTPUT];
	t->arg = (const char *)(uintptr_t)label_add(l, label);
	if (l->ret < 0)
		return;
	t->dtype_text = field_str(v, "dtype");
	t->dtype = dtype_of(t->dtype_text);
	if (json_object_object_get_ex(v, "shape", &shape) &&
	    json_object_is_type(shape, json_type_array)) {
		size_t n = json_object_array_length(shape);

		for (size_t i = 0; i < n && i < ADUMP_MAX_DIMS; i++) {
			int64_t d = json_object_get_int64(json_object_array_get_idx(shape, i));

			t->dims[i] = d > 0 ? (uint64_t)d : 0;
		}
		t->dim_count = n < ADUMP_MAX_DIMS ? (uint32_t)n : ADUMP_MAX_DIMS;
	}
	t->requires_grad = -1;
	if (json_object_object_get_ex(v, "requires_grad", &f) &&
	    json_object_is_type(f, json_type_boolean))
		t->requires_grad = json_object_get_boolean(f);
	for (int i = 0; i < ADUMP_MSPROBE_STAT_COUNT; i++) {
		if (!json_object_object_get_ex(v, stat_keys[i], &f) ||
		    !(json_object_is_type(f, json_type_double) || json_object_is_type(f, json_type_int) ||
		      json_object_is_type(f, json_type_string)))
			continue;
		t->stat_text[i] = json_object_get_string(f);
		t->stat[i] = json_object_is_type(f, json_type_string) ? strtod(t->stat_text[i], NULL)
								       : json_object_get_double(f);
	}
	t->md5 = field_str(v, "md5");
	t->data_name = field_str(v, "data_name");
	m->tensor_count++;
	e->count++;
	e->kind_count[kind == ADUMP_TENSOR_OUTPUT]++;
}

/* Tensors of a value, nested lists and tuples flattened depth first (msprobe's data_name
 * counts the same way: input.0.1); non-tensors and null are not dumps. */
static void value_add(struct loader *l, struct json_object *v, enum adump_tensor_kind kind,
		      const char *label, int depth)
{
	char sub[512];

	if (!v || depth > 32)
		return;
	if (json_object_is_type(v, json_type_array)) {
		size_t n = json_object_array_length(v);

		for (size_t i = 0; i < n; i++) {
			snprintf(sub, sizeof(sub), "%s.%zu", label, i);
			value_add(l, json_object_array_get_idx(v, i), kind, sub, depth + 1);
		}
		return;
	}
	if (is_tensor(v))
		tensor_add(l, v, kind, label);
}

static void list_add(struct loader *l, struct json_object *entry, const char *key,
		     enum adump_tensor_kind kind, const char *prefix)
{
	struct json_object *v;
	char sub[512];

	if (!json_object_object_get_ex(entry, key, &v))
		return;
	if (json_object_is_type(v, json_type_array)) {
		size_t n = json_object_array_length(v);

		for (size_t i = 0; i < n; i++) {
			snprintf(sub, sizeof(sub), "%s.%zu", prefix, i);
			value_add(l, json_object_array_get_idx(v, i), kind, sub, 1);
		}
	} else if (json_object_is_type(v, json_type_object) && !is_tensor(v)) {
		json_object_object_foreach(v, name, item) {
			snprintf(sub, sizeof(sub), "%s.%s", prefix, name);
			value_add(l, item, kind, sub, 1);
		}
	} else {
		value_add(l, v, kind, prefix, 1);
	}
}

/* The parameter names of @module_prefix's forward entry, in its order (registration order;
 * msprobe and adump.torch write parameters_grad in the order the gradients arrived, which
 * two runs on different devices need not share). NULL when the module has no forward entry
 * here. */
static struct json_object *params_of(struct json_object *data, const char *grad_name)
{
	const char *p = strstr(grad_name, ".parameters_grad");
	size_t n = p ? (size_t)(p - grad_name) : 0;

	if (!p)
		return NULL;
	json_object_object_foreach(data, name, entry) {
		struct json_object *params;

		if (strncmp(name, grad_name, n) || strncmp(name + n, ".forward.", 9) ||
		    !json_object_object_get_ex(entry, "parameters", &params) ||
		    !json_object_is_type(params, json_type_object))
			continue;
		return params;
	}
	return NULL;
}

static void grads_add(struct loader *l, struct json_object *data, const char *name,
		      struct json_object *entry)
{
	struct json_object *order = params_of(data, name), *v;
	char sub[512];

	if (order) {
		json_object_object_foreach(order, pname, unused) {
			(void)unused;
			if (json_object_object_get_ex(entry, pname, &v)) {
				snprintf(sub, sizeof(sub), "parameters_grad.%s", pname);
				value_add(l, v, ADUMP_TENSOR_OUTPUT, sub, 1);
			}
		}
	}
	json_object_object_foreach(entry, gname, item) {
		if (order && json_object_object_get_ex(order, gname, NULL))
			continue;
		snprintf(sub, sizeof(sub), "parameters_grad.%s", gname);
		value_add(l, item, ADUMP_TENSOR_OUTPUT, sub, 1);
	}
}

static void entry_add(struct loader *l, struct json_object *data, const char *name,
		      struct json_object *entry)
{
	struct adump_msprobe *m = l->m;
	struct adump_msprobe_entry *e = &m->entries[m->entry_count];

	memset(e, 0, sizeof(*e));
	e->name = name;
	e->first = m->tensor_count;
	e->order = m->entry_count;
	if (strstr(name, ".parameters_grad")) {
		grads_add(l, data, name, entry);
	} else if (json_object_object_get_ex(entry, "input_args", NULL) ||
		   json_object_object_get_ex(entry, "input_kwargs", NULL) ||
		   json_object_object_get_ex(entry, "parameters", NULL)) {
		list_add(l, entry, "input_args", ADUMP_TENSOR_INPUT, "input");
		list_add(l, entry, "input_kwargs", ADUMP_TENSOR_INPUT, "input.kwargs");
		list_add(l, entry, "parameters", ADUMP_TENSOR_INPUT, "parameters");
		list_add(l, entry, "output", ADUMP_TENSOR_OUTPUT, "output");
	} else {
		list_add(l, entry, "input", ADUMP_TENSOR_INPUT, "input");
		list_add(l, entry, "output", ADUMP_TENSOR_OUTPUT, "output");
	}
	m->entry_count++;
}

void adump_msprobe_free(struct adump_msprobe *m)
{
	if (!m)
		return;
	if (m->tensors && m->tensor_count)
		free((char *)m->tensors[0].arg);
	free(m->tensors);
	free(m->entries);
	free(m->dir);
	free(m->json_path);
	free(m->data_dir);
	json_object_put(m->json);
	free(m);
}

static char *read_text(const char *path, int *ret)
{
	struct stat st;
	char *text;
	int fd = adump_open_regular(path);

	if (fd < 0) {
		*ret = fd;
		return NULL;
	}
	if (fstat(fd, &st) < 0 || st.st_size > MSPROBE_JSON_MAX) {
		*ret = -EFBIG;
		close(fd);
		return NULL;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		*ret = -ENOMEM;
		close(fd);
		return NULL;
	}
	for (size_t done = 0; done < (size_t)st.st_size;) {
		ssize_t n = read(fd, text + done, (size_t)st.st_size - done);

		if (n <= 0) {
			*ret = n < 0 ? -errno : -ADUMP_ERR_INCOMPLETE;
			free(text);
			close(fd);
			return NULL;
		}
		done += (size_t)n;
	}
	text[st.st_size] = '\0';
	close(fd);
	*ret = 0;
	return text;
}

int adump_msprobe_load(const char *path, struct adump_msprobe **out, char *msg, size_t cap)
{
	struct adump_msprobe *m = calloc(1, sizeof(*m));
	struct loader l = { .m = m };
	struct json_object *data, *f;
	struct json_tokener *tok = NULL;
	struct stat st;
	size_t len = strlen(path);
	char *text = NULL;
	int ret = 0;

	if (!m)
		return -ENOMEM;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		m->dir = strdup(path);
		if (asprintf(&m->json_path, "%s/dump.json", path) < 0)
			m->json_path = NULL;
	} else {
		const char *slash = strrchr(path, '/');

		m->json_path = strdup(path);
		m->dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	}
	(void)len;
	if (!m->dir || !m->json_path || asprintf(&m->data_dir, "%s/dump_tensor_data", m->dir) < 0) {
		m->data_dir = NULL;
		ret = -ENOMEM;
		goto out;
	}
	text = read_text(m->json_path, &ret);
	if (!text) {
		snprintf(msg, cap, "%s: %s", m->json_path, adump_open_strerror(ret));
		goto out;
	}
	tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	if (!tok) {
		ret = -ENOMEM;
		goto out;
	}
	m->json = json_tokener_parse_ex(tok, text, (int)strlen(text));
	if (!m->json || json_tokener_get_error(tok) != json_tokener_success) {
		enum json_tokener_error err = json_tokener_get_error(tok);

		snprintf(msg, cap, "%s: not JSON (%s at byte %zu): a cut or damaged dump.json",
			 m->json_path, err == json_tokener_continue ? "it ends inside a value"
			 : json_tokener_error_desc(err), json_tokener_get_parse_end(tok));
		ret = -ADUMP_ERR_CORRUPT;
		goto out;
	}
	if (!json_object_is_type(m->json, json_type_object) ||
	    !json_object_object_get_ex(m->json, "data", &data) ||
	    !json_object_is_type(data, json_type_object)) {
		snprintf(msg, cap, "%s: no \"data\" object: not msprobe's dump.json", m->json_path);
		ret = -ADUMP_ERR_CORRUPT;
		goto out;
	}
	if (json_object_object_get_ex(m->json, "task", &f))
		snprintf(m->task, sizeof(m->task), "%s", json_object_get_string(f));
	if (json_object_object_get_ex(m->json, "level", &f))
		snprintf(m->level, sizeof(m->level), "%s", json_object_get_string(f));
	m->entries = calloc((size_t)json_object_object_length(data) + 1, sizeof(*m->entries));
	if (!m->entries) {
		ret = -ENOMEM;
		goto out;
	}
	json_object_object_foreach(data, name, entry) {
		if (json_object_is_type(entry, json_type_object))
			entry_add(&l, data, name, entry);
	}
	ret = l.ret;
	if (ret == 0 && m->tensor_count) {
		/* Labels are offsets into l.args until here; the first tensor owns the buffer. */
		for (uint32_t i = 0; i < m->tensor_count; i++)
			m->tensors[i].arg = l.args + (uintptr_t)m->tensors[i].arg;
		l.args = NULL;
	}
out:
	free(l.args);
	free(text);
	if (tok)
		json_tokener_free(tok);
	if (ret < 0) {
		if (ret == -ENOMEM && msg && cap)
			snprintf(msg, cap, "%s: out of memory", path);
		m->tensor_count = 0;    /* labels are still offsets: nothing to free there */
		adump_msprobe_free(m);
		return ret;
	}
	*out = m;
	return 0;
}

void adump_msprobe_pt_path(const struct adump_msprobe *m, const struct adump_msprobe_tensor *t,
			   char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", m->data_dir, t->data_name ? t->data_name : "");
}

void adump_msprobe_pt_rel(const struct adump_msprobe_tensor *t, char *buf, size_t cap)
{
	snprintf(buf, cap, "dump_tensor_data/%s", t->data_name ? t->data_name : "");
}
