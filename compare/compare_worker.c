/* SPDX-License-Identifier: Apache-2.0 */
/* A compare worker's readers and buffers: opening a side of an op (an ordinary, packed or
 * msprobe dump, or FFTS+ subtask dumps merged as msaccucmp merges them) and streaming a
 * tensor pair through the accumulator in chunks, with the reads asked for ahead. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/compare_int.h"

/* Bytes of each tensor asked for ahead of the reads (posix_fadvise WILLNEED), renewed when
 * half of the window has been read. */
#define PREFETCH_BYTES ((uint64_t)64 << 20)

void adump_compare_worker_fini(struct cmp_worker *w)
{
	for (int s = 0; s < 2; s++) {
		for (uint32_t k = 1; k < w->sub_cap[s]; k++)
			adump_reader_destroy(w->subs[s][k]);
		free(w->subs[s]);
		adump_reader_destroy(w->r[s]);
		free(w->raw[s]);
		free(w->val[s]);
	}
	free(w->alg_msgs);
}

int adump_compare_worker_init(struct cmp_worker *w, struct adump_compare *c)
{
	memset(w, 0, sizeof(*w));
	w->c = c;
	w->alg_msgs = calloc(ADUMP_COMPARE_ALG_COUNT, MSG_BYTES);
	for (int s = 0; s < 2; s++) {
		if (adump_reader_create(&w->r[s]) < 0)
			goto err;
		w->raw[s] = malloc(c->cfg.chunk_elements * 8);
		w->val[s] = malloc(c->cfg.chunk_elements * sizeof(float));
		if (!w->raw[s] || !w->val[s])
			goto err;
	}
	if (!w->alg_msgs)
		goto err;
	return 0;
err:
	adump_compare_worker_fini(w);
	return -ENOMEM;
}

static int file_open(struct cmp_worker *w, int s, struct adump_reader *r, struct cmp_file *f)
{
	struct cmp_side *sd = &w->c->side[s];
	int ret;

	if (f->ms)
		return adump_msprobe_open(r, f->ms, f->ms_entry, false);
	if (!f->is_packed)
		return adump_reader_open(r, f->path);
	pthread_mutex_lock(&sd->packed_lock);
	ret = adump_reader_open_packed(r, sd->packed, &f->entry, false);
	pthread_mutex_unlock(&sd->packed_lock);
	return ret;
}

/* Open subtask dumps 1..count-1 of side @s after the first (in w->r[s]). */
static int subs_open(struct cmp_worker *w, int s, struct cmp_file *files, uint32_t count)
{
	if (count > w->sub_cap[s]) {
		struct adump_reader **subs = realloc(w->subs[s], count * sizeof(*subs));

		if (!subs)
			return -ENOMEM;
		for (uint32_t k = w->sub_cap[s]; k < count; k++)
			subs[k] = NULL;
		w->subs[s] = subs;
		w->sub_cap[s] = count;
	}
	w->subs[s][0] = w->r[s];
	for (uint32_t k = 1; k < count; k++) {
		int ret;

		if (!w->subs[s][k] && adump_reader_create(&w->subs[s][k]) < 0)
			return -ENOMEM;
		ret = file_open(w, s, w->subs[s][k], &files[k]);
		if (ret < 0)
			return ret;
		w->sub_open[s] = k;
	}
	return 0;
}

void adump_compare_subs_close(struct cmp_worker *w, int s)
{
	for (uint32_t k = 1; k <= w->sub_open[s]; k++)
		adump_reader_close(w->subs[s][k]);
	w->sub_open[s] = 0;
	adump_compare_ffts_free(w->merged[s]);
	w->merged[s] = NULL;
}

