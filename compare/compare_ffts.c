/* SPDX-License-Identifier: Apache-2.0 */
/* FFTS+ subtask dumps merged as msaccucmp merges them (dump_parse/ffts_parser.py): an op cut
 * into threads (automatic mode) or manual slices leaves one dump per subtask, and the op is
 * compared as one dump whose outputs are the subtasks' outputs concatenated along the cut
 * axis. The first subtask's DumpData.attr[0] holds the cut as JSON (parsed with json-c):
 *
 *     {"threadMode": <auto?>, "slice_instance_num": <subtasks>,
 *      "outputCutList": [[<1 or the cut, per dim>, ...], ...],          one per output
 *      "output_tensor_slice": [[[{"lower": l, "higher": h}, ...], ...], ...]}
 *                                  per thread, per output, per dim (automatic mode only)
 *
 * An output's cut axis is the first dim whose outputCutList entry is not 1; an output without
 * one is the first subtask's. In automatic mode each subtask's output has the shape its
 * output_tensor_slice gives; in manual mode the shape in its own header. The merged outputs
 * are never built: adump_compare_ffts_read() gathers the bytes of any range of one from the
 * subtasks' files, through a window per subtask when the pieces are small (a cut near the
 * last axis leaves runs of a few elements). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "compare/compare_int.h"

#define WINDOW_BYTES (64u << 10)        /* read ahead in a subtask for runs below half of it */
#define SLICES_MAX (1u << 16)           /* thread x output shapes a cut may list */

/* What was read last of one subtask's tensor, ahead of the run that asked. */
struct ffts_window {
	uint32_t tensor;
	uint64_t at;                    /* payload offset of buf[0] */
	size_t len;                     /* 0: empty */
	unsigned char *buf;
};

/* One merged output: which tensor of each subtask file it gathers, and how. */
struct ffts_output {
	int axis;                       /* -1: the first subtask's tensor as it is */
	uint32_t eb;                    /* element bytes */
	uint64_t inner;                 /* elements of one step along the axis */
	uint64_t slab;                  /* elements of one step of the dim before it: total * inner */
	uint64_t *along;                /* per subtask: its extent along the axis */
	uint64_t *start;                /* per subtask: where that begins in the merged extent */
	uint32_t *tensor;               /* per subtask: the tensor's index in its file */
};

struct adump_compare_ffts {
	struct adump_reader_header h;   /* the merged dump: inputs, then merged outputs */
	struct adump_reader_tensor *tensors;
	struct ffts_output *outs;
	uint32_t out_count;
	uint32_t first_out;             /* index of the first output in h.tensors */
	struct adump_reader **r;        /* per subtask, open; borrowed */
	uint32_t file_count;
	struct ffts_window *win;        /* per subtask, made at the first small run */
};

void adump_compare_ffts_attrs_free(struct adump_compare_ffts_attrs *a)
{
	free(a->cut_axis);
	free(a->slices);
	memset(a, 0, sizeof(*a));
}

static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* output_tensor_slice[thread][output] as dims (higher - lower). */
static int slices_parse(json_object *all, struct adump_compare_ffts_attrs *a, char *msg,
			size_t cap)
{
	size_t threads = json_object_array_length(all);

	if (a->output_count && threads > SLICES_MAX / a->output_count) {
		snprintf(msg, cap, "output_tensor_slice lists %zu threads of %u outputs, more than "
			 "%u shapes", threads, a->output_count, SLICES_MAX);
		return -ADUMP_ERR_CORRUPT;
	}
	a->thread_count = (uint32_t)threads;
	a->slices = calloc(threads * a->output_count + 1, sizeof(*a->slices));
	if (!a->slices)
		return -ENOMEM;
	for (size_t k = 0; k < threads; k++) {
		json_object *outs = json_object_array_get_idx(all, k);

		if (!json_object_is_type(outs, json_type_array))
			goto bad;
		for (size_t i = 0; i < a->output_count && i < json_object_array_length(outs); i++) {
			json_object *dims = json_object_array_get_idx(outs, i);
			struct adump_compare_ffts_shape *sh = &a->slices[k * a->output_count + i];

			if (!json_object_is_type(dims, json_type_array) ||
			    json_object_array_length(dims) > ADUMP_MAX_DIMS)
				goto bad;
			sh->is_set = true;
			sh->dim_count = (uint32_t)json_object_array_length(dims);
			for (uint32_t d = 0; d < sh->dim_count; d++) {
				json_object *r = json_object_array_get_idx(dims, d);
				json_object *lo = member(r, "lower"), *hi = member(r, "higher");
				int64_t l = lo ? json_object_get_int64(lo) : 0;
				int64_t h = hi ? json_object_get_int64(hi) : 0;

				if (!lo || !hi || h < l)
					goto bad;
				sh->dims[d] = (uint64_t)h - (uint64_t)l;
			}
		}
	}
	return 0;
bad:
	snprintf(msg, cap, "output_tensor_slice is not a list of {lower, higher} per thread, "
		 "output and dim");
	return -ADUMP_ERR_CORRUPT;
}

