/* SPDX-License-Identifier: Apache-2.0 */
/* format msprobe (pipeline/out_msprobe.c) through the host API, with each writer: a dump
 * whose tensors span several chunks and share chunks becomes dump.json (msprobe's entry,
 * from the dump's dfx_message) and one .pt per tensor; each .pt is parsed as a zip here: the
 * records found through the central directory, every CRC right, the tensor's bytes 64-byte
 * aligned and equal to the source. Entries keep handover order; each directory a stream
 * leaves gets its dump.json, and a directory written into again keeps its earlier entries.
 * A failed write publishes nothing of its dump (.pt.failed, no entry, a loss line). Bad
 * configurations are refused. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/crc.h>
#include <json-c/json.h>

#include "adump/host.h"
#include "common/common.h"
#include "helpers.h"

#define CHUNK_BYTES (64u << 10)

static uint32_t le(const unsigned char *p, unsigned n)
{
	uint32_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* The .pt at @path: every record's CRC right; returns the data/0 record (offset, size). */
static long pt_data(const char *path, const unsigned char **file, size_t *size)
{
	size_t len, eocd, at;
	unsigned char *buf = t_read_file(path, &len);
	unsigned count;
	long data_at = -1;

	ck_assert_msg(buf != NULL, "%s missing", path);
	ck_assert_uint_ge(len, 22);
	eocd = len - 22;
	ck_assert_uint_eq(le(buf + eocd, 4), 0x06054b50);
	count = le(buf + eocd + 10, 2);
	ck_assert_uint_eq(count, 3);
	at = le(buf + eocd + 16, 4);
	for (unsigned i = 0; i < count; i++) {
		size_t nl = le(buf + at + 28, 2), local = le(buf + at + 42, 4);
		size_t n = le(buf + at + 20, 4), d;

		ck_assert_uint_eq(le(buf + at, 4), 0x02014b50);
		ck_assert_uint_eq(le(buf + at + 10, 2), 0);             /* stored */
		ck_assert_uint_eq(le(buf + local, 4), 0x04034b50);
		/* the local header agrees with the central one */
		ck_assert_uint_eq(le(buf + local + 14, 4), le(buf + at + 16, 4));
		d = local + 30 + le(buf + local + 26, 2) + le(buf + local + 28, 2);
		ck_assert_uint_le(d + n, len);
		ck_assert_uint_eq((uint32_t)crc32_gzip_refl(0, buf + d, n), le(buf + at + 16, 4));
		if (nl > 7 && memcmp(buf + at + 46 + nl - 7, "/data/0", 7) == 0) {
			ck_assert_uint_eq(d % 64, 0);
			data_at = (long)d;
			*size = n;
		}
		at += 46 + nl + le(buf + at + 30, 2) + le(buf + at + 32, 2);
	}
	ck_assert_int_ge(data_at, 0);
	*file = buf;
	return data_at;
}

/* The tests' msprobe session under @root/step0, small chunks. */
static void config_fill(struct adump_config *cfg, const char *root)
{
	cfg->dump_path = root;
	cfg->time_dir = "step0";
	cfg->chunk_bytes = CHUNK_BYTES;
	cfg->pool_bytes = 64u * CHUNK_BYTES;
	cfg->stream_max = 4;
	cfg->format = ADUMP_OUTPUT_MSPROBE;
}

static struct adump_session *open_session(const char *root, enum adump_writer_kind writer,
					  enum adump_summary summary)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;

	config_fill(&cfg, root);
	cfg.writer = writer;
	cfg.summary = summary;
	cfg.min_free_bytes = ADUMP_GUARD_OFF;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	return s;
}

/* A module's forward: input_args [x (150 KiB of float32, three chunks), 2.0], input_kwargs
 * {mask: int64 [5]}, output y (float32 [3]): small tensors share chunks with large ones. */
static float *xs, ys[3] = { 1.5f, -2.25f, 0.125f };
static int64_t ms[5] = { 1, -2, 3, -4, 5 };
#define X_COUNT (150u * 256u)

