/* SPDX-License-Identifier: Apache-2.0 */
/* What the host stream suites share: seeded ops of mixed dtypes, shapes and sizes, handing
 * them over, the callback collector, one session configuration per sink, and the checks of
 * what reached disk against the ops' own memory. */
#ifndef ADUMP_TESTS_HOST_FIXTURE_H
#define ADUMP_TESTS_HOST_FIXTURE_H

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/device.h"
#include "adump/host.h"
#include "capture_helpers.h"
#include "common/common.h"
#include "dump_data.pb-c.h"
#include "helpers.h"

#define TIME_DIR "20260301000000"
#define CHUNK_BYTES (64u << 10)
#define MAX_TENSORS 6

/* One op as the test hands it over, with the memory behind its tensors. */
struct h_op {
	char type[32];
	char name[64];
	uint32_t in_count, out_count;
	struct adump_host_tensor t[MAX_TENSORS];
	unsigned char *mem[MAX_TENSORS];
	bool is_nocopy;
};

struct assembled {
	char *name;
	unsigned char *bytes;
	size_t len, cap;
	uint64_t next_offset;
	int last_count;
	int order_errors;
	bool is_ours;                   /* every data pointer inside one of the op's tensors */
	bool is_copied;                 /* a payload chunk outside them */
};

struct collector {
	pthread_mutex_t lock;
	struct assembled files[256];
	size_t count;
	const struct h_op *ops;         /* to tell where data pointers point */
	unsigned op_count;
};

enum sink_case { CASE_FILE, CASE_PACKED, CASE_LZ4, CASE_DIRECT, CASE_CALLBACK, CASE_STATS,
		 CASE_COUNT };

#define SINK_OPS 24

extern _Atomic unsigned release_count;
extern _Atomic unsigned release_bad;
extern _Atomic int release_last_status;
uint64_t max_bytes(void);
void op_make(struct h_op *op, uint64_t *rng, unsigned k, bool is_nocopy);
void op_free(struct h_op *op);
uint64_t op_payload(const struct h_op *op);
void on_release(void *user, uint32_t task_id, int status);
void noop_release(void *user, uint32_t task_id, int status);
int noop_check(void *user, uint32_t task_id);
int op_dump(struct adump_host_stream *hs, const struct h_op *op, uint32_t want_task);
void check_dump(const unsigned char *bytes, size_t len, const struct h_op *op,
		uint32_t stream_id, uint32_t task_id, const char *what);
bool name_ids(const char *base, uint32_t *task, uint32_t *stream);
bool inside_op(const struct h_op *op, const void *p, size_t len);
int collect(const struct adump_chunk *c, void *user);
void collector_free(struct collector *col);
struct adump_config case_config(const char *root, enum sink_case sc, struct collector *col);
void check_dir_files(const char *dir, const char *suffix, const struct h_op *ops,
		     unsigned op_count, uint32_t stream_id);
void check_stats_files(const char *dir, const struct h_op *ops, unsigned op_count);

#endif
