/* SPDX-License-Identifier: Apache-2.0 */
/* End-to-end helpers for the capture suites. */
#include <dirent.h>
#include <endian.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_helpers.h"
#include "dump_data.pb-c.h"

static const int32_t dtypes[] = { ADUMP_DT_FLOAT, ADUMP_DT_FLOAT16, ADUMP_DT_INT32 };

static uint64_t draw_bytes(uint64_t *rng, const struct t_workload *w)
{
	double lo = log((double)w->min_bytes), hi = log((double)w->max_bytes);
	double u = (double)(t_rand(rng) >> 11) / 9007199254740992.0;

	return (uint64_t)exp(lo + u * (hi - lo));
}

struct stream_run {
	struct t_workload *w;
	unsigned index;
	struct adump_dev *dev;
	struct adump_dev_stream *stream;
	void *self, *other, *out;
	int error;
};

static void *stream_main(void *arg)
{
	struct stream_run *r = arg;
	struct t_workload *w = r->w;

	for (unsigned k = 0; k < w->op_count; k++) {
		struct t_op *op = &w->ops[r->index * w->op_count + k];
		unsigned elem = adump_dtype_bits(op->dtype) / 8;
		struct adump_dev_tensor self = {
			.data = (char *)r->self + op->offset, .dtype = op->dtype,
			.format = ADUMP_FORMAT_ND, .dim_count = 2,
			.dims = { 1, (int64_t)op->count }, .bytes = op->count * elem,
		};
		struct adump_dev_tensor other = self, out = self;
		char name[64];
		struct adump_dev_dump dump = { .op_type = "Add", .op_name = name,
					       .tensor_mask = ADUMP_DUMP_ALL };

		other.data = (char *)r->other + op->offset;
		out.data = r->out;
		/* Characters that must be sanitised in the file name, kept in the header. */
		snprintf(name, sizeof(name), "net/layer %u.add", k);
		r->error = adump_dev_launch_add(r->stream, &self, &other, op->alpha, &out, &dump);
		if (r->error < 0)
			return NULL;
	}
	r->error = adump_dev_stream_sync(r->stream);
	return NULL;
}

int t_workload_run(struct adump_session *s, struct t_workload *w)
{
	struct stream_run runs[16];
	pthread_t threads[16];
	struct adump_dev *dev;
	uint64_t rng = w->seed ? w->seed : 1;
	int ret = 0;

	const char *max_env = getenv("ADUMP_TEST_MAX_BYTES");

	ck_assert_uint_le(w->stream_count, 16);
	/* Sanitizer builds shrink every workload (they check each byte copied, 10-50x slower). */
	if (max_env && strtoull(max_env, NULL, 0) < w->max_bytes && !w->dev)
		w->max_bytes = strtoull(max_env, NULL, 0);
	ck_assert_int_eq(adump_dev_open(0, &dev), 0);
	if (w->keep_memory && !w->dev) {
		w->dev = dev;
		adump_dev_open(0, &w->dev);     /* one more reference: memory outlives this run */
	}
	free(w->ops);
	w->ops = calloc((size_t)w->stream_count * w->op_count, sizeof(*w->ops));
	ck_assert_ptr_nonnull(w->ops);
	for (unsigned i = 0; i < w->stream_count * w->op_count; i++) {
		struct t_op *op = &w->ops[i];
		unsigned elem;
		uint64_t bytes, room;

		op->dtype = dtypes[t_rand(&rng) % 3];
		elem = adump_dtype_bits(op->dtype) / 8;
		bytes = draw_bytes(&rng, w);
		op->count = bytes / elem ? bytes / elem : 1;
		/* No tensor size is a multiple of the chunk size. */
		if (w->chunk_bytes && (op->count * elem) % w->chunk_bytes == 0)
			op->count--;
		if (!op->count)
			op->count = 1;
		room = (w->max_bytes - op->count * elem) / elem;
		op->offset = room ? (t_rand(&rng) % room) * elem : 0;
		op->alpha = (double)(int)(t_rand(&rng) % 7) - 3.0;
	}
	for (unsigned i = 0; i < w->stream_count; i++) {
		struct stream_run *r = &runs[i];

		*r = (struct stream_run){ .w = w, .index = i, .dev = dev };
		ck_assert_int_eq(adump_dev_stream_create(dev, &r->stream), 0);
		w->stream_ids[i] = adump_dev_stream_id(r->stream);
		void **mem[3] = { &r->self, &r->other, &r->out };
		for (int j = 0; j < 3; j++) {
			if (w->dev_mem[i][j]) {
				*mem[j] = w->dev_mem[i][j];
				continue;
			}
			ck_assert_int_eq(adump_dev_malloc(dev, w->max_bytes, mem[j]), 0);
			if (w->keep_memory)
				w->dev_mem[i][j] = *mem[j];
		}
		for (int j = 0; j < 2; j++) {
			free(w->inputs[i][j]);
			unsigned char *h = malloc(w->max_bytes);

			ck_assert_ptr_nonnull(h);
			/* Bytes 0x00..0x3f: finite in every dtype, no overflow in int32. */
			for (uint64_t b = 0; b < w->max_bytes; b++)
				h[b] = (unsigned char)(t_rand(&rng) & 0x3f);
			w->inputs[i][j] = h;
			ck_assert_int_eq(adump_dev_memcpy(dev, j ? r->other : r->self, w->max_bytes, h,
							  w->max_bytes, ADUMP_COPY_HOST_TO_DEVICE), 0);
		}
		if (s)
			ck_assert_int_eq(adump_session_attach(s, r->stream), 0);
	}
	for (unsigned i = 0; i < w->stream_count; i++)
		pthread_create(&threads[i], NULL, stream_main, &runs[i]);
	for (unsigned i = 0; i < w->stream_count; i++) {
		pthread_join(threads[i], NULL);
		w->sync_errors[i] = runs[i].error;
		if (runs[i].error < 0 && ret == 0)
			ret = runs[i].error;
	}
	for (unsigned i = 0; i < w->stream_count; i++) {
		struct stream_run *r = &runs[i];

		if (s)
			ck_assert_int_eq(adump_session_detach(s, r->stream), 0);
		ck_assert_int_eq(adump_dev_stream_destroy(r->stream), 0);
		if (!w->keep_memory) {
			adump_dev_free(dev, r->self);
			adump_dev_free(dev, r->other);
			adump_dev_free(dev, r->out);
		}
	}
	adump_dev_close(dev);
	return ret;
}

