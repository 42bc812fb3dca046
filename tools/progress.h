/* SPDX-License-Identifier: Apache-2.0 */
/* tools/: what the commands share: the one progress bar on stderr (shown only on a terminal:
 * convert, inspect and verify for runs over many files, bench for phases that run long), and
 * the walk that lists dump files. */
#ifndef ADUMP_TOOL_PROGRESS_H
#define ADUMP_TOOL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Runs over fewer files than this finish too fast to need a bar. */
#define TOOL_PROGRESS_MIN_FILES 16
/* A timed bar (tool_progress_start_timed) appears only once its phase has run this long. */
#define TOOL_PROGRESS_DELAY_NS 2000000000ull

struct tool_progress {
	bool is_enabled;
	bool is_drawn;                  /* a bar is on the current stderr line */
	bool is_timed;                  /* shows the elapsed time, after TOOL_PROGRESS_DELAY_NS */
	const char *label;
	uint64_t total;
	uint64_t done;
	uint64_t bytes;                 /* written so far (shown when bytes_total is set) */
	uint64_t bytes_total;           /* about how many will be; 0: no byte figures */
	uint64_t start_ns;
	uint64_t last_draw_ns;
};

/* Enable the bar when stderr is a terminal, @quiet is false and @total is large enough. */
void tool_progress_start(struct tool_progress *p, const char *label, uint64_t total, bool quiet);
/* The same bar for a phase that may run long whatever its item count (adump bench): enabled
 * when stderr is a terminal and @quiet is false, drawn once the phase has run
 * TOOL_PROGRESS_DELAY_NS, with the elapsed time and, when @bytes_total is not 0, the bytes
 * written of about @bytes_total and their rate. */
void tool_progress_start_timed(struct tool_progress *p, const char *label, uint64_t total,
			       uint64_t bytes_total, bool quiet);
/* One more item done; redraws at most ten times a second. */
void tool_progress_step(struct tool_progress *p);
/* @done items and @bytes bytes done so far (for a caller that polls counters). */
void tool_progress_set(struct tool_progress *p, uint64_t done, uint64_t bytes);
/* Erase the bar so a message can be printed on a clean line (it comes back on the next step). */
void tool_progress_clear(struct tool_progress *p);
/* Erase the bar for good. */
void tool_progress_end(struct tool_progress *p);
/* tool_err() that first clears the bar: one line, control bytes escaped. */
void tool_warn(struct tool_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A sorted list of paths; caller frees with tool_files_free(). */
struct tool_files {
	char **paths;
	size_t count;
	size_t cap;
	/* What a directory walk passed by, never followed nor read: a symbolic link, a FIFO,
	 * a socket or a device inside the capture (issue 30; verify reports each). */
	struct tool_files *odd;
};

/* Append @path's regular files: @path itself if it is a file, its entries if it is a
 * directory (descending into subdirectories when @recursive; a link inside it is never
 * followed: it and any other non-regular file go to @f->odd when that is set).
 * Return: 0 or -errno. */
int tool_files_add(struct tool_files *f, const char *path, bool recursive);
void tool_files_sort(struct tool_files *f);
void tool_files_free(struct tool_files *f);
/* The items a progress bar over @f counts: each file, but a packed capture's index stands for
 * its lines (one item if it cannot be opened) and its segments count for nothing, as they are
 * read through it (inspect, verify). */
uint64_t tool_files_item_count(const struct tool_files *f);
/* Whether @name ends with @suffix. */
bool tool_has_suffix(const char *name, const char *suffix);

#endif
