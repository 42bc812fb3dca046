/* SPDX-License-Identifier: Apache-2.0 */
/* The soak, at CI size: 16 streams, 256 MiB of tensors (32 MiB in sanitizer builds, where
 * ADUMP_TEST_MAX_BYTES also caps sizes): sizes log-uniform from 4 bytes (one float, the
 * smallest tensor an Add takes) to 1 MiB, and one 64 MiB tensor (at log-uniform sizes up to
 * 64 MiB, 256 MiB would be a dozen ops). The CRC32C of every tensor
 * is taken at launch (inputs from the host copies, the output computed on the host) and
 * recomputed once from the dump files and once, in a second run, from the callback chunks:
 * every op must be found exactly once, with all three CRCs equal. Seeded (ADUMP_TEST_SEED). */
#include <isa-l/crc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <ftw.h>

#include "adump/adump.h"
#include "adump/device.h"
#include "adump/reader.h"
#include "helpers.h"

#define STREAMS 16
#define MAX_TENSOR (64ull << 20)        /* the one largest tensor */
#define MAX_DRAWN (1ull << 20)          /* the log-uniform draws */
#define TOTAL (256ull << 20)
#define SANITIZER_TOTAL (32ull << 20)

struct soak_op {
	uint64_t count;                 /* floats per tensor */
	uint64_t self_at, other_at;     /* float offsets into the pattern */
	uint32_t crc[3];                /* self, other, out, taken at launch */
	unsigned seen;                  /* times found in the dumps */
};

struct soak {
	uint64_t max_count;             /* floats in the largest tensor */
	float *pattern;                 /* host copy of the device pattern */
	void *dev_pattern;
	struct adump_dev *dev;
	struct soak_op *ops[STREAMS];
	unsigned op_count[STREAMS];
	uint64_t stream_max[STREAMS];   /* floats in each stream's largest tensor */
	pthread_mutex_t lock;           /* seen counters and mismatch, from worker threads */
	unsigned mismatches;
	char first_mismatch[256];
};

static char *dir;
static uint64_t seed;

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

static uint32_t crc32c(const void *data, uint64_t len)
{
	/* ISA-L's iSCSI CRC is CRC32C with the inversions left to the caller. */
	uint32_t crc = ~0u;
	const unsigned char *p = data;

	while (len) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;

		crc = crc32_iscsi((unsigned char *)p, n, crc);
		p += n;
		len -= (uint64_t)n;
	}
	return ~crc;
}

/* The workload: sizes, offsets and the launch-time CRCs, the same for both runs. */
static void soak_plan(struct soak *k)
{
	const char *max_env = getenv("ADUMP_TEST_MAX_BYTES");
	uint64_t max_bytes = MAX_TENSOR, drawn_max = MAX_DRAWN, total = TOTAL, planned = 0;
	uint64_t rng = seed;
	unsigned cap[STREAMS] = { 0 };
	float *out;

	if (max_env && strtoull(max_env, NULL, 0)) {
		total = SANITIZER_TOTAL;
		if (strtoull(max_env, NULL, 0) < max_bytes)
			max_bytes = strtoull(max_env, NULL, 0);
		if (max_bytes < drawn_max)
			drawn_max = max_bytes;
	}
	memset(k, 0, sizeof(*k));
	pthread_mutex_init(&k->lock, NULL);
	k->max_count = max_bytes / 4;
	/* Small integers: every sum is exact, so the host computes the device's output. */
	k->pattern = malloc(2 * k->max_count * sizeof(float));
	ck_assert_ptr_nonnull(k->pattern);
	for (uint64_t i = 0; i < 2 * k->max_count; i++)
		k->pattern[i] = (float)(t_rand(&rng) % 2048) - 1024.0f;
	out = malloc(k->max_count * sizeof(float));
	ck_assert_ptr_nonnull(out);
	/* The largest tensor first, on stream 0, and the smallest on stream 1; then draws. */
	for (unsigned s = 0, n = 0; planned < total; s = (s + 1) % STREAMS, n++) {
		unsigned top = 63 - (unsigned)__builtin_clzll(drawn_max);
		unsigned shift = 2 + (unsigned)(t_rand(&rng) % (top - 1));
		uint64_t bytes = ((uint64_t)1 << shift) + t_rand(&rng) % ((uint64_t)1 << shift);
		struct soak_op *op;

		if (bytes > drawn_max)
			bytes = drawn_max;
		if (n < 2)
			bytes = n == 0 ? max_bytes : 4;
		if (k->op_count[s] == cap[s]) {
			cap[s] = cap[s] ? cap[s] * 2 : 64;
			k->ops[s] = realloc(k->ops[s], cap[s] * sizeof(*k->ops[s]));
			ck_assert_ptr_nonnull(k->ops[s]);
		}
		op = &k->ops[s][k->op_count[s]++];
		memset(op, 0, sizeof(*op));
		op->count = bytes / 4;
		op->self_at = t_rand(&rng) % (k->max_count - op->count + 1);
		op->other_at = k->max_count + t_rand(&rng) % (k->max_count - op->count + 1);
		for (uint64_t i = 0; i < op->count; i++)
			out[i] = k->pattern[op->self_at + i] + k->pattern[op->other_at + i];
		op->crc[0] = crc32c(k->pattern + op->self_at, op->count * 4);
		op->crc[1] = crc32c(k->pattern + op->other_at, op->count * 4);
		op->crc[2] = crc32c(out, op->count * 4);
		if (op->count > k->stream_max[s])
			k->stream_max[s] = op->count;
		planned += 3 * op->count * 4;
	}
	free(out);
	ck_assert_int_eq(adump_dev_open(0, &k->dev), 0);
	ck_assert_int_eq(adump_dev_malloc(k->dev, 2 * k->max_count * sizeof(float), &k->dev_pattern),
			 0);
	ck_assert_int_eq(adump_dev_memcpy(k->dev, k->dev_pattern, 2 * k->max_count * sizeof(float),
					  k->pattern, 2 * k->max_count * sizeof(float),
					  ADUMP_COPY_HOST_TO_DEVICE), 0);
}

