/* SPDX-License-Identifier: Apache-2.0 */
/* Host streams (include/adump/host.h): seeded ops of mixed dtypes, shapes and sizes (empty
 * tensors, chunks spanning tensors), copied and zero-copy, through every sink; the bytes on
 * disk (or delivered) are checked against the sources, header fields and names included.
 * Then the contracts: zero-copy release exactly once, after the bytes, from the caller's own
 * memory; the owner thread; bad arguments; the drop policy; host and device streams side by
 * side in one session. */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/device.h"
#include "adump/host.h"
#include "capture_helpers.h"
#include "common/common.h"
#include "dump_data.pb-c.h"
#include "helpers.h"

#define TIME_DIR "20260301000000"
#define CHUNK_BYTES (64u << 10)
#define MAX_TENSORS 6

/* One op as the test hands it over, with the memory behind its tensors. */
struct h_op {
	char type[32];
	char name[64];
	uint32_t in_count, out_count;
	struct adump_host_tensor t[MAX_TENSORS];
	unsigned char *mem[MAX_TENSORS];
	bool is_nocopy;
};

/* Largest tensor: 600 KiB, ten chunks; under the sanitizers (ADUMP_TEST_MAX_BYTES set,
 * scripts/test.sh) an eighth of that setting, still several chunks. */
static uint64_t max_bytes(void)
{
	const char *env = getenv("ADUMP_TEST_MAX_BYTES");
	uint64_t v = env ? strtoull(env, NULL, 0) / 8 : 0;

	return v && v < (600u << 10) ? v : 600u << 10;
}

static const int32_t dtypes[] = { ADUMP_DT_FLOAT, ADUMP_DT_FLOAT16, ADUMP_DT_BF16, ADUMP_DT_INT8,
				  ADUMP_DT_INT64, ADUMP_DT_BOOL, ADUMP_DT_DOUBLE, ADUMP_DT_UINT8 };

/* Op @k of a seeded stream: 1-3 inputs, 0-2 outputs, one tensor in four empty or tiny, the
 * others up to max_bytes(), 1-3 dims whose product matches. */
static void op_make(struct h_op *op, uint64_t *rng, unsigned k, bool is_nocopy)
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

static void op_free(struct h_op *op)
{
	for (uint32_t i = 0; i < MAX_TENSORS; i++)
		free(op->mem[i]);
}

static uint64_t op_payload(const struct h_op *op)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < op->in_count + op->out_count; i++)
		n += op->t[i].bytes;
	return n;
}

static _Atomic unsigned release_count;
static _Atomic unsigned release_bad;
static _Atomic int release_last_status;

static void on_release(void *user, uint32_t task_id, int status)
{
	/* user is the op's expected task id: each callback belongs to its own dump. */
	if ((uintptr_t)user != task_id)
		atomic_fetch_add(&release_bad, 1);
	atomic_store(&release_last_status, status);
	atomic_fetch_add(&release_count, 1);
}

static void noop_release(void *user, uint32_t task_id, int status)
{
}

static int noop_check(void *user, uint32_t task_id)
{
	return 0;
}

