/* SPDX-License-Identifier: Apache-2.0 */
/* `adump report RESULT`: a compare's or a scan's result, or a statistics capture over steps,
 * as one self-contained HTML page (report/); and the --html of compare and scan
 * (tools/html_out.h). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/html_out.h"
#include "tools/tool.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: adump report [-o FILE] [--chartjs PATH] [--quiet] RESULT\n\n"
		"Writes one self-contained HTML page (every script and style inlined, no network\n"
		"request; opens from file:// in any browser) of a result: at the top the first\n"
		"divergent step, rank, op and module with its verdict and why; the metrics along\n"
		"the execution order (Chart.js), the first divergent op marked; the module tree\n"
		"colored by the worst verdict beneath each node; the rows as a table that sorts and\n"
		"filters; for several pairs a step x rank grid. RESULT is a directory adump compare\n"
		"wrote into (its latest summary_<ts>.csv and each pair's result, else its latest\n"
		"result_<ts>.csv), one result or summary CSV, or what adump compare --json or adump\n"
		"scan --json printed (saved to a file). From a CSV the verdicts are judged again\n"
		"from its cells (the scaled error is not in it); compare --html and --json have\n"
		"compare's own.\n\n"
		"A directory with no compare result is read as a statistics capture over steps:\n"
		"the <dump name>.csv files of content=stats sessions and msprobe's dump.json under\n"
		"step<N>/rank<R>/ (adump.torch's layout), and the flight recorder's trigger.json.\n"
		"The page lists the tensors (a name search filters them) and draws each one's max,\n"
		"min, mean and norm by step, marking NaN/Inf, a norm (else max |x|) more than %gx\n"
		"off the mean of its last %u steps, and the triggers.\n\n"
		"  -o FILE         the page (default: RESULT/report.html for a directory, else\n"
		"                  RESULT.html)\n"
		"  --chartjs PATH  Chart.js to inline (default %s)\n"
		"  --quiet         no line naming the page\n\n"
		"Exit status: 0 written; 1 the page or Chart.js could not be read or written; 2 usage;\n"
		"3 RESULT cannot be read; 4 RESULT is not an adump result, or truncated (the message\n"
		"names file and line; also a directory with neither a result nor statistics); 5\n"
		"more than a report holds (1,000,000 rows or statistics points).\n",
		ADUMP_REPORT_SPIKE_FACTOR, ADUMP_REPORT_SPIKE_HISTORY, adump_report_chartjs_default());
}

static int write_page(struct adump_report *r, const char *html, const char *chartjs,
		      const char *cmd, bool is_quiet)
{
	char msg[8192];
	int ret = adump_report_write_html(r, html, chartjs, msg, sizeof(msg));

	if (ret < 0) {
		tool_err("adump %s: --html: %s\n", cmd, msg);
		return ADUMP_REPORT_EXIT_WRITE;
	}
	if (!is_quiet)
		tool_err("  report: %s\n", html);
	return 0;
}

int html_out_compare(const struct adump_compare *c, const char *my, const char *html, int code,
		     bool is_quiet)
{
	struct adump_report *r = NULL;
	char msg[8192];
	int ret = adump_report_create(ADUMP_REPORT_COMPARE, "adump compare", &r);

	if (ret == 0)
		ret = adump_report_source_set(r, my);
	if (ret == 0)
		ret = adump_report_add_compare(r, c, NULL, -1, -1, code, msg, sizeof(msg));
	else
		snprintf(msg, sizeof(msg), "%s", strerror(-ret));
	if (ret == 0 && adump_report_construct_find(r, my, msg, sizeof(msg)) < 0)
		tool_err("adump compare: --html: %s (the tree is drawn from op names)\n", msg);
	if (ret < 0) {
		tool_err("adump compare: --html: %s\n", msg);
		adump_report_destroy(r);
		return ADUMP_REPORT_EXIT_WRITE;
	}
	ret = write_page(r, html, NULL, "compare", is_quiet);
	adump_report_destroy(r);
	return ret;
}

int html_out_scan(const struct adump_scan *s, const char *path, const char *html, bool is_quiet)
{
	struct adump_report *r = NULL;
	char msg[8192];
	int ret = adump_report_create(ADUMP_REPORT_SCAN, "adump scan", &r);

	if (ret == 0)
		ret = adump_report_source_set(r, path);
	if (ret == 0)
		ret = adump_report_add_scan(r, s, msg, sizeof(msg));
	else
		snprintf(msg, sizeof(msg), "%s", strerror(-ret));
	if (ret < 0) {
		tool_err("adump scan: --html: %s\n", msg);
		adump_report_destroy(r);
		return ADUMP_REPORT_EXIT_WRITE;
	}
	ret = write_page(r, html, NULL, "scan", is_quiet);
	adump_report_destroy(r);
	return ret;
}

struct adump_report *html_out_pairs_begin(const char *my)
{
	struct adump_report *r = NULL;
	int ret = adump_report_create(ADUMP_REPORT_COMPARE, "adump compare --recursive", &r);

	if (ret == 0)
		ret = adump_report_source_set(r, my);
	if (ret < 0) {
		tool_err("adump compare: --html: %s\n", strerror(-ret));
		adump_report_destroy(r);
		return NULL;
	}
	return r;
}

int html_out_pairs_end(struct adump_report *r, const char *html, bool is_quiet)
{
	int ret = r ? write_page(r, html, NULL, "compare", is_quiet) : ADUMP_REPORT_EXIT_WRITE;

	adump_report_destroy(r);
	return ret;
}

int cmd_report(int argc, char **argv)
{
	enum { OPT_CHARTJS = 256, OPT_QUIET };
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "chartjs", required_argument, NULL, OPT_CHARTJS },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *chartjs = NULL, *result;
	struct adump_report *r = NULL;
	bool is_quiet = false;
	char msg[8192], path[4200];
	struct stat st;
	int opt, ret;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case OPT_CHARTJS:
			chartjs = optarg;
			break;
		case OPT_QUIET:
			is_quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return ADUMP_REPORT_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "adump report: %s\n\n", optind < argc ? "one RESULT only"
								      : "RESULT is required");
		usage(stderr);
		return ADUMP_REPORT_EXIT_USAGE;
	}
	result = argv[optind];
	if (!out) {
		bool is_dir = stat(result, &st) == 0 && S_ISDIR(st.st_mode);

		snprintf(path, sizeof(path), is_dir ? "%.4000s/report.html" : "%.4000s.html", result);
		out = path;
	}
	ret = adump_report_load(result, &r, msg, sizeof(msg));
	if (ret < 0) {
		tool_err("adump report: %s\n", msg);
		return adump_report_exit_code(ret);
	}
	ret = adump_report_write_html(r, out, chartjs, msg, sizeof(msg));
	adump_report_destroy(r);
	if (ret < 0) {
		tool_err("adump report: %s\n", msg);
		return ADUMP_REPORT_EXIT_WRITE;
	}
	if (!is_quiet)
		tool_err("adump report: %s\n", out);
	return 0;
}
