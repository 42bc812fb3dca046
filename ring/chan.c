/* SPDX-License-Identifier: Apache-2.0 */
/* A stream's dump channel: two ck_ring SPSC rings of record pointers, one carrying filled
 * records to the worker and one carrying them back. Each record owns one staging buffer for
 * its whole life, so the hand-off moves 8 bytes and never allocates, locks or calls the
 * kernel. Giving a record back and waking whoever waits for it (the producer for a buffer,
 * idle waiters for the idle state) are one operation here: the protocol is described in
 * common/common.h, the sleeping itself is common/wake.c's. */
#include <ck_ring.h>
#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "ring/ring.h"
#include "ring/spsc.h"

struct adump_chan {
	/* Read-mostly. */
	ck_ring_buffer_t *full_slots;
	ck_ring_buffer_t *free_slots;
	struct adump_rec *recs;
	uint32_t buffer_count;
	uint32_t wake_free;                     /* free buffers that wake a sleeping producer */
	uint32_t stream_id;
	size_t buffer_bytes;
	uint32_t align;

	/* ck_ring pads its own producer and consumer counters apart; each ring starts a cache
	 * line, so that a consumer's head never shares one with the read-mostly fields above. */
	alignas(64) ck_ring_t full_ring;        /* producer -> worker */
	alignas(64) ck_ring_t free_ring;        /* worker -> producer */

	/* Written by the producer only around a sleep, read by the consumer on every release:
	 * a line of its own, away from the producer's counter. */
	alignas(64) struct adump_waitpoint producer_wait;

	/* Producer side. */
	alignas(64) _Atomic uint64_t committed;

	/* Consumer side. */
	alignas(64) _Atomic uint64_t released;
	struct adump_waitpoint idle_wait;       /* stream syncs, detach */
	bool is_deferred;                       /* wake-ups owed until adump_chan_flush_sc() */
	uint32_t owed_count;                    /* records given back while deferring */
};

_Static_assert(offsetof(struct adump_chan, released) - offsetof(struct adump_chan, committed) >= 64,
	       "producer and consumer counters must sit on separate cache lines");

static uint32_t pow2_above(uint32_t n)
{
	uint32_t p = 2;

	while (p <= n)
		p <<= 1;
	return p;
}

int adump_chan_create(const struct adump_chan_cfg *cfg, struct adump_chan **out)
{
	struct adump_chan *c;
	uint32_t slots;

	if (!cfg || cfg->buffer_count < 2 || cfg->buffer_count > (1u << 24) || !cfg->buffer_bytes ||
	    cfg->buffer_bytes > UINT32_MAX || !cfg->buffer_mem ||
	    (cfg->align && cfg->buffer_bytes % cfg->align)) {
		adump_log(ADUMP_LOG_ERROR, "ring", "channel: need >= 2 buffers of 1 B..4 GiB and memory");
		return -ADUMP_ERR_CONFIG;
	}
	c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63);
	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	slots = pow2_above(cfg->buffer_count);
	c->full_slots = calloc(slots, sizeof(ck_ring_buffer_t));
	c->free_slots = calloc(slots, sizeof(ck_ring_buffer_t));
	c->recs = calloc(cfg->buffer_count, sizeof(struct adump_rec));
	if (!c->full_slots || !c->free_slots || !c->recs) {
		adump_chan_destroy(c);
		return -ENOMEM;
	}
	c->buffer_count = cfg->buffer_count;
	/* A sleeping producer is woken to a batch of buffers, not to each one as it comes back:
	 * one sleep and wake-up per batch instead of one per record while the worker is the
	 * slower side. All of them come back (the worker holds none for good), and the
	 * producer looks again every time slice whatever happens. */
	c->wake_free = cfg->buffer_count / 4;
	if (c->wake_free < 1)
		c->wake_free = 1;
	if (c->wake_free > 16)
		c->wake_free = 16;
	c->buffer_bytes = cfg->buffer_bytes;
	c->stream_id = cfg->stream_id;
	c->align = cfg->align;
	adump_waitpoint_init(&c->producer_wait, true);
	adump_waitpoint_init(&c->idle_wait, false);
	ck_ring_init(&c->full_ring, slots);
	ck_ring_init(&c->free_ring, slots);
	for (uint32_t i = 0; i < cfg->buffer_count; i++) {
		struct adump_rec *r = &c->recs[i];

		r->buf = (char *)cfg->buffer_mem + (size_t)i * cfg->buffer_bytes;
		r->index = cfg->first_index + i;
		adump_spsc_push(&c->free_ring, c->free_slots, r, NULL);
	}
	*out = c;
	return 0;
}

void adump_chan_destroy(struct adump_chan *c)
{
	if (!c)
		return;
	free(c->full_slots);
	free(c->free_slots);
	free(c->recs);
	free(c);
}