static int op_dump(struct adump_host_stream *hs, const struct h_op *op, uint32_t want_task)
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
static void check_dump(const unsigned char *bytes, size_t len, const struct h_op *op,
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
static bool name_ids(const char *base, uint32_t *task, uint32_t *stream)
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

struct assembled {
	char *name;
	unsigned char *bytes;
	size_t len, cap;
	uint64_t next_offset;
	int last_count;
	int order_errors;
	bool is_ours;                   /* every data pointer inside one of the op's tensors */
	bool is_copied;                 /* a payload chunk outside them */
};

struct collector {
	pthread_mutex_t lock;
	struct assembled files[256];
	size_t count;
	const struct h_op *ops;         /* to tell where data pointers point */
	unsigned op_count;
};

static bool inside_op(const struct h_op *op, const void *p, size_t len)
{
	for (uint32_t i = 0; i < op->in_count + op->out_count; i++)
		if (op->t[i].bytes && (const unsigned char *)p >= op->mem[i] &&
		    (const unsigned char *)p + len <= op->mem[i] + op->t[i].bytes)
			return true;
	return false;
}

static int collect(const struct adump_chunk *c, void *user)
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

static void collector_free(struct collector *col)
{
	for (size_t i = 0; i < col->count; i++) {
		free(col->files[i].name);
		free(col->files[i].bytes);
	}
	pthread_mutex_destroy(&col->lock);
}

/* ---- one capture per sink ---- */

enum sink_case { CASE_FILE, CASE_PACKED, CASE_LZ4, CASE_DIRECT, CASE_CALLBACK, CASE_STATS,
		 CASE_COUNT };

#define SINK_OPS 24

static struct adump_config case_config(const char *root, enum sink_case sc, struct collector *col)
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
static void check_dir_files(const char *dir, const char *suffix, const struct h_op *ops,
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
static void check_stats_files(const char *dir, const struct h_op *ops, unsigned op_count)
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
	t_free_list(files, n);
}

static void run_sink_case(enum sink_case sc)
{
	char *root = t_tmpdir("host");
	struct collector col = { .count = 0 };
	struct adump_config cfg = case_config(root, sc, &col);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	struct adump_host_stream_stats hst;
	struct adump_stats st;
	static struct h_op ops[SINK_OPS];
	uint64_t seed = t_seed() + (uint64_t)sc, rng = seed | 1;
	unsigned nocopy = 0;
	char dir[4200];

	pthread_mutex_init(&col.lock, NULL);
	col.ops = ops;
	col.op_count = SINK_OPS;
	atomic_store(&release_count, 0);
	atomic_store(&release_bad, 0);
	for (unsigned k = 0; k < SINK_OPS; k++) {
		op_make(&ops[k], &rng, k, k % 2 == 1);
		nocopy += k % 2;
	}
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (unsigned k = 0; k < SINK_OPS; k++)
		ck_assert_int_eq(op_dump(hs, &ops[k], k), 0);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	/* After a sync every zero-copy dump has been released, each once, with success. */
	ck_assert_uint_eq(atomic_load(&release_count), nocopy);
	ck_assert_uint_eq(atomic_load(&release_bad), 0);
	adump_host_stream_stats(hs, &hst);
	ck_assert_uint_eq(hst.dumps, SINK_OPS);
	ck_assert_uint_eq(hst.zero_copy_dumps, nocopy);
	ck_assert_uint_eq(hst.released, nocopy);
	ck_assert_uint_eq(hst.release_failures, 0);
	ck_assert_uint_eq(hst.refused, 0);
	ck_assert_uint_eq(hst.chan.drops, 0);
	ck_assert_uint_eq(hst.stream_id, adump_host_stream_id(hs));
	uint32_t stream_id = adump_host_stream_id(hs);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, SINK_OPS);
	ck_assert_uint_eq(st.files_failed, 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);

	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	switch (sc) {
	case CASE_FILE:
	case CASE_DIRECT:
		check_dir_files(dir, "", ops, SINK_OPS, stream_id);
		break;
	case CASE_PACKED: {
		char out[4300];

		snprintf(out, sizeof(out), "%s/unpacked", root);
		ck_assert_int_eq(adump_unpack(dir, out), SINK_OPS);
		check_dir_files(out, "", ops, SINK_OPS, stream_id);
		break;
	}
	case CASE_LZ4: {
		char cmd[9000];

		ck_assert_uint_eq(t_count_files(dir, ".lz4"), SINK_OPS);
		snprintf(cmd, sizeof(cmd), "cd '%s' && for f in 0/*.lz4; do lz4 -d -q \"$f\" "
			 "\"${f%%.lz4}\" && rm \"$f\" || exit 1; done", dir);
		ck_assert_int_eq(system(cmd), 0);
		check_dir_files(dir, "", ops, SINK_OPS, stream_id);
		break;
	}
	case CASE_CALLBACK:
		ck_assert_uint_eq(col.count, SINK_OPS);
		for (size_t i = 0; i < col.count; i++) {
			struct assembled *a = &col.files[i];
			const char *base = strrchr(a->name, '/') + 1;
			uint32_t task, stream;

			ck_assert(name_ids(base, &task, &stream));
			ck_assert_uint_eq(stream, stream_id);
			ck_assert_int_eq(a->last_count, 1);
			ck_assert_int_eq(a->order_errors, 0);
			check_dump(a->bytes, a->len, &ops[task], stream, task, a->name);
			/* Zero copy hands the caller's own memory to the callback; a copy never. */
			if (op_payload(&ops[task]))
				ck_assert_msg(ops[task].is_nocopy ? a->is_ours : a->is_copied,
					      "%s: nocopy %d, ours %d, copied %d", a->name,
					      ops[task].is_nocopy, a->is_ours, a->is_copied);
		}
		break;
	case CASE_STATS:
		check_stats_files(dir, ops, SINK_OPS);
		break;
	default:
		break;
	}
	ck_assert_uint_eq(t_count_files(dir, ".part"), 0);
	ck_assert_uint_eq(t_count_files(dir, ".failed"), 0);
	for (unsigned k = 0; k < SINK_OPS; k++)
		op_free(&ops[k]);
	collector_free(&col);
	t_rmtree(root);
	free(root);
}

START_TEST(test_sink)
{
	run_sink_case((enum sink_case)_i);
}
END_TEST

/* ---- zero copy ---- */

struct zc_probe {
	const char *dir;
	_Atomic int check_calls;
	_Atomic int release_calls;
	_Atomic int release_status;
	_Atomic int file_seen_at_release;       /* the final file existed, whole */
	int check_ret;
	uint64_t want_len;
};

static bool whole_file_present(const char *dir, uint64_t min_len)
{
	size_t n;
	char **files = t_list_files(dir, &n);
	bool ok = false;

	for (size_t i = 0; i < n; i++) {
		char path[8400];
		struct stat sb;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		if (!strstr(files[i], ".failed") && !strstr(files[i], ".part") &&
		    stat(path, &sb) == 0 && (uint64_t)sb.st_size >= min_len)
			ok = true;
	}
	t_free_list(files, n);
	return ok;
}

static int probe_check(void *user, uint32_t task_id)
{
	struct zc_probe *p = user;

	atomic_fetch_add(&p->check_calls, 1);
	return p->check_ret;
}

static void probe_release(void *user, uint32_t task_id, int status)
{
	struct zc_probe *p = user;

	atomic_store(&p->release_status, status);
	atomic_store(&p->file_seen_at_release, whole_file_present(p->dir, p->want_len));
	atomic_fetch_add(&p->release_calls, 1);
}

static void zero_copy_case(int check_ret)
{
	char *root = t_tmpdir("host");
	struct adump_config cfg = case_config(root, CASE_FILE, NULL);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	struct zc_probe probe = { .check_ret = check_ret };
	struct adump_host_op op = ADUMP_HOST_OP_INIT;
	struct adump_stats st;
	uint64_t count = 300000;
	float *data = malloc(count * sizeof(float));
	char dir[4200];

	for (uint64_t i = 0; i < count; i++)
		data[i] = (float)i;
	struct adump_host_tensor t = { .data = data, .bytes = count * 4, .dtype = ADUMP_DT_FLOAT,
				       .format = ADUMP_FORMAT_ND, .dim_count = 1,
				       .dims = { (int64_t)count } };
	snprintf(dir, sizeof(dir), "%s/%s/0", root, TIME_DIR);
	probe.dir = dir;
	probe.want_len = count * 4;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	op.op_type = "Relu";
	op.op_name = "zc";
	op.inputs = &t;
	op.input_count = 1;
	op.release_fn = probe_release;
	op.check_fn = probe_check;
	op.user = &probe;
	ck_assert_int_eq(adump_host_dump_op(hs, &op, NULL), 0);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	ck_assert_int_eq(atomic_load(&probe.release_calls), 1);
	ck_assert_int_eq(atomic_load(&probe.check_calls), 1);
	ck_assert_int_eq(atomic_load(&probe.release_status), check_ret);
	ck_assert_int_eq(atomic_load(&probe.file_seen_at_release), check_ret == 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(atomic_load(&probe.release_calls), 1);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, check_ret == 0 ? 1 : 0);
	ck_assert_uint_eq(st.files_failed, check_ret == 0 ? 0 : 1);
	ck_assert_int_eq(adump_session_destroy(s), check_ret);
	ck_assert_uint_eq(t_count_files(dir, ".failed"), check_ret == 0 ? 0 : 1);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	free(data);
	t_rmtree(root);
	free(root);
}

