/* SPDX-License-Identifier: Apache-2.0 */
/* adump_window_bench's soak (each step's peak RSS against README's bound) and persist (a
 * full window written at a call, against fio on the same directory) (bench/window_int.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/window_int.h"

/* ---- the soak: RSS over many steps ------------------------------------------------------- */

int adump_wb_part_soak(const struct opts *o, bool *is_over)
{
	struct plan p;
	unsigned char *src = NULL;
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	struct adump_config cfg;
	uint64_t base, max_rss = 0, pool = o->pool_bytes ? o->pool_bytes : 256ull << 20;
	uint64_t bound = o->window_bytes + pool + SOAK_SLACK_BYTES, max_held = 0;
	unsigned max_at = 0, persist_at = o->soak_steps / 2;
	struct adump_window_info wi;
	char path[4200];
	double ignored = 0, t0;
	int ret = adump_wb_plan_make(&p, o->soak_step_bytes, o->min_bytes, o->max_bytes, 3);

	if (ret == 0 && !(src = adump_wb_alloc_touched(p.bytes)))
		ret = -ENOMEM;
	if (ret < 0)
		goto out;
	adump_bench_fill(src, p.bytes, ADUMP_BENCH_CLASS_F32, ADUMP_BENCH_DATA_RANDOM, 5, 0);
	snprintf(path, sizeof(path), "%s/adump-window-soak.%d", o->dir, (int)getpid());
	adump_wb_rm_tree(path);
	adump_wb_config(&cfg, o, MODE_WINDOW, path);
	adump_bench_peak_rss_reset();
	base = adump_bench_peak_rss();
	printf("soak: %u steps of %.1f MiB (%u tensors), window %u steps / %.0f MiB, pool %.0f "
	       "MiB, a persist at step %u; RSS before the session %.1f MiB, bound above it %.0f "
	       "MiB (window + pool + %.0f MiB: README \"Flight recorder\")\n", o->soak_steps,
	       p.bytes / MIB, p.count, o->window_steps, o->window_bytes / MIB, pool / MIB,
	       persist_at, base / MIB, bound / MIB, SOAK_SLACK_BYTES / MIB);
	ret = adump_session_create(&cfg, &s);
	if (ret == 0)
		ret = adump_host_stream_open(s, NULL, &hs);
	t0 = adump_bench_now();
	printf("  peak RSS above the start during each step (VmHWM), MiB:");
	for (unsigned k = 0; ret == 0 && k < o->soak_steps; k++) {
		uint64_t rss;

		adump_bench_peak_rss_reset();
		ret = adump_wb_host_step(hs, &p, src, false, &ignored);
		if (ret == 0 && k == persist_at)
			ret = adump_session_persist(s, "soak");
		if (ret == 0)
			ret = adump_session_window(s, &wi);
		if (ret == 0 && wi.held_bytes > max_held)
			max_held = wi.held_bytes;
		if (ret == 0)
			ret = adump_session_step(s);
		rss = adump_bench_peak_rss();
		rss = rss > base ? rss - base : 0;
		if (rss > max_rss) {
			max_rss = rss;
			max_at = k;
		}
		printf(" %.0f", rss / MIB);
	}
	printf("\n");
	if (ret == 0)
		ret = adump_session_window(s, &wi);
	ret = adump_wb_close(hs, s, ret);
	if (ret < 0) {
		fprintf(stderr, "window_bench: soak: %s\n", adump_strerror(ret));
		goto out;
	}
	*is_over = max_rss > bound;
	printf("soak: %.1f s, peak RSS above the start %.1f MiB at step %u (bound %.0f MiB: %s), "
	       "max held %.1f MiB of %.0f, persists %u, dumps lost %" PRIu64 "\n",
	       adump_bench_now() - t0, max_rss / MIB, max_at, bound / MIB,
	       *is_over ? "EXCEEDED" : "within", max_held / MIB, o->window_bytes / MIB,
	       wi.persists, wi.lost_dumps);
	if (wi.persists != 1 || wi.lost_dumps) {
		fprintf(stderr, "window_bench: soak: expected one persist and no loss\n");
		ret = -EIO;
	}
out:
	adump_wb_rm_tree(path);
	free(src);
	adump_wb_plan_free(&p);
	return ret;
}

/* ---- persist speed against fio ----------------------------------------------------------- */

/* A window of o->window_steps steps that fill it, a trigger by call in the last one; the
 * step's end (the persist) timed until synced. */
