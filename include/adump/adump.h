/* SPDX-License-Identifier: Apache-2.0 */
/* adump's native API: a capture session that takes operator dumps from the streams of a
 * (simulated) NPU and writes CANN-layout dump files through io_uring, or hands the same bytes
 * to a callback. The CANN-compatible API (include/acl) is a thin layer over this one. */
#ifndef ADUMP_ADUMP_H
#define ADUMP_ADUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/adump_err.h"
#include "adump/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ADUMP_VERSION_MAJOR 0
#define ADUMP_VERSION_MINOR 1
#define ADUMP_VERSION_PATCH 0

/* What a producer does when its stream has no free staging buffer. */
enum adump_on_full {
	ADUMP_ON_FULL_BLOCK = 0,        /* wait: a short bounded spin, then sleep; nothing is lost */
	ADUMP_ON_FULL_DROP = 1,         /* drop the chunk, count it, mark its file failed */
};

/* Which backend writes files. AUTO takes io_uring and falls back to pwrite when the kernel
 * refuses io_uring (ENOSYS, EPERM, ENOMEM, EINVAL). */
enum adump_writer_kind {
	ADUMP_WRITER_AUTO = 0,
	ADUMP_WRITER_URING = 1,
	ADUMP_WRITER_PWRITE = 2,
};

/* Why the session writes with the backend it does (struct adump_stats.backend_reason). */
enum adump_writer_reason {
	ADUMP_WRITER_REASON_UNDECIDED = 0,
	ADUMP_WRITER_REASON_AUTO = 1,           /* AUTO, and io_uring works here */
	ADUMP_WRITER_REASON_CONFIGURED = 2,     /* the config named the backend */
	ADUMP_WRITER_REASON_REFUSED = 3,        /* AUTO, io_uring refused (backend_error says how) */
};

enum adump_sink {
	ADUMP_SINK_FILE = 0,            /* dump files under dump_path */
	ADUMP_SINK_CALLBACK = 1,        /* the same bytes, as chunks, to chunk_fn; no files */
};

/* How file data reaches the disk. DIRECT writes with O_DIRECT from the staging buffers
 * (every write aligned; files are byte-identical to buffered ones). AUTO (the default of
 * ADUMP_CONFIG_INIT) chooses per file: O_DIRECT for a file of at least direct_min_bytes
 * (header included), buffered for smaller ones. Where the filesystem refuses O_DIRECT
 * (tmpfs: the open fails), every file is written buffered, logged once; a file whose
 * first O_DIRECT write fails with EINVAL is rewritten buffered. Both are counted in
 * stats.direct_fallbacks. AUTO applies where DIRECT could (uncompressed tensor dumps in
 * the file sink, files layout, chunk_bytes a multiple of 4096); elsewhere it is BUFFERED. */
enum adump_io {
	ADUMP_IO_BUFFERED = 0,
	ADUMP_IO_DIRECT = 1,
	ADUMP_IO_AUTO = 2,
};

/* LZ4: each dump file is written as one standard LZ4 frame, <name>.lz4, which `lz4 -d`
 * restores to the exact dump file. Blocks that do not shrink are stored uncompressed. */
enum adump_compress {
	ADUMP_COMPRESS_NONE = 0,
	ADUMP_COMPRESS_LZ4 = 1,
};

/* PACKED: dump files are appended to per-worker segment files with an index (name, segment,
 * offset, length, CRC32C); `adump unpack` restores the individual files. */
enum adump_layout {
	ADUMP_LAYOUT_FILES = 0,
	ADUMP_LAYOUT_PACKED = 1,
};

/* STATS: instead of tensor bytes, a CSV of per-tensor statistics (<name>.csv), computed by
 * the workers while the chunks stream through (acl.json "dump_data": "stats"). */
enum adump_content {
	ADUMP_CONTENT_TENSOR = 0,
	ADUMP_CONTENT_STATS = 1,
};

