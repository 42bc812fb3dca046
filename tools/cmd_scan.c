/* SPDX-License-Identifier: Apache-2.0 */
/* `adump scan DIR`: NaN, Inf and float16 overflow in one capture without a golden run: the op
 * that made them and every later op they reached, in execution order. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adump/scan.h"
#include "tools/html_out.h"
#include "tools/tool.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: adump scan [--json] [--threads N] [--flat] [--quiet] [--html FILE] PATH\n\n"
		"Reads every dump of one capture (a directory and its subdirectories, a packed\n"
		"capture or one dump; tensor dumps, .lz4 too, and statistics dumps alike) and walks\n"
		"them in execution order (dump timestamps). Lists the op that made NaN or Inf (or,\n"
		"for float16, values at the dtype's limit, |v| >= 65504): its outputs hold them while\n"
		"its inputs were finite and no op inside it made them (\"origin\"), or the op whose\n"
		"inputs show them first when no captured op made them, a parameter (\"entered\":\n"
		"\"first seen in the weight of ...\"); then every later op whose inputs hold them\n"
		"(\"reached\"), module calls whose child made them (\"enclosing\"), NaN/Inf only in\n"
		"memory no op wrote, torch.empty's output (\"uninitialized\", no anomaly), and dumps\n"
		"that cannot be read (\"unreadable\"). A statistics dump counts a non-finite max,\n"
		"min or mean as one element.\n\n"
		"  --json       one JSON object per listed op on stdout, then a summary object\n"
		"  --threads N  read on N threads (default: one per CPU)\n"
		"  --flat       PATH only, not its subdirectories\n"
		"  --quiet      no table\n"
		"  --html FILE  FILE: the listed ops as one self-contained HTML page (the origin and\n"
		"               the ops reached, on the execution order and the tree; adump report)\n\n"
		"Exit status: 0 no anomaly; 1 an anomaly found, or no dump in PATH; 2 usage; 3 a\n"
		"dump that cannot be read (and no anomaly).\n");
}


static void json_counts(const char *key, const struct adump_scan_counts *c)
{
	printf(", \"%s\": {\"nan\": %llu, \"inf\": %llu, \"fp16_limit\": %llu}", key,
	       (unsigned long long)c->nan_count, (unsigned long long)c->inf_count,
	       (unsigned long long)c->limit_count);
}

int cmd_scan(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_THREADS, OPT_FLAT, OPT_QUIET, OPT_HTML };
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "flat", no_argument, NULL, OPT_FLAT },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "html", required_argument, NULL, OPT_HTML },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct adump_scan_config cfg = ADUMP_SCAN_CONFIG_INIT;
	struct adump_scan *s = NULL;
	bool is_json = false, is_quiet = false;
	uint64_t found = 0, unreadable = 0;
	const struct adump_scan_op *origin = NULL;
	const char *html = NULL;
	char msg[8192];
	double t0;
	int opt, ret;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_JSON:
			is_json = true;
			break;
		case OPT_THREADS:
			if (tool_parse_threads("scan", optarg, &cfg.thread_count) < 0)
				return 2;
			break;
		case OPT_FLAT:
			cfg.is_flat = true;
			break;
		case OPT_QUIET:
			is_quiet = true;
			break;
		case OPT_HTML:
			html = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "adump scan: %s\n\n", optind < argc ? "one PATH only" : "PATH is required");
		usage(stderr);
		return 2;
	}
	t0 = tool_now_seconds();
	ret = adump_scan_open(&cfg, argv[optind], &s, msg, sizeof(msg));
	if (ret < 0) {
		tool_err("adump scan: %s\n", msg);
		return 1;
	}
	ret = adump_scan_run(s);
	if (ret < 0) {
		tool_err("adump scan: %s\n", adump_strerror(ret));
		adump_scan_close(s);
		return 1;
	}
	for (uint64_t i = 0; i < adump_scan_op_count(s); i++) {
		const struct adump_scan_op *op = adump_scan_op(s, i);

		if (op->kind == ADUMP_SCAN_UNREADABLE) {
			unreadable++;
			continue;
		}
		if (op->kind == ADUMP_SCAN_UNINITIALIZED)
			continue;               /* uninitialized memory: no anomaly */
		found++;
		if (!origin && (op->kind == ADUMP_SCAN_ORIGIN || op->kind == ADUMP_SCAN_ENTERED))
			origin = op;
	}
	if (is_json) {
		for (uint64_t i = 0; i < adump_scan_op_count(s); i++) {
			const struct adump_scan_op *op = adump_scan_op(s, i);

			printf("{\"kind\": \"%s\", \"order\": %llu, \"timestamp\": %llu, \"op_type\": ",
			       adump_scan_kind_name(op->kind), (unsigned long long)op->order,
			       (unsigned long long)op->timestamp);
			tool_json_str(stdout, op->op_type);
			printf(", \"op_name\": ");
			tool_json_str(stdout, op->op_name);
			printf(", \"path\": ");
			tool_json_str(stdout, op->path);
			json_counts("inputs", &op->inputs);
			json_counts("outputs", &op->outputs);
			printf(", \"first_tensor\": ");
			tool_json_str(stdout, op->first_tensor);
			printf(", \"message\": ");
			tool_json_str(stdout, op->message);
			printf("}\n");
		}
		printf("{\"summary\": {\"dumps\": %llu, \"anomalous\": %llu, \"unreadable\": %llu, "
		       "\"origin\": ", (unsigned long long)adump_scan_dump_count(s),
		       (unsigned long long)found, (unsigned long long)unreadable);
		if (origin)
			tool_json_str(stdout, origin->op_name);
		else
			printf("null");
		printf("}}\n");
	}
	if (!is_quiet) {
		FILE *f = is_json ? stderr : stdout;
		double secs = tool_now_seconds() - t0;

		if (found || unreadable)
			fprintf(f, "%-10s %7s  %-48s %-14s %-22s %-22s\n", "KIND", "ORDER", "OP",
				"FIRST", "INPUTS nan/inf/lim", "OUTPUTS nan/inf/lim");
		for (uint64_t i = 0; i < adump_scan_op_count(s); i++) {
			const struct adump_scan_op *op = adump_scan_op(s, i);
			char in[64], out[64];

			if (op->kind == ADUMP_SCAN_UNREADABLE) {
				fprintf(f, "%-10s %7llu  %-48s %s\n", adump_scan_kind_name(op->kind),
					(unsigned long long)op->order, tool_text(op->op_name),
					tool_text(op->message));
				continue;
			}
			snprintf(in, sizeof(in), "%llu/%llu/%llu",
				 (unsigned long long)op->inputs.nan_count,
				 (unsigned long long)op->inputs.inf_count,
				 (unsigned long long)op->inputs.limit_count);
			snprintf(out, sizeof(out), "%llu/%llu/%llu",
				 (unsigned long long)op->outputs.nan_count,
				 (unsigned long long)op->outputs.inf_count,
				 (unsigned long long)op->outputs.limit_count);
			fprintf(f, "%-10s %7llu  %-48s %-14s %-22s %-22s\n", adump_scan_kind_name(op->kind),
				(unsigned long long)op->order, tool_text(op->op_name),
				tool_text(op->first_tensor), in, out);
		}
		fprintf(f, "adump scan: %llu dumps, %llu anomalous ops, %llu unreadable; read %.3f GB "
			"in %.2f s\n", (unsigned long long)adump_scan_dump_count(s),
			(unsigned long long)found, (unsigned long long)unreadable,
			(double)adump_scan_bytes(s) / 1e9, secs);
		if (origin && origin->kind == ADUMP_SCAN_ENTERED)
			fprintf(f, "  %s (%s)\n", tool_text(origin->message), tool_text(origin->path));
		else if (origin)
			fprintf(f, "  first made by: %s (%s, %s)\n", tool_text(origin->op_name),
				tool_text(origin->first_tensor), tool_text(origin->path));
		else if (found)
			fprintf(f, "  no op made them: the first listed op's inputs already held them\n");
	}
	ret = html ? html_out_scan(s, argv[optind], html, is_quiet) : 0;
	adump_scan_close(s);
	return found ? 1 : unreadable ? 3 : ret;
}
