/* SPDX-License-Identifier: Apache-2.0 */
/* The chunk assembler: rebuilds whole dump files from callback chunks arriving in any order.
 * Each file keeps a sorted array of disjoint byte segments; a chunk that continues the segment
 * before it extends that segment, so in-order delivery ends as one buffer handed back without
 * a copy. Memory is proportional to the bytes received, never to the offsets claimed. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "reader/reader.h"

#define ASM_DEFAULT_FILE_MAX_BYTES ((uint64_t)4 << 30)
#define ASM_DEFAULT_TOTAL_MAX_BYTES ((uint64_t)1 << 30)
#define ASM_DEFAULT_FILE_MAX_COUNT 4096u
#define ASM_BUCKET_COUNT 1024u
/* Bookkeeping charged against the total limit per segment, so a flood of 1-byte chunks
 * cannot hide its real cost. */
#define ASM_SEGMENT_OVERHEAD_BYTES 64u

struct segment {
	uint64_t start;
	uint64_t len;
	uint64_t cap;
	unsigned char *data;
};

struct asm_file {
	struct asm_file *next;          /* hash chain */
	char *name;
	struct segment *segs;           /* sorted by start, disjoint */
	uint32_t seg_count;
	uint32_t seg_cap;
	uint64_t received_bytes;
	uint64_t held_bytes;            /* charged against total_max_bytes */
	uint64_t append_pos;            /* end of the previous chunk fed */
	uint64_t final_bytes;           /* end of the last chunk, once it has come */
	bool has_last;
};

struct adump_asm {
	pthread_mutex_t lock;
	struct adump_asm_config cfg;
	struct asm_file *buckets[ASM_BUCKET_COUNT];
	uint32_t file_count;
	uint64_t held_bytes;
	char error[512];
};

