/* SPDX-License-Identifier: Apache-2.0 */
/* The dump parser: a header round trip from memory and from a file, payload ranges, and
 * malformed input (short files, absurd lengths, bad varints, overflowing sizes, too many
 * dimensions, unknown dtypes, every truncation, random corruption) failing cleanly. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dump_data.pb-c.h"
#include "reader_helpers.h"

static const uint64_t dims_a[] = { 4, 2 }, dims_b[] = { 3 }, dims_c[] = { 2, 2, 2 };
static float in0[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
static int64_t in1[3] = { -1, 0, 1 };
static uint16_t out0[8] = { 0x3c00, 0x4000, 0x4200, 0x4400, 0x7c00, 0xfc00, 0x7e00, 0x0000 };
static unsigned char buf0[5] = { 1, 2, 3, 4, 5 };
static unsigned char space0[3] = { 9, 8, 7 };

static struct adump_tensor tensors[5];
static const struct adump_attr attrs[] = { { "alpha", "1" }, { "mode", "fast" } };
static struct adump_op op;
static const void *payloads[5] = { in0, in1, out0, buf0, space0 };

static void setup(void)
{
	tensors[0] = rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 2, dims_a, sizeof(in0));
	tensors[1] = rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_INT64, 1, dims_b, sizeof(in1));
	tensors[2] = rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT16, 3, dims_c, sizeof(out0));
	tensors[2].format = ADUMP_FORMAT_NCHW;
	tensors[2].sub_format = 3;
	tensors[2].orig_dim_count = 1;
	tensors[2].orig_dims[0] = 8;
	tensors[2].address = 0xdead0000;
	tensors[3] = rt_tensor(ADUMP_TENSOR_BUFFER, ADUMP_DT_UINT8, 0, NULL, sizeof(buf0));
	tensors[4] = rt_tensor(ADUMP_TENSOR_WORKSPACE, ADUMP_DT_UINT8, 0, NULL, sizeof(space0));
	op = (struct adump_op){ .op_type = "Add", .op_name = "add_1", .task_id = 3,
				.stream_id = 1, .timestamp_us = 1700000000123456ull,
				.tensor_count = 5, .tensors = tensors, .attr_count = 2,
				.attrs = attrs, .dfx_message = "dfx here" };
}

static void check_round_trip(struct adump_reader *r, size_t file_len)
{
	const struct adump_reader_header *h = adump_reader_header(r);
	unsigned char got[64];

	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(h->version, "2.0");
	ck_assert_str_eq(h->op_name, "add_1");
	ck_assert_str_eq(h->dfx_message, "dfx here");
	ck_assert_uint_eq(h->dump_time, 1700000000123456ull);
	ck_assert_uint_eq(h->attr_count, 2);
	ck_assert_str_eq(h->attrs[1].name, "mode");
	ck_assert_str_eq(h->attrs[1].value, "fast");
	ck_assert_uint_eq(h->tensor_count, 5);
	ck_assert_uint_eq(h->kind_count[ADUMP_TENSOR_INPUT], 2);
	ck_assert_uint_eq(h->kind_count[ADUMP_TENSOR_OUTPUT], 1);
	ck_assert_uint_eq(h->kind_count[ADUMP_TENSOR_BUFFER], 1);
	ck_assert_uint_eq(h->kind_count[ADUMP_TENSOR_WORKSPACE], 1);
	ck_assert_uint_eq(h->file_bytes, file_len);
	ck_assert_uint_eq(h->payload_bytes, 32 + 24 + 16 + 5 + 3);
	ck_assert_uint_eq(h->tensors[0].offset, 8 + h->header_bytes);

	const struct adump_reader_tensor *o = &h->tensors[2];
	ck_assert_int_eq(o->info.kind, ADUMP_TENSOR_OUTPUT);
	ck_assert_uint_eq(o->index, 0);
	ck_assert_int_eq(o->info.dtype, ADUMP_DT_FLOAT16);
	ck_assert_int_eq(o->info.format, ADUMP_FORMAT_NCHW);
	ck_assert_int_eq(o->info.sub_format, 3);
	ck_assert_uint_eq(o->info.dim_count, 3);
	ck_assert_uint_eq(o->info.dims[2], 2);
	ck_assert_uint_eq(o->info.orig_dim_count, 1);
	ck_assert_uint_eq(o->info.orig_dims[0], 8);
	ck_assert_uint_eq(o->info.address, 0xdead0000);
	ck_assert_uint_eq(h->tensors[1].index, 1);
	ck_assert_uint_eq(h->tensors[4].index, 0);
	for (uint32_t i = 0; i < 5; i++) {
		uint64_t expect;

		ck_assert_uint_eq(h->tensors[i].info.bytes, tensors[i].bytes);
		if (i)
			ck_assert_uint_eq(h->tensors[i].offset,
					  h->tensors[i - 1].offset + tensors[i - 1].bytes);
		ck_assert_int_eq(adump_reader_read(r, i, 0, got, tensors[i].bytes), 0);
		ck_assert_mem_eq(got, payloads[i], tensors[i].bytes);
		if (i < 3) {
			ck_assert_int_eq(adump_reader_tensor_expected_bytes(&h->tensors[i].info,
									    &expect), 0);
			ck_assert_uint_eq(expect, tensors[i].bytes);
		}
	}
	/* A partial read inside the payload, and one that leaves it. */
	ck_assert_int_eq(adump_reader_read(r, 0, 4, got, 8), 0);
	ck_assert_mem_eq(got, (char *)in0 + 4, 8);
	ck_assert_int_eq(adump_reader_read(r, 0, 28, got, 8), -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_reader_read(r, 5, 0, got, 1), -ADUMP_ERR_CONFIG);
}

