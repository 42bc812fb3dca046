/* SPDX-License-Identifier: Apache-2.0 */
/* `adump bench`: runs a workload of Add operators on N streams of the simulated NPU, dumps
 * every op through a capture session, and reports how fast and at what cost; with --compare
 * it also runs, in the same invocation and on the same bytes, the baselines of bench/ (naive
 * dumper, disk-limit, create-limit, ring-limit with the channel hand-off beside it, no dump)
 * and reports the ratios. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adump/adump.h"
#include "adump/device.h"
#include "bench/bench.h"
#include "common/common.h"
#include "tools/tool.h"

#define PROGRESS_AFTER_S 2.0
#define RSS_SLACK_BYTES (64ull << 20)
#define FILL_PIECE_BYTES (16ull << 20)
/* disk-limit writes as fio did for machine-limits.md: 1 MiB at queue depth 32. (Buffered
 * io_uring writes of 2 MiB to one file are punted to a single io-wq worker and ran 3x
 * slower here: see bench/RESULTS.md.) */
#define DISK_LIMIT_DEPTH 32u
#define DISK_LIMIT_WRITE_BYTES (1u << 20)
/* ring-limit and the channel hand-off move at least this many records, so thread start-up
 * does not dominate; their ratios are taken per record. */
#define RING_LIMIT_MIN_RECORDS (1u << 20)
#define HEADER_CAP 65536u

enum sink_kind { SINK_FILE, SINK_PACKED, SINK_CALLBACK };
/* Who hands the dumps to the session: the simulated NPU's streams (DMA engines), or host
 * streams (include/adump/host.h) that copy, or reference, the same tensors. */
enum bench_producer { PRODUCER_DEVICE, PRODUCER_HOST, PRODUCER_HOST_NOCOPY };
static const char *const producer_names[] = { "device", "host", "host-nocopy" };

/* Baselines --compare runs; --baselines picks a subset. */
enum {
	BASE_NAIVE = 1u << 0,
	BASE_DISK = 1u << 1,
	BASE_DISK_DIRECT = 1u << 2,
	BASE_CREATE = 1u << 3,
	BASE_RING = 1u << 4,
	BASE_NODUMP = 1u << 5,
	BASE_ALL = 0x3f,
};

static const char *const base_names[] = { "naive", "disk-limit", "disk-limit-direct",
					  "create-limit", "ring-limit", "nodump" };
#define BASE_COUNT 6

static double per_s(double n, double s);

struct bench_opts {
	struct adump_bench_workload w;
	const char *out;
	unsigned workers;
	uint64_t chunk;
	uint64_t pool;
	enum sink_kind sink;
	enum adump_on_full on_full;
	enum adump_writer_kind writer;
	enum adump_io io;
	enum adump_compress compress;
	double compute_gbps;                    /* per stream; < 0: auto */
	bool is_compare;
	unsigned baselines;
	bool is_sync;
	bool is_warmup;                         /* one untimed pass of the kernels first */
	bool json;
	bool describe;
	enum bench_producer producer;
	bool is_verify;                         /* callback sink: check every file's bytes */
};

/* Device-side buffers: per input class a self and an other buffer, per stream
 * BENCH_OUT_BUFFERS outs used in turn, as a training step writes each activation to a buffer
 * of its own: with one out per stream every kernel would have to wait for the DMA engine to
 * finish reading the previous op's output before overwriting it. */
#define BENCH_OUT_BUFFERS 2
struct bench_dev {
	struct adump_dev *dev;
	void *self[3], *other[3];
	uint64_t cap[3];
	uint64_t bytes;                         /* all device memory the bench allocated */
};

struct bench_stream {
	const struct adump_bench_plan *plan;
	const struct bench_dev *bd;
	struct adump_dev_stream *stream;
	void *out_mem[BENCH_OUT_BUFFERS];
	unsigned index;
	bool is_dump;
	int error;
	_Atomic uint64_t ops_done;
	_Atomic unsigned *finished;             /* counts producers that returned */
	/* --producer host*: the host stream the stream's thread adopts in the capture. */
	enum bench_producer producer;
	struct adump_host_stream *host;
	_Atomic uint32_t host_id;               /* for the verifier; 0 until opened */
	struct adump_bench_host_counts *counts; /* zero copy: the releases */
};

struct phase {
	bool has_run;
	struct adump_bench_timing t;
	double run_gbps[2];                     /* disk baselines: before and after the capture */
	struct adump_bench_timing chan;         /* ring-limit: the channel hand-off, same records */
	struct adump_bench_timing ring_read;    /* ring-limit: the bare pair, consumer reading */
	unsigned chan_buffers;                  /* ring-limit: buffers of both, a stream's count */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: adump bench --out DIR [options]\n\n"
		"Runs Add operators on N streams of the simulated NPU, dumps every op (inputs self and\n"
		"other, output out; op i's alpha is a function of the seed and i, not written to the\n"
		"files) through a capture session and reports what was captured and at what cost.\n"
		"Exits 0 only if every dump file completed (and, with --compare, every baseline ran).\n\n"
		"Workload\n"
		"  --profile P        range (default): sizes log-uniform in [--min-size, --max-size];\n"
		"                     transformer: a Llama-2-7B-style decoder layer's training step\n"
		"                       (hidden 4096, seq 2048; fp32/bf16/int32; bf16 runs as float16);\n"
		"                     tiny: 64 B - 1 KiB tensors, very many ops;\n"
		"                     huge: float32 tensors of 256 - 512 MiB\n"
		"                     (--profile P --describe prints the shapes)\n"
		"  --streams N        streams, one producer thread each (default 4)\n"
		"  --ops K            operators per stream (range default 200)\n"
		"  --total SIZE       stop once the ops' tensors reach SIZE bytes (K/M/G suffixes)\n"
		"  --min-size SIZE    smallest tensor (range profile; default 1K)\n"
		"  --max-size SIZE    largest tensor (range profile; default 4M)\n"
		"  --seed S           workload seed (default 1)\n"
		"  --data D           random (default; dense values, incompressible) or relu (about\n"
		"                     half zeros, like activations)\n"
		"  --compute-gbps R   simulated compute: each kernel takes at least the time its bytes\n"
		"                     need at R GB/s (per stream, so N streams produce up to N*R);\n"
		"                     'auto' picks R so that the dump volume is half of disk-limit\n\n"
		"Capture\n"
		"  --out DIR          dump_path: files go to DIR/<YYYYMMDDhhmmss>/0/; baselines write\n"
		"                     under DIR/baselines/ (remove DIR afterwards)\n"
		"  --sink S           file (default), packed (per-worker segments + index) or\n"
		"                     callback (a consumer that reads every cache line, no files)\n"
		"  --compress C       none (default) or lz4 (one LZ4 frame per file, <name>.lz4)\n"
		"  --io IO            buffered (default) or direct (O_DIRECT from the staging buffers)\n"
		"  --writer W         auto (default), uring or pwrite (ADUMP_IO=pwrite also forces\n"
		"                     pwrite; --io auto|uring|pwrite is accepted as an old spelling)\n"
		"  --workers W        capture workers (default: one per core, at most N)\n"
		"  --chunk SIZE       DMA chunk and staging buffer size (default 2M)\n"
		"  --pool SIZE        staging pool, all streams together (default 256M)\n"
		"  --on-full P        block (default) or drop: producer policy when its buffers are\n"
		"                     all in flight\n"
		"  --producer P       device (default): the NPU streams' DMA engines dump each Add;\n"
		"                     host: each stream's thread hands the same tensors to a host\n"
		"                     stream (include/adump/host.h), copied; host-nocopy: the same\n"
		"                     without copy (released by callback). Host producers run no\n"
		"                     kernels: no --compute-gbps, no naive or nodump baseline\n"
		"  --verify           with a host producer and --sink callback: check every file,\n"
		"                     chunk by chunk, byte for byte against the file its op must make\n"
		"  --no-sync          do not end timed file phases with syncfs() (then they measure\n"
		"                     the page cache, not the disk)\n"
		"  --no-warmup        skip the untimed pass of the kernels (no dumps, no pacing) that\n"
		"                     otherwise runs before every timed phase: the simulated device's\n"
		"                     first pass over freshly filled memory runs several times slower\n"
		"                     than every later one, and would be charged to whichever phase\n"
		"                     came first\n\n"
		"Comparison and output\n"
		"  --compare          also run, in this invocation and on the same bytes: naive (one\n"
		"                     thread: per op launch, sync, copy to host, pack the header, open,\n"
		"                     write, close), disk-limit (sequential io_uring writes of the same\n"
		"                     bytes to one file, 1 MiB at depth 32; also O_DIRECT with --io\n"
		"                     direct), create-limit (create + write + close of as many files,\n"
		"                     same sizes, one thread), ring-limit (as many records, at least 1M,\n"
		"                     through a bare ck_ring SPSC pair; compared per record) and nodump\n"
		"                     (the workload with dumping off, for 'overhead'). With ring-limit\n"
		"                     the same records also go through the pipeline's own channel\n"
		"                     (ring/ring.h with a producer port: reserve, commit, pop, release,\n"
		"                     a worker's doorbell sleep; a stream's buffer count, on-full\n"
		"                     block) and no other work:\n"
		"                     the 'chan hand-off' row, also given as a fraction of ring-limit\n"
		"  --baselines LIST   comma-separated subset of naive,disk,disk-direct,create,ring,\n"
		"                     nodump (implies --compare)\n"
		"  --json             end with one JSON object: bytes, files, tensors, seconds, gbps,\n"
		"                     files_per_s, tensors_per_s, cpu_seconds, peak_rss_bytes,\n"
		"                     producer_wait_*_us, enqueue_p99_us, failed, ...; with --compare\n"
		"                     also 'baselines' (each with seconds and 'ratio' = its time / the\n"
		"                     capture's, i.e. the capture's speed relative to it) and 'overhead';\n"
		"                     ring_limit also has chan_records, chan_buffers, chan_seconds,\n"
		"                     chan_cpu_seconds, chan_records_per_s, chan_error and chan_ratio\n"
		"                     (the channel hand-off's records/s over the bare ring pair's),\n"
		"                     and read_seconds, read_records_per_s, read_error and\n"
		"                     chan_ratio_read for the bare pair run again with its consumer\n"
		"                     reading each record (a cache line each)\n"
		"  --help             this text\n\n"
		"Timing: a phase runs from its first op to its last byte written; for file sinks and\n"
		"the disk baselines that includes a final syncfs() of the dump filesystem, so buffered\n"
		"runs are measured at the speed of the disk, as O_DIRECT ones are. Data left dirty by\n"
		"setup or an earlier phase is synced before each phase starts, outside its clock.\n"
		"Peak RSS is the process's VmHWM during the capture; the simulated device memory\n"
		"(host memory here) is reported apart as device_bytes.\n");
}

