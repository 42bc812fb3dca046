/* SPDX-License-Identifier: Apache-2.0 */
/* `adump scan` (adump/scan.h): every dump of one capture read on a pool of threads for NaN,
 * Inf and float16 values at the dtype's limit; then, in execution order (timestamps), the op
 * that made them and the ops they reached. Listing is compare's (compare_match.c). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <json-c/json.h>

#include "adump/scan.h"
#include "compare/compare.h"

#define FP16_MAX 65504.0
/* Bytes read per step from a dump that is not in memory. */
#define STEP_BYTES ((size_t)1 << 20)

struct scan_result {
	struct adump_scan_counts counts[2];     /* inputs, outputs */
	char first[48];                         /* first anomalous tensor: "output:0" */
	char first_input[96];                   /* first anomalous input: "input:1", "the weight" */
	bool has_arg;                           /* an anomalous input that is no parameter */
	bool has_uninit;                        /* NaN/Inf in memory no op wrote (not counted) */
	char *op_name;                          /* the header's; NULL: the file name's */
	char *module;                           /* the header's `module` attribute, or NULL */
	char *message;                          /* unreadable: why */
	char *note;                             /* entered, enclosing: where from */
	uint64_t bytes;
};

struct adump_scan {
	struct adump_scan_config cfg;
	struct cmp_side side;
	struct scan_result *res;                /* per file, in the files' order */
	struct adump_scan_op *ops;
	uint64_t op_count;
	_Atomic size_t next;
	_Atomic uint64_t bytes;
	bool is_run;
};

int adump_scan_open(const struct adump_scan_config *cfg, const char *path,
		    struct adump_scan **out, char *msg, size_t cap)
{
	struct adump_scan *s;
	char scratch[1];
	int ret;

	adump_msg_begin(&msg, &cap, scratch);
	if (!path || !out || (cfg && cfg->struct_size < sizeof(size_t))) {
		snprintf(msg, cap, "invalid arguments");
		return -ADUMP_ERR_CONFIG;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = (struct adump_scan_config)ADUMP_SCAN_CONFIG_INIT;
	adump_config_take(&s->cfg, sizeof(s->cfg), cfg);
	adump_threads_default(&s->cfg.thread_count);
	pthread_mutex_init(&s->side.packed_lock, NULL);
	ret = adump_compare_side_list(&s->side, path, !s->cfg.is_flat, msg, cap);
	if (ret == 0) {
		s->res = calloc(s->side.count + 1, sizeof(*s->res));
		if (!s->res) {
			snprintf(msg, cap, "out of memory");
			ret = -ENOMEM;
		}
	}
	if (ret < 0) {
		adump_scan_close(s);
		return ret;
	}
	*out = s;
	return 0;
}


/* ---- the element kernels -------------------------------------------------------------------
 * Almost every tensor is finite: a pass takes the largest magnitude's bits (sign cleared),
 * which is below the exponent-all-ones pattern exactly when every element is finite (and,
 * for float16, below 0x7bff = 65504 when none is at the limit). Only a piece that fails that
 * is counted element by element. */

struct bits {
	unsigned width;                 /* bytes per element: 2 or 4 */
	uint32_t magnitude;             /* sign cleared */
	uint32_t exponent;              /* exponent all ones: Inf (mantissa 0) or NaN */
	uint32_t limit;                 /* float16: the largest finite value; else exponent */
};

static bool bits_of(int32_t dtype, struct bits *b)
{
	if (dtype == ADUMP_DT_FLOAT)
		*b = (struct bits){ 4, 0x7fffffffu, 0x7f800000u, 0x7f800000u };
	else if (dtype == ADUMP_DT_FLOAT16)
		*b = (struct bits){ 2, 0x7fffu, 0x7c00u, 0x7bffu };
	else if (dtype == ADUMP_DT_BF16)
		*b = (struct bits){ 2, 0x7fffu, 0x7f80u, 0x7f80u };
	else
		return false;
	return true;
}

static uint32_t max_scalar(const struct bits *b, const unsigned char *p, size_t n)
{
	uint32_t m = 0;

	if (b->width == 4) {
		for (size_t i = 0; i < n; i++) {
			uint32_t v;

			memcpy(&v, p + 4 * i, 4);
			v &= b->magnitude;
			m = v > m ? v : m;
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			uint16_t v;

			memcpy(&v, p + 2 * i, 2);
			v &= (uint16_t)b->magnitude;
			m = v > m ? v : m;
		}
	}
	return m;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) static uint32_t max_avx2(const struct bits *b,
							  const unsigned char *p, size_t n)
{
	size_t per = 32 / b->width, i = 0, k;
	__m256i acc = _mm256_setzero_si256();
	uint32_t lanes[8], m;

	if (b->width == 4) {
		__m256i mask = _mm256_set1_epi32((int)b->magnitude);

		for (; i + per <= n; i += per)
			acc = _mm256_max_epu32(acc, _mm256_and_si256(mask, _mm256_loadu_si256(
						(const __m256i *)(p + 4 * i))));
	} else {
		__m256i mask = _mm256_set1_epi16((short)b->magnitude);

		for (; i + per <= n; i += per)
			acc = _mm256_max_epu16(acc, _mm256_and_si256(mask, _mm256_loadu_si256(
						(const __m256i *)(p + 2 * i))));
		/* 16 lanes of 16 bits into 8 of 32: the larger of each pair. */
		acc = _mm256_max_epu32(_mm256_and_si256(acc, _mm256_set1_epi32(0xffff)),
				       _mm256_srli_epi32(acc, 16));
	}
	_mm256_storeu_si256((__m256i *)lanes, acc);
	m = max_scalar(b, p + b->width * i, n - i);
	for (k = 0; k < 8; k++)
		m = lanes[k] > m ? lanes[k] : m;
	return m;
}
#endif

static uint32_t magnitude_max(const struct bits *b, const unsigned char *p, size_t n)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2"))
		return max_avx2(b, p, n);
#endif
	return max_scalar(b, p, n);
}

