/* SPDX-License-Identifier: Apache-2.0 */
/* The host suites' fixture (host_fixture.h). */
#include "host_fixture.h"




/* Largest tensor: 600 KiB, ten chunks; under the sanitizers (ADUMP_TEST_MAX_BYTES set,
 * scripts/test.sh) an eighth of that setting, still several chunks. */
uint64_t max_bytes(void)
{
	const char *env = getenv("ADUMP_TEST_MAX_BYTES");
	uint64_t v = env ? strtoull(env, NULL, 0) / 8 : 0;

	return v && v < (600u << 10) ? v : 600u << 10;
}

static const int32_t dtypes[] = { ADUMP_DT_FLOAT, ADUMP_DT_FLOAT16, ADUMP_DT_BF16, ADUMP_DT_INT8,
				  ADUMP_DT_INT64, ADUMP_DT_BOOL, ADUMP_DT_DOUBLE, ADUMP_DT_UINT8 };

/* Op @k of a seeded stream: 1-3 inputs, 0-2 outputs, one tensor in four empty or tiny, the
 * others up to max_bytes(), 1-3 dims whose product matches. */
void op_make(struct h_op *op, uint64_t *rng, unsigned k, bool is_nocopy)
{
	memset(op, 0, sizeof(*op));
	snprintf(op->type, sizeof(op->type), k % 3 ? "MatMul" : "aten.add/Tensor");
	snprintf(op->name, sizeof(op->name), "net/layer %u.fc\\w", k);
	op->in_count = 1 + (uint32_t)(t_rand(rng) % 3);
	op->out_count = (uint32_t)(t_rand(rng) % 3);
	op->is_nocopy = is_nocopy;
	for (uint32_t i = 0; i < op->in_count + op->out_count; i++) {
		struct adump_host_tensor *t = &op->t[i];
		int32_t dt = dtypes[t_rand(rng) % (sizeof(dtypes) / sizeof(dtypes[0]))];
		uint64_t elem = adump_dtype_bits(dt) / 8, count;
		uint64_t r = t_rand(rng) % 4;

		count = r == 0 ? t_rand(rng) % 3 : 1 + t_rand(rng) % (max_bytes() / elem);
		t->dtype = dt;
		t->format = i % 2 ? ADUMP_FORMAT_NCHW : ADUMP_FORMAT_ND;
		if (count % 6 == 0 && count) {
			t->dim_count = 3;
			t->dims[0] = 2;
			t->dims[1] = 3;
			t->dims[2] = (int64_t)count / 6;
			t->orig_dim_count = 2;
			t->orig_dims[0] = 6;
			t->orig_dims[1] = (int64_t)count / 6;
		} else {
			t->dim_count = 1;
			t->dims[0] = (int64_t)count;
		}
		t->bytes = count * elem;
		op->mem[i] = malloc(t->bytes + 8);
		ck_assert_ptr_nonnull(op->mem[i]);
		for (uint64_t b = 0; b < t->bytes; b += 8) {
			uint64_t v = t_rand(rng);

			memcpy(op->mem[i] + b, &v, 8);
		}
		/* Booleans hold 0 or 1. */
		if (dt == ADUMP_DT_BOOL)
			for (uint64_t b = 0; b < t->bytes; b++)
				op->mem[i][b] &= 1;
		t->data = t->bytes ? op->mem[i] : NULL;
	}
}

void op_free(struct h_op *op)
{
	for (uint32_t i = 0; i < MAX_TENSORS; i++)
		free(op->mem[i]);
}

uint64_t op_payload(const struct h_op *op)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < op->in_count + op->out_count; i++)
		n += op->t[i].bytes;
	return n;
}

_Atomic unsigned release_count;
_Atomic unsigned release_bad;
_Atomic int release_last_status;

void on_release(void *user, uint32_t task_id, int status)
{
	/* user is the op's expected task id: each callback belongs to its own dump. */
	if ((uintptr_t)user != task_id)
		atomic_fetch_add(&release_bad, 1);
	atomic_store(&release_last_status, status);
	atomic_fetch_add(&release_count, 1);
}

void noop_release(void *user, uint32_t task_id, int status)
{
}

int noop_check(void *user, uint32_t task_id)
{
	return 0;
}

int op_dump(struct adump_host_stream *hs, const struct h_op *op, uint32_t want_task)
{
	struct adump_host_op o = ADUMP_HOST_OP_INIT;
	uint32_t task = UINT32_MAX;
	int ret;

	o.op_type = op->type;
	o.op_name = op->name;
	o.inputs = op->t;
	o.input_count = op->in_count;
	o.outputs = op->out_count ? op->t + op->in_count : NULL;
	o.output_count = op->out_count;
	if (op->is_nocopy) {
		o.release_fn = on_release;
		o.user = (void *)(uintptr_t)want_task;
	}
	ret = adump_host_dump_op(hs, &o, &task);
	if (ret == 0)
		ck_assert_uint_eq(task, want_task);
	return ret;
}

/* Parses a whole dump file in memory; checks its header against @op and its payload
 * byte for byte against the op's memory. */
