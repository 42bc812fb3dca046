/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated NPU: devices by id, device memory, in-order asynchronous streams with their
 * own executor threads, real kernels (Add), and a DMA engine that copies the tensors of
 * dumped ops into host staging buffers in chunks and posts one completion record per chunk. */
#ifndef ADUMP_DEVICE_H
#define ADUMP_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/adump_err.h"
#include "adump/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ADUMP_DEV_MAX 8                 /* device ids 0..ADUMP_DEV_MAX-1 */

struct adump_dev;
struct adump_dev_stream;
struct adump_port;                       /* producer/: a stream's end of its dump channel */

enum adump_copy_kind {
	ADUMP_COPY_HOST_TO_HOST = 0,
	ADUMP_COPY_HOST_TO_DEVICE = 1,
	ADUMP_COPY_DEVICE_TO_HOST = 2,
	ADUMP_COPY_DEVICE_TO_DEVICE = 3,
	ADUMP_COPY_DEFAULT = 4,          /* inferred from the addresses */
};

/**
 * adump_dev_open() - take a reference on device @id, creating it on first use.
 * Return: 0, -ADUMP_ERR_NOT_FOUND for an id out of range, -ENOMEM. Any thread.
 */
ADUMP_API int adump_dev_open(int32_t id, struct adump_dev **out);

/** adump_dev_close() - drop a reference; the last one frees all device memory. NULL ok. */
ADUMP_API void adump_dev_close(struct adump_dev *dev);

/** adump_dev_id() - the id the device was opened with. */
ADUMP_API int32_t adump_dev_id(const struct adump_dev *dev);

/**
 * adump_dev_malloc() - allocate device memory, 64-byte aligned and uninitialised.
 * Return: 0 and *out set, -ADUMP_ERR_TOO_BIG for 0 bytes, -ENOMEM. Any thread.
 */
ADUMP_API int adump_dev_malloc(struct adump_dev *dev, size_t bytes, void **out);

/**
 * adump_dev_free() - free device memory.
 * Return: 0, -ADUMP_ERR_NOT_FOUND for a pointer that is not a live allocation of @dev
 * (including a double free). Any thread.
 */
ADUMP_API int adump_dev_free(struct adump_dev *dev, void *ptr);

/**
 * adump_dev_is_device_ptr() - whether [ptr, ptr+bytes) lies inside one live allocation.
 */
ADUMP_API bool adump_dev_is_device_ptr(struct adump_dev *dev, const void *ptr, size_t bytes);

/**
 * adump_dev_memcpy() - synchronous copy between host and device memory.
 * Return: 0; -ADUMP_ERR_TOO_BIG if @count > @dst_max; -ADUMP_ERR_NOT_FOUND if a side that
 * @kind says is device memory is not inside a live allocation; -EINVAL for NULL pointers
 * or an unknown kind. Any thread.
 */
ADUMP_API int adump_dev_memcpy(struct adump_dev *dev, void *dst, size_t dst_max, const void *src,
			       size_t count, enum adump_copy_kind kind);

/**
 * adump_dev_set_compute_gbps() - simulated compute speed: each kernel then takes at least
 * the time its bytes (inputs + outputs) need at @gbps GB/s. 0 (default) runs kernels as fast
 * as the host can. Any thread.
 */
ADUMP_API void adump_dev_set_compute_gbps(struct adump_dev *dev, double gbps);

/**
 * adump_dev_stream_create() - a new in-order asynchronous task queue with its own executor.
 * Stream ids are unique per process. Return: 0, -ENOMEM, -errno from pthread_create.
 */
ADUMP_API int adump_dev_stream_create(struct adump_dev *dev, struct adump_dev_stream **out);

/**
 * adump_dev_stream_destroy() - synchronize, stop the executor, free. The stream must not be
 * attached to a session any more (adump_session_detach()). NULL does nothing.
 * Return: 0 or the error adump_dev_stream_sync() would return.
 */
ADUMP_API int adump_dev_stream_destroy(struct adump_dev_stream *stream);

/**
 * adump_dev_stream_sync() - wait until every task launched so far has run and every dump
 * record those tasks produced has been written (or delivered to the callback).
 * Return: 0, or the first kernel error of those tasks (-EINVAL for bad kernel arguments
 * detected at run time, such as memory freed while queued) or of their dumps (-ENOMEM when
 * an op record could not be built; that file is skipped), or -ADUMP_ERR_DROPPED if any of
 * their chunks was dropped. Each error is reported to one sync only. Any thread.
 */
