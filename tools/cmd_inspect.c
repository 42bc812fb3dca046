/* SPDX-License-Identifier: Apache-2.0 */
/* `adump inspect FILE...`: the header of each dump and, per tensor, shape, dtype, format, size
 * and the first checks users run (min, max, mean, NaN and Inf counts), streamed so tensors of
 * any size need bounded memory. */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adump/reader.h"
#include "tools/progress.h"
#include "tools/tool.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: adump inspect FILE|DIR|ENTRY... [--json] [--no-stats] [--quiet]\n\n"
		"Prints each dump file's header (version, op name, dump time, attributes,\n"
		"dfx message) and, per input, output, buffer and workspace: dtype, format, shape,\n"
		"original shape and size, plus min, max, mean, NaN count and Inf count for\n"
		"float16, bfloat16, float, double, integer and bool tensors. min, max and mean are\n"
		"over the finite values. A DIR adds the files directly inside it.\n"
		"Compressed dumps (<name>.lz4, dump_compress lz4) are read directly.\n"
		"Packed captures (dump_layout packed): a capture directory holding packed/, the\n"
		"packed/ directory or a w<k>.idx index lists every entry, each shown as\n"
		"<packed dir>/<device_id>/<file name>. That name, or <packed dir>/<file name>\n"
		"(also with the capture directory in place of <packed dir>), inspects one entry,\n"
		"as if the capture had been unpacked in place.\n"
		"Exits 1 when a file cannot be read.\n\n"
		"  --json       one JSON document on stdout\n"
		"  --no-stats   header and shapes only (no payload reads)\n"
		"  --quiet      no progress bar\n");
}

static void format_shape(char *buf, size_t cap, const uint64_t *dims, uint32_t count)
{
	size_t n = (size_t)snprintf(buf, cap, "[");

	for (uint32_t i = 0; i < count && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%llu", i ? ", " : "",
				      (unsigned long long)dims[i]);
	if (n < cap)
		snprintf(buf + n, cap - n, "]");
}

static const char *dtype_label(int32_t dtype, char *buf, size_t cap)
{
	const char *name = adump_dtype_name(dtype);

	if (name)
		return name;
	snprintf(buf, cap, "unknown(%d)", dtype);
	return buf;
}

static const char *format_label(int32_t format, char *buf, size_t cap)
{
	const char *name = adump_format_name(format);

	if (name)
		return name;
	snprintf(buf, cap, "unknown(%d)", format);
	return buf;
}

static json_object *shape_json(const uint64_t *dims, uint32_t count)
{
	json_object *a = json_object_new_array();

	for (uint32_t i = 0; i < count; i++)
		json_object_array_add(a, json_object_new_uint64(dims[i]));
	return a;
}

static json_object *number_json(double v, const struct adump_reader_stats *s, bool is_min)
{
	if (!s->finite_count)
		return NULL;
	/* Integers print exactly; only unsigned values above INT64_MAX need the uint64 form. */
	if (s->is_integer && s->max_uint > INT64_MAX)
		return json_object_new_uint64(is_min ? s->min_uint : s->max_uint);
	if (s->is_integer)
		return json_object_new_int64(is_min ? s->min_int : s->max_int);
	return json_object_new_double(v);
}

static void print_number(const char *label, double v, const struct adump_reader_stats *s,
			 bool is_min)
{
	if (!s->finite_count)
		printf(" %s -", label);
	else if (s->is_integer && s->max_uint > INT64_MAX)
		printf(" %s %llu", label, (unsigned long long)(is_min ? s->min_uint : s->max_uint));
	else if (s->is_integer)
		printf(" %s %lld", label, (long long)(is_min ? s->min_int : s->max_int));
	else
		printf(" %s %.9g", label, v);
}

/* A file or entry that cannot be read. Return: -1. */
static int inspect_failed(const char *path, const char *error, json_object *files,
			  struct tool_progress *progress)
{
	tool_warn(progress, "adump inspect: %s\n", error);
	if (files) {
		json_object *jf = json_object_new_object();

		json_object_object_add(jf, "file", json_object_new_string(path));
		json_object_object_add(jf, "error", json_object_new_string(error));
		json_object_array_add(files, jf);
	}
	return -1;
}

/* Inspect the dump open in @r and close it. Return: 0, or -1 when a payload cannot be read
 * (message already printed). */
