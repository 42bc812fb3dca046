/* SPDX-License-Identifier: Apache-2.0 */
/* The DMA engine: one per stream, on its own thread beside the stream's executor, as a copy
 * engine runs beside the compute units. The executor queues each dumped op once its kernel
 * ran and goes on with the next kernel; the engine describes the op, then copies the selected
 * tensors (inputs, then outputs) chunk by chunk into the channel's staging buffers, one
 * completion record per chunk, dumps in queue order. A kernel that would overwrite memory a
 * queued dump still has to read waits for that dump first (adump_dev_dma_fence_write()), so
 * every dump holds the bytes its op left behind. Small dumps are copied by the executor
 * itself while the engine is idle: the channel has one producer at a time, the executor or
 * the engine, handed over through the queue. The chunking and the drop policy are the
 * channel's producer side (adump_port_post_sp()), shared with host streams. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "device/device_int.h"
#include "proto/proto.h"
#include "producer/producer.h"

#define DMA_MAX_TENSORS 3
/* Dumped ops the engine may lag behind the kernels before the executor waits for it. */
#define DMA_QUEUE_SLOTS 256u
/* A dump up to this size is small: copying it costs less than handing it to the engine, so
 * the executor copies it itself when the engine is idle; queued behind others, it does not
 * wake a sleeping engine, which then starts at the end of the executor's batch or once
 * DMA_KICK_JOBS dumps wait. */
#define DMA_SMALL_BYTES (256u << 10)
#define DMA_KICK_JOBS 32u

struct adump_dev_dma {
	uint32_t device_id;
	uint32_t stream_id;
	pthread_t thread;
	pthread_mutex_t lock;                   /* guards everything below but slots' reads */
	pthread_cond_t work_cond;               /* the engine sleeps here */
	pthread_cond_t done_cond;               /* the executor (room, fence) and drainers wait */
	struct adump_dev_task *slots;           /* DMA_QUEUE_SLOTS; written by the executor only */
	/* Dumps finished. Written under the lock; the executor also reads it without, to skip
	 * the lock when nothing it fences against is queued. */
	_Atomic uint64_t head;
	uint64_t tail;                          /* dumps queued */
	unsigned waiter_count;                  /* threads in done_cond */
	uint64_t wake_at;                       /* the lowest head one of them waits for */
	bool is_engine_waiting;
	bool is_stopping;
	int error;                              /* first failure since the last drain */
	struct adump_dev_stream_stats stats;    /* the executor's waits */
};

static void tensor_describe(struct adump_tensor *dst, const struct adump_dev_tensor *src,
			    enum adump_tensor_kind kind, uint32_t arg_index)
{
	adump_tensor_describe(dst, kind, arg_index, src->dtype, src->format, src->dim_count,
			      src->dims, src->orig_dim_count, src->orig_dims, src->data, src->bytes);
}

static uint64_t dump_bytes(const struct adump_dev_task *task)
{
	return task->bytes * ((task->dump_mask & ADUMP_DUMP_INPUTS ? 2 : 0) +
			      (task->dump_mask & ADUMP_DUMP_OUTPUTS ? 1 : 0));
}

int adump_dev_dma_copy(const struct adump_dev_task *task, uint32_t device_id, uint32_t stream_id)
{
	const struct adump_dev_dump_req *req = task->dump;
	struct adump_port *chan = task->chan;
	struct adump_tensor tensors[DMA_MAX_TENSORS];
	const void *data[DMA_MAX_TENSORS];
	struct adump_op_rec *op_rec;
	uint32_t tensor_count = 0;
	int ret;

	if (req->tensor_mask & ADUMP_DUMP_INPUTS) {
		data[tensor_count] = req->self.data;
		tensor_describe(&tensors[tensor_count++], &req->self, ADUMP_TENSOR_INPUT, 0);
		data[tensor_count] = req->other.data;
		tensor_describe(&tensors[tensor_count++], &req->other, ADUMP_TENSOR_INPUT, 1);
	}
	if (req->tensor_mask & ADUMP_DUMP_OUTPUTS) {
		data[tensor_count] = req->out.data;
		tensor_describe(&tensors[tensor_count++], &req->out, ADUMP_TENSOR_OUTPUT, 0);
	}

	/* No attributes: CANN's own writer puts none into ordinary data dumps, and its readers
	 * (msaccucmp) take DumpData.attr[0] for the FFTS+ thread-info object. */
	struct adump_op op = {
		.op_type = req->op_type,
		.op_name = req->op_name,
		.device_id = device_id,
		.stream_id = stream_id,
		.task_id = task->task_id,
		.timestamp_us = adump_wall_us(),
		.tensor_count = tensor_count,
		.tensors = tensors,
	};
	ret = ADUMP_TESTPOINT("device.dma");
	if (ret == 0)
		ret = adump_op_rec_create(&op, adump_port_op_freelist(chan), &op_rec);
	if (ret < 0) {
		adump_log_once(ADUMP_LOG_ERROR, "device", "dump of %s skipped: %s", req->op_name,
			       adump_strerror(ret));
		if (ret == -ENOMEM)
			adump_port_count_nomem_sp(chan, tensor_count);
		return ret;
	}

	/* Drops are not errors here: the channel reports them to adump_port_wait_idle(). */
	adump_port_post_sp(chan, op_rec, data, false);
	return 0;
}