/* What the file sink writes. CANN: dump files in CANN's layout (<dir>/<device_id>/<op file>).
 * MSPROBE: msprobe's PyTorch layout, per output directory (the session's, or a stream's own):
 * dump.json (one entry per dump, from the dump's dfx_message: see README "msprobe format")
 * and, with tensor content, dump_tensor_data/<data_name>.pt (torch.load-able), each tensor's
 * bytes written from the staging buffers. A directory's dump.json is written when the
 * directory is done: a stream moves to another directory, adump_session_flush(), and
 * adump_session_destroy(). File sink, files layout, no compression, io buffered or auto. */
enum adump_output_format {
	ADUMP_OUTPUT_CANN = 0,
	ADUMP_OUTPUT_MSPROBE = 1,
};

/* MSPROBE: what each tensor's entry carries beside dtype and shape (msprobe's summary_mode):
 * STATISTICS: Max, Min, Mean, Norm; MD5: also "md5", the CRC-32 of its bytes (8 hex digits),
 * as msprobe writes it. */
enum adump_summary {
	ADUMP_SUMMARY_STATISTICS = 0,
	ADUMP_SUMMARY_MD5 = 1,
};

/* Statistics for ADUMP_CONTENT_STATS (CANN's selection bits). */
enum {
	ADUMP_STAT_MAX = 1u << 0,
	ADUMP_STAT_MIN = 1u << 1,
	ADUMP_STAT_AVG = 1u << 2,
	ADUMP_STAT_NAN = 1u << 3,
	ADUMP_STAT_NEG_INF = 1u << 4,
	ADUMP_STAT_POS_INF = 1u << 5,
	ADUMP_STAT_L2NORM = 1u << 6,
	ADUMP_STAT_DEFAULT = 0x3f,
	ADUMP_STAT_ALL = 0x7f,
};

/* One piece of one dump file, as the callback sink delivers it. Concatenating a file's chunks
 * by offset gives exactly the bytes the file sink writes. */
struct adump_chunk {
	const char *file_name;          /* absolute path the file would have had */
	uint64_t offset;                /* absolute offset in that file; the header chunk is at 0 */
	const void *data;               /* borrowed for the duration of the call */
	size_t len;
	bool is_last;                   /* true exactly once per file, on its final chunk */
};

/* Called from worker threads, per file in order, different files concurrently. A non-zero
 * return is counted (stats.callback_errors) and logged once; delivery goes on. */
typedef int (*adump_chunk_fn)(const struct adump_chunk *chunk, void *user);

