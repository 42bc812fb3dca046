/* SPDX-License-Identifier: Apache-2.0 */
/* adump compare's op matching as msaccucmp does it (one-sided ops, repeated timestamps, count
 * and shape mismatches, unreadable files), the result CSV parsed back cell by cell, the
 * verdicts (NaN/Inf, the first divergence in execution order, the module beside the op) and
 * the limits parser. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

#include "adump/compare.h"
#include "compare_helpers.h"

START_TEST(test_identical_dirs)
{
	uint64_t rng = t_seed() + 2, dims[2] = { 37, 41 };
	float *a = randf(37 * 41, &rng, 4), *b = randf(37 * 41, &rng, 4), *o = randf(37 * 41, &rng, 4);
	const float *in[2] = { a, b }, *out[1] = { o };
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare_summary s;
	struct adump_compare *c;

	dir = t_tmpdir("compare");
	for (int k = 0; k < 12; k++) {
		char name[32];

		snprintf(name, sizeof(name), "op_%d", k);
		dump_write("my", name, 1764590000000000ull + 10 * (uint64_t)k, 2, in, dims, 1, out, dims, 2);
		dump_write("golden", name, 1764590000000005ull + 10 * (uint64_t)k, 2, in, dims, 1, out,
			   dims, 2);
	}
	cfg.thread_count = 3;
	cfg.chunk_elements = 100;       /* many chunks per tensor */
	c = run_compare(&cfg);
	ck_assert_uint_eq(adump_compare_row_count(c), 36);
	for (uint64_t i = 0; i < 36; i++) {
		const struct adump_compare_row *row = adump_compare_row(c, i);

		ck_assert_uint_eq(row->index, i / 3);          /* op order, timestamps ascending */
		ck_assert(row->is_compared);
		ck_assert_str_eq(cell(c, (int)i, "CosineSimilarity"), "1.000000");
		ck_assert_str_eq(cell(c, (int)i, "MaxAbsoluteError"), "0.000000");
		ck_assert_str_eq(cell(c, (int)i, "MeanRelativeError"), "0.000000");
		ck_assert_str_eq(cell(c, (int)i, "CompareFailReason"), "");
		ck_assert_str_eq(cell(c, (int)i, "Shape"), "[37,41]");
	}
	adump_compare_summary_get(c, &s);
	ck_assert_int_eq(s.exit_code, 0);
	ck_assert_int_eq(s.first_divergent_row, -1);
	ck_assert_uint_eq(s.bytes[0], 36ull * 37 * 41 * 4);
	adump_compare_close(c);
	free(a);
	free(b);
	free(o);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_matching)
{
	uint64_t rng = t_seed() + 3, d6[1] = { 6 }, d23[2] = { 2, 3 }, d32[2] = { 3, 2 };
	float *a = randf(6, &rng, 4), *b = randf(6, &rng, 4), *neg = malloc(6 * sizeof(float));
	const float *one[1] = { a }, *two[2] = { a, b }, *negs[1] = { neg };
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare_summary s;
	struct adump_compare *c;
	uint64_t t = 1764590000000000ull;
	char path[4096];
	int r;

	for (int i = 0; i < 6; i++)
		neg[i] = -a[i];
	dir = t_tmpdir("compare");
	/* Ordered by my side's timestamps: late (2 files, its latest after first) comes last. */
	dump_write("my", "late", t + 1, 1, one, d6, 1, one, d6, 1);
	dump_write("my", "first", t + 10, 1, one, d6, 1, one, d6, 1);
	dump_write("my", "late", t + 100, 1, one, d6, 1, one, d6, 1);
	/* The ground truth's latest "late" matches; an older one differs. */
	dump_write("golden", "late", t + 2, 1, negs, d6, 1, negs, d6, 1);
	dump_write("golden", "late", t + 90, 1, one, d6, 1, one, d6, 1);
	dump_write("golden", "first", t + 11, 1, one, d6, 1, one, d6, 1);
	/* One-sided ops. */
	dump_write("my", "only_my", t + 20, 1, one, d6, 1, one, d6, 1);
	dump_write("golden", "only_golden", t + 5, 1, one, d6, 1, one, d6, 1);
	/* Count mismatch on inputs: only the outputs are compared. */
	dump_write("my", "count", t + 30, 2, two, d6, 1, one, d6, 1);
	dump_write("golden", "count", t + 30, 1, one, d6, 1, negs, d6, 1);
	/* Shape mismatch on outputs: only the inputs are compared. */
	dump_write("my", "shape", t + 40, 1, one, d23, 1, one, d23, 2);
	dump_write("golden", "shape", t + 40, 1, one, d23, 1, one, d32, 2);
	/* Both groups fail: one NaN row with both messages. */
	dump_write("my", "both", t + 50, 2, two, d23, 1, one, d23, 2);
	dump_write("golden", "both", t + 50, 1, one, d23, 1, one, d32, 2);
	/* Format mismatch on outputs: only the inputs are compared. */
	dump_write("my", "format", t + 45, 1, one, d6, 1, one, d6, 1);
	output_format = ADUMP_FORMAT_NCHW;
	dump_write("golden", "format", t + 45, 1, one, d6, 1, one, d6, 1);
	output_format = ADUMP_FORMAT_ND;
	/* A file that is not a dump, and a truncated dump. */
	snprintf(path, sizeof(path), "%s/my/Add.broken.1.2.%llu", dir, (unsigned long long)(t + 60));
	ck_assert_int_eq(write_text(path, "garbage"), 0);
	dump_write("golden", "broken", t + 60, 1, one, d6, 1, one, d6, 1);
	snprintf(path, sizeof(path), "%s/my/notes.txt", dir);
	ck_assert_int_eq(write_text(path, "not a dump"), 0);

	cfg.has_overflow = true;
	c = run_compare(&cfg);
	/* Ids: first 0, only_my 1, count 2, shape 3, format 4, both 5, broken 6, late 7,
	 * only_golden 8. */
	r = find_row(c, "first:output:0");
	ck_assert_str_eq(cell(c, r, "Index"), "0");
	ck_assert_str_eq(cell(c, r, "OverFlow"), "NaN");
	r = find_row(c, "late:output:0");
	ck_assert_str_eq(cell(c, r, "Index"), "7");
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "1.000000");
	for (uint64_t i = 0; i < adump_compare_row_count(c); i++) {
		const struct adump_compare_row *row = adump_compare_row(c, i);

		if (!strcmp(row->op_name, "only_my")) {
			ck_assert_str_eq(row->cells[0], "1");
			ck_assert_str_eq(row->cells[1], "NaN");
			ck_assert_str_eq(row->cells[5], "*");
			ck_assert_str_eq(cell(c, (int)i, "CompareFailReason"),
					 "[only_my] There is no the ground truth dump file for the op \"only_my\".");
		}
		if (!strcmp(row->op_name, "only_golden")) {
			ck_assert_str_eq(row->cells[0], "8");
			ck_assert_str_eq(row->cells[2], "*");
			ck_assert_str_eq(cell(c, (int)i, "CompareFailReason"),
					 "[only_golden] There is no the my output dump file for the op \"only_golden\".");
		}
		if (!strcmp(row->op_name, "both")) {
			ck_assert_str_eq(cell(c, (int)i, "CompareFailReason"),
					 "[both] The number of input does not match (2 vs 1).,[both] The shape "
					 "does not match ((2, 3) vs (3, 2)) for both:output:0.");
			ck_assert_str_eq(cell(c, (int)i, "TensorIndex"), "NaN");
			ck_assert_str_eq(cell(c, (int)i, "CosineSimilarity"), "NaN");
		}
		if (!strcmp(row->op_name, "broken"))
			ck_assert_ptr_nonnull(strstr(cell(c, (int)i, "CompareFailReason"), "[broken] "));
		ck_assert_uint_ge(row->index, i ? adump_compare_row(c, i - 1)->index : 0);
	}
	ck_assert_int_lt(find_row(c, "count:input:0"), 0);
	r = find_row(c, "count:output:0");
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "-1.000000");
	ck_assert_int_ge(find_row(c, "shape:input:0"), 0);
	ck_assert_int_lt(find_row(c, "shape:output:0"), 0);
	ck_assert_int_ge(find_row(c, "format:input:0"), 0);
	ck_assert_int_lt(find_row(c, "format:output:0"), 0);
	adump_compare_summary_get(c, &s);
	ck_assert_uint_eq(s.op_count, 9);
	ck_assert_uint_eq(s.matched_count, 7);
	ck_assert_uint_eq(s.my_only_count, 1);
	ck_assert_uint_eq(s.golden_only_count, 1);
	ck_assert_int_eq(s.exit_code, 2);       /* the first op with a code: only_my */
	ck_assert_int_eq(s.first_divergent_row, find_row(c, "count:output:0"));

	/* The CSV, parsed back, holds the header and every cell. */
	snprintf(path, sizeof(path), "%s/result.csv", dir);
	FILE *f = fopen(path, "wb");
	ck_assert_int_eq(adump_compare_write_csv(c, f), 0);
	fclose(f);
	char *text = t_slurp(dir, "result.csv");
	size_t rows = 0, cols = 0;
	char ***csv = csv_parse(text, &rows, &cols);

	ck_assert_uint_eq(rows, adump_compare_row_count(c) + 1);
	ck_assert_uint_eq(cols, adump_compare_column_count(c));
	ck_assert_str_eq(csv[0][0], "Index");
	ck_assert_str_eq(csv[0][3], "DataType");
	ck_assert_str_eq(csv[0][6], "DataType");
	ck_assert_str_eq(csv[0][10], "OverFlow");
	ck_assert_str_eq(csv[0][cols - 1], "CompareFailReason");
	for (size_t i = 0; i < rows; i++) {
		for (size_t k = 0; k < cols; k++) {
			const char *want = i ? adump_compare_row(c, i - 1)->cells[k]
					     : adump_compare_column(c, (uint32_t)k);

			ck_assert_str_eq(csv[i][k], want);
			free(csv[i][k]);
		}
		free(csv[i]);
	}
	free(csv);
	free(text);

	/* The advisor names the first op below 0.99. */
	snprintf(path, sizeof(path), "%s/advice.txt", dir);
	f = fopen(path, "wb");
	ck_assert_int_eq(adump_compare_write_advice(c, f), 0);
	fclose(f);
	text = t_slurp(dir, "advice.txt");
	ck_assert_ptr_nonnull(strstr(text, "Detection Type: Global Consistency\nOperator Index: 2\n"));
	free(text);
	adump_compare_close(c);
	free(a);
	free(b);
	free(neg);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_open_errors)
{
	struct adump_compare *c = NULL;
	char msg[1024], path[4096];

	dir = t_tmpdir("compare");
	snprintf(path, sizeof(path), "%s/empty", dir);
	mkdir(path, 0755);
	ck_assert_int_eq(adump_compare_open(NULL, path, path, &c, msg, sizeof(msg)),
			 -ADUMP_ERR_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(msg, "no dump files"));
	snprintf(path, sizeof(path), "%s/missing", dir);
	ck_assert_int_eq(adump_compare_open(NULL, path, path, &c, msg, sizeof(msg)), -ENOENT);
	ck_assert_ptr_null(c);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* One float32 dump <dir>/<side>/MatMul.<name>.1.2.<ts>: input 0 and output 0 of @n values;
 * @module, when set, the header's `module` attribute (adump.torch at level="op"). */
static void verdict_write(const char *side, const char *name, uint64_t ts, const char *module,
			  const float *in, const float *out, uint32_t n)
{
	struct adump_attr at = { .name = "module", .value = module };
	uint64_t dims[1] = { n };
	struct adump_tensor t[2] = { rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 1, dims, n * 4),
				     rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, 1, dims, n * 4) };
	struct adump_op op = { .op_type = "MatMul", .op_name = name, .task_id = 1, .stream_id = 2,
			       .timestamp_us = ts, .tensor_count = 2, .tensors = t,
			       .attr_count = module ? 1 : 0, .attrs = &at };
	const void *data[2] = { in, out };
	char path[4096];
	size_t len;
	void *buf = rt_dump_mem(&op, data, &len);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, side);
	mkdir(path, 0755);
	/* msaccucmp reads a timestamp of 16 digits only. */
	snprintf(path, sizeof(path), "%s/%s/MatMul.%s.1.2.%llu", dir, side, name,
		 (unsigned long long)(1700000000000000ull + ts));
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

