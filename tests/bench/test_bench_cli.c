/* SPDX-License-Identifier: Apache-2.0 */
/* `adump bench` as a program: exit codes, the --json last line and its fields, --compare on
 * a tiny workload (every baseline runs and reports, the channel hand-off beside ring-limit),
 * the naive baseline's files are valid dumps, the disk pass --compute-gbps auto halves.
 * fio, as the ceiling and alone, is test_bench_fio.c's.
 * Correctness only: no timing is asserted. */
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_cli.h"

START_TEST(test_help_and_bad_options)
{
	ck_assert_int_eq(run("bench --help"), 0);
	ck_assert_int_eq(run("bench --profile nonsense --out %s/d", dir), 2);
	ck_assert_int_eq(run("bench --sink nowhere --out %s/d", dir), 2);
	ck_assert_int_eq(run("bench --compute-gbps auto --out %s/d", dir), 2);
	ck_assert_int_eq(run("bench --profile transformer --describe"), 0);
}
END_TEST

/* The core issue's acceptance form, shrunk: exit 0, and the required JSON fields. */
START_TEST(test_json_fields)
{
	static const char *const required[] = {
		"files", "bytes", "seconds", "gbps", "failed", "tensors", "files_per_s",
		"tensors_per_s", "peak_rss_bytes", "producer_wait_p99_us", "cpu_seconds",
		"producer_wait_p50_us", "producer_wait_max_us", "enqueue_p99_us",
	};
	json_object *o;

	ck_assert_int_eq(run(BENCH " --streams 3 --ops 7 --min-size 1K --max-size 64K "
			     "--seed %llu --out %s/d --json",
			     (unsigned long long)(t_seed() % 1000 + 1), dir),
			 0);
	o = last_json();
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		field(o, required[i]);
	ck_assert_int_eq(json_object_get_int64(field(o, "files")), 21);
	ck_assert_int_eq(json_object_get_int64(field(o, "failed")), 0);
	ck_assert_int_eq(json_object_get_int64(field(o, "tensors")), 63);
	ck_assert_int_gt(json_object_get_int64(field(o, "bytes")), 21 * 3 * 1024);
	ck_assert_int_eq(t_count_files(dir, "") >= 21, 1);
	json_object_put(o);
}
END_TEST

/* ring-limit (--baselines ring, in --compare's set) also puts the same records through the
 * pipeline's own channel and reports it inside ring_limit, as a rate and as a fraction of the
 * bare ring pair; then the bare pair again, its consumer reading every record. */
static void ring_handoff_check(json_object *ring)
{
	double ratio;

	ck_assert_int_eq(json_object_get_int(field(ring, "error")), 0);
	ck_assert(json_object_get_double(field(ring, "records_per_s")) > 0);
	ck_assert_int_eq(json_object_get_int(field(ring, "chan_error")), 0);
	ck_assert_int_eq(json_object_get_int64(field(ring, "chan_records")),
			 json_object_get_int64(field(ring, "records")));
	ck_assert_int_ge(json_object_get_int64(field(ring, "chan_buffers")), 2);
	ck_assert(json_object_get_double(field(ring, "chan_seconds")) > 0);
	ck_assert(json_object_get_double(field(ring, "chan_records_per_s")) > 0);
	ck_assert(json_object_get_type(field(ring, "chan_ratio")) == json_type_double);
	ratio = json_object_get_double(field(ring, "chan_ratio"));
	ck_assert_msg(isfinite(ratio) && ratio > 0, "chan_ratio %f", ratio);
	ck_assert_int_eq(json_object_get_int(field(ring, "read_error")), 0);
	ck_assert(json_object_get_double(field(ring, "read_records_per_s")) > 0);
	ratio = json_object_get_double(field(ring, "chan_ratio_read"));
	ck_assert_msg(isfinite(ratio) && ratio > 0, "chan_ratio_read %f", ratio);
}

/* A baseline's "ratio" (printed with 4 decimals) against its own seconds over the capture's
 * (6 decimals), per @unit ("bytes", "records" or NULL: per file or op) of each run: the figure
 * a tiny or loaded baseline gives may round to 0.0000, so it is checked as the quotient it
 * stands for, within what both roundings allow, never as "> 0". */