struct adump_config {
	size_t struct_size;             /* set by ADUMP_CONFIG_INIT; fields are only appended */
	const char *dump_path;          /* required for the file sink; copied */
	const char *time_dir;           /* NULL: YYYYMMDDhhmmss (local) of session creation */
	unsigned worker_count;          /* 0: one per core; never more workers than streams */
	size_t chunk_bytes;             /* 0: 2 MiB; DMA chunk and staging buffer size */
	size_t pool_bytes;              /* 0: 256 MiB; all staging buffers together */
	unsigned stream_max;            /* 0: 16; streams sharing the pool at once */
	enum adump_on_full on_full;
	enum adump_writer_kind writer;
	enum adump_sink sink;
	adump_chunk_fn chunk_fn;        /* with ADUMP_SINK_CALLBACK */
	void *chunk_user;
	enum adump_io io;
	enum adump_compress compress;
	enum adump_layout layout;
	size_t segment_bytes;           /* PACKED: roll segments at this size; 0: 1 GiB */
	enum adump_content content;
	uint32_t stats_mask;            /* STATS: ADUMP_STAT_*; 0: ADUMP_STAT_DEFAULT */
	/* PACKED: each time this many more bytes of small files reached a segment, start an
	 * fdatasync() of it (io_uring, in the background), so that the disk flushes its cache
	 * while the capture runs and not all of it at the end; 0: 32 MiB; SIZE_MAX: never. */
	size_t sync_bytes;
	/* Disk guard (file sink): a file starts only if the free space of the dump directory's
	 * filesystem, less the bytes files in flight still have to write, less its own size,
	 * stays at or above this floor; otherwise it is skipped and counted as a loss of cause
	 * ADUMP_LOSS_DISK_GUARD. 0: the larger of 1 GiB and 5 % of the filesystem;
	 * ADUMP_GUARD_OFF: no floor. */
	uint64_t min_free_bytes;
	/* Quota: the bytes of all files the session starts stay within this; 0: no quota. */
	uint64_t max_bytes;
	/* io AUTO: files of at least this many bytes are written with O_DIRECT; 0: 256 KiB
	 * (measured: bench/RESULTS.md, "io=auto threshold"). */
	uint64_t direct_min_bytes;
	enum adump_output_format format;        /* CANN (default) or MSPROBE */
	enum adump_summary summary;             /* MSPROBE: STATISTICS (default) or MD5 */
	/* Window mode, the flight recorder (README "Flight recorder"): with window_steps > 0
	 * the session writes every dump's statistics (as ADUMP_CONTENT_STATS would, in the
	 * session's format) and keeps the full tensors of the current step and the
	 * window_steps - 1 before it in memory; when a trigger fires, the held steps are
	 * written as a tensor capture (adump_session_step()). content must be TENSOR: what a
	 * persisted window holds. File sink or callback, files layout, no compression. */
	unsigned window_steps;
	/* The memory the window may hold, tensors and their descriptions together: 0: 1 GiB
	 * (ADUMP_DEFAULT_WINDOW_BYTES); at least chunk_bytes. Mapped once, touched as used.
	 * A host stream's zero-copy dump is held by reference (adump/host.h), its tensors left
	 * in the caller's memory, never copied unless a window is written: it takes its room
	 * here all the same (the memory it keeps from being freed), without touching it. */
	uint64_t window_bytes;
	unsigned window_persists;       /* windows written at most; 0: 3 */
	uint32_t triggers;              /* ADUMP_TRIGGER_*; 0: ADUMP_TRIGGER_DEFAULT */
	/* ADUMP_TRIGGER_BOUND: fires when a tensor whose name matches a pattern has a finite
	 * element of magnitude above its max_abs (copied). */
	const struct adump_bound *bounds;
	unsigned bound_count;
	/* ADUMP_TRIGGER_DEVIATION (msprobe's AnomalyTurbulence): fires when a tensor's L2 norm
	 * exceeds the mean of its norms in its last deviation_steps steps by more than the
	 * factor (1 + deviation), once it has that many; 0: 1.0 (twice the mean), 0: 5 steps. */
	double deviation;
	unsigned deviation_steps;
};

/* Window mode's triggers (struct adump_config.triggers). A tensor's name, in bounds and in
 * trigger.json, is <op_name>.input.<i> or <op_name>.output.<i>. */
enum {
	ADUMP_TRIGGER_NONFINITE = 1u << 0,      /* a NaN or an infinity in any dumped tensor */
	ADUMP_TRIGGER_BOUND = 1u << 1,          /* max |x| above a bound (config.bounds) */
	ADUMP_TRIGGER_DEVIATION = 1u << 2,      /* a norm off its own history */
	ADUMP_TRIGGER_CALL = 1u << 3,           /* adump_session_persist(): always on */
	/* SIGUSR1 to the process persists the held steps at once (a hung job): the session
	 * installs a handler (refused with -ADUMP_ERR_STATE if the signal has another one). */
	ADUMP_TRIGGER_SIGNAL = 1u << 4,
	ADUMP_TRIGGER_DEFAULT = ADUMP_TRIGGER_NONFINITE | ADUMP_TRIGGER_CALL,
	ADUMP_TRIGGER_ALL = 0x1f,
};

struct adump_bound {
	const char *pattern;            /* fnmatch(3) glob against the tensor's name */
	double max_abs;                 /* > 0 */
};

#define ADUMP_GUARD_OFF UINT64_MAX

#define ADUMP_CONFIG_INIT { .struct_size = sizeof(struct adump_config), .io = ADUMP_IO_AUTO }

