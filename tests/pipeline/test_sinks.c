/* SPDX-License-Identifier: Apache-2.0 */
/* The callback sink and the pwrite fallback produce exactly the bytes of the io_uring file
 * sink: same seed, same (test) clock, file by file, byte by byte. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_helpers.h"
#include "common/common.h"

#define TIME_DIR "20260102030405"

struct assembled {
	char *name;
	unsigned char *bytes;
	size_t len;
	size_t cap;
	uint64_t next_offset;
	int last_count;
	int order_errors;
};

struct collector {
	pthread_mutex_t lock;
	struct assembled files[512];
	size_t count;
	char prefix[4200];
};

static int collect(const struct adump_chunk *c, void *user)
{
	struct collector *col = user;
	struct assembled *a = NULL;

	pthread_mutex_lock(&col->lock);
	for (size_t i = 0; i < col->count; i++)
		if (!strcmp(col->files[i].name, c->file_name))
			a = &col->files[i];
	if (!a) {
		ck_assert_uint_lt(col->count, 512);
		a = &col->files[col->count++];
		memset(a, 0, sizeof(*a));
		a->name = strdup(c->file_name);
	}
	/* Chunks of one file arrive in order, each at its absolute offset. */
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
	if (c->is_last)
		a->last_count++;
	pthread_mutex_unlock(&col->lock);
	return 0;
}

static struct t_workload w = {
	.stream_count = 1, .op_count = 60, .min_bytes = 1, .max_bytes = 3u << 20,
	.chunk_bytes = 256u << 10, .keep_memory = true,
};

static enum adump_io capture_io;

static void capture(const char *root, enum adump_sink sink, enum adump_writer_kind writer,
		    struct collector *col, uint64_t chunk)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;

	w.seed = t_seed();

	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.sink = sink;
	cfg.writer = writer;
	cfg.chunk_bytes = chunk;
	cfg.stream_max = 1;
	cfg.io = sink == ADUMP_SINK_FILE ? capture_io : ADUMP_IO_BUFFERED;
	cfg.chunk_fn = collect;
	cfg.chunk_user = col;
	/* One stream and a counting clock: both runs name and stamp every file the same. */
	adump_testpoint_clock_set(1700000000000000ull);
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(t_workload_run(s, &w), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	adump_testpoint_clock_set(0);
}

/* Files are named by stream id, which differs between the runs: compare by position. */
static char *strip_stream(const char *rel)
{
	char *copy = strdup(rel);
	char *dot = strrchr(copy, '.');

	/* <...>.<task>.<stream>.<ts>: blank the stream field. */
	*dot = '\0';
	char *dot2 = strrchr(copy, '.');
	char *out;
	*dot2 = '\0';
	ck_assert_int_ge(asprintf(&out, "%s.S.%s", copy, dot + 1), 0);
	free(copy);
	return out;
}

static void compare_trees(const char *a_dir, const char *b_dir)
{
	size_t na, nb;
	char **a = t_list_files(a_dir, &na), **b = t_list_files(b_dir, &nb);

	ck_assert_uint_eq(na, nb);
	ck_assert_uint_gt(na, 0);
	for (size_t i = 0; i < na; i++) {
		char pa[4200], pb[4200], *sa = strip_stream(a[i]), *sb = strip_stream(b[i]);
		size_t la, lb;

		ck_assert_str_eq(sa, sb);
		snprintf(pa, sizeof(pa), "%s/%s", a_dir, a[i]);
		snprintf(pb, sizeof(pb), "%s/%s", b_dir, b[i]);
		unsigned char *ba = t_read_file(pa, &la), *bb = t_read_file(pb, &lb);
		ck_assert_uint_eq(la, lb);
		ck_assert_msg(memcmp(ba, bb, la) == 0, "%s differs", a[i]);
		free(ba);
		free(bb);
		free(sa);
		free(sb);
	}
	t_free_list(a, na);
	t_free_list(b, nb);
}

/* Compares what two capture() runs under roots @a and @b wrote. */
static void compare_captures(const char *a, const char *b)
{
	char ta[4200], tb[4200];

	snprintf(ta, sizeof(ta), "%s/%s", a, TIME_DIR);
	snprintf(tb, sizeof(tb), "%s/%s", b, TIME_DIR);
	compare_trees(ta, tb);
}

