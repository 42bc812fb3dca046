/* SPDX-License-Identifier: Apache-2.0 */
/* Streams: an in-order task queue per stream with one executor thread. Launch copies a small
 * task into a fixed ring of slots under the stream mutex and signals only when the executor
 * sleeps; the executor takes every queued task per wake-up, runs the kernel and hands a dumped
 * launch to the stream's DMA engine (dma.c, started with the first dump), then wakes
 * synchronizers and producers waiting for room. A sync returns once the kernels ran, the
 * engine copied their dumps and the pipeline took every record. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/device_int.h"
#include "producer/producer.h"

/* Queued tasks per stream before launch blocks, like a hardware submission queue. */
#define STREAM_QUEUE_SLOTS 1024u
/* Most tasks the executor runs before it publishes progress, so that synchronizers and a
 * producer waiting for room are not held up by a whole queue's worth of work. */
#define STREAM_BATCH_MAX 128u
/* Dump requests up to this size (names of up to ~300 bytes) are reused; longer ones are
 * allocated each time. */
#define DUMP_REQ_POOLED_BYTES (sizeof(struct adump_dev_dump_req) + 320u)

struct adump_dev_stream {
	struct adump_dev *dev;                  /* one reference held */
	uint32_t id;
	pthread_t thread;
	pthread_mutex_t lock;                   /* guards everything below but chan */
	pthread_cond_t work_cond;               /* executor sleeps here */
	pthread_cond_t space_cond;              /* producer waits here for a free slot */
	pthread_cond_t done_cond;               /* synchronizers wait here */
	struct adump_dev_task *tasks;           /* STREAM_QUEUE_SLOTS slots */
	uint64_t head;                          /* tasks finished; slots below are free */
	uint64_t tail;                          /* tasks queued */
	uint32_t next_task_id;
	bool is_executor_waiting;
	bool is_stopping;
	unsigned producer_wait_count;
	unsigned sync_wait_count;
	int error;                              /* first failure since the last sync */
	uint64_t kernels_end_ns;                /* CLOCK_MONOTONIC end of the last batch run */
	/* Started by the executor at the first dump and set under the lock; the executor
	 * reads it without (it is the only writer), others under the lock. */
	struct adump_dev_dma *dma;
	struct adump_port *deferred_chan;       /* executor only: owes a doorbell (flush_doorbell()) */
	/* Dump requests, taken under the lock at launch, given back by the executor or the DMA
	 * engine once copied. */
	struct adump_freelist reqs;
	/* Written by bind (stream idle), read at launch and sync: release/acquire so that a
	 * channel set up before bind is fully visible to the launching thread. */
	_Atomic(struct adump_port *) chan;
};

void adump_dev_dump_req_free(struct adump_dev_dump_req *req)
{
	adump_freelist_free(req);               /* the names live in the same block */
}

