/* SPDX-License-Identifier: Apache-2.0 */
/* The chunk assembler as a callback consumer of a real capture: Add ops on two simulated NPU
 * streams, small DMA chunks, the callback sink feeding adump_asm_feed_chunk() from the worker
 * threads; every file must complete, parse, and hold out == self + alpha * other. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "adump/device.h"
#include "reader_helpers.h"

#define STREAM_COUNT 2
#define OP_COUNT 12
#define MAX_ELEMS (96 * 1024)

struct consumer {
	struct adump_asm *a;
	atomic_uint completed;
	atomic_uint failed;
	char first_error[1024];
	pthread_mutex_t lock;
};

static void consumer_fail(struct consumer *c, const char *msg)
{
	pthread_mutex_lock(&c->lock);
	if (!c->first_error[0])
		snprintf(c->first_error, sizeof(c->first_error), "%s", msg);
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add(&c->failed, 1);
}

/* Checks a completed dump: two float inputs, one output, out == self + alpha * other. */
static void check_dump(struct consumer *c, struct adump_reader *r)
{
	const struct adump_reader_header *h = adump_reader_header(r);
	const float *self, *other, *out;
	double alpha = 0;
	char msg[600];

	if (h->tensor_count != 3 || h->kind_count[ADUMP_TENSOR_INPUT] != 2) {
		snprintf(msg, sizeof(msg), "%s: %u tensors", adump_reader_name(r),
			 h->tensor_count);
		consumer_fail(c, msg);
		return;
	}
	/* Ordinary dumps carry no attributes; op k ran with alpha (k % 5) - 2 and is named
	 * cb_add_<k>. */
	if (h->attr_count != 0 || strncmp(h->op_name, "cb_add_", 7)) {
		snprintf(msg, sizeof(msg), "%s: %u attributes, op %s", adump_reader_name(r),
			 h->attr_count, h->op_name);
		consumer_fail(c, msg);
		return;
	}
	alpha = (double)(strtoul(h->op_name + 7, NULL, 10) % 5) - 2;
	/* The assembled bytes live in memory, so the payloads can be mapped. */
	self = adump_reader_map(r, 0);
	other = adump_reader_map(r, 1);
	out = adump_reader_map(r, 2);
	if (!self || !other || !out) {
		consumer_fail(c, "payload not mappable");
		return;
	}
	for (uint64_t i = 0; i < h->tensors[2].info.bytes / 4; i++) {
		float a, b, o;

		memcpy(&a, self + i, 4);
		memcpy(&b, other + i, 4);
		memcpy(&o, out + i, 4);
		if (o != a + (float)alpha * b) {
			snprintf(msg, sizeof(msg), "%s: element %llu: %g != %g + %g * %g",
				 adump_reader_name(r), (unsigned long long)i, o, a, alpha, b);
			consumer_fail(c, msg);
			return;
		}
	}
	atomic_fetch_add(&c->completed, 1);
}

static int on_chunk(const struct adump_chunk *chunk, void *user)
{
	struct consumer *c = user;
	struct adump_reader *r;
	char msg[600];
	int ret;

	ret = adump_asm_feed_chunk(c->a, chunk);
	if (ret < 0) {
		consumer_fail(c, adump_asm_error(c->a, msg, sizeof(msg)));
		return ret;
	}
	if (ret == 0)
		return 0;
	if (adump_reader_create(&r) < 0)
		return -1;
	ret = adump_asm_take_reader(c->a, chunk->file_name, r);
	if (ret < 0)
		consumer_fail(c, adump_reader_error(r)[0] ? adump_reader_error(r)
							  : adump_asm_error(c->a, msg, sizeof(msg)));
	else
		check_dump(c, r);
	adump_reader_destroy(r);
	return ret < 0 ? ret : 0;
}

struct stream_run {
	struct adump_dev_stream *stream;
	void *self, *other, *out;
	unsigned index;
	int error;
};

