/* SPDX-License-Identifier: Apache-2.0 */
/* aclmdlInitDump / aclmdlSetDump / aclmdlFinalizeDump (reference §1.5): every return code,
 * the aclInit exclusion, cycles, override, flush on finalize, and what a config dumps
 * (dump_mode, dump_step through adump_acl_step_advance()), and the environment the CANN
 * path reads (ADUMP_IO, ADUMP_IO_MODE, the disk guard). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acl/adump_acl.h"
#include "adump/reader.h"
#include "acl_test.h"

static char *dir;

static void setup(void)
{
	dir = t_tmpdir("acl-mdl");
	ck_assert_ptr_nonnull(dir);
	t_acl_log_capture();
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
}

/* A config dumping single ops into <dir>/<sub> with extra keys @extra (may be ""). */
static char *config(const char *sub, const char *extra)
{
	char *path, *json, *out, name[64];

	ck_assert(asprintf(&path, "%s/%s", dir, sub) > 0);
	mkdir(path, 0750);
	ck_assert(asprintf(&json, "{\"dump\": {\"dump_path\": \"%s\", \"dump_list\": [{}], \"dump_op_switch\": \"on\"%s%s}}",
			   path, *extra ? ", " : "", extra) > 0);
	snprintf(name, sizeof(name), "%s.json", sub);
	out = t_acl_write(dir, name, json);
	free(path);
	free(json);
	return out;
}

/* The CANN path's session stats once every dump so far is written (the session is the shim's,
 * under its lock). */
static void session_stats(struct adump_stats *st)
{
	pthread_mutex_lock(&adump_acl_state()->lock);
	adump_session_flush(adump_acl_state()->session);
	adump_stats_get(adump_acl_state()->session, st);
	pthread_mutex_unlock(&adump_acl_state()->lock);
}

static size_t dumps_in(const char *sub)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	return t_count_files(path, "");
}

START_TEST(test_codes_before_init)
{
	ck_assert_int_eq(aclmdlInitDump(), ACL_ERROR_UNINITIALIZE);
	ck_assert_int_eq(aclmdlSetDump("x.json"), ACL_ERROR_UNINITIALIZE);
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_ERROR_UNINITIALIZE);
}
END_TEST

START_TEST(test_codes_after_init)
{
	char *good = config("a", "");
	char *syntax = t_acl_write(dir, "syntax.json", "{\"dump\": {\"dump_path\": }");
	char *bad = t_acl_write(dir, "bad.json", "{\"dump\": {\"dump_op_switch\": \"on\"}}");
	char *empty = t_acl_write(dir, "empty.json", "");

	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlSetDump(good), ACL_ERROR_DUMP_NOT_RUN);
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_ERROR_DUMP_NOT_RUN);
	ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlInitDump(), ACL_ERROR_REPEAT_INITIALIZE);
	ck_assert_int_eq(aclmdlSetDump(NULL), ACL_ERROR_INVALID_PARAM);
	ck_assert_int_eq(aclmdlSetDump("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE);
	ck_assert_int_eq(aclmdlSetDump(syntax), ACL_ERROR_PARSE_FILE);
	ck_assert(t_acl_log_has("syntax.json:1:24"));
	ck_assert_int_eq(aclmdlSetDump(bad), ACL_ERROR_INVALID_DUMP_CONFIG);
	ck_assert(t_acl_log_has("dump.dump_path: required"));
	ck_assert_int_eq(aclmdlSetDump(empty), ACL_SUCCESS);
	ck_assert_ptr_null(acldumpGetPath(DATA_DUMP));
	ck_assert_int_eq(aclmdlSetDump(good), ACL_SUCCESS);
	ck_assert_ptr_nonnull(acldumpGetPath(DATA_DUMP));
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_SUCCESS);
	ck_assert_ptr_null(acldumpGetPath(DATA_DUMP));
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_ERROR_DUMP_NOT_RUN);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	free(good);
	free(syntax);
	free(bad);
	free(empty);
}
END_TEST

