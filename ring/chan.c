/* SPDX-License-Identifier: Apache-2.0 */
/* A stream's dump channel: two ck_ring SPSC rings of record pointers, one carrying filled
 * records to the worker and one carrying them back. Each record owns one staging buffer for
 * its whole life, so the hand-off moves 8 bytes and never allocates or locks. */
#include <ck_ring.h>
#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "ring/ring.h"
#include "ring/spsc.h"

/* Pauses before a producer that found no free buffer sleeps: ~5 µs. Short on purpose: with
 * more capture threads than cores, a spinning producer takes the CPU from the worker that
 * would free its buffer (tiny profile: 2000 pauses cost ~10 % of the throughput). */
#define SPIN_ITERATIONS 100
#define WAIT_SLICE_NS 10000000u         /* re-check every 10 ms: a lost wake-up never hangs */
/* Op records up to this size are reused (an Add's three tensors, one attribute and its
 * names take about 1 KiB); larger ones are allocated each time. */
#define OP_REC_POOLED_BYTES 2048u

struct adump_chan {
	/* Read-mostly. */
	ck_ring_buffer_t *full_slots;
	ck_ring_buffer_t *free_slots;
	struct adump_rec *recs;
	uint32_t buffer_count;
	uint32_t wake_free;                     /* free buffers that wake a sleeping producer */
	uint32_t stream_id;
	size_t buffer_bytes;
	/* The producer's op records, given back by the worker as it finishes each file. */
	struct adump_freelist op_recs;
	enum adump_on_full on_full;
	uint32_t align;
	struct adump_doorbell *_Atomic doorbell;

	/* ck_ring pads its own producer and consumer counters apart; each ring starts a cache
	 * line, so that a consumer's head never shares one with the read-mostly fields above. */
	alignas(64) ck_ring_t full_ring;        /* producer -> worker */
	alignas(64) ck_ring_t free_ring;        /* worker -> producer */

	/* Written by the producer only around a sleep, read by the consumer on every release:
	 * a line of its own, away from the producer's per-record counters. */
	alignas(64) _Atomic uint32_t producer_sleeping;

	/* Producer side. */
	alignas(64) _Atomic uint64_t committed;
	_Atomic uint64_t drops;
	_Atomic uint64_t nomem_tensors;         /* op records not built: their tensors lost */
	_Atomic uint64_t wait_count;
	_Atomic uint64_t wait_ns;
	_Atomic uint32_t high_water;
	_Atomic uint32_t has_dropped;           /* since the last adump_chan_wait_idle() */
	uint32_t sample_rng;                    /* producer only: picks the enqueue samples */
	bool is_sampled;                        /* producer only: time this enqueue */
	uint64_t reserve_ns;                    /* producer only: its reserve's duration */
	bool is_doorbell_deferred;              /* producer only: see adump_chan_defer_sp() */
	uint32_t doorbell_owed;                 /* producer only: commits not rung for yet */
	_Atomic uint64_t wait_max_ns;
	_Atomic uint64_t wait_hist[ADUMP_HIST_BUCKETS];
	_Atomic uint64_t enqueue_hist[ADUMP_HIST_BUCKETS];

	/* Consumer side. */
	alignas(64) _Atomic uint64_t released;
	_Atomic uint32_t free_seq;              /* futex word: bumped when a waiting producer is woken */
	_Atomic uint32_t idle_seq;              /* futex word for idle waiters */
	_Atomic uint32_t idle_waiters;
	bool is_release_deferred;               /* consumer only: see adump_chan_defer_sc() */
	uint32_t release_owed;                  /* consumer only: releases not woken for yet */
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
	adump_freelist_init(&c->op_recs, OP_REC_POOLED_BYTES);
	/* A sleeping producer is woken to a batch of buffers, not to each one as it comes back:
	 * one sleep and wake-up per batch instead of one per record while the worker is the
	 * slower side. All of them come back (the worker holds none for good), and the
	 * producer looks again every WAIT_SLICE_NS whatever happens. */
	c->wake_free = cfg->buffer_count / 4;
	if (c->wake_free < 1)
		c->wake_free = 1;
	if (c->wake_free > 16)
		c->wake_free = 16;
	c->buffer_bytes = cfg->buffer_bytes;
	c->stream_id = cfg->stream_id;
	c->on_full = cfg->on_full;
	c->align = cfg->align;
	c->sample_rng = 0x9e3779b9u ^ (cfg->stream_id << 1);     /* odd: never the zero state */
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
	adump_freelist_fini(&c->op_recs);       /* zeroed if the create failed: frees nothing */
	free(c->full_slots);
	free(c->free_slots);
	free(c->recs);
	free(c);
}

