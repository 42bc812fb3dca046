/* SPDX-License-Identifier: Apache-2.0 */
/* msprobe's layout, an entry opened as a dump (reader/msprobe.c loads dump.json): its
 * tensors located in their .pt files (pt_read.c, opened beneath the capture), read through a
 * source that strings the located ranges together so the compare engine streams them as it
 * streams a CANN dump's payloads; and `adump verify` of a msprobe capture (every entry's .pt
 * files read and checked against what dump.json says of them). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reader/msprobe.h"
#include "reader/reader.h"

struct span {
	char *path;                     /* in messages */
	char *dir, *rel;                /* opened as adump_open_beneath(dir, rel) */
	uint64_t at;                    /* virtual offset of the tensor's first byte */
	uint64_t file_offset, bytes;
	int fd;                         /* -1 until first read */
};

struct spans {
	struct span *s;
	uint32_t count;
	char error[512];
};

static long spans_read_at(void *ctx, uint64_t offset, void *buf, size_t len)
{
	struct spans *sp = ctx;
	size_t done = 0;

	for (uint32_t i = 0; i < sp->count && done < len; i++) {
		struct span *s = &sp->s[i];
		uint64_t pos = offset + done;

		if (pos < s->at || pos >= s->at + s->bytes)
			continue;
		if (s->fd < 0) {
			int fd = adump_open_beneath(s->dir, s->rel);

			if (fd < 0) {
				snprintf(sp->error, sizeof(sp->error), "%s: %s", s->path,
					 adump_open_strerror(fd));
				return fd;
			}
			s->fd = fd;
		}
		while (done < len && pos < s->at + s->bytes) {
			size_t want = len - done;
			ssize_t n;

			if (want > s->at + s->bytes - pos)
				want = (size_t)(s->at + s->bytes - pos);
			n = pread(s->fd, (char *)buf + done, want,
				  (off_t)(s->file_offset + pos - s->at));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				snprintf(sp->error, sizeof(sp->error), "%s: %s", s->path,
					 n < 0 ? strerror(errno) : "cut short since it was opened");
				return n < 0 ? -errno : -ADUMP_ERR_INCOMPLETE;
			}
			done += (size_t)n;
			pos += (uint64_t)n;
		}
	}
	return (long)done;
}

static void spans_close(void *ctx)
{
	struct spans *sp = ctx;

	for (uint32_t i = 0; i < sp->count; i++) {
		if (sp->s[i].fd >= 0)
			close(sp->s[i].fd);
		free(sp->s[i].path);
		free(sp->s[i].dir);
		free(sp->s[i].rel);
	}
	free(sp->s);
	free(sp);
}

static const char *spans_error(void *ctx)
{
	return ((struct spans *)ctx)->error;
}

static const struct adump_reader_source_ops spans_ops = {
	.read_at = spans_read_at,
	.close = spans_close,
};

static const struct adump_reader_source_int_ops spans_int_ops = {
	.error = spans_error,
};

static void dims_text(const uint64_t *dims, uint32_t n, char *buf, size_t cap)
{
	size_t len = (size_t)snprintf(buf, cap, "[");

	for (uint32_t d = 0; d < n && len < cap; d++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%llu", d ? "," : "",
					(unsigned long long)dims[d]);
	if (len < cap)
		snprintf(buf + len, cap - len, "]");
}

static bool dims_equal(const uint64_t *a, uint32_t na, const uint64_t *b, uint32_t nb)
{
	return na == nb && (!na || !memcmp(a, b, na * sizeof(*a)));
}