/* Documented behaviour (the CANN source does not enforce it; UNVERIFIED there). */
START_TEST(test_exclusive_with_init_json)
{
	char *data = config("a", "");
	char *exc = t_acl_write(dir, "exc.json", "{\"dump\": {\"dump_scene\": \"lite_exception\"}}");

	ck_assert_int_eq(aclInit(data), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlInitDump(), ACL_ERROR_DUMP_ALREADY_RUN);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	/* An exception-only aclInit config does not block configurable dump. */
	ck_assert_int_eq(aclInit(exc), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	free(data);
	free(exc);
}
END_TEST

START_TEST(test_cycles)
{
	char *cfg = config("cyc", "");
	aclrtStream s = t_acl_start(NULL);
	struct t_acl_add a;

	t_acl_add_setup(&a);
	for (int i = 0; i < 40; i++) {
		ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
		ck_assert_int_eq(aclmdlSetDump(cfg), ACL_SUCCESS);
		ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
		/* No synchronize: aclmdlFinalizeDump flushes what is outstanding. */
		ck_assert_int_eq(aclmdlFinalizeDump(), ACL_SUCCESS);
		ck_assert_uint_eq(dumps_in("cyc"), (size_t)i + 1);
	}
	/* Not dumped once finalized. */
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	ck_assert_uint_eq(dumps_in("cyc"), 40);
	t_acl_add_teardown(&a);
	t_acl_stop(s);
	free(cfg);
}
END_TEST

START_TEST(test_second_setdump_overrides)
{
	char *first = config("first", ""), *second = config("second", "");
	aclrtStream s = t_acl_start(NULL);
	struct t_acl_add a;

	t_acl_add_setup(&a);
	ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlSetDump(first), ACL_SUCCESS);
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(aclmdlSetDump(second), ACL_SUCCESS);   /* flushes the first */
	ck_assert_uint_eq(dumps_in("first"), 1);
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	ck_assert_uint_eq(dumps_in("first"), 1);
	ck_assert_uint_eq(dumps_in("second"), 2);
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_SUCCESS);
	t_acl_add_teardown(&a);
	t_acl_stop(s);
	free(first);
	free(second);
}
END_TEST

/* One dump file's size, to tell which tensors it holds. */
static size_t only_dump_size(const char *sub)
{
	char path[4096];
	struct adump_reader *r;
	size_t len = 0;
	FILE *p;
	void *buf;

	snprintf(path, sizeof(path), "find %s/%s -type f | head -1", dir, sub);
	p = popen(path, "r");
	ck_assert_ptr_nonnull(fgets(path, sizeof(path), p));
	pclose(p);
	path[strcspn(path, "\n")] = '\0';
	buf = t_read_file(path, &len);
	ck_assert_ptr_nonnull(buf);
	/* Ordinary dumps carry no DumpData.attr: CANN writes none there, and msaccucmp takes
	 * attr[0] for FFTS+ thread info. */
	ck_assert_int_eq(adump_reader_create(&r), 0);
	ck_assert_msg(adump_reader_open_mem(r, buf, len, path) == 0, "%s", adump_reader_error(r));
	ck_assert_uint_eq(adump_reader_header(r)->attr_count, 0);
	adump_reader_destroy(r);
	free(buf);
	return len;
}

START_TEST(test_mode_and_step)
{
	char *input = config("input", "\"dump_mode\": \"input\"");
	char *all = config("all", "\"dump_mode\": \"all\"");
	char *steps = config("steps", "\"dump_step\": \"1|3\"");
	aclrtStream s = t_acl_start(NULL);
	struct t_acl_add a;
	size_t in_size, all_size;

	t_acl_add_setup(&a);
	ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlSetDump(input), ACL_SUCCESS);
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(aclmdlSetDump(all), ACL_SUCCESS);
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(aclmdlSetDump(steps), ACL_SUCCESS);
	ck_assert_uint_eq(adump_acl_step_get(), 0);
	for (int step = 0; step < 5; step++) {
		ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
		ck_assert_uint_eq(adump_acl_step_advance(), (uint64_t)step + 1);
	}
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_SUCCESS);
	in_size = only_dump_size("input");
	all_size = only_dump_size("all");
	/* all = input + 32 bytes of output (header sizes differ by the output entry). */
	ck_assert_uint_gt(all_size, in_size + 32);
	ck_assert_uint_eq(dumps_in("steps"), 2);        /* steps 1 and 3 */
	t_acl_add_teardown(&a);
	t_acl_stop(s);
	free(input);
	free(all);
	free(steps);
}
END_TEST

