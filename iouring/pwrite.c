/* SPDX-License-Identifier: Apache-2.0 */
/* The pwrite backend, for where io_uring is refused or not wanted. With cfg->threads I/O
 * threads it is asynchronous as io_uring is: a request is queued for the threads, written
 * there with pwrite() (fdatasync() for a sync) and handed back by the owner's next wait, so
 * the worker keeps draining rings while the disk works, and several positional writes (of
 * one file or of many) are in the kernel at once, each O_DIRECT one a queued disk request.
 * Small buffered writes are written on the owner's thread either way. With no threads each
 * request is written there when queued (syncs are then refused with -EOPNOTSUPP rather than
 * block it). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/common.h"
#include "iouring/writer_int.h"

#define DOORBELL_WAIT_MS 100

struct pwrite_writer {
	struct adump_writer base;
	/* Completed requests not yet handed back (with threads: under @lock). */
	struct adump_wreq *done_head;
	struct adump_wreq *done_tail;
	/* The I/O threads (thread_count 0: none). */
	unsigned thread_count;
	pthread_t *threads;
	pthread_mutex_t lock;
	pthread_cond_t has_work;
	struct adump_wreq *todo_head;           /* queued for the threads, under @lock */
	struct adump_wreq *todo_tail;
	bool should_stop;                       /* under @lock */
	bool is_owner_waiting;                  /* under @lock: a completion rings @done_fd */
	int done_fd;                            /* eventfd the owner polls beside its doorbell */
	size_t inline_bytes;
};

static void list_append(struct adump_wreq **head, struct adump_wreq **tail, struct adump_wreq *req)
{
	req->next = NULL;
	if (*tail)
		(*tail)->next = req;
	else
		*head = req;
	*tail = req;
}

/* One request, whole: short writes continued, EINTR/EAGAIN retried; req->res set. */
static void request_run(struct adump_wreq *req)
{
	int injected = req->is_datasync ? ADUMP_TESTPOINT("uring.datasync") :
					  ADUMP_TESTPOINT("uring.write");

	if (ADUMP_TESTPOINT("uring.slow"))
		usleep(50000);                  /* a slow disk, for tests */
	if (req->is_datasync) {
		req->res = injected ? injected : fdatasync(req->fd) < 0 ? -errno : 0;
		return;
	}
	while (req->done < req->len && injected == 0) {
		size_t want = req->len - req->done;

		/* Tests shorten a write to check that the rest goes out. */
		if (want > 1 && ADUMP_TESTPOINT("uring.short"))
			want /= 2;
		ssize_t n = pwrite(req->fd, (const char *)req->buf + req->done, want,
				   (off_t)(req->offset + req->done));
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			req->res = -errno;
			break;
		}
		if (n == 0) {
			req->res = -EIO;
			break;
		}
		req->done += (size_t)n;
	}
	if (injected)
		req->res = injected;
	else if (req->res == 0)
		req->res = (int)(req->len > INT32_MAX ? INT32_MAX : req->len);
}

static void *io_thread_main(void *arg)
{
	struct pwrite_writer *pw = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&pw->lock);
	for (;;) {
		struct adump_wreq *req = pw->todo_head;

		if (!req) {
			if (pw->should_stop)
				break;
			pthread_cond_wait(&pw->has_work, &pw->lock);
			continue;
		}
		pw->todo_head = req->next;
		if (!pw->todo_head)
			pw->todo_tail = NULL;
		pthread_mutex_unlock(&pw->lock);
		request_run(req);
		pthread_mutex_lock(&pw->lock);
		list_append(&pw->done_head, &pw->done_tail, req);
		if (pw->is_owner_waiting) {
			pw->is_owner_waiting = false;
			while (write(pw->done_fd, &one, sizeof(one)) < 0 && errno == EINTR)
				;
		}
	}
	pthread_mutex_unlock(&pw->lock);
	return NULL;
}

/* A small buffered write is a copy into the page cache: done here in less time than handing
 * it to a thread and back costs (tiny files are one such write each). O_DIRECT ones wait
 * for the disk and go to the threads whatever their size. */
static bool is_inline(const struct pwrite_writer *pw, const struct adump_wreq *req)
{
	int flags;

	if (req->is_datasync || req->len > pw->inline_bytes)
		return false;
	flags = fcntl(req->fd, F_GETFL);
	return flags >= 0 && !(flags & O_DIRECT);
}

