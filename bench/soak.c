/* SPDX-License-Identifier: Apache-2.0 */
/* The soak (issue 13), shared by tests/faults/test_soak.c (CI size) and `adump bench
 * --verify-crc` (any size): Add ops on N streams of the simulated NPU, tensor sizes
 * log-uniform from 4 bytes (one float) to a maximum, every op's three CRC32Cs taken at launch
 * (the inputs from the host copy of the device pattern, the output computed on the host:
 * small integers, so every sum is exact) and recomputed from the dump files or from the
 * callback chunks; every op must be found exactly once with all three CRCs equal. Host RSS
 * (statm's resident) is sampled each time the launched bytes (or ops) cross a step, and once
 * at the end, after the streams synchronised. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/soak_int.h"
#include "proto/proto.h"

uint64_t adump_bench_rss(void)
{
	unsigned long long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static uint64_t soak_rand(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int soak_add(struct adump_bench_soak *k, unsigned s, uint64_t bytes, uint64_t *rng,
		    unsigned *cap, float *out)
{
	struct soak_op *op;

	if (k->op_count[s] == cap[s]) {
		void *p = realloc(k->ops[s], (cap[s] ? cap[s] * 2 : 64) * sizeof(*op));

		if (!p)
			return -ENOMEM;
		k->ops[s] = p;
		cap[s] = cap[s] ? cap[s] * 2 : 64;
	}
	op = &k->ops[s][k->op_count[s]++];
	memset(op, 0, sizeof(*op));
	op->count = bytes / 4 ? bytes / 4 : 1;
	op->self_at = soak_rand(rng) % (k->max_count - op->count + 1);
	op->other_at = k->max_count + soak_rand(rng) % (k->max_count - op->count + 1);
	for (uint64_t i = 0; i < op->count; i++)
		out[i] = k->pattern[op->self_at + i] + k->pattern[op->other_at + i];
	op->crc[0] = adump_crc32c(0, k->pattern + op->self_at, op->count * 4);
	op->crc[1] = adump_crc32c(0, k->pattern + op->other_at, op->count * 4);
	op->crc[2] = adump_crc32c(0, out, op->count * 4);
	if (op->count > k->stream_max[s])
		k->stream_max[s] = op->count;
	k->op_total++;
	k->tensor_bytes += 3 * op->count * 4;
	return 0;
}

/* The ops, sizes and launch CRCs: the largest tensor first on stream 0, the smallest on
 * stream 1, then log-uniform draws in [4, drawn_max] round-robin until total. */
static int soak_plan(struct adump_bench_soak *k)
{
	const struct adump_bench_soak_opts *o = &k->o;
	unsigned top = 63 - (unsigned)__builtin_clzll(o->drawn_max);
	unsigned *cap = calloc(o->stream_count, sizeof(*cap));
	uint64_t rng = o->seed;
	float *out = malloc(k->max_count * sizeof(float));
	int ret = cap && out ? 0 : -ENOMEM;

	for (uint64_t i = 0; ret == 0 && i < 2 * k->max_count; i++)
		k->pattern[i] = (float)(soak_rand(&rng) % 2048) - 1024.0f;
	for (unsigned s = 0, n = 0; ret == 0 && k->tensor_bytes < o->total;
	     s = (s + 1) % o->stream_count, n++) {
		unsigned shift = 2 + (top > 2 ? (unsigned)(soak_rand(&rng) % (top - 1)) : 0);
		uint64_t bytes = ((uint64_t)1 << shift) + soak_rand(&rng) % ((uint64_t)1 << shift);

		if (bytes > o->drawn_max)
			bytes = o->drawn_max;
		if (n < 2)
			bytes = n == 0 ? o->max_bytes : 4;
		ret = soak_add(k, s, bytes, &rng, cap, out);
	}
	free(out);
	free(cap);
	return ret;
}