/* Released exactly once, after the whole file is in place under its name. */
START_TEST(test_zero_copy_release_after_the_bytes)
{
	zero_copy_case(0);
}
END_TEST

/* A check that rejects the data (say, a tensor changed meanwhile) fails the file: .failed,
 * counted, and the release carries the check's code. */
START_TEST(test_zero_copy_check_fails_the_file)
{
	zero_copy_case(-ESTALE);
}
END_TEST

/* ---- zero copy reads the caller's memory when it writes ---- */

struct gate {
	_Atomic int is_entered;
	_Atomic int is_open;
};

/* Holds the worker in the first file's check until the test opens the gate. */
static int gate_wait(void *user, uint32_t task_id)
{
	struct gate *g = user;

	atomic_store(&g->is_entered, 1);
	while (!atomic_load(&g->is_open))
		usleep(500);
	return 0;
}

/* Zero copy and copy of the same buffer, changed after both calls returned but before the
 * worker (held at a gate) got to them: the zero-copy file holds the new bytes where the
 * workers read the caller's memory, the copy the old ones. With O_DIRECT, a buffer placed so
 * that its chunks fall on aligned addresses is referenced from its second chunk on; the
 * first chunk, which shares a block with the header, is staged at the call. */
static void reads_callers_memory(enum sink_case sc)
{
	char *root = t_tmpdir("host");
	struct adump_config cfg = case_config(root, sc, NULL);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	struct gate gate = { 0 };
	const uint64_t bytes = 5 * CHUNK_BYTES + 1000, align = 4096;
	unsigned char *region = aligned_alloc(align, (bytes / align + 2) * align), *buf = region;
	unsigned char one = 1;
	struct adump_host_tensor tg = { .data = &one, .bytes = 1, .dtype = ADUMP_DT_UINT8,
					.dim_count = 1, .dims = { 1 } };
	struct adump_host_tensor tb = { .bytes = bytes, .dtype = ADUMP_DT_UINT8,
					.format = ADUMP_FORMAT_ND, .dim_count = 1,
					.dims = { (int64_t)bytes } };
	struct adump_host_op op = ADUMP_HOST_OP_INIT;
	const uint64_t timestamp = 1700000000000000ull;
	char dir[4200];
	size_t n;

	cfg.stream_max = 1;
	/* The file case is the unaligned one: every chunk referenced (auto would align it). */
	if (sc == CASE_FILE)
		cfg.io = ADUMP_IO_BUFFERED;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	if (sc == CASE_DIRECT) {
		/* Where the file's first aligned chunk starts in the payload: chunk - skew, skew
		 * being the 8 + header bytes past a block. The header holds the address, whose
		 * varint length is the same anywhere in the region. */
		struct adump_tensor t = { .kind = ADUMP_TENSOR_INPUT, .dtype = tb.dtype,
					  .format = tb.format, .dim_count = 1, .orig_dim_count = 1,
					  .dims = { bytes }, .orig_dims = { bytes },
					  .address = (uint64_t)(uintptr_t)region, .bytes = bytes };
		struct adump_op aop = { .op_type = "Copy", .op_name = "zc", .task_id = 1,
					.stream_id = adump_host_stream_id(hs),
					.timestamp_us = timestamp, .tensor_count = 1, .tensors = &t };
		long total = adump_dump_header_pack(&aop, NULL, 0);

		ck_assert_int_gt(total, 0);
		buf = region + (uint64_t)total % align;
	}
	memset(buf, 0x11, bytes);
	tb.data = buf;
	op.op_type = "Gate";
	op.op_name = "gate";
	op.inputs = &tg;
	op.input_count = 1;
	op.release_fn = noop_release;
	op.check_fn = gate_wait;
	op.user = &gate;
	ck_assert_int_eq(adump_host_dump_op(hs, &op, NULL), 0);
	while (!atomic_load(&gate.is_entered))
		usleep(500);
	op = (struct adump_host_op)ADUMP_HOST_OP_INIT;
	op.op_type = "Copy";
	op.op_name = "zc";
	op.inputs = &tb;
	op.input_count = 1;
	op.release_fn = noop_release;
	op.timestamp_us = timestamp;
	ck_assert_int_eq(adump_host_dump_op(hs, &op, NULL), 0);
	ck_assert_int_eq(adump_host_dump(hs, "Copy", "copied", &tb, 1, NULL, 0), 0);
	memset(buf, 0x22, bytes);
	atomic_store(&gate.is_open, 1);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);

	snprintf(dir, sizeof(dir), "%s/%s/0", root, TIME_DIR);
	char **files = t_list_files(dir, &n);
	ck_assert_uint_eq(n, 3);
	for (size_t i = 0; i < n; i++) {
		char path[8400];
		unsigned char *file;
		size_t len;

		if (!strncmp(files[i], "Gate.", 5))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		file = t_read_file(path, &len);
		ck_assert_uint_gt(len, bytes);
		const unsigned char *payload = file + len - bytes;
		/* The copy holds the old bytes; the zero-copy file its staged part (direct: up
		 * to the first aligned file offset) old, the rest new, read when written. */
		uint64_t staged = strstr(files[i], ".copied.") ? bytes :
				  sc == CASE_DIRECT ? CHUNK_BYTES - (len - bytes) % align : 0;
		uint64_t b = 0;

		while (b < bytes && payload[b] == (b < staged ? 0x11 : 0x22))
			b++;
		ck_assert_msg(b == bytes, "%s: byte %llu is 0x%x (staged %llu)", files[i],
			      (unsigned long long)b, b < bytes ? payload[b] : 0,
			      (unsigned long long)staged);
		free(file);
	}
	t_free_list(files, n);
	free(region);
	t_rmtree(root);
	free(root);
}

START_TEST(test_zero_copy_reads_the_callers_memory)
{
	reads_callers_memory(_i ? CASE_DIRECT : CASE_FILE);
}
END_TEST

