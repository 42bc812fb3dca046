/* SPDX-License-Identifier: Apache-2.0 */
/* adump_window_bench's rates into the window (bench/window_int.h): host streams in each mode
 * and the simulated device's Adds, each against a memcpy of the same bytes in the same round
 * (bench/RESULTS.md, "Window mode"). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/window_int.h"

struct host_result {
	double seconds;                 /* the timed steps */
	double dump_seconds;            /* of it, in the dump calls */
	double first_seconds;           /* the untimed first steps (the arena's first touch) */
	double cpu_seconds;             /* of the timed steps, every thread of the process */
	struct sched_sum sched;         /* of the timed steps */
	uint64_t bytes;
	int error;
};

/* One mode: @warm untimed steps, then o->steps timed ones. */
static int host_run(const struct opts *o, enum host_mode m, unsigned round, const struct plan *p,
		    const unsigned char *src, unsigned warm, struct host_result *r)
{
	const char *base = m == MODE_TENSOR_SHM ? o->shm : o->dir;
	bool is_window = m == MODE_WINDOW || m == MODE_WINDOW_REF;
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	struct adump_config cfg;
	char path[4200];
	double t0, ignored = 0;
	int ret;

	memset(r, 0, sizeof(*r));
	snprintf(path, sizeof(path), "%s/adump-window-bench.%d/%s-%u", base, (int)getpid(),
		 adump_wb_mode_keys[m], round);
	adump_wb_config(&cfg, o, m, path);
	ret = adump_session_create(&cfg, &s);
	if (ret == 0)
		ret = adump_host_stream_open(s, NULL, &hs);
	t0 = adump_bench_now();
	for (unsigned k = 0; ret == 0 && k < warm; k++) {
		ret = adump_wb_host_step(hs, p, src, m == MODE_WINDOW_REF, &ignored);
		if (ret == 0)
			ret = is_window ? adump_session_step(s) : adump_session_flush(s);
	}
	r->first_seconds = adump_bench_now() - t0;
	if (ret == 0 && m == MODE_TENSOR_DISK)
		ret = adump_bench_syncfs(base);
	struct sched_sum sched0;

	adump_wb_sched_read(&sched0);
	r->cpu_seconds = -adump_bench_cpu_seconds();
	t0 = adump_bench_now();
	for (unsigned k = 0; ret == 0 && k < o->steps; k++) {
		ret = adump_wb_host_step(hs, p, src, m == MODE_WINDOW_REF, &r->dump_seconds);
		if (ret == 0)
			ret = is_window ? adump_session_step(s) : adump_session_flush(s);
	}
	if (ret == 0 && m == MODE_TENSOR_DISK)
		ret = adump_bench_syncfs(base);
	r->seconds = adump_bench_now() - t0;
	r->cpu_seconds += adump_bench_cpu_seconds();
	adump_wb_sched_read(&r->sched);
	adump_wb_sched_diff(&sched0, &r->sched);
	r->bytes = (uint64_t)o->steps * p->bytes;
	if (ret == 0 && is_window) {
		struct adump_window_info wi;

		ret = adump_session_window(s, &wi);
		if (ret == 0 && (wi.persists || wi.lost_dumps || wi.is_pending)) {
			fprintf(stderr, "window_bench: %s: the window persisted (%u) or lost "
				"(%" PRIu64 ") something\n", adump_wb_mode_names[m], wi.persists,
				wi.lost_dumps);
			ret = -EIO;
		}
	}
	ret = adump_wb_close(hs, s, ret);
	if (m == MODE_TENSOR_SHM)
		adump_wb_rm_tree(path);
	r->error = ret;
	return ret;
}