/* Count one piece's NaN, Inf and (float16) limit elements. */
static void count_piece(const struct bits *b, const unsigned char *p, size_t n,
			struct adump_scan_counts *c, bool *is_limit)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t v = 0;

		if (b->width == 4) {
			memcpy(&v, p + 4 * i, 4);
		} else {
			uint16_t h;

			memcpy(&h, p + 2 * i, 2);
			v = h;
		}
		v &= b->magnitude;
		if (v > b->exponent)
			c->nan_count++;
		else if (v == b->exponent)
			c->inf_count++;
		else if (v >= b->limit && b->limit != b->exponent)
			*is_limit = true;
	}
}

/* One tensor of 2- or 4-byte floats: NaN, Inf and limit counts, read piece by piece. Return:
 * 0 or the reader's error. */
static int scan_floats(struct adump_reader *rd, uint32_t tensor, const struct bits *b,
		       uint64_t bytes, unsigned char *buf, struct adump_scan_counts *c,
		       bool *is_limit)
{
	const unsigned char *mapped = adump_reader_map(rd, tensor);
	size_t step = STEP_BYTES - STEP_BYTES % b->width;
	uint64_t done = 0;

	while (done + b->width <= bytes) {
		size_t len = bytes - done < step ? (size_t)(bytes - done) : step;
		const unsigned char *p;
		size_t n;
		int ret;

		len -= len % b->width;
		if (mapped) {
			p = mapped + done;
		} else {
			ret = adump_reader_read(rd, tensor, done, buf, len);
			if (ret < 0)
				return ret;
			p = buf;
		}
		n = len / b->width;
		if (magnitude_max(b, p, n) >= b->limit)
			count_piece(b, p, n, c, is_limit);
		done += len;
	}
	return 0;
}

static void count_stat(struct adump_scan_counts *c, int32_t dtype, const double v[3],
		       const bool present[3])
{
	bool is_nan = false, is_inf = false, is_limit = false;

	for (int k = 0; k < 3; k++) {
		if (!present[k])
			continue;
		is_nan |= isnan(v[k]);
		is_inf |= isinf(v[k]);
		is_limit |= dtype == ADUMP_DT_FLOAT16 && fabs(v[k]) >= FP16_MAX;
	}
	c->nan_count += is_nan;
	c->inf_count += is_inf;
	c->limit_count += is_limit && !is_inf && !is_nan;
}

static bool is_bad(const struct adump_scan_counts *c)
{
	return c->nan_count || c->inf_count || c->limit_count;
}

/* @param: the parameter's name when the tensor is one of the module's parameters (msprobe's
 * "parameters.weight", or adump.torch's dfx_message naming the input), else NULL. */
