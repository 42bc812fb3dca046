/* SPDX-License-Identifier: Apache-2.0 */
/* Packed captures: the index lines of <capture>/packed/w<k>.idx read as a list of entries,
 * and each entry (a byte range of a segment file) opened as a source read with pread and
 * checked against its CRC32C. The index line and the CRC are proto/packed.c's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/reader.h"

/* Segment descriptors the list keeps open; a capture rolls a segment per GiB by default, so
 * a few cover it, and more are opened again as needed. */
#define SEGMENT_CACHE 16
#define CHECK_STEP_BYTES ((size_t)1 << 20)

/* ---- one entry as a source ---- */

struct entry_ctx {
	int fd;                                 /* owned (a dup of the list's) */
	uint64_t base, length;
	uint32_t crc32c;
	char segment[256];
	char error[512];
};

static long entry_read_at(void *ctx, uint64_t offset, void *buf, size_t len)
{
	struct entry_ctx *e = ctx;
	ssize_t got;

	e->error[0] = '\0';
	if (offset >= e->length)
		return 0;
	if (len > e->length - offset)
		len = (size_t)(e->length - offset);
	if (len > (1u << 30))
		len = 1u << 30;
	do
		got = pread(e->fd, buf, len, (off_t)(e->base + offset));
	while (got < 0 && errno == EINTR);
	if (got < 0) {
		int ret = -errno;

		snprintf(e->error, sizeof(e->error), "reading segment %s: %s", e->segment,
			 strerror(-ret));
		return ret;
	}
	if (got == 0)
		snprintf(e->error, sizeof(e->error), "segment %s ends before the entry does",
			 e->segment);
	return (long)got;
}

static const char *entry_error(void *ctx)
{
	return ((struct entry_ctx *)ctx)->error;
}

static int entry_check(void *ctx, char *msg, size_t cap)
{
	struct entry_ctx *e = ctx;
	/* Most entries are small: a buffer of their size, not a step's, for each. */
	unsigned char *buf = malloc(e->length && e->length < CHECK_STEP_BYTES ? (size_t)e->length
								       : CHECK_STEP_BYTES);
	uint32_t crc = 0;
	int ret = 0;

	if (!buf) {
		snprintf(msg, cap, "out of memory for the CRC32C check");
		return -ENOMEM;
	}
	for (uint64_t done = 0; done < e->length;) {
		size_t want = e->length - done < CHECK_STEP_BYTES ? (size_t)(e->length - done)
								   : CHECK_STEP_BYTES;
		long got = entry_read_at(e, done, buf, want);

		if (got <= 0) {
			ret = got < 0 ? (int)got : -ADUMP_ERR_INCOMPLETE;
			snprintf(msg, cap, "%s", e->error);
			break;
		}
		crc = adump_crc32c(crc, buf, (size_t)got);
		done += (uint64_t)got;
	}
	free(buf);
	if (ret == 0 && crc != e->crc32c) {
		snprintf(msg, cap, "CRC32C mismatch: the index records %08x, the %llu bytes at "
				   "offset %llu of segment %s give %08x",
			 e->crc32c, (unsigned long long)e->length, (unsigned long long)e->base,
			 e->segment, crc);
		ret = -ADUMP_ERR_CORRUPT;
	}
	return ret;
}

static void entry_close(void *ctx)
{
	struct entry_ctx *e = ctx;

	close(e->fd);
	free(e);
}

static const struct adump_reader_source_ops entry_ops = {
	.read_at = entry_read_at,
	.close = entry_close,
};

static void entry_willneed(void *ctx, uint64_t offset, uint64_t len)
{
	struct entry_ctx *e = ctx;

	if (offset < e->length)
		(void)posix_fadvise(e->fd, (off_t)(e->base + offset),
				    (off_t)(len < e->length - offset ? len : e->length - offset),
				    POSIX_FADV_WILLNEED);
}

static const struct adump_reader_source_int_ops entry_int_ops = {
	.error = entry_error,
	.check = entry_check,
	.willneed = entry_willneed,
};

/* ---- the list ---- */

struct segment {
	char name[256];
	int fd;
	uint64_t bytes;
};

