/* SPDX-License-Identifier: Apache-2.0 */
/* The reader on issue 5's containers: captures written as LZ4 frames and as packed segments
 * (by the real pipeline, from the simulated NPU) pass `adump verify` and convert to the same
 * .npy files as the plain capture of the same ops; a damaged frame, a flipped segment byte
 * and an index line past its segment's end fail verify cleanly, a cut-short last index line
 * is only a warning; inspect and the reader API read .lz4 files, also backwards. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adump/device.h"
#include "reader_helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif

#define TIME_DIR "20260105000000"
#define OP_COUNT 12
#define CHUNK_BYTES (16u << 10)          /* several LZ4 blocks per frame */

static char *dir;

/* Host copies of every op's inputs: op k adds self[k] and other[k] (float32). */
static float *inputs[OP_COUNT][2];
static uint64_t counts[OP_COUNT];

static void setup(void)
{
	uint64_t rng = t_seed();

	dir = t_tmpdir("containers");
	ck_assert_ptr_nonnull(dir);
	for (int k = 0; k < OP_COUNT; k++) {
		/* Sizes from one element to a few chunks, none a multiple of the chunk. */
		counts[k] = 1 + (uint64_t)k * k * 211;
		for (int j = 0; j < 2; j++) {
			inputs[k][j] = malloc(counts[k] * sizeof(float));
			ck_assert_ptr_nonnull(inputs[k][j]);
			for (uint64_t i = 0; i < counts[k]; i++)
				/* Small integers: compressible, exact in float32. */
				inputs[k][j][i] = (float)(int)(t_rand(&rng) % 64) - 32.0f;
		}
	}
}

static void teardown(void)
{
	for (int k = 0; k < OP_COUNT; k++)
		for (int j = 0; j < 2; j++) {
			free(inputs[k][j]);
			inputs[k][j] = NULL;
		}
	t_rmtree(dir);
	free(dir);
}

/* Capture the OP_COUNT Adds into <dir>/<name>/TIME_DIR with @compress and @layout. */
static void capture(const char *name, enum adump_compress compress, enum adump_layout layout)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	struct adump_dev_stream *stream;
	struct adump_dev *dev;
	struct adump_stats st;
	char root[PATH_MAX];

	snprintf(root, sizeof(root), "%s/%s", dir, name);
	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.worker_count = 1;
	cfg.stream_max = 1;
	cfg.chunk_bytes = CHUNK_BYTES;
	cfg.pool_bytes = 16 * CHUNK_BYTES;
	cfg.compress = compress;
	cfg.layout = layout;
	cfg.segment_bytes = 64u << 10;          /* several segments */
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_dev_open(0, &dev), 0);
	ck_assert_int_eq(adump_dev_stream_create(dev, &stream), 0);
	ck_assert_int_eq(adump_session_attach(s, stream), 0);
	for (int k = 0; k < OP_COUNT; k++) {
		uint64_t bytes = counts[k] * sizeof(float);
		struct adump_dev_tensor t[3] = { 0 };
		void *mem[3];
		char op_name[32];
		struct adump_dev_dump dump = { .op_type = "Add", .op_name = op_name,
					       .tensor_mask = ADUMP_DUMP_ALL };

		snprintf(op_name, sizeof(op_name), "add_%d", k);
		for (int j = 0; j < 3; j++) {
			ck_assert_int_eq(adump_dev_malloc(dev, bytes, &mem[j]), 0);
			t[j] = (struct adump_dev_tensor){ .data = mem[j], .dtype = ADUMP_DT_FLOAT,
							  .format = ADUMP_FORMAT_ND, .dim_count = 2,
							  .dims = { 1, (int64_t)counts[k] },
							  .bytes = bytes };
			if (j < 2)
				ck_assert_int_eq(adump_dev_memcpy(dev, mem[j], bytes, inputs[k][j],
								  bytes, ADUMP_COPY_HOST_TO_DEVICE),
						 0);
		}
		ck_assert_int_eq(adump_dev_launch_add(stream, &t[0], &t[1], 1.0, &t[2], &dump), 0);
		ck_assert_int_eq(adump_dev_stream_sync(stream), 0);
		for (int j = 0; j < 3; j++)
			adump_dev_free(dev, mem[j]);
	}
	ck_assert_int_eq(adump_session_detach(s, stream), 0);
	ck_assert_int_eq(adump_dev_stream_destroy(stream), 0);
	adump_dev_close(dev);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, OP_COUNT);
	ck_assert_uint_eq(st.files_failed, 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
}

/* The adump command with these arguments; stdout and stderr go to dir/stdout, dir/stderr. */
#define run(...) t_run_tool(ADUMP_TOOL, dir, __VA_ARGS__)

