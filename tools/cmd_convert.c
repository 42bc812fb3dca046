/* SPDX-License-Identifier: Apache-2.0 */
/* `adump convert -d <file|dir|f1,f2> [-out DIR]`: dump files (plain, .lz4 or the entries of
 * a packed capture) to numpy arrays, named as
 * msaccucmp's convert names them: <base>.input.<i>.npy, <base>.output.<i>.npy,
 * <base>.buffer.<i>.bin, <base>.space.<i>.bin; bases too long for the file system are hashed
 * and recorded in <out>/mapping.csv. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/reader.h"
#include "common/common.h"
#include "common/journal.h"
#include "tools/progress.h"
#include "tools/tool.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: adump convert -d <file|dir|file1,file2,...> [-out DIR] [-r] [--quiet]\n\n"
		"Writes each dump file's tensors as numpy arrays (format 1.0), like msaccucmp's\n"
		"convert:\n"
		"  <base>.input.<i>.npy, <base>.output.<i>.npy   inputs and outputs\n"
		"  <base>.buffer.<i>.bin, <base>.space.<i>.bin   buffers and workspaces, raw\n"
		"<base> is the dump file's name. bfloat16 is saved as float32; dtypes numpy lacks\n"
		"(int4, float8, ...) are saved raw as .bin with a note. When the header's shape does\n"
		"not match the size, the array is saved 1-D with a warning. Names too long for the\n"
		"file system use a hash of <base>, listed as '<hash>,<base>' in DIR/mapping.csv.\n\n"
		"Compressed dumps (<name>.lz4, dump_compress lz4) are read directly and converted\n"
		"under <name>. A packed capture (dump_layout packed) converts every entry of its\n"
		"indexes as if it were a file: give its directory (the one holding packed/), the\n"
		"packed/ directory or one w<k>.idx index.\n\n"
		"  -d PATH     a dump file, a directory of them, or a comma-separated list\n"
		"  -out DIR    output directory (default: current directory; created if missing)\n"
		"  -r          descend into subdirectories of a -d directory\n"
		"  --quiet     no progress bar\n"
		"Exits 1 when any file could not be converted.\n");
}

struct convert {
	const char *out_dir;
	long name_max;
	struct adump_reader *r;
	struct tool_progress progress;
	uint64_t array_count;
	uint64_t warning_count;
};

/* Append "<hash>,<base>" to mapping.csv unless the line is there already. */
static int add_mapping(struct convert *c, const char *hash, const char *base)
{
	char path[PATH_MAX], line[PATH_MAX + 64], want[PATH_MAX + 64];
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/mapping.csv", c->out_dir);
	snprintf(want, sizeof(want), "%s,%s\n", hash, base);
	f = fopen(path, "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (!strcmp(line, want)) {
				fclose(f);
				return 0;
			}
		fclose(f);
	}
	f = fopen(path, "a");
	if (!f)
		return -errno;
	if (fputs(want, f) == EOF)
		ret = -EIO;
	if (fclose(f) == EOF && !ret)
		ret = -errno;
	return ret;
}

/* The kind in an output file's name: the kind's name, but "space" for a workspace, as
 * msaccucmp names them (input, output, buffer, space). */
static const char *out_suffix(enum adump_tensor_kind kind)
{
	const char *name = adump_tensor_kind_name(kind);

	if (kind == ADUMP_TENSOR_WORKSPACE)
		return "space";
	return name ? name : "tensor";
}