int adump_compare_ffts_attrs_parse(const struct adump_reader_header *base,
				   struct adump_compare_ffts_attrs *a, char *msg, size_t cap)
{
	json_object *o, *v, *cuts;
	int ret = 0;

	memset(a, 0, sizeof(*a));
	if (!base->attr_count) {
		snprintf(msg, cap, "the first subtask's dump has no attribute");
		return -ADUMP_ERR_NOT_FOUND;
	}
	o = json_tokener_parse(base->attrs[0].value ? base->attrs[0].value : "");
	if (!o || !json_object_is_type(o, json_type_object)) {
		snprintf(msg, cap, "its first attribute (%s) is not a JSON object",
			 base->attrs[0].name ? base->attrs[0].name : "");
		json_object_put(o);
		return -ADUMP_ERR_CORRUPT;
	}
	v = member(o, "threadMode");
	a->is_auto = v && json_object_get_boolean(v);
	v = member(o, "slice_instance_num");
	a->slice_count = v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
	cuts = member(o, "outputCutList");
	if (cuts && json_object_is_type(cuts, json_type_array)) {
		a->output_count = (uint32_t)json_object_array_length(cuts);
		a->cut_axis = calloc(a->output_count + 1, sizeof(*a->cut_axis));
		if (!a->cut_axis) {
			ret = -ENOMEM;
			goto out;
		}
		for (uint32_t i = 0; i < a->output_count; i++) {
			json_object *dims = json_object_array_get_idx(cuts, i);

			a->cut_axis[i] = -1;
			if (!json_object_is_type(dims, json_type_array)) {
				snprintf(msg, cap, "outputCutList[%u] is not a list", i);
				ret = -ADUMP_ERR_CORRUPT;
				goto out;
			}
			for (size_t d = json_object_array_length(dims); d-- > 0;)
				if (json_object_get_int64(json_object_array_get_idx(dims, d)) != 1)
					a->cut_axis[i] = (int)d;
			if (a->cut_axis[i] >= 0)
				a->has_cut = true;
		}
	}
	v = member(o, "output_tensor_slice");
	if (a->is_auto && a->has_cut) {
		if (!v || !json_object_is_type(v, json_type_array)) {
			snprintf(msg, cap, "automatic mode without output_tensor_slice");
			ret = -ADUMP_ERR_CORRUPT;
			goto out;
		}
		ret = slices_parse(v, a, msg, cap);
	}
out:
	json_object_put(o);
	if (ret < 0)
		adump_compare_ffts_attrs_free(a);
	return ret;
}

void adump_compare_ffts_free(struct adump_compare_ffts *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; m->outs && i < m->out_count; i++) {
		free(m->outs[i].along);
		free(m->outs[i].start);
		free(m->outs[i].tensor);
	}
	for (uint32_t k = 0; m->win && k < m->file_count; k++)
		free(m->win[k].buf);
	free(m->win);
	free(m->outs);
	free(m->tensors);
	free(m);
}

static void shape_of(const struct adump_tensor *t, struct adump_compare_ffts_shape *sh)
{
	sh->is_set = true;
	sh->dim_count = t->dim_count;
	memcpy(sh->dims, t->dims, sizeof(sh->dims));
}

static uint64_t shape_elements(const struct adump_compare_ffts_shape *sh)
{
	return adump_compare_dims_elements(sh->dims, sh->dim_count);
}

