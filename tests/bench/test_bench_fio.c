/* SPDX-License-Identifier: Apache-2.0 */
/* `adump bench` and fio: fio as the ceiling (missing: a usage error for --baselines fio,
 * skipped by --compare; present: both fio baselines report and the faster is the ceiling),
 * fio alone (--fio-only, as bench/alternate.py runs it), fio's psync jobs, and fio and the
 * capture where io_uring is refused. Correctness only: no timing is asserted. */
#include <errno.h>
#include <unistd.h>

#include "bench_cli.h"

/* --baselines fio without fio on PATH: a usage error that says why; "all" (as --compare)
 * runs on without fio and says so. */
START_TEST(test_fio_missing)
{
	char tool[PATH_MAX + 64];
	json_object *o, *b;
	char *text;

	/* A PATH holding only the empty test directory: no fio there. */
	snprintf(tool, sizeof(tool), "PATH=%s %s", dir, ADUMP_TOOL);
	ck_assert_int_eq(t_run_tool(tool, dir, "bench --streams 1 --ops 1 --out %s/d --baselines "
				    "fio --json", dir), 2);
	text = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(text, "fio is not installed") != NULL, "stderr: %s", text);
	free(text);
	ck_assert_int_eq(t_run_tool(tool, dir, "bench --streams 1 --ops 1 --out %s/d --baselines "
				    "create,fio", dir), 2);
	ck_assert_int_eq(t_run_tool(tool, dir, "bench --fio-only buffered --total 1M --out %s/d",
				    dir), 2);
	text = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(text, "--fio-only: fio is not installed") != NULL, "stderr: %s", text);
	free(text);
	/* "all" runs ring-limit's million records: not under the sanitizers (scripts/test.sh
	 * shrinks their sizes through ADUMP_TEST_MAX_BYTES), where it alone takes 20 s. */
	if (getenv("ADUMP_TEST_MAX_BYTES"))
		return;
	ck_assert_int_eq(t_run_tool(tool, dir, BENCH " --profile tiny --streams 1 --ops 2 --out "
				    "%s/d --baselines create,all --json", dir), 0);
	text = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(text, "fio baselines are skipped") != NULL, "stderr: %s", text);
	free(text);
	o = last_json();
	b = field(o, "baselines");
	ck_assert(json_object_get_boolean(field(o, "fio_skipped")));
	ck_assert(json_object_get_type(field(o, "ceiling")) == json_type_null);
	ck_assert(!json_object_object_get_ex(b, "fio_buffered", NULL));
	json_object_put(o);
}
END_TEST

/* A tiny real fio run: both fio baselines report, the ceiling is the faster, fio's files are
 * gone. */