/* Write one tensor to <out>/<base>.<kind>.<i>.<ext>. Return: 0 or -1 (message printed). */
static int convert_tensor(struct convert *c, const char *file, const char *base, uint32_t i)
{
	const struct adump_reader_tensor *t = &adump_reader_header(c->r)->tensors[i];
	const char *kind = out_suffix(t->info.kind), *descr = NULL, *dtype_name;
	bool is_array = t->info.kind == ADUMP_TENSOR_INPUT || t->info.kind == ADUMP_TENSOR_OUTPUT;
	uint64_t dims[ADUMP_MAX_DIMS], expect;
	uint32_t dim_count = t->info.dim_count;
	char path[PATH_MAX];
	int fd, ret;

	dtype_name = adump_dtype_name(t->info.dtype) ? adump_dtype_name(t->info.dtype) : "unknown";
	if (is_array) {
		descr = adump_reader_npy_descr(t->info.dtype);
		if (!descr) {
			tool_warn(&c->progress,
				  "adump convert: %s: %s %u: numpy has no dtype for %s (%d); "
				  "saved raw as .bin\n",
				  file, adump_reader_kind_name(t->info.kind), t->index, dtype_name,
				  t->info.dtype);
			c->warning_count++;
		}
	}
	if (descr) {
		memcpy(dims, t->info.dims, dim_count * sizeof(uint64_t));
		ret = adump_reader_tensor_expected_bytes(&t->info, &expect);
		if (ret < 0 || expect != t->info.bytes) {
			unsigned elem = adump_dtype_bits(t->info.dtype) / 8;

			c->warning_count++;
			if (elem && t->info.bytes % elem == 0) {
				tool_warn(&c->progress,
					  "adump convert: %s: %s %u: shape x %s does not match its "
					  "%llu bytes; saved as a 1-D array\n",
					  file, adump_reader_kind_name(t->info.kind), t->index,
					  dtype_name, (unsigned long long)t->info.bytes);
				dims[0] = t->info.bytes / elem;
				dim_count = 1;
			} else {
				tool_warn(&c->progress,
					  "adump convert: %s: %s %u: %llu bytes are not whole %s "
					  "elements; saved raw as .bin\n",
					  file, adump_reader_kind_name(t->info.kind), t->index,
					  (unsigned long long)t->info.bytes, dtype_name);
				descr = NULL;
			}
		}
	}
	if (snprintf(path, sizeof(path), "%s/%s.%s.%u.%s", c->out_dir, base, kind, t->index,
		     descr ? "npy" : "bin") >= (int)sizeof(path)) {
		tool_warn(&c->progress, "adump convert: %s: output path too long\n", file);
		return -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		tool_warn(&c->progress, "adump convert: %s: %s\n", path, strerror(errno));
		return -1;
	}
	ret = descr ? adump_reader_save_npy(c->r, i, dims, dim_count, fd)
		    : adump_reader_save_raw(c->r, i, fd);
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret < 0) {
		tool_warn(&c->progress, "adump convert: %s: %s\n", path,
			  adump_reader_error(c->r)[0] ? adump_reader_error(c->r)
						      : adump_strerror(ret));
		unlink(path);
		return -1;
	}
	c->array_count++;
	return 0;
}

/* The longest output name of a dump whose base is @len bytes. */
static size_t longest_name(const struct adump_reader_header *h, size_t len)
{
	/* ".output.<index>.npy" / ".buffer.<index>.bin" / ".input." / ".space." */
	size_t index_digits = (size_t)snprintf(NULL, 0, "%u", h->tensor_count);

	return len + strlen(".output.") + index_digits + strlen(".npy");
}

/* Convert the dump open in c->r, named @file; closes it. */
static int convert_opened(struct convert *c, const char *file)
{
	const struct adump_reader_header *h;
	const char *slash = strrchr(file, '/');
	char hashed[32], base_buf[PATH_MAX];
	const char *base = slash ? slash + 1 : file;
	int rc = 0;

	/* A compressed dump converts under the name of the file it holds. */
	if (tool_has_suffix(base, ".lz4") && strlen(base) > 4 && strlen(base) < sizeof(base_buf)) {
		memcpy(base_buf, base, strlen(base) - 4);
		base_buf[strlen(base) - 4] = '\0';
		base = base_buf;
	}
	h = adump_reader_header(c->r);
	if (longest_name(h, strlen(base)) > (size_t)c->name_max) {
		uint64_t hash = adump_fnv1a64(base, strlen(base));
		int ret;

		snprintf(hashed, sizeof(hashed), "%016llx", (unsigned long long)hash);
		ret = add_mapping(c, hashed, base);
		if (ret < 0) {
			tool_warn(&c->progress, "adump convert: %s/mapping.csv: %s\n", c->out_dir,
				  adump_strerror(ret));
			adump_reader_close(c->r);
			return -1;
		}
		base = hashed;
	}
	for (uint32_t i = 0; i < h->tensor_count; i++)
		if (convert_tensor(c, file, base, i) < 0)
			rc = -1;
	/* An LZ4 frame's checksum sits after the content, where the reads just ended, and a
	 * packed entry's CRC32C costs one more read from the page cache: arrays from damaged
	 * bytes must not pass silently. */
	if (rc == 0 && adump_reader_check(c->r) < 0) {
		tool_warn(&c->progress, "adump convert: %s (its arrays were written; they may hold "
					"damaged data)\n",
			  adump_reader_error(c->r));
		rc = -1;
	}
	adump_reader_close(c->r);
	return rc;
}

