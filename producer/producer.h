/* SPDX-License-Identifier: Apache-2.0 */
/* producer/: the producer's end of a channel, shared by every producer (a device stream's DMA
 * engine, a host stream). A port owns its channel (ring/) and adds what the bare hand-off
 * leaves out: the on-full policy (drop, or block until the worker gives a buffer back), the
 * doorbell, the per-stream counters and latency histograms adump_stats_get() reports, the op
 * records' free list, and the cutting of a dump file into chunks (post.c). Data flows from
 * here into the ring; nothing here knows the pipeline. */
#ifndef ADUMP_PRODUCER_H
#define ADUMP_PRODUCER_H

#include <stdbool.h>
#include <stdint.h>

#include "adump/adump.h"
#include "common/common.h"
#include "ring/ring.h"

struct adump_port;

struct adump_journal_slot;

struct adump_port_cfg {
	struct adump_chan_cfg chan;             /* the channel the port creates and owns */
	enum adump_on_full on_full;
	/* The port's own hand-over journal slots (common/journal.h), borrowed until the port
	 * is destroyed; NULL: no journal. More than the channel's buffers, so that one is
	 * always free at a hand-over (each dump not finished holds a record, but the one
	 * being posted). @journal_used: two counters, borrowed likewise: [0] how many of
	 * them have been used so far (a hand-over extends it only when every slot used is
	 * pending), kept by the port for whoever reads the journal at the end; [1] how many
	 * of its dumps a consumer holds past their records (op_rec->journal_held; the packed
	 * layout). */
	struct adump_journal_slot *journal;
	uint32_t journal_count;
	_Atomic uint32_t *journal_used;
};

/**
 * adump_port_create() - a port and its channel (adump_chan_create()).
 * Return: 0, -ADUMP_ERR_CONFIG, -ENOMEM.
 */
int adump_port_create(const struct adump_port_cfg *cfg, struct adump_port **out);
/* Only once idle (adump_port_wait_idle()), with no producer or consumer left, and every op
 * record from adump_port_op_freelist() destroyed. NULL ok. */
void adump_port_destroy(struct adump_port *p);

/* The port's channel, for its consumer. */
struct adump_chan *adump_port_chan(struct adump_port *p);

/* Set before the first commit; the port rings it after each commit. */
void adump_port_set_doorbell(struct adump_port *p, struct adump_doorbell *db);

/**
 * adump_port_reserve_sp() - take a free record and its buffer.
 * Producer thread only. With ADUMP_ON_FULL_BLOCK waits (a short spin, then sleeps on the
 * channel's producer wait point) until the worker gives a buffer back; never returns NULL.
 * With ADUMP_ON_FULL_DROP returns NULL at once when none is free, and counts the drop.
 * @must_wait forces waiting whatever the policy (the final record of a file must always
 * reach the worker).
 */
struct adump_rec *adump_port_reserve_sp(struct adump_port *p, bool must_wait);

/* Publish a reserved record to the worker and ring its doorbell. Producer thread only. */
void adump_port_commit_sp(struct adump_port *p, struct adump_rec *rec);

/**
 * adump_port_journal_sp() - record @op_rec in the port's hand-over journal (a free slot
 * filled, op_rec->journal_slot set), before any of its records is committed. Nothing
 * without a journal. Producer thread
 * only; no system call. adump_port_post_sp() calls it.
 */
void adump_port_journal_sp(struct adump_port *p, struct adump_op_rec *op_rec);

/* The port's journal slots become @journal (@count of them, @used as in struct
 * adump_port_cfg; NULL: none): its producer moved to another directory, every dump it
 * handed over finished. Producer thread only. */
void adump_port_journal_set_sp(struct adump_port *p, struct adump_journal_slot *journal,
			       uint32_t count, _Atomic uint32_t *used);

/* Most commits a deferring producer makes before it rings anyway. */
#define ADUMP_DOORBELL_BATCH 128u

