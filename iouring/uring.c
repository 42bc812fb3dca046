/* SPDX-License-Identifier: Apache-2.0 */
/* The io_uring backend (liburing): writes at exact offsets, several SQEs per submit, the
 * staging pool registered as fixed buffers where the kernel allows, and the worker's doorbell
 * eventfd read through the same ring so one wait covers records and completions. */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "iouring/writer_int.h"

#define DOORBELL_TAG 1u                 /* user_data of the doorbell read; requests are pointers */
#define WAIT_SLICE_NS 100000000u        /* 100 ms: a lost wake-up costs at most this */

struct uring_writer {
	struct adump_writer base;
	struct io_uring ring;
	unsigned queued;                        /* prepared, not yet submitted */
	bool is_doorbell_armed;
	uint64_t doorbell_count;                /* the doorbell read's target */
};

static struct io_uring_sqe *get_sqe(struct uring_writer *uw)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&uw->ring);

	if (!sqe) {
		/* The submission queue is full: hand it to the kernel and take a fresh entry. */
		io_uring_submit(&uw->ring);
		uw->queued = 0;
		sqe = io_uring_get_sqe(&uw->ring);
	}
	return sqe;
}

static int prep_rest(struct uring_writer *uw, struct adump_wreq *req)
{
	struct io_uring_sqe *sqe = get_sqe(uw);
	const char *buf = (const char *)req->buf + req->done;
	unsigned len = (unsigned)(req->len - req->done > (1u << 30) ? (1u << 30) : req->len - req->done);
	uint64_t off = req->offset + req->done;

	if (!sqe)
		return -EBUSY;
	if (req->is_datasync)
		io_uring_prep_fsync(sqe, req->fd, IORING_FSYNC_DATASYNC);
	else if (req->buf_index >= 0 && uw->base.has_fixed)
		io_uring_prep_write_fixed(sqe, req->fd, buf, len, off, req->buf_index);
	else
		io_uring_prep_write(sqe, req->fd, buf, len, off);
	io_uring_sqe_set_data(sqe, req);
	uw->queued++;
	return 0;
}

static int ur_write(struct adump_writer *w, struct adump_wreq *req)
{
	struct uring_writer *uw = (struct uring_writer *)w;
	int ret = prep_rest(uw, req);

	if (ret == 0)
		w->in_flight++;
	return ret;
}

static int ur_submit(struct adump_writer *w)
{
	struct uring_writer *uw = (struct uring_writer *)w;
	int ret;

	if (!uw->queued)
		return 0;
	ret = io_uring_submit(&uw->ring);
	if (ret < 0 && ret != -EAGAIN && ret != -EINTR && ret != -EBUSY)
		return ret;
	if (ret >= 0)
		uw->queued = 0;
	return 0;
}

static void arm_doorbell(struct uring_writer *uw)
{
	struct io_uring_sqe *sqe;

	if (uw->is_doorbell_armed || uw->base.doorbell_fd < 0)
		return;
	sqe = get_sqe(uw);
	if (!sqe)
		return;
	io_uring_prep_read(sqe, uw->base.doorbell_fd, &uw->doorbell_count, sizeof(uw->doorbell_count), 0);
	io_uring_sqe_set_data64(sqe, DOORBELL_TAG);
	uw->queued++;
	uw->is_doorbell_armed = true;
}

