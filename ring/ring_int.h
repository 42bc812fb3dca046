/* SPDX-License-Identifier: Apache-2.0 */
/* ring/ private helpers: futex waits and ThreadSanitizer annotations. */
#ifndef ADUMP_RING_INT_H
#define ADUMP_RING_INT_H

#include <stdatomic.h>
#include <stdint.h>

#if defined(__SANITIZE_THREAD__)
#define ADUMP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ADUMP_TSAN 1
#endif
#endif

#ifdef ADUMP_TSAN
#include <sanitizer/tsan_interface.h>
/* ck_ring publishes through volatile/asm accesses that ThreadSanitizer cannot see, so each
 * record hand-off carries an explicit release (before enqueue) / acquire (after dequeue) on
 * the record's address, and the ring calls themselves are not instrumented. */
#define ADUMP_TSAN_RELEASE(p) __tsan_release(p)
#define ADUMP_TSAN_ACQUIRE(p) __tsan_acquire(p)
#define ADUMP_NO_TSAN __attribute__((no_sanitize_thread))
/* The runtime's dynamic annotations: accesses between Begin and End (including those that
 * ck_ring makes through memcpy, which the runtime intercepts) are not tracked. */
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
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
#define ADUMP_TSAN_IGNORE_BEGIN() ((void)0)
#define ADUMP_TSAN_IGNORE_END() ((void)0)
#define ADUMP_TSAN_RELEASE(p) ((void)0)
#define ADUMP_TSAN_ACQUIRE(p) ((void)0)
#define ADUMP_NO_TSAN
#endif

/* Sleep while *word == expected, at most timeout_ns (spurious returns are fine). */
void adump_futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns);
void adump_futex_wake_all(_Atomic uint32_t *word);

#endif
