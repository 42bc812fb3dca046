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
#else
#define ADUMP_TSAN_RELEASE(p) ((void)0)
#define ADUMP_TSAN_ACQUIRE(p) ((void)0)
#define ADUMP_NO_TSAN
#endif

/* Sleep while *word == expected, at most timeout_ns (spurious returns are fine). */
void adump_futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns);
void adump_futex_wake_all(_Atomic uint32_t *word);

#endif