/* Latency histograms are log-linear: each power of two of nanoseconds is split in 4 equal
 * buckets (so a bucket is at most 25 % wide), from 0 ns up to 2^40 ns (~18 min). */
#define ADUMP_HIST_SUB_BUCKETS 4
#define ADUMP_HIST_BUCKETS 160
#define ADUMP_ENQUEUE_SAMPLE 16

/**
 * adump_hist_bucket() - the bucket of a duration of @ns nanoseconds.
 * adump_hist_bucket_end() - the first duration above bucket @i, in ns.
 */
ADUMP_API unsigned adump_hist_bucket(uint64_t ns);
ADUMP_API uint64_t adump_hist_bucket_end(unsigned i);

/**
 * adump_hist_percentile() - a percentile of a latency histogram.
 * @hist: ADUMP_HIST_BUCKETS counters; @q: 0..1 (0.5 = median, 0.99 = p99).
 * Return: the upper bound of the bucket holding that percentile, in ns; 0 if empty.
 */
ADUMP_API uint64_t adump_hist_percentile(const uint64_t *hist, double q);

/* Why a tensor was lost: the stats count lost tensors by cause, and each loss leaves a line
 * in <dump dir>/ADUMP_LOSS_LOG_NAME (see adump_reader_losses_open()). A failed file loses
 * all its tensors: the ones where the failure struck take its cause, the producer's others
 * (before or after a dropped chunk) ADUMP_LOSS_AFTER_LOSS. */
#define ADUMP_LOSS_CAUSE_LIST(X)                                                         \
	X(ADUMP_LOSS_NO_BUFFER, "no_buffer")    /* no staging buffer (ADUMP_ON_FULL_DROP) */ \
	X(ADUMP_LOSS_AFTER_LOSS, "after_loss")  /* the rest of a file after an earlier loss */ \
	X(ADUMP_LOSS_NOMEM, "nomem")            /* out of memory */                           \
	X(ADUMP_LOSS_ENOSPC, "enospc")          /* write failed: no space (or quota) */       \
	X(ADUMP_LOSS_EIO, "eio")                /* write failed: I/O error */                 \
	X(ADUMP_LOSS_WRITE_ERROR, "write_error") /* any other failure of the file */          \
	X(ADUMP_LOSS_DISK_GUARD, "disk_guard")  /* skipped by the disk guard or the quota */  \
	X(ADUMP_LOSS_CHANGED_BEFORE_WRITTEN, "changed_before_written") /* zero copy: the   \
	  producer's check refused the bytes (the memory changed before it was written) */ \
	/* Recorded by producers (adump.torch), never by the library itself: */              \
	X(ADUMP_LOSS_CHANGED_IN_PLACE, "changed_in_place") /* the value was overwritten in  \
	  place before it could be handed over (a module that modifies its input) */       \
	X(ADUMP_LOSS_UNSUPPORTED_DTYPE, "unsupported_dtype") /* a dtype dumps cannot hold */ \
	/* Window mode: a dump of a step larger than the whole window (window_bytes), not  \
	 * held; listed in the loss log of the window written. */                           \
	X(ADUMP_LOSS_WINDOW_FULL, "window_full")
#define ADUMP_LOSS_ENUM(name, str) name,
enum adump_loss_cause { ADUMP_LOSS_CAUSE_LIST(ADUMP_LOSS_ENUM) ADUMP_LOSS_CAUSE_COUNT };
#undef ADUMP_LOSS_ENUM
#define ADUMP_LOSS_LOG_NAME "adump-losses.jsonl"

/**
 * adump_loss_cause_name() - the name of a cause as the loss log spells it ("no_buffer" ...).
 * Return: a static string; "unknown" out of range.
 * adump_loss_cause_parse() - the cause of a name. Return: the cause, or -1.
 */
ADUMP_API const char *adump_loss_cause_name(enum adump_loss_cause cause);
ADUMP_API int adump_loss_cause_parse(const char *name);

