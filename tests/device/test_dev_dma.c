/* SPDX-License-Identifier: Apache-2.0 */
/* The DMA engine end to end over a real channel: dumped Adds are cut into chunks that wrap a
 * small staging pool, a test consumer (dma_fixture.c) reassembles every file and checks
 * offsets, flags and metadata against the tensors; under the drop policy a slow consumer
 * makes chunks drop, the file is marked failed, its LAST record still arrives and sync
 * reports the drop. */
#include <errno.h>
#include <stdio.h>

#include "dma_fixture.h"

/* One launch the test expects to see as a file. */
struct launch {
	struct adump_dev_tensor t[3];           /* self, other, out */
	double alpha;
	uint32_t mask;
	uint32_t task_id;
	char op_name[32];
};

static void fill_random(struct adump_dev *dev, struct adump_dev_tensor *t, uint64_t *rng)
{
	unsigned char *host = malloc(t->bytes ? t->bytes : 1);

	/* Small integers are exact in every dtype, so any bit pattern check is meaningful. */
	for (uint64_t i = 0; i < t->bytes; i++)
		host[i] = (unsigned char)(t_rand(rng) & 0x3f);
	t_dev_upload(dev, t, host);
	free(host);
}

static void launch_init(struct fixture *fx, struct launch *l, int32_t dtype, int64_t elems,
			double alpha, uint32_t mask, uint64_t *rng)
{
	const int64_t shape[] = { elems };

	memset(l, 0, sizeof(*l));
	for (int i = 0; i < 3; i++)
		l->t[i] = t_dev_tensor(fx->dev, dtype, 1, shape);
	fill_random(fx->dev, &l->t[0], rng);
	fill_random(fx->dev, &l->t[1], rng);
	l->alpha = alpha;
	l->mask = mask;
}

static void launch_submit(struct fixture *fx, struct launch *l, uint32_t task_id)
{
	struct adump_dev_dump dump = { .op_type = "Add", .op_name = l->op_name,
				       .tensor_mask = l->mask };

	snprintf(l->op_name, sizeof(l->op_name), "aclnnAdd_%u", task_id);
	l->task_id = task_id;
	ck_assert_int_eq(adump_dev_launch_add(fx->stream, &l->t[0], &l->t[1], l->alpha, &l->t[2],
					      &dump), 0);
}

static void launch_free(struct fixture *fx, struct launch *l)
{
	for (int i = 0; i < 3; i++)
		t_dev_tensor_free(fx->dev, &l->t[i]);
}

