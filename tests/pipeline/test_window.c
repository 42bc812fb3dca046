/* SPDX-License-Identifier: Apache-2.0 */
/* Window mode, the flight recorder (issue 32; pipeline/window*.c): a window session writes
 * the statistics a content=STATS session writes, byte for byte, and on a trigger a window
 * that is byte for byte what a tensor session writes for the held steps (host streams in
 * CANN and msprobe formats, with and without a directory per step, copied or zero copy, one
 * or two streams, io auto; the simulated device); each trigger and what trigger.json says
 * of it (SIGUSR1 mid-step, while a file is written, with two sessions, on two threads); the
 * persist limit and nothing written twice; eviction, window_full and dumps_not_listed; a disk
 * error and a refused dump while a window is written; the configurations refused; the
 * callback sink; `adump verify`, `scan` and `compare` on a persisted window. Every capture
 * runs in a child process, so that stream ids (in file names) are the same in each. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "adump/adump.h"
#include "adump/device.h"
#include "adump/host.h"
#include "capture_helpers.h"
#include "helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif

void adump_testpoint_clock_set(uint64_t start_us);
void adump_testpoint_arm(const char *name, int err, unsigned nth, int sticky);

#define CHUNK 4096u
#define TIME_DIR "run"
#define T0 1000000ull                   /* op timestamps: T0 + step * 1000 + op * 10 */
#define MAX_STEPS 16
#define MAX_OPS 8
#define ELEMS 1500u                     /* op i's tensors: ELEMS + 517 i floats */

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
};

/* Tensor sizes times this (io auto: files past direct_min_bytes). */
#define MAX_MULT 64u
static unsigned elems_mult = 1;

static uint64_t elems_of(unsigned op)
{
	return (ELEMS + 517u * op) * (uint64_t)elems_mult;
}

static float value(const struct plan *p, unsigned step, unsigned slot, uint64_t e)
{
	double scale = p->scales ? p->scales[step] : 1.0;

	return (float)(scale * ((double)((e * 7 + slot * 13 + step * 3) % 101) / 50.0 - 1.0));
}

/* The tensors of op @op at @step: input = the previous op's output. */
static void fill(const struct plan *p, unsigned step, unsigned op, float *in, float *out)
{
	uint64_t n = elems_of(op);

	for (uint64_t e = 0; e < n; e++) {
		in[e] = value(p, step, op, e);
		out[e] = value(p, step, op + 1, e);
	}
	if ((int)step == p->bad_step && p->bad_op >= 0) {
		if ((int)op > p->bad_op)
			in[5] = p->bad_value;
		if ((int)op >= p->bad_op)
			out[5] = p->bad_value;
	}
}

static void op_name(const struct plan *p, unsigned step, unsigned op, char *dst, size_t cap)
{
	if (p->stable_names)
		snprintf(dst, cap, "layer%u", op);
	else
		snprintf(dst, cap, "Functional.layer%u.%u.forward", op, step);
}

static void wait_persists(struct adump_session *s, unsigned want, struct adump_window_info *info)
{
	for (int i = 0; i < 20000; i++) {       /* a bound on a hang, not a timing check */
		ck_assert_int_eq(adump_session_window(s, info), 0);
		if (info->persists >= want)
			return;
		usleep(1000);
	}
	ck_abort_msg("the signal's persist did not happen");
}

static void released(void *user, uint32_t task_id, int status)
{
	(void)user;
	(void)task_id;
	(void)status;
}

/* A zero-copy dump whose memory changed before it was written (the producer's check). */
static int refuse(void *user, uint32_t task_id)
{
	(void)user;
	(void)task_id;
	return -ESTALE;
}

/* One stream's share of a run: stream 0 holds the plan's bad value, signal and refusal. */
struct stream_run {
	const struct plan *p;
	struct adump_session *s;
	struct adump_host_stream *hs;
	struct outcome *o;
	unsigned index;
	unsigned step;
	float *in, *out;
};

static void dump_step(struct stream_run *r)
{
	const struct plan *p = r->p;
	unsigned k = r->step;
	bool is_first = r->index == 0;

	if (p->streams > 1)
		ck_assert_int_eq(adump_host_stream_adopt(r->hs), 0);
	if (p->set_dir) {
		char dir[64];

		snprintf(dir, sizeof(dir), "step%u/rank%u", k, r->index);
		ck_assert_int_eq(adump_host_stream_set_dir(r->hs, dir), 0);
	}
	for (unsigned i = 0; k >= p->first_step && i < p->ops; i++) {
		struct adump_host_tensor ti = { .data = r->in, .bytes = elems_of(i) * 4,
						.dtype = ADUMP_DT_FLOAT, .dim_count = 1,
						.dims = { (int64_t)elems_of(i) } };
		struct adump_host_tensor to = ti;
		struct adump_host_op op = ADUMP_HOST_OP_INIT;
		char name[64], dfx[512];
		struct adump_attr attr = { .name = "step_op", .value = name };
		bool is_rejected = is_first && (int)k == p->reject_step && (int)i == p->reject_op;
		struct plan q = *p;

		if (!is_first)
			q.bad_step = -1;
		to.data = r->out;
		fill(&q, k, i, r->in, r->out);
		op_name(p, k, i, name, sizeof(name));
		/* msprobe's entry comes from it; CANN's header records it */
		snprintf(dfx, sizeof(dfx),
			 "{\"input_args\":[{\"type\":\"torch.Tensor\",\"dtype\":"
			 "\"torch.float32\",\"shape\":[%llu],\"requires_grad\":false,"
			 "\"tensor\":\"input.0\"},{\"type\":\"int\",\"value\":%u}],"
			 "\"input_kwargs\":{},\"output\":{\"type\":\"torch.Tensor\","
			 "\"dtype\":\"torch.float32\",\"shape\":[%llu],\"requires_grad\":"
			 "true,\"tensor\":\"output.0\"}}", (unsigned long long)elems_of(i), k,
			 (unsigned long long)elems_of(i));
		op.op_type = "Linear";
		op.op_name = name;
		op.inputs = &ti;
		op.input_count = 1;
		op.outputs = &to;
		op.output_count = 1;
		op.timestamp_us = T0 + k * 1000ull + i * 10ull + r->index * 5ull;
		op.attrs = &attr;
		op.attr_count = 1;
		op.dfx_message = dfx;
		if (p->zero_copy || is_rejected)
			op.release_fn = released;
		if (is_rejected)
			op.check_fn = refuse;
		ck_assert_int_eq(adump_host_dump_op(r->hs, &op, NULL), 0);
		if (p->zero_copy || is_rejected)        /* the memory is the next op's */
			adump_host_stream_sync(r->hs);
		if (is_first && (int)k == p->signal_step && (int)i == p->signal_op) {
			ck_assert_int_eq(adump_host_stream_sync(r->hs), 0);
			ck_assert_int_eq(raise(SIGUSR1), 0);
			wait_persists(r->s, 1, &r->o->signal_info);
		}
	}
	/* Everything of the step written before it ends (and before a fault is armed). */
	ck_assert_int_eq(adump_host_stream_sync(r->hs), 0);
}

static void *dump_step_main(void *arg)
{
	dump_step(arg);
	return NULL;
}

/* A thread sending SIGUSR1 to the process and calling the any-thread calls, until told. */
struct storm {
	struct adump_session *s;
	atomic_bool is_done;
	unsigned signals;
};

static void *storm_main(void *arg)
{
	struct storm *st = arg;

	while (!atomic_load(&st->is_done)) {
		struct adump_window_info info;

		if (st->signals % 3 == 0)
			ck_assert_int_eq(adump_session_persist(st->s, "storm"), 0);
		ck_assert_int_eq(adump_session_window(st->s, &info), 0);
		ck_assert_int_eq(kill(getpid(), SIGUSR1), 0);
		st->signals++;
		usleep(300);
	}
	return NULL;
}

static void run_here(const struct adump_config *cfg, const struct plan *p, struct outcome *o)
{
	struct storm storm = { .is_done = false };
	pthread_t storm_thread;
	struct adump_session *s = NULL;
	struct stream_run runs[2];
	unsigned streams = p->streams ? p->streams : 1;
	/* Static: the same addresses (in the headers) in every run's child. */
	static float in[2][(ELEMS + 517u * MAX_OPS) * MAX_MULT];
	static float out[2][(ELEMS + 517u * MAX_OPS) * MAX_MULT];

	ck_assert(p->steps <= MAX_STEPS && p->ops <= MAX_OPS && streams <= 2 &&
		  elems_mult <= MAX_MULT);
	memset(o, 0, sizeof(*o));
	ck_assert_int_eq(adump_session_create(cfg, &s), 0);
	for (unsigned j = 0; j < streams; j++) {
		struct adump_host_stream_config hcfg = ADUMP_HOST_STREAM_CONFIG_INIT;

		/* Opened here, in order: the same stream ids in every run. */
		hcfg.device_id = p->device_id + j;
		runs[j] = (struct stream_run){ .p = p, .s = s, .o = o, .index = j, .in = in[j],
					       .out = out[j] };
		ck_assert_int_eq(adump_host_stream_open(s, &hcfg, &runs[j].hs), 0);
	}
	storm.s = s;
	if (p->signal_storm)
		ck_assert_int_eq(pthread_create(&storm_thread, NULL, storm_main, &storm), 0);
	for (unsigned k = 0; k < p->steps; k++) {
		if (p->signal_storm && k + 1 == p->steps) {
			/* The last step quiet: what the storm asked for is written by its end. */
			atomic_store(&storm.is_done, true);
			ck_assert_int_eq(pthread_join(storm_thread, NULL), 0);
			ck_assert_uint_gt(storm.signals, 0);
		}
		for (unsigned j = 0; j < streams; j++)
			runs[j].step = k;
		if (streams == 1) {
			dump_step(&runs[0]);
		} else {
			pthread_t th[2];

			for (unsigned j = 0; j < streams; j++)
				ck_assert_int_eq(pthread_create(&th[j], NULL, dump_step_main,
								&runs[j]), 0);
			for (unsigned j = 0; j < streams; j++)
				ck_assert_int_eq(pthread_join(th[j], NULL), 0);
			for (unsigned j = 0; j < streams; j++)
				ck_assert_int_eq(adump_host_stream_adopt(runs[j].hs), 0);
		}
		if ((int)k == p->call_step)
			ck_assert_int_eq(adump_session_persist(s, p->call_reason), 0);
		if (p->no_last_step && k + 1 == p->steps)
			break;
		if ((int)k == p->fault_step)
			adump_testpoint_arm(p->fault, p->fault_err, p->fault_nth, 0);
		o->step_ret[k] = adump_session_step(s);
		if (cfg->window_steps)
			ck_assert_int_eq(adump_session_window(s, &o->info[k]), 0);
	}
	if (cfg->window_steps)
		ck_assert_int_eq(adump_session_window(s, &o->last), 0);
	for (unsigned j = 0; j < streams; j++)
		ck_assert_int_eq(adump_host_stream_close(runs[j].hs), 0);
	adump_stats_get(s, &o->stats);
	o->destroy_ret = adump_session_destroy(s);
}

/* Called in the child after its run (the callback sink's collector writes its files). */
static void (*after_run)(void);

/* run_here() in a child process, so that every capture of a test sees the same stream ids
 * (they are unique in a process; a name holds its stream's). */
static void run(const struct adump_config *cfg, const struct plan *p, struct outcome *o)
{
	struct outcome *shared = mmap(NULL, sizeof(*o), PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid;
	int status;

	ck_assert(shared != MAP_FAILED);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		run_here(cfg, p, shared);
		if (after_run)
			after_run();
		exit(0);        /* atexit: the sanitizers' leak check */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "run: status 0x%x", status);
	*o = *shared;
	munmap(shared, sizeof(*o));
}

/* msprobe's summary of every capture a test makes (MD5: the CRC of each tensor's bytes). */
static enum adump_summary runs_summary = ADUMP_SUMMARY_STATISTICS;

static struct adump_config base_config(const char *root, enum adump_output_format format)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;

	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.chunk_bytes = CHUNK;
	cfg.pool_bytes = 64u * CHUNK;
	cfg.stream_max = 2;
	cfg.worker_count = 2;
	cfg.format = format;
	cfg.summary = format == ADUMP_OUTPUT_MSPROBE ? runs_summary : ADUMP_SUMMARY_STATISTICS;
	cfg.min_free_bytes = ADUMP_GUARD_OFF;
	return cfg;
}

