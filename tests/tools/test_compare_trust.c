/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare`'s files and status (issue 30): a link planted at advisor_summary.txt is
 * replaced, not written through; a full disk (a file size limit) leaves no cut-short result
 * under its name; --fail-on gives its own status; every output names an op by its header
 * name, the recursive summary too. */
#include <json-c/json.h>

#include "trust_run.h"

static char *dir;
static float one[TRUST_N], neg[TRUST_N];

static void setup(void)
{
	dir = t_tmpdir("compare-trust");
	for (int i = 0; i < TRUST_N; i++) {
		one[i] = 1.0f + (float)i;
		neg[i] = -one[i];
	}
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

static char *sub(const char *name)
{
	static char paths[64][PATH_MAX];
	static int k;
	char *p = paths[k++ % 64];

	snprintf(p, PATH_MAX, "%s/%s", dir, name);
	return p;
}

/* my: one op passing, one op whose output has every sign flipped (verdict error). */
static void pair_with_error(const char *my, const char *golden)
{
	trust_dump(my, "Add", "good", 1, 1000, one, one);
	trust_dump(golden, "Add", "good", 1, 1000, one, one);
	trust_dump(my, "Mul", "bad", 2, 2000, one, neg);
	trust_dump(golden, "Mul", "bad", 2, 2000, one, one);
}

START_TEST(test_advisor_link_replaced)
{
	char victim[PATH_MAX], link[PATH_MAX], *text;
	const char *argv[] = { "compare", "-m", sub("my"), "-g", sub("golden"), "-out", sub("out"),
			       "-advisor", "--quiet", NULL };
	struct stat st;
	FILE *f;

	pair_with_error(sub("my"), sub("golden"));
	mkdir(sub("out"), 0750);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	f = fopen(victim, "w");
	ck_assert_ptr_nonnull(f);
	fputs("precious\n", f);
	fclose(f);
	snprintf(link, sizeof(link), "%s/out/advisor_summary.txt", dir);
	ck_assert_int_eq(symlink(victim, link), 0);
	ck_assert_int_eq(trust_run(dir, 0, argv), 0);
	text = t_slurp(dir, "victim");
	ck_assert_str_eq(text, "precious\n");
	free(text);
	ck_assert_int_eq(lstat(link, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	text = t_slurp(sub("out"), "advisor_summary.txt");
	ck_assert_ptr_nonnull(strstr(text, "Detection Type:"));
	free(text);
	ck_assert_int_eq(trust_count(sub("out"), ".adump", ""), 0);
}
END_TEST

/* A file size limit makes the CSV's writes fail (EFBIG) as a full disk would (ENOSPC). */
START_TEST(test_full_disk_leaves_no_csv)
{
	const char *argv[] = { "compare", "-m", sub("my"), "-g", sub("golden"), "-out", sub("out"),
			       "--quiet", NULL };
	char *err;

	pair_with_error(sub("my"), sub("golden"));
	mkdir(sub("out"), 0750);
	ck_assert_int_eq(trust_run(dir, 300, argv), 19);
	ck_assert_int_eq(trust_count(sub("out"), "result_", ""), 0);
	ck_assert_int_eq(trust_count(sub("out"), ".adump", ""), 0);
	err = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(err, "result_") && strstr(err, strerror(EFBIG)), "stderr: %s", err);
	free(err);
	/* Without the limit, the same compare writes its whole CSV. */
	ck_assert_int_eq(trust_run(dir, 0, argv), 0);
	ck_assert_int_eq(trust_count(sub("out"), "result_", ".csv"), 1);
}
END_TEST

/* --recursive: the pairs' CSVs and the summary are written whole too, or not at all. */
START_TEST(test_full_disk_recursive)
{
	const char *argv[] = { "compare", "-m", sub("m"), "-g", sub("g"), "-out", sub("out"),
			       "--recursive", "--quiet", NULL };

	mkdir(sub("m"), 0750);
	mkdir(sub("g"), 0750);
	pair_with_error(sub("m/step0"), sub("g/step0"));
	pair_with_error(sub("m/step1"), sub("g/step1"));
	mkdir(sub("out"), 0750);
	ck_assert_int_eq(trust_run(dir, 200, argv), 19);
	ck_assert_int_eq(trust_count(sub("out"), "summary_", ""), 0);
	ck_assert_int_eq(trust_count(sub("out"), "result_", ""), 0);
	ck_assert_int_eq(trust_count(sub("out"), ".adump", ""), 0);
}
END_TEST

START_TEST(test_fail_on)
{
	const char *plain[] = { "compare", "-m", sub("my"), "-g", sub("golden"), "-out",
				sub("out"), "--quiet", NULL };
	const char *on_error[] = { "compare", "-m", sub("my"), "-g", sub("golden"), "-out",
				   sub("out"), "--quiet", "--fail-on", "error", NULL };
	const char *on_warning[] = { "compare", "-m", sub("my"), "-g", sub("golden"), "-out",
				     sub("out"), "--quiet", "--fail-on", "warning", NULL };
	const char *passing[] = { "compare", "-m", sub("ok_my"), "-g", sub("ok_golden"), "-out",
				  sub("out"), "--quiet", "--fail-on", "warning", NULL };
	const char *bad[] = { "compare", "-m", sub("my"), "-g", sub("golden"), "--fail-on",
			      "never", NULL };
	char *err;

	pair_with_error(sub("my"), sub("golden"));
	trust_dump(sub("ok_my"), "Add", "good", 1, 1000, one, one);
	trust_dump(sub("ok_golden"), "Add", "good", 1, 1000, one, one);
	/* Default unchanged: verdicts do not make the status, as with msaccucmp. */
	ck_assert_int_eq(trust_run(dir, 0, plain), 0);
	ck_assert_int_eq(trust_run(dir, 0, on_error), 101);
	ck_assert_int_eq(trust_run(dir, 0, on_warning), 101);
	ck_assert_int_eq(trust_run(dir, 0, passing), 0);
	ck_assert_int_eq(trust_run(dir, 0, bad), 2);
	err = t_slurp(dir, "stderr");
	ck_assert_ptr_nonnull(strstr(err, "--fail-on"));
	free(err);
}
END_TEST

static const char *json_str(json_object *o, const char *key)
{
	json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no %s", key);
	return json_object_get_string(v);
}

/* "Module.2.Linear.forward.0" (file name Module_2_Linear_forward_0): the single compare's
 * CSV, --json and summary, and the recursive summary CSV, JSON and stderr, all name it so. */
START_TEST(test_one_name_per_op)
{
	static const char name[] = "Module.2.Linear.forward.0";
	const char *single[] = { "compare", "-m", sub("m/step0"), "-g", sub("g/step0"), "-out",
				 sub("out"), "--json", NULL };
	const char *rec[] = { "compare", "-m", sub("m"), "-g", sub("g"), "-out", sub("out"),
			      "--recursive", "--json", NULL };
	json_object *o, *fd;
	char *text;
	struct dirent *e;
	DIR *d;

	mkdir(sub("m"), 0750);
	mkdir(sub("g"), 0750);
	for (int s = 0; s < 2; s++) {
		char m[64], g[64];

		snprintf(m, sizeof(m), "m/step%d", s);
		snprintf(g, sizeof(g), "g/step%d", s);
		trust_dump(sub(m), "Linear", name, 1, 1000, one, neg);
		trust_dump(sub(g), "Linear", name, 1, 1000, one, one);
	}
	ck_assert_int_eq(trust_run(dir, 0, single), 0);
	text = t_slurp(dir, "stdout");
	o = json_tokener_parse(text);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_str(json_object_array_get_idx(o, 0), "NPUDump"), name);
	json_object_put(o);
	free(text);
	text = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(text, "first divergent op (execution order): Index 0 " "Module.2.Linear"
				   ".forward.0"), "stderr: %s", text);
	free(text);

	ck_assert_int_eq(trust_run(dir, 0, rec), 0);
	text = t_slurp(dir, "stdout");
	o = json_tokener_parse(text);   /* the first line: step0 */
	ck_assert_ptr_nonnull(o);
	ck_assert(json_object_object_get_ex(o, "first_divergent", &fd));
	ck_assert_str_eq(json_str(fd, "op"), name);
	ck_assert_ptr_nonnull(strstr(json_str(fd, "tensor"), name));
	json_object_put(o);
	free(text);
	text = t_slurp(dir, "stderr");
	ck_assert_msg(!strstr(text, "Module_2_Linear_forward_0"), "stderr: %s", text);
	ck_assert_ptr_nonnull(strstr(text, name));
	free(text);
	d = opendir(sub("out"));
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "summary_", 8))
			continue;
		text = t_slurp(sub("out"), e->d_name);
		ck_assert_msg(!strstr(text, "Module_2_Linear_forward_0"), "summary: %s", text);
		ck_assert_ptr_nonnull(strstr(text, ",Module.2.Linear.forward.0,"));
		free(text);
	}
	closedir(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("compare_trust");
	TCase *tc = tcase_create("outputs");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_advisor_link_replaced);
	tcase_add_test(tc, test_full_disk_leaves_no_csv);
	tcase_add_test(tc, test_full_disk_recursive);
	tcase_add_test(tc, test_fail_on);
	tcase_add_test(tc, test_one_name_per_op);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