static int persist_run(const struct opts *o, const struct plan *p, const unsigned char *src,
		       double *seconds, uint64_t *bytes)
{
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	struct adump_config cfg;
	struct adump_window_info wi;
	char path[4200];
	double ignored = 0, t0;
	int ret;

	snprintf(path, sizeof(path), "%s/adump-window-persist.%d", o->dir, (int)getpid());
	adump_wb_rm_tree(path);
	adump_wb_config(&cfg, o, MODE_WINDOW, path);
	ret = adump_session_create(&cfg, &s);
	if (ret == 0)
		ret = adump_host_stream_open(s, NULL, &hs);
	for (unsigned k = 0; ret == 0 && k < o->window_steps; k++) {
		ret = adump_wb_host_step(hs, p, src, false, &ignored);
		if (ret == 0 && k + 1 == o->window_steps) {
			ret = adump_session_persist(s, "bench");
			if (ret == 0)
				ret = adump_session_flush(s);
			if (ret == 0)
				ret = adump_bench_syncfs(o->dir);
			t0 = adump_bench_now();
			if (ret == 0)
				ret = adump_session_step(s);
			if (ret == 0)
				ret = adump_bench_syncfs(o->dir);
			*seconds = adump_bench_now() - t0;
		} else if (ret == 0) {
			ret = adump_session_step(s);
		}
	}
	if (ret == 0)
		ret = adump_session_window(s, &wi);
	if (ret == 0 && (wi.persists != 1 || wi.lost_dumps))
		ret = -EIO;
	if (ret == 0)
		*bytes = adump_wb_tree_bytes(wi.last_window);
	ret = adump_wb_close(hs, s, ret);
	adump_wb_rm_tree(path);
	return ret;
}

int adump_wb_part_persist(const struct opts *o)
{
	struct plan p;
	unsigned char *src = NULL;
	double ratio[ROUNDS_MAX];
	/* Steps that together about fill the window, their descriptions included. */
	uint64_t step = o->window_bytes / o->window_steps / 64 * 63;
	int ret = adump_wb_plan_make(&p, step, o->min_bytes, o->max_bytes, 4);

	if (ret == 0 && !(src = adump_wb_alloc_touched(p.bytes)))
		ret = -ENOMEM;
	if (ret < 0)
		goto out;
	adump_bench_fill(src, p.bytes, ADUMP_BENCH_CLASS_F32, ADUMP_BENCH_DATA_RANDOM, 9, 0);
	printf("persist: a window of %u steps of %.1f MiB (%u tensors each) in %.0f MiB, written "
	       "at a call in its last step into %s; fio buffered and O_DIRECT on the same bytes "
	       "there, each timed until synced, order rotating\n", o->window_steps, p.bytes / MIB,
	       p.count, o->window_bytes / MIB, o->dir);
	for (unsigned r = 0; r < o->rounds; r++) {
		struct adump_bench_timing fio[2] = { 0 };
		double t_persist = 0, best;
		uint64_t bytes = 0;

		for (unsigned k = 0; ret == 0 && k < 3; k++) {
			unsigned which = (k + r) % 3;

			if (which == 0) {
				ret = persist_run(o, &p, src, &t_persist, &bytes);
			} else {
				struct adump_bench_fio_cfg fc = { .is_direct = which == 2,
								  .is_sync = true };

				ret = adump_bench_syncfs(o->dir);
				if (ret == 0)
					ret = adump_bench_fio(o->dir, bytes ? bytes :
							      (uint64_t)o->window_steps * p.bytes,
							      &fc, &fio[which - 1]);
			}
		}
		if (ret < 0) {
			fprintf(stderr, "window_bench: persist: %s\n", adump_strerror(ret));
			goto out;
		}
		best = fmax(fio[0].bytes / fio[0].seconds, fio[1].bytes / fio[1].seconds);
		ratio[r] = bytes / t_persist / best;
		printf("  round %u: persist %.1f MiB in %.3f s = %.3f GB/s; fio buffered %.3f "
		       "GB/s, O_DIRECT %.3f GB/s; persist %.2fx the faster fio\n", r + 1,
		       bytes / MIB, t_persist, bytes / t_persist / GB,
		       fio[0].bytes / fio[0].seconds / GB, fio[1].bytes / fio[1].seconds / GB,
		       ratio[r]);
	}
	printf("persist median of %u rounds: %.2fx the faster fio\n", o->rounds,
	       adump_wb_median(ratio, o->rounds));
out:
	free(src);
	adump_wb_plan_free(&p);
	return ret;
}
