/* SPDX-License-Identifier: Apache-2.0 */
/* tools/: what the reader commands (convert, inspect, verify) share: a progress bar on stderr,
 * shown only on a terminal for runs over many files, and the walk that lists dump files. */
#ifndef ADUMP_TOOL_PROGRESS_H
#define ADUMP_TOOL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Runs over fewer files than this finish too fast to need a bar. */
#define TOOL_PROGRESS_MIN_FILES 16

struct tool_progress {
	bool is_enabled;
	bool is_drawn;                  /* a bar is on the current stderr line */
	const char *label;
	uint64_t total;
	uint64_t done;
	uint64_t last_draw_ns;
};

/* Enable the bar when stderr is a terminal, @quiet is false and @total is large enough. */
void tool_progress_start(struct tool_progress *p, const char *label, uint64_t total, bool quiet);
/* One more item done; redraws at most ten times a second. */
void tool_progress_step(struct tool_progress *p);
/* Erase the bar so a message can be printed on a clean line (it comes back on the next step). */
void tool_progress_clear(struct tool_progress *p);
/* Erase the bar for good. */
void tool_progress_end(struct tool_progress *p);
/* fprintf(stderr) that first clears the bar. */
void tool_warn(struct tool_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A sorted list of paths; caller frees with tool_files_free(). */
struct tool_files {
	char **paths;
	size_t count;
	size_t cap;
};

/* Append @path's regular files: @path itself if it is a file, its entries if it is a
 * directory (descending into subdirectories when @recursive). Return: 0 or -errno. */
int tool_files_add(struct tool_files *f, const char *path, bool recursive);
void tool_files_sort(struct tool_files *f);
void tool_files_free(struct tool_files *f);
/* Whether @name ends with @suffix. */
bool tool_has_suffix(const char *name, const char *suffix);

#endif
