/* SPDX-License-Identifier: Apache-2.0 */
/* Bare SPSC pointer rings on ck_ring, as the channel uses them, for code that needs the ring
 * alone (the channel itself, and the bench's ring-limit baseline). ck_ring publishes through
 * asm/volatile accesses and memcpy that ThreadSanitizer cannot pair, so under TSan the ring
 * calls run with tracking ignored and each hand-off carries an explicit release (before the
 * push) / acquire (after the pop) on the pointer itself: everything reached through the
 * pointer stays fully checked. */
#ifndef ADUMP_SPSC_H
#define ADUMP_SPSC_H

#include <ck_ring.h>
#include <stdbool.h>

#if defined(__SANITIZE_THREAD__)
#define ADUMP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ADUMP_TSAN 1
#endif
#endif

#ifdef ADUMP_TSAN
#include <sanitizer/tsan_interface.h>
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define ADUMP_TSAN_RELEASE(p) __tsan_release(p)
#define ADUMP_TSAN_ACQUIRE(p) __tsan_acquire(p)
#define ADUMP_TSAN_IGNORE_BEGIN()                              \
	do {                                                   \
		AnnotateIgnoreReadsBegin(__FILE__, __LINE__);  \
		AnnotateIgnoreWritesBegin(__FILE__, __LINE__); \
	} while (0)
#define ADUMP_TSAN_IGNORE_END()                              \
	do {                                                 \
		AnnotateIgnoreWritesEnd(__FILE__, __LINE__); \
		AnnotateIgnoreReadsEnd(__FILE__, __LINE__);  \
	} while (0)
#else
#define ADUMP_TSAN_RELEASE(p) ((void)0)
#define ADUMP_TSAN_ACQUIRE(p) ((void)0)
#define ADUMP_TSAN_IGNORE_BEGIN() ((void)0)
#define ADUMP_TSAN_IGNORE_END() ((void)0)
#endif

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
