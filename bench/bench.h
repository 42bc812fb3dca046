/* SPDX-License-Identifier: Apache-2.0 */
/* bench/: what `adump bench` measures with — the workload profiles (which ops, which tensor
 * shapes and dtypes, which bytes) and the baselines a capture is compared against in the same
 * run (naive dumper, disk-limit, create-limit, ring-limit and the channel hand-off beside it,
 * and fio, the external ceiling).
 * Linked into the adump tool only. */
#ifndef ADUMP_BENCH_H
#define ADUMP_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/adump.h"
#include "adump/device.h"
#include "adump/host.h"

enum adump_bench_profile {
	ADUMP_BENCH_PROFILE_RANGE = 0,          /* --min-size/--max-size, log-uniform */
	ADUMP_BENCH_PROFILE_TRANSFORMER = 1,    /* a Llama-style decoder layer's training step */
	ADUMP_BENCH_PROFILE_TINY = 2,           /* 64 B - 1 KiB tensors, very many ops */
	ADUMP_BENCH_PROFILE_HUGE = 3,           /* 256 - 512 MiB tensors, few ops */
};

enum adump_bench_data {
	ADUMP_BENCH_DATA_RANDOM = 0,            /* dense random values: lz4 cannot shrink them */
	ADUMP_BENCH_DATA_RELU = 1,              /* about half zeros, like activations after ReLU */
};

/* What to run. Ops are numbered 0..n-1 across all streams; op i runs on stream
 * i % stream_count, so every stream sees the same mix and the op list does not depend on
 * the worker count. Every parameter of op i is a pure function of (profile, seed, i). */
struct adump_bench_workload {
	enum adump_bench_profile profile;
	enum adump_bench_data data;
	uint64_t seed;
	unsigned stream_count;
	uint64_t ops_per_stream;                /* 0: until total_bytes (or the profile default) */
	uint64_t total_bytes;                   /* 0: ops_per_stream (or the profile default) */
	uint64_t min_bytes, max_bytes;          /* RANGE only */
};

/* One op: an Add whose self, other and out all have this shape and dtype. */
struct adump_bench_op {
	uint64_t index;
	uint32_t stream;
	int32_t dtype;                          /* FLOAT, FLOAT16 or INT32: what the kernel runs */
	int32_t model_dtype;                    /* the dtype the profile means (BF16 runs as FLOAT16) */
	uint32_t dim_count;
	int64_t dims[4];
	uint64_t bytes;                         /* per tensor */
	double alpha;
	uint64_t window;                        /* 0..2^64-1: where in the input buffers to read */
	char name[96];                          /* op_name */
};

/* The whole run, worked out by one pass over the op list before anything is timed. */
struct adump_bench_plan {
	struct adump_bench_workload w;
	uint64_t op_count;
	uint64_t tensor_bytes;                  /* Σ 3 × bytes */
	uint64_t max_bytes[3];                  /* largest tensor per input class (see below) */
	uint64_t *stream_max_bytes;             /* largest tensor per stream; caller frees */
	uint64_t layer_tensor_count;            /* TRANSFORMER: tensors in one layer step */
	uint64_t layer_step_bytes;              /* TRANSFORMER: Σ tensor bytes of one step */
};

/* Input classes: each has its own self/other buffers filled with valid values of its type. */
enum { ADUMP_BENCH_CLASS_F32 = 0, ADUMP_BENCH_CLASS_F16 = 1, ADUMP_BENCH_CLASS_I32 = 2 };
unsigned adump_bench_dtype_class(int32_t dtype);

const char *adump_bench_profile_name(enum adump_bench_profile p);
int adump_bench_profile_parse(const char *s, enum adump_bench_profile *out);

/**
 * adump_bench_plan_make() - count the ops, bytes and buffer sizes of a workload.
 * Return: 0, -EINVAL for an empty or inconsistent workload, -ENOMEM.
 */
int adump_bench_plan_make(const struct adump_bench_workload *w, struct adump_bench_plan *out);
void adump_bench_plan_free(struct adump_bench_plan *p);

/* Op @i of the plan (i < op_count). */
void adump_bench_op_get(const struct adump_bench_plan *p, uint64_t i, struct adump_bench_op *op);

/* Print the profile's tensor table (TRANSFORMER: the layer's shapes) to @f. */
void adump_bench_profile_describe(enum adump_bench_profile p, void *f);

/**
 * adump_bench_fill() - fill @len bytes of an input buffer of class @cls with values every
 * kernel of that dtype adds without NaN, infinity or overflow; @which (0 self, 1 other)
 * and @seed pick the values. RELU zeroes the same elements in self and other.
 */
void adump_bench_fill(void *buf, uint64_t len, unsigned cls, enum adump_bench_data data,
		      uint64_t seed, unsigned which);

/* Timings of one baseline phase. */
struct adump_bench_timing {
	double seconds;                         /* including the final syncfs when is_synced */
	double seconds_unsynced;
	double cpu_seconds;                     /* user + sys of the whole process */
	uint64_t bytes;
	uint64_t files;
	uint64_t records;
	int error;                              /* 0 or negative errno */
};

