/* SPDX-License-Identifier: Apache-2.0 */
/* `adump export --msprobe` writes only inside OUT (issue 30 item 3): .pt names derived from op
 * names are one path component of dump_tensor_data (an op named "../../../escaped" stays
 * inside, one named "scope/op" exports), dump.json's data_name is the file's real name, and a
 * link planted where a .pt or dump.json goes is replaced, never written through. */
#include <json-c/json.h>

#include "trust_run.h"

static char *dir;

static void setup(void)
{
	dir = t_tmpdir("export-trust");
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

/* No entry of directory @d holds @needle. */
static void none_named(const char *d, const char *needle)
{
	struct dirent *e;
	DIR *dp = opendir(d);

	ck_assert_ptr_nonnull(dp);
	while ((e = readdir(dp)))
		ck_assert_msg(!strstr(e->d_name, needle), "%s/%s written", d, e->d_name);
	closedir(dp);
}

static void capture(const char *cap)
{
	float in[TRUST_N], out[TRUST_N];

	for (int i = 0; i < TRUST_N; i++) {
		in[i] = (float)i;
		out[i] = (float)(2 * i);
	}
	trust_dump(cap, "Linear", "../../../escaped", 1, 1000, in, out);
	trust_dump(cap, "Linear", "scope/op", 2, 2000, in, out);
}

START_TEST(test_names_stay_inside)
{
	char cap[PATH_MAX], out[PATH_MAX], data[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
	const char *argv[] = { "export", "--msprobe", cap, out, NULL };
	struct json_object *doc, *entries;
	int files = 0;

	snprintf(cap, sizeof(cap), "%s/cap", dir);
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/a/b", dir);
	snprintf(out, sizeof(out), "%s/a/b/out", dir);
	snprintf(data, sizeof(data), "%s/dump_tensor_data", out);
	capture(cap);
	ck_assert_int_eq(mkdir(a, 0750), 0);
	ck_assert_int_eq(mkdir(b, 0750), 0);
	ck_assert_int_eq(trust_run(dir, 0, argv), 0);
	none_named(dir, "escaped");
	none_named(a, "escaped");
	none_named(b, "escaped");
	none_named(out, "escaped");
	/* Every data_name is a file of dump_tensor_data, under that very name. */
	snprintf(a, sizeof(a), "%s/dump.json", out);
	doc = json_object_from_file(a);
	ck_assert_ptr_nonnull(doc);
	ck_assert(json_object_object_get_ex(doc, "data", &entries));
	ck_assert(json_object_object_get_ex(entries, "scope/op", NULL));
	json_object_object_foreach(entries, k, v) {
		struct json_object *args, *o, *dn;
		const char *name;
		struct stat st;

		(void)k;
		ck_assert(json_object_object_get_ex(v, "input_args", &args) ||
			  json_object_object_get_ex(v, "input", &args));
		o = json_object_array_get_idx(args, 0);
		ck_assert(json_object_object_get_ex(o, "data_name", &dn));
		name = json_object_get_string(dn);
		ck_assert_msg(!strchr(name, '/'), "data_name %s is not one component", name);
		snprintf(a, sizeof(a), "%s/%s", data, name);
		ck_assert_msg(lstat(a, &st) == 0 && S_ISREG(st.st_mode), "%s missing", a);
		files++;
	}
	ck_assert_int_eq(files, 2);
	json_object_put(doc);
}
END_TEST

/* Links planted at dump.json and at a .pt's name point at a victim outside OUT: the victim
 * keeps its bytes and the names become the export's regular files. */
START_TEST(test_planted_links_replaced)
{
	char cap[PATH_MAX], out[PATH_MAX], data[PATH_MAX], victim[PATH_MAX], p[PATH_MAX];
	const char *argv[] = { "export", "--msprobe", cap, out, NULL };
	struct stat st;
	char *text;
	FILE *f;

	snprintf(cap, sizeof(cap), "%s/cap", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(data, sizeof(data), "%s/dump_tensor_data", out);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	capture(cap);
	f = fopen(victim, "w");
	ck_assert_ptr_nonnull(f);
	fputs("precious\n", f);
	fclose(f);
	ck_assert_int_eq(mkdir(out, 0750), 0);
	ck_assert_int_eq(mkdir(data, 0750), 0);
	snprintf(p, sizeof(p), "%s/dump.json", out);
	ck_assert_int_eq(symlink(victim, p), 0);
	snprintf(p, sizeof(p), "%s/scope_op.input.0.pt", data);
	ck_assert_int_eq(symlink(victim, p), 0);
	ck_assert_int_eq(trust_run(dir, 0, argv), 0);
	text = t_slurp(dir, "victim");
	ck_assert_str_eq(text, "precious\n");
	free(text);
	ck_assert(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
	snprintf(p, sizeof(p), "%s/dump.json", out);
	ck_assert(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("export_trust");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_names_stay_inside);
	tcase_add_test(tc, test_planted_links_replaced);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
