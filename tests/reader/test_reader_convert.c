/* SPDX-License-Identifier: Apache-2.0 */
/* `adump convert` end to end: one dump per dtype, written with adump_dump_write_file, becomes
 * <base>.input.0.npy / .output.0.npy with the .npy header checked byte by byte and the data
 * checked (bfloat16 widened to float32); types numpy lacks become .bin; a shape that does not
 * match the size falls back to 1-D; long names are hashed into mapping.csv; malformed files
 * fail with a message. numpy, when /usr/bin/python3 has it, loads every array as well. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reader_helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif

static char *dir, *in_dir, *out_dir;

static void setup(void)
{
	char path[PATH_MAX];

	dir = t_tmpdir("convert");
	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof(path), "%s/in", dir);
	in_dir = strdup(path);
	snprintf(path, sizeof(path), "%s/out", dir);
	out_dir = strdup(path);
	ck_assert_int_eq(mkdir(in_dir, 0755), 0);
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
	free(in_dir);
	free(out_dir);
}

/* Run a shell command line; returns its exit status. stdout/stderr go to dir/stdout, stderr. */
/* The adump command with these arguments; stdout and stderr go to dir/stdout, dir/stderr. */
#define run(...) t_run_tool(ADUMP_TOOL, dir, __VA_ARGS__)

#define slurp(name) t_slurp(dir, name)

