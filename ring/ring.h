/* SPDX-License-Identifier: Apache-2.0 */
/* ring/: the hand-off between a stream's DMA engine (producer) and one pipeline worker
 * (consumer). A channel owns a set of staging buffers, each paired with one record; records
 * travel producer -> worker through one ck_ring SPSC ring and come back worker -> producer
 * through a second one, so the hot path takes no lock and allocates nothing. Only the
 * hand-off lives here: sleeping and waking (and the protocol), the op record and the
 * histograms are common/'s. */
#ifndef ADUMP_RING_H
#define ADUMP_RING_H

#include <stdatomic.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/adump.h"
/* The op record, the free list it comes from and the doorbell: common/common.h. */
#include "common/common.h"

enum {
	ADUMP_REC_FIRST = 1u << 0,              /* first chunk of its file */
	ADUMP_REC_LAST = 1u << 1,               /* last chunk of its file */
};

/* One DMA completion: @len bytes of the file's payload, starting at payload offset @offset,
 * sit at @buf + @buf_offset. On a channel with an alignment (direct I/O) the producer cuts
 * chunks at file offsets that are multiples of it: the first chunk holds buffer_bytes - skew
 * bytes placed at buf + skew, skew = (8 + header bytes) % align, so that every buffer maps
 * onto an aligned stretch of the file. The file offset is 8 + header bytes + @offset (the header length is known
 * only to the worker that builds it). A file with no payload posts one record of length 0
 * flagged FIRST|LAST. */
struct adump_rec {
	alignas(64) struct adump_op_rec *op;
	uint64_t offset;
	uint32_t len;
	uint32_t flags;
	void *buf;                              /* chan's buffer_bytes long; fixed per record */
	uint32_t index;                         /* buffer index, for registered-buffer writes */
	uint32_t buf_offset;                    /* the data starts at buf + buf_offset */
	/* Zero copy: the data is the producer's own memory, @len bytes at @ext, not in @buf;
	 * its op record has hooks that say when it is no longer read. NULL: in @buf. */
	const void *ext;
};

/* Where a record's @len bytes of data are. */
static inline const void *adump_rec_data(const struct adump_rec *rec)
{
	return rec->ext ? rec->ext : (const char *)rec->buf + rec->buf_offset;
}

struct adump_chan;

struct adump_chan_cfg {
	uint32_t stream_id;
	uint32_t buffer_count;                  /* >= 2 */
	size_t buffer_bytes;
	void *buffer_mem;                       /* borrowed: buffer_count * buffer_bytes */
	uint32_t first_index;                   /* index of buffer_mem's first buffer in the pool */
	enum adump_on_full on_full;
	uint32_t align;                         /* 0, or the file alignment chunks are cut at */
};

/**
 * adump_chan_create() - a channel over caller memory. Every buffer starts free.
 * Return: 0, -ADUMP_ERR_CONFIG, -ENOMEM.
 */
int adump_chan_create(const struct adump_chan_cfg *cfg, struct adump_chan **out);
/* Only once idle (adump_chan_wait_idle()) and with no producer or consumer left. NULL ok. */
void adump_chan_destroy(struct adump_chan *c);

/**
 * adump_chan_reserve_sp() - take a free record and its buffer.
 * Producer thread only. With ADUMP_ON_FULL_BLOCK waits (a short spin, then sleeps on a
 * futex) until the worker gives a buffer back; never returns NULL. With ADUMP_ON_FULL_DROP
 * returns NULL at once when none is free, and counts the drop. @must_wait forces waiting
 * whatever the policy (the final record of a file must always reach the worker).
 */
struct adump_rec *adump_chan_reserve_sp(struct adump_chan *c, bool must_wait);

/**
 * adump_chan_commit_sp() - publish a reserved record to the worker and ring its doorbell.
 * Producer thread only.
 */
void adump_chan_commit_sp(struct adump_chan *c, struct adump_rec *rec);

/* Most commits a deferring producer makes before it rings anyway. */
#define ADUMP_DOORBELL_BATCH 128u

/**
 * adump_chan_defer_sp() - let the following commits skip the doorbell: a producer about to
 * post many small records in a burst rings once at its end (adump_chan_flush_sp()), or every
 * ADUMP_DOORBELL_BATCH commits, or before it waits for a buffer, instead of a system call per
 * record whenever the worker sleeps. Producer thread only.
 */
void adump_chan_defer_sp(struct adump_chan *c);
/* Ends the deferral and rings the doorbell if a commit is owed. Producer thread only. */
void adump_chan_flush_sp(struct adump_chan *c);

/**
 * adump_chan_count_drop_sp() - count a chunk the producer skipped without trying to reserve
 * (the rest of a file that already lost a chunk). Producer thread only.
 */
