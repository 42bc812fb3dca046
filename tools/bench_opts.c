/* SPDX-License-Identifier: Apache-2.0 */
/* `adump bench`: its options, their defaults and checks, and the usage text. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/bench_int.h"
#include "tools/tool.h"

const char *const tool_bench_producer_names[] = { "device", "host", "host-nocopy" };
const char *const tool_bench_sink_names[] = { "file", "packed", "callback" };

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
		"                     'auto' picks R so that the dump volume is half of the faster\n"
		"                     of the disk-limit and disk-limit-direct passes run before the\n"
		"                     capture (disk-direct is added unless --io buffered; where the\n"
		"                     filesystem refuses O_DIRECT, half of disk-limit, said so)\n\n"
		"Capture\n"
		"  --out DIR          dump_path: files go to DIR/<YYYYMMDDhhmmss>/0/; baselines write\n"
		"                     under DIR/baselines/ (remove DIR afterwards)\n"
		"  --sink S           file (default), packed (per-worker segments + index) or\n"
		"                     callback (a consumer that reads every cache line, no files)\n"
		"  --compress C       none (default) or lz4 (one LZ4 frame per file, <name>.lz4)\n"
		"  --io IO            auto (default: O_DIRECT for files of at least 256 KiB, buffered\n"
		"                     for smaller ones), buffered, or direct (O_DIRECT from the\n"
		"                     staging buffers for every file)\n"
		"  --writer W         auto (default), uring or pwrite (ADUMP_IO=pwrite also forces\n"
		"                     pwrite; --io uring|pwrite is accepted as an old spelling)\n"
		"  --workers W        capture workers (default: one per core, at most N)\n"
		"  --chunk SIZE       DMA chunk and staging buffer size (default 2M)\n"
		"  --pool SIZE        staging pool, all streams together (default 256M)\n"
		"  --min-free SIZE    disk guard: files start only while this much stays free\n"
		"                     (default max(1G, 5%% of the filesystem); 0: no guard)\n"
		"  --max-bytes SIZE   quota: the capture's files stay within SIZE (default none)\n"
		"  --on-full P        block (default) or drop: producer policy when its buffers are\n"
		"                     all in flight\n"
		"  --producer P       device (default): the NPU streams' DMA engines dump each Add;\n"
		"                     host: each stream's thread hands the same tensors to a host\n"
		"                     stream (include/adump/host.h), copied; host-nocopy: the same\n"
		"                     without copy (released by callback). Host producers run no\n"
		"                     kernels: no --compute-gbps, no naive or nodump baseline\n"
		"  --verify           with a host producer and --sink callback: check every file,\n"
		"                     chunk by chunk, byte for byte against the file its op must make\n"
		"  --verify-crc       run the soak instead (bench/soak.c): --total SIZE (default\n"
		"                     256M) of Add tensors on --streams, sizes log-uniform from 4 B\n"
		"                     to --max-size (default here 64M), the first op at the maximum;\n"
		"                     every tensor's CRC32C taken at launch and recomputed from the\n"
		"                     files (--sink file) or the callback chunks (--sink callback);\n"
		"                     prints lost, corrupt and host RSS per GiB (per quarter of the\n"
		"                     ops under 2 GiB). Exit 1 on any loss, corruption, or RSS not\n"
		"                     within 5 %% of its first sample\n"
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
		"                     direct, unless the filesystem refuses it), create-limit (create\n"
		"                     + write + close of as many files, same sizes, one thread, in a\n"
		"                     new directory each run), publish-limit (the same, each file made\n"
		"                     as the capture publishes it: unnamed (O_TMPFILE), written, linked\n"
		"                     in, closed; never visible before it is complete), ring-limit (as\n"
		"                     many records, at least 1M, through a bare ck_ring SPSC pair;\n"
		"                     compared per record) and nodump\n"
		"                     (the workload with dumping off, for 'overhead'). With ring-limit\n"
		"                     the same records also go through the pipeline's own channel\n"
		"                     (ring/ring.h with a producer port: reserve, commit, pop, release,\n"
		"                     a worker's doorbell sleep; a stream's buffer count, on-full\n"
		"                     block) and no other work:\n"
		"                     the 'chan hand-off' row, also given as a fraction of ring-limit.\n"
		"                     When fio is installed, also fio-buffered and fio-direct: fio on\n"
		"                     the dump filesystem with the capture's byte count (1 MiB io_uring\n"
		"                     writes at depth 16, or psync where io_uring is refused;\n"
		"                     buffered, then O_DIRECT), timed until\n"
		"                     synced (syncfs) as the capture is; the faster is the 'ceiling' the\n"
		"                     capture is held against (disk-limit is the in-process figure;\n"
		"                     fio-direct is left out where the filesystem refuses O_DIRECT)\n"
		"  --baselines LIST   comma-separated subset of naive,disk,disk-direct,create,publish,\n"
		"                     ring,nodump,fio, or all (implies --compare; fio named but not\n"
		"                     installed is a usage error)\n"
		"  --json             end with one JSON object: bytes, files, tensors, seconds, gbps,\n"
		"                     files_per_s, tensors_per_s, cpu_seconds, peak_rss_bytes,\n"
		"                     producer_wait_*_us, enqueue_p99_us, failed, compute_from (the\n"
		"                     pass --compute-gbps auto halved: disk_limit or\n"
		"                     disk_limit_direct; else null), ...; with --compare\n"
		"                     also 'baselines' (each with seconds and 'ratio' = its time / the\n"
		"                     capture's, i.e. the capture's speed relative to it), 'overhead',\n"
		"                     'ceiling' (the faster fio run: baseline, gbps, cpu_seconds_per_gb,\n"
		"                     ratio; null without fio) and fio_skipped;\n"
		"                     ring_limit also has chan_records, chan_buffers, chan_seconds,\n"
		"                     chan_cpu_seconds, chan_records_per_s, chan_error and chan_ratio\n"
		"                     (the channel hand-off's records/s over the bare ring pair's),\n"
		"                     and read_seconds, read_records_per_s, read_error and\n"
		"                     chan_ratio_read for the bare pair run again with its consumer\n"
		"                     reading each record (a cache line each)\n"
		"  --fio-only IO      run fio alone, nothing else: buffered or direct (O_DIRECT), on\n"
		"                     --total SIZE bytes in --out DIR, exactly as the fio baselines\n"
		"                     run it (same arguments, timed until synced); prints its bytes,\n"
		"                     seconds, seconds_unsynced, cpu_seconds and gbps (--json: one\n"
		"                     JSON line). For scripts that alternate fio with whole bench\n"
		"                     runs (bench/alternate.py); exit 2 if fio is not installed\n"
		"  --fio-engine E     auto (default: io_uring where this kernel allows it, else psync,\n"
		"                     as in a container that refuses io_uring), io_uring or psync\n"
		"  --fio-jobs N       psync: fio jobs writing the file in N parts at once (default:\n"
		"                     the capture's writer threads; --fio-only: --workers, else one\n"
		"                     per core)\n"
		"  --help             this text\n\n"
		"Timing: a phase runs from its first op to its last byte written; for file sinks and\n"
		"the disk baselines that includes a final syncfs() of the dump filesystem, so buffered\n"
		"runs are measured at the speed of the disk, as O_DIRECT ones are. Data left dirty by\n"
		"setup or an earlier phase is synced before each phase starts, outside its clock.\n"
		"Peak RSS is the process's VmHWM during the capture; the simulated device memory\n"
		"(host memory here) is reported apart as device_bytes.\n");
}

#define NAIVE BENCH_BIT(BENCH_BASE_NAIVE)
#define DISK BENCH_BIT(BENCH_BASE_DISK)
#define DISK_DIRECT BENCH_BIT(BENCH_BASE_DISK_DIRECT)
#define CREATE BENCH_BIT(BENCH_BASE_CREATE)
#define PUBLISH BENCH_BIT(BENCH_BASE_PUBLISH)
#define RING BENCH_BIT(BENCH_BASE_RING)
#define NODUMP BENCH_BIT(BENCH_BASE_NODUMP)
/* "all": every in-process baseline, and fio when it is installed. */
#define ALL (NAIVE | DISK | DISK_DIRECT | CREATE | PUBLISH | RING | NODUMP)

