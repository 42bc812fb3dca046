/* SPDX-License-Identifier: Apache-2.0 */
/* adump_window_bench: window mode, the flight recorder (issue 32 "Speed and memory"), against
 * baselines measured in the same run. host: float32 tensors dumped through a host stream into
 * a window-mode session (the dump calls and adump_session_step() of every step timed) against
 * a plain memcpy of the same bytes, with statistics-only and tensor captures beside it.
 * device: the same through the simulated NPU's Adds. soak: 50 steps larger than a third of
 * the window with one persist, each step's peak RSS against window_bytes + pool_bytes + the
 * README's constant (exit 1 past it). persist: a full window written at a trigger, timed
 * until synced, against fio on the same directory. bench/RESULTS.md "Window mode" has what
 * it measured. Never run by ctest. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

#define MIB (1024.0 * 1024.0)
#define GB 1e9
#define ROUNDS_MAX 32
/* The soak's RSS bound past window_bytes + pool_bytes, README "Flight recorder", Memory: the
 * persisting session's pool (64 MiB) and the sessions' own state (measured about 1 MiB; 4
 * allowed). The deviation trigger's history is not used here. */
#define SOAK_SLACK_BYTES (68ull << 20)

struct opts {
	const char *dir;                /* the disk: window sessions, tensor captures, persists */
	const char *shm;                /* tmpfs for the tensor capture context */
	uint64_t step_bytes;
	uint64_t min_bytes, max_bytes;
	uint64_t window_bytes;
	unsigned window_steps;
	unsigned steps;                 /* timed steps per mode and round */
	unsigned rounds;
	unsigned soak_steps;
	uint64_t soak_step_bytes;
	uint64_t pool_bytes;
	bool parts[4];                  /* host, device, soak, persist */
	bool modes[5];                  /* the host modes run (enum host_mode) */
};

enum { PART_HOST, PART_DEVICE, PART_SOAK, PART_PERSIST };
static const char *const part_names[] = { "host", "device", "soak", "persist" };

/* One step's tensors: sizes log-uniform in [min, max] (whole float32 elements) until the
 * step's bytes, the last one cut to the rest; laid out back to back in one source buffer. */
struct plan {
	uint64_t *sizes;
	uint64_t *offsets;
	unsigned count;
	uint64_t bytes;
};

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int plan_make(struct plan *p, uint64_t step, uint64_t lo, uint64_t hi, uint64_t seed)
{
	unsigned cap = 0;

	memset(p, 0, sizeof(*p));
	while (p->bytes < step) {
		double u = (double)(rng_next(&seed) >> 11) / (double)(1ull << 53);
		uint64_t b = (uint64_t)exp(log((double)lo) + u * (log((double)hi) - log((double)lo)));

		b = b / 4 * 4;
		if (b < 4)
			b = 4;
		if (b > step - p->bytes)
			b = step - p->bytes;
		if (p->count == cap) {
			unsigned ncap = cap ? cap * 2 : 64;
			uint64_t *s = realloc(p->sizes, ncap * sizeof(*s));

			if (!s)
				return -ENOMEM;
			p->sizes = s;
			s = realloc(p->offsets, ncap * sizeof(*s));
			if (!s)
				return -ENOMEM;
			p->offsets = s;
			cap = ncap;
		}
		p->offsets[p->count] = p->bytes;
		p->sizes[p->count++] = b;
		p->bytes += b;
	}
	return 0;
}

static void plan_free(struct plan *p)
{
	free(p->sizes);
	free(p->offsets);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* Remove @path and everything under it (no link followed). */
static void rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static uint64_t tree_bytes_sum;

static int sum_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag == FTW_F)
		tree_bytes_sum += (uint64_t)st->st_size;
	return 0;
}

static uint64_t tree_bytes(const char *path)
{
	tree_bytes_sum = 0;
	nftw(path, sum_one, 16, FTW_PHYS);
	return tree_bytes_sum;
}

static void *alloc_touched(uint64_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, bytes ? bytes : 1))
		return NULL;
	memset(p, 0, bytes);
	return p;
}

