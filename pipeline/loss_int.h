/* SPDX-License-Identifier: Apache-2.0 */
/* pipeline/ private: loss accounting (loss.c) and the disk guard (guard.c). Every lost
 * tensor is counted by cause, per session and per stream, and leaves one JSON line in
 * <dir>/ADUMP_LOSS_LOG_NAME; the workers write it, never a producer. */
#ifndef ADUMP_LOSS_INT_H
#define ADUMP_LOSS_INT_H

#include <stdint.h>

#include "adump/adump.h"

/* Not error codes anyone returns: what the output passes to adump_loss_file() for a file the
 * producer's check refused (cause changed_before_written), and a window for a dump it could
 * not hold (window_full). */
#define ADUMP_LOSS_ERR_REJECTED (-(ADUMP_ERR_DISK_GUARD + 256))
#define ADUMP_LOSS_ERR_WINDOW_FULL (-(ADUMP_ERR_DISK_GUARD + 257))

struct adump_session;
struct adump_op_rec;
struct file_state;
struct adump_loss;
struct adump_guard;

/**
 * adump_loss_create() - the loss book of a session writing under @dir (NULL: callback sink,
 * counters only). For the file sink, a little space is reserved at once in an unnamed file,
 * so that the log can still be written once the disk is full; the file gets its name with
 * the first loss.
 * Return: 0 or -ENOMEM.
 */
int adump_loss_create(const char *dir, struct adump_loss **out);
/* Releases the reserve; NULL does nothing. */
void adump_loss_destroy(struct adump_loss *l);

/**
 * adump_loss_file() - a dump file failed with @err (its first failure): count every tensor of
 * @op as lost and write their lines. @path is the file's path (without suffix). Any worker.
 */
void adump_loss_file(struct adump_session *s, const struct adump_op_rec *op, const char *path,
		     int err);

/**
 * adump_loss_unindexed() - a packed file written whole but whose index line was lost (the
 * index write failed with @err): one loss, the file's, named by @file ("<device_id>/<file
 * name>", the line's first field), its op and stream read from the name. Any worker.
 */
void adump_loss_unindexed(struct adump_session *s, const char *file, int err);

/* A file ends (worker, adump_file_finish()): its disk guard reserve goes back and, if it failed,
 * its losses are recorded. */
void adump_loss_file_end(struct adump_session *s, struct file_state *fs);

/* A channel goes (detach): what it counted itself (@st, from adump_port_stats()) joins the
 * book's counts. */
void adump_loss_stream_detached(struct adump_loss *l, const struct adump_stream_stats *st);

/* The loss counters into a stats snapshot: out->losses[], out->drops, and each filled
 * out->streams[i].losses[] and .drops. */
void adump_loss_stats(struct adump_loss *l, struct adump_stats *out);

/**
 * adump_guard_create() - the disk guard of a file-sink session writing under @dir, from
 * cfg->min_free_bytes and cfg->max_bytes. *out is NULL when the guard has nothing to do.
 * Return: 0, -ENOMEM, or -errno from statvfs().
 */
int adump_guard_create(const struct adump_config *cfg, const char *dir, struct adump_guard **out);
void adump_guard_destroy(struct adump_guard *g);

/**
 * adump_guard_file_admit() - may the file @fs start? Its size is the header and payload.
 * Return: 0 (its bytes are reserved until adump_guard_file_done()), or -ADUMP_ERR_DISK_GUARD
 * after failing the file (cause ADUMP_LOSS_DISK_GUARD). A worker, at the file's start.
 */
int adump_guard_file_admit(struct adump_session *s, struct file_state *fs);
/* The file @fs ended (whatever became of it): its reserve goes back. */
void adump_guard_file_done(struct adump_session *s, struct file_state *fs);
/* The same by bytes (packed batches of small files): 0 if @bytes may be written, reserved
 * until adump_guard_bytes_done(); -ADUMP_ERR_DISK_GUARD if not (nothing else is done). */
int adump_guard_bytes_admit(struct adump_session *s, uint64_t bytes);
void adump_guard_bytes_done(struct adump_session *s, uint64_t bytes);

#endif
