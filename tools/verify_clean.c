/* SPDX-License-Identifier: Apache-2.0 */
/* `adump verify --clean` acts on whole captures only: segment bytes are removed when no index
 * of the capture names them, so every index of the capture must be read first, and each must
 * be readable. An argument that is part of a capture (an index, a segment, packed/) stands
 * for the whole capture; a capture whose indexes cannot all be read is not touched. And what
 * it cuts: the segment bytes past the last entry any index places in each segment (noted
 * while verify walks the indexes), an index's cut-short last line. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/reader.h"
#include "tools/verify_int.h"

static bool is_named_packed(const char *dir)
{
	const char *slash = strrchr(dir, '/');

	return !strcmp(slash ? slash + 1 : dir, "packed");
}

/* @path without its last component ("." for a bare name); caller frees. */
static char *parent_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

int verify_capture_add(struct tool_files *files, const char *arg)
{
	struct stat st;
	char *path = strdup(arg), *root = NULL;
	size_t len;
	int ret;

	if (!path)
		return -ENOMEM;
	/* "run/packed/" is the packed directory too. */
	for (len = strlen(path); len > 1 && path[len - 1] == '/'; len--)
		path[len - 1] = '\0';
	if (stat(path, &st) < 0) {
		ret = -errno;
		goto out;
	}
	if (S_ISDIR(st.st_mode) ? is_named_packed(path) :
	    adump_reader_packed_file_kind(path) != ADUMP_PACKED_FILE_NONE) {
		root = parent_of(path);
		if (root && !S_ISDIR(st.st_mode) && is_named_packed(root)) {
			char *up = parent_of(root);

			free(root);
			root = up;
		}
		if (!root) {
			ret = -ENOMEM;
			goto out;
		}
	}
	ret = tool_files_add(files, root ? root : path, true);
out:
	free(root);
	free(path);
	return ret;
}

struct file_id {
	dev_t dev;
	ino_t ino;
	size_t index;
};

static int compare_ids(const void *a, const void *b)
{
	const struct file_id *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

void verify_files_dedup(struct tool_files *files)
{
	struct file_id *ids = files->count ? calloc(files->count, sizeof(*ids)) : NULL;
	size_t n = 0, kept = 0;

	if (!ids)
		return;
	for (size_t i = 0; i < files->count; i++) {
		struct stat st;

		if (lstat(files->paths[i], &st) == 0)
			ids[n++] = (struct file_id){ st.st_dev, st.st_ino, i };
	}
	qsort(ids, n, sizeof(*ids), compare_ids);
	for (size_t i = 1; i < n; i++)
		if (ids[i].dev == ids[i - 1].dev && ids[i].ino == ids[i - 1].ino) {
			free(files->paths[ids[i].index]);
			files->paths[ids[i].index] = NULL;
		}
	for (size_t i = 0; i < files->count; i++)
		if (files->paths[i])
			files->paths[kept++] = files->paths[i];
	files->count = kept;
	free(ids);
}

/* Index @name of @dir: a regular file, opened without following a link or waiting on a
 * FIFO, read to its end. Return: NULL, or what is wrong. */
static const char *index_unreadable(const char *dir, const char *name, char *why, size_t cap)
{
	char path[8400], buf[65536];
	struct stat st;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (lstat(path, &st) < 0) {
		snprintf(why, cap, "%s", strerror(errno));
		return why;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, cap, "not a regular file (%s)", S_ISLNK(st.st_mode) ? "a symbolic link" :
			 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" :
			 "a device or socket");
		return why;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, cap, "%s", strerror(errno));
		return why;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		snprintf(why, cap, "reading it: %s", strerror(errno));
	close(fd);
	return n < 0 ? why : NULL;
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One packed directory: every index name in it readable, and an index for its segments. */
static long check_dir(const char *dir, long problems, char *msg, size_t cap)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t index_count = 0, segment_count = 0;
	char why[256];

	if (!d) {
		if (!problems)
			snprintf(msg, cap, "%s: %s", dir, strerror(errno));
		return 1;
	}
	long found = 0;

	while ((de = readdir(d))) {
		enum adump_reader_packed_file kind = adump_reader_packed_file_kind(de->d_name);

		if (kind == ADUMP_PACKED_FILE_SEGMENT)
			segment_count++;
		if (kind != ADUMP_PACKED_FILE_INDEX)
			continue;
		index_count++;
		if (index_unreadable(dir, de->d_name, why, sizeof(why))) {
			if (!problems && !found)
				snprintf(msg, cap, "%s/%s: index %s", dir, de->d_name, why);
			found++;
		}
	}
	closedir(d);
	if (segment_count && !index_count) {
		if (!problems && !found)
			snprintf(msg, cap, "%s: %zu segment(s) and no index: what they hold is "
				 "unknown", dir, segment_count);
		found++;
	}
	return found;
}