static struct adump_config window_config(const char *root, enum adump_output_format format,
					 unsigned steps)
{
	struct adump_config cfg = base_config(root, format);

	cfg.window_steps = steps;
	return cfg;
}

/* ---- trees of files compared ------------------------------------------------------------- */

/* Which files of a tree take part: steps lo..hi only (by directory step<k>/ or by the
 * timestamp ending a CANN name); trigger.json and window-* left out where asked. */
struct filter {
	int lo, hi;                     /* -1: every step */
	bool no_trigger;
	bool no_windows;
	bool no_losses;                 /* adump-losses.jsonl left out */
};

static int step_of(const char *rel)
{
	const char *dot;
	unsigned long long ts;

	if (!strncmp(rel, "step", 4))
		return atoi(rel + 4);
	dot = strrchr(rel, '.');
	if (!dot || sscanf(dot + 1, "%llu", &ts) != 1 || ts < T0)
		return -1;
	return (int)((ts - T0) / 1000);
}

static bool keep(const struct filter *f, const char *rel)
{
	const char *base = strrchr(rel, '/');

	base = base ? base + 1 : rel;
	if (f->no_trigger && !strcmp(base, "trigger.json"))
		return false;
	if (f->no_windows && !strncmp(rel, "window-", 7))
		return false;
	if (f->no_losses && !strcmp(base, "adump-losses.jsonl"))
		return false;
	if (f->lo >= 0) {
		int k = step_of(rel);

		return k >= f->lo && k <= f->hi;
	}
	return true;
}

static char **list_kept(const char *dir, const struct filter *f, size_t *count)
{
	size_t n, m = 0;
	char **all = t_list_files(dir, &n);
	char **kept = calloc(n + 1, sizeof(*kept));

	ck_assert_ptr_nonnull(kept);
	for (size_t i = 0; i < n; i++) {
		if (keep(f, all[i]))
			kept[m++] = all[i];
		else
			free(all[i]);
	}
	free(all);
	*count = m;
	return kept;
}

static int cmp_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool same_bytes(const char *a, const char *b)
{
	size_t la, lb;
	unsigned char *x = t_read_file(a, &la), *y = t_read_file(b, &lb);
	bool same = x && y && la == lb && memcmp(x, y, la) == 0;

	free(x);
	free(y);
	return same;
}

/* The kept files of @a and @b: the same relative paths, the same bytes. Return: how many. */
static size_t same_tree(const char *a, const struct filter *fa, const char *b,
			const struct filter *fb)
{
	size_t na, nb;
	char **la = list_kept(a, fa, &na), **lb = list_kept(b, fb, &nb);

	for (size_t i = 0; i < na || i < nb; i++) {
		ck_assert_msg(i < na && i < nb && !strcmp(la[i], lb[i]),
			      "file lists differ at %zu: %s/%s vs %s/%s", i, a,
			      i < na ? la[i] : "(none)", b, i < nb ? lb[i] : "(none)");
	}
	for (size_t i = 0; i < na; i++) {
		char pa[4200], pb[4200];

		snprintf(pa, sizeof(pa), "%s/%s", a, la[i]);
		snprintf(pb, sizeof(pb), "%s/%s", b, lb[i]);
		ck_assert_msg(same_bytes(pa, pb), "%s and %s differ", pa, pb);
	}
	t_free_list(la, na);
	t_free_list(lb, nb);
	return na;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Entries of @root named window-*. */
static unsigned window_dirs(const char *root)
{
	DIR *d = opendir(root);
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "window-", 7))
			n++;
	closedir(d);
	return n;
}

static struct json_object *load_trigger(const char *dir)
{
	char path[4200];
	struct json_object *o;

	snprintf(path, sizeof(path), "%s/trigger.json", dir);
	o = json_object_from_file(path);
	ck_assert_msg(o != NULL, "%s: %s", path, json_util_get_last_err());
	return o;
}

static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "trigger.json has no %s", key);
	return v;
}

static const char *str_member(struct json_object *o, const char *key)
{
	struct json_object *v = member(o, key);

	ck_assert_msg(json_object_is_type(v, json_type_string), "%s is not a string", key);
	return json_object_get_string(v);
}

static bool is_null(struct json_object *o, const char *key)
{
	return member(o, key) == NULL;
}

/* trigger.json's steps are @lo..@hi. */
static void check_steps(struct json_object *t, unsigned lo, unsigned hi)
{
	struct json_object *steps = member(t, "steps");

	ck_assert(json_object_is_type(steps, json_type_array));
	ck_assert_uint_eq(json_object_array_length(steps), hi - lo + 1);
	for (unsigned k = lo; k <= hi; k++)
		ck_assert_int_eq(json_object_get_int64(json_object_array_get_idx(steps, k - lo)),
				 k);
}

/* The test's directory goes, unless ADUMP_TEST_KEEP is set (to look at it). */
static void cleanup(char *root)
{
	if (!getenv("ADUMP_TEST_KEEP"))
		t_rmtree(root);
	free(root);
}

/* @path renamed to @to, so that a reference capture can be written at @path. */
static void set_aside(const char *path, const char *to)
{
	ck_assert_msg(rename(path, to) == 0, "rename %s: %s", path, strerror(errno));
}

/* ---- 1, 2, 3: a window equals a tensor capture, the statistics a statistics capture ---- */

static void equality(enum adump_output_format format, bool set_dir, bool zero_copy,
		     unsigned streams)
{
	char *root = t_tmpdir("window");
	char win[4200], win_saved[4200], saved[4200], wroot[4200];
	struct plan p = PLAN_INIT;
	struct adump_config cfg;
	struct outcome o, r;
	const unsigned n = 3, bad = 4;
	struct filter all = { .lo = -1 }, window = { .lo = -1, .no_trigger = true },
		      stats_side = { .lo = -1, .no_windows = true },
		      held = { .lo = bad - n + 1, .hi = bad };
	struct json_object *t;

	p.set_dir = set_dir;
	p.zero_copy = zero_copy;
	p.streams = streams;
	p.bad_step = bad;
	p.bad_op = 1;
	p.bad_value = NAN;
	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(win_saved, sizeof(win_saved), "%s/win_saved", root);
	snprintf(saved, sizeof(saved), "%s/saved", root);

	cfg = window_config(win, format, n);
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	for (unsigned k = 0; k < p.steps; k++)
		ck_assert_int_eq(o.step_ret[k], 0);
	ck_assert_uint_eq(o.info[bad].persists, 1);
	ck_assert_uint_eq(o.info[bad - 1].persists, 0);
	ck_assert_uint_eq(window_dirs(win), 1);
	snprintf(wroot, sizeof(wroot), "%s/window-%u", win, bad);
	ck_assert_str_eq(o.info[bad].last_window, wroot);

	/* trigger.json: the rule, the step, the tensor, the value, the steps held. */
	{
		char dir[4200];

		if (set_dir)
			snprintf(dir, sizeof(dir), "%s/step%u/rank0", wroot, bad);
		else
			snprintf(dir, sizeof(dir), "%s/" TIME_DIR, wroot);
		t = load_trigger(dir);
		ck_assert_str_eq(str_member(t, "rule"), "nonfinite");
		ck_assert_int_eq(json_object_get_int64(member(t, "step")), bad);
		ck_assert_str_eq(str_member(t, "tensor"), "Functional.layer1.4.forward.output.0");
		ck_assert_str_eq(str_member(t, "value"), "nan");
		ck_assert(is_null(t, "threshold"));
		ck_assert_int_eq(json_object_get_int64(member(t, "rank")), 0);
		/* op 1's output, op 2's input and output, op 3's: the first is the trigger */
		ck_assert_int_eq(json_object_get_int64(member(t, "triggers_in_step")), 5);
		check_steps(t, bad - n + 1, bad);
		json_object_put(t);
	}

	/* The tensor capture, written where the window was (msprobe's dump.json names its
	 * directory): every step, or, msprobe without a directory per step, only the window's
	 * steps (dump.json is one file for all). */
	set_aside(wroot, saved);
	cfg = base_config(wroot, format);
	if (format == ADUMP_OUTPUT_MSPROBE && !set_dir) {
		p.first_step = bad - n + 1;
		p.steps = bad + 1;
	}
	run(&cfg, &p, &r);
	ck_assert_int_eq(r.destroy_ret, 0);
	p.first_step = 0;
	p.steps = 6;
	if (format == ADUMP_OUTPUT_MSPROBE)
		ck_assert_uint_gt(same_tree(saved, &window, wroot,
					    set_dir ? &held : &all), 0);
	else
		ck_assert_uint_eq(same_tree(saved, &window, wroot, &held), n * p.ops * streams);

	/* The statistics: what a statistics session writes (where the window session wrote,
	 * msprobe's dump.json naming its directory), with the trigger and without. */
	set_aside(win, win_saved);
	cfg = base_config(win, format);
	cfg.content = ADUMP_CONTENT_STATS;
	run(&cfg, &p, &r);
	ck_assert_int_eq(r.destroy_ret, 0);
	ck_assert_uint_gt(same_tree(win_saved, &stats_side, win, &all), 0);
	t_rmtree(win);

	p.bad_step = -1;
	cfg = window_config(win, format, n);
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[p.steps - 1].persists, 0);
	ck_assert_uint_eq(window_dirs(win), 0);
	ck_assert(!o.info[p.steps - 1].is_pending);
	t_rmtree(win_saved);
	set_aside(win, win_saved);
	cfg = base_config(win, format);
	cfg.content = ADUMP_CONTENT_STATS;
	run(&cfg, &p, &r);
	ck_assert_uint_gt(same_tree(win_saved, &all, win, &all), 0);

	cleanup(root);
}

START_TEST(test_cann_window_equals_tensor_capture)
{
	equality(ADUMP_OUTPUT_CANN, false, false, 1);
}
END_TEST

START_TEST(test_cann_window_equals_tensor_capture_set_dir)
{
	equality(ADUMP_OUTPUT_CANN, true, false, 1);
}
END_TEST

START_TEST(test_msprobe_window_equals_tensor_capture)
{
	equality(ADUMP_OUTPUT_MSPROBE, false, false, 1);
}
END_TEST

START_TEST(test_msprobe_window_equals_tensor_capture_set_dir)
{
	equality(ADUMP_OUTPUT_MSPROBE, true, false, 1);
}
END_TEST

/* Zero copy: the window copies from the caller's memory as the workers write it. */
START_TEST(test_zero_copy_window_equals_tensor_capture)
{
	equality(ADUMP_OUTPUT_CANN, true, true, 1);
	equality(ADUMP_OUTPUT_MSPROBE, false, true, 1);
}
END_TEST

/* Two host streams (devices 0 and 1) dumping on two threads at once. */
START_TEST(test_two_streams_window_equals_tensor_capture)
{
	equality(ADUMP_OUTPUT_CANN, false, false, 2);
	equality(ADUMP_OUTPUT_CANN, true, false, 2);
	equality(ADUMP_OUTPUT_MSPROBE, true, false, 2);
}
END_TEST

/* msprobe's md5 summary: the statistics dump.json holds each tensor's CRC as the tensor
 * capture's does. */
START_TEST(test_msprobe_md5_window_equals_tensor_capture)
{
	runs_summary = ADUMP_SUMMARY_MD5;
	equality(ADUMP_OUTPUT_MSPROBE, true, false, 1);
	runs_summary = ADUMP_SUMMARY_STATISTICS;
}
END_TEST

/* io auto: the window's large files are written with O_DIRECT, as the capture's are. */
START_TEST(test_io_auto_window_equals_tensor_capture)
{
	char *root = t_tmpdir("window_auto");
	char win[4200], saved[4200], wroot[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	struct filter w = { .lo = -1, .no_trigger = true }, held = { .lo = 1, .hi = 2 };

	elems_mult = 64;                /* 384 KiB and more: past direct_min_bytes */
	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(saved, sizeof(saved), "%s/saved", root);
	p.ops = 2;
	p.steps = 3;
	p.bad_step = 2;
	p.bad_op = 1;
	p.bad_value = NAN;
	cfg = window_config(win, ADUMP_OUTPUT_CANN, 2);
	cfg.io = ADUMP_IO_AUTO;
	cfg.chunk_bytes = 64u << 10;
	cfg.pool_bytes = 16u << 20;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[2].persists, 1);
	snprintf(wroot, sizeof(wroot), "%s/window-2", win);
	set_aside(wroot, saved);
	cfg = base_config(wroot, ADUMP_OUTPUT_CANN);
	cfg.io = ADUMP_IO_AUTO;
	cfg.chunk_bytes = 64u << 10;
	cfg.pool_bytes = 16u << 20;
	run(&cfg, &p, &r);
	ck_assert_int_eq(r.destroy_ret, 0);
	ck_assert_uint_gt(r.stats.files_direct, 0);
	ck_assert_uint_eq(same_tree(saved, &w, wroot, &held), 2 * p.ops);
	elems_mult = 1;
	cleanup(root);
}
END_TEST