/* The .npy header numpy 1.24 writes, built here independently of the reader's code. */
static size_t expected_npy_header(const char *descr, const uint64_t *dims, uint32_t n, char *out)
{
	char dict[1024];
	size_t len = (size_t)snprintf(dict, sizeof(dict),
				      "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);

	for (uint32_t i = 0; i < n; i++)
		len += (size_t)snprintf(dict + len, sizeof(dict) - len, i ? ", %llu" : "%llu",
					(unsigned long long)dims[i]);
	len += (size_t)snprintf(dict + len, sizeof(dict) - len, "%s", n == 1 ? ",), }" : "), }");
	if (n) {
		int digits = snprintf(NULL, 0, "%llu", (unsigned long long)dims[0]);
		len += (size_t)snprintf(dict + len, sizeof(dict) - len, "%*s", 21 - digits, "");
	}
	ck_assert_uint_lt(len, sizeof(dict));
	size_t total = 10 + len + 1;
	total += 64 - total % 64;
	memcpy(out, "\x93NUMPY\x01\x00", 8);
	out[8] = (char)((total - 10) & 0xff);
	out[9] = (char)((total - 10) >> 8);
	memcpy(out + 10, dict, len);
	memset(out + 10 + len, ' ', total - 10 - len - 1);
	out[total - 1] = '\n';
	return total;
}

START_TEST(test_npy_header_literal)
{
	static const uint64_t d2[] = { 4, 2 }, d1[] = { 5 };
	char buf[256], want[256];
	long n = adump_reader_npy_header("<f4", d2, 2, buf, sizeof(buf));
	static const char lit[] = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, "
				  "'shape': (4, 2), }";
	const long lit_len = (long)sizeof(lit) - 1;

	ck_assert_int_eq(n, 128);
	ck_assert_mem_eq(buf, lit, (size_t)lit_len);
	for (long i = lit_len; i < n - 1; i++)
		ck_assert_int_eq(buf[i], ' ');
	ck_assert_int_eq(buf[n - 1], '\n');
	ck_assert_int_eq(adump_reader_npy_header("|b1", d1, 1, buf, sizeof(buf)),
			 (long)expected_npy_header("|b1", d1, 1, want));
	ck_assert_mem_eq(buf, want, 128);
	ck_assert_int_eq(adump_reader_npy_header("<c8", NULL, 0, buf, sizeof(buf)),
			 (long)expected_npy_header("<c8", NULL, 0, want));
	ck_assert_mem_eq(buf, want, 128);
	ck_assert_int_eq(adump_reader_npy_header("<f4", d2, 2, buf, 64), -ADUMP_ERR_TOO_BIG);
	/* The widest header: 25 dimensions of 20 digits each. */
	uint64_t wide[ADUMP_MAX_DIMS];
	char big[1024], big_want[1024];
	for (int i = 0; i < ADUMP_MAX_DIMS; i++)
		wide[i] = UINT64_MAX - (uint64_t)i;
	n = adump_reader_npy_header("<c16", wide, ADUMP_MAX_DIMS, big, sizeof(big));
	ck_assert_int_eq(n, (long)expected_npy_header("<c16", wide, ADUMP_MAX_DIMS, big_want));
	ck_assert_int_eq(n % 64, 0);
	ck_assert_mem_eq(big, big_want, (size_t)n);
}
END_TEST

struct dtype_case {
	int32_t dtype;
	const char *descr;      /* NULL: numpy lacks it, .bin */
};

static const struct dtype_case cases[] = {
	{ ADUMP_DT_FLOAT, "<f4" },      { ADUMP_DT_FLOAT16, "<f2" },
	{ ADUMP_DT_INT8, "|i1" },       { ADUMP_DT_UINT8, "|u1" },
	{ ADUMP_DT_INT16, "<i2" },      { ADUMP_DT_UINT16, "<u2" },
	{ ADUMP_DT_INT32, "<i4" },      { ADUMP_DT_INT64, "<i8" },
	{ ADUMP_DT_UINT32, "<u4" },     { ADUMP_DT_UINT64, "<u8" },
	{ ADUMP_DT_BOOL, "|b1" },       { ADUMP_DT_DOUBLE, "<f8" },
	{ ADUMP_DT_COMPLEX64, "<c8" },  { ADUMP_DT_COMPLEX128, "<c16" },
	{ ADUMP_DT_BF16, "<f4" },       { ADUMP_DT_QINT8, "|i1" },
	{ ADUMP_DT_QUINT16, "<u2" },    { ADUMP_DT_DUAL_SUB_INT8, "|i1" },
	{ ADUMP_DT_INT4, NULL },        { ADUMP_DT_UINT1, NULL },
	{ ADUMP_DT_HIFLOAT8, NULL },    { ADUMP_DT_FLOAT8_E4M3FN, NULL },
	{ ADUMP_DT_FLOAT6_E3M2, NULL }, { ADUMP_DT_FLOAT4_E2M1, NULL },
	{ ADUMP_DT_COMPLEX32, NULL },   { ADUMP_DT_STRING, NULL },
};

#define CASE_COUNT (sizeof(cases) / sizeof(cases[0]))

static bool have_numpy(void)
{
	return system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
}

START_TEST(test_every_dtype)
{
	static const uint64_t dims[] = { 3, 2, 4 };
	uint64_t state = t_seed();
	FILE *manifest;
	char path[PATH_MAX], base[256];

	snprintf(path, sizeof(path), "%s/manifest.txt", dir);
	manifest = fopen(path, "w");
	ck_assert_ptr_nonnull(manifest);
	for (size_t c = 0; c < CASE_COUNT; c++) {
		unsigned bits = adump_dtype_bits(cases[c].dtype);
		uint64_t bytes = bits ? (24 * bits + 7) / 8 : 7;
		unsigned char in[512], out[512];
		struct adump_tensor t[2] = {
			rt_tensor(ADUMP_TENSOR_INPUT, cases[c].dtype, bits ? 3 : 0, dims, bytes),
			rt_tensor(ADUMP_TENSOR_OUTPUT, cases[c].dtype, bits ? 3 : 0, dims, bytes),
		};
		const void *data[2] = { in, out };
		struct adump_op op = { .op_type = "Cast", .op_name = "dt", .task_id = (uint32_t)c,
				       .timestamp_us = 1000 + c, .tensor_count = 2, .tensors = t };

		rt_fill(in, bytes, &state);
		rt_fill(out, bytes, &state);
		if (cases[c].dtype == ADUMP_DT_BOOL)
			for (uint64_t i = 0; i < bytes; i++)
				in[i] &= 1, out[i] &= 1;
		ck_assert_int_gt(adump_dump_file_name(&op, base, sizeof(base)), 0);
		snprintf(path, sizeof(path), "%s/%s", in_dir, base);
		ck_assert_int_eq(adump_dump_write_file(path, &op, data, 0644), 0);
		fprintf(manifest, "%s %s\n", base, cases[c].descr ? cases[c].descr : "-");
	}
	fclose(manifest);
	ck_assert_int_eq(run("convert -d %s -out %s", in_dir, out_dir), 0);

	state = t_seed();
	for (size_t c = 0; c < CASE_COUNT; c++) {
		unsigned bits = adump_dtype_bits(cases[c].dtype);
		uint64_t bytes = bits ? (24 * bits + 7) / 8 : 7;
		unsigned char in[512], out[512], want[2048];
		struct adump_op op = { .op_type = "Cast", .op_name = "dt", .task_id = (uint32_t)c,
				       .timestamp_us = 1000 + c };

		rt_fill(in, bytes, &state);
		rt_fill(out, bytes, &state);
		if (cases[c].dtype == ADUMP_DT_BOOL)
			for (uint64_t i = 0; i < bytes; i++)
				in[i] &= 1, out[i] &= 1;
		adump_dump_file_name(&op, base, sizeof(base));
		for (int k = 0; k < 2; k++) {
			const unsigned char *payload = k ? out : in;
			size_t len, hdr = 0, data_len = bytes;
			char *got;

			snprintf(path, sizeof(path), "%s/%s.%s.0.%s", out_dir, base,
				 k ? "output" : "input", cases[c].descr ? "npy" : "bin");
			got = t_read_file(path, &len);
			ck_assert_msg(got != NULL, "%s missing", path);
			if (cases[c].descr) {
				hdr = expected_npy_header(cases[c].descr, dims, 3, (char *)want);
				ck_assert_msg(len > hdr && !memcmp(got, want, hdr),
					      "%s: header differs", path);
			}
			if (cases[c].dtype == ADUMP_DT_BF16) {
				/* bfloat16 is the top half of a float32. */
				data_len = bytes * 2;
				for (uint64_t i = 0; i < bytes / 2; i++) {
					uint32_t f = (uint32_t)(payload[2 * i] |
								(payload[2 * i + 1] << 8)) << 16;
					memcpy(want + hdr + 4 * i, &f, 4);
				}
			} else {
				memcpy(want + hdr, payload, bytes);
			}
			ck_assert_uint_eq(len, hdr + data_len);
			ck_assert_msg(!memcmp(got + hdr, want + hdr, data_len), "%s: data differs",
				      path);
			free(got);
		}
	}
	char *err = slurp("stderr");
	ck_assert_ptr_nonnull(strstr(err, "numpy has no dtype for DT_INT4"));
	ck_assert_ptr_nonnull(strstr(err, "26 file(s) converted, 0 failed, 52 array(s)"));
	free(err);

	if (!have_numpy()) {
		fprintf(stderr, "note: /usr/bin/python3 has no numpy; numpy load check skipped\n");
		return;
	}
	/* numpy must load every array and, saving it again, produce the very same file. */
	snprintf(path, sizeof(path), "%s/check.py", dir);
	FILE *py = fopen(path, "w");
	fputs("import io, sys, numpy as np\n"
	      "out = sys.argv[2]\n"
	      "for line in open(sys.argv[1]):\n"
	      "    base, descr = line.split()\n"
	      "    if descr == '-':\n"
	      "        continue\n"
	      "    for kind in ('input', 'output'):\n"
	      "        p = '%s/%s.%s.0.npy' % (out, base, kind)\n"
	      "        a = np.load(p)\n"
	      "        assert a.dtype.str == descr, (p, a.dtype.str, descr)\n"
	      "        assert a.shape == (3, 2, 4), (p, a.shape)\n"
	      "        b = io.BytesIO(); np.save(b, a)\n"
	      "        assert b.getvalue() == open(p, 'rb').read(), p\n"
	      "print('numpy ok')\n",
	      py);
	fclose(py);
	char cmd[PATH_MAX * 3];
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/check.py %s/manifest.txt %s", dir, dir,
		 out_dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_shape_mismatch_and_kinds)
{
	static const uint64_t dims[] = { 4, 4 };
	float in[6] = { 1, 2, 3, 4, 5, 6 };
	unsigned char odd[7] = { 1, 2, 3, 4, 5, 6, 7 }, buf[5] = { 5 }, ws[3] = { 3 };
	struct adump_tensor t[4] = {
		rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 2, dims, sizeof(in)),
		rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, 2, dims, sizeof(odd)),
		rt_tensor(ADUMP_TENSOR_BUFFER, ADUMP_DT_UINT8, 0, NULL, sizeof(buf)),
		rt_tensor(ADUMP_TENSOR_WORKSPACE, ADUMP_DT_UINT8, 0, NULL, sizeof(ws)),
	};
	const void *data[4] = { in, odd, buf, ws };
	struct adump_op op = { .op_type = "X", .op_name = "y", .tensor_count = 4, .tensors = t };
	char path[PATH_MAX], want[256];
	size_t len;
	char *got;

	snprintf(path, sizeof(path), "%s/X.y.0.0.0", in_dir);
	ck_assert_int_eq(adump_dump_write_file(path, &op, data, 0644), 0);
	ck_assert_int_eq(run("convert -d %s -out %s", path, out_dir), 0);
	snprintf(path, sizeof(path), "%s/X.y.0.0.0.input.0.npy", out_dir);
	got = t_read_file(path, &len);
	ck_assert_ptr_nonnull(got);
	size_t hdr = expected_npy_header("<f4", (const uint64_t[]){ 6 }, 1, want);
	ck_assert_uint_eq(len, hdr + sizeof(in));
	ck_assert_mem_eq(got, want, hdr);
	ck_assert_mem_eq(got + hdr, in, sizeof(in));
	free(got);
	snprintf(path, sizeof(path), "%s/X.y.0.0.0.output.0.bin", out_dir);
	got = t_read_file(path, &len);
	ck_assert_ptr_nonnull(got);
	ck_assert_uint_eq(len, sizeof(odd));
	ck_assert_mem_eq(got, odd, sizeof(odd));
	free(got);
	snprintf(path, sizeof(path), "%s/X.y.0.0.0.buffer.0.bin", out_dir);
	got = t_read_file(path, &len);
	ck_assert_ptr_nonnull(got);
	ck_assert_uint_eq(len, sizeof(buf));
	free(got);
	snprintf(path, sizeof(path), "%s/X.y.0.0.0.space.0.bin", out_dir);
	got = t_read_file(path, &len);
	ck_assert_ptr_nonnull(got);
	ck_assert_uint_eq(len, sizeof(ws));
	free(got);
	char *err = slurp("stderr");
	ck_assert_ptr_nonnull(strstr(err, "saved as a 1-D array"));
	ck_assert_ptr_nonnull(strstr(err, "not whole DT_FLOAT elements"));
	free(err);
}
END_TEST