bool tool_bench_has_program(const char *name)
{
	const char *path = getenv("PATH");
	char buf[BENCH_PATH_CAP];

	if (!path || !*path)
		return false;
	while (*path) {
		size_t len = strcspn(path, ":");

		/* An empty PATH entry is the current directory. */
		if (snprintf(buf, sizeof(buf), "%.*s/%s", len ? (int)len : 1, len ? path : ".", name) <
			    (int)sizeof(buf) &&
		    access(buf, X_OK) == 0)
			return true;
		path += len;
		if (*path == ':')
			path++;
	}
	return false;
}

/* @is_fio_asked: fio was named (not only implied by "all"). */
static int parse_baselines(const char *s, unsigned *out, bool *is_fio_asked)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {
		{ "naive", NAIVE }, { "disk", DISK }, { "disk-direct", DISK_DIRECT },
		{ "create", CREATE }, { "publish", PUBLISH }, { "ring", RING }, { "nodump", NODUMP },
		{ "fio", BENCH_BASE_FIO }, { "all", ALL },
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
		if (names[i].bit == BENCH_BASE_FIO)
			*is_fio_asked = true;
		else if (names[i].bit == ALL)
			bits |= BENCH_BASE_FIO;
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

int tool_bench_opts_parse(int argc, char **argv, struct bench_opts *o)
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
		{ "min-free", required_argument, NULL, 'f' }, { "max-bytes", required_argument, NULL, 'q' },
		{ "producer", required_argument, NULL, 'R' }, { "verify", no_argument, NULL, 'V' },
		{ "verify-crc", no_argument, NULL, 'Z' },
		{ "fio-only", required_argument, NULL, 'O' },
		{ "fio-engine", required_argument, NULL, 'E' }, { "fio-jobs", required_argument, NULL, 'J' },
		{ "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *io = getenv("ADUMP_IO");
	bool is_pwrite_forced = io && !strcmp(io, "pwrite");
	bool is_fio_asked = false;
	uint64_t v;
	char *end;
	int c;

	*o = (struct bench_opts){
		.w = { .stream_count = 4, .min_bytes = 1024, .max_bytes = 4u << 20, .seed = 1 },
		.is_sync = true,
		.is_warmup = true,
		.io = ADUMP_IO_AUTO,
		.fio_engine = -1,
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
		case 'f':
		case 'q':
			if (tool_parse_size(optarg, &v) < 0)
				return bad("bad size (e.g. 512, 4K, 2M, 1G)", optarg);
			if (c == 'm')
				o->w.min_bytes = v;
			else if (c == 'M')
				o->w.max_bytes = v, o->is_max_set = true;
			else if (c == 'c')
				o->chunk = v;
			else if (c == 'p')
				o->pool = v;
			else if (c == 'f')
				o->min_free = v ? v : ADUMP_GUARD_OFF;
			else if (c == 'q')
				o->max_quota = v;
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
				o->sink = BENCH_SINK_FILE;
			else if (!strcmp(optarg, "packed"))
				o->sink = BENCH_SINK_PACKED;
			else if (!strcmp(optarg, "callback"))
				o->sink = BENCH_SINK_CALLBACK;
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
			/* --io uring|pwrite is the old spelling of --writer. */
			if (!strcmp(optarg, "auto"))
				o->io = ADUMP_IO_AUTO;
			else if (!strcmp(optarg, "buffered"))
				o->io = ADUMP_IO_BUFFERED;
			else if (!strcmp(optarg, "direct"))
				o->io = ADUMP_IO_DIRECT;
			else if (parse_writer(optarg, &o->writer) < 0)
				return bad("--io takes auto, buffered or direct, not", optarg);
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
			if (parse_baselines(optarg, &o->baselines, &is_fio_asked) < 0)
				return bad("--baselines takes naive,disk,disk-direct,create,publish,ring,nodump,"
					   "fio or all, not", optarg);
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
				o->producer = BENCH_PRODUCER_DEVICE;
			else if (!strcmp(optarg, "host"))
				o->producer = BENCH_PRODUCER_HOST;
			else if (!strcmp(optarg, "host-nocopy"))
				o->producer = BENCH_PRODUCER_HOST_NOCOPY;
			else
				return bad("--producer takes device, host or host-nocopy, not", optarg);
			break;
		case 'V':
			o->is_verify = true;
			break;
		case 'Z':
			o->is_verify_crc = true;
			break;
		case 'O':
			if (!strcmp(optarg, "buffered"))
				o->fio_only = BENCH_FIO_ONLY_BUFFERED;
			else if (!strcmp(optarg, "direct"))
				o->fio_only = BENCH_FIO_ONLY_DIRECT;
			else
				return bad("--fio-only takes buffered or direct, not", optarg);
			break;
		case 'E':
			if (!strcmp(optarg, "auto"))
				o->fio_engine = -1;
			else if (!strcmp(optarg, "io_uring") || !strcmp(optarg, "uring"))
				o->fio_engine = ADUMP_BENCH_FIO_URING;
			else if (!strcmp(optarg, "psync"))
				o->fio_engine = ADUMP_BENCH_FIO_PSYNC;
			else
				return bad("--fio-engine takes auto, io_uring or psync, not", optarg);
			break;
		case 'J':
			v = strtoull(optarg, &end, 10);
			if (*end || v < 1 || v > 64)
				return bad("--fio-jobs takes 1 to 64, not", optarg);
			o->fio_jobs = (unsigned)v;
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
	if (is_pwrite_forced) {
		o->writer = ADUMP_WRITER_PWRITE;
		o->is_writer_forced = true;
	}
	if (optind < argc)
		return bad("unexpected argument", argv[optind]);
	if (o->describe)
		return 0;
	if (o->fio_only) {
		if (!o->out || !o->w.total_bytes || o->is_compare || o->is_verify ||
		    o->is_verify_crc) {
			fprintf(stderr, "adump bench: --fio-only runs fio alone: it needs --out "
					"DIR and --total SIZE, and takes no --compare, --baselines, "
					"--verify or --verify-crc\n");
			return -1;
		}
		if (!tool_bench_has_program("fio")) {
			fprintf(stderr, "adump bench: --fio-only: fio is not installed (no fio in "
					"PATH; Debian package fio)\n");
			return -1;
		}
		return 0;
	}
	if (!o->out && (o->sink != BENCH_SINK_CALLBACK || o->is_compare)) {
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
	if (o->producer != BENCH_PRODUCER_DEVICE &&
	    (o->compute_gbps != 0 || (o->baselines & (NAIVE | NODUMP)))) {
		fprintf(stderr, "adump bench: --producer %s runs no kernels: no --compute-gbps, no "
				"naive or nodump baseline\n", tool_bench_producer_names[o->producer]);
		return -1;
	}
	if (o->is_verify && (o->producer == BENCH_PRODUCER_DEVICE || o->sink != BENCH_SINK_CALLBACK)) {
		fprintf(stderr, "adump bench: --verify needs --producer host or host-nocopy and "
				"--sink callback\n");
		return -1;
	}
	if (o->is_verify_crc && (o->sink == BENCH_SINK_PACKED || o->is_compare || o->is_verify ||
				 o->producer != BENCH_PRODUCER_DEVICE || o->w.profile)) {
		fprintf(stderr, "adump bench: --verify-crc runs the soak alone: --sink file or "
				"callback, no --compare, --verify, --producer or --profile\n");
		return -1;
	}
	if (o->is_compare && !o->baselines) {
		o->baselines = ALL & ~DISK_DIRECT;
		if (o->producer != BENCH_PRODUCER_DEVICE)
			o->baselines &= ~(NAIVE | NODUMP);
		if (o->io == ADUMP_IO_DIRECT) {
			o->baselines |= DISK_DIRECT;
			o->is_direct_implied = true;
		}
		o->baselines |= BENCH_BASE_FIO;
	}
	if (o->baselines & BENCH_BASE_FIO && !tool_bench_has_program("fio")) {
		if (is_fio_asked) {
			fprintf(stderr, "adump bench: --baselines fio: fio is not installed (no fio "
					"in PATH; Debian package fio)\n");
			return -1;
		}
		/* --compare and "all" run without it, and say so. */
		o->baselines &= ~BENCH_BASE_FIO;
		o->is_fio_skipped = true;
		fprintf(stderr, "adump bench: fio is not installed (no fio in PATH): the fio "
				"baselines are skipped\n");
	}
	/* auto: the disk's ceiling is the faster of buffered and O_DIRECT writes, and io auto
	 * (the default) and direct write large files O_DIRECT. */
	if (o->compute_gbps < 0) {
		o->baselines |= DISK;
		if (o->io != ADUMP_IO_BUFFERED && !(o->baselines & DISK_DIRECT)) {
			o->baselines |= DISK_DIRECT;
			o->is_direct_implied = true;
		}
	}
	if (o->sink == BENCH_SINK_CALLBACK)
		o->is_sync = false;
	return 0;
}
