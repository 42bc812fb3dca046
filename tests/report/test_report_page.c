/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 33: `adump report`, `adump compare --html` and `adump scan --html` pages of compares and
 * scans of dumps written here, opened in headless Chromium: the first divergent op named at
 * the top, highlighted in the tree and marked on the chart; the filter reducing the table; an
 * op named <img src=x onerror=alert(1)> shown as text; no console message, no request leaving
 * the page. Screenshots stay in test-output/report/. Skips (77) without Chromium. */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/adump.h"
#include "adump/host.h"
#include "browser.h"
#include "helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif
#ifndef ADUMP_TEST_OUT
#error "ADUMP_TEST_OUT must name the screenshots' directory"
#endif
#define TOOL "timeout 120 " ADUMP_TOOL
#define N 32
#define XSS "<img src=x onerror=alert(1)>"

static char *dir;
static float base[N], noisy[N], with_nan[N];

static void mkdirs(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(buf, 0750);
			*p = '/';
		}
	mkdir(buf, 0750);
}

/* One float32 dump in <dir>/@sub: input and output of N elements, named @name with the module
 * attribute @module (a dump with attributes is shown by its header's op name). */
static void dump(const char *sub, const char *name, const char *module, uint64_t ts,
		 const float *in, const float *out)
{
	struct adump_attr at = { .name = "module", .value = module };
	struct adump_tensor t[2] = { 0 };
	struct adump_op op = { 0 };
	const void *data[2] = { in, out };
	char path[PATH_MAX], file[1024], d[PATH_MAX];

	for (int k = 0; k < 2; k++) {
		t[k].kind = k ? ADUMP_TENSOR_OUTPUT : ADUMP_TENSOR_INPUT;
		t[k].dtype = ADUMP_DT_FLOAT;
		t[k].dim_count = 1;
		t[k].dims[0] = N;
		t[k].bytes = N * 4;
	}
	op.op_type = "MatMul";
	op.op_name = name;
	op.stream_id = 1;
	op.task_id = (uint32_t)ts;
	op.timestamp_us = 1700000000000000ull + ts;
	op.tensor_count = 2;
	op.tensors = t;
	op.attr_count = module ? 1 : 0;
	op.attrs = &at;
	snprintf(d, sizeof(d), "%s/%s", dir, sub);
	mkdirs(d);
	/* The file's name holds the op name made safe (msaccucmp's names are [A-Za-z0-9_-]); the
	 * header holds it as it is. */
	{
		char safe[256];
		size_t n = 0;

		for (const char *c = name; *c && n + 1 < sizeof(safe); c++)
			safe[n++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
				    (*c >= '0' && *c <= '9') ? *c : '_';
		safe[n] = '\0';
		snprintf(file, sizeof(file), "MatMul.%s.%llu.1.%llu", safe, (unsigned long long)ts,
			 (unsigned long long)op.timestamp_us);
	}
	snprintf(path, sizeof(path), "%s/%s", d, file);
	ck_assert_int_eq(adump_dump_write_file(path, &op, data, 0640), 0);
}

/* A model's five ops on both sides of <sub>/{my,golden}: the third makes a NaN in my output
 * (the first divergence), the ops after it carry noise; the second is named XSS. */
static void model(const char *sub, bool is_diverging)
{
	char side[PATH_MAX];

	for (int s = 0; s < 2; s++) {
		bool is_bad = is_diverging && s == 0;

		snprintf(side, sizeof(side), "%s/%s", sub, s ? "golden" : "my");
		dump(side, "embed", "Module.embed.Embedding.forward.0", 100, base, base);
		dump(side, XSS, "Module.layers.0.attn.Attention.forward.0", 200, base, base);
		dump(side, "matmul", "Module.layers.1.mlp.MLP.forward.0", 300, base,
		     is_bad ? with_nan : base);
		dump(side, "softmax", "Module.layers.1.mlp.MLP.forward.0", 400, base,
		     is_bad ? noisy : base);
		dump(side, "matmul_grad", "Module.layers.1.mlp.MLP.backward.0", 500, base,
		     is_bad ? noisy : base);
	}
}

static void setup(void)
{
	dir = t_tmpdir("report-page");
	mkdirs(ADUMP_TEST_OUT);
	for (int i = 0; i < N; i++) {
		base[i] = (float)(i % 5) - 2.0f + 0.125f * (float)i;
		noisy[i] = base[i] * (i % 2 ? 1.3f : 0.7f);
		with_nan[i] = base[i];
	}
	with_nan[7] = NAN;
}

static void teardown(void)
{
	/* ADUMP_TEST_KEEP=1 keeps the dumps and pages to look at. */
	if (!getenv("ADUMP_TEST_KEEP"))
		t_rmtree(dir);
	free(dir);
}

#define run(...) t_run_tool(TOOL, dir, __VA_ARGS__)

/* What every page must be: the scripts ran to the end, nothing logged, nothing fetched, no
 * element made from a name. */
static void assert_clean(const struct browser_page *p, const char *what)
{
	ck_assert_msg(strstr(p->dom, "data-ready=\"1\""), "%s: the page's script did not finish",
		      what);
	ck_assert_msg(!p->console[0], "%s: console messages:\n%s", what, p->console);
	ck_assert_msg(!p->requests[0], "%s: requests left the page:\n%s", what, p->requests);
	ck_assert_msg(!strstr(p->dom, "<img"), "%s: an element was made from a name", what);
}

static void assert_contains(const char *text, const char *want, const char *what)
{
	ck_assert_msg(text && strstr(text, want), "%s: '%s' not in '%.600s'", what, want,
		      text ? text : "(absent)");
}

/* The page of one compare, as compare --html wrote it and as adump report rebuilt it. */
static void check_compare_page(const char *html, const char *shot, const char *what,
			       bool has_modules)
{
	struct browser_page p;
	char *answer, *tree_first, *note, *count;

	browser_open(dir, html, "", shot, &p);
	assert_clean(&p, what);
	answer = browser_element_text(p.dom, "first-op");
	ck_assert_msg(answer && !strcmp(answer, "matmul"), "%s: the answer names '%s'", what,
		      answer ? answer : "(none)");
	free(answer);
	answer = browser_element_text(p.dom, "answer");
	assert_contains(answer, "First divergence: op matmul", what);
	assert_contains(answer, "error", what);
	assert_contains(answer, "NaN", what);
	free(answer);
	/* The tree: the leaf is highlighted, its modules opened down to it. */
	tree_first = browser_element_text(p.dom, "tree-first");
	assert_contains(tree_first, "matmul", what);
	assert_contains(tree_first, "first divergence", what);
	free(tree_first);
	/* A CSV has no module column: the tree is the op names then. */
	if (has_modules)
		assert_contains(p.dom, "<details class=\"on-path\" open=\"\"><summary><span><span "
				       "class=\"dot v-error\"></span><span class=\"mono\">layers</span>",
				what);
	/* The chart's own data: the marker dataset sits at matmul's row. */
	assert_contains(p.dom, "data-first-op=\"matmul\"", what);
	note = browser_element_text(p.dom, "chart-note");
	assert_contains(note, "first divergent op matmul at row 5", what);
	free(note);
	/* The XSS name is text, in the tree and the table. */
	assert_contains(p.dom, "&lt;img src=x onerror=alert(1)&gt;", what);
	count = browser_element_text(p.dom, "table-count");
	assert_contains(count, "10 of 10 rows match", what);
	free(count);
	browser_page_free(&p);

	/* The filter, set from the address: the table shrinks to softmax's two tensors. */
	browser_open(dir, html, "#q=softmax", NULL, &p);
	assert_clean(&p, what);
	count = browser_element_text(p.dom, "table-count");
	assert_contains(count, "2 of 10 rows match (name contains \"softmax\")", what);
	free(count);
	ck_assert_msg(!strstr(p.dom, "<td class=\"mono\">embed</td>"), "%s: filter kept embed", what);
	browser_page_free(&p);
	browser_open(dir, html, "#v=error", NULL, &p);
	count = browser_element_text(p.dom, "table-count");
	assert_contains(count, " of 10 rows match (verdict error)", what);
	ck_assert_msg(count[0] != '1' || count[1] != '0', "%s: %s", what, count);
	free(count);
	browser_page_free(&p);
}

START_TEST(test_compare_page)
{
	char my[PATH_MAX], golden[PATH_MAX], out[PATH_MAX], html[PATH_MAX], json[PATH_MAX];

	model("one", true);
	snprintf(my, sizeof(my), "%s/one/my", dir);
	snprintf(golden, sizeof(golden), "%s/one/golden", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(html, sizeof(html), "%s/out/compare.html", dir);
	/* NaN/Inf differ: status 100, and the page written all the same. */
	ck_assert_int_eq(run("compare -m %s -g %s -out %s --quiet --html %s", my, golden, out, html),
			 100);
	check_compare_page(html, ADUMP_TEST_OUT "/compare.png", "compare --html", true);
	/* adump report of the result directory (verdicts judged from the CSV), and of --json. */
	snprintf(html, sizeof(html), "%s/out/from_dir.html", dir);
	ck_assert_int_eq(run("report %s -o %s", out, html), 0);
	check_compare_page(html, ADUMP_TEST_OUT "/report_dir.png", "report DIR", false);
	snprintf(json, sizeof(json), "%s/rows.json", dir);
	ck_assert_int_eq(run("compare -m %s -g %s -out %s --quiet --json", my, golden, out), 100);
	snprintf(html, sizeof(html), "%s/stdout", dir);
	ck_assert_int_eq(rename(html, json), 0);
	snprintf(html, sizeof(html), "%s/out/from_json.html", dir);
	ck_assert_int_eq(run("report --quiet -o %s %s", html, json), 0);
	check_compare_page(html, NULL, "report rows.json", true);
}
END_TEST

/* Steps x ranks: only step1/rank0 diverges; the grid has a cell per pair and the page opens
 * on that pair. */
START_TEST(test_recursive_page)
{
	char html[PATH_MAX], out[PATH_MAX], my[PATH_MAX], golden[PATH_MAX], sub[64];
	struct browser_page p;
	char *answer, *grid, *count;

	for (int step = 0; step < 2; step++)
		for (int rank = 0; rank < 2; rank++) {
			char path[PATH_MAX];

			snprintf(sub, sizeof(sub), "pairs/step%d/rank%d", step, rank);
			model(sub, step == 1 && rank == 0);
			/* model() writes <sub>/my and <sub>/golden: move them under the roots. */
			for (int s = 0; s < 2; s++) {
				snprintf(path, sizeof(path), "%s/roots/%s/step%d", dir,
					 s ? "golden" : "my", step);
				mkdirs(path);
				snprintf(path, sizeof(path), "%s/roots/%s/step%d/rank%d", dir,
					 s ? "golden" : "my", step, rank);
				snprintf(my, sizeof(my), "%s/%s/%s", dir, sub, s ? "golden" : "my");
				ck_assert_int_eq(rename(my, path), 0);
			}
		}
	snprintf(my, sizeof(my), "%s/roots/my", dir);
	snprintf(golden, sizeof(golden), "%s/roots/golden", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(html, sizeof(html), "%s/out/pairs.html", dir);
	ck_assert_int_eq(run("compare --recursive -m %s -g %s -out %s --quiet --html %s", my,
			     golden, out, html), 100);
	for (int k = 0; k < 2; k++) {
		browser_open(dir, html, "", k ? NULL : ADUMP_TEST_OUT "/recursive.png", &p);
		assert_clean(&p, html);
		answer = browser_element_text(p.dom, "answer");
		assert_contains(answer, "First divergence: op matmul", html);
		assert_contains(answer, "at step 1, rank 0", html);
		assert_contains(answer, "40 rows in 4 pairs", html);
		free(answer);
		grid = browser_element_text(p.dom, "grid");
		assert_contains(grid, "step 0", html);
		assert_contains(grid, "rank 1", html);
		assert_contains(grid, "no divergent op", html);
		free(grid);
		assert_contains(p.dom, "title=\"step1/rank0\" class=\"selected\"", html);
		assert_contains(p.dom, "data-first-op=\"matmul\"", html);
		assert_contains(p.dom, "id=\"tree-first\"", html);
		browser_page_free(&p);
		/* Then the report of the result directory: its summary_<ts>.csv and each CSV. */
		snprintf(html, sizeof(html), "%s/out/report.html", dir);
		if (!k)
			ck_assert_int_eq(run("report %s", out), 0);
	}
	/* Another pair opened from the address: it has no divergent op. */
	browser_open(dir, html, "#pair=0", NULL, &p);
	assert_clean(&p, "pair 0");
	count = browser_element_text(p.dom, "chart-note");
	assert_contains(count, "No divergent op to mark", "pair 0");
	free(count);
	browser_page_free(&p);
}
END_TEST

/* A scan: the origin (div) and the op its NaN reached (relu), on the tree and the chart. */
START_TEST(test_scan_page)
{
	char cap[PATH_MAX], html[PATH_MAX], json[PATH_MAX];
	struct browser_page p;
	char *answer, *first;

	dump("scan", "load", NULL, 100, base, base);
	dump("scan", "div", "Module.head.Linear.forward.0", 200, base, with_nan);
	dump("scan", "relu", "Module.head.Linear.forward.0", 300, with_nan, with_nan);
	snprintf(cap, sizeof(cap), "%s/scan", dir);
	snprintf(html, sizeof(html), "%s/scan.html", dir);
	ck_assert_int_eq(run("scan --quiet --html %s %s", html, cap), 1);
	for (int k = 0; k < 2; k++) {
		browser_open(dir, html, "", k ? NULL : ADUMP_TEST_OUT "/scan.png", &p);
		assert_clean(&p, html);
		first = browser_element_text(p.dom, "first-op");
		ck_assert_msg(first && !strcmp(first, "div"), "origin '%s'", first ? first : "");
		free(first);
		answer = browser_element_text(p.dom, "answer");
		assert_contains(answer, "NaN/Inf first made by op div", html);
		assert_contains(answer, "reached 1 later listed ops", html);
		free(answer);
		first = browser_element_text(p.dom, "tree-first");
		assert_contains(first, "div", html);
		assert_contains(first, "origin", html);
		free(first);
		assert_contains(p.dom, "data-first-op=\"div\"", html);
		assert_contains(p.dom, "<td>reached</td>", html);
		browser_page_free(&p);
		/* The same from scan --json saved to a file. */
		snprintf(json, sizeof(json), "%s/scan.json", dir);
		snprintf(html, sizeof(html), "%s/stdout", dir);
		if (!k) {
			ck_assert_int_eq(run("scan --json --quiet %s", cap), 1);
			ck_assert_int_eq(rename(html, json), 0);
			snprintf(html, sizeof(html), "%s/scan_json.html", dir);
			ck_assert_int_eq(run("report -o %s %s", html, json), 0);
		}
	}
}
END_TEST

/* Op names are not UTF-8: the page still parses its data and shows U+FFFD. */
START_TEST(test_bad_bytes_page)
{
	char my[PATH_MAX], golden[PATH_MAX], out[PATH_MAX], html[PATH_MAX];
	struct browser_page p;

	for (int s = 0; s < 2; s++) {
		const char *side = s ? "bytes/golden" : "bytes/my";

		dump(side, "bad\xff\xfe_op\xe2\x80\xa8", "Module.a\xc0\xaf" "b.Linear.forward.0", 100,
		     base, s ? base : noisy);
		dump(side, "quote\"'</script>", "Module.q.Linear.forward.0", 200, base, base);
	}
	snprintf(my, sizeof(my), "%s/bytes/my", dir);
	snprintf(golden, sizeof(golden), "%s/bytes/golden", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(html, sizeof(html), "%s/bytes.html", dir);
	ck_assert_int_eq(run("compare -m %s -g %s -out %s --quiet --html %s", my, golden, out, html),
			 0);
	browser_open(dir, html, "", ADUMP_TEST_OUT "/bad_bytes.png", &p);
	assert_clean(&p, html);
	assert_contains(p.dom, "bad\xef\xbf\xbd\xef\xbf\xbd_op", html);
	assert_contains(p.dom, "quote\"'&lt;/script&gt;", html);
	browser_page_free(&p);
}
END_TEST

/* ---- a statistics capture over steps ---------------------------------------------------- */

#define STEPS 8
#define NAN_STEP 3
#define SPIKE_STEP 5

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
}

/* Through the native host stream API, a content=stats session over STEPS steps into
 * <dir>/@sub/step<N>/rank0: layer.fc's output grows slowly and jumps a thousandfold at
 * SPIKE_STEP, layer.act's output has a NaN at NAN_STEP, layer.norm stays put. Then, as msprobe's
 * dump.json of rank 1, one statistics entry per step named XSS, and the flight recorder's
 * trigger.json beside SPIKE_STEP, its reason holding markup. */
static void stats_capture(const char *sub)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	char root[PATH_MAX], path[PATH_MAX], text[2048];
	float fc[N], act[N];

	snprintf(root, sizeof(root), "%s/%s", dir, sub);
	cfg.dump_path = root;
	cfg.content = ADUMP_CONTENT_STATS;
	cfg.stats_mask = ADUMP_STAT_ALL;
	cfg.worker_count = 1;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (int step = 0; step < STEPS; step++) {
		struct adump_host_tensor in = { .data = base, .bytes = sizeof(base),
						.dtype = ADUMP_DT_FLOAT, .dim_count = 1,
						.dims = { N } };
		struct adump_host_tensor out = in;

		for (int i = 0; i < N; i++) {
			fc[i] = base[i] * (1.0f + 0.05f * (float)step) *
				(step == SPIKE_STEP ? 1000.0f : 1.0f);
			act[i] = step == NAN_STEP ? with_nan[i] : base[i] * 0.5f;
		}
		snprintf(path, sizeof(path), "step%d/rank0", step);
		ck_assert_int_eq(adump_host_stream_set_dir(hs, path), 0);
		out.data = fc;
		ck_assert_int_eq(adump_host_dump(hs, "MatMul", "layer.fc", &in, 1, &out, 1), 0);
		out.data = act;
		ck_assert_int_eq(adump_host_dump(hs, "Softmax", "layer.act", &in, 1, &out, 1), 0);
		out.data = base;
		ck_assert_int_eq(adump_host_dump(hs, "Add", "layer.norm", &in, 1, &out, 1), 0);
	}
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	for (int step = 0; step < STEPS; step++) {
		snprintf(path, sizeof(path), "%s/step%d/rank1", root, step);
		mkdirs(path);
		snprintf(path, sizeof(path), "%s/step%d/rank1/dump.json", root, step);
		snprintf(text, sizeof(text),
			 "{\"task\": \"statistics\", \"level\": \"L0\", \"framework\": \"pytorch\", "
			 "\"dump_data_dir\": null, \"data\": {\"" XSS ".forward.0\": {\"input_args\": "
			 "[{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", \"shape\": [4], "
			 "\"Max\": %d.5, \"Min\": -1.0, \"Mean\": 0.25, \"Norm\": %d.0, "
			 "\"requires_grad\": false}], \"input_kwargs\": {}, \"output\": []}}}\n",
			 step + 1, step + 2);
		write_text(path, text);
	}
	snprintf(path, sizeof(path), "%s/step%d/rank0/trigger.json", root, SPIKE_STEP);
	write_text(path, "{\"rule\": \"deviation\", \"tensor\": \"layer_fc.output.0\", \"step\": 5, "
		   "\"rank\": 0, \"value\": 1234.5, \"reason\": \"<script>alert(1)</script> norm "
		   "off its history\", \"time\": \"2026-12-06T03:00:00Z\"}\n");
}

START_TEST(test_series_page)
{
	char cap[PATH_MAX], html[PATH_MAX];
	struct browser_page p;
	char *text;

	stats_capture("stats");
	snprintf(cap, sizeof(cap), "%s/stats", dir);
	ck_assert_int_eq(run("report --quiet %s", cap), 0);
	snprintf(html, sizeof(html), "%s/stats/report.html", dir);
	browser_open(dir, html, "", ADUMP_TEST_OUT "/series.png", &p);
	assert_clean(&p, "series");
	ck_assert_msg(!strstr(p.dom, "<script>alert"), "the trigger's reason became markup");
	/* The answer: the NaN of layer.act at NAN_STEP comes first; the trigger is told. */
	text = browser_element_text(p.dom, "first-tensor");
	ck_assert_msg(text && !strcmp(text, "layer_act.output.0"), "first anomaly '%s'",
		      text ? text : "(none)");
	free(text);
	text = browser_element_text(p.dom, "answer");
	assert_contains(text, "at step 3, rank 0", "series answer");
	assert_contains(text, "1 NaN", "series answer");
	assert_contains(text, "fired at step 5, rank 0", "series answer");
	assert_contains(text, "&lt;script&gt;alert(1)&lt;/script&gt; norm off", "series answer");
	free(text);
	/* Every tensor is listed, the XSS name as text; the page opens on the NaN's series. */
	text = browser_element_text(p.dom, "series-count");
	assert_contains(text, "7 of 7 tensors match", "series list");
	free(text);
	assert_contains(p.dom, "<td class=\"mono\">&lt;img src=x onerror=alert(1)&gt;.forward.0"
			       ".input.0</td>", "series list");
	assert_contains(p.dom, "data-tensor=\"layer_act.output.0\" data-anomaly-steps=\"3\"",
			"series chart");
	assert_contains(p.dom, "<tr class=\"anomaly\" data-step=\"3\">", "series points");
	browser_page_free(&p);

	/* The search: fc's tensors only, its output drawn with the spike and the trigger. */
	browser_open(dir, html, "#q=fc.out", ADUMP_TEST_OUT "/series_fc.png", &p);
	assert_clean(&p, "series #q=fc.out");
	text = browser_element_text(p.dom, "series-count");
	assert_contains(text, "1 of 7 tensors match (name contains \"fc.out\")", "series search");
	free(text);
	ck_assert_msg(!strstr(p.dom, "<td class=\"mono\">layer_norm"), "the search kept norm");
	assert_contains(p.dom, "data-tensor=\"layer_fc.output.0\" data-anomaly-steps=\"5\" "
			       "data-trigger-steps=\"5\"", "series spike");
	assert_contains(p.dom, "<tr class=\"anomaly trigger\" data-step=\"5\">", "series spike");
	text = browser_element_text(p.dom, "series-note");
	assert_contains(text, "far off its own history at step 5", "series note");
	free(text);
	browser_page_free(&p);
}
END_TEST

/* Statistics CSVs that are not what content=stats writes: a clear error naming the file, no
 * page. */
START_TEST(test_series_bad_input)
{
	char cap[PATH_MAX], path[PATH_MAX], *out;

	snprintf(cap, sizeof(cap), "%s/other/step0/rank0/0", dir);
	mkdirs(cap);
	snprintf(path, sizeof(path), "%s/MatMul.fc.1.1.1700000000000000.csv", cap);
	write_text(path, "name,loss,accuracy\nfc,0.5,0.9\n");
	snprintf(cap, sizeof(cap), "%s/other", dir);
	ck_assert_int_eq(run("report %s", cap), 4 /* not a statistics capture */);
	out = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(out, "MatMul.fc.1.1.1700000000000000.csv: no \"Input/Output\" column: "
			      "not a statistics dump"), "%s", out);
	free(out);
	snprintf(path, sizeof(path), "%s/other/report.html", dir);
	ck_assert_int_ne(access(path, F_OK), 0);

	/* Cut in the middle of a row. */
	snprintf(path, sizeof(path), "%s/other/step0/rank0/0/MatMul.fc.1.1.1700000000000000.csv",
		 dir);
	write_text(path, "Input/Output,Index,Data Size,Data Type,Format,Shape,Count,Max Value\n"
		   "Input,0,16,DT_FLOAT,ND,4,4,1.5\nOutput,0,16,DT_FL");
	ck_assert_int_eq(run("report %s", cap), 4 /* not a statistics capture */);
	out = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(out, "the last row has no line end: the file is truncated"), "%s", out);
	free(out);

	/* A trigger.json that is cut short. */
	write_text(path, "Input/Output,Index,Data Size,Data Type,Format,Shape,Count,Max Value\n"
		   "Input,0,16,DT_FLOAT,ND,4,4,1.5\n");
	snprintf(path, sizeof(path), "%s/other/step0/trigger.json", dir);
	write_text(path, "{\"rule\": \"nonfinite\", \"step\": ");
	ck_assert_int_eq(run("report %s", cap), 4 /* not a statistics capture */);
	out = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(out, "trigger.json: not the flight recorder's trigger.json"), "%s", out);
	free(out);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(run("report %s", cap), 0);

	/* A directory with neither a compare result nor statistics. */
	snprintf(cap, sizeof(cap), "%s/empty", dir);
	mkdirs(cap);
	ck_assert_int_eq(run("report %s", cap), 4 /* not a statistics capture */);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("report_page");
	TCase *tc = tcase_create("chromium"), *input = tcase_create("input");
	bool has_browser = browser_is_present();
	int ret;

	tcase_add_checked_fixture(input, setup, teardown);
	tcase_set_timeout(input, 120);
	tcase_add_test(input, test_series_bad_input);
	suite_add_tcase(s, input);
	if (has_browser) {
		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_set_timeout(tc, 600);
		tcase_add_test(tc, test_compare_page);
		tcase_add_test(tc, test_recursive_page);
		tcase_add_test(tc, test_scan_page);
		tcase_add_test(tc, test_bad_bytes_page);
		tcase_add_test(tc, test_series_page);
		suite_add_tcase(s, tc);
	}
	ret = t_run_suite(s);
	if (!has_browser && ret == 0) {
		printf("test_report_page: the pages skipped: %s is missing (Debian: apt install "
		       "chromium; scripts/setup.sh installs it)\n", BROWSER_PATH);
		return 77;
	}
	return ret;
}
