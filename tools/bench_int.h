/* SPDX-License-Identifier: Apache-2.0 */
/* `adump bench`, private to tools/: what its files share. The command is split by job:
 *   cmd_bench.c       cmd_bench(): the order of the phases and the exit code
 *   bench_opts.c      the options and their checks, the usage text
 *   bench_run.c       device memory, the producer threads, the timed capture
 *   bench_baselines.c the baselines run around it (disk-limit, naive, create-limit,
 *                     ring-limit and the channel hand-off, nodump, fio)
 *   bench_report.c    the human report and the JSON object, one table of fields for both
 *   bench_soak.c      --verify-crc: the soak (bench/soak.c), CRC32C of every tensor
 * The workloads and the in-process baselines themselves live in bench/ (bench/bench.h). */
#ifndef ADUMP_TOOL_BENCH_INT_H
#define ADUMP_TOOL_BENCH_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "adump/adump.h"
#include "adump/device.h"
#include "bench/bench.h"

#define BENCH_RSS_SLACK_BYTES (64ull << 20)
#define BENCH_PATH_CAP 4096

enum bench_sink { BENCH_SINK_FILE, BENCH_SINK_PACKED, BENCH_SINK_CALLBACK };
/* Who hands the dumps to the session: the simulated NPU's streams (DMA engines), or host
 * streams (include/adump/host.h) that copy, or reference, the same tensors. */
enum bench_producer { BENCH_PRODUCER_DEVICE, BENCH_PRODUCER_HOST, BENCH_PRODUCER_HOST_NOCOPY };
extern const char *const tool_bench_producer_names[];
extern const char *const tool_bench_sink_names[];

/* The baselines, in report order; --compare runs a default set, --baselines picks one. */
enum bench_base {
	BENCH_BASE_NAIVE,
	BENCH_BASE_DISK,
	BENCH_BASE_DISK_DIRECT,
	BENCH_BASE_CREATE,
	BENCH_BASE_PUBLISH,                     /* create-limit, each file published whole */
	BENCH_BASE_RING,
	BENCH_BASE_NODUMP,
	BENCH_BASE_FIO_BUFFERED,                /* both fio runs are --baselines fio */
	BENCH_BASE_FIO_DIRECT,
	BENCH_BASE_COUNT,
};
#define BENCH_BIT(b) (1u << (b))
#define BENCH_BASE_FIO (BENCH_BIT(BENCH_BASE_FIO_BUFFERED) | BENCH_BIT(BENCH_BASE_FIO_DIRECT))
/* Names in the human report and in the JSON "baselines" object. */
extern const char *const tool_bench_base_names[BENCH_BASE_COUNT];
extern const char *const tool_bench_base_keys[BENCH_BASE_COUNT];

/* --fio-only: fio alone, as the fio baselines run it, nothing else. */
enum bench_fio_only { BENCH_FIO_ONLY_NONE, BENCH_FIO_ONLY_BUFFERED, BENCH_FIO_ONLY_DIRECT };

struct bench_opts {
	struct adump_bench_workload w;
	const char *out;
	unsigned workers;
	uint64_t chunk;
	uint64_t pool;
	uint64_t min_free, max_quota;           /* disk guard: adump_config's */
	enum bench_sink sink;
	enum adump_on_full on_full;
	enum adump_writer_kind writer;
	enum adump_io io;
	enum adump_compress compress;
	double compute_gbps;                    /* per stream; < 0: auto */
	bool is_compare;
	unsigned baselines;                     /* BENCH_BIT()s */
	bool is_fio_skipped;                    /* --compare without --baselines, fio not found */
	bool is_direct_implied;                 /* disk-direct added by --compare (io direct) or
						 * --compute-gbps auto, not named */
	bool is_sync;
	bool is_warmup;                         /* one untimed pass of the kernels first */
	bool json;
	bool describe;
	enum bench_producer producer;
	bool is_verify;                         /* callback sink: check every file's bytes */
	bool is_verify_crc;                     /* the soak instead (tools/bench_soak.c) */
	bool is_max_set;                        /* --max-size given */
	enum bench_fio_only fio_only;
	/* fio's engine: -1 auto (io_uring where this process can set it up, else psync), or
	 * an enum adump_bench_fio_engine given with --fio-engine; psync's jobs (--fio-jobs;
	 * 0: as many as the capture's writer threads). */
	int fio_engine;
	unsigned fio_jobs;
	bool is_writer_forced;                  /* ADUMP_IO=pwrite set the writer */
};

/* fio's engine as run: the one --fio-engine named, else io_uring where it works here, else
 * psync. @why: "configured", "auto" or "refused"; @refused: the -errno io_uring setup
 * failed with (0 unless refused). */
enum adump_bench_fio_engine tool_bench_fio_engine(const struct bench_opts *o, const char **why,
						  int *refused);

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

struct bench;

