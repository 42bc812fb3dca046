/* SPDX-License-Identifier: Apache-2.0 */
/* `adump verify` and `adump inspect` end to end. verify: a clean directory passes; one with a
 * truncated file, a .part leftover, a .failed file, a corrupted header and a shape/size
 * mismatch fails and names each. inspect: its statistics match values computed here, and the
 * library's streaming statistics match on a tensor larger than one read step. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dump_data.pb-c.h"
#include "reader_helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif

static char *dir, *dump_dir;

static void setup(void)
{
	char path[PATH_MAX];

	dir = t_tmpdir("verify");
	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof(path), "%s/dump/20260101000000/0", dir);
	dump_dir = strdup(path);
	snprintf(path, sizeof(path), "mkdir -p %s", dump_dir);
	ck_assert_int_eq(system(path), 0);
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
	free(dump_dir);
}

/* The adump command with these arguments; stdout and stderr go to dir/stdout, dir/stderr. */
#define run(...) t_run_tool(ADUMP_TOOL, dir, __VA_ARGS__)

#define slurp(name) t_slurp(dir, name)

/* Write a small valid dump named by its op; returns its path (static buffer). */
static const char *write_dump(const char *op_name, uint32_t task_id)
{
	static char path[PATH_MAX];
	static const uint64_t dims[] = { 2, 3 };
	float a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 6, 5, 4, 3, 2, 1 }, out[6];
	struct adump_tensor t[3] = {
		rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 2, dims, sizeof(a)),
		rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 2, dims, sizeof(b)),
		rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, 2, dims, sizeof(out)),
	};
	const void *data[3] = { a, b, out };
	struct adump_op op = { .op_type = "Add", .op_name = op_name, .task_id = task_id,
			       .stream_id = 1, .timestamp_us = 1700000000000000ull + task_id,
			       .tensor_count = 3, .tensors = t };
	char name[256];

	for (int i = 0; i < 6; i++)
		out[i] = a[i] + b[i];
	ck_assert_int_gt(adump_dump_file_name(&op, name, sizeof(name)), 0);
	snprintf(path, sizeof(path), "%s/%s", dump_dir, name);
	ck_assert_int_eq(adump_dump_write_file(path, &op, data, 0644), 0);
	return path;
}

START_TEST(test_verify_clean)
{
	char csv[PATH_MAX];
	FILE *f;

	for (uint32_t i = 0; i < 20; i++)
		write_dump("add", i);
	/* A statistics-mode CSV is not a dump file: skipped, not a problem. */
	snprintf(csv, sizeof(csv), "%s/Add.stats.0.0.0.csv", dump_dir);
	f = fopen(csv, "w");
	fputs("Op Type,Op Name\n", f);
	fclose(f);
	ck_assert_int_eq(run("verify %s/dump", dir), 0);
	char *out = slurp("stdout");
	ck_assert_msg(strstr(out, "verify: 21 files: 20 ok, 0 bad, 0 .part leftover, 0 failed, "
				  "1 skipped as not dumps (.csv, .json, .html): passed"),
		      "%s", out);
	free(out);
	unlink(csv);
	/* An empty directory is not a passing dump. */
	ck_assert_int_eq(mkdir(dump_dir, 0755) == 0 || errno == EEXIST, 1);
	char empty[PATH_MAX];
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	ck_assert_int_eq(mkdir(empty, 0755), 0);
	ck_assert_int_eq(run("verify %s", empty), 1);
	ck_assert_int_eq(run("verify %s/missing", dir), 1);
	/* Not a terminal (stderr is a file here): no progress bar. */
	ck_assert_int_eq(run("verify %s/dump", dir), 0);
	out = slurp("stderr");
	ck_assert_str_eq(out, "");
	free(out);
	/* On a terminal, 20 files draw a bar that --quiet silences; script(1) provides one. */
	if (access("/usr/bin/script", X_OK) == 0) {
		char cmd[PATH_MAX * 2];

		snprintf(cmd, sizeof(cmd),
			 "/usr/bin/script -qc '%s verify %s/dump' /dev/null >%s/tty 2>&1", ADUMP_TOOL,
			 dir, dir);
		ck_assert_int_eq(system(cmd), 0);
		out = slurp("tty");
		ck_assert_msg(strstr(out, "\rverify [####"), "no bar in: %s", out);
		free(out);
		snprintf(cmd, sizeof(cmd),
			 "/usr/bin/script -qc '%s verify --quiet %s/dump' /dev/null >%s/tty 2>&1",
			 ADUMP_TOOL, dir, dir);
		ck_assert_int_eq(system(cmd), 0);
		out = slurp("tty");
		ck_assert_ptr_null(strstr(out, "verify ["));
		free(out);
	} else {
		fprintf(stderr, "note: no /usr/bin/script; terminal progress check skipped\n");
	}
	ck_assert_int_eq(run("verify --help"), 0);
}
END_TEST

