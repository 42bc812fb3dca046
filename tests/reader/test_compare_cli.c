/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare` as a user runs it: usage errors exit 2, an unreadable path 3, a bench capture
 * against a copy with one op perturbed writes result_<ts>.csv and advisor_summary.txt naming
 * that op, a one-sided op gives exit 2, and two .npy files give file_result_<ts>.txt. */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/compare.h"
#include "reader_helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif

static char *dir;

#define run(...) t_run_tool(ADUMP_TOOL, dir, __VA_ARGS__)

/* The one file in @d whose name starts with @prefix, as text; NULL if none. */
static char *slurp_prefix(const char *d, const char *prefix)
{
	struct dirent *e;
	char *text = NULL;
	DIR *dd = opendir(d);

	ck_assert_ptr_nonnull(dd);
	while ((e = readdir(dd)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)) && !text)
			text = t_slurp(d, e->d_name);
	closedir(dd);
	return text;
}

/* The path of the first file under @d (a bench capture's <ts>/0 directory). */
static void leaf_dir(const char *d, char *out, size_t cap)
{
	struct dirent *e;
	DIR *dd = opendir(d);

	ck_assert_ptr_nonnull(dd);
	while ((e = readdir(dd)))
		if (e->d_name[0] != '.')
			snprintf(out, cap, "%s/%s/0", d, e->d_name);
	closedir(dd);
}

/* Rewrite the dump file @path with tensor @k's payload (float16 or float) changed by @edit. */
static void edit_tensor(const char *path, uint32_t k,
			void (*edit)(unsigned char *p, uint64_t bytes, uint32_t width))
{
	struct adump_reader *r;
	const struct adump_reader_header *h;
	size_t len;
	unsigned char *bytes = t_read_file(path, &len);
	FILE *f;

	ck_assert_int_eq(adump_reader_create(&r), 0);
	ck_assert_int_eq(adump_reader_open(r, path), 0);
	h = adump_reader_header(r);
	edit(bytes + h->tensors[k].offset, h->tensors[k].info.bytes,
	     h->tensors[k].info.dtype == ADUMP_DT_FLOAT16 ? 2 : 4);
	adump_reader_destroy(r);
	f = fopen(path, "wb");
	ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
	fclose(f);
	free(bytes);
}

/* Every element's sign bit flipped: cosine -1. */
static void flip_signs(unsigned char *p, uint64_t bytes, uint32_t width)
{
	for (uint64_t i = 0; i < bytes; i += width)
		p[i + width - 1] ^= 0x80;
}

/* Element 3 made NaN. */
static void nan_at_3(unsigned char *p, uint64_t bytes, uint32_t width)
{
	float nan = NAN;

	(void)bytes;
	if (width == 2) {
		p[6] = 0x00;
		p[7] = 0x7e;
	} else {
		memcpy(p + 12, &nan, 4);
	}
}

START_TEST(test_usage)
{
	dir = t_tmpdir("compare-cli");
	ck_assert_int_eq(run("compare"), 2);
	ck_assert_int_eq(run("compare -m %s", dir), 2);
	ck_assert_int_eq(run("compare -m %s -g %s --threads 0", dir, dir), 2);
	ck_assert_int_eq(run("compare -m %s -g %s -alg 11", dir, dir), 31);
	ck_assert_int_eq(run("compare -m %s/none -g %s", dir, dir), 3);
	ck_assert_int_eq(run("compare -m %s -g %s", dir, dir), 2);      /* no dump files */
	ck_assert_int_eq(run("compare --help"), 0);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_bench_pair)
{
	char a[PATH_MAX], b[PATH_MAX], my[PATH_MAX], golden[PATH_MAX], out[PATH_MAX], victim[PATH_MAX];
	char *csv, *advice;
	struct dirent *e;
	DIR *dd;

	dir = t_tmpdir("compare-cli");
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	mkdir(a, 0755);
	mkdir(b, 0755);
	ck_assert_int_eq(run("bench --streams 2 --ops 3 --min-size 1K --max-size 64K --seed 5 "
			     "--pool 16M --out %s", a), 0);
	ck_assert_int_eq(run("bench --streams 2 --ops 3 --min-size 1K --max-size 64K --seed 5 "
			     "--pool 16M --out %s", b), 0);
	leaf_dir(a, golden, sizeof(golden));
	leaf_dir(b, my, sizeof(my));
	/* Same seed, same tensors: every op matches with cosine 1. */
	ck_assert_int_eq(run("compare -m %s -g %s -out %s -advisor --quiet", my, golden, out), 0);
	csv = slurp_prefix(out, "result_");
	ck_assert_ptr_nonnull(csv);
	ck_assert_ptr_nonnull(strstr(csv, "Index,OpType,NPUDump,DataType,Address,GroundTruth,"
					  "DataType,Address,TensorIndex,Shape,OverFlow,"
					  "CosineSimilarity,"));
	ck_assert_ptr_null(strstr(csv, "NaN,NaN,NaN"));
	free(csv);
	advice = t_slurp(out, "advisor_summary.txt");
	ck_assert_ptr_nonnull(strstr(advice, "Operator Index: NA\n"));
	free(advice);
	t_rmtree(out);

	/* Flip the sign bit of every element of bench_add_1_1's output: cosine -1 there. */
	dd = opendir(my);
	while ((e = readdir(dd)))
		if (strstr(e->d_name, ".bench_add_1_1."))
			snprintf(victim, sizeof(victim), "%s/%s", my, e->d_name);
	closedir(dd);
	edit_tensor(victim, 2, flip_signs);
	ck_assert_int_eq(run("compare -m %s -g %s -out %s -advisor --json", my, golden, out), 0);
	csv = t_slurp(dir, "stdout");
	ck_assert_ptr_nonnull(strstr(csv, "\"TensorIndex\": \"bench_add_1_1:output:0\""));
	free(csv);
	csv = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(csv, "first divergent op (execution order): Index") &&
		      strstr(csv, "bench_add_1_1, tensor bench_add_1_1:output:0: error ("), "%s",
		      csv);
	free(csv);
	advice = t_slurp(out, "advisor_summary.txt");
	ck_assert_ptr_nonnull(strstr(advice, "Detection Type: Global Consistency\n"));
	ck_assert_ptr_null(strstr(advice, "Operator Index: NA"));
	free(advice);
	t_rmtree(out);

	/* Limits that do not parse: exit 2 naming the key, nothing compared. */
	ck_assert_int_eq(run("compare -m %s -g %s -out %s --threshold cosine=0.9,float16.cos=1",
			     my, golden, out), 2);
	csv = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(csv, "--threshold: threshold 'float16.cos'"), "%s", csv);
	free(csv);
	ck_assert_int_ne(access(out, F_OK), 0);            /* not even -out made */

	/* One NaN in the victim's first input: adump's own exit status 100, the reason in
	 * CompareFailReason, the advisor on the NaN. */
	edit_tensor(victim, 0, nan_at_3);
	ck_assert_int_eq(run("compare -m %s -g %s -out %s -advisor", my, golden, out),
			 ADUMP_COMPARE_EXIT_NONFINITE);
	csv = slurp_prefix(out, "result_");
	ck_assert_msg(strstr(csv, "NaN/Inf differ at 1 elements, the first at index 3 (my output: "
				  "1 NaN, 0 Inf; ground truth: 0 NaN, 0 Inf)"), "%s", csv);
	free(csv);
	advice = t_slurp(out, "advisor_summary.txt");
	ck_assert_msg(strstr(advice, "Detection Type: NaN/Inf\n") &&
		      strstr(advice, "Operator Name: bench_add_1_1\n"), "%s", advice);
	free(advice);
	t_rmtree(out);

	/* An op only on my side: its row, exit 2. */
	ck_assert_int_eq(unlink(victim), 0);
	ck_assert_int_eq(run("compare -m %s -g %s -out %s --quiet", golden, my, out), 2);
	csv = slurp_prefix(out, "result_");
	ck_assert_ptr_nonnull(strstr(csv, "There is no the ground truth dump file for the op "
					  "\"\"bench_add_1_1\"\".\""));
	free(csv);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_npy_pair)
{
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
	float x[6] = { 1, 2, 3, 4, 5, 6 }, y[6] = { 1, 2, 3, 4, 5, 7 };
	uint64_t dims[2] = { 2, 3 }, dims3[1] = { 6 }, huge[2] = { (uint64_t)1 << 62, 8 };
	char hdr[128];
	long n;
	FILE *f;
	char *text;

	dir = t_tmpdir("compare-cli");
	snprintf(a, sizeof(a), "%s/a.npy", dir);
	snprintf(b, sizeof(b), "%s/b.npy", dir);
	snprintf(c, sizeof(c), "%s/c.npy", dir);
	n = adump_reader_npy_header("<f4", dims, 2, hdr, sizeof(hdr));
	ck_assert_int_gt(n, 0);
	f = fopen(a, "wb");
	fwrite(hdr, 1, (size_t)n, f);
	fwrite(x, 4, 6, f);
	fclose(f);
	f = fopen(b, "wb");
	fwrite(hdr, 1, (size_t)n, f);
	fwrite(y, 4, 6, f);
	fclose(f);
	n = adump_reader_npy_header("<f4", dims3, 1, hdr, sizeof(hdr));
	f = fopen(c, "wb");
	fwrite(hdr, 1, (size_t)n, f);
	fwrite(y, 4, 6, f);
	fclose(f);
	ck_assert_int_eq(run("compare -m %s -g %s -out %s", a, b, dir), 0);
	text = slurp_prefix(dir, "file_result_");
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(strstr(text, "CosineSimilarity: 0.997090\n"));
	ck_assert_ptr_nonnull(strstr(text, "MaxAbsoluteError: 1.000000\n"));
	ck_assert_ptr_null(strstr(text, "KullbackLeiblerDivergence"));
	free(text);
	ck_assert_int_eq(run("compare -m %s -g %s -out %s", a, c, dir), 23);   /* shapes differ */

	/* A shape whose element count wraps to 0 (2^62 x 8 x 4 bytes) is refused, not compared
	 * as an empty array: exit 3 saying why. */
	n = adump_reader_npy_header("<f4", huge, 2, hdr, sizeof(hdr));
	ck_assert_int_gt(n, 0);
	f = fopen(c, "wb");
	fwrite(hdr, 1, (size_t)n, f);
	fclose(f);
	ck_assert_int_eq(run("compare -m %s -g %s -out %s", c, c, dir), 3);
	text = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(text, "c.npy: the shape's element count overflows"), "%s", text);
	free(text);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* Two statistics dumps (content=stats) directories: msprobe's summary columns in the result,
 * the Warning count on stderr, a one-sided op exits 2. */
START_TEST(test_stats_pair)
{
	static const char head[] = "Input/Output,Index,Data Size,Data Type,Format,Shape,Count,"
				   "Max Value,Min Value,Avg Value,l2norm\n";
	char my[PATH_MAX], golden[PATH_MAX], path[PATH_MAX + 64];
	char *text;
	FILE *f;

	dir = t_tmpdir("compare-cli");
	snprintf(my, sizeof(my), "%s/my", dir);
	snprintf(golden, sizeof(golden), "%s/golden", dir);
	mkdir(my, 0755);
	mkdir(golden, 0755);
	snprintf(path, sizeof(path), "%s/Add.a.1.2.100.csv", my);
	f = fopen(path, "w");
	fprintf(f, "%sInput,0,24,DT_FLOAT,ND,2x3,6,5,-1,0.5,3\n", head);
	fclose(f);
	snprintf(path, sizeof(path), "%s/Add.a.1.2.100.csv", golden);
	f = fopen(path, "w");
	fprintf(f, "%sInput,0,24,DT_FLOAT,ND,2x3,6,2,-1,0.5,3\n", head);
	fclose(f);
	ck_assert_int_eq(run("compare -m %s -g %s -out %s", my, golden, dir), 0);
	text = slurp_prefix(dir, "result_");
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,"
			     "Address,TensorIndex,Shape,Max diff,Min diff,Mean diff,L2norm diff,"
			     "MaxRelativeErr,MinRelativeErr,MeanRelativeErr,NormRelativeErr,NPU max,"
			     "NPU min,NPU mean,NPU l2norm,Bench max,Bench min,Bench mean,"
			     "Bench l2norm,Result,CompareFailReason\r\n") == text, "%s", text);
	ck_assert_msg(strstr(text, "\r\n0,Add,a,float32,NaN,a,float32,NaN,a:input:0,\"[2,3]\","
			     "3.0,0,0,0,150.0%,0%,0%,0%,5,-1,0.5,3,2,-1,0.5,3,Warning,"
			     "\"Need double check api accuracy.,max differs by 1.5 of the tensor's "
			     "scale max|x| (limit 0.001)\"\r\n"), "%s", text);
	free(text);
	text = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(text, "1 tensors with Result Warning"), "%s", text);
	free(text);
	/* An op in my output only. */
	snprintf(path, sizeof(path), "%s/Add.b.1.2.100.csv", my);
	f = fopen(path, "w");
	fprintf(f, "%sInput,0,24,DT_FLOAT,ND,2x3,6,4,-1,0.5,3\n", head);
	fclose(f);
	ck_assert_int_eq(run("compare -m %s -g %s -out %s --quiet", my, golden, dir), 2);
	t_rmtree(dir);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("compare_cli");
	TCase *tc = tcase_create("cli");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_usage);
	tcase_add_test(tc, test_bench_pair);
	tcase_add_test(tc, test_npy_pair);
	tcase_add_test(tc, test_stats_pair);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