/* msaccucmp's name for a merged dump: the first subtask's first four fields, then "*". */
static void merged_path_make(char *buf, size_t cap, const char *first)
{
	const char *base = strrchr(first, '/'), *p;
	int dots = 0;

	base = base ? base + 1 : first;
	for (p = base; *p && dots < 4; p++)
		dots += *p == '.';
	snprintf(buf, cap, "%.*s%s*", (int)(p - first), first, dots == 4 ? "" : ".");
}

/* An FFTS+ op's subtask dumps on side @s (in msaccucmp's order: by thread, or by manual
 * slice): merged along their cut axis, or when the cut names no axis the one with the latest
 * timestamp; without thread attributes (which msaccucmp cannot read either) the last. Return:
 * 0 with w->r[s] (and *h) ready; an msaccucmp error code with @text set; -ENOMEM. */
static int ffts_open(struct cmp_worker *w, struct cmp_op *op, int s,
		     const struct adump_reader_header **h, char *text, size_t cap)
{
	struct cmp_file *files = op->first[s], *pick = op->file[s];
	uint32_t n = op->count[s];
	struct adump_compare_ffts_attrs a;
	char why[1024];
	int ret;

	if (file_open(w, s, w->r[s], &files[0]) < 0) {
		snprintf(text, cap, "[%s] %s", op->name, adump_reader_error(w->r[s]));
		return 18;
	}
	ret = adump_compare_ffts_attrs_parse(adump_reader_header(w->r[s]), &a, why, sizeof(why));
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0) {
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s: %u FFTS+ subtask dumps without "
			  "thread attributes (%s): compared by the last, %s", op->name, n, why,
			  pick->path);
	} else {
		if (a.slice_count != (int64_t)n)
			adump_log(ADUMP_LOG_WARN, "reader", "compare: This is a FFTS+ mode dump data "
				  "%s, The number of files does not match the number of thread "
				  "(instance slice num): %u files, slice_instance_num %lld", op->name,
				  n, (long long)a.slice_count);
		if (!a.has_cut) {
			for (uint32_t k = 0; k < n; k++)
				if (files[k].timestamp >= pick->timestamp || k == 0)
					pick = &files[k];
			adump_log(ADUMP_LOG_WARN, "reader", "compare: %s: The cut axis of Dump data "
				  "is invalid. The current compare dump file is %s (of %u)", op->name,
				  pick->path, n);
		}
	}
	if (ret < 0 || !a.has_cut) {
		adump_compare_ffts_attrs_free(&a);
		w->path[s] = pick->path;
		if (pick != &files[0]) {
			adump_reader_close(w->r[s]);
			if (file_open(w, s, w->r[s], pick) < 0) {
				snprintf(text, cap, "[%s] %s", op->name, adump_reader_error(w->r[s]));
				return 18;
			}
		}
		*h = adump_reader_header(w->r[s]);
		return 0;
	}
	ret = subs_open(w, s, files, n);
	if (ret < 0) {
		adump_compare_ffts_attrs_free(&a);
		if (ret == -ENOMEM)
			return ret;
		snprintf(text, cap, "[%s] %s", op->name,
			 adump_reader_error(w->subs[s][w->sub_open[s] + 1]));
		return 18;
	}
	ret = adump_compare_ffts_merge(&a, w->subs[s], n, &w->merged[s], why, sizeof(why));
	adump_compare_ffts_attrs_free(&a);
	if (ret) {
		if (ret > 0)
			snprintf(text, cap, "[%s] FFTS+ subtask dumps of %s: %s", op->name,
				 s == MY ? "my output" : "the ground truth", why);
		return ret;
	}
	merged_path_make(w->merged_path[s], sizeof(w->merged_path[s]), files[0].path);
	w->path[s] = w->merged_path[s];
	adump_log(ADUMP_LOG_INFO, "reader", "compare: This is a FFTS+ mode dump data %s, output "
		  "data has been merged, new file path is %s", op->name, w->path[s]);
	*h = adump_compare_ffts_header(w->merged[s]);
	return 0;
}

