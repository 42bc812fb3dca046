/* SPDX-License-Identifier: Apache-2.0 */
/* An adump.torch capture in msprobe's PyTorch layout. Per rank directory:
 *     dump.json         {"task", "level", "framework", "dump_data_dir", "data": {entry: ...}}
 *     stack.json        the capture's, else {}
 *     construct.json    the capture's (adump.torch writes it per step), else from each dump's
 *                       `module` attribute
 *     dump_tensor_data/<entry>.<input|kwargs|output|parameters>.<key path>.pt
 * The dfx_message adump.torch writes into each header describes the call in msprobe's terms
 * (_torch_info.py): its tensor items name the dump's tensor they refer to ("input.2"), which
 * this file replaces by msprobe's tensor description (statistics from the bytes, data_name).
 * A dump without one (a backward call) lists its inputs and outputs in order. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "adump/export.h"
#include "common/common.h"
#include "compare/compare.h"
#include "reader/reader.h"

struct ex_file {
	char *path;
	uint64_t timestamp;
	uint64_t task_id;
	bool is_csv;
};

struct ex_files {
	struct ex_file *v;
	size_t n, cap;
};

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

static int ex_fail(struct ex_ctx *c, int ret, const char *fmt, ...)
{
	va_list ap;

	if (c->msg && c->cap) {
		va_start(ap, fmt);
		vsnprintf(c->msg, c->cap, fmt, ap);
		va_end(ap);
	}
	return ret;
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && strcmp(s + n - m, suf) == 0;
}

static int files_add(struct ex_files *f, const char *path, const struct adump_reader_name *nm,
		     bool is_csv)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		struct ex_file *v = realloc(f->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n].path = strdup(path);
	if (!f->v[f->n].path)
		return -ENOMEM;
	f->v[f->n].timestamp = nm->timestamp;
	f->v[f->n].task_id = nm->task_id;
	f->v[f->n].is_csv = is_csv;
	f->n++;
	return 0;
}

static void files_free(struct ex_files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].path);
	free(f->v);
}

/* Every dump file (and statistics .csv) under @dir, any depth. */
static int collect(const char *dir, struct ex_files *f, int depth)
{
	struct dirent *e;
	DIR *d;
	int ret = 0;

	if (depth > 16)
		return 0;
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char path[PATH_MAX], name[NAME_MAX + 1];
		struct adump_reader_name nm;
		struct stat st;
		bool csv;

		if (e->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (stat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (strcmp(e->d_name, "dump_tensor_data") == 0)
				continue;
			ret = collect(path, f, depth + 1);
			if (ret < 0)
				break;
			continue;
		}
		if (!S_ISREG(st.st_mode) || has_suffix(e->d_name, ".json"))
			continue;
		csv = has_suffix(e->d_name, ".csv");
		snprintf(name, sizeof(name), "%s", e->d_name);
		if (csv)
			name[strlen(name) - 4] = '\0';
		if (adump_reader_name_parse(name, &nm) < 0)
			continue;
		ret = files_add(f, path, &nm, csv);
		if (ret < 0)
			break;
	}
	closedir(d);
	return ret;
}

