/* SPDX-License-Identifier: Apache-2.0 */
/* End-to-end helpers: run a seeded Add workload on the simulated NPU through a session, then
 * check the dump files it produced byte by byte against the sources. */
#ifndef ADUMP_TEST_CAPTURE_HELPERS_H
#define ADUMP_TEST_CAPTURE_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/adump.h"
#include "adump/device.h"
#include "helpers.h"

struct t_op {
	int32_t dtype;
	uint64_t count;                         /* elements per tensor */
	uint64_t offset;                        /* byte offset of self/other in the stream's inputs */
	double alpha;
	uint32_t task_id;                       /* filled from the dump file */
};

struct t_workload {
	unsigned stream_count;
	unsigned op_count;                      /* per stream */
	uint64_t min_bytes, max_bytes;          /* tensor sizes, log-uniform */
	uint64_t chunk_bytes;                   /* sizes are never a multiple of this */
	uint64_t seed;
	/* With keep_memory, device memory survives between runs, so a second run records the
	 * same device addresses in its headers and produces byte-identical files. */
	bool keep_memory;
	struct adump_dev *dev;
	void *dev_mem[16][3];
	/* Filled by t_workload_run(). */
	uint32_t stream_ids[16];
	struct t_op *ops;                       /* stream_count * op_count */
	unsigned char *inputs[16][2];           /* host copies of self and other, max_bytes each */
	int sync_errors[16];
};

/* Runs the workload on device 0 with @s attached to every stream (sequential launches per
 * stream, streams in parallel), syncs, detaches. Returns 0 or the first error. */
int t_workload_run(struct adump_session *s, struct t_workload *w);
void t_workload_free(struct t_workload *w);

/* One parsed dump file. */
struct t_dump {
	char *path;
	unsigned char *bytes;
	size_t len;
	void *header;                           /* Toolkit__Dumpdata__DumpData * */
	uint64_t payload_base;
};

/* Reads and parses @path; ck_assert on any malformation. */
void t_dump_load(const char *path, struct t_dump *d);
void t_dump_free(struct t_dump *d);

/* Checks a finished capture directory (<dir>/0/...): exact file count, no .part/.failed, every
 * header and payload right, out == self + alpha*other. */
void t_check_capture(const char *dir, struct t_workload *w);

/* All regular files below @dir as sorted relative paths; caller frees with t_free_list. */
char **t_list_files(const char *dir, size_t *count);
void t_free_list(char **list, size_t count);

#endif