void t_workload_free(struct t_workload *w)
{
	for (unsigned i = 0; i < w->stream_count; i++) {
		free(w->inputs[i][0]);
		free(w->inputs[i][1]);
		w->inputs[i][0] = w->inputs[i][1] = NULL;
		for (int j = 0; j < 3; j++)
			if (w->dev_mem[i][j])
				adump_dev_free(w->dev, w->dev_mem[i][j]);
	}
	adump_dev_close(w->dev);
	w->dev = NULL;
	free(w->ops);
	w->ops = NULL;
}

void t_dump_load(const char *path, struct t_dump *d)
{
	uint64_t hlen;

	memset(d, 0, sizeof(*d));
	d->path = strdup(path);
	d->bytes = t_read_file(path, &d->len);
	ck_assert_msg(d->bytes != NULL, "cannot read %s", path);
	ck_assert_msg(d->len >= 8, "%s: shorter than the length prefix", path);
	memcpy(&hlen, d->bytes, 8);
	hlen = le64toh(hlen);
	ck_assert_msg(hlen >= 1 && hlen <= d->len - 8, "%s: header length %llu", path,
		      (unsigned long long)hlen);
	d->header = toolkit__dumpdata__dump_data__unpack(NULL, hlen, d->bytes + 8);
	ck_assert_msg(d->header != NULL, "%s: DumpData does not parse", path);
	d->payload_base = 8 + hlen;
}

void t_dump_free(struct t_dump *d)
{
	if (d->header)
		toolkit__dumpdata__dump_data__free_unpacked(d->header, NULL);
	free(d->bytes);
	free(d->path);
	memset(d, 0, sizeof(*d));
}

static char **list_out;
static size_t list_count, list_cap, list_prefix;

static int list_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag != FTW_F)
		return 0;
	if (list_count == list_cap) {
		list_cap = list_cap ? list_cap * 2 : 64;
		list_out = realloc(list_out, list_cap * sizeof(*list_out));
	}
	list_out[list_count++] = strdup(path + list_prefix);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **t_list_files(const char *dir, size_t *count)
{
	list_out = NULL;
	list_count = list_cap = 0;
	list_prefix = strlen(dir) + 1;
	nftw(dir, list_one, 16, FTW_PHYS);
	if (list_count)
		qsort(list_out, list_count, sizeof(*list_out), cmp_str);
	*count = list_count;
	return list_out;
}

void t_free_list(char **list, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(list[i]);
	free(list);
}

static void expect_out(const struct t_op *op, const unsigned char *self, const unsigned char *other,
		       unsigned char *out)
{
	for (uint64_t i = 0; i < op->count; i++) {
		if (op->dtype == ADUMP_DT_FLOAT) {
			float a, b, r;
			memcpy(&a, self + 4 * i, 4);
			memcpy(&b, other + 4 * i, 4);
			r = a + (float)op->alpha * b;
			memcpy(out + 4 * i, &r, 4);
		} else if (op->dtype == ADUMP_DT_FLOAT16) {
			_Float16 a, b, r;
			memcpy(&a, self + 2 * i, 2);
			memcpy(&b, other + 2 * i, 2);
			r = (_Float16)((float)a + (float)op->alpha * (float)b);
			memcpy(out + 2 * i, &r, 2);
		} else {
			int32_t a, b, r;
			memcpy(&a, self + 4 * i, 4);
			memcpy(&b, other + 4 * i, 4);
			r = (int32_t)((uint32_t)a + (uint32_t)(int32_t)op->alpha * (uint32_t)b);
			memcpy(out + 4 * i, &r, 4);
		}
	}
}