static int pw_write(struct adump_writer *w, struct adump_wreq *req)
{
	struct pwrite_writer *pw = (struct pwrite_writer *)w;

	if (!pw->thread_count) {
		if (req->is_datasync)
			return -EOPNOTSUPP;
		request_run(req);
		list_append(&pw->done_head, &pw->done_tail, req);
	} else if (is_inline(pw, req)) {
		request_run(req);
		pthread_mutex_lock(&pw->lock);
		list_append(&pw->done_head, &pw->done_tail, req);
		pthread_mutex_unlock(&pw->lock);
	} else {
		pthread_mutex_lock(&pw->lock);
		list_append(&pw->todo_head, &pw->todo_tail, req);
		pthread_cond_signal(&pw->has_work);
		pthread_mutex_unlock(&pw->lock);
	}
	w->in_flight++;
	return 0;
}

static int pw_submit(struct adump_writer *w)
{
	(void)w;
	return 0;
}

static unsigned take_done(struct pwrite_writer *pw, struct adump_wreq **done, unsigned max)
{
	unsigned n = 0;

	while (pw->done_head && n < max) {
		done[n++] = pw->done_head;
		pw->done_head = pw->done_head->next;
	}
	if (!pw->done_head)
		pw->done_tail = NULL;
	return n;
}

static int pw_wait(struct adump_writer *w, struct adump_wreq **done, unsigned max, bool block,
		   bool *doorbell)
{
	struct pwrite_writer *pw = (struct pwrite_writer *)w;
	struct pollfd pfd[2];
	unsigned n, nfds = 0;
	bool has_done;

	if (pw->thread_count) {
		pthread_mutex_lock(&pw->lock);
		has_done = pw->done_head != NULL;
		/* Announced under the lock: a thread completing after this rings done_fd. */
		pw->is_owner_waiting = !has_done && block && w->in_flight;
		if (pw->is_owner_waiting)
			pfd[nfds++] = (struct pollfd){ .fd = pw->done_fd, .events = POLLIN };
		pthread_mutex_unlock(&pw->lock);
	} else {
		has_done = pw->done_head != NULL;
	}
	if (block && !has_done && w->doorbell_fd >= 0)
		pfd[nfds++] = (struct pollfd){ .fd = w->doorbell_fd, .events = POLLIN };
	if (nfds)
		poll(pfd, nfds, DOORBELL_WAIT_MS);
	*doorbell = adump_writer_doorbell_drain(w->doorbell_fd);
	if (!pw->thread_count) {
		n = take_done(pw, done, max);
	} else {
		pthread_mutex_lock(&pw->lock);
		pw->is_owner_waiting = false;
		n = take_done(pw, done, max);
		pthread_mutex_unlock(&pw->lock);
		(void)adump_writer_doorbell_drain(pw->done_fd);
	}
	w->in_flight -= n;
	return (int)n;
}

static void pw_destroy(struct adump_writer *w)
{
	struct pwrite_writer *pw = (struct pwrite_writer *)w;

	if (pw->thread_count) {
		pthread_mutex_lock(&pw->lock);
		pw->should_stop = true;
		pthread_cond_broadcast(&pw->has_work);
		pthread_mutex_unlock(&pw->lock);
		for (unsigned i = 0; i < pw->thread_count; i++)
			pthread_join(pw->threads[i], NULL);
		pthread_cond_destroy(&pw->has_work);
		pthread_mutex_destroy(&pw->lock);
		close(pw->done_fd);
	}
	free(pw->threads);
	free(pw);
}

static const struct adump_writer_ops pwrite_ops = {
	.write = pw_write, .submit = pw_submit, .wait = pw_wait, .destroy = pw_destroy,
};

int adump_pwrite_writer_create(const struct adump_writer_cfg *cfg, struct adump_writer **out)
{
	struct pwrite_writer *pw = calloc(1, sizeof(*pw));
	int ret;

	if (!pw)
		return -ENOMEM;
	pw->base.ops = &pwrite_ops;
	pw->base.kind = ADUMP_WRITER_PWRITE;
	pw->base.doorbell_fd = cfg->doorbell_fd;
	pw->inline_bytes = cfg->inline_bytes;
	if (!cfg->threads) {
		*out = &pw->base;
		return 0;
	}
	ret = -ENOMEM;
	pw->threads = calloc(cfg->threads, sizeof(*pw->threads));
	if (!pw->threads)
		goto err;
	pw->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (pw->done_fd < 0) {
		ret = -errno;
		goto err;
	}
	pthread_mutex_init(&pw->lock, NULL);
	pthread_cond_init(&pw->has_work, NULL);
	for (unsigned i = 0; i < cfg->threads; i++) {
		ret = -pthread_create(&pw->threads[i], NULL, io_thread_main, pw);
		if (ret < 0)
			break;
		pw->thread_count++;
	}
	if (pw->thread_count == 0) {
		pthread_cond_destroy(&pw->has_work);
		pthread_mutex_destroy(&pw->lock);
		close(pw->done_fd);
		goto err;
	}
	/* Fewer threads than asked still write: as many as started. */
	*out = &pw->base;
	return 0;
err:
	free(pw->threads);
	free(pw);
	return ret;
}
