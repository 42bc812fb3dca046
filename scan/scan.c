/* SPDX-License-Identifier: Apache-2.0 */
/* `adump scan` (adump/scan.h): every dump of one capture read on a pool of threads for NaN,
 * Inf and float16 values at the dtype's limit (the counting kernels: scan_kernels.c); then, in
 * execution order (timestamps), the op that made them and the ops they reached (scan_order.c).
 * Listing is compare's (compare_list.c). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "adump/scan.h"
#include "compare/compare.h"
#include "scan/scan_int.h"

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

			if (adump_is_uninit(f->op_type, r->op_name ? r->op_name : f->op_name,
						    t->t.info.kind, t->t.index)) {
				count_stat(&scratch, t->t.info.dtype, v, p);
				r->has_uninit |= adump_scan_is_bad(&scratch);
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
		struct scan_bits b;

		if (t->info.kind != ADUMP_TENSOR_INPUT && t->info.kind != ADUMP_TENSOR_OUTPUT)
			continue;
		c = &r->counts[t->info.kind == ADUMP_TENSOR_OUTPUT];
		is_uninit = adump_is_uninit(f->op_type, r->op_name ? r->op_name : f->op_name,
						    t->info.kind, t->index);
		if (is_uninit) {
			memset(&scratch, 0, sizeof(scratch));
			c = &scratch;
		}
		before = *c;
		if (adump_scan_bits_of(t->info.dtype, &b)) {
			ret = adump_scan_floats(rd, i, &b, t->info.bytes, buf, c, &is_limit);
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
			r->has_uninit |= adump_scan_is_bad(c);
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
	return adump_scan_classify(s);
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
