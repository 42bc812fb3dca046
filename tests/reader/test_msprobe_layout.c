/* SPDX-License-Identifier: Apache-2.0 */
/* msprobe's layout read by the compare engine and adump_msprobe_verify() without Python (so
 * the sanitizer builds run it): a rank directory of dump.json and .pt files made here (one
 * module entry with arguments, a keyword argument, parameters and a non-tensor, its backward,
 * its parameters_grad in msprobe's arrival order) compares with itself tensor by tensor,
 * every row passing; a copy with one output changed diverges first at that row; the
 * statistics-only form compares in statistics mode; verify finds a missing .pt, a cut one
 * and one whose shape is not dump.json's, naming each. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/compare.h"
#include "adump/export.h"
#include "adump/reader.h"
#include "reader_helpers.h"

static const char *const tensor_json =
	"{\"task\": \"%s\", \"level\": \"L0\", \"framework\": \"pytorch\", \"dump_data_dir\": null,\n"
	" \"data\": {\n"
	"  \"Module.fc.Linear.forward.0\": {\n"
	"   \"input_args\": [%s, {\"type\": \"float\", \"value\": 2.0}],\n"
	"   \"input_kwargs\": {\"mask\": %s},\n"
	"   \"output\": [%s],\n"
	"   \"parameters\": {\"weight\": %s, \"bias\": %s}},\n"
	"  \"Module.fc.Linear.backward.0\": {\"input\": [%s], \"output\": [null, %s]},\n"
	"  \"Module.fc.Linear.parameters_grad.0\": {\"bias\": [%s], \"weight\": [%s]}\n"
	" }}\n";

/* A tensor's dump.json text: shape [n] or [2, 3], its statistics, its .pt name. */
static char *tensor_text(const char *name, const float *v, int n, bool has_data)
{
	char *s;
	float mx = v[0], mn = v[0], sum = 0, sq = 0;

	for (int i = 0; i < n; i++) {
		mx = v[i] > mx ? v[i] : mx;
		mn = v[i] < mn ? v[i] : mn;
		sum += v[i];
		sq += v[i] * v[i];
	}
	ck_assert_int_ge(asprintf(&s, "{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", "
				  "\"shape\": %s, \"Max\": %.9g, \"Min\": %.9g, \"Mean\": %.9g, "
				  "\"Norm\": %.9g, \"requires_grad\": false%s%s%s}",
				  n == 6 ? "[2, 3]" : "[3]", mx, mn, sum / n, sqrtf(sq),
				  has_data ? ", \"data_name\": \"" : "", has_data ? name : "",
				  has_data ? ".pt\"" : ""), 0);
	return s;
}