double adump_bench_now(void);
double adump_bench_cpu_seconds(void);

/**
 * adump_bench_disk_limit() - write @bytes to one new file under @dir with plain sequential
 * io_uring writes of @chunk bytes, @depth in flight, from one reused buffer; then syncfs
 * when @sync. @is_direct: O_DIRECT (the size is rounded up to 4 KiB). The file is removed
 * afterwards. Return: 0 or -errno (also in out->error).
 */
int adump_bench_disk_limit(const char *dir, uint64_t bytes, size_t chunk, unsigned depth,
			   bool is_direct, bool sync, struct adump_bench_timing *out);

/* fio's I/O engine for the ceiling runs: io_uring at depth 16 where the kernel allows it,
 * else psync (pwrite), @jobs processes each writing its share of the file at its own offset,
 * as the capture's pwrite writer does. */
enum adump_bench_fio_engine { ADUMP_BENCH_FIO_URING, ADUMP_BENCH_FIO_PSYNC };
#define ADUMP_BENCH_FIO_JOBS_MAX 64
extern const char *const adump_bench_fio_engine_names[];      /* "io_uring", "psync" */

struct adump_bench_fio_cfg {
	bool is_direct;                         /* O_DIRECT, else buffered */
	bool is_sync;                           /* end with a syncfs, as a capture ends */
	enum adump_bench_fio_engine engine;
	unsigned jobs;                          /* psync: fio jobs, 1..64 (0: 1) */
};

/**
 * adump_bench_fio() - run fio (bench/fio.c) on @dir: @bytes (rounded up to whole blocks) to one
 * new file, sequential 1 MiB writes (smaller blocks for less than 1 MiB) with @cfg's engine,
 * buffered or O_DIRECT, ending, when cfg->is_sync, with a syncfs as a capture ends.
 * out->seconds is fio's write time (first write to last completion) plus that syncfs;
 * out->cpu_seconds all of fio's processes' CPU time. Its file and report are removed after.
 * Return: 0 or negative (also in out->error): -ENOENT if fio is not installed, -EIO if it
 * failed or its report could not be read.
 */
int adump_bench_fio(const char *dir, uint64_t bytes, const struct adump_bench_fio_cfg *cfg,
		    struct adump_bench_timing *out);

/**
 * adump_bench_create_limit() - create + write + close @count files in @dir, one thread,
 * plain syscalls; file k gets @sizes(k, user) bytes. Then syncfs when @sync.
 * @is_unnamed: each file as the capture publishes it instead (publish-limit): an unnamed
 * file (O_TMPFILE) in @dir, written, then linked in under its name (linkat AT_EMPTY_PATH),
 * then closed, so that no file is ever visible before it is complete.
 */
int adump_bench_create_limit(const char *dir, uint64_t count,
			     uint64_t (*sizes)(uint64_t k, void *user), void *user, bool is_unnamed,
			     bool sync, struct adump_bench_timing *out);

/**
 * adump_bench_ring_limit() - move @records pointers through a bare ck_ring SPSC pair (a
 * filled ring to a consumer thread and a free ring back), @slots records circulating, no
 * other work. The producer writes each record's sequence number into it; with @is_reading
 * each record has a cache line of its own and the consumer reads and checks that number,
 * as any consumer of a hand-off reads what it was handed (the pipeline's records are a
 * cache line each); without, the consumer never touches the records.
 * Return: 0, -errno, or -EIO if a record read back wrong (also in out->error).
 */
int adump_bench_ring_limit(uint64_t records, unsigned slots, bool is_reading,
			   struct adump_bench_timing *out);

/**
 * adump_bench_chan_handoff() - move @records records through the pipeline's own channel
 * (struct adump_chan of ring/ring.h, through a producer's port and the consumer's wake-ups)
 * with @buffers buffers and ADUMP_ON_FULL_BLOCK, as a stream's channel is in a capture: one producer thread reserves, fills in the record's
 * fields and commits; one consumer thread pops and releases, and when the channel is empty
 * polls and then sleeps on a real doorbell's eventfd the way a worker does. Nothing else
 * happens per record (no copy, no header, no write), so records per second here against
 * adump_bench_ring_limit()'s on the same count is what the channel's bookkeeping and
 * doorbell cost over the bare ring pair. out->records is @records on success.
 * Return: 0, -ENOMEM, -errno of the doorbell or thread, -EIO if a record arrived out of
 * order (also in out->error).
 */
int adump_bench_chan_handoff(uint64_t records, unsigned buffers, struct adump_bench_timing *out);

/* syncfs() on the filesystem holding @dir. Return: 0 or -errno. */
int adump_bench_syncfs(const char *dir);

/* Process memory: current peak RSS (VmHWM) in bytes, and a reset of that peak. */
uint64_t adump_bench_peak_rss(void);
void adump_bench_peak_rss_reset(void);