/* Checks one complete, undropped file against its launch. */
static void check_file(struct fixture *fx, const struct seen_file *f, const struct launch *l,
		       uint64_t wall_before, uint64_t wall_after)
{
	const struct adump_dev_tensor *sel[3];
	static const enum adump_tensor_kind kinds[3] = { ADUMP_TENSOR_INPUT, ADUMP_TENSOR_INPUT,
							 ADUMP_TENSOR_OUTPUT };
	static const uint32_t arg_index[3] = { 0, 1, 0 };
	enum adump_tensor_kind sel_kind[3];
	uint32_t sel_arg[3], n = 0;
	uint64_t expect_bytes = 0, offset = 0, chunks;

	for (int i = 0; i < 3; i++) {
		bool is_wanted = i < 2 ? (l->mask & ADUMP_DUMP_INPUTS) : (l->mask & ADUMP_DUMP_OUTPUTS);

		if (!is_wanted)
			continue;
		sel[n] = &l->t[i];
		sel_kind[n] = kinds[i];
		sel_arg[n] = arg_index[i];
		expect_bytes += l->t[i].bytes;
		n++;
	}
	ck_assert_str_eq(f->op_type, "Add");
	ck_assert_str_eq(f->op_name, l->op_name);
	ck_assert_uint_eq(f->op.device_id, 0);
	ck_assert_uint_eq(f->op.stream_id, adump_dev_stream_id(fx->stream));
	ck_assert_uint_eq(f->op.task_id, l->task_id);
	ck_assert_uint_ge(f->op.timestamp_us, wall_before);
	ck_assert_uint_le(f->op.timestamp_us, wall_after);
	/* No attributes, alpha included: CANN writes none into ordinary data dumps. */
	ck_assert_uint_eq(f->attr_count, 0);
	ck_assert_uint_eq(f->op.tensor_count, n);
	ck_assert_uint_eq(f->payload_bytes, expect_bytes);
	ck_assert_uint_eq(f->bytes_received, expect_bytes);
	chunks = expect_bytes ? (expect_bytes + CHUNK_BYTES - 1) / CHUNK_BYTES : 1;
	ck_assert_uint_eq(f->record_count, chunks);
	ck_assert(!f->is_failed);
	ck_assert(!f->has_gap);
	for (uint32_t i = 0; i < n; i++) {
		const struct adump_tensor *t = &f->tensors[i];
		void *host = t_dev_download(fx->dev, sel[i]);

		ck_assert_int_eq(t->kind, sel_kind[i]);
		ck_assert_uint_eq(t->arg_index, sel_arg[i]);
		ck_assert_int_eq(t->dtype, sel[i]->dtype);
		ck_assert_int_eq(t->format, sel[i]->format);
		ck_assert_uint_eq(t->dim_count, sel[i]->dim_count);
		ck_assert_uint_eq(t->orig_dim_count, sel[i]->orig_dim_count ? sel[i]->orig_dim_count
									   : sel[i]->dim_count);
		for (uint32_t d = 0; d < t->dim_count; d++)
			ck_assert_uint_eq(t->dims[d], (uint64_t)sel[i]->dims[d]);
		for (uint32_t d = 0; d < t->orig_dim_count; d++)
			ck_assert_uint_eq(t->orig_dims[d], sel[i]->orig_dim_count
								   ? (uint64_t)sel[i]->orig_dims[d]
								   : (uint64_t)sel[i]->dims[d]);
		ck_assert_uint_eq(t->address, (uint64_t)(uintptr_t)sel[i]->data);
		ck_assert_uint_eq(t->bytes, sel[i]->bytes);
		/* The payload is self ‖ other ‖ out, as the device holds them after the run. */
		ck_assert_mem_eq(f->payload + offset, host, sel[i]->bytes);
		offset += sel[i]->bytes;
		free(host);
	}
}

