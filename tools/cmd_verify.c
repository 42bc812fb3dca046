/* SPDX-License-Identifier: Apache-2.0 */
/* `adump verify DIR`: checks that every dump file below a directory is complete and
 * consistent (layout adds up, header parses, shape x dtype matches size), lists .part
 * leftovers and .failed files, and exits non-zero on any problem. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adump/reader.h"
#include "tools/progress.h"
#include "tools/tool.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: adump verify DIR... [--json] [--quiet]\n\n"
		"Checks every file below DIR (recursively) as a dump file: 8 + header + the sum of\n"
		"the tensor sizes equals the file size, the DumpData header parses, and each\n"
		"input's and output's shape x dtype size equals its size. Lists leftover .part\n"
		"files (writes that never finished) and .failed files (write errors, dropped data).\n"
		".csv files (statistics mode) are not dump files and are skipped.\n"
		"Prints one line per problem and a summary; exits 1 on any problem, 2 on bad usage.\n\n"
		"  --json    print one JSON document on stdout instead of text\n"
		"  --quiet   no progress bar\n");
}

/* SKIPPED: statistics CSVs (dump_data "stats"), which are not dump files. */
enum verdict { VERDICT_OK, VERDICT_BAD, VERDICT_PART, VERDICT_FAILED, VERDICT_SKIPPED };

/* Shape, dtype and size agreement for one opened dump; the first mismatch goes to @msg. */
static bool check_shapes(struct adump_reader *r, char *msg, size_t cap)
{
	const struct adump_reader_header *h = adump_reader_header(r);

	for (uint32_t i = 0; i < h->tensor_count; i++) {
		const struct adump_reader_tensor *t = &h->tensors[i];
		const char *kind = adump_reader_kind_name(t->info.kind);
		uint64_t expect;
		int ret;

		if (t->info.kind != ADUMP_TENSOR_INPUT && t->info.kind != ADUMP_TENSOR_OUTPUT)
			continue;
		if (!adump_dtype_name(t->info.dtype)) {
			snprintf(msg, cap, "%s %u: unknown dtype %d", kind, t->index,
				 t->info.dtype);
			return false;
		}
		ret = adump_reader_tensor_expected_bytes(&t->info, &expect);
		if (ret == -ADUMP_ERR_UNSUPPORTED)
			continue;       /* strings and other types without a fixed width */
		if (ret < 0) {
			snprintf(msg, cap, "%s %u: shape x dtype size overflows", kind, t->index);
			return false;
		}
		if (expect != t->info.bytes) {
			snprintf(msg, cap, "%s %u: shape x %s = %llu bytes but size is %llu", kind,
				 t->index, adump_dtype_name(t->info.dtype),
				 (unsigned long long)expect, (unsigned long long)t->info.bytes);
			return false;
		}
	}
	return true;
}

static enum verdict verify_one(struct adump_reader *r, const char *path, char *msg, size_t cap)
{
	msg[0] = '\0';
	if (tool_has_suffix(path, ".part")) {
		snprintf(msg, cap, "%s: leftover .part file (a write that never finished)", path);
		return VERDICT_PART;
	}
	if (tool_has_suffix(path, ".csv"))
		return VERDICT_SKIPPED;
	if (tool_has_suffix(path, ".failed")) {
		snprintf(msg, cap, "%s: failed dump (write error or dropped data)", path);
		return VERDICT_FAILED;
	}
	if (adump_reader_open(r, path) < 0) {
		snprintf(msg, cap, "%s", adump_reader_error(r));
		return VERDICT_BAD;
	}
	char detail[512];
	if (!check_shapes(r, detail, sizeof(detail))) {
		snprintf(msg, cap, "%s: %s", path, detail);
		adump_reader_close(r);
		return VERDICT_BAD;
	}
	adump_reader_close(r);
	return VERDICT_OK;
}

int cmd_verify(int argc, char **argv)
{
	static const char *const verdict_names[] = { "ok", "bad", "part", "failed", "skipped" };
	struct tool_files files = { 0 };
	struct tool_progress progress;
	struct adump_reader *r = NULL;
	bool is_json = false, is_quiet = false;
	uint64_t counts[5] = { 0 };
	json_object *doc = NULL, *problems = NULL;
	int dir_count = 0, rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			is_json = true;
		} else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q")) {
			is_quiet = true;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "adump verify: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	for (int i = 1; i < argc; i++) {
		int ret;

		if (argv[i][0] == '-')
			continue;
		dir_count++;
		ret = tool_files_add(&files, argv[i], true);
		if (ret < 0) {
			fprintf(stderr, "adump verify: %s: %s\n", argv[i], adump_strerror(ret));
			rc = 2;
		}
	}
	if (!dir_count) {
		usage(stderr);
		rc = 2;
	}
	if (rc)
		goto out;
	tool_files_sort(&files);
	if (adump_reader_create(&r) < 0) {
		fprintf(stderr, "adump verify: out of memory\n");
		rc = 2;
		goto out;
	}
	if (is_json) {
		doc = json_object_new_object();
		problems = json_object_new_array();
	}
	tool_progress_start(&progress, "verify", files.count, is_quiet);
	for (size_t i = 0; i < files.count; i++) {
		char msg[1400];
		enum verdict v = verify_one(r, files.paths[i], msg, sizeof(msg));

		counts[v]++;
		if (v != VERDICT_OK && v != VERDICT_SKIPPED) {
			if (is_json) {
				json_object *p = json_object_new_object();

				json_object_object_add(p, "file",
						       json_object_new_string(files.paths[i]));
				json_object_object_add(p, "kind",
						       json_object_new_string(verdict_names[v]));
				json_object_object_add(p, "message", json_object_new_string(msg));
				json_object_array_add(problems, p);
			} else {
				tool_progress_clear(&progress);
				printf("%-6s %s\n", v == VERDICT_BAD    ? "BAD"
						    : v == VERDICT_PART ? "PART"
									: "FAILED",
				       msg);
			}
		}
		tool_progress_step(&progress);
	}
	tool_progress_end(&progress);

	uint64_t problem_count = counts[VERDICT_BAD] + counts[VERDICT_PART] + counts[VERDICT_FAILED];
	bool is_empty = counts[VERDICT_OK] + problem_count == 0;

	if (is_json) {
		json_object_object_add(doc, "files", json_object_new_int64((int64_t)files.count));
		for (int v = 0; v < 5; v++)
			json_object_object_add(doc, verdict_names[v],
					       json_object_new_int64((int64_t)counts[v]));
		json_object_object_add(doc, "problems", problems);
		json_object_object_add(doc, "passed",
				       json_object_new_boolean(!problem_count && !is_empty));
		printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
									   JSON_C_TO_STRING_NOSLASHESCAPE));
	} else {
		printf("verify: %zu files: %llu ok, %llu bad, %llu .part leftover, %llu failed",
		       files.count, (unsigned long long)counts[VERDICT_OK],
		       (unsigned long long)counts[VERDICT_BAD],
		       (unsigned long long)counts[VERDICT_PART],
		       (unsigned long long)counts[VERDICT_FAILED]);
		if (counts[VERDICT_SKIPPED])
			printf(", %llu .csv skipped", (unsigned long long)counts[VERDICT_SKIPPED]);
		printf("%s\n", is_empty ? " (no dump files found)" : problem_count ? "" : ": passed");
	}
	rc = problem_count || is_empty ? 1 : 0;
out:
	json_object_put(doc);
	adump_reader_destroy(r);
	tool_files_free(&files);
	return rc;
}
