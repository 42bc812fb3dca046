/* SPDX-License-Identifier: Apache-2.0 */
/* io auto: O_DIRECT for files of at least direct_min_bytes, buffered for smaller ones; the
 * fallbacks to buffered (a filesystem refusing O_DIRECT at open, an O_DIRECT write failing
 * with EINVAL); and the same bytes in every file whichever path wrote it. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adump/host.h"
#include "capture_helpers.h"
#include "common/common.h"

#define TIME_DIR "20260102030405"
#define THRESHOLD (64u << 10)
#define CHUNK (256u << 10)

/* Payload sizes: empty, around a block, not multiples of 4096, across chunks. The first six
 * stay below THRESHOLD with their header, the rest reach it. */
static const uint64_t sizes[] = {
	0, 1, 4095, 4096, 4097, 20000,
	THRESHOLD, 200000, 307200, (1u << 20) + 4097, (3u << 20) + 5,
};
#define SIZE_COUNT (sizeof(sizes) / sizeof(sizes[0]))
#define SMALL_COUNT 6u

static unsigned char *data;

static void capture(const char *root, enum adump_io io, struct adump_stats *st)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct adump_session *s = NULL;
	struct adump_host_stream *hs = NULL;

	ck_assert_int_eq(cfg.io, ADUMP_IO_AUTO);        /* the default */
	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.chunk_bytes = CHUNK;
	cfg.pool_bytes = 4u << 20;
	cfg.stream_max = 1;
	cfg.io = io;
	cfg.direct_min_bytes = THRESHOLD;
	adump_testpoint_clock_set(1700000000000000ull);
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (unsigned i = 0; i < SIZE_COUNT; i++) {
		struct adump_host_tensor t = {
			.data = data, .bytes = sizes[i], .dtype = ADUMP_DT_UINT8,
			.format = ADUMP_FORMAT_ND, .dim_count = 1, .dims = { (int64_t)sizes[i] },
		};
		struct adump_host_op op = ADUMP_HOST_OP_INIT;
		char name[32];

		snprintf(name, sizeof(name), "op%02u", i);
		op.op_type = "Probe";
		op.op_name = name;
		op.inputs = &t;
		op.input_count = 1;
		op.timestamp_us = 1700000000000000ull + i;
		ck_assert_int_eq(adump_host_dump_op(hs, &op, NULL), 0);
	}
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	adump_stats_get(s, st);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	adump_testpoint_clock_set(0);
	ck_assert_uint_eq(st->files_completed, SIZE_COUNT);
	ck_assert_uint_eq(st->files_failed, 0);
	ck_assert_uint_eq(st->write_errors, 0);
	ck_assert_uint_eq(st->files_direct + st->files_buffered, SIZE_COUNT);
}

/* Every file of @a's capture equals its namesake in @b's, byte for byte, the host stream's
 * id blanked out of the names (the op names sort them the same). */
static void compare_captures(const char *a, const char *b)
{
	char da[4200], db[4200];
	size_t na, nb;
	char **la, **lb;

	snprintf(da, sizeof(da), "%s/%s", a, TIME_DIR);
	snprintf(db, sizeof(db), "%s/%s", b, TIME_DIR);
	la = t_list_files(da, &na);
	lb = t_list_files(db, &nb);
	ck_assert_uint_eq(na, SIZE_COUNT);
	ck_assert_uint_eq(nb, SIZE_COUNT);
	for (size_t i = 0; i < na; i++) {
		char pa[4400], pb[4400];
		size_t sa, sb;
		unsigned char *ba, *bb;

		ck_assert_int_eq(strncmp(la[i], lb[i], strlen("0/Probe.op00.")), 0);
		snprintf(pa, sizeof(pa), "%s/%s", da, la[i]);
		snprintf(pb, sizeof(pb), "%s/%s", db, lb[i]);
		ba = t_read_file(pa, &sa);
		bb = t_read_file(pb, &sb);
		ck_assert_msg(sa == sb, "%s: %zu bytes, %s: %zu", pa, sa, pb, sb);
		ck_assert_msg(memcmp(ba, bb, sa) == 0, "%s and %s differ", pa, pb);
		free(ba);
		free(bb);
	}
	t_free_list(la, na);
	t_free_list(lb, nb);
}

static char *sub(const char *root, const char *name)
{
	char *p;

	ck_assert_int_ge(asprintf(&p, "%s/%s", root, name), 0);
	return p;
}

static void setup(void)
{
	data = malloc((3u << 20) + 5);
	ck_assert_ptr_nonnull(data);
	for (size_t i = 0; i < (3u << 20) + 5; i++)
		data[i] = (unsigned char)(i * 131 + (i >> 12));
}

