/* SPDX-License-Identifier: Apache-2.0 */
/* Nothing lost without a record (issue 13, items 1 and 2): each cause of loss that can be
 * provoked without privileges, counted per session and per stream and written, one line per
 * lost tensor, to <dir>/adump-losses.jsonl; the log and the counters agree line for line;
 * `adump verify` lists the losses and fails; a capture without loss leaves no log. The quota
 * of the disk guard skips whole files (cause disk_guard) and never writes past it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adump/reader.h"
#include "capture_helpers.h"
#include "common/common.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif

#define TIME_DIR "20260104000000"
#define FLOATS 10000u                   /* per tensor: files of 3 x 40,000 bytes + header */

static struct adump_config base_cfg(const char *root)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;

	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.chunk_bytes = 4096;
	cfg.pool_bytes = 1u << 20;
	cfg.stream_max = 1;
	return cfg;
}

struct rig {
	char *root;
	char dir[4200];
	struct adump_session *s;
	struct adump_dev *dev;
	struct adump_dev_stream *stream;
	void *mem;
	uint64_t count;                         /* floats per tensor */
};

static void rig_start(struct rig *r, struct adump_config *cfg, uint64_t count)
{
	memset(r, 0, sizeof(*r));
	r->root = t_tmpdir("losses");
	r->count = count;
	cfg->dump_path = r->root;
	snprintf(r->dir, sizeof(r->dir), "%s/%s", r->root, TIME_DIR);
	ck_assert_int_eq(adump_session_create(cfg, &r->s), 0);
	ck_assert_int_eq(adump_dev_open(0, &r->dev), 0);
	ck_assert_int_eq(adump_dev_stream_create(r->dev, &r->stream), 0);
	ck_assert_int_eq(adump_session_attach(r->s, r->stream), 0);
	ck_assert_int_eq(adump_dev_malloc(r->dev, count * 4, &r->mem), 0);
	memset(r->mem, 0, count * 4);
}

/* One dumped float Add: two inputs and an output of r->count floats. */
static int rig_launch(struct rig *r, const char *name)
{
	struct adump_dev_tensor t = { .dtype = ADUMP_DT_FLOAT, .format = ADUMP_FORMAT_ND,
				      .dim_count = 1, .dims = { (int64_t)r->count },
				      .bytes = r->count * 4, .data = r->mem };
	struct adump_dev_dump dump = { .op_type = "Add", .op_name = name,
				       .tensor_mask = ADUMP_DUMP_ALL };

	return adump_dev_launch_add(r->stream, &t, &t, 1.0, &t, &dump);
}

static void rig_stop(struct rig *r)
{
	ck_assert_int_eq(adump_session_detach(r->s, r->stream), 0);
	adump_session_destroy(r->s);
	adump_dev_stream_destroy(r->stream);
	adump_dev_free(r->dev, r->mem);
	adump_dev_close(r->dev);
	t_rmtree(r->root);
	free(r->root);
}

/* The loss log read back: every line valid, each naming a tensor of an Add this test
 * launched; the count per cause equals the session's and the stream's counters. Return:
 * the number of lines. */
static uint64_t check_log(struct rig *r, const struct adump_stats *st)
{
	struct adump_reader_losses *l;
	const struct adump_reader_loss *e;
	uint64_t by_cause[ADUMP_LOSS_CAUSE_COUNT] = { 0 }, lines = 0, sum = 0;
	int ret;

	for (int i = 0; i < ADUMP_LOSS_CAUSE_COUNT; i++)
		sum += st->losses[i];
	ck_assert_uint_eq(st->drops, sum);
	ret = adump_reader_losses_open(r->dir, &l);
	if (sum == 0) {
		ck_assert_int_eq(ret, -ENOENT);
		return 0;
	}
	ck_assert_int_eq(ret, 0);
	while ((ret = adump_reader_losses_next(l, &e)) > 0) {
		ck_assert_msg(e->is_valid, "line %u: %s", e->line, e->message);
		ck_assert_str_eq(e->op_type, "Add");
		ck_assert_ptr_nonnull(strstr(e->file, "0/Add."));
		ck_assert(!strcmp(e->kind, "input") || !strcmp(e->kind, "output"));
		ck_assert_int_le(e->index, strcmp(e->kind, "input") ? 0 : 1);
		ck_assert_uint_eq(e->bytes, r->count * 4);
		ck_assert_uint_eq(e->stream_id, st->streams[0].stream_id);
		by_cause[e->cause]++;
		lines++;
	}
	ck_assert_int_eq(ret, 0);
	adump_reader_losses_close(l);
	ck_assert_uint_eq(st->stream_count, 1);
	for (int i = 0; i < ADUMP_LOSS_CAUSE_COUNT; i++) {
		ck_assert_msg(by_cause[i] == st->losses[i], "%s: %llu lines, %llu counted",
			      adump_loss_cause_name(i), (unsigned long long)by_cause[i],
			      (unsigned long long)st->losses[i]);
		ck_assert_uint_eq(st->streams[0].losses[i], st->losses[i]);
	}
	ck_assert_uint_eq(st->streams[0].drops, sum);
	ck_assert_uint_eq(lines, sum);
	return lines;
}