static int file_cmp(const void *a, const void *b)
{
	const struct ex_file *x = a, *y = b;

	if (x->timestamp != y->timestamp)
		return x->timestamp < y->timestamp ? -1 : 1;
	if (x->task_id != y->task_id)
		return x->task_id < y->task_id ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* ---- one tensor ------------------------------------------------------------------------- */

static bool dtype_is_float(int32_t dt)
{
	return dt == ADUMP_DT_FLOAT || dt == ADUMP_DT_DOUBLE || dt == ADUMP_DT_FLOAT16 ||
	       dt == ADUMP_DT_BF16;
}

static bool dt_has_stats(int32_t dt)
{
	return dt != ADUMP_DT_COMPLEX64 && dt != ADUMP_DT_COMPLEX128;
}

/* A floating statistic as msprobe records it: torch computes it in the tensor's dtype and
 * Python prints that value (NaN and the infinities as Python's json does). */
static struct json_object *stat_float(double v, int32_t dt)
{
	char s[64];

	v = adump_torch_round(v, dt);
	adump_py_float(v, s, sizeof(s));
	return json_object_new_double_s(v, s);
}

static struct json_object *stat_value(double v, int32_t dt)
{
	if (dt == ADUMP_DT_BOOL)
		return json_object_new_boolean(v != 0);
	if (!dtype_is_float(dt))
		return json_object_new_int64((int64_t)v);
	return stat_float(v, dt);
}

/* msprobe's description of tensor @ti of the open dump; its bytes go to @data_name. */
static int tensor_json(struct ex_ctx *c, uint32_t ti, const char *data_name, bool requires_grad,
		       struct json_object **out)
{
	const struct adump_reader_tensor *t = &adump_reader_header(c->r)->tensors[ti];
	const char *dtn = adump_pt_dtype_name(t->info.dtype);
	struct json_object *o = json_object_new_object(), *shape = json_object_new_array();
	uint64_t bytes = t->info.bytes;
	unsigned bits = adump_dtype_bits(t->info.dtype);
	int ret;

	if (!o || !shape) {
		json_object_put(o);
		json_object_put(shape);
		return -ENOMEM;
	}
	json_object_object_add(o, "type", json_object_new_string("torch.Tensor"));
	json_object_object_add(o, "dtype", json_object_new_string(dtn ? dtn : "unknown"));
	for (uint32_t i = 0; i < t->info.dim_count; i++)
		json_object_array_add(shape, json_object_new_int64((int64_t)t->info.dims[i]));
	json_object_object_add(o, "shape", shape);
	*out = o;
	if (bytes > SIZE_MAX / 2)
		return ex_fail(c, -EFBIG, "%s: tensor %u too large", adump_reader_name(c->r), ti);
	if (bytes > c->buf_cap) {
		unsigned char *b = realloc(c->buf, bytes);

		if (!b)
			return -ENOMEM;
		c->buf = b;
		c->buf_cap = bytes;
	}
	if (bytes) {
		ret = adump_reader_read(c->r, ti, 0, c->buf, bytes);
		if (ret < 0)
			return ex_fail(c, ret, "%s", adump_reader_error(c->r));
	}
	if (dtn && bits && dt_has_stats(t->info.dtype)) {
		struct adump_tstats st;

		adump_tstats_init(&st, t->info.dtype);
		adump_tstats_add(&st, c->buf, bytes / (bits / 8));
		adump_msentry_stats(o, &st, t->info.dtype, t->info.dim_count);
	} else {
		adump_msentry_stats(o, NULL, t->info.dtype, t->info.dim_count);
	}
	json_object_object_add(o, "requires_grad", json_object_new_boolean(requires_grad));
	if (c->flags & ADUMP_EXPORT_MD5) {
		char hex[16];

		snprintf(hex, sizeof(hex), "%08x",
			 (unsigned)adump_crc32(0, c->buf, bytes));
		json_object_object_add(o, "md5", json_object_new_string(hex));
	}
	if (c->data_dir && dtn) {
		char file[NAME_MAX + 1], archive[ADUMP_PT_ARCHIVE_MAX + 1];

		/* The name comes from the op's name: one component of dump_tensor_data, as the
		 * capture's own file names are ("scope/op" exports, "../x" stays inside). */
		if (snprintf(file, sizeof(file), "%s", data_name) >= (int)sizeof(file))
			return ex_fail(c, -ENAMETOOLONG, "%s: name too long", data_name);
		adump_name_component(file);
		if (adump_pt_archive_name(file, archive, sizeof(archive)) < 0)
			return ex_fail(c, -EINVAL, "%s: no archive name", file);
		ret = adump_pt_write_at(c->data_fd, file, archive, t->info.dtype, t->info.dims,
					t->info.dim_count, c->buf, bytes, c->msg, c->cap);
		if (ret < 0)
			return ret;
		json_object_object_add(o, "data_name", json_object_new_string(file));
	}
	return 0;
}

/* ---- one dump --------------------------------------------------------------------------- */

static enum adump_tensor_kind tensor_kind(void *ctx, uint32_t i)
{
	struct ex_ctx *c = ctx;

	return adump_reader_header(c->r)->tensors[i].info.kind;
}

static int leaf_cb(void *ctx, uint32_t ti, const char *data_name, bool requires_grad,
		   struct json_object **out)
{
	return tensor_json(ctx, ti, data_name, requires_grad, out);
}

/* dfx_message names a tensor the dump does not hold: the header and it disagree. */
static int missing_cb(void *ctx, const char *ref)
{
	struct ex_ctx *c = ctx;

	return ex_fail(c, -ADUMP_ERR_CORRUPT, "%s: dfx_message names tensor %s, "
		       "which the dump does not hold", adump_reader_name(c->r), ref);
}

static int export_dump(struct ex_ctx *c, const char *path, struct json_object *data,
		       struct json_object *construct, bool *is_module)
{
	const struct adump_reader_header *h;
	struct json_object *entry = NULL, *dfx = NULL;
	struct adump_msentry_src src = {
		.ctx = c, .kind = tensor_kind, .leaf = leaf_cb, .missing = missing_cb,
	};
	const char *name;
	char fixed[768];
	int ret;

	ret = adump_reader_open(c->r, path);
	if (ret < 0)
		return ex_fail(c, ret, "%s", adump_reader_error(c->r));
	h = adump_reader_header(c->r);
	src.tensor_count = h->tensor_count;
	name = h->op_name;
	if (has_suffix(name, ".parameters_grad")) {
		/* msprobe counts every parameters_grad call: <...>.parameters_grad.0 */
		snprintf(fixed, sizeof(fixed), "%s.0", name);
		name = fixed;
	}
	*is_module = strncmp(name, "Module.", 7) == 0;
	entry = json_object_new_object();
	if (!entry) {
		ret = -ENOMEM;
		goto out;
	}
	if (adump_msentry_parse(h->dfx_message, &dfx) < 0) {
		ret = ex_fail(c, -ADUMP_ERR_CORRUPT, "%s: dfx_message is not a JSON object", path);
		goto out;
	}
	ret = adump_msentry_build(&src, name, dfx, entry);
	if (ret < 0)
		goto out;
	/* an op's module call, when the capture left no construct.json */
	if (construct) {
		const char *mod = NULL;

		for (uint32_t i = 0; i < h->attr_count; i++)
			if (strcmp(h->attrs[i].name, "module") == 0)
				mod = h->attrs[i].value;
		json_object_object_add(construct, name, mod ? json_object_new_string(mod) : NULL);
	}
	json_object_object_add(data, name, entry);
	entry = NULL;
out:
	json_object_put(entry);
	json_object_put(dfx);
	adump_reader_close(c->r);
	return ret;
}

/* A statistics dump (.csv): its tensors in order, without .pt files or argument places. */
static int export_csv(struct ex_ctx *c, const char *path, struct json_object *data,
		      struct json_object *construct, bool *is_module)
{
	struct adump_compare_stats st = { 0 };
	struct adump_reader_name nm;
	char fname[NAME_MAX + 1];
	const char *base;
	struct json_object *entry = NULL, *ins = NULL, *outs = NULL;
	const char *name;
	int ret;

	ret = adump_compare_stats_load(path, &st, c->msg, c->cap);
	if (ret < 0)
		goto out;
	/* The file name holds the dump name with '.' made '_'; the capture's construct.json
	 * holds the real one. */
	base = strrchr(path, '/');
	snprintf(fname, sizeof(fname), "%s", base ? base + 1 : path);
	if (has_suffix(fname, ".csv"))
		fname[strlen(fname) - 4] = '\0';
	if (adump_reader_name_parse(fname, &nm) < 0) {
		ret = ex_fail(c, -ADUMP_ERR_CORRUPT, "%s: not a dump file name", path);
		goto out;
	}
	name = nm.op_name;
	if (construct) {
		json_object_object_foreach(construct, k, v) {
			char m[sizeof(nm.op_name)];
			size_t i;

			(void)v;
			for (i = 0; k[i] && i + 1 < sizeof(m); i++)
				m[i] = (isalnum((unsigned char)k[i]) || k[i] == '-') ? k[i] : '_';
			m[i] = '\0';
			if (strcmp(m, nm.op_name) == 0 ||
			    (has_suffix(k, ".parameters_grad.0") && i >= 2 &&
			     strncmp(m, nm.op_name, i - 2) == 0 && nm.op_name[i - 2] == '\0')) {
				name = k;
				break;
			}
		}
	}
	*is_module = strncmp(name, "Module.", 7) == 0;
	entry = json_object_new_object();
	ins = json_object_new_array();
	outs = json_object_new_array();
	if (!entry || !ins || !outs) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < st.count; i++) {
		const struct adump_compare_stats_tensor *t = &st.tensors[i];
		const char *dtn = adump_pt_dtype_name(t->t.info.dtype);
		static const char *const keys[4] = { "Max", "Min", "Mean", "Norm" };
		struct json_object *o = json_object_new_object(), *shape = json_object_new_array();

		json_object_object_add(o, "type", json_object_new_string("torch.Tensor"));
		json_object_object_add(o, "dtype", json_object_new_string(dtn ? dtn : "unknown"));
		for (uint32_t d = 0; d < t->t.info.dim_count; d++)
			json_object_array_add(shape, json_object_new_int64((int64_t)t->t.info.dims[d]));
		json_object_object_add(o, "shape", shape);
		for (int k = 0; k < 4; k++) {
			/* msprobe's rule (adump_msentry_stats()): a 0-d tensor's four are its
			 * value; Mean and Norm of floating tensors but float64 only. */
			int32_t dt = t->t.info.dtype;
			bool is_scalar = t->t.info.dim_count == 0 && dt != ADUMP_DT_BOOL;
			int from = is_scalar ? 0 : k;
			bool keep = k < 2 || is_scalar ||
				    (dtype_is_float(dt) && dt != ADUMP_DT_DOUBLE);

			json_object_object_add(o, keys[k], keep && t->stat[from].is_present ?
					       (from < 2 ? stat_value(t->stat[from].value, dt)
							 : stat_float(t->stat[from].value, dt))
					       : NULL);
		}
		json_object_object_add(o, "requires_grad", json_object_new_boolean(false));
		json_object_array_add(t->t.info.kind == ADUMP_TENSOR_INPUT ? ins : outs, o);
	}
	json_object_object_add(entry, strstr(name, ".backward") ? "input" : "input_args", ins);
	if (!strstr(name, ".backward"))
		json_object_object_add(entry, "input_kwargs", json_object_new_object());
	json_object_object_add(entry, "output", outs);
	ins = outs = NULL;
	json_object_object_add(data, name, entry);
	entry = NULL;
out:
	json_object_put(ins);
	json_object_put(outs);
	json_object_put(entry);
	adump_compare_stats_free(&st);
	return ret;
}