START_TEST(test_dma_chunks_reassemble)
{
	/* Element counts chosen so files end mid-chunk and chunks span tensor boundaries. */
	static const struct {
		int32_t dtype;
		int64_t elems;
		double alpha;
		uint32_t mask;
	} plan[] = {
		{ ADUMP_DT_FLOAT, 1000, 1.0, ADUMP_DUMP_ALL },              /* 12000 B */
		{ ADUMP_DT_FLOAT, 1024, 0.5, ADUMP_DUMP_ALL },              /* exactly 3 chunks */
		{ ADUMP_DT_FLOAT16, 3001, 0.1, ADUMP_DUMP_ALL },
		{ ADUMP_DT_INT32, 7777, 3.0, ADUMP_DUMP_INPUTS },
		{ ADUMP_DT_INT32, 513, -2.0, ADUMP_DUMP_OUTPUTS },
		{ ADUMP_DT_FLOAT, 1, 2.0, ADUMP_DUMP_ALL },                 /* one short chunk */
		{ ADUMP_DT_FLOAT, 0, 1.0, ADUMP_DUMP_ALL },                 /* no payload */
		{ ADUMP_DT_FLOAT, 100, 1.0, 0 },                            /* no tensors */
		/* Unusual alphas: -0 and large integral values. */
		{ ADUMP_DT_FLOAT, 10, -0.0, ADUMP_DUMP_ALL },
		{ ADUMP_DT_FLOAT16, 10, 123456792.0, ADUMP_DUMP_OUTPUTS },
		{ ADUMP_DT_FLOAT, 10, 1e9, ADUMP_DUMP_INPUTS },
		/* 88 chunks: large enough for the DMA engine's thread, so the small dumps
		 * after it queue behind it and the ones after those are copied inline again. */
		{ ADUMP_DT_FLOAT, 30000, -1.25, ADUMP_DUMP_ALL },
	};
	enum { PLAN_COUNT = sizeof(plan) / sizeof(plan[0]), ROUNDS = 3 };
	struct launch launches[PLAN_COUNT * ROUNDS];
	struct fixture fx;
	uint64_t rng = t_seed(), wall_before, wall_after;
	uint32_t task_id = 0, n = 0;
	struct adump_stream_stats stats;
	uint64_t expect_records = 0;

	/* Four 4 KiB buffers and a consumer that takes 20 µs a record: the producer wraps the
	 * pool many times and has to wait for buffers. */
	t_dma_start(&fx, 4, ADUMP_ON_FULL_BLOCK, 20);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < PLAN_COUNT; i++, n++) {
			launch_init(&fx, &launches[n], plan[i].dtype, plan[i].elems, plan[i].alpha,
				    plan[i].mask, &rng);
			/* orig_dims differ from dims on some tensors. */
			if (i % 2) {
				launches[n].t[0].orig_dim_count = 2;
				launches[n].t[0].orig_dims[0] = 1;
				launches[n].t[0].orig_dims[1] = plan[i].elems;
				launches[n].t[0].format = ADUMP_FORMAT_NCHW;
			}
		}
	}
	wall_before = adump_wall_us();
	for (uint32_t i = 0; i < n; i++) {
		struct launch *l = &launches[i];

		/* An undumped launch between dumped ones still takes a task id. */
		if (i % 4 == 3)
			ck_assert_int_eq(adump_dev_launch_add(fx.stream, &l->t[0], &l->t[1], 1.0,
							      &l->t[0], NULL), 0);
		if (i % 4 == 3)
			task_id++;
		launch_submit(&fx, l, task_id++);
	}
	ck_assert_int_eq(adump_dev_stream_sync(fx.stream), 0);
	wall_after = adump_wall_us();
	t_dma_stop_consumer(&fx);

	ck_assert_uint_eq(fx.consumer.file_count, n);
	for (uint32_t i = 0; i < n; i++) {
		const struct seen_file *f = &fx.consumer.files[i];

		check_file(&fx, f, &launches[i], wall_before, wall_after);
		expect_records += f->record_count;
	}
	adump_port_stats(fx.port, &stats);
	ck_assert_uint_eq(stats.drops, 0);
	ck_assert_uint_eq(stats.records, expect_records);
	ck_assert_uint_gt(stats.producer_wait_count, 0);
	for (uint32_t i = 0; i < n; i++)
		launch_free(&fx, &launches[i]);
	t_dma_finish(&fx);
}
END_TEST

START_TEST(test_dma_unbound_stream_posts_nothing)
{
	struct fixture fx;
	struct launch l;
	uint64_t rng = t_seed();
	struct adump_stream_stats stats;

	t_dma_start(&fx, 2, ADUMP_ON_FULL_BLOCK, 0);
	launch_init(&fx, &l, ADUMP_DT_FLOAT, 5000, 1.0, ADUMP_DUMP_ALL, &rng);
	adump_dev_stream_bind(fx.stream, NULL);
	launch_submit(&fx, &l, 0);
	ck_assert_int_eq(adump_dev_stream_sync(fx.stream), 0);
	/* Bound again: the next launch is dumped, with the next task id. */
	adump_dev_stream_bind(fx.stream, fx.port);
	launch_submit(&fx, &l, 1);
	ck_assert_int_eq(adump_dev_stream_sync(fx.stream), 0);
	t_dma_stop_consumer(&fx);
	ck_assert_uint_eq(fx.consumer.file_count, 1);
	ck_assert_uint_eq(fx.consumer.files[0].op.task_id, 1);
	adump_port_stats(fx.port, &stats);
	ck_assert_uint_eq(stats.records, 15);   /* 60000 B in 4 KiB chunks */
	launch_free(&fx, &l);
	t_dma_finish(&fx);
}
END_TEST