/* One completion of a request: done, or resubmitted for the rest. */
static bool complete_one(struct uring_writer *uw, struct adump_wreq *req, int res)
{
	int injected = req->is_datasync ? ADUMP_TESTPOINT("uring.datasync") :
					  ADUMP_TESTPOINT("uring.write");

	/* Tests make the disk slow: every completion 50 ms late. */
	if (ADUMP_TESTPOINT("uring.slow"))
		usleep(50000);

	if (injected)
		res = injected;
	/* Tests make the kernel's answer a short write or a transient error. */
	else if (res > 1 && ADUMP_TESTPOINT("uring.short"))
		res /= 2;
	else if (res > 0 && ADUMP_TESTPOINT("uring.eagain"))
		res = -EAGAIN;
	if (res == -EAGAIN || res == -EINTR) {
		if (prep_rest(uw, req) == 0)
			return false;
		res = -EBUSY;
	}
	if (res > 0) {
		req->done += (size_t)res;
		if (req->done < req->len) {
			/* A short write: the rest goes out again at its own offset. */
			if (prep_rest(uw, req) == 0)
				return false;
			res = -EBUSY;
		}
	} else if (res == 0 && req->done < req->len) {
		res = -EIO;                     /* no progress: never loop on it */
	}
	req->res = res < 0 ? res : (int)(req->len > INT32_MAX ? INT32_MAX : req->len);
	return true;
}

static int ur_wait(struct adump_writer *w, struct adump_wreq **done, unsigned max, bool block,
		   bool *doorbell)
{
	struct uring_writer *uw = (struct uring_writer *)w;
	struct io_uring_cqe *cqe;
	unsigned n = 0;
	int ret;

	if (block) {
		struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = WAIT_SLICE_NS };

		arm_doorbell(uw);
		ret = io_uring_submit_and_wait_timeout(&uw->ring, &cqe, 1, &ts, NULL);
		if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			return ret;
		uw->queued = 0;
	}
	while (n < max && io_uring_peek_cqe(&uw->ring, &cqe) == 0) {
		uint64_t tag = io_uring_cqe_get_data64(cqe);
		int res = cqe->res;

		io_uring_cqe_seen(&uw->ring, cqe);
		if (tag == DOORBELL_TAG) {
			uw->is_doorbell_armed = false;
			*doorbell = true;
			continue;
		}
		struct adump_wreq *req = (struct adump_wreq *)(uintptr_t)tag;
		if (complete_one(uw, req, res)) {
			done[n++] = req;
			w->in_flight--;
		}
	}
	if (uw->queued)
		ur_submit(w);
	return (int)n;
}

static void ur_destroy(struct adump_writer *w)
{
	struct uring_writer *uw = (struct uring_writer *)w;

	io_uring_queue_exit(&uw->ring);
	free(uw);
}

static const struct adump_writer_ops uring_ops = {
	.write = ur_write, .submit = ur_submit, .wait = ur_wait, .destroy = ur_destroy,
};

int adump_uring_writer_create(const struct adump_writer_cfg *cfg, struct adump_writer **out)
{
	struct io_uring_params params;
	struct uring_writer *uw = calloc(1, sizeof(*uw));
	unsigned depth = cfg->depth ? cfg->depth : 256;
	int ret;

	if (!uw)
		return -ENOMEM;
	memset(&params, 0, sizeof(params));
	params.flags = IORING_SETUP_CQSIZE;
	params.cq_entries = depth * 8;
	ret = io_uring_queue_init_params(depth, &uw->ring, &params);
	if (ret < 0) {
		free(uw);
		return ret;
	}
	uw->base.ops = &uring_ops;
	uw->base.kind = ADUMP_WRITER_URING;
	uw->base.doorbell_fd = cfg->doorbell_fd;
	if (cfg->fixed && cfg->fixed_count && cfg->fixed_count <= 16384) {
		ret = io_uring_register_buffers(&uw->ring, cfg->fixed, cfg->fixed_count);
		if (ret == 0)
			uw->base.has_fixed = true;
		else
			adump_log_once(ADUMP_LOG_INFO, "iouring",
				       "registering staging buffers failed: %s; using plain writes",
				       adump_strerror(ret));
	}
	*out = &uw->base;
	return 0;
}

int adump_writer_probe_uring(void)
{
	struct io_uring ring;
	int ret = ADUMP_TESTPOINT("uring.setup");

	if (ret)
		return ret;
	ret = io_uring_queue_init(4, &ring, 0);
	if (ret == 0)
		io_uring_queue_exit(&ring);
	return ret;
}
