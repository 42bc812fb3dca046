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

#include "bench/window_int.h"

enum { PART_HOST, PART_DEVICE, PART_SOAK, PART_PERSIST };
static const char *const part_names[] = { "host", "device", "soak", "persist" };

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int adump_wb_plan_make(struct plan *p, uint64_t step, uint64_t lo, uint64_t hi, uint64_t seed)
{
	unsigned cap = 0;

	memset(p, 0, sizeof(*p));
	while (p->bytes < step) {
		double u = (double)(rng_next(&seed) >> 11) / (double)(1ull << 53);
		double lg = log((double)lo) + u * (log((double)hi) - log((double)lo));
		uint64_t b = (uint64_t)exp(lg);

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

void adump_wb_plan_free(struct plan *p)
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
int adump_wb_close(struct adump_host_stream *hs, struct adump_session *s, int ret)
{
	int err = hs ? adump_host_stream_close(hs) : 0;

	if (ret == 0)
		ret = err;
	err = s ? adump_session_destroy(s) : 0;
	return ret == 0 ? err : ret;
}

void adump_wb_rm_tree(const char *path)
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

uint64_t adump_wb_tree_bytes(const char *path)
{
	tree_bytes_sum = 0;
	nftw(path, sum_one, 16, FTW_PHYS);
	return tree_bytes_sum;
}

void *adump_wb_alloc_touched(uint64_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, bytes ? bytes : 1))
		return NULL;
	memset(p, 0, bytes);
	return p;
}

double adump_wb_median(double *v, unsigned n)
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
double adump_wb_memcpy_steps(const struct plan *p, const unsigned char *src, unsigned char *dst,
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

void adump_wb_sched_read(struct sched_sum *out)
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
void adump_wb_sched_diff(const struct sched_sum *before, struct sched_sum *after)
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
double adump_wb_memcpy_best(const struct plan *p, const unsigned char *src, unsigned char *dst,
			  uint64_t dst_bytes, unsigned steps)
{
	double best = INFINITY;

	for (int i = 0; i < 3; i++)
		best = fmin(best, adump_wb_memcpy_steps(p, src, dst, dst_bytes, steps));
	return best;
}

const char *const adump_wb_mode_names[] = {
	"window copy", "window zero-copy", "stats only", "tensor tmpfs", "tensor disk",
};
const char *const adump_wb_mode_keys[] = { "window", "window-ref", "stats", "tmpfs", "disk" };

static void release_nop(void *user, uint32_t task_id, int status)
{
	(void)user;
	(void)task_id;
	(void)status;
}

int adump_wb_host_step(struct adump_host_stream *hs, const struct plan *p, const unsigned char *src,
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

void adump_wb_config(struct adump_config *cfg, const struct opts *o, enum host_mode m,
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

/* What a part wrote under @base is removed only when the part ends: ext4 allocates new
 * inodes around recently deleted ones by scanning the inode table, a cost in the worker's
 * system time (find_get_block_common, recently_deleted) that a training run, which deletes
 * nothing, does not pay; removing each run's files before the next one added to it. */
void adump_wb_part_clean(const char *base)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/adump-window-bench.%d", base, (int)getpid());
	adump_wb_rm_tree(path);
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
		"  --modes LIST         host modes: window,window-ref,stats,tmpfs,disk (default:\n"
		"                       all)\n"
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
		"Exit status 1 when the soak's RSS exceeds window_bytes + pool_bytes + %.0f MiB,\n"
		"2 on an error.\n", ROUNDS_MAX, SOAK_SLACK_BYTES / MIB);
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
		case 'o': ret = parse_list(optarg, adump_wb_mode_keys, MODE_COUNT, o.modes); break;
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
		ret = adump_wb_part_host(&o);
	fflush(stdout);
	if (o.parts[PART_DEVICE] && ret == 0)
		ret = adump_wb_part_device(&o);
	fflush(stdout);
	if (o.parts[PART_SOAK] && ret == 0)
		ret = adump_wb_part_soak(&o, &is_over);
	fflush(stdout);
	if (o.parts[PART_PERSIST] && ret == 0)
		ret = adump_wb_part_persist(&o);
	if (ret < 0)
		return 2;
	return is_over ? 1 : 0;
}
