/* SPDX-License-Identifier: Apache-2.0 */
/* tools/: what `adump verify`'s files share: the verdicts; and what --clean reads before it
 * may remove anything and what it cuts (verify_clean.c): the whole capture an argument
 * belongs to, each file once, every packed index of it readable, segment bytes past the last
 * indexed entry. */
#ifndef ADUMP_VERIFY_INT_H
#define ADUMP_VERIFY_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "adump/reader.h"

#include "tools/progress.h"

/* SKIPPED: statistics CSVs (dump_data "stats"), which are not dump files. LEFTOVER: a packed
 * index's cut-short last line, a warning. SEGMENT_TAIL: segment bytes no index line names, a
 * warning. REMOVED: a leftover --clean removed. */
enum verdict {
	VERDICT_OK,
	VERDICT_BAD,
	VERDICT_PART,
	VERDICT_FAILED,
	VERDICT_SKIPPED,
	VERDICT_LEFTOVER,
	VERDICT_SEGMENT_TAIL,
	VERDICT_REMOVED,
	VERDICT_LOST,
	VERDICT_MISSING,
	VERDICT_IN_PROGRESS,
	VERDICT_COUNT
};

/* Segment files of packed captures, by inode, and the end of the last entry any index line
 * places in each: bytes past it were written but never indexed. */
struct segment_ends {
	struct segment_end {
		dev_t dev;
		ino_t ino;
		uint64_t end;
	} *items;
	size_t count;
	size_t cap;
};

/* Note in @s the end of packed entry @e of index directory @dir in its segment.
 * Return: 0 or -errno. */
int verify_segment_note(struct segment_ends *s, const char *dir,
			const struct adump_reader_packed_entry *e);
/* Cut the index @path back to its last whole line. Return: 0 or -errno. */
int verify_trim_index(const char *path);
/* A segment's bytes past its last indexed entry: listed, and with @is_clean cut off (the
 * whole file removed when no entry lies in it). */
enum verdict verify_check_segment_tail(const char *path, struct segment_ends *ends,
				       bool is_clean, char *msg, size_t cap);

/**
 * verify_capture_add() - add the whole capture @arg is part of to @files: for a packed index
 * or segment file, or a packed/ directory, the capture directory that holds packed/ (or the
 * packed directory itself when it is not named packed); otherwise @arg as it is.
 * Return: 0 or -errno.
 */
int verify_capture_add(struct tool_files *files, const char *arg);

/* Drop the later of two paths naming the same file (sorted @files stay sorted). */
void verify_files_dedup(struct tool_files *files);

/**
 * verify_packed_dirs_check() - every packed directory @files has a file of: each index name
 * in it (w<k>.idx, w<k>.<tag>.idx) must be a regular file that reads to its end, and a
 * directory with segments must have an index. Each problem is written to @msg (the first) and
 * counted.
 * Return: the number of problems (0: --clean may act), or -ENOMEM.
 */
long verify_packed_dirs_check(const struct tool_files *files, char *msg, size_t cap);

#endif