static void truncate_by(const char *path, off_t bytes)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(truncate(path, st.st_size - bytes), 0);
}

START_TEST(test_verify_problems)
{
	char part[PATH_MAX], failed[PATH_MAX], truncated[PATH_MAX], corrupt[PATH_MAX],
		mismatch[PATH_MAX];
	int fd;

	write_dump("good", 1);
	snprintf(truncated, sizeof(truncated), "%s", write_dump("trunc", 2));
	truncate_by(truncated, 5);
	/* A .part leftover: the writer's temporary name for a file never finished. */
	snprintf(part, sizeof(part), "%s.part", write_dump("part", 3));
	{
		char final[PATH_MAX];
		snprintf(final, sizeof(final), "%.*s", (int)(strlen(part) - 5), part);
		ck_assert_int_eq(rename(final, part), 0);
	}
	snprintf(failed, sizeof(failed), "%s.failed", write_dump("fail", 4));
	{
		char final[PATH_MAX];
		snprintf(final, sizeof(final), "%.*s", (int)(strlen(failed) - 7), failed);
		ck_assert_int_eq(rename(final, failed), 0);
	}
	/* Corrupt the header: a varint that never ends right after the length. */
	snprintf(corrupt, sizeof(corrupt), "%s", write_dump("corrupt", 5));
	fd = open(corrupt, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12, 8),
			 12);
	close(fd);
	/* Shape x dtype disagrees with size: header says [2, 3] float, size 20. */
	{
		static const uint64_t dims[] = { 2, 3 };
		unsigned char d[20] = { 0 };
		struct adump_tensor t = rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, 2, dims, 20);
		const void *data[1] = { d };
		struct adump_op op = { .op_type = "Add", .op_name = "mismatch", .tensor_count = 1,
				       .tensors = &t };

		snprintf(mismatch, sizeof(mismatch), "%s/Add.mismatch.0.0.0", dump_dir);
		ck_assert_int_eq(adump_dump_write_file(mismatch, &op, data, 0644), 0);
	}

	ck_assert_int_eq(run("verify %s/dump", dir), 1);
	char *out = slurp("stdout"), line[PATH_MAX + 64];
	snprintf(line, sizeof(line), "BAD    %s: truncated", truncated);
	ck_assert_msg(strstr(out, line), "no '%s' in:\n%s", line, out);
	snprintf(line, sizeof(line), "PART   %s: leftover .part", part);
	ck_assert_msg(strstr(out, line), "no '%s' in:\n%s", line, out);
	snprintf(line, sizeof(line), "FAILED %s: failed dump", failed);
	ck_assert_msg(strstr(out, line), "no '%s' in:\n%s", line, out);
	snprintf(line, sizeof(line), "BAD    %s: the ", corrupt);
	ck_assert_msg(strstr(out, line), "no '%s' in:\n%s", line, out);
	ck_assert_ptr_nonnull(strstr(out, "does not parse"));
	snprintf(line, sizeof(line), "BAD    %s: output 0: shape x DT_FLOAT = 24 bytes but size "
				     "is 20", mismatch);
	ck_assert_msg(strstr(out, line), "no '%s' in:\n%s", line, out);
	ck_assert_ptr_nonnull(strstr(out, "verify: 6 files: 1 ok, 3 bad, 1 .part leftover, "
					  "1 failed\n"));
	free(out);

	ck_assert_int_eq(run("verify --json %s/dump", dir), 1);
	out = slurp("stdout");
	json_object *doc = json_tokener_parse(out), *v;
	ck_assert_ptr_nonnull(doc);
	ck_assert(json_object_object_get_ex(doc, "bad", &v));
	ck_assert_int_eq(json_object_get_int(v), 3);
	ck_assert(json_object_object_get_ex(doc, "part", &v));
	ck_assert_int_eq(json_object_get_int(v), 1);
	ck_assert(json_object_object_get_ex(doc, "passed", &v));
	ck_assert(!json_object_get_boolean(v));
	ck_assert(json_object_object_get_ex(doc, "problems", &v));
	ck_assert_int_eq(json_object_array_length(v), 5);
	json_object_put(doc);
	free(out);
}
END_TEST

