/* SPDX-License-Identifier: Apache-2.0 */
/* bench/window*.c, adump_window_bench's parts (issue 32 "Speed and memory"): the options,
 * the step plans and the helpers they share. window.c: the helpers, options and main;
 * window_rate.c: the rates into the window (host streams, the simulated device) against
 * memcpy; window_soak.c: the soak's RSS and a persist against fio. */
#ifndef ADUMP_BENCH_WINDOW_INT_H
#define ADUMP_BENCH_WINDOW_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "bench/bench.h"

#define MIB (1024.0 * 1024.0)
#define GB 1e9
#define ROUNDS_MAX 32
/* The soak's RSS bound past window_bytes + pool_bytes, README "Flight recorder", Memory: the
 * persisting session's pool (64 MiB) and the sessions' own state (measured about 1 MiB; 4
 * allowed). The deviation trigger's history is not used here. */
#define SOAK_SLACK_BYTES (68ull << 20)

struct opts {
	const char *dir;                /* the disk: window sessions, tensor captures, persists */
	const char *shm;                /* tmpfs for the tensor capture context */
	uint64_t step_bytes;
	uint64_t min_bytes, max_bytes;
	uint64_t window_bytes;
	unsigned window_steps;
	unsigned steps;                 /* timed steps per mode and round */
	unsigned rounds;
	unsigned soak_steps;
	uint64_t soak_step_bytes;
	uint64_t pool_bytes;
	bool parts[4];                  /* host, device, soak, persist */
	bool modes[5];                  /* the host modes run (enum host_mode) */
};


/* One step's tensors: sizes log-uniform in [min, max] (whole float32 elements) until the
 * step's bytes, the last one cut to the rest; laid out back to back in one source buffer. */
struct plan {
	uint64_t *sizes;
	uint64_t *offsets;
	unsigned count;
	uint64_t bytes;
};

/* The process's threads' time on a CPU and waiting for one (runnable, another task on it),
 * summed from /proc/self/task/<tid>/schedstat, and the most any one thread ran; in ns. */
struct sched_sum {
	uint64_t run_ns, wait_ns, max_run_ns;
	uint64_t tid_run[64];
	int tids[64];
	unsigned count;
};

enum host_mode {
	MODE_WINDOW,                    /* window mode, copy (the dump call copies) */
	MODE_WINDOW_REF,                /* window mode, zero copy (the worker reads the tensors) */
	MODE_STATS,                     /* content STATS: statistics at hand-over */
	MODE_TENSOR_SHM,                /* content TENSOR into tmpfs */
	MODE_TENSOR_DISK,               /* content TENSOR into the disk, synced */
	MODE_COUNT,
};

extern const char *const adump_wb_mode_names[];         /* for people */
extern const char *const adump_wb_mode_keys[];          /* for --modes */

/* Each step of @p: its tensors from a splitmix64 @seed. Return: 0 or -ENOMEM. */
int adump_wb_plan_make(struct plan *p, uint64_t step, uint64_t lo, uint64_t hi, uint64_t seed);
void adump_wb_plan_free(struct plan *p);
/* Remove @path and everything under it (no link followed); the bytes of the files under it. */
void adump_wb_rm_tree(const char *path);
/* Close @hs and destroy @s (either may be NULL). Return: @ret, or the first error of theirs. */
int adump_wb_close(struct adump_host_stream *hs, struct adump_session *s, int ret);
uint64_t adump_wb_tree_bytes(const char *path);
/* @bytes, page-aligned, written once (resident); NULL without memory. Caller frees. */
void *adump_wb_alloc_touched(uint64_t bytes);
/* The median of @v (sorted in place). */
double adump_wb_median(double *v, unsigned n);
/* The memcpy baseline of @steps steps of @p from @src into @dst; seconds. */
double adump_wb_memcpy_steps(const struct plan *p, const unsigned char *src, unsigned char *dst,
			     uint64_t dst_bytes, unsigned steps);
double adump_wb_memcpy_best(const struct plan *p, const unsigned char *src, unsigned char *dst,
			    uint64_t dst_bytes, unsigned steps);
void adump_wb_sched_read(struct sched_sum *out);
void adump_wb_sched_diff(const struct sched_sum *before, struct sched_sum *after);
/* One step of @p's tensors dumped through @hs (zero copy with @is_ref), their time added to
 * *@dump_seconds. Return: 0 or adump_host_dump_op()'s error. */
int adump_wb_host_step(struct adump_host_stream *hs, const struct plan *p,
		       const unsigned char *src, bool is_ref, double *dump_seconds);
/* The session config of mode @m writing under @path. */
void adump_wb_config(struct adump_config *cfg, const struct opts *o, enum host_mode m,
		     const char *path);
void adump_wb_part_clean(const char *base);

/* The parts: 0 or a negative error (printed); the soak sets *@is_over past its bound. */
int adump_wb_part_host(const struct opts *o);
int adump_wb_part_device(const struct opts *o);
int adump_wb_part_soak(const struct opts *o, bool *is_over);
int adump_wb_part_persist(const struct opts *o);

#endif