START_TEST(test_round_trip_mem)
{
	struct adump_reader *r;
	size_t len;
	void *buf = rt_dump_mem(&op, payloads, &len);

	ck_assert_int_eq(adump_reader_create(&r), 0);
	ck_assert_int_eq(adump_reader_open_mem(r, buf, len, "mem"), 0);
	check_round_trip(r, len);
	ck_assert_ptr_nonnull(adump_reader_map(r, 2));
	ck_assert_mem_eq(adump_reader_map(r, 2), out0, sizeof(out0));
	adump_reader_destroy(r);
	free(buf);
}
END_TEST

START_TEST(test_round_trip_file)
{
	struct adump_reader *r;
	char name[256], path[512];
	char *dir = t_tmpdir("reader");
	struct stat st;

	ck_assert_int_gt(adump_dump_file_name(&op, name, sizeof(name)), 0);
	ck_assert_str_eq(name, "Add.add_1.3.1.1700000000123456");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(adump_dump_write_file(path, &op, payloads, 0644), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(adump_reader_create(&r), 0);
	ck_assert_int_eq(adump_reader_open(r, path), 0);
	check_round_trip(r, (size_t)st.st_size);
	/* Files are read with pread, never mapped whole. */
	ck_assert_ptr_null(adump_reader_map(r, 0));
	ck_assert_str_eq(adump_reader_name(r), path);
	/* Reopening on the same reader replaces the dump. */
	ck_assert_int_eq(adump_reader_open(r, path), 0);
	check_round_trip(r, (size_t)st.st_size);
	adump_reader_close(r);
	ck_assert_ptr_null(adump_reader_header(r));
	/* Missing file and directory. */
	ck_assert_int_eq(adump_reader_open(r, "/nonexistent/x"), -ENOENT);
	ck_assert_ptr_nonnull(strstr(adump_reader_error(r), "/nonexistent/x"));
	ck_assert_int_eq(adump_reader_open(r, dir), -EISDIR);
	adump_reader_destroy(r);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* Opening @len bytes fails with @err and a message that names the dump and contains @what. */
static void expect_fail(const void *buf, size_t len, int err, const char *what)
{
	struct adump_reader *r;
	int ret;

	ck_assert_int_eq(adump_reader_create(&r), 0);
	ret = adump_reader_open_mem(r, buf, len, "bad.dump");
	ck_assert_msg(ret == err, "expected %d got %d (%s)", err, ret, adump_reader_error(r));
	ck_assert_ptr_null(adump_reader_header(r));
	ck_assert_msg(strncmp(adump_reader_error(r), "bad.dump: ", 10) == 0, "%s",
		      adump_reader_error(r));
	if (what)
		ck_assert_msg(strstr(adump_reader_error(r), what), "'%s' not in '%s'", what,
			      adump_reader_error(r));
	adump_reader_destroy(r);
}

START_TEST(test_short_and_absurd_lengths)
{
	unsigned char b[32] = { 0 };
	uint64_t le;

	expect_fail(b, 0, -ADUMP_ERR_INCOMPLETE, "too short");
	expect_fail(b, 7, -ADUMP_ERR_INCOMPLETE, "too short");
	le = htole64((uint64_t)1 << 40);
	memcpy(b, &le, 8);
	expect_fail(b, sizeof(b), -ADUMP_ERR_CORRUPT, "absurd");
	le = htole64(UINT64_MAX);
	memcpy(b, &le, 8);
	expect_fail(b, sizeof(b), -ADUMP_ERR_CORRUPT, "absurd");
	le = htole64(25);
	memcpy(b, &le, 8);
	expect_fail(b, sizeof(b), -ADUMP_ERR_INCOMPLETE, "exceeds");
	/* An empty header is a valid, empty dump. */
	le = 0;
	memcpy(b, &le, 8);
	struct adump_reader *r;
	ck_assert_int_eq(adump_reader_create(&r), 0);
	ck_assert_int_eq(adump_reader_open_mem(r, b, 8, "empty"), 0);
	ck_assert_uint_eq(adump_reader_header(r)->tensor_count, 0);
	ck_assert_str_eq(adump_reader_header(r)->op_name, "");
	adump_reader_destroy(r);
}
END_TEST

START_TEST(test_bad_varint)
{
	/* Field 2 (dump_time, varint) whose varint never terminates within 11 bytes. */
	unsigned char b[8 + 12];
	uint64_t le = htole64(12);

	memcpy(b, &le, 8);
	b[8] = 0x10;
	memset(b + 9, 0xff, 11);
	expect_fail(b, sizeof(b), -ADUMP_ERR_CORRUPT, "does not parse");
	/* A length-delimited field claiming more bytes than the header holds. */
	le = htole64(3);
	memcpy(b, &le, 8);
	b[8] = 0x0a;
	b[9] = 0x7f;
	b[10] = 'x';
	expect_fail(b, 11, -ADUMP_ERR_CORRUPT, "does not parse");
}
END_TEST

START_TEST(test_truncated_and_trailing)
{
	size_t len;
	char *buf = rt_dump_mem(&op, payloads, &len), *longer;

	expect_fail(buf, len - 1, -ADUMP_ERR_INCOMPLETE, "truncated");
	longer = malloc(len + 3);
	memcpy(longer, buf, len);
	memset(longer + len, 0, 3);
	expect_fail(longer, len + 3, -ADUMP_ERR_CORRUPT, "3 bytes after the last payload");
	/* Every prefix of the file fails cleanly. */
	for (size_t n = 0; n < len; n++) {
		struct adump_reader *r;

		ck_assert_int_eq(adump_reader_create(&r), 0);
		ck_assert_int_lt(adump_reader_open_mem(r, buf, n, "prefix"), 0);
		ck_assert_ptr_nonnull(strstr(adump_reader_error(r), "prefix: "));
		adump_reader_destroy(r);
	}
	free(longer);
	free(buf);
}
END_TEST

START_TEST(test_sizes_overflow)
{
	struct adump_tensor big[2];
	struct adump_op o = op;
	long hdr;
	char buf[512];

	big[0] = rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 0, NULL, UINT64_MAX - 10);
	big[1] = rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 0, NULL, 100);
	o.tensors = big;
	o.tensor_count = 2;
	hdr = adump_dump_header_pack(&o, buf, sizeof(buf));
	ck_assert_int_gt(hdr, 0);
	expect_fail(buf, (size_t)hdr, -ADUMP_ERR_TOO_BIG, "overflow");
	/* One huge size alone: the file is simply far too short. */
	o.tensor_count = 1;
	big[0].bytes = UINT64_MAX / 2;
	hdr = adump_dump_header_pack(&o, buf, sizeof(buf));
	expect_fail(buf, (size_t)hdr, -ADUMP_ERR_INCOMPLETE, "truncated");
}
END_TEST