struct adump_reader_packed {
	char *dir;
	bool is_index_given;                    /* the user named the one index: open by path */
	char **index_names;                     /* sorted */
	size_t index_count;
	size_t index_pos;                       /* next index to open */
	FILE *f;                                /* the index being read */
	char *index_path;
	uint32_t line_number;
	char *line;
	size_t line_cap;
	uint64_t line_count;
	struct adump_reader_packed_entry entry;
	char name[4096];
	char segment_name[256];
	char message[256];
	struct segment segments[SEGMENT_CACHE];
	unsigned segment_count, segment_next;
};

enum adump_reader_packed_file adump_reader_packed_file_kind(const char *path)
{
	const char *base = strrchr(path, '/'), *p;

	base = base ? base + 1 : path;
	if (base[0] != 'w' || base[1] < '0' || base[1] > '9')
		return ADUMP_PACKED_FILE_NONE;
	for (p = base + 1; *p >= '0' && *p <= '9'; p++)
		;
	if (!strcmp(p, ".idx"))
		return ADUMP_PACKED_FILE_INDEX;
	/* A later session's files in the same directory carry its tag: w<k>.<tag>.idx and
	 * w<k>.<tag>-<n>.seg, the tag of lowercase letters and digits. */
	if (*p == '.') {
		const char *tag = ++p;

		while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
			p++;
		if (p == tag)
			return ADUMP_PACKED_FILE_NONE;
		if (!strcmp(p, ".idx"))
			return ADUMP_PACKED_FILE_INDEX;
	}
	if (*p++ != '-' || *p < '0' || *p > '9')
		return ADUMP_PACKED_FILE_NONE;
	while (*p >= '0' && *p <= '9')
		p++;
	return !strcmp(p, ".seg") ? ADUMP_PACKED_FILE_SEGMENT : ADUMP_PACKED_FILE_NONE;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_index(struct adump_reader_packed *p, const char *name)
{
	char **grown = realloc(p->index_names, (p->index_count + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	p->index_names = grown;
	p->index_names[p->index_count] = strdup(name);
	if (!p->index_names[p->index_count])
		return -ENOMEM;
	p->index_count++;
	return 0;
}

static int list_indexes(struct adump_reader_packed *p)
{
	DIR *d = opendir(p->dir);
	struct dirent *de;
	int ret = 0;

	if (!d)
		return -errno;
	while (ret == 0 && (de = readdir(d))) {
		int fd;

		if (adump_reader_packed_file_kind(de->d_name) != ADUMP_PACKED_FILE_INDEX)
			continue;
		/* An index that is not a regular file of this directory (a FIFO, a symlink
		 * out) holds no entries we may read: said once, and left out. */
		fd = adump_openat_beneath(dirfd(d), de->d_name);
		if (fd == -EINVAL || fd == -EISDIR || fd == -EXDEV) {
			adump_log(ADUMP_LOG_WARN, "packed", "%s/%s: %s; skipped", p->dir, de->d_name,
				  adump_open_strerror(fd));
			continue;
		}
		if (fd >= 0)
			close(fd);
		ret = add_index(p, de->d_name);
	}
	closedir(d);
	if (ret == 0 && p->index_count)
		qsort(p->index_names, p->index_count, sizeof(*p->index_names), compare_names);
	return ret;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Index @name of @p, a regular file: the user's own path when it named the index, else
 * opened beneath the packed directory, so a listed index never leads outside it. */
static int index_open(const struct adump_reader_packed *p, const char *name)
{
	char path[4400];

	if (!p->is_index_given)
		return adump_open_beneath(p->dir, name);
	if (snprintf(path, sizeof(path), "%s/%s", p->dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return adump_open_regular(path);
}

/* Lines in one index: its newlines, plus a last line without one. */
static int count_lines(struct adump_reader_packed *p, const char *name)
{
	char buf[65536];
	int fd, last = '\n';
	ssize_t n;

	fd = index_open(p, name);
	if (fd < 0)
		return fd;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			p->line_count += buf[i] == '\n';
		last = buf[n - 1];
	}
	close(fd);
	if (n < 0)
		return -EIO;
	p->line_count += last != '\n';
	return 0;
}

int adump_reader_packed_open(const char *path, struct adump_reader_packed **out)
{
	struct adump_reader_packed *p;
	struct stat st;
	int ret;

	if (!path || !out)
		return -ADUMP_ERR_CONFIG;
	if (stat(path, &st) < 0)
		return -errno;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (S_ISREG(st.st_mode)) {
		const char *slash = strrchr(path, '/');

		if (adump_reader_packed_file_kind(path) != ADUMP_PACKED_FILE_INDEX) {
			ret = -ADUMP_ERR_NOT_FOUND;
			goto err;
		}
		p->is_index_given = true;
		p->dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
		if (!p->dir || add_index(p, slash ? slash + 1 : path) < 0) {
			ret = -ENOMEM;
			goto err;
		}
	} else if (S_ISDIR(st.st_mode)) {
		/* A capture directory first: its packed/ folder is where the indexes are. */
		if (asprintf(&p->dir, "%s/packed", path) < 0) {
			p->dir = NULL;
			ret = -ENOMEM;
			goto err;
		}
		if (is_dir(p->dir)) {
			ret = list_indexes(p);
			if (ret < 0)
				goto err;
		}
		if (!p->index_count) {
			free(p->dir);
			p->dir = strdup(path);
			if (!p->dir) {
				ret = -ENOMEM;
				goto err;
			}
			ret = list_indexes(p);
			if (ret < 0)
				goto err;
		}
		if (!p->index_count) {
			ret = -ADUMP_ERR_NOT_FOUND;
			goto err;
		}
	} else {
		ret = -ADUMP_ERR_NOT_FOUND;
		goto err;
	}
	for (size_t i = 0; i < p->index_count; i++) {
		ret = count_lines(p, p->index_names[i]);
		if (ret < 0)
			goto err;
	}
	*out = p;
	return 0;
err:
	adump_reader_packed_close(p);
	return ret;
}

void adump_reader_packed_close(struct adump_reader_packed *p)
{
	if (!p)
		return;
	if (p->f)
		fclose(p->f);
	for (unsigned i = 0; i < p->segment_count; i++)
		close(p->segments[i].fd);
	for (size_t i = 0; i < p->index_count; i++)
		free(p->index_names[i]);
	free(p->index_names);
	free(p->index_path);
	free(p->line);
	free(p->dir);
	free(p);
}

const char *adump_reader_packed_dir(const struct adump_reader_packed *p)
{
	return p->dir;
}

uint64_t adump_reader_packed_line_count(const struct adump_reader_packed *p)
{
	return p->line_count;
}

/* Split a complete line (newline removed) into p->entry. Return: true when well formed;
 * otherwise p->message says what is wrong. */
static bool parse_line(struct adump_reader_packed *p, char *line)
{
	struct adump_reader_packed_entry *e = &p->entry;
	struct adump_packed_line l;
	const char *why = adump_packed_line_parse(line, &l);

	if (!why && strlen(l.name) >= sizeof(p->name))
		why = "bad file name";
	if (!why && strlen(l.segment) >= sizeof(p->segment_name))
		why = "bad segment name";
	if (why) {
		snprintf(p->message, sizeof(p->message), "%s", why);
		return false;
	}
	strcpy(p->name, l.name);
	strcpy(p->segment_name, l.segment);
	e->offset = l.offset;
	e->length = l.length;
	e->crc32c = l.crc32c;
	return true;
}

int adump_reader_packed_next(struct adump_reader_packed *p,
			     const struct adump_reader_packed_entry **entry)
{
	struct adump_reader_packed_entry *e = &p->entry;
	ssize_t n;
	int fd;

	if (!p || !entry)
		return -ADUMP_ERR_CONFIG;
	for (;;) {
		if (!p->f) {
			if (p->index_pos == p->index_count)
				return 0;
			free(p->index_path);
			if (asprintf(&p->index_path, "%s/%s", p->dir, p->index_names[p->index_pos++]) < 0) {
				p->index_path = NULL;
				return -ENOMEM;
			}
			fd = index_open(p, p->index_names[p->index_pos - 1]);
			if (fd < 0)
				return fd;
			p->f = fdopen(fd, "re");
			if (!p->f) {
				int ret = -errno;

				close(fd);
				return ret;
			}
			p->line_number = 0;
		}
		errno = 0;
		n = getline(&p->line, &p->line_cap, p->f);
		if (n < 0) {
			int ret = errno ? -errno : 0;

			fclose(p->f);
			p->f = NULL;
			if (ret < 0)
				return ret;
			continue;
		}
		break;
	}
	p->line_number++;
	memset(e, 0, sizeof(*e));
	p->name[0] = p->segment_name[0] = p->message[0] = '\0';
	e->name = p->name;
	e->segment = p->segment_name;
	e->message = p->message;
	e->index_path = p->index_path;
	e->line = p->line_number;
	if (p->line[n - 1] != '\n') {
		/* Lines go out whole and data before them, so only a crash leaves this. */
		e->status = ADUMP_PACKED_LEFTOVER;
		snprintf(p->message, sizeof(p->message),
			 "last line cut short (a capture that did not stop cleanly); not an entry");
	} else {
		p->line[n - 1] = '\0';
		if (strlen(p->line) != (size_t)n - 1) {
			e->status = ADUMP_PACKED_MALFORMED;
			snprintf(p->message, sizeof(p->message), "NUL byte in the line");
		} else if (parse_line(p, p->line)) {
			e->status = ADUMP_PACKED_ENTRY;
		} else {
			e->status = ADUMP_PACKED_MALFORMED;
			p->name[0] = p->segment_name[0] = '\0';
		}
	}
	*entry = e;
	return 1;
}

/* An open descriptor of segment @name and its size, from the cache or opened now. */
static int segment_get(struct adump_reader_packed *p, const char *name, struct segment **out)
{
	struct segment *s;
	struct stat st;
	int fd;

	for (unsigned i = 0; i < p->segment_count; i++)
		if (!strcmp(p->segments[i].name, name)) {
			*out = &p->segments[i];
			return 0;
		}
	/* The segment's name is the index's: it must name a file of the packed directory. */
	fd = adump_open_beneath(p->dir, name);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	if (p->segment_count < SEGMENT_CACHE) {
		s = &p->segments[p->segment_count++];
	} else {
		s = &p->segments[p->segment_next];
		p->segment_next = (p->segment_next + 1) % SEGMENT_CACHE;
		close(s->fd);
	}
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->fd = fd;
	s->bytes = (uint64_t)st.st_size;
	*out = s;
	return 0;
}

int adump_reader_open_packed(struct adump_reader *r, struct adump_reader_packed *p,
			     const struct adump_reader_packed_entry *entry, bool is_checked)
{
	struct adump_reader_source *src;
	struct entry_ctx *e = NULL;
	struct segment *seg = NULL;
	char msg[512], *name;
	int ret;

	if (!r)
		return -ADUMP_ERR_CONFIG;
	if (!p || !entry || entry->status != ADUMP_PACKED_ENTRY)
		return adump_reader_fail_as(r, entry ? entry->name : NULL, -ADUMP_ERR_CONFIG,
					    "not a packed entry");
	if (asprintf(&name, "%s/%s", p->dir, entry->name) < 0)
		return adump_reader_fail_as(r, entry->name, -ENOMEM, "out of memory");
	ret = segment_get(p, entry->segment, &seg);
	if (ret < 0) {
		adump_reader_fail_as(r, name, ret, "segment %s: %s", entry->segment,
				     adump_open_strerror(ret));
		goto out;
	}
	if (entry->offset > seg->bytes || entry->length > seg->bytes - entry->offset) {
		ret = adump_reader_fail_as(r, name, -ADUMP_ERR_CORRUPT,
					   "index line %s:%u ends at byte %llu, past the end of "
					   "segment %s (%llu bytes)",
					   entry->index_path, entry->line,
					   (unsigned long long)(entry->offset + entry->length),
					   entry->segment, (unsigned long long)seg->bytes);
		goto out;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		ret = adump_reader_fail_as(r, name, -ENOMEM, "out of memory");
		goto out;
	}
	/* The source owns a descriptor of its own, so it may outlive the list's cache. */
	e->fd = fcntl(seg->fd, F_DUPFD_CLOEXEC, 0);
	if (e->fd < 0) {
		ret = -errno;
		free(e);
		adump_reader_fail_as(r, name, ret, "%s", adump_strerror(ret));
		goto out;
	}
	e->base = entry->offset;
	e->length = entry->length;
	e->crc32c = entry->crc32c;
	snprintf(e->segment, sizeof(e->segment), "%s", entry->segment);
	if (is_checked) {
		msg[0] = '\0';
		ret = entry_check(e, msg, sizeof(msg));
		if (ret < 0) {
			entry_close(e);
			adump_reader_fail_as(r, name, ret, "%s", msg);
			goto out;
		}
	}
	ret = adump_reader_source_create(&entry_ops, e, e->length, &src);
	if (ret < 0) {
		entry_close(e);
		adump_reader_fail_as(r, name, ret, "%s", adump_strerror(ret));
		goto out;
	}
	src->int_ops = &entry_int_ops;
	ret = adump_reader_open_source(r, src, name);
out:
	free(name);
	return ret;
}