START_TEST(test_verify_unknown_dtype)
{
	Toolkit__Dumpdata__DumpData dd = TOOLKIT__DUMPDATA__DUMP_DATA__INIT;
	Toolkit__Dumpdata__OpInput in = TOOLKIT__DUMPDATA__OP_INPUT__INIT, *ins[1] = { &in };
	unsigned char buf[256] = { 0 };
	char path[PATH_MAX];
	uint64_t le;
	size_t n;
	FILE *f;

	/* A header whose dtype no table knows: the layout is fine, the dtype is not. */
	in.data_type = (Toolkit__Dumpdata__OutputDataType)99;
	in.size = 4;
	dd.n_input = 1;
	dd.input = ins;
	n = toolkit__dumpdata__dump_data__pack(&dd, buf + 8);
	le = htole64(n);
	memcpy(buf, &le, 8);
	snprintf(path, sizeof(path), "%s/Odd.o.0.0.0", dump_dir);
	f = fopen(path, "wb");
	ck_assert_uint_eq(fwrite(buf, 1, 8 + n + 4, f), 8 + n + 4);
	fclose(f);
	ck_assert_int_eq(run("verify %s", dump_dir), 1);
	char *out = slurp("stdout");
	ck_assert_msg(strstr(out, "input 0: unknown dtype 99"), "%s", out);
	free(out);
	ck_assert_int_eq(run("inspect %s", path), 0);
	out = slurp("stdout");
	ck_assert_msg(strstr(out, "input 0: unknown(99) NCHW"), "%s", out);
	free(out);
	ck_assert_int_eq(run("convert -d %s -out %s/npy", path, dir), 0);
	out = slurp("stderr");
	ck_assert_msg(strstr(out, "numpy has no dtype for unknown (99)"), "%s", out);
	free(out);
}
END_TEST

/* ---- inspect ---- */

struct expect {
	double min, max, mean;
	uint64_t nan_count, inf_count, count;
};

static struct expect expect_of(const double *v, size_t n)
{
	struct expect e = { 0 };
	double sum = 0;

	for (size_t i = 0; i < n; i++) {
		if (isnan(v[i])) {
			e.nan_count++;
			continue;
		}
		if (isinf(v[i])) {
			e.inf_count++;
			continue;
		}
		if (!e.count || v[i] < e.min)
			e.min = v[i];
		if (!e.count || v[i] > e.max)
			e.max = v[i];
		sum += v[i];
		e.count++;
	}
	e.mean = e.count ? sum / (double)e.count : 0;
	return e;
}

static void check_stats(json_object *tensor, const struct expect *e)
{
	json_object *stats, *v;

	ck_assert(json_object_object_get_ex(tensor, "stats", &stats));
	ck_assert(json_object_object_get_ex(stats, "nan_count", &v));
	ck_assert_uint_eq((uint64_t)json_object_get_int64(v), e->nan_count);
	ck_assert(json_object_object_get_ex(stats, "inf_count", &v));
	ck_assert_uint_eq((uint64_t)json_object_get_int64(v), e->inf_count);
	ck_assert(json_object_object_get_ex(stats, "min", &v));
	ck_assert_double_eq_tol(json_object_get_double(v), e->min, 1e-12 * fabs(e->min) + 1e-30);
	ck_assert(json_object_object_get_ex(stats, "max", &v));
	ck_assert_double_eq_tol(json_object_get_double(v), e->max, 1e-12 * fabs(e->max) + 1e-30);
	ck_assert(json_object_object_get_ex(stats, "mean", &v));
	ck_assert_double_eq_tol(json_object_get_double(v), e->mean, 1e-9 * fabs(e->mean) + 1e-12);
}

static uint16_t f32_to_f16(float f)
{
	/* Test-side encoder for values exactly representable in float16 (normal range). */
	uint32_t u;
	memcpy(&u, &f, 4);
	uint32_t sign = (u >> 16) & 0x8000, exp = (u >> 23) & 0xff, mant = u & 0x7fffff;

	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
	if (exp == 0)
		return (uint16_t)sign;
	return (uint16_t)(sign | ((exp - 112) << 10) | (mant >> 13));
}

