/* SPDX-License-Identifier: Apache-2.0 */
/* ring/ and the ends of a channel (producer/ port, pipeline/ consumer): order, wrap-around,
 * full and empty, drop accounting, and a two-thread stress of
 * millions of records through a channel, checking order and content end to end. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "producer/producer.h"
#include "ring/ring.h"
#include "ring/spsc.h"

#define BUF_BYTES 64

/* A bare channel: the hand-off alone. */
static struct adump_chan *make_chan(uint32_t count, void **mem)
{
	struct adump_chan_cfg cfg = { .stream_id = 7, .buffer_count = count, .buffer_bytes = BUF_BYTES };
	struct adump_chan *c = NULL;

	*mem = calloc(count, BUF_BYTES);
	cfg.buffer_mem = *mem;
	ck_assert_int_eq(adump_chan_create(&cfg, &c), 0);
	return c;
}

/* A channel with its producer's port (policy, counters, sleeping) over it. */
static struct adump_port *make_port(uint32_t count, enum adump_on_full on_full, void **mem)
{
	struct adump_port_cfg cfg = {
		.chan = { .stream_id = 7, .buffer_count = count, .buffer_bytes = BUF_BYTES },
		.on_full = on_full,
	};
	struct adump_port *p = NULL;

	*mem = calloc(count, BUF_BYTES);
	cfg.chan.buffer_mem = *mem;
	ck_assert_int_eq(adump_port_create(&cfg, &p), 0);
	return p;
}

START_TEST(test_config_rejected)
{
	struct adump_chan_cfg cfg = { .buffer_count = 1, .buffer_bytes = 64 };
	struct adump_chan *c = NULL;
	char mem[128];

	cfg.buffer_mem = mem;
	ck_assert_int_eq(adump_chan_create(&cfg, &c), -ADUMP_ERR_CONFIG);
	cfg.buffer_count = 2;
	cfg.buffer_mem = NULL;
	ck_assert_int_eq(adump_chan_create(&cfg, &c), -ADUMP_ERR_CONFIG);
	ck_assert_ptr_null(c);
}
END_TEST

START_TEST(test_order_and_wrap)
{
	void *mem;
	struct adump_chan *c = make_chan(4, &mem);

	ck_assert_ptr_null(adump_chan_pop_sc(c));
	/* 1000 rounds through 4 buffers wraps both rings many times. */
	for (uint64_t round = 0; round < 1000; round++) {
		struct adump_rec *r[3];

		for (int i = 0; i < 3; i++) {
			r[i] = adump_chan_reserve_sp(c);
			ck_assert_ptr_nonnull(r[i]);
			r[i]->offset = round * 3 + (uint64_t)i;
			memset(r[i]->buf, (int)(round + (uint64_t)i), BUF_BYTES);
			adump_chan_commit_sp(c, r[i]);
		}
		for (int i = 0; i < 3; i++) {
			struct adump_rec *got = adump_chan_pop_sc(c);

			ck_assert_ptr_eq(got, r[i]);
			ck_assert_uint_eq(got->offset, round * 3 + (uint64_t)i);
			ck_assert_uint_eq(((unsigned char *)got->buf)[BUF_BYTES - 1],
					  (unsigned char)(round + (uint64_t)i));
			adump_chan_release_sc(c, got);
		}
		ck_assert_ptr_null(adump_chan_pop_sc(c));
	}
	/* The bare ring has no policy: with every buffer out, reserve says so. */
	for (int i = 0; i < 4; i++)
		ck_assert_ptr_nonnull(adump_chan_reserve_sp(c));
	ck_assert_ptr_null(adump_chan_reserve_sp(c));
	ck_assert(adump_chan_is_idle(c));
	ck_assert_uint_eq(adump_chan_committed(c), 3000);
	adump_chan_destroy(c);
	free(mem);
}
END_TEST