/* Issue 22: NaN/Inf are divergences (whatever the cosine), the first divergent row is the
 * first not-pass verdict in execution order, the module is named beside the op, and the
 * CSV stays msaccucmp's but for the NaN/Inf reason. */
START_TEST(test_verdicts)
{
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare_summary s;
	const struct adump_compare_row *row;
	struct adump_compare *c;
	float x[64], noisy[64], nan_out[64], small[64], small2[64];
	char *text = NULL, msg[512];
	size_t len = 0;
	FILE *f;
	int r;

	for (int i = 0; i < 64; i++) {
		x[i] = (float)(i % 7) - 3.0f + 0.25f * (float)i;
		noisy[i] = x[i] * (1.0f + (i % 2 ? 0.003f : -0.003f));
		nan_out[i] = x[i];
		small[i] = x[i] * 1e-8f;
		small2[i] = x[i] * 1.5e-8f;
	}
	nan_out[5] = NAN;
	dir = t_tmpdir("compare");
	/* Execution order: clean (100), noise (200: cosine 0.99999, msaccucmp sees nothing),
	 * NaN (300, in a module), tiny values 1.5x (400). */
	for (int s2 = 0; s2 < 2; s2++) {
		const char *side = s2 ? "golden" : "my";

		verdict_write(side, "clean", 100, NULL, x, x, 64);
		verdict_write(side, "noise", 200, NULL, x, s2 ? x : noisy, 64);
		verdict_write(side, "nan", 300, "Module.layers.1.linear1.Linear.forward.0", x,
			      s2 ? x : nan_out, 64);
		verdict_write(side, "tiny", 400, NULL, x, s2 ? small2 : small, 64);
	}
	c = run_compare(&cfg);
	adump_compare_summary_get(c, &s);
	ck_assert_int_eq(s.exit_code, ADUMP_COMPARE_EXIT_NONFINITE);
	ck_assert_uint_eq(s.nonfinite_count, 1);

	r = find_row(c, "clean:output:0");
	ck_assert_int_eq(adump_compare_row(c, (uint64_t)r)->verdict, ADUMP_COMPARE_PASS);
	ck_assert_str_eq(adump_compare_row(c, (uint64_t)r)->reason, "");

	r = find_row(c, "noise:output:0");
	row = adump_compare_row(c, (uint64_t)r);
	ck_assert(row->cosine > 0.99);
	ck_assert_int_eq(row->verdict, ADUMP_COMPARE_ERROR);
	ck_assert_msg(strstr(row->reason, "max abs error / max |ground truth|"), "%s", row->reason);
	ck_assert_str_eq(cell(c, r, "CompareFailReason"), "");
	ck_assert_msg(s.first_divergent_row == r, "first divergent %lld: %s %s",
		      (long long)s.first_divergent_row,
		      adump_compare_row(c, (uint64_t)s.first_divergent_row)->tensor_id,
		      adump_compare_row(c, (uint64_t)s.first_divergent_row)->reason);

	r = find_row(c, "nan:output:0");
	row = adump_compare_row(c, (uint64_t)r);
	ck_assert_int_eq(s.first_nonfinite_row, r);
	ck_assert_int_eq(row->verdict, ADUMP_COMPARE_ERROR);
	ck_assert_str_eq(row->module, "Module.layers.1.linear1.Linear.forward.0");
	ck_assert_uint_eq(row->metrics.nan_count[0], 1);
	ck_assert_uint_eq(row->metrics.nan_count[1], 0);
	ck_assert_uint_eq(row->metrics.first_nonfinite_diff, 5);
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "nan");
	ck_assert_str_eq(cell(c, r, "CompareFailReason"),
			 "NaN/Inf differ at 1 elements, the first at index 5 (my output: 1 NaN, "
			 "0 Inf; ground truth: 0 NaN, 0 Inf)");
	ck_assert_ptr_null(adump_compare_row(c, (uint64_t)find_row(c, "noise:input:0"))->module);

	r = find_row(c, "tiny:output:0");
	row = adump_compare_row(c, (uint64_t)r);
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "1.000000");
	ck_assert_int_eq(row->verdict, ADUMP_COMPARE_ERROR);
	ck_assert(fabs(row->metrics.scaled_error - 1.0 / 3.0) < 1e-5);

	/* The advisor names the NaN first, with its module, never "All data ... meets". */
	f = open_memstream(&text, &len);
	ck_assert_int_eq(adump_compare_write_advice(c, f), 0);
	fclose(f);
	ck_assert_msg(strstr(text, "Detection Type: NaN/Inf\nOperator Index: 2\n") &&
		      strstr(text, "Operator Name: nan (in module "
				   "Module.layers.1.linear1.Linear.forward.0)\n"), "%s", text);
	ck_assert_ptr_null(strstr(text, "meets the accuracy requirements"));
	free(text);
	adump_compare_close(c);

	/* Looser limits: the noise passes, the NaN still fails (no limit turns it off). */
	cfg.thresholds = "scaled=1,scaled_warning=1,cosine_warning=0.99";
	c = run_compare(&cfg);
	adump_compare_summary_get(c, &s);
	ck_assert_int_eq(adump_compare_row(c, (uint64_t)find_row(c, "noise:output:0"))->verdict,
			 ADUMP_COMPARE_PASS);
	ck_assert_int_eq(s.first_divergent_row, find_row(c, "nan:output:0"));
	ck_assert_int_eq(s.exit_code, ADUMP_COMPARE_EXIT_NONFINITE);
	adump_compare_close(c);

	/* Limits that do not parse: the open fails naming the key. */
	cfg.thresholds = "cosine=0.9,float16.bogus=2";
	snprintf(msg, sizeof(msg), "%s/my", dir);
	{
		char golden[4096];

		snprintf(golden, sizeof(golden), "%s/golden", dir);
		ck_assert_int_eq(adump_compare_open(&cfg, msg, golden, &c, msg, sizeof(msg)),
				 -ADUMP_ERR_CONFIG);
	}
	ck_assert_msg(strstr(msg, "float16.bogus"), "%s", msg);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* The limits parser: keys alone or per class, values checked. */
