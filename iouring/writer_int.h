/* SPDX-License-Identifier: Apache-2.0 */
/* iouring/ private: the backend ops table. */
#ifndef ADUMP_WRITER_INT_H
#define ADUMP_WRITER_INT_H

#include "iouring/writer.h"

struct adump_writer_ops {
	int (*write)(struct adump_writer *w, struct adump_wreq *req);
	int (*submit)(struct adump_writer *w);
	int (*wait)(struct adump_writer *w, struct adump_wreq **done, unsigned max, bool block,
		    bool *doorbell);
	void (*destroy)(struct adump_writer *w);
};

struct adump_writer {
	const struct adump_writer_ops *ops;
	enum adump_writer_kind kind;
	unsigned in_flight;
	bool has_fixed;
	int doorbell_fd;
};

int adump_uring_writer_create(const struct adump_writer_cfg *cfg, struct adump_writer **out);
int adump_pwrite_writer_create(const struct adump_writer_cfg *cfg, struct adump_writer **out);
/* Read the doorbell eventfd without blocking; true if it had rung. */
bool adump_writer_doorbell_drain(int fd);

#endif
