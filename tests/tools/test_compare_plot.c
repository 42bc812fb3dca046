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

START_TEST(test_plot_names_are_data)
{
	static const char op[] = "evil`touch BT`$(touch DS)'q\"x";
	float one[TRUST_N], neg[TRUST_N];
	char my[PATH_MAX], golden[PATH_MAX], out[PATH_MAX], svg_name[64];
	struct dirent *e;
	char *svg = NULL;
	DIR *d;

	for (int i = 0; i < TRUST_N; i++) {
		one[i] = 1.0f + (float)i;
		neg[i] = -one[i];
	}
	snprintf(my, sizeof(my), "%s/my", dir);
	snprintf(golden, sizeof(golden), "%s/golden", dir);
	/* A quote, a space and backticks in the output directory's name. */
	snprintf(out, sizeof(out), "%s/o'ut `touch BO` \"dq", dir);
	trust_dump(my, "Add", op, 1, 1000, one, neg);
	trust_dump(golden, "Add", op, 1, 1000, one, one);
	{
		const char *argv[] = { "compare", "-m", my, "-g", golden, "-out", out, "--plot",
				       "--quiet", NULL };

		ck_assert_int_eq(trust_run(dir, 0, argv), 0);
	}
	/* Nothing ran: neither here (gnuplot's and the shell's directory), nor in -out. */
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
	/* The label carries the name as it is (the SVG escapes the quote characters it must). */
	ck_assert_msg(strstr(svg, "first divergent: Index") && strstr(svg, "evil`touch BT`$(touch DS)"),
		      "no label with the op name in the SVG");
	free(svg);
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
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
