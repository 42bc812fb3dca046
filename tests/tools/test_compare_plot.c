/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare --plot` takes what comes from the dumps as data (issue 30 item 1): an op name
 * holding backticks and $(...) and an -out path holding quotes run nothing, and the plot is
 * drawn with the name as its label. Skipped (77) without gnuplot. */
#include "trust_run.h"

static char *dir;

static void setup(void)
{
	dir = t_tmpdir("compare-plot");
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

static bool exists(const char *d, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", d, name);
	return lstat(path, &st) == 0;
}

/* compare --plot of @my against @golden into @out; then nothing ran and the plot is there,
 * labelled with the op name. */
static void plot_check(const char *my, const char *golden, const char *out)
{
	const char *argv[] = { "compare", "-m", my, "-g", golden, "-out", out, "--plot", "--quiet",
			       NULL };
	char svg_name[64] = "";
	struct dirent *e;
	char *svg;
	DIR *d;

	ck_assert_int_eq(trust_run(dir, 0, argv), 0);
	/* Nothing ran: neither here (gnuplot's and a shell's directory), nor in -out. */
	ck_assert(!exists(dir, "BT") && !exists(dir, "DS") && !exists(dir, "BO"));
	ck_assert(!exists(out, "BT") && !exists(out, "DS") && !exists(out, "BO"));
	ck_assert_int_eq(trust_count(out, "compare_", ".png"), 1);
	ck_assert_int_eq(trust_count(out, "compare_", ".svg"), 1);
	/* Nothing left of the private directory. */
	ck_assert_int_eq(trust_count(out, ".adump", ""), 0);
	d = opendir(out);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "compare_", 8) && strstr(e->d_name, ".svg"))
			snprintf(svg_name, sizeof(svg_name), "%s", e->d_name);
	closedir(d);
	svg = t_slurp(out, svg_name);
	/* The label carries the name as it is. */
	ck_assert_msg(strstr(svg, "first divergent: Index") &&
		      strstr(svg, "evil`touch BT`$(touch DS)"), "no label with the op name");
	free(svg);
}

START_TEST(test_plot_names_are_data)
{
	static const char op[] = "evil`touch BT`$(touch DS)'q\"x";
	float one[TRUST_N], neg[TRUST_N];
	char my[PATH_MAX], golden[PATH_MAX], out[PATH_MAX];

	for (int i = 0; i < TRUST_N; i++) {
		one[i] = 1.0f + (float)i;
		neg[i] = -one[i];
	}
	snprintf(my, sizeof(my), "%s/my", dir);
	snprintf(golden, sizeof(golden), "%s/golden", dir);
	trust_dump(my, "Add", op, 1, 1000, one, neg);
	trust_dump(golden, "Add", op, 1, 1000, one, one);
	/* The op name alone (it went into gnuplot's script as a label's text). */
	snprintf(out, sizeof(out), "%s/plain", dir);
	plot_check(my, golden, out);
	/* Quotes that close and reopen a shell's single quotes around the path. */
	snprintf(out, sizeof(out), "%s/o'`touch BO`'x", dir);
	plot_check(my, golden, out);
	/* Unbalanced quotes, a space and a double quote. */
	snprintf(out, sizeof(out), "%s/o'ut \"dq", dir);
	plot_check(my, golden, out);
}
END_TEST

/* Two identical captures: no error above 0 to draw on the log-scale axis; the plot is made
 * all the same (gnuplot failed on the empty series, and no plot was left). */
START_TEST(test_plot_identical)
{
	float one[TRUST_N];
	char my[PATH_MAX], out[PATH_MAX];
	const char *argv[] = { "compare", "-m", my, "-g", my, "-out", out, "--plot", "--quiet",
			       NULL };

	for (int i = 0; i < TRUST_N; i++)
		one[i] = 1.0f + (float)i;
	snprintf(my, sizeof(my), "%s/same", dir);
	snprintf(out, sizeof(out), "%s/same-out", dir);
	trust_dump(my, "Add", "same", 1, 1000, one, one);
	ck_assert_int_eq(trust_run(dir, 0, argv), 0);
	ck_assert_int_eq(trust_count(out, "compare_", ".png"), 1);
	ck_assert_int_eq(trust_count(out, "compare_", ".svg"), 1);
}
END_TEST

static bool has_gnuplot(void)
{
	const char *path = getenv("PATH");
	char buf[4096], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path ? path : "/usr/bin:/bin");
	for (char *p = strtok_r(buf, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
		char exe[PATH_MAX];

		snprintf(exe, sizeof(exe), "%s/gnuplot", p);
		if (access(exe, X_OK) == 0)
			return true;
	}
	return false;
}

int main(void)
{
	Suite *s = suite_create("compare_plot");
	TCase *tc = tcase_create("plot");

	if (!has_gnuplot()) {
		printf("SKIP: gnuplot is not installed\n");
		return 77;
	}
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_plot_names_are_data);
	tcase_add_test(tc, test_plot_identical);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