static void first_set(struct scan_result *r, enum adump_tensor_kind kind, uint32_t index,
		      const char *param)
{
	if (!r->first[0])
		snprintf(r->first, sizeof(r->first), "%s:%u", adump_reader_kind_name(kind), index);
	if (kind != ADUMP_TENSOR_INPUT)
		return;
	if (!param)
		r->has_arg = true;
	if (r->first_input[0] && (param || r->first_input[0] != 't'))
		return;         /* an argument's is kept over a parameter's */
	if (param)
		snprintf(r->first_input, sizeof(r->first_input), "the %.64s", param);
	else
		snprintf(r->first_input, sizeof(r->first_input), "input:%u", index);
}

/* The name of input @index when adump.torch's dfx_message lists it among "parameters"
 * ({"parameters": {"weight": {"tensor": "input.1"}}}); NULL otherwise. Borrowed from @info. */
static const char *dfx_param(json_object *info, uint32_t index)
{
	json_object *params;
	char want[32];

	if (!info || !json_object_object_get_ex(info, "parameters", &params) ||
	    !json_object_is_type(params, json_type_object))
		return NULL;
	snprintf(want, sizeof(want), "input.%u", index);
	json_object_object_foreach(params, name, desc) {
		json_object *t;

		if (json_object_is_type(desc, json_type_object) &&
		    json_object_object_get_ex(desc, "tensor", &t) &&
		    json_object_is_type(t, json_type_string) &&
		    !strcmp(json_object_get_string(t), want))
			return name;
	}
	return NULL;
}

/* The parameter an msprobe entry's tensor is ("parameters.weight" -> "weight"), or NULL. */
static const char *ms_param(const struct cmp_file *f, enum adump_tensor_kind kind,
			    uint32_t index)
{
	const struct adump_msprobe_entry *e = &f->ms->entries[f->ms_entry];

	for (uint32_t i = 0; i < e->count; i++) {
		const struct adump_msprobe_tensor *t = &f->ms->tensors[e->first + i];

		if (t->kind == kind && t->index == index)
			return t->arg && !strncmp(t->arg, "parameters.", 11) ? t->arg + 11 : NULL;
	}
	return NULL;
}

/* A statistics dump: max, min and mean of each tensor as written. */
static int scan_stats(struct cmp_file *f, struct scan_result *r)
{
	struct adump_compare_stats st = { 0 };
	char msg[1024] = "";
	int ret;

	/* An msprobe entry's statistics are in its dump.json, read with the listing. */
	if (f->ms) {
		ret = adump_compare_stats_msprobe(f->ms, f->ms_entry, &st);
		if (ret < 0)
			snprintf(msg, sizeof(msg), "%s: %s", f->path, adump_strerror(ret));
		/* named as dump.json names it, as a tensor entry is by its header */
		if (!r->op_name && !(r->op_name = strdup(f->hname)))
			ret = -ENOMEM;
	} else {
		ret = adump_compare_stats_load(f->path, &st, msg, sizeof(msg));
	}

	if (ret == 0) {
		for (uint32_t i = 0; i < st.count; i++) {
			const struct adump_compare_stats_tensor *t = &st.tensors[i];
			bool is_out = t->t.info.kind == ADUMP_TENSOR_OUTPUT;
			struct adump_scan_counts *c = &r->counts[is_out];
			const double v[3] = { t->stat[0].value, t->stat[1].value, t->stat[2].value };
			const bool p[3] = { t->stat[0].is_present, t->stat[1].is_present,
					    t->stat[2].is_present };
			struct adump_scan_counts before = *c, scratch = { 0 };

			if (adump_compare_is_uninit(f->op_type, r->op_name ? r->op_name : f->op_name,
						    t->t.info.kind, t->t.index)) {
				count_stat(&scratch, t->t.info.dtype, v, p);
				r->has_uninit |= is_bad(&scratch);
				continue;
			}
			count_stat(c, t->t.info.dtype, v, p);
			if (memcmp(&before, c, sizeof(before)))
				first_set(r, t->t.info.kind, t->t.index,
					  f->ms ? ms_param(f, t->t.info.kind, t->t.index) : NULL);
		}
	} else if (ret != -ENOMEM) {
		r->message = strdup(msg);
		ret = r->message ? 0 : -ENOMEM;
	}
	adump_compare_stats_free(&st);
	return ret;
}