static int inspect_opened(struct adump_reader *r, bool is_stats, json_object *files,
			  struct tool_progress *progress)
{
	const struct adump_reader_header *h;
	const char *path = adump_reader_name(r);
	json_object *jf = NULL, *jt = NULL;
	char shape[512], orig[512], dt_buf[32], fmt_buf[32];
	int rc = 0;

	h = adump_reader_header(r);
	if (files) {
		json_object *attrs = json_object_new_object();

		jf = json_object_new_object();
		jt = json_object_new_array();
		json_object_object_add(jf, "file", json_object_new_string(path));
		json_object_object_add(jf, "version", json_object_new_string(h->version));
		json_object_object_add(jf, "op_name", json_object_new_string(h->op_name));
		json_object_object_add(jf, "dump_time", json_object_new_uint64(h->dump_time));
		json_object_object_add(jf, "dfx_message", json_object_new_string(h->dfx_message));
		json_object_object_add(jf, "header_bytes", json_object_new_uint64(h->header_bytes));
		json_object_object_add(jf, "file_bytes", json_object_new_uint64(h->file_bytes));
		for (uint32_t i = 0; i < h->attr_count; i++)
			json_object_object_add(attrs, h->attrs[i].name,
					       json_object_new_string(h->attrs[i].value));
		json_object_object_add(jf, "attrs", attrs);
		json_object_object_add(jf, "tensors", jt);
		json_object_array_add(files, jf);
	} else {
		tool_progress_clear(progress);
		printf("%s\n  version %s  op_name %s  dump_time %llu  header %llu bytes  file %llu "
		       "bytes\n",
		       tool_text(path), tool_text(h->version), tool_text(h->op_name),
		       (unsigned long long)h->dump_time,
		       (unsigned long long)h->header_bytes, (unsigned long long)h->file_bytes);
		for (uint32_t i = 0; i < h->attr_count; i++)
			printf("  attr %s = %s\n", tool_text(h->attrs[i].name),
			       tool_text(h->attrs[i].value));
		if (h->dfx_message[0])
			printf("  dfx_message %s\n", tool_text(h->dfx_message));
	}
	for (uint32_t i = 0; i < h->tensor_count; i++) {
		const struct adump_reader_tensor *t = &h->tensors[i];
		const char *kind = adump_reader_kind_name(t->info.kind);
		struct adump_reader_stats s;
		bool has_stats = false;
		const char *why = NULL;

		format_shape(shape, sizeof(shape), t->info.dims, t->info.dim_count);
		format_shape(orig, sizeof(orig), t->info.orig_dims, t->info.orig_dim_count);
		const char *dt = dtype_label(t->info.dtype, dt_buf, sizeof(dt_buf));
		const char *fmt = format_label(t->info.format, fmt_buf, sizeof(fmt_buf));
		if (is_stats && (t->info.kind == ADUMP_TENSOR_INPUT ||
				 t->info.kind == ADUMP_TENSOR_OUTPUT)) {
			int ret = adump_reader_tensor_stats(r, i, &s);

			has_stats = ret == 0;
			if (ret < 0 && ret != -ADUMP_ERR_UNSUPPORTED) {
				why = adump_reader_error(r);
				tool_warn(progress, "adump inspect: %s\n", why);
				rc = -1;
			} else if (ret < 0) {
				why = "no statistics for this dtype";
			}
		}
		if (jt) {
			json_object *o = json_object_new_object();

			json_object_object_add(o, "kind", json_object_new_string(kind));
			json_object_object_add(o, "index", json_object_new_int(t->index));
			json_object_object_add(o, "dtype", json_object_new_string(dt));
			json_object_object_add(o, "format", json_object_new_string(fmt));
			json_object_object_add(o, "sub_format", json_object_new_int(t->info.sub_format));
			json_object_object_add(o, "shape", shape_json(t->info.dims, t->info.dim_count));
			json_object_object_add(o, "original_shape",
					       shape_json(t->info.orig_dims, t->info.orig_dim_count));
			json_object_object_add(o, "size", json_object_new_uint64(t->info.bytes));
			json_object_object_add(o, "offset", json_object_new_uint64(t->offset));
			if (has_stats) {
				json_object *js = json_object_new_object();

				json_object_object_add(js, "element_count",
						       json_object_new_uint64(s.element_count));
				json_object_object_add(js, "min", number_json(s.min, &s, true));
				json_object_object_add(js, "max", number_json(s.max, &s, false));
				json_object_object_add(js, "mean",
						       s.finite_count ? json_object_new_double(s.mean)
								      : NULL);
				json_object_object_add(js, "nan_count",
						       json_object_new_uint64(s.nan_count));
				json_object_object_add(js, "inf_count",
						       json_object_new_uint64(s.inf_count));
				json_object_object_add(o, "stats", js);
			} else if (why) {
				json_object_object_add(o, "stats_error", json_object_new_string(why));
			}
			json_object_array_add(jt, o);
			continue;
		}
		printf("  %s %u: %s %s shape %s orig %s size %llu", kind, t->index, dt, fmt, shape,
		       orig, (unsigned long long)t->info.bytes);
		if (has_stats) {
			print_number("min", s.min, &s, true);
			print_number("max", s.max, &s, false);
			if (s.finite_count)
				printf(" mean %.9g", s.mean);
			else
				printf(" mean -");
			printf(" nan %llu inf %llu", (unsigned long long)s.nan_count,
			       (unsigned long long)s.inf_count);
		} else if (why) {
			printf(" (%s)", tool_text(why));
		}
		printf("\n");
	}
	adump_reader_close(r);
	return rc;
}