START_TEST(test_comma_list)
{
	float v[3] = { 1, 2, 3 };
	uint64_t dims[] = { 3 };
	struct adump_tensor t = rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 1, dims, sizeof(v));
	const void *data[1] = { v };
	struct adump_op op = { .op_type = "Z", .op_name = "c", .tensor_count = 1, .tensors = &t };
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], path[PATH_MAX];

	snprintf(a, sizeof(a), "%s/Z.c.1.0.0", in_dir);
	snprintf(b, sizeof(b), "%s/Z.c.2.0.0", in_dir);
	snprintf(c, sizeof(c), "%s/Z.c.3.0.0", in_dir);
	ck_assert_int_eq(adump_dump_write_file(a, &op, data, 0644), 0);
	ck_assert_int_eq(adump_dump_write_file(b, &op, data, 0644), 0);
	ck_assert_int_eq(adump_dump_write_file(c, &op, data, 0644), 0);
	/* Only the two listed files are converted. */
	ck_assert_int_eq(run("convert -d %s,%s -out %s", a, c, out_dir), 0);
	snprintf(path, sizeof(path), "%s/Z.c.1.0.0.input.0.npy", out_dir);
	ck_assert_int_eq(access(path, R_OK), 0);
	snprintf(path, sizeof(path), "%s/Z.c.3.0.0.input.0.npy", out_dir);
	ck_assert_int_eq(access(path, R_OK), 0);
	snprintf(path, sizeof(path), "%s/Z.c.2.0.0.input.0.npy", out_dir);
	ck_assert_int_ne(access(path, R_OK), 0);
	ck_assert_uint_eq(t_count_files(out_dir, ".npy"), 2);
}
END_TEST

