/* SPDX-License-Identifier: Apache-2.0 */
/* The DMA suite's test consumer and fixture (dma_fixture.c): a device stream bound to a port
 * over a small staging pool with a canary behind it, and a consumer thread that reassembles
 * every dump file from the channel's records, noting each protocol violation. */
#ifndef ADUMP_TEST_DMA_FIXTURE_H
#define ADUMP_TEST_DMA_FIXTURE_H

#include <pthread.h>

#include "common/common.h"
#include "dev_helpers.h"
#include "producer/producer.h"
#include "ring/ring.h"

#define CHUNK_BYTES 4096u
#define CANARY_BYTES 64u
#define MAX_FILES 64

/* One dump file as the consumer saw it. */
struct seen_file {
	struct adump_op op;                     /* strings and arrays point into the fields below */
	char op_type[64];
	char op_name[64];
	uint32_t attr_count;
	struct adump_tensor tensors[3];
	unsigned char *payload;                 /* payload_bytes long */
	uint64_t payload_bytes;
	uint64_t bytes_received;
	uint32_t record_count;
	bool is_failed;
	bool has_gap;                           /* a chunk went missing (drop policy only) */
};

struct consumer {
	struct adump_chan *chan;
	struct adump_doorbell doorbell;
	pthread_t thread;
	_Atomic int is_stopping;
	unsigned delay_us;                      /* per record: a deliberately slow worker */
	/* Consumer thread only until joined. */
	struct adump_op_rec *current;           /* file in progress */
	uint64_t next_offset;
	struct seen_file files[MAX_FILES];
	unsigned file_count;
	char error[256];                        /* first protocol violation */
};

struct fixture {
	struct adump_dev *dev;
	struct adump_dev_stream *stream;
	struct adump_port *port;
	unsigned char *buffer_mem;
	uint32_t buffer_count;
	struct consumer consumer;
};

/* Open device 0 and a stream, bind it to a port of @buffer_count CHUNK_BYTES buffers with
 * policy @on_full, and start the consumer (@delay_us per record). Asserts on failure. */
void t_dma_start(struct fixture *fx, uint32_t buffer_count, enum adump_on_full on_full,
		 unsigned delay_us);
/* Stop the consumer (after a sync, so the channel is idle); assert it saw no violation and
 * the canary is whole. */
void t_dma_stop_consumer(struct fixture *fx);
/* Unbind and free everything, the files seen included. */
void t_dma_finish(struct fixture *fx);

#endif