/* `adump verify` lists each loss and exits 1. */
static void check_verify(struct rig *r, uint64_t lines)
{
	char *out;
	size_t listed = 0;

	ck_assert_int_eq(t_run_tool(ADUMP_TOOL, r->root, "verify --quiet %s", r->dir), 1);
	out = t_slurp(r->root, "stdout");
	for (const char *line = out; line && *line;) {
		listed += !strncmp(line, "LOST ", 5);
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	ck_assert_msg(listed == lines, "verify listed %zu losses of %llu:\n%s", listed,
		      (unsigned long long)lines, out);
	free(out);
}

START_TEST(test_no_loss_no_log)
{
	struct adump_config cfg = base_cfg(NULL);
	struct adump_stats st;
	struct rig r;

	rig_start(&r, &cfg, FLOATS);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(rig_launch(&r, "clean"), 0);
	ck_assert_int_eq(adump_dev_stream_sync(r.stream), 0);
	adump_stats_get(r.s, &st);
	ck_assert_uint_eq(st.files_completed, 4);
	ck_assert_uint_eq(check_log(&r, &st), 0);
	ck_assert_int_eq(t_run_tool(ADUMP_TOOL, r.root, "verify --quiet %s", r.dir), 0);
	rig_stop(&r);
}
END_TEST

/* A file failed by testpoint @point armed with @err: its three tensors are lost to @cause. */
static void one_cause(const char *point, int err, enum adump_loss_cause cause)
{
	struct adump_config cfg = base_cfg(NULL);
	struct adump_stats st;
	struct rig r;

	rig_start(&r, &cfg, FLOATS);
	ck_assert_int_eq(rig_launch(&r, "before"), 0);
	ck_assert_int_eq(adump_dev_stream_sync(r.stream), 0);
	adump_testpoint_arm(point, err, 1, 0);
	ck_assert_int_eq(rig_launch(&r, "struck"), 0);
	ck_assert_int_eq(adump_dev_stream_sync(r.stream), 0);
	adump_testpoint_disarm_all();
	ck_assert_int_eq(rig_launch(&r, "after"), 0);
	ck_assert_int_eq(adump_dev_stream_sync(r.stream), 0);
	ck_assert_int_eq(adump_session_flush(r.s), err);
	adump_stats_get(r.s, &st);
	ck_assert_uint_eq(st.files_completed, 2);
	ck_assert_uint_eq(st.files_failed, 1);
	ck_assert_uint_eq(st.losses[cause], 3);
	ck_assert_uint_eq(st.drops, 3);
	ck_assert_uint_eq(check_log(&r, &st), 3);
	check_verify(&r, 3);
	rig_stop(&r);
}

START_TEST(test_eio)
{
	one_cause("uring.write", -EIO, ADUMP_LOSS_EIO);
}
END_TEST

START_TEST(test_enospc_injected)
{
	one_cause("uring.write", -ENOSPC, ADUMP_LOSS_ENOSPC);
}
END_TEST

START_TEST(test_nomem)
{
	one_cause("worker.open", -ENOMEM, ADUMP_LOSS_NOMEM);
}
END_TEST

START_TEST(test_write_error)
{
	one_cause("worker.open", -EACCES, ADUMP_LOSS_WRITE_ERROR);
}
END_TEST

/* The producer cannot build a dump's op record: the dump never reaches a worker, so it has
 * no line in the log (nothing is left to name it with), but its tensors are counted, per
 * session and per stream, also once the stream has gone. */
START_TEST(test_nomem_op_record)
{
	struct adump_config cfg = base_cfg(NULL);
	struct adump_stats st;
	struct rig r;

	rig_start(&r, &cfg, FLOATS);
	adump_testpoint_arm("device.dma", -ENOMEM, 1, 0);
	ck_assert_int_eq(rig_launch(&r, "no_record"), 0);
	adump_dev_stream_sync(r.stream);
	adump_testpoint_disarm_all();
	ck_assert_int_eq(rig_launch(&r, "recorded"), 0);
	ck_assert_int_eq(adump_dev_stream_sync(r.stream), 0);
	adump_stats_get(r.s, &st);
	ck_assert_uint_eq(st.files_completed, 1);
	ck_assert_uint_eq(st.losses[ADUMP_LOSS_NOMEM], 3);
	ck_assert_uint_eq(st.drops, 3);
	ck_assert_uint_eq(st.streams[0].losses[ADUMP_LOSS_NOMEM], 3);
	ck_assert_uint_eq(st.streams[0].drops, 3);
	ck_assert_int_eq(adump_session_detach(r.s, r.stream), 0);
	adump_stats_get(r.s, &st);
	ck_assert_uint_eq(st.losses[ADUMP_LOSS_NOMEM], 3);
	ck_assert_uint_eq(st.drops, 3);
	ck_assert_int_eq(adump_session_attach(r.s, r.stream), 0);
	rig_stop(&r);
}
END_TEST

/* Two 4 KiB buffers for ops of 3 x 400 KB under the drop policy: the producer outruns the
 * worker. Per failed file, the tensor whose chunk found no buffer is no_buffer, the others
 * after_loss. */
START_TEST(test_drop_policy)
{
	struct adump_config cfg = base_cfg(NULL);
	struct adump_stats st;
	struct rig r;
	int ops = 0;

	cfg.on_full = ADUMP_ON_FULL_DROP;
	cfg.pool_bytes = 8192;
	rig_start(&r, &cfg, 100000);
	do {
		ck_assert_int_eq(rig_launch(&r, "dropped"), 0);
		adump_dev_stream_sync(r.stream);
		adump_stats_get(r.s, &st);
	} while (!st.files_failed && ++ops < 64);
	ck_assert_uint_gt(st.files_failed, 0);
	ck_assert_int_eq(adump_session_flush(r.s), -ADUMP_ERR_DROPPED);
	adump_stats_get(r.s, &st);
	ck_assert_uint_eq(st.drops, 3 * st.files_failed);
	ck_assert_uint_ge(st.losses[ADUMP_LOSS_NO_BUFFER], st.files_failed);
	ck_assert_uint_eq(st.losses[ADUMP_LOSS_NO_BUFFER] + st.losses[ADUMP_LOSS_AFTER_LOSS],
			  st.drops);
	ck_assert_uint_gt(st.losses[ADUMP_LOSS_AFTER_LOSS], 0);
	check_verify(&r, check_log(&r, &st));
	fprintf(stderr, "test_losses: drop policy: %llu files failed, %llu no_buffer, "
		"%llu after_loss\n", (unsigned long long)st.files_failed,
		(unsigned long long)st.losses[ADUMP_LOSS_NO_BUFFER],
		(unsigned long long)st.losses[ADUMP_LOSS_AFTER_LOSS]);
	rig_stop(&r);
}
END_TEST

/* A slow disk: every write completes 50 ms late. 64 KiB chunks, two buffers; ops of
 * 3 x 40,000 bytes, two chunks each, launched back to back. */
static void slow_disk(enum adump_on_full on_full, struct rig *r, struct adump_stats *st)
{
	struct adump_config cfg = base_cfg(NULL);

	cfg.on_full = on_full;
	cfg.chunk_bytes = 64u << 10;
	cfg.pool_bytes = 128u << 10;
	rig_start(r, &cfg, FLOATS);
	adump_testpoint_arm("uring.slow", 1, 1, 1);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(rig_launch(r, "slow"), 0);
	adump_dev_stream_sync(r->stream);
	adump_testpoint_disarm_all();
	adump_session_flush(r->s);
	adump_stats_get(r->s, st);
	ck_assert_uint_eq(st->files_completed + st->files_failed, 6);
}

/* The block policy waits: nothing lost, never more in flight than the pool's two buffers. */
START_TEST(test_slow_disk_block)
{
	struct adump_stats st;
	struct rig r;

	slow_disk(ADUMP_ON_FULL_BLOCK, &r, &st);
	ck_assert_uint_eq(st.files_completed, 6);
	ck_assert_uint_eq(st.drops, 0);
	ck_assert_uint_gt(st.producer_wait_count, 0);
	ck_assert_uint_le(st.streams[0].ring_high_water, 2);
	ck_assert_uint_eq(check_log(&r, &st), 0);
	ck_assert_int_eq(adump_session_error(r.s), 0);
	rig_stop(&r);
}
END_TEST

/* The drop policy loses files, and records every tensor of them. */
START_TEST(test_slow_disk_drop)
{
	struct adump_stats st;
	struct rig r;

	slow_disk(ADUMP_ON_FULL_DROP, &r, &st);
	ck_assert_uint_gt(st.files_failed, 0);
	ck_assert_uint_eq(st.drops, 3 * st.files_failed);
	ck_assert_uint_ge(st.losses[ADUMP_LOSS_NO_BUFFER], st.files_failed);
	ck_assert_uint_eq(check_log(&r, &st), st.drops);
	fprintf(stderr, "test_losses: slow disk, drop policy: %llu of 6 files lost, %llu "
		"no_buffer, %llu after_loss lines\n", (unsigned long long)st.files_failed,
		(unsigned long long)st.losses[ADUMP_LOSS_NO_BUFFER],
		(unsigned long long)st.losses[ADUMP_LOSS_AFTER_LOSS]);
	rig_stop(&r);
}
END_TEST

/* The quota: files start while their bytes fit in max_bytes; the others are skipped whole,
 * never opened, and counted as disk_guard. */
START_TEST(test_quota)
{
	struct adump_config cfg = base_cfg(NULL);
	struct adump_stats st;
	struct rig r;
	uint64_t file_bytes;

	cfg.min_free_bytes = ADUMP_GUARD_OFF;
	cfg.max_bytes = 500000;                 /* room for 4 files of ~120 KB */
	rig_start(&r, &cfg, FLOATS);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(rig_launch(&r, "quota"), 0);
	ck_assert_int_eq(adump_dev_stream_sync(r.stream), 0);
	ck_assert_int_eq(adump_session_flush(r.s), -ADUMP_ERR_DISK_GUARD);
	adump_stats_get(r.s, &st);
	ck_assert_uint_eq(st.files_completed, 4);
	ck_assert_uint_eq(st.files_failed, 6);
	ck_assert_uint_eq(st.write_errors, 0);
	ck_assert_uint_eq(st.losses[ADUMP_LOSS_DISK_GUARD], 18);
	file_bytes = st.bytes / st.files_completed;
	ck_assert_uint_le(st.bytes, cfg.max_bytes);
	ck_assert_uint_gt(st.bytes + file_bytes, cfg.max_bytes);
	ck_assert_uint_eq(check_log(&r, &st), 18);
	/* Skipped before they were opened: nothing of them on disk. */
	ck_assert_uint_eq(t_count_files(r.dir, ".failed"), 0);
	ck_assert_uint_eq(t_count_files(r.dir, ".part"), 0);
	ck_assert_uint_eq(t_count_files(r.dir, ""), 5);        /* 4 dumps and the loss log */
	check_verify(&r, 18);
	rig_stop(&r);
}
END_TEST

/* A floor no filesystem can keep: everything is skipped; 0 bytes written. */
START_TEST(test_min_free_floor)
{
	struct adump_config cfg = base_cfg(NULL);
	struct adump_stats st;
	struct rig r;

	cfg.min_free_bytes = UINT64_MAX - 1;
	rig_start(&r, &cfg, FLOATS);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(rig_launch(&r, "floor"), 0);
	ck_assert_int_eq(adump_dev_stream_sync(r.stream), 0);
	ck_assert_int_eq(adump_session_flush(r.s), -ADUMP_ERR_DISK_GUARD);
	adump_stats_get(r.s, &st);
	ck_assert_uint_eq(st.files_completed, 0);
	ck_assert_uint_eq(st.losses[ADUMP_LOSS_DISK_GUARD], 9);
	ck_assert_uint_eq(st.bytes, 0);
	ck_assert_uint_eq(check_log(&r, &st), 9);
	rig_stop(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("losses");
	TCase *tc = tcase_create("causes");

	tcase_add_test(tc, test_no_loss_no_log);
	tcase_add_test(tc, test_eio);
	tcase_add_test(tc, test_enospc_injected);
	tcase_add_test(tc, test_nomem);
	tcase_add_test(tc, test_write_error);
	tcase_add_test(tc, test_nomem_op_record);
	tcase_add_test(tc, test_drop_policy);
	tcase_add_test(tc, test_slow_disk_block);
	tcase_add_test(tc, test_slow_disk_drop);
	tcase_add_test(tc, test_quota);
	tcase_add_test(tc, test_min_free_floor);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