/* ---- 1 on the simulated device ------------------------------------------------------------ */

#define DEV_OPS 3
#define DEV_STEPS 5
#define DEV_BAD 3
#define DEV_N 2
#define DEV_ELEMS 2500u

/* One capture of the device workload in a child process (so that both captures see the same
 * stream id, task ids, fake clock and device addresses). Exit status 0 when all went well. */
static int dev_child(const struct adump_config *cfg)
{
	struct adump_session *s = NULL;
	struct adump_dev *dev;
	struct adump_dev_stream *st;
	void *mem[DEV_OPS][3];
	float *host = malloc(DEV_ELEMS * 4);
	int ret;

	adump_testpoint_clock_set(1700000000000000ull);
	if (!host || adump_dev_open(0, &dev) < 0 || adump_dev_stream_create(dev, &st) < 0)
		return 10;
	for (unsigned i = 0; i < DEV_OPS; i++)
		for (unsigned j = 0; j < 3; j++)
			if (adump_dev_malloc(dev, DEV_ELEMS * 4, &mem[i][j]) < 0)
				return 11;
	if (adump_session_create(cfg, &s) < 0 || adump_session_attach(s, st) < 0)
		return 12;
	for (unsigned k = 0; k < DEV_STEPS; k++) {
		for (unsigned i = 0; i < DEV_OPS; i++) {
			struct adump_dev_tensor self = { .data = mem[i][0], .dtype = ADUMP_DT_FLOAT,
							 .format = ADUMP_FORMAT_ND, .dim_count = 1,
							 .dims = { DEV_ELEMS }, .bytes = DEV_ELEMS * 4 };
			struct adump_dev_tensor other = self, out = self;
			struct adump_dev_dump dump = { .op_type = "Add", .op_name = NULL,
						       .tensor_mask = ADUMP_DUMP_ALL };
			char name[32];

			other.data = mem[i][1];
			out.data = mem[i][2];
			for (unsigned e = 0; e < DEV_ELEMS; e++)
				host[e] = (float)((e * 5 + i * 11 + k * 3) % 97) / 48.0f - 1.0f;
			if (k == DEV_BAD && i == 1)
				host[7] = NAN;
			if (adump_dev_memcpy(dev, mem[i][0], DEV_ELEMS * 4, host, DEV_ELEMS * 4,
					     ADUMP_COPY_HOST_TO_DEVICE) < 0 ||
			    adump_dev_memcpy(dev, mem[i][1], DEV_ELEMS * 4, host, DEV_ELEMS * 4,
					     ADUMP_COPY_HOST_TO_DEVICE) < 0)
				return 13;
			snprintf(name, sizeof(name), "add%u", i);
			dump.op_name = name;
			if (adump_dev_launch_add(st, &self, &other, 1.0, &out, &dump) < 0)
				return 14;
		}
		if (adump_dev_stream_sync(st) < 0)
			return 15;
		ret = adump_session_step(s);
		if (ret < 0)
			return 16;
	}
	if (adump_session_detach(s, st) < 0)
		return 17;
	ret = adump_session_destroy(s);
	adump_dev_stream_destroy(st);
	for (unsigned i = 0; i < DEV_OPS; i++)
		for (unsigned j = 0; j < 3; j++)
			adump_dev_free(dev, mem[i][j]);
	adump_dev_close(dev);
	free(host);
	return ret < 0 ? 18 : 0;
}

static void in_child(const struct adump_config *cfg)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(dev_child(cfg));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status 0x%x",
		      status);
}

/* The task id in a CANN name <type>.<name>.<task>.<stream>.<timestamp>. */
static int dev_step_of(const char *rel)
{
	const char *base = strrchr(rel, '/');
	unsigned task, stream;
	unsigned long long ts;
	char type[16];
	unsigned op;

	base = base ? base + 1 : rel;
	if (sscanf(base, "%15[^.].add%u.%u.%u.%llu", type, &op, &task, &stream, &ts) != 5)
		return -1;
	return (int)(task / DEV_OPS);
}

START_TEST(test_device_window_equals_tensor_capture)
{
	char *root = t_tmpdir("window_dev");
	char win[4200], ref[4200], wroot[4200];
	struct adump_config cfg;
	size_t nw, nr, m = 0;
	char **lw, **lr;

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(ref, sizeof(ref), "%s/ref", root);
	cfg = window_config(win, ADUMP_OUTPUT_CANN, DEV_N);
	in_child(&cfg);
	cfg = base_config(ref, ADUMP_OUTPUT_CANN);
	in_child(&cfg);
	snprintf(wroot, sizeof(wroot), "%s/window-%u", win, DEV_BAD);
	ck_assert_uint_eq(window_dirs(win), 1);
	lw = t_list_files(wroot, &nw);
	lr = t_list_files(ref, &nr);
	/* The window: the reference's files of steps DEV_BAD - DEV_N + 1..DEV_BAD, trigger.json */
	for (size_t i = 0; i < nr; i++) {
		int k = dev_step_of(lr[i]);
		char pa[4200], pb[4200];

		if (k < DEV_BAD - DEV_N + 1 || k > DEV_BAD)
			continue;
		ck_assert_uint_lt(m, nw);
		while (m < nw && strstr(lw[m], "trigger.json"))
			m++;
		ck_assert_msg(m < nw && !strcmp(lw[m], lr[i]), "window lacks %s", lr[i]);
		snprintf(pa, sizeof(pa), "%s/%s", wroot, lw[m]);
		snprintf(pb, sizeof(pb), "%s/%s", ref, lr[i]);
		ck_assert_msg(same_bytes(pa, pb), "%s and %s differ", pa, pb);
		m++;
	}
	while (m < nw && strstr(lw[m], "trigger.json"))
		m++;
	ck_assert_msg(m == nw, "the window has more: %s", m < nw ? lw[m] : "");
	{
		char dir[4200];
		struct json_object *t;

		snprintf(dir, sizeof(dir), "%s/" TIME_DIR, wroot);
		t = load_trigger(dir);
		ck_assert_str_eq(str_member(t, "rule"), "nonfinite");
		ck_assert_str_eq(str_member(t, "tensor"), "add1.input.0");
		check_steps(t, DEV_BAD - DEV_N + 1, DEV_BAD);
		json_object_put(t);
	}
	t_free_list(lw, nw);
	t_free_list(lr, nr);
	cleanup(root);
}
END_TEST

/* ---- 4: the triggers ---------------------------------------------------------------------- */

/* A window run of @p with @cfg under @root; the window of @step's trigger.json. */
static struct json_object *trigger_of(const char *root, unsigned step)
{
	char dir[4200];

	snprintf(dir, sizeof(dir), "%s/window-%u/" TIME_DIR, root, step);
	return load_trigger(dir);
}

/* A non-finite value at step 2 (of 4) in a window of @steps on device @device: the held steps,
 * trigger.json's fields. */
static void nonfinite(float bad, const char *want, unsigned steps, uint32_t device)
{
	char *root = t_tmpdir("window_nf");
	struct adump_config cfg = window_config(root, ADUMP_OUTPUT_CANN, steps);
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct json_object *t;
	struct filter f = { .lo = -1, .no_trigger = true };
	unsigned lo = steps > 2 ? 0 : 3 - steps;
	char dir[4200], prefix[64];
	const char *when;
	size_t n;
	char **files;
	int y, mo, d, h, mi, sec, us, end = 0;

	p.bad_step = 2;
	p.bad_op = 2;
	p.bad_value = bad;
	p.steps = 4;
	p.device_id = device;
	/* The same tensors every step: an infinity fires where a tensor held none before. */
	p.stable_names = true;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[1].persists, 0);
	ck_assert(!o.info[1].is_pending);
	ck_assert_uint_eq(o.info[2].persists, 1);
	ck_assert_uint_eq(o.info[3].persists, 1);
	ck_assert_uint_eq(window_dirs(root), 1);
	t = trigger_of(root, 2);
	ck_assert_str_eq(str_member(t, "rule"), "nonfinite");
	ck_assert_str_eq(str_member(t, "tensor"), "layer2.output.0");
	ck_assert_str_eq(str_member(t, "op_name"), "layer2");
	ck_assert_str_eq(str_member(t, "io"), "output");
	ck_assert_str_eq(str_member(t, "value"), want);
	ck_assert_int_eq(json_object_get_int64(member(t, "rank")), device);
	ck_assert(is_null(t, "reason"));
	when = str_member(t, "time");
	ck_assert_msg(sscanf(when, "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ%n", &y, &mo, &d, &h, &mi, &sec,
			     &us, &end) == 7 && end == (int)strlen(when) && y >= 2024,
		      "time %s", when);
	check_steps(t, lo, 2);
	json_object_put(t);
	/* Every held step's dumps, under the stream's device directory. */
	snprintf(dir, sizeof(dir), "%s/window-2", root);
	snprintf(prefix, sizeof(prefix), TIME_DIR "/%u/Linear.", device);
	files = list_kept(dir, &f, &n);
	ck_assert_uint_eq(n, (3 - lo) * p.ops);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(!strncmp(files[i], prefix, strlen(prefix)), "%s", files[i]);
	t_free_list(files, n);
	cleanup(root);
}

START_TEST(test_trigger_nan)
{
	nonfinite(NAN, "nan", 2, 0);
}
END_TEST

START_TEST(test_trigger_inf)
{
	nonfinite(INFINITY, "inf", 1, 3);    /* only the step of the trigger */
}
END_TEST

START_TEST(test_trigger_neg_inf)
{
	nonfinite(-INFINITY, "-inf", 5, 0);  /* more than there were */
}
END_TEST

/* Infinities a tensor holds the first time it is dumped are meant (a causal mask's -inf):
 * no trigger; a NaN there fires. */
START_TEST(test_trigger_inf_from_the_start)
{
	for (int k = 0; k < 2; k++) {
		char *root = t_tmpdir("window_inf0");
		struct adump_config cfg = window_config(root, ADUMP_OUTPUT_CANN, 2);
		struct plan p = PLAN_INIT;
		struct outcome o;

		p.bad_step = 0;
		p.bad_op = 1;
		p.bad_value = k ? NAN : -INFINITY;
		p.steps = 3;
		p.stable_names = true;
		run(&cfg, &p, &o);
		ck_assert_int_eq(o.destroy_ret, 0);
		ck_assert_uint_eq(o.info[2].persists, k ? 1 : 0);
		ck_assert_uint_eq(window_dirs(root), k ? 1 : 0);
		cleanup(root);
	}
}
END_TEST

/* Triggers not asked for do not fire: a NaN with only the call trigger (always on). */
START_TEST(test_trigger_not_asked_for)
{
	char *root = t_tmpdir("window_off");
	struct adump_config cfg = window_config(root, ADUMP_OUTPUT_CANN, 2);
	struct plan p = PLAN_INIT;
	struct outcome o;

	cfg.triggers = ADUMP_TRIGGER_CALL;
	p.bad_step = 1;
	p.bad_op = 0;
	p.bad_value = NAN;
	p.call_step = 4;
	p.call_reason = "asked";
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[3].persists, 0);
	ck_assert_uint_eq(o.info[4].persists, 1);
	ck_assert_uint_eq(window_dirs(root), 1);
	cleanup(root);
}
END_TEST