static void ratio_check(json_object *top, json_object *one, const char *unit)
{
	double ratio, base_s, top_s, scale = 1.0, want, tol;

	ck_assert(json_object_get_type(field(one, "ratio")) == json_type_double);
	ratio = json_object_get_double(field(one, "ratio"));
	base_s = json_object_get_double(field(one, "seconds"));
	top_s = json_object_get_double(field(top, "seconds"));
	ck_assert_msg(isfinite(ratio) && ratio >= 0, "ratio %f", ratio);
	ck_assert(base_s > 0 && top_s > 0);
	if (unit && json_object_get_int64(field(one, unit)))
		scale = (double)json_object_get_int64(field(top, unit)) /
			(double)json_object_get_int64(field(one, unit));
	want = base_s * scale / top_s;
	/* Each printed second is within 5e-7 of the one behind the ratio. */
	tol = 5e-5 + want * (1e-6 / base_s + 1e-6 / top_s) * 1.01;
	ck_assert_msg(fabs(ratio - want) <= tol, "ratio %.4f, seconds say %.6f (+- %.6f)", ratio,
		      want, tol);
}

/* --compare on a tiny workload: every baseline runs on the same ops and reports. */
START_TEST(test_compare_tiny)
{
	static const char *const baselines[] = { "naive", "disk_limit", "create_limit",
						 "publish_limit", "ring_limit", "nodump" };
	json_object *o, *b, *ov;
	char pattern[PATH_MAX], *text;
	glob_t g;

	ck_assert_int_eq(run(BENCH " --profile tiny --streams 2 --total 64K "
			     "--compute-gbps 1 --compare --json --out %s/d",
			     dir),
			 0);
	o = last_json();
	b = field(o, "baselines");
	for (size_t i = 0; i < sizeof(baselines) / sizeof(baselines[0]); i++) {
		json_object *one = field(b, baselines[i]);

		ck_assert_int_eq(json_object_get_int(field(one, "error")), 0);
		ck_assert(json_object_get_double(field(one, "seconds")) > 0);
		ratio_check(o, one, !strcmp(baselines[i], "disk_limit") ? "bytes" :
				    !strcmp(baselines[i], "ring_limit") ? "records" : NULL);
	}
	/* Same ops, same files and bytes. */
	ck_assert_int_eq(json_object_get_int64(field(field(b, "naive"), "files")),
			 json_object_get_int64(field(o, "files")));
	ck_assert_int_eq(json_object_get_int64(field(field(b, "naive"), "bytes")),
			 json_object_get_int64(field(o, "bytes")));
	ck_assert_int_eq(json_object_get_int64(field(field(b, "create_limit"), "files")),
			 json_object_get_int64(field(o, "files")));
	ck_assert_int_eq(json_object_get_int64(field(field(b, "publish_limit"), "files")),
			 json_object_get_int64(field(o, "files")));
	ck_assert_int_ge(json_object_get_int64(field(field(b, "ring_limit"), "records")),
			 json_object_get_int64(field(o, "records")));
	ring_handoff_check(field(b, "ring_limit"));
	/* The human table has the channel hand-off's row (read now: the next run replaces
	 * stdout). */
	text = t_slurp(dir, "stdout");
	ck_assert_ptr_nonnull(strstr(text, "chan hand-off"));
	free(text);
	/* The untimed warm-up ran; the last kernel ended inside the capture's time. */
	ck_assert(json_object_get_double(field(o, "warmup_seconds")) > 0);
	ck_assert(json_object_get_double(field(o, "kernels_seconds")) > 0);
	ck_assert(json_object_get_double(field(o, "kernels_seconds")) <=
		  json_object_get_double(field(o, "seconds")));
	/* A given R, not auto: no disk pass to name. */
	ck_assert(json_object_get_type(field(o, "compute_from")) == json_type_null);
	ov = field(o, "overhead");
	ck_assert(json_object_get_type(field(ov, "adump")) == json_type_double);
	/* Split at the last kernel's end: the two parts add up to the whole. */
	ck_assert_double_eq_tol(json_object_get_double(field(ov, "adump_kernels")) +
					json_object_get_double(field(ov, "adump_after_kernels")),
				json_object_get_double(field(ov, "adump")), 2e-4);
	ck_assert(json_object_get_type(field(ov, "naive")) == json_type_double);
	/* The naive dumper writes real dump files, and it and create-limit each into a new
	 * directory of their own (never over an earlier run's files). */
	snprintf(pattern, sizeof(pattern), "%s/d/baselines/naive-*", dir);
	ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
	ck_assert_uint_eq(g.gl_pathc, 1);
	ck_assert_int_eq(run("verify --quiet %s", g.gl_pathv[0]), 0);
	globfree(&g);
	snprintf(pattern, sizeof(pattern), "%s/d/baselines/create-*/f0", dir);
	ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
	ck_assert_uint_eq(g.gl_pathc, 1);
	globfree(&g);
	/* publish-limit's files are linked in under their names, every one of them. */
	snprintf(pattern, sizeof(pattern), "%s/d/baselines/publish-*/f*", dir);
	ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
	ck_assert_uint_eq(g.gl_pathc, (size_t)json_object_get_int64(field(o, "files")));
	globfree(&g);
	json_object_put(o);
}
END_TEST