static void soak_free(struct soak *k)
{
	adump_dev_free(k->dev, k->dev_pattern);
	adump_dev_close(k->dev);
	for (unsigned s = 0; s < STREAMS; s++)
		free(k->ops[s]);
	free(k->pattern);
	pthread_mutex_destroy(&k->lock);
}

struct soak_stream {
	struct soak *k;
	unsigned index;
	struct adump_dev_stream *stream;
	void *out;
	int error;
};

static void *soak_stream_main(void *arg)
{
	struct soak_stream *c = arg;
	struct soak *k = c->k;
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

		other.data = (float *)k->dev_pattern + op->other_at;
		out.data = c->out;
		snprintf(name, sizeof(name), "soak_%u_%u", c->index, i);
		c->error = adump_dev_launch_add(c->stream, &self, &other, 1.0, &out, &dump);
	}
	if (!c->error)
		c->error = adump_dev_stream_sync(c->stream);
	return NULL;
}

static void run_streams(struct soak *k, struct adump_session *s)
{
	struct soak_stream c[STREAMS];
	pthread_t threads[STREAMS];

	for (unsigned i = 0; i < STREAMS; i++) {
		c[i] = (struct soak_stream){ .k = k, .index = i };
		ck_assert_int_eq(adump_dev_stream_create(k->dev, &c[i].stream), 0);
		ck_assert_int_eq(adump_dev_malloc(k->dev, (k->stream_max[i] ? k->stream_max[i] : 1) * 4,
						  &c[i].out), 0);
		ck_assert_int_eq(adump_session_attach(s, c[i].stream), 0);
		ck_assert_int_eq(pthread_create(&threads[i], NULL, soak_stream_main, &c[i]), 0);
	}
	for (unsigned i = 0; i < STREAMS; i++) {
		pthread_join(threads[i], NULL);
		ck_assert_int_eq(c[i].error, 0);
		ck_assert_int_eq(adump_session_detach(s, c[i].stream), 0);
		adump_dev_free(k->dev, c[i].out);
		adump_dev_stream_destroy(c[i].stream);
	}
}

static void mismatch(struct soak *k, const char *fmt, const char *what)
{
	pthread_mutex_lock(&k->lock);
	if (!k->mismatches++)
		snprintf(k->first_mismatch, sizeof(k->first_mismatch), fmt, what);
	pthread_mutex_unlock(&k->lock);
}

/* One dump open in @r: find its op by name, recompute the three CRCs, count it seen. */
static void check_dump(struct soak *k, struct adump_reader *r, const char *where)
{
	const struct adump_reader_header *h = adump_reader_header(r);
	static const size_t piece = 1u << 20;
	unsigned s, i;
	struct soak_op *op;
	unsigned char *buf = malloc(piece);

	ck_assert_ptr_nonnull(buf);
	if (sscanf(h->op_name, "soak_%u_%u", &s, &i) != 2 || s >= STREAMS || i >= k->op_count[s] ||
	    h->tensor_count != 3) {
		mismatch(k, "%s: not an op of the soak", where);
		free(buf);
		return;
	}
	op = &k->ops[s][i];
	for (uint32_t t = 0; t < 3; t++) {
		uint64_t len = h->tensors[t].info.bytes, done = 0;
		uint32_t crc = ~0u;

		if (len != op->count * 4) {
			mismatch(k, "%s: a tensor's size differs from its launch", where);
			break;
		}
		while (done < len) {
			size_t n = len - done < piece ? (size_t)(len - done) : piece;

			if (adump_reader_read(r, t, done, buf, n) < 0) {
				mismatch(k, "%s: a tensor cannot be read", where);
				free(buf);
				return;
			}
			crc = crc32_iscsi(buf, (int)n, crc);
			done += n;
		}
		if (~crc != op->crc[t])
			mismatch(k, "%s: a tensor's CRC32C differs from the one taken at launch",
				 where);
	}
	pthread_mutex_lock(&k->lock);
	op->seen++;
	pthread_mutex_unlock(&k->lock);
	free(buf);
}