int adump_bench_soak_create(const struct adump_bench_soak_opts *o, struct adump_bench_soak **out)
{
	struct adump_bench_soak *k;
	size_t pattern_bytes;
	unsigned n;
	int ret;

	if (!o->stream_count || o->max_bytes < 4 || o->drawn_max < 4 || o->drawn_max > o->max_bytes ||
	    !o->total || !o->rss_step)
		return -EINVAL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->o = *o;
	n = o->stream_count;
	pthread_mutex_init(&k->lock, NULL);
	k->max_count = o->max_bytes / 4;
	pattern_bytes = 2 * k->max_count * sizeof(float);
	k->pattern = malloc(pattern_bytes);
	k->ops = calloc(n, sizeof(*k->ops));
	k->op_count = calloc(n, sizeof(*k->op_count));
	k->stream_max = calloc(n, sizeof(*k->stream_max));
	k->out = calloc(n, sizeof(*k->out));
	if (!k->pattern || !k->ops || !k->op_count || !k->stream_max || !k->out) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = soak_plan(k);
	if (ret == 0)
		ret = adump_dev_open(0, &k->dev);
	if (ret == 0)
		ret = adump_dev_malloc(k->dev, pattern_bytes, &k->dev_pattern);
	if (ret == 0)
		ret = adump_dev_memcpy(k->dev, k->dev_pattern, pattern_bytes, k->pattern,
				       pattern_bytes, ADUMP_COPY_HOST_TO_DEVICE);
	/* Each stream's out buffer written once now, so that it is resident before the run
	 * and the RSS curve shows the capture, not the first touch of the device memory. */
	for (unsigned s = 0; ret == 0 && s < n; s++) {
		uint64_t bytes = (k->stream_max[s] ? k->stream_max[s] : 1) * 4;

		ret = adump_dev_malloc(k->dev, bytes, &k->out[s]);
		if (ret == 0)
			ret = adump_dev_memcpy(k->dev, k->out[s], bytes, k->pattern, bytes,
					       ADUMP_COPY_HOST_TO_DEVICE);
	}
	if (ret < 0)
		goto fail;
	*out = k;
	return 0;
fail:
	adump_bench_soak_destroy(k);
	return ret;
}

