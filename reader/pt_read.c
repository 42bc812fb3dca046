/* SPDX-License-Identifier: Apache-2.0 */
/* Reading one tensor that torch.save wrote (msprobe's dump_tensor_data/<name>.pt, adump's own
 * export): torch's zip container (every record stored, zip64 end records as torch 1.13 and
 * 2.x write them, sizes from the central directory because torch's local headers leave them
 * 0 behind a data descriptor), and the small part of pickle a single tensor needs:
 *     torch._utils._rebuild_tensor_v2(persistent ('storage', torch.<T>Storage, key, location,
 *         numel), storage_offset, size, stride, requires_grad, OrderedDict()[, metadata])
 * optionally wrapped in torch._utils._rebuild_parameter(tensor, requires_grad, OrderedDict())
 * (torch 2.x: _rebuild_parameter_with_state(..., state) for a Parameter with attributes).
 * torch 2.x pickles a tensor's storage the same way (its TypedStorage's legacy class name and
 * element count) and adds records (byteorder, .data/serialization_id, .format_version) that
 * are not read.
 * The tensor's bytes are located, not read: callers map or pread them. Everything is bounded
 * (record counts, pickle length, stack, memo) so a cut or hostile file is an error, never a
 * crash or a large allocation. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include "reader/reader.h"

#define PT_CDIR_MAX ((uint64_t)1 << 20)    /* central directory bytes */
#define PT_RECORD_MAX 256                  /* records in one file */
#define PT_PICKLE_MAX ((uint64_t)1 << 20)  /* data.pkl bytes */
#define PT_NODE_MAX 4096                   /* pickle values built */
#define PT_STACK_MAX 256
#define PT_MEMO_MAX 1024
#define PT_TAIL_BYTES (22 + 0xffff + 20 + 56)

static int pt_fail(char *msg, size_t cap, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int pt_fail(char *msg, size_t cap, int ret, const char *fmt, ...)
{
	va_list ap;

	if (msg && cap) {
		va_start(ap, fmt);
		vsnprintf(msg, cap, fmt, ap);
		va_end(ap);
	}
	return ret;
}

static uint64_t le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

static int read_exact(int fd, uint64_t off, void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ADUMP_ERR_INCOMPLETE;
		done += (size_t)n;
	}
	return 0;
}

/* ---- the zip container --------------------------------------------------------------------- */

struct pt_record {
	char name[256];
	uint64_t data_at, size;
	uint32_t crc;
};

struct pt_zip {
	int fd;
	uint64_t file_bytes;
	struct pt_record rec[PT_RECORD_MAX];
	unsigned count;
};

/* The end records: the classic one (22 bytes, maybe a comment after it) and, where a field
 * is saturated or a zip64 locator precedes it, the zip64 one it points to. */
static int zip_end(struct pt_zip *z, const char *path, uint64_t *cdir_at, uint64_t *cdir_bytes,
		   uint64_t *entries, char *msg, size_t cap)
{
	uint64_t tail = z->file_bytes < PT_TAIL_BYTES ? z->file_bytes : PT_TAIL_BYTES;
	uint64_t base = z->file_bytes - tail;
	unsigned char *buf = malloc(tail ? tail : 1);
	int64_t eocd = -1;
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = read_exact(z->fd, base, buf, tail);
	if (ret < 0) {
		free(buf);
		return pt_fail(msg, cap, ret, "%s: reading the zip end records: %s", path,
			       adump_strerror(ret));
	}
	for (int64_t i = (int64_t)tail - 22; i >= 0; i--)
		if (le(buf + i, 4) == 0x06054b50 &&
		    (uint64_t)i + 22 + le(buf + i + 20, 2) == tail) {
			eocd = i;
			break;
		}
	if (eocd < 0) {
		free(buf);
		return pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: no zip end record (cut short, or "
			       "not a torch.save file)", path);
	}
	*entries = le(buf + eocd + 10, 2);
	*cdir_bytes = le(buf + eocd + 12, 4);
	*cdir_at = le(buf + eocd + 16, 4);
	if (eocd >= 20 && le(buf + eocd - 20, 4) == 0x07064b50) {
		uint64_t at64 = le(buf + eocd - 20 + 8, 8);
		unsigned char rec[56];

		if (at64 > z->file_bytes || z->file_bytes - at64 < 56 ||
		    read_exact(z->fd, at64, rec, sizeof(rec)) < 0 || le(rec, 4) != 0x06064b50) {
			free(buf);
			return pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: the zip64 end record the "
				       "locator points to (at %llu) is missing", path,
				       (unsigned long long)at64);
		}
		*entries = le(rec + 32, 8);
		*cdir_bytes = le(rec + 40, 8);
		*cdir_at = le(rec + 48, 8);
	}
	free(buf);
	if (*cdir_at > z->file_bytes || *cdir_bytes > z->file_bytes - *cdir_at ||
	    *cdir_bytes > PT_CDIR_MAX || *entries > PT_RECORD_MAX)
		return pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: zip central directory out of "
			       "bounds (%llu records, %llu bytes at %llu of %llu)", path,
			       (unsigned long long)*entries, (unsigned long long)*cdir_bytes,
			       (unsigned long long)*cdir_at, (unsigned long long)z->file_bytes);
	return 0;
}

