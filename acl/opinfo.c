/* SPDX-License-Identifier: Apache-2.0 */
/* Op-info recording (aclopStartDumpArgs / aclopStopDumpArgs, reference §1.4 and §4): for each
 * distinct operator signature executed while started, JSON files describing the op (no tensor
 * data) under <path>/<pid>_debug/, <path>/<pid>_opcompile/ and, for white-listed op types,
 * <path>/<pid>/. Written with json-c, indent 2. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl/acl_int.h"

#define MOD "acl"

/* Op types that also get a file in <path>/<pid>/ (OPB white-list). */
static const char *const white_list[] = {
	"FlashAttentionScore", "FlashAttentionScoreGrad", "MatMul", "MatMulV2", "BatchMatMul",
	"BatchMatMulV2", "Transpose", "TransData", "Gelu", "GeluGrad", "FastGelu", "FastGeluGrad",
	"SoftmaxV2", "SoftmaxGrad", "LayerNorm", "LayerNormGrad", "LayerNormV3", "LayerNormV4",
	"Renorm",
};

/* Op types left out of <path>/<pid>_opcompile/ (OPB black-list). */
static const char *const compile_black_list[] = {
	"ReduceSum", "ReduceMin", "ReduceMax", "ArgMinWithValue", "ArgMaxWithValue",
	"FusedInferAttentionScore", "MoeDistributeCombine", "MoeDistributeCombineV2",
	"MoeDistributeDispatch", "MoeDistributeDispatchV2", "GatherV2", "GatherV3",
};

static bool in_list(const char *const *list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], s))
			return true;
	return false;
}

static const char *format_name(int32_t acl_format)
{
	const char *n = adump_format_name(adump_acl_format_to_native(acl_format));

	return n ? n : "ND";
}

static struct json_object *shape_json(const struct adump_acl_opinfo_tensor *t)
{
	struct json_object *a = json_object_new_array();

	for (uint32_t i = 0; a && i < t->dim_count; i++)
		json_object_array_add(a, json_object_new_int64(t->dims[i]));
	return a;
}

static struct json_object *tensor_json(const struct adump_acl_opinfo_tensor *t, uint32_t index)
{
	struct json_object *o = json_object_new_object();
	char dtype[24];

	adump_acl_dtype_json_name(t->acl_dtype, dtype, sizeof(dtype));
	json_object_object_add(o, "name", json_object_new_string(t->name));
	json_object_object_add(o, "index", json_object_new_int((int32_t)index));
	json_object_object_add(o, "param_type", json_object_new_string("required"));
	json_object_object_add(o, "dtype", json_object_new_string(dtype));
	json_object_object_add(o, "shape", shape_json(t));
	json_object_object_add(o, "format", json_object_new_string(format_name(t->acl_format)));
	json_object_object_add(o, "origin_shape", shape_json(t));
	json_object_object_add(o, "origin_format", json_object_new_string(format_name(t->acl_format)));
	json_object_object_add(o, "value_depend", json_object_new_boolean(0));
	return o;
}

/* The op's JSON; @is_compile leaves out bin_type/bin_info as OPB's compile copy does.
 * bin_type and bin_info values are not documented: "static" and {} are UNVERIFIED. */
