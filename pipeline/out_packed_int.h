/* SPDX-License-Identifier: Apache-2.0 */
/* What the packed layout's two files share: out_packed.c (segments, the index, the output's
 * hooks) and out_packed_batch.c (small files gathered into batches, background syncs and
 * writeback). */
#ifndef ADUMP_PIPELINE_OUT_PACKED_INT_H
#define ADUMP_PIPELINE_OUT_PACKED_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipeline/worker_int.h"
#include "proto/proto.h"

#define MODULE "packed"
#define DEFAULT_SEGMENT_BYTES (1ull << 30)
#define INDEX_BATCH_BYTES (64u << 10)   /* index lines gathered before one write() */
#define INDEX_RESERVE_BYTES (256u << 10) /* index space reserved ahead of its lines */
#define BATCH_BYTES (256u << 10)        /* small files gathered before one write */
#define BATCH_MAX 4                     /* batches per worker: one filling, the rest in flight */
#define BATCH_SMALL_BYTES (BATCH_BYTES / 4)     /* largest file a batch takes */
#define BATCH_LINE_BYTES (64u << 10)
#define BATCH_RUN_MAX 1024
#define BATCH_FILE_MAX 1024             /* op records a batch holds until it is written */
/* A stream's dumps with a hand-over journal slot the workers hold past their records (in a
 * batch, or with an index line not yet written), each slot marked done only once its line
 * is written: at most this many (op_rec->journal_held; each worker one more while it
 * flushes), so that the journal needs that many slots more per stream (pipeline/journal.c).
 * Lines of journaled files a worker queues: at most PACKED_JOURNAL_LINES_MAX. */
#define PACKED_JOURNAL_HELD_MAX 512u
#define PACKED_JOURNAL_LINES_MAX 1024u

/* Records of one channel a batch retires once it is written. */
struct batch_run {
	struct adump_chan *chan;
	uint32_t record_count;
};

/* Small files copied whole (header and payload) into a worker buffer, so their staging
 * buffers go back at once, and written to the segment with one write. Their index lines go
 * out after that write has completed. */
struct packed_batch {
	struct adump_chunk_write write;         /* first: the completion finds the batch */
	struct packed_batch *next_free;
	uint64_t base;                          /* mem[0]'s offset in its segment */
	size_t len;                             /* bytes of files in mem */
	uint32_t file_count;
	char *lines;                            /* the files' index lines, in file order */
	size_t lines_len;
	struct batch_run *runs;
	uint32_t run_count;
	struct adump_op_rec **ops;              /* the files' records, until the write is done */
	unsigned char *mem;
};

#define TAG_ATTEMPTS 1000               /* session tags tried before giving up */
#define SEGMENT_ATTEMPTS 1000           /* taken segment names skipped before giving up */

/* Per session (s->out_session): the packed directory, opened without following a link, and
 * the tag of the session's file names ("" for the first session in the directory). */
struct packed_session {
	int dir_fd;
	int index0_fd;                          /* worker 0's index, created at the claim */
	char tag[ADUMP_PACKED_TAG_MAX];
};

/* Per worker (w->out_state). */
struct packed_state {
	int index_fd;
	int seg_fd;                             /* the segment being filled */
	uint32_t seg_number;
	uint64_t seg_offset;                    /* next free byte of it */
	int *old_fds;                           /* full segments, closed at worker stop */
	uint32_t old_count;
	char *index_buf;                        /* lines of completed files, not yet written */
	size_t index_len;
	size_t index_counted;                   /* of those, the bytes of the first lines, whose
						 * files are counted completed already */
	uint64_t index_size;                    /* the index file's bytes: whole lines */
	/* Journal slots of files whose lines are queued (index_buf), and their producers'
	 * counts of held dumps: done, and counted down, once the lines are written. */
	struct packed_journal_line {
		struct adump_journal_slot *slot;
		_Atomic uint32_t *held;
	} journal_lines[PACKED_JOURNAL_LINES_MAX];
	uint32_t journal_line_count;
	uint64_t index_reserved;                /* its space allocated up to here */
	bool is_reserve_unsupported;            /* the filesystem has no fallocate() */
	struct packed_batch *batch;             /* being filled, or NULL */
	struct packed_batch *free_batches;
	unsigned batch_count;                   /* allocated */
	/* Written by completed batches, writeback not started yet (packed_writeback()). */
	int wb_fd;
	uint64_t wb_from;
	uint64_t wb_to;
	/* Background data syncs (packed_sync()): bytes written since the last one started. */
	uint64_t sync_owed;
	bool is_sync_in_flight;
	bool is_sync_unsupported;               /* a writer without background syncs (inline pwrite) */
	struct adump_chunk_write sync_write;
};

/* out_packed.c: a batch's memory freed; the worker's next segment; index space reserved for
 * @more bytes of lines; the lines gathered written out; the session's file-name tag. */
ADUMP_HIDDEN void packed_batch_destroy(struct packed_batch *b);
ADUMP_HIDDEN int packed_segment_roll(struct adump_worker *w);
ADUMP_HIDDEN int packed_index_reserve(struct adump_worker *w, size_t more);
ADUMP_HIDDEN int packed_index_flush(struct adump_worker *w);
ADUMP_HIDDEN const char *packed_tag(const struct adump_worker *w);

/* out_packed_batch.c: the filling batch written (submit_held); a batch's write completed; a
 * background data sync of @fd started, and its completion; writeback of a written range;
 * a small file's one record copied into the batch (record_prepare). */
ADUMP_HIDDEN void packed_batch_submit(struct adump_worker *w);
ADUMP_HIDDEN void packed_batch_done(struct adump_worker *w, struct packed_batch *b, int res);
ADUMP_HIDDEN void packed_sync(struct adump_worker *w, int fd, uint64_t len);
ADUMP_HIDDEN void packed_sync_done(struct adump_worker *w, int res);
ADUMP_HIDDEN void packed_writeback(struct packed_state *p, int fd, uint64_t from, uint64_t to);
ADUMP_HIDDEN int packed_take_small(struct adump_worker *w, struct adump_chan *chan,
				   struct adump_rec *rec);

#endif