static int convert_file(struct convert *c, const char *file)
{
	if (adump_reader_open(c->r, file) < 0) {
		tool_warn(&c->progress, "adump convert: %s\n", adump_reader_error(c->r));
		return -1;
	}
	return convert_opened(c, file);
}

/* Convert every entry of a packed index, counting each like a file. */
static void convert_index(struct convert *c, const char *index, uint64_t *converted,
			  uint64_t *failed, uint64_t *leftovers)
{
	const struct adump_reader_packed_entry *e;
	struct adump_reader_packed *p;
	int ret = adump_reader_packed_open(index, &p);

	if (ret < 0) {
		tool_warn(&c->progress, "adump convert: %s: %s\n", index, adump_strerror(ret));
		(*failed)++;
		return;
	}
	while ((ret = adump_reader_packed_next(p, &e)) > 0) {
		if (e->status == ADUMP_PACKED_LEFTOVER) {
			(*leftovers)++;
		} else if (e->status != ADUMP_PACKED_ENTRY) {
			tool_warn(&c->progress, "adump convert: %s line %u: %s\n", e->index_path,
				  e->line, e->message);
			(*failed)++;
		} else if (adump_reader_open_packed(c->r, p, e, false) < 0) {
			tool_warn(&c->progress, "adump convert: %s\n", adump_reader_error(c->r));
			(*failed)++;
		} else if (convert_opened(c, adump_reader_name(c->r)) < 0) {
			(*failed)++;
		} else {
			(*converted)++;
		}
		tool_progress_step(&c->progress);
	}
	if (ret < 0) {
		tool_warn(&c->progress, "adump convert: %s: %s\n", index, adump_strerror(ret));
		(*failed)++;
	}
	adump_reader_packed_close(p);
}

/* Split -d: a comma list of files or directories. */
static int collect(const char *arg, bool recursive, struct tool_files *files)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int rc = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int ret;

		if (!*tok)
			continue;
		ret = tool_files_add(files, tok, recursive);
		if (ret < 0) {
			tool_err("adump convert: %s: %s\n", tok, adump_strerror(ret));
			rc = -1;
		} else if (!recursive) {
			/* A packed capture's directory holds only packed/: take it in without -r. */
			char packed[PATH_MAX];
			struct stat st;

			if (snprintf(packed, sizeof(packed), "%s/packed", tok) < (int)sizeof(packed) &&
			    stat(tok, &st) == 0 && S_ISDIR(st.st_mode) && stat(packed, &st) == 0 &&
			    S_ISDIR(st.st_mode))
				tool_files_add(files, packed, false);
		}
	}
	free(copy);
	return rc;
}

/* Files a directory holds that are not dumps: our own output, statistics CSVs, unfinished
 * writes, packed segments (read through their index), a capture's loss log and hand-over
 * journals (adump verify reads those). */
static bool is_skipped(const char *path, uint64_t *leftovers)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;

	if (adump_reader_packed_file_kind(path) == ADUMP_PACKED_FILE_SEGMENT ||
	    !strcmp(base, ADUMP_LOSS_LOG_NAME) ||
	    !strncmp(base, ADUMP_JOURNAL_PREFIX, strlen(ADUMP_JOURNAL_PREFIX)))
		return true;
	if (tool_has_suffix(path, ".part") || tool_has_suffix(path, ".failed")) {
		(*leftovers)++;
		return true;
	}
	/* .csv: mapping.csv and statistics-mode output. */
	return tool_has_suffix(path, ".npy") || tool_has_suffix(path, ".bin") ||
	       tool_has_suffix(path, ".csv");
}