/**
 * adump_port_defer_sp() - let the following commits skip the doorbell: a producer about to
 * post many small records in a burst rings once at its end (adump_port_flush_sp()), or every
 * ADUMP_DOORBELL_BATCH commits, or before it waits for a buffer, instead of a system call per
 * record whenever the worker sleeps. Producer thread only.
 */
void adump_port_defer_sp(struct adump_port *p);
/**
 * adump_port_defer_small_sp() - from now on, records of fewer than @below bytes (0: any)
 * skip the doorbell until @batch of them or @bytes (0: no limit) are owed, or the producer
 * waits for a buffer, or anyone waits for the port to be idle (adump_port_wait_idle()), or
 * adump_port_ring_sp(); a larger record rings at once, for itself and those owed. A host
 * stream's dumps so wake the worker once for several. The worker looks at its channels at
 * least once per writer wait slice all the same. Producer thread only, or before the
 * producer's first commit.
 */
void adump_port_defer_small_sp(struct adump_port *p, uint32_t batch, uint32_t below,
			       uint64_t bytes);
/* Rings the doorbell if a commit is owed, the deferral going on. Producer thread only. */
void adump_port_ring_sp(struct adump_port *p);
/* Ends the deferral and rings the doorbell if a commit is owed. Producer thread only. */
void adump_port_flush_sp(struct adump_port *p);

/**
 * adump_port_count_drop_sp() - count a chunk the producer skipped without trying to reserve
 * (the rest of a file that already lost a chunk). Producer thread only.
 */
void adump_port_count_drop_sp(struct adump_port *p);
/* The producer could not build a dump's op record (out of memory): its @tensor_count tensors
 * are lost before reaching the worker; counted as stats losses[ADUMP_LOSS_NOMEM]. */
void adump_port_count_nomem_sp(struct adump_port *p, uint32_t tensor_count);

/**
 * adump_port_wait_idle() - wait until every record committed so far has been released.
 * Any thread except the consumer. Return: 0, or -ADUMP_ERR_DROPPED if the port dropped a
 * chunk since the last call (the drop flag is cleared).
 */
int adump_port_wait_idle(struct adump_port *p);

/**
 * adump_port_post_sp() - post one dump file: cut its payload, the bytes of @op_rec's tensors
 * back to back, read from @data[i] for tensor i, into chunks as the channel requires (cut at
 * aligned file offsets with an alignment, see struct adump_rec); for each, reserve a
 * record, copy the bytes into its buffer, commit. A file with no payload posts one empty
 * record, and so does one whose statistics came with it (@op_rec->tstats).
 * @op_rec: from adump_op_rec_create*(); the consumer owns it from here on, even on a drop.
 * @data:   one pointer per tensor of the op (NULL for an empty one); borrowed for the call,
 *          or with @is_ref until the hooks' release.
 * @is_ref: zero copy (@op_rec must have hooks): records reference @data instead of copying,
 *          one tensor per record, except where an alignment requires staging (the first
 *          chunk, and chunks that span tensors or start at an unaligned address).
 * Under ADUMP_ON_FULL_DROP a chunk that finds no free buffer is lost, the rest of its file is
 * skipped and only its final record is still posted (waiting for a buffer), so that the
 * consumer closes the file as failed; the drops are counted and reported to
 * adump_port_wait_idle(). Producer thread only. Return: the number of chunks dropped.
 */
uint64_t adump_port_post_sp(struct adump_port *p, struct adump_op_rec *op_rec,
			    const void *const *data, bool is_ref);

/* The free list the port's producer makes op records from (adump_op_rec_create()). */
struct adump_freelist *adump_port_op_freelist(struct adump_port *p);
uint32_t adump_port_stream_id(const struct adump_port *p);
/* Counters for adump_stats_get(); any thread, relaxed. */
void adump_port_stats(const struct adump_port *p, struct adump_stream_stats *out);
/* Adds the port's latency histograms into @wait_hist / @enqueue_hist and raises *wait_max. */
void adump_port_hist_add(const struct adump_port *p, uint64_t *wait_hist, uint64_t *enqueue_hist,
			 uint64_t *wait_max);

#endif
