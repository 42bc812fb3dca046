/* SPDX-License-Identifier: Apache-2.0 */
/* The progress bar every `adump` command draws, and the dump-file walk of convert, inspect and
 * verify. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "adump/reader.h"
#include "common/common.h"
#include "tools/progress.h"
#include "tools/tool.h"

#define BAR_WIDTH 30
#define REDRAW_NS 100000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void tool_progress_start(struct tool_progress *p, const char *label, uint64_t total, bool quiet)
{
	*p = (struct tool_progress){ .label = label, .total = total, .start_ns = now_ns() };
	p->is_enabled = !quiet && total >= TOOL_PROGRESS_MIN_FILES && tool_is_tty();
}

void tool_progress_start_timed(struct tool_progress *p, const char *label, uint64_t total,
			       uint64_t bytes_total, bool quiet)
{
	*p = (struct tool_progress){ .label = label, .total = total, .bytes_total = bytes_total,
				     .is_timed = true, .start_ns = now_ns() };
	p->is_enabled = !quiet && tool_is_tty();
}

static void draw(struct tool_progress *p, uint64_t now)
{
	unsigned filled = p->total ? (unsigned)(p->done * BAR_WIDTH / p->total) : BAR_WIDTH;
	double elapsed = (double)(now - p->start_ns) / 1e9;
	char bar[BAR_WIDTH + 1];

	if (filled > BAR_WIDTH)
		filled = BAR_WIDTH;
	for (unsigned i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < filled ? '#' : ' ';
	bar[BAR_WIDTH] = '\0';
	fprintf(stderr, "\r%s [%s] %llu/%llu", p->label, bar, (unsigned long long)p->done,
		(unsigned long long)p->total);
	if (p->bytes_total)
		fprintf(stderr, ", %.2f of %.2f GB, %.2f GB/s", (double)p->bytes / 1e9,
			(double)p->bytes_total / 1e9, elapsed > 0 ? (double)p->bytes / elapsed / 1e9 : 0.0);
	if (p->is_timed)
		fprintf(stderr, ", %.1f s", elapsed);
	/* Whatever a longer line drawn before left beyond this one. */
	fprintf(stderr, "\033[K");
	fflush(stderr);
	p->is_drawn = true;
}

void tool_progress_set(struct tool_progress *p, uint64_t done, uint64_t bytes)
{
	uint64_t now;

	p->done = done;
	p->bytes = bytes;
	if (!p->is_enabled)
		return;
	now = now_ns();
	if (p->is_timed && now - p->start_ns < TOOL_PROGRESS_DELAY_NS)
		return;
	if (p->done == p->total || now - p->last_draw_ns >= REDRAW_NS) {
		p->last_draw_ns = now;
		draw(p, now);
	}
}

void tool_progress_step(struct tool_progress *p)
{
	tool_progress_set(p, p->done + 1, p->bytes);
}

void tool_progress_clear(struct tool_progress *p)
{
	if (!p || !p->is_drawn)
		return;
	fprintf(stderr, "\r\033[K");
	fflush(stderr);
	p->is_drawn = false;
}

void tool_progress_end(struct tool_progress *p)
{
	tool_progress_clear(p);
	p->is_enabled = false;
}

void tool_verr(const char *fmt, va_list ap)
{
	char msg[8192], out[8192];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	if (n && msg[n - 1] == '\n')
		msg[n - 1] = '\0';       /* the line's own end, not a name's */
	adump_text_escape(out, sizeof(out), msg);
	fprintf(stderr, "%s\n", out);
}

const char *tool_text(const char *s)
{
	static _Thread_local char bufs[4][8192];
	static _Thread_local unsigned next;
	const unsigned char *p = (const unsigned char *)s;
	char *buf;

	if (!s)
		return "";
	while (*p >= 0x20 && *p != 0x7f)
		p++;
	if (!*p)
		return s;       /* nothing to escape */
	buf = bufs[next++ % 4];
	adump_text_escape(buf, sizeof(bufs[0]), s);
	return buf;
}

void tool_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tool_verr(fmt, ap);
	va_end(ap);
}

void tool_warn(struct tool_progress *p, const char *fmt, ...)
{
	va_list ap;

	tool_progress_clear(p);
	va_start(ap, fmt);
	tool_verr(fmt, ap);
	va_end(ap);
}

bool tool_has_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), m = strlen(suffix);

	return n >= m && strcmp(name + n - m, suffix) == 0;
}

static int push(struct tool_files *f, const char *path)
{
	char *copy;

	if (f->count == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		char **grown = realloc(f->paths, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		f->paths = grown;
		f->cap = cap;
	}
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	f->paths[f->count++] = copy;
	return 0;
}

static int add_dir(struct tool_files *f, const char *dir, bool recursive)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int ret = 0;

	if (!d)
		return -errno;
	while (ret == 0 && (e = readdir(d))) {
		struct stat st;
		char *path;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (asprintf(&path, "%s/%s", dir, e->d_name) < 0) {
			ret = -ENOMEM;
			break;
		}
		if (lstat(path, &st) == 0) {
			if (S_ISREG(st.st_mode))
				ret = push(f, path);
			else if (S_ISDIR(st.st_mode) && recursive)
				ret = add_dir(f, path, recursive);
			else if (!S_ISDIR(st.st_mode) && f->odd)
				ret = push(f->odd, path);
		}
		free(path);
	}
	closedir(d);
	return ret;
}

int tool_files_add(struct tool_files *f, const char *path, bool recursive)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return add_dir(f, path, recursive);
	return push(f, path);
}

static int compare_paths(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void tool_files_sort(struct tool_files *f)
{
	if (f->count)
		qsort(f->paths, f->count, sizeof(*f->paths), compare_paths);
}

void tool_files_free(struct tool_files *f)
{
	struct tool_files *odd = f->odd;

	for (size_t i = 0; i < f->count; i++)
		free(f->paths[i]);
	free(f->paths);
	*f = (struct tool_files){ .odd = odd };
	if (odd)
		tool_files_free(odd);
}

uint64_t tool_files_item_count(const struct tool_files *f)
{
	uint64_t count = 0;

	for (size_t i = 0; i < f->count; i++) {
		enum adump_reader_packed_file kind = adump_reader_packed_file_kind(f->paths[i]);
		struct adump_reader_packed *p;

		if (kind == ADUMP_PACKED_FILE_INDEX &&
		    adump_reader_packed_open(f->paths[i], &p) == 0) {
			count += adump_reader_packed_line_count(p);
			adump_reader_packed_close(p);
		} else if (kind != ADUMP_PACKED_FILE_SEGMENT) {
			count++;
		}
	}
	return count;
}
