/* SPDX-License-Identifier: Apache-2.0 */
/* Output formats: LZ4 frames decompress (with the lz4 command) to the exact files the plain
 * sink writes; packed segments unpack byte-identical to the file sink for the same seed (small
 * files through batches too); the index survives a capture killed with SIGKILL, every indexed
 * entry valid, and holds whole lines only when it cannot be reserved or written. Statistics
 * mode writes CSV files instead of tensors. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adump/host.h"
#include "adump/reader.h"
#include "capture_helpers.h"
#include "common/common.h"

#define TIME_DIR "20260104000000"

static struct t_workload w = {
	.stream_count = 2, .op_count = 40, .min_bytes = 1, .max_bytes = 3u << 20,
	.chunk_bytes = 256u << 10, .keep_memory = true,
};

static uint64_t segment_bytes = 1u << 20;       /* several segments */
static size_t sync_bytes;                       /* 0: the default */

/* What every capture here shares: two streams, two workers, TIME_DIR under @root. */
static struct adump_config base_config(const char *root, const struct t_workload *wl)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;

	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.chunk_bytes = wl->chunk_bytes;
	cfg.stream_max = 2;
	cfg.worker_count = 2;
	return cfg;
}

static void capture(const char *root, enum adump_compress compress, enum adump_layout layout,
		    enum adump_content content)
{
	struct adump_config cfg = base_config(root, &w);
	struct adump_session *s = NULL;
	struct adump_stats st;

	w.seed = t_seed();
	cfg.compress = compress;
	cfg.layout = layout;
	cfg.content = content;
	cfg.segment_bytes = segment_bytes;
	cfg.sync_bytes = sync_bytes;
	/* One counting clock for the whole run; both streams race for it, so names are
	 * compared modulo timestamps below only where needed. */
	adump_testpoint_clock_set(1700000000000000ull);
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(t_workload_run(s, &w), 0);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, w.stream_count * w.op_count);
	ck_assert_uint_eq(st.files_failed, 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	adump_testpoint_clock_set(0);
}