/* The zip64 extended information extra field replaces saturated sizes and offset, in order. */
static void zip64_extra(const unsigned char *x, size_t n, uint64_t *usize, uint64_t *csize,
			uint64_t *local)
{
	for (size_t at = 0; at + 4 <= n;) {
		size_t id = le(x + at, 2), len = le(x + at + 2, 2), k = at + 4;

		if (at + 4 + len > n)
			return;
		if (id == 1) {
			uint64_t *field[3] = { usize, csize, local };

			for (int f = 0; f < 3; f++)
				if (*field[f] == 0xffffffffu && k + 8 <= at + 4 + len) {
					*field[f] = le(x + k, 8);
					k += 8;
				}
		}
		at += 4 + len;
	}
}

static int zip_read(struct pt_zip *z, const char *path, char *msg, size_t cap)
{
	uint64_t cdir_at = 0, cdir_bytes = 0, entries = 0;
	unsigned char *cd;
	size_t at = 0;
	int ret = zip_end(z, path, &cdir_at, &cdir_bytes, &entries, msg, cap);

	if (ret < 0)
		return ret;
	cd = malloc(cdir_bytes ? cdir_bytes : 1);
	if (!cd)
		return -ENOMEM;
	ret = read_exact(z->fd, cdir_at, cd, cdir_bytes);
	if (ret < 0) {
		ret = pt_fail(msg, cap, ret, "%s: reading the zip central directory: %s", path,
			      adump_strerror(ret));
		goto out;
	}
	for (uint64_t i = 0; i < entries; i++) {
		struct pt_record *r = &z->rec[z->count];
		uint64_t csize, usize, local, name_len, extra_len, comment_len;
		unsigned char lh[30];

		if (at + 46 > cdir_bytes || le(cd + at, 4) != 0x02014b50) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: zip central directory entry "
				      "%llu is damaged", path, (unsigned long long)i);
			goto out;
		}
		name_len = le(cd + at + 28, 2);
		extra_len = le(cd + at + 30, 2);
		comment_len = le(cd + at + 32, 2);
		if (at + 46 + name_len + extra_len + comment_len > cdir_bytes) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: zip central directory entry "
				      "%llu runs past the directory", path, (unsigned long long)i);
			goto out;
		}
		r->crc = (uint32_t)le(cd + at + 16, 4);
		csize = le(cd + at + 20, 4);
		usize = le(cd + at + 24, 4);
		local = le(cd + at + 42, 4);
		zip64_extra(cd + at + 46 + name_len, extra_len, &usize, &csize, &local);
		snprintf(r->name, sizeof(r->name), "%.*s", (int)(name_len < 255 ? name_len : 255),
			 (const char *)cd + at + 46);
		if (le(cd + at + 10, 2) != 0 || csize != usize) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: zip record %s is "
				      "compressed (method %llu); torch.save stores records", path,
				      r->name, (unsigned long long)le(cd + at + 10, 2));
			goto out;
		}
		if (local > z->file_bytes || z->file_bytes - local < 30 ||
		    read_exact(z->fd, local, lh, sizeof(lh)) < 0 || le(lh, 4) != 0x04034b50) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: zip record %s: its local "
				      "header (at %llu) is missing", path, r->name,
				      (unsigned long long)local);
			goto out;
		}
		r->data_at = local + 30 + le(lh + 26, 2) + le(lh + 28, 2);
		r->size = usize;
		if (r->data_at > z->file_bytes || r->size > z->file_bytes - r->data_at) {
			ret = pt_fail(msg, cap, -ADUMP_ERR_INCOMPLETE, "%s: zip record %s (%llu bytes "
				      "at %llu) runs past the end of the file (%llu bytes): cut short",
				      path, r->name, (unsigned long long)r->size,
				      (unsigned long long)r->data_at,
				      (unsigned long long)z->file_bytes);
			goto out;
		}
		z->count++;
		at += 46 + name_len + extra_len + comment_len;
	}