START_TEST(test_pwrite_matches_uring)
{
	char *root = t_tmpdir("sinks");
	char a[4200], b[4200];

	snprintf(a, sizeof(a), "%s/uring", root);
	snprintf(b, sizeof(b), "%s/pwrite", root);
	capture(a, ADUMP_SINK_FILE, ADUMP_WRITER_AUTO, NULL, 256u << 10);
	capture(b, ADUMP_SINK_FILE, ADUMP_WRITER_PWRITE, NULL, 256u << 10);
	compare_captures(a, b);
	t_workload_free(&w);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(test_callback_reassembles_to_file_bytes)
{
	char *root = t_tmpdir("sinks");
	char a[4200], b[4200], ta[4200];
	static struct collector col;

	pthread_mutex_init(&col.lock, NULL);
	snprintf(a, sizeof(a), "%s/file", root);
	snprintf(b, sizeof(b), "%s/callback", root);
	capture(a, ADUMP_SINK_FILE, ADUMP_WRITER_AUTO, NULL, 256u << 10);
	capture(b, ADUMP_SINK_CALLBACK, ADUMP_WRITER_AUTO, &col, 256u << 10);
	/* The callback sink writes nothing. */
	ck_assert_uint_eq(t_count_files(root, "") , 60);
	ck_assert_uint_eq(col.count, 60);

	/* Write the reassembled files next to the file sink's, under the same relative names
	 * (fileName is the absolute path the file would have had), then compare the trees. */
	char cb_root[4200];
	snprintf(cb_root, sizeof(cb_root), "%s/callback/%s/", root, TIME_DIR);
	char out_root[4200];
	snprintf(out_root, sizeof(out_root), "%s/reassembled", root);
	for (size_t i = 0; i < col.count; i++) {
		struct assembled *f = &col.files[i];
		char path[4200];

		ck_assert_msg(!strncmp(f->name, cb_root, strlen(cb_root)), "fileName %s not under %s",
			      f->name, cb_root);
		ck_assert_int_eq(f->last_count, 1);
		ck_assert_int_eq(f->order_errors, 0);
		snprintf(path, sizeof(path), "%s/%s", out_root, f->name + strlen(cb_root));
		char *slash = strrchr(path, '/');
		*slash = '\0';
		adump_mkdir_p(path, 0755);
		*slash = '/';
		FILE *fp = fopen(path, "wb");
		ck_assert_ptr_nonnull(fp);
		ck_assert_uint_eq(fwrite(f->bytes, 1, f->len, fp), f->len);
		fclose(fp);
		free(f->bytes);
		free(f->name);
	}
	snprintf(ta, sizeof(ta), "%s/%s", a, TIME_DIR);
	compare_trees(ta, out_root);
	t_workload_free(&w);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(test_direct_io_matches_buffered)
{
	char *root = t_tmpdir("sinks");
	char a[4200], b[4200];

	snprintf(a, sizeof(a), "%s/buffered", root);
	snprintf(b, sizeof(b), "%s/direct", root);
	capture(a, ADUMP_SINK_FILE, ADUMP_WRITER_AUTO, NULL, 256u << 10);
	capture_io = ADUMP_IO_DIRECT;
	capture(b, ADUMP_SINK_FILE, ADUMP_WRITER_AUTO, NULL, 256u << 10);
	capture_io = ADUMP_IO_BUFFERED;
	compare_captures(a, b);
	t_workload_free(&w);
	t_rmtree(root);
	free(root);
}
END_TEST

static void short_writes(enum adump_writer_kind writer)
{
	char *root = t_tmpdir("sinks");
	char a[4200], b[4200];

	snprintf(a, sizeof(a), "%s/clean", root);
	snprintf(b, sizeof(b), "%s/short", root);
	capture(a, ADUMP_SINK_FILE, writer, NULL, 256u << 10);
	/* Every 3rd completion comes back half done, every 5th as EAGAIN: the rest of each
	 * write must go out again at its own offset, and the files must not change. */
	adump_testpoint_arm("uring.short", 1, 3, 2);
	adump_testpoint_arm("uring.eagain", 1, 5, 2);
	capture(b, ADUMP_SINK_FILE, writer, NULL, 256u << 10);
	adump_testpoint_disarm_all();
	compare_captures(a, b);
	t_workload_free(&w);
	t_rmtree(root);
	free(root);
}

START_TEST(test_short_writes_uring)
{
	short_writes(ADUMP_WRITER_URING);
}
END_TEST

START_TEST(test_short_writes_pwrite)
{
	short_writes(ADUMP_WRITER_PWRITE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sinks");
	TCase *tc = tcase_create("identical_bytes");

	tcase_set_timeout(tc, 300);
	t_tcase_add_test_needing(tc, T_URING, test_pwrite_matches_uring);
	tcase_add_test(tc, test_callback_reassembles_to_file_bytes);
	t_tcase_add_test_needing(tc, T_DIRECT, test_direct_io_matches_buffered);
	t_tcase_add_test_needing(tc, T_URING, test_short_writes_uring);
	tcase_add_test(tc, test_short_writes_pwrite);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
