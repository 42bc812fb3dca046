/* SPDX-License-Identifier: Apache-2.0 */
/* The consumer's wake-up duties after giving records back (protocols 2 and 3 of
 * common/common.h); the sleeping and waking itself is common/wake.c's. */
#include "common/common.h"
#include "pipeline/consumer.h"

/* After buffers or records were given back: wake whoever sleeps on them. */
static void wake_after_release(struct adump_chan *c)
{
	struct adump_waitpoint *producer = adump_chan_producer_wait(c);

	/* Dekker with the producer's and the idle waiters' announcements. */
	adump_wake_fence();
	/* The release that gives a sleeping producer its batch wakes it; the ones after it
	 * until the producer runs again need not: one system call per sleep, not per record. */
	if (adump_waitpoint_is_waited(producer) && adump_chan_has_free_batch_sc(c))
		adump_waitpoint_wake(producer);
	adump_waitpoint_wake(adump_chan_idle_wait(c));
}

void adump_consumer_defer_sc(struct adump_chan *c)
{
	adump_chan_owed_sc(c)->is_deferred = true;
}

void adump_consumer_flush_sc(struct adump_chan *c)
{
	struct adump_chan_owed *owed = adump_chan_owed_sc(c);

	owed->is_deferred = false;
	if (owed->release_count) {
		owed->release_count = 0;
		wake_after_release(c);
	}
}

/* A record went back; the wake-ups now, or once for the batch. */
static void released_one(struct adump_chan *c)
{
	struct adump_chan_owed *owed = adump_chan_owed_sc(c);

	if (owed->is_deferred)
		owed->release_count++;
	else
		wake_after_release(c);
}

void adump_consumer_release_sc(struct adump_chan *c, struct adump_rec *rec)
{
	adump_chan_release_sc(c, rec);
	released_one(c);
}

void adump_consumer_recycle_sc(struct adump_chan *c, struct adump_rec *rec)
{
	adump_chan_recycle_sc(c, rec);
	released_one(c);
}

void adump_consumer_retire_sc(struct adump_chan *c, uint32_t record_count)
{
	adump_chan_retire_sc(c, record_count);
	/* Dekker with adump_port_wait_idle(). */
	adump_wake_fence();
	adump_waitpoint_wake(adump_chan_idle_wait(c));
}