static int dump_forward(struct adump_host_stream *hs, const char *name)
{
	static const char dfx[] =
		"{\"input_args\":[{\"type\":\"torch.Tensor\",\"dtype\":\"torch.float32\","
		"\"shape\":[150,256],\"requires_grad\":true,\"tensor\":\"input.0\"},"
		"{\"type\":\"float\",\"value\":2.0}],"
		"\"input_kwargs\":{\"mask\":{\"type\":\"torch.Tensor\",\"dtype\":\"torch.int64\","
		"\"shape\":[5],\"requires_grad\":false,\"tensor\":\"input.1\"}},"
		"\"output\":{\"type\":\"torch.Tensor\",\"dtype\":\"torch.float32\",\"shape\":[3],"
		"\"requires_grad\":true,\"tensor\":\"output.0\"}}";
	struct adump_host_tensor in[2] = {
		{ .data = xs, .bytes = X_COUNT * 4, .dtype = ADUMP_DT_FLOAT, .dim_count = 2,
		  .dims = { 150, 256 } },
		{ .data = ms, .bytes = sizeof(ms), .dtype = ADUMP_DT_INT64, .dim_count = 1,
		  .dims = { 5 } },
	};
	struct adump_host_tensor out = { .data = ys, .bytes = sizeof(ys), .dtype = ADUMP_DT_FLOAT,
					 .dim_count = 1, .dims = { 3 } };
	struct adump_host_op op = ADUMP_HOST_OP_INIT;

	op.op_type = "Linear";
	op.op_name = name;
	op.inputs = in;
	op.input_count = 2;
	op.outputs = &out;
	op.output_count = 1;
	op.dfx_message = dfx;
	return adump_host_dump_op(hs, &op, NULL);
}

static struct json_object *load_data(const char *dir)
{
	char path[4200];
	struct json_object *doc, *data;

	snprintf(path, sizeof(path), "%s/dump.json", dir);
	doc = json_object_from_file(path);
	ck_assert_msg(doc != NULL, "%s: %s", path, json_util_get_last_err());
	ck_assert(json_object_object_get_ex(doc, "data", &data));
	json_object_get(data);
	json_object_put(doc);
	return data;
}

/* The .pt named by tensor description @t holds exactly @want. */
static void check_pt(const char *dir, struct json_object *t, const void *want, size_t bytes)
{
	struct json_object *dn;
	const unsigned char *file;
	char path[4200];
	size_t size;
	long at;

	ck_assert(json_object_object_get_ex(t, "data_name", &dn));
	snprintf(path, sizeof(path), "%s/dump_tensor_data/%s", dir, json_object_get_string(dn));
	at = pt_data(path, &file, &size);
	ck_assert_uint_eq(size, bytes);
	ck_assert(memcmp(file + at, want, bytes) == 0);
	free((void *)file);
}

static const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no %s", key);
	return json_object_get_string(v);
}

static void check_forward(const char *dir, const char *name, struct json_object *e,
			  bool has_md5)
{
	char want[256];

	struct json_object *args, *kw, *out, *x, *mask, *y, *v;
	char md5[16];

	ck_assert(json_object_object_get_ex(e, "input_args", &args));
	ck_assert(json_object_object_get_ex(e, "input_kwargs", &kw));
	ck_assert(json_object_object_get_ex(e, "output", &out));
	x = json_object_array_get_idx(args, 0);
	ck_assert_str_eq(str_of(x, "dtype"), "torch.float32");
	ck_assert_str_eq(str_of(x, "Max"), "1.0");     /* Python's repr */
	ck_assert(json_object_object_get_ex(x, "requires_grad", &v) && json_object_get_boolean(v));
	ck_assert_str_eq(str_of(json_object_array_get_idx(args, 1), "type"), "float");
	ck_assert(json_object_object_get_ex(kw, "mask", &mask));
	ck_assert_str_eq(str_of(mask, "Max"), "5");
	ck_assert_str_eq(str_of(mask, "Min"), "-4");
	y = json_object_array_get_idx(out, 0);
	ck_assert_str_eq(str_of(y, "Min"), "-2.25");
	ck_assert_str_eq(str_of(y, "Mean"), "-0.2083333283662796");  /* float32, as torch */
	snprintf(want, sizeof(want), "%s.input.0.pt", name);
	ck_assert_str_eq(str_of(x, "data_name"), want);
	snprintf(want, sizeof(want), "%s.kwargs.mask.pt", name);
	ck_assert_str_eq(str_of(mask, "data_name"), want);
	snprintf(want, sizeof(want), "%s.output.0.pt", name);
	ck_assert_str_eq(str_of(y, "data_name"), want);
	check_pt(dir, x, xs, X_COUNT * 4);
	check_pt(dir, mask, ms, sizeof(ms));
	check_pt(dir, y, ys, sizeof(ys));
	if (has_md5) {
		snprintf(md5, sizeof(md5), "%08x", (unsigned)crc32_gzip_refl(0, (void *)ys, sizeof(ys)));
		ck_assert_str_eq(str_of(y, "md5"), md5);
	} else {
		ck_assert(!json_object_object_get_ex(y, "md5", NULL));
	}
}

