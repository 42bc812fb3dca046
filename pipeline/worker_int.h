/* SPDX-License-Identifier: Apache-2.0 */
/* pipeline/ private: the output stage. A session writes through one output module (struct
 * adump_output_ops), chosen when it is created; the worker drains records and hands them to
 * it, and output.c keeps what every module shares: a file's state from its first record to
 * its completion, naming, opening, failing and publishing files. */
#ifndef ADUMP_WORKER_INT_H
#define ADUMP_WORKER_INT_H

#include <lz4frame.h>

#include "pipeline/pipeline_int.h"
#include "pipeline/stats.h"

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
	bool is_fallback;                       /* meant for O_DIRECT, written buffered */
	bool is_rejected;                       /* failed by the producer's check */
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
	/* Direct I/O: the last partial block, written buffered at the end (out_file.c). */
	uint64_t tail_offset;
	uint32_t tail_len;
	unsigned char *tail;                    /* ADUMP_DIRECT_ALIGN bytes, after the header's */
	struct adump_chunk_write header_write;
	void *out_file;                         /* the output module's per-file state, or NULL */
	void *window_entry;                     /* window mode: where its payload is held */
	char path[];                            /* final path, without the compression suffix */
};

/*
 * struct adump_output_ops - one output kind: what becomes of a session's records.
 *
 * The session picks the table once (adump_output_select()). Every op but @worker_init and
 * @worker_fini runs on the thread of the worker that owns the file and w->out_state. No op
 * waits for completions or calls into the worker's loop: an op that cannot proceed says so
 * by its return value and the worker reaps completions and calls it again. Every write an op
 * queues goes through adump_submit_write(). NULL ops are skipped.
 *
 * @worker_init: a worker starts (under the session lock, before its thread). Sets up
 *      w->out_state. Return 0 or -errno: the worker does not start. @worker_fini undoes
 *      it at worker stop, after the thread has joined; also after a failed @worker_init.
 * @record_prepare: every record, first, before it is counted. Makes what the record needs
 *      available without waiting, or consumes it whole. Return 0: the ordinary path follows
 *      (@file_begin for a file's first record, then @record); 1: consumed (the op retires
 *      the record); -EBUSY: nothing taken, call again once completions came back.
 * @file_begin: a file's first record, once output.c has its state and path (the header not
 *      built: adump_file_header() does it). @is_whole: this record holds the whole payload
 *      and fits a staging buffer. Failure goes through adump_file_fail(); the file's later
 *      records then only retire.
 * @record: a record of a file that has not failed. The op writes, feeds or delivers it
 *      and ends with adump_record_done() now, or once the write completes.
 * @write_failed: a file write queued by this module failed (req->res < 0), before the
 *      worker fails the file: the module may redo it another way and set req->res to 0.
 * @write_done: a file write queued by this module completed (the worker has counted it and
 *      failed the file on error); before the record or file is done with it.
 * @file_end: everything of the file has completed (adump_file_finish()): publish it, index
 *      it, or fail it; release per-file resources. Called for failed files too.
 * @completion: a write or sync of the module's own (cw->file == NULL) completed.
 * @has_held: the module holds back records for more work (an open batch): the worker then
 *      neither sleeps nor stops, and calls @submit_held once the rings are empty.
 * @idle: the worker is about to sleep: write what was deferred (index lines).
 * @session_init: the session is created (its directory made, no worker yet): sets up
 *      s->out_session. Return 0 or -errno: the session is not created.
 * @session_fini: the session ends (every worker stopped), or its creation failed after
 *      @session_init: writes what is left and frees s->out_session.
 * @dir_done: a directory will get no more of the dumps written so far from one producer
 *      (adump_session_dir_done(); @dir NULL: every directory). Any thread but a worker's.
 */