struct bench_stream {
	struct bench *b;
	struct adump_dev_stream *stream;
	void *out_mem[BENCH_OUT_BUFFERS];
	unsigned index;
	bool is_dump;
	int error;
	_Atomic uint64_t ops_done;
	_Atomic unsigned *finished;             /* counts producers that returned */
	/* --producer host*: the host stream the stream's thread adopts in the capture. */
	struct adump_host_stream *host;
	_Atomic uint32_t host_id;               /* for the verifier; 0 until opened */
};

struct bench_phase {
	bool has_run;
	struct adump_bench_timing t;
	double run_gbps[2];                     /* disk baselines: before and after the capture */
	struct adump_bench_timing chan;         /* ring-limit: the channel hand-off, same records */
	struct adump_bench_timing ring_read;    /* ring-limit: the bare pair, consumer reading */
	unsigned chan_buffers;                  /* ring-limit: buffers of both, a stream's count */
};

/* What the capture did. */
struct bench_result {
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
	char dir[BENCH_PATH_CAP];
	/* Host producers: zero-copy releases; with --verify, the files checked. */
	uint64_t released, release_failures;
	uint64_t verified_files, verify_bad, verify_bytes;
	char verify_error[512];
};

/* One `adump bench` invocation. */
struct bench {
	struct bench_opts o;
	struct adump_bench_plan plan;
	struct bench_dev bd;
	struct bench_stream *bs;                /* plan.w.stream_count of them */
	unsigned stream_count;                  /* created so far */
	struct adump_bench_host_counts counts;  /* zero copy: the releases */
	struct adump_bench_verify *verify;
	struct adump_session *session;
	uint64_t touched;                       /* the callback sink's reads, summed */
	struct bench_phase ph[BENCH_BASE_COUNT];
	struct bench_result r;
	char base_dir[BENCH_PATH_CAP];          /* <out>/baselines; "" without --compare */
	double compute_gbps;
	enum bench_base compute_base;           /* --compute-gbps auto: the pass R is half of */
	double overhead_adump, overhead_naive;
	/* The fio baselines as run (tool_bench_fio_engine()). */
	enum adump_bench_fio_engine fio_engine;
	const char *fio_why;
	int fio_refused;
	unsigned fio_jobs;
};

/* ---- bench_opts.c ---- */

/* Parse argv into @o, defaults applied and combinations checked; prints the reason.
 * Return: 0, or -1 for a usage error (exit 2). --help prints the usage and exits. */
int tool_bench_opts_parse(int argc, char **argv, struct bench_opts *o);
/* Whether an executable @name is on PATH. */
bool tool_bench_has_program(const char *name);

/* ---- bench_run.c ---- */

/* The threads that wrote the capture's files: what fio's psync jobs match. */
unsigned tool_bench_writer_threads(const struct adump_stats *st);
/* Why the capture wrote with its backend: "auto", "configured", "forced" (ADUMP_IO=pwrite)
 * or "refused". */
const char *tool_bench_backend_why(const struct bench_opts *o, const struct adump_stats *st);

/* mkdir -p. Return: 0 or -errno. */
int tool_bench_make_dir(const char *path);
/* syncfs() the dump filesystem, outside any clock: what setup or the last phase left dirty. */
void tool_bench_sync_before(const struct bench *b);
/* Open the device, fill its input buffers and create the streams and their out buffers.
 * Return: 0 or negative. */
int tool_bench_dev_setup(struct bench *b);
void tool_bench_dev_teardown(struct bench *b);
/* Every stream's ops in parallel, with or without dump requests; waits for them. The
 * progress bar polls b->session when @is_dump. Return: 0 or the first stream's error. */
int tool_bench_streams_run(struct bench *b, bool is_dump, const char *label);
/* The timed capture into b->r. Return: negative if the session could not be set up (no
 * report then); 0 otherwise, the capture's own outcome being in b->r.error. */
int tool_bench_capture(struct bench *b);
/* The device tensors of @op on its stream: self and other windows of the class buffers,
 * out the stream's out buffer for it. */
void tool_bench_op_tensors(const struct bench *b, const struct adump_bench_op *op,
			   struct adump_dev_tensor t[3]);

/* ---- bench_baselines.c ---- */

/* The disk-limit passes that run before the capture (one per selected kind). */
void tool_bench_disk_before(struct bench *b);
/* Every selected baseline that runs after the capture, on its bytes; then the overheads. */
void tool_bench_baselines_after(struct bench *b);
/* `adump bench --fio-only`: fio alone on --total bytes in --out, as the fio baselines run
 * it; prints its timing. Return: the exit code. */
int tool_bench_fio_only(const struct bench_opts *o);
/* The size of dump file @k (the header as the naive dumper builds it + 3 tensors);
 * @user is the struct bench. */
uint64_t tool_bench_dump_file_size(uint64_t k, void *user);

/* ---- bench_soak.c ---- */

/* `adump bench --verify-crc`: the soak of bench/soak.c with @o's session options; prints
 * its report. Return: the exit code. */
int tool_bench_soak(const struct bench_opts *o);

/* ---- bench_report.c ---- */

double tool_bench_per_s(double n, double s);
/* The human report on stdout, then the JSON line with --json. */
void tool_bench_report(const struct bench *b);

#endif