START_TEST(test_full_drops_are_counted)
{
	void *mem;
	struct adump_port *c = make_port(4, ADUMP_ON_FULL_DROP, &mem);
	struct adump_rec *held[4];
	struct adump_stream_stats st;

	for (int i = 0; i < 4; i++) {
		held[i] = adump_port_reserve_sp(c, false);
		ck_assert_ptr_nonnull(held[i]);
		/* Each record owns a distinct buffer. */
		for (int j = 0; j < i; j++)
			ck_assert_ptr_ne(held[i]->buf, held[j]->buf);
	}
	ck_assert_ptr_null(adump_port_reserve_sp(c, false));
	ck_assert_ptr_null(adump_port_reserve_sp(c, false));
	adump_port_stats(c, &st);
	ck_assert_uint_eq(st.drops, 2);
	ck_assert_uint_eq(st.stream_id, 7);
	for (int i = 0; i < 4; i++)
		adump_port_commit_sp(c, held[i]);
	adump_port_stats(c, &st);
	ck_assert_uint_eq(st.records, 4);
	ck_assert_uint_eq(st.ring_high_water, 4);
	for (int i = 0; i < 4; i++)
		adump_chan_release_sc(adump_port_chan(c), adump_chan_pop_sc(adump_port_chan(c)));
	/* The drop is reported once by the next idle wait, then cleared. */
	ck_assert_int_eq(adump_port_wait_idle(c), -ADUMP_ERR_DROPPED);
	ck_assert_int_eq(adump_port_wait_idle(c), 0);
	adump_port_destroy(c);
	free(mem);
}
END_TEST

struct stress {
	struct adump_port *c;
	uint64_t count;
	uint64_t seed;
	uint64_t bad;
	int slow_consumer;
};

static void *stress_producer(void *arg)
{
	struct stress *s = arg;

	for (uint64_t i = 0; i < s->count; i++) {
		struct adump_rec *r = adump_port_reserve_sp(s->c, false);

		r->offset = i;
		r->len = (uint32_t)(i % BUF_BYTES) + 1;
		/* Canary pattern derived from the sequence number fills the whole buffer. */
		memset(r->buf, (int)(i * 131 + s->seed), BUF_BYTES);
		r->flags = (i + 1 == s->count) ? ADUMP_REC_LAST : 0;
		adump_port_commit_sp(s->c, r);
	}
	return NULL;
}

static void *stress_consumer(void *arg)
{
	struct stress *s = arg;
	uint64_t next = 0;

	while (next < s->count) {
		struct adump_rec *r = adump_chan_pop_sc(adump_port_chan(s->c));

		if (!r)
			continue;
		unsigned char want = (unsigned char)(next * 131 + s->seed);
		const unsigned char *b = r->buf;
		if (r->offset != next || r->len != (uint32_t)(next % BUF_BYTES) + 1 ||
		    b[0] != want || b[BUF_BYTES - 1] != want)
			s->bad++;
		if (s->slow_consumer && next % 4096 == 0)
			usleep(50);
		next++;
		adump_chan_release_sc(adump_port_chan(s->c), r);
	}
	return NULL;
}

static void run_stress(uint64_t count, uint32_t buffers, int slow)
{
	void *mem;
	struct stress s = { .count = count, .seed = t_seed(), .slow_consumer = slow };
	pthread_t p, q;
	struct adump_stream_stats st;

	s.c = make_port(buffers, ADUMP_ON_FULL_BLOCK, &mem);
	pthread_create(&q, NULL, stress_consumer, &s);
	pthread_create(&p, NULL, stress_producer, &s);
	pthread_join(p, NULL);
	ck_assert_int_eq(adump_port_wait_idle(s.c), 0);
	pthread_join(q, NULL);
	ck_assert_uint_eq(s.bad, 0);
	adump_port_stats(s.c, &st);
	ck_assert_uint_eq(st.records, count);
	ck_assert_uint_eq(st.drops, 0);
	ck_assert_uint_le(st.ring_high_water, buffers);
	adump_port_destroy(s.c);
	free(mem);
}

START_TEST(test_stress_two_threads)
{
	/* Millions of records in the normal build; fewer under sanitizers, which are ~20x slower. */
	const char *env = getenv("ADUMP_TEST_RING_RECORDS");
	uint64_t count = env ? strtoull(env, NULL, 0) : 2000000;

	run_stress(count, 64, 0);
}
END_TEST

START_TEST(test_blocking_producer_sleeps_and_wakes)
{
	struct adump_stream_stats st;
	void *mem;
	struct stress s = { .count = 200000, .seed = t_seed(), .slow_consumer = 1 };
	pthread_t p, q;

	s.c = make_port(2, ADUMP_ON_FULL_BLOCK, &mem);
	pthread_create(&q, NULL, stress_consumer, &s);
	pthread_create(&p, NULL, stress_producer, &s);
	pthread_join(p, NULL);
	pthread_join(q, NULL);
	ck_assert_uint_eq(s.bad, 0);
	adump_port_stats(s.c, &st);
	/* Two buffers and a slow consumer: the producer must have waited, and lost nothing. */
	ck_assert_uint_gt(st.producer_wait_count, 0);
	ck_assert_uint_eq(st.drops, 0);
	ck_assert_uint_eq(st.records, s.count);
	adump_port_destroy(s.c);
	free(mem);
}
END_TEST

