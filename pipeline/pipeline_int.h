/* SPDX-License-Identifier: Apache-2.0 */
/* pipeline/ private: the session, its workers and the per-file state they keep. */
#ifndef ADUMP_PIPELINE_INT_H
#define ADUMP_PIPELINE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "adump/adump.h"
#include "adump/device.h"
#include "iouring/writer.h"
#include "pipeline/defaults.h"
#include "pipeline/producer.h"
#include "ring/ring.h"

struct adump_session;
struct adump_output_ops;
struct file_state;
struct adump_loss;
struct adump_guard;
struct adump_journal;
struct adump_window;

/* One write in flight: a record's chunk (one per staging buffer, indexed like the pool), a
 * file's header (embedded in the file's state, rec == NULL), or an output module's own write
 * or sync (file == NULL). */
struct adump_chunk_write {
	struct adump_wreq req;
	struct file_state *file;
	struct adump_chan *chan;
	struct adump_rec *rec;                  /* the staging buffer to release, or NULL */
	void *priv;                             /* the output module's (its buffer, its batch) */
};

/* A directory below a session's dump_path, opened through no link, by its path there. */
struct adump_dir_cache {
	char *rel;
	int fd;                                 /* -1: none */
};

struct adump_worker {
	struct adump_session *session;
	unsigned index;
	pthread_t thread;
	bool is_started;
	struct adump_doorbell doorbell;
	struct adump_writer *writer;
	/* Channels this worker consumes; written under the session lock, read by the worker. */
	struct adump_chan *_Atomic chans[ADUMP_STREAM_MAX_LIMIT];
	unsigned chan_count;                    /* session lock */
	/* Detach handshake: the session bumps detach_seq after taking a channel away; the
	 * worker copies it to detach_ack at the top of each loop, where it holds no channel
	 * pointer from before. */
	_Atomic uint64_t detach_seq;
	_Atomic uint64_t detach_ack;
	_Atomic bool should_stop;
	void *out_state;                        /* the output module's (its worker_init op) */
	unsigned spin_misses;                   /* idle spins in a row that found no work */
	/* The directory of the last file it made below dump_path, opened through no link
	 * (adump_session_pubfile_open()): a file in the same directory starts there. */
	struct adump_dir_cache dir;
};

struct stream_slot {
	void *producer;                         /* a device stream, a host stream */
	const struct adump_producer_ops *ops;
	struct adump_port *port;                /* owns the channel */
	unsigned worker;
	bool is_used;
	bool is_detaching;                      /* detach waits outside the session lock */
	bool is_share_touched;                  /* its pool share is resident; kept on detach */
	/* The journal of the producer's own directory (adump_session_producer_dir()), or NULL:
	 * its port uses the session's. */
	struct adump_journal *dir_journal;
};

struct adump_session {
	struct adump_config cfg;
	const struct adump_output_ops *out;     /* chosen from cfg at create (worker_int.h) */
	void *out_session;                      /* the output's session-wide state, or NULL */
	char *dump_path;                        /* absolute */
	char *dir;                              /* <dump_path>/<time_dir> */
	int root_fd;                            /* dump_path (O_PATH), -1 without files */
	size_t chunk_bytes;
	size_t pool_bytes;
	uint32_t buffer_count;
	uint32_t buffers_per_stream;
	void *pool;
	struct iovec *pool_iov;
	struct adump_chunk_write *writes;       /* one per staging buffer */
	enum adump_writer_kind backend;
	enum adump_writer_reason backend_reason;
	int backend_error;                      /* why io_uring was refused, or 0 */

	pthread_mutex_t lock;                   /* attach/detach/workers */
	struct stream_slot slots[ADUMP_STREAM_MAX_LIMIT];
	unsigned worker_target;
	unsigned worker_count;
	struct adump_worker workers[ADUMP_WORKER_MAX];

	_Atomic uint64_t device_dirs;           /* bit i: <dir>/<i> exists */
	_Atomic uint64_t records;
	_Atomic uint64_t bytes;
	_Atomic uint64_t files_completed;
	_Atomic uint64_t files_failed;
	_Atomic uint64_t write_errors;
	_Atomic uint64_t callback_errors;
	_Atomic int64_t writes_in_flight;
	/* Files of the session open now (adump_session_pubfile_open()), and how many it may
	 * hold while writes in flight will give some back (adump_session_fds_full()). */
	_Atomic uint32_t fds_open;
	uint32_t fd_budget;
	_Atomic int first_error;
	/* io AUTO/DIRECT (out_file.c): files of at least direct_min_bytes go O_DIRECT while the
	 * filesystem has not refused it (direct_refused). */
	bool is_auto_direct;
	uint64_t direct_min_bytes;
	_Atomic bool direct_refused;
	_Atomic uint64_t files_direct;
	_Atomic uint64_t files_buffered;
	_Atomic uint64_t direct_fallbacks;
	/* Stream stats survive detach: folded in here. */
	_Atomic uint64_t detached_drops;
	_Atomic uint64_t detached_wait_count;
	_Atomic uint64_t detached_wait_ns;
	struct adump_loss *loss;                /* loss.c: counters by cause, the loss log */
	struct adump_guard *guard;              /* guard.c; NULL: no disk guard */
	struct adump_journal *journal;          /* journal.c; NULL: none for this output */
	/* Directory journals whose every dump was written, emptied and kept in s->dir for the
	 * next directory's (journal.c): moved, not made and removed, a directory a step. */
	pthread_mutex_t journal_spare_lock;
	struct adump_journal *journal_spares[ADUMP_JOURNAL_SPARES];
	unsigned journal_spare_count;
	struct adump_window *window;            /* window mode (window.c), or NULL */
};