struct adump_stream_stats {
	uint32_t stream_id;
	uint64_t records;               /* chunks posted by the producer */
	uint64_t drops;                 /* session stats: tensors lost, Σ losses[]; a bare
					 * channel's: chunks dropped by ADUMP_ON_FULL_DROP */
	uint64_t losses[ADUMP_LOSS_CAUSE_COUNT];        /* tensors lost, by cause */
	uint32_t ring_high_water;       /* most records waiting in the ring at once */
	uint64_t producer_wait_count;   /* times the producer found no free buffer */
	uint64_t producer_wait_ns;      /* time it spent waiting */
};

struct adump_stats {
	uint64_t records;               /* chunks handled by workers */
	uint64_t bytes;                 /* bytes written or delivered, headers included */
	uint64_t files_completed;
	uint64_t files_failed;
	uint64_t write_errors;
	uint64_t callback_errors;
	uint64_t drops;                 /* tensors lost, all causes: Σ losses[] */
	uint64_t losses[ADUMP_LOSS_CAUSE_COUNT];        /* tensors lost, by cause */
	uint64_t writes_in_flight;      /* at the moment of the call */
	uint64_t producer_wait_count;
	uint64_t producer_wait_ns;
	enum adump_writer_kind backend;     /* URING or PWRITE once decided; AUTO before */
	enum adump_writer_reason backend_reason;
	int backend_error;              /* REFUSED: the -errno io_uring setup failed with */
	/* Latency histograms over all streams (buckets: adump_hist_bucket()):
	 * producer waits for a free buffer (every wait), and enqueue latency: a reserve that found
	 * a free buffer plus its commit, without the copy between them (sampled: one record in
	 * ADUMP_ENQUEUE_SAMPLE). */
	uint64_t producer_wait_hist[ADUMP_HIST_BUCKETS];
	uint64_t producer_wait_max_ns;
	uint64_t enqueue_hist[ADUMP_HIST_BUCKETS];
	int first_error;                /* first failure the session saw (negative), or 0 */
	/* Plain dump files (uncompressed, files layout) by how they were written: opened with
	 * O_DIRECT, or through the page cache (by choice or by fallback); and files meant for
	 * O_DIRECT that the filesystem made buffered (refused open, EINVAL on a write). */
	uint64_t files_direct;
	uint64_t files_buffered;
	uint64_t direct_fallbacks;
	unsigned worker_count;          /* workers running */
	unsigned writer_threads;        /* threads writing files: the workers, and with pwrite
					 * each worker's I/O threads */
	unsigned stream_count;          /* entries filled in streams[] */
	struct adump_stream_stats streams[64];
};

struct adump_session;
struct adump_dev_stream;

/**
 * adump_config_check() - validate a configuration without creating anything.
 * Return: 0, or -ADUMP_ERR_CONFIG after logging which field is wrong and why.
 */
ADUMP_API int adump_config_check(const struct adump_config *cfg);

/**
 * adump_session_create() - start a capture session.
 * @cfg: borrowed; strings are copied.
 * @out: receives the session on success; untouched on failure.
 *
 * Creates <dump_path>/<time_dir>/ for the file sink, reserves the staging pool and decides
 * the writer backend (logged once). Workers start as streams attach.
 * Return: 0, -ADUMP_ERR_CONFIG, -ENOMEM, or -errno from creating the directory.
 * Any thread.
 */
ADUMP_API int adump_session_create(const struct adump_config *cfg, struct adump_session **out);

/**
 * adump_session_destroy() - flush everything outstanding, stop workers, free the session.
 * Detaches any stream still attached. NULL does nothing. Not concurrently with any other
 * call on the session.
 * Return: 0, or the session's first error (see adump_session_error()).
 */
ADUMP_API int adump_session_destroy(struct adump_session *s);

/**
 * adump_session_attach() - capture the dumps of a device stream into this session.
 * @s:      the session.
 * @stream: a device stream (include/adump/device.h); borrowed until detached.
 *
 * The stream gets its own staging buffers and ring, consumed by one worker. Ops launched
 * with a dump request after this call are captured.
 * Return: 0, -ADUMP_ERR_STATE if the stream is attached already, -ADUMP_ERR_TOO_BIG when
 * stream_max streams are attached, -ENOMEM. Any thread, not concurrently with detach of the
 * same stream.
 */