void adump_bench_soak_destroy(struct adump_bench_soak *k)
{
	if (!k)
		return;
	for (unsigned s = 0; s < k->o.stream_count; s++) {
		if (k->out && k->out[s])
			adump_dev_free(k->dev, k->out[s]);
		if (k->ops)
			free(k->ops[s]);
	}
	if (k->dev_pattern)
		adump_dev_free(k->dev, k->dev_pattern);
	if (k->dev)
		adump_dev_close(k->dev);
	while (k->open) {
		struct soak_partial *p = k->open;

		k->open = p->next;
		free(p->head);
		free(p->name);
		free(p);
	}
	free(k->out);
	free(k->stream_max);
	free(k->op_count);
	free(k->ops);
	free(k->pattern);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

uint64_t adump_bench_soak_ops(const struct adump_bench_soak *k)
{
	return k->op_total;
}

uint64_t adump_bench_soak_bytes(const struct adump_bench_soak *k)
{
	return k->tensor_bytes;
}

static void rss_sample(struct adump_bench_soak *k)
{
	uint64_t rss = adump_bench_rss();

	pthread_mutex_lock(&k->lock);
	if (k->rss_count < ADUMP_BENCH_SOAK_RSS_MAX)
		k->rss[k->rss_count++] = rss;
	pthread_mutex_unlock(&k->lock);
}

struct soak_stream {
	struct adump_bench_soak *k;
	unsigned index;
	struct adump_dev_stream *stream;
	int error;
};

static void *soak_stream_main(void *arg)
{
	struct soak_stream *c = arg;
	struct adump_bench_soak *k = c->k;
	char name[64];

	for (unsigned i = 0; i < k->op_count[c->index] && !c->error; i++) {
		const struct soak_op *op = &k->ops[c->index][i];
		struct adump_dev_tensor self = {
			.data = (float *)k->dev_pattern + op->self_at, .dtype = ADUMP_DT_FLOAT,
			.format = ADUMP_FORMAT_ND, .dim_count = 1, .dims = { (int64_t)op->count },
			.bytes = op->count * 4,
		};
		struct adump_dev_tensor other = self, out = self;
		struct adump_dev_dump dump = { .op_type = "Add", .op_name = name,
					       .tensor_mask = ADUMP_DUMP_ALL };
		uint64_t step = k->o.rss_step, add = k->o.is_step_ops ? 1 : 3 * op->count * 4;
		uint64_t before;

		other.data = (float *)k->dev_pattern + op->other_at;
		out.data = k->out[c->index];
		snprintf(name, sizeof(name), "soak_%u_%u", c->index, i);
		c->error = adump_dev_launch_add(c->stream, &self, &other, 1.0, &out, &dump);
		/* One sample per step crossed, by the thread that crossed it. */
		before = atomic_fetch_add(&k->launched, add);
		if ((before + add) / step > before / step)
			rss_sample(k);
	}
	if (!c->error)
		c->error = adump_dev_stream_sync(c->stream);
	return NULL;
}

int adump_bench_soak_run(struct adump_bench_soak *k, struct adump_session *s)
{
	unsigned n = k->o.stream_count, started = 0;
	struct soak_stream *c = calloc(n, sizeof(*c));
	pthread_t *threads = calloc(n, sizeof(*threads));
	int ret = c && threads ? 0 : -ENOMEM;

	k->rss_count = 0;
	atomic_store(&k->launched, 0);
	for (unsigned i = 0; ret == 0 && i < n; i++) {
		c[i] = (struct soak_stream){ .k = k, .index = i };
		ret = adump_dev_stream_create(k->dev, &c[i].stream);
		if (ret == 0) {
			ret = adump_session_attach(s, c[i].stream);
			if (ret < 0) {
				adump_dev_stream_destroy(c[i].stream);
				break;
			}
		}
		if (ret == 0)
			ret = -pthread_create(&threads[i], NULL, soak_stream_main, &c[i]);
		if (ret < 0) {
			adump_session_detach(s, c[i].stream);
			adump_dev_stream_destroy(c[i].stream);
			break;
		}
		started++;
	}
	for (unsigned i = 0; i < started; i++) {
		pthread_join(threads[i], NULL);
		if (ret == 0)
			ret = c[i].error;
		adump_session_detach(s, c[i].stream);
		adump_dev_stream_destroy(c[i].stream);
	}
	rss_sample(k);
	free(threads);
	free(c);
	return ret;
}

void adump_bench_soak_result(struct adump_bench_soak *k, struct adump_bench_soak_result *r)
{
	uint64_t first;

	memset(r, 0, sizeof(*r));
	for (unsigned s = 0; s < k->o.stream_count; s++)
		for (unsigned i = 0; i < k->op_count[s]; i++) {
			struct soak_op *op = &k->ops[s][i];

			if (op->seen == 0) {
				if (!r->lost++ && !r->first_lost[0])
					snprintf(r->first_lost, sizeof(r->first_lost),
						 "soak_%u_%u", s, i);
			} else {
				r->duplicated += op->seen - 1;
			}
			op->seen = 0;
		}
	r->ops = k->op_total;
	r->tensors = 3 * (k->op_total - r->lost);
	r->corrupt = k->corrupt + k->out_of_order + (k->open ? 1 : 0);
	r->verified_bytes = k->verified_bytes;
	snprintf(r->first_corrupt, sizeof(r->first_corrupt), "%s",
		 k->out_of_order ? "callback chunks out of order" :
		 k->open ? "a callback file never ended" : k->first);
	r->rss_count = k->rss_count;
	memcpy(r->rss, k->rss, sizeof(r->rss));
	/* Flat: every sample after the first step (the warm-up: the pool's staging memory
	 * becomes resident early) within 5 % of that first one. */
	first = k->rss_count ? k->rss[0] : 0;
	r->rss_flat = k->rss_count >= 2;
	for (unsigned i = 1; i < k->rss_count; i++) {
		double ratio = first ? (double)k->rss[i] / (double)first : 0;

		if (ratio > r->rss_max_ratio)
			r->rss_max_ratio = ratio;
		if (ratio > 1.05 || ratio < 0.95)
			r->rss_flat = false;
	}
	k->corrupt = 0;
	k->out_of_order = 0;
	k->verified_bytes = 0;
	k->first[0] = '\0';
}

void adump_bench_soak_set_step(struct adump_bench_soak *k, uint64_t step)
{
	k->o.rss_step = step ? step : 1;
}