/* Pack a DumpData built by hand (fields adump_dump_header_pack cannot produce). */
static size_t pack_raw(Toolkit__Dumpdata__DumpData *dd, unsigned char *buf)
{
	size_t n = toolkit__dumpdata__dump_data__pack(dd, buf + 8);
	uint64_t le = htole64(n);

	memcpy(buf, &le, 8);
	return n + 8;
}

START_TEST(test_too_many_dims)
{
	Toolkit__Dumpdata__DumpData dd = TOOLKIT__DUMPDATA__DUMP_DATA__INIT;
	Toolkit__Dumpdata__OpOutput out = TOOLKIT__DUMPDATA__OP_OUTPUT__INIT, *outs[1] = { &out };
	Toolkit__Dumpdata__Shape shape = TOOLKIT__DUMPDATA__SHAPE__INIT;
	uint64_t dims[30];
	unsigned char buf[512];

	for (int i = 0; i < 30; i++)
		dims[i] = 1;
	shape.n_dim = 30;
	shape.dim = dims;
	out.shape = &shape;
	dd.n_output = 1;
	dd.output = outs;
	expect_fail(buf, pack_raw(&dd, buf), -ADUMP_ERR_CORRUPT, "30 dimensions");
}
END_TEST

/* The fields only a hand-built header carries: an input's arg_index, type, sub-format, address
 * and origin shape, a buffer's and a workspace's type (raw uint8 ND bytes); then an origin
 * shape with too many dimensions, named as such. */
