/* SPDX-License-Identifier: Apache-2.0 */
/* The soak's verification (bench/soak.c runs it): every op found exactly once, its three
 * CRC32Cs recomputed from the dump files below a directory or from the callback's chunks as
 * they stream, and the first corruption named. */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adump/reader.h"
#include "bench/bench.h"
#include "bench/soak_int.h"
#include "proto/proto.h"

static void corrupt(struct adump_bench_soak *k, const char *where, const char *what)
{
	pthread_mutex_lock(&k->lock);
	if (!k->corrupt++)
		snprintf(k->first, sizeof(k->first), "%s: %s", where, what);
	pthread_mutex_unlock(&k->lock);
}

/* One dump open in @r: find its op by name, recompute the three CRCs, count it seen. */
static void check_dump(struct adump_bench_soak *k, struct adump_reader *r, const char *where)
{
	const struct adump_reader_header *h = adump_reader_header(r);
	static const size_t piece = 1u << 20;
	unsigned char *buf = malloc(piece);
	uint64_t checked = 0;
	struct soak_op *op;
	unsigned s, i;

	if (!buf) {
		corrupt(k, where, "out of memory");
		return;
	}
	if (sscanf(h->op_name, "soak_%u_%u", &s, &i) != 2 || s >= k->o.stream_count ||
	    i >= k->op_count[s] || h->tensor_count != 3) {
		corrupt(k, where, "not an op of the soak");
		free(buf);
		return;
	}
	op = &k->ops[s][i];
	for (uint32_t t = 0; t < 3; t++) {
		uint64_t len = h->tensors[t].info.bytes, done = 0;
		uint32_t crc = 0;

		if (len != op->count * 4) {
			corrupt(k, where, "a tensor's size differs from its launch");
			break;
		}
		while (done < len) {
			size_t n = len - done < piece ? (size_t)(len - done) : piece;

			if (adump_reader_read(r, t, done, buf, n) < 0) {
				corrupt(k, where, "a tensor cannot be read");
				free(buf);
				return;
			}
			crc = adump_crc32c(crc, buf, n);
			done += n;
		}
		if (crc != op->crc[t])
			corrupt(k, where, "a tensor's CRC32C differs from the one taken at launch");
		else
			checked += len;
	}
	pthread_mutex_lock(&k->lock);
	op->seen++;
	k->verified_bytes += checked;
	pthread_mutex_unlock(&k->lock);
	free(buf);
}

static struct adump_bench_soak *walk_soak;
static struct adump_reader *walk_reader;

static int check_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag != FTW_F)
		return 0;
	if (adump_reader_open(walk_reader, path) < 0) {
		corrupt(walk_soak, path, adump_reader_error(walk_reader));
		return 0;
	}
	check_dump(walk_soak, walk_reader, path);
	adump_reader_close(walk_reader);
	return 0;
}

int adump_bench_soak_verify_dir(struct adump_bench_soak *k, const char *dir)
{
	int ret = adump_reader_create(&walk_reader);

	if (ret < 0)
		return ret;
	/* nftw has no user pointer: one directory walk at a time per process. */
	walk_soak = k;
	if (nftw(dir, check_file, 16, FTW_PHYS) != 0)
		ret = errno ? -errno : -EIO;
	adump_reader_destroy(walk_reader);
	walk_reader = NULL;
	return ret;
}

/* The op a callback file belongs to, from the op name in its file name (Add.soak_S_I....),
 * or NULL. */
static struct soak_op *op_of_name(struct adump_bench_soak *k, const char *name)
{
	const char *at = strstr(name, ".soak_");
	unsigned s, i;

	if (!at || sscanf(at + 1, "soak_%u_%u", &s, &i) != 2 || s >= k->o.stream_count ||
	    i >= k->op_count[s])
		return NULL;
	return &k->ops[s][i];
}

static long head_read_at(void *ctx, uint64_t offset, void *buf, size_t len)
{
	const struct soak_partial *p = ctx;

	if (offset >= p->head_len)
		return 0;
	if (len > p->head_len - offset)
		len = (size_t)(p->head_len - offset);
	memcpy(buf, p->head + offset, len);
	return (long)len;
}

static void head_close(void *ctx)
{
	(void)ctx;                              /* the partial owns its head */
}

static const struct adump_reader_source_ops head_ops = {
	.read_at = head_read_at, .close = head_close,
};

/* Parse the header from the head once it is all there: 0 (parsed, or not all there yet) or
 * the message of why the file is not a soak op's. The file's size is the op's (the reader
 * checks the header against it), its tensors the op's three. */