static void *engine_main(void *arg)
{
	struct adump_dev_dma *e = arg;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		uint64_t head = atomic_load_explicit(&e->head, memory_order_relaxed);

		while (head == e->tail && !e->is_stopping) {
			e->is_engine_waiting = true;
			pthread_cond_wait(&e->work_cond, &e->lock);
			e->is_engine_waiting = false;
		}
		if (head == e->tail)
			break;                  /* stopping and drained */
		pthread_mutex_unlock(&e->lock);

		/* The slot stays as queued until head moves past it. */
		struct adump_dev_task *task = &e->slots[head % DMA_QUEUE_SLOTS];
		int ret = adump_dev_dma_copy(task, e->device_id, e->stream_id);

		adump_dev_dump_req_free(task->dump);

		pthread_mutex_lock(&e->lock);
		if (ret < 0 && e->error == 0)
			e->error = ret;
		/* Pairs with the acquire in adump_dev_dma_fence_write(). */
		atomic_store_explicit(&e->head, head + 1, memory_order_release);
		/* Woken only when one can go on: no ping-pong per dump while the executor waits. */
		if (e->waiter_count && head + 1 >= e->wake_at) {
			e->wake_at = UINT64_MAX;
			pthread_cond_broadcast(&e->done_cond);
		}
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int adump_dev_dma_create(uint32_t device_id, uint32_t stream_id, struct adump_dev_dma **out)
{
	struct adump_dev_dma *e = calloc(1, sizeof(*e));
	char name[16];
	int ret;

	if (!e)
		return -ENOMEM;
	e->slots = calloc(DMA_QUEUE_SLOTS, sizeof(e->slots[0]));
	if (!e->slots) {
		free(e);
		return -ENOMEM;
	}
	e->device_id = device_id;
	e->stream_id = stream_id;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->work_cond, NULL);
	pthread_cond_init(&e->done_cond, NULL);
	atomic_init(&e->head, 0);
	e->wake_at = UINT64_MAX;
	ret = -pthread_create(&e->thread, NULL, engine_main, e);
	if (ret < 0) {
		pthread_cond_destroy(&e->done_cond);
		pthread_cond_destroy(&e->work_cond);
		pthread_mutex_destroy(&e->lock);
		free(e->slots);
		free(e);
		return ret;
	}
	snprintf(name, sizeof(name), "adump-dma%u", stream_id);
	pthread_setname_np(e->thread, name);
	*out = e;
	return 0;
}

void adump_dev_dma_destroy(struct adump_dev_dma *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->is_stopping = true;
	pthread_cond_signal(&e->work_cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->thread, NULL);
	pthread_cond_destroy(&e->done_cond);
	pthread_cond_destroy(&e->work_cond);
	pthread_mutex_destroy(&e->lock);
	free(e->slots);
	free(e);
}

/* Caller holds the lock: make the engine run if it sleeps with work queued. */
static void kick_locked(struct adump_dev_dma *e)
{
	if (e->is_engine_waiting && atomic_load_explicit(&e->head, memory_order_relaxed) != e->tail)
		pthread_cond_signal(&e->work_cond);
}

/* Caller holds the lock: wait until the first @target dumps have finished. Return: how long
 * that took, in ns (0 if they had). */
