/* SPDX-License-Identifier: Apache-2.0 */
/* The pwrite backend: each request is written synchronously when queued and handed back
 * by the next wait. Used when io_uring is unavailable or not wanted. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/common.h"
#include "iouring/writer_int.h"

#define DOORBELL_WAIT_MS 100

struct pwrite_writer {
	struct adump_writer base;
	struct adump_wreq *done_head;
	struct adump_wreq *done_tail;
};

static int pw_write(struct adump_writer *w, struct adump_wreq *req)
{
	struct pwrite_writer *pw = (struct pwrite_writer *)w;
	int injected;

	if (req->is_datasync)
		return -EOPNOTSUPP;
	injected = ADUMP_TESTPOINT("uring.write");
	if (ADUMP_TESTPOINT("uring.slow"))
		usleep(50000);                  /* a slow disk, for tests */

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
	req->next = NULL;
	if (pw->done_tail)
		pw->done_tail->next = req;
	else
		pw->done_head = req;
	pw->done_tail = req;
	w->in_flight++;
	return 0;
}

static int pw_submit(struct adump_writer *w)
{
	return 0;
}

static int pw_wait(struct adump_writer *w, struct adump_wreq **done, unsigned max, bool block,
		   bool *doorbell)
{
	struct pwrite_writer *pw = (struct pwrite_writer *)w;
	unsigned n = 0;

	if (!pw->done_head && block && w->doorbell_fd >= 0) {
		struct pollfd pfd = { .fd = w->doorbell_fd, .events = POLLIN };

		poll(&pfd, 1, DOORBELL_WAIT_MS);
	}
	*doorbell = adump_writer_doorbell_drain(w->doorbell_fd);
	while (pw->done_head && n < max) {
		done[n++] = pw->done_head;
		pw->done_head = pw->done_head->next;
		w->in_flight--;
	}
	if (!pw->done_head)
		pw->done_tail = NULL;
	return (int)n;
}

static void pw_destroy(struct adump_writer *w)
{
	free(w);
}

static const struct adump_writer_ops pwrite_ops = {
	.write = pw_write, .submit = pw_submit, .wait = pw_wait, .destroy = pw_destroy,
};

int adump_pwrite_writer_create(const struct adump_writer_cfg *cfg, struct adump_writer **out)
{
	struct pwrite_writer *pw = calloc(1, sizeof(*pw));

	if (!pw)
		return -ENOMEM;
	pw->base.ops = &pwrite_ops;
	pw->base.kind = ADUMP_WRITER_PWRITE;
	pw->base.doorbell_fd = cfg->doorbell_fd;
	*out = &pw->base;
	return 0;
}
