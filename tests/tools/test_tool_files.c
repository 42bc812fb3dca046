/* SPDX-License-Identifier: Apache-2.0 */
/* tools/progress.c's file list: how many items a progress bar over it counts. */
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"
#include "tools/progress.h"
#include "tools/tool.h"

/* tools/main.c's, which this test does not link: no bar is ever drawn here. */
bool tool_is_tty(void)
{
	return false;
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
}

/* Plain files count one each, an index its lines (the last one unterminated here), its
 * segments nothing. */
START_TEST(test_item_count)
{
	struct tool_files files = { 0 };
	char *dir = t_tmpdir("tool_files");

	put(dir, "Add.add_1.3.1.1700000000000000", "x");
	put(dir, "notes.txt", "");
	put(dir, "w0.idx", "a\nb\nc");
	put(dir, "w0-0.seg", "payload");
	put(dir, "w0-1.seg", "payload");
	ck_assert_int_eq(tool_files_add(&files, dir, false), 0);
	ck_assert_uint_eq(files.count, 5);
	ck_assert_uint_eq(tool_files_item_count(&files), 2 + 3);
	tool_files_free(&files);
	ck_assert_uint_eq(tool_files_item_count(&files), 0);
	ck_assert_int_eq(t_rmtree(dir), 0);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tool_files");
	TCase *tc = tcase_create("tool_files");

	tcase_add_test(tc, test_item_count);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