static int dma_start(struct adump_dev_stream *s)
{
	struct adump_dev_dma *dma;
	int ret = adump_dev_dma_create((uint32_t)s->dev->id, s->id, &dma);

	if (ret < 0) {
		adump_log_once(ADUMP_LOG_ERROR, "device", "stream %u: no DMA engine: %s", s->id,
			       adump_strerror(ret));
		return ret;
	}
	pthread_mutex_lock(&s->lock);
	s->dma = dma;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Executor: rings for the small dumps it posted without a doorbell, at the end of a batch and
 * before the engine takes over the channel. */
static void flush_doorbell(struct adump_dev_stream *s)
{
	if (s->deferred_chan)
		adump_port_flush_sp(s->deferred_chan);
	s->deferred_chan = NULL;
}

/* Tests hold one stream's dumps back, as a pipeline too slow to give its buffers back would:
 * "dev.dump_stall" armed with the stream's id + 1 keeps its executor waiting here. */
static void dump_stall_point(const struct adump_dev_stream *s)
{
	while (ADUMP_TESTPOINT("dev.dump_stall") == (int)s->id + 1)
		usleep(1000);
}

static int run_task(struct adump_dev_stream *s, const struct adump_dev_task *task)
{
	int ret;

	/* The kernel must not overwrite what a queued dump has still to copy. */
	adump_dev_dma_fence_write(s->dma, task->out, task->bytes);
	ret = adump_dev_add_run(s->dev, task);
	/* A kernel that failed has no defined output, so its dump request is dropped too. */
	if (ret == 0 && task->dump) {
		dump_stall_point(s);
		if (adump_dev_dma_is_inline(s->dma, task)) {
			/* Small dumps come in bursts: one doorbell for the burst (see flush_doorbell()). */
			adump_port_defer_sp(task->chan);
			s->deferred_chan = task->chan;
			ret = adump_dev_dma_copy(task, (uint32_t)s->dev->id, s->id);
		} else {
			flush_doorbell(s);      /* before the engine becomes the producer */
			if (!s->dma)
				ret = dma_start(s);
			if (ret == 0) {
				adump_dev_dma_queue(s->dma, task);      /* the engine frees task->dump */
				return 0;
			}
		}
	}
	adump_dev_dump_req_free(task->dump);
	return ret;
}

static void *executor_main(void *arg)
{
	struct adump_dev_stream *s = arg;
	uint64_t begin, end;
	int batch_error;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (s->head == s->tail && !s->is_stopping) {
			s->is_executor_waiting = true;
			pthread_cond_wait(&s->work_cond, &s->lock);
			s->is_executor_waiting = false;
		}
		if (s->head == s->tail)
			break;                  /* stopping and drained */
		begin = s->head;
		end = s->tail - begin > STREAM_BATCH_MAX ? begin + STREAM_BATCH_MAX : s->tail;
		pthread_mutex_unlock(&s->lock);

		/* Slots [begin, end) stay ours until head moves: launch writes only at tail and
		 * only while tail - head < STREAM_QUEUE_SLOTS. */
		batch_error = 0;
		for (uint64_t i = begin; i < end; i++) {
			int ret = run_task(s, &s->tasks[i % STREAM_QUEUE_SLOTS]);

			if (ret < 0 && batch_error == 0)
				batch_error = ret;
		}
		flush_doorbell(s);
		adump_dev_dma_kick(s->dma);
		uint64_t now = adump_now_ns();

		pthread_mutex_lock(&s->lock);
		s->head = end;
		s->kernels_end_ns = now;
		if (batch_error < 0 && s->error == 0)
			s->error = batch_error;
		if (s->sync_wait_count)
			pthread_cond_broadcast(&s->done_cond);
		if (s->producer_wait_count)
			pthread_cond_broadcast(&s->space_cond);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int adump_dev_stream_create(struct adump_dev *dev, struct adump_dev_stream **out)
{
	struct adump_dev_stream *s;
	char name[16];
	int ret;

	if (!dev || !out)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->tasks = calloc(STREAM_QUEUE_SLOTS, sizeof(s->tasks[0]));
	if (!s->tasks) {
		ret = -ENOMEM;
		goto err_free;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->work_cond, NULL);
	pthread_cond_init(&s->space_cond, NULL);
	pthread_cond_init(&s->done_cond, NULL);
	atomic_init(&s->chan, NULL);
	adump_freelist_init(&s->reqs, DUMP_REQ_POOLED_BYTES);
	s->id = adump_stream_id_next();
	adump_dev_ref(dev);
	s->dev = dev;
	ret = -pthread_create(&s->thread, NULL, executor_main, s);
	if (ret < 0)
		goto err_sync;
	snprintf(name, sizeof(name), "adump-s%u", s->id);
	pthread_setname_np(s->thread, name);
	*out = s;
	return 0;
err_sync:
	adump_dev_close(dev);
	pthread_cond_destroy(&s->done_cond);
	pthread_cond_destroy(&s->space_cond);
	pthread_cond_destroy(&s->work_cond);
	pthread_mutex_destroy(&s->lock);
	free(s->tasks);
err_free:
	free(s);
	return ret;
}

int adump_dev_stream_sync(struct adump_dev_stream *s)
{
	struct adump_dev_dma *dma;
	struct adump_port *chan;
	uint64_t target;
	int ret, dma_ret, idle_ret;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	target = s->tail;
	while (s->head < target) {
		s->sync_wait_count++;
		pthread_cond_wait(&s->done_cond, &s->lock);
		s->sync_wait_count--;
	}
	ret = s->error;
	s->error = 0;
	dma = s->dma;
	pthread_mutex_unlock(&s->lock);

	/* The kernels ran; wait for the copies of their dumps. */
	dma_ret = adump_dev_dma_drain(dma);
	if (ret == 0)
		ret = dma_ret;
	chan = atomic_load_explicit(&s->chan, memory_order_acquire);   /* pairs with bind */
	if (chan) {
		/* The tasks have posted their records; wait until the worker has them all. */
		idle_ret = adump_port_wait_idle(chan);
		if (ret == 0)
			ret = idle_ret;
	}
	return ret;
}

int adump_dev_stream_destroy(struct adump_dev_stream *s)
{
	int ret;

	if (!s)
		return 0;
	ret = adump_dev_stream_sync(s);
	pthread_mutex_lock(&s->lock);
	s->is_stopping = true;
	pthread_cond_signal(&s->work_cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	adump_dev_dma_destroy(s->dma);
	adump_freelist_fini(&s->reqs);          /* every request was copied and given back */
	pthread_cond_destroy(&s->done_cond);
	pthread_cond_destroy(&s->space_cond);
	pthread_cond_destroy(&s->work_cond);
	pthread_mutex_destroy(&s->lock);
	free(s->tasks);
	adump_dev_close(s->dev);
	free(s);
	return ret;
}

uint32_t adump_dev_stream_id(const struct adump_dev_stream *s)
{
	return s->id;
}

struct adump_dev *adump_dev_stream_dev(const struct adump_dev_stream *s)
{
	return s->dev;
}

void adump_dev_stream_stats(struct adump_dev_stream *s, struct adump_dev_stream_stats *out)
{
	struct adump_dev_dma *dma;

	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	dma = s->dma;
	uint64_t kernels_end_ns = s->kernels_end_ns;
	pthread_mutex_unlock(&s->lock);
	/* The engine lives as long as the stream. */
	if (dma)
		adump_dev_dma_stats(dma, out);
	out->kernels_end_ns = kernels_end_ns;
}

void adump_dev_stream_bind(struct adump_dev_stream *s, struct adump_port *chan)
{
	atomic_store_explicit(&s->chan, chan, memory_order_release);   /* pairs with launch, sync */
}

struct adump_port *adump_dev_stream_port(const struct adump_dev_stream *s)
{
	return atomic_load_explicit(&s->chan, memory_order_acquire);   /* pairs with bind */
}

static bool is_name_set(const char *name)
{
	return name && name[0];
}

/* Caller holds the stream lock (it owns s->reqs). */
static int dump_req_create(struct adump_dev_stream *s, const struct adump_dev_tensor *self,
			   const struct adump_dev_tensor *other,
			   const struct adump_dev_tensor *out, const struct adump_dev_dump *dump,
			   struct adump_dev_dump_req **req_out)
{
	size_t type_bytes = strlen(dump->op_type) + 1, name_bytes = strlen(dump->op_name) + 1;
	/* One block per dumped launch: the request, then both names. */
	struct adump_dev_dump_req *req = adump_freelist_alloc(&s->reqs, sizeof(*req) + type_bytes +
								   name_bytes);

	if (!req)
		return -ENOMEM;
	memset(req, 0, sizeof(*req));
	req->op_type = (char *)(req + 1);
	req->op_name = req->op_type + type_bytes;
	memcpy(req->op_type, dump->op_type, type_bytes);
	memcpy(req->op_name, dump->op_name, name_bytes);
	req->tensor_mask = dump->tensor_mask;
	req->self = *self;
	req->other = *other;
	req->out = *out;
	*req_out = req;
	return 0;
}

int adump_dev_launch_add(struct adump_dev_stream *s, const struct adump_dev_tensor *self,
			 const struct adump_dev_tensor *other, double alpha,
			 const struct adump_dev_tensor *out, const struct adump_dev_dump *dump)
{
	struct adump_dev_task task = { 0 };
	bool ok;
	int ret;

	if (!s)
		return -EINVAL;
	ret = adump_dev_add_check(self, other, out, &task.elem_count);
	if (ret < 0)
		return ret;
	if (dump && (!is_name_set(dump->op_type) || !is_name_set(dump->op_name)))
		return -EINVAL;
	task.bytes = self->bytes;
	if (task.bytes) {
		adump_dev_mem_rdlock(s->dev);
		ok = adump_dev_range_ok_locked(s->dev, self->data, task.bytes) &&
		     adump_dev_range_ok_locked(s->dev, other->data, task.bytes) &&
		     adump_dev_range_ok_locked(s->dev, out->data, task.bytes);
		adump_dev_mem_unlock(s->dev);
		if (!ok)
			return -ADUMP_ERR_NOT_FOUND;
	}
	task.self = self->data;
	task.other = other->data;
	task.out = out->data;
	task.dtype = self->dtype;
	task.alpha = alpha;
	/* Binding happens only while the stream is idle, so reading the channel outside the
	 * stream lock sees the one that is current for this launch. */
	if (dump)
		task.chan = atomic_load_explicit(&s->chan, memory_order_acquire); /* pairs with bind */
	pthread_mutex_lock(&s->lock);
	while (s->tail - s->head >= STREAM_QUEUE_SLOTS) {
		s->producer_wait_count++;
		pthread_cond_wait(&s->space_cond, &s->lock);
		s->producer_wait_count--;
	}
	if (task.chan) {
		ret = dump_req_create(s, self, other, out, dump, &task.dump);
		if (ret < 0) {
			pthread_mutex_unlock(&s->lock);
			return ret;
		}
		task.dump_mask = dump->tensor_mask;
	}
	task.task_id = s->next_task_id++;
	s->tasks[s->tail % STREAM_QUEUE_SLOTS] = task;
	s->tail++;
	if (s->is_executor_waiting)
		pthread_cond_signal(&s->work_cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}
