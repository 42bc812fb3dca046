/* SPDX-License-Identifier: Apache-2.0 */
/* A producer's port into its channel: the on-full policy, the doorbell, the per-stream
 * counters and latency histograms, over the bare hand-off of ring/. Sleeping and waking go
 * through common/wake.c (protocols 1 and 2 of common/common.h). */
#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "common/journal.h"
#include "producer/producer.h"

/* Pauses before a producer that found no free buffer sleeps: ~5 µs. Short on purpose: with
 * more capture threads than cores, a spinning producer takes the CPU from the worker that
 * would free its buffer (tiny profile: 2000 pauses cost ~10 % of the throughput). */
#define SPIN_ITERATIONS 100
/* Op records up to this size are reused (an Add's three tensors, one attribute and its
 * names take about 1 KiB); larger ones are allocated each time. */
#define OP_REC_POOLED_BYTES 2048u

struct adump_port {
	/* Read-mostly. */
	struct adump_chan *chan;
	enum adump_on_full on_full;
	uint32_t stream_id;
	struct adump_doorbell *_Atomic doorbell;
	/* The producer's op records, given back by the worker as it finishes each file. */
	struct adump_freelist op_recs;
	struct adump_journal_slot *journal;     /* borrowed (struct adump_port_cfg), or NULL */
	uint32_t journal_count;
	_Atomic uint32_t *journal_used;         /* borrowed; the port's copy: journal_window */

	/* Producer only. */
	alignas(64) uint32_t sample_rng;        /* picks the enqueue samples */
	bool is_sampled;                        /* time this enqueue */
	uint64_t reserve_ns;                    /* its reserve's duration */
	bool is_doorbell_deferred;              /* see adump_port_defer_sp() */
	uint32_t doorbell_owed;                 /* commits not rung for yet */
	uint32_t doorbell_batch;                /* commits a deferring producer owes at most */
	uint32_t defer_below;                   /* adump_port_defer_small_sp(): records of
						 * fewer bytes wait, 0: every record does */
	uint64_t owed_bytes;                    /* bytes of the commits owed */
	uint64_t defer_bytes;                   /* ring once this many are owed; 0: no limit */
	uint32_t journal_next;                  /* where the search for a free slot starts */
	uint32_t journal_window;                /* slots in use: the search wraps there */

	/* Written by the producer, read by any thread (relaxed). */
	_Atomic uint64_t drops;
	_Atomic uint64_t nomem_tensors;         /* op records not built: their tensors lost */
	_Atomic uint64_t wait_count;
	_Atomic uint64_t wait_ns;
	_Atomic uint32_t high_water;
	_Atomic uint32_t has_dropped;           /* since the last adump_port_wait_idle() */
	_Atomic uint64_t wait_max_ns;
	_Atomic uint64_t wait_hist[ADUMP_HIST_BUCKETS];
	_Atomic uint64_t enqueue_hist[ADUMP_HIST_BUCKETS];
};

int adump_port_create(const struct adump_port_cfg *cfg, struct adump_port **out)
{
	struct adump_port *p;
	int ret;

	if (!cfg)
		return -ADUMP_ERR_CONFIG;
	p = aligned_alloc(64, (sizeof(*p) + 63) & ~(size_t)63);
	if (!p)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	ret = adump_chan_create(&cfg->chan, &p->chan);
	if (ret < 0) {
		free(p);
		return ret;
	}
	adump_freelist_init(&p->op_recs, OP_REC_POOLED_BYTES);
	p->on_full = cfg->on_full;
	p->journal = cfg->journal_count ? cfg->journal : NULL;
	p->journal_count = cfg->journal_count;
	p->journal_used = cfg->journal_used;
	/* An earlier port of the same stream slot used these; none of them is pending. */
	p->journal_window = p->journal ? atomic_load_explicit(p->journal_used, memory_order_relaxed)
				       : 0;
	p->stream_id = cfg->chan.stream_id;
	p->sample_rng = 0x9e3779b9u ^ (cfg->chan.stream_id << 1);       /* odd: never zero */
	*out = p;
	return 0;
}

void adump_port_destroy(struct adump_port *p)
{
	if (!p)
		return;
	adump_freelist_fini(&p->op_recs);
	adump_chan_destroy(p->chan);
	free(p);
}

struct adump_chan *adump_port_chan(struct adump_port *p)
{
	return p->chan;
}

static void journal_fill(struct adump_port *p, struct adump_op_rec *op_rec,
			 struct adump_journal_slot *js)
{
	const struct adump_op *op = &op_rec->op;

	adump_journal_slot_fill(js, op->device_id, op->task_id, op->stream_id, op->timestamp_us,
				op_rec->payload_bytes, op->op_type, op->op_name);
	op_rec->journal_slot = js;
	op_rec->journal_held = &p->journal_used[1];     /* held past records: adump_port_cfg */
}

void adump_port_journal_set_sp(struct adump_port *p, struct adump_journal_slot *journal,
			       uint32_t count, _Atomic uint32_t *used)
{
	p->journal = count ? journal : NULL;
	p->journal_count = p->journal ? count : 0;
	p->journal_used = used;
	/* Slots used before (a return to the session's region) hold nothing pending. */
	p->journal_window = p->journal ? atomic_load_explicit(used, memory_order_relaxed) : 0;
	p->journal_next = 0;
}