static int mkdir_p(const char *path)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	return mkdir(buf, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

static const char *const names[9] = {
	"Module.fc.Linear.forward.0.input.0", "Module.fc.Linear.forward.0.input.mask",
	"Module.fc.Linear.forward.0.output.0", "Module.fc.Linear.forward.0.parameters.weight",
	"Module.fc.Linear.forward.0.parameters.bias", "Module.fc.Linear.backward.0.input.0",
	"Module.fc.Linear.backward.0.output.1", "Module.fc.Linear.parameters_grad.0.bias",
	"Module.fc.Linear.parameters_grad.0.weight",
};

/* Rank directory @dir: tensor i is @n[i] floats i + 0.5 k (k the element), output (2) scaled by
 * @scale. */
static void layout_make(const char *dir, float scale, bool has_data)
{
	static const int n[9] = { 6, 6, 6, 6, 3, 6, 6, 3, 6 };
	char *text[9], path[1024], *json;
	FILE *f;

	snprintf(path, sizeof(path), "%s/dump_tensor_data", dir);
	ck_assert_int_eq(mkdir_p(path), 0);
	for (int i = 0; i < 9; i++) {
		float v[6];
		uint64_t dims[2] = { 2, 3 }, d1[1] = { 3 };

		for (int k = 0; k < n[i]; k++)
			v[k] = (float)i + 0.5f * (float)k - 1.0f;
		if (i == 2)
			for (int k = 0; k < n[i]; k++)
				v[k] *= scale;
		text[i] = tensor_text(names[i], v, n[i], has_data);
		if (!has_data)
			continue;
		snprintf(path, sizeof(path), "%s/dump_tensor_data/%s.pt", dir, names[i]);
		ck_assert_int_eq(adump_pt_write(path, names[i], ADUMP_DT_FLOAT, n[i] == 6 ? dims : d1,
						n[i] == 6 ? 2 : 1, v, (uint64_t)n[i] * 4, NULL, 0), 0);
	}
	ck_assert_int_ge(asprintf(&json, tensor_json, has_data ? "tensor" : "statistics", text[0],
				  text[1], text[2], text[3], text[4], text[5], text[6], text[7],
				  text[8]), 0);
	snprintf(path, sizeof(path), "%s/dump.json", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(json, f);
	fclose(f);
	free(json);
	for (int i = 0; i < 9; i++)
		free(text[i]);
}

static struct adump_compare *run(const char *my, const char *golden)
{
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare *c;
	char msg[1024];

	cfg.thread_count = 2;
	ck_assert_msg(adump_compare_open(&cfg, my, golden, &c, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert_int_eq(adump_compare_run(c), 0);
	return c;
}

/* @my's forward output differs from @golden's: the first divergent row is that output. */
static void expect_output_diverges(const char *my, const char *golden)
{
	struct adump_compare *c = run(my, golden);
	struct adump_compare_summary s;

	adump_compare_summary_get(c, &s);
	ck_assert_int_ge(s.first_divergent_row, 0);
	ck_assert_str_eq(adump_compare_row(c, (uint64_t)s.first_divergent_row)->tensor_id,
			 "Module_fc_Linear_forward_0:output:0");
	adump_compare_close(c);
}

START_TEST(test_tensor_mode)
{
	char *root = t_tmpdir("msl"), a[512], b[512];
	struct adump_compare_summary s;
	struct adump_compare *c;

	snprintf(a, sizeof(a), "%s/a/step0/rank0", root);
	snprintf(b, sizeof(b), "%s/b/step0/rank0", root);
	layout_make(a, 1.0f, true);
	layout_make(b, 3.0f, true);
	c = run(a, a);
	adump_compare_summary_get(c, &s);
	ck_assert_uint_eq(s.op_count, 3);
	ck_assert_uint_eq(s.matched_count, 3);
	/* inputs: the argument, the keyword argument, two parameters; the output; the backward's
	 * input and its one gradient (null is not a dump); two parameter gradients */
	ck_assert_uint_eq(s.tensor_count, 9);
	ck_assert_uint_eq(s.error_count + s.warning_count, 0);
	ck_assert_int_eq(s.first_divergent_row, -1);
	ck_assert_int_eq(s.exit_code, 0);
	/* parameters_grad: weight before bias, as the forward's parameters (msprobe wrote bias
	 * first) */
	for (uint64_t i = 0; i < adump_compare_row_count(c); i++) {
		const struct adump_compare_row *r = adump_compare_row(c, i);

		if (!strcmp(r->tensor_id, "Module_fc_Linear_parameters_grad_0:output:0"))
			ck_assert_str_eq(r->cells[9], "[2,3]");
	}
	adump_compare_close(c);
	/* the output changed: the first divergence is that row */
	expect_output_diverges(b, a);
	/* a cut .pt: that row says why, the others are compared */
	{
		char path[1024];

		snprintf(path, sizeof(path), "%s/dump_tensor_data/%s.pt", b, names[5]);
		ck_assert_int_eq(truncate(path, 40), 0);
		c = run(b, a);
		adump_compare_summary_get(c, &s);
		ck_assert_uint_ge(s.failed_count, 1);
		adump_compare_close(c);
	}
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(test_statistics_mode)
{
	char *root = t_tmpdir("msl"), a[512], b[512], t[512];
	struct adump_compare_summary s;
	struct adump_compare *c;

	snprintf(a, sizeof(a), "%s/a/step0/rank0", root);
	snprintf(b, sizeof(b), "%s/b/step0/rank0", root);
	snprintf(t, sizeof(t), "%s/t/step0/rank0", root);
	layout_make(a, 1.0f, false);
	layout_make(b, 3.0f, false);
	layout_make(t, 1.0f, true);
	/* statistics against statistics, and against the tensor layout (its dump.json's
	 * statistics) */
	for (int k = 0; k < 2; k++) {
		c = run(a, k ? t : a);
		ck_assert_str_eq(adump_compare_column(c, 10), "Max diff");
		adump_compare_summary_get(c, &s);
		ck_assert_uint_eq(s.tensor_count, 9);
		ck_assert_int_eq(s.first_divergent_row, -1);
		adump_compare_close(c);
	}
	expect_output_diverges(b, a);
	t_rmtree(root);
	free(root);
}
END_TEST

struct seen {
	int count;
	char text[4096];
};

static void note(void *arg, const char *file, const char *message)
{
	struct seen *s = arg;
	size_t n = strlen(s->text);

	s->count++;
	snprintf(s->text + n, sizeof(s->text) - n, "%s|%s\n", file, message);
}

START_TEST(test_verify)
{
	char *root = t_tmpdir("msl"), a[512], path[1024];
	struct seen seen = { 0 };
	uint64_t bad = 99;
	float v[4] = { 1, 2, 3, 4 };
	uint64_t d4[1] = { 4 };

	snprintf(a, sizeof(a), "%s/a/step0/rank0", root);
	layout_make(a, 1.0f, true);
	ck_assert_int_eq(adump_msprobe_verify(a, note, &seen, &bad), 9);
	ck_assert_uint_eq(bad, 0);
	ck_assert_int_eq(seen.count, 0);
	snprintf(path, sizeof(path), "%s/dump_tensor_data/%s.pt", a, names[0]);
	ck_assert_int_eq(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/dump_tensor_data/%s.pt", a, names[2]);
	ck_assert_int_eq(truncate(path, 100), 0);
	snprintf(path, sizeof(path), "%s/dump_tensor_data/%s.pt", a, names[3]);
	ck_assert_int_eq(adump_pt_write(path, "x", ADUMP_DT_FLOAT, d4, 1, v, 16, NULL, 0), 0);
	ck_assert_int_eq(adump_msprobe_verify(a, note, &seen, &bad), 9);
	ck_assert_uint_eq(bad, 3);
	ck_assert_int_eq(seen.count, 3);
	ck_assert_ptr_nonnull(strstr(seen.text, names[0]));
	ck_assert_ptr_nonnull(strstr(seen.text, "No such file"));
	ck_assert_ptr_nonnull(strstr(seen.text, "Module.fc.Linear.forward.0.output.0.pt"));
	ck_assert_ptr_nonnull(strstr(seen.text, "dump.json says torch.float32 [2,3], the file "
					      "holds DT_FLOAT [4]"));
	/* a cut dump.json */
	snprintf(path, sizeof(path), "%s/dump.json", a);
	ck_assert_int_eq(truncate(path, 50), 0);
	seen.count = 0;
	ck_assert_int_eq(adump_msprobe_verify(a, note, &seen, &bad), 0);
	ck_assert_uint_eq(bad, 1);
	ck_assert_ptr_nonnull(strstr(seen.text, "not JSON"));
	t_rmtree(root);
	free(root);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("msprobe_layout");
	TCase *tc = tcase_create("msprobe_layout");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tensor_mode);
	tcase_add_test(tc, test_statistics_mode);
	tcase_add_test(tc, test_verify);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
