/* SPDX-License-Identifier: Apache-2.0 */
/* The consumer's end of a channel: the ring's give-back operations plus the wake-ups the
 * protocol requires of the consumer after them (protocols 2 and 3 of common/common.h): the
 * producer sleeping for a buffer, and idle waiters. A worker (or any single consumer thread)
 * gives records back only through these. Consumer thread only. */
#ifndef ADUMP_PIPELINE_CONSUMER_H
#define ADUMP_PIPELINE_CONSUMER_H

#include <stdint.h>

#include "ring/ring.h"

/* adump_chan_release_sc(), then the wake-ups (now, or owed until the flush when deferred). */
void adump_consumer_release_sc(struct adump_chan *c, struct adump_rec *rec);
/* adump_chan_recycle_sc(), then the wake-ups (now, or owed). */
void adump_consumer_recycle_sc(struct adump_chan *c, struct adump_rec *rec);
/* adump_chan_retire_sc(), then wakes idle waiters. */
void adump_consumer_retire_sc(struct adump_chan *c, uint32_t record_count);

/**
 * adump_consumer_defer_sc() - let the following releases and recycles skip the fence and
 * the wake-ups of a sleeping producer or idle waiter, until adump_consumer_flush_sc(), which
 * does them once: a worker brackets its drain of a ring with the two, one fence per batch
 * instead of one per record. Flush before sleeping or blocking.
 */
void adump_consumer_defer_sc(struct adump_chan *c);
void adump_consumer_flush_sc(struct adump_chan *c);

#endif
