/* SPDX-License-Identifier: Apache-2.0 */
/* `adump verify DIR`: checks that every dump file below a directory is complete and
 * consistent (layout adds up, header parses, shape x dtype matches size), .lz4 frames and
 * packed captures included, lists .part leftovers, .failed files and what a capture cut
 * short leaves in a packed capture, and exits non-zero on any problem. --clean removes the
 * leftovers. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/export.h"
#include "adump/reader.h"
#include "common/common.h"
#include "common/journal.h"
#include "reader/reader.h"
#include "tools/progress.h"
#include "tools/tool.h"
#include "tools/verify_int.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: adump verify DIR... [--json] [--quiet]\n\n"
		"Checks every file below DIR (recursively) as a dump file: 8 + header + the sum of\n"
		"the tensor sizes equals the file size, the DumpData header parses, and each\n"
		"input's and output's shape x dtype size equals its size. Lists leftover .part\n"
		"files (writes that never finished) and .failed files (write errors, dropped data).\n"
		".csv files (statistics mode) and .html files (adump report's pages) are not\n"
		"dump files and are skipped, and so are\n"
		".json files but msprobe's dump.json: in msprobe's layout (msprobe, or adump's\n"
		"format=\"msprobe\" / export --msprobe) dump.json must parse and every .pt it lists\n"
		"must exist, be a whole torch zip (each record inside the file, CRC-32 equal) and\n"
		"hold the dtype and shape dump.json gives; other .pt files are checked as zips.\n"
		"<name>.lz4 files (dump_compress lz4) are decoded in full: the frame checksum must\n"
		"match and the content must be a whole dump; .lz4.part and .lz4.failed count as\n"
		"leftovers and failed files.\n"
		"A packed capture (a directory packed/ of w<k>.idx indexes and w<k>-<n>.seg\n"
		"segments) is checked entry by entry, each shown as <packed dir>/<entry name>:\n"
		"its segment exists, the range lies inside it, the CRC32C matches and the dump\n"
		"layout adds up. An index's last line without its newline is what a crash leaves:\n"
		"reported as a warning, not a problem. Any other bad index line is a problem.\n"
		"Segment bytes after the last entry any index names (written, never indexed) are\n"
		"what a capture cut short leaves too: a warning.\n"
		"A capture's loss log (" ADUMP_LOSS_LOG_NAME ": one line per tensor lost, with its\n"
		"cause) is listed line by line as LOST; any loss is a problem.\n"
		"A capture's hand-over journal (" ADUMP_JOURNAL_PREFIX "<pid>-<n>, kept while a\n"
		"session runs, removed when it ends cleanly) names the dumps handed over and not\n"
		"yet finished: each whose file is not there is listed as MISSING (the process is\n"
		"gone: handed over but never written) or BUSY (the process still runs: capture in\n"
		"progress); both are problems. --clean leaves the journal: it records data lost.\n"
		"Prints one line per problem and a summary; exits 1 on any problem, 2 on bad usage.\n\n"
		"  --clean   remove the leftovers of a capture cut short (a crash, a kill): .part\n"
		"            files, an index's cut-short last line, unindexed segment tails. Each is\n"
		"            listed as REMOVED and no longer counts as a problem. .failed files stay:\n"
		"            they record data lost. Only for a capture that has ended. An\n"
		"            argument that is part of a capture (an index, a segment, packed/)\n"
		"            stands for the whole capture, which is read first: segment bytes are\n"
		"            removed only when no index of the capture names them. If any index\n"
		"            of it cannot be read (or is not a regular file), or segments have no\n"
		"            index, nothing is removed and verify exits 1.\n"
		"  --json    print one JSON document on stdout instead of text\n"
		"  --quiet   no progress bar\n");
}

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

/* Shapes and, for containers, the checksum of the dump open in @r; closes it. */
static enum verdict verify_opened(struct adump_reader *r, char *msg, size_t cap)
{
	char detail[512];

	if (!check_shapes(r, detail, sizeof(detail))) {
		snprintf(msg, cap, "%s: %s", adump_reader_name(r), detail);
		adump_reader_close(r);
		return VERDICT_BAD;
	}
	if (adump_reader_check(r) < 0) {
		snprintf(msg, cap, "%s", adump_reader_error(r));
		adump_reader_close(r);
		return VERDICT_BAD;
	}
	adump_reader_close(r);
	return VERDICT_OK;
}