static double median(double *v, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : NAN;
}

/* memcpy of @steps steps of @p's tensors from @src into @dst (@dst_bytes, touched), at
 * offsets going round it as the window's arena does. Return: seconds. */
static double memcpy_steps(const struct plan *p, const unsigned char *src, unsigned char *dst,
			   uint64_t dst_bytes, unsigned steps)
{
	uint64_t at = 0;
	double t0 = adump_bench_now();

	for (unsigned k = 0; k < steps; k++)
		for (unsigned i = 0; i < p->count; i++) {
			if (at + p->sizes[i] > dst_bytes)
				at = 0;
			memcpy(dst + at, src + p->offsets[i], p->sizes[i]);
			at += (p->sizes[i] + 63) / 64 * 64;
		}
	return adump_bench_now() - t0;
}

/* The process's threads' time on a CPU and waiting for one (runnable, another task on it),
 * summed from /proc/self/task/<tid>/schedstat, and the most any one thread ran; in ns. */
struct sched_sum {
	uint64_t run_ns, wait_ns, max_run_ns;
	uint64_t tid_run[64];
	int tids[64];
	unsigned count;
};

static void sched_read(struct sched_sum *out)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;

	memset(out, 0, sizeof(*out));
	while (d && (de = readdir(d))) {
		char path[300];
		unsigned long long run = 0, wait = 0;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu %llu", &run, &wait) == 2) {
			out->run_ns += run;
			out->wait_ns += wait;
			if (out->count < 64) {
				out->tids[out->count] = atoi(de->d_name);
				out->tid_run[out->count++] = run;
			}
		}
		fclose(f);
	}
	if (d)
		closedir(d);
}

/* @after - @before: per thread present in both, the largest run time into max_run_ns. */
static void sched_diff(const struct sched_sum *before, struct sched_sum *after)
{
	uint64_t max = 0;

	for (unsigned i = 0; i < after->count; i++)
		for (unsigned j = 0; j < before->count; j++)
			if (after->tids[i] == before->tids[j] &&
			    after->tid_run[i] - before->tid_run[j] > max)
				max = after->tid_run[i] - before->tid_run[j];
	after->run_ns -= before->run_ns;
	after->wait_ns -= before->wait_ns;
	after->max_run_ns = max;
}

/* The memcpy baseline: the fastest of three passes, so that a pass another process
 * preempted does not make the capture look faster than it is. Return: seconds. */
static double memcpy_best(const struct plan *p, const unsigned char *src, unsigned char *dst,
			  uint64_t dst_bytes, unsigned steps)
{
	double best = INFINITY;

	for (int i = 0; i < 3; i++)
		best = fmin(best, memcpy_steps(p, src, dst, dst_bytes, steps));
	return best;
}

/* ---- host streams ------------------------------------------------------------------------ */

enum host_mode {
	MODE_WINDOW,                    /* window mode, copy (the dump call copies) */
	MODE_WINDOW_REF,                /* window mode, zero copy (the worker reads the tensors) */
	MODE_STATS,                     /* content STATS: statistics at hand-over */
	MODE_TENSOR_SHM,                /* content TENSOR into tmpfs */
	MODE_TENSOR_DISK,               /* content TENSOR into the disk, synced */
	MODE_COUNT,
};

static const char *const mode_names[] = {
	"window copy", "window zero-copy", "stats only", "tensor tmpfs", "tensor disk",
};
static const char *const mode_keys[] = { "window", "window-ref", "stats", "tmpfs", "disk" };

static void release_nop(void *user, uint32_t task_id, int status)
{
	(void)user;
	(void)task_id;
	(void)status;
}

struct host_result {
	double seconds;                 /* the timed steps */
	double dump_seconds;            /* of it, in the dump calls */
	double first_seconds;           /* the untimed first steps (the arena's first touch) */
	double cpu_seconds;             /* of the timed steps, every thread of the process */
	struct sched_sum sched;         /* of the timed steps */
	uint64_t bytes;
	int error;
};