/* --compute-gbps auto: R (per stream, 2 streams) is half of the faster disk pass run before
 * the capture, and "compute_from" names it. Unless --io buffered, that includes the
 * disk-limit-direct pass where the filesystem takes O_DIRECT; where it refuses O_DIRECT,
 * disk-limit alone, said once on stderr. */
static void compute_auto_check(const char *tool, const char *io, bool is_direct_expected)
{
	json_object *o, *b, *from = NULL, *direct = NULL;
	double best;
	char *text;

	ck_assert_int_eq(t_run_tool(tool, dir, BENCH " --profile tiny --streams 2 --total 64K "
				    "--compute-gbps auto --baselines disk --io %s --json "
				    "--out %s/d", io, dir), 0);
	o = last_json();
	b = field(o, "baselines");
	best = json_object_get_double(field(field(b, "disk_limit"), "gbps_before"));
	ck_assert_msg(json_object_object_get_ex(b, "disk_limit_direct", &direct) ==
			      is_direct_expected, "--io %s: disk_limit_direct %s", io,
		      direct ? "ran" : "did not run");
	from = field(b, "disk_limit");
	if (direct) {
		ck_assert_int_eq(json_object_get_int(field(direct, "error")), 0);
		if (json_object_get_double(field(direct, "gbps_before")) > best) {
			best = json_object_get_double(field(direct, "gbps_before"));
			from = direct;
		}
	}
	ck_assert(best > 0);
	ck_assert_str_eq(json_object_get_string(field(o, "compute_from")),
			 from == direct ? "disk_limit_direct" : "disk_limit");
	ck_assert_double_eq_tol(json_object_get_double(field(o, "compute_gbps")) * 2 * 2, best,
				best * 1e-3 + 4e-6);
	json_object_put(o);
	text = t_slurp(dir, "stderr");
	if (!strcmp(io, "buffered") || is_direct_expected) {
		ck_assert_msg(strstr(text, "refuses O_DIRECT") == NULL, "stderr: %s", text);
	} else {
		const char *first = strstr(text, "refuses O_DIRECT: disk-direct skipped; --compute-gbps "
						  "auto takes half");

		ck_assert_msg(first && !strstr(first + 1, "refuses O_DIRECT"), "stderr: %s", text);
	}
	free(text);
}

START_TEST(test_compute_auto)
{
	bool is_direct = t_feature_probe(T_DIRECT) == 0;

	if (!is_direct)
		printf("test_compute_auto: O_DIRECT refused here: disk-limit alone\n");
	compute_auto_check(ADUMP_TOOL, "auto", is_direct);
	compute_auto_check(ADUMP_TOOL, "direct", is_direct);
	compute_auto_check(ADUMP_TOOL, "buffered", false);
}
END_TEST

#ifdef T_HAVE_TESTPOINTS
/* A dump filesystem that refuses O_DIRECT (kernel 6.18 takes it even on tmpfs), played by
 * testpoints armed through ADUMP_TESTPOINTS: the bench's (its probe of the dump directory and
 * disk-limit's O_DIRECT open) and the pipeline's (the capture's O_DIRECT opens). */
#define REFUSING_TOOL "ADUMP_TESTPOINTS=bench.direct=22,file.direct_open=22 " ADUMP_TOOL

/* disk-direct that --compute-gbps auto or --compare --io direct added is skipped, said so,
 * and the run exits 0 without its row; named in --baselines, it fails and says why. */