START_TEST(test_thresholds_parse)
{
	struct adump_compare_thresholds t;
	char msg[256];

	ck_assert_int_eq(adump_compare_thresholds_parse(&t, NULL, msg, sizeof(msg)), 0);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_INTEGER].max_abs == 0);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_FLOAT16].scaled > t.of[ADUMP_COMPARE_CLASS_FLOAT32].scaled);
	ck_assert_int_eq(adump_compare_thresholds_parse(&t, "cosine=0.5, bfloat16.scaled=0.2",
							msg, sizeof(msg)), 0);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_FLOAT32].cosine == 0.5);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_BFLOAT16].cosine == 0.5);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_INTEGER].cosine == -1);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_BFLOAT16].scaled == 0.2);
	ck_assert(t.of[ADUMP_COMPARE_CLASS_FLOAT32].scaled == 1e-3);
	ck_assert_int_eq(adump_compare_thresholds_parse(&t, "cosine=1.5", msg, sizeof(msg)),
			 -ADUMP_ERR_CONFIG);
	ck_assert_msg(strstr(msg, "cosine"), "%s", msg);
	ck_assert_int_eq(adump_compare_thresholds_parse(&t, "max_abs", msg, sizeof(msg)),
			 -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_compare_thresholds_parse(&t, "scaled=nan", msg, sizeof(msg)),
			 -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_compare_thresholds_parse(&t, "int.max_abs=1", msg, sizeof(msg)),
			 -ADUMP_ERR_CONFIG);
	ck_assert_msg(strstr(msg, "int.max_abs"), "%s", msg);
	ck_assert_int_eq(adump_compare_class_of(ADUMP_DT_FLOAT, ADUMP_DT_BF16),
			 ADUMP_COMPARE_CLASS_BFLOAT16);
	ck_assert_int_eq(adump_compare_class_of(ADUMP_DT_INT32, ADUMP_DT_INT64),
			 ADUMP_COMPARE_CLASS_INTEGER);
	ck_assert_int_eq(adump_compare_class_of(ADUMP_DT_INT32, ADUMP_DT_FLOAT),
			 ADUMP_COMPARE_CLASS_FLOAT32);
	{
		struct adump_compare_row row = { .op_name = "Module_a_b_Linear_forward_0",
						 .module = "Module.a.b.Linear.forward.0" };

		ck_assert(adump_compare_is_self(&row));
		row.module = "Module.a.c.Linear.forward.0";
		ck_assert(!adump_compare_is_self(&row));
		row.module = "Module.a.b.Linear.forward.00";
		ck_assert(!adump_compare_is_self(&row));
		row.module = NULL;
		ck_assert(!adump_compare_is_self(&row));
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("compare_match");
	TCase *td = tcase_create("dirs");

	tcase_set_timeout(td, 60);
	tcase_add_test(td, test_identical_dirs);
	tcase_add_test(td, test_matching);
	tcase_add_test(td, test_open_errors);
	tcase_add_test(td, test_verdicts);
	tcase_add_test(td, test_thresholds_parse);
	suite_add_tcase(s, td);
	return t_run_suite(s);
}
