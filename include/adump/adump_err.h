/* SPDX-License-Identifier: Apache-2.0 */
/* adump's error codes. Functions return >= 0 on success and a negative value on failure:
 * -errno for system failures, -ADUMP_ERR_* for the project's own, which start above the
 * Linux errno ceiling (4095) so the two ranges never overlap. Values are never renumbered. */
#ifndef ADUMP_ERR_H
#define ADUMP_ERR_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ADUMP_API __attribute__((visibility("default")))
#else
#define ADUMP_API
#endif

#define ADUMP_ERR_LIST(X)                                                        \
	X(ADUMP_ERR_CONFIG, 4096, "invalid configuration")                        \
	X(ADUMP_ERR_CORRUPT, 4097, "malformed dump data")                         \
	X(ADUMP_ERR_SHUTDOWN, 4098, "session is shutting down")                   \
	X(ADUMP_ERR_WRITE, 4099, "a dump file could not be written")              \
	X(ADUMP_ERR_DROPPED, 4100, "dump data dropped: staging pool was full")    \
	X(ADUMP_ERR_NOT_FOUND, 4101, "no such device, stream or allocation")      \
	X(ADUMP_ERR_STATE, 4102, "call out of order")                             \
	X(ADUMP_ERR_UNSUPPORTED, 4103, "not supported")                           \
	X(ADUMP_ERR_TOO_BIG, 4104, "size out of range")                           \
	X(ADUMP_ERR_CALLBACK, 4105, "the dump callback returned an error")        \
	X(ADUMP_ERR_INCOMPLETE, 4106, "data incomplete")                          \
	X(ADUMP_ERR_WRONG_THREAD, 4107, "called from a thread that does not own the stream") \
	X(ADUMP_ERR_DISK_GUARD, 4108, "skipped: the disk guard keeps free space (or the quota)")

#define ADUMP_ERR_ENUM(name, val, str) name = (val),
enum adump_err { ADUMP_ERR_LIST(ADUMP_ERR_ENUM) };
#undef ADUMP_ERR_ENUM

/**
 * adump_strerror() - a message for a return value.
 * @ret: a negative return value (-errno or -ADUMP_ERR_*); the sign is ignored.
 *
 * Return: a static string; never NULL. Any thread.
 */
ADUMP_API const char *adump_strerror(int ret);

#ifdef __cplusplus
}
#endif
#endif
