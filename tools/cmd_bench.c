/* SPDX-License-Identifier: Apache-2.0 */
/* `adump bench`: K Add operators on each of N streams of the simulated NPU, every op dumped,
 * tensor sizes drawn log-uniformly from [min, max]; prints what was captured and how fast. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "adump/adump.h"
#include "adump/device.h"
#include "tools/tool.h"

struct bench_opts {
	unsigned streams;
	unsigned ops;
	uint64_t min_size;
	uint64_t max_size;
	const char *out;
	unsigned workers;
	uint64_t chunk;
	uint64_t pool;
	uint64_t seed;
	enum adump_sink sink;
	enum adump_on_full on_full;
	enum adump_writer_kind writer;
	bool json;
};

struct bench_stream {
	const struct bench_opts *opts;
	struct adump_dev *dev;
	struct adump_dev_stream *stream;
	void *self_mem;
	void *other_mem;
	void *out_mem;
	uint64_t rng;
	int error;
	uint64_t tensor_bytes;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: adump bench --out DIR [options]\n\n"
		"Runs K Add operators on each of N streams of the simulated NPU, dumps every op\n"
		"(inputs self, other and output out; alpha as an attribute) and reports the capture.\n"
		"Exits 0 only if every dump file completed.\n\n"
		"  --streams N        streams, one producer thread each (default 4)\n"
		"  --ops K            operators per stream (default 200)\n"
		"  --min-size SIZE    smallest tensor, bytes; K/M/G suffixes (default 1K)\n"
		"  --max-size SIZE    largest tensor (default 4M); sizes are log-uniform in between\n"
		"  --out DIR          dump_path: files go to DIR/<YYYYMMDDhhmmss>/0/\n"
		"  --workers W        capture workers (default: one per core, at most N)\n"
		"  --chunk SIZE       DMA chunk and staging buffer size (default 2M)\n"
		"  --pool SIZE        staging pool, all streams together (default 256M)\n"
		"  --seed S           workload seed (default 1)\n"
		"  --sink file|callback  write files, or hand the bytes to a callback that reads them\n"
		"  --on-full block|drop  producer policy when its buffers are all in flight (block)\n"
		"  --io auto|uring|pwrite  write backend (default auto; ADUMP_IO=pwrite also forces pwrite)\n"
		"  --json             end with one JSON object: files, bytes, seconds, gbps, failed, ...\n"
		"  --help             this text\n");
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

/* Log-uniform in [lo, hi]. */
static uint64_t draw_size(uint64_t *s, uint64_t lo, uint64_t hi)
{
	double v = exp(log((double)lo) + rng_unit(s) * (log((double)hi) - log((double)lo)));
	uint64_t n = (uint64_t)llround(v);

	return n < lo ? lo : n > hi ? hi : n;
}

static int chunk_touch(const struct adump_chunk *chunk, void *user)
{
	const unsigned char *p = chunk->data;
	uint64_t *sum = user, acc = 0;

	/* A consumer that reads every byte once, as a real one would. */
	for (size_t i = 0; i < chunk->len; i += 64)
		acc += p[i];
	__atomic_fetch_add(sum, acc, __ATOMIC_RELAXED);
	return 0;
}

static const int32_t bench_dtypes[] = { ADUMP_DT_FLOAT, ADUMP_DT_FLOAT16, ADUMP_DT_INT32 };