int cmd_convert(int argc, char **argv)
{
	struct convert c = { .out_dir = "." };
	struct tool_files files = { 0 };
	const char *input = NULL;
	bool is_quiet = false, is_recursive = false;
	uint64_t leftovers = 0, failed = 0, converted = 0;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if ((!strcmp(argv[i], "-d") || !strcmp(argv[i], "--dump")) && i + 1 < argc) {
			input = argv[++i];
		} else if ((!strcmp(argv[i], "-out") || !strcmp(argv[i], "--out") ||
			    !strcmp(argv[i], "-o")) && i + 1 < argc) {
			c.out_dir = argv[++i];
		} else if (!strcmp(argv[i], "-r") || !strcmp(argv[i], "--recursive")) {
			is_recursive = true;
		} else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q")) {
			is_quiet = true;
		} else if (i + 1 == argc && (!strcmp(argv[i], "-d") || !strcmp(argv[i], "--dump") ||
					     !strcmp(argv[i], "-out") || !strcmp(argv[i], "--out") ||
					     !strcmp(argv[i], "-o"))) {
			tool_err("adump convert: option '%s' needs a value\n", argv[i]);
			usage(stderr);
			return 2;
		} else {
			tool_err("adump convert: unexpected argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (!input) {
		tool_err("adump convert: -d is required\n");
		usage(stderr);
		return 2;
	}
	if (mkdir(c.out_dir, 0755) < 0 && errno != EEXIST) {
		tool_err("adump convert: %s: %s\n", c.out_dir, strerror(errno));
		return 1;
	}
	c.name_max = pathconf(c.out_dir, _PC_NAME_MAX);
	if (c.name_max <= 0)
		c.name_max = NAME_MAX;
	if (collect(input, is_recursive, &files) < 0)
		rc = 1;
	tool_files_sort(&files);
	if (adump_reader_create(&c.r) < 0) {
		rc = 2;
		goto out;
	}
	/* Index files stand for their lines in the progress count. */
	uint64_t item_count = 0;
	for (size_t i = 0; i < files.count; i++) {
		struct adump_reader_packed *p;

		if (adump_reader_packed_file_kind(files.paths[i]) == ADUMP_PACKED_FILE_INDEX &&
		    adump_reader_packed_open(files.paths[i], &p) == 0) {
			item_count += adump_reader_packed_line_count(p);
			adump_reader_packed_close(p);
		} else {
			item_count++;
		}
	}
	tool_progress_start(&c.progress, "convert", item_count, is_quiet);
	for (size_t i = 0; i < files.count; i++) {
		if (adump_reader_packed_file_kind(files.paths[i]) == ADUMP_PACKED_FILE_INDEX) {
			convert_index(&c, files.paths[i], &converted, &failed, &leftovers);
			continue;
		}
		if (!is_skipped(files.paths[i], &leftovers)) {
			if (convert_file(&c, files.paths[i]) < 0)
				failed++;
			else
				converted++;
		}
		tool_progress_step(&c.progress);
	}
	tool_progress_end(&c.progress);
	if (leftovers)
		tool_err("adump convert: skipped %llu .part/.failed file(s) or cut-short "
				"index line(s); 'adump verify' lists them\n",
			(unsigned long long)leftovers);
	tool_err("adump convert: %llu file(s) converted, %llu failed, %llu array(s) "
			"written to %s%s\n",
		(unsigned long long)converted, (unsigned long long)failed,
		(unsigned long long)c.array_count, c.out_dir,
		c.warning_count ? " (with warnings)" : "");
	if (!converted && !failed && !is_recursive)
		tool_err("adump convert: no dump files found; -r descends into "
				"subdirectories (<dump_path>/<time>/<device>/)\n");
	if (failed || (!converted && !rc))
		rc = 1;
out:
	adump_reader_destroy(c.r);
	tool_files_free(&files);
	return rc;
}