/* The module path of "Module.<path>.<Class>.<forward|backward>.<n>" into @out; false if
 * @name is not a module call of that shape. */
static bool module_path(const char *name, const char *dir, char *out, size_t cap)
{
	const char *end = name + strlen(name);
	int dots = 0;

	if (strncmp(name, "Module.", 7) != 0)
		return false;
	while (end > name + 7 && dots < 3)
		if (*--end == '.')
			dots++;
	if (dots < 3 || end <= name + 7 || (size_t)(end - name - 7) >= cap)
		return false;
	{
		const char *tail = strchr(end + 1, '.');        /* .<dir>.<n> */

		if (!tail || strncmp(tail + 1, dir, strlen(dir)) != 0 ||
		    tail[1 + strlen(dir)] != '.')
			return false;
	}
	memcpy(out, name + 7, (size_t)(end - name - 7));
	out[end - name - 7] = '\0';
	return true;
}

/* Parents of module calls for a capture that left no construct.json: module calls are
 * dumped when they return (post-order), so a call's parent is the first later forward call
 * whose module path is a proper prefix of its own at a '.'; a backward call's parent is
 * its forward parent's backward. Ops keep the `module` attribute they were given. */
static void construct_infer(struct json_object *data, struct json_object *construct)
{
	size_t n = 0, i = 0;
	const char **names;

	json_object_object_foreach(data, k0, v0) {
		(void)k0;
		(void)v0;
		n++;
	}
	names = calloc(n ? n : 1, sizeof(*names));
	if (!names)
		return;
	{
		json_object_object_foreach(data, k, v) {
			(void)v;
			names[i++] = k;
		}
	}
	for (i = 0; i < n; i++) {
		char path[512], other[512];
		size_t pl;

		if (!module_path(names[i], "forward", path, sizeof(path)))
			continue;
		pl = strlen(path);
		for (size_t j = i + 1; j < n; j++) {
			size_t ol;

			if (!module_path(names[j], "forward", other, sizeof(other)))
				continue;
			ol = strlen(other);
			if (ol < pl && strncmp(path, other, ol) == 0 && path[ol] == '.') {
				json_object_object_add(construct, names[i],
						       json_object_new_string(names[j]));
				break;
			}
		}
	}
	for (i = 0; i < n; i++) {
		char fwd[1024], pb[1024];
		struct json_object *p;
		const char *b = strstr(names[i], ".backward.");

		if (!b || strncmp(names[i], "Module.", 7) != 0 || (size_t)(b - names[i]) > 900)
			continue;
		snprintf(fwd, sizeof(fwd), "%.*s.forward.%s", (int)(b - names[i]), names[i],
			 b + 10);
		if (!json_object_object_get_ex(construct, fwd, &p) || !p)
			continue;
		{
			const char *pf = json_object_get_string(p);
			const char *f = strstr(pf, ".forward.");

			if (!f || (size_t)(f - pf) > 900)
				continue;
			snprintf(pb, sizeof(pb), "%.*s.backward.%s", (int)(f - pf), pf, f + 9);
			json_object_object_add(construct, names[i], json_object_new_string(pb));
		}
	}
	free(names);
}