START_TEST(test_direct_refused)
{
	json_object *o, *b;
	char *text;

	compute_auto_check(REFUSING_TOOL, "direct", false);
	compute_auto_check(REFUSING_TOOL, "auto", false);
	ck_assert_int_eq(t_run_tool(REFUSING_TOOL, dir, BENCH " --profile tiny --streams 2 --total "
				    "64K --compute-gbps 1 --baselines disk-direct --io direct "
				    "--json --out %s/d", dir), 1);
	text = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(text, "refuses O_DIRECT: disk-direct, named in --baselines, fails") !=
		      NULL, "stderr: %s", text);
	free(text);
	o = last_json();
	b = field(field(o, "baselines"), "disk_limit_direct");
	ck_assert_int_eq(json_object_get_int(field(b, "error")), -22);
	json_object_put(o);
	/* --compare's default set runs ring-limit's million records: not under the sanitizers
	 * (ADUMP_TEST_MAX_BYTES, scripts/test.sh), where that alone takes 20 s. */
	if (getenv("ADUMP_TEST_MAX_BYTES"))
		return;
	ck_assert_int_eq(t_run_tool(REFUSING_TOOL, dir, BENCH " --profile tiny --streams 2 --total "
				    "64K --compute-gbps 1 --compare --io direct --json --out %s/d",
				    dir), 0);
	text = t_slurp(dir, "stderr");
	ck_assert_msg(strstr(text, "refuses O_DIRECT: disk-direct skipped\n") != NULL, "stderr: %s",
		      text);
	ck_assert_msg(!has_fio() || strstr(text, "refuses O_DIRECT: fio-direct skipped\n") != NULL,
		      "stderr: %s", text);
	free(text);
	o = last_json();
	b = field(o, "baselines");
	ck_assert(!json_object_object_get_ex(b, "disk_limit_direct", NULL));
	ck_assert(!json_object_object_get_ex(b, "fio_direct", NULL));
	ck_assert_int_eq(json_object_get_int(field(field(b, "disk_limit"), "error")), 0);
	ck_assert_int_eq(json_object_get_int64(field(o, "failed")), 0);
	json_object_put(o);
}
END_TEST
#endif

/* --ops with a profile, the callback sink, relu data and --no-warmup. (The transformer and
 * huge profiles need hundreds of MiB of simulated device memory: not run here.) */
START_TEST(test_profiles_run)
{
	json_object *o;

	ck_assert_int_eq(run(BENCH " --profile tiny --streams 2 --ops 5 --sink callback --json"),
			 0);
	o = last_json();
	ck_assert_int_eq(json_object_get_int64(field(o, "files")), 10);
	ck_assert_str_eq(json_object_get_string(field(o, "profile")), "tiny");
	json_object_put(o);
	ck_assert_int_eq(run(BENCH " --streams 2 --ops 3 --data relu --sink callback --no-warmup "
			     "--json"), 0);
	o = last_json();
	ck_assert_int_eq(json_object_get_int64(field(o, "files")), 6);
	ck_assert(json_object_get_double(field(o, "warmup_seconds")) == 0);
	json_object_put(o);
}
END_TEST

/* --producer host and host-nocopy: the same ops through host streams; with the callback
 * sink, --verify checks every file byte for byte; usage errors for what does not apply. */
START_TEST(test_host_producer)
{
	json_object *o;
	char *text;

	ck_assert_int_eq(run(BENCH " --producer host --profile tiny --streams 2 --ops 40 "
			     "--sink callback --verify --json"), 0);
	o = last_json();
	ck_assert_str_eq(json_object_get_string(field(o, "producer")), "host");
	ck_assert_int_eq(json_object_get_int64(field(o, "files")), 80);
	ck_assert_int_eq(json_object_get_int64(field(o, "verified_files")), 80);
	ck_assert_int_eq(json_object_get_int64(field(o, "verify_bad")), 0);
	json_object_put(o);
	ck_assert_int_eq(run(BENCH " --producer host-nocopy --streams 3 --ops 4 --chunk 64K "
			     "--sink callback --verify"), 0);
	text = t_slurp(dir, "stdout");
	ck_assert_ptr_nonnull(strstr(text, "verify     12 files rebuilt byte for byte"));
	ck_assert_ptr_nonnull(strstr(text, "released   12, 0 of them failed"));
	free(text);
	ck_assert_int_eq(run(BENCH " --producer host --streams 2 --ops 3 --out %s/d --json", dir),
			 0);
	o = last_json();
	ck_assert_int_eq(json_object_get_int64(field(o, "files")), 6);
	json_object_put(o);
	ck_assert_int_eq(run("verify %s/d", dir), 0);
	ck_assert_int_eq(run("bench --producer gpu --out %s/d", dir), 2);
	ck_assert_int_eq(run("bench --verify --sink callback"), 2);
	ck_assert_int_eq(run("bench --producer host --verify --out %s/d", dir), 2);
	ck_assert_int_eq(run("bench --producer host --compute-gbps 1 --out %s/d", dir), 2);
	ck_assert_int_eq(run("bench --producer host --baselines naive --out %s/d", dir), 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bench_cli");
	TCase *tc = tcase_create("cli");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_help_and_bad_options);
	tcase_add_test(tc, test_json_fields);
	tcase_add_test(tc, test_compare_tiny);
	tcase_add_test(tc, test_compute_auto);
#ifdef T_HAVE_TESTPOINTS
	tcase_add_test(tc, test_direct_refused);
#else
	printf("test_direct_refused: skipped, testpoints are not compiled in\n");
#endif
	tcase_add_test(tc, test_profiles_run);
	tcase_add_test(tc, test_host_producer);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