static const char *head_parse(struct adump_bench_soak *k, struct soak_partial *p)
{
	struct adump_reader_source *src;
	struct adump_reader *r;
	const struct adump_reader_header *h;
	uint64_t header_bytes;
	const char *why = NULL;

	if (p->head_len < 8)
		return NULL;
	memcpy(&header_bytes, p->head, 8);
	if (header_bytes > ADUMP_READER_HEADER_MAX)
		return "header too long";
	if (p->head_len < 8 + header_bytes)
		return NULL;
	p->op = op_of_name(k, p->name);
	if (!p->op)
		return "not an op of the soak";
	if (adump_reader_create(&r) < 0)
		return "out of memory";
	if (adump_reader_source_create(&head_ops, p, 8 + header_bytes + 3 * p->op->count * 4,
				       &src) < 0) {
		adump_reader_destroy(r);
		return "out of memory";
	}
	if (adump_reader_open_source(r, src, p->name) < 0) {
		why = "header does not parse as the op's";
	} else {
		unsigned s, i;

		h = adump_reader_header(r);
		if (sscanf(h->op_name, "soak_%u_%u", &s, &i) != 2 || s >= k->o.stream_count ||
		    i >= k->op_count[s] || &k->ops[s][i] != p->op || h->tensor_count != 3) {
			why = "not an op of the soak";
		} else {
			for (uint32_t t = 0; t < 3; t++) {
				p->tensor_at[t] = h->tensors[t].offset;
				p->tensor_bytes[t] = h->tensors[t].info.bytes;
				if (p->tensor_bytes[t] != p->op->count * 4)
					why = "a tensor's size differs from its launch";
			}
			p->file_bytes = h->file_bytes;
		}
	}
	adump_reader_destroy(r);
	p->is_parsed = why == NULL;
	return why;
}

/* The bytes [@at, @at + @len) of the file: into each tensor's CRC32C where they overlap it. */
static void crc_feed(struct soak_partial *p, uint64_t at, const unsigned char *data, size_t len)
{
	for (uint32_t t = 0; t < 3; t++) {
		uint64_t lo = p->tensor_at[t], hi = lo + p->tensor_bytes[t];
		uint64_t from = at > lo ? at : lo, to = at + len < hi ? at + len : hi;

		if (from < to)
			p->crc[t] = adump_crc32c(p->crc[t], data + (from - at), (size_t)(to - from));
	}
}

/* Append @len bytes to the head. Return: NULL or why not. */
static const char *head_take(struct soak_partial *p, const unsigned char *data, size_t len)
{
	if (p->head_len + len > ADUMP_READER_HEADER_MAX + 8)
		return "header too long";
	if (p->head_len + len > p->head_cap) {
		size_t cap = (p->head_len + len) * 2;
		void *head = realloc(p->head, cap);

		if (!head)
			return "out of memory";
		p->head = head;
		p->head_cap = cap;
	}
	memcpy(p->head + p->head_len, data, len);
	p->head_len += len;
	return NULL;
}

static void partial_end(struct adump_bench_soak *k, struct soak_partial *p)
{
	uint64_t checked = 0;

	if (p->is_bad)
		return;
	if (!p->is_parsed || p->len != p->file_bytes) {
		corrupt(k, p->name, p->is_parsed ? "file length differs from its header's" :
						   "file ended inside its header");
		return;
	}
	for (uint32_t t = 0; t < 3; t++) {
		if (p->crc[t] != p->op->crc[t]) {
			corrupt(k, p->name, "a tensor's CRC32C differs from the one taken at launch");
			return;
		}
		checked += p->tensor_bytes[t];
	}
	pthread_mutex_lock(&k->lock);
	p->op->seen++;
	k->verified_bytes += checked;
	pthread_mutex_unlock(&k->lock);
}

int adump_bench_soak_chunk(const struct adump_chunk *chunk, void *user)
{
	struct adump_bench_soak *k = user;
	struct soak_partial *p, **link;
	const unsigned char *data = chunk->data;
	size_t len = chunk->len;
	uint64_t at = chunk->offset;

	pthread_mutex_lock(&k->lock);
	for (link = &k->open; *link && strcmp((*link)->name, chunk->file_name); link = &(*link)->next)
		;
	p = *link;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (p)
			p->name = strdup(chunk->file_name);
		if (!p || !p->name) {
			free(p);
			pthread_mutex_unlock(&k->lock);
			corrupt(k, chunk->file_name, "out of memory");
			return 0;
		}
		p->next = k->open;
		k->open = p;
	}
	if (chunk->offset != p->len)
		k->out_of_order++;
	pthread_mutex_unlock(&k->lock);
	/* Only this file's worker touches @p until its last chunk. */
	/* The head: the 8-byte length, then the header it announces, then it is parsed. */
	while (!p->is_parsed && !p->is_bad && len) {
		uint64_t header_bytes = 0, need;
		const char *why;

		if (p->head_len >= 8)
			memcpy(&header_bytes, p->head, 8);
		need = p->head_len < 8 ? 8 - p->head_len : 8 + header_bytes - p->head_len;
		if (need > len)
			need = len;
		why = head_take(p, data, (size_t)need);
		if (!why) {
			data += need;
			len -= (size_t)need;
			at += need;
			why = head_parse(k, p);
		}
		if (why) {
			corrupt(k, p->name, why);
			p->is_bad = true;
		}
	}
	if (p->is_parsed && len)
		crc_feed(p, at, data, len);
	p->len = chunk->offset + chunk->len;
	if (!chunk->is_last)
		return 0;
	partial_end(k, p);
	pthread_mutex_lock(&k->lock);
	for (link = &k->open; *link != p; link = &(*link)->next)
		;
	*link = p->next;
	pthread_mutex_unlock(&k->lock);
	free(p->head);
	free(p->name);
	free(p);
	return 0;
}

