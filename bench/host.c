/* SPDX-License-Identifier: Apache-2.0 */
/* `adump bench --producer host`: the bench's ops handed to host streams (include/adump/host.h)
 * instead of launched on the simulated NPU, and a callback-sink consumer that rebuilds every
 * file from its chunks and checks it byte for byte against the file the op must produce: its
 * DumpData header packed again from the op, then its tensors' bytes. The check runs on the
 * chunks as they arrive, without holding whole files (the huge profile's are 1.5 GB). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

#define HEADER_CAP 65536u

void adump_bench_host_tensors(const struct adump_bench_op *op, const void *const data[3],
			      struct adump_host_tensor t[3])
{
	memset(t, 0, 3 * sizeof(*t));
	for (int k = 0; k < 3; k++) {
		t[k].data = data[k];
		t[k].bytes = op->bytes;
		t[k].dtype = op->dtype;
		t[k].format = ADUMP_FORMAT_ND;
		t[k].dim_count = op->dim_count;
		for (uint32_t d = 0; d < op->dim_count; d++)
			t[k].dims[d] = op->dims[d];
	}
}

static void release_count(void *user, uint32_t task_id, int status)
{
	struct adump_bench_host_counts *c = user;

	atomic_fetch_add_explicit(status == 0 ? &c->released : &c->release_failures, 1,
				  memory_order_relaxed);
}

int adump_bench_host_dump(struct adump_host_stream *hs, const struct adump_bench_op *op,
			  const void *const data[3], struct adump_bench_host_counts *counts)
{
	struct adump_host_tensor t[3];
	struct adump_host_op hop = ADUMP_HOST_OP_INIT;

	adump_bench_host_tensors(op, data, t);
	hop.op_type = "Add";
	hop.op_name = op->name;
	hop.inputs = t;
	hop.input_count = 2;
	hop.outputs = t + 2;
	hop.output_count = 1;
	if (counts) {
		hop.release_fn = release_count;
		hop.user = counts;
	}
	return adump_host_dump_op(hs, &hop, NULL);
}

/* What the verifier knows of one file while its chunks arrive. */
struct file_check {
	uint64_t next_offset;
	uint32_t last_count;
	bool is_bad;
};

struct adump_bench_verify {
	adump_bench_lookup_fn lookup;
	void *user;
	uint64_t op_count;
	struct file_check *files;               /* by op index; a file's chunks come in order,
						 * from one worker at a time */
	_Atomic uint64_t files_ok;
	_Atomic uint64_t files_bad;
	_Atomic uint64_t bytes_checked;
	pthread_mutex_t lock;                   /* first_error */
	char first_error[512];
};

int adump_bench_verify_create(uint64_t op_count, adump_bench_lookup_fn lookup, void *user,
			      struct adump_bench_verify **out)
{
	struct adump_bench_verify *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	v->files = calloc(op_count ? op_count : 1, sizeof(*v->files));
	if (!v->files) {
		free(v);
		return -ENOMEM;
	}
	v->lookup = lookup;
	v->user = user;
	v->op_count = op_count;
	pthread_mutex_init(&v->lock, NULL);
	*out = v;
	return 0;
}

void adump_bench_verify_destroy(struct adump_bench_verify *v)
{
	if (!v)
		return;
	pthread_mutex_destroy(&v->lock);
	free(v->files);
	free(v);
}

static void fail(struct adump_bench_verify *v, const char *name, const char *what)
{
	pthread_mutex_lock(&v->lock);
	if (!v->first_error[0])
		snprintf(v->first_error, sizeof(v->first_error), "%s: %s", name, what);
	pthread_mutex_unlock(&v->lock);
}

/* "<type>.<name>.<task>.<stream>.<timestamp>": the three numbers, read from the right. */
static bool name_numbers(const char *path, uint32_t *task, uint32_t *stream, uint64_t *ts)
{
	const char *dot[3];
	int n = 0;

	for (const char *p = path + strlen(path); p > path && n < 3; p--)
		if (p[-1] == '.')
			dot[n++] = p - 1;
	if (n < 3)
		return false;
	*ts = strtoull(dot[0] + 1, NULL, 10);
	*stream = (uint32_t)strtoul(dot[1] + 1, NULL, 10);
	*task = (uint32_t)strtoul(dot[2] + 1, NULL, 10);
	return true;
}

