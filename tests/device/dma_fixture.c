/* SPDX-License-Identifier: Apache-2.0 */
/* The DMA suite's test consumer and fixture (dma_fixture.h): the consumer pops the channel's
 * records as a capture worker would (doorbell protocol included), checks each record's
 * offset and flags against the file in progress, copies the payload out and releases the
 * buffer. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include "dma_fixture.h"

static void consumer_fail(struct consumer *c, const char *what)
{
	if (!c->error[0])
		snprintf(c->error, sizeof(c->error), "file %u: %s", c->file_count, what);
}

static void file_open(struct consumer *c, struct adump_op_rec *op_rec)
{
	struct seen_file *f = &c->files[c->file_count];

	memset(f, 0, sizeof(*f));
	f->op = op_rec->op;
	snprintf(f->op_type, sizeof(f->op_type), "%s", op_rec->op.op_type);
	snprintf(f->op_name, sizeof(f->op_name), "%s", op_rec->op.op_name);
	f->op.op_type = f->op_type;
	f->op.op_name = f->op_name;
	f->attr_count = op_rec->op.attr_count;
	f->op.attrs = NULL;
	if (op_rec->op.tensor_count > 3) {
		consumer_fail(c, "more than 3 tensors");
		f->op.tensor_count = 3;
	}
	if (f->op.tensor_count)
		memcpy(f->tensors, op_rec->op.tensors, f->op.tensor_count * sizeof(f->tensors[0]));
	f->op.tensors = f->tensors;
	f->payload_bytes = op_rec->payload_bytes;
	f->payload = calloc(1, f->payload_bytes ? f->payload_bytes : 1);
	c->current = op_rec;
	c->next_offset = 0;
}

static void handle(struct consumer *c, struct adump_rec *rec)
{
	struct seen_file *f;
	bool is_last = rec->flags & ADUMP_REC_LAST;

	if (c->file_count == MAX_FILES) {
		consumer_fail(c, "too many files");
		adump_chan_release_sc(c->chan, rec);
		return;
	}
	if (rec->flags & ADUMP_REC_FIRST) {
		if (c->current)
			consumer_fail(c, "FIRST before the previous file's LAST");
		file_open(c, rec->op);
	} else if (rec->op != c->current) {
		consumer_fail(c, "record of a file that did not start with FIRST");
		file_open(c, rec->op);
	}
	f = &c->files[c->file_count];
	if (rec->offset != c->next_offset) {
		if (rec->offset < c->next_offset)
			consumer_fail(c, "offset went backwards");
		f->has_gap = true;
	}
	if (rec->len > CHUNK_BYTES || rec->offset + rec->len > f->payload_bytes)
		consumer_fail(c, "record outside the payload");
	else
		memcpy(f->payload + rec->offset, rec->buf, rec->len);
	if (!is_last && rec->len != CHUNK_BYTES)
		consumer_fail(c, "short chunk before LAST");
	if (is_last && rec->offset + rec->len != f->payload_bytes)
		consumer_fail(c, "LAST does not end the payload");
	c->next_offset = rec->offset + rec->len;
	f->bytes_received += rec->len;
	f->record_count++;
	if (c->delay_us)
		usleep(c->delay_us);
	if (is_last) {
		/* The producer sets is_failed before it commits LAST. The op record goes back
		 * before the record, as a worker does. */
		f->is_failed = atomic_load_explicit(&c->current->is_failed, memory_order_relaxed);
		adump_op_rec_destroy(c->current);
		c->current = NULL;
		c->file_count++;
	}
	adump_chan_release_sc(c->chan, rec);
}

static void *consumer_main(void *arg)
{
	struct consumer *c = arg;
	struct adump_rec *rec;
	uint64_t value;

	for (;;) {
		rec = adump_chan_pop_sc(c->chan);
		if (rec) {
			handle(c, rec);
			continue;
		}
		if (atomic_load_explicit(&c->is_stopping, memory_order_acquire))
			break;
		/* Doorbell protocol: announce the sleep, look once more, then wait. */
		atomic_store_explicit(&c->doorbell.is_sleeping, 1, memory_order_seq_cst);
		rec = adump_chan_pop_sc(c->chan);
		if (!rec) {
			struct pollfd pfd = { .fd = c->doorbell.event_fd, .events = POLLIN };

			poll(&pfd, 1, 10);      /* a bounded wait: a lost wake-up costs 10 ms */
			while (read(c->doorbell.event_fd, &value, sizeof(value)) > 0)
				;
		}
		atomic_store_explicit(&c->doorbell.is_sleeping, 0, memory_order_relaxed);
		if (rec)
			handle(c, rec);
	}
	return NULL;
}

void t_dma_start(struct fixture *fx, uint32_t buffer_count, enum adump_on_full on_full,
		 unsigned delay_us)
{
	struct adump_port_cfg cfg;

	memset(fx, 0, sizeof(*fx));
	ck_assert_int_eq(adump_dev_open(0, &fx->dev), 0);
	ck_assert_int_eq(adump_dev_stream_create(fx->dev, &fx->stream), 0);
	fx->buffer_count = buffer_count;
	fx->buffer_mem = malloc(buffer_count * CHUNK_BYTES + CANARY_BYTES);
	memset(fx->buffer_mem + buffer_count * CHUNK_BYTES, 0xa5, CANARY_BYTES);
	cfg = (struct adump_port_cfg){
		.chan = {
			.stream_id = adump_dev_stream_id(fx->stream),
			.buffer_count = buffer_count,
			.buffer_bytes = CHUNK_BYTES,
			.buffer_mem = fx->buffer_mem,
		},
		.on_full = on_full,
	};
	ck_assert_int_eq(adump_port_create(&cfg, &fx->port), 0);
	ck_assert_int_eq(adump_doorbell_init(&fx->consumer.doorbell), 0);
	adump_port_set_doorbell(fx->port, &fx->consumer.doorbell);
	fx->consumer.chan = adump_port_chan(fx->port);
	fx->consumer.delay_us = delay_us;
	ck_assert_int_eq(pthread_create(&fx->consumer.thread, NULL, consumer_main, &fx->consumer),
			 0);
	adump_dev_stream_bind(fx->stream, fx->port);
	ck_assert_ptr_eq(adump_dev_stream_port(fx->stream), fx->port);
}

/* Stops the consumer (after a sync, so the channel is idle) and checks the canary. */
void t_dma_stop_consumer(struct fixture *fx)
{
	atomic_store_explicit(&fx->consumer.is_stopping, 1, memory_order_release);
	ck_assert_int_eq(pthread_join(fx->consumer.thread, NULL), 0);
	ck_assert_msg(!fx->consumer.error[0], "consumer: %s", fx->consumer.error);
	ck_assert_ptr_null(fx->consumer.current);
	for (unsigned i = 0; i < CANARY_BYTES; i++)
		ck_assert_uint_eq(fx->buffer_mem[fx->buffer_count * CHUNK_BYTES + i], 0xa5);
}

void t_dma_finish(struct fixture *fx)
{
	adump_dev_stream_bind(fx->stream, NULL);
	ck_assert_int_eq(adump_dev_stream_destroy(fx->stream), 0);
	adump_port_destroy(fx->port);
	adump_doorbell_fini(&fx->consumer.doorbell);
	free(fx->buffer_mem);
	for (unsigned i = 0; i < fx->consumer.file_count; i++)
		free(fx->consumer.files[i].payload);
	adump_dev_close(fx->dev);
}

