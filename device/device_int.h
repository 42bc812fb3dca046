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
	struct adump_chan *chan;                /* bound channel at launch; NULL: no dump */
	struct adump_dev_dump_req *dump;        /* NULL unless dumped and bound */
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

/*
 * adump_dev_dma_run() - dump @task's tensors through @task->chan (executor thread, after the
 * kernel ran). @stream_id and @device_id go into the op descriptor.
 * Return: 0; -ENOMEM or -ADUMP_ERR_CONFIG when the op record could not be built (nothing
 * posted). Drops are not errors here: the channel reports them to adump_chan_wait_idle().
 */
ADUMP_HIDDEN int adump_dev_dma_run(const struct adump_dev_task *task, uint32_t device_id,
				   uint32_t stream_id);

/* alpha as the int32 kernel uses it: truncated, saturated, NaN -> 0. */
ADUMP_HIDDEN int32_t adump_dev_alpha_int32(double alpha);

ADUMP_HIDDEN void adump_dev_dump_req_free(struct adump_dev_dump_req *req);

#endif