int adump_msprobe_open(struct adump_reader *r, const struct adump_msprobe *m, uint32_t e,
		       bool is_checked)
{
	const struct adump_msprobe_entry *en = &m->entries[e];
	struct adump_reader_tensor *tensors = calloc(en->count ? en->count : 1, sizeof(*tensors));
	struct spans *sp = calloc(1, sizeof(*sp));
	struct adump_reader_source *src = NULL;
	char name[PATH_MAX + 1024], path[PATH_MAX], rel[PATH_MAX], msg[1024];
	uint64_t at = 0;
	int ret = 0;

	snprintf(name, sizeof(name), "%s:%s", m->json_path, en->name);
	if (!tensors || !sp || !(sp->s = calloc(en->count ? en->count : 1, sizeof(*sp->s)))) {
		ret = adump_reader_fail_as(r, name, -ENOMEM, "out of memory");
		goto err;
	}
	for (uint32_t i = 0; i < en->count; i++) {
		const struct adump_msprobe_tensor *t = &m->tensors[en->first + i];
		struct adump_reader_tensor *rt = &tensors[i];
		struct adump_pt_info info;

		if (!t->data_name) {
			ret = adump_reader_fail_as(r, name, -ADUMP_ERR_NOT_FOUND, "%s has no data_name: "
						   "a statistics dump (task \"%s\")", t->arg,
						   m->task);
			goto err;
		}
		adump_msprobe_pt_path(m, t, path, sizeof(path));
		adump_msprobe_pt_rel(t, rel, sizeof(rel));
		ret = adump_pt_read_beneath(m->dir, rel, path, is_checked, &info, msg, sizeof(msg));
		if (ret < 0) {
			ret = adump_reader_fail_as(r, name, ret, "%s: %s", t->arg, msg);
			goto err;
		}
		if ((t->dtype >= 0 && t->dtype != info.dtype) ||
		    !dims_equal(t->dims, t->dim_count, info.dims, info.dim_count)) {
			char a[ADUMP_MAX_DIMS * 22 + 3], b[ADUMP_MAX_DIMS * 22 + 3];

			dims_text(t->dims, t->dim_count, a, sizeof(a));
			dims_text(info.dims, info.dim_count, b, sizeof(b));
			ret = adump_reader_fail_as(r, name, -ADUMP_ERR_CORRUPT, "%s: dump.json says "
						   "%s %s, %s holds %s %s", t->arg,
						   t->dtype_text ? t->dtype_text : "(no dtype)", a,
						   path, adump_dtype_name(info.dtype) ?
						   adump_dtype_name(info.dtype) : "?", b);
			goto err;
		}
		rt->info.kind = t->kind;
		rt->info.dtype = info.dtype;
		rt->info.format = ADUMP_FORMAT_ND;
		rt->info.dim_count = info.dim_count;
		memcpy(rt->info.dims, info.dims, sizeof(info.dims));
		rt->info.bytes = info.bytes;
		rt->index = t->index;
		rt->offset = at;
		sp->s[i] = (struct span){ .path = strdup(path), .dir = strdup(m->dir),
					  .rel = strdup(rel), .at = at,
					  .file_offset = info.offset, .bytes = info.bytes,
					  .fd = -1 };
		sp->count = i + 1;
		if (!sp->s[i].path || !sp->s[i].dir || !sp->s[i].rel) {
			ret = adump_reader_fail_as(r, name, -ENOMEM, "out of memory");
			goto err;
		}
		at += info.bytes;
	}
	ret = adump_reader_source_create(&spans_ops, sp, at, &src);
	if (ret < 0) {
		ret = adump_reader_fail_as(r, name, ret, "out of memory");
		goto err;
	}
	sp = NULL;
	src->int_ops = &spans_int_ops;
	ret = adump_reader_open_given(r, src, name, en->name, tensors, en->count);
	if (ret < 0)
		adump_reader_fail_as(r, name, ret, "out of memory");
	free(tensors);
	return ret;
err:
	if (sp) {
		if (!sp->s)
			sp->count = 0;
		spans_close(sp);
	}
	free(tensors);
	return ret;
}

long adump_msprobe_verify(const char *dir,
			  void (*fn)(void *arg, const char *file, const char *message), void *arg,
			  uint64_t *problem_count)
{
	struct adump_msprobe *m;
	char msg[2048], path[PATH_MAX], rel[PATH_MAX], text[PATH_MAX + 2048];
	uint64_t problems = 0;
	long checked = 0;
	int ret;

	msg[0] = '\0';
	ret = adump_msprobe_load(dir, &m, msg, sizeof(msg));
	if (ret < 0) {
		if (ret == -ENOMEM && !msg[0])
			return ret;
		if (fn)
			fn(arg, dir, msg[0] ? msg : adump_strerror(ret));
		if (problem_count)
			*problem_count = 1;
		return 0;
	}
	for (uint32_t e = 0; e < m->entry_count; e++) {
		const struct adump_msprobe_entry *en = &m->entries[e];

		for (uint32_t i = 0; i < en->count; i++) {
			const struct adump_msprobe_tensor *t = &m->tensors[en->first + i];
			struct adump_pt_info info;

			if (!t->data_name)
				continue;
			adump_msprobe_pt_path(m, t, path, sizeof(path));
			adump_msprobe_pt_rel(t, rel, sizeof(rel));
			checked++;
			ret = adump_pt_read_beneath(m->dir, rel, path, true, &info, msg,
						    sizeof(msg));
			if (ret == -ENOMEM) {
				adump_msprobe_free(m);
				return ret;
			}
			if (ret < 0) {
				snprintf(text, sizeof(text), "%s %s: %s", en->name, t->arg, msg);
			} else if ((t->dtype >= 0 && t->dtype != info.dtype) ||
				   !dims_equal(t->dims, t->dim_count, info.dims, info.dim_count)) {
				char a[ADUMP_MAX_DIMS * 22 + 3], b[ADUMP_MAX_DIMS * 22 + 3];

				dims_text(t->dims, t->dim_count, a, sizeof(a));
				dims_text(info.dims, info.dim_count, b, sizeof(b));
				snprintf(text, sizeof(text), "%s: %s %s: dump.json says %s %s, the "
					 "file holds %s %s", path, en->name, t->arg,
					 t->dtype_text ? t->dtype_text : "(no dtype)", a,
					 adump_dtype_name(info.dtype) ? adump_dtype_name(info.dtype)
								      : "?", b);
				ret = -ADUMP_ERR_CORRUPT;
			}
			if (ret < 0) {
				problems++;
				if (fn)
					fn(arg, path, text);
			}
		}
	}
	adump_msprobe_free(m);
	if (problem_count)
		*problem_count = problems;
	return checked;
}