ADUMP_API int adump_session_attach(struct adump_session *s, struct adump_dev_stream *stream);

/**
 * adump_session_detach() - stop capturing a stream: waits until every dump it produced is
 * written, then gives its buffers back to the pool. Dump callbacks may call
 * adump_stats_get() meanwhile.
 * Return: 0, -ADUMP_ERR_NOT_FOUND if not attached to @s, -ADUMP_ERR_STATE if another detach
 * of it is under way.
 */
ADUMP_API int adump_session_detach(struct adump_session *s, struct adump_dev_stream *stream);

/**
 * adump_session_flush() - wait until every dump posted so far, on every stream, is written
 * (or delivered).
 * Return: 0, or the session's first error. Any thread, not concurrently with a detach or
 * destroy of the same session. Dump callbacks may call adump_stats_get() meanwhile.
 */
ADUMP_API int adump_session_flush(struct adump_session *s);

/**
 * adump_session_error() - the first error the session saw: a failed write, a dropped chunk
 * or a callback failure. Return: 0 or a negative code. Any thread.
 */
ADUMP_API int adump_session_error(const struct adump_session *s);

/**
 * adump_session_dir() - the directory dump files go to, <dump_path>/<time_dir>.
 * Return: a string owned by the session. Any thread.
 */
ADUMP_API const char *adump_session_dir(const struct adump_session *s);

/* What the window of a window-mode session holds and has done (adump_session_window()). */
struct adump_window_info {
	uint64_t step;                  /* the current step (adump_session_step() counts) */
	/* Steps and dumps the next window would write, the current step included (not those a
	 * persist wrote while a dump was still coming in: they wait in memory to be evicted). */
	unsigned held_steps;
	uint64_t held_dumps;
	uint64_t held_bytes;            /* of window_bytes in use: tensors (held by reference
					 * too) and descriptions */
	/* Dumps of the current step the window could not hold (the step alone is larger than
	 * the window): a persisted window lists them as lost, cause window_full. Since start. */
	uint64_t lost_dumps;
	unsigned persists;              /* windows written */
	unsigned persists_skipped;      /* triggers past window_persists: nothing written */
	bool is_pending;                /* a trigger fired in the current step */
	char pending_rule[16];          /* its rule: "nonfinite", "bound", ... */
	char last_window[1024];         /* the root of the last window written, or "" */
};

/**
 * adump_session_step() - end the current step of a window-mode session: wait until every
 * dump posted so far is written (adump_session_flush()), then, if a trigger fired or
 * adump_session_persist() was called during the step, write the held steps as a tensor
 * capture under <dump_path>/window-<step>/ (README "Flight recorder"), and begin the next
 * step. Outside window mode: the flush and the count.
 * Return: 0, the flush's error, or the persist's (-errno, -ADUMP_ERR_*); the step advances
 * whatever happened. Not concurrently with dumps into the session.
 */
ADUMP_API int adump_session_step(struct adump_session *s);

/**
 * adump_session_persist() - a trigger by call: the held steps are written at the end of the
 * current step, with @reason (copied; NULL: none) in trigger.json.
 * Return: 0; -ADUMP_ERR_STATE outside window mode; -EINVAL for NULL @s. Any thread.
 */
ADUMP_API int adump_session_persist(struct adump_session *s, const char *reason);

/**
 * adump_session_persist_note() - a JSON object whose members go into the trigger.json of
 * the next window written (a caller's own facts: a rank, the rank that fired first); they
 * replace adump's fields of the same names. NULL: none.
 * Return: 0; -ADUMP_ERR_CONFIG if @json is not a JSON object; -ADUMP_ERR_STATE outside
 * window mode. Any thread.
 */
ADUMP_API int adump_session_persist_note(struct adump_session *s, const char *json);

/**
 * adump_session_window() - a snapshot of the window. Return: 0, -ADUMP_ERR_STATE outside
 * window mode. Any thread.
 */