static int cmp_task(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void t_check_capture(const char *dir, struct t_workload *w)
{
	size_t count;
	char **files = t_list_files(dir, &count);
	uint32_t *tasks[16];
	unsigned task_count[16] = { 0 };

	ck_assert_uint_eq(count, (size_t)w->stream_count * w->op_count);
	for (unsigned i = 0; i < w->stream_count; i++) {
		tasks[i] = calloc(w->op_count, sizeof(uint32_t));
		ck_assert_ptr_nonnull(tasks[i]);
	}
	/* Names: 0/Add.net_layer_<k>_add.<task>.<stream>.<timestamp>; map task ids per stream. */
	for (size_t f = 0; f < count; f++) {
		unsigned k, task, stream;
		unsigned long long ts;
		int n = 0;

		ck_assert_msg(sscanf(files[f], "0/Add.net_layer_%u_add.%u.%u.%llu%n", &k, &task, &stream,
				     &ts, &n) == 4 && files[f][n] == '\0',
			      "unexpected file %s", files[f]);
		for (unsigned i = 0; i < w->stream_count; i++) {
			if (w->stream_ids[i] != stream)
				continue;
			ck_assert_uint_lt(k, w->op_count);
			ck_assert_uint_lt(task_count[i], w->op_count);
			tasks[i][task_count[i]++] = task;
		}
	}
	for (unsigned i = 0; i < w->stream_count; i++) {
		ck_assert_uint_eq(task_count[i], w->op_count);
		qsort(tasks[i], w->op_count, sizeof(uint32_t), cmp_task);
		for (unsigned k = 0; k < w->op_count; k++)
			w->ops[i * w->op_count + k].task_id = tasks[i][k];
	}
	for (size_t f = 0; f < count; f++) {
		char path[4200];
		unsigned k, task, stream, s = 0;
		struct t_dump d;
		Toolkit__Dumpdata__DumpData *dd;

		sscanf(files[f], "0/Add.net_layer_%u_add.%u.%u", &k, &task, &stream);
		while (w->stream_ids[s] != stream)
			s++;
		const struct t_op *op = &w->ops[s * w->op_count + k];
		ck_assert_uint_eq(op->task_id, task);   /* launch order == task order */
		snprintf(path, sizeof(path), "%s/%s", dir, files[f]);
		t_dump_load(path, &d);
		dd = d.header;
		unsigned elem = adump_dtype_bits(op->dtype) / 8;
		uint64_t bytes = op->count * elem;
		char want_name[64];

		snprintf(want_name, sizeof(want_name), "net/layer %u.add", k);
		ck_assert_str_eq(dd->version, "2.0");
		ck_assert_str_eq(dd->op_name, want_name);
		ck_assert_uint_gt(dd->dump_time, 0);
		ck_assert_uint_eq(dd->n_input, 2);
		ck_assert_uint_eq(dd->n_output, 1);
		/* CANN writes no op attributes into ordinary data dumps, and msaccucmp reads
		 * attr[0] as FFTS+ thread info: an attribute here breaks its convert. */
		ck_assert_msg(dd->n_attr == 0, "%s: %zu attributes in an ordinary dump", files[f],
			      dd->n_attr);
		for (unsigned t = 0; t < 3; t++) {
			int32_t dt = t < 2 ? (int32_t)dd->input[t]->data_type : (int32_t)dd->output[0]->data_type;
			uint64_t size = t < 2 ? dd->input[t]->size : dd->output[0]->size;
			Toolkit__Dumpdata__Shape *sh = t < 2 ? dd->input[t]->shape : dd->output[0]->shape;

			ck_assert_int_eq(dt, op->dtype);
			ck_assert_uint_eq(size, bytes);
			ck_assert_ptr_nonnull(sh);
			ck_assert_uint_eq(sh->n_dim, 2);
			ck_assert_uint_eq(sh->dim[0], 1);
			ck_assert_uint_eq(sh->dim[1], op->count);
		}
		ck_assert_uint_eq(d.len, d.payload_base + 3 * bytes);
		const unsigned char *self = w->inputs[s][0] + op->offset;
		const unsigned char *other = w->inputs[s][1] + op->offset;
		unsigned char *want = malloc(bytes);

		ck_assert(memcmp(d.bytes + d.payload_base, self, bytes) == 0);
		ck_assert(memcmp(d.bytes + d.payload_base + bytes, other, bytes) == 0);
		expect_out(op, self, other, want);
		ck_assert_msg(memcmp(d.bytes + d.payload_base + 2 * bytes, want, bytes) == 0,
			      "%s: out != self + alpha*other", files[f]);
		free(want);
		t_dump_free(&d);
	}
	for (unsigned i = 0; i < w->stream_count; i++)
		free(tasks[i]);
	t_free_list(files, count);
}