/* ---- owner thread ---- */

struct intruder {
	struct adump_host_stream *hs;
	int dump_ret, sync_ret;
};

static void *intrude(void *arg)
{
	struct intruder *in = arg;
	float x = 1;
	struct adump_host_tensor t = { .data = &x, .bytes = 4, .dtype = ADUMP_DT_FLOAT,
				       .dim_count = 1, .dims = { 1 } };

	in->dump_ret = adump_host_dump(in->hs, "Add", "intruder", &t, 1, NULL, 0);
	in->sync_ret = adump_host_stream_sync(in->hs);
	return NULL;
}

START_TEST(test_wrong_thread_is_refused)
{
	char *root = t_tmpdir("host");
	struct adump_config cfg = case_config(root, CASE_FILE, NULL);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	struct adump_host_stream_stats hst;
	struct intruder in = { 0 };
	pthread_t th;
	char dir[4200];

	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	in.hs = hs;
	ck_assert_int_eq(pthread_create(&th, NULL, intrude, &in), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(in.dump_ret, -ADUMP_ERR_WRONG_THREAD);
	ck_assert_int_eq(in.sync_ret, -ADUMP_ERR_WRONG_THREAD);
	ck_assert_str_eq(adump_strerror(in.dump_ret),
			 "called from a thread that does not own the stream");
	adump_host_stream_stats(hs, &hst);
	ck_assert_uint_eq(hst.dumps, 0);
	ck_assert_uint_eq(hst.refused, 1);
	/* The owner still dumps, and its first dump takes task id 0. */
	float x = 2;
	struct adump_host_tensor t = { .data = &x, .bytes = 4, .dtype = ADUMP_DT_FLOAT,
				       .dim_count = 1, .dims = { 1 } };
	uint32_t task = 99;
	struct adump_host_op op = ADUMP_HOST_OP_INIT;

	op.op_type = "Add";
	op.op_name = "owner";
	op.inputs = &t;
	op.input_count = 1;
	ck_assert_int_eq(adump_host_dump_op(hs, &op, &task), 0);
	ck_assert_uint_eq(task, 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	snprintf(dir, sizeof(dir), "%s/%s/0", root, TIME_DIR);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	t_rmtree(root);
	free(root);
}
END_TEST

/* ---- bad arguments ---- */

START_TEST(test_bad_arguments_are_refused)
{
	char *root = t_tmpdir("host");
	struct adump_config cfg = case_config(root, CASE_FILE, NULL);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	struct adump_host_stream_config hcfg = ADUMP_HOST_STREAM_CONFIG_INIT;
	struct adump_host_stream_stats hst;
	float data[24] = { 0 };
	struct adump_host_tensor good = { .data = data, .bytes = 96, .dtype = ADUMP_DT_FLOAT,
					  .format = ADUMP_FORMAT_ND, .dim_count = 2, .dims = { 4, 6 } };
	struct adump_host_tensor t;
	struct adump_host_op op = ADUMP_HOST_OP_INIT;
	unsigned refused = 0;
	uint32_t task = 77;
	char dir[4200];

	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	/* Opening. */
	ck_assert_int_eq(adump_host_stream_open(NULL, NULL, &hs), -EINVAL);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, NULL), -EINVAL);
	hcfg.struct_size = 4;
	ck_assert_int_eq(adump_host_stream_open(s, &hcfg, &hs), -ADUMP_ERR_CONFIG);
	hcfg = (struct adump_host_stream_config)ADUMP_HOST_STREAM_CONFIG_INIT;
	hcfg.device_id = 64;
	ck_assert_int_eq(adump_host_stream_open(s, &hcfg, &hs), -ADUMP_ERR_CONFIG);
	ck_assert_ptr_null(hs);
	hcfg.device_id = 5;
	ck_assert_int_eq(adump_host_stream_open(s, &hcfg, &hs), 0);

#define REFUSED(call, code) do { ck_assert_int_eq((call), (code)); refused++; } while (0)
	ck_assert_int_eq(adump_host_dump(NULL, "Add", "x", &good, 1, NULL, 0), -EINVAL);
	REFUSED(adump_host_dump_op(hs, NULL, NULL), -EINVAL);
	op.struct_size = sizeof(size_t);
	op.op_type = "Add";
	op.op_name = "x";
	REFUSED(adump_host_dump_op(hs, &op, NULL), -EINVAL);
	REFUSED(adump_host_dump(hs, NULL, "x", &good, 1, NULL, 0), -EINVAL);
	REFUSED(adump_host_dump(hs, "Add", "", &good, 1, NULL, 0), -EINVAL);
	REFUSED(adump_host_dump(hs, "Add", "x", NULL, 1, NULL, 0), -EINVAL);
	REFUSED(adump_host_dump(hs, "Add", "x", &good, 1, NULL, 2), -EINVAL);
	REFUSED(adump_host_dump(hs, "Add", "x", &good, ADUMP_HOST_TENSOR_MAX + 1, NULL, 0), -EINVAL);
	t = good;
	t.dim_count = ADUMP_MAX_DIMS + 1;
	REFUSED(adump_host_dump(hs, "Add", "x", &t, 1, NULL, 0), -EINVAL);
	t = good;
	t.orig_dim_count = ADUMP_MAX_DIMS + 1;
	REFUSED(adump_host_dump(hs, "Add", "x", NULL, 0, &t, 1), -EINVAL);
	t = good;
	t.dims[1] = -6;
	REFUSED(adump_host_dump(hs, "Add", "x", &t, 1, NULL, 0), -EINVAL);
	t = good;
	t.dtype = 99;
	REFUSED(adump_host_dump(hs, "Add", "x", &t, 1, NULL, 0), -ADUMP_ERR_UNSUPPORTED);
	t.dtype = ADUMP_DT_STRING;
	REFUSED(adump_host_dump(hs, "Add", "x", &t, 1, NULL, 0), -ADUMP_ERR_UNSUPPORTED);
	t.dtype = -1;
	REFUSED(adump_host_dump(hs, "Add", "x", &t, 1, NULL, 0), -ADUMP_ERR_UNSUPPORTED);
	t = good;
	t.bytes = 95;
	REFUSED(adump_host_dump(hs, "Add", "x", &t, 1, NULL, 0), -EINVAL);
	t.bytes = 192;
	REFUSED(adump_host_dump(hs, "Add", "x", &good, 1, &t, 1), -EINVAL);
	t = good;
	t.dtype = ADUMP_DT_FLOAT16;                      /* 48 bytes, not 96 */
	REFUSED(adump_host_dump(hs, "Add", "x", &t, 1, NULL, 0), -EINVAL);
	t = good;
	t.data = NULL;
	REFUSED(adump_host_dump(hs, "Add", "x", &t, 1, NULL, 0), -EINVAL);
	t = good;
	t.format = 77;
	REFUSED(adump_host_dump(hs, "Add", "x", &t, 1, NULL, 0), -EINVAL);
	t = good;
	t.dim_count = 2;
	t.dims[0] = INT64_MAX;
	t.dims[1] = 4;
	REFUSED(adump_host_dump(hs, "Add", "x", &t, 1, NULL, 0), -EINVAL);
	REFUSED(adump_host_dump_nocopy(hs, "Add", "x", &good, 1, NULL, 0, NULL, NULL), -EINVAL);
	op = (struct adump_host_op)ADUMP_HOST_OP_INIT;
	op.op_type = "Add";
	op.op_name = "x";
	op.inputs = &good;
	op.input_count = 1;
	op.check_fn = noop_check;
	REFUSED(adump_host_dump_op(hs, &op, NULL), -EINVAL);
	op.check_fn = NULL;
	op.attr_count = 1;                              /* attrs NULL with a count */
	REFUSED(adump_host_dump_op(hs, &op, NULL), -EINVAL);
	op.attrs = (struct adump_attr[]){ { "module", NULL } };
	REFUSED(adump_host_dump_op(hs, &op, NULL), -EINVAL);
	op.attrs = (struct adump_attr[]){ { "module", "m" } };
	op.attr_count = ADUMP_HOST_ATTR_MAX + 1;
	REFUSED(adump_host_dump_op(hs, &op, NULL), -EINVAL);
#undef REFUSED
	/* Nothing was posted and no task id taken: the next good dump is task 0, and a scalar
	 * (no dims) and an empty tensor are fine. */
	struct adump_host_tensor scalar = { .data = data, .bytes = 8, .dtype = ADUMP_DT_INT64 };
	struct adump_host_tensor empty = { .dtype = ADUMP_DT_BF16, .dim_count = 2, .dims = { 0, 3 } };
	struct adump_host_tensor pair[2] = { scalar, empty };
	op = (struct adump_host_op)ADUMP_HOST_OP_INIT;
	op.op_type = "Add";
	op.op_name = "ok";
	op.inputs = pair;
	op.input_count = 2;
	op.outputs = &good;
	op.output_count = 1;
	op.release_fn = noop_release;
	ck_assert_int_eq(adump_host_dump_op(hs, &op, &task), 0);
	ck_assert_uint_eq(task, 0);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	adump_host_stream_stats(hs, &hst);
	ck_assert_uint_eq(hst.refused, refused);
	ck_assert_uint_eq(hst.dumps, 1);
	ck_assert_uint_eq(hst.device_id, 5);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_host_stream_close(NULL), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	snprintf(dir, sizeof(dir), "%s/%s/5", root, TIME_DIR);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	ck_assert_int_eq(adump_host_tensor_bytes(ADUMP_DT_INT4, (int64_t[]){ 3 }, 1), 2);
	ck_assert_int_eq(adump_host_tensor_bytes(ADUMP_DT_FLOAT, NULL, 0), 4);
	t_rmtree(root);
	free(root);
}
END_TEST

