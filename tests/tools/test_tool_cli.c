/* SPDX-License-Identifier: Apache-2.0 */
/* Every `adump` subcommand tried with garbage: bad numbers and size suffixes, missing values,
 * unknown options, missing, empty, non-dump and special files (a FIFO, a dangling link),
 * directories where files are expected and files where directories are. Each must end with
 * exit 2 for a usage error or 1 for a failure, with a message, within a time limit (a FIFO
 * once made the readers wait for a writer forever), never with a signal. Plus --version, and
 * verify --clean on the leftovers of a capture cut short. */
#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "adump/adump.h"
#include "helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif
#ifndef ADUMP_PROJECT_VERSION
#error "ADUMP_PROJECT_VERSION must give CMake's project version"
#endif

/* A run that waits is a failure too: timeout(1) ends it with 124. */
#define TOOL "timeout 60 " ADUMP_TOOL

static char *dir;
/* <dir>/cap/<time> and <dir>/pk/<time>: a tiny capture by the file and the packed sink. */
static char cap[PATH_MAX], pk[PATH_MAX];

/* In each case's arguments, "@" stands for the scratch directory. */
struct cli_case {
	const char *args;
	int rc;
	char where;             /* 'e': the message is on stderr; 'o': on stdout (a report) */
};

static const struct cli_case cases[] = {
	{ "", 2, 'e' },
	{ "nonsense", 2, 'e' },
	{ "--bogus", 2, 'e' },

	{ "bench --streams", 2, 'e' },
	{ "bench --streams abc --out @/b", 2, 'e' },
	{ "bench --streams 0 --out @/b", 2, 'e' },
	{ "bench --streams 65 --out @/b", 2, 'e' },
	{ "bench --streams 99999999999999999999 --out @/b", 2, 'e' },
	{ "bench --workers 2x --out @/b", 2, 'e' },
	{ "bench --min-size 4Q --out @/b", 2, 'e' },
	{ "bench --min-size -1 --out @/b", 2, 'e' },
	{ "bench --min-size 2M --max-size 1M --out @/b", 2, 'e' },
	{ "bench --total 99999999999G --out @/b", 2, 'e' },
	{ "bench --seed abc --out @/b", 2, 'e' },
	{ "bench --seed", 2, 'e' },
	{ "bench --sink nowhere --out @/b", 2, 'e' },
	{ "bench --on-full sometimes --out @/b", 2, 'e' },
	{ "bench --io maybe --out @/b", 2, 'e' },
	{ "bench --writer x --out @/b", 2, 'e' },
	{ "bench --compress zstd --out @/b", 2, 'e' },
	{ "bench --data x --out @/b", 2, 'e' },
	{ "bench --profile x --out @/b", 2, 'e' },
	{ "bench --compute-gbps nan --out @/b", 2, 'e' },
	{ "bench --baselines nope --out @/b", 2, 'e' },
	{ "bench --bogus", 2, 'e' },
	{ "bench extra --out @/b", 2, 'e' },
	{ "bench --streams 1", 2, 'e' },                        /* --out is required */
	{ "bench --out @/notdump.txt --streams 1 --ops 1 --no-warmup", 1, 'e' },
	{ "bench --out @/notdump.txt/sub --streams 1 --ops 1 --no-warmup", 1, 'e' },
	{ "bench --pool 1 --out @/b --streams 1 --ops 1 --no-warmup", 1, 'e' },

	{ "convert", 2, 'e' },
	{ "convert -d", 2, 'e' },
	{ "convert -d @/notdump.txt -o", 2, 'e' },
	{ "convert --bogus", 2, 'e' },
	{ "convert -d @/nonexistent -o @/o", 1, 'e' },
	{ "convert -d @/notdump.txt -o @/o", 1, 'e' },
	{ "convert -d @/empty -o @/o", 1, 'e' },
	{ "convert -d @/fifo -o @/o", 1, 'e' },
	{ "convert -d @/emptydir -o @/o", 1, 'e' },
	{ "convert -d @/cap -r -o @/notdump.txt", 1, 'e' },    /* the output is a file */

	{ "inspect", 2, 'e' },
	{ "inspect --bogus @/notdump.txt", 2, 'e' },
	{ "inspect @/nonexistent", 1, 'e' },
	{ "inspect @/notdump.txt", 1, 'e' },
	{ "inspect @/empty", 1, 'e' },
	{ "inspect @/fifo", 1, 'e' },
	{ "inspect @/emptydir", 1, 'e' },
	{ "inspect @/pk/nothere", 1, 'e' },

	{ "verify", 2, 'e' },
	{ "verify --bogus @/cap", 2, 'e' },
	{ "verify --clean-up @/cap", 2, 'e' },
	{ "verify @/nonexistent", 1, 'e' },
	{ "verify @/notdump.txt", 1, 'o' },
	{ "verify @/empty", 1, 'o' },
	{ "verify @/fifo", 1, 'o' },
	{ "verify @/emptydir", 1, 'o' },
	{ "verify --json @/notdump.txt", 1, 'o' },

	{ "unpack", 2, 'e' },
	{ "unpack @/pk", 2, 'e' },
	{ "unpack @/pk @/u @/v", 2, 'e' },
	{ "unpack --bogus @/u", 2, 'e' },
	{ "unpack @/nonexistent @/u", 1, 'e' },
	{ "unpack @/notdump.txt @/u", 1, 'e' },
	{ "unpack @/fifo @/u", 1, 'e' },
	{ "unpack @/emptydir @/u", 1, 'e' },
	{ "unpack @/cap @/u", 1, 'e' },                         /* not a packed capture */
};

