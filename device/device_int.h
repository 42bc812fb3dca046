/* SPDX-License-Identifier: Apache-2.0 */
/* device/ internals shared by its files: the device object, the memory registry lookups,
 * the task a stream queues, and the kernel and DMA entry points the executor calls. */
#ifndef ADUMP_DEVICE_INT_H
#define ADUMP_DEVICE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "adump/device.h"
#include "common/common.h"

/* One live allocation; the registry keeps them sorted by base. */
struct adump_dev_alloc {
	uintptr_t base;
	size_t bytes;
};

struct adump_dev {
	int32_t id;
	unsigned ref_count;                     /* under the device table's mutex */
	pthread_rwlock_t mem_lock;              /* guards allocs; lookups take it shared */
	struct adump_dev_alloc *allocs;
	size_t alloc_count;
	size_t alloc_cap;
	_Atomic double compute_gbps;            /* 0: unthrottled; relaxed, a tuning knob */
};

/* Takes one more reference on an open device (streams hold one each). */
ADUMP_HIDDEN void adump_dev_ref(struct adump_dev *dev);

/* Takes the memory lock shared around a group of adump_dev_range_ok_locked() calls. */
ADUMP_HIDDEN void adump_dev_mem_rdlock(struct adump_dev *dev);
ADUMP_HIDDEN void adump_dev_mem_unlock(struct adump_dev *dev);
/* Whether [ptr, ptr+bytes) lies in one live allocation; caller holds the memory lock. */
ADUMP_HIDDEN bool adump_dev_range_ok_locked(const struct adump_dev *dev, const void *ptr,
					   size_t bytes);

/* What the DMA engine needs of a dumped launch; allocated at launch, freed after the dump. */
struct adump_dev_dump_req {
	char *op_type;
	char *op_name;
	uint32_t tensor_mask;
	struct adump_dev_tensor self;           /* full metadata, for the dump header */
	struct adump_dev_tensor other;
	struct adump_dev_tensor out;
};

/* One queued Add. Kept small so that the queue stays in cache; the full tensor metadata
 * only travels with a dump request. */
struct adump_dev_task {
	const void *self;
	const void *other;
	void *out;
	uint64_t elem_count;
	uint64_t bytes;                         /* of one tensor */
	int32_t dtype;
	uint32_t task_id;
	double alpha;
	struct adump_port *chan;                /* bound channel at launch; NULL: no dump */
	struct adump_dev_dump_req *dump;        /* NULL unless dumped and bound */
	uint32_t dump_mask;                     /* ADUMP_DUMP_*: what the dump reads */
};

/*
 * adump_dev_add_check() - validate an Add launch: NULL tensors, dtypes, shapes and sizes.
 * Return: 0 and *elem_count set; -EINVAL; -ADUMP_ERR_UNSUPPORTED for other dtypes.
 */
ADUMP_HIDDEN int adump_dev_add_check(const struct adump_dev_tensor *self,
				     const struct adump_dev_tensor *other,
				     const struct adump_dev_tensor *out, uint64_t *elem_count);

/* Runs the Add of @task on the executor thread, paced to the device's compute speed. */
ADUMP_HIDDEN int adump_dev_add_run(struct adump_dev *dev, const struct adump_dev_task *task);

/* A stream's DMA engine (dma.c): dumps queued by the executor, copied on the engine's thread
 * in queue order; the only producer of the stream's channel. */
struct adump_dev_dma;

/* Starts the engine's thread. @device_id and @stream_id go into the op descriptors. */
ADUMP_HIDDEN int adump_dev_dma_create(uint32_t device_id, uint32_t stream_id,
				      struct adump_dev_dma **out);
/* Stops the thread once every queued dump is done; NULL ok. */
ADUMP_HIDDEN void adump_dev_dma_destroy(struct adump_dev_dma *e);
/* Executor, before a kernel writes [ptr, ptr+bytes): waits for the queued dumps that read
 * any of it. NULL ok. */
ADUMP_HIDDEN void adump_dev_dma_fence_write(struct adump_dev_dma *e, const void *ptr,
					    uint64_t bytes);
/* Executor, after @task's kernel ran: queues its dump (the engine frees task->dump); waits
 * while the queue is full. */
ADUMP_HIDDEN void adump_dev_dma_queue(struct adump_dev_dma *e, const struct adump_dev_task *task);
/* Executor: whether to copy @task's dump itself (adump_dev_dma_copy()) rather than queue it:
 * a small dump, and the engine (NULL ok) idle, so the copy keeps the queue's order. */
ADUMP_HIDDEN bool adump_dev_dma_is_inline(const struct adump_dev_dma *e,
					  const struct adump_dev_task *task);
/*
 * adump_dev_dma_copy() - dump @task's tensors through @task->chan now, on the calling thread
 * (the channel's producer at that moment). @device_id and @stream_id go into the op.
 * Return: 0; -ENOMEM or -ADUMP_ERR_CONFIG when the op record could not be built (nothing
 * posted). Drops are not errors here: the channel reports them to adump_port_wait_idle().
 */
ADUMP_HIDDEN int adump_dev_dma_copy(const struct adump_dev_task *task, uint32_t device_id,
				    uint32_t stream_id);
/* Executor, at the end of a batch: wakes the engine if dumps wait for it. NULL ok. */
ADUMP_HIDDEN void adump_dev_dma_kick(struct adump_dev_dma *e);
/* Any thread: the executor's waits so far. */
ADUMP_HIDDEN void adump_dev_dma_stats(struct adump_dev_dma *e, struct adump_dev_stream_stats *out);
/* Any thread: waits until every dump queued so far has posted its records.
 * Return: 0, or the first failure since the last drain (-ENOMEM, -ADUMP_ERR_CONFIG: an op
 * record could not be built, nothing of that dump posted). NULL ok. */
ADUMP_HIDDEN int adump_dev_dma_drain(struct adump_dev_dma *e);

ADUMP_HIDDEN void adump_dev_dump_req_free(struct adump_dev_dump_req *req);

#endif
