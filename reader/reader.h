/* SPDX-License-Identifier: Apache-2.0 */
/* reader/: reading every format adump reads (DumpData files, lz4 frames, packed segments
 * and their index, torch .pt, msprobe's dump.json, .npy, statistics CSVs) behind the reader
 * API (include/adump/reader.h), and nothing else. This header is the module's: what its
 * parser, statistics, .npy writer and chunk assembler share, and what the analyses built on
 * it (compare/, scan/, export/) use beyond the public API. */
#ifndef ADUMP_READER_READER_H
#define ADUMP_READER_READER_H

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "adump/reader.h"
#include "common/common.h"
#include "proto/proto.h"

struct adump_reader_source {
	const struct adump_reader_source_ops *ops;
	void *ctx;
	uint64_t size;
	/* Containers the library builds in (lz4 frames, packed entries) set these two. */
	const struct adump_reader_source_int_ops *int_ops;
};

/* What the built-in containers add to the public ops: a message for their last failure and an
 * integrity check (checksum or CRC) over all their bytes. */
struct adump_reader_source_int_ops {
	/* Message of the last failed read_at, "" if none. */
	const char *(*error)(void *ctx);
	/* Read everything and compare with the container's checksum. Return: 0 or negative,
	 * with what is wrong in @msg. */
	int (*check)(void *ctx, char *msg, size_t cap);
	/* Optional: start reading [offset, offset + len) into the page cache, without waiting. */
	void (*willneed)(void *ctx, uint64_t offset, uint64_t len);
};

/* Whether a directory's @name is one the flight recorder writes a window into beneath a
 * capture (window-<step>[.<n>]): a walk over the capture's root passes it by, its tensors'
 * statistics being the capture's own; the window itself is read by naming it. */
ADUMP_HIDDEN bool adump_reader_is_window_dir(const char *name);

/* Bytes read per step when streaming a payload. */
#define ADUMP_READER_STEP_BYTES ((size_t)1 << 20)

ADUMP_HIDDEN const void *adump_reader_source_map(struct adump_reader_source *src,
						 uint64_t offset, size_t len);

/* Open the source for a path: a plain dump file, or an LZ4 frame (by its .lz4 suffix or its
 * magic number) presented decompressed. On failure @msg says why (without the path). */
ADUMP_HIDDEN int adump_reader_source_open_path(const char *path, struct adump_reader_source **out,
					       char *msg, size_t cap);

/* The LZ4 frame in @compressed (taken over, also on failure) as a source of its content.
 * On failure @msg says why. */
ADUMP_HIDDEN int adump_reader_lz4_wrap(struct adump_reader_source *compressed,
				       struct adump_reader_source **out, char *msg, size_t cap);

/* The message for a failed read of @src: the container's own when it has one. */
ADUMP_HIDDEN const char *adump_reader_source_strerror(struct adump_reader_source *src, int ret);

/* Record "<name>: <fmt...>" as the reader's error, with no dump open, and return @ret. */
ADUMP_HIDDEN int adump_reader_fail_as(struct adump_reader *r, const char *name, int ret,
				      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Ask the open dump's source to start reading @len bytes of tensor @tensor from @offset ahead
 * of use (posix_fadvise WILLNEED on files and packed entries); a no-op for other sources. */
ADUMP_HIDDEN void adump_reader_willneed(struct adump_reader *r, uint32_t tensor, uint64_t offset,
					uint64_t len);


/* An API function's message buffer, made empty: the caller's (*msg, *cap), or @scratch (one
 * byte) when it gave none, so that the error paths write into it without checking. */
static inline void adump_msg_begin(char **msg, size_t *cap, char scratch[static 1])
{
	if (!*msg || !*cap) {
		*msg = scratch;
		*cap = 1;
	}
	(*msg)[0] = '\0';
}

/* Take a caller's versioned config (struct_size its first field) over @dst, which holds the
 * defaults: fields a caller built against an older header does not know keep them. @src may
 * be NULL (all defaults). */
static inline void adump_config_take(void *dst, size_t dst_size, const void *src)
{
	if (src) {
		size_t n = *(const size_t *)src;

		memcpy(dst, src, n < dst_size ? n : dst_size);
	}
	*(size_t *)dst = dst_size;
}

/* A thread_count of 0: one per online CPU, at least one. */
static inline void adump_threads_default(unsigned *thread_count)
{
	if (!*thread_count) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		*thread_count = cpus > 0 ? (unsigned)cpus : 1;
	}
}

/* Record a failure message "<name>: <fmt...>" in the reader and return @ret. */
ADUMP_HIDDEN int adump_reader_fail(struct adump_reader *r, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* What adump_journal_list() finds: a dump handed over and never written, its process gone
 * (MISSING) or still running (IN_PROGRESS); the journal or an entry of it unreadable (BAD). */
enum adump_journal_finding {
	ADUMP_JOURNAL_FOUND_MISSING,
	ADUMP_JOURNAL_FOUND_IN_PROGRESS,
	ADUMP_JOURNAL_FOUND_BAD,
};

/* One finding of adump_journal_list(): @msg is one line naming the file. */
typedef void (*adump_journal_fn)(void *arg, enum adump_journal_finding kind, const char *msg);

/**
 * adump_journal_list() - if @path is a hand-over journal (common/journal.h; by its name),
 * report each dump it holds as handed over whose file is not on disk (or, for msprobe's
 * layout, each entry never written into dump.json), and any damage. Never follows a link.
 * Return: -1 if @path is no journal (nothing done), else the number of findings reported.
 */
ADUMP_HIDDEN int adump_journal_list(const char *path, adump_journal_fn fn, void *arg);

#endif