int adump_worker_start(struct adump_session *s, struct adump_worker *w, unsigned index);
void adump_worker_stop(struct adump_worker *w);
/* Record the session's first error (the first one wins). */
void adump_session_set_error(struct adump_session *s, int err);
/* @path below the session's dump_path: @path itself if relative, its part after dump_path
 * if absolute and under it ("" for dump_path itself), else NULL (elsewhere). */
const char *adump_session_below(const struct adump_session *s, const char *path);
/* adump_pubfile_open() of the absolute @path of one of the session's files: below dump_path,
 * in its directory opened from dump_path through no link (adump_dir_open_nolink());
 * elsewhere (a directory the caller chose) by its path. @cache (a worker's, or NULL): a file
 * in the directory it holds starts there, another one's directory replaces it, so a link
 * swapped in for a directory after a worker opened it leads nowhere either: the files go on
 * into the directory itself. With a cache the directory is not held while the file is
 * written: publish the file with adump_session_pubfile_close() and the same cache. */
int adump_session_pubfile_open(struct adump_session *s, struct adump_pubfile *pf,
			       const char *path, int flags, unsigned mode,
			       struct adump_dir_cache *cache);
/* adump_pubfile_close() of a file adump_session_pubfile_open() started: its directory found
 * again (from @cache, or through no link) where it is not held. */
int adump_session_pubfile_close(struct adump_session *s, struct adump_pubfile *pf,
				const char *path, int status, const char *keep_suffix,
				struct adump_dir_cache *cache);
void adump_dir_cache_drop(struct adump_dir_cache *c);
/* mkdir -p of the absolute @path of one of the session's directories, below dump_path
 * through no link. */
int adump_session_mkdir(struct adump_session *s, const char *path);
/* A small file of the session, @data written whole and published at once, as
 * adump_session_pubfile_open() makes it. Return 0 or -errno. */
int adump_session_write_file(struct adump_session *s, const char *path, const void *data,
			     size_t len, struct adump_dir_cache *cache);

/* Whether the session's open files take its share of the descriptors: a worker starts no
 * new file then while its writes in flight will close some (worker.c). */
static inline bool adump_session_fds_full(struct adump_session *s)
{
	return atomic_load_explicit(&s->fds_open, memory_order_relaxed) >= s->fd_budget;
}

/* A config's sizes with their defaults (session.c, config.c). */
static inline size_t cfg_chunk(const struct adump_config *cfg)
{
	return cfg->chunk_bytes ? cfg->chunk_bytes : ADUMP_DEFAULT_CHUNK_BYTES;
}

static inline size_t cfg_pool(const struct adump_config *cfg)
{
	return cfg->pool_bytes ? cfg->pool_bytes : ADUMP_DEFAULT_POOL_BYTES;
}

/* O_DIRECT applies: uncompressed tensor dumps to plain files, chunks in whole blocks. */
static inline bool is_direct_capable(const struct adump_config *cfg, size_t chunk)
{
	return cfg->sink == ADUMP_SINK_FILE && cfg->layout == ADUMP_LAYOUT_FILES &&
	       cfg->compress == ADUMP_COMPRESS_NONE && cfg->content == ADUMP_CONTENT_TENSOR &&
	       cfg->format == ADUMP_OUTPUT_CANN && chunk % ADUMP_DIRECT_ALIGN == 0;
}

/* Whether the workers need every tensor's bytes even where a producer computes statistics
 * at hand-over: msprobe's md5 summary is the CRC of the bytes. */
static inline bool needs_worker_bytes(const struct adump_config *cfg)
{
	return cfg->format == ADUMP_OUTPUT_MSPROBE && cfg->summary == ADUMP_SUMMARY_MD5;
}

static inline unsigned cfg_stream_max(const struct adump_config *cfg)
{
	return cfg->stream_max ? cfg->stream_max : ADUMP_DEFAULT_STREAM_MAX;
}

#endif