#define slurp(name) t_slurp(dir, name)

/* The first file in <dir>/<sub> whose name ends with @suffix (static buffer), or NULL. */
static const char *find_file(const char *sub, const char *suffix)
{
	static char path[PATH_MAX];
	char d[PATH_MAX];
	struct dirent *e;
	DIR *dd;

	snprintf(d, sizeof(d), "%s/%s", dir, sub);
	dd = opendir(d);
	ck_assert_ptr_nonnull(dd);
	while ((e = readdir(dd))) {
		size_t n = strlen(e->d_name), m = strlen(suffix);

		if (n > m && !strcmp(e->d_name + n - m, suffix)) {
			snprintf(path, sizeof(path), "%s/%s", d, e->d_name);
			closedir(dd);
			return path;
		}
	}
	closedir(dd);
	return NULL;
}

/* "<op name>.<task>.<kind>.<i>.npy" from "Add.<op name>.<task>.<stream>.<time>.<kind>.<i>.npy":
 * the stream id and time differ between captures, the rest names the array. */
static void array_key(const char *file, char *key, size_t cap)
{
	char copy[512], *fields[16], *save = NULL;
	int n = 0;

	snprintf(copy, sizeof(copy), "%s", file);
	for (char *tok = strtok_r(copy, ".", &save); tok && n < 16; tok = strtok_r(NULL, ".", &save))
		fields[n++] = tok;
	ck_assert_msg(n == 8, "unexpected output name %s", file);
	snprintf(key, cap, "%s.%s.%s.%s.%s", fields[1], fields[2], fields[5], fields[6], fields[7]);
}

struct listing {
	char keys[3 * OP_COUNT][128];
	char files[3 * OP_COUNT][256];
	int count;
};

static void list_arrays(const char *sub, struct listing *l)
{
	char d[PATH_MAX];
	struct dirent *e;
	DIR *dd;

	memset(l, 0, sizeof(*l));
	snprintf(d, sizeof(d), "%s/%s", dir, sub);
	dd = opendir(d);
	ck_assert_ptr_nonnull(dd);
	while ((e = readdir(dd))) {
		if (e->d_name[0] == '.')
			continue;
		ck_assert_int_lt(l->count, 3 * OP_COUNT);
		array_key(e->d_name, l->keys[l->count], sizeof(l->keys[0]));
		snprintf(l->files[l->count], sizeof(l->files[0]), "%s/%s", d, e->d_name);
		l->count++;
	}
	closedir(dd);
}

/* Every array of <dir>/@a has a byte-identical twin in <dir>/@b, and the other way round. */
static void check_same_arrays(const char *a, const char *b)
{
	static struct listing la, lb;

	list_arrays(a, &la);
	list_arrays(b, &lb);
	ck_assert_int_eq(la.count, 3 * OP_COUNT);
	ck_assert_int_eq(lb.count, la.count);
	for (int i = 0; i < la.count; i++) {
		int j = 0;

		while (j < lb.count && strcmp(la.keys[i], lb.keys[j]))
			j++;
		ck_assert_msg(j < lb.count, "%s has no twin in %s", la.files[i], b);
		size_t na, nb;
		void *da = t_read_file(la.files[i], &na), *db = t_read_file(lb.files[j], &nb);

		ck_assert_ptr_nonnull(da);
		ck_assert_ptr_nonnull(db);
		ck_assert_msg(na == nb && !memcmp(da, db, na), "%s and %s differ", la.files[i],
			      lb.files[j]);
		free(da);
		free(db);
	}
}

/* The plain capture's arrays hold the inputs and their sum. */
static void check_values(const char *sub)
{
	static struct listing l;

	list_arrays(sub, &l);
	for (int i = 0; i < l.count; i++) {
		int k, index;
		char kind[16];
		size_t len;
		unsigned char *npy;

		ck_assert_int_eq(sscanf(l.keys[i], "add_%d.%*u.%15[a-z].%d.npy", &k, kind, &index), 3);
		npy = t_read_file(l.files[i], &len);
		ck_assert_ptr_nonnull(npy);
		size_t header = 10 + (size_t)(npy[8] | npy[9] << 8);
		ck_assert_uint_eq(len - header, counts[k] * sizeof(float));
		const float *v = (const float *)(npy + header);
		for (uint64_t e = 0; e < counts[k]; e++) {
			float want = !strcmp(kind, "input") ? inputs[k][index][e]
							    : inputs[k][0][e] + inputs[k][1][e];
			ck_assert_msg(v[e] == want, "%s[%llu] = %g, want %g", l.files[i],
				      (unsigned long long)e, v[e], want);
		}
		free(npy);
	}
}