static int host_step(struct adump_host_stream *hs, const struct plan *p, const unsigned char *src,
		     bool is_ref, double *dump_seconds)
{
	char name[64];
	double t0 = adump_bench_now();

	for (unsigned i = 0; i < p->count; i++) {
		struct adump_host_tensor t = {
			.data = src + p->offsets[i], .bytes = p->sizes[i], .dtype = ADUMP_DT_FLOAT,
			.format = ADUMP_FORMAT_ND, .dim_count = 1,
			.dims = { (int64_t)(p->sizes[i] / 4) },
		};
		struct adump_host_op op = ADUMP_HOST_OP_INIT;
		int ret;

		snprintf(name, sizeof(name), "layer%u.linear", i);
		op.op_type = "Linear";
		op.op_name = name;
		op.outputs = &t;
		op.output_count = 1;
		if (is_ref)
			op.release_fn = release_nop;
		ret = adump_host_dump_op(hs, &op, NULL);
		if (ret < 0)
			return ret;
	}
	*dump_seconds += adump_bench_now() - t0;
	return 0;
}

static void config_for(struct adump_config *cfg, const struct opts *o, enum host_mode m,
		       const char *path)
{
	*cfg = (struct adump_config)ADUMP_CONFIG_INIT;
	cfg->dump_path = path;
	cfg->pool_bytes = o->pool_bytes;
	cfg->content = m == MODE_STATS ? ADUMP_CONTENT_STATS : ADUMP_CONTENT_TENSOR;
	if (m == MODE_WINDOW || m == MODE_WINDOW_REF) {
		cfg->window_steps = o->window_steps;
		cfg->window_bytes = o->window_bytes;
	}
}

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
		 mode_keys[m], round);
	config_for(&cfg, o, m, path);
	ret = adump_session_create(&cfg, &s);
	if (ret == 0)
		ret = adump_host_stream_open(s, NULL, &hs);
	t0 = adump_bench_now();
	for (unsigned k = 0; ret == 0 && k < warm; k++) {
		ret = host_step(hs, p, src, m == MODE_WINDOW_REF, &ignored);
		if (ret == 0)
			ret = is_window ? adump_session_step(s) : adump_session_flush(s);
	}
	r->first_seconds = adump_bench_now() - t0;
	if (ret == 0 && m == MODE_TENSOR_DISK)
		ret = adump_bench_syncfs(base);
	struct sched_sum sched0;

	sched_read(&sched0);
	r->cpu_seconds = -adump_bench_cpu_seconds();
	t0 = adump_bench_now();
	for (unsigned k = 0; ret == 0 && k < o->steps; k++) {
		ret = host_step(hs, p, src, m == MODE_WINDOW_REF, &r->dump_seconds);
		if (ret == 0)
			ret = is_window ? adump_session_step(s) : adump_session_flush(s);
	}
	if (ret == 0 && m == MODE_TENSOR_DISK)
		ret = adump_bench_syncfs(base);
	r->seconds = adump_bench_now() - t0;
	r->cpu_seconds += adump_bench_cpu_seconds();
	sched_read(&r->sched);
	sched_diff(&sched0, &r->sched);
	r->bytes = (uint64_t)o->steps * p->bytes;
	if (ret == 0 && is_window) {
		struct adump_window_info wi;

		ret = adump_session_window(s, &wi);
		if (ret == 0 && (wi.persists || wi.lost_dumps || wi.is_pending)) {
			fprintf(stderr, "window_bench: %s: the window persisted (%u) or lost (%" PRIu64
				") something\n", mode_names[m], wi.persists, wi.lost_dumps);
			ret = -EIO;
		}
	}
	if (hs) {
		int cret = adump_host_stream_close(hs);

		if (ret == 0)
			ret = cret;
	}
	if (s) {
		int dret = adump_session_destroy(s);

		if (ret == 0)
			ret = dret;
	}
	if (m == MODE_TENSOR_SHM)
		rm_tree(path);
	r->error = ret;
	return ret;
}

/* What a part wrote under @base is removed only when the part ends: ext4 allocates new
 * inodes around recently deleted ones by scanning the inode table, a cost in the worker's
 * system time (find_get_block_common, recently_deleted) that a training run, which deletes
 * nothing, does not pay; removing each run's files before the next one added to it. */
