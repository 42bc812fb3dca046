/* SPDX-License-Identifier: Apache-2.0 */
/* The soak, at CI size (the soak itself is bench/soak.c, which `adump bench --verify-crc`
 * runs at any size): 16 streams, 256 MiB of tensors (32 MiB in sanitizer builds, where
 * ADUMP_TEST_MAX_BYTES also caps sizes): sizes log-uniform from 4 bytes (one float, the
 * smallest tensor an Add takes) to 1 MiB, and one 64 MiB tensor (at log-uniform sizes up to
 * 64 MiB, 256 MiB would be a dozen ops). The CRC32C of every tensor is taken at launch and
 * recomputed once from the dump files and once, in a second run, from the callback chunks:
 * every op must be found exactly once, with all three CRCs equal. Host RSS is sampled at each
 * quarter of the launched ops and at the end: in both runs every sample after the first
 * quarter must be within 5 % of it (the callback run's verifier streams each file, keeping
 * only its header).
 * Not under sanitizers, whose quarantine and shadow memory grow with every allocation.
 * Seeded (ADUMP_TEST_SEED). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "adump/adump.h"
#include "bench/bench.h"
#include "helpers.h"

#define STREAMS 16
#define MAX_TENSOR (64ull << 20)        /* the one largest tensor */
#define MAX_DRAWN (1ull << 20)          /* the log-uniform draws */
#define TOTAL (256ull << 20)
#define SANITIZER_TOTAL (32ull << 20)

static char *dir;
static uint64_t seed;
static bool is_sanitized;

static void setup(void)
{
	dir = t_tmpdir("soak");
	ck_assert_ptr_nonnull(dir);
	seed = t_seed();
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

static struct adump_bench_soak *soak_make(void)
{
	const char *max_env = getenv("ADUMP_TEST_MAX_BYTES");
	struct adump_bench_soak_opts o = {
		.stream_count = STREAMS, .total = TOTAL, .max_bytes = MAX_TENSOR,
		.drawn_max = MAX_DRAWN, .seed = seed,
	};
	struct adump_bench_soak *k;

	if (max_env && strtoull(max_env, NULL, 0)) {
		is_sanitized = true;
		o.total = SANITIZER_TOTAL;
		if (strtoull(max_env, NULL, 0) < o.max_bytes)
			o.max_bytes = strtoull(max_env, NULL, 0);
		if (o.max_bytes < o.drawn_max)
			o.drawn_max = o.max_bytes;
	}
	/* Quarters of the ops, not of the bytes: the first op alone is 3/4 of the bytes. */
	o.is_step_ops = true;
	o.rss_step = 1;
	ck_assert_int_eq(adump_bench_soak_create(&o, &k), 0);
	adump_bench_soak_set_step(k, adump_bench_soak_ops(k) / 4);
	return k;
}

/* Every op found exactly once, no CRC differing; the RSS curve printed. */
static void check_result(struct adump_bench_soak *k, const char *run, bool is_rss_checked)
{
	struct adump_bench_soak_result r;

	adump_bench_soak_result(k, &r);
	ck_assert_msg(r.corrupt == 0, "%s: %llu corrupt (seed %llu), first %s", run,
		      (unsigned long long)r.corrupt, (unsigned long long)seed, r.first_corrupt);
	ck_assert_msg(r.lost == 0 && r.duplicated == 0, "%s: %llu lost (first %s), %llu "
		      "duplicated (seed %llu)", run, (unsigned long long)r.lost, r.first_lost,
		      (unsigned long long)r.duplicated, (unsigned long long)seed);
	ck_assert_uint_eq(r.tensors, 3 * r.ops);
	ck_assert_uint_eq(r.verified_bytes, adump_bench_soak_bytes(k));
	fprintf(stderr, "test_soak: %s: %llu ops on %d streams, %llu bytes, every tensor's CRC32C "
		"equal to its launch's; RSS MiB per quarter:", run, (unsigned long long)r.ops,
		STREAMS, (unsigned long long)r.verified_bytes);
	for (unsigned i = 0; i < r.rss_count; i++)
		fprintf(stderr, " %.1f", (double)r.rss[i] / (1 << 20));
	fprintf(stderr, " (max %.3f of the first)\n", r.rss_max_ratio);
	/* The quarters and the end. */
	ck_assert_uint_ge(r.rss_count, 4);
	if (is_rss_checked && !is_sanitized)
		ck_assert_msg(r.rss_flat, "%s: host RSS not flat: max %.3f of the first quarter's",
			      run, r.rss_max_ratio);
}

START_TEST(test_soak_files)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_bench_soak *k = soak_make();
	struct adump_session *s;
	struct adump_stats st;
	char run[4200];

	cfg.dump_path = dir;
	cfg.time_dir = "soak";
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_bench_soak_run(k, s), 0);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_failed + st.drops + st.write_errors, 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	snprintf(run, sizeof(run), "%s/soak", dir);
	ck_assert_int_eq(adump_bench_soak_verify_dir(k, run), 0);
	check_result(k, "files", true);
	adump_bench_soak_destroy(k);
}
END_TEST

START_TEST(test_soak_callback)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_bench_soak *k = soak_make();
	struct adump_session *s;
	struct adump_stats st;

	cfg.dump_path = dir;
	cfg.time_dir = "soak";
	cfg.sink = ADUMP_SINK_CALLBACK;
	cfg.chunk_fn = adump_bench_soak_chunk;
	cfg.chunk_user = k;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_bench_soak_run(k, s), 0);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.callback_errors + st.drops, 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	check_result(k, "callback chunks", true);
	adump_bench_soak_destroy(k);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("soak");
	TCase *tc = tcase_create("crc");

	tcase_set_timeout(tc, 600);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_soak_files);
	tcase_add_test(tc, test_soak_callback);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