START_TEST(test_raw_fields)
{
	Toolkit__Dumpdata__DumpData dd = TOOLKIT__DUMPDATA__DUMP_DATA__INIT;
	Toolkit__Dumpdata__OpInput in = TOOLKIT__DUMPDATA__OP_INPUT__INIT, *ins[1] = { &in };
	Toolkit__Dumpdata__OpBuffer bf = TOOLKIT__DUMPDATA__OP_BUFFER__INIT, *bufs[1] = { &bf };
	Toolkit__Dumpdata__Workspace ws = TOOLKIT__DUMPDATA__WORKSPACE__INIT, *spaces[1] = { &ws };
	Toolkit__Dumpdata__Shape shape = TOOLKIT__DUMPDATA__SHAPE__INIT;
	Toolkit__Dumpdata__Shape orig = TOOLKIT__DUMPDATA__SHAPE__INIT;
	uint64_t dims[1] = { 2 }, orig_dims[30];
	const struct adump_reader_header *h;
	unsigned char buf[512];
	struct adump_reader *r;
	size_t len;

	for (int i = 0; i < 30; i++)
		orig_dims[i] = 1;
	orig_dims[1] = 2;
	shape.n_dim = 1;
	shape.dim = dims;
	orig.n_dim = 2;
	orig.dim = orig_dims;
	in.data_type = TOOLKIT__DUMPDATA__OUTPUT_DATA_TYPE__DT_FLOAT;
	in.format = (Toolkit__Dumpdata__OutputFormat)1;
	in.sub_format = 4;
	in.address = 0xbeef000;
	in.arg_index = 6;
	in.input_type = 5;
	in.shape = &shape;
	in.original_shape = &orig;
	in.size = 8;
	bf.buffer_type = (Toolkit__Dumpdata__BufferType)3;
	bf.size = 3;
	ws.type = (Toolkit__Dumpdata__Workspace__SpaceType)7;
	ws.size = 2;
	dd.n_input = 1;
	dd.input = ins;
	dd.n_buffer = 1;
	dd.buffer = bufs;
	dd.n_space = 1;
	dd.space = spaces;
	len = pack_raw(&dd, buf);
	memset(buf + len, 0, 8 + 3 + 2);
	ck_assert_int_eq(adump_reader_create(&r), 0);
	ck_assert_int_eq(adump_reader_open_mem(r, buf, len + 8 + 3 + 2, "raw"), 0);
	h = adump_reader_header(r);
	ck_assert_uint_eq(h->tensor_count, 3);
	ck_assert_int_eq(h->tensors[0].info.kind, ADUMP_TENSOR_INPUT);
	ck_assert_int_eq(h->tensors[0].info.dtype, ADUMP_DT_FLOAT);
	ck_assert_int_eq(h->tensors[0].info.format, 1);
	ck_assert_int_eq(h->tensors[0].info.sub_format, 4);
	ck_assert_uint_eq(h->tensors[0].info.address, 0xbeef000);
	ck_assert_uint_eq(h->tensors[0].info.arg_index, 6);
	ck_assert_uint_eq(h->tensors[0].type, 5);
	ck_assert_uint_eq(h->tensors[0].info.dim_count, 1);
	ck_assert_uint_eq(h->tensors[0].info.dims[0], 2);
	ck_assert_uint_eq(h->tensors[0].info.orig_dim_count, 2);
	ck_assert_uint_eq(h->tensors[0].info.orig_dims[1], 2);
	for (uint32_t i = 1; i < 3; i++) {
		ck_assert_int_eq(h->tensors[i].info.kind,
				 i == 1 ? ADUMP_TENSOR_BUFFER : ADUMP_TENSOR_WORKSPACE);
		ck_assert_int_eq(h->tensors[i].info.dtype, ADUMP_DT_UINT8);
		ck_assert_int_eq(h->tensors[i].info.format, ADUMP_FORMAT_ND);
		ck_assert_uint_eq(h->tensors[i].type, i == 1 ? 3 : 7);
		ck_assert_uint_eq(h->tensors[i].info.bytes, i == 1 ? 3 : 2);
		ck_assert_uint_eq(h->tensors[i].offset, len + (i == 1 ? 8 : 11));
	}
	adump_reader_destroy(r);

	orig.n_dim = 30;
	expect_fail(buf, pack_raw(&dd, buf), -ADUMP_ERR_CORRUPT,
		    "input 0: original shape has 30 dimensions");
}
END_TEST

