/* SPDX-License-Identifier: Apache-2.0 */
/* Host streams (include/adump/host.h): seeded ops of mixed dtypes, shapes and sizes (empty
 * tensors, chunks spanning tensors), copied and zero-copy, through every sink; the bytes on
 * disk (or delivered) are checked against the sources, header fields and names included;
 * and zero-copy release exactly once, after the bytes, from the caller's own memory. The
 * other contracts are test_host_api.c's. */
#include "host_fixture.h"

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

int main(void)
{
	Suite *s = suite_create("host");
	TCase *tc = tcase_create("sinks");
	TCase *tz = tcase_create("zero-copy");

	tcase_set_timeout(tc, 300);
	tcase_set_timeout(tz, 300);
	tcase_add_loop_test(tc, test_sink, 0, CASE_COUNT);
	tcase_add_test(tz, test_zero_copy_release_after_the_bytes);
	tcase_add_test(tz, test_zero_copy_check_fails_the_file);
	tcase_add_loop_test(tz, test_zero_copy_reads_the_callers_memory, 0, 2);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, tz);
	return t_run_suite(s);
}