/* The one directory below @parent (a capture's <time>), into @out. */
static void only_subdir(const char *parent, char *out, size_t cap_bytes)
{
	DIR *d = opendir(parent);
	struct dirent *e;

	ck_assert_ptr_nonnull(d);
	out[0] = '\0';
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			snprintf(out, cap_bytes, "%s/%s", parent, e->d_name);
	closedir(d);
	ck_assert_msg(out[0], "nothing in %s", parent);
}

static void write_text(const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* Once per test case group: the files every case may name. */
static void setup(void)
{
	char path[PATH_MAX], parent[PATH_MAX];

	dir = t_tmpdir("cli");
	ck_assert_ptr_nonnull(dir);
	write_text("notdump.txt", "this is not a dump file\n");
	write_text("empty", "");
	snprintf(path, sizeof(path), "%s/emptydir", dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/dangling", dir);
	ck_assert_int_eq(symlink("nowhere", path), 0);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "bench --out %s/cap --streams 1 --ops 2 --min-size 64 "
				    "--max-size 1K --no-warmup", dir), 0);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "bench --out %s/pk --sink packed --streams 1 --ops 2 "
				    "--min-size 64 --max-size 1K --no-warmup", dir), 0);
	snprintf(parent, sizeof(parent), "%s/cap", dir);
	only_subdir(parent, cap, sizeof(cap));
	snprintf(parent, sizeof(parent), "%s/pk", dir);
	only_subdir(parent, pk, sizeof(pk));
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

/* @args with every '@' replaced by the scratch directory. */
static void expand(const char *args, char *out, size_t cap_bytes)
{
	size_t n = 0;

	for (const char *p = args; *p && n + 1 < cap_bytes; p++) {
		if (*p == '@')
			n += (size_t)snprintf(out + n, cap_bytes - n, "%s", dir);
		else
			out[n++] = *p;
	}
	ck_assert_uint_lt(n, cap_bytes);
	out[n] = '\0';
}

START_TEST(test_garbage)
{
	const struct cli_case *c = &cases[_i];
	char args[8192];
	char *out, *err;
	int rc;

	expand(c->args, args, sizeof(args));
	rc = t_run_tool(TOOL, dir, "%s", args);
	out = t_slurp(dir, "stdout");
	err = t_slurp(dir, "stderr");
	ck_assert_msg(rc == c->rc, "adump %s: exit %d, want %d; stderr: %s", args, rc, c->rc, err);
	/* A message: a line beyond a bare usage text for failures; any text for usage errors. */
	ck_assert_msg(strlen(c->where == 'e' ? err : out) > 0, "adump %s: exit %d without a message",
		      args, rc);
	ck_assert_msg(!strstr(err, "Sanitizer") && !strstr(err, "runtime error"),
		      "adump %s: %s", args, err);
	free(out);
	free(err);
}
END_TEST

/* The same capture that the cases use is valid: failures above are the garbage's doing. */
START_TEST(test_fixtures_valid)
{
	ck_assert_int_eq(t_run_tool(TOOL, dir, "verify %s %s", cap, pk), 0);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "inspect %s/0", cap), 0);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "unpack %s %s/restored", pk, dir), 0);
}
END_TEST

static void append(const char *path, const char *bytes, size_t len)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, bytes, len), (ssize_t)len);
	ck_assert_int_eq(close(fd), 0);
}

