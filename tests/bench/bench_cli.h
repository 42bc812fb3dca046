/* SPDX-License-Identifier: Apache-2.0 */
/* What the `adump bench` suites share (test_bench_cli.c, test_bench_fio.c): the tool run in
 * a scratch directory per test, its --json last line parsed, and whether fio is installed. */
#ifndef ADUMP_TEST_BENCH_CLI_H
#define ADUMP_TEST_BENCH_CLI_H

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif

static char *dir;

/* The adump command with these arguments; stdout and stderr go to dir/stdout, dir/stderr. */
#define run(...) t_run_tool(ADUMP_TOOL, dir, __VA_ARGS__)
/* `adump bench` for a run that captures: a 16 MiB staging pool holds every workload here;
 * setting up the default 256 MiB took most of each run's time under TSan (7.6 s of a tiny
 * run, against 1.6 s). 128 KiB chunks keep the default's buffer count (pool / chunk): fewer
 * made ring-limit's million records twice as slow there. */
#define BENCH "bench --pool 16M --chunk 128K"

/* The last line of the last run's stdout, parsed. */
static inline json_object *last_json(void)
{
	char path[PATH_MAX], line[65536], last[65536] = "";
	FILE *f;
	json_object *obj;

	snprintf(path, sizeof(path), "%s/stdout", dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (line[0] != '\n')
			memcpy(last, line, strlen(line) + 1);
	fclose(f);
	obj = json_tokener_parse(last);
	ck_assert_msg(obj != NULL, "last line is not JSON: %s", last);
	return obj;
}

static inline json_object *field(json_object *o, const char *name)
{
	json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, name, &v), "no field '%s'", name);
	return v;
}

/* Whether fio is installed: the fio baselines run only then. */
static inline bool has_fio(void)
{
	return system("command -v fio >/dev/null 2>&1") == 0;
}

static inline void setup(void)
{
	dir = t_tmpdir("bench");
}

static inline void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

#endif
