/* SPDX-License-Identifier: Apache-2.0 */
/* `adump scan` and `adump compare --recursive` as programs (issue 22 items 2, 3, 5): exit
 * statuses, the table, JSON and the files written, on dumps written here. */
#include <check.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/adump.h"
#include "helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif
#define TOOL "timeout 60 " ADUMP_TOOL

#define N 16

static char *dir;

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

/* One dump in @sub: one input and one output of N elements of @dtype (float32 or float16
 * bits), named <type>.<name>.<task>.1.<ts>. */
static void dump(const char *sub, const char *type, const char *name, uint32_t task,
		 uint64_t ts, int32_t dtype, const void *in, const void *out)
{
	struct adump_tensor t[2] = { 0 };
	struct adump_op op = { 0 };
	const void *data[2] = { in, out };
	char path[PATH_MAX], file[512], d[PATH_MAX];

	for (int k = 0; k < 2; k++) {
		t[k].kind = k ? ADUMP_TENSOR_OUTPUT : ADUMP_TENSOR_INPUT;
		t[k].dtype = dtype;
		t[k].dim_count = 1;
		t[k].dims[0] = N;
		t[k].bytes = N * (dtype == ADUMP_DT_FLOAT16 ? 2 : 4);
	}
	op.op_type = type;
	op.op_name = name;
	op.stream_id = 1;
	op.task_id = task;
	op.timestamp_us = ts;
	op.tensor_count = 2;
	op.tensors = t;
	snprintf(d, sizeof(d), "%s/%s", dir, sub);
	mkdirs(d);
	ck_assert_int_gt(adump_dump_file_name(&op, file, sizeof(file)), 0);
	snprintf(path, sizeof(path), "%s/%s", d, file);
	ck_assert_int_eq(adump_dump_write_file(path, &op, data, 0640), 0);
}

static float ones[N], twos[N], nans[N], ramp[N];
static uint16_t half_ok[N], half_max[N];

static void setup(void)
{
	dir = t_tmpdir("scan-pairs");
	for (int i = 0; i < N; i++) {
		ones[i] = 1.0f;
		twos[i] = 2.0f;
		ramp[i] = (float)i - 8.0f;
		nans[i] = i == 3 ? NAN : 1.0f;
		half_ok[i] = 0x3c00;    /* 1.0 */
		half_max[i] = i == 5 ? 0x7bff : 0x3c00;  /* 65504 */
	}
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

static json_object *json_line(const char *text, int n)
{
	const char *p = text;

	for (int i = 0; i < n && p; i++) {
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	ck_assert_ptr_nonnull(p);
	return json_tokener_parse(p);
}

static const char *str_of(json_object *o, const char *key)
{
	json_object *v;

	ck_assert(json_object_object_get_ex(o, key, &v));
	return json_object_get_string(v);
}

START_TEST(test_scan_origin_and_reached)
{
	char *out;
	json_object *o;

	dump("nan", "MatMul", "mm1", 1, 1000000000000001ull, ADUMP_DT_FLOAT, ones, twos);
	dump("nan", "Add", "add1", 2, 1000000000000002ull, ADUMP_DT_FLOAT, twos, nans);
	dump("nan", "Relu", "relu1", 3, 1000000000000003ull, ADUMP_DT_FLOAT, nans, nans);
	dump("nan", "Cast", "cast1", 4, 1000000000000004ull, ADUMP_DT_FLOAT16, half_ok, half_max);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "scan --json --threads 2 %s/nan", dir), 1);
	out = t_slurp(dir, "stdout");
	o = json_line(out, 0);
	ck_assert_str_eq(str_of(o, "kind"), "origin");
	ck_assert_str_eq(str_of(o, "op_name"), "add1");
	ck_assert_str_eq(str_of(o, "first_tensor"), "output:0");
	json_object_put(o);
	o = json_line(out, 1);
	ck_assert_str_eq(str_of(o, "kind"), "reached");
	ck_assert_str_eq(str_of(o, "op_name"), "relu1");
	json_object_put(o);
	o = json_line(out, 2);
	/* float16 at its limit with finite inputs: made there too. */
	ck_assert_str_eq(str_of(o, "kind"), "origin");
	ck_assert_str_eq(str_of(o, "op_name"), "cast1");
	json_object_put(o);
	o = json_line(out, 3);
	ck_assert_ptr_nonnull(strstr(json_object_to_json_string(o), "\"origin\": \"add1\"") ?
			      "" : strstr(json_object_to_json_string(o), "\"origin\":\"add1\""));
	json_object_put(o);
	free(out);
	/* The table names the op that made them. */
	ck_assert_int_eq(t_run_tool(TOOL, dir, "scan %s/nan", dir), 1);
	out = t_slurp(dir, "stdout");
	ck_assert_ptr_nonnull(strstr(out, "first made by: add1"));
	free(out);
}
END_TEST