static void teardown(void)
{
	free(data);
	data = NULL;
}

/* The three modes write the same files; auto sends the big ones O_DIRECT, the small ones
 * through the page cache, and direct every one O_DIRECT. */
START_TEST(test_auto_by_size_same_bytes)
{
	char *root = t_tmpdir("ioauto");
	char *a = sub(root, "buffered"), *b = sub(root, "direct"), *c = sub(root, "auto");
	struct adump_stats st;

	capture(a, ADUMP_IO_BUFFERED, &st);
	ck_assert_uint_eq(st.files_direct, 0);
	ck_assert_uint_eq(st.files_buffered, SIZE_COUNT);
	capture(b, ADUMP_IO_DIRECT, &st);
	ck_assert_uint_eq(st.files_direct, SIZE_COUNT);
	ck_assert_uint_eq(st.direct_fallbacks, 0);
	capture(c, ADUMP_IO_AUTO, &st);
	ck_assert_uint_eq(st.files_direct, SIZE_COUNT - SMALL_COUNT);
	ck_assert_uint_eq(st.files_buffered, SMALL_COUNT);
	ck_assert_uint_eq(st.direct_fallbacks, 0);
	compare_captures(a, b);
	compare_captures(a, c);
	t_rmtree(root);
	free(a);
	free(b);
	free(c);
	free(root);
}
END_TEST

/* The filesystem accepts the O_DIRECT open, but the first O_DIRECT write comes back EINVAL:
 * that file goes on buffered, nothing lost, nothing failed. */
START_TEST(test_einval_on_first_write)
{
	char *root = t_tmpdir("ioauto");
	char *a = sub(root, "buffered"), *b = sub(root, "einval");
	struct adump_stats st;

	capture(a, ADUMP_IO_BUFFERED, &st);
	/* io direct: every write is an O_DIRECT one (in auto the first would be buffered). */
	adump_testpoint_arm("uring.write", -EINVAL, 1, 0);
	capture(b, ADUMP_IO_DIRECT, &st);
	adump_testpoint_disarm_all();
	ck_assert_uint_eq(st.direct_fallbacks, 1);
	ck_assert_uint_eq(st.files_direct, SIZE_COUNT - 1);
	ck_assert_int_eq(st.first_error, 0);
	compare_captures(a, b);
	t_rmtree(root);
	free(a);
	free(b);
	free(root);
}
END_TEST

/* A filesystem that refuses O_DIRECT at open: every file is written buffered, the same
 * bytes; auto tries once and then no more. tmpfs (/dev/shm) refused it before Linux 6.6;
 * where it no longer does, a testpoint plays the refusal. */
START_TEST(test_open_refused_falls_back)
{
	char *root = strdup("/dev/shm/adump-ioauto.XXXXXX"), *a, *b, *c;
	struct adump_stats st;
	char probe[4200];
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(probe, sizeof(probe), "%s/probe", root);
	fd = open(probe, O_WRONLY | O_CREAT | O_DIRECT, 0600);
	if (fd >= 0) {
		close(fd);
		unlink(probe);
		printf("test_open_refused_falls_back: /dev/shm takes O_DIRECT; testpoint\n");
		adump_testpoint_arm("file.direct_open", -EINVAL, 1, 1);
	}
	a = sub(root, "buffered");
	b = sub(root, "direct");
	c = sub(root, "auto");
	capture(a, ADUMP_IO_BUFFERED, &st);
	capture(b, ADUMP_IO_DIRECT, &st);
	ck_assert_uint_eq(st.files_direct, 0);
	ck_assert_uint_eq(st.direct_fallbacks, SIZE_COUNT);
	capture(c, ADUMP_IO_AUTO, &st);
	adump_testpoint_disarm_all();
	ck_assert_uint_eq(st.files_direct, 0);
	ck_assert_uint_eq(st.files_buffered, SIZE_COUNT);
	ck_assert_uint_eq(st.direct_fallbacks, 1);       /* then no more tries */
	compare_captures(a, b);
	compare_captures(a, c);
	t_rmtree(root);
	free(a);
	free(b);
	free(c);
	free(root);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("io_auto");
	TCase *tc = tcase_create("io_auto");

	tcase_add_checked_fixture(tc, setup, teardown);
	t_tcase_add_test_needing(tc, T_DIRECT, test_auto_by_size_same_bytes);
	t_tcase_add_test_needing(tc, T_DIRECT, test_einval_on_first_write);
	tcase_add_test(tc, test_open_refused_falls_back);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
