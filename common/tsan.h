/* SPDX-License-Identifier: Apache-2.0 */
/* ThreadSanitizer annotations for code that hands pointers over through ck's lock-free
 * structures (asm/volatile accesses and memcpy TSan cannot pair): the ck calls run with
 * tracking ignored and each hand-off carries an explicit release/acquire on the pointer.
 * ADUMP_NO_TSAN leaves a whole function uninstrumented. All no-ops without TSan. Used by
 * ring/spsc.h (and through it bench/baselines.c) and common/freelist.c. */
#ifndef ADUMP_TSAN_H
#define ADUMP_TSAN_H

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
#define ADUMP_NO_TSAN __attribute__((no_sanitize("thread")))
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
#define ADUMP_NO_TSAN
#define ADUMP_TSAN_RELEASE(p) ((void)0)
#define ADUMP_TSAN_ACQUIRE(p) ((void)0)
#define ADUMP_TSAN_IGNORE_BEGIN() ((void)0)
#define ADUMP_TSAN_IGNORE_END() ((void)0)
#endif

#endif