START_TEST(test_inspect_stats)
{
	enum { N = 1000 };
	uint64_t state = t_seed();
	static float f[N];
	static double fd[N], hd[N], bd[N], id[N], ud[N], booleans[N];
	static uint16_t h[N], b[N];
	static int32_t ints[N];
	static uint64_t u64[N];
	static unsigned char bools[N];
	uint64_t dims[] = { N };
	struct adump_tensor t[6] = {
		rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 1, dims, sizeof(f)),
		rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT16, 1, dims, sizeof(h)),
		rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_BF16, 1, dims, sizeof(b)),
		rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_INT32, 1, dims, sizeof(ints)),
		rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_UINT64, 1, dims, sizeof(u64)),
		rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_BOOL, 1, dims, sizeof(bools)),
	};
	const void *data[6] = { f, h, b, ints, u64, bools };
	struct adump_op op = { .op_type = "Stat", .op_name = "s", .tensor_count = 6, .tensors = t };
	char path[PATH_MAX];

	for (int i = 0; i < N; i++) {
		float v = (float)((int64_t)(t_rand(&state) % 20001) - 10000) / 64.0f;
		uint32_t bits;

		f[i] = v;
		h[i] = f32_to_f16(v);
		memcpy(&bits, &v, 4);
		b[i] = (uint16_t)(bits >> 16);
		ints[i] = (int32_t)(t_rand(&state) % 2000001) - 1000000;
		u64[i] = t_rand(&state) >> (i % 64);
		bools[i] = (unsigned char)(t_rand(&state) & 1);
	}
	f[3] = NAN, f[10] = INFINITY, f[11] = -INFINITY;
	h[5] = 0x7e00, h[6] = 0x7c00;
	b[7] = 0xff80;   /* -inf */
	b[8] = 0x7fc0;   /* nan */
	for (int i = 0; i < N; i++) {
		uint32_t bits = (uint32_t)b[i] << 16;
		float bf;

		memcpy(&bf, &bits, 4);
		fd[i] = f[i];
		/* float16 and bfloat16 values: decode them the slow, obvious way. */
		if ((h[i] & 0x7c00) == 0x7c00)
			hd[i] = (h[i] & 0x3ff) ? NAN : (h[i] & 0x8000) ? -INFINITY : INFINITY;
		else if (h[i] & 0x7c00)
			hd[i] = ldexp(1.0 + (h[i] & 0x3ff) / 1024.0, ((h[i] >> 10) & 0x1f) - 15) *
				((h[i] & 0x8000) ? -1 : 1);
		else
			hd[i] = ldexp((h[i] & 0x3ff) / 1024.0, -14) * ((h[i] & 0x8000) ? -1 : 1);
		bd[i] = bf;
		id[i] = ints[i];
		ud[i] = (double)u64[i];
		booleans[i] = bools[i];
	}
	snprintf(path, sizeof(path), "%s/Stat.s.0.0.0", dump_dir);
	ck_assert_int_eq(adump_dump_write_file(path, &op, data, 0644), 0);
	ck_assert_int_eq(run("inspect --json %s", path), 0);

	char *out = slurp("stdout");
	json_object *doc = json_tokener_parse(out), *files, *file, *tensors, *v;
	ck_assert_ptr_nonnull(doc);
	ck_assert(json_object_object_get_ex(doc, "files", &files));
	file = json_object_array_get_idx(files, 0);
	ck_assert(json_object_object_get_ex(file, "op_name", &v));
	ck_assert_str_eq(json_object_get_string(v), "s");
	ck_assert(json_object_object_get_ex(file, "tensors", &tensors));
	ck_assert_int_eq(json_object_array_length(tensors), 6);

	struct expect e = expect_of(fd, N);
	ck_assert_uint_eq(e.nan_count, 1);
	ck_assert_uint_eq(e.inf_count, 2);
	check_stats(json_object_array_get_idx(tensors, 0), &e);
	e = expect_of(hd, N);
	ck_assert_uint_eq(e.nan_count, 1);
	check_stats(json_object_array_get_idx(tensors, 1), &e);
	e = expect_of(bd, N);
	check_stats(json_object_array_get_idx(tensors, 2), &e);
	e = expect_of(id, N);
	check_stats(json_object_array_get_idx(tensors, 3), &e);
	e = expect_of(ud, N);
	/* uint64 min and max are exact integers in the JSON. */
	uint64_t umin = UINT64_MAX, umax = 0;
	for (int i = 0; i < N; i++) {
		umin = u64[i] < umin ? u64[i] : umin;
		umax = u64[i] > umax ? u64[i] : umax;
	}
	json_object *st;
	ck_assert(json_object_object_get_ex(json_object_array_get_idx(tensors, 4), "stats", &st));
	ck_assert(json_object_object_get_ex(st, "max", &v));
	ck_assert_uint_eq(json_object_get_uint64(v), umax);
	ck_assert(json_object_object_get_ex(st, "min", &v));
	ck_assert_uint_eq(json_object_get_uint64(v), umin);
	e = expect_of(booleans, N);
	check_stats(json_object_array_get_idx(tensors, 5), &e);
	json_object_put(doc);
	free(out);

	/* The text form names the same figures. */
	ck_assert_int_eq(run("inspect %s", path), 0);
	out = slurp("stdout");
	ck_assert_ptr_nonnull(strstr(out, "input 0: DT_FLOAT ND shape [1000] orig [1000] size 4000"));
	ck_assert_ptr_nonnull(strstr(out, "nan 1 inf 2"));
	free(out);
	/* --no-stats reads headers only. */
	ck_assert_int_eq(run("inspect --no-stats %s", path), 0);
	out = slurp("stdout");
	ck_assert_ptr_nonnull(strstr(out, "input 0: DT_FLOAT ND shape [1000]"));
	ck_assert_ptr_null(strstr(out, " min "));
	free(out);
	ck_assert_int_eq(run("inspect --help"), 0);
	ck_assert_int_eq(run("inspect --bogus %s", path), 2);
	/* A bad file: message names it, exit 1, the good one is still printed. */
	char bad[PATH_MAX];
	snprintf(bad, sizeof(bad), "%s/bad", dir);
	FILE *fb = fopen(bad, "w");
	fputs("0123456789", fb);
	fclose(fb);
	ck_assert_int_eq(run("inspect %s %s", bad, path), 1);
	out = slurp("stderr");
	ck_assert_ptr_nonnull(strstr(out, "/bad: header length"));
	free(out);
}
END_TEST