static void one_writer(enum adump_writer_kind writer)
{
	char *root = t_tmpdir("msprobe");
	char step0[4200], step1[4200];
	struct adump_session *s = open_session(root, writer, ADUMP_SUMMARY_MD5);
	struct adump_host_stream *hs;
	struct json_object *data, *e;
	const char *order[] = { "Module.fc.Linear.forward.0", "Module.fc.Linear.backward.0",
				"Module.fc.Linear.forward.1" };
	struct adump_host_tensor g = { .data = ys, .bytes = sizeof(ys), .dtype = ADUMP_DT_FLOAT,
				       .dim_count = 1, .dims = { 3 } };
	size_t i = 0;

	xs = malloc(X_COUNT * 4);
	for (uint32_t k = 0; k < X_COUNT; k++)
		xs[k] = (float)(k % 1000) / 999.0f;
	snprintf(step0, sizeof(step0), "%s/step0/rank0", root);
	snprintf(step1, sizeof(step1), "%s/step1/rank0", root);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "step0/rank0"), 0);
	ck_assert_int_eq(dump_forward(hs, order[0]), 0);
	/* without dfx_message (a backward call): inputs and outputs in order */
	ck_assert_int_eq(adump_host_dump(hs, "Linear", order[1], &g, 1, &g, 1), 0);
	ck_assert_int_eq(dump_forward(hs, order[2]), 0);
	/* leaving the directory writes its dump.json */
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "step1/rank0"), 0);
	data = load_data(step0);
	json_object_object_foreach(data, k, v) {
		(void)v;
		ck_assert_uint_lt(i, 3);
		ck_assert_str_eq(k, order[i++]);        /* handover order */
	}
	ck_assert_uint_eq(i, 3);
	ck_assert(json_object_object_get_ex(data, order[0], &e));
	check_forward(step0, order[0], e, true);
	ck_assert(json_object_object_get_ex(data, order[1], &e));
	{
		struct json_object *in;

		ck_assert(json_object_object_get_ex(e, "input", &in));
		ck_assert_str_eq(str_of(json_object_array_get_idx(in, 0), "data_name"),
				 "Module.fc.Linear.backward.0.input.0.pt");
	}
	json_object_put(data);
	ck_assert_int_eq(dump_forward(hs, "Aten.addmm.0.forward"), 0);
	/* back into step0: its dump.json keeps what it had and gains the new entry */
	ck_assert_int_eq(adump_host_stream_set_dir(hs, "step0/rank0"), 0);
	ck_assert_int_eq(dump_forward(hs, "Module.fc.Linear.forward.2"), 0);
	ck_assert_int_eq(adump_session_flush(s), 0);
	data = load_data(step0);
	ck_assert_int_eq(json_object_object_length(data), 4);
	ck_assert(json_object_object_get_ex(data, "Module.fc.Linear.forward.2", &e));
	check_forward(step0, "Module.fc.Linear.forward.2", e, true);
	json_object_put(data);
	data = load_data(step1);
	ck_assert_int_eq(json_object_object_length(data), 1);
	json_object_put(data);
	{
		char *doc = t_slurp(step1, "dump.json");

		ck_assert_ptr_nonnull(strstr(doc, "\"level\": \"L1\""));
		ck_assert_ptr_nonnull(strstr(doc, "\"task\": \"tensor\""));
		free(doc);
	}
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	/* nothing left half-written, no device folders */
	ck_assert_uint_eq(t_count_files(root, ".part"), 0);
	ck_assert_uint_eq(t_count_files(root, ".failed"), 0);
	ck_assert_int_ne(access(root, F_OK), -1);
	{
		char dev[4200];

		snprintf(dev, sizeof(dev), "%s/0", step0);
		ck_assert_int_eq(access(dev, F_OK), -1);
	}
	free(xs);
	t_rmtree(root);
	free(root);
}