START_TEST(test_long_name_mapping)
{
	char name[300], path[PATH_MAX], line[512];
	float v[2] = { 1, 2 };
	uint64_t dims[] = { 2 };
	struct adump_tensor t = rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, 1, dims, sizeof(v));
	const void *data[1] = { v };
	struct adump_op op = { .op_type = "Y", .op_name = "n", .tensor_count = 1, .tensors = &t };
	FILE *f;

	/* 250 characters fit a file name; adding ".output.0.npy" does not. */
	memset(name, 'L', 250);
	name[250] = '\0';
	snprintf(path, sizeof(path), "%s/%s", in_dir, name);
	ck_assert_int_eq(adump_dump_write_file(path, &op, data, 0644), 0);
	ck_assert_int_eq(run("convert -d %s -out %s", in_dir, out_dir), 0);
	ck_assert_int_eq(run("convert -d %s -out %s", in_dir, out_dir), 0);
	snprintf(path, sizeof(path), "%s/mapping.csv", out_dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	ck_assert_ptr_null(fgets(path, sizeof(path), f));  /* one line, even after two runs */
	fclose(f);
	char *comma = strchr(line, ',');
	ck_assert_ptr_nonnull(comma);
	ck_assert_uint_eq(comma - line, 16);
	ck_assert_int_eq(strncmp(comma + 1, name, 250), 0);
	*comma = '\0';
	snprintf(path, sizeof(path), "%s/%s.output.0.npy", out_dir, line);
	ck_assert_int_eq(access(path, R_OK), 0);
}
END_TEST