struct adump_output_ops {
	const char *name;
	int (*worker_init)(struct adump_worker *w);
	void (*worker_fini)(struct adump_worker *w);
	int (*record_prepare)(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec);
	void (*file_begin)(struct adump_worker *w, struct file_state *fs, bool is_whole);
	void (*record)(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
		       struct file_state *fs);
	void (*write_failed)(struct adump_worker *w, struct adump_chunk_write *cw);
	void (*write_done)(struct adump_worker *w, struct adump_chunk_write *cw);
	void (*file_end)(struct adump_worker *w, struct file_state *fs);
	void (*completion)(struct adump_worker *w, struct adump_chunk_write *cw);
	bool (*has_held)(const struct adump_worker *w);
	void (*submit_held)(struct adump_worker *w);
	void (*idle)(struct adump_worker *w);
	int (*session_init)(struct adump_session *s);
	void (*session_fini)(struct adump_session *s);
	void (*dir_done)(struct adump_session *s, const char *dir);
};

/* The output modules: out_file.c (buffered and O_DIRECT), out_lz4.c, out_packed.c,
 * out_callback.c, out_stats.c (to files or to the callback), out_msprobe.c. */
extern const struct adump_output_ops adump_out_file;
extern const struct adump_output_ops adump_out_lz4;
extern const struct adump_output_ops adump_out_packed;
extern const struct adump_output_ops adump_out_callback;
extern const struct adump_output_ops adump_out_stats_file;
extern const struct adump_output_ops adump_out_stats_callback;
extern const struct adump_output_ops adump_out_msprobe;

/* output.c: the table for a checked config (adump_config_check() allows no other mix). */
const struct adump_output_ops *adump_output_select(const struct adump_config *cfg);

/* output.c: the file's state for its first record (op->priv is set by the caller), its path
 * built and s->out->file_begin() called. Return: NULL only without memory. */
struct file_state *adump_file_open(struct adump_worker *w, struct adump_op_rec *op, bool is_whole);
/* A record is done (written, delivered or skipped): finish its file if nothing of it is
 * outstanding any more, then give the buffer back. */
void adump_record_done(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
		       struct file_state *fs);
/* Everything of the file has completed: s->out->file_end(), count it, free its state. */
void adump_file_finish(struct adump_worker *w, struct file_state *fs);
/* The one funnel for a failed file: marks it, records the session's error, logs once. */
void adump_file_fail(struct adump_session *s, struct file_state *fs, int err, const char *what);
/* Build (or take over from the producer) the file's DumpData header; its size now known, the
 * disk guard admits the file or skips it. Return 0 or -errno (the file has failed;
 * -ADUMP_ERR_DISK_GUARD: skipped, counted as a disk_guard loss). */
int adump_file_header(struct adump_session *s, struct file_state *fs);
/* The one place a dump file is created, at fs->path + @suffix, O_DIRECT if fs->is_direct
 * (buffered where the filesystem refuses it). Return 0 or -errno (the file has failed). */
int adump_file_create(struct adump_worker *w, struct file_state *fs, const char *suffix);
/* Close fs->fd and publish it as fs->path + @suffix, or as .failed if the file failed. */
void adump_file_publish(struct adump_worker *w, struct file_state *fs, const char *suffix);
/* <dir>/<device_id> exists. Return 0 or -errno. */
int adump_device_dir_ensure(struct adump_session *s, uint32_t device_id);
/* Hand one chunk to the session's callback (counted in bytes; errors counted, logged once). */
void adump_deliver(struct adump_session *s, const char *name, uint64_t offset, const void *data,
		   size_t len, bool is_last);
/* Queue the file's header on its own, at fs->base. */
void adump_file_header_submit(struct adump_worker *w, struct file_state *fs);
/* Queue @rec's data at fs->base + its place in the file; the record is done on completion
 * (or now, if the write failed at once). */
void adump_record_submit(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
			 struct file_state *fs);

/* The registered buffer a write of @rec's data may use: none for the producer's memory. */
static inline int adump_rec_buf_index(const struct adump_rec *rec)
{
	return rec->ext ? -1 : (int)rec->index;
}

/* worker.c */
/* The one way a write is queued: counted in writes_in_flight (and in its file's pending).
 * Return: true if in flight; false if it failed at once (req.res holds the error; a file's
 * write also counts a write error and fails the file). */
bool adump_submit_write(struct adump_worker *w, struct adump_chunk_write *cw);
/* Every ring of the worker is empty (a snapshot; for an output deciding whether to wait
 * for more work). */
bool adump_worker_is_drained(struct adump_worker *w);

#endif