static int parse_baselines(const char *s, unsigned *out)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {
		{ "naive", BASE_NAIVE }, { "disk", BASE_DISK }, { "disk-direct", BASE_DISK_DIRECT },
		{ "create", BASE_CREATE }, { "ring", BASE_RING }, { "nodump", BASE_NODUMP },
		{ "all", BASE_ALL },
	};
	char *copy = strdup(s), *save = NULL, *tok;
	unsigned bits = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(tok, names[i].name))
				break;
		if (i == sizeof(names) / sizeof(names[0])) {
			free(copy);
			return -1;
		}
		bits |= names[i].bit;
	}
	free(copy);
	*out = bits;
	return 0;
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "adump bench: %s '%s'\n", what, arg);
	return -1;
}

static int parse_writer(const char *arg, enum adump_writer_kind *out)
{
	if (!strcmp(arg, "auto"))
		*out = ADUMP_WRITER_AUTO;
	else if (!strcmp(arg, "uring"))
		*out = ADUMP_WRITER_URING;
	else if (!strcmp(arg, "pwrite"))
		*out = ADUMP_WRITER_PWRITE;
	else
		return -1;
	return 0;
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
		{ "writer", required_argument, NULL, 'W' }, { "profile", required_argument, NULL, 'P' },
		{ "total", required_argument, NULL, 'T' }, { "compress", required_argument, NULL, 'C' },
		{ "data", required_argument, NULL, 'D' }, { "compute-gbps", required_argument, NULL, 'G' },
		{ "compare", no_argument, NULL, 'x' }, { "baselines", required_argument, NULL, 'B' },
		{ "no-sync", no_argument, NULL, 'n' }, { "no-warmup", no_argument, NULL, 'u' },
		{ "describe", no_argument, NULL, 'd' },
		{ "producer", required_argument, NULL, 'R' }, { "verify", no_argument, NULL, 'V' },
		{ "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *io = getenv("ADUMP_IO");
	bool is_pwrite_forced = io && !strcmp(io, "pwrite");
	uint64_t v;
	char *end;
	int c;

	*o = (struct bench_opts){
		.w = { .stream_count = 4, .min_bytes = 1024, .max_bytes = 4u << 20, .seed = 1 },
		.is_sync = true,
		.is_warmup = true,
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
		case 'k':
		case 'w':
			if (tool_parse_size(optarg, &v) < 0 || v > 100000000)
				return bad("bad number", optarg);
			if (c == 's')
				o->w.stream_count = (unsigned)v;
			else if (c == 'k')
				o->w.ops_per_stream = v;
			else
				o->workers = (unsigned)v;
			break;
		case 'm':
		case 'M':
		case 'c':
		case 'p':
		case 'T':
			if (tool_parse_size(optarg, &v) < 0)
				return bad("bad size (e.g. 512, 4K, 2M, 1G)", optarg);
			if (c == 'm')
				o->w.min_bytes = v;
			else if (c == 'M')
				o->w.max_bytes = v;
			else if (c == 'c')
				o->chunk = v;
			else if (c == 'p')
				o->pool = v;
			else
				o->w.total_bytes = v;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'S':
			if (tool_parse_u64(optarg, &v) < 0)
				return bad("bad number", optarg);
			o->w.seed = v;
			break;
		case 'K':
			if (!strcmp(optarg, "file"))
				o->sink = SINK_FILE;
			else if (!strcmp(optarg, "packed"))
				o->sink = SINK_PACKED;
			else if (!strcmp(optarg, "callback"))
				o->sink = SINK_CALLBACK;
			else
				return bad("--sink takes file, packed or callback, not", optarg);
			break;
		case 'F':
			if (!strcmp(optarg, "block"))
				o->on_full = ADUMP_ON_FULL_BLOCK;
			else if (!strcmp(optarg, "drop"))
				o->on_full = ADUMP_ON_FULL_DROP;
			else
				return bad("--on-full takes block or drop, not", optarg);
			break;
		case 'I':
			/* --io auto|uring|pwrite is the old spelling of --writer. */
			if (!strcmp(optarg, "buffered"))
				o->io = ADUMP_IO_BUFFERED;
			else if (!strcmp(optarg, "direct"))
				o->io = ADUMP_IO_DIRECT;
			else if (parse_writer(optarg, &o->writer) < 0)
				return bad("--io takes buffered or direct, not", optarg);
			break;
		case 'W':
			if (parse_writer(optarg, &o->writer) < 0)
				return bad("--writer takes auto, uring or pwrite, not", optarg);
			break;
		case 'P':
			if (adump_bench_profile_parse(optarg, &o->w.profile) < 0)
				return bad("--profile takes range, transformer, tiny or huge, not", optarg);
			break;
		case 'C':
			if (!strcmp(optarg, "none"))
				o->compress = ADUMP_COMPRESS_NONE;
			else if (!strcmp(optarg, "lz4"))
				o->compress = ADUMP_COMPRESS_LZ4;
			else
				return bad("--compress takes none or lz4, not", optarg);
			break;
		case 'D':
			if (!strcmp(optarg, "random"))
				o->w.data = ADUMP_BENCH_DATA_RANDOM;
			else if (!strcmp(optarg, "relu"))
				o->w.data = ADUMP_BENCH_DATA_RELU;
			else
				return bad("--data takes random or relu, not", optarg);
			break;
		case 'G':
			if (!strcmp(optarg, "auto")) {
				o->compute_gbps = -1;
				break;
			}
			o->compute_gbps = strtod(optarg, &end);
			if (end == optarg || *end || !(o->compute_gbps >= 0) || isinf(o->compute_gbps))
				return bad("--compute-gbps takes a rate in GB/s or auto, not", optarg);
			break;
		case 'x':
			o->is_compare = true;
			break;
		case 'B':
			if (parse_baselines(optarg, &o->baselines) < 0)
				return bad("--baselines takes naive,disk,disk-direct,create,ring,nodump, not",
					   optarg);
			o->is_compare = true;
			break;
		case 'n':
			o->is_sync = false;
			break;
		case 'u':
			o->is_warmup = false;
			break;
		case 'd':
			o->describe = true;
			break;
		case 'R':
			if (!strcmp(optarg, "device"))
				o->producer = PRODUCER_DEVICE;
			else if (!strcmp(optarg, "host"))
				o->producer = PRODUCER_HOST;
			else if (!strcmp(optarg, "host-nocopy"))
				o->producer = PRODUCER_HOST_NOCOPY;
			else
				return bad("--producer takes device, host or host-nocopy, not", optarg);
			break;
		case 'V':
			o->is_verify = true;
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
	if (is_pwrite_forced)
		o->writer = ADUMP_WRITER_PWRITE;
	if (optind < argc)
		return bad("unexpected argument", argv[optind]);
	if (o->describe)
		return 0;
	if (!o->out && (o->sink != SINK_CALLBACK || o->is_compare)) {
		fprintf(stderr, "adump bench: --out DIR is required with the file and packed sinks "
				"and with --compare\n");
		return -1;
	}
	if (!o->w.stream_count || o->w.stream_count > 64 || !o->w.min_bytes ||
	    o->w.min_bytes > o->w.max_bytes) {
		fprintf(stderr, "adump bench: need 1..64 streams and 0 < min-size <= max-size\n");
		return -1;
	}
	if (o->compute_gbps < 0 && !o->is_compare) {
		fprintf(stderr, "adump bench: --compute-gbps auto needs --compare (it measures "
				"disk-limit first)\n");
		return -1;
	}
	if (o->producer != PRODUCER_DEVICE &&
	    (o->compute_gbps != 0 || (o->baselines & (BASE_NAIVE | BASE_NODUMP)))) {
		fprintf(stderr, "adump bench: --producer %s runs no kernels: no --compute-gbps, no "
				"naive or nodump baseline\n", producer_names[o->producer]);
		return -1;
	}
	if (o->is_verify && (o->producer == PRODUCER_DEVICE || o->sink != SINK_CALLBACK)) {
		fprintf(stderr, "adump bench: --verify needs --producer host or host-nocopy and "
				"--sink callback\n");
		return -1;
	}
	if (o->is_compare && !o->baselines) {
		o->baselines = BASE_ALL & ~BASE_DISK_DIRECT;
		if (o->producer != PRODUCER_DEVICE)
			o->baselines &= ~(BASE_NAIVE | BASE_NODUMP);
		if (o->io == ADUMP_IO_DIRECT)
			o->baselines |= BASE_DISK_DIRECT;
	}
	if (o->compute_gbps < 0)
		o->baselines |= BASE_DISK;
	if (o->sink == SINK_CALLBACK)
		o->is_sync = false;
	return 0;
}

static int chunk_touch(const struct adump_chunk *chunk, void *user)
{
	const unsigned char *p = chunk->data;
	uint64_t *sum = user, acc = 0;

	/* A consumer that reads every cache line once, as a real one would. */
	for (size_t i = 0; i < chunk->len; i += 64)
		acc += p[i];
	__atomic_fetch_add(sum, acc, __ATOMIC_RELAXED);
	return 0;
}

/* ---- device buffers and the op launches every phase shares ---- */

static int dev_setup(struct bench_dev *bd, const struct adump_bench_plan *plan)
{
	void *host = malloc(FILL_PIECE_BYTES);
	int ret = 0;

	if (!host)
		return -ENOMEM;
	for (unsigned cls = 0; cls < 3 && ret == 0; cls++) {
		uint64_t cap = plan->max_bytes[cls];

		if (!cap)
			continue;
		bd->cap[cls] = cap;
		for (unsigned which = 0; which < 2 && ret == 0; which++) {
			void **mem = which ? &bd->other[cls] : &bd->self[cls];

			ret = adump_dev_malloc(bd->dev, cap, mem);
			if (ret < 0)
				break;
			bd->bytes += cap;
			/* Filled piece by piece so the host side never holds a whole tensor; a
			 * piece's seed depends on its position only, so self and other share
			 * their zero masks under --data relu. */
			for (uint64_t off = 0; off < cap && ret == 0; off += FILL_PIECE_BYTES) {
				uint64_t len = cap - off < FILL_PIECE_BYTES ? cap - off : FILL_PIECE_BYTES;

				adump_bench_fill(host, len, cls, plan->w.data,
						 plan->w.seed * 1000003 + off / FILL_PIECE_BYTES, which);
				ret = adump_dev_memcpy(bd->dev, (char *)*mem + off, cap - off, host, len,
						       ADUMP_COPY_HOST_TO_DEVICE);
			}
		}
	}
	free(host);
	return ret;
}

static void dev_teardown(struct bench_dev *bd)
{
	for (unsigned cls = 0; cls < 3; cls++) {
		if (bd->self[cls])
			adump_dev_free(bd->dev, bd->self[cls]);
		if (bd->other[cls])
			adump_dev_free(bd->dev, bd->other[cls]);
	}
}

/* The out buffer of @op on its stream @bs: the stream's buffers in turn. */
static void *op_out(const struct bench_stream *bs, const struct adump_bench_op *op)
{
	return bs->out_mem[op->index / bs->plan->w.stream_count % BENCH_OUT_BUFFERS];
}

/* The device tensors of @op: windows of the class buffers at the op's offset. */
static void op_tensors(const struct bench_dev *bd, const struct adump_bench_op *op, void *out_mem,
		       struct adump_dev_tensor t[3])
{
	unsigned cls = adump_bench_dtype_class(op->dtype);
	unsigned elem = op->dtype == ADUMP_DT_FLOAT16 ? 2 : 4;
	uint64_t room = (bd->cap[cls] - op->bytes) / elem + 1;
	uint64_t off = (op->window % room) * elem;

	memset(t, 0, 3 * sizeof(*t));
	t[0].data = (char *)bd->self[cls] + off;
	t[0].dtype = op->dtype;
	t[0].format = ADUMP_FORMAT_ND;
	t[0].dim_count = op->dim_count;
	for (uint32_t d = 0; d < op->dim_count; d++)
		t[0].dims[d] = op->dims[d];
	t[0].bytes = op->bytes;
	t[1] = t[0];
	t[1].data = (char *)bd->other[cls] + off;
	t[2] = t[0];
	t[2].data = out_mem;
}

static void host_main(struct bench_stream *bs);

static void *stream_main(void *arg)
{
	struct bench_stream *bs = arg;
	const struct adump_bench_plan *plan = bs->plan;
	struct adump_bench_op op;
	struct adump_dev_tensor t[3];

	if (bs->is_dump && bs->producer != PRODUCER_DEVICE) {
		host_main(bs);
		return NULL;
	}
	for (uint64_t i = bs->index; i < plan->op_count; i += plan->w.stream_count) {
		struct adump_dev_dump dump = { .op_type = "Add", .op_name = op.name,
					       .tensor_mask = ADUMP_DUMP_ALL };

		adump_bench_op_get(plan, i, &op);
		op_tensors(bs->bd, &op, op_out(bs, &op), t);
		bs->error = adump_dev_launch_add(bs->stream, &t[0], &t[1], op.alpha, &t[2],
						 bs->is_dump ? &dump : NULL);
		if (bs->error < 0)
			return NULL;
		atomic_fetch_add_explicit(&bs->ops_done, 1, memory_order_relaxed);
	}
	bs->error = adump_dev_stream_sync(bs->stream);
	return NULL;
}

static void *stream_thread(void *arg)
{
	struct bench_stream *bs = arg;

	stream_main(bs);
	/* Pairs with the acquire load in run_streams(): the error is visible once counted. */
	atomic_fetch_add_explicit(bs->finished, 1, memory_order_release);
	return NULL;
}

/* ---- progress line ---- */

struct progress {
	bool is_enabled;
	bool is_drawn;
	double t0;
	double last;
};

static void progress_start(struct progress *p, bool quiet)
{
	*p = (struct progress){ .is_enabled = !quiet && tool_is_tty(), .t0 = adump_bench_now() };
}

/* @done of @total ops launched; @bytes of about @expected written (0: not known). */
static void progress_draw(struct progress *p, const char *phase, uint64_t done, uint64_t total,
			  uint64_t bytes, uint64_t expected)
{
	double now = adump_bench_now(), el = now - p->t0;

	if (!p->is_enabled || el < PROGRESS_AFTER_S || now - p->last < 0.25)
		return;
	p->last = now;
	if (expected)
		fprintf(stderr, "\r\033[K%s: %.2f of %.2f GB (%.0f%%), %llu/%llu ops launched, "
			"%.2f GB/s, %.1f s", phase, (double)bytes / 1e9, (double)expected / 1e9,
			100.0 * (double)bytes / (double)expected, (unsigned long long)done,
			(unsigned long long)total, el > 0 ? (double)bytes / el / 1e9 : 0.0, el);
	else
		fprintf(stderr, "\r\033[K%s: %llu/%llu ops (%.0f%%), %.1f s", phase,
			(unsigned long long)done, (unsigned long long)total,
			total ? 100.0 * (double)done / (double)total : 100.0, el);
	fflush(stderr);
	p->is_drawn = true;
}

static void progress_end(struct progress *p)
{
	if (p->is_drawn) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	p->is_drawn = false;
}

/* ---- phases that launch ops: the capture and nodump ---- */

struct run_ctx {
	const struct bench_opts *o;
	const struct adump_bench_plan *plan;
	struct bench_dev *bd;
	struct bench_stream *bs;
	const char *sync_dir;
};

/* The capture of a host producer: the stream's ops, their tensors handed to the host stream
 * cmd_bench() opened before the clock started (its staging share made resident then, as a
 * device stream's is at attach), which this thread adopts. */
static void host_main(struct bench_stream *bs)
{
	const struct adump_bench_plan *plan = bs->plan;
	struct adump_bench_op op;
	struct adump_dev_tensor t[3];

	adump_host_stream_adopt(bs->host);
	for (uint64_t i = bs->index; i < plan->op_count; i += plan->w.stream_count) {
		adump_bench_op_get(plan, i, &op);
		op_tensors(bs->bd, &op, op_out(bs, &op), t);
		bs->error = adump_bench_host_dump(bs->host, &op,
						  (const void *[3]){ t[0].data, t[1].data, t[2].data },
						  bs->producer == PRODUCER_HOST_NOCOPY ? bs->counts : NULL);
		if (bs->error < 0)
			return;
		atomic_fetch_add_explicit(&bs->ops_done, 1, memory_order_relaxed);
	}
	bs->error = adump_host_stream_sync(bs->host);
}

/* adump_bench_lookup_fn: host stream @stream_id's task @task_id is op index + task * streams. */
static int host_lookup(void *user, uint32_t stream_id, uint32_t task_id, uint64_t *index,
		       struct adump_bench_op *op, const void *data[3])
{
	struct run_ctx *rc = user;
	unsigned n = rc->plan->w.stream_count;
	struct adump_dev_tensor t[3];

	for (unsigned i = 0; i < n; i++) {
		if (atomic_load_explicit(&rc->bs[i].host_id, memory_order_acquire) != stream_id)
			continue;
		*index = i + (uint64_t)task_id * n;
		if (*index >= rc->plan->op_count)
			return -1;
		adump_bench_op_get(rc->plan, *index, op);
		op_tensors(rc->bd, op, op_out(&rc->bs[i], op), t);
		for (int k = 0; k < 3; k++)
			data[k] = t[k].data;
		return 0;
	}
	return -1;
}

/* Runs every stream's ops in parallel, with or without dump requests; waits for them.
 * @session: polled for the progress line (may be NULL). */
static int run_streams(struct run_ctx *rc, bool is_dump, struct adump_session *session,
		       const char *label)
{
	unsigned n = rc->plan->w.stream_count;
	pthread_t *threads = calloc(n, sizeof(*threads));
	_Atomic unsigned finished = 0;
	struct progress pr;
	unsigned started = 0;
	int ret = 0;

	if (!threads)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		rc->bs[i].is_dump = is_dump;
		rc->bs[i].error = 0;
		rc->bs[i].finished = &finished;
		atomic_store_explicit(&rc->bs[i].ops_done, 0, memory_order_relaxed);
	}
	progress_start(&pr, rc->o->json && !tool_is_tty());
	for (; started < n; started++) {
		ret = -pthread_create(&threads[started], NULL, stream_thread, &rc->bs[started]);
		if (ret < 0)
			break;
	}
	/* The main thread only draws the progress line while the producers run. */
	while (atomic_load_explicit(&finished, memory_order_acquire) < started) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		uint64_t done = 0, bytes = 0;

		for (unsigned i = 0; i < started; i++)
			done += atomic_load_explicit(&rc->bs[i].ops_done, memory_order_relaxed);
		if (session) {
			struct adump_stats st;

			adump_stats_get(session, &st);
			bytes = st.bytes;
		}
		progress_draw(&pr, label, done, rc->plan->op_count, bytes,
			      session ? rc->plan->tensor_bytes : 0);
		nanosleep(&ts, NULL);
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	progress_end(&pr);
	free(threads);
	for (unsigned i = 0; i < n && ret == 0; i++)
		if (rc->bs[i].error < 0)
			ret = rc->bs[i].error;
	return ret;
}

/* ---- naive: one thread, per op launch, sync, copy to host, header, open, write, close ---- */

struct naive_ctx {
	const struct adump_bench_plan *plan;
	const struct bench_dev *bd;
	struct bench_stream *bs;
	const char *dir;                        /* <out>/baselines/naive/0 */
	bool is_quiet;
};

/* The adump_op of @op as the DMA engine would describe it, for a header of the same size. */
static void op_describe(const struct adump_bench_op *op, const struct adump_dev_tensor t[3],
			uint32_t stream_id, struct adump_tensor tensors[3], struct adump_op *out)
{
	for (int k = 0; k < 3; k++) {
		memset(&tensors[k], 0, sizeof(tensors[k]));
		tensors[k].kind = k < 2 ? ADUMP_TENSOR_INPUT : ADUMP_TENSOR_OUTPUT;
		tensors[k].dtype = op->dtype;
		tensors[k].format = ADUMP_FORMAT_ND;
		tensors[k].dim_count = op->dim_count;
		tensors[k].orig_dim_count = op->dim_count;
		for (uint32_t d = 0; d < op->dim_count; d++)
			tensors[k].dims[d] = tensors[k].orig_dims[d] = (uint64_t)op->dims[d];
		tensors[k].address = (uint64_t)(uintptr_t)t[k].data;
		tensors[k].bytes = op->bytes;
		tensors[k].arg_index = k == 1 ? 1 : 0;
	}
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	*out = (struct adump_op){
		.op_type = "Add", .op_name = op->name, .device_id = 0, .stream_id = stream_id,
		.task_id = (uint32_t)op->index, .tensor_count = 3, .tensors = tensors,
		.timestamp_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u,
	};
}

static int run_naive(struct naive_ctx *nc, struct adump_bench_timing *t)
{
	const struct adump_bench_plan *plan = nc->plan;
	uint64_t host_cap = 0;
	unsigned char *header = malloc(HEADER_CAP), *host;
	struct progress pr;
	double t0, c0;
	int ret = 0;

	for (unsigned cls = 0; cls < 3; cls++)
		if (plan->max_bytes[cls] > host_cap)
			host_cap = plan->max_bytes[cls];
	/* One host buffer as large as the largest tensor, reused: the dumper copies a whole
	 * tensor off the device, then writes it. */
	host = malloc(host_cap ? host_cap : 1);
	if (!header || !host) {
		free(header);
		free(host);
		return t->error = -ENOMEM;
	}
	memset(host, 0, host_cap);
	memset(t, 0, sizeof(*t));
	progress_start(&pr, nc->is_quiet);
	t0 = adump_bench_now();
	c0 = adump_bench_cpu_seconds();
	for (uint64_t i = 0; i < plan->op_count && ret == 0; i++) {
		struct adump_bench_op op;
		struct adump_dev_tensor dt[3];
		struct adump_tensor tensors[3];
		struct adump_op aop;
		struct bench_stream *bs;
		char name[4096], path[8192];
		long hlen;
		int fd;

		adump_bench_op_get(plan, i, &op);
		bs = &nc->bs[op.stream];
		op_tensors(nc->bd, &op, op_out(bs, &op), dt);
		ret = adump_dev_launch_add(bs->stream, &dt[0], &dt[1], op.alpha, &dt[2], NULL);
		if (ret == 0)
			ret = adump_dev_stream_sync(bs->stream);
		if (ret < 0)
			break;
		op_describe(&op, dt, adump_dev_stream_id(bs->stream), tensors, &aop);
		hlen = adump_dump_header_pack(&aop, header, HEADER_CAP);
		if (hlen < 0) {
			ret = (int)hlen;
			break;
		}
		ret = adump_dump_file_name(&aop, name, sizeof(name));
		if (ret < 0)
			break;
		snprintf(path, sizeof(path), "%s/%s", nc->dir, name);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
		if (fd < 0) {
			ret = -errno;
			break;
		}
		ret = adump_write_all(fd, header, (size_t)hlen);
		for (int k = 0; k < 3 && ret == 0; k++) {
			ret = adump_dev_memcpy(nc->bd->dev, host, host_cap, dt[k].data, op.bytes,
					       ADUMP_COPY_DEVICE_TO_HOST);
			if (ret == 0)
				ret = adump_write_all(fd, host, op.bytes);
		}
		if (close(fd) < 0 && ret == 0)
			ret = -errno;
		t->bytes += (uint64_t)hlen + 3 * op.bytes;
		t->files++;
		progress_draw(&pr, "naive", i + 1, plan->op_count, t->bytes, plan->tensor_bytes);
	}
	progress_end(&pr);
	t->seconds_unsynced = adump_bench_now() - t0;
	if (ret == 0)
		ret = adump_bench_syncfs(nc->dir);
	t->seconds = adump_bench_now() - t0;
	t->cpu_seconds = adump_bench_cpu_seconds() - c0;
	t->error = ret;
	free(header);
	free(host);
	return ret;
}

/* create-limit file k has the size of dump file k: header (as naive builds it) + 3 tensors. */
struct size_ctx {
	const struct adump_bench_plan *plan;
	const struct bench_dev *bd;
	struct bench_stream *bs;
	unsigned char *header;
};

static uint64_t dump_file_size(uint64_t k, void *user)
{
	struct size_ctx *sc = user;
	struct adump_bench_op op;
	struct adump_dev_tensor dt[3];
	struct adump_tensor tensors[3];
	struct adump_op aop;
	long hlen;

	adump_bench_op_get(sc->plan, k, &op);
	op_tensors(sc->bd, &op, op_out(&sc->bs[op.stream], &op), dt);
	op_describe(&op, dt, 0, tensors, &aop);
	hlen = adump_dump_header_pack(&aop, NULL, 0);
	return (hlen > 0 ? (uint64_t)hlen : 0) + 3 * op.bytes;
}

/* When the last kernel of any of the @n streams ended, on adump_bench_now()'s clock (the
 * warm-up's, if no kernel ran since). */
static double kernels_end(struct bench_stream *bs, unsigned n)
{
	uint64_t last = 0;

	for (unsigned i = 0; i < n; i++) {
		struct adump_dev_stream_stats ds;

		adump_dev_stream_stats(bs[i].stream, &ds);
		last = ds.kernels_end_ns > last ? ds.kernels_end_ns : last;
	}
	return (double)last / 1e9;
}

/* ---- report ---- */

struct result {
	struct adump_stats st;
	double seconds, seconds_unsynced, cpu_seconds;
	double warmup_seconds;                  /* the untimed kernel pass; 0: skipped */
	double kernels_seconds;                 /* from the start to the end of the last kernel */
	uint64_t bytes;                         /* dump bytes before compression */
	uint64_t written_bytes;                 /* as the session counts them */
	uint64_t files, tensors, records;
	uint64_t peak_rss, host_rss;
	uint64_t pool_bytes;
	double wait_p50_us, wait_p99_us, wait_max_us, enqueue_p99_us;
	struct adump_dev_stream_stats dev;      /* the streams' dump waits, summed */
	int error;
	const char *backend;
	char dir[4096];
	/* Host producers: zero-copy releases; with --verify, the files checked. */
	uint64_t released, release_failures;
	uint64_t verified_files, verify_bad, verify_bytes;
	char verify_error[512];
};

static double per_s(double n, double s)
{
	return s > 0 ? n / s : 0.0;
}

/* How many times faster the capture went than baseline @b: its time over the capture's,
 * per byte for the disk baselines (which may have written a slightly different amount),
 * per file, record or op otherwise (the same number in both). */
static double ratio_to(int b, const struct adump_bench_timing *t, const struct result *r)
{
	double scale = 1.0;

	if (t->error < 0 || r->seconds <= 0 || t->seconds <= 0)
		return 0.0;
	if ((b == 1 || b == 2) && t->bytes)
		scale = (double)r->bytes / (double)t->bytes;
	if (b == 4 && t->records)
		scale = (double)r->records / (double)t->records;
	return t->seconds * scale / r->seconds;
}

/* The pipeline's channel hand-off as a fraction of bare ring pair @pair (ring->t, or
 * ring->ring_read whose consumer reads each record) on the same records: what the channel
 * costs beyond ck_ring, with no work around it. 0 if either failed. */
static double chan_ratio(const struct phase *ring, const struct adump_bench_timing *pair)
{
	double chan_rate = per_s((double)ring->chan.records, ring->chan.seconds);
	double ring_rate = per_s((double)pair->records, pair->seconds);

	if (pair->error < 0 || ring->chan.error < 0 || ring_rate <= 0)
		return 0.0;
	return chan_rate / ring_rate;
}

static void print_human(const struct bench_opts *o, const struct adump_bench_plan *plan,
			const struct result *r, const struct phase *ph, const struct bench_dev *bd,
			double compute_gbps, double overhead_adump, double overhead_naive)
{
	static const char *const sink_names[] = { "file", "packed", "callback" };

	printf("adump bench: profile %s, %u streams, %llu ops, %u workers, sink %s (%s), io %s, "
	       "compress %s, data %s\n",
	       adump_bench_profile_name(plan->w.profile), plan->w.stream_count,
	       (unsigned long long)plan->op_count, r->st.worker_count, sink_names[o->sink],
	       r->backend, o->io == ADUMP_IO_DIRECT ? "direct" : "buffered",
	       o->compress == ADUMP_COMPRESS_LZ4 ? "lz4" : "none",
	       plan->w.data == ADUMP_BENCH_DATA_RELU ? "relu" : "random");
	if (plan->w.profile == ADUMP_BENCH_PROFILE_RANGE)
		printf("  tensors    %llu..%llu B\n", (unsigned long long)plan->w.min_bytes,
		       (unsigned long long)plan->w.max_bytes);
	if (compute_gbps > 0)
		printf("  compute    %.3f GB/s per stream (simulated)\n", compute_gbps);
	if (r->dir[0])
		printf("  dir        %s\n", r->dir);
	if (o->producer != PRODUCER_DEVICE)
		printf("  producer   %s streams (include/adump/host.h)%s\n",
		       producer_names[o->producer], o->producer == PRODUCER_HOST_NOCOPY ?
		       ", zero copy" : ", copied by the calling threads");
	if (o->producer == PRODUCER_HOST_NOCOPY)
		printf("  released   %llu, %llu of them failed\n", (unsigned long long)r->released,
		       (unsigned long long)r->release_failures);
	if (o->is_verify)
		printf("  verify     %llu files rebuilt byte for byte from the callback's chunks, "
		       "%llu differ (%.2f GB compared)%s%s\n", (unsigned long long)r->verified_files,
		       (unsigned long long)r->verify_bad, (double)r->verify_bytes / 1e9,
		       r->verify_error[0] ? "; first: " : "", r->verify_error);
	printf("  files      %llu completed, %llu failed (of %llu)\n",
	       (unsigned long long)r->st.files_completed, (unsigned long long)r->st.files_failed,
	       (unsigned long long)plan->op_count);
	printf("  bytes      %llu (tensors %llu)", (unsigned long long)r->bytes,
	       (unsigned long long)plan->tensor_bytes);
	if (o->compress == ADUMP_COMPRESS_LZ4)
		printf(", %llu written", (unsigned long long)r->written_bytes);
	printf("\n  seconds    %.3f (%.3f before %s; the last kernel ended at %.3f)\n", r->seconds,
	       r->seconds_unsynced, o->is_sync ? "syncfs" : "the end", r->kernels_seconds);
	if (r->warmup_seconds > 0)
		printf("  warm-up    %.3f s, untimed (every kernel once, no dumps)\n", r->warmup_seconds);
	printf("  GB/s       %.3f\n", per_s((double)r->bytes / 1e9, r->seconds));
	printf("  files/s    %.0f\n", per_s((double)r->files, r->seconds));
	printf("  tensors/s  %.0f\n", per_s((double)r->tensors, r->seconds));
	printf("  CPU        %.2f s (%.2f s per GB)\n", r->cpu_seconds,
	       r->bytes ? r->cpu_seconds / ((double)r->bytes / 1e9) : 0.0);
	printf("  peak RSS   %.1f MiB (device memory %.1f MiB; host %.1f MiB, limit pool+64M = "
	       "%.0f MiB)\n",
	       (double)r->peak_rss / 1048576, (double)bd->bytes / 1048576,
	       (double)r->host_rss / 1048576, (double)(r->pool_bytes + RSS_SLACK_BYTES) / 1048576);
	printf("  producer   %llu waits, %.3f ms; wait p50 %.1f us, p99 %.1f us, max %.1f us; "
	       "enqueue p99 %.2f us; %llu drops\n",
	       (unsigned long long)r->st.producer_wait_count, (double)r->st.producer_wait_ns / 1e6,
	       r->wait_p50_us, r->wait_p99_us, r->wait_max_us, r->enqueue_p99_us,
	       (unsigned long long)r->st.drops);
	printf("  kernels    %llu waits for a dump to read their output first, %.3f ms; "
	       "%llu for DMA queue room, %.3f ms\n",
	       (unsigned long long)r->dev.fence_waits, (double)r->dev.fence_wait_ns / 1e6,
	       (unsigned long long)r->dev.queue_waits, (double)r->dev.queue_wait_ns / 1e6);
	if (r->error < 0)
		printf("  error      %s\n", adump_strerror(r->error));
	if (!o->is_compare)
		return;
	printf("\n  %-18s %9s %9s %10s %11s %8s %14s\n", "run", "seconds", "GB/s", "files/s",
	       "tensors/s", "CPU s", "adump speed x");
	printf("  %-18s %9.3f %9.3f %10.0f %11.0f %8.2f %14s\n", "adump", r->seconds,
	       per_s((double)r->bytes / 1e9, r->seconds), per_s((double)r->files, r->seconds),
	       per_s((double)r->tensors, r->seconds), r->cpu_seconds, "1.00");
	for (int b = 0; b < BASE_COUNT; b++) {
		const struct adump_bench_timing *t = &ph[b].t;

		if (!ph[b].has_run)
			continue;
		if (t->error < 0) {
			printf("  %-18s failed: %s\n", base_names[b], adump_strerror(t->error));
			continue;
		}
		char gb[16] = "-", fs[16] = "-", ts[16] = "-";

		if (t->bytes)
			snprintf(gb, sizeof(gb), "%.3f", per_s((double)t->bytes / 1e9, t->seconds));
		/* Per-file rates only for the baselines that write one file per op. */
		if (b == 0 || b == 3) {
			snprintf(fs, sizeof(fs), "%.0f", per_s((double)t->files, t->seconds));
			snprintf(ts, sizeof(ts), "%.0f", per_s((double)t->files * 3, t->seconds));
		}
		printf("  %-18s %9.3f %9s %10s %11s %8.2f %14.2f\n", base_names[b], t->seconds, gb, fs,
		       ts, t->cpu_seconds, ratio_to(b, t, r));
		if (b != 4)
			continue;
		/* Per record, as ring-limit: the capture against the pipeline's channel alone. */
		if (ph[b].chan.error < 0)
			printf("  %-18s failed: %s\n", "chan hand-off", adump_strerror(ph[b].chan.error));
		else
			printf("  %-18s %9.3f %9s %10s %11s %8.2f %14.2f\n", "chan hand-off",
			       ph[b].chan.seconds, "-", "-", "-", ph[b].chan.cpu_seconds,
			       ratio_to(b, &ph[b].chan, r));
	}
	if (ph[5].has_run && ph[5].t.error == 0 && ph[5].t.seconds > 0) {
		printf("  overhead   adump %+.1f %%", 100 * overhead_adump);
		if (ph[0].has_run && ph[0].t.error == 0)
			printf(", naive %+.1f %%", 100 * overhead_naive);
		printf(" (time with dump - without) / without%s\n",
		       compute_gbps > 0 ? "" : "; meaningful with --compute-gbps");
		printf("             adump: %+.1f %% while the kernels ran, %+.1f %% after the last one "
		       "(%.3f s writing its last dumps%s)\n",
		       100 * (r->kernels_seconds - ph[5].t.seconds) / ph[5].t.seconds,
		       100 * (r->seconds - r->kernels_seconds) / ph[5].t.seconds,
		       r->seconds - r->kernels_seconds, o->is_sync ? " and syncfs" : "");
	}
	if (ph[4].has_run && ph[4].t.error == 0) {
		printf("  ring       pipeline %.0f records/s, bare ck_ring pair %.0f records/s",
		       per_s((double)r->records, r->seconds),
		       per_s((double)ph[4].t.records, ph[4].t.seconds));
		if (ph[4].chan.error == 0)
			printf("; chan hand-off %.0f records/s (%u buffers) = %.2f x the bare pair",
			       per_s((double)ph[4].chan.records, ph[4].chan.seconds),
			       ph[4].chan_buffers, chan_ratio(&ph[4], &ph[4].t));
		if (ph[4].chan.error == 0 && ph[4].ring_read.error == 0)
			printf(", %.2f x the bare pair whose consumer reads each record (%.0f records/s)",
			       chan_ratio(&ph[4], &ph[4].ring_read),
			       per_s((double)ph[4].ring_read.records, ph[4].ring_read.seconds));
		printf("\n");
	}
}

static void print_json(const struct bench_opts *o, const struct adump_bench_plan *plan,
		       const struct result *r, const struct phase *ph, const struct bench_dev *bd,
		       double compute_gbps, double overhead_adump, double overhead_naive)
{
	static const char *const sink_names[] = { "file", "packed", "callback" };
	static const char *const json_names[] = { "naive", "disk_limit", "disk_limit_direct",
						  "create_limit", "ring_limit", "nodump" };

	printf("{\"producer\":\"%s\",", producer_names[o->producer]);
	if (o->is_verify)
		printf("\"verified_files\":%llu,\"verify_bad\":%llu,",
		       (unsigned long long)r->verified_files, (unsigned long long)r->verify_bad);
	printf("\"profile\":\"%s\",\"streams\":%u,\"ops\":%llu,\"workers\":%u,\"sink\":\"%s\","
	       "\"backend\":\"%s\",\"io\":\"%s\",\"compress\":\"%s\",\"data\":\"%s\","
	       "\"chunk_bytes\":%llu,\"pool_bytes\":%llu,\"synced\":%s,\"compute_gbps\":%.6f,",
	       adump_bench_profile_name(plan->w.profile), plan->w.stream_count,
	       (unsigned long long)plan->op_count, r->st.worker_count, sink_names[o->sink],
	       r->backend, o->io == ADUMP_IO_DIRECT ? "direct" : "buffered",
	       o->compress == ADUMP_COMPRESS_LZ4 ? "lz4" : "none",
	       plan->w.data == ADUMP_BENCH_DATA_RELU ? "relu" : "random",
	       (unsigned long long)(o->chunk ? o->chunk : 2u << 20),
	       (unsigned long long)r->pool_bytes, o->is_sync ? "true" : "false", compute_gbps);
	printf("\"files\":%llu,\"failed\":%llu,\"bytes\":%llu,\"written_bytes\":%llu,"
	       "\"tensor_bytes\":%llu,\"tensors\":%llu,\"records\":%llu,\"seconds\":%.6f,"
	       "\"seconds_unsynced\":%.6f,\"kernels_seconds\":%.6f,\"warmup_seconds\":%.6f,"
	       "\"gbps\":%.6f,\"files_per_s\":%.1f,\"tensors_per_s\":%.1f,\"records_per_s\":%.1f,"
	       "\"cpu_seconds\":%.4f,\"cpu_seconds_per_gb\":%.4f,"
	       "\"peak_rss_bytes\":%llu,\"device_bytes\":%llu,\"host_rss_bytes\":%llu,"
	       "\"rss_limit_bytes\":%llu,\"drops\":%llu,\"producer_waits\":%llu,"
	       "\"producer_wait_ms\":%.3f,\"producer_wait_p50_us\":%.3f,\"producer_wait_p99_us\":%.3f,"
	       "\"producer_wait_max_us\":%.3f,\"enqueue_p99_us\":%.3f,\"kernel_fence_waits\":%llu,"
	       "\"kernel_fence_wait_ms\":%.3f,\"kernel_queue_waits\":%llu,"
	       "\"kernel_queue_wait_ms\":%.3f,\"error\":%d",
	       (unsigned long long)r->st.files_completed, (unsigned long long)r->st.files_failed,
	       (unsigned long long)r->bytes, (unsigned long long)r->written_bytes,
	       (unsigned long long)plan->tensor_bytes, (unsigned long long)r->tensors,
	       (unsigned long long)r->records, r->seconds, r->seconds_unsynced, r->kernels_seconds,
	       r->warmup_seconds,
	       per_s((double)r->bytes / 1e9, r->seconds), per_s((double)r->files, r->seconds),
	       per_s((double)r->tensors, r->seconds), per_s((double)r->records, r->seconds),
	       r->cpu_seconds, r->bytes ? r->cpu_seconds / ((double)r->bytes / 1e9) : 0.0,
	       (unsigned long long)r->peak_rss, (unsigned long long)bd->bytes,
	       (unsigned long long)r->host_rss,
	       (unsigned long long)(r->pool_bytes + RSS_SLACK_BYTES), (unsigned long long)r->st.drops,
	       (unsigned long long)r->st.producer_wait_count, (double)r->st.producer_wait_ns / 1e6,
	       r->wait_p50_us, r->wait_p99_us, r->wait_max_us, r->enqueue_p99_us,
	       (unsigned long long)r->dev.fence_waits, (double)r->dev.fence_wait_ns / 1e6,
	       (unsigned long long)r->dev.queue_waits, (double)r->dev.queue_wait_ns / 1e6, r->error);
	if (o->is_compare) {
		bool is_first = true;

		printf(",\"baselines\":{");
		for (int b = 0; b < BASE_COUNT; b++) {
			const struct adump_bench_timing *t = &ph[b].t;

			if (!ph[b].has_run)
				continue;
			printf("%s\"%s\":{\"seconds\":%.6f,\"seconds_unsynced\":%.6f,\"bytes\":%llu,"
			       "\"files\":%llu,\"records\":%llu,\"gbps\":%.6f,\"files_per_s\":%.1f,"
			       "\"tensors_per_s\":%.1f,\"records_per_s\":%.1f,\"cpu_seconds\":%.4f,"
			       "\"cpu_seconds_per_gb\":%.4f,\"ratio\":%.4f,\"error\":%d,"
			       "\"gbps_before\":%.6f,\"gbps_after\":%.6f",
			       is_first ? "" : ",", json_names[b], t->seconds, t->seconds_unsynced,
			       (unsigned long long)t->bytes, (unsigned long long)t->files,
			       (unsigned long long)t->records, per_s((double)t->bytes / 1e9, t->seconds),
			       per_s((double)t->files, t->seconds),
			       b == 0 || b == 3 ? per_s((double)t->files * 3, t->seconds) : 0.0,
			       per_s((double)t->records, t->seconds), t->cpu_seconds,
			       t->bytes ? t->cpu_seconds / ((double)t->bytes / 1e9) : 0.0,
			       ratio_to(b, t, r), t->error, ph[b].run_gbps[0], ph[b].run_gbps[1]);
			if (b == 4) {
				const struct adump_bench_timing *c = &ph[b].chan;

				printf(",\"chan_records\":%llu,\"chan_buffers\":%u,\"chan_seconds\":%.6f,"
				       "\"chan_cpu_seconds\":%.4f,\"chan_records_per_s\":%.1f,"
				       "\"chan_error\":%d,\"chan_ratio\":",
				       (unsigned long long)c->records, ph[b].chan_buffers, c->seconds,
				       c->cpu_seconds, per_s((double)c->records, c->seconds), c->error);
				/* null rather than a made-up 0 when either run failed. */
				if (c->error == 0 && t->error == 0)
					printf("%.4f", chan_ratio(&ph[b], t));
				else
					printf("null");
				c = &ph[b].ring_read;
				printf(",\"read_seconds\":%.6f,\"read_records_per_s\":%.1f,"
				       "\"read_error\":%d,\"chan_ratio_read\":",
				       c->seconds, per_s((double)c->records, c->seconds), c->error);
				if (c->error == 0 && ph[b].chan.error == 0)
					printf("%.4f", chan_ratio(&ph[b], c));
				else
					printf("null");
			}
			printf("}");
			is_first = false;
		}
		printf("},\"overhead\":{\"adump\":");
		if (ph[5].has_run && ph[5].t.error == 0 && ph[5].t.seconds > 0)
			printf("%.4f,\"adump_kernels\":%.4f,\"adump_after_kernels\":%.4f",
			       overhead_adump,
			       (r->kernels_seconds - ph[5].t.seconds) / ph[5].t.seconds,
			       (r->seconds - r->kernels_seconds) / ph[5].t.seconds);
		else
			printf("null");
		printf(",\"naive\":");
		if (ph[5].has_run && ph[5].t.error == 0 && ph[5].t.seconds > 0 && ph[0].has_run &&
		    ph[0].t.error == 0)
			printf("%.4f", overhead_naive);
		else
			printf("null");
		printf("}");
	}
	printf("}\n");
}

/* mkdir -p. Return: 0 or -errno. */
static int make_dir(const char *path)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0750) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0750) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int sync_before(const struct bench_opts *o)
{
	/* Whatever setup or the previous phase left dirty is written outside the next clock. */
	if (o->out)
		return adump_bench_syncfs(o->out);
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	struct bench_opts o;
	struct adump_bench_plan plan = { 0 };
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *session = NULL;
	struct bench_dev bd = { 0 };
	struct bench_stream *bs = NULL;
	struct adump_bench_host_counts counts = { 0 };
	struct adump_bench_verify *verify = NULL;
	struct phase ph[BASE_COUNT];
	struct result r;
	struct run_ctx rc;
	char base_dir[4096] = "", naive_dir[4200], create_dir[4200];
	uint64_t touched = 0;
	double compute_gbps = 0, overhead_adump = 0, overhead_naive = 0, t0, c0;
	unsigned created = 0;
	int ret, rc_exit = 1;

	memset(ph, 0, sizeof(ph));
	memset(&r, 0, sizeof(r));
	if (parse_opts(argc, argv, &o) < 0)
		return 2;
	if (o.describe) {
		adump_bench_profile_describe(o.w.profile, stdout);
		return 0;
	}
	ret = adump_bench_plan_make(&o.w, &plan);
	if (ret < 0) {
		fprintf(stderr, "adump bench: cannot plan the workload: %s\n", adump_strerror(ret));
		return 2;
	}
	if (o.out) {
		ret = make_dir(o.out);
		if (ret == 0 && o.is_compare) {
			snprintf(base_dir, sizeof(base_dir), "%s/baselines", o.out);
			ret = make_dir(base_dir);
		}
		if (ret < 0) {
			fprintf(stderr, "adump bench: cannot create %s: %s\n", o.out, strerror(-ret));
			goto out;
		}
	}

	/* The device first: its memory is filled before anything is timed. */
	ret = adump_dev_open(0, &bd.dev);
	if (ret < 0)
		goto out;
	ret = dev_setup(&bd, &plan);
	if (ret < 0)
		goto out;
	bs = calloc(plan.w.stream_count, sizeof(*bs));
	if (!bs) {
		ret = -ENOMEM;
		goto out;
	}
	for (; created < plan.w.stream_count; created++) {
		struct bench_stream *b = &bs[created];

		b->plan = &plan;
		b->bd = &bd;
		b->index = created;
		b->producer = o.producer;
		b->counts = &counts;
		ret = adump_dev_stream_create(bd.dev, &b->stream);
		if (ret < 0)
			goto out;
		for (unsigned k = 0; k < BENCH_OUT_BUFFERS && plan.stream_max_bytes[created]; k++) {
			ret = adump_dev_malloc(bd.dev, plan.stream_max_bytes[created], &b->out_mem[k]);
			if (ret < 0)
				goto out;
			/* Touched now so the capture's peak RSS does not count its first use. */
			memset(b->out_mem[k], 0, plan.stream_max_bytes[created]);
			bd.bytes += plan.stream_max_bytes[created];
		}
	}
	rc = (struct run_ctx){ .o = &o, .plan = &plan, .bd = &bd, .bs = bs };

	/* Every kernel once, unpaced and without dumps, before anything is timed: the simulated
	 * device's first pass over its freshly filled memory is several times slower than the
	 * later ones (large profile, 2.2 GB: 0.24-1.34 s against 0.04-0.09 s; user time in the
	 * Add loops, no guest page faults: a cost of this hypervisor, not of the kernels), and
	 * it fell on whichever phase ran first. */
	if (o.is_warmup) {
		t0 = adump_bench_now();
		ret = run_streams(&rc, false, NULL, "warm-up");
		if (ret < 0) {
			fprintf(stderr, "adump bench: warm-up pass: %s\n", adump_strerror(ret));
			goto out;
		}
		r.warmup_seconds = adump_bench_now() - t0;
	}

	/* The disk baselines bracket the capture: one pass before it (on the plan's tensor
	 * bytes plus an estimate of the headers), one after (on its exact bytes). Buffered
	 * writes here swing several-fold within minutes (page-cache pages the guest must fault
	 * back in from the host), so a limit is the faster pass, compared per byte. */
	for (int b = 1; b <= 2; b++) {
		uint64_t est = plan.tensor_bytes + plan.op_count * 200;

		if (!(o.baselines & (b == 1 ? BASE_DISK : BASE_DISK_DIRECT)))
			continue;
		sync_before(&o);
		ph[b].has_run = true;
		adump_bench_disk_limit(base_dir, est, DISK_LIMIT_WRITE_BYTES, DISK_LIMIT_DEPTH, b == 2,
				       o.is_sync, &ph[b].t);
		ph[b].run_gbps[0] = per_s((double)ph[b].t.bytes / 1e9, ph[b].t.seconds);
	}
	if (o.compute_gbps < 0) {
		if (ph[1].t.error < 0 || ph[1].t.seconds <= 0) {
			fprintf(stderr, "adump bench: --compute-gbps auto: disk-limit failed\n");
			ret = ph[1].t.error ? ph[1].t.error : -EIO;
			goto out;
		}
		/* Half of what the disk takes, shared by the streams. */
		compute_gbps = (double)ph[1].t.bytes / ph[1].t.seconds / 1e9 / 2 / plan.w.stream_count;
	} else {
		compute_gbps = o.compute_gbps;
	}
	adump_dev_set_compute_gbps(bd.dev, compute_gbps);

	/* ---- the capture ---- */
	cfg.dump_path = o.out;
	cfg.worker_count = o.workers;
	cfg.chunk_bytes = o.chunk;
	cfg.pool_bytes = o.pool;
	cfg.stream_max = plan.w.stream_count;
	cfg.on_full = o.on_full;
	cfg.writer = o.writer;
	cfg.sink = o.sink == SINK_CALLBACK ? ADUMP_SINK_CALLBACK : ADUMP_SINK_FILE;
	cfg.layout = o.sink == SINK_PACKED ? ADUMP_LAYOUT_PACKED : ADUMP_LAYOUT_FILES;
	cfg.io = o.io;
	cfg.compress = o.compress;
	cfg.chunk_fn = chunk_touch;
	cfg.chunk_user = &touched;
	if (o.is_verify) {
		ret = adump_bench_verify_create(plan.op_count, host_lookup, &rc, &verify);
		if (ret < 0)
			goto out;
		cfg.chunk_fn = adump_bench_verify_chunk;
		cfg.chunk_user = verify;
	}
	r.pool_bytes = o.pool ? o.pool : 256u << 20;
	ret = adump_session_create(&cfg, &session);
	if (ret < 0) {
		fprintf(stderr, "adump bench: cannot start a capture session: %s\n", adump_strerror(ret));
		goto out;
	}
	for (unsigned i = 0; i < plan.w.stream_count; i++) {
		if (o.producer == PRODUCER_DEVICE) {
			ret = adump_session_attach(session, bs[i].stream);
		} else {
			ret = adump_host_stream_open(session, NULL, &bs[i].host);
			if (ret == 0)
				atomic_store_explicit(&bs[i].host_id, adump_host_stream_id(bs[i].host),
						      memory_order_release);
		}
		if (ret < 0)
			goto out;
	}
	if (o.sink != SINK_CALLBACK)
		snprintf(r.dir, sizeof(r.dir), "%s", adump_session_dir(session));
	sync_before(&o);
	adump_bench_peak_rss_reset();
	t0 = adump_bench_now();
	c0 = adump_bench_cpu_seconds();
	ret = run_streams(&rc, true, session, "capture");
	int fret = adump_session_flush(session);

	if (ret == 0)
		ret = fret;
	r.seconds_unsynced = adump_bench_now() - t0;
	if (o.is_sync) {
		fret = adump_bench_syncfs(r.dir);
		if (ret == 0)
			ret = fret;
	}
	r.seconds = adump_bench_now() - t0;
	r.cpu_seconds = adump_bench_cpu_seconds() - c0;
	r.kernels_seconds = kernels_end(bs, plan.w.stream_count) - t0;
	if (r.kernels_seconds < 0)
		r.kernels_seconds = 0;          /* no kernel ran in the capture */
	r.peak_rss = adump_bench_peak_rss();
	r.host_rss = r.peak_rss > bd.bytes ? r.peak_rss - bd.bytes : 0;
	adump_stats_get(session, &r.st);
	r.error = ret;
	r.backend = o.sink == SINK_CALLBACK ? "callback" :
		    r.st.backend == ADUMP_WRITER_URING ? "io_uring" : "pwrite";
	r.files = r.st.files_completed;
	r.tensors = r.files * 3;
	r.records = r.st.records;
	r.written_bytes = r.st.bytes;
	r.bytes = r.st.bytes;
	r.wait_p50_us = (double)adump_hist_percentile(r.st.producer_wait_hist, 0.5) / 1e3;
	r.wait_p99_us = (double)adump_hist_percentile(r.st.producer_wait_hist, 0.99) / 1e3;
	r.wait_max_us = (double)r.st.producer_wait_max_ns / 1e3;
	r.enqueue_p99_us = (double)adump_hist_percentile(r.st.enqueue_hist, 0.99) / 1e3;
	for (unsigned i = 0; i < plan.w.stream_count; i++) {
		struct adump_dev_stream_stats ds;

		adump_dev_stream_stats(bs[i].stream, &ds);
		r.dev.fence_waits += ds.fence_waits;
		r.dev.fence_wait_ns += ds.fence_wait_ns;
		r.dev.queue_waits += ds.queue_waits;
		r.dev.queue_wait_ns += ds.queue_wait_ns;
		adump_session_detach(session, bs[i].stream);
		adump_host_stream_close(bs[i].host);
		bs[i].host = NULL;
	}
	r.released = atomic_load_explicit(&counts.released, memory_order_relaxed);
	r.release_failures = atomic_load_explicit(&counts.release_failures, memory_order_relaxed);
	if (verify)
		adump_bench_verify_result(verify, &r.verified_files, &r.verify_bad, &r.verify_bytes,
					  r.verify_error, sizeof(r.verify_error));

	/* ---- baselines, on the same ops and bytes ---- */
	if (o.compress == ADUMP_COMPRESS_LZ4) {
		/* The capture's bytes are what the dump files hold before compression. */
		struct size_ctx sc = { .plan = &plan, .bd = &bd, .bs = bs };

		r.bytes = 0;
		for (uint64_t k = 0; k < plan.op_count; k++)
			r.bytes += dump_file_size(k, &sc);
	}
	for (int b = 1; b <= 2; b++) {
		struct adump_bench_timing after;

		if (!ph[b].has_run)
			continue;
		sync_before(&o);
		adump_bench_disk_limit(base_dir, r.bytes, DISK_LIMIT_WRITE_BYTES, DISK_LIMIT_DEPTH, b == 2,
				       o.is_sync, &after);
		ph[b].run_gbps[1] = per_s((double)after.bytes / 1e9, after.seconds);
		if (after.error == 0 && (ph[b].t.error < 0 || ph[b].run_gbps[1] > ph[b].run_gbps[0]))
			ph[b].t = after;
	}
	if (o.baselines & BASE_NODUMP) {
		ph[5].has_run = true;
		t0 = adump_bench_now();
		c0 = adump_bench_cpu_seconds();
		ph[5].t.error = run_streams(&rc, false, NULL, "nodump");
		ph[5].t.seconds = ph[5].t.seconds_unsynced = adump_bench_now() - t0;
		ph[5].t.cpu_seconds = adump_bench_cpu_seconds() - c0;
		ph[5].t.files = 0;
		ph[5].t.bytes = 0;
	}
	if (o.baselines & BASE_NAIVE) {
		struct naive_ctx nc = { .plan = &plan, .bd = &bd, .bs = bs, .dir = naive_dir,
					.is_quiet = o.json && !tool_is_tty() };

		snprintf(naive_dir, sizeof(naive_dir), "%s/naive", base_dir);
		ret = make_dir(naive_dir);
		if (ret == 0) {
			strcat(naive_dir, "/0");
			ret = make_dir(naive_dir);
		}
		sync_before(&o);
		ph[0].has_run = true;
		if (ret < 0)
			ph[0].t.error = ret;
		else
			run_naive(&nc, &ph[0].t);
	}
	if (o.baselines & BASE_CREATE) {
		struct size_ctx sc = { .plan = &plan, .bd = &bd, .bs = bs };

		snprintf(create_dir, sizeof(create_dir), "%s/create", base_dir);
		ph[3].has_run = true;
		ret = make_dir(create_dir);
		sync_before(&o);
		if (ret < 0)
			ph[3].t.error = ret;
		else
			adump_bench_create_limit(create_dir, r.files ? r.files : plan.op_count,
						 dump_file_size, &sc, o.is_sync, &ph[3].t);
	}
	if (o.baselines & BASE_RING) {
		size_t chunk = o.chunk ? o.chunk : 2u << 20;
		/* A stream's buffers, as adump_session_create() divides the pool: the bench sets
		 * stream_max to its stream count. */
		unsigned slots = (unsigned)(r.pool_bytes / chunk / plan.w.stream_count);
		uint64_t records = r.records > RING_LIMIT_MIN_RECORDS ? r.records
								      : RING_LIMIT_MIN_RECORDS;

		ph[4].has_run = true;
		ph[4].chan_buffers = slots < 2 ? 2 : slots;
		adump_bench_ring_limit(records, slots, false, &ph[4].t);
		adump_bench_chan_handoff(records, slots, &ph[4].chan);
		adump_bench_ring_limit(records, slots, true, &ph[4].ring_read);
	}
	if (ph[5].has_run && ph[5].t.error == 0 && ph[5].t.seconds > 0) {
		overhead_adump = (r.seconds - ph[5].t.seconds) / ph[5].t.seconds;
		if (ph[0].has_run && ph[0].t.error == 0)
			overhead_naive = (ph[0].t.seconds - ph[5].t.seconds) / ph[5].t.seconds;
	}

	print_human(&o, &plan, &r, ph, &bd, compute_gbps, overhead_adump, overhead_naive);
	if (o.json)
		print_json(&o, &plan, &r, ph, &bd, compute_gbps, overhead_adump, overhead_naive);
	fflush(stdout);
	ret = r.error;
	rc_exit = (r.error == 0 && r.st.files_completed == plan.op_count && r.st.files_failed == 0)
			  ? 0 : 1;
	if (o.producer == PRODUCER_HOST_NOCOPY && r.released != plan.op_count)
		rc_exit = 1;
	if (o.is_verify && (r.verified_files != plan.op_count || r.verify_bad))
		rc_exit = 1;
	for (int b = 0; b < BASE_COUNT; b++)
		if (ph[b].has_run && (ph[b].t.error < 0 || ph[b].chan.error < 0))
			rc_exit = 1;
out:
	if (ret < 0 && rc_exit)
		fprintf(stderr, "adump bench: %s\n", adump_strerror(ret));
	if (session && bs)
		for (unsigned i = 0; i < plan.w.stream_count; i++) {
			if (bs[i].stream)
				adump_session_detach(session, bs[i].stream);
			adump_host_stream_close(bs[i].host);
		}
	adump_session_destroy(session);
	adump_bench_verify_destroy(verify);
	if (bs) {
		for (unsigned i = 0; i < plan.w.stream_count; i++) {
			adump_dev_stream_destroy(bs[i].stream);
			for (unsigned k = 0; k < BENCH_OUT_BUFFERS; k++)
				if (bs[i].out_mem[k])
					adump_dev_free(bd.dev, bs[i].out_mem[k]);
		}
	}
	free(bs);
	dev_teardown(&bd);
	adump_dev_close(bd.dev);
	adump_bench_plan_free(&plan);
	return rc_exit;
}