void adump_port_journal_sp(struct adump_port *p, struct adump_op_rec *op_rec)
{
	if (!p->journal)
		return;
	/* The slots used so far are a ring in hand-over order, and files finish about in that
	 * order: the slot at the cursor (the oldest) is nearly always free. While it is not,
	 * the ring grows by one instead of searching, so a hand-over costs one look whatever
	 * the worker's backlog, and the slots used stay few (on pages resident and dirty: a
	 * store into one is no page fault). */
	if (p->journal_window) {
		struct adump_journal_slot *js = &p->journal[p->journal_next];

		/* Pairs with the release in adump_journal_slot_done(). */
		if (atomic_load_explicit(&js->state, memory_order_acquire) != ADUMP_JOURNAL_PENDING) {
			if (++p->journal_next == p->journal_window)
				p->journal_next = 0;
			journal_fill(p, op_rec, js);
			return;
		}
	}
	if (p->journal_window < p->journal_count) {
		journal_fill(p, op_rec, &p->journal[p->journal_window++]);
		atomic_store_explicit(p->journal_used, p->journal_window, memory_order_relaxed);
		return;
	}
	/* Every slot in use: one is free all the same (struct adump_port_cfg), out of order. */
	for (uint32_t n = 0; n < p->journal_count; n++) {
		struct adump_journal_slot *js = &p->journal[p->journal_next];

		if (++p->journal_next == p->journal_count)
			p->journal_next = 0;
		if (atomic_load_explicit(&js->state, memory_order_acquire) != ADUMP_JOURNAL_PENDING) {
			journal_fill(p, op_rec, js);
			return;
		}
	}
	/* More slots than dumps that can be unfinished (struct adump_port_cfg): a bug. */
	adump_log_once(ADUMP_LOG_ERROR, "producer", "hand-over journal full: a dump unrecorded");
}

void adump_port_set_doorbell(struct adump_port *p, struct adump_doorbell *db)
{
	atomic_store_explicit(&p->doorbell, db, memory_order_release);
}

static void ring_owed(struct adump_port *p)
{
	struct adump_doorbell *db = atomic_load_explicit(&p->doorbell, memory_order_acquire);

	if (p->doorbell_owed && db)
		adump_doorbell_ring(db);
	p->doorbell_owed = 0;
	p->owed_bytes = 0;
}

void adump_port_defer_sp(struct adump_port *p)
{
	p->is_doorbell_deferred = true;
	p->doorbell_batch = ADUMP_DOORBELL_BATCH;
	p->defer_below = 0;
	p->defer_bytes = 0;
}

void adump_port_defer_small_sp(struct adump_port *p, uint32_t batch, uint32_t below,
			       uint64_t bytes)
{
	p->is_doorbell_deferred = true;
	p->doorbell_batch = batch ? batch : 1;
	p->defer_below = below;
	p->defer_bytes = bytes;
}

void adump_port_ring_sp(struct adump_port *p)
{
	ring_owed(p);
}

void adump_port_flush_sp(struct adump_port *p)
{
	p->is_doorbell_deferred = false;
	ring_owed(p);
}

struct take_free_arg {
	struct adump_chan *chan;
	struct adump_rec *rec;
};

static bool take_free(void *arg)
{
	struct take_free_arg *a = arg;

	a->rec = adump_chan_reserve_sp(a->chan);
	return a->rec != NULL;
}

struct adump_rec *adump_port_reserve_sp(struct adump_port *p, bool must_wait)
{
	struct take_free_arg a = { .chan = p->chan };
	struct adump_rec *rec;
	uint64_t start, waited;

	/* Sample the enqueue latency of one record in ADUMP_ENQUEUE_SAMPLE (timing every one
	 * would cost more than the hand-off itself): the reserve here plus the commit, not the
	 * producer's copy in between. Picked at random (xorshift32), so that the samples do not
	 * keep step with anything periodic, such as a deferred doorbell. */
	p->sample_rng ^= p->sample_rng << 13;
	p->sample_rng ^= p->sample_rng >> 17;
	p->sample_rng ^= p->sample_rng << 5;
	if (p->sample_rng % ADUMP_ENQUEUE_SAMPLE == 0) {
		start = adump_now_ns();
		rec = adump_chan_reserve_sp(p->chan);
		if (rec) {
			p->reserve_ns = adump_now_ns() - start;
			p->is_sampled = true;
			return rec;
		}
	} else {
		rec = adump_chan_reserve_sp(p->chan);
		if (rec)
			return rec;
	}
	/* The worker may be asleep on records we have not rung for: it frees the buffers. */
	ring_owed(p);
	if (p->on_full == ADUMP_ON_FULL_DROP && !must_wait) {
		adump_port_count_drop_sp(p);
		return NULL;
	}
	atomic_fetch_add_explicit(&p->wait_count, 1, memory_order_relaxed);
	start = adump_now_ns();
	/* Protocol 2 of common/common.h: the worker wakes us once a batch is free. */
	adump_waitpoint_wait(adump_chan_producer_wait(p->chan), SPIN_ITERATIONS, take_free, &a);
	waited = adump_now_ns() - start;
	atomic_fetch_add_explicit(&p->wait_ns, waited, memory_order_relaxed);
	atomic_fetch_add_explicit(&p->wait_hist[adump_hist_bucket(waited)], 1, memory_order_relaxed);
	if (waited > atomic_load_explicit(&p->wait_max_ns, memory_order_relaxed))
		atomic_store_explicit(&p->wait_max_ns, waited, memory_order_relaxed);
	return a.rec;
}

