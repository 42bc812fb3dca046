/* SPDX-License-Identifier: Apache-2.0 */
/* Logging: the library never prints to stdout; a replaceable sink gets every message. */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/common.h"

static _Atomic(adump_log_fn) log_fn;
static void *_Atomic log_user;
static _Atomic int log_min_level = ADUMP_LOG_WARN;

void adump_set_log_fn(adump_log_fn fn, void *user)
{
	atomic_store_explicit(&log_user, user, memory_order_relaxed);
	atomic_store_explicit(&log_fn, fn, memory_order_release);
}

void adump_set_log_level(enum adump_log_level level)
{
	atomic_store_explicit(&log_min_level, (int)level, memory_order_relaxed);
}

/* Messages carry names from dumps and files (op names, paths) that strangers wrote: a control
 * byte (an escape sequence, a carriage return, a newline forging a second message) becomes
 * \xNN, so what reaches a terminal or a log file is the text it says, one line per message. */
size_t adump_text_escape(char *dst, size_t cap, const char *src)
{
	size_t n = 0;

	if (!cap)
		return 0;
	for (const unsigned char *p = (const unsigned char *)src; *p && n + 1 < cap; p++) {
		if (*p >= 0x20 && *p != 0x7f) {
			dst[n++] = (char)*p;
		} else if (*p == '\t') {
			dst[n++] = ' ';
		} else {
			if (n + 5 > cap)
				break;
			snprintf(dst + n, 5, "\\x%02x", *p);
			n += 4;
		}
	}
	dst[n] = '\0';
	return n;
}

/* @msg escaped in place, cut at @cap (NUL included) where the escapes do not fit. */
static void log_escape(char *msg, size_t cap)
{
	char out[1024];

	adump_text_escape(out, sizeof(out), msg);
	snprintf(msg, cap, "%s", out);
}

void adump_log(enum adump_log_level level, const char *module, const char *fmt, ...)
{
	adump_log_fn fn = atomic_load_explicit(&log_fn, memory_order_acquire);
	char msg[1024];
	va_list ap;

	if (!fn && (int)level < atomic_load_explicit(&log_min_level, memory_order_relaxed))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_escape(msg, sizeof(msg));
	if (fn) {
		fn(level, module, msg, atomic_load_explicit(&log_user, memory_order_relaxed));
		return;
	}
	static const char *const names[] = { "debug", "info", "warning", "error" };
	fprintf(stderr, "adump: %s: %s: %s\n", names[level & 3], module, msg);
}

int adump_mkdir_p(const char *path, unsigned mode)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int adump_mkdir_own(const char *path, unsigned mode)
{
	struct stat st;
	int ret = adump_mkdir_p(path, mode);

	if (ret < 0)
		return ret;
	if (lstat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}