/* Attributes and dfx_message of an op land in its header as given; a caller built against
 * the first version of struct adump_host_op (struct_size without them) still dumps. */
START_TEST(test_attributes_reach_the_header)
{
	char *root = t_tmpdir("host-attrs");
	struct adump_config cfg = case_config(root, CASE_FILE, NULL);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	float data[4] = { 1, 2, 3, 4 };
	struct adump_host_tensor t = { .data = data, .bytes = 16, .dtype = ADUMP_DT_FLOAT,
				       .format = ADUMP_FORMAT_ND, .dim_count = 1, .dims = { 4 } };
	const struct adump_attr attrs[2] = {
		{ "module", "Module.layers.1.linear1.Linear.forward.0" }, { "empty", "" } };
	struct adump_host_op op = ADUMP_HOST_OP_INIT;
	uint32_t task = 0;
	char dir[4200], path[8400];
	size_t len;

	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	op.op_type = "mm";
	op.op_name = "Aten.mm.0.forward";
	op.inputs = &t;
	op.input_count = 1;
	op.attrs = attrs;
	op.attr_count = 2;
	op.dfx_message = "{\"requires_grad\": [true]}";
	op.timestamp_us = 1000;
	ck_assert_int_eq(adump_host_dump_op(hs, &op, &task), 0);
	op.struct_size = ADUMP_HOST_OP_SIZE_V1;        /* the attribute fields are not read */
	op.attr_count = 1u << 30;
	op.op_name = "v1";
	op.timestamp_us = 2000;
	ck_assert_int_eq(adump_host_dump_op(hs, &op, &task), 0);
	ck_assert_uint_eq(task, 1);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	snprintf(dir, sizeof(dir), "%s/%s/0", root, TIME_DIR);
	DIR *d = opendir(dir);
	struct dirent *e;
	int seen = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		Toolkit__Dumpdata__DumpData *dd;
		unsigned char *bytes;
		uint64_t hlen;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		bytes = t_read_file(path, &len);
		ck_assert_ptr_nonnull(bytes);
		memcpy(&hlen, bytes, 8);
		hlen = le64toh(hlen);
		dd = toolkit__dumpdata__dump_data__unpack(NULL, hlen, bytes + 8);
		ck_assert_ptr_nonnull(dd);
		if (!strcmp(dd->op_name, "v1")) {
			ck_assert_uint_eq(dd->n_attr, 0);
			ck_assert_msg(!dd->dfx_message || !dd->dfx_message[0], "v1: dfx_message set");
			seen |= 2;
		} else {
			ck_assert_str_eq(dd->op_name, "Aten.mm.0.forward");
			ck_assert_uint_eq(dd->n_attr, 2);
			ck_assert_str_eq(dd->attr[0]->name, "module");
			ck_assert_str_eq(dd->attr[0]->value,
					 "Module.layers.1.linear1.Linear.forward.0");
			ck_assert_str_eq(dd->attr[1]->name, "empty");
			ck_assert_str_eq(dd->attr[1]->value, "");
			ck_assert_str_eq(dd->dfx_message, "{\"requires_grad\": [true]}");
			seen |= 1;
		}
		ck_assert_uint_eq(len, 8 + hlen + 16);
		toolkit__dumpdata__dump_data__free_unpacked(dd, NULL);
		free(bytes);
	}
	closedir(d);
	ck_assert_int_eq(seen, 3);
	t_rmtree(root);
	free(root);
}
END_TEST

