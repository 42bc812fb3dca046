/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare`: msaccucmp's compare over two dumps (result_<timestamp>.csv, the advisor's
 * advisor_summary.txt, its exit codes), a one-screen summary, JSON rows and a plot. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adump/compare.h"
#include "tools/compare_out.h"
#include "tools/html_out.h"
#include "tools/tool.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: adump compare -m MY_DUMP -g GROUND_TRUTH [-out DIR] [-alg LIST] [-advisor]\n"
		"                     [--json] [--threads N] [--recursive] [--msprobe] [--plot] [--quiet]\n"
		"                     [--threshold KEY=VALUE,...] [--fail-on warning|error] [--html FILE]\n\n"
		"Compares two dumps op by op, tensor by tensor, like msaccucmp compare (NPU vs NPU, no\n"
		"fusion rule). Each side is a directory of dump files (.lz4 too), a packed capture,\n"
		"one dump file, or msprobe's layout (a rank directory with dump.json, or dump.json:\n"
		"each entry a dump, tensors from dump_tensor_data/*.pt, statistics from dump.json;\n"
		"matched with adump.torch's CANN files by name, tensors by position); two .npy files are compared as msaccucmp's file_compare does\n"
		"(file_result_<ts>.txt; without -alg, all but KL and StandardDeviation). Files are matched\n"
		"by the op name in their names, or where one file name stands for several dumps, by the\n"
		"op name their headers hold (modules a.b and a_b). Several dumps of one op: with call\n"
		"numbers (adump.torch) the n-th is compared with the n-th; without (CANN) the latest, as\n"
		"msaccucmp does, with a warning naming the others. Writes DIR/result_<YYYYmmddHHMMSS>.csv\n"
		"(result_<ts>_1.csv ... where the name is taken).\n"
		"Statistics dumps (content=stats, <dump name>.csv) on both sides are compared as\n"
		"msprobe's summary mode: Max/Min/Mean/L2norm diff, their relative errors, both sides'\n"
		"statistics and Result (Warning) after the head columns; -alg, -advisor and --msprobe\n"
		"do not apply. An op with statistics on one side only gets a CompareFailReason.\n\n"
		"  -m PATH          my output (the run under test; NPUDump)\n"
		"  -g PATH          ground truth (GroundTruth)\n"
		"  -out DIR         where results go (default: the current directory)\n"
		"  -alg LIST        all (default), or a comma list of names or indices:\n"
		"                   0 CosineSimilarity 1 MaxAbsoluteError 2 AccumulatedRelativeError\n"
		"                   3 RelativeEuclideanDistance 4 KullbackLeiblerDivergence\n"
		"                   5 StandardDeviation 6 MeanAbsoluteError 7 RootMeanSquareError\n"
		"                   8 MaxRelativeError 9 MeanRelativeError\n"
		"  -advisor         OverFlow column and DIR/advisor_summary.txt (the first op whose\n"
		"                   NaN/Inf differ, else the first float16 overflow, else the first\n"
		"                   divergent op)\n"
		"  --threshold L    the verdicts' limits (README \"Verdicts\"): KEY=VALUE,... with KEY\n"
		"                   cosine, cosine_warning, scaled, scaled_warning, max_abs or\n"
		"                   max_abs_warning, alone or after float32. float16. bfloat16. integer.\n"
		"  --fail-on LEVEL  warning or error: exit 101 when a row's verdict is LEVEL or\n"
		"                   worse and the status would otherwise be 0 (for CI gates)\n"
		"  --json           the rows as JSON on stdout (one object per row)\n"
		"  --threads N      compare on N threads (default: one per CPU)\n"
		"  --recursive      two directories: pair each capture directory below them\n"
		"                   (step<N>/rank<R>/..., any level found on both sides; one\n"
		"                   directory each under other names pairs up) and compare pair by\n"
		"                   pair: DIR/result_<pair>_<ts>.csv each, DIR/summary_<ts>.csv, the\n"
		"                   first divergent step, rank and op on stderr; --json gives one\n"
		"                   object per pair. Directories without a counterpart are listed and\n"
		"                   give status 2 (a pair's own status comes first). Otherwise: read\n"
		"                   subdirectories too (msaccucmp reads one directory level)\n"
		"  --msprobe        also msprobe's One/Five Thousandth(s) Err Ratio, EucDist and\n"
		"                   Accuracy Reached or Not columns\n"
		"  --plot           DIR/compare_<ts>.png and .svg: cosine and max relative error along\n"
		"                   the op order, first divergent op marked (needs gnuplot)\n"
		"  --html FILE      FILE: the result as one self-contained HTML page (adump report\n"
		"                   --help says what it shows); with --recursive, every pair\n"
		"  --chunk N        elements read per step and side (default 64K; memory per thread\n"
		"                   is about 24 bytes per element)\n"
		"  --quiet          no summary on stderr\n\n"
		"Sums are taken in float64 after the float32 cast msaccucmp makes (msaccucmp sums in\n"
		"float32), so figures agree with msaccucmp's up to its rounding.\n"
		"Exit status as msaccucmp's: 0 every op matched; 2 an op on one side only, or no op\n"
		"matched, or usage error; 3 a path that cannot be read; 11 an op whose inputs and\n"
		"outputs both failed the count/shape checks; 18 an unreadable dump file; 31 bad -alg;\n"
		"40 FFTS+ subtask data that does not fill its shape; 100 (adump's own) a tensor\n"
		"whose NaN/Inf differ between the sides (it takes precedence); 101 (adump's own,\n"
		"--fail-on only) a verdict at or above LEVEL where the status would be 0.\n"
		"Each compared tensor gets a verdict (pass, warning, error: --json, the summary);\n"
		"uninitialized memory (torch.empty's output, bernoulli_'s first input) gets\n"
		"\"uninitialized\" and is not compared.\n"
		"the first divergent op is the first in execution order (my output's timestamps)\n"
		"whose verdict is not pass.\n");
}

static void json_rows(const struct adump_compare *c, FILE *f)
{
	uint32_t cols = adump_compare_column_count(c);

	fputs("[\n", f);
	for (uint64_t r = 0; r < adump_compare_row_count(c); r++) {
		const struct adump_compare_row *row = adump_compare_row(c, r);
		uint32_t seen_dtype = 0, seen_addr = 0;

		fputs(r ? ",\n  {" : "  {", f);
		for (uint32_t i = 0; i < cols; i++) {
			const char *name = adump_compare_column(c, i);
			char key[64];

			/* DataType and Address appear twice in the CSV; JSON keys must differ. */
			if (!strcmp(name, "DataType"))
				snprintf(key, sizeof(key), "%s", seen_dtype++ ? "GroundTruthDataType"
									    : "NPUDumpDataType");
			else if (!strcmp(name, "Address"))
				snprintf(key, sizeof(key), "%s", seen_addr++ ? "GroundTruthAddress"
									   : "NPUDumpAddress");
			else
				snprintf(key, sizeof(key), "%s", name);
			if (i)
				fputs(", ", f);
			tool_json_str(f, key);
			fputs(": ", f);
			tool_json_str(f, row->cells[i]);
		}
		/* adump's own keys: the verdict and the numbers behind it. */
		fputs(", \"verdict\": ", f);
		tool_json_str(f, adump_compare_verdict_name(row->verdict));
		fputs(", \"reason\": ", f);
		tool_json_str(f, row->reason ? row->reason : "");
		fputs(", \"module\": ", f);
		if (row->module)
			tool_json_str(f, row->module);
		else
			fputs("null", f);
		if (row->is_compared) {
			const struct adump_compare_metrics *m = &row->metrics;

			fprintf(f, ", \"nan_count\": [%llu, %llu], \"inf_count\": [%llu, %llu], "
				"\"nonfinite_diff_count\": %llu",
				(unsigned long long)m->nan_count[0], (unsigned long long)m->nan_count[1],
				(unsigned long long)m->inf_count[0], (unsigned long long)m->inf_count[1],
				(unsigned long long)m->nonfinite_diff_count);
			if (m->nonfinite_diff_count && m->first_nonfinite_diff != UINT64_MAX)
				fprintf(f, ", \"first_nonfinite_diff\": %llu",
					(unsigned long long)m->first_nonfinite_diff);
			if (isfinite(m->scaled_error))
				fprintf(f, ", \"scaled_error\": %.17g", m->scaled_error);
		}
		fputc('}', f);
	}
	fputs("\n]\n", f);
}

static void human_bytes(char *buf, size_t cap, double b)
{
	if (b >= 1e9)
		snprintf(buf, cap, "%.2f GB", b / 1e9);
	else if (b >= 1e6)
		snprintf(buf, cap, "%.1f MB", b / 1e6);
	else
		snprintf(buf, cap, "%.0f B", b);
}

/* Statistics dumps on both sides: msprobe's summary-mode columns instead of the algorithms. */
static bool is_stats_mode(const struct adump_compare *c)
{
	const char *name = adump_compare_column(c, 10);

	return name && !strcmp(name, "Max diff");
}

/* Statistics mode: how many rows have Result Warning (verdict not pass), and the first. */
static void stats_summary_print(const struct adump_compare *c)
{
	uint32_t cols = adump_compare_column_count(c);
	uint64_t warnings = 0;
	const struct adump_compare_row *first = NULL;

	for (uint64_t r = 0; r < adump_compare_row_count(c); r++) {
		const struct adump_compare_row *row = adump_compare_row(c, r);

		if (strcmp(row->cells[cols - 2], "Warning"))
			continue;
		if (!warnings++)
			first = row;
	}
	tool_err("  statistics dumps (msprobe summary mode): %llu tensors with Result "
		"Warning (a statistic differs by more than the tensor's scale allows)\n",
		(unsigned long long)warnings);
	if (first)
		tool_err("  first: Index %llu %s, tensor %s: Max diff %s  Min diff %s  "
			"Mean diff %s  L2norm diff %s\n", (unsigned long long)first->index,
			first->op_name, first->tensor_id, first->cells[10], first->cells[11],
			first->cells[12], first->cells[13]);
}

/* " in " and the module a row's op ran in, when that is not the op itself; "" otherwise. */
static const char *in_module(const struct adump_compare_row *row, bool is_name)
{
	if (!row->module || adump_compare_is_self(row))
		return "";
	return is_name ? row->module : " in ";
}

/* A screenful: counts, speed, the first divergent tensor and the five lowest cosines. */
static void summary_print(const struct adump_compare *c, const struct adump_compare_summary *s,
			  double seconds, const char *csv)
{
	char b0[32], b1[32];
	uint64_t worst[5];
	unsigned worst_count = 0;

	human_bytes(b0, sizeof(b0), (double)s->bytes[0]);
	human_bytes(b1, sizeof(b1), (double)s->bytes[1]);
	fprintf(stderr,
		"adump compare: %llu ops (%llu matched, %llu only in my output, %llu only in ground "
		"truth)\n  %llu tensors compared, %llu rows without numbers; read %s + %s in %.2f s "
		"(%.2f GB/s per side)\n",
		(unsigned long long)s->op_count, (unsigned long long)s->matched_count,
		(unsigned long long)s->my_only_count, (unsigned long long)s->golden_only_count,
		(unsigned long long)s->tensor_count, (unsigned long long)s->failed_count, b0, b1,
		seconds, seconds > 0 ? (double)(s->bytes[0] > s->bytes[1] ? s->bytes[0] : s->bytes[1]) /
						 seconds / 1e9
				     : 0.0);
	tool_err("  verdicts: %llu error, %llu warning; %llu tensors whose NaN/Inf differ\n",
		(unsigned long long)s->error_count, (unsigned long long)s->warning_count,
		(unsigned long long)s->nonfinite_count);
	if (is_stats_mode(c))
		stats_summary_print(c);
	if (s->first_nonfinite_row >= 0) {
		const struct adump_compare_row *row = adump_compare_row(c, (uint64_t)s->first_nonfinite_row);

		tool_err("  first NaN/Inf difference: Index %llu %s%s%s, tensor %s: %s\n",
			(unsigned long long)row->index, row->op_name, in_module(row, false),
			in_module(row, true), row->tensor_id, row->reason);
	}
	if (s->first_divergent_row >= 0) {
		const struct adump_compare_row *row = adump_compare_row(c, (uint64_t)s->first_divergent_row);

		tool_err("  first divergent op (execution order): Index %llu %s%s%s, tensor %s: %s (%s)\n",
			(unsigned long long)row->index, row->op_name, in_module(row, false),
			in_module(row, true), row->tensor_id,
			adump_compare_verdict_name(row->verdict), row->reason);
		if (!is_stats_mode(c))
			tool_err("    CosineSimilarity %.6f  MaxAbsoluteError %.6g  MaxRelativeError %.6g  "
				"RelativeEuclideanDistance %.6g\n",
				row->cosine, row->metrics.value[ADUMP_COMPARE_MAX_ABS],
				row->metrics.value[ADUMP_COMPARE_MAX_REL],
				row->metrics.value[ADUMP_COMPARE_REL_EUCLID]);
	} else if (s->tensor_count) {
		tool_err("  every compared tensor passes\n");
	}
	/* The lowest cosines, by selection: there are at most five to keep. */
	for (uint64_t r = 0; r < adump_compare_row_count(c); r++) {
		const struct adump_compare_row *row = adump_compare_row(c, r);
		unsigned k;

		if (isnan(row->cosine) || row->cosine >= 0.99)
			continue;
		for (k = worst_count; k > 0; k--) {
			if (adump_compare_row(c, worst[k - 1])->cosine <= row->cosine)
				break;
			if (k < 5)
				worst[k] = worst[k - 1];
		}
		if (k < 5)
			worst[k] = r;
		if (worst_count < 5)
			worst_count++;
	}
	if (worst_count > 1) {
		tool_err("  lowest CosineSimilarity:\n");
		for (unsigned k = 0; k < worst_count; k++) {
			const struct adump_compare_row *row = adump_compare_row(c, worst[k]);

			tool_err("    Index %-6llu %-36s %-24s %.6f  MaxRelativeError %.6g\n",
				(unsigned long long)row->index, row->op_name, row->tensor_id,
				row->cosine, row->max_relative_error);
		}
	}
	if (csv)
		tool_err("  result: %s\n", csv);
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_npy(const char *path)
{
	struct stat st;
	size_t len = strlen(path);

	return len > 4 && !strcmp(path + len - 4, ".npy") && stat(path, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

int cmd_compare(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_THREADS, OPT_RECURSIVE, OPT_MSPROBE, OPT_PLOT, OPT_QUIET,
	       OPT_OUT, OPT_ALG, OPT_ADVISOR, OPT_CHUNK, OPT_THRESHOLD, OPT_FAIL_ON, OPT_HTML };
	static const struct option opts[] = {
		{ "out", required_argument, NULL, OPT_OUT },
		{ "alg", required_argument, NULL, OPT_ALG },
		{ "advisor", no_argument, NULL, OPT_ADVISOR },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "recursive", no_argument, NULL, OPT_RECURSIVE },
		{ "msprobe", no_argument, NULL, OPT_MSPROBE },
		{ "plot", no_argument, NULL, OPT_PLOT },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "chunk", required_argument, NULL, OPT_CHUNK },
		{ "threshold", required_argument, NULL, OPT_THRESHOLD },
		{ "fail-on", required_argument, NULL, OPT_FAIL_ON },
		{ "html", required_argument, NULL, OPT_HTML },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	const char *my = NULL, *golden = NULL, *out_dir = ".", *html = NULL;
	bool is_json = false, is_plot = false, is_quiet = false, is_advisor = false;
	enum adump_compare_verdict fail_on = ADUMP_COMPARE_NONE;
	struct adump_compare_summary sum;
	struct adump_compare *c = NULL;
	struct compare_out out;
	char msg[8192], stamp[32], csv[4096], path[4096];
	struct tm tm;
	time_t t;
	double t0;
	FILE *f;
	int opt, ret, code;

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "m:g:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			my = optarg;
			break;
		case 'g':
			golden = optarg;
			break;
		case OPT_OUT:
			out_dir = optarg;
			break;
		case OPT_ALG:
			if (adump_compare_alg_parse(&cfg, optarg, msg, sizeof(msg)) < 0) {
				tool_err("adump compare: -alg: %s\n", msg);
				return EXIT_INVALID_ALG;
			}
			break;
		case OPT_ADVISOR:
			is_advisor = true;
			cfg.has_overflow = true;
			break;
		case OPT_JSON:
			is_json = true;
			break;
		case OPT_THREADS:
			if (tool_parse_threads("compare", optarg, &cfg.thread_count) < 0)
				return 2;
			break;
		case OPT_CHUNK: {
			uint64_t v;

			if (tool_parse_size(optarg, &v) < 0 || v < 1024 || v > (64u << 20)) {
				tool_err("adump compare: --chunk: expected 1K-64M elements, got "
						"'%s'\n", optarg);
				return 2;
			}
			cfg.chunk_elements = (size_t)v;
			break;
		}
		case OPT_THRESHOLD: {
			struct adump_compare_thresholds th;

			if (adump_compare_thresholds_parse(&th, optarg, msg, sizeof(msg)) < 0) {
				tool_err("adump compare: --threshold: %s\n", msg);
				return 2;
			}
			cfg.thresholds = optarg;
			break;
		}
		case OPT_FAIL_ON:
			if (!strcmp(optarg, "warning")) {
				fail_on = ADUMP_COMPARE_WARNING;
			} else if (!strcmp(optarg, "error")) {
				fail_on = ADUMP_COMPARE_ERROR;
			} else {
				tool_err("adump compare: --fail-on: expected warning or error, "
					"got '%s'\n", optarg);
				return 2;
			}
			break;
		case OPT_RECURSIVE:
			cfg.is_recursive = true;
			break;
		case OPT_MSPROBE:
			cfg.has_msprobe = true;
			break;
		case OPT_PLOT:
			is_plot = true;
			break;
		case OPT_HTML:
			html = optarg;
			break;
		case OPT_QUIET:
			is_quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !my || !golden) {
		fprintf(stderr, "adump compare: %s\n\n",
			optind < argc ? "unexpected argument" : "-m and -g are required");
		usage(stderr);
		return 2;
	}
	if (mkdir(out_dir, 0750) < 0 && errno != EEXIST) {
		tool_err("adump compare: -out %s: %s\n", out_dir, strerror(errno));
		return EXIT_INVALID_PATH;
	}
	if (is_npy(my) && is_npy(golden))
		return compare_npy(&cfg, my, golden, out_dir, cfg.alg_count != 0);
	if (cfg.is_recursive && is_dir(my) && is_dir(golden)) {
		code = compare_pairs_run(&cfg, my, golden, out_dir, is_json, is_quiet, fail_on,
					 html);
		if (code != COMPARE_PAIRS_ONE) {
			if (is_advisor || is_plot)
				tool_err("adump compare: -advisor and --plot apply to one "
					"pair: give that pair's directories without --recursive\n");
			return code;
		}
	}
	t0 = tool_now_seconds();
	ret = adump_compare_open(&cfg, my, golden, &c, msg, sizeof(msg));
	if (ret < 0) {
		tool_err("adump compare: %s\n", msg);
		return ret == -ADUMP_ERR_NOT_FOUND ? EXIT_NO_DUMP
		       : ret == -ADUMP_ERR_CONFIG  ? EXIT_INVALID_PARAM
						   : EXIT_INVALID_PATH;
	}
	ret = adump_compare_run(c);
	if (ret < 0) {
		tool_err("adump compare: %s\n", adump_strerror(ret));
		adump_compare_close(c);
		return 1;
	}
	adump_compare_summary_get(c, &sum);
	code = compare_fail_on(sum.exit_code, &sum, fail_on);
	t = time(NULL);
	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
	csv[0] = '\0';
	if (sum.matched_count) {
		/* msaccucmp writes no result when no op matched. A name already taken (two
		 * compares in one second) gets a suffix: result_<ts>_1.csv. */
		snprintf(path, sizeof(path), "result_%s", stamp);
		f = compare_out_start(&out, out_dir);
		ret = f ? adump_compare_write_csv(c, f) : -errno;
		ret = compare_out_finish(&out, ret, out_dir, path, ".csv", true, csv, sizeof(csv));
		if (ret < 0) {
			tool_err("adump compare: %s: %s\n", csv, strerror(-ret));
			adump_compare_close(c);
			return EXIT_WRITE;
		}
	} else {
		tool_err("adump compare: the model does not match the dump data: no op is on "
				"both sides\n");
	}
	if (is_advisor && sum.matched_count) {
		f = compare_out_start(&out, out_dir);
		ret = f ? adump_compare_write_advice(c, f) : -errno;
		ret = compare_out_finish(&out, ret, out_dir, "advisor_summary", ".txt", false, path,
					 sizeof(path));
		if (ret < 0) {
			tool_err("adump compare: %s: %s\n", path, strerror(-ret));
			adump_compare_close(c);
			return EXIT_WRITE;
		}
	}
	if (is_json)
		json_rows(c, stdout);
	if (!is_quiet)
		summary_print(c, &sum, tool_now_seconds() - t0, csv[0] ? csv : NULL);
	if (is_advisor && sum.matched_count && !is_quiet) {
		fprintf(stderr, "  advisor: ");
		adump_compare_write_advice(c, stderr);
	}
	if (is_plot && is_stats_mode(c)) {
		tool_err("adump compare: --plot: statistics dumps have no "
			"CosineSimilarity to plot\n");
	} else if (is_plot && sum.matched_count) {
		if (compare_plot(c, &sum, out_dir, stamp, msg, sizeof(msg)) < 0)
			tool_err("adump compare: --plot: %s\n", msg);
		else if (!is_quiet)
			tool_err("  plot: %s\n", msg);
	}
	if (html) {
		ret = html_out_compare(c, my, html, code, is_quiet);
		if (ret && !code)
			code = ret;
	}
	adump_compare_close(c);
	return code;
}