/* A recycled buffer is the producer's again at once, but the channel is idle only once the
 * record is retired too. */
START_TEST(test_recycle_then_retire)
{
	void *mem;
	struct adump_port *c = make_port(2, ADUMP_ON_FULL_DROP, &mem);
	struct adump_rec *a = adump_port_reserve_sp(c, false);
	struct adump_rec *b = adump_port_reserve_sp(c, false);

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	adump_port_commit_sp(c, a);
	adump_port_commit_sp(c, b);
	ck_assert_ptr_eq(adump_chan_pop_sc(adump_port_chan(c)), a);
	ck_assert_ptr_eq(adump_chan_pop_sc(adump_port_chan(c)), b);
	adump_chan_recycle_sc(adump_port_chan(c), a);
	adump_chan_recycle_sc(adump_port_chan(c), b);
	/* Both buffers are free again although nothing is retired. */
	a = adump_port_reserve_sp(c, false);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(adump_port_reserve_sp(c, false));
	adump_port_commit_sp(c, a);
	struct adump_stream_stats st;
	adump_port_stats(c, &st);
	ck_assert_uint_eq(st.drops, 0);
	ck_assert_ptr_eq(adump_chan_pop_sc(adump_port_chan(c)), a);
	adump_chan_release_sc(adump_port_chan(c), a);
	adump_chan_retire_sc(adump_port_chan(c), 2);
	ck_assert_int_eq(adump_port_wait_idle(c), 0);
	adump_port_destroy(c);
	free(mem);
}
END_TEST

START_TEST(test_op_rec_deep_copy)
{
	struct adump_tensor t[2] = {
		{ .kind = ADUMP_TENSOR_INPUT, .dtype = ADUMP_DT_FLOAT, .dim_count = 1, .dims = { 3 }, .bytes = 12 },
		{ .kind = ADUMP_TENSOR_OUTPUT, .dtype = ADUMP_DT_FLOAT, .dim_count = 1, .dims = { 3 }, .bytes = 12 },
	};
	struct adump_attr a = { "alpha", "1" };
	char type[] = "Add", name[] = "add_1";
	struct adump_op op = { .op_type = type, .op_name = name, .tensor_count = 2, .tensors = t,
			       .attr_count = 1, .attrs = &a };
	struct adump_op_rec *rec = NULL;

	ck_assert_int_eq(adump_op_rec_create(&op, NULL, &rec), 0);
	strcpy(type, "Mul");
	t[0].bytes = 99;
	ck_assert_str_eq(rec->op.op_type, "Add");
	ck_assert_str_eq(rec->op.op_name, "add_1");
	ck_assert_str_eq(rec->op.attrs[0].value, "1");
	ck_assert_uint_eq(rec->op.tensors[0].bytes, 12);
	ck_assert_uint_eq(rec->payload_bytes, 24);
	adump_op_rec_destroy(rec);

	t[0].kind = ADUMP_TENSOR_OUTPUT;
	t[1].kind = ADUMP_TENSOR_INPUT;         /* out of order */
	ck_assert_int_eq(adump_op_rec_create(&op, NULL, &rec), -ADUMP_ERR_CONFIG);
}
END_TEST

/* Latency buckets: every duration falls in a bucket whose bounds hold it, the buckets are in
 * order and at most 25 % wide; a p99 below 1 µs is visible as such. */
START_TEST(test_hist_buckets)
{
	uint64_t hist[ADUMP_HIST_BUCKETS] = { 0 };
	uint64_t prev_end = 0;

	for (unsigned i = 0; i < ADUMP_HIST_BUCKETS - 1; i++) {
		uint64_t end = adump_hist_bucket_end(i);

		ck_assert_uint_gt(end, prev_end);
		ck_assert_uint_eq(adump_hist_bucket(end - 1), i);
		ck_assert_uint_eq(adump_hist_bucket(prev_end), i);
		if (prev_end >= 4)
			ck_assert_uint_le((end - prev_end) * 4, prev_end);
		prev_end = end;
	}
	ck_assert_uint_eq(adump_hist_bucket(UINT64_MAX), ADUMP_HIST_BUCKETS - 1);
	ck_assert_uint_eq(adump_hist_bucket_end(adump_hist_bucket(1000)), 1024);
	ck_assert_uint_eq(adump_hist_bucket_end(adump_hist_bucket(850)), 896);
	/* 989 samples at 100 ns and 11 at 850 ns: p99 is the 850 ns bucket's end, p50 100's. */
	hist[adump_hist_bucket(100)] = 989;
	hist[adump_hist_bucket(850)] = 11;
	ck_assert_uint_eq(adump_hist_percentile(hist, 0.99), 896);
	ck_assert_uint_eq(adump_hist_percentile(hist, 0.5), 112);
	hist[adump_hist_bucket(5000)] = 11;
	ck_assert_uint_eq(adump_hist_percentile(hist, 0.99), 5120);
	memset(hist, 0, sizeof(hist));
	ck_assert_uint_eq(adump_hist_percentile(hist, 0.99), 0);
}
END_TEST