/* Output @i of every subtask: shapes checked against the bytes, then joined along the cut. */
static int output_plan(struct adump_compare_ffts *m, const struct adump_compare_ffts_attrs *a,
		       uint32_t i, struct adump_tensor *merged, char *msg, size_t cap)
{
	struct ffts_output *o = &m->outs[i];
	struct adump_compare_ffts_shape sh, first;
	uint64_t total = 0;
	char text[2][ADUMP_MAX_DIMS * 22 + 3];

	o->axis = a->cut_axis[i];
	o->along = calloc(m->file_count, sizeof(*o->along));
	o->start = calloc(m->file_count, sizeof(*o->start));
	o->tensor = calloc(m->file_count, sizeof(*o->tensor));
	if (!o->along || !o->start || !o->tensor)
		return -ENOMEM;
	for (uint32_t k = 0; k < m->file_count; k++) {
		const struct adump_reader_header *h = adump_reader_header(m->r[k]);
		const struct adump_tensor *t;

		o->tensor[k] = h->kind_count[ADUMP_TENSOR_INPUT] + i;
		t = &h->tensors[o->tensor[k]].info;
		if (k == 0) {
			o->eb = adump_compare_elem_bytes(t->dtype);
		} else if (t->dtype != merged->dtype) {
			snprintf(msg, cap, "output %u of subtask %u is %s, of subtask 0 %s", i, k,
				 adump_compare_dtype_name(t->dtype),
				 adump_compare_dtype_name(merged->dtype));
			return 11;
		}
		if (!o->eb) {
			snprintf(msg, cap, "output %u: data type %s has no element size", i,
				 adump_compare_dtype_name(t->dtype));
			return 11;
		}
		if (a->is_auto) {
			if (k >= a->thread_count || !a->slices[k * a->output_count + i].is_set) {
				snprintf(msg, cap, "output_tensor_slice has no shape for thread %u, "
					 "output %u", k, i);
				return 40;
			}
			sh = a->slices[k * a->output_count + i];
		} else {
			shape_of(t, &sh);
		}
		/* msaccucmp's check_shape_match(): the data must fill the shape exactly. */
		if (t->bytes / o->eb != shape_elements(&sh)) {
			adump_compare_dims_text(sh.dims, sh.dim_count, "[]", text[0],
						sizeof(text[0]));
			snprintf(msg, cap, "The output_data shape %llu doesn't match the shape in dump "
				 "file %s (subtask %u, output %u)",
				 (unsigned long long)(t->bytes / o->eb), text[0], k, i);
			return 40;
		}
		if (k == 0)
			first = sh;
		if (o->axis < 0)
			continue;
		bool is_joinable = sh.dim_count == first.dim_count && (uint32_t)o->axis < sh.dim_count;

		for (uint32_t d = 0; is_joinable && d < sh.dim_count; d++)
			is_joinable = d == (uint32_t)o->axis || sh.dims[d] == first.dims[d];
		if (!is_joinable) {
			adump_compare_dims_text(first.dims, first.dim_count, "[]", text[0],
						sizeof(text[0]));
			adump_compare_dims_text(sh.dims, sh.dim_count, "[]", text[1],
						sizeof(text[1]));
			snprintf(msg, cap, "output %u cannot be joined along axis %d: subtask 0 is %s, "
				 "subtask %u %s", i, o->axis, text[0], k, text[1]);
			return 11;
		}
		o->along[k] = sh.dims[o->axis];
		o->start[k] = total;
		total += sh.dims[o->axis];
	}
	if (o->axis >= 0) {
		o->inner = 1;
		for (uint32_t d = (uint32_t)o->axis + 1; d < first.dim_count; d++)
			o->inner *= first.dims[d];
		o->slab = total * o->inner;
		first.dims[o->axis] = total;
	}
	merged->dim_count = first.dim_count;
	memcpy(merged->dims, first.dims, sizeof(merged->dims));
	merged->bytes = shape_elements(&first) * o->eb;
	return 0;
}

int adump_compare_ffts_merge(const struct adump_compare_ffts_attrs *a, struct adump_reader **r,
			     uint32_t file_count, struct adump_compare_ffts **out, char *msg,
			     size_t cap)
{
	const struct adump_reader_header *base = adump_reader_header(r[0]);
	uint32_t inputs = base->kind_count[ADUMP_TENSOR_INPUT];
	struct adump_compare_ffts *m = calloc(1, sizeof(*m));
	int ret = 0;

	*out = NULL;
	if (!m)
		return -ENOMEM;
	m->r = r;
	m->file_count = file_count;
	for (uint32_t k = 0; k < file_count; k++) {
		uint32_t n = adump_reader_header(r[k])->kind_count[ADUMP_TENSOR_OUTPUT];

		if (n != base->kind_count[ADUMP_TENSOR_OUTPUT]) {
			snprintf(msg, cap, "Inconsistent output length detected: expected %u, but got "
				 "%u (subtask %u)", base->kind_count[ADUMP_TENSOR_OUTPUT], n, k);
			ret = 11;
			goto err;
		}
	}
	if (a->output_count > base->kind_count[ADUMP_TENSOR_OUTPUT]) {
		snprintf(msg, cap, "outputCutList describes %u outputs, the dump has %u",
			 a->output_count, base->kind_count[ADUMP_TENSOR_OUTPUT]);
		ret = 11;
		goto err;
	}
	/* msaccucmp's merged dump: the first subtask's inputs, one output per outputCutList
	 * entry. */
	m->first_out = inputs;
	m->out_count = a->output_count;
	m->tensors = calloc(inputs + m->out_count + 1, sizeof(*m->tensors));
	m->outs = calloc(m->out_count + 1, sizeof(*m->outs));
	if (!m->tensors || !m->outs) {
		ret = -ENOMEM;
		goto err;
	}
	memcpy(m->tensors, base->tensors, (inputs + m->out_count) * sizeof(*m->tensors));
	for (uint32_t i = 0; i < m->out_count; i++) {
		ret = output_plan(m, a, i, &m->tensors[inputs + i].info, msg, cap);
		if (ret)
			goto err;
	}
	m->h = *base;
	m->h.tensors = m->tensors;
	m->h.tensor_count = inputs + m->out_count;
	m->h.kind_count[ADUMP_TENSOR_OUTPUT] = m->out_count;
	m->h.kind_count[ADUMP_TENSOR_BUFFER] = 0;
	m->h.kind_count[ADUMP_TENSOR_WORKSPACE] = 0;
	*out = m;
	return 0;
err:
	adump_compare_ffts_free(m);
	return ret;
}