out:
	free(cd);
	return ret;
}

static int zip_crc_check(struct pt_zip *z, const char *path, char *msg, size_t cap)
{
	unsigned char *buf = malloc(ADUMP_READER_STEP_BYTES);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (unsigned i = 0; i < z->count && ret == 0; i++) {
		const struct pt_record *r = &z->rec[i];
		uint32_t crc = 0;

		for (uint64_t off = 0; off < r->size && ret == 0;) {
			size_t n = r->size - off < ADUMP_READER_STEP_BYTES ? (size_t)(r->size - off)
									   : ADUMP_READER_STEP_BYTES;

			ret = read_exact(z->fd, r->data_at + off, buf, n);
			if (ret == 0)
				crc = crc32_gzip_refl(crc, buf, n);
			off += n;
		}
		if (ret < 0)
			ret = pt_fail(msg, cap, ret, "%s: zip record %s: %s", path, r->name,
				      adump_strerror(ret));
		else if (crc != r->crc)
			ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: zip record %s: CRC-32 "
				      "%08x, the directory says %08x (damaged)", path, r->name, crc,
				      r->crc);
	}
	free(buf);
	return ret;
}

/* The record named <top>/<leaf> (torch puts every record under one top folder). */
static const struct pt_record *zip_find(const struct pt_zip *z, const char *leaf)
{
	size_t n = strlen(leaf);

	for (unsigned i = 0; i < z->count; i++) {
		const char *slash = strchr(z->rec[i].name, '/');

		if (slash && strlen(slash + 1) == n && !memcmp(slash + 1, leaf, n))
			return &z->rec[i];
	}
	return NULL;
}

/* ---- the pickle ---------------------------------------------------------------------------- */

enum pk_type { PK_NONE, PK_BOOL, PK_INT, PK_FLOAT, PK_STR, PK_TUPLE, PK_LIST, PK_DICT,
	       PK_GLOBAL, PK_PERSID, PK_CALL, PK_MARK };

struct pk_node {
	enum pk_type type;
	int64_t i;
	const char *s;                  /* STR: into the pickle (not NUL-ended: len); GLOBAL */
	size_t len;
	uint32_t first, count;          /* TUPLE/LIST/CALL args: items in pk->items */
	uint32_t fn;                    /* CALL: the callable; PERSID: the pid */
};

struct pk {
	const unsigned char *p;
	size_t len, at;
	struct pk_node node[PT_NODE_MAX];
	uint32_t node_count;
	uint32_t items[PT_NODE_MAX];
	uint32_t item_count;
	uint32_t stack[PT_STACK_MAX];
	uint32_t depth;
	uint32_t memo[PT_MEMO_MAX];
	char globals[8][96];
	unsigned global_count;
	const char *error;
};

static uint32_t pk_new(struct pk *k, enum pk_type t)
{
	if (k->node_count >= PT_NODE_MAX) {
		k->error = "too many values";
		return 0;
	}
	k->node[k->node_count] = (struct pk_node){ .type = t };
	return k->node_count++;
}

static bool pk_push(struct pk *k, uint32_t n)
{
	if (k->error)
		return false;
	if (k->depth >= PT_STACK_MAX) {
		k->error = "stack too deep";
		return false;
	}
	k->stack[k->depth++] = n;
	return true;
}

static bool pk_pop(struct pk *k, uint32_t *n)
{
	if (!k->depth || k->node[k->stack[k->depth - 1]].type == PK_MARK) {
		k->error = "stack underflow";
		return false;
	}
	*n = k->stack[--k->depth];
	return true;
}

static bool pk_need(struct pk *k, size_t n)
{
	if (k->len - k->at < n) {
		k->error = "ends inside an opcode";
		return false;
	}
	return true;
}