/* Every op found exactly once, no CRC differing. */
static void check_all_seen(struct soak *k, const char *run)
{
	uint64_t ops = 0;

	ck_assert_msg(k->mismatches == 0, "%s: %u corrupt (seed %llu), first %s", run,
		      k->mismatches, (unsigned long long)seed, k->first_mismatch);
	for (unsigned s = 0; s < STREAMS; s++)
		for (unsigned i = 0; i < k->op_count[s]; i++) {
			ck_assert_msg(k->ops[s][i].seen == 1, "%s: op soak_%u_%u found %u times "
				      "(seed %llu)", run, s, i, k->ops[s][i].seen,
				      (unsigned long long)seed);
			k->ops[s][i].seen = 0;
			ops++;
		}
	fprintf(stderr, "test_soak: %s: %llu ops on %d streams, every tensor's CRC32C equal to "
		"its launch's\n", run, (unsigned long long)ops, STREAMS);
}

/* ---- from the files ---- */

static struct soak *walk_soak;
static struct adump_reader *walk_reader;

static int check_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag != FTW_F)
		return 0;
	if (adump_reader_open(walk_reader, path) < 0) {
		mismatch(walk_soak, "%s", adump_reader_error(walk_reader));
		return 0;
	}
	check_dump(walk_soak, walk_reader, path);
	adump_reader_close(walk_reader);
	return 0;
}

START_TEST(test_soak_files)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s;
	struct adump_stats st;
	struct soak k;
	char run[4200];

	soak_plan(&k);
	cfg.dump_path = dir;
	cfg.time_dir = "soak";
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	run_streams(&k, s);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_failed + st.drops + st.write_errors, 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	snprintf(run, sizeof(run), "%s/soak", dir);
	walk_soak = &k;
	ck_assert_int_eq(adump_reader_create(&walk_reader), 0);
	ck_assert_int_eq(nftw(run, check_file, 16, FTW_PHYS), 0);
	adump_reader_destroy(walk_reader);
	check_all_seen(&k, "files");
	soak_free(&k);
}
END_TEST

/* ---- from the callback chunks ---- */

/* A file being delivered: chunks come in order, per file; files concurrently. */
struct partial {
	struct partial *next;
	char *name;
	unsigned char *bytes;
	size_t len, cap;
};

struct delivery {
	struct soak *k;
	pthread_mutex_t lock;
	struct partial *open;
	_Atomic unsigned out_of_order;
};

static int on_chunk(const struct adump_chunk *chunk, void *user)
{
	struct delivery *d = user;
	struct partial *p, **link;
	struct adump_reader *r;

	pthread_mutex_lock(&d->lock);
	for (link = &d->open; *link && strcmp((*link)->name, chunk->file_name); link = &(*link)->next)
		;
	p = *link;
	if (!p) {
		p = calloc(1, sizeof(*p));
		ck_assert_ptr_nonnull(p);
		p->name = strdup(chunk->file_name);
		p->next = d->open;
		d->open = p;
		link = &d->open;
	}
	pthread_mutex_unlock(&d->lock);
	/* Only this file's worker touches @p until its last chunk. */
	if (chunk->offset != p->len)
		d->out_of_order++;
	if (p->len + chunk->len > p->cap) {
		p->cap = (p->len + chunk->len) * 2;
		p->bytes = realloc(p->bytes, p->cap);
		ck_assert_ptr_nonnull(p->bytes);
	}
	memcpy(p->bytes + p->len, chunk->data, chunk->len);
	p->len += chunk->len;
	if (!chunk->is_last)
		return 0;
	ck_assert_int_eq(adump_reader_create(&r), 0);
	if (adump_reader_open_mem(r, p->bytes, p->len, p->name) < 0)
		mismatch(d->k, "%s", adump_reader_error(r));
	else
		check_dump(d->k, r, p->name);
	adump_reader_destroy(r);
	pthread_mutex_lock(&d->lock);
	for (link = &d->open; *link != p; link = &(*link)->next)
		;
	*link = p->next;
	pthread_mutex_unlock(&d->lock);
	free(p->bytes);
	free(p->name);
	free(p);
	return 0;
}

START_TEST(test_soak_callback)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct delivery d = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct adump_session *s;
	struct adump_stats st;
	struct soak k;

	soak_plan(&k);
	d.k = &k;
	cfg.dump_path = dir;
	cfg.time_dir = "soak";
	cfg.sink = ADUMP_SINK_CALLBACK;
	cfg.chunk_fn = on_chunk;
	cfg.chunk_user = &d;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	run_streams(&k, s);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.callback_errors + st.drops, 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_ptr_null(d.open);
	ck_assert_uint_eq(d.out_of_order, 0);
	check_all_seen(&k, "callback chunks");
	soak_free(&k);
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