/* dump_data stats: a <file>.csv with the statistics of reference §2.4, no tensor file. */
START_TEST(test_stats_csv)
{
	char *cfg = config("stats", "\"dump_mode\": \"all\", \"dump_data\": \"stats\"");
	char cmd[4096], path[4096];
	aclrtStream s = t_acl_start(NULL);
	struct t_acl_add a;
	size_t len;
	char *csv;
	FILE *p;

	t_acl_add_setup(&a);
	ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlSetDump(cfg), ACL_SUCCESS);
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_SUCCESS);
	ck_assert_uint_eq(dumps_in("stats"), 1);
	snprintf(cmd, sizeof(cmd), "find %s/stats -name 'Add.aclnnAdd.*.csv'", dir);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(fgets(path, sizeof(path), p));
	pclose(p);
	path[strcspn(path, "\n")] = '\0';
	csv = t_read_file(path, &len);
	ck_assert_ptr_nonnull(csv);
	csv = realloc(csv, len + 1);    /* t_read_file() does not NUL-terminate */
	csv[len] = '\0';
	ck_assert_str_eq(csv, "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,"
			 "Avg Value,Count,Nan Count,Negative Inf Count,Positive Inf Count\n"
			 "Input,0,32,DT_FLOAT,ND,4x2,7,0,3.5,8,0,0,0\n"
			 "Input,1,32,DT_FLOAT,ND,4x2,3,1,1.875,8,0,0,0\n"
			 "Output,0,32,DT_FLOAT,ND,4x2,10,1,5.375,8,0,0,0\n");
	free(csv);
	t_acl_add_teardown(&a);
	t_acl_stop(s);
	free(cfg);
}
END_TEST

/* ADUMP_IO=pwrite picks the native pwrite writer (the shim reads the environment, the
 * library never does). */
START_TEST(test_io_env)
{
	char *cfg = config("io", "");
	aclrtStream s;
	struct t_acl_add a;
	struct adump_stats stats;

	setenv("ADUMP_IO", "pwrite", 1);
	s = t_acl_start(NULL);
	t_acl_add_setup(&a);
	ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlSetDump(cfg), ACL_SUCCESS);
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	ck_assert_int_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	pthread_mutex_lock(&adump_acl_state()->lock);
	adump_stats_get(adump_acl_state()->session, &stats);
	pthread_mutex_unlock(&adump_acl_state()->lock);
	ck_assert_int_eq(stats.backend, ADUMP_WRITER_PWRITE);
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_SUCCESS);
	ck_assert_uint_eq(dumps_in("io"), 1);
	unsetenv("ADUMP_IO");
	t_acl_add_teardown(&a);
	t_acl_stop(s);
	free(cfg);
}
END_TEST

/* Whether a config is in force (the CANN path's, under its lock). */
static bool is_active(void)
{
	bool is_set;

	pthread_mutex_lock(&adump_acl_state()->lock);
	is_set = adump_acl_state()->active != NULL;
	pthread_mutex_unlock(&adump_acl_state()->lock);
	return is_set;
}

/* A valid config whose session cannot start (io_uring asked for and refused) is an internal
 * error, from aclInit and aclmdlSetDump alike, and leaves no config in force; the same config
 * starts once the writer can. */
START_TEST(test_session_start_fails)
{
	char *cfg = config("nostart", "");

	setenv("ADUMP_IO", "uring", 1);
	adump_testpoint_arm("uring.setup", -EPERM, 1, 1);
	ck_assert_int_eq(aclInit(cfg), ACL_ERROR_INTERNAL_ERROR);
	ck_assert(!is_active());
	ck_assert_int_eq(aclmdlInitDump(), ACL_ERROR_UNINITIALIZE);
	ck_assert_int_eq(aclInit(NULL), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlSetDump(cfg), ACL_ERROR_INTERNAL_ERROR);
	ck_assert(!is_active());
	ck_assert_ptr_null(acldumpGetPath(DATA_DUMP));
	adump_testpoint_disarm_all();
	unsetenv("ADUMP_IO");
	ck_assert_int_eq(aclmdlSetDump(cfg), ACL_SUCCESS);
	ck_assert(is_active());
	ck_assert_ptr_nonnull(acldumpGetPath(DATA_DUMP));
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	ck_assert_int_eq(aclInit(cfg), ACL_SUCCESS);
	ck_assert(is_active());
	ck_assert_int_eq(aclFinalize(), ACL_SUCCESS);
	free(cfg);
}
END_TEST