void check_dump(const unsigned char *bytes, size_t len, const struct h_op *op,
		       uint32_t stream_id, uint32_t task_id, const char *what)
{
	Toolkit__Dumpdata__DumpData *dd;
	uint64_t hlen, off;

	ck_assert_msg(len >= 8, "%s: %zu bytes", what, len);
	memcpy(&hlen, bytes, 8);
	hlen = le64toh(hlen);
	ck_assert_msg(hlen <= len - 8, "%s: header length %llu", what, (unsigned long long)hlen);
	dd = toolkit__dumpdata__dump_data__unpack(NULL, hlen, bytes + 8);
	ck_assert_msg(dd != NULL, "%s: header does not parse", what);
	ck_assert_str_eq(dd->version, "2.0");
	ck_assert_str_eq(dd->op_name, op->name);        /* unsanitised */
	ck_assert_uint_eq(dd->n_attr, 0);               /* no attributes in host dumps */
	ck_assert_uint_eq(dd->n_input, op->in_count);
	ck_assert_uint_eq(dd->n_output, op->out_count);
	for (uint32_t i = 0; i < op->in_count + op->out_count; i++) {
		Toolkit__Dumpdata__OpInput *in = i < op->in_count ? dd->input[i] : NULL;
		Toolkit__Dumpdata__OpOutput *out = i < op->in_count ? NULL : dd->output[i - op->in_count];
		const struct adump_host_tensor *t = &op->t[i];
		Toolkit__Dumpdata__Shape *shape = in ? in->shape : out->shape;
		Toolkit__Dumpdata__Shape *orig = in ? in->original_shape : out->original_shape;

		ck_assert_int_eq(in ? (int)in->data_type : (int)out->data_type, t->dtype);
		ck_assert_int_eq(in ? (int)in->format : (int)out->format, t->format);
		ck_assert_uint_eq(in ? in->size : out->size, t->bytes);
		ck_assert_uint_eq(shape->n_dim, t->dim_count);
		for (uint32_t d = 0; d < t->dim_count; d++)
			ck_assert_uint_eq(shape->dim[d], (uint64_t)t->dims[d]);
		if (t->orig_dim_count) {
			ck_assert_uint_eq(orig->n_dim, t->orig_dim_count);
			for (uint32_t d = 0; d < t->orig_dim_count; d++)
				ck_assert_uint_eq(orig->dim[d], (uint64_t)t->orig_dims[d]);
		}
	}
	toolkit__dumpdata__dump_data__free_unpacked(dd, NULL);
	ck_assert_msg(len == 8 + hlen + op_payload(op), "%s: %zu bytes, want %llu", what, len,
		      (unsigned long long)(8 + hlen + op_payload(op)));
	off = 8 + hlen;
	for (uint32_t i = 0; i < op->in_count + op->out_count; i++) {
		if (op->t[i].bytes)
			ck_assert_msg(!memcmp(bytes + off, op->mem[i], op->t[i].bytes),
				      "%s (stream %u task %u): tensor %u differs", what, stream_id,
				      task_id, i);
		off += op->t[i].bytes;
	}
}

/* "<type>.<name>.<task>.<stream>.<ts>[suffix]": the task and stream ids; false if not so. */
bool name_ids(const char *base, uint32_t *task, uint32_t *stream)
{
	const char *dot[4] = { NULL };
	int n = 0;
	unsigned long long ts;

	for (const char *p = base + strlen(base); p > base && n < 3; p--)
		if (p[-1] == '.')
			dot[n++] = p - 1;
	if (n < 3)
		return false;
	*task = (uint32_t)strtoul(dot[2] + 1, NULL, 10);
	*stream = (uint32_t)strtoul(dot[1] + 1, NULL, 10);
	ts = strtoull(dot[0] + 1, NULL, 10);
	return ts > 0;
}

/* ---- callback collector ---- */



bool inside_op(const struct h_op *op, const void *p, size_t len)
{
	for (uint32_t i = 0; i < op->in_count + op->out_count; i++)
		if (op->t[i].bytes && (const unsigned char *)p >= op->mem[i] &&
		    (const unsigned char *)p + len <= op->mem[i] + op->t[i].bytes)
			return true;
	return false;
}

int collect(const struct adump_chunk *c, void *user)
{
	struct collector *col = user;
	struct assembled *a = NULL;

	pthread_mutex_lock(&col->lock);
	for (size_t i = 0; i < col->count; i++)
		if (!strcmp(col->files[i].name, c->file_name))
			a = &col->files[i];
	if (!a) {
		ck_assert_uint_lt(col->count, 256);
		a = &col->files[col->count++];
		memset(a, 0, sizeof(*a));
		a->name = strdup(c->file_name);
		a->is_ours = true;
	}
	if (c->offset != a->next_offset)
		a->order_errors++;
	if (c->offset + c->len > a->cap) {
		a->cap = (c->offset + c->len) * 2;
		a->bytes = realloc(a->bytes, a->cap);
	}
	memcpy(a->bytes + c->offset, c->data, c->len);
	if (c->offset + c->len > a->len)
		a->len = c->offset + c->len;
	a->next_offset = c->offset + c->len;
	if (c->offset && c->len) {
		bool is_inside = false;

		for (unsigned k = 0; k < col->op_count && !is_inside; k++)
			is_inside = inside_op(&col->ops[k], c->data, c->len);
		if (!is_inside)
			a->is_copied = true;
		a->is_ours = a->is_ours && is_inside;
	}
	if (c->is_last)
		a->last_count++;
	pthread_mutex_unlock(&col->lock);
	return 0;
}