static void part_clean(const char *base)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/adump-window-bench.%d", base, (int)getpid());
	rm_tree(path);
}

static int part_host(const struct opts *o)
{
	struct plan p;
	unsigned char *src = NULL, *dst = NULL;
	double ratio[MODE_COUNT][ROUNDS_MAX], gbps[MODE_COUNT][ROUNDS_MAX], dump_share[ROUNDS_MAX];
	double cpu[MODE_COUNT][ROUNDS_MAX], busy[MODE_COUNT][ROUNDS_MAX], wait[MODE_COUNT][ROUNDS_MAX];
	double mc[ROUNDS_MAX], first[ROUNDS_MAX];
	unsigned warm = (unsigned)((o->window_bytes + o->step_bytes - 1) / o->step_bytes) + 1;
	int ret = plan_make(&p, o->step_bytes, o->min_bytes, o->max_bytes, 1);

	if (ret == 0 && (!(src = alloc_touched(p.bytes)) || !(dst = alloc_touched(o->window_bytes))))
		ret = -ENOMEM;
	if (ret < 0)
		goto out;
	adump_bench_fill(src, p.bytes, ADUMP_BENCH_CLASS_F32, ADUMP_BENCH_DATA_RANDOM, 7, 0);
	memcpy_steps(&p, src, dst, o->window_bytes, warm);
	printf("host: %u tensors of %.1f-%.1f MiB per step, %.1f MiB a step, %u timed steps "
	       "after %u untimed, window %u steps / %.0f MiB, 1 host stream\n", p.count,
	       o->min_bytes / MIB, o->max_bytes / MIB, p.bytes / MIB, o->steps, warm,
	       o->window_steps, o->window_bytes / MIB);
	for (unsigned r = 0; r < o->rounds; r++) {
		double mcs = memcpy_best(&p, src, dst, o->window_bytes, o->steps);

		mc[r] = (double)o->steps * p.bytes / mcs / GB;
		for (unsigned k = 0; k < MODE_COUNT; k++) {
			/* The modes rotate per round, so that none always runs first. */
			enum host_mode m = (enum host_mode)((k + r) % MODE_COUNT);
			struct host_result hr;

			if (!o->modes[m])
				continue;
			ret = host_run(o, m, r, &p, src, m <= MODE_WINDOW_REF ? warm : 2, &hr);
			if (ret < 0) {
				fprintf(stderr, "window_bench: host %s: %s\n", mode_names[m],
					adump_strerror(ret));
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
			       mode_names[m], gbps[m][r], ratio[m][r], cpu[m][r], busy[m][r],
			       100 * wait[m][r]);
			if (m == MODE_WINDOW)
				printf("; %.0f %% in the dump calls; the first %u steps %.2f GB/s",
				       100 * dump_share[r], warm, first[r]);
			printf("\n");
		}
	}
	printf("host medians of %u rounds: memcpy %.2f GB/s", o->rounds, median(mc, o->rounds));
	for (unsigned m = 0; m < MODE_COUNT; m++)
		if (o->modes[m])
			printf(", %s %.2fx", mode_names[m], median(ratio[m], o->rounds));
	printf(" (target: window >= 0.5x memcpy)\n");
out:
	part_clean(o->dir);
	part_clean(o->shm);
	free(src);
	free(dst);
	plan_free(&p);
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
	config_for(&cfg, o, MODE_WINDOW, path);
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

static int part_device(const struct opts *o)
{
	struct dev_bench d = { 0 };
	unsigned char *dst = NULL;
	double mc[ROUNDS_MAX], ratio[ROUNDS_MAX], added[ROUNDS_MAX];
	/* An Add dumps three tensors of its size: a third of the step in each buffer. */
	uint64_t third = o->step_bytes / 3 / 4 * 4, dumped;
	unsigned warm = (unsigned)((o->window_bytes + o->step_bytes - 1) / o->step_bytes) + 1;
	struct plan triple = { 0 };
	int ret = plan_make(&d.p, third, o->min_bytes, o->max_bytes, 2);

	if (ret == 0)
		ret = adump_dev_open(0, &d.dev);
	if (ret == 0)
		ret = adump_dev_malloc(d.dev, d.p.bytes, &d.a);
	if (ret == 0)
		ret = adump_dev_malloc(d.dev, d.p.bytes, &d.b);
	if (ret == 0)
		ret = adump_dev_malloc(d.dev, d.p.bytes, &d.c);
	if (ret == 0 && (!(d.host = alloc_touched(3 * d.p.bytes)) ||
			 !(dst = alloc_touched(o->window_bytes))))
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
	memcpy_steps(&triple, d.host, dst, o->window_bytes, warm);
	printf("device: %u Adds of %.1f-%.1f MiB tensors per step (3 dumped each), %.1f MiB "
	       "dumped a step, %u timed steps after %u untimed, window %u steps / %.0f MiB\n",
	       d.p.count, o->min_bytes / MIB, o->max_bytes / MIB, dumped / MIB, o->steps, warm,
	       o->window_steps, o->window_bytes / MIB);
	for (unsigned r = 0; r < o->rounds; r++) {
		double t_mc, t_win = 0, t_none = 0;

		t_mc = memcpy_best(&triple, d.host, dst, o->window_bytes, o->steps);
		for (unsigned k = 0; ret == 0 && k < 2; k++) {
			bool is_dump = (k + r) % 2 == 0;

			ret = dev_run(o, &d, is_dump, r, is_dump ? warm : 2, is_dump ? &t_win : &t_none);
		}
		if (ret < 0) {
			fprintf(stderr, "window_bench: device: %s\n", adump_strerror(ret));
			goto out;
		}
		mc[r] = (double)o->steps * dumped / t_mc / GB;
		ratio[r] = (double)o->steps * dumped / t_win / GB / mc[r];
		added[r] = t_win > t_none ? (double)o->steps * dumped / (t_win - t_none) / GB / mc[r] :
					    INFINITY;
		printf("  round %u: memcpy %.2f GB/s, window %.2f GB/s (%.2fx memcpy), kernels alone "
		       "%.3f s of %.3f s: %.2fx memcpy over the added time\n", r + 1, mc[r],
		       (double)o->steps * dumped / t_win / GB, ratio[r], t_none, t_win, added[r]);
	}
	printf("device medians of %u rounds: memcpy %.2f GB/s, window %.2fx memcpy end to end, "
	       "%.2fx over the time added to the kernels (target >= 0.5x)\n", o->rounds,
	       median(mc, o->rounds), median(ratio, o->rounds), median(added, o->rounds));
out:
	part_clean(o->dir);
	plan_free(&triple);
	plan_free(&d.p);
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

/* ---- the soak: RSS over many steps ------------------------------------------------------- */

static int part_soak(const struct opts *o, bool *is_over)
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
	int ret = plan_make(&p, o->soak_step_bytes, o->min_bytes, o->max_bytes, 3);

	if (ret == 0 && !(src = alloc_touched(p.bytes)))
		ret = -ENOMEM;
	if (ret < 0)
		goto out;
	adump_bench_fill(src, p.bytes, ADUMP_BENCH_CLASS_F32, ADUMP_BENCH_DATA_RANDOM, 5, 0);
	snprintf(path, sizeof(path), "%s/adump-window-soak.%d", o->dir, (int)getpid());
	rm_tree(path);
	config_for(&cfg, o, MODE_WINDOW, path);
	adump_bench_peak_rss_reset();
	base = adump_bench_peak_rss();
	printf("soak: %u steps of %.1f MiB (%u tensors), window %u steps / %.0f MiB, pool %.0f MiB, "
	       "a persist at step %u; RSS before the session %.1f MiB, bound above it %.0f MiB "
	       "(window + pool + %.0f MiB: README \"Flight recorder\")\n", o->soak_steps, p.bytes / MIB, p.count,
	       o->window_steps, o->window_bytes / MIB, pool / MIB, persist_at, base / MIB,
	       bound / MIB, SOAK_SLACK_BYTES / MIB);
	ret = adump_session_create(&cfg, &s);
	if (ret == 0)
		ret = adump_host_stream_open(s, NULL, &hs);
	t0 = adump_bench_now();
	printf("  peak RSS above the start during each step (VmHWM), MiB:");
	for (unsigned k = 0; ret == 0 && k < o->soak_steps; k++) {
		uint64_t rss;

		adump_bench_peak_rss_reset();
		ret = host_step(hs, &p, src, false, &ignored);
		if (ret == 0 && k == persist_at)
			ret = adump_session_persist(s, "soak");
		if (ret == 0 && (ret = adump_session_window(s, &wi)) == 0 && wi.held_bytes > max_held)
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
	if (hs) {
		int cret = adump_host_stream_close(hs);

		if (ret == 0)
			ret = cret;
	}
	if (s) {
		int dret = adump_session_destroy(s);

		if (ret == 0)
			ret = dret;
	}
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
	rm_tree(path);
	free(src);
	plan_free(&p);
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
	rm_tree(path);
	config_for(&cfg, o, MODE_WINDOW, path);
	ret = adump_session_create(&cfg, &s);
	if (ret == 0)
		ret = adump_host_stream_open(s, NULL, &hs);
	for (unsigned k = 0; ret == 0 && k < o->window_steps; k++) {
		ret = host_step(hs, p, src, false, &ignored);
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
		*bytes = tree_bytes(wi.last_window);
	if (hs)
		adump_host_stream_close(hs);
	if (s) {
		int dret = adump_session_destroy(s);

		if (ret == 0)
			ret = dret;
	}
	rm_tree(path);
	return ret;
}

static int part_persist(const struct opts *o)
{
	struct plan p;
	unsigned char *src = NULL;
	double ratio[ROUNDS_MAX];
	/* Steps that together about fill the window, their descriptions included. */
	uint64_t step = o->window_bytes / o->window_steps / 64 * 63;
	int ret = plan_make(&p, step, o->min_bytes, o->max_bytes, 4);

	if (ret == 0 && !(src = alloc_touched(p.bytes)))
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
		printf("  round %u: persist %.1f MiB in %.3f s = %.3f GB/s; fio buffered %.3f GB/s, "
		       "O_DIRECT %.3f GB/s; persist %.2fx the faster fio\n", r + 1, bytes / MIB,
		       t_persist, bytes / t_persist / GB, fio[0].bytes / fio[0].seconds / GB,
		       fio[1].bytes / fio[1].seconds / GB, ratio[r]);
	}
	printf("persist median of %u rounds: %.2fx the faster fio\n", o->rounds,
	       median(ratio, o->rounds));
out:
	free(src);
	plan_free(&p);
	return ret;
}

/* ---- options ----------------------------------------------------------------------------- */

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || !(v >= 0))
		return -EINVAL;
	switch (*end) {
	case 'K': case 'k': v *= 1024; end++; break;
	case 'M': case 'm': v *= 1024 * 1024; end++; break;
	case 'G': case 'g': v *= 1024.0 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end || v > 1e15)
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: adump_window_bench --dir DIR [options]\n"
		"  --dir DIR            dump directory on the disk under test (required)\n"
		"  --shm DIR            tmpfs for the tensor-capture context (default /dev/shm)\n"
		"  --parts LIST         host,device,soak,persist (default all)\n"
		"  --modes LIST         host modes: window,window-ref,stats,tmpfs,disk (default all)\n"
		"  --step-bytes N       host/device step (default 64M)\n"
		"  --min-bytes N        smallest tensor (default 1M)\n"
		"  --max-bytes N        largest tensor (default 16M)\n"
		"  --window-bytes N     window_bytes (default 256M)\n"
		"  --window-steps N     window_steps (default 4)\n"
		"  --pool-bytes N       pool_bytes (default 0: the session's 256M)\n"
		"  --steps N            timed steps per mode and round (default 8)\n"
		"  --rounds N           rounds, modes alternated (default 3, at most %d)\n"
		"  --soak-steps N       soak steps (default 50)\n"
		"  --soak-step-bytes N  soak step (default 100M)\n"
		"Exit status 1 when the soak's RSS exceeds window_bytes + pool_bytes + %.0f MiB, 2 on "
		"an error.\n", ROUNDS_MAX, SOAK_SLACK_BYTES / MIB);
}

