/* SPDX-License-Identifier: Apache-2.0 */
/* iouring/: positional file writes for one worker, behind one interface with two backends:
 * io_uring (liburing; several SQEs per submit, registered staging buffers) and a pwrite
 * fallback that writes byte-identical files. A writer also waits on the worker's doorbell,
 * so a worker sleeps in one place whether it waits for records or for completions. */
#ifndef ADUMP_WRITER_H
#define ADUMP_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "adump/adump.h"

/* One positional write. The writer completes it whole: short writes are resubmitted for the
 * rest and -EAGAIN/-EINTR retried; @res is then the byte count or the first other -errno.
 * The request and its buffer belong to the writer from adump_writer_write() until it is
 * returned by adump_writer_wait(). With @is_datasync it is an fdatasync() of @fd instead
 * (buf, len and offset unused; @res 0 or -errno), run asynchronously (by io_uring, or by the
 * pwrite backend's I/O threads; pwrite without threads refuses it with -EOPNOTSUPP rather
 * than block its worker). */
struct adump_wreq {
	int fd;
	bool is_datasync;
	int buf_index;                          /* registered buffer index, or -1 */
	const void *buf;
	size_t len;
	uint64_t offset;
	size_t done;                            /* writer-private progress */
	int res;
	void *owner;                            /* caller's; untouched */
	struct adump_wreq *next;                /* writer-private */
};

struct adump_writer_cfg {
	enum adump_writer_kind kind;                 /* AUTO, URING or PWRITE */
	unsigned depth;                         /* submission queue entries (io_uring) */
	const struct iovec *fixed;              /* staging buffers to register, or NULL */
	unsigned fixed_count;
	int doorbell_fd;                        /* eventfd to wait on, or -1 */
	unsigned threads;                       /* pwrite: I/O threads (0: write on the owner's
						 * thread, syncs refused) */
	size_t inline_bytes;                    /* pwrite with threads: buffered writes up to
						 * this size are written on the owner's thread */
};

struct adump_writer;

/**
 * adump_writer_create() - a writer for one worker thread.
 * AUTO takes io_uring and falls back to pwrite when setup fails with ENOSYS, EPERM, ENOMEM
 * or EINVAL; URING fails instead. Registering @fixed is best effort (writes then use plain
 * buffers). Return: 0, -errno.
 */
int adump_writer_create(const struct adump_writer_cfg *cfg, struct adump_writer **out);
void adump_writer_destroy(struct adump_writer *w);
enum adump_writer_kind adump_writer_backend(const struct adump_writer *w);
/* Whether registered buffers are in use. */
bool adump_writer_has_fixed(const struct adump_writer *w);

/* Queue @req (submitted by the next adump_writer_submit() or when the queue is full).
 * Return: 0 or -errno (the request is then not queued). Owner thread only. */
int adump_writer_write(struct adump_writer *w, struct adump_wreq *req);
/* Hand queued requests to the kernel. Return: 0 or -errno. */
int adump_writer_submit(struct adump_writer *w);
/**
 * adump_writer_wait() - collect completed requests.
 * @done:     receives up to @max completed requests.
 * @block:    wait until at least one request completes or the doorbell rings.
 * @doorbell: set to true if the doorbell rang (its count is consumed).
 * Return: the number of requests in @done, or -errno.
 */
int adump_writer_wait(struct adump_writer *w, struct adump_wreq **done, unsigned max, bool block,
		      bool *doorbell);
/* Requests handed to the writer and not yet returned. */
unsigned adump_writer_in_flight(const struct adump_writer *w);

/* Probe whether io_uring works here. Return: 0 or the -errno setup failed with. */
int adump_writer_probe_uring(void);

#endif
