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
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adump/reader.h"
#include "bench/bench.h"
#include "proto/proto.h"

struct soak_op {
	uint64_t count;                         /* floats per tensor */
	uint64_t self_at, other_at;             /* float offsets into the pattern */
	uint32_t crc[3];                        /* self, other, out, taken at launch */
	unsigned seen;                          /* times found in the dumps */
};

/* A file being delivered to the callback sink: chunks come in order per file. Checked as
 * it streams: only its head (length and header) is kept, each tensor's CRC32C is taken
 * chunk by chunk, so the verifier's memory does not grow with the files in flight (holding
 * them whole, it made the callback soak's RSS climb 1.16x whatever the writer). */
struct soak_partial {
	struct soak_partial *next;
	char *name;
	unsigned char *head;                    /* the first bytes, until the header parses */
	size_t head_len, head_cap;
	bool is_parsed, is_bad;
	uint64_t len;                           /* bytes delivered so far */
	uint64_t file_bytes;                    /* from the header */
	struct soak_op *op;
	uint64_t tensor_at[3], tensor_bytes[3];
	uint32_t crc[3];
};

struct adump_bench_soak {
	struct adump_bench_soak_opts o;
	uint64_t max_count;                     /* floats in the largest tensor */
	float *pattern;                         /* host copy of the device pattern */
	void *dev_pattern;
	struct adump_dev *dev;
	struct soak_op **ops;                   /* per stream */
	unsigned *op_count;
	uint64_t *stream_max;                   /* floats in each stream's largest tensor */
	void **out;                             /* per stream, made resident before the run */
	uint64_t op_total, tensor_bytes;
	_Atomic uint64_t launched;              /* tensor bytes (or ops) launched so far */
	pthread_mutex_t lock;                   /* seen, corrupt, rss[], partials */
	uint64_t corrupt, verified_bytes;
	char first[256];
	uint64_t rss[ADUMP_BENCH_SOAK_RSS_MAX];
	unsigned rss_count;
	struct soak_partial *open;
	uint64_t out_of_order;
};

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

static void corrupt(struct adump_bench_soak *k, const char *where, const char *what)
{
	pthread_mutex_lock(&k->lock);
	if (!k->corrupt++)
		snprintf(k->first, sizeof(k->first), "%s: %s", where, what);
	pthread_mutex_unlock(&k->lock);
}

/* One dump open in @r: find its op by name, recompute the three CRCs, count it seen. */
static void check_dump(struct adump_bench_soak *k, struct adump_reader *r, const char *where)
{
	const struct adump_reader_header *h = adump_reader_header(r);
	static const size_t piece = 1u << 20;
	unsigned char *buf = malloc(piece);
	uint64_t checked = 0;
	struct soak_op *op;
	unsigned s, i;

	if (!buf) {
		corrupt(k, where, "out of memory");
		return;
	}
	if (sscanf(h->op_name, "soak_%u_%u", &s, &i) != 2 || s >= k->o.stream_count ||
	    i >= k->op_count[s] || h->tensor_count != 3) {
		corrupt(k, where, "not an op of the soak");
		free(buf);
		return;
	}
	op = &k->ops[s][i];
	for (uint32_t t = 0; t < 3; t++) {
		uint64_t len = h->tensors[t].info.bytes, done = 0;
		uint32_t crc = 0;

		if (len != op->count * 4) {
			corrupt(k, where, "a tensor's size differs from its launch");
			break;
		}
		while (done < len) {
			size_t n = len - done < piece ? (size_t)(len - done) : piece;

			if (adump_reader_read(r, t, done, buf, n) < 0) {
				corrupt(k, where, "a tensor cannot be read");
				free(buf);
				return;
			}
			crc = adump_crc32c(crc, buf, n);
			done += n;
		}
		if (crc != op->crc[t])
			corrupt(k, where, "a tensor's CRC32C differs from the one taken at launch");
		else
			checked += len;
	}
	pthread_mutex_lock(&k->lock);
	op->seen++;
	k->verified_bytes += checked;
	pthread_mutex_unlock(&k->lock);
	free(buf);
}