ADUMP_API int adump_session_window(struct adump_session *s, struct adump_window_info *out);

/**
 * adump_stats_get() - a snapshot of the session's counters. Any thread.
 */
ADUMP_API void adump_stats_get(const struct adump_session *s, struct adump_stats *out);

/**
 * adump_dump_file_name() - the sanitised base name of an op's dump file,
 * <op_type>.<op_name>.<task_id>.<stream_id>.<timestamp_us>, with every byte of op type and
 * name outside [A-Za-z0-9_-] replaced by '_': CANN's rule (' ', '.', '/', '\\') extended to
 * control bytes, '<', '(' and non-ASCII bytes, so msaccucmp's name pattern (and adump's
 * readers) accept every file adump writes. The header keeps the real names.
 * Return: the length written (excluding NUL), or -ADUMP_ERR_TOO_BIG if @cap is too small.
 */
ADUMP_API int adump_dump_file_name(const struct adump_op *op, char *buf, size_t cap);

/**
 * adump_dump_header_pack() - serialise an op's DumpData header (version "2.0", data fields
 * empty) preceded by its 8-byte little-endian length: the first bytes of its dump file.
 * @buf: NULL to ask for the size.
 * Return: the total size (8 + header), or a negative code (-ADUMP_ERR_TOO_BIG if @cap is
 * too small, -ADUMP_ERR_CONFIG for an invalid op).
 */
ADUMP_API long adump_dump_header_pack(const struct adump_op *op, void *buf, size_t cap);

/**
 * adump_dump_write_file() - write one complete dump file synchronously, from host memory.
 * @path:  file to create; it gets its name only once complete (an unnamed O_TMPFILE file
 *         linked in, or where the filesystem has none a "<path>.part" renamed).
 * @op:    what the file holds.
 * @data:  one pointer per tensor of @op, each @op->tensors[i].bytes long (NULL if 0 bytes).
 * @mode:  file mode, e.g. 0600.
 * Return: 0, -ADUMP_ERR_CONFIG, or -errno; on failure no file of that name is left.
 */
ADUMP_API int adump_dump_write_file(const char *path, const struct adump_op *op,
				    const void *const *data, unsigned mode);

/**
 * adump_dump_write_fd() - write one complete dump file (header, then every tensor's bytes)
 * to an open file descriptor, synchronously, from host memory. Same arguments as
 * adump_dump_write_file(); the caller opens and closes @fd.
 * Return: 0, -ADUMP_ERR_CONFIG, or -errno.
 */
ADUMP_API int adump_dump_write_fd(int fd, const struct adump_op *op, const void *const *data);

/**
 * adump_unpack() - restore the dump files of a packed capture.
 * @dir:     the capture directory (<dump_path>/<time_dir>) or its packed/ folder.
 * @out_dir: files are written as <out_dir>/<device_id>/<name>, byte-identical to what the
 *           file sink would have written; created as needed.
 * Every complete index line is checked against its segment's bytes (CRC32C); a line a crash
 * cut short is ignored. Return: the number of files restored, or the first error
 * (-ADUMP_ERR_CORRUPT for an entry that does not match; the others are still restored).
 */
ADUMP_API long adump_unpack(const char *dir, const char *out_dir);

/* Logging. The library never writes to stdout; the default sink prints WARN and above to
 * stderr as "adump: module: message". */
enum adump_log_level { ADUMP_LOG_DEBUG = 0, ADUMP_LOG_INFO, ADUMP_LOG_WARN, ADUMP_LOG_ERROR };
typedef void (*adump_log_fn)(enum adump_log_level level, const char *module, const char *msg,
			     void *user);
/** adump_set_log_fn() - replace the log sink (NULL restores the default). Any thread. */
ADUMP_API void adump_set_log_fn(adump_log_fn fn, void *user);
/** adump_set_log_level() - lowest level the default sink prints. Any thread. */
ADUMP_API void adump_set_log_level(enum adump_log_level level);

#ifdef __cplusplus
}
#endif
#endif