START_TEST(test_fio_run)
{
	char path[PATH_MAX];
	json_object *o, *b, *ceiling;
	double best = 0;

	ck_assert_int_eq(run(BENCH " --profile tiny --streams 2 --ops 5 --out %s/d --baselines fio "
			     "--json", dir), 0);
	o = last_json();
	b = field(o, "baselines");
	ck_assert(!json_object_get_boolean(field(o, "fio_skipped")));
	for (int k = 0; k < 2; k++) {
		json_object *f = field(b, k ? "fio_direct" : "fio_buffered");
		double gbps = json_object_get_double(field(f, "gbps"));

		ck_assert_int_eq(json_object_get_int(field(f, "error")), 0);
		/* The capture's bytes, rounded up to fio's whole blocks. */
		ck_assert_int_ge(json_object_get_int64(field(f, "bytes")),
				 json_object_get_int64(field(o, "bytes")));
		ck_assert(json_object_get_double(field(f, "seconds")) > 0);
		/* Timed as the capture: fio's writes, then the syncfs after them. */
		ck_assert(json_object_get_double(field(f, "seconds_unsynced")) > 0);
		ck_assert(json_object_get_double(field(f, "seconds")) >=
			  json_object_get_double(field(f, "seconds_unsynced")));
		ck_assert(gbps > 0);
		ck_assert(json_object_get_double(field(f, "cpu_seconds")) > 0);
		ck_assert(json_object_get_double(field(f, "cpu_seconds_per_gb")) > 0);
		ck_assert(json_object_get_double(field(f, "ratio")) > 0);
		if (gbps > best)
			best = gbps;
	}
	ceiling = field(o, "ceiling");
	ck_assert_double_eq_tol(json_object_get_double(field(ceiling, "gbps")), best, 1e-6);
	ck_assert(json_object_get_double(field(ceiling, "ratio")) > 0);
	ck_assert(json_object_get_double(field(ceiling, "cpu_seconds_per_gb")) > 0);
	ck_assert_str_eq(json_object_get_string(field(ceiling, "baseline")),
			 json_object_get_double(field(field(b, "fio_direct"), "gbps")) == best ?
				 "fio_direct" : "fio_buffered");
	json_object_put(o);
	/* fio's data files and reports are removed, and the directory made for them. */
	snprintf(path, sizeof(path), "%s/d/baselines/fio", dir);
	ck_assert_int_eq(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/d/baselines", dir);
	ck_assert_int_eq(t_count_files(path, ""), 0);
}
END_TEST

/* One --fio-only run: fio alone, as the fio baselines run it, on @total bytes in dir/f;
 * the JSON line's fields. @bytes: what fio must have written (whole blocks). */
static void fio_only_check(const char *io, const char *total, long long bytes)
{
	char path[PATH_MAX];
	json_object *o;

	ck_assert_int_eq(run("bench --fio-only %s --total %s --out %s/f --json", io, total, dir),
			 0);
	o = last_json();
	ck_assert_str_eq(json_object_get_string(field(o, "fio")), io);
	ck_assert_int_eq(json_object_get_int(field(o, "error")), 0);
	ck_assert_int_eq(json_object_get_int64(field(o, "bytes")), bytes);
	/* Timed as the capture: fio's writes, then the syncfs after them. */
	ck_assert(json_object_get_double(field(o, "seconds_unsynced")) >= 0);
	ck_assert(json_object_get_double(field(o, "seconds")) > 0);
	ck_assert(json_object_get_double(field(o, "seconds")) >=
		  json_object_get_double(field(o, "seconds_unsynced")));
	ck_assert(json_object_get_double(field(o, "cpu_seconds")) > 0);
	ck_assert(json_object_get_double(field(o, "gbps")) > 0);
	json_object_put(o);
	/* fio's data file and report are gone. */
	snprintf(path, sizeof(path), "%s/f", dir);
	ck_assert_int_eq(t_count_files(path, ""), 0);
}

/* --fio-only (bench/alternate.py's fio): 1 MiB blocks rounded up to whole ones, smaller
 * sizes in whole 4 KiB blocks; usage errors for what it does not take. */
START_TEST(test_fio_only)
{
	fio_only_check("direct", "3000000", 3ll << 20);
	fio_only_check("buffered", "5000", 8192);
	ck_assert_int_eq(run("bench --fio-only sideways --total 1M --out %s/f", dir), 2);
	ck_assert_int_eq(run("bench --fio-only direct --out %s/f", dir), 2);
	ck_assert_int_eq(run("bench --fio-only direct --total 1M"), 2);
	ck_assert_int_eq(run("bench --fio-only direct --total 1M --compare --out %s/f", dir), 2);
}
END_TEST

/* fio with psync: jobs that write the file in parts, exactly the bytes one job would write;
 * said in the JSON line. */
START_TEST(test_fio_psync)
{
	json_object *o;

	ck_assert_int_eq(run("bench --fio-only direct --fio-engine psync --fio-jobs 2 --total "
			     "7000000 --out %s/f --json", dir), 0);
	o = last_json();
	ck_assert_str_eq(json_object_get_string(field(o, "engine")), "psync");
	ck_assert_str_eq(json_object_get_string(field(o, "engine_why")), "configured");
	ck_assert_int_eq(json_object_get_int(field(o, "jobs")), 2);
	ck_assert_int_eq(json_object_get_int(field(o, "error")), 0);
	/* 3 MiB for the first job, the rest in whole 1 MiB blocks for the second: 7 MiB, as
	 * one io_uring job writes it. */
	ck_assert_int_eq(json_object_get_int64(field(o, "bytes")), 7ll << 20);
	json_object_put(o);
	ck_assert_int_eq(run("bench --fio-only direct --fio-engine sideways --total 1M --out %s/f",
			     dir), 2);
	ck_assert_int_eq(run("bench --fio-only direct --fio-jobs 0 --total 1M --out %s/f", dir), 2);
}
END_TEST

#ifdef ADUMP_NO_URING
/* Where io_uring is refused (adump_no_uring: a seccomp filter, as in a container): the
 * capture writes with pwrite and says why, fio measures with psync, nothing fails. */
START_TEST(test_uring_refused)
{
	json_object *o, *b;

	ck_assert_int_eq(t_run_tool(ADUMP_NO_URING " " ADUMP_TOOL, dir, BENCH " --profile tiny "
				    "--streams 2 --ops 5 --out %s/d --baselines fio,disk --no-sync --json",
				    dir), 0);
	o = last_json();
	ck_assert_str_eq(json_object_get_string(field(o, "backend")), "pwrite");
	ck_assert_str_eq(json_object_get_string(field(o, "backend_why")), "refused");
	ck_assert_int_eq(json_object_get_int(field(o, "backend_error")), -EPERM);
	ck_assert_str_eq(json_object_get_string(field(o, "fio_engine")), "psync");
	ck_assert_str_eq(json_object_get_string(field(o, "fio_engine_why")), "refused");
	ck_assert_int_ge(json_object_get_int(field(o, "fio_jobs")), 1);
	b = field(o, "baselines");
	ck_assert_int_eq(json_object_get_int(field(field(b, "fio_buffered"), "error")), 0);
	ck_assert_int_eq(json_object_get_int(field(field(b, "disk_limit"), "error")), 0);
	ck_assert(json_object_get_double(field(field(b, "disk_limit"), "gbps")) > 0);
	json_object_put(o);
	ck_assert_int_eq(t_run_tool(ADUMP_NO_URING " " ADUMP_TOOL, dir, "bench --fio-only buffered "
				    "--total 2M --out %s/f --no-sync --json", dir), 0);
	o = last_json();
	ck_assert_str_eq(json_object_get_string(field(o, "engine")), "psync");
	ck_assert_str_eq(json_object_get_string(field(o, "engine_why")), "refused");
	ck_assert_int_eq(json_object_get_int64(field(o, "bytes")), 2ll << 20);
	json_object_put(o);
}
END_TEST
#endif

int main(void)
{
	Suite *s = suite_create("bench_fio");
	TCase *tc = tcase_create("fio");
	int ret;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_fio_missing);
	if (has_fio()) {
		t_tcase_add_test_needing(tc, T_DIRECT, test_fio_run);
		t_tcase_add_test_needing(tc, T_DIRECT, test_fio_only);
		t_tcase_add_test_needing(tc, T_DIRECT, test_fio_psync);
#ifdef ADUMP_NO_URING
		tcase_add_test(tc, test_uring_refused);
#endif
	} else {
		printf("test_fio_run, test_fio_only: skipped, fio is not installed\n");
	}
	suite_add_tcase(s, tc);
	ret = t_run_suite(s);
	/* As a refused feature does: the rest passed, but not everything ran. */
	return ret == 0 && !has_fio() ? 77 : ret;
}