static char *op_json(const struct adump_acl_opinfo *op, bool is_compile)
{
	struct json_object *o = json_object_new_object(), *in, *out, *attrs;
	char *text = NULL;

	if (!o)
		return NULL;
	json_object_object_add(o, "op_type", json_object_new_string(op->op_type));
	json_object_object_add(o, "tune_mode", json_object_new_string("all"));
	in = json_object_new_array();
	for (uint32_t i = 0; i < op->input_count; i++)
		json_object_array_add(in, tensor_json(&op->inputs[i], i));
	json_object_object_add(o, "inputs", in);
	out = json_object_new_array();
	for (uint32_t i = 0; i < op->output_count; i++)
		json_object_array_add(out, tensor_json(&op->outputs[i], i));
	json_object_object_add(o, "outputs", out);
	attrs = json_object_new_array();
	if (op->attr_name) {
		struct json_object *a = json_object_new_object();

		json_object_object_add(a, "name", json_object_new_string(op->attr_name));
		json_object_object_add(a, "dtype", json_object_new_string("float"));
		json_object_object_add(a, "index", json_object_new_int(0));
		json_object_object_add(a, "value", json_object_new_double(op->attr_value));
		json_object_array_add(attrs, a);
	}
	json_object_object_add(o, "attrs", attrs);
	json_object_object_add(o, "impl_mode", json_object_new_string(""));
	json_object_object_add(o, "deterministic", json_object_new_string("false"));
	if (!is_compile) {
		json_object_object_add(o, "bin_type", json_object_new_string("static"));
		json_object_object_add(o, "bin_info", json_object_new_object());
	}
	/* Two-space indent and "key": value, as OPB's dump(2). */
	text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							   JSON_C_TO_STRING_SPACED |
							   JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}

static int write_text(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	size_t len = strlen(text), done = 0;
	int fd, ret;

	ret = adump_mkdir_p(dir, 0750);
	if (ret < 0)
		return ret;
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t w = write(fd, text + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			ret = -errno;
			close(fd);
			return ret;
		}
		done += (size_t)w;
	}
	return close(fd) < 0 ? -errno : 0;
}

/* <op_type>_<dtype>_<format>_<d0>_<d1>_..._<cnt>.json; the counter starts at 0 per folder
 * (the start value is UNVERIFIED). */
static void file_name(const struct adump_acl_opinfo *op, uint32_t cnt, char *buf, size_t cap)
{
	const struct adump_acl_opinfo_tensor *t = op->input_count ? &op->inputs[0] : NULL;
	size_t pos;
	char dtype[24];

	pos = (size_t)snprintf(buf, cap, "%s_", op->op_type);
	if (t) {
		adump_acl_dtype_json_name(t->acl_dtype, dtype, sizeof(dtype));
		pos += (size_t)snprintf(buf + pos, pos < cap ? cap - pos : 0, "%s_%s_", dtype,
					format_name(t->acl_format));
		for (uint32_t i = 0; i < t->dim_count; i++)
			pos += (size_t)snprintf(buf + pos, pos < cap ? cap - pos : 0, "%lld_",
						(long long)t->dims[i]);
	}
	snprintf(buf + (pos < cap ? pos : cap - 1), pos < cap ? cap - pos : 1, "%u.json", cnt);
}

static int opinfo_record_locked(struct adump_acl_state *st, const struct adump_acl_opinfo *op)
{
	char *debug_text, *compile_text, **seen, dir[PATH_MAX + 32], name[512];
	long pid = (long)getpid();
	int ret = 0;

	if (!st->is_opinfo)
		return 0;
	debug_text = op_json(op, false);
	if (!debug_text)
		return -ENOMEM;
	/* One set of files per distinct signature (OPB keeps a std::set of op JSONs). */
	for (size_t i = 0; i < st->opinfo_seen_count; i++) {
		if (!strcmp(st->opinfo_seen[i], debug_text)) {
			free(debug_text);
			return 0;
		}
	}
	seen = realloc(st->opinfo_seen, (st->opinfo_seen_count + 1) * sizeof(*seen));
	if (!seen) {
		free(debug_text);
		return -ENOMEM;
	}
	st->opinfo_seen = seen;
	st->opinfo_seen[st->opinfo_seen_count++] = debug_text;

	snprintf(dir, sizeof(dir), "%s/%ld_debug", st->opinfo_path, pid);
	file_name(op, st->opinfo_counter[0]++, name, sizeof(name));
	ret = write_text(dir, name, debug_text);
	if (ret == 0 && !in_list(compile_black_list, sizeof(compile_black_list) / sizeof(char *),
				 op->op_type)) {
		compile_text = op_json(op, true);
		snprintf(dir, sizeof(dir), "%s/%ld_opcompile", st->opinfo_path, pid);
		file_name(op, st->opinfo_counter[1]++, name, sizeof(name));
		ret = compile_text ? write_text(dir, name, compile_text) : -ENOMEM;
		free(compile_text);
	}
	if (ret == 0 && in_list(white_list, sizeof(white_list) / sizeof(char *), op->op_type)) {
		snprintf(dir, sizeof(dir), "%s/%ld", st->opinfo_path, pid);
		file_name(op, st->opinfo_counter[2]++, name, sizeof(name));
		ret = write_text(dir, name, debug_text);
	}
	if (ret < 0)
		adump_log(ADUMP_LOG_ERROR, MOD, "op-info for %s under %s: %s", op->op_type,
			  st->opinfo_path, strerror(-ret));
	return ret;
}

