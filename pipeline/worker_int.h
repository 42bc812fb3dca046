/* SPDX-License-Identifier: Apache-2.0 */
/* pipeline/ private: per-file state and the output variants a worker drives (plain files,
 * LZ4 frames, packed segments, statistics), shared by worker.c, lz4out.c and packed.c. */
#ifndef ADUMP_WORKER_INT_H
#define ADUMP_WORKER_INT_H

#include <lz4frame.h>

#include "pipeline/pipeline_int.h"
#include "pipeline/stats.h"

/* A buffer for bytes the worker produced itself (compressed data), written once. */
struct out_buf {
	struct adump_chunk_write write;         /* first: the completion finds the buffer */
	struct out_buf *next_free;
	size_t cap;
	unsigned char mem[];
};

/* Records of one channel a batch retires once it is written. */
struct batch_run {
	struct adump_chan *chan;
	uint32_t record_count;
};

/* Packed: small files copied whole (header and payload) into a worker buffer, so their
 * staging buffers go back at once, and written to the segment with one write. Their index
 * lines go out after that write has completed. */
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

struct packed_state {
	int index_fd;
	int seg_fd;                             /* the segment being filled */
	uint32_t seg_number;
	uint64_t seg_offset;                    /* next free byte of it */
	int *old_fds;                           /* full segments, closed at worker stop */
	uint32_t old_count;
	char *index_buf;                        /* lines of completed files, not yet written */
	size_t index_len;
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
	bool is_sync_unsupported;               /* the pwrite writer: no background syncs */
	struct adump_chunk_write sync_write;
};

/* Worker-private extras, created with the worker. */
struct worker_ext {
	LZ4F_cctx **free_cctx;                  /* LZ4: contexts not in use */
	unsigned free_cctx_count;
	unsigned cctx_cap;
	struct out_buf *free_out;               /* LZ4: output buffers not in flight */
	unsigned free_out_count;
	unsigned out_count;                     /* allocated */
	size_t out_cap;                         /* bytes per output buffer */
	struct packed_state packed;
	bool takes_small;                       /* packed files: small ones go into batches */
};

/* Per dump file, from its first record to its completion. */
struct file_state {
	struct adump_op_rec *op;
	int fd;                                 /* the file being written, or the segment (packed) */
	bool is_unnamed;                        /* fd is an O_TMPFILE file, linked in at the end */
	bool is_failed;
	bool is_last_seen;
	bool has_stats;
	bool is_direct;                         /* aligned writes, O_DIRECT where supported */
	bool is_whole;                          /* header not written yet: it goes with the payload */
	int error;                              /* why the file failed (adump_file_fail()) */
	uint64_t guard_bytes;                   /* reserved by the disk guard (guard.c) */
	uint32_t pending;                       /* writes submitted, not yet completed */
	uint64_t payload_base;                  /* 8 + header length */
	uint64_t base;                          /* packed: the file's first byte in its segment */
	uint64_t out_offset;                    /* lz4: next byte of the frame */
	uint32_t crc;                           /* packed: CRC32C so far (in file order) */
	uint32_t seg_number;                    /* packed */
	LZ4F_cctx *cctx;                        /* lz4 */
	struct adump_statacc stats;
	/* The file's LAST record, held back while writes are outstanding: a stream sync waits
	 * for it, so a sync never returns before its files are finished. */
	struct adump_chan *held_chan;
	struct adump_rec *held_rec;
	void *header;
	size_t header_len;
	/* Direct I/O: the last partial block, written buffered at the end (write_tail()). */
	uint64_t tail_offset;
	uint32_t tail_len;
	unsigned char *tail;                    /* ADUMP_DIRECT_ALIGN bytes, after the header's */
	struct adump_chunk_write header_write;
	char path[];                            /* final path, without the compression suffix */
};

/* worker.c */
void adump_file_fail(struct adump_session *s, struct file_state *fs, int err, const char *what);
/* The one way a write is queued: counted in writes_in_flight (and in its file's pending).
 * Return: true if in flight; false if it failed at once (req.res holds the error; a file's
 * write also counts a write error and fails the file). */
bool adump_submit_write(struct adump_worker *w, struct adump_chunk_write *cw);

/* lz4out.c: each file one LZ4 frame, compressed on the worker as its chunks pass. */
int adump_lz4_worker_init(struct adump_worker *w, size_t chunk_bytes);
void adump_lz4_worker_fini(struct adump_worker *w);
/* Make @count output buffers available for the next record without waiting.
 * Return: 0, or -EBUSY when they are all in flight: the worker reaps completions and
 * tries again. (The output modules never wait in the worker's place.) */
int adump_lz4_reserve(struct adump_worker *w, unsigned count);
void adump_lz4_begin(struct adump_worker *w, struct file_state *fs);
void adump_lz4_data(struct adump_worker *w, struct file_state *fs, const void *data, size_t len,
		    bool is_last);
void adump_lz4_release(struct adump_worker *w, struct file_state *fs);
void adump_out_buf_put(struct adump_worker *w, struct out_buf *ob);

/* packed.c: per-worker segments and index. */
int adump_packed_worker_init(struct adump_worker *w);
void adump_packed_worker_fini(struct adump_worker *w);
/* Reserve the file's bytes in the current segment (rolling it when full). */
int adump_packed_place(struct adump_worker *w, struct file_state *fs);
/* Queue the file's index entry; called once all its writes completed. Entries go out in
 * batches (adump_packed_flush()), always after the data they describe. */
int adump_packed_index(struct adump_worker *w, struct file_state *fs);
/* Write the queued index lines; the worker calls it before it sleeps and when it stops. */
int adump_packed_flush(struct adump_worker *w);
/* A whole small file in one record: copy it into the open batch, give the staging buffer
 * back at once and retire the record once the batch is written. Return: 0 if the record
 * does not qualify (the caller takes the ordinary path); 1 if it was consumed; -EBUSY if
 * every batch is in flight (nothing of the record taken: the worker reaps and retries). */
int adump_packed_take_small(struct adump_worker *w, struct adump_chan *chan,
			    struct adump_rec *rec);
/* Queue the open batch's write, if there is one. */
void adump_packed_batch_submit(struct adump_worker *w);
/* The batch's write completed with @res (bytes or -errno). */
void adump_packed_batch_done(struct adump_worker *w, struct packed_batch *b, int res);
/* The background fdatasync() of a segment completed with @res (0 or -errno). */
void adump_packed_sync_done(struct adump_worker *w, int res);

#endif