static int asm_fail(struct adump_asm *a, int ret, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int asm_fail(struct adump_asm *a, int ret, const char *name, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(a->error, sizeof(a->error), "%s: ", name ? name : "(null)");
	if (n < 0 || (size_t)n >= sizeof(a->error))
		return ret;
	va_start(ap, fmt);
	vsnprintf(a->error + n, sizeof(a->error) - (size_t)n, fmt, ap);
	va_end(ap);
	return ret;
}

static uint32_t name_hash(const char *name)
{
	return (uint32_t)(adump_fnv1a64(name, strlen(name)) % ASM_BUCKET_COUNT);
}

int adump_asm_create(const struct adump_asm_config *cfg, struct adump_asm **out)
{
	struct adump_asm *a;

	if (!out)
		return -ADUMP_ERR_CONFIG;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	if (cfg)
		a->cfg = *cfg;
	if (!a->cfg.file_max_bytes)
		a->cfg.file_max_bytes = ASM_DEFAULT_FILE_MAX_BYTES;
	if (!a->cfg.total_max_bytes)
		a->cfg.total_max_bytes = ASM_DEFAULT_TOTAL_MAX_BYTES;
	if (!a->cfg.file_max_count)
		a->cfg.file_max_count = ASM_DEFAULT_FILE_MAX_COUNT;
	if (pthread_mutex_init(&a->lock, NULL)) {
		free(a);
		return -ENOMEM;
	}
	*out = a;
	return 0;
}

static void file_free(struct asm_file *f)
{
	for (uint32_t i = 0; i < f->seg_count; i++)
		free(f->segs[i].data);
	free(f->segs);
	free(f->name);
	free(f);
}

void adump_asm_destroy(struct adump_asm *a)
{
	if (!a)
		return;
	for (uint32_t b = 0; b < ASM_BUCKET_COUNT; b++) {
		while (a->buckets[b]) {
			struct asm_file *f = a->buckets[b];

			a->buckets[b] = f->next;
			file_free(f);
		}
	}
	pthread_mutex_destroy(&a->lock);
	free(a);
}

static struct asm_file **file_slot(struct adump_asm *a, const char *name)
{
	struct asm_file **slot = &a->buckets[name_hash(name)];

	while (*slot && strcmp((*slot)->name, name))
		slot = &(*slot)->next;
	return slot;
}

static void file_remove(struct adump_asm *a, struct asm_file **slot)
{
	struct asm_file *f = *slot;

	*slot = f->next;
	a->held_bytes -= f->held_bytes;
	a->file_count--;
	file_free(f);
}

static bool file_is_complete(const struct asm_file *f)
{
	return f->has_last && f->received_bytes == f->final_bytes;
}

/* Index of the first segment that ends after @pos (seg_count when none does). */
static uint32_t first_ending_after(const struct asm_file *f, uint64_t pos)
{
	uint32_t lo = 0, hi = f->seg_count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (f->segs[mid].start + f->segs[mid].len <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int charge(struct adump_asm *a, struct asm_file *f, uint64_t bytes)
{
	if (bytes > a->cfg.total_max_bytes - a->held_bytes)
		return -ADUMP_ERR_TOO_BIG;
	a->held_bytes += bytes;
	f->held_bytes += bytes;
	return 0;
}

static void refund(struct adump_asm *a, struct asm_file *f, uint64_t bytes)
{
	a->held_bytes -= bytes;
	f->held_bytes -= bytes;
}

/* Append @len bytes to segment @i, growing its buffer geometrically within the limits. */
static int segment_extend(struct adump_asm *a, struct asm_file *f, uint32_t i, const void *data,
			  uint64_t len)
{
	struct segment *s = &f->segs[i];
	uint64_t need = s->len + len, cap = s->cap;
	unsigned char *grown;

	if (need > cap) {
		cap = cap * 2 > need ? cap * 2 : need;
		if (cap > a->cfg.file_max_bytes)
			cap = need;
		if (cap - s->cap > a->cfg.total_max_bytes - a->held_bytes)
			cap = need;
		if (charge(a, f, cap - s->cap) < 0)
			return -ADUMP_ERR_TOO_BIG;
		grown = realloc(s->data, (size_t)cap);
		if (!grown) {
			refund(a, f, cap - s->cap);
			return -ENOMEM;
		}
		s->data = grown;
		s->cap = cap;
	}
	memcpy(s->data + s->len, data, (size_t)len);
	s->len = need;
	return 0;
}

/* Merge segment @i + 1 into segment @i when they touch. */
static int segment_merge_next(struct adump_asm *a, struct asm_file *f, uint32_t i)
{
	struct segment *s = &f->segs[i], *next;
	int ret;

	if (i + 1 >= f->seg_count || s->start + s->len != f->segs[i + 1].start)
		return 0;
	next = &f->segs[i + 1];
	ret = segment_extend(a, f, i, next->data, next->len);
	if (ret < 0)
		return 0;       /* two touching segments are still correct, only less compact */
	free(next->data);
	refund(a, f, next->cap + ASM_SEGMENT_OVERHEAD_BYTES);
	memmove(next, next + 1, (f->seg_count - i - 2) * sizeof(*next));
	f->seg_count--;
	return 0;
}

static int segment_insert(struct adump_asm *a, struct asm_file *f, uint32_t i, uint64_t start,
			  const void *data, uint64_t len)
{
	struct segment *s;
	int ret;

	if (f->seg_count == f->seg_cap) {
		uint32_t cap = f->seg_cap ? f->seg_cap * 2 : 4;
		struct segment *grown;

		if (f->seg_cap > UINT32_MAX / 4)
			return -ADUMP_ERR_TOO_BIG;
		grown = realloc(f->segs, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		f->segs = grown;
		f->seg_cap = cap;
	}
	ret = charge(a, f, len + ASM_SEGMENT_OVERHEAD_BYTES);
	if (ret < 0)
		return ret;
	s = &f->segs[i];
	memmove(s + 1, s, (f->seg_count - i) * sizeof(*s));
	s->data = malloc((size_t)len);
	if (!s->data) {
		memmove(s, s + 1, (f->seg_count - i) * sizeof(*s));
		refund(a, f, len + ASM_SEGMENT_OVERHEAD_BYTES);
		return -ENOMEM;
	}
	memcpy(s->data, data, (size_t)len);
	s->start = start;
	s->len = len;
	s->cap = len;
	f->seg_count++;
	return 0;
}

static int feed_locked(struct adump_asm *a, const char *name, int64_t offset, const void *data,
		       size_t len, bool is_last)
{
	struct asm_file **slot, *f;
	bool is_new = false;
	uint64_t start, end;
	uint32_t i;
	int ret;

	if (!name || (!data && len))
		return asm_fail(a, -ADUMP_ERR_CONFIG, name, "chunk without a name or data");
	if (offset < 0 && offset != ADUMP_ASM_APPEND)
		return asm_fail(a, -ADUMP_ERR_CORRUPT, name, "negative offset %lld",
				(long long)offset);
	slot = file_slot(a, name);
	f = *slot;
	if (!f) {
		if (a->file_count >= a->cfg.file_max_count)
			return asm_fail(a, -ADUMP_ERR_TOO_BIG, name,
					"%u incomplete files held already (limit)", a->file_count);
		f = calloc(1, sizeof(*f));
		if (!f || !(f->name = strdup(name))) {
			free(f);
			return asm_fail(a, -ENOMEM, name, "out of memory");
		}
		*slot = f;
		a->file_count++;
		is_new = true;
	}
	if (file_is_complete(f)) {
		ret = asm_fail(a, -ADUMP_ERR_CORRUPT, name,
			       "chunk for a file that is complete already (%llu bytes)",
			       (unsigned long long)f->final_bytes);
		goto out;
	}
	start = offset == ADUMP_ASM_APPEND ? f->append_pos : (uint64_t)offset;
	if (start > a->cfg.file_max_bytes || len > a->cfg.file_max_bytes - start) {
		ret = asm_fail(a, -ADUMP_ERR_TOO_BIG, name,
			       "chunk at offset %llu + %zu bytes ends beyond the %llu-byte file limit",
			       (unsigned long long)start, len,
			       (unsigned long long)a->cfg.file_max_bytes);
		goto out;
	}
	end = start + len;
	if (f->has_last && end > f->final_bytes) {
		ret = asm_fail(a, -ADUMP_ERR_CORRUPT, name,
			       "chunk [%llu, %llu) lies beyond the last chunk, which ended at %llu",
			       (unsigned long long)start, (unsigned long long)end,
			       (unsigned long long)f->final_bytes);
		goto out;
	}
	if (is_last && f->has_last) {
		ret = asm_fail(a, -ADUMP_ERR_CORRUPT, name,
			       "second last chunk (the first ended the file at %llu)",
			       (unsigned long long)f->final_bytes);
		goto out;
	}
	if (is_last && f->seg_count) {
		const struct segment *tail = &f->segs[f->seg_count - 1];

		if (tail->start + tail->len > end) {
			ret = asm_fail(a, -ADUMP_ERR_CORRUPT, name,
				       "last chunk ends at %llu but bytes up to %llu arrived already",
				       (unsigned long long)end,
				       (unsigned long long)(tail->start + tail->len));
			goto out;
		}
	}
	i = first_ending_after(f, start);
	if (len && i < f->seg_count && f->segs[i].start < end) {
		const struct segment *s = &f->segs[i];
		bool is_dup = s->start <= start && s->start + s->len >= end;

		ret = asm_fail(a, -ADUMP_ERR_CORRUPT, name,
			       "chunk [%llu, %llu) %s bytes [%llu, %llu) already received",
			       (unsigned long long)start, (unsigned long long)end,
			       is_dup ? "duplicates" : "overlaps", (unsigned long long)s->start,
			       (unsigned long long)(s->start + s->len));
		goto out;
	}
	if (len) {
		/* Segment i is the first one after the chunk; i - 1 may end right where it starts. */
		if (i > 0 && f->segs[i - 1].start + f->segs[i - 1].len == start) {
			ret = segment_extend(a, f, i - 1, data, len);
			if (ret == 0)
				segment_merge_next(a, f, i - 1);
		} else {
			ret = segment_insert(a, f, i, start, data, len);
			if (ret == 0)
				segment_merge_next(a, f, i);
		}
		if (ret < 0) {
			ret = asm_fail(a, ret, name,
				       ret == -ENOMEM ? "out of memory for a %zu-byte chunk"
						      : "a %zu-byte chunk would exceed the buffered "
							"bytes limit",
				       len);
			goto out;
		}
	}
	f->received_bytes += len;
	f->append_pos = end;
	if (is_last) {
		f->has_last = true;
		f->final_bytes = end;
	}
	return file_is_complete(f) ? 1 : 0;
out:
	if (is_new)
		file_remove(a, file_slot(a, name));
	return ret;
}

int adump_asm_feed(struct adump_asm *a, const char *name, int64_t offset, const void *data,
		   size_t len, bool is_last)
{
	int ret;

	if (!a)
		return -ADUMP_ERR_CONFIG;
	pthread_mutex_lock(&a->lock);
	ret = feed_locked(a, name, offset, data, len, is_last);
	pthread_mutex_unlock(&a->lock);
	return ret;
}

int adump_asm_feed_chunk(struct adump_asm *a, const struct adump_chunk *chunk)
{
	int64_t offset;

	if (!chunk)
		return -ADUMP_ERR_CONFIG;
	if (chunk->offset == UINT64_MAX)
		offset = ADUMP_ASM_APPEND;
	else if (chunk->offset > INT64_MAX)
		offset = INT64_MIN;     /* refused below as a negative offset */
	else
		offset = (int64_t)chunk->offset;
	return adump_asm_feed(a, chunk->file_name, offset, chunk->data, chunk->len,
			      chunk->is_last);
}

static int take_locked(struct adump_asm *a, const char *name, void **data, size_t *len)
{
	struct asm_file **slot = file_slot(a, name), *f = *slot;
	unsigned char *buf;

	if (!f)
		return asm_fail(a, -ADUMP_ERR_NOT_FOUND, name, "no such file");
	if (!file_is_complete(f))
		return asm_fail(a, -ADUMP_ERR_INCOMPLETE, name, "file is not complete yet");
	if (f->final_bytes > SIZE_MAX - 1)
		return asm_fail(a, -ADUMP_ERR_TOO_BIG, name, "file too large for memory");
	if (f->seg_count == 1) {
		/* Complete and a single segment: it starts at 0 and is the whole file. */
		buf = f->segs[0].data;
		f->segs[0].data = NULL;
	} else {
		buf = malloc(f->final_bytes ? (size_t)f->final_bytes : 1);
		if (!buf)
			return asm_fail(a, -ENOMEM, name, "out of memory");
		for (uint32_t i = 0; i < f->seg_count; i++)
			memcpy(buf + f->segs[i].start, f->segs[i].data, (size_t)f->segs[i].len);
	}
	*data = buf;
	*len = (size_t)f->final_bytes;
	file_remove(a, slot);
	return 0;
}

int adump_asm_take(struct adump_asm *a, const char *name, void **data, size_t *len)
{
	int ret;

	if (!a || !name || !data || !len)
		return -ADUMP_ERR_CONFIG;
	pthread_mutex_lock(&a->lock);
	ret = take_locked(a, name, data, len);
	pthread_mutex_unlock(&a->lock);
	return ret;
}

int adump_asm_take_reader(struct adump_asm *a, const char *name, struct adump_reader *r)
{
	struct adump_reader_source *src;
	void *data;
	size_t len;
	int ret;

	if (!r)
		return -ADUMP_ERR_CONFIG;
	ret = adump_asm_take(a, name, &data, &len);
	if (ret < 0)
		return ret;
	ret = adump_reader_source_open_mem(data, len, true, &src);
	if (ret < 0) {
		free(data);
		return ret;
	}
	return adump_reader_open_source(r, src, name);
}

static int finish_locked(struct adump_asm *a, const char *name)
{
	struct asm_file **slot = file_slot(a, name), *f = *slot;
	uint64_t pos = 0;
	int ret;

	if (!f)
		return asm_fail(a, -ADUMP_ERR_NOT_FOUND, name, "no such file");
	if (file_is_complete(f))
		return 0;
	if (!f->has_last) {
		ret = asm_fail(a, -ADUMP_ERR_INCOMPLETE, name,
			       "incomplete: the last chunk never came (%llu bytes received)",
			       (unsigned long long)f->received_bytes);
		goto out;
	}
	for (uint32_t i = 0; i < f->seg_count && f->segs[i].start == pos; i++)
		pos = f->segs[i].start + f->segs[i].len;
	{
		uint32_t i = first_ending_after(f, pos);
		uint64_t hole_end = i < f->seg_count ? f->segs[i].start : f->final_bytes;

		ret = asm_fail(a, -ADUMP_ERR_INCOMPLETE, name,
			       "incomplete: bytes [%llu, %llu) of %llu never arrived",
			       (unsigned long long)pos, (unsigned long long)hole_end,
			       (unsigned long long)f->final_bytes);
	}
out:
	file_remove(a, slot);
	return ret;
}

int adump_asm_finish(struct adump_asm *a, const char *name)
{
	int ret;

	if (!a || !name)
		return -ADUMP_ERR_CONFIG;
	pthread_mutex_lock(&a->lock);
	ret = finish_locked(a, name);
	pthread_mutex_unlock(&a->lock);
	return ret;
}

uint32_t adump_asm_file_count(struct adump_asm *a)
{
	uint32_t n;

	pthread_mutex_lock(&a->lock);
	n = a->file_count;
	pthread_mutex_unlock(&a->lock);
	return n;
}

uint64_t adump_asm_buffered_bytes(struct adump_asm *a)
{
	uint64_t n;

	pthread_mutex_lock(&a->lock);
	n = a->held_bytes;
	pthread_mutex_unlock(&a->lock);
	return n;
}

const char *adump_asm_error(struct adump_asm *a, char *buf, size_t cap)
{
	if (!buf || !cap)
		return buf;
	pthread_mutex_lock(&a->lock);
	snprintf(buf, cap, "%s", a->error);
	pthread_mutex_unlock(&a->lock);
	return buf;
}