/* Inspect one file. Return: 0, or -1 when it cannot be read (message already printed). */
static int inspect_one(struct adump_reader *r, const char *path, bool is_stats,
		       json_object *files, struct tool_progress *progress)
{
	if (adump_reader_open(r, path) < 0)
		return inspect_failed(path, adump_reader_error(r), files, progress);
	return inspect_opened(r, is_stats, files, progress);
}

/* Whether entry @name is what @want asks for: its whole name or its file name. */
static bool entry_matches(const char *name, const char *want)
{
	const char *slash = strrchr(name, '/');

	return !want || !strcmp(name, want) || (slash && !strcmp(slash + 1, want));
}

/* Inspect the entries of a packed list (an index, a packed directory or a capture), all of
 * them or those @want names. Return: 0, or -1 on any failure (message printed). */
static int inspect_packed(struct adump_reader *r, const char *path, const char *want,
			  bool is_stats, json_object *files, struct tool_progress *progress)
{
	const struct adump_reader_packed_entry *e;
	struct adump_reader_packed *p;
	uint64_t match_count = 0;
	int ret = adump_reader_packed_open(path, &p), rc = 0;

	if (ret < 0) {
		char msg[4200];

		snprintf(msg, sizeof(msg), "%s: %s", path, adump_strerror(ret));
		return inspect_failed(path, msg, files, progress);
	}
	while ((ret = adump_reader_packed_next(p, &e)) > 0) {
		if (e->status == ADUMP_PACKED_LEFTOVER) {
			if (!want)
				tool_warn(progress, "adump inspect: %s line %u: %s\n", e->index_path,
					  e->line, e->message);
		} else if (e->status != ADUMP_PACKED_ENTRY) {
			char msg[4400];

			snprintf(msg, sizeof(msg), "%s line %u: %s", e->index_path, e->line,
				 e->message);
			rc = inspect_failed(e->index_path, msg, files, progress);
		} else if (entry_matches(e->name, want)) {
			match_count++;
			if (adump_reader_open_packed(r, p, e, false) < 0)
				rc = inspect_failed(e->name, adump_reader_error(r), files, progress);
			else if (inspect_opened(r, is_stats, files, progress) < 0)
				rc = -1;
		}
		if (!want)
			tool_progress_step(progress);
	}
	if (ret < 0) {
		tool_warn(progress, "adump inspect: %s: %s\n", path, adump_strerror(ret));
		rc = -1;
	} else if (want && !match_count) {
		char msg[8400];

		snprintf(msg, sizeof(msg), "%s: no entry named %s in the packed capture",
			 adump_reader_packed_dir(p), want);
		rc = inspect_failed(want, msg, files, progress);
	}
	adump_reader_packed_close(p);
	return rc;
}

/* A path that does not exist may name a packed entry: <capture or packed dir>/<entry name>,
 * the entry name being "<device_id>/<file name>" or just the file name. Return: true when a
 * packed directory prefixes @path (its length in *prefix_len). */