START_TEST(test_trigger_bound)
{
	char *root = t_tmpdir("window_bound");
	char r1[4200], r2[4200], r3[4200];
	struct adump_bound b[2] = { { .pattern = "*.layer2.*.output.0", .max_abs = 100 },
				    { .pattern = "*.layer3.*", .max_abs = 1e6 } };
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct json_object *t;

	snprintf(r1, sizeof(r1), "%s/above", root);
	snprintf(r2, sizeof(r2), "%s/below", root);
	snprintf(r3, sizeof(r3), "%s/nomatch", root);
	p.steps = 4;
	p.bad_step = 2;
	p.bad_op = 2;
	p.bad_value = -250.5f;          /* |x| above layer2's bound, below layer3's */

	cfg = window_config(r1, ADUMP_OUTPUT_CANN, 2);
	cfg.triggers = ADUMP_TRIGGER_BOUND;
	cfg.bounds = b;
	cfg.bound_count = 2;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.step_ret[0], 0);
	ck_assert_uint_eq(o.info[1].persists, 0);
	ck_assert_uint_eq(o.info[2].persists, 1);
	t = trigger_of(r1, 2);
	ck_assert_str_eq(str_member(t, "rule"), "bound");
	ck_assert_str_eq(str_member(t, "tensor"), "Functional.layer2.2.forward.output.0");
	ck_assert_double_eq_tol(json_object_get_double(member(t, "value")), 250.5, 1e-9);
	ck_assert_double_eq_tol(json_object_get_double(member(t, "threshold")), 100, 1e-9);
	json_object_put(t);

	/* A value below the bound, and a large one where no pattern matches: nothing. */
	p.bad_value = 99.0f;
	b[1].max_abs = 1000;
	cfg.dump_path = r2;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[3].persists, 0);
	ck_assert_uint_eq(window_dirs(r2), 0);
	p.bad_op = 1;
	p.bad_value = 5000.0f;          /* layer1 (no bound) and layer2 (bound 100) */
	b[0].pattern = "*.layer1.*.input.0";    /* layer1's input: finite, small */
	b[1].pattern = "*.layer0.*";
	run(&cfg, &p, &o);
	ck_assert_uint_eq(o.info[3].persists, 0);

	/* A pattern that matches nothing in step 0: its step reports a config error. */
	b[1].pattern = "no.such.tensor";
	cfg.dump_path = r3;
	p.bad_step = -1;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.step_ret[0], -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(o.step_ret[1], 0);
	cleanup(root);
}
END_TEST

/* L2 norm of a step's output of op 0 as the plan makes it. */
static double norm_of(const struct plan *p, unsigned step)
{
	double sum = 0;

	for (uint64_t e = 0; e < elems_of(0); e++) {
		double v = value(p, step, 1, e);

		sum += v * v;
	}
	return sqrt(sum);
}

START_TEST(test_trigger_deviation)
{
	char *root = t_tmpdir("window_dev");
	char r1[4200], r2[4200];
	/* K = 3, factor 2: step 2 (norm x50) has only two before it; step 3 (1.9 x the mean of
	 * 1, 1, 50... no: of its last three) does not exceed; step 5 does. */
	static const double early[] = { 1, 1, 50, 1, 1, 1 };
	static const double scales[] = { 1, 1, 1, 1.9, 1, 3.5, 1 };
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct json_object *t;
	double mean, want_value;

	snprintf(r1, sizeof(r1), "%s/early", root);
	snprintf(r2, sizeof(r2), "%s/fires", root);
	p.ops = 1;
	p.stable_names = true;
	p.steps = 3;
	p.scales = early;
	cfg = window_config(r1, ADUMP_OUTPUT_CANN, 2);
	cfg.triggers = ADUMP_TRIGGER_DEVIATION;
	cfg.deviation = 1.0;
	cfg.deviation_steps = 3;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[2].persists, 0);
	ck_assert_uint_eq(window_dirs(r1), 0);

	p.steps = 7;
	p.scales = scales;
	cfg.dump_path = r2;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[4].persists, 0);
	ck_assert_uint_eq(o.info[5].persists, 1);
	ck_assert_uint_eq(o.info[6].persists, 1);
	ck_assert_uint_eq(window_dirs(r2), 1);
	t = trigger_of(r2, 5);
	ck_assert_str_eq(str_member(t, "rule"), "deviation");
	ck_assert_int_eq(json_object_get_int64(member(t, "step")), 5);
	/* The first tensor to fire: layer0's input is step-scaled as its output is. */
	ck_assert_str_eq(str_member(t, "tensor"), "layer0.input.0");
	mean = 0;
	{
		double in[7];

		for (unsigned k = 0; k < 7; k++) {
			double sum = 0;

			for (uint64_t e = 0; e < elems_of(0); e++) {
				double v = value(&p, k, 0, e);

				sum += v * v;
			}
			in[k] = sqrt(sum);
		}
		mean = (in[2] + in[3] + in[4]) / 3;
		want_value = in[5];
	}
	ck_assert_double_eq_tol(json_object_get_double(member(t, "value")), want_value,
				want_value * 1e-5);
	ck_assert_double_eq_tol(json_object_get_double(member(t, "threshold")), 2 * mean,
				mean * 1e-5);
	ck_assert(norm_of(&p, 5) > 2 * mean);
	check_steps(t, 4, 5);
	json_object_put(t);
	cleanup(root);
}
END_TEST

START_TEST(test_trigger_call_and_note)
{
	char *root = t_tmpdir("window_call");
	struct adump_config cfg = window_config(root, ADUMP_OUTPUT_CANN, 3);
	struct plan p = PLAN_INIT;
	struct adump_session *s = NULL;
	struct outcome o;
	struct json_object *t;

	/* The note: refused unless an object; its members replace adump's. */
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_session_persist_note(s, "[1, 2]"), -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_session_persist_note(s, "{\"rank\": "), -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_session_persist_note(s, "7"), -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_session_persist_note(s, ""), -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_session_persist_note(s, "{\"rank\": 5} trailing"),
			 -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_session_persist_note(s, "{\"rank\": 5} {\"rank\": 6}"),
			 -ADUMP_ERR_CONFIG);
	ck_assert_int_eq(adump_session_persist_note(s, NULL), 0);
	ck_assert_int_eq(adump_session_persist_note(s, " {\"rank\": 3, \"first_rank\": 1}\n"), 0);
	ck_assert_int_eq(adump_session_persist(s, "loss spike"), 0);
	{
		struct adump_window_info info;

		ck_assert_int_eq(adump_session_window(s, &info), 0);
		ck_assert(info.is_pending);
		ck_assert_str_eq(info.pending_rule, "call");
	}
	ck_assert_int_eq(adump_session_step(s), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	t = trigger_of(root, 0);
	ck_assert_str_eq(str_member(t, "rule"), "call");
	ck_assert_str_eq(str_member(t, "reason"), "loss spike");
	ck_assert_int_eq(json_object_get_int64(member(t, "rank")), 3);
	ck_assert_int_eq(json_object_get_int64(member(t, "first_rank")), 1);
	ck_assert(is_null(t, "tensor"));
	json_object_put(t);
	cleanup(root);

	/* Through a run, the session directory named by the time (no time_dir): the window of
	 * the call's step, its steps, under the same directory name. */
	root = t_tmpdir("window_call");
	cfg.dump_path = root;
	cfg.time_dir = NULL;
	p.call_step = 3;
	p.call_reason = "loss 1e9 at step 3";
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[3].persists, 1);
	ck_assert_uint_eq(window_dirs(root), 1);
	{
		DIR *d = opendir(root);
		struct dirent *e;
		char session[256] = "", dir[4200];
		size_t n;
		char **files;

		ck_assert_ptr_nonnull(d);
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' && strncmp(e->d_name, "window-", 7))
				snprintf(session, sizeof(session), "%s", e->d_name);
		closedir(d);
		ck_assert_str_ne(session, "");
		snprintf(dir, sizeof(dir), "%s/window-3/%s", root, session);
		t = load_trigger(dir);
		files = t_list_files(dir, &n);
		ck_assert_uint_eq(n, 3 * p.ops + 1);
		t_free_list(files, n);
	}
	ck_assert_str_eq(str_member(t, "rule"), "call");
	ck_assert_str_eq(str_member(t, "reason"), "loss 1e9 at step 3");
	ck_assert_int_eq(json_object_get_int64(member(t, "step")), 3);
	check_steps(t, 1, 3);
	json_object_put(t);
	cleanup(root);
}
END_TEST

START_TEST(test_trigger_signal)
{
	char *root = t_tmpdir("window_sig");
	char ref[4200], win[4200], wroot[4200], dir[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	struct sigaction sa, now;
	struct adump_session *s = NULL;
	struct json_object *t;
	struct filter window = { .lo = -1, .no_trigger = true };
	size_t n;
	char **files;

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(ref, sizeof(ref), "%s/ref", root);
	/* The disposition before (ignored) comes back after the session. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cfg = window_config(win, ADUMP_OUTPUT_CANN, 2);
	cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
	p.steps = 5;
	p.signal_step = 3;
	p.signal_op = 1;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &now), 0);
	ck_assert(now.sa_handler == SIG_IGN);
	/* Mid-step: step 2 and step 3's ops 0..1, the window not ended. */
	ck_assert_uint_eq(o.signal_info.persists, 1);
	ck_assert_uint_eq(o.signal_info.step, 3);
	ck_assert_uint_eq(o.info[4].persists, 1);
	snprintf(wroot, sizeof(wroot), "%s/window-3", win);
	snprintf(dir, sizeof(dir), "%s/" TIME_DIR, wroot);
	t = load_trigger(dir);
	ck_assert_str_eq(str_member(t, "rule"), "signal");
	ck_assert_int_eq(json_object_get_int64(member(t, "step")), 3);
	check_steps(t, 2, 3);
	json_object_put(t);
	files = t_list_files(dir, &n);
	ck_assert_uint_eq(n, p.ops + 2 + 1);
	t_free_list(files, n);
	/* The same bytes as the tensor capture of those dumps, written where the window was. */
	set_aside(wroot, ref);
	cfg = base_config(wroot, ADUMP_OUTPUT_CANN);
	p.signal_step = -1;
	run(&cfg, &p, &r);
	{
		size_t nw, i, compared = 0;
		char **lw = t_list_files(ref, &nw);

		for (i = 0; i < nw; i++) {
			char pa[4200], pb[4200];

			if (!keep(&window, lw[i]))
				continue;
			snprintf(pa, sizeof(pa), "%s/%s", ref, lw[i]);
			snprintf(pb, sizeof(pb), "%s/%s", wroot, lw[i]);
			ck_assert_msg(same_bytes(pa, pb), "%s and %s differ", pa, pb);
			compared++;
		}
		ck_assert_uint_eq(compared, p.ops + 2);
		t_free_list(lw, nw);
	}

	/* A handler of the program's own: refused, and left in place. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = (void (*)(int))abort;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cfg = window_config(win, ADUMP_OUTPUT_CANN, 2);
	cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
	ck_assert_int_eq(adump_session_create(&cfg, &s), -ADUMP_ERR_STATE);
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &now), 0);
	ck_assert(now.sa_handler == (void (*)(int))abort);
	sa.sa_handler = SIG_DFL;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cleanup(root);
}
END_TEST

/* A trigger in the last step, which ends with the session: the window is written then. */
START_TEST(test_trigger_of_last_step_persisted_at_destroy)
{
	char *root = t_tmpdir("window_last");
	struct adump_config cfg = window_config(root, ADUMP_OUTPUT_CANN, 2);
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct json_object *t;
	struct filter f = { .lo = -1, .no_trigger = true };
	char dir[4200];
	size_t n;
	char **files;

	p.steps = 4;
	p.bad_step = 3;
	p.bad_op = 3;
	p.bad_value = NAN;
	p.no_last_step = true;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[2].persists, 0);
	ck_assert_uint_eq(window_dirs(root), 1);
	t = trigger_of(root, 3);
	ck_assert_str_eq(str_member(t, "tensor"), "Functional.layer3.3.forward.output.0");
	check_steps(t, 2, 3);
	json_object_put(t);
	snprintf(dir, sizeof(dir), "%s/window-3", root);
	files = list_kept(dir, &f, &n);
	ck_assert_uint_eq(n, 2 * p.ops);
	t_free_list(files, n);
	cleanup(root);
}
END_TEST

/* A dump whose file is still being written when SIGUSR1 arrives (its check_fn holds it): the
 * signal's window leaves it out, the next window has it, and nothing is written twice. */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static int hold_state;                  /* 1: the check is waiting; 2: let it go */

static int hold_check(void *user, uint32_t task_id)
{
	(void)user;
	(void)task_id;
	pthread_mutex_lock(&hold_lock);
	hold_state = 1;
	pthread_cond_broadcast(&hold_cond);
	while (hold_state != 2)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
	return 0;
}

static void dump_one(struct adump_host_stream *hs, unsigned step, unsigned op, bool is_held,
		     float bad)
{
	static float data[4][1000];
	struct adump_host_tensor ti = { .data = data[op], .bytes = sizeof(data[op]),
					.dtype = ADUMP_DT_FLOAT, .dim_count = 1, .dims = { 1000 } };
	struct adump_host_op o = ADUMP_HOST_OP_INIT;
	char name[32];

	for (unsigned e = 0; e < 1000; e++)
		data[op][e] = (float)(e % 17) + (float)step;
	data[op][3] = bad;
	snprintf(name, sizeof(name), "op%u_%u", op, step);
	o.op_type = "Mul";
	o.op_name = name;
	o.outputs = &ti;
	o.output_count = 1;
	o.timestamp_us = T0 + step * 1000ull + op * 10ull;
	if (is_held) {
		o.release_fn = released;
		o.check_fn = hold_check;
	}
	ck_assert_int_eq(adump_host_dump_op(hs, &o, NULL), 0);
}

START_TEST(test_signal_while_a_file_is_written)
{
	char *root = t_tmpdir("window_sigfill");
	struct adump_config cfg = window_config(root, ADUMP_OUTPUT_CANN, 4);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs;
	struct adump_window_info info;
	struct filter f = { .lo = -1, .no_trigger = true };
	struct json_object *t;
	char w1[4200], w2[4200];
	size_t n1, n2;
	char **l1, **l2;

	cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (unsigned i = 0; i < 4; i++)
		dump_one(hs, 0, i, false, 1);
	ck_assert_int_eq(adump_session_step(s), 0);
	dump_one(hs, 1, 0, false, 1);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	hold_state = 0;
	dump_one(hs, 1, 1, true, 1);
	pthread_mutex_lock(&hold_lock);
	while (hold_state != 1)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
	ck_assert_int_eq(raise(SIGUSR1), 0);
	wait_persists(s, 1, &info);
	pthread_mutex_lock(&hold_lock);
	hold_state = 2;
	pthread_cond_broadcast(&hold_cond);
	pthread_mutex_unlock(&hold_lock);
	ck_assert_int_eq(adump_host_stream_sync(hs), 0);
	dump_one(hs, 1, 2, false, NAN);
	ck_assert_int_eq(adump_session_step(s), 0);
	ck_assert_int_eq(adump_session_window(s, &info), 0);
	ck_assert_uint_eq(info.persists, 2);
	/* The window is empty again: later steps hold only what came after. */
	dump_one(hs, 2, 0, false, 1);
	ck_assert_int_eq(adump_session_step(s), 0);
	ck_assert_int_eq(adump_session_window(s, &info), 0);
	ck_assert_uint_eq(info.held_dumps, 1);
	ck_assert_uint_eq(info.held_steps, 1);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);

	/* window-1: step 0 and op 0 of step 1; window-1.1: ops 1 and 2 of step 1. */
	snprintf(w1, sizeof(w1), "%s/window-1", root);
	snprintf(w2, sizeof(w2), "%s/window-1.1", root);
	l1 = list_kept(w1, &f, &n1);
	l2 = list_kept(w2, &f, &n2);
	ck_assert_uint_eq(n1, 5);
	ck_assert_uint_eq(n2, 2);
	ck_assert(strstr(l2[0], "Mul.op1_1."));
	ck_assert(strstr(l2[1], "Mul.op2_1."));
	for (size_t i = 0; i < n2; i++)
		for (size_t j = 0; j < n1; j++)
			ck_assert_str_ne(l1[j], l2[i]);
	t_free_list(l1, n1);
	t_free_list(l2, n2);
	snprintf(w1, sizeof(w1), "%s/window-1/" TIME_DIR, root);
	t = load_trigger(w1);
	ck_assert_str_eq(str_member(t, "rule"), "signal");
	check_steps(t, 0, 1);
	json_object_put(t);
	snprintf(w2, sizeof(w2), "%s/window-1.1/" TIME_DIR, root);
	t = load_trigger(w2);
	ck_assert_str_eq(str_member(t, "rule"), "nonfinite");
	ck_assert_str_eq(str_member(t, "tensor"), "op2_1.output.0");
	check_steps(t, 1, 1);
	json_object_put(t);
	cleanup(root);
}
END_TEST