long verify_packed_dirs_check(const struct tool_files *files, char *msg, size_t cap)
{
	char **dirs = NULL;
	size_t dir_count = 0;
	long problems = 0;

	msg[0] = '\0';
	for (size_t i = 0; i < files->count; i++) {
		if (adump_reader_packed_file_kind(files->paths[i]) == ADUMP_PACKED_FILE_NONE)
			continue;
		char *dir = parent_of(files->paths[i]);
		char **grown = dir ? realloc(dirs, (dir_count + 1) * sizeof(*dirs)) : NULL;

		if (!grown) {
			free(dir);
			problems = -ENOMEM;
			goto out;
		}
		dirs = grown;
		dirs[dir_count++] = dir;
	}
	if (dir_count)
		qsort(dirs, dir_count, sizeof(*dirs), compare_strings);
	for (size_t i = 0; i < dir_count; i++)
		if (i == 0 || strcmp(dirs[i], dirs[i - 1]))
			problems += check_dir(dirs[i], problems, msg, cap);
out:
	for (size_t i = 0; i < dir_count; i++)
		free(dirs[i]);
	free(dirs);
	return problems;
}

static struct segment_end *segment_find(struct segment_ends *s, const struct stat *st)
{
	for (size_t i = 0; i < s->count; i++)
		if (s->items[i].dev == st->st_dev && s->items[i].ino == st->st_ino)
			return &s->items[i];
	return NULL;
}

int verify_segment_note(struct segment_ends *s, const char *dir,
			const struct adump_reader_packed_entry *e)
{
	char path[8400];
	struct segment_end *item;
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/%s", dir, e->segment) >= (int)sizeof(path) ||
	    stat(path, &st) < 0)
		return 0;       /* verify_entry() reports a missing segment */
	item = segment_find(s, &st);
	if (!item) {
		if (s->count == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 16;
			struct segment_end *grown = realloc(s->items, cap * sizeof(*grown));

			if (!grown)
				return -ENOMEM;
			s->items = grown;
			s->cap = cap;
		}
		item = &s->items[s->count++];
		*item = (struct segment_end){ .dev = st.st_dev, .ino = st.st_ino };
	}
	if (e->offset + e->length > item->end)
		item->end = e->offset + e->length;
	return 0;
}

/* Cut @path, a packed index, after its last newline: the line a crash cut short goes.
 * Return: 0 or -errno. */
int verify_trim_index(const char *path)
{
	char buf[4096];
	struct stat st;
	off_t end, keep = 0;
	int fd = open(path, O_RDWR | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	for (end = st.st_size; end > 0 && !keep;) {
		size_t n = end < (off_t)sizeof(buf) ? (size_t)end : sizeof(buf);
		ssize_t got = pread(fd, buf, n, end - (off_t)n);

		if (got != (ssize_t)n) {
			ret = got < 0 ? -errno : -EIO;
			goto out;
		}
		for (size_t i = n; i-- > 0;)
			if (buf[i] == '\n') {
				keep = end - (off_t)n + (off_t)i + 1;
				break;
			}
		end -= (off_t)n;
	}
	if (ftruncate(fd, keep) < 0)
		ret = -errno;
out:
	close(fd);
	return ret;
}

/* A segment's bytes past its last indexed entry: listed, and with @is_clean cut off (the
 * whole file removed when no entry lies in it). */
enum verdict verify_check_segment_tail(const char *path, struct segment_ends *ends,
				       bool is_clean, char *msg, size_t cap)
{
	struct segment_end *item;
	struct stat st;
	uint64_t end, extra;
	int ret;

	if (stat(path, &st) < 0) {
		snprintf(msg, cap, "%s: %s", path, strerror(errno));
		return VERDICT_BAD;
	}
	item = segment_find(ends, &st);
	end = item ? item->end : 0;
	if ((uint64_t)st.st_size <= end)
		return VERDICT_OK;
	extra = (uint64_t)st.st_size - end;
	if (!is_clean) {
		snprintf(msg, cap, "%s: %llu bytes after the last indexed entry (written, never "
			 "indexed: a capture cut short)", path, (unsigned long long)extra);
		return VERDICT_SEGMENT_TAIL;
	}
	ret = end ? truncate(path, (off_t)end) : unlink(path);
	if (ret < 0) {
		snprintf(msg, cap, "%s: cannot remove %llu unindexed bytes: %s", path,
			 (unsigned long long)extra, strerror(errno));
		return VERDICT_BAD;
	}
	snprintf(msg, cap, "%s: %llu unindexed bytes removed%s", path, (unsigned long long)extra,
		 end ? "" : " (the whole segment)");
	return VERDICT_REMOVED;
}