/* ---- one rank directory ----------------------------------------------------------------- */

static struct json_object *load_json(const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
	    access(path, R_OK) < 0)
		return NULL;
	return json_object_from_file(path);
}

/* The capture's construct.json with msprobe's parameters_grad names (<...>.parameters_grad.0
 * for the first call; adump.torch leaves the first call's count off). */
static struct json_object *construct_fix(struct json_object *in)
{
	struct json_object *o;

	if (!in || !json_object_is_type(in, json_type_object)) {
		json_object_put(in);
		return NULL;
	}
	o = json_object_new_object();
	if (!o) {
		json_object_put(in);
		return NULL;
	}
	json_object_object_foreach(in, k, v) {
		char key[1024];

		snprintf(key, sizeof(key), "%s%s", k, has_suffix(k, ".parameters_grad") ? ".0" : "");
		json_object_object_add(o, key, json_object_get(v));
	}
	json_object_put(in);
	return o;
}

/* @name in the directory @dir_fd (@dir for messages), written whole (common/outfile.c). */
static int save_json(struct ex_ctx *c, int dir_fd, const char *dir, const char *name,
		     struct json_object *o)
{
	struct adump_outfile of;
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							  JSON_C_TO_STRING_NOSLASHESCAPE);
	int ret;

	if (!text)
		return -ENOMEM;
	ret = adump_outfile_open(&of, dir_fd, 0644);
	if (ret == 0)
		ret = adump_outfile_publish(&of, adump_write_all(of.fd, text, strlen(text)),
					    name, 0);
	if (ret < 0)
		return ex_fail(c, ret, "%s/%s: %s", dir, name, strerror(-ret));
	return 0;
}