static bool split_entry_path(const char *path, size_t *prefix_len)
{
	char prefix[4096];
	size_t len = strlen(path);

	if (len >= sizeof(prefix))
		return false;
	memcpy(prefix, path, len + 1);
	for (char *slash = strrchr(prefix, '/'); slash; slash = strrchr(prefix, '/')) {
		struct adump_reader_packed *p;

		*slash = '\0';
		if (!prefix[0] || !slash[1])
			continue;
		if (adump_reader_packed_open(prefix, &p) == 0) {
			adump_reader_packed_close(p);
			*prefix_len = (size_t)(slash - prefix);
			return true;
		}
	}
	return false;
}

int cmd_inspect(int argc, char **argv)
{
	struct tool_files files = { 0 };
	struct tool_progress progress;
	struct adump_reader *r = NULL;
	bool is_json = false, is_quiet = false, is_stats = true;
	json_object *doc = NULL, *jfiles = NULL;
	int rc = 0, arg_count = 0, entry_arg_count = 0;
	int *entry_args = NULL;
	size_t prefix_len;


	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			is_json = true;
		} else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q")) {
			is_quiet = true;
		} else if (!strcmp(argv[i], "--no-stats")) {
			is_stats = false;
		} else if (argv[i][0] == '-') {
			tool_err("adump inspect: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	entry_args = calloc((size_t)argc, sizeof(*entry_args));
	if (!entry_args) {
		tool_err("adump inspect: out of memory\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		int ret;

		if (argv[i][0] == '-')
			continue;
		arg_count++;
		ret = tool_files_add(&files, argv[i], false);
		if (ret == -ENOENT && split_entry_path(argv[i], &prefix_len)) {
			/* Kept as an argument; inspected after the files. */
			entry_args[entry_arg_count++] = i;
			continue;
		}
		if (ret < 0) {
			tool_err("adump inspect: %s: %s\n", argv[i], adump_strerror(ret));
			rc = 1;
			continue;
		}
		/* A packed capture's directory holds only packed/: list its entries too. */
		char packed[4200];
		struct stat st;

		if (snprintf(packed, sizeof(packed), "%s/packed", argv[i]) < (int)sizeof(packed) &&
		    stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) && stat(packed, &st) == 0 &&
		    S_ISDIR(st.st_mode))
			tool_files_add(&files, packed, false);
	}
	if (!arg_count) {
		usage(stderr);
		rc = 2;
		goto out;
	}
	if (!files.count && !entry_arg_count) {
		if (!rc)
			tool_err("adump inspect: no files to inspect (directories are not "
					"descended into: name <dump_path>/<time>/<device>)\n");
		rc = 1;
		goto out;
	}
	if (adump_reader_create(&r) < 0) {
		rc = 2;
		goto out;
	}
	if (is_json) {
		doc = json_object_new_object();
		jfiles = json_object_new_array();
		json_object_object_add(doc, "files", jfiles);
	}
	tool_progress_start(&progress, "inspect", tool_files_item_count(&files), is_quiet || !is_json);
	for (size_t i = 0; i < files.count; i++) {
		switch (adump_reader_packed_file_kind(files.paths[i])) {
		case ADUMP_PACKED_FILE_SEGMENT:
			break;          /* read through its index */
		case ADUMP_PACKED_FILE_INDEX:
			if (inspect_packed(r, files.paths[i], NULL, is_stats, jfiles, &progress) < 0)
				rc = 1;
			break;
		default:
			if (inspect_one(r, files.paths[i], is_stats, jfiles, &progress) < 0)
				rc = 1;
			tool_progress_step(&progress);
			break;
		}
	}
	for (int i = 0; i < entry_arg_count; i++) {
		const char *arg = argv[entry_args[i]];
		char prefix[4096];

		if (!split_entry_path(arg, &prefix_len))
			continue;
		memcpy(prefix, arg, prefix_len);
		prefix[prefix_len] = '\0';
		if (inspect_packed(r, prefix, arg + prefix_len + 1, is_stats, jfiles, &progress) < 0)
			rc = 1;
	}
	tool_progress_end(&progress);
	if (doc)
		printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
									   JSON_C_TO_STRING_NOSLASHESCAPE));
out:
	json_object_put(doc);
	adump_reader_destroy(r);
	tool_files_free(&files);
	free(entry_args);
	return rc;
}