static uint64_t wait_head_locked(struct adump_dev_dma *e, uint64_t target)
{
	uint64_t start;

	if (atomic_load_explicit(&e->head, memory_order_relaxed) >= target)
		return 0;
	start = adump_now_ns();
	kick_locked(e);
	while (atomic_load_explicit(&e->head, memory_order_relaxed) < target) {
		if (target < e->wake_at)
			e->wake_at = target;
		e->waiter_count++;
		pthread_cond_wait(&e->done_cond, &e->lock);
		e->waiter_count--;
	}
	return adump_now_ns() - start;
}

static bool ranges_overlap(const void *a, uint64_t a_bytes, const void *b, uint64_t b_bytes)
{
	uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;

	return a_bytes && b_bytes && a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

/* From the slot's own copy of the launch, never from task->dump, which the engine frees. */
static bool dump_reads(const struct adump_dev_task *task, const void *ptr, uint64_t bytes)
{
	if ((task->dump_mask & ADUMP_DUMP_INPUTS) &&
	    (ranges_overlap(ptr, bytes, task->self, task->bytes) ||
	     ranges_overlap(ptr, bytes, task->other, task->bytes)))
		return true;
	return (task->dump_mask & ADUMP_DUMP_OUTPUTS) &&
	       ranges_overlap(ptr, bytes, task->out, task->bytes);
}

void adump_dev_dma_fence_write(struct adump_dev_dma *e, const void *ptr, uint64_t bytes)
{
	uint64_t head, last = 0;

	if (!e || !bytes)
		return;
	/* The slots are the executor's own writes (the engine only reads them); one below the
	 * head is stale but is not rewritten before the executor queues again. */
	head = atomic_load_explicit(&e->head, memory_order_acquire);
	for (uint64_t i = head; i < e->tail; i++) {
		if (dump_reads(&e->slots[i % DMA_QUEUE_SLOTS], ptr, bytes))
			last = i + 1;
	}
	if (last <= head)
		return;
	pthread_mutex_lock(&e->lock);
	e->stats.fence_waits++;
	e->stats.fence_wait_ns += wait_head_locked(e, last);
	pthread_mutex_unlock(&e->lock);
}

void adump_dev_dma_queue(struct adump_dev_dma *e, const struct adump_dev_task *task)
{
	uint64_t pending;

	pthread_mutex_lock(&e->lock);
	/* Full: wait until half of it is free, one wake-up for many dumps. */
	if (e->tail - atomic_load_explicit(&e->head, memory_order_relaxed) >= DMA_QUEUE_SLOTS) {
		e->stats.queue_waits++;
		e->stats.queue_wait_ns += wait_head_locked(e, e->tail - DMA_QUEUE_SLOTS / 2);
	}
	e->slots[e->tail % DMA_QUEUE_SLOTS] = *task;
	e->tail++;
	pending = e->tail - atomic_load_explicit(&e->head, memory_order_relaxed);
	if (dump_bytes(task) > DMA_SMALL_BYTES || pending >= DMA_KICK_JOBS)
		kick_locked(e);
	pthread_mutex_unlock(&e->lock);
}

bool adump_dev_dma_is_inline(const struct adump_dev_dma *e, const struct adump_dev_task *task)
{
	/* Acquire: pairs with the engine's release of head, so the executor, producing again,
	 * sees everything the engine did to the channel. */
	return dump_bytes(task) <= DMA_SMALL_BYTES &&
	       (!e || atomic_load_explicit(&e->head, memory_order_acquire) == e->tail);
}

void adump_dev_dma_kick(struct adump_dev_dma *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	kick_locked(e);
	pthread_mutex_unlock(&e->lock);
}

void adump_dev_dma_stats(struct adump_dev_dma *e, struct adump_dev_stream_stats *out)
{
	pthread_mutex_lock(&e->lock);
	*out = e->stats;
	pthread_mutex_unlock(&e->lock);
}

int adump_dev_dma_drain(struct adump_dev_dma *e)
{
	int ret;

	if (!e)
		return 0;
	pthread_mutex_lock(&e->lock);
	wait_head_locked(e, e->tail);
	ret = e->error;
	e->error = 0;
	pthread_mutex_unlock(&e->lock);
	return ret;
}