START_TEST(test_layout_pwrite)
{
	one_writer(ADUMP_WRITER_PWRITE);
}
END_TEST

START_TEST(test_layout_uring)
{
	one_writer(ADUMP_WRITER_URING);
}
END_TEST

/* A write of the dump's tensors fails: none of its .pt files is published, its entry is left
 * out, the loss log names it; the next dump is complete. */
START_TEST(test_failed_write)
{
	char *root = t_tmpdir("msprobe-fail");
	struct adump_session *s = open_session(root, ADUMP_WRITER_PWRITE, ADUMP_SUMMARY_STATISTICS);
	struct adump_host_stream *hs;
	struct json_object *data, *e;
	char dir[4200], path[4200];

	xs = calloc(X_COUNT, 4);
	snprintf(dir, sizeof(dir), "%s/step0", root);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	adump_testpoint_arm("uring.write", -EIO, 2, 0);
	ck_assert_int_eq(dump_forward(hs, "Module.fc.Linear.forward.0"), 0);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	adump_testpoint_disarm_all();
	ck_assert_int_eq(dump_forward(hs, "Module.fc.Linear.forward.1"), 0);
	ck_assert_int_eq(adump_session_flush(s), -EIO);
	data = load_data(dir);
	ck_assert(!json_object_object_get_ex(data, "Module.fc.Linear.forward.0", NULL));
	ck_assert(json_object_object_get_ex(data, "Module.fc.Linear.forward.1", &e));
	json_object_put(data);
	snprintf(path, sizeof(path), "%s/dump_tensor_data/Module.fc.Linear.forward.0.input.0.pt",
		 dir);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_uint_eq(t_count_files(dir, ".pt.failed"), 3);
	ck_assert_uint_eq(t_count_files(dir, ".part"), 0);
	{
		char *log = t_slurp(dir, "adump-losses.jsonl");

		ck_assert_ptr_nonnull(log);
		ck_assert_ptr_nonnull(strstr(log, "dump_tensor_data/Module.fc.Linear.forward.0\""));
		free(log);
	}
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), -EIO);
	free(xs);
	t_rmtree(root);
	free(root);
}
END_TEST

/* Two threads, a stream each (on two workers), into one directory at once, each leaving
 * it while the other may still write: dump.json ends up with every entry once, each
 * thread's in its handover order. */
#define THREAD_DUMPS 40

struct writer_arg {
	struct adump_session *s;
	int index;
	int ret;
};

static void *writer_main(void *p)
{
	struct writer_arg *a = p;
	struct adump_host_stream *hs;
	struct adump_host_tensor t = { .data = ys, .bytes = sizeof(ys), .dtype = ADUMP_DT_FLOAT,
				       .dim_count = 1, .dims = { 3 } };
	char name[64];

	a->ret = adump_host_stream_open(a->s, NULL, &hs);
	if (a->ret == 0)
		a->ret = adump_host_stream_set_dir(hs, "step0/rank0");
	for (int i = 0; i < THREAD_DUMPS && a->ret == 0; i++) {
		snprintf(name, sizeof(name), "Module.t%d.Linear.forward.%d", a->index, i);
		a->ret = adump_host_dump(hs, "Linear", name, &t, 1, &t, 1);
	}
	if (a->ret == 0)
		a->ret = adump_host_stream_set_dir(hs, "elsewhere");
	if (a->ret == 0)
		a->ret = adump_host_stream_close(hs);
	return NULL;
}

