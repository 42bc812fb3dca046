/* SPDX-License-Identifier: Apache-2.0 */
/* adump compare over statistics dumps (content=stats): msprobe's summary-mode cells from
 * hand-written statistics, the matching of statistics dumps (against each other and against
 * tensor dumps), and two content=stats captures of one workload compared. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/compare.h"
#include "adump/scan.h"
#include "capture_helpers.h"
#include "compare_helpers.h"
#include "compare/compare.h"

/* ---- statistics dumps (content=stats): msprobe's summary mode ------------------------------ */

#define STATS_HEAD "Input/Output,Index,Data Size,Data Type,Format,Shape,Count,Max Value,Min Value," \
		   "Avg Value,l2norm\n"

static void stats_write(const char *side, const char *name, const char *rows)
{
	char path[4096], *text;

	snprintf(path, sizeof(path), "%s/%s", dir, side);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/Add.%s.1.2.100.csv", dir, side, name);
	ck_assert_int_ge(asprintf(&text, STATS_HEAD "%s", rows), 0);
	ck_assert_int_eq(write_text(path, text), 0);
	free(text);
}

/* Python's str() of the relative error of @n against @b, '%' appended: what msprobe writes. */
static void check_stat_cells(const struct adump_compare *c, int row, const char *stat,
			     double n, double b)
{
	char col[64];
	const char *d, *r;
	double want = n - b, got;

	snprintf(col, sizeof(col), "%s diff", stat);
	d = cell(c, row, col);
	snprintf(col, sizeof(col), "%sRelativeErr", !strcmp(stat, "L2norm") ? "Norm" : stat);
	r = cell(c, row, col);
	got = strtod(d, NULL);
	ck_assert_msg(got == want, "%s diff %s, want %.17g", stat, d, want);
	got = strtod(r, NULL);
	ck_assert_msg(r[strlen(r) - 1] == '%', "%s rel %s", stat, r);
	ck_assert_msg(got == fabs(want / b * 100.0), "%s rel %s, want %.17g", stat, r,
		      fabs(want / b * 100.0));
}
START_TEST(test_stats_values)
{
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare_summary s;
	struct adump_compare *c;
	char *text = NULL, ***rows;
	size_t len = 0, nrows = 0, ncols = 0;
	FILE *f;
	int r;

	dir = t_tmpdir("compare");
	/* Input 0: plain numbers; input 1: NaN and infinities; output 0: NA and a NaN l2norm;
	 * output 1: values whose differences are not round. */
	stats_write("my", "a", "Input,0,24,DT_FLOAT,ND,2x3,6,3,-1,0.5,4\n"
		    "Input,1,24,DT_FLOAT,ND,2x3,6,nan,-inf,inf,5\n"
		    "Output,0,24,DT_FLOAT,ND,2x3,6,1.5,0,NA,2\n"
		    "Output,1,24,DT_FLOAT,ND,2x3,6,0.1234567,-7.25,1e-05,123456.789\n");
	stats_write("golden", "a", "Input,0,24,DT_FLOAT,ND,2x3,6,2,-1,0.25,0\n"
		    "Input,1,24,DT_FLOAT,ND,2x3,6,1,-inf,1,5\n"
		    "Output,0,24,DT_FLOAT,ND,2x3,6,1.5,2,0.5,nan\n"
		    "Output,1,24,DT_FLOAT,ND,2x3,6,0.1,-7,3e-05,123456.7\n");
	cfg.has_msprobe = true;         /* ignored: statistics mode has its own columns */
	c = run_compare(&cfg);
	ck_assert_uint_eq(adump_compare_row_count(c), 4);
	ck_assert_str_eq(adump_compare_column(c, 10), "Max diff");
	ck_assert_str_eq(adump_compare_column(c, adump_compare_column_count(c) - 2), "Result");
	ck_assert_str_eq(adump_compare_column(c, adump_compare_column_count(c) - 1),
			 "CompareFailReason");
	ck_assert_uint_eq(adump_compare_column_count(c), 10 + 17 + 1);

	r = find_row(c, "a:input:0");
	ck_assert_str_eq(cell(c, r, "Max diff"), "1.0");
	ck_assert_str_eq(cell(c, r, "MaxRelativeErr"), "50.0%");
	ck_assert_str_eq(cell(c, r, "Min diff"), "0");
	ck_assert_str_eq(cell(c, r, "MinRelativeErr"), "0%");
	ck_assert_str_eq(cell(c, r, "Mean diff"), "0.25");
	ck_assert_str_eq(cell(c, r, "MeanRelativeErr"), "100.0%");
	ck_assert_str_eq(cell(c, r, "L2norm diff"), "4.0");
	ck_assert_str_eq(cell(c, r, "NormRelativeErr"), "inf");          /* Bench 0 */
	ck_assert_str_eq(cell(c, r, "NPU max"), "3");
	ck_assert_str_eq(cell(c, r, "Bench l2norm"), "0");
	/* max: 1 of the scale 2; l2norm: 4 of sqrt(6) x 2 */
	ck_assert_str_eq(cell(c, r, "Result"), "Warning");
	ck_assert_msg(strstr(cell(c, r, "CompareFailReason"), "Need double check api accuracy.,"
			     "l2norm differs by 0.816") == cell(c, r, "CompareFailReason"), "%s",
		      cell(c, r, "CompareFailReason"));
	ck_assert_str_eq(cell(c, r, "DataType"), "float32");
	ck_assert_str_eq(cell(c, r, "Shape"), "[2,3]");
	ck_assert(adump_compare_row(c, (uint64_t)r)->is_compared);

	r = find_row(c, "a:input:1");
	ck_assert_str_eq(cell(c, r, "Max diff"), "Nan");
	ck_assert_str_eq(cell(c, r, "MaxRelativeErr"), "Nan");
	ck_assert_str_eq(cell(c, r, "Min diff"), "0");                   /* -inf both */
	ck_assert_str_eq(cell(c, r, "Mean diff"), "inf");
	ck_assert_str_eq(cell(c, r, "MeanRelativeErr"), "inf");
	ck_assert_str_eq(cell(c, r, "L2norm diff"), "0");
	ck_assert_str_eq(cell(c, r, "NPU max"), "nan");
	ck_assert_str_eq(cell(c, r, "NPU mean"), "inf");
	/* msprobe leaves Result empty here (inf/inf is no number); a NaN max where the bench's
	 * is 1 is a divergence (issue 22), and the reason says which statistic. */
	ck_assert_str_eq(cell(c, r, "Result"), "Warning");
	ck_assert_str_eq(cell(c, r, "CompareFailReason"),
			 "Need double check api accuracy.,max differs: nan vs 1");
	ck_assert_int_eq(adump_compare_row(c, (uint64_t)r)->verdict, ADUMP_COMPARE_ERROR);

	r = find_row(c, "a:output:0");
	ck_assert_str_eq(cell(c, r, "Min diff"), "-2.0");
	ck_assert_str_eq(cell(c, r, "MinRelativeErr"), "100.0%");
	ck_assert_str_eq(cell(c, r, "Mean diff"), "N/A");
	ck_assert_str_eq(cell(c, r, "MeanRelativeErr"), "N/A");
	ck_assert_str_eq(cell(c, r, "NPU mean"), "N/A");
	ck_assert_str_eq(cell(c, r, "Bench mean"), "0.5");
	ck_assert_str_eq(cell(c, r, "L2norm diff"), "Nan");
	ck_assert_str_eq(cell(c, r, "Result"), "Warning");

	r = find_row(c, "a:output:1");
	check_stat_cells(c, r, "Max", 0.1234567, 0.1);
	check_stat_cells(c, r, "Min", -7.25, -7);
	check_stat_cells(c, r, "Mean", 1e-05, 3e-05);
	check_stat_cells(c, r, "L2norm", 123456.789, 123456.7);
	/* Python's str() of the same numbers (python3 -c 'print(0.1234567 - 0.1)' ...). */
	ck_assert_str_eq(cell(c, r, "Max diff"), "0.023456699999999997");
	ck_assert_str_eq(cell(c, r, "Mean diff"), "-1.9999999999999998e-05");
	ck_assert_str_eq(cell(c, r, "MeanRelativeErr"), "66.66666666666666%");
	ck_assert_str_eq(cell(c, r, "L2norm diff"), "0.08900000000721775");
	ck_assert_str_eq(cell(c, r, "Result"), "Warning");      /* max: 0.0235 of the scale 7 */

	adump_compare_summary_get(c, &s);
	ck_assert_uint_eq(s.matched_count, 1);
	ck_assert_uint_eq(s.tensor_count, 4);
	/* input:1's NaN max against a finite one: the NaN/Inf status, and the first
	 * divergent row in execution order is input:0 (its mean differs: a warning). */
	ck_assert_int_eq(s.exit_code, ADUMP_COMPARE_EXIT_NONFINITE);
	ck_assert_int_eq(s.first_nonfinite_row, find_row(c, "a:input:1"));
	ck_assert_int_eq(s.first_divergent_row, find_row(c, "a:input:0"));
	ck_assert_uint_eq(s.nonfinite_count, 1);

	/* The result CSV read back: the same cells. */
	f = open_memstream(&text, &len);
	ck_assert_int_eq(adump_compare_write_csv(c, f), 0);
	fclose(f);
	rows = csv_parse(text, &nrows, &ncols);
	ck_assert_uint_eq(nrows, 5);
	ck_assert_uint_eq(ncols, adump_compare_column_count(c));
	for (size_t i = 0; i < ncols; i++)
		ck_assert_str_eq(rows[0][i], adump_compare_column(c, (uint32_t)i));
	for (size_t k = 1; k < nrows; k++)
		for (size_t i = 0; i < ncols; i++)
			ck_assert_str_eq(rows[k][i], adump_compare_row(c, k - 1)->cells[i]);
	for (size_t k = 0; k < nrows; k++) {
		for (size_t i = 0; i < ncols; i++)
			free(rows[k][i]);
		free(rows[k]);
	}
	free(rows);
	free(text);
	adump_compare_close(c);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* Issue 31: statistics judged by the tensor's scale. Two clean runs' statistics that differ
 * only by float32 summation order pass (msprobe's older rule, a statistic off by half of
 * itself, flagged the first); NaN, a 1e-3 relative weight noise and a running_var x4 do not. */
START_TEST(test_stats_scale)
{
	struct adump_compare_summary s;
	struct adump_compare *c;
	int r;

	dir = t_tmpdir("compare");
	/* Input 0: a BatchNorm output (2x64x16x16) whose means are 1.5e-11 and 2.3e-10 (93 %
	 * apart); input 1: a gradient of 1e5 elements whose l2norms are 1.2e-4 apart; output 0:
	 * max, min and mean a few float32 roundings apart on a scale of 1. */
	stats_write("my", "clean", "Input,0,131072,DT_FLOAT,ND,2x64x16x16,32768,4.7,-4.3,"
		    "1.5e-11,181.0\n"
		    "Input,1,400000,DT_FLOAT,ND,100000,100000,0.03,-0.029,1e-06,2.0002400\n"
		    "Output,0,4096,DT_FLOAT,ND,1024,1024,1.0000001,-0.99999994,0.001,18.0\n");
	stats_write("golden", "clean", "Input,0,131072,DT_FLOAT,ND,2x64x16x16,32768,4.7,-4.3,"
		    "2.3e-10,181.00002\n"
		    "Input,1,400000,DT_FLOAT,ND,100000,100000,0.03,-0.029,1.0000005e-06,2.0\n"
		    "Output,0,4096,DT_FLOAT,ND,1024,1024,1.0,-1.0,0.0010000001,18.000002\n");
	/* Input 0: a NaN weight (NaN max and mean); input 1: a weight with 1e-3 relative noise
	 * (its largest element moves by 4e-4 of it); output 0: a running_var four times over. */
	stats_write("my", "bad", "Input,0,64,DT_FLOAT,ND,4x4,16,nan,-0.5,nan,nan\n"
		    "Input,1,4096,DT_FLOAT,ND,32x32,1024,0.2500999,-0.2497,0.0012,4.6201\n"
		    "Output,0,32,DT_FLOAT,ND,8,8,4.8,0.4,1.6,4.9\n");
	stats_write("golden", "bad", "Input,0,64,DT_FLOAT,ND,4x4,16,0.5,-0.5,0.01,1.2\n"
		    "Input,1,4096,DT_FLOAT,ND,32x32,1024,0.25,-0.2497,0.0012,4.62\n"
		    "Output,0,32,DT_FLOAT,ND,8,8,1.2,0.1,0.4,1.225\n");
	c = run_compare(NULL);
	for (int k = 0; k < 3; k++) {
		static const char *const ids[] = { "clean:input:0", "clean:input:1", "clean:output:0" };

		r = find_row(c, ids[k]);
		ck_assert_int_ge(r, 0);
		ck_assert_msg(adump_compare_row(c, (uint64_t)r)->verdict == ADUMP_COMPARE_PASS,
			      "%s: %s", ids[k], adump_compare_row(c, (uint64_t)r)->reason);
		ck_assert_str_eq(cell(c, r, "Result"), "");
		ck_assert_str_eq(cell(c, r, "CompareFailReason"), "");
	}
	ck_assert_str_eq(cell(c, find_row(c, "clean:input:0"), "MeanRelativeErr"),
			 "93.47826086956522%");
	r = find_row(c, "bad:input:0");
	ck_assert_int_eq(adump_compare_row(c, (uint64_t)r)->verdict, ADUMP_COMPARE_ERROR);
	r = find_row(c, "bad:input:1");
	ck_assert_int_eq(adump_compare_row(c, (uint64_t)r)->verdict, ADUMP_COMPARE_WARNING);
	ck_assert_str_eq(cell(c, r, "Result"), "Warning");
	ck_assert_msg(strstr(adump_compare_row(c, (uint64_t)r)->reason, "max differs by 0.0003996 of"),
		      "%s", adump_compare_row(c, (uint64_t)r)->reason);
	r = find_row(c, "bad:output:0");
	ck_assert_int_eq(adump_compare_row(c, (uint64_t)r)->verdict, ADUMP_COMPARE_ERROR);
	adump_compare_summary_get(c, &s);
	ck_assert_uint_eq(s.warning_count, 1);
	ck_assert_uint_eq(s.error_count, 2);
	ck_assert_str_eq(adump_compare_row(c, (uint64_t)s.first_divergent_row)->op_name, "bad");
	adump_compare_close(c);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* A CANN statistics dump <type>.<name>.<task>.1.<time>.csv in <dir>/<side>, in task order. */
static void stats_put(const char *side, const char *type, const char *name, int task,
		      const char *rows)
{
	char path[4096], *text;

	snprintf(path, sizeof(path), "%s/%s", dir, side);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s.%s.%d.1.%llu.csv", dir, side, type, name, task,
		 1700000000000000ull + (unsigned)task);
	ck_assert_int_ge(asprintf(&text, STATS_HEAD "%s", rows), 0);
	ck_assert_int_eq(write_text(path, text), 0);
	free(text);
}

static struct adump_scan *scan_side(const char *side)
{
	char path[4096], msg[1024];
	struct adump_scan *s;

	snprintf(path, sizeof(path), "%s/%s", dir, side);
	ck_assert_int_eq(adump_scan_open(NULL, path, &s, msg, sizeof(msg)), 0);
	ck_assert_int_eq(adump_scan_run(s), 0);
	return s;
}

/* Issue 31: torch.empty's output and bernoulli_'s first input hold whatever memory was there:
 * not compared (verdict uninitialized), no divergence, no NaN/Inf status, and scan lists them
 * as uninitialized, no anomaly. */
START_TEST(test_stats_uninitialized)
{
	struct adump_compare_summary sum;
	struct adump_compare *c;
	struct adump_scan *s;
	int r;

	dir = t_tmpdir("compare");
	stats_put("my", "empty", "Aten_empty_memory_format_0_forward", 1,
		  "Output,0,32,DT_FLOAT,ND,8,8,nan,-3e+38,nan,nan\n");
	stats_put("golden", "empty", "Aten_empty_memory_format_0_forward", 1,
		  "Output,0,32,DT_FLOAT,ND,8,8,0,0,0,0\n");
	stats_put("my", "bernoulli_", "Aten_bernoulli__float_0_forward", 2,
		  "Input,0,32,DT_FLOAT,ND,8,8,nan,-3e+38,nan,nan\n"
		  "Output,0,32,DT_FLOAT,ND,8,8,1,0,0.75,2.4494897\n");
	stats_put("golden", "bernoulli_", "Aten_bernoulli__float_0_forward", 2,
		  "Input,0,32,DT_FLOAT,ND,8,8,0,0,0,0\n"
		  "Output,0,32,DT_FLOAT,ND,8,8,1,0,0.75,2.4494897\n");
	/* a real divergence after them: an empty_like elsewhere is no licence */
	stats_put("my", "mul", "Aten_mul_Tensor_0_forward", 3,
		  "Input,0,32,DT_FLOAT,ND,8,8,1,0,0.75,2.4494897\n"
		  "Output,0,32,DT_FLOAT,ND,8,8,2,0,1.5,4.9\n");
	stats_put("golden", "mul", "Aten_mul_Tensor_0_forward", 3,
		  "Input,0,32,DT_FLOAT,ND,8,8,1,0,0.75,2.4494897\n"
		  "Output,0,32,DT_FLOAT,ND,8,8,1,0,0.75,2.4494897\n");
	c = run_compare(NULL);
	ck_assert_uint_eq(adump_compare_row_count(c), 5);
	for (int k = 0; k < 2; k++) {
		static const char *const ids[] = { "Aten_empty_memory_format_0_forward:output:0",
						   "Aten_bernoulli__float_0_forward:input:0" };

		r = find_row(c, ids[k]);
		ck_assert_int_ge(r, 0);
		ck_assert_int_eq(adump_compare_row(c, (uint64_t)r)->verdict,
				 ADUMP_COMPARE_UNINITIALIZED);
		ck_assert(!adump_compare_row(c, (uint64_t)r)->is_compared);
		ck_assert_str_eq(adump_compare_verdict_name(ADUMP_COMPARE_UNINITIALIZED),
				 "uninitialized");
		ck_assert_msg(strstr(cell(c, r, "CompareFailReason"), "uninitialized memory"), "%s",
			      cell(c, r, "CompareFailReason"));
		ck_assert_str_eq(cell(c, r, "Result"), "NaN");
	}
	r = find_row(c, "Aten_bernoulli__float_0_forward:output:0");
	ck_assert_int_eq(adump_compare_row(c, (uint64_t)r)->verdict, ADUMP_COMPARE_PASS);
	adump_compare_summary_get(c, &sum);
	ck_assert_int_eq(sum.first_divergent_row, find_row(c, "Aten_mul_Tensor_0_forward:output:0"));
	ck_assert_int_eq(sum.first_nonfinite_row, -1);
	ck_assert_int_eq(sum.exit_code, 0);
	adump_compare_close(c);

	s = scan_side("my");
	ck_assert_uint_eq(adump_scan_op_count(s), 2);
	for (uint64_t i = 0; i < 2; i++)
		ck_assert_int_eq(adump_scan_op(s, i)->kind, ADUMP_SCAN_UNINITIALIZED);
	ck_assert_str_eq(adump_scan_kind_name(ADUMP_SCAN_UNINITIALIZED), "uninitialized");
	adump_scan_close(s);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* Issue 31: scan's origin is the innermost op with finite inputs. A NaN weight (input 1) of a
 * Linear inside a Block: the Linear is where it entered, the Block around it is "enclosing"
 * (not a second origin), the head after them is reached. */
START_TEST(test_scan_origin_innermost)
{
	struct adump_scan *s;
	const struct adump_scan_op *op;

	dir = t_tmpdir("compare");
	stats_put("my", "Linear", "Module_blk_fc_Linear_forward_0", 1,
		  "Input,0,32,DT_FLOAT,ND,2x4,8,1,-1,0,2\n"
		  "Input,1,64,DT_FLOAT,ND,4x4,16,nan,-0.5,nan,nan\n"
		  "Output,0,32,DT_FLOAT,ND,2x4,8,nan,nan,nan,nan\n");
	stats_put("my", "ReLU", "Module_blk_act_ReLU_forward_0", 2,
		  "Input,0,32,DT_FLOAT,ND,2x4,8,nan,nan,nan,nan\n"
		  "Output,0,32,DT_FLOAT,ND,2x4,8,nan,nan,nan,nan\n");
	stats_put("my", "Block", "Module_blk_Block_forward_0", 3,
		  "Input,0,32,DT_FLOAT,ND,2x4,8,1,-1,0,2\n"
		  "Output,0,32,DT_FLOAT,ND,2x4,8,nan,nan,nan,nan\n");
	stats_put("my", "Linear", "Module_head_Linear_forward_0", 4,
		  "Input,0,32,DT_FLOAT,ND,2x4,8,nan,nan,nan,nan\n"
		  "Output,0,8,DT_FLOAT,ND,2,2,nan,nan,nan,nan\n");
	s = scan_side("my");
	ck_assert_uint_eq(adump_scan_op_count(s), 4);
	op = adump_scan_op(s, 0);
	ck_assert_int_eq(op->kind, ADUMP_SCAN_ENTERED);
	ck_assert_str_eq(op->message, "first seen in input:1 of Module_blk_fc_Linear_forward_0, "
			 "made by no captured op");
	ck_assert_int_eq(adump_scan_op(s, 1)->kind, ADUMP_SCAN_REACHED);
	op = adump_scan_op(s, 2);
	ck_assert_int_eq(op->kind, ADUMP_SCAN_ENCLOSING);
	ck_assert_str_eq(op->message, "made inside it, by Module_blk_fc_Linear_forward_0");
	ck_assert_int_eq(adump_scan_op(s, 3)->kind, ADUMP_SCAN_REACHED);
	adump_scan_close(s);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* A FIFO where a statistics dump was listed (swapped in after the listing) is refused at open,
 * never waited on for a writer that does not come (the alarm fails the test if it is). */
START_TEST(test_stats_fifo_refused)
{
	struct adump_compare_stats st;
	char path[4096], msg[512] = "";

	dir = t_tmpdir("compare");
	snprintf(path, sizeof(path), "%s/Add.fifo.1.2.100.csv", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	alarm(20);
	ck_assert_int_eq(adump_compare_stats_load(path, &st, msg, sizeof(msg)), -EINVAL);
	alarm(0);
	ck_assert_msg(strstr(msg, path) != NULL, "message '%s'", msg);
	adump_compare_stats_free(&st);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_stats_matching)
{
	uint64_t rng = t_seed() + 7, dims[1] = { 16 };
	float *a = randf(16, &rng, 2);
	const float *in[1] = { a };
	struct adump_compare *c;
	struct adump_compare_summary s;
	char path[4096];
	int r;

	dir = t_tmpdir("compare");
	stats_write("my", "ok", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n");
	stats_write("golden", "ok", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n");
	/* Only on my side. */
	stats_write("my", "lone", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n");
	/* Input counts differ, outputs agree: the outputs are still compared. */
	stats_write("my", "cnt", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n"
		    "Input,1,4,DT_FLOAT,ND,1,1,1,1,1,1\nOutput,0,4,DT_FLOAT,ND,1,1,2,2,2,2\n");
	stats_write("golden", "cnt", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n"
		    "Output,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n");
	/* Both counts differ: one row with both messages. */
	stats_write("my", "both", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n"
		    "Input,1,4,DT_FLOAT,ND,1,1,1,1,1,1\n");
	stats_write("golden", "both", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n"
		    "Output,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n");
	/* Statistics on one side, tensors on the other. */
	dump_write("my", "mixed", 100, 1, in, dims, 0, NULL, dims, 1);
	stats_write("golden", "mixed", "Input,0,64,DT_FLOAT,ND,16,16,1,1,1,1\n");
	/* Not a statistics file. */
	snprintf(path, sizeof(path), "%s/my/Add.bad.1.2.100.csv", dir);
	ck_assert_int_eq(write_text(path, "hello,world\n1,2\n"), 0);
	stats_write("golden", "bad", "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,1\n");

	c = run_compare(NULL);
	ck_assert_str_eq(adump_compare_column(c, 10), "Max diff");
	r = find_row(c, "ok:input:0");
	ck_assert_str_eq(cell(c, r, "Max diff"), "0");
	ck_assert_str_eq(cell(c, r, "CompareFailReason"), "");
	ck_assert_int_lt(find_row(c, "cnt:input:0"), 0);
	r = find_row(c, "cnt:output:0");
	ck_assert_str_eq(cell(c, r, "Max diff"), "1.0");
	ck_assert_str_eq(cell(c, r, "MaxRelativeErr"), "100.0%");
	for (uint64_t i = 0; i < adump_compare_row_count(c); i++) {
		const struct adump_compare_row *row = adump_compare_row(c, i);
		const char *why = row->cells[adump_compare_column_count(c) - 1];

		if (!strcmp(row->op_name, "lone"))
			ck_assert_str_eq(why, "[lone] There is no the ground truth dump file for the "
					 "op \"lone\".");
		else if (!strcmp(row->op_name, "both"))
			ck_assert_str_eq(why, "[both] The number of input does not match (2 vs 1).,"
					 "[both] The number of output does not match (0 vs 1).");
		else if (!strcmp(row->op_name, "mixed"))
			ck_assert_str_eq(why, "[mixed] The ground truth is a statistics dump and my "
					 "output a tensor dump: they cannot be compared.");
		else if (!strcmp(row->op_name, "bad"))
			ck_assert_msg(strstr(why, "no \"Input/Output\" column"), "%s", why);
		else
			continue;
		ck_assert(!row->is_compared);
		ck_assert_str_eq(row->cells[10], "NaN");
	}
	adump_compare_summary_get(c, &s);
	ck_assert_uint_eq(s.op_count, 6);
	ck_assert_uint_eq(s.my_only_count, 1);
	ck_assert_uint_eq(s.tensor_count, 2);
	ck_assert_uint_eq(s.failed_count, 4);
	adump_compare_close(c);

	/* With tensor dumps on both sides for one op, the comparison is of tensors: the
	 * statistics ops get a message, the tensor op is compared. */
	dump_write("golden", "tens", 100, 1, in, dims, 0, NULL, dims, 1);
	dump_write("my", "tens", 100, 1, in, dims, 0, NULL, dims, 1);
	c = run_compare(NULL);
	ck_assert_str_eq(adump_compare_column(c, 10), "CosineSimilarity");
	r = find_row(c, "tens:input:0");
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "1.000000");
	for (uint64_t i = 0; i < adump_compare_row_count(c); i++) {
		const struct adump_compare_row *row = adump_compare_row(c, i);

		if (!strcmp(row->op_name, "ok"))
			ck_assert_str_eq(row->cells[adump_compare_column_count(c) - 1],
					 "[ok] Both sides are statistics dumps, but other ops are "
					 "tensor dumps: compare statistics dumps on their own.");
	}
	adump_compare_close(c);
	free(a);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* A content=stats capture of the capture helpers' Add workload into <dir>/<side>. */
static void stats_capture(const char *side, uint64_t seed)
{
	struct t_workload wl = { .stream_count = 1, .op_count = 5, .min_bytes = 64,
				 .max_bytes = 16384, .chunk_bytes = 4000, .seed = seed };
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	char root[4096];

	snprintf(root, sizeof(root), "%s/%s", dir, side);
	cfg.dump_path = root;
	cfg.time_dir = "20260104000000";
	cfg.content = ADUMP_CONTENT_STATS;
	cfg.stats_mask = ADUMP_STAT_ALL;
	cfg.chunk_bytes = wl.chunk_bytes;
	cfg.stream_max = 1;
	cfg.worker_count = 1;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(t_workload_run(s, &wl), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	t_workload_free(&wl);
}

START_TEST(test_stats_capture)
{
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare_summary s;
	struct adump_compare *c;
	uint64_t seed = t_seed();

	dir = t_tmpdir("compare");
	stats_capture("my", seed);
	stats_capture("golden", seed);
	cfg.is_recursive = true;
	c = run_compare(&cfg);
	adump_compare_summary_get(c, &s);
	ck_assert_uint_eq(s.matched_count, 5);
	ck_assert_uint_eq(s.failed_count, 0);
	ck_assert_uint_eq(s.tensor_count, 5 * 3);       /* self, other, out */
	ck_assert_int_eq(s.exit_code, 0);
	for (uint64_t i = 0; i < adump_compare_row_count(c); i++) {
		static const char *const stat[] = { "max", "min", "mean", "l2norm" };
		static const char *const diff[] = { "Max diff", "Min diff", "Mean diff", "L2norm diff" };
		int r = (int)i;

		for (int k = 0; k < 4; k++) {
			char npu[32], bench[32];

			snprintf(npu, sizeof(npu), "NPU %s", stat[k]);
			snprintf(bench, sizeof(bench), "Bench %s", stat[k]);
			ck_assert_str_ne(cell(c, r, npu), "N/A");
			ck_assert_str_eq(cell(c, r, npu), cell(c, r, bench));
			ck_assert_str_eq(cell(c, r, diff[k]), "0");
		}
		ck_assert_str_eq(cell(c, r, "Result"), "");
		ck_assert_str_eq(cell(c, r, "CompareFailReason"), "");
	}
	adump_compare_close(c);
	t_rmtree(dir);
	free(dir);
}
END_TEST
int main(void)
{
	Suite *s = suite_create("compare_stats");
	TCase *td = tcase_create("dirs");

	tcase_set_timeout(td, 60);
	tcase_add_test(td, test_stats_values);
	tcase_add_test(td, test_stats_scale);
	tcase_add_test(td, test_stats_uninitialized);
	tcase_add_test(td, test_scan_origin_innermost);
	tcase_add_test(td, test_stats_fifo_refused);
	tcase_add_test(td, test_stats_matching);
	tcase_add_test(td, test_stats_capture);
	suite_add_tcase(s, td);
	return t_run_suite(s);
}