void collector_free(struct collector *col)
{
	for (size_t i = 0; i < col->count; i++) {
		free(col->files[i].name);
		free(col->files[i].bytes);
	}
	pthread_mutex_destroy(&col->lock);
}

/* ---- one capture per sink ---- */



struct adump_config case_config(const char *root, enum sink_case sc, struct collector *col)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;

	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.chunk_bytes = CHUNK_BYTES;
	cfg.pool_bytes = 16 * CHUNK_BYTES;
	cfg.stream_max = 2;
	cfg.worker_count = 1;
	switch (sc) {
	case CASE_PACKED: cfg.layout = ADUMP_LAYOUT_PACKED; break;
	case CASE_LZ4: cfg.compress = ADUMP_COMPRESS_LZ4; break;
	case CASE_DIRECT: cfg.io = ADUMP_IO_DIRECT; break;
	case CASE_CALLBACK:
		cfg.sink = ADUMP_SINK_CALLBACK;
		cfg.chunk_fn = collect;
		cfg.chunk_user = col;
		break;
	case CASE_STATS: cfg.content = ADUMP_CONTENT_STATS; break;
	default: break;
	}
	return cfg;
}

/* The files below @dir (one level: <dir>/0/...) as (name, bytes), checked against @ops. */
void check_dir_files(const char *dir, const char *suffix, const struct h_op *ops,
			    unsigned op_count, uint32_t stream_id)
{
	size_t n;
	char **files = t_list_files(dir, &n);
	bool seen[SINK_OPS] = { false };

	ck_assert_uint_eq(n, op_count);
	for (size_t i = 0; i < n; i++) {
		char path[8400], base[4200];
		uint32_t task, stream;
		unsigned char *bytes;
		size_t len, slen = strlen(suffix);

		ck_assert_msg(!strncmp(files[i], "0/", 2), "%s", files[i]);
		snprintf(base, sizeof(base), "%s", files[i] + 2);
		ck_assert_msg(strlen(base) > slen && !strcmp(base + strlen(base) - slen, suffix),
			      "%s", files[i]);
		base[strlen(base) - slen] = 0;
		ck_assert_msg(name_ids(base, &task, &stream), "%s", base);
		ck_assert_uint_eq(stream, stream_id);
		ck_assert_uint_lt(task, op_count);
		ck_assert(!seen[task]);
		seen[task] = true;
		/* Sanitised as CANN does: '.', '/', ' ' and '\\' of type and name become '_'. */
		char want[200];
		char t_s[32], n_s[64];
		snprintf(t_s, sizeof(t_s), "%s", ops[task].type);
		snprintf(n_s, sizeof(n_s), "%s", ops[task].name);
		for (char *p = t_s; *p; p++)
			if (strchr("./ \\", *p))
				*p = '_';
		for (char *p = n_s; *p; p++)
			if (strchr("./ \\", *p))
				*p = '_';
		snprintf(want, sizeof(want), "%s.%s.%u.%u.", t_s, n_s, task, stream_id);
		ck_assert_msg(!strncmp(base, want, strlen(want)), "%s, want %s...", base, want);
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		bytes = t_read_file(path, &len);
		ck_assert_ptr_nonnull(bytes);
		check_dump(bytes, len, &ops[task], stream_id, task, files[i]);
		free(bytes);
	}
	t_free_list(files, n);
}

/* Stats: one CSV per op, a line per tensor, and each tensor's Max Value where its dtype is
 * float32 (values compared as the CSV prints them). */
void check_stats_files(const char *dir, const struct h_op *ops, unsigned op_count)
{
	size_t n;
	char **files = t_list_files(dir, &n);

	ck_assert_uint_eq(n, op_count);
	for (size_t i = 0; i < n; i++) {
		char path[8400], base[4200];
		uint32_t task, stream;
		size_t len;
		char *text;

		snprintf(base, sizeof(base), "%s", files[i] + 2);
		ck_assert_msg(strlen(base) > 4 && !strcmp(base + strlen(base) - 4, ".csv"), "%s", base);
		base[strlen(base) - 4] = 0;
		ck_assert(name_ids(base, &task, &stream));
		ck_assert_uint_lt(task, op_count);
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		text = t_read_file(path, &len);
		ck_assert_ptr_nonnull(text);
		ck_assert(!strncmp(text, "Input/Output,Index,Data Size,Data Type,Format,Shape,", 52));
		size_t lines = 0;
		for (size_t j = 0; j < len; j++)
			lines += text[j] == '\n';
		ck_assert_uint_eq(lines, 1 + ops[task].in_count + ops[task].out_count);
		free(text);
	}
	t_free_list(files, n);}