START_TEST(test_dma_drop_policy)
{
	struct fixture fx;
	struct launch big, small;
	uint64_t rng = t_seed();
	struct adump_stream_stats stats;
	const struct seen_file *f;
	uint64_t chunks;

	/* Two buffers and a consumer that takes 2 ms a record: a 30-chunk file must drop. */
	t_dma_start(&fx, 2, ADUMP_ON_FULL_DROP, 2000);
	launch_init(&fx, &big, ADUMP_DT_FLOAT, 10000, 1.0, ADUMP_DUMP_ALL, &rng);
	launch_init(&fx, &small, ADUMP_DT_FLOAT, 300, 1.0, ADUMP_DUMP_ALL, &rng);
	launch_submit(&fx, &big, 0);
	ck_assert_int_eq(adump_dev_stream_sync(fx.stream), -ADUMP_ERR_DROPPED);
	/* The drop was reported once; a file that fits in one chunk is never dropped. */
	launch_submit(&fx, &small, 1);
	ck_assert_int_eq(adump_dev_stream_sync(fx.stream), 0);
	t_dma_stop_consumer(&fx);

	ck_assert_uint_eq(fx.consumer.file_count, 2);
	f = &fx.consumer.files[0];
	chunks = (big.t[0].bytes * 3 + CHUNK_BYTES - 1) / CHUNK_BYTES;
	ck_assert(f->is_failed);
	ck_assert(f->has_gap);
	ck_assert_uint_lt(f->record_count, chunks);
	ck_assert_uint_ge(f->record_count, 1);  /* at least the LAST, checked by the consumer */
	adump_port_stats(fx.port, &stats);
	/* Every chunk was either posted or counted as dropped. */
	ck_assert_uint_eq(stats.drops + f->record_count, chunks);
	ck_assert_uint_eq(stats.records, f->record_count + 1);
	ck_assert(!fx.consumer.files[1].is_failed);
	ck_assert_uint_eq(fx.consumer.files[1].record_count, 1);
	launch_free(&fx, &big);
	launch_free(&fx, &small);
	t_dma_finish(&fx);
}
END_TEST

/* The engine copies beside the kernels, so the kernels after a dumped op must not overwrite
 * what its dump still has to read: here the consumer is slow and the pool two buffers, so the
 * dump of A is still being copied while B, C and D overwrite A's out, self and other. */
