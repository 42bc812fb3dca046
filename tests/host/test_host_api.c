/* SPDX-License-Identifier: Apache-2.0 */
/* Host streams' API contracts (include/adump/host.h): the owner thread; bad arguments;
 * attributes in the header; per-stream directories; a session destroyed before its streams
 * close. The sinks are test_host.c's, the flow under load test_host_flow.c's. */
#include "host_fixture.h"


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


int main(void)
{
	Suite *s = suite_create("host_api");
	TCase *tz = tcase_create("contracts");

	tcase_set_timeout(tz, 300);
	tcase_add_test(tz, test_wrong_thread_is_refused);
	tcase_add_test(tz, test_bad_arguments_are_refused);
	tcase_add_test(tz, test_attributes_reach_the_header);
	tcase_add_test(tz, test_stream_dir_files);
	tcase_add_test(tz, test_stream_dir_stats);
	tcase_add_test(tz, test_stream_dir_packed_refused);
	tcase_add_test(tz, test_session_destroyed_before_close);
	suite_add_tcase(s, tz);
	return t_run_suite(s);
}
