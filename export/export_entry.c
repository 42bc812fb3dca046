/* SPDX-License-Identifier: Apache-2.0 */
/* One dump's dump.json entry in msprobe's terms (common/msentry.c builds it from the header's
 * dfx_message): each tensor described with statistics from its bytes and written as a .pt
 * file of dump_tensor_data (one path component, created without following a link); and a
 * statistics dump's entry from its .csv. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "adump/export.h"
#include "compare/compare.h"

#include "export_int.h"

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

int ex_export_dump(struct ex_ctx *c, const char *path, struct json_object *data,
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
int ex_export_csv(struct ex_ctx *c, const char *path, struct json_object *data,
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