/* Items from the topmost mark (or the top @n when @n >= 0) as a sequence node. */
static bool pk_collect(struct pk *k, enum pk_type t, int n)
{
	uint32_t from, node;

	if (n < 0) {
		from = k->depth;
		while (from > 0 && k->node[k->stack[from - 1]].type != PK_MARK)
			from--;
		if (from == 0) {
			k->error = "no mark";
			return false;
		}
	} else if (k->depth < (uint32_t)n) {
		k->error = "stack underflow";
		return false;
	} else {
		from = 0;
	}
	node = pk_new(k, t);
	if (k->error)
		return false;
	{
		/* A mark's items lie above it (the mark at from - 1); @n items are the top @n. */
		uint32_t lo = n < 0 ? from : k->depth - (uint32_t)n;

		if (k->item_count + (k->depth - lo) > PT_NODE_MAX) {
			k->error = "too many items";
			return false;
		}
		k->node[node].first = k->item_count;
		for (uint32_t i = lo; i < k->depth; i++)
			k->items[k->item_count++] = k->stack[i];
		k->node[node].count = k->depth - lo;
		k->depth = n < 0 ? from - 1 : lo;
	}
	return pk_push(k, node);
}

static uint32_t pk_top_index(struct pk *k)
{
	return k->depth ? k->stack[k->depth - 1] : 0;
}