static enum verdict verify_one(struct adump_reader *r, const char *path, char *msg, size_t cap)
{
	msg[0] = '\0';
	if (tool_has_suffix(path, ".part")) {
		snprintf(msg, cap, "%s: leftover .part file (a write that never finished)", path);
		return VERDICT_PART;
	}
	/* adump report writes its page of a statistics capture into it (report.html). */
	if (tool_has_suffix(path, ".csv") || tool_has_suffix(path, ".json") ||
	    tool_has_suffix(path, ".html"))
		return VERDICT_SKIPPED;
	if (tool_has_suffix(path, ".pt")) {     /* msprobe layout (adump export --msprobe) */
		if (adump_pt_check(path, msg, cap) < 0)
			return VERDICT_BAD;
		return VERDICT_OK;
	}
	if (tool_has_suffix(path, ".failed")) {
		snprintf(msg, cap, "%s: failed dump (write error or dropped data)", path);
		return VERDICT_FAILED;
	}
	if (adump_reader_open(r, path) < 0) {
		snprintf(msg, cap, "%s", adump_reader_error(r));
		return VERDICT_BAD;
	}
	return verify_opened(r, msg, cap);
}

/* A .pt file of msprobe's layout: checked through its rank directory's dump.json. */
static bool is_msprobe_pt(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	size_t n;

	if (!tool_has_suffix(path, ".pt") || !slash)
		return false;
	n = (size_t)(slash - path);
	if (n < 16 || strncmp(slash - 16, "dump_tensor_data", 16) ||
	    (n > 16 && slash[-17] != '/') || n - 16 >= sizeof(dir) - 16)
		return false;
	snprintf(dir, sizeof(dir), "%.*sdump.json", (int)(n - 16), path);
	return access(dir, F_OK) == 0;
}

/* One line of a packed index. */
static enum verdict verify_entry(struct adump_reader *r, struct adump_reader_packed *p,
				 const struct adump_reader_packed_entry *e, char *msg, size_t cap)
{
	msg[0] = '\0';
	if (e->status != ADUMP_PACKED_ENTRY) {
		snprintf(msg, cap, "%s line %u: %s", e->index_path, e->line, e->message);
		return e->status == ADUMP_PACKED_LEFTOVER ? VERDICT_LEFTOVER : VERDICT_BAD;
	}
	/* The CRC first, so a damaged entry is reported as damaged rather than as whatever
	 * the parser makes of the changed bytes. */
	if (adump_reader_open_packed(r, p, e, true) < 0) {
		snprintf(msg, cap, "%s", adump_reader_error(r));
		return VERDICT_BAD;
	}
	return verify_opened(r, msg, cap);
}

static const char *const verdict_names[VERDICT_COUNT] = {
	"ok", "bad", "part", "failed", "skipped", "index_leftover", "segment_leftover", "removed",
	"lost", "missing", "in_progress",
};

/* One problem (or warning), as a JSON entry or a line of text. */
static void report(bool is_json, json_object *problems, struct tool_progress *progress,
		   enum verdict v, const char *file, const char *msg)
{
	static const char *const labels[VERDICT_COUNT] = { "OK",   "BAD",  "PART",   "FAILED",
							   "SKIP", "WARN", "WARN",   "REMOVED",
							   "LOST", "MISSING", "BUSY" };

	if (is_json) {
		json_object *p = json_object_new_object();

		json_object_object_add(p, "file", json_object_new_string(file));
		json_object_object_add(p, "kind", json_object_new_string(verdict_names[v]));
		json_object_object_add(p, "message", json_object_new_string(msg));
		json_object_array_add(problems, p);
	} else {
		/* One line per problem: a name's control bytes (a newline forging an "OK" line)
		 * written \xNN. */
		char line[8192];

		adump_text_escape(line, sizeof(line), msg);
		tool_progress_clear(progress);
		printf("%-6s %s\n", labels[v], line);
	}
}

struct ms_report {
	bool is_json;
	json_object *problems;
	struct tool_progress *progress;
};

static void ms_problem(void *arg, const char *file, const char *message)
{
	struct ms_report *m = arg;

	report(m->is_json, m->problems, m->progress, VERDICT_BAD, file, message);
}

/* A hand-over journal's findings, as problems of the journal file. */
struct journal_report {
	bool is_json;
	json_object *problems;
	struct tool_progress *progress;
	const char *path;
	uint64_t *counts;
};