int adump_compare_side_open(struct cmp_worker *w, struct cmp_op *op, int s,
			    const struct adump_reader_header **h, char *text, size_t cap)
{
	w->path[s] = op->file[s]->path;
	if (op->file[s]->is_ffts && op->count[s] > 1)
		return ffts_open(w, op, s, h, text, cap);
	if (file_open(w, s, w->r[s], op->file[s]) < 0) {
		snprintf(text, cap, "[%s] %s", op->name, adump_reader_error(w->r[s]));
		return 18;
	}
	*h = adump_reader_header(w->r[s]);
	return 0;
}

int adump_compare_tensor_stream(struct cmp_worker *w, const uint32_t idx[2], uint64_t count,
				const int32_t dtype[2], bool has_kl, struct adump_compare_acc *acc)
{
	size_t chunk = w->c->cfg.chunk_elements;
	uint32_t eb[2] = { adump_compare_elem_bytes(dtype[MY]), adump_compare_elem_bytes(dtype[GOLDEN]) };
	/* float32 needs no conversion: the metrics read the raw chunk itself (no copy, and half
	 * the bytes in the cache). Its alignment is malloc's. */
	const float *val[2];

	for (int s = 0; s < 2; s++)
		val[s] = dtype[s] == ADUMP_DT_FLOAT ? (const float *)w->raw[s] : w->val[s];

	adump_compare_acc_init(acc);
	acc->has_msprobe = w->c->cfg.has_msprobe;
	w->advised[0] = w->advised[1] = 0;
	/* Cleared by the first chunk whose bytes differ: two runs that agree up to an op (what a
	 * compare looks for) cost one pass over each of its tensors, not two. */
	acc->is_identical = has_kl && dtype[MY] == dtype[GOLDEN];
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1 && !(has_kl && adump_compare_kl_needed(acc) && !acc->is_identical))
			break;
		for (uint64_t off = 0; off < count; off += chunk) {
			size_t n = count - off < chunk ? (size_t)(count - off) : chunk;

			/* A tensor that fit in one chunk is still in the buffers. */
			if (!(pass == 1 && count <= chunk)) {
				for (int s = 0; s < 2; s++) {
					/* Keep the kernel reading ahead of us: from a cold cache the
					 * two files' own readahead alone left each read waiting. */
					uint64_t at = off * eb[s], end = count * eb[s];

					if (pass == 0 && at >= w->advised[s] && at < end &&
					    !w->merged[s]) {
						uint64_t len = end - at < PREFETCH_BYTES ? end - at
											 : PREFETCH_BYTES;

						adump_reader_willneed(w->r[s], idx[s], at, len);
						w->advised[s] = at + len / 2;
					}
					struct adump_reader *r = w->r[s];
					int ret = w->merged[s] ?
						adump_compare_ffts_read(w->merged[s], idx[s], off * eb[s],
									w->raw[s], n * eb[s], &r) :
						adump_reader_read(r, idx[s], off * eb[s], w->raw[s],
								  n * eb[s]);

					if (ret < 0) {
						snprintf(w->msg, sizeof(w->msg), "%s",
							 adump_reader_error(r)[0] ? adump_reader_error(r)
										  : adump_strerror(ret));
						return ret;
					}
					if (pass == 0)
						atomic_fetch_add_explicit(&w->c->bytes[s], n * eb[s],
									  memory_order_relaxed);
					if (dtype[s] != ADUMP_DT_FLOAT)
						adump_compare_to_float(dtype[s], w->raw[s], n, w->val[s]);
				}
			}
			if (pass == 0 && acc->is_identical &&
			    memcmp(w->raw[MY], w->raw[GOLDEN], n * eb[MY]) != 0)
				acc->is_identical = false;
			if (pass == 0)
				adump_compare_acc_add(acc, val[MY], val[GOLDEN], n);
			else
				adump_compare_acc_kl(acc, val[MY], val[GOLDEN], n);
		}
	}
	return 0;
}