static void pk_run(struct pk *k)
{
	while (!k->error) {
		unsigned char op;
		uint32_t n, a, b;

		if (!pk_need(k, 1))
			return;
		op = k->p[k->at++];
		switch (op) {
		case 0x80:              /* PROTO */
			if (pk_need(k, 1))
				k->at++;
			break;
		case 0x95:              /* FRAME */
			if (pk_need(k, 8))
				k->at += 8;
			break;
		case '.':               /* STOP */
			return;
		case '(':               /* MARK */
			n = pk_new(k, PK_MARK);
			pk_push(k, n);
			break;
		case 'N':
			pk_push(k, pk_new(k, PK_NONE));
			break;
		case 0x88: case 0x89:   /* NEWTRUE, NEWFALSE */
			n = pk_new(k, PK_BOOL);
			k->node[n].i = op == 0x88;
			pk_push(k, n);
			break;
		case 'K': case 'M': case 'J': {   /* BININT1, BININT2, BININT */
			unsigned w = op == 'K' ? 1 : op == 'M' ? 2 : 4;

			if (!pk_need(k, w))
				return;
			n = pk_new(k, PK_INT);
			k->node[n].i = w == 4 ? (int64_t)(int32_t)le(k->p + k->at, 4)
					      : (int64_t)le(k->p + k->at, w);
			k->at += w;
			pk_push(k, n);
			break;
		}
		case 0x8a: {            /* LONG1 */
			unsigned w;

			if (!pk_need(k, 1))
				return;
			w = k->p[k->at++];
			if (w > 8 || !pk_need(k, w)) {
				k->error = w > 8 ? "integer wider than 64 bits" : k->error;
				return;
			}
			n = pk_new(k, PK_INT);
			k->node[n].i = w ? (int64_t)le(k->p + k->at, w) : 0;
			if (w && w < 8 && (k->p[k->at + w - 1] & 0x80))
				k->node[n].i -= (int64_t)1 << (8 * w);
			k->at += w;
			pk_push(k, n);
			break;
		}
		case 'G':               /* BINFLOAT: not needed for the value, kept as a float */
			if (!pk_need(k, 8))
				return;
			k->at += 8;
			pk_push(k, pk_new(k, PK_FLOAT));
			break;
		case 'X': case 0x8c: case 'U': case 'T': case 'B': case 'C': case 0x8e: {
			/* BINUNICODE, SHORT_BINUNICODE, SHORT_BINSTRING, BINSTRING, BINBYTES,
			 * SHORT_BINBYTES, BINBYTES8 */
			unsigned w = op == 0x8c || op == 'U' || op == 'C' ? 1 : op == 0x8e ? 8 : 4;
			uint64_t len;

			if (!pk_need(k, w))
				return;
			len = le(k->p + k->at, w);
			k->at += w;
			if (len > k->len - k->at) {
				k->error = "string runs past the end";
				return;
			}
			n = pk_new(k, PK_STR);
			k->node[n].s = (const char *)k->p + k->at;
			k->node[n].len = (size_t)len;
			k->at += (size_t)len;
			pk_push(k, n);
			break;
		}
		case 'c': {             /* GLOBAL "module\nname\n" */
			const unsigned char *s = k->p + k->at, *nl1, *nl2;
			size_t rest = k->len - k->at;
			char *g;

			nl1 = memchr(s, '\n', rest);
			nl2 = nl1 ? memchr(nl1 + 1, '\n', rest - (size_t)(nl1 + 1 - s)) : NULL;
			if (!nl2 || nl2 - s > 90 || k->global_count >= 8) {
				k->error = !nl2 ? "GLOBAL without its two lines" : "GLOBAL too long or "
					   "too many";
				return;
			}
			g = k->globals[k->global_count++];
			snprintf(g, 96, "%.*s.%.*s", (int)(nl1 - s), (const char *)s,
				 (int)(nl2 - nl1 - 1), (const char *)nl1 + 1);
			k->at += (size_t)(nl2 + 1 - s);
			n = pk_new(k, PK_GLOBAL);
			k->node[n].s = g;
			k->node[n].len = strlen(g);
			pk_push(k, n);
			break;
		}
		case 0x93: {            /* STACK_GLOBAL */
			char *g;

			if (!pk_pop(k, &b) || !pk_pop(k, &a))
				return;
			if (k->node[a].type != PK_STR || k->node[b].type != PK_STR ||
			    k->global_count >= 8 || k->node[a].len + k->node[b].len > 90) {
				k->error = "bad STACK_GLOBAL";
				return;
			}
			g = k->globals[k->global_count++];
			snprintf(g, 96, "%.*s.%.*s", (int)k->node[a].len, k->node[a].s,
				 (int)k->node[b].len, k->node[b].s);
			n = pk_new(k, PK_GLOBAL);
			k->node[n].s = g;
			k->node[n].len = strlen(g);
			pk_push(k, n);
			break;
		}
		case 'q': case 'r': case 0x94: {   /* BINPUT, LONG_BINPUT, MEMOIZE */
			uint64_t idx;

			if (op == 0x94) {
				idx = 0;
				while (idx < PT_MEMO_MAX && k->memo[idx])
					idx++;
			} else {
				unsigned w = op == 'q' ? 1 : 4;

				if (!pk_need(k, w))
					return;
				idx = le(k->p + k->at, w);
				k->at += w;
			}
			if (!k->depth || idx >= PT_MEMO_MAX) {
				k->error = "memo index out of range";
				return;
			}
			k->memo[idx] = pk_top_index(k) + 1;
			break;
		}
		case 'h': case 'j': {   /* BINGET, LONG_BINGET */
			unsigned w = op == 'h' ? 1 : 4;
			uint64_t idx;

			if (!pk_need(k, w))
				return;
			idx = le(k->p + k->at, w);
			k->at += w;
			if (idx >= PT_MEMO_MAX || !k->memo[idx]) {
				k->error = "memo entry missing";
				return;
			}
			pk_push(k, k->memo[idx] - 1);
			break;
		}
		case ')':
			pk_collect(k, PK_TUPLE, 0);
			break;
		case 0x85: case 0x86: case 0x87:   /* TUPLE1..3 */
			pk_collect(k, PK_TUPLE, op - 0x84);
			break;
		case 't':
			pk_collect(k, PK_TUPLE, -1);
			break;
		case ']':
			pk_collect(k, PK_LIST, 0);
			break;
		case 'l':
			pk_collect(k, PK_LIST, -1);
			break;
		case '}':
			pk_push(k, pk_new(k, PK_DICT));
			break;
		case 'a':               /* APPEND: contents of lists are not needed */
			if (pk_pop(k, &a) && k->depth &&
			    k->node[pk_top_index(k)].type != PK_LIST)
				k->error = "APPEND to a non-list";
			break;
		case 's':               /* SETITEM */
			if (pk_pop(k, &a) && pk_pop(k, &b) && k->depth &&
			    k->node[pk_top_index(k)].type != PK_DICT &&
			    k->node[pk_top_index(k)].type != PK_CALL)
				k->error = "SETITEM on a non-dict";
			break;
		case 'e': case 'u':     /* APPENDS, SETITEMS: drop to the mark */
			while (k->depth && k->node[k->stack[k->depth - 1]].type != PK_MARK)
				k->depth--;
			if (!k->depth) {
				k->error = "no mark";
				return;
			}
			k->depth--;
			if (!k->depth)
				k->error = "stack underflow";
			break;
		case 'b':               /* BUILD: the state is not needed */
			if (pk_pop(k, &a) && !k->depth)
				k->error = "stack underflow";
			break;
		case 'Q':               /* BINPERSID */
			if (!pk_pop(k, &a))
				return;
			n = pk_new(k, PK_PERSID);
			k->node[n].fn = a;
			pk_push(k, n);
			break;
		case 'R': case 0x81: {  /* REDUCE, NEWOBJ */
			if (!pk_pop(k, &b) || !pk_pop(k, &a))
				return;
			if (k->node[b].type != PK_TUPLE) {
				k->error = "call arguments are not a tuple";
				return;
			}
			n = pk_new(k, PK_CALL);
			if (k->error)
				return;
			k->node[n].fn = a;
			k->node[n].first = k->node[b].first;
			k->node[n].count = k->node[b].count;
			pk_push(k, n);
			break;
		}
		default: {
			static char why[64];

			snprintf(why, sizeof(why), "opcode 0x%02x", op);
			k->error = why;
			return;
		}
		}
	}
}