/* adump_host_stream_set_dir(): each file lands in the directory set when it was dumped
 * (relative to dump_path, absolute, or back in the session's), whatever the worker is doing
 * when the directory changes; bad directories change nothing. */
static void stream_dir_case(enum sink_case sc)
{
	char *root = t_tmpdir("host-dir");
	struct adump_config cfg = case_config(root, sc, NULL);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	static float data[65536];                       /* 256 KiB: several chunks per file */
	struct adump_host_tensor t = { .data = data, .bytes = sizeof(data),
				       .dtype = ADUMP_DT_FLOAT, .format = ADUMP_FORMAT_ND,
				       .dim_count = 1, .dims = { 65536 } };
	const char *suffix = sc == CASE_STATS ? ".csv" : sc == CASE_LZ4 ? ".lz4" : "";
	char dir[4200], blocker[4200];

	for (size_t i = 0; i < 65536; i++)
		data[i] = (float)i;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(adump_host_dump(hs, "Op", "session", &t, 1, NULL, 0), 0);
	/* No sync: set_dir waits for those three itself. */
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "step0/rank1"), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(adump_host_dump(hs, "Op", "step0", &t, 1, NULL, 0), 0);
	snprintf(dir, sizeof(dir), "%s/abs/step1", root);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, dir), 0);
	ck_assert_int_eq(adump_host_dump(hs, "Op", "step1", &t, 1, NULL, 0), 0);
	/* Refused, nothing changed: an empty name, a path through a file. */
	ck_assert_int_eq(adump_host_stream_set_dir(hs, ""), -EINVAL);
	snprintf(blocker, sizeof(blocker), "%s/file", root);
	fclose(fopen(blocker, "w"));
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "file/x"), -ENOTDIR);
	ck_assert_int_eq(adump_host_stream_set_dir(NULL, "x"), -EINVAL);
	ck_assert_int_eq(adump_host_dump(hs, "Op", "step1", &t, 1, NULL, 0), 0);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, NULL), 0);
	ck_assert_int_eq(adump_host_dump(hs, "Op", "session", &t, 1, NULL, 0), 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	snprintf(dir, sizeof(dir), "%s/%s/0", root, TIME_DIR);
	ck_assert_uint_eq(t_count_files(dir, suffix), 4);
	snprintf(dir, sizeof(dir), "%s/step0/rank1/0", root);
	ck_assert_uint_eq(t_count_files(dir, suffix), 2);
	snprintf(dir, sizeof(dir), "%s/abs/step1/0", root);
	ck_assert_uint_eq(t_count_files(dir, suffix), 2);
	/* Nothing else anywhere (no stray device folder, no .part). */
	ck_assert_uint_eq(t_count_files(root, ""), 8 + 1 /* blocker */);
	t_rmtree(root);
	free(root);
}

START_TEST(test_stream_dir_files)
{
	stream_dir_case(CASE_FILE);
}
END_TEST

START_TEST(test_stream_dir_stats)
{
	stream_dir_case(CASE_STATS);
}
END_TEST

START_TEST(test_stream_dir_packed_refused)
{
	char *root = t_tmpdir("host-dir-packed");
	struct adump_config cfg = case_config(root, CASE_PACKED, NULL);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;

	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "step0"), -ADUMP_ERR_UNSUPPORTED);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	t_rmtree(root);
	free(root);
}
END_TEST

/* ---- drop policy ---- */

struct drop_gate {
	struct adump_host_stream *hs;
	int check_calls;
};

/* Holds the worker inside the first file's check until the producer has dropped a chunk:
 * two staging buffers, one still held by that file, cannot take a multi-chunk dump. */
static int gate_check(void *user, uint32_t task_id)
{
	struct drop_gate *g = user;
	struct adump_host_stream_stats hst;

	g->check_calls++;
	for (;;) {
		adump_host_stream_stats(g->hs, &hst);
		if (hst.chan.drops)
			return 0;
		usleep(1000);
	}
}