static struct adump_bench_soak *walk_soak;
static struct adump_reader *walk_reader;

static int check_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag != FTW_F)
		return 0;
	if (adump_reader_open(walk_reader, path) < 0) {
		corrupt(walk_soak, path, adump_reader_error(walk_reader));
		return 0;
	}
	check_dump(walk_soak, walk_reader, path);
	adump_reader_close(walk_reader);
	return 0;
}

int adump_bench_soak_verify_dir(struct adump_bench_soak *k, const char *dir)
{
	int ret = adump_reader_create(&walk_reader);

	if (ret < 0)
		return ret;
	/* nftw has no user pointer: one directory walk at a time per process. */
	walk_soak = k;
	if (nftw(dir, check_file, 16, FTW_PHYS) != 0)
		ret = errno ? -errno : -EIO;
	adump_reader_destroy(walk_reader);
	walk_reader = NULL;
	return ret;
}

/* The op a callback file belongs to, from the op name in its file name (Add.soak_S_I....),
 * or NULL. */
static struct soak_op *op_of_name(struct adump_bench_soak *k, const char *name)
{
	const char *at = strstr(name, ".soak_");
	unsigned s, i;

	if (!at || sscanf(at + 1, "soak_%u_%u", &s, &i) != 2 || s >= k->o.stream_count ||
	    i >= k->op_count[s])
		return NULL;
	return &k->ops[s][i];
}

static long head_read_at(void *ctx, uint64_t offset, void *buf, size_t len)
{
	const struct soak_partial *p = ctx;

	if (offset >= p->head_len)
		return 0;
	if (len > p->head_len - offset)
		len = (size_t)(p->head_len - offset);
	memcpy(buf, p->head + offset, len);
	return (long)len;
}

static void head_close(void *ctx)
{
	(void)ctx;                              /* the partial owns its head */
}

static const struct adump_reader_source_ops head_ops = {
	.read_at = head_read_at, .close = head_close,
};

/* Parse the header from the head once it is all there: 0 (parsed, or not all there yet) or
 * the message of why the file is not a soak op's. The file's size is the op's (the reader
 * checks the header against it), its tensors the op's three. */
static const char *head_parse(struct adump_bench_soak *k, struct soak_partial *p)
{
	struct adump_reader_source *src;
	struct adump_reader *r;
	const struct adump_reader_header *h;
	uint64_t header_bytes;
	const char *why = NULL;

	if (p->head_len < 8)
		return NULL;
	memcpy(&header_bytes, p->head, 8);
	if (header_bytes > ADUMP_READER_HEADER_MAX)
		return "header too long";
	if (p->head_len < 8 + header_bytes)
		return NULL;
	p->op = op_of_name(k, p->name);
	if (!p->op)
		return "not an op of the soak";
	if (adump_reader_create(&r) < 0)
		return "out of memory";
	if (adump_reader_source_create(&head_ops, p, 8 + header_bytes + 3 * p->op->count * 4,
				       &src) < 0) {
		adump_reader_destroy(r);
		return "out of memory";
	}
	if (adump_reader_open_source(r, src, p->name) < 0) {
		why = "header does not parse as the op's";
	} else {
		unsigned s, i;

		h = adump_reader_header(r);
		if (sscanf(h->op_name, "soak_%u_%u", &s, &i) != 2 || s >= k->o.stream_count ||
		    i >= k->op_count[s] || &k->ops[s][i] != p->op || h->tensor_count != 3) {
			why = "not an op of the soak";
		} else {
			for (uint32_t t = 0; t < 3; t++) {
				p->tensor_at[t] = h->tensors[t].offset;
				p->tensor_bytes[t] = h->tensors[t].info.bytes;
				if (p->tensor_bytes[t] != p->op->count * 4)
					why = "a tensor's size differs from its launch";
			}
			p->file_bytes = h->file_bytes;
		}
	}
	adump_reader_destroy(r);
	p->is_parsed = why == NULL;
	return why;
}