START_TEST(test_lz4_frames_decompress_to_the_files)
{
	char *root = t_tmpdir("formats");
	char dir[4200], cmd[9000];
	size_t n;

	capture(root, ADUMP_COMPRESS_LZ4, ADUMP_LAYOUT_FILES, ADUMP_CONTENT_TENSOR);
	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	ck_assert_uint_eq(t_count_files(dir, ".lz4"), 80);
	ck_assert_uint_eq(t_count_files(dir, ".part"), 0);
	/* Decompress every frame with the lz4 command, then check the result like any capture. */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && for f in 0/*.lz4; do lz4 -d -q \"$f\" \"${f%%.lz4}\" && rm \"$f\" || exit 1; done",
		 dir);
	ck_assert_int_eq(system(cmd), 0);
	char **files = t_list_files(dir, &n);
	ck_assert_uint_eq(n, 80);
	t_free_list(files, n);
	t_check_capture(dir, &w);
	t_workload_free(&w);
	t_rmtree(root);
	free(root);
}
END_TEST

struct seg_entry {
	char segment[64];
	unsigned long long offset, length;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct seg_entry *x = a, *y = b;
	int c = strcmp(x->segment, y->segment);

	if (c)
		return c;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Reads every index line under @packed and checks that the entries tile each segment: from
 * offset 0, without gap or overlap, up to the segment's size (a segment no line names is
 * empty). Return: the entries, sorted by
 * segment and offset (caller frees); their number in @count. */
static struct seg_entry *check_segments_tiled(const char *packed, size_t *count)
{
	struct seg_entry *e = NULL;
	size_t n = 0, cap = 0, files;
	char **names = t_list_files(packed, &files);

	for (size_t i = 0; i < files; i++) {
		char path[8400], line[8192];
		FILE *f;

		if (!strstr(names[i], ".idx"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", packed, names[i]);
		f = fopen(path, "r");
		ck_assert_ptr_nonnull(f);
		while (fgets(line, sizeof(line), f)) {
			char *seg = strchr(line, '\t');

			if (n == cap) {
				cap = cap ? 2 * cap : 64;
				e = realloc(e, cap * sizeof(*e));
				ck_assert_ptr_nonnull(e);
			}
			ck_assert_ptr_nonnull(seg);
			ck_assert_int_eq(sscanf(seg + 1, "%63[^\t]\t%llu\t%llu", e[n].segment,
						&e[n].offset, &e[n].length), 3);
			n++;
		}
		fclose(f);
	}
	ck_assert_uint_gt(n, 0);
	qsort(e, n, sizeof(*e), cmp_entry);
	/* A segment no entry names is empty. */
	for (size_t i = 0; i < files; i++) {
		char path[8400];
		struct stat st;
		bool is_named = false;

		if (!strstr(names[i], ".seg"))
			continue;
		for (size_t j = 0; j < n && !is_named; j++)
			is_named = !strcmp(e[j].segment, names[i]);
		snprintf(path, sizeof(path), "%s/%s", packed, names[i]);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_msg(is_named || st.st_size == 0, "%s: %lld bytes, no entry", names[i],
			      (long long)st.st_size);
	}
	t_free_list(names, files);
	for (size_t i = 0; i < n; i++) {
		bool is_first = i == 0 || strcmp(e[i].segment, e[i - 1].segment);
		bool is_last = i + 1 == n || strcmp(e[i].segment, e[i + 1].segment);
		unsigned long long expect = is_first ? 0 : e[i - 1].offset + e[i - 1].length;

		ck_assert_msg(e[i].offset == expect, "%s: entry at %llu, expected %llu",
			      e[i].segment, e[i].offset, expect);
		if (is_last) {
			char path[4400];
			struct stat st;

			snprintf(path, sizeof(path), "%s/%s", packed, e[i].segment);
			ck_assert_int_eq(stat(path, &st), 0);
			ck_assert_msg((unsigned long long)st.st_size == e[i].offset + e[i].length,
				      "%s: %lld bytes, indexed up to %llu", e[i].segment,
				      (long long)st.st_size, e[i].offset + e[i].length);
		}
	}
	*count = n;
	return e;
}

static void check_tiled(const char *dir)
{
	char packed[4300];
	size_t n;

	snprintf(packed, sizeof(packed), "%s/packed", dir);
	free(check_segments_tiled(packed, &n));
}

START_TEST(test_packed_unpacks_to_the_files)
{
	char *root = t_tmpdir("formats");
	char dir[4200], out[4200];

	capture(root, ADUMP_COMPRESS_NONE, ADUMP_LAYOUT_PACKED, ADUMP_CONTENT_TENSOR);
	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	ck_assert_uint_eq(t_count_files(dir, ".idx"), 2);
	ck_assert_uint_gt(t_count_files(dir, ".seg"), 2);       /* rolled at 1 MiB */
	check_tiled(dir);
	snprintf(out, sizeof(out), "%s/unpacked", root);
	ck_assert_int_eq(adump_unpack(dir, out), 80);
	t_check_capture(out, &w);
	t_workload_free(&w);
	t_rmtree(root);
	free(root);
}
END_TEST

/* Small files go through a worker's batch (copied whole, one write for many, their index
 * lines after it): with many of them and small segments, batches fill up and segments roll
 * under them, background data syncs run every 4 KiB, and every file still unpacks
 * byte-identical. */
START_TEST(test_packed_small_files_in_batches)
{
	char *root = t_tmpdir("formats");
	char dir[4200], out[4200];
	struct t_workload big = w;

	w.op_count = 600;
	w.min_bytes = 1;
	w.max_bytes = 8u << 10;
	segment_bytes = 96u << 10;
	sync_bytes = 4u << 10;
	capture(root, ADUMP_COMPRESS_NONE, ADUMP_LAYOUT_PACKED, ADUMP_CONTENT_TENSOR);
	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	ck_assert_uint_gt(t_count_files(dir, ".seg"), 4);
	check_tiled(dir);
	snprintf(out, sizeof(out), "%s/unpacked", root);
	ck_assert_int_eq(adump_unpack(dir, out), 2 * 600);
	t_check_capture(out, &w);
	t_workload_free(&w);
	w = big;
	segment_bytes = 1u << 20;
	sync_bytes = 0;
	t_rmtree(root);
	free(root);
}
END_TEST

/* A background data sync of a segment that fails is an error of the session, counted as a
 * write error, and loses nothing: every file is still indexed and unpacks byte-identical.
 * io_uring runs the syncs asynchronously, the pwrite writer on its I/O threads. */
static void packed_sync_failure(enum adump_writer_kind writer)
{
	char *root = t_tmpdir("formats");
	char dir[4200], out[4200];
	struct t_workload small = w;
	struct adump_config cfg = base_config(root, &w);
	struct adump_session *s = NULL;
	struct adump_stats st;

	small.op_count = 200;
	small.max_bytes = 8u << 10;
	small.seed = t_seed();
	cfg.layout = ADUMP_LAYOUT_PACKED;
	cfg.writer = writer;
	cfg.sync_bytes = 4u << 10;
	adump_testpoint_arm("uring.datasync", -EIO, 1, 0);
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(t_workload_run(s, &small), 0);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, 2 * 200);
	ck_assert_uint_eq(st.files_failed, 0);
	/* A sync holds no record, so the stream syncs may return before it completes: wait
	 * for its failure to be counted (the worker submits it before it sleeps). */
	for (int i = 0; i < 1000 && st.write_errors == 0; i++) {
		usleep(10000);
		adump_stats_get(s, &st);
	}
	ck_assert_uint_eq(st.write_errors, 1);
	ck_assert_int_eq(adump_session_destroy(s), -EIO);
	adump_testpoint_disarm_all();
	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	check_tiled(dir);
	snprintf(out, sizeof(out), "%s/unpacked", root);
	ck_assert_int_eq(adump_unpack(dir, out), 2 * 200);
	t_check_capture(out, &small);
	t_workload_free(&small);
	t_rmtree(root);
	free(root);
}

START_TEST(test_packed_sync_failure_uring)
{
	packed_sync_failure(ADUMP_WRITER_URING);
}
END_TEST

START_TEST(test_packed_sync_pwrite)
{
	packed_sync_failure(ADUMP_WRITER_PWRITE);
}
END_TEST

START_TEST(test_packed_detects_corruption)
{
	char *root = t_tmpdir("formats");
	char packed[4300], out[4200], seg[4400];
	unsigned char byte;
	size_t n;
	int fd;

	capture(root, ADUMP_COMPRESS_NONE, ADUMP_LAYOUT_PACKED, ADUMP_CONTENT_TENSOR);
	t_workload_free(&w);
	snprintf(packed, sizeof(packed), "%s/%s/packed", root, TIME_DIR);
	/* Every byte of every segment belongs to exactly one indexed file. */
	struct seg_entry *e = check_segments_tiled(packed, &n);

	ck_assert_uint_eq(n, 80);
	/* Flip one byte in the middle of the first indexed file. */
	snprintf(seg, sizeof(seg), "%s/%s", packed, e[0].segment);
	fd = open(seg, O_RDWR);
	ck_assert_int_ge(fd, 0);
	off_t at = (off_t)(e[0].offset + e[0].length / 2);
	ck_assert_int_eq(pread(fd, &byte, 1, at), 1);
	byte ^= 0xff;
	ck_assert_int_eq(pwrite(fd, &byte, 1, at), 1);
	close(fd);
	free(e);
	snprintf(out, sizeof(out), "%s/unpacked", root);
	ck_assert_int_eq(adump_unpack(packed, out), -ADUMP_ERR_CORRUPT);
	/* The other files are still restored. */
	ck_assert_uint_eq(t_count_files(out, ""), 79);
	t_rmtree(root);
	free(root);
}
END_TEST

/* One Add of @bytes per input and output, through @hs; @sync waits for it to be written. */
static void host_add(struct adump_host_stream *hs, const void *data, uint64_t bytes, bool sync)
{
	struct adump_host_tensor t = { .data = data, .bytes = bytes, .dtype = ADUMP_DT_UINT8,
				       .format = ADUMP_FORMAT_ND, .dim_count = 1,
				       .dims = { (int64_t)bytes } };

	ck_assert_int_eq(adump_host_dump(hs, "Add", "add", &t, 1, &t, 1), 0);
	if (sync)
		adump_host_stream_sync(hs);
}

/* The index cannot take a file's line: testpoint @point fails with @err, either reserving
 * the index's space (a full disk) or writing it (half of the lines out first). Files of
 * @bytes: small ones go through batches, larger ones one by one. The second of three files
 * fails alone, counted and logged as a loss; then a burst of files with every index write
 * failing loses none without counting it. Each time the index holds whole lines only, one
 * per file counted completed, and once the session ends no space stays reserved past it. */
/* The loss log of @dir agrees with @st cause by cause. A line names an Add of this test: a
 * tensor of @bytes, or (kind "none") a file written whole whose index line was lost. Return:
 * the number of lines; *@files: how many files they name. */
static uint64_t loss_lines(const char *dir, const struct adump_stats *st, uint64_t bytes,
			   uint64_t *files)
{
	uint64_t by_cause[ADUMP_LOSS_CAUSE_COUNT] = { 0 }, lines = 0;
	struct adump_reader_losses *l;
	const struct adump_reader_loss *e;
	char *names[64];
	int ret;

	*files = 0;
	ck_assert_int_eq(adump_reader_losses_open(dir, &l), 0);
	while ((ret = adump_reader_losses_next(l, &e)) > 0) {
		ck_assert_msg(e->is_valid, "line %u: %s", e->line, e->message);
		ck_assert_str_eq(e->op_type, "Add");
		ck_assert_str_eq(e->op_name, "add");
		ck_assert_ptr_nonnull(strstr(e->file, "0/Add.add."));
		ck_assert_uint_eq(e->bytes, strcmp(e->kind, "none") ? bytes : 0);
		by_cause[e->cause]++;
		lines++;
		bool is_new = true;

		for (uint64_t k = 0; k < *files && is_new; k++)
			is_new = strcmp(names[k], e->file) != 0;
		if (is_new) {
			ck_assert_uint_lt(*files, 64);
			names[(*files)++] = strdup(e->file);
		}
	}
	ck_assert_int_eq(ret, 0);
	adump_reader_losses_close(l);
	for (int i = 0; i < ADUMP_LOSS_CAUSE_COUNT; i++)
		ck_assert_uint_eq(by_cause[i], st->losses[i]);
	for (uint64_t k = 0; k < *files; k++)
		free(names[k]);
	return lines;
}

static void packed_index_failure(const char *point, int err, uint64_t bytes)
{
	char *root = t_tmpdir("formats");
	struct adump_config cfg = base_config(root, &w);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;
	struct adump_stats st;
	unsigned char *data = calloc(1, bytes);
	char dir[4200], idx[4400];
	uint64_t lost;
	struct stat sb;

	ck_assert_ptr_nonnull(data);
	cfg.layout = ADUMP_LAYOUT_PACKED;
	cfg.worker_count = 1;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (int i = 0; i < 3; i++) {
		if (i == 1)
			adump_testpoint_arm(point, err, 1, 0);
		host_add(hs, data, bytes, true);
		adump_testpoint_disarm_all();
	}
	ck_assert_int_eq(adump_session_flush(s), err);
	adump_stats_get(s, &st);
	ck_assert_uint_eq(st.files_completed, 2);
	ck_assert_uint_eq(st.files_failed, 1);
	ck_assert_uint_eq(st.drops, 2);
	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	ck_assert_uint_eq(t_packed_entries_whole(dir), 2);
	ck_assert_uint_eq(loss_lines(dir, &st, bytes, &lost), 2);
	ck_assert_uint_eq(lost, 1);

	/* A burst: lines of several files wait for one write (held past the stream's sync, for
	 * the worker's idle), and every index reserve or write fails: each file is counted
	 * failed and has its loss lines, whether its line was lost alone or with others. */
	adump_testpoint_arm(point, err, 1, 1);
	adump_testpoint_arm("packed.index_hold", 1, 1, 1);
	for (int i = 0; i < 16; i++)
		host_add(hs, data, bytes, false);
	adump_host_stream_sync(hs);
	for (int i = 0; i < 1000 && (adump_stats_get(s, &st), st.files_failed < 17); i++)
		usleep(10000);
	ck_assert_uint_eq(st.files_failed, 17);
	ck_assert_uint_eq(st.files_completed, 2);
	adump_testpoint_disarm_all();
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	adump_session_destroy(s);
	ck_assert_uint_eq(t_packed_entries_whole(dir), 2);
	ck_assert_uint_eq(loss_lines(dir, &st, bytes, &lost), st.drops);
	ck_assert_uint_eq(lost, 17);
	snprintf(idx, sizeof(idx), "%s/packed/w0.idx", dir);
	ck_assert_int_eq(stat(idx, &sb), 0);
	ck_assert_int_le(sb.st_blocks * 512, (sb.st_size + 4095) / 4096 * 4096);
	free(data);
	t_rmtree(root);
	free(root);
}

START_TEST(test_packed_index_no_room)
{
	packed_index_failure("packed.index_reserve", -ENOSPC, 1000);
	packed_index_failure("packed.index_reserve", -ENOSPC, 300u << 10);
}
END_TEST

START_TEST(test_packed_index_write_fails)
{
	packed_index_failure("packed.index_write", -EIO, 1000);
	packed_index_failure("packed.index_write", -EIO, 300u << 10);
}
END_TEST

START_TEST(test_packed_index_survives_sigkill)
{
	char *root = t_tmpdir("formats");
	char dir[4200], out[4200], idx[4300];
	pid_t child;
	int status;

	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	snprintf(idx, sizeof(idx), "%s/packed", dir);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		/* A capture that runs far longer than the parent waits. */
		struct t_workload big = { .stream_count = 2, .op_count = 100000, .min_bytes = 1,
					  .max_bytes = 1u << 20, .seed = 7 };
		struct adump_config cfg = ADUMP_CONFIG_INIT;
		struct adump_session *s = NULL;

		cfg.dump_path = root;
		cfg.time_dir = TIME_DIR;
		cfg.stream_max = 2;
		cfg.layout = ADUMP_LAYOUT_PACKED;
		cfg.segment_bytes = 64u << 20;
		if (adump_session_create(&cfg, &s) == 0)
			t_workload_run(s, &big);
		_exit(3);
	}
	/* Kill it once the index holds entries: mid-run, with writes in flight. */
	for (int i = 0; i < 3000; i++) {
		char path[4400];
		FILE *f;

		snprintf(path, sizeof(path), "%s/w0.idx", idx);
		f = fopen(path, "r");
		if (f) {
			fseek(f, 0, SEEK_END);
			long size = ftell(f);
			fclose(f);
			if (size > 0)           /* index lines are written in batches */
				break;
		}
		usleep(10000);
	}
	ck_assert_int_eq(kill(child, SIGKILL), 0);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	snprintf(out, sizeof(out), "%s/unpacked", root);
	long restored = adump_unpack(dir, out);
	/* Every indexed entry is valid: its bytes match its CRC32C and parse as a dump. */
	ck_assert_int_gt(restored, 0);
	size_t n;
	char **files = t_list_files(out, &n);
	ck_assert_uint_eq(n, (size_t)restored);
	for (size_t i = 0; i < n; i++) {
		char path[8400];
		struct t_dump d;

		snprintf(path, sizeof(path), "%s/%s", out, files[i]);
		t_dump_load(path, &d);
		t_dump_free(&d);
	}
	t_free_list(files, n);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(test_stats_content_writes_csv)
{
	char *root = t_tmpdir("formats");
	char dir[4200];
	size_t n;

	capture(root, ADUMP_COMPRESS_NONE, ADUMP_LAYOUT_FILES, ADUMP_CONTENT_STATS);
	t_workload_free(&w);
	snprintf(dir, sizeof(dir), "%s/%s", root, TIME_DIR);
	char **files = t_list_files(dir, &n);
	ck_assert_uint_eq(n, 80);
	for (size_t i = 0; i < n; i++) {
		char path[8400];
		size_t len;

		ck_assert_msg(strstr(files[i], ".csv") == files[i] + strlen(files[i]) - 4, "%s", files[i]);
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		char *text = t_read_file(path, &len);
		ck_assert_ptr_nonnull(text);
		ck_assert(!strncmp(text, "Input/Output,Index,Data Size,Data Type,Format,Shape,", 52));
		/* header + 2 inputs + 1 output */
		size_t lines = 0;
		for (size_t j = 0; j < len; j++)
			lines += text[j] == '\n';
		ck_assert_uint_eq(lines, 4);
		free(text);
	}
	t_free_list(files, n);
	t_rmtree(root);
	free(root);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("formats");
	TCase *tc = tcase_create("outputs");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_lz4_frames_decompress_to_the_files);
	tcase_add_test(tc, test_packed_unpacks_to_the_files);
	tcase_add_test(tc, test_packed_small_files_in_batches);
	t_tcase_add_test_needing(tc, T_URING, test_packed_sync_failure_uring);
	tcase_add_test(tc, test_packed_sync_pwrite);
	tcase_add_test(tc, test_packed_detects_corruption);
	tcase_add_test(tc, test_packed_index_survives_sigkill);
	tcase_add_test(tc, test_packed_index_no_room);
	tcase_add_test(tc, test_packed_index_write_fails);
	tcase_add_test(tc, test_stats_content_writes_csv);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
