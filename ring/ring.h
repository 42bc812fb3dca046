/* SPDX-License-Identifier: Apache-2.0 */
/* ring/: the hand-off between a stream's DMA engine (producer) and one pipeline worker
 * (consumer). A channel owns a set of staging buffers, each paired with one record; records
 * travel producer -> worker through one ck_ring SPSC ring and come back worker -> producer
 * through a second one, so the hot path takes no lock and allocates nothing. Only the
 * hand-off lives here, with the one rule that goes with it: a record given back wakes
 * whoever waits for it. No counter beyond the two that define "idle". The producer's end
 * (drop policy, blocking, counters, chunking) is producer/'s; sleeping and waking, with its
 * protocol, common/'s. */
#ifndef ADUMP_RING_H
#define ADUMP_RING_H

#include <stdatomic.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/adump.h"
/* The op record and the wait points: common/common.h. */
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
	uint32_t align;                         /* 0, or the file alignment chunks are cut at */
};

/**
 * adump_chan_create() - a channel over caller memory. Every buffer starts free.
 * Return: 0, -ADUMP_ERR_CONFIG, -ENOMEM.
 */
int adump_chan_create(const struct adump_chan_cfg *cfg, struct adump_chan **out);
/* Only once idle (adump_chan_is_idle()) and with no producer or consumer left. NULL ok. */
void adump_chan_destroy(struct adump_chan *c);

/* ---- Producer (one thread at a time) ---- */

/* A free record and its buffer, or NULL when the worker holds them all. */
struct adump_rec *adump_chan_reserve_sp(struct adump_chan *c);

/**
 * adump_chan_commit_sp() - publish a reserved record to the consumer (the ring's release).
 * Return: the records waiting in the ring with this one (for the high-water mark).
 */
uint32_t adump_chan_commit_sp(struct adump_chan *c, struct adump_rec *rec);

/* ---- Consumer (one thread) ---- */

/* The next committed record, or NULL when empty. */
struct adump_rec *adump_chan_pop_sc(struct adump_chan *c);

/* Whether nothing is waiting (a worker's last look before it sleeps). */
bool adump_chan_is_empty_sc(struct adump_chan *c);

/* Every give-back below also wakes whoever sleeps on what it gave back: a producer waiting
 * for a free buffer (once a batch of them is free) and idle waiters (common/common.h,
 * "Sleeping and waking", protocols 2 and 3): now, or once at adump_chan_flush_sc() when
 * deferred. A consumer gives records back only through these. */

/* The record's buffer is free again (its write has completed), and the record is done for
 * adump_chan_is_idle(). Same as recycle then retire of one record. */
void adump_chan_release_sc(struct adump_chan *c, struct adump_rec *rec);

/**
 * adump_chan_recycle_sc() - give the record's buffer back before the record is done.
 * For a consumer that copied the data out (a worker's batch buffer): the producer may reuse
 * @rec at once, so the consumer must not touch it afterwards. The record still counts as
 * outstanding for adump_chan_is_idle() until adump_chan_retire_sc() covers it.
 */
void adump_chan_recycle_sc(struct adump_chan *c, struct adump_rec *rec);

/* Mark @record_count recycled records done (their data written) and wake idle waiters;
 * never more records than were recycled and not yet retired. */
void adump_chan_retire_sc(struct adump_chan *c, uint32_t record_count);

/**
 * adump_chan_defer_sc() - let the following releases and recycles skip the fence and the
 * wake-ups, until adump_chan_flush_sc(), which does them once: a worker brackets its drain
 * of a ring with the two, one fence per batch instead of one per record. Flush before
 * sleeping or blocking.
 */
void adump_chan_defer_sc(struct adump_chan *c);
void adump_chan_flush_sc(struct adump_chan *c);

/* ---- Any thread ---- */

/**
 * adump_chan_is_idle() - whether every record committed so far has been released (seq_cst
 * loads: an idle waiter's re-check after it announced its sleep). The caller orders the
 * commits it waits for before the call.
 */
bool adump_chan_is_idle(struct adump_chan *c);

/* Where the channel's producer sleeps for a free buffer and idle waiters for the idle
 * state (producer/port.c waits on them; the give-backs above wake them). */
struct adump_waitpoint *adump_chan_producer_wait(struct adump_chan *c);
struct adump_waitpoint *adump_chan_idle_wait(struct adump_chan *c);

/* Records committed so far (relaxed: for counters). */
uint64_t adump_chan_committed(const struct adump_chan *c);

uint32_t adump_chan_stream_id(const struct adump_chan *c);
uint32_t adump_chan_buffer_count(const struct adump_chan *c);
/* 0, or the alignment the producer must cut chunks at (see struct adump_rec). */
uint32_t adump_chan_align(const struct adump_chan *c);
size_t adump_chan_buffer_bytes(const struct adump_chan *c);

#endif
