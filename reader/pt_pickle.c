/* SPDX-License-Identifier: Apache-2.0 */
/* The small part of pickle a single tensor's data.pkl needs (reader/pt_read.c's .pt files):
 *     torch._utils._rebuild_tensor_v2(persistent ('storage', torch.<T>Storage, key, location,
 *         numel), storage_offset, size, stride, requires_grad, OrderedDict()[, metadata])
 * optionally wrapped in torch._utils._rebuild_parameter(tensor, requires_grad, OrderedDict())
 * (torch 2.x: _rebuild_parameter_with_state(..., state) for a Parameter with attributes).
 * A bounded machine (values, stack, memo: PT_NODE_MAX, PT_STACK_MAX, PT_MEMO_MAX) builds the
 * values; nothing is called, imported or looked up: globals are names compared as text. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/pt_int.h"

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
			k->node[n].i = w == 4 ? (int64_t)(int32_t)pt_le(k->p + k->at, 4)
					      : (int64_t)pt_le(k->p + k->at, w);
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
			k->node[n].i = w ? (int64_t)pt_le(k->p + k->at, w) : 0;
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
			len = pt_le(k->p + k->at, w);
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
				idx = pt_le(k->p + k->at, w);
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
			idx = pt_le(k->p + k->at, w);
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

int pt_pickle_tensor(const unsigned char *pickle, size_t len, const char *path,
		     struct adump_pt_info *out, char *key, size_t key_cap, uint64_t *storage_numel,
		     uint64_t *storage_offset, char *msg, size_t cap)
{
	struct pk *k = calloc(1, sizeof(*k));
	int ret;

	if (!k)
		return -ENOMEM;
	k->p = pickle;
	k->len = len;
	pk_run(k);
	if (k->error)
		ret = pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: data.pkl at byte %zu: %s "
			      "(only the pickle torch.save writes for one tensor is read)", path,
			      k->at, k->error);
	else
		ret = pk_tensor(k, path, out, key, key_cap, storage_numel, storage_offset, msg,
				cap);
	free(k);
	return ret;
}