ADUMP_API int adump_dev_stream_sync(struct adump_dev_stream *stream);

/** adump_dev_stream_id() - the stream's id, as recorded in dump file names. */
ADUMP_API uint32_t adump_dev_stream_id(const struct adump_dev_stream *stream);

/** adump_dev_stream_dev() - the device the stream belongs to. */
ADUMP_API struct adump_dev *adump_dev_stream_dev(const struct adump_dev_stream *stream);

/* What dumping cost a stream's kernels, since the stream was created, and when they ran. */
struct adump_dev_stream_stats {
	uint64_t fence_waits;                   /* kernels that waited for a dump to read first */
	uint64_t fence_wait_ns;
	uint64_t queue_waits;                   /* dumped kernels that waited for queue room */
	uint64_t queue_wait_ns;
	uint64_t kernels_end_ns;                /* when its last kernel so far ended
						 * (CLOCK_MONOTONIC ns; 0: none yet) */
};

/**
 * adump_dev_stream_stats() - the stream's dump waits (all zero before its first large dump:
 * only kernels that follow one queued to the DMA engine can wait) and the time its last
 * kernel ended. Any thread.
 */
ADUMP_API void adump_dev_stream_stats(struct adump_dev_stream *stream,
				      struct adump_dev_stream_stats *out);

/* A tensor in device memory as a kernel sees it. */
struct adump_dev_tensor {
	void *data;                             /* device memory, >= bytes long */
	int32_t dtype;                          /* enum adump_dtype */
	int32_t format;
	uint32_t dim_count;
	int64_t dims[ADUMP_MAX_DIMS];
	uint32_t orig_dim_count;                /* 0: same as dims */
	int64_t orig_dims[ADUMP_MAX_DIMS];
	uint64_t bytes;                         /* element count × element size */
};

/* Which tensors of an op the DMA engine dumps. */
enum {
	ADUMP_DUMP_INPUTS = 1u << 0,
	ADUMP_DUMP_OUTPUTS = 1u << 1,
	ADUMP_DUMP_ALL = ADUMP_DUMP_INPUTS | ADUMP_DUMP_OUTPUTS,
};

/* A dump request for one launch. Strings are copied at launch. */
struct adump_dev_dump {
	const char *op_type;                    /* e.g. "Add" */
	const char *op_name;                    /* e.g. "aclnnAdd_1" */
	uint32_t tensor_mask;                   /* ADUMP_DUMP_* */
};

/**
 * adump_dev_launch_add() - enqueue out = self + alpha × other (element-wise, same shapes and
 * dtype; FLOAT, FLOAT16, INT32). Tensors must stay valid until the stream is synchronized.
 * @dump: NULL for no dump. Otherwise, when the op has run and the stream is attached to a
 *        session, the DMA engine copies the selected inputs (self, other) and outputs (out)
 *        into staging buffers chunk by chunk and posts one record per chunk; `alpha` is
 *        recorded as an attribute. Unattached streams ignore the request.
 * Return: 0 once queued; -EINVAL for NULL tensors, mismatched shapes, sizes or dtypes, or a
 * dump request without op_type or op_name; -ADUMP_ERR_UNSUPPORTED for other dtypes;
 * -ADUMP_ERR_NOT_FOUND for data outside device memory; -ENOMEM. Each queued launch takes the
 * stream's next task id (0, 1, 2, ...), dumped or not. Blocks while the stream already holds
 * 1024 unfinished tasks. Producer: any thread, one at a time per stream.
 */
ADUMP_API int adump_dev_launch_add(struct adump_dev_stream *stream,
				   const struct adump_dev_tensor *self,
				   const struct adump_dev_tensor *other, double alpha,
				   const struct adump_dev_tensor *out,
				   const struct adump_dev_dump *dump);

/**
 * adump_dev_stream_bind() - give the stream's DMA engine the port of a dump channel
 * (producer/), or NULL to take it away. Called by the pipeline on attach and detach; the
 * stream must be idle (synchronized) while the port changes.
 */
ADUMP_API void adump_dev_stream_bind(struct adump_dev_stream *stream, struct adump_port *port);

/** adump_dev_stream_port() - the channel bound to the stream, or NULL. */
ADUMP_API struct adump_port *adump_dev_stream_port(const struct adump_dev_stream *stream);

#ifdef __cplusplus
}
#endif
#endif