int adump_wb_part_host(const struct opts *o)
{
	struct plan p;
	unsigned char *src = NULL, *dst = NULL;
	double ratio[MODE_COUNT][ROUNDS_MAX], gbps[MODE_COUNT][ROUNDS_MAX], dump_share[ROUNDS_MAX];
	double cpu[MODE_COUNT][ROUNDS_MAX], busy[MODE_COUNT][ROUNDS_MAX];
	double wait[MODE_COUNT][ROUNDS_MAX];
	double mc[ROUNDS_MAX], first[ROUNDS_MAX];
	unsigned warm = (unsigned)((o->window_bytes + o->step_bytes - 1) / o->step_bytes) + 1;
	int ret = adump_wb_plan_make(&p, o->step_bytes, o->min_bytes, o->max_bytes, 1);

	if (ret == 0) {
		src = adump_wb_alloc_touched(p.bytes);
		dst = adump_wb_alloc_touched(o->window_bytes);
		if (!src || !dst)
			ret = -ENOMEM;
	}
	if (ret < 0)
		goto out;
	adump_bench_fill(src, p.bytes, ADUMP_BENCH_CLASS_F32, ADUMP_BENCH_DATA_RANDOM, 7, 0);
	adump_wb_memcpy_steps(&p, src, dst, o->window_bytes, warm);
	printf("host: %u tensors of %.1f-%.1f MiB per step, %.1f MiB a step, %u timed steps "
	       "after %u untimed, window %u steps / %.0f MiB, 1 host stream\n", p.count,
	       o->min_bytes / MIB, o->max_bytes / MIB, p.bytes / MIB, o->steps, warm,
	       o->window_steps, o->window_bytes / MIB);
	for (unsigned r = 0; r < o->rounds; r++) {
		double mcs = adump_wb_memcpy_best(&p, src, dst, o->window_bytes, o->steps);

		mc[r] = (double)o->steps * p.bytes / mcs / GB;
		for (unsigned k = 0; k < MODE_COUNT; k++) {
			/* The modes rotate per round, so that none always runs first. */
			enum host_mode m = (enum host_mode)((k + r) % MODE_COUNT);
			struct host_result hr;

			if (!o->modes[m])
				continue;
			ret = host_run(o, m, r, &p, src, m <= MODE_WINDOW_REF ? warm : 2, &hr);
			if (ret < 0) {
				fprintf(stderr, "window_bench: host %s: %s\n",
					adump_wb_mode_names[m], adump_strerror(ret));
				goto out;
			}
			gbps[m][r] = (double)hr.bytes / hr.seconds / GB;
			ratio[m][r] = gbps[m][r] / mc[r];
			if (m == MODE_WINDOW) {
				dump_share[r] = hr.dump_seconds / hr.seconds;
				first[r] = (double)warm * p.bytes / hr.first_seconds / GB;
			}
			cpu[m][r] = hr.cpu_seconds / ((double)hr.bytes / GB);
			busy[m][r] = hr.sched.max_run_ns / 1e9 / ((double)hr.bytes / GB);
			wait[m][r] = hr.sched.wait_ns / 1e9 / hr.seconds;
		}
		printf("  round %u: memcpy %.2f GB/s\n", r + 1, mc[r]);
		for (unsigned m = 0; m < MODE_COUNT; m++) {
			if (!o->modes[m])
				continue;
			printf("    %-16s %5.2f GB/s = %.2fx memcpy; CPU %.3f s/GB, busiest thread "
			       "%.3f s/GB, threads waiting for a CPU %.0f %% of the wall time",
			       adump_wb_mode_names[m], gbps[m][r], ratio[m][r], cpu[m][r],
			       busy[m][r], 100 * wait[m][r]);
			if (m == MODE_WINDOW)
				printf("; %.0f %% in the dump calls; the first %u steps %.2f GB/s",
				       100 * dump_share[r], warm, first[r]);
			printf("\n");
		}
	}
	printf("host medians of %u rounds: memcpy %.2f GB/s", o->rounds,
	       adump_wb_median(mc, o->rounds));
	for (unsigned m = 0; m < MODE_COUNT; m++)
		if (o->modes[m])
			printf(", %s %.2fx", adump_wb_mode_names[m],
			       adump_wb_median(ratio[m], o->rounds));
	printf(" (target: window >= 0.5x memcpy)\n");
out:
	adump_wb_part_clean(o->dir);
	adump_wb_part_clean(o->shm);
	free(src);
	free(dst);
	adump_wb_plan_free(&p);
	return ret;
}

/* ---- the simulated device ---------------------------------------------------------------- */

struct dev_bench {
	struct adump_dev *dev;
	struct plan p;                  /* per Add: its tensor size; 3 tensors dumped */
	void *a, *b, *c;                /* self, other, out: p.bytes each */
	unsigned char *host;            /* the host copy of a and b, for the memcpy baseline */
};