/* The header the file must start with: the op as a host stream describes it. */
static long expected_header(const struct adump_bench_op *op, const void *const data[3],
			    uint32_t stream_id, uint32_t task_id, uint64_t ts, void *buf)
{
	struct adump_tensor tensors[3];

	memset(tensors, 0, sizeof(tensors));
	for (int k = 0; k < 3; k++) {
		tensors[k].kind = k < 2 ? ADUMP_TENSOR_INPUT : ADUMP_TENSOR_OUTPUT;
		tensors[k].dtype = op->dtype;
		tensors[k].format = ADUMP_FORMAT_ND;
		tensors[k].dim_count = tensors[k].orig_dim_count = op->dim_count;
		for (uint32_t d = 0; d < op->dim_count; d++)
			tensors[k].dims[d] = tensors[k].orig_dims[d] = (uint64_t)op->dims[d];
		tensors[k].address = (uint64_t)(uintptr_t)data[k];
		tensors[k].bytes = op->bytes;
		tensors[k].arg_index = k == 1 ? 1 : 0;
	}
	struct adump_op aop = {
		.op_type = "Add", .op_name = op->name, .stream_id = stream_id, .task_id = task_id,
		.timestamp_us = ts, .tensor_count = 3, .tensors = tensors,
	};
	return adump_dump_header_pack(&aop, buf, HEADER_CAP);
}

int adump_bench_verify_chunk(const struct adump_chunk *c, void *user)
{
	struct adump_bench_verify *v = user;
	struct adump_bench_op op;
	const void *data[3];
	unsigned char header[HEADER_CAP];
	uint32_t task, stream;
	uint64_t ts, index, end = c->offset + c->len;
	long hlen;

	if (!name_numbers(c->file_name, &task, &stream, &ts) ||
	    v->lookup(v->user, stream, task, &index, &op, data) < 0 || index >= v->op_count) {
		fail(v, c->file_name, "not a file of this run");
		atomic_fetch_add_explicit(&v->files_bad, c->is_last, memory_order_relaxed);
		return -1;
	}
	struct file_check *f = &v->files[index];

	if (c->offset != f->next_offset)
		f->is_bad = true, fail(v, c->file_name, "chunk out of order");
	f->next_offset = end;
	/* The header: packed again only for the chunks that hold part of it. */
	hlen = expected_header(&op, data, stream, task, ts, header);
	if (hlen < 0) {
		f->is_bad = true;
		fail(v, c->file_name, "header does not pack");
	} else if (c->offset < (uint64_t)hlen) {
		uint64_t n = (uint64_t)hlen - c->offset < c->len ? (uint64_t)hlen - c->offset : c->len;

		if (memcmp(c->data, header + c->offset, n))
			f->is_bad = true, fail(v, c->file_name, "header differs");
	}
	/* The payload: self, other, out back to back. */
	for (int k = 0; k < 3 && hlen >= 0; k++) {
		uint64_t t0 = (uint64_t)hlen + (uint64_t)k * op.bytes, t1 = t0 + op.bytes;
		uint64_t lo = c->offset > t0 ? c->offset : t0, hi = end < t1 ? end : t1;

		if (lo < hi && memcmp((const char *)c->data + (lo - c->offset),
				      (const char *)data[k] + (lo - t0), hi - lo))
			f->is_bad = true, fail(v, c->file_name, "payload differs");
	}
	atomic_fetch_add_explicit(&v->bytes_checked, c->len, memory_order_relaxed);
	if (c->is_last) {
		f->last_count++;
		if (hlen >= 0 && end != (uint64_t)hlen + 3 * op.bytes)
			f->is_bad = true, fail(v, c->file_name, "wrong length");
		if (f->last_count != 1)
			f->is_bad = true, fail(v, c->file_name, "last chunk twice");
		atomic_fetch_add_explicit(f->is_bad ? &v->files_bad : &v->files_ok, 1,
					  memory_order_relaxed);
	}
	return 0;
}

void adump_bench_verify_result(struct adump_bench_verify *v, uint64_t *files_ok,
			       uint64_t *files_bad, uint64_t *bytes, char *first_error, size_t cap)
{
	*files_ok = atomic_load_explicit(&v->files_ok, memory_order_relaxed);
	*files_bad = atomic_load_explicit(&v->files_bad, memory_order_relaxed);
	*bytes = atomic_load_explicit(&v->bytes_checked, memory_order_relaxed);
	pthread_mutex_lock(&v->lock);
	snprintf(first_error, cap, "%s", v->first_error);
	pthread_mutex_unlock(&v->lock);
}