static off_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* `verify --json` of @path: its exit code, and the count @key of the document. */
static int64_t verify_count(const char *path, const char *flags, const char *key, int *rc)
{
	json_object *doc, *v;
	char *out;
	int64_t n;

	*rc = t_run_tool(TOOL, dir, "verify --json %s %s", flags, path);
	out = t_slurp(dir, "stdout");
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "not JSON: %s", out);
	ck_assert(json_object_object_get_ex(doc, key, &v));
	n = json_object_get_int64(v);
	json_object_put(doc);
	free(out);
	return n;
}

/* What a capture cut short leaves in a packed capture and beside files: listed by verify,
 * removed by verify --clean, and nothing else touched. */
START_TEST(test_verify_clean)
{
	char run[PATH_MAX], parent[PATH_MAX], seg[PATH_MAX + 32], idx[PATH_MAX + 32];
	char orphan[PATH_MAX + 32], part[PATH_MAX + 32];
	off_t seg_bytes, idx_bytes;
	int rc;

	ck_assert_int_eq(t_run_tool(TOOL, dir, "bench --out %s/clean --sink packed --streams 2 "
				    "--ops 8 --min-size 64 --max-size 8K --no-warmup", dir), 0);
	snprintf(parent, sizeof(parent), "%s/clean", dir);
	only_subdir(parent, run, sizeof(run));
	snprintf(seg, sizeof(seg), "%s/packed/w0-0.seg", run);
	snprintf(idx, sizeof(idx), "%s/packed/w0.idx", run);
	snprintf(orphan, sizeof(orphan), "%s/packed/w7-0.seg", run);
	snprintf(part, sizeof(part), "%s/Add.x.1.2.3.part", run);
	seg_bytes = size_of(seg);
	idx_bytes = size_of(idx);
	ck_assert_int_gt(seg_bytes, 0);
	append(seg, "tail", 4);
	append(idx, "0/Add.cut\tw0-0", 14);
	append(orphan, "never indexed", 13);
	append(part, "half a file", 11);

	ck_assert_int_eq(verify_count(run, "", "part", &rc), 1);
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(verify_count(run, "", "index_leftover", &rc), 1);
	ck_assert_int_eq(verify_count(run, "", "segment_leftover", &rc), 2);
	ck_assert_int_eq(verify_count(run, "", "ok", &rc), 16);

	ck_assert_int_eq(verify_count(run, "--clean", "removed", &rc), 4);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(size_of(seg), seg_bytes);
	ck_assert_int_eq(size_of(idx), idx_bytes);
	ck_assert_int_eq(size_of(orphan), -1);
	ck_assert_int_eq(size_of(part), -1);
	ck_assert_int_eq(verify_count(run, "", "ok", &rc), 16);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(verify_count(run, "", "segment_leftover", &rc), 0);

	/* With a bad index line the entries are unknown: no segment is cut. */
	append(seg, "tail", 4);
	snprintf(idx, sizeof(idx), "%s/packed/w1.idx", run);
	append(idx, "garbage\n", 8);
	ck_assert_int_eq(verify_count(run, "--clean", "removed", &rc), 0);
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(size_of(seg), seg_bytes + 4);
}
END_TEST

START_TEST(test_version)
{
	static const char *const spellings[] = { "--version", "-V", "version" };
	char want[64];

	/* The header's version is CMake's project version. */
	snprintf(want, sizeof(want), "%d.%d.%d", ADUMP_VERSION_MAJOR, ADUMP_VERSION_MINOR,
		 ADUMP_VERSION_PATCH);
	ck_assert_str_eq(want, ADUMP_PROJECT_VERSION);
	snprintf(want, sizeof(want), "adump %s\n", ADUMP_PROJECT_VERSION);
	for (size_t i = 0; i < sizeof(spellings) / sizeof(spellings[0]); i++) {
		char *out, *err;

		ck_assert_int_eq(t_run_tool(TOOL, dir, "%s", spellings[i]), 0);
		out = t_slurp(dir, "stdout");
		err = t_slurp(dir, "stderr");
		ck_assert_str_eq(out, want);
		ck_assert_str_eq(err, "");
		free(out);
		free(err);
	}
	ck_assert_int_eq(t_run_tool(TOOL, dir, "--help"), 0);
	{
		char *help = t_slurp(dir, "stdout");

		ck_assert_ptr_nonnull(strstr(help, "--version"));
		free(help);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tool_cli");
	TCase *tc = tcase_create("garbage");

	tcase_set_timeout(tc, 240);
	/* Unchecked: the fixtures are made once, not once per case. */
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_fixtures_valid);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_verify_clean);
	tcase_add_loop_test(tc, test_garbage, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