void adump_chan_count_drop_sp(struct adump_chan *c);
/* The producer could not build a dump's op record (out of memory): its @tensor_count tensors
 * are lost before reaching the worker; counted as stats losses[ADUMP_LOSS_NOMEM]. */
void adump_chan_count_nomem_sp(struct adump_chan *c, uint32_t tensor_count);

/**
 * adump_chan_wait_idle() - wait until every record committed so far has been released.
 * Any thread except the consumer. Return: 0, or -ADUMP_ERR_DROPPED if the channel dropped
 * a chunk since the last call (the drop flag is cleared).
 */
int adump_chan_wait_idle(struct adump_chan *c);

/* Consumer thread only: the next committed record, or NULL when empty. */
struct adump_rec *adump_chan_pop_sc(struct adump_chan *c);

/* Consumer thread only: whether nothing is waiting (a worker's last look before it sleeps). */
bool adump_chan_is_empty_sc(struct adump_chan *c);

/* Consumer thread only: the record's buffer is free again (its write has completed), and the
 * record is done for adump_chan_wait_idle(). Same as recycle then retire of one record. */
void adump_chan_release_sc(struct adump_chan *c, struct adump_rec *rec);

/**
 * adump_chan_defer_sc() - let the following releases and recycles skip the full fence and
 * the wake-ups of a sleeping producer or idle waiter, until adump_chan_flush_sc(), which does
 * them once: a worker brackets its drain of a ring with the two, one fence per batch
 * instead of one per record. Consumer thread only; flush before sleeping or blocking.
 */
void adump_chan_defer_sc(struct adump_chan *c);
void adump_chan_flush_sc(struct adump_chan *c);

/**
 * adump_chan_recycle_sc() - give the record's buffer back before the record is done.
 * For a consumer that copied the data out (a worker's batch buffer): the producer may reuse
 * @rec at once, so the consumer must not touch it afterwards. The record still counts as
 * outstanding for adump_chan_wait_idle() until adump_chan_retire_sc() covers it.
 * Consumer thread only.
 */
void adump_chan_recycle_sc(struct adump_chan *c, struct adump_rec *rec);

/**
 * adump_chan_retire_sc() - mark @record_count recycled records done (their data written).
 * Consumer thread only; never more records than were recycled and not yet retired.
 */
void adump_chan_retire_sc(struct adump_chan *c, uint32_t record_count);

/**
 * adump_chan_post_sp() - post one dump file: cut its payload, the bytes of @op_rec's tensors
 * back to back, read from @data[i] for tensor i, into chunks as the channel requires (cut at
 * aligned file offsets with an alignment, see struct adump_rec); for each, reserve a
 * record, copy the bytes into its buffer, commit. A file with no payload posts one empty
 * record.
 * @op_rec: from adump_op_rec_create*(); the consumer owns it from here on, even on a drop.
 * @data:   one pointer per tensor of the op (NULL for an empty one); borrowed for the call,
 *          or with @is_ref until the hooks' release.
 * @is_ref: zero copy (@op_rec must have hooks): records reference @data instead of copying,
 *          one tensor per record, except where an alignment requires staging (the first
 *          chunk, and chunks that span tensors or start at an unaligned address).
 * Under ADUMP_ON_FULL_DROP a chunk that finds no free buffer is lost, the rest of its file is
 * skipped and only its final record is still posted (waiting for a buffer), so that the
 * consumer closes the file as failed; the drops are counted and reported to
 * adump_chan_wait_idle(). Producer thread only. Return: the number of chunks dropped.
 */
uint64_t adump_chan_post_sp(struct adump_chan *c, struct adump_op_rec *op_rec,
			    const void *const *data, bool is_ref);

/* Set before the first commit; the channel rings it after each commit. */
void adump_chan_set_doorbell(struct adump_chan *c, struct adump_doorbell *db);

/* The free list the channel's producer makes op records from (adump_op_rec_create()); every
 * record must be destroyed before the channel is. */
struct adump_freelist *adump_chan_op_freelist(struct adump_chan *c);
uint32_t adump_chan_stream_id(const struct adump_chan *c);
uint32_t adump_chan_buffer_count(const struct adump_chan *c);
/* 0, or the alignment the producer must cut chunks at (see struct adump_rec). */
uint32_t adump_chan_align(const struct adump_chan *c);
size_t adump_chan_buffer_bytes(const struct adump_chan *c);
/* Counters for adump_stats_get(); any thread, relaxed. */
void adump_chan_stats(const struct adump_chan *c, struct adump_stream_stats *out);
/* Adds the channel's latency histograms into @wait_hist / @enqueue_hist and raises *wait_max. */
void adump_chan_hist_add(const struct adump_chan *c, uint64_t *wait_hist, uint64_t *enqueue_hist,
			 uint64_t *wait_max);

#endif