static int dev_step(struct dev_bench *d, struct adump_dev_stream *st, bool is_dump)
{
	char name[64];
	int ret = 0;

	for (unsigned i = 0; ret == 0 && i < d->p.count; i++) {
		struct adump_dev_tensor self = {
			.data = (char *)d->a + d->p.offsets[i], .dtype = ADUMP_DT_FLOAT,
			.format = ADUMP_FORMAT_ND, .dim_count = 1,
			.dims = { (int64_t)(d->p.sizes[i] / 4) }, .bytes = d->p.sizes[i],
		};
		struct adump_dev_tensor other = self, out = self;
		struct adump_dev_dump dump = { .op_type = "Add", .op_name = name,
					       .tensor_mask = ADUMP_DUMP_ALL };

		other.data = (char *)d->b + d->p.offsets[i];
		out.data = (char *)d->c + d->p.offsets[i];
		snprintf(name, sizeof(name), "layer%u.add", i);
		ret = adump_dev_launch_add(st, &self, &other, 1.0, &out, is_dump ? &dump : NULL);
	}
	if (ret == 0)
		ret = adump_dev_stream_sync(st);
	return ret;
}

/* Window mode (@is_dump) or no dump at all: seconds of o->steps steps after @warm. */
static int dev_run(const struct opts *o, struct dev_bench *d, bool is_dump, unsigned round,
		   unsigned warm, double *seconds)
{
	struct adump_session *s = NULL;
	struct adump_dev_stream *st = NULL;
	struct adump_config cfg;
	char path[4200];
	bool is_attached = false;
	double t0;
	int ret;

	snprintf(path, sizeof(path), "%s/adump-window-bench.%d/device-%u", o->dir, (int)getpid(),
		 round);
	adump_wb_config(&cfg, o, MODE_WINDOW, path);
	ret = adump_dev_stream_create(d->dev, &st);
	if (ret == 0 && is_dump)
		ret = adump_session_create(&cfg, &s);
	if (ret == 0 && is_dump) {
		ret = adump_session_attach(s, st);
		is_attached = ret == 0;
	}
	for (unsigned k = 0; ret == 0 && k < warm; k++) {
		ret = dev_step(d, st, is_dump);
		if (ret == 0 && is_dump)
			ret = adump_session_step(s);
	}
	t0 = adump_bench_now();
	for (unsigned k = 0; ret == 0 && k < o->steps; k++) {
		ret = dev_step(d, st, is_dump);
		if (ret == 0 && is_dump)
			ret = adump_session_step(s);
	}
	*seconds = adump_bench_now() - t0;
	if (ret == 0 && is_dump) {
		struct adump_window_info wi;

		ret = adump_session_window(s, &wi);
		if (ret == 0 && (wi.persists || wi.lost_dumps))
			ret = -EIO;
	}
	if (is_attached)
		adump_session_detach(s, st);
	if (s) {
		int dret = adump_session_destroy(s);

		if (ret == 0)
			ret = dret;
	}
	if (st)
		adump_dev_stream_destroy(st);
	return ret;
}