const struct adump_reader_header *adump_compare_ffts_header(const struct adump_compare_ffts *m)
{
	return &m->h;
}

/* @len bytes at @offset of tensor @tensor of subtask @k: small runs through its window. */
static int piece_read(struct adump_compare_ffts *m, uint32_t k, uint32_t tensor, uint64_t offset,
		      unsigned char *dst, size_t len)
{
	struct ffts_window *w;
	uint64_t size;
	int ret;

	if (len >= WINDOW_BYTES / 2)
		return adump_reader_read(m->r[k], tensor, offset, dst, len);
	if (!m->win && !(m->win = calloc(m->file_count, sizeof(*m->win))))
		return -ENOMEM;
	w = &m->win[k];
	if (!w->len || w->tensor != tensor || offset < w->at || offset + len > w->at + w->len) {
		if (!w->buf && !(w->buf = malloc(WINDOW_BYTES)))
			return -ENOMEM;
		size = adump_reader_header(m->r[k])->tensors[tensor].info.bytes;
		w->len = 0;
		if (offset > size || len > size - offset)
			return adump_reader_read(m->r[k], tensor, offset, dst, len);   /* says why */
		w->tensor = tensor;
		w->at = offset;
		ret = adump_reader_read(m->r[k], tensor, offset, w->buf,
					size - offset < WINDOW_BYTES ? (size_t)(size - offset)
								     : WINDOW_BYTES);
		if (ret < 0)
			return ret;
		w->len = size - offset < WINDOW_BYTES ? (size_t)(size - offset) : WINDOW_BYTES;
	}
	memcpy(dst, w->buf + (offset - w->at), len);
	return 0;
}

int adump_compare_ffts_read(struct adump_compare_ffts *m, uint32_t tensor, uint64_t offset,
			    void *buf, size_t len, struct adump_reader **failed)
{
	const struct ffts_output *o;
	unsigned char *p = buf;
	uint64_t e, n;
	uint32_t k = 0;

	*failed = m->r[0];
	if (tensor < m->first_out || tensor - m->first_out >= m->out_count ||
	    m->outs[tensor - m->first_out].axis < 0) {
		uint32_t idx = tensor < m->first_out ? tensor
						     : m->outs[tensor - m->first_out].tensor[0];

		return adump_reader_read(m->r[0], idx, offset, buf, len);
	}
	o = &m->outs[tensor - m->first_out];
	if (offset % o->eb || len % o->eb || (!o->slab && len))
		return -EINVAL;
	e = offset / o->eb;
	n = len / o->eb;
	while (n) {
		uint64_t outer = e / o->slab, rem = e % o->slab, at = rem / o->inner, run, from;
		int ret;

		/* The subtask holding position @at along the axis: within one read the
		 * positions move forward, so the search goes on from the last one. */
		if (at < o->start[k])
			k = 0;
		while (k + 1 < m->file_count && at >= o->start[k] + o->along[k])
			k++;
		run = (o->start[k] + o->along[k]) * o->inner - rem;
		run = run < n ? run : n;
		from = outer * o->along[k] * o->inner + (rem - o->start[k] * o->inner);
		ret = piece_read(m, k, o->tensor[k], from * o->eb, p, run * o->eb);
		if (ret < 0) {
			*failed = m->r[k];
			return ret;
		}
		p += run * o->eb;
		e += run;
		n -= run;
	}
	return 0;
}