static void opinfo_reset_locked(struct adump_acl_state *st)
{
	for (size_t i = 0; i < st->opinfo_seen_count; i++)
		free(st->opinfo_seen[i]);
	free(st->opinfo_seen);
	st->opinfo_seen = NULL;
	st->opinfo_seen_count = 0;
	memset(st->opinfo_counter, 0, sizeof(st->opinfo_counter));
	st->is_opinfo = false;
	st->opinfo_path[0] = '\0';
}

int adump_acl_opinfo_record(struct adump_acl_state *st, const struct adump_acl_opinfo *op)
{
	int ret;

	pthread_mutex_lock(&st->opinfo_lock);
	ret = opinfo_record_locked(st, op);
	pthread_mutex_unlock(&st->opinfo_lock);
	return ret;
}

void adump_acl_opinfo_reset(struct adump_acl_state *st)
{
	pthread_mutex_lock(&st->opinfo_lock);
	opinfo_reset_locked(st);
	pthread_mutex_unlock(&st->opinfo_lock);
}

aclError aclopStartDumpArgs(uint32_t dumpType, const char *path)
{
	struct adump_acl_state *st = adump_acl_state();
	struct stat sb;
	const char *why = NULL;
	int ret;

	if (!path)
		why = "path is NULL";
	else if (!(dumpType & ACL_OP_DUMP_OP_AICORE_ARGS))
		why = "dumpType lacks ACL_OP_DUMP_OP_AICORE_ARGS";
	else if (!*path)
		why = "path is empty";
	else if (strlen(path) >= sizeof(st->opinfo_path))
		why = "path is too long";
	if (why) {
		adump_log(ADUMP_LOG_ERROR, MOD, "aclopStartDumpArgs: %s", why);
		return ACL_ERROR_FAILURE;
	}
	pthread_mutex_lock(&st->opinfo_lock);
	if (st->is_opinfo) {
		pthread_mutex_unlock(&st->opinfo_lock);
		adump_log(ADUMP_LOG_ERROR, MOD, "aclopStartDumpArgs: called repeatedly");
		return ACL_ERROR_FAILURE;
	}
	/* A missing directory is created; an existing path must be a read-write directory.
	 * The path is taken relative to the working directory, as CANN's code does (its doc
	 * says the executable's directory: UNVERIFIED which one wins). */
	ret = adump_mkdir_p(path, 0750);
	if (ret < 0 || stat(path, &sb) < 0 || !S_ISDIR(sb.st_mode) || access(path, R_OK | W_OK) < 0) {
		pthread_mutex_unlock(&st->opinfo_lock);
		adump_log(ADUMP_LOG_ERROR, MOD, "aclopStartDumpArgs: %s is not a read-write directory",
			  path);
		return ACL_ERROR_FAILURE;
	}
	snprintf(st->opinfo_path, sizeof(st->opinfo_path), "%s", path);
	st->is_opinfo = true;
	pthread_mutex_unlock(&st->opinfo_lock);
	return ACL_SUCCESS;
}

aclError aclopStopDumpArgs(uint32_t dumpType)
{
	struct adump_acl_state *st = adump_acl_state();

	if (!(dumpType & ACL_OP_DUMP_OP_AICORE_ARGS))
		return ACL_SUCCESS;
	pthread_mutex_lock(&st->opinfo_lock);
	if (st->is_opinfo)
		opinfo_reset_locked(st);
	pthread_mutex_unlock(&st->opinfo_lock);
	return ACL_SUCCESS;
}