/* A tensor dump: each floating-point tensor streamed (@buf: STEP_BYTES); integers cannot
 * hold NaN or Inf and are not read. */
static int scan_tensors(struct adump_scan *s, struct adump_reader *rd, unsigned char *buf,
			struct cmp_file *f, struct scan_result *r)
{
	const struct adump_reader_header *h;
	json_object *info = NULL;
	int ret;

	if (f->ms) {
		/* msprobe's layout: the entry's tensors from its .pt files, as compare reads them */
		ret = adump_msprobe_open(rd, f->ms, f->ms_entry, false);
	} else if (f->is_packed) {
		pthread_mutex_lock(&s->side.packed_lock);
		ret = adump_reader_open_packed(rd, s->side.packed, &f->entry, false);
		pthread_mutex_unlock(&s->side.packed_lock);
	} else {
		ret = adump_reader_open(rd, f->path);
	}
	if (ret < 0)
		goto fail;
	h = adump_reader_header(rd);
	if (h->op_name && h->op_name[0]) {
		r->op_name = strdup(h->op_name);
		if (!r->op_name) {
			adump_reader_close(rd);
			return -ENOMEM;
		}
	}
	for (uint32_t i = 0; i < h->attr_count && !r->module; i++)
		if (h->attrs[i].name && !strcmp(h->attrs[i].name, "module") && h->attrs[i].value &&
		    h->attrs[i].value[0] && !(r->module = strdup(h->attrs[i].value))) {
			adump_reader_close(rd);
			return -ENOMEM;
		}
	if (!f->ms && h->dfx_message && strstr(h->dfx_message, "\"parameters\""))
		info = json_tokener_parse(h->dfx_message);
	for (uint32_t i = 0; i < h->tensor_count; i++) {
		const struct adump_reader_tensor *t = &h->tensors[i];
		struct adump_scan_counts *c, before, scratch;
		bool is_limit = false, is_uninit;
		struct bits b;

		if (t->info.kind != ADUMP_TENSOR_INPUT && t->info.kind != ADUMP_TENSOR_OUTPUT)
			continue;
		c = &r->counts[t->info.kind == ADUMP_TENSOR_OUTPUT];
		is_uninit = adump_compare_is_uninit(f->op_type, r->op_name ? r->op_name : f->op_name,
						    t->info.kind, t->index);
		if (is_uninit) {
			memset(&scratch, 0, sizeof(scratch));
			c = &scratch;
		}
		before = *c;
		if (bits_of(t->info.dtype, &b)) {
			ret = scan_floats(rd, i, &b, t->info.bytes, buf, c, &is_limit);
		} else if (t->info.dtype == ADUMP_DT_DOUBLE) {
			struct adump_reader_stats st;

			ret = adump_reader_tensor_stats(rd, i, &st);
			c->nan_count += ret == 0 ? st.nan_count : 0;
			c->inf_count += ret == 0 ? st.inf_count : 0;
		} else {
			continue;
		}
		if (ret == -ENOMEM)
			break;
		if (ret < 0)
			goto fail;
		r->bytes += t->info.bytes;
		c->limit_count += is_limit;
		if (is_uninit)
			r->has_uninit |= is_bad(c);
		else if (memcmp(&before, c, sizeof(before)))
			first_set(r, t->info.kind, t->index,
				  f->ms ? ms_param(f, t->info.kind, t->index)
					: t->info.kind == ADUMP_TENSOR_INPUT ? dfx_param(info, t->index)
									     : NULL);
	}
	json_object_put(info);
	adump_reader_close(rd);
	return ret == -ENOMEM ? ret : 0;
fail:
	json_object_put(info);
	r->message = strdup(adump_reader_error(rd));
	adump_reader_close(rd);
	return r->message ? 0 : -ENOMEM;
}

static void *scan_worker(void *arg)
{
	struct adump_scan *s = arg;
	struct adump_reader *rd = NULL;
	unsigned char *buf = malloc(STEP_BYTES);
	intptr_t ret = buf ? adump_reader_create(&rd) : -ENOMEM;
	size_t i;

	while (ret == 0 &&
	       (i = atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed)) < s->side.count) {
		struct cmp_file *f = &s->side.files[i];

		ret = f->is_stats ? scan_stats(f, &s->res[i])
				  : scan_tensors(s, rd, buf, f, &s->res[i]);
		atomic_fetch_add_explicit(&s->bytes, s->res[i].bytes, memory_order_relaxed);
	}
	adump_reader_destroy(rd);
	free(buf);
	return (void *)ret;
}