/* Two sessions take SIGUSR1 together: both persist; the handler stays while one is left
 * and goes back to the default after the last; a later session installs it again. */
START_TEST(test_signal_two_sessions)
{
	char *root = t_tmpdir("window_sig2");
	struct adump_session *s[3] = { NULL };
	struct adump_host_stream *hs[3];
	struct adump_window_info info;
	struct sigaction now;
	char dir[4200];

	for (unsigned i = 0; i < 2; i++) {
		struct adump_config cfg;

		snprintf(dir, sizeof(dir), "%s/s%u", root, i);
		cfg = window_config(dir, ADUMP_OUTPUT_CANN, 2);
		cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
		ck_assert_int_eq(adump_session_create(&cfg, &s[i]), 0);
		ck_assert_int_eq(adump_host_stream_open(s[i], NULL, &hs[i]), 0);
		dump_one(hs[i], 0, i, false, 1);
		ck_assert_int_eq(adump_host_stream_sync(hs[i]), 0);
	}
	ck_assert_int_eq(raise(SIGUSR1), 0);
	wait_persists(s[0], 1, &info);
	wait_persists(s[1], 1, &info);
	ck_assert_int_eq(adump_host_stream_close(hs[0]), 0);
	ck_assert_int_eq(adump_session_destroy(s[0]), 0);
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &now), 0);
	ck_assert(now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN);
	dump_one(hs[1], 0, 3, false, 1);
	ck_assert_int_eq(adump_host_stream_sync(hs[1]), 0);
	ck_assert_int_eq(raise(SIGUSR1), 0);
	wait_persists(s[1], 2, &info);
	ck_assert_int_eq(adump_host_stream_close(hs[1]), 0);
	ck_assert_int_eq(adump_session_destroy(s[1]), 0);
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &now), 0);
	ck_assert(now.sa_handler == SIG_DFL);
	{
		struct adump_config cfg;

		snprintf(dir, sizeof(dir), "%s/s2", root);
		cfg = window_config(dir, ADUMP_OUTPUT_CANN, 2);
		cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
		ck_assert_int_eq(adump_session_create(&cfg, &s[2]), 0);
		ck_assert_int_eq(adump_host_stream_open(s[2], NULL, &hs[2]), 0);
		dump_one(hs[2], 0, 2, false, 1);
		ck_assert_int_eq(adump_host_stream_sync(hs[2]), 0);
		ck_assert_int_eq(raise(SIGUSR1), 0);
		wait_persists(s[2], 1, &info);
		ck_assert_int_eq(adump_host_stream_close(hs[2]), 0);
		ck_assert_int_eq(adump_session_destroy(s[2]), 0);
	}
	/* Each window holds its own session's dump(s). */
	snprintf(dir, sizeof(dir), "%s/s0/window-0/" TIME_DIR "/0", root);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	snprintf(dir, sizeof(dir), "%s/s1/window-0/" TIME_DIR "/0", root);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	snprintf(dir, sizeof(dir), "%s/s1/window-0.1/" TIME_DIR "/0", root);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	snprintf(dir, sizeof(dir), "%s/s2/window-0/" TIME_DIR "/0", root);
	ck_assert_uint_eq(t_count_files(dir, ""), 1);
	cleanup(root);
}
END_TEST

/* Sessions taking SIGUSR1 made and destroyed on two threads at once: the handler's thread
 * and pipe are set up and torn down under one lock, never one thread's over another's. */
static char *churn_root;

static void *churn(void *arg)
{
	uintptr_t id = (uintptr_t)arg;

	for (unsigned i = 0; i < 30; i++) {
		struct adump_config cfg;
		struct adump_session *s = NULL;
		char dir[4200];

		snprintf(dir, sizeof(dir), "%s/t%u_%u", churn_root, (unsigned)id, i);
		cfg = window_config(dir, ADUMP_OUTPUT_CANN, 1);
		cfg.worker_count = 1;
		cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
		if (adump_session_create(&cfg, &s) < 0 || adump_session_destroy(s) < 0)
			return (void *)1;
	}
	return NULL;
}

START_TEST(test_signal_sessions_on_two_threads)
{
	pthread_t th[2];
	void *ret[2];
	struct sigaction now;

	churn_root = t_tmpdir("window_churn");
	for (uintptr_t i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, churn, (void *)i), 0);
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_join(th[i], &ret[i]), 0);
		ck_assert_ptr_null(ret[i]);
	}
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &now), 0);
	ck_assert(now.sa_handler == SIG_DFL);
	cleanup(churn_root);
}
END_TEST

/* SIGUSR1 and persist calls from another thread all along a run, the steps persisting too:
 * every window's files are whole and the tensor capture's, none is written twice, and the
 * step with the NaN is in one of them. */
static void signal_storm(enum adump_output_format format, bool set_dir, unsigned streams)
{
	char *root = t_tmpdir("window_storm");
	char win[4200], ref[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	struct filter f = { .lo = -1, .no_trigger = true, .no_losses = true };
	char **seen = NULL;
	size_t seen_count = 0, bad_files = 0;
	DIR *d;
	struct dirent *e;

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(ref, sizeof(ref), "%s/ref", root);
	p.steps = 12;
	p.bad_step = 8;
	p.bad_op = 2;
	p.bad_value = NAN;
	p.signal_storm = true;
	p.set_dir = set_dir;
	p.streams = streams;
	cfg = window_config(win, format, 3);
	cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
	cfg.window_persists = 100000;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.last.persists_skipped, 0);
	/* A directory each, the windows of one step too (window-<step>.<n>); signals still in
	 * the pipe at the end may have written more. */
	ck_assert_uint_gt(o.last.persists, 3);
	ck_assert_uint_ge(window_dirs(win), o.last.persists);
	p.signal_storm = false;
	cfg = base_config(ref, format);
	run(&cfg, &p, &r);
	d = opendir(win);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char dir[4200];
		size_t n;
		char **files;

		if (strncmp(e->d_name, "window-", 7))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", win, e->d_name);
		files = list_kept(dir, &f, &n);
		seen = realloc(seen, (seen_count + n) * sizeof(*seen));
		for (size_t i = 0; i < n; i++) {
			char pa[4200], pb[4200];

			snprintf(pa, sizeof(pa), "%s/%s", dir, files[i]);
			snprintf(pb, sizeof(pb), "%s/%s", ref, files[i]);
			ck_assert_msg(same_bytes(pa, pb), "%s and %s differ", pa, pb);
			for (size_t j = 0; j < seen_count; j++)
				ck_assert_msg(strcmp(seen[j], files[i]), "%s twice", files[i]);
			if (step_of(files[i]) == p.bad_step)
				bad_files++;
			seen[seen_count++] = files[i];
		}
		free(files);
	}
	closedir(d);
	ck_assert_uint_eq(bad_files, p.ops * streams);
	t_free_list(seen, seen_count);
	cleanup(root);
}

START_TEST(test_signal_storm)
{
	signal_storm(ADUMP_OUTPUT_CANN, false, 1);
	signal_storm(ADUMP_OUTPUT_CANN, true, 2);
}
END_TEST

/* Three windows in one step (two signals, then a NaN): each in a directory of its own,
 * window-0, window-0.1, window-0.2, each holding what came since the one before. */
START_TEST(test_three_windows_of_one_step)
{
	char *root = t_tmpdir("window_three");
	struct adump_config cfg = window_config(root, ADUMP_OUTPUT_CANN, 2);
	struct adump_session *s = NULL;
	struct adump_host_stream *hs;
	struct adump_window_info info;
	static const char *const names[3] = { "window-0", "window-0.1", "window-0.2" };
	static const char *const rules[3] = { "signal", "signal", "nonfinite" };

	cfg.triggers = ADUMP_TRIGGER_DEFAULT | ADUMP_TRIGGER_SIGNAL;
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_host_stream_open(s, NULL, &hs), 0);
	for (unsigned i = 0; i < 2; i++) {
		dump_one(hs, 0, i, false, 1);
		ck_assert_int_eq(adump_host_stream_sync(hs), 0);
		ck_assert_int_eq(raise(SIGUSR1), 0);
		wait_persists(s, i + 1, &info);
	}
	dump_one(hs, 0, 2, false, NAN);
	ck_assert_int_eq(adump_session_step(s), 0);
	ck_assert_int_eq(adump_session_window(s, &info), 0);
	ck_assert_uint_eq(info.persists, 3);
	ck_assert_int_eq(adump_host_stream_close(hs), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_uint_eq(window_dirs(root), 3);
	for (unsigned i = 0; i < 3; i++) {
		char dir[4200], want[32];
		struct json_object *t;
		size_t n;
		char **files;

		snprintf(dir, sizeof(dir), "%s/%s/" TIME_DIR, root, names[i]);
		files = t_list_files(dir, &n);
		ck_assert_uint_eq(n, 2);
		snprintf(want, sizeof(want), "0/Mul.op%u_0.", i);
		ck_assert_msg(!strncmp(files[0], want, strlen(want)), "%s: %s", dir, files[0]);
		ck_assert_str_eq(files[1], "trigger.json");
		t_free_list(files, n);
		t = load_trigger(dir);
		ck_assert_str_eq(str_member(t, "rule"), rules[i]);
		snprintf(dir, sizeof(dir), "%s/%s", root, names[i]);
		ck_assert_str_eq(str_member(t, "window"), dir);
		json_object_put(t);
	}
	cleanup(root);
}
END_TEST