START_TEST(test_malformed_inputs)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/garbage", in_dir);
	f = fopen(path, "w");
	fputs("this is not a dump file at all, just text", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/tiny", in_dir);
	f = fopen(path, "w");
	fputs("abc", f);
	fclose(f);
	ck_assert_int_eq(run("convert -d %s -out %s", in_dir, out_dir), 1);
	char *err = slurp("stderr");
	ck_assert_ptr_nonnull(strstr(err, "garbage: header length"));
	ck_assert_ptr_nonnull(strstr(err, "tiny: file is 3 bytes"));
	ck_assert_ptr_nonnull(strstr(err, "0 file(s) converted, 2 failed"));
	free(err);
	/* No dump files directly inside the directory: exit 1, with a hint about -r. */
	char nested[PATH_MAX];
	snprintf(nested, sizeof(nested), "%s/nest", dir);
	ck_assert_int_eq(mkdir(nested, 0755), 0);
	ck_assert_int_eq(run("convert -d %s -out %s", dir, out_dir), 1);
	ck_assert_int_eq(run("convert -d %s -out %s", nested, out_dir), 1);
	err = slurp("stderr");
	ck_assert_ptr_nonnull(strstr(err, "-r descends into subdirectories"));
	free(err);
	ck_assert_int_eq(run("convert -out %s", out_dir), 2);
	ck_assert_int_eq(run("convert --help"), 0);
	ck_assert_int_eq(run("convert -d %s/none -out %s", in_dir, out_dir), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reader_convert");
	TCase *tc = tcase_create("convert");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_npy_header_literal);
	tcase_add_test(tc, test_every_dtype);
	tcase_add_test(tc, test_shape_mismatch_and_kinds);
	tcase_add_test(tc, test_comma_list);
	tcase_add_test(tc, test_long_name_mapping);
	tcase_add_test(tc, test_malformed_inputs);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