/* A comma-separated subset of @names (@count of them) into @on. */
static int parse_list(const char *s, const char *const *names, unsigned count, bool *on)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	memset(on, 0, count * sizeof(*on));
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned i;

		for (i = 0; i < count && strcmp(t, names[i]); i++)
			;
		if (i == count)
			return -EINVAL;
		on[i] = true;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "shm", required_argument, NULL, 'S' },
		{ "parts", required_argument, NULL, 'p' },
		{ "modes", required_argument, NULL, 'o' },
		{ "step-bytes", required_argument, NULL, 's' },
		{ "min-bytes", required_argument, NULL, 'm' },
		{ "max-bytes", required_argument, NULL, 'M' },
		{ "window-bytes", required_argument, NULL, 'w' },
		{ "window-steps", required_argument, NULL, 'W' },
		{ "pool-bytes", required_argument, NULL, 'P' },
		{ "steps", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "soak-steps", required_argument, NULL, 'k' },
		{ "soak-step-bytes", required_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct opts o = {
		.shm = "/dev/shm", .step_bytes = 64ull << 20, .min_bytes = 1ull << 20,
		.max_bytes = 16ull << 20, .window_bytes = 256ull << 20, .window_steps = 4,
		.steps = 8, .rounds = 3, .soak_steps = 50, .soak_step_bytes = 100ull << 20,
		.parts = { true, true, true, true }, .modes = { true, true, true, true, true },
	};
	bool is_over = false;
	time_t now = time(NULL);
	char when[64];
	int c, ret = 0;

	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		uint64_t v = 0;

		switch (c) {
		case 'd': o.dir = optarg; break;
		case 'S': o.shm = optarg; break;
		case 'p': ret = parse_list(optarg, part_names, 4, o.parts); break;
		case 'o': ret = parse_list(optarg, mode_keys, MODE_COUNT, o.modes); break;
		case 's': ret = parse_size(optarg, &o.step_bytes); break;
		case 'm': ret = parse_size(optarg, &o.min_bytes); break;
		case 'M': ret = parse_size(optarg, &o.max_bytes); break;
		case 'w': ret = parse_size(optarg, &o.window_bytes); break;
		case 'P': ret = parse_size(optarg, &o.pool_bytes); break;
		case 'K': ret = parse_size(optarg, &o.soak_step_bytes); break;
		case 'W': case 'n': case 'r': case 'k':
			ret = parse_size(optarg, &v);
			if (ret == 0 && (v == 0 || v > 100000))
				ret = -EINVAL;
			if (c == 'W')
				o.window_steps = (unsigned)v;
			else if (c == 'n')
				o.steps = (unsigned)v;
			else if (c == 'r')
				o.rounds = (unsigned)v;
			else
				o.soak_steps = (unsigned)v;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (ret < 0) {
			fprintf(stderr, "adump_window_bench: bad value '%s'\n", optarg);
			return 2;
		}
	}
	if (!o.dir || optind < argc || o.rounds > ROUNDS_MAX || o.min_bytes < 4 ||
	    o.max_bytes < o.min_bytes || !o.step_bytes || !o.soak_step_bytes ||
	    o.window_bytes < o.max_bytes) {
		usage(stderr);
		return 2;
	}
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	printf("adump_window_bench, %s, dir %s\n", when, o.dir);
	fflush(stdout);
	if (o.parts[PART_HOST] && ret == 0)
		ret = part_host(&o);
	fflush(stdout);
	if (o.parts[PART_DEVICE] && ret == 0)
		ret = part_device(&o);
	fflush(stdout);
	if (o.parts[PART_SOAK] && ret == 0)
		ret = part_soak(&o, &is_over);
	fflush(stdout);
	if (o.parts[PART_PERSIST] && ret == 0)
		ret = part_persist(&o);
	if (ret < 0)
		return 2;
	return is_over ? 1 : 0;
}