/* ---- 5: the persist limit, nothing twice --------------------------------------------------- */

START_TEST(test_persist_limit)
{
	char *root = t_tmpdir("window_lim");
	struct adump_config cfg = window_config(root, ADUMP_OUTPUT_CANN, 3);
	struct plan p = PLAN_INIT;
	struct outcome o;
	char w1[4200], w3[4200];

	/* Two triggers (a call at step 1, a NaN at step 3), one window allowed. */
	cfg.window_persists = 1;
	p.call_step = 1;
	p.call_reason = "first";
	p.bad_step = 3;
	p.bad_op = 0;
	p.bad_value = NAN;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[1].persists, 1);
	ck_assert_uint_eq(o.info[1].persists_skipped, 0);
	ck_assert_uint_eq(o.info[3].persists, 1);
	ck_assert_uint_eq(o.info[3].persists_skipped, 1);
	ck_assert(!o.info[3].is_pending);
	snprintf(w1, sizeof(w1), "%s/window-1", root);
	snprintf(w3, sizeof(w3), "%s/window-3", root);
	ck_assert(exists(w1));
	ck_assert(!exists(w3));
	ck_assert_uint_eq(window_dirs(root), 1);
	cleanup(root);
}
END_TEST

START_TEST(test_second_trigger_writes_only_new_steps)
{
	char *root = t_tmpdir("window_twice");
	char w1[4200], w2[4200];
	struct adump_config cfg = window_config(root, ADUMP_OUTPUT_CANN, 4);
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct json_object *t;
	struct filter f = { .lo = -1, .no_trigger = true }, s34 = { .lo = 3, .hi = 4 };
	size_t n1, n2;
	char **l1, **l2;

	/* Triggers at step 2 (a call) and step 4 (a NaN): the second holds 3..4 only. */
	p.steps = 6;
	p.call_step = 2;
	p.call_reason = "one";
	p.bad_step = 4;
	p.bad_op = 0;
	p.bad_value = NAN;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[2].persists, 1);
	ck_assert_uint_eq(o.info[4].persists, 2);
	ck_assert_uint_eq(o.info[5].persists, 2);
	ck_assert_uint_eq(window_dirs(root), 2);
	snprintf(w1, sizeof(w1), "%s/window-2", root);
	snprintf(w2, sizeof(w2), "%s/window-4", root);
	t = trigger_of(root, 4);
	check_steps(t, 3, 4);
	json_object_put(t);
	t = trigger_of(root, 2);
	check_steps(t, 0, 2);
	json_object_put(t);
	l1 = list_kept(w1, &f, &n1);
	l2 = list_kept(w2, &f, &n2);
	ck_assert_uint_eq(n1, 3 * p.ops);
	ck_assert_uint_eq(n2, 2 * p.ops);
	for (size_t i = 0; i < n2; i++) {
		ck_assert(keep(&s34, l2[i]));
		for (size_t j = 0; j < n1; j++)
			ck_assert_str_ne(l1[j], l2[i]);
	}
	t_free_list(l1, n1);
	t_free_list(l2, n2);
	cleanup(root);
}
END_TEST

#ifdef T_HAVE_TESTPOINTS
/* The disk fails while a window is written: that dump is a loss of the window, the step
 * reports the error, the rest of the window and every statistic are there, capture goes on. */
START_TEST(test_disk_error_while_persisting)
{
	char *root = t_tmpdir("window_enospc");
	char win[4200], win_saved[4200], wdir[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	struct filter all = { .lo = -1 }, stats_side = { .lo = -1, .no_windows = true },
		      f = { .lo = -1, .no_trigger = true };
	size_t n, tensors = 0, listed = 0;
	char **files;
	char *text, *line, *save;

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(win_saved, sizeof(win_saved), "%s/win_saved", root);
	p.steps = 5;
	p.bad_step = 3;
	p.bad_op = 0;
	p.bad_value = NAN;
	p.fault = "worker.open";
	p.fault_err = -ENOSPC;
	p.fault_nth = 2;
	p.fault_step = 3;
	cfg = window_config(win, ADUMP_OUTPUT_CANN, 2);
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.step_ret[2], 0);
	ck_assert_int_eq(o.step_ret[3], -ENOSPC);
	ck_assert_int_eq(o.step_ret[4], 0);
	ck_assert_uint_eq(o.info[3].persists, 1);
	ck_assert_int_eq(o.destroy_ret, 0);
	snprintf(wdir, sizeof(wdir), "%s/window-3/" TIME_DIR, win);
	files = list_kept(wdir, &f, &n);
	for (size_t i = 0; i < n; i++) {
		/* the failed one never opened: no .part, no .failed */
		ck_assert_msg(!strstr(files[i], ".part") && !strstr(files[i], ".failed"), "%s",
			      files[i]);
		if (strcmp(files[i], "adump-losses.jsonl"))
			tensors++;
	}
	t_free_list(files, n);
	ck_assert_uint_eq(tensors, 2 * p.ops - 1);
	text = t_slurp(wdir, "adump-losses.jsonl");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct json_object *l = json_tokener_parse(line), *c;

		ck_assert_ptr_nonnull(l);
		ck_assert(json_object_object_get_ex(l, "cause", &c));
		ck_assert_str_eq(json_object_get_string(c), "enospc");
		json_object_put(l);
		listed++;
	}
	free(text);
	ck_assert_uint_eq(listed, 2);           /* the failed dump's input and output */
	/* Every step's statistics, as a statistics session writes them. */
	set_aside(win, win_saved);
	cfg = base_config(win, ADUMP_OUTPUT_CANN);
	cfg.content = ADUMP_CONTENT_STATS;
	p.fault = NULL;
	p.fault_step = -1;
	run(&cfg, &p, &r);
	ck_assert_uint_eq(same_tree(win_saved, &stats_side, win, &all), p.steps * p.ops);
	cleanup(root);
}
END_TEST
#endif

/* The lines of @dir/adump-losses.jsonl without their time, sorted. */
static char **loss_lines(const char *dir, size_t *count)
{
	char *text = t_slurp(dir, "adump-losses.jsonl"), *line, *save;
	char **lines = calloc(64, sizeof(*lines));
	size_t n = 0;

	ck_assert_ptr_nonnull(lines);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct json_object *l = json_tokener_parse(line);

		ck_assert_msg(l != NULL && n < 64, "%s", line);
		json_object_object_del(l, "time");
		lines[n++] = strdup(json_object_to_json_string_ext(l, JSON_C_TO_STRING_PLAIN));
		json_object_put(l);
	}
	free(text);
	qsort(lines, n, sizeof(*lines), cmp_text);
	*count = n;
	return lines;
}

/* A dump its producer's check refused (zero copy, memory changed) in a window: the window's
 * loss log lists it as the tensor capture's does (cause changed_before_written), the rest of
 * the window is whole. */
START_TEST(test_rejected_dump_in_window)
{
	char *root = t_tmpdir("window_reject");
	char win[4200], saved[4200], wroot[4200], wdir[4200], rdir[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	struct filter w = { .lo = -1, .no_trigger = true }, held = { .lo = 2, .hi = 3 };
	size_t nw, nr;
	char **lw, **lr;

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(saved, sizeof(saved), "%s/saved", root);
	p.steps = 4;
	p.bad_step = 3;
	p.bad_op = 3;
	p.bad_value = NAN;
	p.reject_step = 3;
	p.reject_op = 1;
	cfg = window_config(win, ADUMP_OUTPUT_CANN, 2);
	run(&cfg, &p, &o);
	ck_assert_uint_eq(o.info[3].persists, 1);
	snprintf(wroot, sizeof(wroot), "%s/window-3", win);
	set_aside(wroot, saved);
	cfg = base_config(wroot, ADUMP_OUTPUT_CANN);
	run(&cfg, &p, &r);
	ck_assert_uint_eq(r.stats.files_failed, 1);
	/* The same loss lines (the same file, op, tensors, cause), the same whole dumps. */
	snprintf(wdir, sizeof(wdir), "%s/" TIME_DIR, saved);
	snprintf(rdir, sizeof(rdir), "%s/" TIME_DIR, wroot);
	lw = loss_lines(wdir, &nw);
	lr = loss_lines(rdir, &nr);
	ck_assert_uint_eq(nw, 2);
	ck_assert_uint_eq(nw, nr);
	for (size_t i = 0; i < nw; i++) {
		ck_assert_str_eq(lw[i], lr[i]);
		ck_assert(strstr(lw[i], "\"cause\":\"changed_before_written\""));
	}
	t_free_list(lw, nw);
	t_free_list(lr, nr);
	/* The refused dump: the tensor capture leaves <name>.failed, the window nothing. */
	held.no_trigger = true;
	{
		size_t n, m = 0;
		char **files = list_kept(wroot, &held, &n);

		for (size_t i = 0; i < n; i++) {
			char pa[4200], pb[4200];

			if (strstr(files[i], ".failed") || strstr(files[i], "adump-losses"))
				continue;
			snprintf(pa, sizeof(pa), "%s/%s", saved, files[i]);
			snprintf(pb, sizeof(pb), "%s/%s", wroot, files[i]);
			ck_assert_msg(same_bytes(pa, pb), "%s and %s differ", pa, pb);
			m++;
		}
		ck_assert_uint_eq(m, 2 * p.ops - 1);
		t_free_list(files, n);
		files = list_kept(saved, &w, &n);
		ck_assert_uint_eq(n, 2 * p.ops - 1 + 1);        /* and the loss log */
		t_free_list(files, n);
	}
	/* The statistics: as a statistics session writes them, the loss log included. */
	{
		char stats[4200];
		/* the loss logs' times differ: their lines are compared above */
		struct filter all = { .lo = -1, .no_losses = true },
			      no_windows = { .lo = -1, .no_windows = true, .no_losses = true };
		size_t ns, nl;
		char **ls, **ll;

		snprintf(stats, sizeof(stats), "%s/stats", root);
		set_aside(win, stats);
		cfg = base_config(win, ADUMP_OUTPUT_CANN);
		cfg.content = ADUMP_CONTENT_STATS;
		run(&cfg, &p, &r);
		snprintf(wdir, sizeof(wdir), "%s/" TIME_DIR, stats);
		snprintf(rdir, sizeof(rdir), "%s/" TIME_DIR, win);
		ls = loss_lines(wdir, &ns);
		ll = loss_lines(rdir, &nl);
		ck_assert_uint_eq(ns, nl);
		for (size_t i = 0; i < ns; i++)
			ck_assert_str_eq(ls[i], ll[i]);
		t_free_list(ls, ns);
		t_free_list(ll, nl);
		ck_assert_uint_eq(same_tree(stats, &no_windows, win, &all), p.steps * p.ops - 1);
	}
	cleanup(root);
}
END_TEST

/* A window of one chunk and steps of large dumps: only the descriptions of some fit (stubs,
 * listed as window_full), the rest counted in trigger.json's dumps_not_listed, for the steps
 * the window holds only; every statistic is still written. */
START_TEST(test_window_of_one_chunk)
{
	char *root = t_tmpdir("window_tiny");
	char wdir[4200], sdir[4200];
	struct adump_config cfg = window_config(root, ADUMP_OUTPUT_CANN, 2);
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct json_object *t;
	size_t listed = 0, stubs;
	uint64_t unlisted;
	char *text, *line, *save;

	cfg.window_bytes = CHUNK;
	p.ops = 8;
	p.steps = 4;
	p.bad_step = 3;
	p.bad_op = 7;
	p.bad_value = NAN;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	for (unsigned k = 0; k < p.steps; k++) {
		ck_assert_uint_eq(o.info[k].lost_dumps, (k + 1) * p.ops);
		ck_assert_uint_le(o.info[k].held_bytes, CHUNK);
	}
	snprintf(wdir, sizeof(wdir), "%s/window-3/" TIME_DIR, root);
	t = load_trigger(wdir);
	check_steps(t, 3, 3);
	unlisted = (uint64_t)json_object_get_int64(member(t, "dumps_not_listed"));
	json_object_put(t);
	text = t_slurp(wdir, "adump-losses.jsonl");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		ck_assert_msg(strstr(line, "\"cause\":\"window_full\"") &&
			      strstr(line, ".3.forward\""), "%s", line);
		listed++;
	}
	free(text);
	ck_assert_uint_eq(listed % 2, 0);
	stubs = listed / 2;
	ck_assert_uint_gt(stubs, 0);
	ck_assert_uint_lt(stubs, p.ops);
	/* The step's dumps: each listed, or counted; none of another step. */
	ck_assert_uint_eq(stubs + unlisted, p.ops);
	snprintf(sdir, sizeof(sdir), "%s/" TIME_DIR, root);
	ck_assert_uint_eq(t_count_files(sdir, ".csv"), p.steps * p.ops);
	cleanup(root);
}
END_TEST