START_TEST(test_drop_policy_fails_the_file)
{
	char *root = t_tmpdir("host");
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	struct adump_host_stream_stats hst;
	struct adump_stats st;
	struct drop_gate gate = { 0 };
	static unsigned char big[40000], small[100];
	struct adump_host_tensor tb = { .data = big, .bytes = sizeof(big), .dtype = ADUMP_DT_UINT8,
					.dim_count = 1, .dims = { sizeof(big) } };
	struct adump_host_tensor ts = { .data = small, .bytes = sizeof(small),
					.dtype = ADUMP_DT_UINT8, .dim_count = 1,
					.dims = { sizeof(small) } };
	struct adump_host_op op = ADUMP_HOST_OP_INIT;
	char dir[4200];
	size_t n;

	memset(big, 7, sizeof(big));
	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.on_full = ADUMP_ON_FULL_DROP;
	cfg.chunk_bytes = 4096;
	cfg.pool_bytes = 8192;
	cfg.stream_max = 1;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	gate.hs = hs;
	op.op_type = "Gate";
	op.op_name = "first";
	op.inputs = &ts;
	op.input_count = 1;
	op.release_fn = noop_release;
	op.check_fn = gate_check;
	op.user = &gate;
	ck_assert_int_eq(adump_host_dump_op(hs, &op, NULL), 0);
	/* Accepted, though its chunks are lost: the call succeeds, the sync reports it. */
	ck_assert_int_eq(adump_host_dump(hs, "Big", "lossy", &tb, 1, NULL, 0), 0);
	ck_assert_int_eq(adump_host_stream_sync(hs), -ADUMP_ERR_DROPPED);
	ck_assert_int_eq(adump_host_dump(hs, "Small", "after", &ts, 1, NULL, 0), 0);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	adump_host_stream_stats(hs, &hst);
	ck_assert_uint_gt(hst.chan.drops, 0);
	ck_assert_uint_eq(hst.dumps, 3);
	ck_assert_int_eq(gate.check_calls, 1);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, 2);
	ck_assert_uint_eq(st.files_failed, 1);
	ck_assert_uint_gt(st.drops, 0);
	ck_assert_int_eq(adump_session_destroy(s), -ADUMP_ERR_DROPPED);
	snprintf(dir, sizeof(dir), "%s/%s/0", root, TIME_DIR);
	ck_assert_uint_eq(t_count_files(dir, ".part"), 0);
	char **files = t_list_files(dir, &n);
	ck_assert_uint_eq(n, 3);
	for (size_t i = 0; i < n; i++) {
		/* The lossy file is there only under a name no reader takes for a dump. */
		if (strstr(files[i], "Big.lossy."))
			ck_assert_msg(strstr(files[i], ".failed"), "%s", files[i]);
		else
			ck_assert_msg(!strstr(files[i], ".failed"), "%s", files[i]);
	}
	t_free_list(files, n);
	t_rmtree(root);
	free(root);
}
END_TEST

/* ---- many producers ---- */

#define HOST_THREADS 3
#define THREAD_OPS 12

struct producer {
	struct adump_session *s;
	uint64_t seed;
	struct h_op ops[THREAD_OPS];
	uint32_t stream_id;
	int ret;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	struct adump_host_stream *hs = NULL;
	uint64_t rng = p->seed | 1;

	/* The stream belongs to the thread that opens it. */
	p->ret = adump_host_stream_open(p->s, NULL, &hs);
	if (p->ret < 0)
		return NULL;
	p->stream_id = adump_host_stream_id(hs);
	for (unsigned k = 0; k < THREAD_OPS && p->ret == 0; k++) {
		op_make(&p->ops[k], &rng, k, k % 3 == 0);
		p->ret = op_dump(hs, &p->ops[k], k);
	}
	if (p->ret == 0)
		p->ret = adump_host_stream_sync(hs);
	int ret = adump_host_stream_close(hs);
	if (p->ret == 0)
		p->ret = ret;
	return NULL;
}

START_TEST(test_host_and_device_streams_share_a_session)
{
	char *root = t_tmpdir("host");
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	static struct producer prod[HOST_THREADS];
	pthread_t th[HOST_THREADS];
	struct adump_dev *dev;
	struct adump_dev_stream *ds;
	void *mem[3];
	uint64_t count = 5000;
	char dir[4200];
	size_t n;

	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.chunk_bytes = CHUNK_BYTES;
	cfg.pool_bytes = 32 * CHUNK_BYTES;
	cfg.stream_max = 4;
	cfg.worker_count = 2;
	atomic_store(&release_count, 0);
	atomic_store(&release_bad, 0);
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_dev_open(0, &dev), 0);
	ck_assert_int_eq(adump_dev_stream_create(dev, &ds), 0);
	ck_assert_int_eq(adump_session_attach(s, ds), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(adump_dev_malloc(dev, count * 4, &mem[i]), 0);
	for (int i = 0; i < HOST_THREADS; i++) {
		prod[i] = (struct producer){ .s = s, .seed = t_seed() * 31 + (uint64_t)i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, produce, &prod[i]), 0);
	}
	/* The device stream dumps meanwhile. */
	struct adump_dev_tensor t = { .dtype = ADUMP_DT_FLOAT, .format = ADUMP_FORMAT_ND,
				      .dim_count = 1, .dims = { (int64_t)count }, .bytes = count * 4 };
	struct adump_dev_tensor a = t, b = t, c = t;
	a.data = mem[0];
	b.data = mem[1];
	c.data = mem[2];
	memset(mem[0], 0, count * 4);
	memset(mem[1], 0, count * 4);
	for (int k = 0; k < 8; k++) {
		struct adump_dev_dump dump = { .op_type = "Add", .op_name = "dev", .tensor_mask = ADUMP_DUMP_ALL };

		ck_assert_int_eq(adump_dev_launch_add(ds, &a, &b, 1.0, &c, &dump), 0);
	}
	ck_assert_int_eq(adump_dev_stream_sync(ds), 0);
	for (int i = 0; i < HOST_THREADS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(prod[i].ret, 0);
	}
	ck_assert_int_eq(adump_session_detach(s, ds), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_uint_eq(atomic_load(&release_count), HOST_THREADS * ((THREAD_OPS + 2) / 3));
	ck_assert_uint_eq(atomic_load(&release_bad), 0);

	/* Four streams, four distinct ids; each host stream's tasks 0..THREAD_OPS-1 once each,
	 * every file holding its op's bytes. */
	uint32_t dev_id = adump_dev_stream_id(ds);
	for (int i = 0; i < HOST_THREADS; i++) {
		ck_assert_uint_ne(prod[i].stream_id, dev_id);
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(prod[i].stream_id, prod[j].stream_id);
	}
	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	char **files = t_list_files(dir, &n);
	unsigned seen[HOST_THREADS][THREAD_OPS] = { { 0 } }, dev_files = 0;
	ck_assert_uint_eq(n, HOST_THREADS * THREAD_OPS + 8);
	for (size_t f = 0; f < n; f++) {
		char path[8400];
		uint32_t task, stream;
		unsigned char *bytes;
		size_t len;
		int who = -1;

		ck_assert(name_ids(files[f] + 2, &task, &stream));
		if (stream == dev_id) {
			dev_files++;
			continue;
		}
		for (int i = 0; i < HOST_THREADS; i++)
			if (prod[i].stream_id == stream)
				who = i;
		ck_assert_int_ge(who, 0);
		ck_assert_uint_lt(task, THREAD_OPS);
		seen[who][task]++;
		snprintf(path, sizeof(path), "%s/%s", dir, files[f]);
		bytes = t_read_file(path, &len);
		check_dump(bytes, len, &prod[who].ops[task], stream, task, files[f]);
		free(bytes);
	}
	ck_assert_uint_eq(dev_files, 8);
	for (int i = 0; i < HOST_THREADS; i++)
		for (int k = 0; k < THREAD_OPS; k++)
			ck_assert_uint_eq(seen[i][k], 1);
	t_free_list(files, n);
	for (int i = 0; i < HOST_THREADS; i++)
		for (int k = 0; k < THREAD_OPS; k++)
			op_free(&prod[i].ops[k]);
	for (int i = 0; i < 3; i++)
		adump_dev_free(dev, mem[i]);
	adump_dev_stream_destroy(ds);
	adump_dev_close(dev);
	t_rmtree(root);
	free(root);
}
END_TEST