static void journal_problem(void *arg, enum adump_journal_finding kind, const char *msg)
{
	struct journal_report *j = arg;
	enum verdict v = kind == ADUMP_JOURNAL_FOUND_MISSING	    ? VERDICT_MISSING :
			 kind == ADUMP_JOURNAL_FOUND_IN_PROGRESS ? VERDICT_IN_PROGRESS :
							      VERDICT_BAD;

	j->counts[v]++;
	report(j->is_json, j->problems, j->progress, v, j->path, msg);
}

/* A capture's loss log: each line reported as a loss (or as a bad line). Return: false if
 * @path is not a loss log. */
static bool list_losses(const char *path, bool is_json, json_object *problems,
			struct tool_progress *progress, uint64_t *counts)
{
	const char *base = strrchr(path, '/');
	const struct adump_reader_loss *e;
	struct adump_reader_losses *l = NULL;
	char msg[1400];
	int ret;

	if (strcmp(base ? base + 1 : path, ADUMP_LOSS_LOG_NAME))
		return false;
	ret = adump_reader_losses_open(path, &l);
	while (ret >= 0 && (ret = adump_reader_losses_next(l, &e)) > 0) {
		enum verdict v = e->is_valid ? VERDICT_LOST : VERDICT_BAD;

		if (e->is_valid)
			snprintf(msg, sizeof(msg), "%s: %s %lld of %s (%s), %llu bytes: %s at %s",
				 e->file, e->kind, (long long)e->index, e->op_name, e->op_type,
				 (unsigned long long)e->bytes, e->cause_name, e->time);
		else
			snprintf(msg, sizeof(msg), "%s line %u: %s", path, e->line, e->message);
		counts[v]++;
		report(is_json, problems, progress, v, path, msg);
	}
	if (ret < 0) {
		snprintf(msg, sizeof(msg), "%s: %s", path, adump_strerror(ret));
		counts[VERDICT_BAD]++;
		report(is_json, problems, progress, VERDICT_BAD, path, msg);
	}
	adump_reader_losses_close(l);
	return true;
}