START_TEST(test_scan_clean_empty_unreadable)
{
	char path[PATH_MAX], *err;
	FILE *f;

	dump("clean", "MatMul", "mm1", 1, 1000000000000001ull, ADUMP_DT_FLOAT, ones, twos);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "scan %s/clean", dir), 0);
	snprintf(path, sizeof(path), "%s/empty", dir);
	mkdirs(path);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "scan %s/empty", dir), 1);
	err = t_slurp(dir, "stderr");
	ck_assert_ptr_nonnull(strstr(err, "no dump files"));
	free(err);
	snprintf(path, sizeof(path), "%s/clean/Add.add9.9.1.1000000000000009", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("garbage", f);
	fclose(f);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "scan %s/clean", dir), 3);
	err = t_slurp(dir, "stdout");
	ck_assert_ptr_nonnull(strstr(err, "unreadable"));
	free(err);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "scan"), 2);
}
END_TEST

static int lines_of(const char *path)
{
	size_t len;
	char *text = t_read_file(path, &len);
	int n = 0;

	ck_assert_ptr_nonnull(text);
	for (size_t i = 0; i < len; i++)
		n += text[i] == '\n';
	free(text);
	return n;
}

/* A packed capture's root (the directory given to the capture, holding its session's
 * directory and that one's packed/) is scanned through its index (issue 30); a root with two
 * packed sessions is refused by name, not called empty. */
START_TEST(test_scan_packed_root)
{
	char *out;

	ck_assert_int_eq(t_run_tool(TOOL, dir, "bench --out %s/pk --sink packed --streams 2 "
				    "--ops 8 --min-size 64 --max-size 8K --no-warmup", dir), 0);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "scan %s/pk", dir), 0);
	out = t_slurp(dir, "stdout");
	ck_assert_msg(strstr(out, "adump scan: 16 dumps, 0 anomalous ops, 0 unreadable"),
		      "%s", out);
	free(out);
	sleep(1);       /* the second session's directory is named by the second */
	ck_assert_int_eq(t_run_tool(TOOL, dir, "bench --out %s/pk --sink packed --streams 1 "
				    "--ops 2 --min-size 64 --max-size 8K --no-warmup", dir), 0);
	ck_assert_int_ne(t_run_tool(TOOL, dir, "scan %s/pk", dir), 0);
	out = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(out, "more than one packed capture"), "%s", out);
	free(out);
}
END_TEST