START_TEST(test_lz4_and_packed_convert_like_plain)
{
	capture("plain", ADUMP_COMPRESS_NONE, ADUMP_LAYOUT_FILES);
	capture("lz4", ADUMP_COMPRESS_LZ4, ADUMP_LAYOUT_FILES);
	capture("packed", ADUMP_COMPRESS_NONE, ADUMP_LAYOUT_PACKED);

	ck_assert_int_eq(run("verify %s/lz4", dir), 0);
	char *out = slurp("stdout");
	ck_assert_msg(strstr(out, "verify: 12 files: 12 ok, 0 bad, 0 .part leftover, 0 failed: "
				  "passed"), "%s", out);
	free(out);
	ck_assert_int_eq(run("verify %s/packed", dir), 0);
	out = slurp("stdout");
	ck_assert_msg(strstr(out, "verify: 0 files and 12 packed entries: 12 ok, 0 bad"), "%s", out);
	free(out);

	ck_assert_int_eq(run("convert -d %s/plain -r -out %s/out-plain", dir, dir), 0);
	ck_assert_int_eq(run("convert -d %s/lz4 -r -out %s/out-lz4", dir, dir), 0);
	/* The capture directory, without -r: its packed/ folder is taken in. */
	ck_assert_int_eq(run("convert -d %s/packed/%s -out %s/out-packed", dir, TIME_DIR, dir), 0);
	/* With -r from the dump path, and from the packed folder itself. */
	ck_assert_int_eq(run("convert -d %s/packed -r -out %s/out-packed-r", dir, dir), 0);
	ck_assert_int_eq(run("convert -d %s/packed/%s/packed -out %s/out-packed-dir", dir, TIME_DIR,
			     dir), 0);
	check_values("out-plain");
	check_same_arrays("out-plain", "out-lz4");
	check_same_arrays("out-plain", "out-packed");
	check_same_arrays("out-plain", "out-packed-r");
	check_same_arrays("out-plain", "out-packed-dir");
}
END_TEST

START_TEST(test_verify_rejects_a_damaged_frame)
{
	char sub[PATH_MAX], path[PATH_MAX + 16];
	struct stat st;
	FILE *f;

	capture("lz4", ADUMP_COMPRESS_LZ4, ADUMP_LAYOUT_FILES);
	snprintf(sub, sizeof(sub), "lz4/%s/0", TIME_DIR);
	/* The largest op's frame: flip a byte in the middle of its blocks. */
	const char *victim = NULL;
	uint64_t victim_bytes = 0;
	DIR *dd;
	struct dirent *e;
	char d[PATH_MAX];

	snprintf(d, sizeof(d), "%s/%s", dir, sub);
	dd = opendir(d);
	ck_assert_ptr_nonnull(dd);
	while ((e = readdir(dd))) {
		snprintf(path, sizeof(path), "%s/%s", d, e->d_name);
		if (e->d_name[0] != '.' && stat(path, &st) == 0 && (uint64_t)st.st_size > victim_bytes) {
			victim_bytes = (uint64_t)st.st_size;
			free((void *)victim);
			victim = strdup(path);
		}
	}
	closedir(dd);
	ck_assert_ptr_nonnull(victim);
	f = fopen(victim, "r+b");
	ck_assert_ptr_nonnull(f);
	fseek(f, (long)(victim_bytes / 2), SEEK_SET);
	int c = fgetc(f);
	fseek(f, (long)(victim_bytes / 2), SEEK_SET);
	fputc(c ^ 0x5a, f);
	fclose(f);
	/* And a leftover of an unfinished frame. */
	snprintf(path, sizeof(path), "%s/Add.x.1.2.3.lz4.part", d);
	f = fopen(path, "w");
	fclose(f);

	ck_assert_int_eq(run("verify %s/lz4", dir), 1);
	char *out = slurp("stdout");
	ck_assert_msg(strstr(out, "BAD") && strstr(out, victim), "%s", out);
	ck_assert_msg(strstr(out, "lz4"), "%s", out);
	ck_assert_msg(strstr(out, "PART") && strstr(out, ".lz4.part"), "%s", out);
	ck_assert_msg(strstr(out, "13 files: 11 ok, 1 bad, 1 .part leftover, 0 failed"), "%s", out);
	free(out);
	/* convert names the damaged file and fails. */
	ck_assert_int_eq(run("convert -d %s/lz4 -r -out %s/out", dir, dir), 1);
	out = slurp("stderr");
	ck_assert_msg(strstr(out, victim), "%s", out);
	free(out);
	free((void *)victim);
}
END_TEST