int cmd_verify(int argc, char **argv)
{
	uint64_t file_count = 0, entry_count = 0;
	struct tool_files odd = { 0 };
	struct tool_files files = { .odd = &odd };
	struct tool_progress progress;
	struct adump_reader *r = NULL;
	bool is_json = false, is_quiet = false, is_clean = false;
	struct segment_ends ends = { 0 };
	uint64_t counts[VERDICT_COUNT] = { 0 };
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
		} else if (!strcmp(argv[i], "--clean")) {
			is_clean = true;
		} else if (argv[i][0] == '-') {
			tool_err("adump verify: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	for (int i = 1; i < argc; i++) {
		int ret;

		if (argv[i][0] == '-')
			continue;
		dir_count++;
		ret = is_clean ? verify_capture_add(&files, argv[i]) :
				 tool_files_add(&files, argv[i], true);
		if (ret < 0) {
			tool_err("adump verify: %s: %s\n", argv[i], adump_strerror(ret));
			rc = 1;
		}
	}
	if (!dir_count) {
		usage(stderr);
		rc = 2;
	}
	if (rc)
		goto out;
	tool_files_sort(&files);
	if (is_clean)
		verify_files_dedup(&files);
	/* Every index of each packed directory must be readable before anything is judged
	 * unindexed, let alone removed. */
	char index_msg[8600];
	long index_problems = verify_packed_dirs_check(&files, index_msg, sizeof(index_msg));

	if (index_problems < 0) {
		tool_err("adump verify: out of memory\n");
		rc = 1;
		goto out;
	}
	if (index_problems && is_clean) {
		tool_err("adump verify --clean: %s%s: nothing removed\n", index_msg,
			index_problems > 1 ? " (and more)" : "");
		rc = 1;
		goto out;
	}
	if (adump_reader_create(&r) < 0) {
		tool_err("adump verify: out of memory\n");
		rc = 2;
		goto out;
	}
	if (is_json) {
		doc = json_object_new_object();
		problems = json_object_new_array();
	}
	tool_progress_start(&progress, "verify", tool_files_item_count(&files), is_quiet);
	if (index_problems) {
		counts[VERDICT_BAD] += (uint64_t)index_problems;
		report(is_json, problems, &progress, VERDICT_BAD, index_msg, index_msg);
	}
	for (size_t i = 0; i < files.count; i++) {
		enum adump_reader_packed_file kind = adump_reader_packed_file_kind(files.paths[i]);
		struct adump_reader_packed *p = NULL;
		const struct adump_reader_packed_entry *e = NULL;
		char msg[1400], entry_name[8400];
		enum verdict v;
		bool has_cut_line = false;
		int ret = 0;

		if (kind == ADUMP_PACKED_FILE_SEGMENT || is_msprobe_pt(files.paths[i]))
			continue;
		if (!strcmp(files.paths[i] + strlen(files.paths[i]) -
			    (strlen(files.paths[i]) < 10 ? strlen(files.paths[i]) : 10), "/dump.json") ||
		    !strcmp(files.paths[i], "dump.json")) {
			/* msprobe's layout: dump.json and every .pt it lists */
			struct ms_report mr = { is_json, problems, &progress };
			uint64_t bad = 0;
			long n = adump_msprobe_verify(files.paths[i], ms_problem, &mr, &bad);

			if (n < 0) {
				tool_progress_end(&progress);
				tool_err("adump verify: out of memory\n");
				rc = 1;
				goto out;
			}
			counts[VERDICT_BAD] += bad;
			counts[VERDICT_OK] += (uint64_t)n + 1 - (bad < (uint64_t)n + 1 ? bad : (uint64_t)n + 1);
			file_count += (uint64_t)n + 1;
			tool_progress_step(&progress);
			continue;
		}
		struct journal_report jr = { is_json, problems, &progress, files.paths[i], counts };

		if (adump_journal_list(files.paths[i], journal_problem, &jr) >= 0) {
			tool_progress_step(&progress);
			continue;
		}
		if (list_losses(files.paths[i], is_json, problems, &progress, counts)) {
			tool_progress_step(&progress);
			continue;
		}
		if (kind == ADUMP_PACKED_FILE_INDEX) {
			ret = adump_reader_packed_open(files.paths[i], &p);
			if (ret < 0) {
				counts[VERDICT_BAD]++;
				snprintf(msg, sizeof(msg), "%s: %s", files.paths[i],
					 adump_strerror(ret));
				report(is_json, problems, &progress, VERDICT_BAD, files.paths[i], msg);
				continue;
			}
		}
		for (;;) {
			const char *name = files.paths[i];

			if (p) {
				ret = adump_reader_packed_next(p, &e);
				if (ret <= 0)
					break;
				v = verify_entry(r, p, e, msg, sizeof(msg));
				if (e->status == ADUMP_PACKED_ENTRY &&
				    snprintf(entry_name, sizeof(entry_name), "%s/%s",
					     adump_reader_packed_dir(p), e->name) <
					    (int)sizeof(entry_name))
					name = entry_name;
				if (e->status == ADUMP_PACKED_ENTRY &&
				    verify_segment_note(&ends, adump_reader_packed_dir(p), e) < 0) {
					adump_reader_packed_close(p);
					tool_progress_end(&progress);
					tool_err("adump verify: out of memory\n");
					rc = 1;
					goto out;
				}
				entry_count += e->status != ADUMP_PACKED_LEFTOVER;
				/* The cut-short line is the index's last: cut once it is read. */
				if (v == VERDICT_LEFTOVER && is_clean) {
					has_cut_line = true;
					tool_progress_step(&progress);
					continue;
				}
			} else {
				v = verify_one(r, files.paths[i], msg, sizeof(msg));
				if (v == VERDICT_PART && is_clean) {
					if (unlink(files.paths[i]) == 0) {
						v = VERDICT_REMOVED;
						snprintf(msg, sizeof(msg), "%s: leftover .part file removed",
							 files.paths[i]);
					} else {
						snprintf(msg, sizeof(msg), "%s: leftover .part file, cannot "
							 "remove it: %s", files.paths[i], strerror(errno));
					}
				}
			}
			counts[v]++;
			if (v != VERDICT_OK && v != VERDICT_SKIPPED)
				report(is_json, problems, &progress, v, name, msg);
			tool_progress_step(&progress);
			if (!p)
				break;
		}
		if (p && ret < 0) {
			counts[VERDICT_BAD]++;
			snprintf(msg, sizeof(msg), "%s: reading the index: %s", files.paths[i],
				 adump_strerror(ret));
			report(is_json, problems, &progress, VERDICT_BAD, files.paths[i], msg);
		}
		adump_reader_packed_close(p);
		if (has_cut_line) {
			ret = verify_trim_index(files.paths[i]);
			v = ret < 0 ? VERDICT_BAD : VERDICT_REMOVED;
			snprintf(msg, sizeof(msg), "%s: cut-short last line %s%s", files.paths[i],
				 ret < 0 ? "not removed: " : "removed", ret < 0 ? strerror(-ret) : "");
			counts[v]++;
			report(is_json, problems, &progress, v, files.paths[i], msg);
		}
		if (!p)
			file_count++;
	}
	/* Segment tails, once every index is read. Where an index has a bad line, the entries
	 * it names are unknown: no tail is judged (nor cut) then. */
	for (size_t i = 0; i < files.count && !counts[VERDICT_BAD]; i++) {
		char msg[8600];
		enum verdict v;

		if (adump_reader_packed_file_kind(files.paths[i]) != ADUMP_PACKED_FILE_SEGMENT)
			continue;
		v = verify_check_segment_tail(files.paths[i], &ends, is_clean, msg, sizeof(msg));
		counts[v] += v != VERDICT_OK;
		if (v != VERDICT_OK)
			report(is_json, problems, &progress, v, files.paths[i], msg);
	}
	/* A link, FIFO, socket or device inside the capture (a dump replaced by one): never
	 * followed nor read, and a problem, not passed by (issue 30). */
	tool_files_sort(&odd);
	for (size_t i = 0; i < odd.count; i++) {
		char msg[8600];

		snprintf(msg, sizeof(msg), "%s: not a regular file (a symbolic link, FIFO, socket "
			 "or device inside the capture): not read", odd.paths[i]);
		counts[VERDICT_BAD]++;
		file_count++;
		report(is_json, problems, &progress, VERDICT_BAD, odd.paths[i], msg);
	}
	tool_progress_end(&progress);

	uint64_t problem_count = counts[VERDICT_BAD] + counts[VERDICT_PART] +
				 counts[VERDICT_FAILED] + counts[VERDICT_LOST] +
				 counts[VERDICT_MISSING] + counts[VERDICT_IN_PROGRESS];
	bool is_empty = counts[VERDICT_OK] + problem_count == 0;

	if (is_json) {
		json_object_object_add(doc, "files", json_object_new_int64((int64_t)file_count));
		json_object_object_add(doc, "packed_entries",
				       json_object_new_int64((int64_t)entry_count));
		for (int v = 0; v < VERDICT_COUNT; v++)
			json_object_object_add(doc, verdict_names[v],
					       json_object_new_int64((int64_t)counts[v]));
		json_object_object_add(doc, "problems", problems);
		json_object_object_add(doc, "passed",
				       json_object_new_boolean(!problem_count && !is_empty));
		printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
									   JSON_C_TO_STRING_NOSLASHESCAPE));
	} else {
		printf("verify: %llu files", (unsigned long long)file_count);
		if (entry_count)
			printf(" and %llu packed entries", (unsigned long long)entry_count);
		printf(": %llu ok, %llu bad, %llu .part leftover, %llu failed",
		       (unsigned long long)counts[VERDICT_OK],
		       (unsigned long long)counts[VERDICT_BAD],
		       (unsigned long long)counts[VERDICT_PART],
		       (unsigned long long)counts[VERDICT_FAILED]);
		if (counts[VERDICT_SKIPPED])
			printf(", %llu skipped as not dumps (.csv, .json, .html)",
			       (unsigned long long)counts[VERDICT_SKIPPED]);
		if (counts[VERDICT_LEFTOVER])
			printf(", %llu cut-short index line(s) (warning)",
			       (unsigned long long)counts[VERDICT_LEFTOVER]);
		if (counts[VERDICT_SEGMENT_TAIL])
			printf(", %llu unindexed segment tail(s) (warning)",
			       (unsigned long long)counts[VERDICT_SEGMENT_TAIL]);
		if (counts[VERDICT_REMOVED])
			printf(", %llu leftover(s) removed",
			       (unsigned long long)counts[VERDICT_REMOVED]);
		if (counts[VERDICT_LOST])
			printf(", %llu tensor(s) lost (" ADUMP_LOSS_LOG_NAME ")",
			       (unsigned long long)counts[VERDICT_LOST]);
		if (counts[VERDICT_MISSING])
			printf(", %llu dump(s) handed over but never written",
			       (unsigned long long)counts[VERDICT_MISSING]);
		if (counts[VERDICT_IN_PROGRESS])
			printf(", %llu dump(s) not yet written (capture in progress)",
			       (unsigned long long)counts[VERDICT_IN_PROGRESS]);
		printf("%s\n", is_empty ? " (no dump files found)" : problem_count ? "" : ": passed");
	}
	rc = problem_count || is_empty ? 1 : 0;
out:
	free(ends.items);
	json_object_put(doc);
	adump_reader_destroy(r);
	tool_files_free(&files);
	return rc;
}
