/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the fault suites: a multi-stream Add workload that can run without end (to be
 * killed) or to a count, and a check of a dump file that does not use reader/. */
#ifndef ADUMP_TEST_FAULT_HELPERS_H
#define ADUMP_TEST_FAULT_HELPERS_H

#include <stdint.h>

#include "adump/adump.h"

#define T_LOAD_STREAMS_MAX 16

struct t_load {
	unsigned stream_count;
	uint64_t op_count;              /* per stream; 0: launch without end (never returns) */
	uint64_t max_bytes;             /* largest tensor; ADUMP_TEST_MAX_BYTES may lower it */
	uint64_t seed;
	uint64_t launched;              /* out: ops launched, all streams */
};

/**
 * t_load_run() - Adds on @l->stream_count new streams of device 0, each attached to @s, one
 * thread per stream launching ops of log-uniform sizes (4 B to max_bytes, floats) with every
 * tensor dumped; then each stream is synchronised, detached and destroyed.
 * Return: 0, or the first launch, sync or detach error.
 */
int t_load_run(struct adump_session *s, struct t_load *l);

/**
 * t_dump_check_whole() - whether @path is one whole dump file, judged without reader/: the
 * 8-byte length, DumpData parsed by protobuf-c, the size equal to 8 + header + every
 * tensor's size, and @inputs inputs and @outputs outputs.
 * Return: NULL when whole, else a static string saying what is wrong.
 */
const char *t_dump_check_whole(const char *path, size_t inputs, size_t outputs);

/**
 * t_mount_small_fs() - a private mount namespace for this process (mounts made in it do not
 * propagate back), with a 32 MiB tmpfs at @at. Needs CAP_SYS_ADMIN.
 * Return: 0 or -errno.
 */
int t_mount_small_fs(const char *at);

#endif
