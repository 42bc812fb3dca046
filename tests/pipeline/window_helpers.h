/* SPDX-License-Identifier: Apache-2.0 */
/* What the window mode tests (test_window_*.c, issue 32) share: the workload (a chain of ops
 * per step on host streams, as a plan says), its run in a child process and what came of it;
 * the configurations; trees of files compared byte for byte; trigger.json read. */
#ifndef ADUMP_TEST_WINDOW_HELPERS_H
#define ADUMP_TEST_WINDOW_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "adump/adump.h"
#include "helpers.h"

void adump_testpoint_clock_set(uint64_t start_us);
void adump_testpoint_arm(const char *name, int err, unsigned nth, int sticky);

#define CHUNK 4096u
#define TIME_DIR "run"
#define T0 1000000ull                   /* op timestamps: T0 + step * 1000 + op * 10 */
#define MAX_STEPS 16
#define MAX_OPS 8
#define ELEMS 1500u                     /* op i's tensors: ELEMS + 517 i floats */
#define MAX_MULT 64u                    /* the most tw_elems_mult may be */

/* ---- the workload: a chain of ops per step, on a host stream ------------------------------ */

struct plan {
	unsigned steps, ops;
	bool set_dir;                   /* step<k>/rank0 per step, as adump.torch does */
	bool stable_names;              /* the same op names every step (deviation) */
	unsigned first_step;            /* steps before it dump nothing (a reference) */
	int bad_step, bad_op;           /* -1: none; the op's output (and what follows) holds */
	float bad_value;                /* this at element 5 */
	const double *scales;           /* per step, NULL: 1 */
	int call_step;                  /* adump_session_persist(call_reason) there; -1: none */
	const char *call_reason;
	int signal_step, signal_op;     /* raise(SIGUSR1) after that op; -1: none */
	bool zero_copy;                 /* dumps by reference (release_fn) */
	bool no_last_step;              /* the last step ends with the session, not a step call */
	uint32_t device_id;             /* the host stream's (the second's: + 1) */
	unsigned streams;               /* 0 or 1: one; 2: two, dumping on two threads */
	bool signal_storm;              /* a thread sends SIGUSR1 and asks for persists all along */
	int reject_step, reject_op;     /* that dump zero copy, its check_fn refusing it; -1 */
	const char *fault;              /* armed (adump_testpoint_arm) before fault_step's end */
	int fault_err;
	unsigned fault_nth;
	int fault_step;
};

#define PLAN_INIT { .steps = 6, .ops = 4, .bad_step = -1, .bad_op = -1, .call_step = -1,    \
		    .signal_step = -1, .signal_op = -1, .fault_step = -1, .reject_step = -1,       \
		    .reject_op = -1 }

struct outcome {
	int step_ret[MAX_STEPS];
	struct adump_window_info info[MAX_STEPS];       /* after each step (window mode) */
	struct adump_window_info signal_info;           /* after the signal's persist */
	struct adump_window_info last;                  /* after the steps (window mode) */
	struct adump_stats stats;
	int destroy_ret;
	unsigned released[MAX_STEPS];   /* release_fn calls made by each step's end */
	unsigned released_all;          /* ... by the session's destruction */
};

/* A second input to every op, the same tensor for all of a step's ops (SHARED_ELEMS floats;
 * 0 unless a test sets it): TW_KEYED_STEP, its values and its stats key (adump_host_op's
 * stats_keys) the step's own; TW_KEYED_CONSTANT, one key and the same values in every step;
 * TW_UNKEYED, the step's values without a key. */
enum tw_keyed { TW_NOT_SHARED, TW_KEYED_STEP, TW_KEYED_CONSTANT, TW_UNKEYED };
extern enum tw_keyed tw_keyed;
#define SHARED_ELEMS 4096u
/* Tensor sizes times this (io auto: files past direct_min_bytes); 1 unless a test sets it. */
extern unsigned tw_elems_mult;
/* msprobe's summary of every capture a test makes (MD5: the CRC of each tensor's bytes). */
extern enum adump_summary tw_runs_summary;
/* Called in the child after its run (the callback sink's collector writes its files). */
extern void (*tw_after_run)(void);

/* Elements of op @op's tensors; element @e of tensor @slot at @step (input of op i: slot i,
 * output: slot i + 1). */
uint64_t tw_elems_of(unsigned op);
float tw_value(const struct plan *p, unsigned step, unsigned slot, uint64_t e);

/* Until @s has made @want persists (bounded: a hang fails), its window in @info. */
void tw_wait_persists(struct adump_session *s, unsigned want, struct adump_window_info *info);
/* A release_fn that counts its calls (struct outcome's released). Zero-copy dumps of a plan
 * each have memory of their own, which stays as it was until the run ends. */
void tw_released(void *user, uint32_t task_id, int status);

/* @p run with @cfg in a child process, so that every capture of a test sees the same stream
 * ids (they are unique in a process; a name holds its stream's); what came of it in @o. */
void tw_run(const struct adump_config *cfg, const struct plan *p, struct outcome *o);

/* Every capture's configuration under @root; a window session's, of @steps. */
struct adump_config tw_base_config(const char *root, enum adump_output_format format);
struct adump_config tw_window_config(const char *root, enum adump_output_format format,
				     unsigned steps);

/* ---- trees of files compared ------------------------------------------------------------- */

/* Which files of a tree take part: steps lo..hi only (by directory step<k>/ or by the
 * timestamp ending a CANN name); trigger.json and window-* left out where asked. */
struct filter {
	int lo, hi;                     /* -1: every step */
	bool no_trigger;
	bool no_windows;
	bool no_losses;                 /* adump-losses.jsonl left out */
};

/* The step of a relative path (step<k>/... or a CANN name's timestamp), -1: none. */
int tw_step_of(const char *rel);
bool tw_keep(const struct filter *f, const char *rel);
/* The files below @dir that @f keeps, sorted; free with t_free_list. */
char **tw_list_kept(const char *dir, const struct filter *f, size_t *count);
/* strcmp for qsort of char *. */
int tw_cmp_text(const void *a, const void *b);
bool tw_same_bytes(const char *a, const char *b);
/* The kept files of @a and @b: the same relative paths, the same bytes. Return: how many. */
size_t tw_same_tree(const char *a, const struct filter *fa, const char *b,
		    const struct filter *fb);
/* Every file below @a that @fa keeps is byte for byte the file of the same path below @b
 * (which may hold more). Return: how many. */
size_t tw_same_in(const char *a, const struct filter *fa, const char *b);
bool tw_exists(const char *path);
/* Entries of @root named window-*. */
unsigned tw_window_dirs(const char *root);

/* ---- trigger.json ------------------------------------------------------------------------ */

struct json_object *tw_load_trigger(const char *dir);
/* The window of @step under @root (TIME_DIR): its trigger.json. */
struct json_object *tw_trigger_of(const char *root, unsigned step);
struct json_object *tw_member(struct json_object *o, const char *key);
const char *tw_str_member(struct json_object *o, const char *key);
bool tw_is_null(struct json_object *o, const char *key);
/* trigger.json's steps are @lo..@hi. */
void tw_check_steps(struct json_object *t, unsigned lo, unsigned hi);

/* The test's directory goes, unless ADUMP_TEST_KEEP is set (to look at it). */
void tw_cleanup(char *root);
/* @path renamed to @to, so that a reference capture can be written at @path. */
void tw_set_aside(const char *path, const char *to);

#endif