START_TEST(test_two_streams_one_dir)
{
	char *root = t_tmpdir("msprobe-two");
	struct adump_session *s = open_session(root, ADUMP_WRITER_AUTO, ADUMP_SUMMARY_STATISTICS);
	struct writer_arg args[2] = { { .s = s, .index = 0 }, { .s = s, .index = 1 } };
	pthread_t th[2];
	struct json_object *data;
	int next[2] = { 0, 0 };
	char dir[4200];

	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, writer_main, &args[i]), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(args[i].ret, 0);
	}
	ck_assert_int_eq(adump_session_flush(s), 0);
	snprintf(dir, sizeof(dir), "%s/step0/rank0", root);
	data = load_data(dir);
	ck_assert_int_eq(json_object_object_length(data), 2 * THREAD_DUMPS);
	json_object_object_foreach(data, k, v) {
		int thread, n;

		(void)v;
		ck_assert_int_eq(sscanf(k, "Module.t%d.Linear.forward.%d", &thread, &n), 2);
		ck_assert_int_eq(n, next[thread]++);
	}
	json_object_put(data);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	t_rmtree(root);
	free(root);
}
END_TEST

/* Statistics content: dump.json only (task statistics), no dump_tensor_data. */
START_TEST(test_statistics)
{
	char *root = t_tmpdir("msprobe-stats");
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	struct adump_host_stream *hs;
	struct json_object *data, *e, *out;
	char dir[4200], *doc;

	xs = calloc(X_COUNT, 4);
	config_fill(&cfg, root);
	cfg.content = ADUMP_CONTENT_STATS;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	snprintf(dir, sizeof(dir), "%s/step0", root);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	ck_assert_int_eq(dump_forward(hs, "Module.fc.Linear.forward.0"), 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	data = load_data(dir);
	ck_assert(json_object_object_get_ex(data, "Module.fc.Linear.forward.0", &e));
	ck_assert(json_object_object_get_ex(e, "output", &out));
	ck_assert_str_eq(str_of(json_object_array_get_idx(out, 0), "Max"), "1.5");
	ck_assert(!json_object_object_get_ex(json_object_array_get_idx(out, 0), "data_name", NULL));
	json_object_put(data);
	doc = t_slurp(dir, "dump.json");
	ck_assert_ptr_nonnull(strstr(doc, "\"task\": \"statistics\""));
	ck_assert_ptr_nonnull(strstr(doc, "\"dump_data_dir\": null"));
	free(doc);
	snprintf(dir, sizeof(dir), "%s/step0/dump_tensor_data", root);
	ck_assert_int_eq(access(dir, F_OK), -1);
	free(xs);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(test_config_refused)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;

	cfg.dump_path = "/tmp";
	cfg.format = ADUMP_OUTPUT_MSPROBE;
	ck_assert_int_eq(adump_config_check(&cfg), 0);
	cfg.compress = ADUMP_COMPRESS_LZ4;
	ck_assert_int_eq(adump_config_check(&cfg), -ADUMP_ERR_CONFIG);
	cfg.compress = ADUMP_COMPRESS_NONE;
	cfg.layout = ADUMP_LAYOUT_PACKED;
	ck_assert_int_eq(adump_config_check(&cfg), -ADUMP_ERR_CONFIG);
	cfg.layout = ADUMP_LAYOUT_FILES;
	cfg.io = ADUMP_IO_DIRECT;
	ck_assert_int_eq(adump_config_check(&cfg), -ADUMP_ERR_CONFIG);
	cfg.io = ADUMP_IO_AUTO;
	cfg.format = (enum adump_output_format)7;
	ck_assert_int_eq(adump_config_check(&cfg), -ADUMP_ERR_CONFIG);
	cfg.format = ADUMP_OUTPUT_CANN;
	cfg.summary = ADUMP_SUMMARY_MD5;
	ck_assert_int_eq(adump_config_check(&cfg), -ADUMP_ERR_CONFIG);
}
END_TEST

/* An empty tensor between two others of one dump, all in one record: its .pt file (no data)
 * was completed twice, when the dump began and again as the record passed over it, its head
 * and tail submitted a second time while the first writes were in flight. The pwrite
 * writer's completion list lost them and the stream's sync never returned (a hang, caught
 * here by the test's timeout). */
START_TEST(test_empty_tensor_between)
{
	char *root = t_tmpdir("msprobe-empty"), dir[4200];
	struct adump_session *s = open_session(root, ADUMP_WRITER_PWRITE, ADUMP_SUMMARY_STATISTICS);
	struct adump_host_stream *hs;
	static const float x[4] = { 1, 2, 3, 4 }, z[3] = { -1, -2, -3 };
	struct adump_host_tensor in[3] = {
		{ .data = x, .bytes = sizeof(x), .dtype = ADUMP_DT_FLOAT, .dim_count = 1,
		  .dims = { 4 } },
		{ .data = NULL, .bytes = 0, .dtype = ADUMP_DT_FLOAT, .dim_count = 1, .dims = { 0 } },
		{ .data = z, .bytes = sizeof(z), .dtype = ADUMP_DT_FLOAT, .dim_count = 1,
		  .dims = { 3 } },
	};
	const void *want[3] = { x, x, z };             /* the empty one: none of x */
	struct json_object *data, *e, *args;

	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (int k = 0; k < 8; k++) {
		char name[64];

		snprintf(name, sizeof(name), "Module.m.Cat.forward.%d", k);
		ck_assert_int_eq(adump_host_dump(hs, "Cat", name, in, 3, NULL, 0), 0);
	}
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	snprintf(dir, sizeof(dir), "%s/step0", root);
	data = load_data(dir);
	ck_assert_int_eq(json_object_object_length(data), 8);
	ck_assert(json_object_object_get_ex(data, "Module.m.Cat.forward.7", &e));
	ck_assert(json_object_object_get_ex(e, "input_args", &args));
	ck_assert_uint_eq(json_object_array_length(args), 3);
	for (size_t i = 0; i < 3; i++)
		check_pt(dir, json_object_array_get_idx(args, i), want[i], in[i].bytes);
	json_object_put(data);
	ck_assert_uint_eq(t_count_files(root, ".failed"), 0);
	t_rmtree(root);
	free(root);
}
END_TEST

/* The worker keeps a dump's entry between steps (the same name, description and tensor
 * kinds): each step's entry must still be the one a fresh session writes for that dump
 * alone, its own statistics and data names, and a changed description is a new entry. */
static const char *const keep_dfx[2] = {
	"{\"input_args\":[{\"type\":\"torch.Tensor\",\"dtype\":\"torch.float32\","
	"\"shape\":[3],\"requires_grad\":true,\"tensor\":\"input.0\"}],"
	"\"output\":{\"type\":\"torch.Tensor\",\"dtype\":\"torch.float32\",\"shape\":[3],"
	"\"requires_grad\":true,\"tensor\":\"output.0\"}}",
	"{\"input_args\":[{\"type\":\"torch.Tensor\",\"dtype\":\"torch.float32\","
	"\"shape\":[3],\"requires_grad\":false,\"tensor\":\"input.0\"}],"
	"\"output\":[{\"type\":\"torch.Tensor\",\"dtype\":\"torch.float32\",\"shape\":[3],"
	"\"requires_grad\":false,\"tensor\":\"output.0\"}, {\"type\":\"int\",\"value\":3}]}",
};
static const float keep_vals[3][3] = {
	{ 1.5f, -2.25f, 0.125f }, { 7.0f, 0.5f, -1.0f }, { 3.0f, 3.0f, -8.5f },
};
#define KEEP_NAME "Module.fc.Linear.forward.0"

/* Step @k's dump into @hs's directory (step <k>/rank0): input keep_vals[k], output its
 * reverse, described as keep_dfx[k == 2]. */
static void keep_dump(struct adump_host_stream *hs, int k)
{
	float out[3] = { keep_vals[k][2], keep_vals[k][1], keep_vals[k][0] };
	struct adump_host_tensor in_t = { .data = keep_vals[k], .bytes = sizeof(keep_vals[k]),
					  .dtype = ADUMP_DT_FLOAT, .dim_count = 1, .dims = { 3 } };
	struct adump_host_tensor out_t = { .data = out, .bytes = sizeof(out),
					   .dtype = ADUMP_DT_FLOAT, .dim_count = 1, .dims = { 3 } };
	struct adump_host_op op = ADUMP_HOST_OP_INIT;
	char dir[32];

	snprintf(dir, sizeof(dir), "step%d/rank0", k);
	ck_assert_int_eq(adump_host_stream_set_dir(hs, dir), 0);
	op.op_type = "Linear";
	op.op_name = KEEP_NAME;
	op.inputs = &in_t;
	op.input_count = 1;
	op.outputs = &out_t;
	op.output_count = 1;
	op.dfx_message = keep_dfx[k == 2];
	ck_assert_int_eq(adump_host_dump_op(hs, &op, NULL), 0);
}

static struct json_object *keep_entry(const char *root, int k)
{
	struct json_object *data, *e;
	char dir[4200];

	snprintf(dir, sizeof(dir), "%s/step%d/rank0", root, k);
	data = load_data(dir);
	ck_assert(json_object_object_get_ex(data, KEEP_NAME, &e));
	json_object_get(e);
	json_object_put(data);
	return e;
}

START_TEST(test_entry_kept_between_steps)
{
	char *root = t_tmpdir("msprobe-keep"), *fresh = t_tmpdir("msprobe-fresh");
	struct adump_session *s = open_session(root, ADUMP_WRITER_AUTO, ADUMP_SUMMARY_STATISTICS);
	struct adump_host_stream *hs;

	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (int k = 0; k < 3; k++)
		keep_dump(hs, k);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	for (int k = 0; k < 3; k++) {
		struct adump_session *f = open_session(fresh, ADUMP_WRITER_AUTO,
						       ADUMP_SUMMARY_STATISTICS);
		struct json_object *kept, *alone, *out;
		char want[64];

		ck_assert_int_eq(adump_host_stream_open(f, NULL, &hs), 0);
		keep_dump(hs, k);
		ck_assert_int_eq(adump_host_stream_close(hs), 0);
		ck_assert_int_eq(adump_session_destroy(f), 0);
		kept = keep_entry(root, k);
		alone = keep_entry(fresh, k);
		ck_assert_msg(json_object_equal(kept, alone), "step %d: %s against %s", k,
			      json_object_to_json_string(kept), json_object_to_json_string(alone));
		/* and they hold this step's values */
		ck_assert(json_object_object_get_ex(kept, "output", &out));
		out = json_object_array_get_idx(out, 0);
		ck_assert_double_eq(json_object_get_double(json_object_object_get(out, "Max")),
				    fmax(keep_vals[k][0], fmax(keep_vals[k][1], keep_vals[k][2])));
		ck_assert_int_eq(json_object_get_boolean(
					 json_object_object_get(out, "requires_grad")), k != 2);
		snprintf(want, sizeof(want), KEEP_NAME ".output.0.pt");
		ck_assert_str_eq(str_of(out, "data_name"), want);
		json_object_put(kept);
		json_object_put(alone);
	}
	t_rmtree(root);
	t_rmtree(fresh);
	free(root);
	free(fresh);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("msprobe");
	TCase *tc = tcase_create("msprobe");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_layout_pwrite);
	t_tcase_add_test_needing(tc, T_URING, test_layout_uring);
	tcase_add_test(tc, test_failed_write);
	tcase_add_test(tc, test_two_streams_one_dir);
	tcase_add_test(tc, test_statistics);
	tcase_add_test(tc, test_config_refused);
	tcase_add_test(tc, test_empty_tensor_between);
	tcase_add_test(tc, test_entry_kept_between_steps);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return t_run_suite(suite());
}