int adump_wb_part_device(const struct opts *o)
{
	struct dev_bench d = { 0 };
	unsigned char *dst = NULL;
	double mc[ROUNDS_MAX], ratio[ROUNDS_MAX], added[ROUNDS_MAX];
	/* An Add dumps three tensors of its size: a third of the step in each buffer. */
	uint64_t third = o->step_bytes / 3 / 4 * 4, dumped;
	unsigned warm = (unsigned)((o->window_bytes + o->step_bytes - 1) / o->step_bytes) + 1;
	struct plan triple = { 0 };
	int ret = adump_wb_plan_make(&d.p, third, o->min_bytes, o->max_bytes, 2);

	if (ret == 0)
		ret = adump_dev_open(0, &d.dev);
	if (ret == 0)
		ret = adump_dev_malloc(d.dev, d.p.bytes, &d.a);
	if (ret == 0)
		ret = adump_dev_malloc(d.dev, d.p.bytes, &d.b);
	if (ret == 0)
		ret = adump_dev_malloc(d.dev, d.p.bytes, &d.c);
	if (ret == 0 && (!(d.host = adump_wb_alloc_touched(3 * d.p.bytes)) ||
			 !(dst = adump_wb_alloc_touched(o->window_bytes))))
		ret = -ENOMEM;
	if (ret < 0)
		goto out;
	adump_bench_fill(d.host, d.p.bytes, ADUMP_BENCH_CLASS_F32, ADUMP_BENCH_DATA_RANDOM, 3, 0);
	adump_bench_fill(d.host + d.p.bytes, d.p.bytes, ADUMP_BENCH_CLASS_F32,
			 ADUMP_BENCH_DATA_RANDOM, 3, 1);
	ret = adump_dev_memcpy(d.dev, d.a, d.p.bytes, d.host, d.p.bytes, ADUMP_COPY_HOST_TO_DEVICE);
	if (ret == 0)
		ret = adump_dev_memcpy(d.dev, d.b, d.p.bytes, d.host + d.p.bytes, d.p.bytes,
				       ADUMP_COPY_HOST_TO_DEVICE);
	if (ret == 0)
		ret = adump_dev_memcpy(d.dev, d.c, d.p.bytes, d.host, d.p.bytes,
				       ADUMP_COPY_HOST_TO_DEVICE);
	if (ret < 0)
		goto out;
	/* The memcpy baseline copies the same three tensors of each Add (the host copies of
	 * self, other and out, one buffer each). */
	memcpy(d.host + 2 * d.p.bytes, d.host, d.p.bytes);
	triple.count = 3 * d.p.count;
	triple.sizes = malloc(triple.count * sizeof(uint64_t));
	triple.offsets = malloc(triple.count * sizeof(uint64_t));
	if (!triple.sizes || !triple.offsets) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < d.p.count; i++)
		for (unsigned k = 0; k < 3; k++) {
			triple.sizes[3 * i + k] = d.p.sizes[i];
			triple.offsets[3 * i + k] = k * d.p.bytes + d.p.offsets[i];
		}
	triple.bytes = 3 * d.p.bytes;
	dumped = 3 * d.p.bytes;
	adump_wb_memcpy_steps(&triple, d.host, dst, o->window_bytes, warm);
	printf("device: %u Adds of %.1f-%.1f MiB tensors per step (3 dumped each), %.1f MiB "
	       "dumped a step, %u timed steps after %u untimed, window %u steps / %.0f MiB\n",
	       d.p.count, o->min_bytes / MIB, o->max_bytes / MIB, dumped / MIB, o->steps, warm,
	       o->window_steps, o->window_bytes / MIB);
	for (unsigned r = 0; r < o->rounds; r++) {
		double t_mc, t_win = 0, t_none = 0;

		t_mc = adump_wb_memcpy_best(&triple, d.host, dst, o->window_bytes, o->steps);
		for (unsigned k = 0; ret == 0 && k < 2; k++) {
			bool is_dump = (k + r) % 2 == 0;

			ret = dev_run(o, &d, is_dump, r, is_dump ? warm : 2,
				      is_dump ? &t_win : &t_none);
		}
		if (ret < 0) {
			fprintf(stderr, "window_bench: device: %s\n", adump_strerror(ret));
			goto out;
		}
		double gb = (double)o->steps * dumped / GB;

		mc[r] = gb / t_mc;
		ratio[r] = gb / t_win / mc[r];
		added[r] = t_win > t_none ? gb / (t_win - t_none) / mc[r] : INFINITY;
		printf("  round %u: memcpy %.2f GB/s, window %.2f GB/s (%.2fx memcpy), kernels "
		       "alone %.3f s of %.3f s: %.2fx memcpy over the added time\n", r + 1, mc[r],
		       gb / t_win, ratio[r], t_none, t_win, added[r]);
	}
	printf("device medians of %u rounds: memcpy %.2f GB/s, window %.2fx memcpy end to end, "
	       "%.2fx over the time added to the kernels (target >= 0.5x)\n", o->rounds,
	       adump_wb_median(mc, o->rounds), adump_wb_median(ratio, o->rounds),
	       adump_wb_median(added, o->rounds));
out:
	adump_wb_part_clean(o->dir);
	adump_wb_plan_free(&triple);
	adump_wb_plan_free(&d.p);
	free(dst);
	free(d.host);
	if (d.dev) {
		if (d.a)
			adump_dev_free(d.dev, d.a);
		if (d.b)
			adump_dev_free(d.dev, d.b);
		if (d.c)
			adump_dev_free(d.dev, d.c);
		adump_dev_close(d.dev);
	}
	return ret;
}