/* The bytes [@at, @at + @len) of the file: into each tensor's CRC32C where they overlap it. */
static void crc_feed(struct soak_partial *p, uint64_t at, const unsigned char *data, size_t len)
{
	for (uint32_t t = 0; t < 3; t++) {
		uint64_t lo = p->tensor_at[t], hi = lo + p->tensor_bytes[t];
		uint64_t from = at > lo ? at : lo, to = at + len < hi ? at + len : hi;

		if (from < to)
			p->crc[t] = adump_crc32c(p->crc[t], data + (from - at), (size_t)(to - from));
	}
}

/* Append @len bytes to the head. Return: NULL or why not. */
static const char *head_take(struct soak_partial *p, const unsigned char *data, size_t len)
{
	if (p->head_len + len > ADUMP_READER_HEADER_MAX + 8)
		return "header too long";
	if (p->head_len + len > p->head_cap) {
		size_t cap = (p->head_len + len) * 2;
		void *head = realloc(p->head, cap);

		if (!head)
			return "out of memory";
		p->head = head;
		p->head_cap = cap;
	}
	memcpy(p->head + p->head_len, data, len);
	p->head_len += len;
	return NULL;
}

static void partial_end(struct adump_bench_soak *k, struct soak_partial *p)
{
	uint64_t checked = 0;

	if (p->is_bad)
		return;
	if (!p->is_parsed || p->len != p->file_bytes) {
		corrupt(k, p->name, p->is_parsed ? "file length differs from its header's" :
						   "file ended inside its header");
		return;
	}
	for (uint32_t t = 0; t < 3; t++) {
		if (p->crc[t] != p->op->crc[t]) {
			corrupt(k, p->name, "a tensor's CRC32C differs from the one taken at launch");
			return;
		}
		checked += p->tensor_bytes[t];
	}
	pthread_mutex_lock(&k->lock);
	p->op->seen++;
	k->verified_bytes += checked;
	pthread_mutex_unlock(&k->lock);
}

int adump_bench_soak_chunk(const struct adump_chunk *chunk, void *user)
{
	struct adump_bench_soak *k = user;
	struct soak_partial *p, **link;
	const unsigned char *data = chunk->data;
	size_t len = chunk->len;
	uint64_t at = chunk->offset;

	pthread_mutex_lock(&k->lock);
	for (link = &k->open; *link && strcmp((*link)->name, chunk->file_name); link = &(*link)->next)
		;
	p = *link;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (p)
			p->name = strdup(chunk->file_name);
		if (!p || !p->name) {
			free(p);
			pthread_mutex_unlock(&k->lock);
			corrupt(k, chunk->file_name, "out of memory");
			return 0;
		}
		p->next = k->open;
		k->open = p;
	}
	if (chunk->offset != p->len)
		k->out_of_order++;
	pthread_mutex_unlock(&k->lock);
	/* Only this file's worker touches @p until its last chunk. */
	/* The head: the 8-byte length, then the header it announces, then it is parsed. */
	while (!p->is_parsed && !p->is_bad && len) {
		uint64_t header_bytes = 0, need;
		const char *why;

		if (p->head_len >= 8)
			memcpy(&header_bytes, p->head, 8);
		need = p->head_len < 8 ? 8 - p->head_len : 8 + header_bytes - p->head_len;
		if (need > len)
			need = len;
		why = head_take(p, data, (size_t)need);
		if (!why) {
			data += need;
			len -= (size_t)need;
			at += need;
			why = head_parse(k, p);
		}
		if (why) {
			corrupt(k, p->name, why);
			p->is_bad = true;
		}
	}
	if (p->is_parsed && len)
		crc_feed(p, at, data, len);
	p->len = chunk->offset + chunk->len;
	if (!chunk->is_last)
		return 0;
	partial_end(k, p);
	pthread_mutex_lock(&k->lock);
	for (link = &k->open; *link != p; link = &(*link)->next)
		;
	*link = p->next;
	pthread_mutex_unlock(&k->lock);
	free(p->head);
	free(p->name);
	free(p);
	return 0;
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