static const struct pk_node *pk_arg(const struct pk *k, const struct pk_node *call, uint32_t i)
{
	return i < call->count ? &k->node[k->items[call->first + i]] : NULL;
}

static bool pk_is_global(const struct pk_node *n, const char *name)
{
	return n && n->type == PK_GLOBAL && !strcmp(n->s, name);
}

static bool pk_str_is(const struct pk_node *n, const char *s)
{
	return n && n->type == PK_STR && n->len == strlen(s) && !memcmp(n->s, s, n->len);
}

/* torch's storage class names, by element type. */
static const struct {
	const char *storage;
	int32_t dtype;
	uint32_t bytes;
} storages[] = {
	{ "torch.FloatStorage", ADUMP_DT_FLOAT, 4 },
	{ "torch.HalfStorage", ADUMP_DT_FLOAT16, 2 },
	{ "torch.BFloat16Storage", ADUMP_DT_BF16, 2 },
	{ "torch.DoubleStorage", ADUMP_DT_DOUBLE, 8 },
	{ "torch.CharStorage", ADUMP_DT_INT8, 1 },
	{ "torch.ByteStorage", ADUMP_DT_UINT8, 1 },
	{ "torch.ShortStorage", ADUMP_DT_INT16, 2 },
	{ "torch.IntStorage", ADUMP_DT_INT32, 4 },
	{ "torch.LongStorage", ADUMP_DT_INT64, 8 },
	{ "torch.BoolStorage", ADUMP_DT_BOOL, 1 },
	{ "torch.ComplexFloatStorage", ADUMP_DT_COMPLEX64, 8 },
	{ "torch.ComplexDoubleStorage", ADUMP_DT_COMPLEX128, 16 },
};

static bool int_list(const struct pk *k, const struct pk_node *n, uint64_t *out, uint32_t *count)
{
	if (!n || n->type != PK_TUPLE || n->count > ADUMP_MAX_DIMS)
		return false;
	for (uint32_t i = 0; i < n->count; i++) {
		const struct pk_node *v = &k->node[k->items[n->first + i]];

		if (v->type != PK_INT || v->i < 0)
			return false;
		out[i] = (uint64_t)v->i;
	}
	*count = n->count;
	return true;
}

