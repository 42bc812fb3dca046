/* SPDX-License-Identifier: Apache-2.0 */
/* common/: what every module shares: logging, fault-injection testpoints, small helpers. */
#ifndef ADUMP_COMMON_H
#define ADUMP_COMMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "adump/adump.h"

#define ADUMP_HIDDEN __attribute__((visibility("hidden")))

/* Log through the sink set with adump_set_log_fn(). Format: "what failed: why". */
ADUMP_HIDDEN void adump_log(enum adump_log_level level, const char *module, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define adump_log_once(level, module, ...)                                       \
	do {                                                                     \
		static atomic_int adump_logged_once_;                            \
		if (!atomic_exchange_explicit(&adump_logged_once_, 1,            \
					      memory_order_relaxed))             \
			adump_log(level, module, __VA_ARGS__);                   \
	} while (0)

/* Logs file:line and the condition at DEBUG, then returns @err. */
#define ADUMP_RETURN_IF(cond, err)                                               \
	do {                                                                     \
		if (cond) {                                                      \
			adump_log(ADUMP_LOG_DEBUG, "check", "%s:%d: %s", __FILE__, \
				  __LINE__, #cond);                              \
			return (err);                                            \
		}                                                                \
	} while (0)

/* Testpoints: ADUMP_TESTPOINT("uring.write") is 0, or the negative errno a test armed with
 * adump_testpoint_arm(). Compiled to 0 without ADUMP_ENABLE_TESTPOINTS. */
#ifdef ADUMP_ENABLE_TESTPOINTS
ADUMP_HIDDEN int adump_testpoint_hit(const char *name);
#define ADUMP_TESTPOINT(name) adump_testpoint_hit(name)
#else
#define ADUMP_TESTPOINT(name) 0
#endif
/* Arm @name to fail with @err on its @nth hit (1-based); @sticky 1: and every later hit;
 * @sticky 2: on every @nth hit. */
ADUMP_API void adump_testpoint_arm(const char *name, int err, unsigned nth, int sticky);
ADUMP_API void adump_testpoint_disarm_all(void);

static inline uint64_t adump_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Tests make dump timestamps reproducible with adump_testpoint_clock_set(). */
extern ADUMP_HIDDEN _Atomic uint64_t adump_fake_clock_us;
ADUMP_API void adump_testpoint_clock_set(uint64_t start_us);

/* Wall-clock microseconds: dump_time and the timestamp in file names. */
static inline uint64_t adump_wall_us(void)
{
	struct timespec ts;

	if (__builtin_expect(atomic_load_explicit(&adump_fake_clock_us, memory_order_relaxed) != 0, 0))
		return atomic_fetch_add_explicit(&adump_fake_clock_us, 1, memory_order_relaxed);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* write() all of @buf, retrying short writes and EINTR. Return: 0 or -errno. */
ADUMP_HIDDEN int adump_write_all(int fd, const void *buf, size_t len);

/* mkdir -p; existing directories are fine. Return: 0 or -errno. */
ADUMP_HIDDEN int adump_mkdir_p(const char *path, unsigned mode);

/* A file that appears under its name only once it is complete. Where the filesystem has
 * them it is an unnamed file (O_TMPFILE) linked in by adump_pubfile_close(): one directory
 * entry per file, and nothing partial under any name, even after a crash. Elsewhere it is
 * "<path>.part", renamed at the end. */
struct adump_pubfile {
	int fd;
	bool is_unnamed;
};

/**
 * adump_pubfile_open() - start the file that will be @path (its directory must exist).
 * @flags: extra open flags (O_DIRECT); @mode: as for open(2).
 * Return: 0 and @pf->fd open for writing, or -errno.
 */
ADUMP_HIDDEN int adump_pubfile_open(struct adump_pubfile *pf, const char *path, int flags,
				    unsigned mode);

/**
 * adump_pubfile_close() - close the file and, if @status is 0, publish it as @path (replacing
 * a file of that name). Otherwise, or if publishing fails, the data is kept for inspection as
 * "<path><keep_suffix>" (@keep_suffix NULL: removed), never under @path.
 * Return: 0 once published, else @status or the error that stopped publishing.
 */
ADUMP_HIDDEN int adump_pubfile_close(struct adump_pubfile *pf, const char *path, int status,
				     const char *keep_suffix);

/* float16 / bfloat16 bit patterns to float, exactly (common/types.c): the one conversion
 * the capture's statistics and the reader share. */
ADUMP_HIDDEN float adump_half_to_float(uint16_t h);
static inline float adump_bf16_to_float(uint16_t b)
{
	union {
		uint32_t u;
		float f;
	} v = { .u = (uint32_t)b << 16 };

	return v.f;
}

#endif
