/* SPDX-License-Identifier: Apache-2.0 */
/* Bare SPSC pointer rings on ck_ring, as the channel uses them, for code that needs the ring
 * alone (the channel itself, and the bench's ring-limit baseline). ck_ring publishes through
 * asm/volatile accesses and memcpy that ThreadSanitizer cannot pair, so under TSan the ring
 * calls run with tracking ignored and each hand-off carries an explicit release (before the
 * push) / acquire (after the pop) on the pointer itself (common/tsan.h): everything reached
 * through the pointer stays fully checked. */
#ifndef ADUMP_SPSC_H
#define ADUMP_SPSC_H

#include <ck_ring.h>
#include <stdbool.h>

#include "common/tsan.h"

/* Producer only. @depth (may be NULL) receives the entries waiting before this one.
 * Return: false when full. */
static inline bool adump_spsc_push(ck_ring_t *ring, ck_ring_buffer_t *slots, void *ptr,
				   unsigned int *depth)
{
	unsigned int ignored;
	bool ok;

	/* Pairs with the acquire in adump_spsc_pop(). */
	ADUMP_TSAN_RELEASE(ptr);
	ADUMP_TSAN_IGNORE_BEGIN();
	/* ck's _size variant stores through its size pointer unconditionally. */
	ok = ck_ring_enqueue_spsc_size(ring, slots, ptr, depth ? depth : &ignored);
	ADUMP_TSAN_IGNORE_END();
	return ok;
}

/* Consumer only. Return: false when empty. */
static inline bool adump_spsc_pop(ck_ring_t *ring, ck_ring_buffer_t *slots, void **ptr)
{
	bool ok;

	ADUMP_TSAN_IGNORE_BEGIN();
	ok = ck_ring_dequeue_spsc(ring, slots, ptr);
	ADUMP_TSAN_IGNORE_END();
	if (ok)
		ADUMP_TSAN_ACQUIRE(*ptr);
	return ok;
}

/* Consumer only: entries waiting. */
static inline unsigned int adump_spsc_size(ck_ring_t *ring)
{
	unsigned int n;

	ADUMP_TSAN_IGNORE_BEGIN();
	n = ck_ring_size(ring);
	ADUMP_TSAN_IGNORE_END();
	return n;
}

#endif