/* The tensor the pickle's top value rebuilds; @key receives the storage record's name. */
static int pk_tensor(const struct pk *k, const char *path, struct adump_pt_info *out,
		     char *key, size_t key_cap, uint64_t *storage_numel, uint64_t *storage_offset,
		     char *msg, size_t cap)
{
	const struct pk_node *top, *fn, *pid, *st, *loc;
	uint64_t stride[ADUMP_MAX_DIMS];
	uint32_t stride_count;
	size_t i;

	if (k->depth != 1)
		return pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: data.pkl holds %u values, not "
			       "one tensor", path, k->depth);
	top = &k->node[k->stack[0]];
	fn = top->type == PK_CALL ? &k->node[top->fn] : NULL;
	/* _rebuild_parameter_with_state: torch 2.x, a Parameter carrying attributes */
	if (fn && (pk_is_global(fn, "torch._utils._rebuild_parameter") ||
		   pk_is_global(fn, "torch._utils._rebuild_parameter_with_state"))) {
		const struct pk_node *rg = pk_arg(k, top, 1);

		out->is_parameter = true;
		top = pk_arg(k, top, 0);
		fn = top && top->type == PK_CALL ? &k->node[top->fn] : NULL;
		if (rg && rg->type == PK_BOOL)
			out->requires_grad = rg->i;
	}
	if (!fn || !pk_is_global(fn, "torch._utils._rebuild_tensor_v2"))
		return pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: data.pkl does not hold one "
			       "tensor (found %s%s%s); only torch.save of a single CPU tensor is read",
			       path, fn && fn->type == PK_GLOBAL ? "a call of " : "",
			       fn && fn->type == PK_GLOBAL ? fn->s : "another object", "");
	if (top->count < 6)
		return pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: _rebuild_tensor_v2 with %u "
			       "arguments", path, top->count);
	pid = pk_arg(k, top, 0);
	if (!pid || pid->type != PK_PERSID || k->node[pid->fn].type != PK_TUPLE ||
	    k->node[pid->fn].count < 5)
		return pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: the tensor's storage is not a "
			       "('storage', type, key, location, size) reference", path);
	pid = &k->node[pid->fn];
	st = pk_arg(k, pid, 1);
	if (!pk_str_is(pk_arg(k, pid, 0), "storage") || !st || st->type != PK_GLOBAL ||
	    pk_arg(k, pid, 2)->type != PK_STR || pk_arg(k, pid, 4)->type != PK_INT)
		return pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: the tensor's storage "
			       "reference is not torch's", path);
	for (i = 0; i < sizeof(storages) / sizeof(storages[0]); i++)
		if (!strcmp(storages[i].storage, st->s))
			break;
	if (i == sizeof(storages) / sizeof(storages[0]))
		return pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: storage type %s is not read "
			       "(float32/16, bfloat16, float64, int8/16/32/64, uint8, bool, complex)",
			       path, st->s);
	loc = pk_arg(k, pid, 3);
	if (loc && loc->type == PK_STR && !(loc->len >= 3 && !memcmp(loc->s, "cpu", 3)))
		adump_log(ADUMP_LOG_DEBUG, "reader", "%s: storage saved on %.*s, read as on the CPU",
			  path, (int)loc->len, loc->s);
	out->dtype = storages[i].dtype;
	snprintf(key, key_cap, "data/%.*s", (int)(pk_arg(k, pid, 2)->len < 64 ?
						   pk_arg(k, pid, 2)->len : 64),
		 pk_arg(k, pid, 2)->s);
	*storage_numel = (uint64_t)pk_arg(k, pid, 4)->i;
	if (pk_arg(k, top, 1)->type != PK_INT || pk_arg(k, top, 1)->i < 0)
		return pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: bad storage offset", path);
	*storage_offset = (uint64_t)pk_arg(k, top, 1)->i;
	if (!int_list(k, pk_arg(k, top, 2), out->dims, &out->dim_count) ||
	    !int_list(k, pk_arg(k, top, 3), stride, &stride_count) ||
	    stride_count != out->dim_count)
		return pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: the tensor's size or stride is "
			       "not a tuple of at most %d non-negative integers", path,
			       ADUMP_MAX_DIMS);
	if (!out->is_parameter && pk_arg(k, top, 4)->type == PK_BOOL)
		out->requires_grad = pk_arg(k, top, 4)->i;
	/* Contiguous: each stride the product of the later sizes (dims of size 1 may say
	 * anything, as torch does not look at them). */
	{
		uint64_t expect = 1;

		for (uint32_t d = out->dim_count; d-- > 0;) {
			if (out->dims[d] != 1 && stride[d] != expect && out->dims[d] != 0)
				return pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: the tensor is not "
					       "contiguous (dim %u: stride %llu, %llu expected); "
					       "only contiguous tensors are read", path, d,
					       (unsigned long long)stride[d],
					       (unsigned long long)expect);
			if (out->dims[d] && expect > UINT64_MAX / out->dims[d])
				return pt_fail(msg, cap, -ADUMP_ERR_TOO_BIG, "%s: shape too large",
					       path);
			expect *= out->dims[d] ? out->dims[d] : 1;
		}
	}
	out->element_bytes = storages[i].bytes;
	return 0;
}