static int exec_cmp(const void *a, const void *b)
{
	const struct cmp_file *x = a, *y = b;

	if (x->timestamp != y->timestamp)
		return x->timestamp < y->timestamp ? -1 : 1;
	return strcmp(x->path, y->path);
}

const char *adump_scan_kind_name(enum adump_scan_kind kind)
{
	static const char *const names[] = { "none", "origin", "reached", "unreadable", "entered",
					     "enclosing", "uninitialized" };

	return (unsigned)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "none";
}

/* A module-level dump's module path and direction, from its name: "Module.0.fc.Linear.
 * forward.0" -> "0.fc", "forward" (separator '.' or, in a CANN file name, '_'). Return:
 * false when @name is no module call's (an op, a parameters_grad entry). */
static bool module_path(const char *name, const char **path, size_t *path_len,
			const char **dir, size_t *dir_len)
{
	const char *field[3], *end;
	char sep;

	if (!name || strncmp(name, "Module", 6) || (name[6] != '.' && name[6] != '_'))
		return false;
	sep = name[6];
	end = name + strlen(name);
	/* the last three fields: <Class>, <direction>, <call number> */
	for (int k = 2; k >= 0; k--) {
		while (end > name + 6 && end[-1] != sep)
			end--;
		if (end <= name + 6)
			return false;
		field[k] = end--;
	}
	*dir = field[1];
	*dir_len = (size_t)(field[2] - field[1] - 1);
	if ((*dir_len != 7 || strncmp(*dir, "forward", 7)) &&
	    (*dir_len != 8 || strncmp(*dir, "backward", 8)))
		return false;
	*path = name + 7;
	*path_len = field[0] > name + 7 ? (size_t)(field[0] - 1 - *path) : 0;
	return true;
}

/* Whether dump @inner ran inside module call @outer: its module path lies strictly below
 * @outer's (or @outer is the root's), in the same direction. */
static bool is_inside(const char *outer, const char *inner)
{
	const char *po, *pi, *dout, *din;
	size_t lo, li, ldo, ldi;

	if (!module_path(outer, &po, &lo, &dout, &ldo) || !module_path(inner, &pi, &li, &din, &ldi))
		return false;
	if (ldo != ldi || strncmp(dout, din, ldo))
		return false;
	if (!lo)
		return li > 0;
	return li > lo && !strncmp(po, pi, lo) && pi[lo] == outer[6];
}

/* Whether dump @j ran inside module call @name and made non-finite outputs. */
static bool made_inside(const struct adump_scan *s, size_t j, const char *name, bool *is_in)
{
	const struct scan_result *g = &s->res[j];

	*is_in = is_inside(name, g->op_name ? g->op_name : s->side.files[j].op_name);
	return *is_in && !g->message && is_bad(&g->counts[1]);
}

/* The first op that ran inside module call @i (@name) and made non-finite outputs, among the
 * dumps right before it that ran inside it (a call's forward dump comes after its
 * children's) and, for a backward call, those right after it (adump.torch dumps a module's
 * backward before its children's). NULL: none. */
static const char *child_made(const struct adump_scan *s, size_t i, const char *name)
{
	size_t first = SIZE_MAX;
	bool is_in = true;

	for (size_t j = i; j-- > 0 && is_in;)
		if (made_inside(s, j, name, &is_in))
			first = j;
	if (first == SIZE_MAX && strstr(name, "backward")) {
		is_in = true;
		for (size_t j = i + 1; j < s->side.count && is_in && first == SIZE_MAX; j++)
			if (made_inside(s, j, name, &is_in))
				first = j;
	}
	if (first == SIZE_MAX)
		return NULL;
	return s->res[first].op_name ? s->res[first].op_name : s->side.files[first].op_name;
}

/* Sort the anomalous dumps (in execution order) into kinds: non-finite inputs are "entered"
 * when they are all parameters or no op before made any, else "reached"; non-finite outputs
 * from finite inputs are "origin", unless the dump is a module call and an op that ran inside
 * it made them ("enclosing"), or it is a parameters_grad entry after them ("reached").
 * NaN/Inf only in uninitialized memory: "uninitialized". */