/* Objects go back to their list and are handed out again; larger ones are one-offs. */
START_TEST(test_freelist_reuse)
{
	struct adump_freelist fl;
	void *a, *b, *c, *big, *x, *y;

	adump_freelist_init(&fl, 64);
	a = adump_freelist_alloc(&fl, 40);
	ck_assert_ptr_nonnull(a);
	memset(a, 0xa5, 64);                    /* all of obj_bytes is usable */
	adump_freelist_free(a);
	b = adump_freelist_alloc(&fl, 64);
	ck_assert_ptr_eq(b, a);                 /* given back, handed out again */
	c = adump_freelist_alloc(&fl, 8);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_ne(c, a);                 /* a is out: a new one */
	big = adump_freelist_alloc(&fl, 65);
	ck_assert_ptr_nonnull(big);
	memset(big, 0x5a, 65);
	adump_freelist_free(big);               /* freed for good: LeakSanitizer would tell */
	adump_freelist_free(NULL);
	adump_freelist_free(b);
	adump_freelist_free(c);
	x = adump_freelist_alloc(&fl, 1);
	y = adump_freelist_alloc(&fl, 1);
	ck_assert((x == a && y == c) || (x == c && y == a));
	adump_freelist_free(x);
	adump_freelist_free(y);
	adump_freelist_fini(&fl);               /* both back: nothing leaks */
}
END_TEST

struct fl_pair {
	struct adump_freelist fl;
	ck_ring_t ring;
	ck_ring_buffer_t slots[64];
	uint64_t count;
	int bad;
};

static void *fl_consumer(void *arg)
{
	struct fl_pair *p = arg;

	for (uint64_t i = 0; i < p->count;) {
		void *obj;

		if (!adump_spsc_pop(&p->ring, p->slots, &obj))
			continue;
		/* Each object carries its sequence number in every word: a reuse before it was
		 * given back would show here. */
		for (int w = 0; w < 8; w++)
			if (((uint64_t *)obj)[w] != i)
				p->bad++;
		adump_freelist_free(obj);
		i++;
	}
	return NULL;
}

/* One thread takes, another gives back, concurrently: every object arrives intact. */
START_TEST(test_freelist_two_threads)
{
	static struct fl_pair p;
	pthread_t th;

	p.count = getenv("ADUMP_TEST_RING_RECORDS") ? strtoull(getenv("ADUMP_TEST_RING_RECORDS"), NULL, 10) : 1000000;
	p.bad = 0;
	adump_freelist_init(&p.fl, 64);
	ck_ring_init(&p.ring, 64);
	ck_assert_int_eq(pthread_create(&th, NULL, fl_consumer, &p), 0);
	for (uint64_t i = 0; i < p.count;) {
		uint64_t *obj = adump_freelist_alloc(&p.fl, 64);

		ck_assert_ptr_nonnull(obj);
		for (int w = 0; w < 8; w++)
			obj[w] = i;
		while (!adump_spsc_push(&p.ring, p.slots, obj, NULL))
			;
		i++;
	}
	pthread_join(th, NULL);
	ck_assert_int_eq(p.bad, 0);
	adump_freelist_fini(&p.fl);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("chan");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_config_rejected);
	tcase_add_test(tc, test_order_and_wrap);
	tcase_add_test(tc, test_full_drops_are_counted);
	tcase_add_test(tc, test_stress_two_threads);
	tcase_add_test(tc, test_blocking_producer_sleeps_and_wakes);
	tcase_add_test(tc, test_recycle_then_retire);
	tcase_add_test(tc, test_op_rec_deep_copy);
	tcase_add_test(tc, test_hist_buckets);
	tcase_add_test(tc, test_freelist_reuse);
	tcase_add_test(tc, test_freelist_two_threads);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