START_TEST(test_unknown_dtype)
{
	Toolkit__Dumpdata__DumpData dd = TOOLKIT__DUMPDATA__DUMP_DATA__INIT;
	Toolkit__Dumpdata__OpInput in = TOOLKIT__DUMPDATA__OP_INPUT__INIT, *ins[1] = { &in };
	unsigned char buf[512];
	struct adump_reader *r;
	struct adump_reader_stats st;
	uint64_t expect;
	size_t len;

	in.data_type = (Toolkit__Dumpdata__OutputDataType)99;
	in.size = 4;
	dd.n_input = 1;
	dd.input = ins;
	len = pack_raw(&dd, buf);
	memset(buf + len, 0, 4);
	ck_assert_int_eq(adump_reader_create(&r), 0);
	/* The payload can still be located: the parser accepts it, users of the dtype don't. */
	ck_assert_int_eq(adump_reader_open_mem(r, buf, len + 4, "odd"), 0);
	ck_assert_int_eq(adump_reader_header(r)->tensors[0].info.dtype, 99);
	ck_assert_int_eq(adump_reader_tensor_expected_bytes(&adump_reader_header(r)->tensors[0].info,
							    &expect),
			 -ADUMP_ERR_UNSUPPORTED);
	ck_assert_int_eq(adump_reader_tensor_stats(r, 0, &st), -ADUMP_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(adump_reader_error(r), "unknown"));
	/* An index past the tensors is refused with its reason, naming the dump. */
	ck_assert_int_eq(adump_reader_tensor_stats(r, 1, &st), -ADUMP_ERR_CONFIG);
	ck_assert_ptr_nonnull(strstr(adump_reader_error(r), "odd: statistics of tensor 1: out of range"));
	ck_assert_ptr_null(adump_reader_npy_descr(99));
	adump_reader_destroy(r);
}
END_TEST