static int ops_classify(struct adump_scan *s)
{
	bool has_made = false;

	for (size_t i = 0; i < s->side.count; i++) {
		const struct cmp_file *f = &s->side.files[i];
		struct scan_result *r = &s->res[i];
		const char *name = r->op_name ? r->op_name : f->op_name;
		bool is_in = is_bad(&r->counts[0]), is_out = is_bad(&r->counts[1]);
		enum adump_scan_kind kind = 0;
		const char *inner = NULL;

		if (r->message) {
			kind = ADUMP_SCAN_UNREADABLE;
		} else if (is_in && (!r->has_arg || !has_made)) {
			kind = ADUMP_SCAN_ENTERED;
			if (asprintf(&r->note, "first seen in %s of %s%s%s%s, made by no captured op",
				     r->first_input, name, r->module ? " (in " : "",
				     r->module ? r->module : "", r->module ? ")" : "") < 0)
				return -ENOMEM;
		} else if (is_in) {
			kind = ADUMP_SCAN_REACHED;
		} else if (is_out) {
			kind = ADUMP_SCAN_ORIGIN;
			inner = child_made(s, i, name);
			if (inner) {
				kind = ADUMP_SCAN_ENCLOSING;
				if (asprintf(&r->note, "made inside it, by %s", inner) < 0)
					return -ENOMEM;
			} else if (has_made && strstr(name, "parameters_grad")) {
				kind = ADUMP_SCAN_REACHED;      /* a backward's gradient, after them */
			}
		} else if (r->has_uninit) {
			kind = ADUMP_SCAN_UNINITIALIZED;
		}
		if (!kind)
			continue;
		has_made |= is_out || is_in;
		s->ops[s->op_count++] = (struct adump_scan_op){
			.kind = kind, .order = i, .timestamp = f->timestamp, .path = f->path,
			.op_type = f->op_type, .op_name = name,
			.inputs = r->counts[0], .outputs = r->counts[1], .first_tensor = r->first,
			.message = r->message ? r->message : r->note ? r->note : "",
		};
	}
	return 0;
}

int adump_scan_run(struct adump_scan *s)
{
	unsigned n, started = 0;
	pthread_t *threads;
	int ret = 0;

	if (!s || s->is_run)
		return -ADUMP_ERR_STATE;
	s->is_run = true;
	/* Execution order: the dumps' timestamps (in their names), then paths. */
	qsort(s->side.files, s->side.count, sizeof(*s->side.files), exec_cmp);
	n = s->cfg.thread_count;
	if (n > s->side.count)
		n = s->side.count ? (unsigned)s->side.count : 1;
	threads = calloc(n, sizeof(*threads));
	if (!threads)
		return -ENOMEM;
	for (started = 1; started < n; started++) {
		ret = -pthread_create(&threads[started], NULL, scan_worker, s);
		if (ret < 0)
			break;
	}
	/* The calling thread is worker 0. */
	ret = adump_workers_finish(threads, started, scan_worker, s, ret);
	free(threads);
	if (ret < 0)
		return ret;
	s->ops = calloc(s->side.count + 1, sizeof(*s->ops));
	if (!s->ops)
		return -ENOMEM;
	return ops_classify(s);
}

uint64_t adump_scan_dump_count(const struct adump_scan *s)
{
	return s ? s->side.count : 0;
}

uint64_t adump_scan_bytes(const struct adump_scan *s)
{
	return s ? atomic_load_explicit(&s->bytes, memory_order_relaxed) : 0;
}

uint64_t adump_scan_op_count(const struct adump_scan *s)
{
	return s ? s->op_count : 0;
}

const struct adump_scan_op *adump_scan_op(const struct adump_scan *s, uint64_t i)
{
	return s && i < s->op_count ? &s->ops[i] : NULL;
}

void adump_scan_close(struct adump_scan *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->res && i < s->side.count; i++) {
		free(s->res[i].op_name);
		free(s->res[i].message);
		free(s->res[i].note);
		free(s->res[i].module);
	}
	free(s->res);
	free(s->ops);
	adump_compare_side_fini(&s->side);
	pthread_mutex_destroy(&s->side.packed_lock);
	free(s);
}