/* ---- 6: memory ------------------------------------------------------------------------------- */

START_TEST(test_old_steps_evicted)
{
	char *root = t_tmpdir("window_evict");
	char win[4200], ref[4200], wroot[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	uint64_t step_bytes = 0;
	struct json_object *t;
	struct json_object *steps;
	unsigned lo;

	for (unsigned i = 0; i < p.ops; i++)
		step_bytes += 2 * elems_of(i) * 4;
	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(ref, sizeof(ref), "%s/ref", root);
	cfg = window_config(win, ADUMP_OUTPUT_CANN, 8);
	/* Room for about two and a half steps of eight. */
	cfg.window_bytes = step_bytes * 5 / 2;
	p.steps = 7;
	p.bad_step = 6;
	p.bad_op = 3;
	p.bad_value = NAN;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	for (unsigned k = 0; k < 6; k++) {
		ck_assert_uint_le(o.info[k].held_bytes, cfg.window_bytes);
		ck_assert_uint_le(o.info[k].held_steps, 3);
		ck_assert_uint_eq(o.info[k].lost_dumps, 0);
	}
	ck_assert_uint_ge(o.info[5].held_steps, 2);
	snprintf(wroot, sizeof(wroot), "%s/window-6", win);
	t = trigger_of(win, 6);
	steps = member(t, "steps");
	ck_assert_uint_ge(json_object_array_length(steps), 2);
	ck_assert_uint_le(json_object_array_length(steps), 3);
	lo = 7 - (unsigned)json_object_array_length(steps);
	check_steps(t, lo, 6);
	json_object_put(t);
	set_aside(wroot, ref);
	cfg = base_config(wroot, ADUMP_OUTPUT_CANN);
	run(&cfg, &p, &r);
	{
		struct filter w = { .lo = -1, .no_trigger = true }, held = { .lo = (int)lo, .hi = 6 };

		ck_assert_uint_eq(same_tree(ref, &w, wroot, &held), (7 - lo) * p.ops);
	}
	cleanup(root);
}
END_TEST

START_TEST(test_step_larger_than_window)
{
	char *root = t_tmpdir("window_full");
	char win[4200], ref[4200], loss[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o, r;
	uint64_t step_bytes = 0;
	size_t n, listed = 0, held;
	char **files;
	char *text, *line, *save;

	p.ops = 6;
	for (unsigned i = 0; i < p.ops; i++)
		step_bytes += 2 * elems_of(i) * 4;
	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(ref, sizeof(ref), "%s/ref", root);
	cfg = window_config(win, ADUMP_OUTPUT_CANN, 2);
	cfg.window_bytes = step_bytes / 2;
	p.steps = 2;
	p.bad_step = 1;
	p.bad_op = 0;
	p.bad_value = NAN;
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_gt(o.info[1].lost_dumps, 0);
	ck_assert_uint_lt(o.info[1].lost_dumps, p.ops * 2);
	/* What fits is whole and the reference's bytes; the rest is in the loss log. */
	{
		char dir[4200];
		struct filter w = { .lo = -1, .no_trigger = true };
		size_t i;

		snprintf(dir, sizeof(dir), "%s/window-1", win);
		set_aside(dir, ref);
		cfg = base_config(dir, ADUMP_OUTPUT_CANN);
		run(&cfg, &p, &r);
		files = list_kept(ref, &w, &n);
		held = 0;
		for (i = 0; i < n; i++) {
			char pa[4200], pb[4200];

			if (strstr(files[i], "adump-losses.jsonl"))
				continue;
			snprintf(pa, sizeof(pa), "%s/%s", ref, files[i]);
			snprintf(pb, sizeof(pb), "%s/%s", dir, files[i]);
			ck_assert_msg(same_bytes(pa, pb), "%s and %s differ", pa, pb);
			held++;
		}
		t_free_list(files, n);
		ck_assert_uint_gt(held, 0);
		snprintf(loss, sizeof(loss), "%s/" TIME_DIR, ref);
	}
	text = t_slurp(loss, "adump-losses.jsonl");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct json_object *l = json_tokener_parse(line), *c;

		ck_assert_ptr_nonnull(l);
		ck_assert(json_object_object_get_ex(l, "cause", &c));
		ck_assert_str_eq(json_object_get_string(c), "window_full");
		json_object_put(l);
		listed++;
	}
	free(text);
	/* Each lost dump lists its two tensors; the window holds step 1 alone (step 0 made
	 * room), every dump of it held whole or listed. */
	{
		struct json_object *t = load_trigger(loss);

		check_steps(t, 1, 1);
		json_object_put(t);
	}
	ck_assert_uint_eq(listed, 2 * (o.info[1].lost_dumps - o.info[0].lost_dumps));
	ck_assert_uint_eq(held + (o.info[1].lost_dumps - o.info[0].lost_dumps), p.ops);
	cleanup(root);
}
END_TEST

/* ---- 7: configurations refused, calls outside window mode ---------------------------------- */

START_TEST(test_bad_config)
{
	char *root = t_tmpdir("window_cfg");
	struct adump_bound good = { .pattern = "*", .max_abs = 1 };
	struct adump_bound bad_bounds[] = {
		{ .pattern = NULL, .max_abs = 1 },
		{ .pattern = "", .max_abs = 1 },
		{ .pattern = "*", .max_abs = 0 },
		{ .pattern = "*", .max_abs = -3 },
		{ .pattern = "*", .max_abs = NAN },
		{ .pattern = "*", .max_abs = INFINITY },
	};
	struct adump_session *s = NULL;
	struct adump_config cfg;
	int cases = 0;

#define REFUSE(stmt)										\
	do {											\
		cfg = window_config(root, ADUMP_OUTPUT_CANN, 2);				\
		stmt;										\
		ck_assert_msg(adump_config_check(&cfg) == -ADUMP_ERR_CONFIG, "accepted: %s",	\
			      #stmt);								\
		s = NULL;									\
		ck_assert_int_eq(adump_session_create(&cfg, &s), -ADUMP_ERR_CONFIG);		\
		ck_assert_ptr_null(s);								\
		cases++;									\
	} while (0)

	REFUSE(cfg.content = ADUMP_CONTENT_STATS);
	REFUSE(cfg.layout = ADUMP_LAYOUT_PACKED);
	REFUSE(cfg.compress = ADUMP_COMPRESS_LZ4);
	REFUSE(cfg.window_bytes = CHUNK - 1);
	REFUSE(cfg.triggers = 1u << 5);
	REFUSE(cfg.triggers = ADUMP_TRIGGER_ALL | 0x100);
	REFUSE(cfg.triggers = ADUMP_TRIGGER_BOUND);
	REFUSE((cfg.bounds = &good, cfg.bound_count = 1));
	REFUSE((cfg.triggers = ADUMP_TRIGGER_BOUND, cfg.bounds = NULL, cfg.bound_count = 1));
	for (unsigned i = 0; i < sizeof(bad_bounds) / sizeof(bad_bounds[0]); i++)
		REFUSE((cfg.triggers = ADUMP_TRIGGER_BOUND, cfg.bounds = &bad_bounds[i],
			cfg.bound_count = 1));
	REFUSE((cfg.triggers = ADUMP_TRIGGER_DEVIATION, cfg.deviation = -0.5));
	REFUSE((cfg.triggers = ADUMP_TRIGGER_DEVIATION, cfg.deviation = NAN));
	REFUSE((cfg.triggers = ADUMP_TRIGGER_DEVIATION, cfg.deviation = INFINITY));
	REFUSE(cfg.deviation = 0.5);            /* without the deviation trigger */
	REFUSE(cfg.deviation_steps = 4);
	REFUSE((cfg.window_steps = 0, cfg.window_bytes = 1u << 20));
	REFUSE((cfg.window_steps = 0, cfg.window_persists = 2));
	REFUSE((cfg.window_steps = 0, cfg.triggers = ADUMP_TRIGGER_NONFINITE));
	REFUSE((cfg.window_steps = 0, cfg.deviation = 1));
	REFUSE((cfg.window_steps = 0, cfg.deviation_steps = 3));
	REFUSE((cfg.window_steps = 0, cfg.bounds = &good, cfg.bound_count = 1));
	ck_assert_int_eq(cases, 26);
#undef REFUSE

	/* What is right passes, so the refusals above are of the field named. */
	cfg = window_config(root, ADUMP_OUTPUT_CANN, 2);
	cfg.window_bytes = CHUNK;
	cfg.triggers = ADUMP_TRIGGER_ALL & ~ADUMP_TRIGGER_SIGNAL;
	cfg.bounds = &good;
	cfg.bound_count = 1;
	cfg.deviation = 0.5;
	cfg.deviation_steps = 4;
	ck_assert_int_eq(adump_config_check(&cfg), 0);
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	ck_assert_int_eq(adump_session_destroy(s), 0);

	/* Outside window mode: the window calls are refused. */
	cfg = base_config(root, ADUMP_OUTPUT_CANN);
	ck_assert_int_eq(adump_session_create(&cfg, &s), 0);
	{
		struct adump_window_info info;

		ck_assert_int_eq(adump_session_persist(s, "x"), -ADUMP_ERR_STATE);
		ck_assert_int_eq(adump_session_persist_note(s, "{}"), -ADUMP_ERR_STATE);
		ck_assert_int_eq(adump_session_window(s, &info), -ADUMP_ERR_STATE);
		ck_assert_int_eq(adump_session_step(s), 0);
	}
	ck_assert_int_eq(adump_session_destroy(s), 0);
	ck_assert_int_eq(adump_session_persist(NULL, "x"), -EINVAL);
	cleanup(root);
}
END_TEST

/* ---- 8: the callback sink ------------------------------------------------------------------ */

struct cb_file {
	char *name;
	unsigned char *bytes;
	size_t len;
	bool is_last;
};

struct collector {
	pthread_mutex_t lock;
	struct cb_file files[256];
	unsigned count;
	unsigned bad;
};

static int collect(const struct adump_chunk *c, void *user)
{
	struct collector *col = user;
	struct cb_file *f = NULL;

	pthread_mutex_lock(&col->lock);
	for (unsigned i = 0; i < col->count; i++)
		if (!strcmp(col->files[i].name, c->file_name))
			f = &col->files[i];
	if (!f && col->count < 256) {
		f = &col->files[col->count++];
		f->name = strdup(c->file_name);
	}
	if (!f || f->is_last) {
		col->bad++;
	} else {
		if (c->offset + c->len > f->len) {
			f->bytes = realloc(f->bytes, c->offset + c->len);
			memset(f->bytes + f->len, 0, c->offset + c->len - f->len);
			f->len = c->offset + c->len;
		}
		memcpy(f->bytes + c->offset, c->data, c->len);
		f->is_last = c->is_last;
	}
	pthread_mutex_unlock(&col->lock);
	return 0;
}

static struct collector col = { .lock = PTHREAD_MUTEX_INITIALIZER };
static char col_root[4200], col_out[4200];

/* In the run's child: every file delivered, rebuilt under col_out by its name's path below
 * col_root. */
static void write_collected(void)
{
	size_t prefix = strlen(col_root);

	for (unsigned i = 0; i < col.count; i++) {
		const struct cb_file *f = &col.files[i];
		char path[4200];
		char *slash;
		FILE *out;

		if (strncmp(f->name, col_root, prefix) || f->name[prefix] != '/' || !f->is_last)
			_exit(20);
		snprintf(path, sizeof(path), "%s/%s", col_out, f->name + prefix + 1);
		for (slash = strchr(path + strlen(col_out) + 1, '/'); slash;
		     slash = strchr(slash + 1, '/')) {
			*slash = '\0';
			mkdir(path, 0700);
			*slash = '/';
		}
		out = fopen(path, "wx");
		if (!out || fwrite(f->bytes, 1, f->len, out) != f->len || fclose(out))
			_exit(21);
	}
	if (col.bad)
		_exit(22);
}

/* A window session through the callback sink, then through the file sink at the same
 * dump_path: @files statistics and window files, the same bytes. */
static void callback_sink(enum adump_output_format format, bool set_dir, size_t files)
{
	char *root = t_tmpdir("window_cb");
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o;
	struct filter no_trigger = { .lo = -1, .no_trigger = true };
	struct json_object *t;
	char dir[4200];
	size_t na, nb;
	char **la, **lb;

	snprintf(col_root, sizeof(col_root), "%s/cap", root);
	snprintf(col_out, sizeof(col_out), "%s/rebuilt", root);
	ck_assert_int_eq(mkdir(col_out, 0700), 0);
	p.set_dir = set_dir;
	p.bad_step = 3;
	p.bad_op = 1;
	p.bad_value = NAN;
	cfg = window_config(col_root, format, 2);
	cfg.sink = ADUMP_SINK_CALLBACK;
	cfg.chunk_fn = collect;
	cfg.chunk_user = &col;
	after_run = write_collected;
	run(&cfg, &p, &o);
	after_run = NULL;
	ck_assert_int_eq(o.destroy_ret, 0);
	ck_assert_uint_eq(o.info[3].persists, 1);
	ck_assert_uint_eq(window_dirs(col_out), 1);
	ck_assert_uint_eq(t_count_files(col_root, ""), 0);     /* chunks, no files */
	t_rmtree(col_root);
	cfg = window_config(col_root, format, 2);
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	/* Every file the file sink wrote came as chunks with the same bytes, and nothing else. */
	la = list_kept(col_out, &no_trigger, &na);
	lb = list_kept(col_root, &no_trigger, &nb);
	ck_assert_uint_eq(na, files);
	ck_assert_uint_eq(na, nb);
	for (size_t i = 0; i < na; i++) {
		char pa[4200], pb[4200];
		size_t len_a, len_b;
		unsigned char *a, *b;
		bool is_csv = strstr(la[i], ".csv") != NULL;

		ck_assert_str_eq(la[i], lb[i]);
		snprintf(pa, sizeof(pa), "%s/%s", col_out, la[i]);
		snprintf(pb, sizeof(pb), "%s/%s", col_root, lb[i]);
		a = t_read_file(pa, &len_a);
		b = t_read_file(pb, &len_b);
		/* A CSV comes NUL-terminated, as CANN's host writer gives it. */
		ck_assert_uint_eq(len_a, len_b + is_csv);
		ck_assert_msg(!memcmp(a, b, len_b) && (!is_csv || a[len_b] == 0), "%s differs", pa);
		free(a);
		free(b);
	}
	t_free_list(la, na);
	t_free_list(lb, nb);
	/* trigger.json (its time differs) as JSON. */
	if (set_dir)
		snprintf(dir, sizeof(dir), "%s/window-3/step3/rank0", col_out);
	else
		snprintf(dir, sizeof(dir), "%s/window-3/" TIME_DIR, col_out);
	t = load_trigger(dir);
	ck_assert_str_eq(str_member(t, "rule"), "nonfinite");
	ck_assert_str_eq(str_member(t, "value"), "nan");
	check_steps(t, 2, 3);
	json_object_put(t);
	cleanup(root);
}

START_TEST(test_callback_sink)
{
	/* the statistics of 6 steps x 4 ops, the window's 2 x 4 tensor files */
	callback_sink(ADUMP_OUTPUT_CANN, false, 6 * 4 + 2 * 4);
}
END_TEST

/* A directory per step (msprobe takes the file sink only). */
START_TEST(test_callback_sink_set_dir)
{
	callback_sink(ADUMP_OUTPUT_CANN, true, 6 * 4 + 2 * 4);
}
END_TEST

/* ---- 9: adump verify and adump scan on a window ------------------------------------------- */

/* ADUMP_TOOL with @argv (NULL-terminated, argv[0] included), no shell; stdout and stderr into
 * @out/stdout and @out/stderr. Return: the exit status. */
static int run_tool(const char *out, char *const argv[])
{
	char o[4200], e[4200];
	pid_t pid;
	int status;

	snprintf(o, sizeof(o), "%s/stdout", out);
	snprintf(e, sizeof(e), "%s/stderr", out);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(126);
		execv(ADUMP_TOOL, argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void tools_on(enum adump_output_format format, bool set_dir)
{
	char *root = t_tmpdir("window_tool");
	char win[4200], out[4200], wroot[4200];
	struct adump_config cfg;
	struct plan p = PLAN_INIT;
	struct outcome o;
	char *text;

	snprintf(win, sizeof(win), "%s/win", root);
	snprintf(out, sizeof(out), "%s/out", root);
	ck_assert_int_eq(mkdir(out, 0700), 0);
	p.bad_step = 4;
	p.bad_op = 2;
	p.bad_value = NAN;
	p.set_dir = set_dir;
	cfg = window_config(win, format, 3);
	run(&cfg, &p, &o);
	ck_assert_int_eq(o.destroy_ret, 0);
	snprintf(wroot, sizeof(wroot), "%s/window-4", win);
	{
		char *argv[] = { "adump", "verify", wroot, NULL };
		int rc = run_tool(out, argv);

		text = t_slurp(out, "stderr");
		ck_assert_msg(rc == 0, "verify: %d: %s", rc, text);
		free(text);
		/* Every dump (and msprobe's dump.json) checked; trigger.json (one per directory
		 * the window wrote) is not a dump. */
		unsigned dirs = set_dir ? 3 : 1, ok = format == ADUMP_OUTPUT_CANN ? 12 :
							   24 + dirs;
		char want[256];

		snprintf(want, sizeof(want), "verify: %u files: %u ok, 0 bad, 0 .part leftover, "
			 "0 failed, %u skipped as not dumps (.csv, .json, .html): passed",
			 ok + dirs, ok, dirs);
		text = t_slurp(out, "stdout");
		ck_assert_msg(strstr(text, want), "verify: %s", text);
		free(text);
	}
	{
		char *argv[] = { "adump", "scan", "--json", "--quiet", "--threads", "1", wroot,
				 NULL };
		int rc = run_tool(out, argv);
		char *pos;
		bool found = false;

		text = t_slurp(out, "stdout");
		ck_assert_msg(rc == 1, "scan: %d: %s", rc, text);
		/* One object per line: the origin is layer2 of step 4. */
		for (pos = strtok(text, "\n"); pos; pos = strtok(NULL, "\n")) {
			struct json_object *l = json_tokener_parse(pos), *v;

			ck_assert_msg(l != NULL, "scan printed %s", pos);
			if (json_object_object_get_ex(l, "kind", &v) &&
			    !strcmp(json_object_get_string(v), "origin")) {
				ck_assert(json_object_object_get_ex(l, "op_name", &v));
				ck_assert_str_eq(json_object_get_string(v),
						 "Functional.layer2.4.forward");
				found = true;
			}
			json_object_put(l);
		}
		ck_assert_msg(found, "scan named no origin");
		free(text);
		text = t_slurp(out, "stderr");
		ck_assert_msg(!strstr(text, "trigger.json"), "scan: %s", text);
		free(text);
	}
	{
		char cmp[4200];
		char *argv[] = { "adump", "compare", "--recursive", "-m", wroot, "-g",
				 wroot, "-out", cmp, NULL };
		int rc;

		snprintf(cmp, sizeof(cmp), "%s/cmp", root);
		ck_assert_int_eq(mkdir(cmp, 0700), 0);
		rc = run_tool(out, argv);
		text = t_slurp(out, "stderr");
		ck_assert_msg(rc == 0, "compare: %d: %s", rc, text);
		ck_assert_msg(!strstr(text, "trigger.json"), "compare: %s", text);
		ck_assert_msg(strstr(text, set_dir ? "3 pairs compared" : "1 pairs compared") &&
			      strstr(text, "no divergent op in any pair"), "compare: %s", text);
		free(text);
	}
	cleanup(root);
}

START_TEST(test_verify_scan_cann)
{
	tools_on(ADUMP_OUTPUT_CANN, false);
	tools_on(ADUMP_OUTPUT_CANN, true);
}
END_TEST

START_TEST(test_verify_scan_msprobe)
{
	tools_on(ADUMP_OUTPUT_MSPROBE, false);
	tools_on(ADUMP_OUTPUT_MSPROBE, true);
}
END_TEST

static Suite *window_suite(void)
{
	Suite *s = suite_create("window");
	TCase *eq = tcase_create("equality"), *tr = tcase_create("triggers"),
	      *mem = tcase_create("memory"), *cf = tcase_create("config"),
	      *tools = tcase_create("tools");

	tcase_set_timeout(eq, 120);
	tcase_add_test(eq, test_cann_window_equals_tensor_capture);
	tcase_add_test(eq, test_cann_window_equals_tensor_capture_set_dir);
	tcase_add_test(eq, test_msprobe_window_equals_tensor_capture);
	tcase_add_test(eq, test_msprobe_window_equals_tensor_capture_set_dir);
	tcase_add_test(eq, test_zero_copy_window_equals_tensor_capture);
	tcase_add_test(eq, test_msprobe_md5_window_equals_tensor_capture);
	tcase_add_test(eq, test_two_streams_window_equals_tensor_capture);
	t_tcase_add_test_needing(eq, T_DIRECT, test_io_auto_window_equals_tensor_capture);
	tcase_add_test(eq, test_device_window_equals_tensor_capture);
	tcase_add_test(eq, test_callback_sink);
	tcase_add_test(eq, test_callback_sink_set_dir);
	suite_add_tcase(s, eq);
	tcase_set_timeout(tr, 120);
	tcase_add_test(tr, test_trigger_nan);
	tcase_add_test(tr, test_trigger_inf);
	tcase_add_test(tr, test_trigger_neg_inf);
	tcase_add_test(tr, test_trigger_inf_from_the_start);
	tcase_add_test(tr, test_trigger_bound);
	tcase_add_test(tr, test_trigger_not_asked_for);
	tcase_add_test(tr, test_trigger_deviation);
	tcase_add_test(tr, test_trigger_call_and_note);
	tcase_add_test(tr, test_trigger_signal);
	tcase_add_test(tr, test_signal_while_a_file_is_written);
	tcase_add_test(tr, test_signal_two_sessions);
	tcase_add_test(tr, test_signal_sessions_on_two_threads);
	tcase_add_test(tr, test_signal_storm);
	tcase_add_test(tr, test_three_windows_of_one_step);
	tcase_add_test(tr, test_trigger_of_last_step_persisted_at_destroy);
	tcase_add_test(tr, test_persist_limit);
	tcase_add_test(tr, test_second_trigger_writes_only_new_steps);
	suite_add_tcase(s, tr);
	tcase_set_timeout(mem, 120);
	tcase_add_test(mem, test_old_steps_evicted);
	tcase_add_test(mem, test_step_larger_than_window);
#ifdef T_HAVE_TESTPOINTS
	tcase_add_test(mem, test_disk_error_while_persisting);
#else
	printf("test_disk_error_while_persisting: skipped: built without testpoints\n");
#endif
	tcase_add_test(mem, test_rejected_dump_in_window);
	tcase_add_test(mem, test_window_of_one_chunk);
	suite_add_tcase(s, mem);
	tcase_set_timeout(cf, 60);
	tcase_add_test(cf, test_bad_config);
	suite_add_tcase(s, cf);
	tcase_set_timeout(tools, 120);
	tcase_add_test(tools, test_verify_scan_cann);
	tcase_add_test(tools, test_verify_scan_msprobe);
	suite_add_tcase(s, tools);
	return s;
}

int main(void)
{
	return t_run_suite(window_suite());
}