static long export_rank(struct ex_ctx *c, const char *in, const char *out)
{
	struct ex_files files = { 0 };
	struct json_object *doc = NULL, *data, *construct = NULL, *stack = NULL;
	char data_dir[PATH_MAX], abs_dir[PATH_MAX];
	bool any_module = false, any_api = false, stats = false, build_construct;
	int out_fd = -1, ret;
	long n = 0;

	c->data_fd = -1;

	ret = collect(in, &files, 0);
	if (ret < 0) {
		ex_fail(c, ret, "%s: %s", in, strerror(-ret));
		goto out;
	}
	if (files.n == 0) {
		ret = ex_fail(c, -ENOENT, "%s: no dump files", in);
		goto out;
	}
	qsort(files.v, files.n, sizeof(files.v[0]), file_cmp);
	for (size_t i = 0; i < files.n; i++)
		stats |= files.v[i].is_csv;
	ret = adump_mkdir_p(out, 0755);
	if (ret == 0) {
		out_fd = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ret = out_fd < 0 ? -errno : 0;
	}
	if (ret < 0) {
		ex_fail(c, ret, "%s: %s", out, strerror(-ret));
		goto out;
	}
	c->data_dir = NULL;
	if (!stats && !(c->flags & ADUMP_EXPORT_NO_DATA)) {
		snprintf(data_dir, sizeof(data_dir), "%s/dump_tensor_data", out);
		/* entered without following a link planted in its place */
		c->data_fd = adump_dir_open_new(out_fd, "dump_tensor_data", 0755);
		ret = c->data_fd < 0 ? c->data_fd : 0;
		if (ret < 0 || !realpath(data_dir, abs_dir)) {
			ret = ex_fail(c, ret < 0 ? ret : -errno, "%s: %s", data_dir,
				      strerror(ret < 0 ? -ret : errno));
			goto out;
		}
		c->data_dir = abs_dir;
	}
	construct = construct_fix(load_json(in, "construct.json"));
	build_construct = !construct;
	if (build_construct && !(construct = json_object_new_object())) {
		ret = -ENOMEM;
		goto out;
	}
	doc = json_object_new_object();
	data = json_object_new_object();
	if (!doc || !data) {
		json_object_put(data);
		ret = -ENOMEM;
		goto out;
	}
	json_object_object_add(doc, "task", json_object_new_string(c->data_dir ? "tensor"
									       : "statistics"));
	json_object_object_add(doc, "level", NULL);     /* set below */
	json_object_object_add(doc, "framework", json_object_new_string("pytorch"));
	json_object_object_add(doc, "dump_data_dir", c->data_dir ?
			       json_object_new_string(c->data_dir) : NULL);
	json_object_object_add(doc, "data", data);
	for (size_t i = 0; i < files.n; i++) {
		bool is_module = false;

		if (files.v[i].is_csv) {
			ret = export_csv(c, files.v[i].path, data, construct, &is_module);
		} else {
			ret = export_dump(c, files.v[i].path, data,
					  build_construct ? construct : NULL, &is_module);
		}
		if (ret < 0)
			goto out;
		any_module |= is_module;
		any_api |= !is_module;
		n++;
	}
	if (build_construct)
		construct_infer(data, construct);
	json_object_object_add(doc, "level", json_object_new_string(any_module && any_api ? "mix" :
								   any_module ? "L0" : "L1"));
	stack = load_json(in, "stack.json");
	if (!stack)
		stack = json_object_new_object();
	ret = save_json(c, out_fd, out, "dump.json", doc);
	if (!ret)
		ret = save_json(c, out_fd, out, "construct.json", construct);
	if (!ret)
		ret = save_json(c, out_fd, out, "stack.json", stack);
out:
	if (c->data_fd >= 0)
		close(c->data_fd);
	c->data_fd = -1;
	if (out_fd >= 0)
		close(out_fd);
	json_object_put(doc);
	json_object_put(construct);
	json_object_put(stack);
	files_free(&files);
	return ret < 0 ? ret : n;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_step_name(const char *n)
{
	return strncmp(n, "step", 4) == 0 && n[4] >= '0' && n[4] <= '9';
}

long adump_export_msprobe(const char *in, const char *out, unsigned flags, char *msg,
			  size_t cap)
{
	struct ex_ctx c = { .flags = flags, .msg = msg, .cap = cap };
	struct dirent **steps = NULL;
	long total = 0, ret;
	int ns;

	if (msg && cap)
		msg[0] = '\0';
	if (!in || !out)
		return ex_fail(&c, -EINVAL, "no input or output directory");
	if (!is_dir(in))
		return ex_fail(&c, -ENOENT, "%s: not a directory", in);
	ret = adump_reader_create(&c.r);
	if (ret < 0)
		return ret;
	ns = scandir(in, &steps, NULL, alphasort);
	if (ns < 0) {
		ret = ex_fail(&c, -errno, "%s: %s", in, strerror(errno));
		goto out;
	}
	for (int i = 0; i < ns && ret >= 0; i++) {
		char sdir[PATH_MAX], odir[PATH_MAX];
		struct dirent **ranks = NULL;
		int nr;

		if (!is_step_name(steps[i]->d_name))
			continue;
		if (snprintf(sdir, sizeof(sdir), "%s/%s", in, steps[i]->d_name) >=
		    (int)sizeof(sdir) || !is_dir(sdir))
			continue;
		nr = scandir(sdir, &ranks, NULL, alphasort);
		for (int j = 0; j < nr; j++) {
			char rdir[PATH_MAX];

			if (ret >= 0 && ranks[j]->d_name[0] != '.' &&
			    (strncmp(ranks[j]->d_name, "rank", 4) == 0 ||
			     strncmp(ranks[j]->d_name, "proc", 4) == 0)) {
				int a = snprintf(rdir, sizeof(rdir), "%s/%s", sdir,
						 ranks[j]->d_name);
				int b = snprintf(odir, sizeof(odir), "%s/%s/%s", out,
						 steps[i]->d_name, ranks[j]->d_name);

				if (a < (int)sizeof(rdir) && b < (int)sizeof(odir) && is_dir(rdir)) {
					ret = export_rank(&c, rdir, odir);
					if (ret == -ENOENT)
						ret = 0;        /* a rank with nothing this step */
					else if (ret >= 0)
						total += ret;
				}
			}
			free(ranks[j]);
		}
		free(ranks);
	}
	if (ret >= 0 && total == 0) {
		/* one rank directory given */
		ret = export_rank(&c, in, out);
		if (ret >= 0)
			total = ret;
	}
out:
	for (int i = 0; i < ns; i++)
		free(steps[i]);
	free(steps);
	free(c.buf);
	adump_reader_destroy(c.r);
	return ret < 0 ? ret : total;
}