START_TEST(test_stats_streaming)
{
	/* 3 MiB + 6 bytes of float16: several read steps and a short tail, from a file. */
	enum { N = 3 * 512 * 1024 + 3 };
	uint16_t *h = malloc(N * sizeof(*h));
	uint64_t dims[] = { N }, state = t_seed();
	struct adump_tensor t = rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT16, 1, dims,
					  N * sizeof(*h));
	const void *data[1] = { h };
	struct adump_op op = { .op_type = "Big", .op_name = "b", .tensor_count = 1, .tensors = &t };
	struct adump_reader_stats s;
	struct adump_reader *r;
	char path[PATH_MAX];

	for (int i = 0; i < N; i++) {
		int v = (int)(t_rand(&state) % 4001) - 2000;   /* exact in float16 */

		h[i] = f32_to_f16((float)v);
	}
	h[N - 1] = 0x7e00;
	snprintf(path, sizeof(path), "%s/Big.b.0.0.0", dump_dir);
	ck_assert_int_eq(adump_dump_write_file(path, &op, data, 0644), 0);
	ck_assert_int_eq(adump_reader_create(&r), 0);
	ck_assert_int_eq(adump_reader_open(r, path), 0);
	ck_assert_int_eq(adump_reader_tensor_stats(r, 0, &s), 0);
	ck_assert_uint_eq(s.element_count, N);
	ck_assert_uint_eq(s.nan_count, 1);
	ck_assert_uint_eq(s.finite_count, N - 1);
	/* Recompute without the element replaced by NaN. */
	{
		double recomputed = 0, rmin = INFINITY, rmax = -INFINITY;
		state = t_seed();
		for (int i = 0; i < N - 1; i++) {
			int v = (int)(t_rand(&state) % 4001) - 2000;
			recomputed += v;
			rmin = v < rmin ? v : rmin;
			rmax = v > rmax ? v : rmax;
		}
		ck_assert_double_eq(s.min, rmin);
		ck_assert_double_eq(s.max, rmax);
		ck_assert_double_eq_tol(s.mean, recomputed / (N - 1), 1e-9);
	}
	adump_reader_destroy(r);
	free(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reader_verify_inspect");
	TCase *tc = tcase_create("verify");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_verify_clean);
	tcase_add_test(tc, test_verify_problems);
	tcase_add_test(tc, test_verify_unknown_dtype);
	suite_add_tcase(s, tc);

	tc = tcase_create("inspect");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_inspect_stats);
	tcase_add_test(tc, test_stats_streaming);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