START_TEST(test_recursive_pairs)
{
	char out[PATH_MAX], *err, *json;
	json_object *o;

	/* Golden and mine alike but in step1; step2 in mine only. */
	for (int s = 0; s < 2; s++)
		for (int step = 0; step < 2; step++) {
			char sub[64];

			snprintf(sub, sizeof(sub), "%s/step%d/rank0/0", s ? "g" : "m", step);
			dump(sub, "MatMul", "mm1", 1, 1000000000000001ull, ADUMP_DT_FLOAT, ones,
			     s == 0 && step == 1 ? ramp : twos);
		}
	dump("m/step2/rank0/0", "MatMul", "mm1", 1, 1000000000000001ull, ADUMP_DT_FLOAT, ones,
	     twos);
	snprintf(out, sizeof(out), "%s/out", dir);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "compare -m %s/m -g %s/g --recursive -out %s --json",
				    dir, dir, out), 2);
	err = t_slurp(dir, "stderr");
	ck_assert_ptr_nonnull(strstr(err, "step2/rank0/0 has no counterpart"));
	ck_assert_ptr_nonnull(strstr(err, "first divergent pair: step1/rank0/0 (step 1, rank 0)"));
	free(err);
	json = t_slurp(dir, "stdout");
	o = json_line(json, 0);
	ck_assert_str_eq(str_of(o, "pair"), "step0/rank0/0");
	json_object_put(o);
	o = json_line(json, 1);
	ck_assert_str_eq(str_of(o, "pair"), "step1/rank0/0");
	ck_assert_ptr_nonnull(strstr(json_object_to_json_string(o), "mm1:output:0"));
	json_object_put(o);
	o = json_line(json, 2);
	ck_assert_str_eq(str_of(o, "pair"), "step2/rank0/0");
	ck_assert_str_eq(str_of(o, "golden") ? str_of(o, "golden") : "null", "null");
	json_object_put(o);
	free(json);
	ck_assert_uint_eq(t_count_files(out, ".csv"), 3);      /* two results, one summary */
	/* Again within the same second: both runs' files kept. */
	ck_assert_int_eq(t_run_tool(TOOL, dir, "compare -m %s/m -g %s/g --recursive -out %s "
				    "--quiet", dir, dir, out), 2);
	ck_assert_uint_eq(t_count_files(out, ".csv"), 6);
	{
		char cmd[PATH_MAX + 64], path[PATH_MAX];
		FILE *p;

		snprintf(cmd, sizeof(cmd), "ls %s/summary_*.csv | head -1", out);
		p = popen(cmd, "r");
		ck_assert_ptr_nonnull(fgets(path, sizeof(path), p));
		pclose(p);
		path[strcspn(path, "\n")] = '\0';
		ck_assert_int_eq(lines_of(path), 4);    /* header, three pairs */
	}
}
END_TEST

START_TEST(test_latest_wins_and_clash)
{
	char *err, out[PATH_MAX];

	/* CANN: one name twice without call numbers: the latest compared, the other named. */
	dump("cann/m", "Conv", "conv1", 1, 1000000000000001ull, ADUMP_DT_FLOAT, ones, nans);
	dump("cann/m", "Conv", "conv1", 2, 1000000000000002ull, ADUMP_DT_FLOAT, ones, twos);
	dump("cann/g", "Conv", "conv1", 1, 1000000000000002ull, ADUMP_DT_FLOAT, ones, twos);
	snprintf(out, sizeof(out), "%s/out2", dir);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "compare -m %s/cann/m -g %s/cann/g -out %s", dir,
				    dir, out), 0);
	err = t_slurp(dir, "stderr");
	ck_assert_ptr_nonnull(strstr(err, "the latest"));
	ck_assert_ptr_nonnull(strstr(err, "Conv.conv1.1.1.1000000000000001"));
	free(err);
	/* Call numbers, one timestamp twice: cannot be told apart, both named, status 2. */
	dump("clash/m", "Linear", "Module.l.Linear.forward.0", 1, 1000000000000001ull,
	     ADUMP_DT_FLOAT, ones, twos);
	dump("clash/m", "Linear", "Module.l.Linear.forward.0", 2, 1000000000000001ull,
	     ADUMP_DT_FLOAT, ones, twos);
	dump("clash/g", "Linear", "Module.l.Linear.forward.0", 1, 1000000000000001ull,
	     ADUMP_DT_FLOAT, ones, twos);
	ck_assert_int_eq(t_run_tool(TOOL, dir, "compare -m %s/clash/m -g %s/clash/g -out %s", dir,
				    dir, out), 2);
	err = t_slurp(dir, "stderr");
	ck_assert_ptr_nonnull(strstr(err, "cannot be told apart"));
	ck_assert_ptr_nonnull(strstr(err, "Linear.Module_l_Linear_forward_0.1.1.1000000000000001"));
	ck_assert_ptr_nonnull(strstr(err, "Linear.Module_l_Linear_forward_0.2.1.1000000000000001"));
	free(err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("scan_pairs");
	TCase *tc = tcase_create("cli");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_scan_origin_and_reached);
	tcase_add_test(tc, test_scan_clean_empty_unreadable);
	tcase_add_test(tc, test_scan_packed_root);
	tcase_add_test(tc, test_recursive_pairs);
	tcase_add_test(tc, test_latest_wins_and_clash);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
