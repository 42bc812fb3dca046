/* SPDX-License-Identifier: Apache-2.0 */
/* `adump bench --verify-crc`: the soak of bench/soak.c (the one tests/faults/test_soak.c runs
 * at CI size) at any size, through a session built from the usual options: every tensor's
 * CRC32C taken at launch and recomputed from the files or the callback chunks, and host RSS
 * per GiB launched (per quarter of the ops under 2 GiB). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/bench_int.h"

#define SOAK_DEFAULT_TOTAL (256ull << 20)
#define SOAK_DEFAULT_MAX (64ull << 20)
#define SOAK_GIB (1ull << 30)

static void report(const struct bench_opts *o, const struct adump_bench_soak_result *r,
		   const struct adump_stats *st, double seconds, double verify_seconds, int error)
{
	const char *sink = tool_bench_sink_names[o->sink];
	const struct {
		const char *key, *label;
		uint64_t v;
	} f[] = {
		{ "ops", "ops", r->ops },
		{ "tensors_verified", "tensors verified", r->tensors },
		{ "bytes_verified", "bytes verified by CRC32C", r->verified_bytes },
		{ "lost", "lost", r->lost },
		{ "duplicated", "duplicated", r->duplicated },
		{ "corrupt", "corrupt", r->corrupt },
		{ "drops", "session drops", st->drops },
		{ "files_failed", "session files failed", st->files_failed },
	};
	const size_t n = sizeof(f) / sizeof(f[0]);

	printf("soak (%s sink, %u streams): %.1f s capture, %.1f s verification\n", sink,
	       o->w.stream_count, seconds, verify_seconds);
	for (size_t i = 0; i < n; i++)
		printf("  %-26s %llu\n", f[i].label, (unsigned long long)f[i].v);
	if (r->lost)
		printf("  first lost                 %s\n", r->first_lost);
	if (r->corrupt)
		printf("  first corrupt              %s\n", r->first_corrupt);
	printf("  host RSS MiB per %s:", o->w.total_bytes >= 2 * SOAK_GIB ? "GiB" : "quarter");
	for (unsigned i = 0; i < r->rss_count; i++)
		printf(" %.1f", (double)r->rss[i] / (1 << 20));
	printf(" (end)\n  RSS flat (within 5 %% of the first): %s (max %.3f)\n",
	       r->rss_flat ? "yes" : "NO", r->rss_max_ratio);
	if (error)
		printf("  error                      %s\n", adump_strerror(error));
	if (!o->json)
		return;
	printf("{\"soak\":{\"sink\":\"%s\",\"streams\":%u,\"seconds\":%.3f,\"verify_seconds\":%.3f",
	       sink, o->w.stream_count, seconds, verify_seconds);
	for (size_t i = 0; i < n; i++)
		printf(",\"%s\":%llu", f[i].key, (unsigned long long)f[i].v);
	printf(",\"rss_step\":\"%s\",\"rss_bytes\":[", o->w.total_bytes >= 2 * SOAK_GIB ?
	       "GiB" : "quarter");
	for (unsigned i = 0; i < r->rss_count; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)r->rss[i]);
	printf("],\"rss_max_ratio\":%.4f,\"rss_flat\":%s,\"error\":%d}}\n", r->rss_max_ratio,
	       r->rss_flat ? "true" : "false", error);
}

int tool_bench_soak(const struct bench_opts *in)
{
	struct bench_opts o = *in;
	struct adump_bench_soak_opts so = { .stream_count = o.w.stream_count, .seed = o.w.seed };
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_bench_soak_result r = { 0 };
	struct adump_bench_soak *k = NULL;
	struct adump_session *s = NULL;
	struct adump_stats st = { 0 };
	char dir[BENCH_PATH_CAP];
	double t0, seconds = 0, verify_seconds = 0;
	struct stat sb;
	int ret;

	if (!o.w.total_bytes)
		o.w.total_bytes = SOAK_DEFAULT_TOTAL;
	so.total = o.w.total_bytes;
	so.max_bytes = o.is_max_set ? o.w.max_bytes : SOAK_DEFAULT_MAX;
	so.drawn_max = so.max_bytes;
	/* Per GiB from 2 GiB up, else per quarter of the ops (set once they are known). */
	so.is_step_ops = so.total < 2 * SOAK_GIB;
	so.rss_step = so.is_step_ops ? 1 : SOAK_GIB;
	snprintf(dir, sizeof(dir), "%s/soak", o.out ? o.out : ".");
	if (o.sink == BENCH_SINK_FILE && stat(dir, &sb) == 0) {
		fprintf(stderr, "adump bench: %s exists: remove it first (its files would be "
				"counted)\n", dir);
		return 2;
	}
	ret = adump_bench_soak_create(&so, &k);
	if (ret < 0) {
		fprintf(stderr, "adump bench: cannot plan the soak: %s\n", adump_strerror(ret));
		return ret == -EINVAL ? 2 : 1;
	}
	if (so.is_step_ops)
		adump_bench_soak_set_step(k, adump_bench_soak_ops(k) / 4);
	cfg.dump_path = o.out;
	cfg.time_dir = "soak";
	cfg.worker_count = o.workers;
	cfg.chunk_bytes = o.chunk;
	cfg.pool_bytes = o.pool;
	cfg.stream_max = o.w.stream_count;
	cfg.on_full = o.on_full;
	cfg.writer = o.writer;
	cfg.io = o.io;
	cfg.compress = o.compress;
	if (o.sink == BENCH_SINK_CALLBACK) {
		cfg.sink = ADUMP_SINK_CALLBACK;
		cfg.chunk_fn = adump_bench_soak_chunk;
		cfg.chunk_user = k;
	}
	printf("soak: %llu ops, %llu tensor bytes on %u streams, tensors 4 B..%llu B\n",
	       (unsigned long long)adump_bench_soak_ops(k),
	       (unsigned long long)adump_bench_soak_bytes(k), so.stream_count,
	       (unsigned long long)so.max_bytes);
	fflush(stdout);
	ret = adump_session_create(&cfg, &s);
	if (ret == 0) {
		t0 = adump_bench_now();
		ret = adump_bench_soak_run(k, s);
		adump_stats_get(s, &st);
		if (adump_session_destroy(s) < 0 && ret == 0)
			ret = -EIO;
		seconds = adump_bench_now() - t0;
	}
	if (ret == 0 && o.sink == BENCH_SINK_FILE) {
		t0 = adump_bench_now();
		ret = adump_bench_soak_verify_dir(k, dir);
		verify_seconds = adump_bench_now() - t0;
	}
	adump_bench_soak_result(k, &r);
	report(&o, &r, &st, seconds, verify_seconds, ret);
	adump_bench_soak_destroy(k);
	if (ret < 0 || r.lost || r.duplicated || r.corrupt || st.drops || st.files_failed ||
	    !r.rss_flat)
		return 1;
	return 0;
}