static struct adump_rec *take_free(struct adump_chan *c)
{
	void *rec;

	/* The worker is done with a record it pushed back (adump_chan_release_sc()). */
	return adump_spsc_pop(&c->free_ring, c->free_slots, &rec) ? rec : NULL;
}

static void ring_owed(struct adump_chan *c)
{
	struct adump_doorbell *db = atomic_load_explicit(&c->doorbell, memory_order_acquire);

	if (c->doorbell_owed && db)
		adump_doorbell_ring(db);
	c->doorbell_owed = 0;
}

void adump_chan_defer_sp(struct adump_chan *c)
{
	c->is_doorbell_deferred = true;
}

void adump_chan_flush_sp(struct adump_chan *c)
{
	c->is_doorbell_deferred = false;
	ring_owed(c);
}

struct adump_rec *adump_chan_reserve_sp(struct adump_chan *c, bool must_wait)
{
	struct adump_rec *rec;
	uint64_t start, waited;

	/* Sample the enqueue latency of one record in ADUMP_ENQUEUE_SAMPLE (timing every one
	 * would cost more than the hand-off itself): the reserve here plus the commit, not the
	 * producer's copy in between. Picked at random (xorshift32), so that the samples do not
	 * keep step with anything periodic, such as a deferred doorbell. */
	c->sample_rng ^= c->sample_rng << 13;
	c->sample_rng ^= c->sample_rng >> 17;
	c->sample_rng ^= c->sample_rng << 5;
	if (c->sample_rng % ADUMP_ENQUEUE_SAMPLE == 0) {
		start = adump_now_ns();
		rec = take_free(c);
		if (rec) {
			c->reserve_ns = adump_now_ns() - start;
			c->is_sampled = true;
			return rec;
		}
	} else {
		rec = take_free(c);
		if (rec)
			return rec;
	}
	/* The worker may be asleep on records we have not rung for: it frees the buffers. */
	ring_owed(c);
	if (c->on_full == ADUMP_ON_FULL_DROP && !must_wait) {
		adump_chan_count_drop_sp(c);
		return NULL;
	}
	atomic_fetch_add_explicit(&c->wait_count, 1, memory_order_relaxed);
	start = adump_now_ns();
	for (int i = 0; i < SPIN_ITERATIONS; i++) {
		__builtin_ia32_pause();
		rec = take_free(c);
		if (rec)
			goto out;
	}
	for (;;) {
		uint32_t seq = atomic_load_explicit(&c->free_seq, memory_order_acquire);

		/* Dekker with adump_chan_release_sc(): we publish that we sleep, then look at
		 * the ring; it publishes a buffer, then looks at producer_sleeping. */
		atomic_store_explicit(&c->producer_sleeping, 1, memory_order_seq_cst);
		rec = take_free(c);
		if (rec)
			break;
		adump_futex_wait(&c->free_seq, seq, WAIT_SLICE_NS);
	}
	atomic_store_explicit(&c->producer_sleeping, 0, memory_order_relaxed);
out:
	waited = adump_now_ns() - start;
	atomic_fetch_add_explicit(&c->wait_ns, waited, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->wait_hist[adump_hist_bucket(waited)], 1, memory_order_relaxed);
	if (waited > atomic_load_explicit(&c->wait_max_ns, memory_order_relaxed))
		atomic_store_explicit(&c->wait_max_ns, waited, memory_order_relaxed);
	return rec;
}