START_TEST(test_random_corruption)
{
	uint64_t state = t_seed();
	size_t len;
	char *good = rt_dump_mem(&op, payloads, &len);
	char *bad = malloc(len);
	struct adump_reader *r;

	ck_assert_int_eq(adump_reader_create(&r), 0);
	for (int iter = 0; iter < 20000; iter++) {
		size_t n = len;
		int flips = 1 + (int)(t_rand(&state) % 4);

		memcpy(bad, good, len);
		for (int f = 0; f < flips; f++)
			bad[t_rand(&state) % len] = (char)(t_rand(&state) >> 56);
		if (t_rand(&state) % 4 == 0)
			n = t_rand(&state) % len;
		if (adump_reader_open_mem(r, bad, n, "fuzzed") == 0) {
			const struct adump_reader_header *h = adump_reader_header(r);
			struct adump_reader_stats st;

			ck_assert_uint_eq(h->file_bytes, n);
			for (uint32_t i = 0; i < h->tensor_count; i++)
				adump_reader_tensor_stats(r, i, &st);
		} else {
			ck_assert_ptr_nonnull(strstr(adump_reader_error(r), "fuzzed: "));
		}
	}
	adump_reader_destroy(r);
	free(bad);
	free(good);
}
END_TEST

START_TEST(test_custom_source)
{
	/* A source defined outside the library: the plug-in path other containers use. */
	size_t len;
	char *buf = rt_dump_mem(&op, payloads, &len);
	struct adump_reader_source *src;
	struct adump_reader *r;

	ck_assert_int_eq(adump_reader_source_open_mem(buf, len, true, &src), 0);
	ck_assert_uint_eq(adump_reader_source_size(src), len);
	ck_assert_int_eq(adump_reader_create(&r), 0);
	ck_assert_int_eq(adump_reader_open_source(r, src, "owned"), 0);
	check_round_trip(r, len);
	adump_reader_destroy(r);        /* frees buf through the source */
}
END_TEST