/* ---- the host producer (--producer host, host-nocopy; bench/host.c) ---- */

/* The three host tensors of @op (self, other: inputs; out: output) at @data. */
void adump_bench_host_tensors(const struct adump_bench_op *op, const void *const data[3],
			      struct adump_host_tensor t[3]);

/* Zero-copy releases, counted by the release callback. */
struct adump_bench_host_counts {
	_Atomic uint64_t released;
	_Atomic uint64_t release_failures;
};

/**
 * adump_bench_host_dump() - dump @op through @hs as an "Add" with inputs self, other and
 * output out at @data; zero copy when @counts is set (its releases counted there).
 * Return: as adump_host_dump_op(). The owner thread of @hs.
 */
int adump_bench_host_dump(struct adump_host_stream *hs, const struct adump_bench_op *op,
			  const void *const data[3], struct adump_bench_host_counts *counts);

/* Which op of the run made the file of (@stream_id, @task_id): its index, its parameters and
 * the tensors' memory. Return: 0, or negative if none did. Called from worker threads. */
typedef int (*adump_bench_lookup_fn)(void *user, uint32_t stream_id, uint32_t task_id,
				     uint64_t *index, struct adump_bench_op *op,
				     const void *data[3]);

/* A callback-sink consumer that checks every file of a host-producer run byte for byte. */
struct adump_bench_verify;

int adump_bench_verify_create(uint64_t op_count, adump_bench_lookup_fn lookup, void *user,
			      struct adump_bench_verify **out);
void adump_bench_verify_destroy(struct adump_bench_verify *v);
/* The chunk_fn (user: the verifier): each chunk against the bytes its file must hold there. */
int adump_bench_verify_chunk(const struct adump_chunk *chunk, void *user);
/* Files whose chunks all matched and ended at the right length, files that did not, bytes
 * compared, and the first mismatch ("" if none). */
void adump_bench_verify_result(struct adump_bench_verify *v, uint64_t *files_ok,
			       uint64_t *files_bad, uint64_t *bytes, char *first_error, size_t cap);

/* ---- the soak (bench/soak.c): tests/faults/test_soak.c and `adump bench --verify-crc` ---- */

/* Host RSS now (statm's resident), in bytes; 0 if unreadable. */
uint64_t adump_bench_rss(void);

#define ADUMP_BENCH_SOAK_RSS_MAX 1024

struct adump_bench_soak_opts {
	unsigned stream_count;
	uint64_t total;                         /* tensor bytes to launch (at least) */
	uint64_t max_bytes;                     /* the first op's tensors (stream 0) */
	uint64_t drawn_max;                     /* log-uniform draws in [4, drawn_max] */
	uint64_t seed;
	uint64_t rss_step;                      /* an RSS sample each time launches cross one */
	bool is_step_ops;                       /* rss_step counts ops, not tensor bytes */
};

/* What one run's verification found. */
struct adump_bench_soak_result {
	uint64_t ops, tensors;                  /* planned; tensors found */
	uint64_t verified_bytes;                /* tensor bytes whose CRC32C matched */
	uint64_t lost, duplicated, corrupt;
	char first_lost[64], first_corrupt[256];
	uint64_t rss[ADUMP_BENCH_SOAK_RSS_MAX]; /* one per step crossed, then the end's */
	unsigned rss_count;
	double rss_max_ratio;                   /* largest later sample / the first */
	bool rss_flat;                          /* every later sample within 5 % of the first */
};

struct adump_bench_soak;

/**
 * adump_bench_soak_create() - plan the ops and take their launch CRCs, open the simulated
 * device and fill its memory. Return: 0, -EINVAL for bad options, -ENOMEM, device errors.
 */
int adump_bench_soak_create(const struct adump_bench_soak_opts *o, struct adump_bench_soak **out);
void adump_bench_soak_destroy(struct adump_bench_soak *k);
uint64_t adump_bench_soak_ops(const struct adump_bench_soak *k);
uint64_t adump_bench_soak_bytes(const struct adump_bench_soak *k);
/* The RSS step, once the ops are known (at least 1). */
void adump_bench_soak_set_step(struct adump_bench_soak *k, uint64_t step);
/* Launch every op on its stream (one thread each) dumping into @s; RSS sampled. Return: 0
 * or the first error. For the callback sink, @s's chunk_fn is adump_bench_soak_chunk with
 * the soak as user. */
int adump_bench_soak_run(struct adump_bench_soak *k, struct adump_session *s);
/* Recompute every tensor's CRC32C from the dump files under @dir. Return: 0 or -errno. */
int adump_bench_soak_verify_dir(struct adump_bench_soak *k, const char *dir);
int adump_bench_soak_chunk(const struct adump_chunk *chunk, void *user);
/* The verification since the last call (which it resets), with the run's RSS curve. */
void adump_bench_soak_result(struct adump_bench_soak *k, struct adump_bench_soak_result *r);

#endif
