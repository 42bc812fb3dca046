/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare --recursive` over two capture roots: steps, ranks and any other level found on
 * both sides pair up and are compared pair by pair (one result CSV each), never merged; one
 * summary names the first divergent step, rank and op, and the directories without a
 * counterpart. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "adump/compare_pairs.h"
#include "tools/compare_out.h"
#include "tools/html_out.h"
#include "tools/tool.h"

FILE *compare_out_start(struct compare_out *o, const char *dir)
{
	FILE *f;
	int ret;

	o->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->dir_fd < 0)
		return NULL;
	ret = adump_outfile_open(&o->of, o->dir_fd, 0640);
	if (ret < 0) {
		close(o->dir_fd);
		o->dir_fd = -1;
		errno = -ret;
		return NULL;
	}
	f = adump_outfile_stream(&o->of);
	if (!f) {
		adump_outfile_discard(&o->of);
		close(o->dir_fd);
		o->dir_fd = -1;
		errno = ENOMEM;
	}
	return f;
}

int compare_out_finish(struct compare_out *o, int status, const char *dir, const char *stem,
		       const char *ext, bool is_new, char *path, size_t cap)
{
	char name[512];
	int ret = status;

	if (snprintf(path, cap, "%s/%s%s", dir, stem, ext) >= (int)cap)
		path[0] = '\0';
	if (o->dir_fd < 0)
		return status < 0 ? status : -EBADF;
	for (unsigned k = 0; k < 10000; k++) {
		if (k)
			snprintf(name, sizeof(name), "%s_%u%s", stem, k, ext);
		else
			snprintf(name, sizeof(name), "%s%s", stem, ext);
		ret = adump_outfile_publish(&o->of, ret, name, is_new ? ADUMP_OUTFILE_NEW : 0);
		if (ret != -EEXIST || !is_new)
			break;
		ret = 0;
	}
	if (ret == -EEXIST)
		adump_outfile_discard(&o->of);
	if (ret == 0 && snprintf(path, cap, "%s/%s", dir, name) >= (int)cap)
		path[0] = '\0';        /* published; too long a path to print */
	close(o->dir_fd);
	o->dir_fd = -1;
	return ret;
}

int compare_fail_on(int code, const struct adump_compare_summary *s,
		    enum adump_compare_verdict fail_on)
{
	uint64_t n = 0;

	if (fail_on == ADUMP_COMPARE_NONE || code != 0)
		return code;
	n = s->error_count + (fail_on <= ADUMP_COMPARE_WARNING ? s->warning_count : 0);
	return n ? ADUMP_COMPARE_EXIT_VERDICT : 0;
}

/* What one pair came to. */
struct pair_result {
	int code;
	struct adump_compare_summary sum;
	char index[32], op[1024], tensor[1024], csv[4096], why[1024];
};

/* "step0/rank0/0" -> "step0_rank0_0"; the root -> "root". */
static void label_stem(const char *label, char *buf, size_t cap)
{
	size_t n = 0;

	if (!strcmp(label, "."))
		label = "root";
	for (; *label && n + 1 < cap; label++)
		buf[n++] = *label == '/' || *label == ' ' ? '_' : *label;
	buf[n] = '\0';
}

static void pair_compare(const struct adump_compare_config *cfg,
			 const struct adump_compare_pair *p, const char *out_dir,
			 const char *stamp, struct pair_result *r, struct adump_report *rep)
{
	struct adump_compare *c = NULL;
	struct compare_out o;
	char msg[8192], stem[256];
	FILE *f;
	int ret;

	memset(r, 0, sizeof(*r));
	r->sum.first_divergent_row = -1;
	ret = adump_compare_open(cfg, p->my, p->golden, &c, msg, sizeof(msg));
	if (ret == 0)
		ret = adump_compare_run(c);
	if (ret < 0) {
		snprintf(r->why, sizeof(r->why), "%.1000s", ret == -ENOMEM || !msg[0] ? adump_strerror(ret)
										   : msg);
		r->code = ret == -ADUMP_ERR_NOT_FOUND ? 2 : ret == -ENOMEM ? 1 : 3;
		if (rep)
			adump_report_add_pair_empty(rep, p->label, p->step, p->rank, r->code, r->why);
		adump_compare_close(c);
		return;
	}
	adump_compare_summary_get(c, &r->sum);
	r->code = r->sum.exit_code;
	if (r->sum.first_divergent_row >= 0) {
		const struct adump_compare_row *row =
			adump_compare_row(c, (uint64_t)r->sum.first_divergent_row);

		snprintf(r->index, sizeof(r->index), "%llu", (unsigned long long)row->index);
		snprintf(r->op, sizeof(r->op), "%s", row->op_name);
		snprintf(r->tensor, sizeof(r->tensor), "%s", row->tensor_id);
	}
	if (r->sum.matched_count) {
		/* A file name's component is at most 255 bytes: a longer label is cut, and
		 * compare_out_finish() gives a cut name that is taken a suffix of its own. */
		char stem_label[200];

		label_stem(p->label, stem_label, sizeof(stem_label));
		snprintf(stem, sizeof(stem), "result_%s_%s", stem_label, stamp);
		f = compare_out_start(&o, out_dir);
		ret = f ? adump_compare_write_csv(c, f) : -errno;
		ret = compare_out_finish(&o, ret, out_dir, stem, ".csv", true, r->csv,
					 sizeof(r->csv));
		if (ret < 0) {
			snprintf(r->why, sizeof(r->why), "%.900s: %s", r->csv, strerror(-ret));
			r->code = 19;
			r->csv[0] = '\0';
		}
	} else {
		snprintf(r->why, sizeof(r->why), "no op is on both sides");
	}
	if (rep && adump_report_add_compare(rep, c, p->label, p->step, p->rank, r->code, msg,
					    sizeof(msg)) < 0)
		tool_err("adump compare: --html: %s: %s\n", p->label, msg);
	adump_compare_close(c);
}

int compare_pairs_run(const struct adump_compare_config *cfg, const char *my,
		      const char *golden, const char *out_dir, bool is_json, bool is_quiet,
		      enum adump_compare_verdict fail_on, const char *html)
{
	struct adump_compare_config one = *cfg;
	struct adump_compare_pairs *pairs = NULL;
	struct adump_report *rep = NULL;
	struct pair_result *res;
	char msg[8192], stamp[32], path[4096];
	size_t n, unpaired = 0, first = SIZE_MAX;
	struct tm tm;
	time_t t = time(NULL);
	struct compare_out o;
	bool has_summary = false;
	FILE *f;
	int ret, code = 0;

	ret = adump_compare_pairs_list(my, golden, &pairs, msg, sizeof(msg));
	if (ret < 0) {
		tool_err("adump compare: %s\n", msg);
		return ret == -ADUMP_ERR_NOT_FOUND ? 2 : 3;
	}
	n = adump_compare_pairs_count(pairs);
	if (n == 1 && adump_compare_pairs_get(pairs, 0)->my &&
	    adump_compare_pairs_get(pairs, 0)->golden &&
	    !strcmp(adump_compare_pairs_get(pairs, 0)->label, ".")) {
		/* Two capture directories without levels below: one ordinary compare. */
		adump_compare_pairs_free(pairs);
		return COMPARE_PAIRS_ONE;
	}
	res = calloc(n, sizeof(*res));
	if (!res) {
		adump_compare_pairs_free(pairs);
		tool_err("adump compare: out of memory\n");
		return 1;
	}
	if (html && !(rep = html_out_pairs_begin(my)))
		code = ADUMP_REPORT_EXIT_WRITE;
	/* Each pair is one capture directory a side: read on its own, never merged. */
	one.is_recursive = false;
	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
	for (size_t i = 0; i < n; i++) {
		const struct adump_compare_pair *p = adump_compare_pairs_get(pairs, i);

		if (!p->my || !p->golden) {
			unpaired++;
			res[i].code = 2;
			res[i].sum.first_divergent_row = -1;
			snprintf(res[i].why, sizeof(res[i].why), "only in %s: %s",
				 p->my ? "my output" : "the ground truth", p->my ? p->my : p->golden);
			tool_err("adump compare: %s has no counterpart: %s only in %s\n",
				p->label, p->my ? p->my : p->golden,
				p->my ? "my output" : "the ground truth");
			if (rep)
				adump_report_add_pair_empty(rep, p->label, p->step, p->rank, 2,
							    res[i].why);
			continue;
		}
		pair_compare(&one, p, out_dir, stamp, &res[i], rep);
		if (first == SIZE_MAX && res[i].sum.first_divergent_row >= 0)
			first = i;
		if (!code && res[i].code && res[i].code != 2)
			code = res[i].code;
	}
	/* A NaN/Inf divergence is the answer and wins, as in one compare; then a pair's own
	 * status (11, 18 ...), then 2 for what is on one side only. */
	for (size_t i = 0; i < n; i++)
		if (res[i].code == ADUMP_COMPARE_EXIT_NONFINITE)
			code = ADUMP_COMPARE_EXIT_NONFINITE;
	for (size_t i = 0; i < n && !code; i++)
		code = res[i].code;
	/* --fail-on: only where every pair came to 0. */
	for (size_t i = 0; i < n && fail_on != ADUMP_COMPARE_NONE && !code; i++)
		if (compare_fail_on(0, &res[i].sum, fail_on))
			code = ADUMP_COMPARE_EXIT_VERDICT;
	snprintf(msg, sizeof(msg), "summary_%s", stamp);
	f = compare_out_start(&o, out_dir);
	if (!f) {
		tool_err("adump compare: %s/%s.csv: %s\n", out_dir, msg, strerror(errno));
		code = 19;
	} else {
		errno = 0;
		fputs("Pair,Step,Rank,NPUDump,GroundTruth,Ops,Matched,MyOnly,GroundTruthOnly,"
		      "FirstDivergentIndex,FirstDivergentOp,FirstDivergentTensor,ExitCode,Result,"
		      "Message\r\n", f);
		for (size_t i = 0; i < n; i++) {
			const struct adump_compare_pair *p = adump_compare_pairs_get(pairs, i);
			const struct pair_result *r = &res[i];

			adump_compare_csv_cell(f, p->label);
			fprintf(f, ",%lld,%lld,", (long long)p->step, (long long)p->rank);
			adump_compare_csv_cell(f, p->my ? p->my : "*");
			fputc(',', f);
			adump_compare_csv_cell(f, p->golden ? p->golden : "*");
			fprintf(f, ",%llu,%llu,%llu,%llu,%s,", (unsigned long long)r->sum.op_count,
				(unsigned long long)r->sum.matched_count,
				(unsigned long long)r->sum.my_only_count,
				(unsigned long long)r->sum.golden_only_count,
				r->index[0] ? r->index : "NaN");
			adump_compare_csv_cell(f, r->op[0] ? r->op : "NaN");
			fputc(',', f);
			adump_compare_csv_cell(f, r->tensor[0] ? r->tensor : "NaN");
			fprintf(f, ",%d,", r->code);
			adump_compare_csv_cell(f, r->csv);
			fputc(',', f);
			adump_compare_csv_cell(f, r->why);
			fputs("\r\n", f);
		}
		ret = compare_out_finish(&o, ferror(f) ? (errno ? -errno : -EIO) : 0, out_dir, msg,
					 ".csv", true, path, sizeof(path));
		if (ret < 0) {
			tool_err("adump compare: %s: %s\n", path, strerror(-ret));
			code = 19;
		} else {
			has_summary = true;
		}
	}
	if (is_json)
		for (size_t i = 0; i < n; i++) {
			const struct adump_compare_pair *p = adump_compare_pairs_get(pairs, i);
			const struct pair_result *r = &res[i];

			printf("{\"pair\": ");
			tool_json_str(stdout, p->label);
			printf(", \"step\": %lld, \"rank\": %lld, \"my\": ", (long long)p->step,
			       (long long)p->rank);
			if (p->my)
				tool_json_str(stdout, p->my);
			else
				printf("null");
			printf(", \"golden\": ");
			if (p->golden)
				tool_json_str(stdout, p->golden);
			else
				printf("null");
			printf(", \"op_count\": %llu, \"matched_count\": %llu, \"exit_code\": %d, "
			       "\"first_divergent\": ", (unsigned long long)r->sum.op_count,
			       (unsigned long long)r->sum.matched_count, r->code);
			if (r->index[0]) {
				printf("{\"index\": %s, \"op\": ", r->index);
				tool_json_str(stdout, r->op);
				printf(", \"tensor\": ");
				tool_json_str(stdout, r->tensor);
				printf("}");
			} else {
				printf("null");
			}
			printf(", \"result\": ");
			if (r->csv[0])
				tool_json_str(stdout, r->csv);
			else
				printf("null");
			printf(", \"message\": ");
			tool_json_str(stdout, r->why);
			printf("}\n");
		}
	if (!is_quiet) {
		tool_err("adump compare --recursive: %zu pairs compared, %zu directories "
			"without a counterpart\n", n - unpaired, unpaired);
		for (size_t i = 0; i < n; i++) {
			const struct adump_compare_pair *p = adump_compare_pairs_get(pairs, i);

			tool_err("  %-28s %s%s\n", p->label,
				!p->my || !p->golden ? res[i].why
				: res[i].index[0] ? "first divergent: " : res[i].why[0] ? res[i].why
				: "no divergent op",
				res[i].index[0] ? res[i].op : "");
		}
		if (first != SIZE_MAX) {
			const struct adump_compare_pair *p = adump_compare_pairs_get(pairs, first);

			tool_err("  first divergent pair: %s (step %lld, rank %lld): Index %s %s, "
				"tensor %s\n", p->label, (long long)p->step, (long long)p->rank,
				res[first].index, res[first].op, res[first].tensor);
		} else {
			tool_err("  no divergent op in any pair\n");
		}
		if (has_summary)
			tool_err("  summary: %s\n", path);
	}
	if (rep) {
		ret = html_out_pairs_end(rep, html, is_quiet);
		if (ret && !code)
			code = ret;
	}
	free(res);
	adump_compare_pairs_free(pairs);
	return code;
}