void adump_chan_count_drop_sp(struct adump_chan *c)
{
	if (atomic_fetch_add_explicit(&c->drops, 1, memory_order_relaxed) == 0)
		adump_log(ADUMP_LOG_WARN, "ring",
			  "stream %u: staging pool full, dropping dump data (counted in stats)",
			  c->stream_id);
	atomic_store_explicit(&c->has_dropped, 1, memory_order_relaxed);
}

void adump_chan_count_nomem_sp(struct adump_chan *c, uint32_t tensor_count)
{
	atomic_fetch_add_explicit(&c->nomem_tensors, tensor_count, memory_order_relaxed);
}

void adump_chan_commit_sp(struct adump_chan *c, struct adump_rec *rec)
{
	struct adump_doorbell *db;
	unsigned int depth = 0;
	uint64_t start = c->is_sampled ? adump_now_ns() : 0;

	/* One writer: a plain increment, no locked instruction. */
	atomic_store_explicit(&c->committed, atomic_load_explicit(&c->committed, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	/* Never full: the ring has more slots than there are records. */
	adump_spsc_push(&c->full_ring, c->full_slots, rec, &depth);
	if (depth + 1 > atomic_load_explicit(&c->high_water, memory_order_relaxed))
		atomic_store_explicit(&c->high_water, depth + 1, memory_order_relaxed);

	/* A deferring producer rings later, once for many (adump_chan_flush_sp()). */
	if (!c->is_doorbell_deferred || ++c->doorbell_owed >= ADUMP_DOORBELL_BATCH) {
		c->doorbell_owed = 0;
		db = atomic_load_explicit(&c->doorbell, memory_order_acquire);
		if (db)
			adump_doorbell_ring(db);
	}
	if (c->is_sampled) {
		uint64_t took = c->reserve_ns + (adump_now_ns() - start);

		atomic_fetch_add_explicit(&c->enqueue_hist[adump_hist_bucket(took)], 1, memory_order_relaxed);
		c->is_sampled = false;
	}
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

static void wake_producer(struct adump_chan *c)
{
	/* The release that gives a sleeping producer its batch wakes it; the ones after it
	 * until the producer runs again need not: one system call per sleep, not per record. */
	if (atomic_load_explicit(&c->producer_sleeping, memory_order_relaxed) &&
	    adump_spsc_size(&c->free_ring) >= c->wake_free &&
	    atomic_exchange_explicit(&c->producer_sleeping, 0, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&c->free_seq, 1, memory_order_release);
		adump_futex_wake_all(&c->free_seq);
	}
}

/* Consumer only (one writer): marks @n more records done for adump_chan_wait_idle(). */
static void add_released(struct adump_chan *c, uint64_t n)
{
	/* Pairs with the seq_cst load in adump_chan_wait_idle(): whatever the worker did for
	 * these records (their data written) happens before an idle waiter returns. */
	atomic_store_explicit(&c->released, atomic_load_explicit(&c->released, memory_order_relaxed) + n,
			      memory_order_release);
}

static void wake_idle_waiters(struct adump_chan *c)
{
	if (atomic_load_explicit(&c->idle_waiters, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&c->idle_seq, 1, memory_order_release);
		adump_futex_wake_all(&c->idle_seq);
	}
}

/* After buffers or records were given back: wake whoever sleeps on them. Not inlined: GCC's
 * ThreadSanitizer build rejects an inlined atomic_thread_fence(). */
__attribute__((noinline)) static void wake_after_release(struct adump_chan *c)
{
	/* Dekker with the producer's sleep and with adump_chan_wait_idle(). */
	atomic_thread_fence(memory_order_seq_cst);
	wake_producer(c);
	wake_idle_waiters(c);
}

void adump_chan_defer_sc(struct adump_chan *c)
{
	c->is_release_deferred = true;
}

void adump_chan_flush_sc(struct adump_chan *c)
{
	c->is_release_deferred = false;
	if (c->release_owed) {
		c->release_owed = 0;
		wake_after_release(c);
	}
}

/* Consumer: a record went back; the wake-ups now, or once for the batch. */
static void released_one(struct adump_chan *c)
{
	if (c->is_release_deferred)
		c->release_owed++;
	else
		wake_after_release(c);
}

void adump_chan_release_sc(struct adump_chan *c, struct adump_rec *rec)
{
	adump_spsc_push(&c->free_ring, c->free_slots, rec, NULL);
	add_released(c, 1);
	released_one(c);
}

void adump_chan_recycle_sc(struct adump_chan *c, struct adump_rec *rec)
{
	adump_spsc_push(&c->free_ring, c->free_slots, rec, NULL);
	released_one(c);
}

void adump_chan_retire_sc(struct adump_chan *c, uint32_t record_count)
{
	add_released(c, record_count);
	/* Dekker with adump_chan_wait_idle(). */
	atomic_thread_fence(memory_order_seq_cst);
	wake_idle_waiters(c);
}

int adump_chan_wait_idle(struct adump_chan *c)
{
	for (;;) {
		uint32_t seq = atomic_load_explicit(&c->idle_seq, memory_order_acquire);

		atomic_fetch_add_explicit(&c->idle_waiters, 1, memory_order_seq_cst);
		/* committed is written by the producer thread; a waiter on another thread sees
		 * every commit that happened before it called (the caller orders that). */
		/* seq_cst: ordered after our waiter count, against the consumer's fence. */
		if (atomic_load_explicit(&c->released, memory_order_seq_cst) ==
		    atomic_load_explicit(&c->committed, memory_order_seq_cst)) {
			atomic_fetch_sub_explicit(&c->idle_waiters, 1, memory_order_relaxed);
			break;
		}
		adump_futex_wait(&c->idle_seq, seq, WAIT_SLICE_NS);
		atomic_fetch_sub_explicit(&c->idle_waiters, 1, memory_order_relaxed);
	}
	if (atomic_exchange_explicit(&c->has_dropped, 0, memory_order_relaxed))
		return -ADUMP_ERR_DROPPED;
	return 0;
}

void adump_chan_set_doorbell(struct adump_chan *c, struct adump_doorbell *db)
{
	atomic_store_explicit(&c->doorbell, db, memory_order_release);
}

struct adump_freelist *adump_chan_op_freelist(struct adump_chan *c)
{
	return &c->op_recs;
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

void adump_chan_stats(const struct adump_chan *c, struct adump_stream_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->stream_id = c->stream_id;
	out->records = atomic_load_explicit(&c->committed, memory_order_relaxed);
	out->drops = atomic_load_explicit(&c->drops, memory_order_relaxed);
	out->losses[ADUMP_LOSS_NOMEM] = atomic_load_explicit(&c->nomem_tensors, memory_order_relaxed);
	out->ring_high_water = atomic_load_explicit(&c->high_water, memory_order_relaxed);
	out->producer_wait_count = atomic_load_explicit(&c->wait_count, memory_order_relaxed);
	out->producer_wait_ns = atomic_load_explicit(&c->wait_ns, memory_order_relaxed);
}

void adump_chan_hist_add(const struct adump_chan *c, uint64_t *wait_hist, uint64_t *enqueue_hist,
			 uint64_t *wait_max)
{
	uint64_t max = atomic_load_explicit(&c->wait_max_ns, memory_order_relaxed);

	for (unsigned i = 0; i < ADUMP_HIST_BUCKETS; i++) {
		wait_hist[i] += atomic_load_explicit(&c->wait_hist[i], memory_order_relaxed);
		enqueue_hist[i] += atomic_load_explicit(&c->enqueue_hist[i], memory_order_relaxed);
	}
	if (max > *wait_max)
		*wait_max = max;
}