/* ADUMP_MAX_BYTES (and ADUMP_MIN_FREE) reach the session of the CANN path: a 1-byte quota
 * skips the dump, counted as disk_guard and written to the loss log; a value that is not a
 * size is reported and ignored. */
START_TEST(test_guard_env)
{
	char *cfg = config("guard", "");
	aclrtStream s;
	struct t_acl_add a;
	struct adump_stats stats;

	setenv("ADUMP_MAX_BYTES", "1", 1);
	setenv("ADUMP_MIN_FREE", "lots", 1);
	s = t_acl_start(NULL);
	t_acl_add_setup(&a);
	ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlSetDump(cfg), ACL_SUCCESS);
	ck_assert(t_acl_log_has("ADUMP_MIN_FREE=lots is not a size"));
	ck_assert_int_eq(t_acl_add_launch(&a, s), 0);
	aclrtSynchronizeStream(s);
	session_stats(&stats);
	ck_assert_uint_eq(stats.files_completed, 0);
	ck_assert_uint_gt(stats.losses[ADUMP_LOSS_DISK_GUARD], 0);
	ck_assert_uint_eq(stats.drops, stats.losses[ADUMP_LOSS_DISK_GUARD]);
	aclmdlFinalizeDump();
	ck_assert_uint_eq(dumps_in("guard"), 1);        /* the loss log, no dump */
	unsetenv("ADUMP_MAX_BYTES");
	unsetenv("ADUMP_MIN_FREE");
	t_acl_add_teardown(&a);
	t_acl_stop(s);
	free(cfg);
}
END_TEST

/* ADUMP_IO_MODE: a small Add (a file far below the O_DIRECT threshold) and a big one (a
 * 1 MiB output, above it) on one stream, dumped once per mode. The same stream, the same
 * device buffers and the clock fixed: every capture writes the same bytes. */
#define IO_ROWS 512
#define IO_COLS 512

struct io_ops {
	aclrtStream stream;
	struct t_acl_add small;
	struct t_acl_big big;
};

static void io_ops_setup(struct io_ops *ops)
{
	ops->stream = t_acl_start(NULL);
	t_acl_add_setup(&ops->small);
	t_acl_big_setup(&ops->big, IO_ROWS, IO_COLS);
}

static void io_ops_teardown(struct io_ops *ops)
{
	t_acl_big_teardown(&ops->big);
	t_acl_add_teardown(&ops->small);
	t_acl_stop(ops->stream);
}

/* Both ops dumped under ADUMP_IO_MODE=@mode (NULL: unset) into <dir>/<sub>; @st: the
 * session's stats, taken before aclmdlFinalizeDump. */
static void io_mode_capture(struct io_ops *ops, const char *mode, const char *sub,
			    struct adump_stats *st)
{
	char *cfg = config(sub, "");

	if (mode)
		setenv("ADUMP_IO_MODE", mode, 1);
	else
		unsetenv("ADUMP_IO_MODE");
	adump_testpoint_clock_set(1700000000000000ull);
	ck_assert_int_eq(aclmdlInitDump(), ACL_SUCCESS);
	ck_assert_int_eq(aclmdlSetDump(cfg), ACL_SUCCESS);
	ck_assert_int_eq(t_acl_add_launch(&ops->small, ops->stream), 0);
	t_acl_big_launch(&ops->big, ops->stream);
	session_stats(st);
	ck_assert_int_eq(aclmdlFinalizeDump(), ACL_SUCCESS);
	adump_testpoint_clock_set(0);
	unsetenv("ADUMP_IO_MODE");
	ck_assert_uint_eq(st->files_completed, 2);
	ck_assert_uint_eq(st->files_failed, 0);
	ck_assert_uint_eq(st->files_direct + st->files_buffered, 2);
	ck_assert_uint_eq(dumps_in(sub), 2);
	free(cfg);
}

/* The dump file of <dir>/<sub> that is @is_big (the only one above 64 KiB) or not, read
 * whole; *len set. */
static unsigned char *io_mode_file(const char *sub, bool is_big, size_t *len)
{
	char cmd[4200], path[4200];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "find %s/%s -type f -name 'Add.*' -size %s64k", dir, sub,
		 is_big ? "+" : "-");
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_msg(fgets(path, sizeof(path), p) != NULL, "%s: no file", cmd);
	ck_assert_msg(fgetc(p) == EOF, "%s: more than one file", cmd);
	pclose(p);
	path[strcspn(path, "\n")] = '\0';
	return t_read_file(path, len);
}