static void *stream_main(void *arg)
{
	struct bench_stream *bs = arg;
	const struct bench_opts *o = bs->opts;

	for (unsigned k = 0; k < o->ops; k++) {
		int32_t dtype = bench_dtypes[rng_next(&bs->rng) % 3];
		unsigned elem = dtype == ADUMP_DT_FLOAT16 ? 2 : 4;
		uint64_t bytes = draw_size(&bs->rng, o->min_size, o->max_size);
		uint64_t count = bytes / elem ? bytes / elem : 1;
		uint64_t room = (o->max_size - count * elem) / elem;
		uint64_t off = room ? (rng_next(&bs->rng) % room) * elem : 0;
		struct adump_dev_tensor self = {
			.data = (char *)bs->self_mem + off, .dtype = dtype, .format = ADUMP_FORMAT_ND,
			.dim_count = 1, .dims = { (int64_t)count }, .bytes = count * elem,
		};
		struct adump_dev_tensor other = self, out = self;
		char name[64];
		struct adump_dev_dump dump = { .op_type = "Add", .op_name = name,
					       .tensor_mask = ADUMP_DUMP_ALL };
		double alpha = (double)(rng_next(&bs->rng) % 5) - 2.0;

		other.data = (char *)bs->other_mem + off;
		out.data = bs->out_mem;
		snprintf(name, sizeof(name), "bench/add_%u_%u", adump_dev_stream_id(bs->stream), k);
		bs->error = adump_dev_launch_add(bs->stream, &self, &other, alpha, &out, &dump);
		if (bs->error < 0)
			return NULL;
		bs->tensor_bytes += 3 * count * elem;
	}
	bs->error = adump_dev_stream_sync(bs->stream);
	return NULL;
}