/* adump_pt_read() of the file open as @fd (taken over), named @path in messages. */
static int pt_read_fd(int fd, const char *path, bool is_checked, struct adump_pt_info *out,
		      char *msg, size_t cap)
{
	struct pt_zip *z;
	struct pk *k = NULL;
	const struct pt_record *pkl, *data;
	unsigned char *pickle = NULL;
	uint64_t numel = 1, storage_numel = 0, storage_offset = 0;
	char key[80];
	struct stat st;
	int ret;

	z = calloc(1, sizeof(*z));
	if (!z) {
		close(fd);
		return -ENOMEM;
	}
	z->fd = fd;
	if (fstat(z->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = pt_fail(msg, cap, -EINVAL, "%s: not a regular file", path);
		goto out;
	}
	z->file_bytes = (uint64_t)st.st_size;
	out->file_bytes = z->file_bytes;
	ret = zip_read(z, path, msg, cap);
	if (ret == 0 && is_checked)
		ret = zip_crc_check(z, path, msg, cap);
	if (ret < 0)
		goto out;
	pkl = zip_find(z, "data.pkl");
	if (!pkl) {
		ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: no data.pkl record: not a "
			      "torch.save file", path);
		goto out;
	}
	if (pkl->size > PT_PICKLE_MAX) {
		ret = pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: data.pkl is %llu bytes: more "
			      "than one tensor", path, (unsigned long long)pkl->size);
		goto out;
	}
	pickle = malloc(pkl->size ? pkl->size : 1);
	k = calloc(1, sizeof(*k));
	if (!pickle || !k) {
		ret = -ENOMEM;
		goto out;
	}
	ret = read_exact(z->fd, pkl->data_at, pickle, pkl->size);
	if (ret < 0) {
		ret = pt_fail(msg, cap, ret, "%s: reading data.pkl: %s", path, adump_strerror(ret));
		goto out;
	}
	k->p = pickle;
	k->len = pkl->size;
	pk_run(k);
	if (k->error) {
		ret = pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: data.pkl at byte %zu: %s "
			      "(only the pickle torch.save writes for one tensor is read)", path,
			      k->at, k->error);
		goto out;
	}
	ret = pk_tensor(k, path, out, key, sizeof(key), &storage_numel, &storage_offset, msg, cap);
	if (ret < 0)
		goto out;
	for (uint32_t d = 0; d < out->dim_count; d++)
		numel = out->dims[d] && numel > UINT64_MAX / out->dims[d] ? UINT64_MAX
								       : numel * out->dims[d];
	out->element_count = numel;
	data = zip_find(z, key);
	if (numel == 0) {
		out->offset = data ? data->data_at : 0;
		out->bytes = 0;
		goto out;
	}
	if (!data) {
		ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: no record %s for the tensor's "
			      "storage", path, key);
		goto out;
	}
	if (storage_numel > UINT64_MAX / out->element_bytes ||
	    storage_numel * out->element_bytes != data->size ||
	    storage_offset > storage_numel || numel > storage_numel - storage_offset) {
		ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: storage record %s holds %llu "
			      "bytes; the tensor needs %llu elements of %u bytes from element %llu "
			      "of a storage of %llu", path, key, (unsigned long long)data->size,
			      (unsigned long long)numel, out->element_bytes,
			      (unsigned long long)storage_offset, (unsigned long long)storage_numel);
		goto out;
	}
	out->offset = data->data_at + storage_offset * out->element_bytes;
	out->bytes = numel * out->element_bytes;
out:
	free(k);
	free(pickle);
	close(z->fd);
	free(z);
	return ret;
}

int adump_pt_read(const char *path, bool is_checked, struct adump_pt_info *out, char *msg,
		  size_t cap)
{
	int fd;

	if (!path || !out)
		return pt_fail(msg, cap, -ADUMP_ERR_CONFIG, "invalid arguments");
	memset(out, 0, sizeof(*out));
	fd = adump_open_regular(path);
	if (fd < 0)
		return pt_fail(msg, cap, fd, "%s: %s", path, adump_open_strerror(fd));
	return pt_read_fd(fd, path, is_checked, out, msg, cap);
}

int adump_pt_read_beneath(const char *dir, const char *name, const char *path, bool is_checked,
			  struct adump_pt_info *out, char *msg, size_t cap)
{
	int fd;

	if (!dir || !name || !path || !out)
		return pt_fail(msg, cap, -ADUMP_ERR_CONFIG, "invalid arguments");
	memset(out, 0, sizeof(*out));
	fd = adump_open_beneath(dir, name);
	if (fd < 0)
		return pt_fail(msg, cap, fd, "%s: %s", path, adump_open_strerror(fd));
	return pt_read_fd(fd, path, is_checked, out, msg, cap);
}