START_TEST(test_dma_waits_before_overwrite)
{
	enum { ELEMS = 30000 };                 /* 360000 B: 88 chunks, 2 buffers */
	const int64_t shape[] = { ELEMS };
	struct fixture fx;
	struct launch a;
	struct adump_dev_tensor s2, o2;
	struct adump_dev_stream_stats ds;
	struct timespec ts;
	uint64_t rng = t_seed(), before_ns, after_ns;
	int32_t *self, *other, *expect;
	const struct seen_file *f;

	t_dma_start(&fx, 2, ADUMP_ON_FULL_BLOCK, 300);
	launch_init(&fx, &a, ADUMP_DT_INT32, ELEMS, 3.0, ADUMP_DUMP_ALL, &rng);
	s2 = t_dev_tensor(fx.dev, ADUMP_DT_INT32, 1, shape);
	o2 = t_dev_tensor(fx.dev, ADUMP_DT_INT32, 1, shape);
	fill_random(fx.dev, &s2, &rng);
	fill_random(fx.dev, &o2, &rng);
	self = t_dev_download(fx.dev, &a.t[0]);
	other = t_dev_download(fx.dev, &a.t[1]);
	expect = malloc(ELEMS * sizeof(*expect));
	for (int i = 0; i < ELEMS; i++)
		expect[i] = (int32_t)((uint32_t)self[i] + 3u * (uint32_t)other[i]);

	adump_dev_stream_stats(fx.stream, &ds);
	ck_assert_uint_eq(ds.kernels_end_ns, 0);        /* no kernel ran yet */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	before_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	launch_submit(&fx, &a, 0);
	ck_assert_int_eq(adump_dev_launch_add(fx.stream, &s2, &o2, -1.0, &a.t[2], NULL), 0);
	ck_assert_int_eq(adump_dev_launch_add(fx.stream, &s2, &o2, 5.0, &a.t[0], NULL), 0);
	ck_assert_int_eq(adump_dev_launch_add(fx.stream, &s2, &s2, 7.0, &a.t[1], NULL), 0);
	ck_assert_int_eq(adump_dev_stream_sync(fx.stream), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	after_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	t_dma_stop_consumer(&fx);
	/* B waited for the dump (C and D may find it done by then), and that was counted. */
	adump_dev_stream_stats(fx.stream, &ds);
	/* The last kernel ended after the first launch, and before the sync returned. */
	ck_assert_uint_gt(ds.kernels_end_ns, before_ns);
	ck_assert_uint_le(ds.kernels_end_ns, after_ns);
	ck_assert_uint_ge(ds.fence_waits, 1);
	ck_assert_uint_le(ds.fence_waits, 3);
	ck_assert_uint_gt(ds.fence_wait_ns, 0);
	ck_assert_uint_eq(ds.queue_waits, 0);

	ck_assert_uint_eq(fx.consumer.file_count, 1);
	f = &fx.consumer.files[0];
	ck_assert_uint_eq(f->bytes_received, 3 * ELEMS * sizeof(int32_t));
	ck_assert_mem_eq(f->payload, self, ELEMS * sizeof(int32_t));
	ck_assert_mem_eq(f->payload + ELEMS * sizeof(int32_t), other, ELEMS * sizeof(int32_t));
	ck_assert_mem_eq(f->payload + 2 * ELEMS * sizeof(int32_t), expect, ELEMS * sizeof(int32_t));
	/* And the later kernels did run, in order, after the dump had read their targets. */
	free(self);
	free(other);
	self = t_dev_download(fx.dev, &a.t[0]);
	other = t_dev_download(fx.dev, &s2);
	for (int i = 0; i < ELEMS; i += 997) {
		int32_t o2_i;

		ck_assert_int_eq(adump_dev_memcpy(fx.dev, &o2_i, 4, (int32_t *)o2.data + i, 4,
						  ADUMP_COPY_DEVICE_TO_HOST), 0);
		ck_assert_int_eq(self[i], (int32_t)((uint32_t)other[i] + 5u * (uint32_t)o2_i));
	}
	free(self);
	free(other);
	free(expect);
	t_dev_tensor_free(fx.dev, &s2);
	t_dev_tensor_free(fx.dev, &o2);
	launch_free(&fx, &a);
	t_dma_finish(&fx);
}
END_TEST

#ifdef T_HAVE_TESTPOINTS
START_TEST(test_dma_op_rec_failure)
{
	struct fixture fx;
	struct launch l[3];
	uint64_t rng = t_seed();
	float *got;

	t_dma_start(&fx, 2, ADUMP_ON_FULL_BLOCK, 0);
	for (int i = 0; i < 3; i++)
		launch_init(&fx, &l[i], ADUMP_DT_FLOAT, 3000, 2.0, ADUMP_DUMP_ALL, &rng);
	/* The second dump cannot build its op record: no records, the kernel still ran. */
	adump_testpoint_arm("device.dma", -ENOMEM, 2, 0);
	for (uint32_t i = 0; i < 3; i++)
		launch_submit(&fx, &l[i], i);
	ck_assert_int_eq(adump_dev_stream_sync(fx.stream), -ENOMEM);
	adump_testpoint_disarm_all();
	ck_assert_int_eq(adump_dev_stream_sync(fx.stream), 0);
	t_dma_stop_consumer(&fx);
	ck_assert_uint_eq(fx.consumer.file_count, 2);
	ck_assert_uint_eq(fx.consumer.files[0].op.task_id, 0);
	ck_assert_uint_eq(fx.consumer.files[1].op.task_id, 2);
	got = t_dev_download(fx.dev, &l[1].t[2]);
	for (int i = 0; i < 3000; i++) {
		float a, b;

		ck_assert_int_eq(adump_dev_memcpy(fx.dev, &a, 4, (float *)l[1].t[0].data + i, 4,
						  ADUMP_COPY_DEVICE_TO_HOST), 0);
		ck_assert_int_eq(adump_dev_memcpy(fx.dev, &b, 4, (float *)l[1].t[1].data + i, 4,
						  ADUMP_COPY_DEVICE_TO_HOST), 0);
		ck_assert_float_eq(got[i], a + 2.0f * b);
	}
	free(got);
	for (int i = 0; i < 3; i++)
		launch_free(&fx, &l[i]);
	t_dma_finish(&fx);
}
END_TEST
#endif

static Suite *dma_suite(void)
{
	Suite *s = suite_create("device_dma");
	TCase *tc = tcase_create("dma");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dma_chunks_reassemble);
	tcase_add_test(tc, test_dma_unbound_stream_posts_nothing);
	tcase_add_test(tc, test_dma_drop_policy);
	tcase_add_test(tc, test_dma_waits_before_overwrite);
#ifdef T_HAVE_TESTPOINTS
	tcase_add_test(tc, test_dma_op_rec_failure);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return t_run_suite(dma_suite());
}