static int parse_opts(int argc, char **argv, struct bench_opts *o)
{
	static const struct option longopts[] = {
		{ "streams", required_argument, NULL, 's' }, { "ops", required_argument, NULL, 'k' },
		{ "min-size", required_argument, NULL, 'm' }, { "max-size", required_argument, NULL, 'M' },
		{ "out", required_argument, NULL, 'o' }, { "workers", required_argument, NULL, 'w' },
		{ "chunk", required_argument, NULL, 'c' }, { "pool", required_argument, NULL, 'p' },
		{ "seed", required_argument, NULL, 'S' }, { "sink", required_argument, NULL, 'K' },
		{ "on-full", required_argument, NULL, 'F' }, { "io", required_argument, NULL, 'I' },
		{ "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *io = getenv("ADUMP_IO");
	uint64_t v;
	int c;

	*o = (struct bench_opts){ .streams = 4, .ops = 200, .min_size = 1024, .max_size = 4u << 20,
				  .seed = 1 };
	if (io && !strcmp(io, "pwrite"))
		o->writer = ADUMP_WRITER_PWRITE;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
		case 'k':
		case 'w':
			if (tool_parse_size(optarg, &v) < 0 || v > 1000000) {
				fprintf(stderr, "adump bench: bad number '%s'\n", optarg);
				return -1;
			}
			if (c == 's')
				o->streams = (unsigned)v;
			else if (c == 'k')
				o->ops = (unsigned)v;
			else
				o->workers = (unsigned)v;
			break;
		case 'm':
		case 'M':
		case 'c':
		case 'p':
			if (tool_parse_size(optarg, &v) < 0) {
				fprintf(stderr, "adump bench: bad size '%s' (e.g. 512, 4K, 2M, 1G)\n", optarg);
				return -1;
			}
			if (c == 'm')
				o->min_size = v;
			else if (c == 'M')
				o->max_size = v;
			else if (c == 'c')
				o->chunk = v;
			else
				o->pool = v;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'S':
			o->seed = strtoull(optarg, NULL, 0);
			break;
		case 'K':
			if (!strcmp(optarg, "file"))
				o->sink = ADUMP_SINK_FILE;
			else if (!strcmp(optarg, "callback"))
				o->sink = ADUMP_SINK_CALLBACK;
			else {
				fprintf(stderr, "adump bench: --sink takes file or callback\n");
				return -1;
			}
			break;
		case 'F':
			if (!strcmp(optarg, "block"))
				o->on_full = ADUMP_ON_FULL_BLOCK;
			else if (!strcmp(optarg, "drop"))
				o->on_full = ADUMP_ON_FULL_DROP;
			else {
				fprintf(stderr, "adump bench: --on-full takes block or drop\n");
				return -1;
			}
			break;
		case 'I':
			if (!strcmp(optarg, "auto"))
				o->writer = ADUMP_WRITER_AUTO;
			else if (!strcmp(optarg, "uring"))
				o->writer = ADUMP_WRITER_URING;
			else if (!strcmp(optarg, "pwrite"))
				o->writer = ADUMP_WRITER_PWRITE;
			else {
				fprintf(stderr, "adump bench: --io takes auto, uring or pwrite\n");
				return -1;
			}
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "adump bench: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!o->out && o->sink == ADUMP_SINK_FILE) {
		fprintf(stderr, "adump bench: --out DIR is required with the file sink\n");
		return -1;
	}
	if (!o->streams || !o->ops || !o->min_size || o->min_size > o->max_size ||
	    o->streams > 64) {
		fprintf(stderr, "adump bench: need 1..64 streams, ops > 0 and 0 < min-size <= max-size\n");
		return -1;
	}
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	struct bench_opts o;
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *session = NULL;
	struct adump_dev *dev = NULL;
	struct bench_stream *bs = NULL;
	pthread_t *threads = NULL;
	struct adump_stats st;
	struct timespec t0, t1;
	uint64_t touched = 0, tensor_bytes = 0;
	unsigned created = 0;
	int ret, rc = 1;

	if (parse_opts(argc, argv, &o) < 0)
		return 2;
	cfg.dump_path = o.out;
	cfg.worker_count = o.workers;
	cfg.chunk_bytes = o.chunk;
	cfg.pool_bytes = o.pool;
	cfg.stream_max = o.streams;
	cfg.on_full = o.on_full;
	cfg.writer = o.writer;
	cfg.sink = o.sink;
	cfg.chunk_fn = chunk_touch;
	cfg.chunk_user = &touched;
	ret = adump_session_create(&cfg, &session);
	if (ret < 0) {
		fprintf(stderr, "adump bench: cannot start a capture session: %s\n", adump_strerror(ret));
		return 1;
	}
	ret = adump_dev_open(0, &dev);
	if (ret < 0)
		goto out;
	bs = calloc(o.streams, sizeof(*bs));
	threads = calloc(o.streams, sizeof(*threads));
	if (!bs || !threads) {
		ret = -ENOMEM;
		goto out;
	}
	/* Inputs are filled once per stream; each op reads a window of them at a random
	 * offset, so the device never waits on the host while the clock runs. */
	for (; created < o.streams; created++) {
		struct bench_stream *b = &bs[created];
		uint64_t rng = o.seed * 0x9E3779B97F4A7C15ULL + created + 1;
		void *host;

		b->opts = &o;
		b->dev = dev;
		b->rng = rng;
		ret = adump_dev_stream_create(dev, &b->stream);
		if (ret < 0)
			goto out;
		if ((ret = adump_dev_malloc(dev, o.max_size, &b->self_mem)) < 0 ||
		    (ret = adump_dev_malloc(dev, o.max_size, &b->other_mem)) < 0 ||
		    (ret = adump_dev_malloc(dev, o.max_size, &b->out_mem)) < 0)
			goto out;
		host = malloc(o.max_size);
		if (!host) {
			ret = -ENOMEM;
			goto out;
		}
		for (int which = 0; which < 2; which++) {
			uint32_t *w = host;

			/* Small integers: valid for every dtype, no NaN, no overflow. */
			for (uint64_t i = 0; i < o.max_size / 4; i++)
				w[i] = (uint32_t)(rng_next(&rng) % 64) | 0x3c003c00u * (i & 1);
			ret = adump_dev_memcpy(dev, which ? b->other_mem : b->self_mem, o.max_size, host,
					       o.max_size / 4 * 4, ADUMP_COPY_HOST_TO_DEVICE);
			if (ret < 0)
				break;
		}
		free(host);
		if (ret < 0)
			goto out;
		ret = adump_session_attach(session, b->stream);
		if (ret < 0)
			goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < o.streams; i++)
		pthread_create(&threads[i], NULL, stream_main, &bs[i]);
	for (unsigned i = 0; i < o.streams; i++)
		pthread_join(threads[i], NULL);
	ret = adump_session_flush(session);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (unsigned i = 0; i < o.streams; i++) {
		if (bs[i].error < 0 && ret == 0)
			ret = bs[i].error;
		tensor_bytes += bs[i].tensor_bytes;
	}

	adump_stats_get(session, &st);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	uint64_t expected = (uint64_t)o.streams * o.ops;
	bool all_done = st.files_completed == expected && st.files_failed == 0;
	const char *backend = o.sink == ADUMP_SINK_CALLBACK ? "callback" :
			      st.backend == ADUMP_WRITER_URING ? "io_uring" : "pwrite";

	printf("adump bench: %u streams x %u ops, tensors %llu..%llu B, sink %s\n", o.streams, o.ops,
	       (unsigned long long)o.min_size, (unsigned long long)o.max_size, backend);
	if (o.sink == ADUMP_SINK_FILE)
		printf("  dir        %s\n", adump_session_dir(session));
	printf("  files      %llu completed, %llu failed (of %llu)\n",
	       (unsigned long long)st.files_completed, (unsigned long long)st.files_failed,
	       (unsigned long long)expected);
	printf("  bytes      %llu (tensors %llu)\n", (unsigned long long)st.bytes,
	       (unsigned long long)tensor_bytes);
	printf("  seconds    %.3f\n", secs);
	printf("  GB/s       %.3f\n", secs > 0 ? (double)st.bytes / secs / 1e9 : 0.0);
	printf("  files/s    %.0f\n", secs > 0 ? (double)st.files_completed / secs : 0.0);
	printf("  producer   %llu waits, %.3f ms waiting; %llu drops\n",
	       (unsigned long long)st.producer_wait_count, (double)st.producer_wait_ns / 1e6,
	       (unsigned long long)st.drops);
	if (ret < 0)
		printf("  error      %s\n", adump_strerror(ret));
	if (o.json)
		printf("{\"files\":%llu,\"bytes\":%llu,\"tensor_bytes\":%llu,\"seconds\":%.6f,"
		       "\"gbps\":%.6f,\"files_per_s\":%.1f,\"failed\":%llu,\"drops\":%llu,"
		       "\"producer_waits\":%llu,\"producer_wait_ms\":%.3f,\"streams\":%u,\"ops\":%u,"
		       "\"workers\":%u,\"backend\":\"%s\",\"error\":%d}\n",
		       (unsigned long long)st.files_completed, (unsigned long long)st.bytes,
		       (unsigned long long)tensor_bytes, secs,
		       secs > 0 ? (double)st.bytes / secs / 1e9 : 0.0,
		       secs > 0 ? (double)st.files_completed / secs : 0.0,
		       (unsigned long long)st.files_failed, (unsigned long long)st.drops,
		       (unsigned long long)st.producer_wait_count, (double)st.producer_wait_ns / 1e6,
		       o.streams, o.ops, st.worker_count, backend, ret);
	rc = (ret == 0 && all_done) ? 0 : 1;
out:
	if (ret < 0 && rc)
		fprintf(stderr, "adump bench: %s\n", adump_strerror(ret));
	if (session && bs)
		for (unsigned i = 0; i < created; i++)
			if (bs[i].stream)
				adump_session_detach(session, bs[i].stream);
	adump_session_destroy(session);
	if (bs) {
		for (unsigned i = 0; i < o.streams; i++) {
			adump_dev_stream_destroy(bs[i].stream);
			if (bs[i].self_mem)
				adump_dev_free(dev, bs[i].self_mem);
			if (bs[i].other_mem)
				adump_dev_free(dev, bs[i].other_mem);
			if (bs[i].out_mem)
				adump_dev_free(dev, bs[i].out_mem);
		}
	}
	free(bs);
	free(threads);
	adump_dev_close(dev);
	return rc;
}