struct adump_rec *adump_chan_reserve_sp(struct adump_chan *c)
{
	void *rec;

	/* The worker is done with a record it pushed back (adump_chan_release_sc()). */
	return adump_spsc_pop(&c->free_ring, c->free_slots, &rec) ? rec : NULL;
}

uint32_t adump_chan_commit_sp(struct adump_chan *c, struct adump_rec *rec)
{
	unsigned int depth = 0;

	/* One writer: a plain increment, no locked instruction. */
	atomic_store_explicit(&c->committed, atomic_load_explicit(&c->committed, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	/* Never full: the ring has more slots than there are records. */
	adump_spsc_push(&c->full_ring, c->full_slots, rec, &depth);
	return depth + 1;
}

struct adump_rec *adump_chan_pop_sc(struct adump_chan *c)
{
	void *rec;

	return adump_spsc_pop(&c->full_ring, c->full_slots, &rec) ? rec : NULL;
}

bool adump_chan_is_empty_sc(struct adump_chan *c)
{
	return adump_spsc_size(&c->full_ring) == 0;
}

/* Consumer only (one writer): marks @n more records done for adump_chan_is_idle(). */
static void add_released(struct adump_chan *c, uint64_t n)
{
	/* Pairs with the seq_cst load in adump_chan_is_idle(): whatever the worker did for
	 * these records (their data written) happens before an idle waiter returns. */
	atomic_store_explicit(&c->released, atomic_load_explicit(&c->released, memory_order_relaxed) + n,
			      memory_order_release);
}

/* Whether at least a wake-up's worth of buffers is free for a sleeping producer. */
static bool has_free_batch(struct adump_chan *c)
{
	return adump_spsc_size(&c->free_ring) >= c->wake_free;
}

/* After buffers or records were given back: wake whoever sleeps on them (protocols 2 and 3
 * of common/common.h). */
static void wake_after_release(struct adump_chan *c)
{
	/* Dekker with the producer's and the idle waiters' announcements. */
	adump_wake_fence();
	/* The release that gives a sleeping producer its batch wakes it; the ones after it
	 * until the producer runs again need not: one system call per sleep, not per record. */
	if (adump_waitpoint_is_waited(&c->producer_wait) && has_free_batch(c))
		adump_waitpoint_wake(&c->producer_wait);
	adump_waitpoint_wake(&c->idle_wait);
}

/* A record went back: the wake-ups now, or once for the batch. */
static void gave_back(struct adump_chan *c)
{
	if (c->is_deferred)
		c->owed_count++;
	else
		wake_after_release(c);
}

void adump_chan_release_sc(struct adump_chan *c, struct adump_rec *rec)
{
	adump_spsc_push(&c->free_ring, c->free_slots, rec, NULL);
	add_released(c, 1);
	gave_back(c);
}

void adump_chan_recycle_sc(struct adump_chan *c, struct adump_rec *rec)
{
	adump_spsc_push(&c->free_ring, c->free_slots, rec, NULL);
	gave_back(c);
}

void adump_chan_retire_sc(struct adump_chan *c, uint32_t record_count)
{
	add_released(c, record_count);
	/* Dekker with adump_port_wait_idle(). */
	adump_wake_fence();
	adump_waitpoint_wake(&c->idle_wait);
}

void adump_chan_defer_sc(struct adump_chan *c)
{
	c->is_deferred = true;
}

void adump_chan_flush_sc(struct adump_chan *c)
{
	c->is_deferred = false;
	if (c->owed_count) {
		c->owed_count = 0;
		wake_after_release(c);
	}
}

bool adump_chan_is_idle(struct adump_chan *c)
{
	/* committed is written by the producer thread; a waiter on another thread sees every
	 * commit that happened before it called (the caller orders that). seq_cst: ordered
	 * after the waiter's announcement, against the consumer's fence. */
	return atomic_load_explicit(&c->released, memory_order_seq_cst) ==
	       atomic_load_explicit(&c->committed, memory_order_seq_cst);
}

uint64_t adump_chan_committed(const struct adump_chan *c)
{
	return atomic_load_explicit(&c->committed, memory_order_relaxed);
}

struct adump_waitpoint *adump_chan_producer_wait(struct adump_chan *c)
{
	return &c->producer_wait;
}

struct adump_waitpoint *adump_chan_idle_wait(struct adump_chan *c)
{
	return &c->idle_wait;
}

uint32_t adump_chan_stream_id(const struct adump_chan *c)
{
	return c->stream_id;
}

uint32_t adump_chan_align(const struct adump_chan *c)
{
	return c->align;
}

uint32_t adump_chan_buffer_count(const struct adump_chan *c)
{
	return c->buffer_count;
}

size_t adump_chan_buffer_bytes(const struct adump_chan *c)
{
	return c->buffer_bytes;
}