/* Files @a and @b of the two captures hold the same bytes, the small and the big one. */
static void io_mode_compare(const char *a, const char *b)
{
	for (int big = 0; big < 2; big++) {
		size_t len_a, len_b;
		unsigned char *bytes_a = io_mode_file(a, big, &len_a);
		unsigned char *bytes_b = io_mode_file(b, big, &len_b);

		ck_assert_ptr_nonnull(bytes_a);
		ck_assert_ptr_nonnull(bytes_b);
		ck_assert_msg(len_a == len_b, "%s: %zu bytes, %s: %zu", a, len_a, b, len_b);
		ck_assert_msg(memcmp(bytes_a, bytes_b, len_a) == 0, "%s and %s differ (%s file)",
			      a, b, big ? "big" : "small");
		if (big)
			ck_assert_uint_gt(len_a, (size_t)IO_ROWS * IO_COLS * sizeof(float));
		free(bytes_a);
		free(bytes_b);
	}
}

/* buffered: no file tries O_DIRECT. An unknown value is reported once and means auto: the
 * big file, and only it, tries O_DIRECT (written so, or fallen back where the filesystem
 * refuses it). Runs on any filesystem. */
START_TEST(test_io_mode_buffered_unknown)
{
	struct adump_stats st;
	struct io_ops ops;

	io_ops_setup(&ops);
	io_mode_capture(&ops, "buffered", "buffered", &st);
	ck_assert_uint_eq(st.files_direct, 0);
	ck_assert_uint_eq(st.files_buffered, 2);
	ck_assert_uint_eq(st.direct_fallbacks, 0);
	ck_assert_int_eq(t_acl_log_count("ADUMP_IO_MODE="), 0);
	io_mode_capture(&ops, "bogus", "bogus1", &st);
	ck_assert_uint_eq(st.files_direct + st.direct_fallbacks, 1);
	io_mode_capture(&ops, "bogus", "bogus2", &st);
	ck_assert_uint_eq(st.files_direct + st.direct_fallbacks, 1);
	ck_assert_int_eq(t_acl_log_count("ADUMP_IO_MODE=bogus unknown"), 1);
	io_mode_compare("buffered", "bogus1");
	io_ops_teardown(&ops);
}
END_TEST

/* On a filesystem that takes O_DIRECT: direct writes both files O_DIRECT, unset (auto)
 * only the big one, and all three captures hold the same bytes. */
START_TEST(test_io_mode_direct)
{
	struct adump_stats st;
	struct io_ops ops;

	io_ops_setup(&ops);
	io_mode_capture(&ops, "buffered", "buffered", &st);
	ck_assert_uint_eq(st.files_direct, 0);
	io_mode_capture(&ops, "direct", "direct", &st);
	ck_assert_uint_eq(st.files_direct, 2);
	ck_assert_uint_eq(st.direct_fallbacks, 0);
	io_mode_capture(&ops, NULL, "auto", &st);
	ck_assert_uint_eq(st.files_direct, 1);
	ck_assert_uint_eq(st.files_buffered, 1);
	ck_assert_uint_eq(st.direct_fallbacks, 0);
	ck_assert_int_eq(t_acl_log_count("ADUMP_IO_MODE="), 0);
	io_mode_compare("buffered", "direct");
	io_mode_compare("buffered", "auto");
	io_ops_teardown(&ops);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl_mdl");
	TCase *tc = tcase_create("mdl");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_codes_before_init);
	tcase_add_test(tc, test_codes_after_init);
	tcase_add_test(tc, test_exclusive_with_init_json);
	tcase_add_test(tc, test_cycles);
	tcase_add_test(tc, test_second_setdump_overrides);
	tcase_add_test(tc, test_mode_and_step);
	tcase_add_test(tc, test_stats_csv);
	tcase_add_test(tc, test_io_env);
	tcase_add_test(tc, test_session_start_fails);
	tcase_add_test(tc, test_guard_env);
	tcase_add_test(tc, test_io_mode_buffered_unknown);
	t_tcase_add_test_needing(tc, T_DIRECT, test_io_mode_direct);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
