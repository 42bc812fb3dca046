/* SPDX-License-Identifier: Apache-2.0 */
/* Host streams under load (include/adump/host.h): the drop policy; host and device streams
 * side by side in one session; statistics computed at hand-over equal to those of the bytes;
 * files in flight within the descriptors the process has. */
#include <sys/resource.h>

#include "host_fixture.h"

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

/* ---- statistics computed at handover ---- */

/* The CSV text of each of the @op_count files below @root's time directory, by task id. */
static void read_csvs(const char *root, unsigned op_count, char **csv)
{
	char dir[4200];
	char **files;
	size_t n;

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
}

/* A session of @cfg that a host stream hands @ops to: the records it posted. With @is_bytes
 * the host posts the tensors' bytes for the worker to fold, as before statistics moved to
 * the handover. */
static uint64_t run_ops(const struct adump_config *cfg, struct h_op *ops, unsigned op_count,
			bool is_bytes)
{
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	struct adump_host_stream_stats hst;

	if (is_bytes)
		adump_testpoint_arm("host.stats_handover", -ENOMEM, 1, 1);
	ck_assert_int_eq(adump_session_create(cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (unsigned k = 0; k < op_count; k++)
		ck_assert_int_eq(op_dump(hs, &ops[k], k), 0);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	adump_host_stream_stats(hs, &hst);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	adump_testpoint_disarm_all();
	return hst.chan.records;
}

/* One statistics session of @ops (zero copy or not as each op says): the CSV text of each
 * op by task id into @csv, and the records the stream posted (@is_bytes: run_ops()). */
static uint64_t stats_session(struct h_op *ops, unsigned op_count, bool is_bytes, char **csv)
{
	char *root = t_tmpdir("host-stats");
	struct adump_config cfg = case_config(root, CASE_STATS, NULL);
	uint64_t records = run_ops(&cfg, ops, op_count, is_bytes);

	read_csvs(root, op_count, csv);
	t_rmtree(root);
	free(root);
	return records;
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

/* One msprobe-format tensor session of @ops in @root (removed after): its dump.json into
 * *@json and the names and bytes of its files under dump_tensor_data, in name order, into
 * *@pt; the records the stream posted (@is_bytes: run_ops()). */
static uint64_t msprobe_session(const char *root, struct h_op *ops, unsigned op_count,
				bool is_bytes, char **json, char **pt, size_t *pt_len)
{
	char dir[4200];
	struct adump_config cfg = case_config(root, CASE_FILE, NULL);
	uint64_t records;
	char **files;
	size_t n;

	cfg.format = ADUMP_OUTPUT_MSPROBE;
	records = run_ops(&cfg, ops, op_count, is_bytes);
	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	*json = t_slurp(dir, "dump.json");
	snprintf(dir, sizeof(dir), "%s/%s/dump_tensor_data", root, TIME_DIR);
	files = t_list_files(dir, &n);
	ck_assert_uint_gt(n, 0);
	*pt = NULL;
	*pt_len = 0;
	for (size_t i = 0; i < n; i++) {
		char path[8400];
		size_t len;
		char *bytes;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		bytes = t_read_file(path, &len);
		ck_assert_ptr_nonnull(bytes);
		*pt = realloc(*pt, *pt_len + len + strlen(files[i]));
		memcpy(*pt + *pt_len, files[i], strlen(files[i]));
		memcpy(*pt + *pt_len + strlen(files[i]), bytes, len);
		*pt_len += len + strlen(files[i]);
		free(bytes);
	}
	t_free_list(files, n);
	t_rmtree(root);
	return records;
}

/* msprobe's layout with tensors: the statistics dump.json holds are computed at handover,
 * where the tensor is, and the bytes go to the worker all the same: dump.json and every .pt
 * file are byte for byte those of the statistics folded from the bytes. */
START_TEST(test_msprobe_tensor_stats_at_handover)
{
	static struct h_op ops[SINK_OPS];
	char *tmp = t_tmpdir("host-mstensor"), root[4200], *json[2], *pt[2];
	size_t pt_len[2];
	uint64_t rng = t_seed() | 1, payload = 0;

	for (unsigned k = 0; k < SINK_OPS; k++) {
		op_make(&ops[k], &rng, k, k % 3 == 1);
		payload += op_payload(&ops[k]);
	}
	/* The same directory both times: dump.json names it. */
	snprintf(root, sizeof(root), "%s/run", tmp);
	for (int b = 0; b < 2; b++)
		ck_assert_uint_ge(msprobe_session(root, ops, SINK_OPS, b, &json[b], &pt[b],
						  &pt_len[b]), payload / CHUNK_BYTES);
	ck_assert_ptr_nonnull(strstr(json[0], "\"Max\""));
	/* Not ck_assert_str_eq(): Check cannot carry a message that long. */
	ck_assert(strcmp(json[0], json[1]) == 0);
	ck_assert_uint_eq(pt_len[0], pt_len[1]);
	ck_assert(memcmp(pt[0], pt[1], pt_len[0]) == 0);
	for (int b = 0; b < 2; b++) {
		free(json[b]);
		free(pt[b]);
	}
	for (unsigned k = 0; k < SINK_OPS; k++)
		op_free(&ops[k]);
	t_rmtree(tmp);
	free(tmp);
}
END_TEST

/* The statistics row of a one-tensor CSV (its second line), compared as text. */
static const char *row(const char *csv)
{
	const char *nl = strchr(csv, '\n');

	ck_assert_ptr_nonnull(nl);
	return nl + 1;
}

/* struct adump_host_op's stats_keys: a tensor handed again with the key of an earlier one has
 * that tensor's statistics, whatever its memory holds now (the key is the caller's word);
 * without a key, or with the key of a tensor of another dtype, or once the key has left the
 * stream's last ADUMP_HOST_STATS_REUSE, the bytes are read. */
START_TEST(test_stats_keys_reuse)
{
	enum { N = 1000, OPS = 5 + ADUMP_HOST_STATS_REUSE };
	char *root = t_tmpdir("host-keys"), *csv[OPS] = { NULL };
	struct adump_config cfg = case_config(root, CASE_STATS, NULL);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	static float a[N], small[4];
	unsigned task = 0;

	for (int i = 0; i < N; i++)
		a[i] = (float)(i + 1);
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	struct adump_host_tensor t = { .data = a, .bytes = sizeof(a), .dtype = ADUMP_DT_FLOAT,
				       .format = ADUMP_FORMAT_ND, .dim_count = 1, .dims = { N } };
	struct adump_host_tensor ts = { .data = small, .bytes = sizeof(small),
					.dtype = ADUMP_DT_FLOAT, .format = ADUMP_FORMAT_ND,
					.dim_count = 1, .dims = { 4 } };
	struct adump_host_op op = ADUMP_HOST_OP_INIT;
	uint64_t key;

	op.op_type = "Add";
	op.op_name = "keyed";
	op.inputs = &t;
	op.input_count = 1;
	op.stats_keys = &key;
#define DUMP(k) do { key = (k); ck_assert_int_eq(adump_host_dump_op(hs, &op, NULL), 0); \
		     task++; } while (0)
	DUMP(7);                                /* 0: 1..1000, read */
	for (int i = 0; i < N; i++)
		a[i] = 5.0f;
	DUMP(7);                                /* 1: the same key: 0's statistics */
	DUMP(0);                                /* 2: no key: all 5 */
	t.dtype = ADUMP_DT_INT32;
	DUMP(7);                                /* 3: another dtype: read */
	t.dtype = ADUMP_DT_FLOAT;
	op.inputs = &ts;
	for (unsigned k = 0; k < ADUMP_HOST_STATS_REUSE; k++)
		DUMP(100 + k);                  /* the key 7 leaves the stream's last ones */
	op.inputs = &t;
	DUMP(7);                                /* read again: all 5 */
#undef DUMP
	ck_assert_uint_eq(task, OPS);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	read_csvs(root, OPS, csv);
	ck_assert_str_eq(row(csv[1]), row(csv[0]));
	ck_assert_str_ne(row(csv[2]), row(csv[0]));
	ck_assert_ptr_nonnull(strstr(row(csv[0]), ",1000,1,500.5,"));  /* max, min, mean */
	ck_assert_ptr_nonnull(strstr(row(csv[2]), ",5,5,5,"));
	ck_assert_str_ne(row(csv[3]), row(csv[0]));
	ck_assert_str_eq(row(csv[OPS - 1]), row(csv[2]));
	for (unsigned k = 0; k < OPS; k++)
		free(csv[k]);
	t_rmtree(root);
	free(root);
}
END_TEST

/* ---- descriptors ---- */

/* Files in flight take a descriptor each until their writes are done. With few descriptors
 * left (RLIMIT_NOFILE 64), four streams of small dumps, handed over faster than they are
 * written, still write every file whole: the workers start no new file while the session
 * holds its share of the descriptors free at its start and has writes to wait for. */
START_TEST(test_files_in_flight_fit_the_descriptors)
{
	enum { STREAMS = 4, OPS = 1500 };
	char *root = t_tmpdir("host-fds"), dir[4200], name[32];
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	struct adump_host_stream *hs[STREAMS] = { NULL };
	static unsigned char mem[256];
	struct adump_host_tensor t = { .data = mem, .bytes = sizeof(mem), .dtype = ADUMP_DT_UINT8,
				       .format = ADUMP_FORMAT_ND, .dim_count = 1,
				       .dims = { sizeof(mem) } };
	struct rlimit old, low;
	struct adump_stats st;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	if (low.rlim_cur > 64)
		low.rlim_cur = 64;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.chunk_bytes = CHUNK_BYTES;
	cfg.stream_max = STREAMS;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	for (unsigned k = 0; k < STREAMS; k++)
		ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs[k]), 0);
	for (unsigned i = 0; i < OPS; i++) {
		for (unsigned k = 0; k < STREAMS; k++) {
			mem[0] = (unsigned char)i;
			snprintf(name, sizeof(name), "op%u_%u", k, i);
			ck_assert_int_eq(adump_host_dump(hs[k], "Add", name, &t, 1, &t, 1), 0);
		}
	}
	for (unsigned k = 0; k < STREAMS; k++) {
		ck_assert_int_eq(adump_host_stream_sync(hs[k]), 0);
		ck_assert_int_eq(adump_host_stream_close(hs[k]), 0);
	}
	adump_stats_get(s, &st);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	ck_assert_uint_eq(st.files_failed, 0);
	ck_assert_uint_eq(st.files_completed, STREAMS * OPS);
	snprintf(dir, sizeof(dir), "%s/%s/0", root, TIME_DIR);
	ck_assert_uint_eq(t_count_files(dir, ""), STREAMS * OPS);
	ck_assert_uint_eq(t_count_files(dir, ".failed"), 0);
	t_rmtree(root);
	free(root);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("host_flow");
	TCase *tz = tcase_create("contracts");

	tcase_set_timeout(tz, 300);
	tcase_add_test(tz, test_drop_policy_fails_the_file);
	tcase_add_test(tz, test_host_and_device_streams_share_a_session);
	tcase_add_test(tz, test_stats_handover_matches_bytes);
	tcase_add_test(tz, test_stats_keys_reuse);
	tcase_add_test(tz, test_msprobe_tensor_stats_at_handover);
	tcase_add_test(tz, test_files_in_flight_fit_the_descriptors);
	suite_add_tcase(s, tz);
	return t_run_suite(s);
}