/* Append @text to <dir>/packed/TIME_DIR/packed/@file. */
static void append(const char *file, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/packed/%s/packed/%s", dir, TIME_DIR, file);
	f = fopen(path, "a");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(test_verify_packed_damage)
{
	char path[PATH_MAX], line[512];
	struct stat st;
	FILE *f;

	capture("packed", ADUMP_COMPRESS_NONE, ADUMP_LAYOUT_PACKED);
	/* A cut-short last line is what a crash leaves: a warning, verify still passes. */
	append("w0.idx", "0/Add.add_99.99.1.17");
	ck_assert_int_eq(run("verify %s/packed", dir), 0);
	char *out = slurp("stdout");
	ck_assert_msg(strstr(out, "WARN") && strstr(out, "w0.idx line 13"), "%s", out);
	ck_assert_msg(strstr(out, "1 cut-short index line(s) (warning)") && strstr(out, "passed"),
		      "%s", out);
	free(out);

	/* Finish that line so it points past the end of its segment: an error. */
	snprintf(path, sizeof(path), "%s/packed/%s/packed/w0-0.seg", dir, TIME_DIR);
	ck_assert_int_eq(stat(path, &st), 0);
	snprintf(line, sizeof(line), "\tw0-0.seg\t%llu\t64\t00000000\n",
		 (unsigned long long)st.st_size - 10);
	append("w0.idx", line);
	/* Flip one byte of the first entry. */
	f = fopen(path, "r+b");
	ck_assert_ptr_nonnull(f);
	fseek(f, 40, SEEK_SET);
	int c = fgetc(f);
	fseek(f, 40, SEEK_SET);
	fputc(c ^ 0x01, f);
	fclose(f);

	ck_assert_int_eq(run("verify %s/packed", dir), 1);
	out = slurp("stdout");
	ck_assert_msg(strstr(out, "CRC32C mismatch"), "%s", out);
	ck_assert_msg(strstr(out, "past the end of segment w0-0.seg"), "%s", out);
	ck_assert_msg(strstr(out, "13 packed entries: 11 ok, 2 bad"), "%s", out);
	free(out);
	/* JSON names both problems too. */
	ck_assert_int_eq(run("verify --json %s/packed", dir), 1);
	out = slurp("stdout");
	ck_assert_msg(strstr(out, "\"bad\":2") && strstr(out, "\"passed\":false"), "%s", out);
	free(out);
	/* A malformed complete line is an error as well. */
	append("w0.idx", "garbage\n");
	ck_assert_int_eq(run("verify %s/packed", dir), 1);
	out = slurp("stdout");
	ck_assert_msg(strstr(out, "w0.idx line 14: expected 5 tab-separated fields"), "%s", out);
	free(out);
	/* A missing segment fails every entry it holds, and says which segment. */
	snprintf(path, sizeof(path), "%s/packed/%s/packed/w0-1.seg", dir, TIME_DIR);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(run("verify %s/packed", dir), 1);
	out = slurp("stdout");
	ck_assert_msg(strstr(out, "segment w0-1.seg: No such file or directory"), "%s", out);
	free(out);
}
END_TEST

START_TEST(test_inspect_reads_lz4_and_entries)
{
	char sub[PATH_MAX];

	capture("lz4", ADUMP_COMPRESS_LZ4, ADUMP_LAYOUT_FILES);
	capture("packed", ADUMP_COMPRESS_NONE, ADUMP_LAYOUT_PACKED);
	snprintf(sub, sizeof(sub), "lz4/%s/0", TIME_DIR);
	const char *file = find_file(sub, ".lz4");
	ck_assert_ptr_nonnull(file);
	ck_assert_int_eq(run("inspect %s", file), 0);
	char *out = slurp("stdout");
	ck_assert_msg(strstr(out, "op_name add_") && strstr(out, "input 0: DT_FLOAT ND") &&
			      strstr(out, " min ") && strstr(out, " nan 0 inf 0"),
		      "%s", out);
	free(out);

	/* The whole packed capture, then one entry by its file name. */
	ck_assert_int_eq(run("inspect --no-stats %s/packed/%s", dir, TIME_DIR), 0);
	out = slurp("stdout");
	int n = 0;
	for (const char *p = out; (p = strstr(p, "op_name add_")); p++)
		n++;
	ck_assert_int_eq(n, OP_COUNT);
	const char *first = strstr(out, "/packed/0/Add.");
	ck_assert_ptr_nonnull(first);
	char name[256];
	ck_assert_int_eq(sscanf(first + strlen("/packed/0/"), "%255s", name), 1);
	free(out);
	ck_assert_int_eq(run("inspect --json %s/packed/%s/%s", dir, TIME_DIR, name), 0);
	out = slurp("stdout");
	ck_assert_msg(strstr(out, name) && strstr(out, "\"nan_count\":0"), "%s", out);
	free(out);
	ck_assert_int_eq(run("inspect %s/packed/%s/packed/0/Add.nothing", dir, TIME_DIR), 1);
	out = slurp("stderr");
	ck_assert_msg(strstr(out, "no entry named 0/Add.nothing"), "%s", out);
	free(out);
}
END_TEST

START_TEST(test_reader_reads_lz4_backwards)
{
	struct adump_reader *r;
	char sub[PATH_MAX];
	const struct adump_reader_header *h;

	capture("lz4", ADUMP_COMPRESS_LZ4, ADUMP_LAYOUT_FILES);
	snprintf(sub, sizeof(sub), "lz4/%s/0", TIME_DIR);
	ck_assert_int_eq(adump_reader_create(&r), 0);
	for (int k = 0; k < OP_COUNT; k++) {
		char pattern[64];
		const char *file;
		DIR *dd;
		struct dirent *e;
		char d[PATH_MAX], path[PATH_MAX + 300];

		snprintf(pattern, sizeof(pattern), "Add.add_%d.", k);
		snprintf(d, sizeof(d), "%s/%s", dir, sub);
		dd = opendir(d);
		file = NULL;
		while ((e = readdir(dd)))
			if (!strncmp(e->d_name, pattern, strlen(pattern))) {
				snprintf(path, sizeof(path), "%s/%s", d, e->d_name);
				file = path;
			}
		closedir(dd);
		ck_assert_ptr_nonnull(file);
		ck_assert_msg(adump_reader_open(r, file) == 0, "%s", adump_reader_error(r));
		h = adump_reader_header(r);
		ck_assert_uint_eq(h->tensor_count, 3);
		ck_assert_ptr_null(adump_reader_map(r, 0));
		/* Output first, then the inputs back to front: every step goes backwards. */
		for (int t = 2; t >= 0; t--) {
			uint64_t bytes = counts[k] * sizeof(float);
			float *v = malloc(bytes);

			ck_assert_int_eq(adump_reader_read(r, (uint32_t)t, 0, v, bytes), 0);
			for (uint64_t i = 0; i < counts[k]; i++) {
				float want = t < 2 ? inputs[k][t][i] : inputs[k][0][i] + inputs[k][1][i];

				ck_assert(v[i] == want);
			}
			free(v);
		}
		ck_assert_msg(adump_reader_check(r) == 0, "%s", adump_reader_error(r));
		adump_reader_close(r);
	}
	adump_reader_destroy(r);
}
END_TEST

/* A frame without its content size, and bytes that are not a frame at all. */
START_TEST(test_reader_lz4_malformed)
{
	struct adump_reader *r;
	char path[PATH_MAX], cmd[PATH_MAX * 2];
	FILE *f;

	ck_assert_int_eq(adump_reader_create(&r), 0);
	snprintf(path, sizeof(path), "%s/junk.lz4", dir);
	f = fopen(path, "w");
	fputs("definitely not a frame", f);
	fclose(f);
	ck_assert_int_eq(adump_reader_open(r, path), -ADUMP_ERR_CORRUPT);
	ck_assert_msg(strstr(adump_reader_error(r), path) &&
			      strstr(adump_reader_error(r), "not a valid lz4 frame"),
		      "%s", adump_reader_error(r));
	/* The lz4 command leaves the content size out unless asked. */
	snprintf(cmd, sizeof(cmd), "command -v lz4 >/dev/null && head -c 1000 /dev/zero | "
				   "lz4 -q -c > %s/nosize.lz4", dir);
	if (system(cmd) == 0) {
		snprintf(path, sizeof(path), "%s/nosize.lz4", dir);
		ck_assert_int_eq(adump_reader_open(r, path), -ADUMP_ERR_UNSUPPORTED);
		ck_assert_msg(strstr(adump_reader_error(r), "does not record its content size"),
			      "%s", adump_reader_error(r));
	}
	adump_reader_destroy(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reader_containers");
	TCase *tc = tcase_create("containers");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_lz4_and_packed_convert_like_plain);
	tcase_add_test(tc, test_verify_rejects_a_damaged_frame);
	tcase_add_test(tc, test_verify_packed_damage);
	tcase_add_test(tc, test_inspect_reads_lz4_and_entries);
	tcase_add_test(tc, test_reader_reads_lz4_backwards);
	tcase_add_test(tc, test_reader_lz4_malformed);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
