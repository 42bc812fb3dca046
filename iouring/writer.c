/* SPDX-License-Identifier: Apache-2.0 */
/* Backend choice and the common entry points. */
#include <errno.h>
#include <unistd.h>

#include "common/common.h"
#include "iouring/writer_int.h"

int adump_writer_create(const struct adump_writer_cfg *cfg, struct adump_writer **out)
{
	int ret;

	if (cfg->kind == ADUMP_WRITER_PWRITE)
		return adump_pwrite_writer_create(cfg, out);
	ret = ADUMP_TESTPOINT("uring.setup");
	if (ret == 0)
		ret = adump_uring_writer_create(cfg, out);
	if (ret == 0 || cfg->kind == ADUMP_WRITER_URING)
		return ret;
	if (ret == -ENOSYS || ret == -EPERM || ret == -ENOMEM || ret == -EINVAL) {
		adump_log_once(ADUMP_LOG_WARN, "iouring",
			       "io_uring setup failed: %s; falling back to pwrite", adump_strerror(ret));
		return adump_pwrite_writer_create(cfg, out);
	}
	return ret;
}

void adump_writer_destroy(struct adump_writer *w)
{
	if (w)
		w->ops->destroy(w);
}

enum adump_writer_kind adump_writer_backend(const struct adump_writer *w)
{
	return w->kind;
}

bool adump_writer_has_fixed(const struct adump_writer *w)
{
	return w->has_fixed;
}

int adump_writer_write(struct adump_writer *w, struct adump_wreq *req)
{
	req->done = 0;
	req->res = 0;
	return w->ops->write(w, req);
}

int adump_writer_submit(struct adump_writer *w)
{
	return w->ops->submit(w);
}

int adump_writer_wait(struct adump_writer *w, struct adump_wreq **done, unsigned max, bool block,
		      bool *doorbell)
{
	*doorbell = false;
	return w->ops->wait(w, done, max, block, doorbell);
}

unsigned adump_writer_in_flight(const struct adump_writer *w)
{
	return w->in_flight;
}

bool adump_writer_doorbell_drain(int fd)
{
	uint64_t count;

	return fd >= 0 && read(fd, &count, sizeof(count)) == (ssize_t)sizeof(count);
}