void adump_port_count_drop_sp(struct adump_port *p)
{
	if (atomic_fetch_add_explicit(&p->drops, 1, memory_order_relaxed) == 0)
		adump_log(ADUMP_LOG_WARN, "producer",
			  "stream %u: staging pool full, dropping dump data (counted in stats)",
			  p->stream_id);
	atomic_store_explicit(&p->has_dropped, 1, memory_order_relaxed);
}

void adump_port_count_nomem_sp(struct adump_port *p, uint32_t tensor_count)
{
	atomic_fetch_add_explicit(&p->nomem_tensors, tensor_count, memory_order_relaxed);
}

void adump_port_commit_sp(struct adump_port *p, struct adump_rec *rec)
{
	struct adump_doorbell *db;
	uint64_t start = p->is_sampled ? adump_now_ns() : 0;
	/* Read before the commit: once the worker has @rec, it may give it back. */
	bool is_large = p->defer_below && rec->len >= p->defer_below;
	uint64_t len = rec->len;
	uint32_t depth = adump_chan_commit_sp(p->chan, rec);

	if (depth > atomic_load_explicit(&p->high_water, memory_order_relaxed))
		atomic_store_explicit(&p->high_water, depth, memory_order_relaxed);
	/* Protocol 1 of common/common.h. A deferring producer rings later, once for many
	 * (adump_port_flush_sp(), a waiter: adump_port_wait_idle()). */
	if (!p->is_doorbell_deferred || is_large || ++p->doorbell_owed >= p->doorbell_batch ||
	    (p->defer_bytes && (p->owed_bytes += len) >= p->defer_bytes)) {
		p->doorbell_owed = 0;
		p->owed_bytes = 0;
		db = atomic_load_explicit(&p->doorbell, memory_order_acquire);
		if (db)
			adump_doorbell_ring(db);
	}
	if (p->is_sampled) {
		uint64_t took = p->reserve_ns + (adump_now_ns() - start);

		atomic_fetch_add_explicit(&p->enqueue_hist[adump_hist_bucket(took)], 1, memory_order_relaxed);
		p->is_sampled = false;
	}
}

static bool chan_is_idle(void *chan)
{
	return adump_chan_is_idle(chan);
}

int adump_port_wait_idle(struct adump_port *p)
{
	struct adump_doorbell *db = atomic_load_explicit(&p->doorbell, memory_order_acquire);

	/* Records a deferring producer has not rung for yet: the worker may sleep on them
	 * (any thread may ring; it wakes the worker only if it sleeps). */
	if (db && !adump_chan_is_idle(p->chan))
		adump_doorbell_ring(db);
	/* Protocol 3 of common/common.h. */
	adump_waitpoint_wait(adump_chan_idle_wait(p->chan), 0, chan_is_idle, p->chan);
	if (atomic_exchange_explicit(&p->has_dropped, 0, memory_order_relaxed))
		return -ADUMP_ERR_DROPPED;
	return 0;
}

struct adump_freelist *adump_port_op_freelist(struct adump_port *p)
{
	return &p->op_recs;
}

uint32_t adump_port_stream_id(const struct adump_port *p)
{
	return p->stream_id;
}

void adump_port_stats(const struct adump_port *p, struct adump_stream_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->stream_id = p->stream_id;
	out->records = adump_chan_committed(p->chan);
	out->drops = atomic_load_explicit(&p->drops, memory_order_relaxed);
	out->losses[ADUMP_LOSS_NOMEM] = atomic_load_explicit(&p->nomem_tensors, memory_order_relaxed);
	out->ring_high_water = atomic_load_explicit(&p->high_water, memory_order_relaxed);
	out->producer_wait_count = atomic_load_explicit(&p->wait_count, memory_order_relaxed);
	out->producer_wait_ns = atomic_load_explicit(&p->wait_ns, memory_order_relaxed);
}

void adump_port_hist_add(const struct adump_port *p, uint64_t *wait_hist, uint64_t *enqueue_hist,
			 uint64_t *wait_max)
{
	uint64_t max = atomic_load_explicit(&p->wait_max_ns, memory_order_relaxed);

	for (unsigned i = 0; i < ADUMP_HIST_BUCKETS; i++) {
		wait_hist[i] += atomic_load_explicit(&p->wait_hist[i], memory_order_relaxed);
		enqueue_hist[i] += atomic_load_explicit(&p->enqueue_hist[i], memory_order_relaxed);
	}
	if (max > *wait_max)
		*wait_max = max;
}