/* The session goes first: it detaches the open stream, which then refuses dumps and only
 * frees on close. */
START_TEST(test_session_destroyed_before_close)
{
	char *root = t_tmpdir("host");
	struct adump_config cfg = case_config(root, CASE_FILE, NULL);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	float x = 3;
	struct adump_host_tensor t = { .data = &x, .bytes = 4, .dtype = ADUMP_DT_FLOAT,
				       .dim_count = 1, .dims = { 1 } };

	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	ck_assert_int_eq(adump_host_dump(hs, "Add", "before", &t, 1, NULL, 0), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_int_eq(adump_host_dump(hs, "Add", "after", &t, 1, NULL, 0), -ADUMP_ERR_SHUTDOWN);
	ck_assert_int_eq(adump_host_stream_sync(hs), -ADUMP_ERR_SHUTDOWN);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	t_rmtree(root);
	free(root);
}
END_TEST

/* ---- statistics computed at handover ---- */

/* One statistics session of @ops (zero copy or not as each op says): the CSV text of each
 * op by task id into @csv, and the records the stream posted. With @is_bytes the host
 * posts the tensors' bytes for the worker to fold, as before statistics moved to the
 * handover. */
static uint64_t stats_session(struct h_op *ops, unsigned op_count, bool is_bytes, char **csv)
{
	char *root = t_tmpdir("host-stats");
	struct adump_config cfg = case_config(root, CASE_STATS, NULL);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	struct adump_host_stream_stats hst;
	char dir[4200];
	char **files;
	size_t n;

	if (is_bytes)
		adump_testpoint_arm("host.stats_handover", -ENOMEM, 1, 1);
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (unsigned k = 0; k < op_count; k++)
		ck_assert_int_eq(op_dump(hs, &ops[k], k), 0);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	adump_host_stream_stats(hs, &hst);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	adump_testpoint_disarm_all();
	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	files = t_list_files(dir, &n);
	ck_assert_uint_eq(n, op_count);
	for (size_t i = 0; i < n; i++) {
		char path[8400], base[4200];
		uint32_t task, stream;
		size_t len;
		char *text;

		snprintf(base, sizeof(base), "%s", files[i] + 2);
		base[strlen(base) - 4] = 0;
		ck_assert(name_ids(base, &task, &stream));
		ck_assert_uint_lt(task, op_count);
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		text = t_read_file(path, &len);
		ck_assert_ptr_nonnull(text);
		csv[task] = strndup(text, len);         /* the file has no NUL */
		free(text);
	}
	t_free_list(files, n);
	t_rmtree(root);
	free(root);
	return hst.chan.records;
}

/* Random tensors of every dtype (floats with NaN and infinities among them): the CSV from
 * statistics computed at handover is byte for byte the CSV from the bytes, and no payload
 * went through the ring (one record per dump). */
START_TEST(test_stats_handover_matches_bytes)
{
	static struct h_op ops[SINK_OPS];
	char *by_handover[SINK_OPS] = { NULL }, *by_bytes[SINK_OPS] = { NULL };
	uint64_t rng = t_seed() | 1, payload = 0, records;

	for (unsigned k = 0; k < SINK_OPS; k++) {
		op_make(&ops[k], &rng, k, k % 3 == 1);
		payload += op_payload(&ops[k]);
	}
	records = stats_session(ops, SINK_OPS, false, by_handover);
	ck_assert_uint_eq(records, SINK_OPS);
	records = stats_session(ops, SINK_OPS, true, by_bytes);
	ck_assert_uint_ge(records, payload / CHUNK_BYTES);
	ck_assert_uint_gt(records, SINK_OPS);
	for (unsigned k = 0; k < SINK_OPS; k++) {
		ck_assert_msg(!strcmp(by_handover[k], by_bytes[k]), "op %u:\n%s\nfrom bytes:\n%s", k,
			      by_handover[k], by_bytes[k]);
		free(by_handover[k]);
		free(by_bytes[k]);
		op_free(&ops[k]);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("host");
	TCase *tc = tcase_create("sinks");
	TCase *tz = tcase_create("contracts");

	tcase_set_timeout(tc, 300);
	tcase_set_timeout(tz, 300);
	tcase_add_loop_test(tc, test_sink, 0, CASE_COUNT);
	tcase_add_test(tz, test_zero_copy_release_after_the_bytes);
	tcase_add_test(tz, test_zero_copy_check_fails_the_file);
	tcase_add_loop_test(tz, test_zero_copy_reads_the_callers_memory, 0, 2);
	tcase_add_test(tz, test_wrong_thread_is_refused);
	tcase_add_test(tz, test_bad_arguments_are_refused);
	tcase_add_test(tz, test_attributes_reach_the_header);
	tcase_add_test(tz, test_stream_dir_files);
	tcase_add_test(tz, test_stream_dir_stats);
	tcase_add_test(tz, test_stream_dir_packed_refused);
	tcase_add_test(tz, test_drop_policy_fails_the_file);
	tcase_add_test(tz, test_host_and_device_streams_share_a_session);
	tcase_add_test(tz, test_session_destroyed_before_close);
	tcase_add_test(tz, test_stats_handover_matches_bytes);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, tz);
	return t_run_suite(s);
}