static void *stream_main(void *arg)
{
	struct stream_run *s = arg;
	uint64_t state = t_seed() + s->index;

	for (unsigned k = 0; k < OP_COUNT; k++) {
		uint64_t count = 1 + t_rand(&state) % MAX_ELEMS;
		struct adump_dev_tensor self = {
			.data = s->self, .dtype = ADUMP_DT_FLOAT, .format = ADUMP_FORMAT_ND,
			.dim_count = 1, .dims = { (int64_t)count }, .bytes = count * 4,
		};
		struct adump_dev_tensor other = self, out = self;
		static const char *const names[OP_COUNT] = {
			"cb_add_0", "cb_add_1", "cb_add_2", "cb_add_3", "cb_add_4",  "cb_add_5",
			"cb_add_6", "cb_add_7", "cb_add_8", "cb_add_9", "cb_add_10", "cb_add_11",
		};
		struct adump_dev_dump dump = { .op_type = "Add", .op_name = names[k],
					       .tensor_mask = ADUMP_DUMP_ALL };

		other.data = s->other;
		out.data = s->out;
		s->error = adump_dev_launch_add(s->stream, &self, &other, (double)(k % 5) - 2,
						&out, &dump);
		if (s->error < 0)
			return NULL;
	}
	s->error = adump_dev_stream_sync(s->stream);
	return NULL;
}

START_TEST(test_callback_consumer)
{
	static struct consumer c;
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	struct stream_run runs[STREAM_COUNT];
	pthread_t threads[STREAM_COUNT];
	struct adump_session *s;
	struct adump_dev *dev;
	float *host = malloc(MAX_ELEMS * sizeof(float));
	uint64_t state = t_seed();

	memset(&c, 0, sizeof(c));
	pthread_mutex_init(&c.lock, NULL);
	ck_assert_int_eq(adump_asm_create(NULL, &c.a), 0);
	ck_assert_int_eq(adump_dev_open(0, &dev), 0);
	cfg.sink = ADUMP_SINK_CALLBACK;
	cfg.chunk_fn = on_chunk;
	cfg.chunk_user = &c;
	cfg.chunk_bytes = 64u << 10;
	cfg.pool_bytes = 8u << 20;
	cfg.stream_max = STREAM_COUNT;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	for (unsigned i = 0; i < STREAM_COUNT; i++) {
		runs[i] = (struct stream_run){ .index = i };
		ck_assert_int_eq(adump_dev_stream_create(dev, &runs[i].stream), 0);
		ck_assert_int_eq(adump_dev_malloc(dev, MAX_ELEMS * 4, &runs[i].self), 0);
		ck_assert_int_eq(adump_dev_malloc(dev, MAX_ELEMS * 4, &runs[i].other), 0);
		ck_assert_int_eq(adump_dev_malloc(dev, MAX_ELEMS * 4, &runs[i].out), 0);
		for (int which = 0; which < 2; which++) {
			for (int e = 0; e < MAX_ELEMS; e++)
				host[e] = (float)(t_rand(&state) % 1000) / 8.0f;
			ck_assert_int_eq(adump_dev_memcpy(dev, which ? runs[i].other : runs[i].self,
							  MAX_ELEMS * 4, host, MAX_ELEMS * 4,
							  ADUMP_COPY_HOST_TO_DEVICE),
					 0);
		}
		ck_assert_int_eq(adump_session_attach(s, runs[i].stream), 0);
	}
	for (unsigned i = 0; i < STREAM_COUNT; i++)
		ck_assert_int_eq(pthread_create(&threads[i], NULL, stream_main, &runs[i]), 0);
	for (unsigned i = 0; i < STREAM_COUNT; i++) {
		pthread_join(threads[i], NULL);
		ck_assert_int_eq(runs[i].error, 0);
	}
	ck_assert_int_eq(adump_session_flush(s), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_msg(atomic_load(&c.failed) == 0, "%u failures, first: %s",
		      atomic_load(&c.failed), c.first_error);
	ck_assert_uint_eq(atomic_load(&c.completed), STREAM_COUNT * OP_COUNT);
	ck_assert_uint_eq(adump_asm_file_count(c.a), 0);
	ck_assert_uint_eq(adump_asm_buffered_bytes(c.a), 0);
	for (unsigned i = 0; i < STREAM_COUNT; i++) {
		adump_dev_free(dev, runs[i].self);
		adump_dev_free(dev, runs[i].other);
		adump_dev_free(dev, runs[i].out);
		adump_dev_stream_destroy(runs[i].stream);
	}
	adump_dev_close(dev);
	adump_asm_destroy(c.a);
	free(host);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reader_callback");
	TCase *tc = tcase_create("callback");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_callback_consumer);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