/* Dump file names, as msaccucmp reads them. */
START_TEST(test_name_parse)
{
	static const struct {
		const char *name, *op_type, *op_name;
		uint64_t task, stream, timestamp, subtask;
		bool has_stream, is_ffts, is_skipped;
	} ok[] = {
		{ "Add.add_1.12.3.1764633600000000", "Add", "add_1", 12, 3, 1764633600000000ull, 0,
		  true, false, false },
		{ "/d/0/Add.add_1.12.3.1764633600000000.lz4", "Add", "add_1", 12, 3,
		  1764633600000000ull, 0, true, false, false },
		{ "Add.add_1.12.1764633600000000", "Add", "add_1", 12, 0, 1764633600000000ull, 0,
		  false, false, false },
		/* Task type 1 with the subtask fields: the timestamp is the last field, "0". */
		{ "Conv2D.conv.7.2.1764633600000000.1.4.0.0", "Conv2D", "conv", 7, 2, 0, 0, true,
		  false, false },
		{ "Conv2D.conv.7.2.1764633600000000.4.5.11.0", "Conv2D", "conv", 7, 2,
		  1764633600000000ull, 11, true, true, false },
		{ "Conv2D.conv_lxslice3.7.2.1764633600000000.4.5.0.0", "Conv2D", "conv", 7, 2,
		  1764633600000000ull, 3, true, true, false },
		{ "Add.p0_sgt_graph_2_x_sgt_graph_12_relu_1.1.2.1764633600000000", "Add", "relu_1", 1,
		  2, 1764633600000000ull, 0, true, false, false },
		/* At the end, "sgt_graph_<N>" stays. */
		{ "Add.a_sgt_graph_3.1.2.1764633600000000", "Add", "a_sgt_graph_3", 1, 2,
		  1764633600000000ull, 0, true, false, false },
		{ "Add.a_lxslice0_b.1.2.1764633600000000", "Add", "a_lxslice0_b", 1, 2,
		  1764633600000000ull, 0, true, false, true },
		{ "Add.x.1.2.123", "Add", "x", 1, 2, 0, 0, true, false, false },
	};
	static const char *const bad[] = {
		"notes.txt", "Add.add 1.12.3.1764633600000000", "Add..1.2.1764633600000000",
		"Add.x.1.y.1764633600000000", "Add.x.1.2.", "Add.x.1", ".x.1.2.3", "Add.x.1.2.3/",
	};
	struct adump_reader_name f;
	char long_name[300];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(adump_reader_name_parse(ok[i].name, &f) == 0, "%s", ok[i].name);
		ck_assert_str_eq(f.op_type, ok[i].op_type);
		ck_assert_str_eq(f.op_name, ok[i].op_name);
		ck_assert_uint_eq(f.task_id, ok[i].task);
		ck_assert_uint_eq(f.has_stream_id, ok[i].has_stream);
		ck_assert_uint_eq(f.stream_id, ok[i].stream);
		ck_assert_uint_eq(f.timestamp, ok[i].timestamp);
		ck_assert_uint_eq(f.is_ffts, ok[i].is_ffts);
		ck_assert_uint_eq(f.subtask, ok[i].subtask);
		ck_assert_uint_eq(f.is_skipped, ok[i].is_skipped);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(adump_reader_name_parse(bad[i], &f) == -EINVAL, "%s", bad[i]);
	/* An op name of 256 bytes does not fit; 255 does. */
	memset(long_name, 'a', sizeof(long_name));
	memcpy(long_name, "Add.", 4);
	strcpy(long_name + 4 + 256, ".1.2.3");
	ck_assert_int_eq(adump_reader_name_parse(long_name, &f), -EINVAL);
	strcpy(long_name + 4 + 255, ".1.2.3");
	ck_assert_int_eq(adump_reader_name_parse(long_name, &f), 0);
	ck_assert_uint_eq(strlen(f.op_name), 255);
	ck_assert_int_eq(adump_reader_name_parse(NULL, &f), -EINVAL);
	ck_assert_int_eq(adump_reader_name_parse("Add.x.1.2.3", NULL), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reader_parse");
	TCase *tc = tcase_create("round_trip");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_round_trip_mem);
	tcase_add_test(tc, test_round_trip_file);
	tcase_add_test(tc, test_custom_source);
	tcase_add_test(tc, test_name_parse);
	suite_add_tcase(s, tc);

	tc = tcase_create("malformed");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_short_and_absurd_lengths);
	tcase_add_test(tc, test_bad_varint);
	tcase_add_test(tc, test_truncated_and_trailing);
	tcase_add_test(tc, test_sizes_overflow);
	tcase_add_test(tc, test_too_many_dims);
	tcase_add_test(tc, test_raw_fields);
	tcase_add_test(tc, test_unknown_dtype);
	tcase_add_test(tc, test_random_corruption);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
