/* SPDX-License-Identifier: Apache-2.0 */
/* Host capture: any thread of any program hands tensors in host memory to a capture session
 * through a host stream. A host stream is a producer like a device stream's DMA engine: it
 * feeds the same staging buffers, rings, workers and sinks, its files are named and laid out
 * as device dumps are (<op_type>.<op_name>.<task_id>.<stream_id>.<timestamp_us> under
 * <session dir>/<device_id>/), and the session's drop policy and counters apply to it. */
#ifndef ADUMP_HOST_H
#define ADUMP_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/adump.h"

#ifdef __cplusplus
extern "C" {
#endif

struct adump_host_stream;

/* Options of a host stream. Initialise with ADUMP_HOST_STREAM_CONFIG_INIT; fields are only
 * ever appended. NULL in adump_host_stream_open() means all defaults. */
struct adump_host_stream_config {
	size_t struct_size;             /* set by ADUMP_HOST_STREAM_CONFIG_INIT */
	uint32_t device_id;             /* the <device_id> directory and the header's device;
					 * 0..63, default 0 (e.g. a rank) */
};

#define ADUMP_HOST_STREAM_CONFIG_INIT { .struct_size = sizeof(struct adump_host_stream_config) }

/* One tensor in host memory. Its payload is @bytes bytes at @data, which must equal the
 * element count (product of @dims; 1 for a scalar, dim_count 0) times the dtype's element
 * size, rounded up to whole bytes for sub-byte dtypes. Fixed size: passed in arrays, it never
 * grows (new per-op options go into struct adump_host_op). */
struct adump_host_tensor {
	const void *data;               /* borrowed; may be NULL only when bytes is 0 */
	uint64_t bytes;
	int32_t dtype;                  /* enum adump_dtype with a fixed width (not STRING, ...) */
	int32_t format;                 /* OutputFormat numbering, e.g. ADUMP_FORMAT_ND */
	uint32_t dim_count;             /* 0..ADUMP_MAX_DIMS */
	uint32_t orig_dim_count;        /* 0..ADUMP_MAX_DIMS; 0: origin shape = shape */
	int64_t dims[ADUMP_MAX_DIMS];   /* each >= 0 */
	int64_t orig_dims[ADUMP_MAX_DIMS];
};

/* Zero-copy completion. @status is 0 when every byte of the dump has been written (or
 * delivered to the callback sink) and the file published, or a negative code when the dump
 * failed and was not published under its name (-ADUMP_ERR_DROPPED: a chunk was dropped under
 * ADUMP_ON_FULL_DROP; -ADUMP_ERR_WRITE or -errno: a write failed; the check_fn's code; ...).
 * Either way adump no longer reads the tensors' memory: the caller may free or reuse it.
 * Called exactly once per accepted dump, on a worker thread; it must not block for long nor
 * call into the same session except adump_stats_get().
 * In a window session (window_steps; but for msprobe's MD5 summary, whose workers need the
 * bytes) the window holds a zero-copy dump by reference instead: nothing is written unless a
 * window is, and then read from the caller's memory (check_fn first). The release_fn comes
 * when the window lets the dump go: its step dropped from the window, the window written, or
 * the session destroyed; at once, within the dump call, for a dump the window has no room
 * for. Status 0, or the check_fn's code when a window could
 * not write the dump for it. On whichever thread that happens (a dump call, a step, a
 * persist, adump_session_destroy()), under the window's lock: it must not call into the
 * session at all. Until then the memory must stay allocated. */
typedef void (*adump_host_release_fn)(void *user, uint32_t task_id, int status);

/* Zero-copy check, optional: called on a worker thread once every byte has been read from
 * the caller's memory and written, before the file is published (renamed into place, indexed
 * in a packed segment). Return 0 to publish, or a negative code to fail the dump instead: it
 * is counted in files_failed, left as <name>.failed, and that code goes to the release_fn.
 * Lets a caller detect a tensor modified while it was being written (e.g. a version
 * counter). With the callback sink the chunks have been delivered already; a failure is only
 * counted. A window session calls it (under its lock, on the thread that writes the window)
 * before it reads a held dump to write it: a negative code loses that dump, cause
 * changed_before_written in the window's loss log. */
typedef int (*adump_host_check_fn)(void *user, uint32_t task_id);

/* One op to dump: its inputs, then its outputs, in that order in the file. Initialise with
 * ADUMP_HOST_OP_INIT; fields are only ever appended. */
struct adump_host_op {
	size_t struct_size;             /* set by ADUMP_HOST_OP_INIT */
	const char *op_type;            /* non-empty; copied; sanitised in the file name only */
	const char *op_name;            /* non-empty; copied; sanitised in the file name only */
	const struct adump_host_tensor *inputs;         /* input_count of them; NULL if 0 */
	uint32_t input_count;
	const struct adump_host_tensor *outputs;        /* output_count of them; NULL if 0 */
	uint32_t output_count;
	/* Zero copy when set: the workers read the tensors' memory directly (staged only where
	 * O_DIRECT alignment requires it) until the release_fn is called. NULL: copy. */
	adump_host_release_fn release_fn;
	adump_host_check_fn check_fn;   /* optional, zero copy only */
	void *user;                     /* passed to release_fn and check_fn */
	uint64_t timestamp_us;          /* names the file; 0: now (wall clock, µs) */
	/* Appended in the second version (struct_size past ADUMP_HOST_OP_SIZE_V1): the header's
	 * DumpData.attr entries (name, value: non-NULL strings, copied) and dfx_message (NULL:
	 * none; copied), e.g. the module call an op ran inside. */
	const struct adump_attr *attrs;                 /* attr_count of them; NULL if 0 */
	uint32_t attr_count;                            /* <= ADUMP_HOST_ATTR_MAX */
	const char *dfx_message;
	/* Appended in the third version: optional, one key per tensor (inputs, then outputs),
	 * NULL for none. A nonzero key is the caller's word that the tensor holds the same
	 * bytes as the tensor this stream was last handed with that key (the same memory,
	 * unchanged since: a nested module's output that is also its parent's). A statistics
	 * session (content ADUMP_CONTENT_STATS), a tensor session in msprobe's format (whose
	 * dump.json holds statistics too), or a window session's copying dump, then copies
	 * that tensor's statistics instead of reading the bytes again for them, while the
	 * stream still holds them (the last ADUMP_HOST_STATS_REUSE keyed tensors); a window
	 * session's copying dump also shares the window's copy of the bytes, if it made one in
	 * the same step (and has not been written and emptied since), instead of copying them
	 * again and taking their room twice; 0: no key. Other dumps ignore the keys. */
	const uint64_t *stats_keys;
};

/* Keyed tensors' statistics a host stream keeps for reuse (struct adump_host_op's
 * stats_keys). */
#define ADUMP_HOST_STATS_REUSE 32

#define ADUMP_HOST_OP_INIT { .struct_size = sizeof(struct adump_host_op) }

/* The size of the first version of struct adump_host_op (without attrs and dfx_message):
 * callers built against it keep working, the new fields read as zero. */
#define ADUMP_HOST_OP_SIZE_V1 (offsetof(struct adump_host_op, timestamp_us) + sizeof(uint64_t))

/* Attributes per op. */
#define ADUMP_HOST_ATTR_MAX 256

/* Tensors per op, inputs and outputs together. */
#define ADUMP_HOST_TENSOR_MAX 4096

/**
 * adump_host_stream_open() - a new host stream capturing into @s, owned by the calling thread.
 * @s:   the session; must outlive the stream's use (see adump_host_stream_close()).
 * @cfg: borrowed; NULL for the defaults.
 * @out: receives the stream on success; untouched on failure.
 *
 * The stream takes a stream id unique in the process (never one of a device stream), its
 * own share of the staging pool and a worker, as adump_session_attach() does for a device
 * stream, and counts task ids from 0.
 * Return: 0; -EINVAL for NULL @s or @out; -ADUMP_ERR_CONFIG for a bad @cfg (struct_size,
 * device_id); -ADUMP_ERR_TOO_BIG when stream_max streams are attached; -ENOMEM.
 * Any thread; that thread becomes the stream's owner, the only one that may dump into it.
 */
ADUMP_API int adump_host_stream_open(struct adump_session *s,
				     const struct adump_host_stream_config *cfg,
				     struct adump_host_stream **out);

/**
 * adump_host_stream_close() - wait until everything dumped into the stream is written (every
 * release_fn called), detach it from its session and free it. NULL does nothing.
 * Return: 0, or what adump_host_stream_sync() would return.
 * Any thread, not concurrently with any other call on the stream, and never from a
 * release_fn or check_fn (it waits for the worker that runs them). Close every host stream
 * before adump_session_destroy(); if the session went first (it detaches the streams still
 * open, waiting for their dumps), close only frees the stream.
 */
ADUMP_API int adump_host_stream_close(struct adump_host_stream *hs);

/**
 * adump_host_stream_adopt() - make the calling thread the stream's owner: a deliberate
 * hand-over, e.g. a stream opened (and its staging memory made resident) ahead of time, then
 * used by a worker thread. The previous owner must have stopped calling into the stream.
 * Return: 0, -EINVAL for NULL. Any thread, not concurrently with another call on the stream.
 */
ADUMP_API int adump_host_stream_adopt(struct adump_host_stream *hs);

/**
 * adump_host_dump_op() - dump one op through the stream.
 * @hs:      the stream.
 * @op:      borrowed for the call; see struct adump_host_op.
 * @task_id: receives the op's task id (NULL ok).
 *
 * Copy mode: the calling thread copies the tensors chunk by chunk into the stream's staging
 * buffers and posts them to the worker; the call returns once the caller may reuse the
 * tensors' memory (the copy is done), not once the file is written. Zero copy (release_fn
 * set): it posts references to the caller's memory and returns at once; the memory must stay
 * valid and unchanged until the release_fn is called.
 * When the stream has no free buffer, ADUMP_ON_FULL_BLOCK waits for one; ADUMP_ON_FULL_DROP
 * drops the chunk, counts it (stats drops) and fails the file (left as <name>.failed); the
 * call still returns 0 and adump_host_stream_sync() reports -ADUMP_ERR_DROPPED.
 * Return: 0 when the dump was accepted: it took the next task id, and in zero copy its
 * release_fn will be called exactly once. On error nothing was posted, no task id was
 * taken, no release_fn is called: -EINVAL for NULL @hs or @op, a missing or empty op_type or
 * op_name, NULL tensors with a count, a tensor with NULL data and bytes, dims past
 * ADUMP_MAX_DIMS, a negative dim, bytes that differ from the shape × dtype size, a check_fn
 * without release_fn, more than ADUMP_HOST_TENSOR_MAX tensors, more than ADUMP_HOST_ATTR_MAX
 * attributes, attrs NULL with a count or an attribute with a NULL name or value, or a
 * struct_size below the first version's (ADUMP_HOST_OP_SIZE_V1); -ADUMP_ERR_UNSUPPORTED for a dtype without a fixed element width or
 * unknown; -ADUMP_ERR_WRONG_THREAD when called from another thread than the owner;
 * -ADUMP_ERR_SHUTDOWN when the session detached the stream; -ENOMEM.
 * Every refusal is logged (ERROR, adump_set_log_fn()) with the field at fault.
 * Owner thread only.
 */
ADUMP_API int adump_host_dump_op(struct adump_host_stream *hs, const struct adump_host_op *op,
				 uint32_t *task_id);

/**
 * adump_host_dump() - dump one op, copying: adump_host_dump_op() with the given op type,
 * name and tensors, and no zero copy. Same returns and thread contract.
 */
ADUMP_API int adump_host_dump(struct adump_host_stream *hs, const char *op_type,
			      const char *op_name, const struct adump_host_tensor *inputs,
			      uint32_t input_count, const struct adump_host_tensor *outputs,
			      uint32_t output_count);

/**
 * adump_host_dump_nocopy() - dump one op without copying: adump_host_dump_op() with
 * @release_fn (required) and @user. Same returns and thread contract.
 */
ADUMP_API int adump_host_dump_nocopy(struct adump_host_stream *hs, const char *op_type,
				     const char *op_name, const struct adump_host_tensor *inputs,
				     uint32_t input_count, const struct adump_host_tensor *outputs,
				     uint32_t output_count, adump_host_release_fn release_fn,
				     void *user);

/**
 * adump_host_stream_set_dir() - where the stream's next files go: <dir>/<device_id>/<name>
 * instead of <session dir>/<device_id>/<name>, e.g. one directory per training step and rank
 * while the session, its workers and its warm staging buffers live on.
 * @hs:  the stream.
 * @dir: absolute, or relative to the session's dump_path; copied. NULL: back to the session
 *       directory. No component may be "..". Below dump_path each directory is made, or
 *       entered, without following a link: one planted in a shared dump path at a step's
 *       name is refused, never written through. Elsewhere the path is the caller's own.
 *
 * Waits until the stream is idle (as adump_host_stream_sync()) before the change, since
 * every dump in flight is written where it was dumped; <dir>/<device_id>/ is created first
 * (file sink). The callback sink names chunks by the new path; the session's loss log stays
 * in the session directory (its lines name the file by its path).
 * Return: 0, or what the sync returned (-ADUMP_ERR_DROPPED: the directory changed all the
 * same); on these errors nothing changed: -EINVAL (NULL @hs, empty @dir, a ".."
 * component), -ENOTDIR (a file, or below dump_path a link, in the way),
 * -ADUMP_ERR_UNSUPPORTED (packed layout: its segments are per worker, in the session
 * directory), -ADUMP_ERR_WRONG_THREAD, -ADUMP_ERR_SHUTDOWN, -ENOMEM, -errno of mkdir.
 * Owner thread only.
 */
ADUMP_API int adump_host_stream_set_dir(struct adump_host_stream *hs, const char *dir);

/**
 * adump_host_stream_sync() - wait until every dump handed to the stream so far is written
 * (or delivered) and, in zero copy, released (its release_fn returned).
 * Return: 0; -ADUMP_ERR_DROPPED if a chunk of the stream was dropped since the last sync;
 * -ADUMP_ERR_WRONG_THREAD from another thread than the owner; -ADUMP_ERR_SHUTDOWN after the
 * session detached the stream. Owner thread only.
 */
ADUMP_API int adump_host_stream_sync(struct adump_host_stream *hs);

/* A host stream's counters since it was opened. */
struct adump_host_stream_stats {
	uint32_t stream_id;
	uint32_t device_id;
	uint64_t dumps;                 /* accepted (= task ids taken) */
	uint64_t zero_copy_dumps;       /* of which zero copy, a window's held ones not counted */
	uint64_t refused;               /* calls that returned an error */
	uint64_t tensors;
	uint64_t payload_bytes;         /* tensor bytes handed over */
	uint64_t copy_ns;               /* time the owner spent in dump calls (copies, waits) */
	uint64_t released;              /* release_fn calls the workers made (a window's not) */
	uint64_t release_failures;      /* of which with a negative status */
	struct adump_stream_stats chan; /* records, drops, ring high water, waits */
};

/**
 * adump_host_stream_stats() - a snapshot of the stream's counters. Any thread, not
 * concurrently with adump_host_stream_close() or adump_session_destroy().
 */
ADUMP_API void adump_host_stream_stats(const struct adump_host_stream *hs,
				       struct adump_host_stream_stats *out);

/** adump_host_stream_id() - the stream's id, as recorded in dump file names. Any thread. */
ADUMP_API uint32_t adump_host_stream_id(const struct adump_host_stream *hs);

/**
 * adump_host_tensor_bytes() - the payload size a tensor of @dtype and shape @dims must have.
 * Return: the size in bytes (>= 0); -ADUMP_ERR_UNSUPPORTED for a dtype without a fixed width;
 * -EINVAL for more than ADUMP_MAX_DIMS dims, a negative dim or a size past INT64_MAX.
 */
ADUMP_API int64_t adump_host_tensor_bytes(int32_t dtype, const int64_t *dims, uint32_t dim_count);

#ifdef __cplusplus
}
#endif
#endif
