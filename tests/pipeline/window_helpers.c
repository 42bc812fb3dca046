/* SPDX-License-Identifier: Apache-2.0 */
/* The window mode tests' workload, its run in a child process, trees of files compared and
 * trigger.json read (window_helpers.h). */
#include <dirent.h>
#include <errno.h>
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

#include "adump/host.h"
#include "capture_helpers.h"
#include "window_helpers.h"

unsigned tw_elems_mult = 1;
enum tw_keyed tw_keyed;

uint64_t tw_elems_of(unsigned op)
{
	return (ELEMS + 517u * op) * (uint64_t)tw_elems_mult;
}

float tw_value(const struct plan *p, unsigned step, unsigned slot, uint64_t e)
{
	double scale = p->scales ? p->scales[step] : 1.0;

	return (float)(scale * ((double)((e * 7 + slot * 13 + step * 3) % 101) / 50.0 - 1.0));
}

/* The tensors of op @op at @step: input = the previous op's output. */
static void fill(const struct plan *p, unsigned step, unsigned op, float *in, float *out)
{
	uint64_t n = tw_elems_of(op);

	for (uint64_t e = 0; e < n; e++) {
		in[e] = tw_value(p, step, op, e);
		out[e] = tw_value(p, step, op + 1, e);
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

void tw_wait_persists(struct adump_session *s, unsigned want, struct adump_window_info *info)
{
	for (int i = 0; i < 20000; i++) {       /* a bound on a hang, not a timing check */
		ck_assert_int_eq(adump_session_window(s, info), 0);
		if (info->persists >= want)
			return;
		usleep(1000);
	}
	ck_abort_msg("the signal's persist did not happen");
}

atomic_uint tw_release_count;

void tw_released(void *user, uint32_t task_id, int status)
{
	(void)user;
	(void)task_id;
	(void)status;
	atomic_fetch_add(&tw_release_count, 1);
}

/* Zero-copy dumps' memory: a tensor of its own per stream, step, op and side, which a
 * window may hold by reference for steps; mapped by the parent before the first run's fork,
 * so that every run's child has them at the same addresses (the headers record them). */
#define ZC_TENSOR_FLOATS (ELEMS + 517u * MAX_OPS)
static float *zc_area;

static float *zc_tensor(unsigned stream, unsigned step, unsigned op, unsigned side)
{
	return zc_area + (((stream * MAX_STEPS + step) * MAX_OPS + op) * 2 + side) *
			 (size_t)ZC_TENSOR_FLOATS;
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
	float *shared;                  /* tw_keyed's tensor */
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
	for (unsigned e = 0; tw_keyed && e < SHARED_ELEMS; e++)
		r->shared[e] = tw_value(p, tw_keyed == TW_KEYED_CONSTANT ? 0 : k, MAX_OPS + 1, e);
	for (unsigned i = 0; k >= p->first_step && i < p->ops; i++) {
		struct adump_host_tensor ti[2] = {
			{ .data = r->in, .bytes = tw_elems_of(i) * 4, .dtype = ADUMP_DT_FLOAT,
			  .dim_count = 1, .dims = { (int64_t)tw_elems_of(i) } },
			{ .data = r->shared, .bytes = SHARED_ELEMS * 4, .dtype = ADUMP_DT_FLOAT,
			  .dim_count = 1, .dims = { SHARED_ELEMS } },
		};
		struct adump_host_tensor to = ti[0];
		uint64_t keys[3] = { 0, tw_keyed == TW_KEYED_CONSTANT ? 7 : 1000 + k, 0 };
		struct adump_host_op op = ADUMP_HOST_OP_INIT;
		char name[64], dfx[512];
		struct adump_attr attr = { .name = "step_op", .value = name };
		bool is_rejected = is_first && (int)k == p->reject_step && (int)i == p->reject_op;
		bool is_zc = p->zero_copy || is_rejected;
		float *in = is_zc ? zc_tensor(r->index, k, i, 0) : r->in;
		float *out = is_zc ? zc_tensor(r->index, k, i, 1) : r->out;
		struct plan q = *p;

		ck_assert(!is_zc || (tw_elems_mult == 1 && !tw_keyed));
		if (!is_first)
			q.bad_step = -1;
		ti[0].data = in;
		to.data = out;
		fill(&q, k, i, in, out);
		op_name(p, k, i, name, sizeof(name));
		/* msprobe's entry comes from it; CANN's header records it */
		snprintf(dfx, sizeof(dfx),
			 "{\"input_args\":[{\"type\":\"torch.Tensor\",\"dtype\":"
			 "\"torch.float32\",\"shape\":[%llu],\"requires_grad\":false,"
			 "\"tensor\":\"input.0\"},{\"type\":\"int\",\"value\":%u}],"
			 "\"input_kwargs\":{},\"output\":{\"type\":\"torch.Tensor\","
			 "\"dtype\":\"torch.float32\",\"shape\":[%llu],\"requires_grad\":"
			 "true,\"tensor\":\"output.0\"}}", (unsigned long long)tw_elems_of(i), k,
			 (unsigned long long)tw_elems_of(i));
		op.op_type = "Linear";
		op.op_name = name;
		op.inputs = ti;
		op.input_count = tw_keyed ? 2 : 1;
		if (tw_keyed == TW_KEYED_STEP || tw_keyed == TW_KEYED_CONSTANT)
			op.stats_keys = keys;
		op.outputs = &to;
		op.output_count = 1;
		op.timestamp_us = T0 + k * 1000ull + i * 10ull + r->index * 5ull;
		op.attrs = &attr;
		op.attr_count = 1;
		op.dfx_message = dfx;
		if (is_zc)
			op.release_fn = tw_released;
		if (is_rejected)
			op.check_fn = refuse;
		ck_assert_int_eq(adump_host_dump_op(r->hs, &op, NULL), 0);
		if (is_first && (int)k == p->signal_step && (int)i == p->signal_op) {
			ck_assert_int_eq(adump_host_stream_sync(r->hs), 0);
			ck_assert_int_eq(raise(SIGUSR1), 0);
			tw_wait_persists(r->s, 1, &r->o->signal_info);
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
	atomic_uint signals;
};

static void *storm_main(void *arg)
{
	struct storm *st = arg;

	while (!atomic_load(&st->is_done)) {
		struct adump_window_info info;

		if (atomic_load(&st->signals) % 3 == 0)
			ck_assert_int_eq(adump_session_persist(st->s, "storm"), 0);
		ck_assert_int_eq(adump_session_window(st->s, &info), 0);
		ck_assert_int_eq(kill(getpid(), SIGUSR1), 0);
		atomic_fetch_add(&st->signals, 1);
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
	static float shared[2][SHARED_ELEMS];

	ck_assert(p->steps <= MAX_STEPS && p->ops <= MAX_OPS && streams <= 2 &&
		  tw_elems_mult <= MAX_MULT);
	memset(o, 0, sizeof(*o));
	ck_assert_int_eq(adump_session_create(cfg, &s), 0);
	for (unsigned j = 0; j < streams; j++) {
		struct adump_host_stream_config hcfg = ADUMP_HOST_STREAM_CONFIG_INIT;

		/* Opened here, in order: the same stream ids in every run. */
		hcfg.device_id = p->device_id + j;
		runs[j] = (struct stream_run){ .p = p, .s = s, .o = o, .index = j, .in = in[j],
					       .out = out[j], .shared = shared[j] };
		ck_assert_int_eq(adump_host_stream_open(s, &hcfg, &runs[j].hs), 0);
	}
	storm.s = s;
	if (p->signal_storm)
		ck_assert_int_eq(pthread_create(&storm_thread, NULL, storm_main, &storm), 0);
	for (unsigned k = 0; k < p->steps; k++) {
		unsigned storm_at = atomic_load(&storm.signals);

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
		/* Each step but the quiet last one sees a signal of the storm, whatever the
		 * machine's load: the windows it asks for span the run (on a loaded machine the
		 * steps once ran past a storm that had hardly started). */
		for (unsigned w = 0; p->signal_storm && k + 1 < p->steps &&
				     atomic_load(&storm.signals) == storm_at; w++) {
			ck_assert_msg(w < 100000, "step %u: no signal of the storm in 10 s", k);
			usleep(100);
		}
		if ((int)k == p->call_step)
			ck_assert_int_eq(adump_session_persist(s, p->call_reason), 0);
		if (p->no_last_step && k + 1 == p->steps)
			break;
		if ((int)k == p->fault_step)
			adump_testpoint_arm(p->fault, p->fault_err, p->fault_nth, 0);
		o->step_ret[k] = adump_session_step(s);
		o->released[k] = atomic_load(&tw_release_count);
		if (cfg->window_steps)
			ck_assert_int_eq(adump_session_window(s, &o->info[k]), 0);
	}
	if (cfg->window_steps)
		ck_assert_int_eq(adump_session_window(s, &o->last), 0);
	for (unsigned j = 0; j < streams; j++)
		ck_assert_int_eq(adump_host_stream_close(runs[j].hs), 0);
	adump_stats_get(s, &o->stats);
	o->destroy_ret = adump_session_destroy(s);
	o->released_all = atomic_load(&tw_release_count);
}

/* Called in the child after its run (the callback sink's collector writes its files). */
void (*tw_after_run)(void);

/* run_here() in a child process, so that every capture of a test sees the same stream ids
 * (they are unique in a process; a name holds its stream's). */
void tw_run(const struct adump_config *cfg, const struct plan *p, struct outcome *o)
{
	struct outcome *shared = mmap(NULL, sizeof(*o), PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid;
	int status;

	ck_assert(shared != MAP_FAILED);
	if (!zc_area) {
		zc_area = mmap(NULL, 2u * MAX_STEPS * MAX_OPS * 2u * ZC_TENSOR_FLOATS * sizeof(float),
			       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ck_assert(zc_area != MAP_FAILED);
	}
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		run_here(cfg, p, shared);
		if (tw_after_run)
			tw_after_run();
		exit(0);        /* atexit: the sanitizers' leak check */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "run: status 0x%x", status);
	*o = *shared;
	munmap(shared, sizeof(*o));
}

/* msprobe's summary of every capture a test makes (MD5: the CRC of each tensor's bytes). */
enum adump_summary tw_runs_summary = ADUMP_SUMMARY_STATISTICS;

struct adump_config tw_base_config(const char *root, enum adump_output_format format)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;

	cfg.dump_path = root;
	cfg.time_dir = TIME_DIR;
	cfg.chunk_bytes = CHUNK;
	cfg.pool_bytes = 64u * CHUNK;
	cfg.stream_max = 2;
	cfg.worker_count = 2;
	cfg.format = format;
	cfg.summary = format == ADUMP_OUTPUT_MSPROBE ? tw_runs_summary : ADUMP_SUMMARY_STATISTICS;
	cfg.min_free_bytes = ADUMP_GUARD_OFF;
	return cfg;
}

struct adump_config tw_window_config(const char *root, enum adump_output_format format,
				    unsigned steps)
{
	struct adump_config cfg = tw_base_config(root, format);

	cfg.window_steps = steps;
	return cfg;
}

/* ---- trees of files compared ------------------------------------------------------------- */

int tw_step_of(const char *rel)
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

bool tw_keep(const struct filter *f, const char *rel)
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
		int k = tw_step_of(rel);

		return k >= f->lo && k <= f->hi;
	}
	return true;
}

char **tw_list_kept(const char *dir, const struct filter *f, size_t *count)
{
	size_t n, m = 0;
	char **all = t_list_files(dir, &n);
	char **kept = calloc(n + 1, sizeof(*kept));

	ck_assert_ptr_nonnull(kept);
	for (size_t i = 0; i < n; i++) {
		if (tw_keep(f, all[i]))
			kept[m++] = all[i];
		else
			free(all[i]);
	}
	free(all);
	*count = m;
	return kept;
}

int tw_cmp_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool tw_same_bytes(const char *a, const char *b)
{
	size_t la, lb;
	unsigned char *x = t_read_file(a, &la), *y = t_read_file(b, &lb);
	bool same = x && y && la == lb && memcmp(x, y, la) == 0;

	free(x);
	free(y);
	return same;
}

/* Each of the @n relative paths @files below @a has the bytes of the same path below @b. */
static void same_files(const char *a, const char *b, char **files, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char pa[4200], pb[4200];

		snprintf(pa, sizeof(pa), "%s/%s", a, files[i]);
		snprintf(pb, sizeof(pb), "%s/%s", b, files[i]);
		ck_assert_msg(tw_same_bytes(pa, pb), "%s and %s differ", pa, pb);
	}
}

/* The kept files of @a and @b: the same relative paths, the same bytes. Return: how many. */
size_t tw_same_tree(const char *a, const struct filter *fa, const char *b,
		    const struct filter *fb)
{
	size_t na, nb;
	char **la = tw_list_kept(a, fa, &na), **lb = tw_list_kept(b, fb, &nb);

	for (size_t i = 0; i < na || i < nb; i++) {
		ck_assert_msg(i < na && i < nb && !strcmp(la[i], lb[i]),
			      "file lists differ at %zu: %s/%s vs %s/%s", i, a,
			      i < na ? la[i] : "(none)", b, i < nb ? lb[i] : "(none)");
	}
	same_files(a, b, la, na);
	t_free_list(la, na);
	t_free_list(lb, nb);
	return na;
}

size_t tw_same_in(const char *a, const struct filter *fa, const char *b)
{
	size_t n;
	char **files = tw_list_kept(a, fa, &n);

	same_files(a, b, files, n);
	t_free_list(files, n);
	return n;
}

bool tw_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Entries of @root named window-*. */
unsigned tw_window_dirs(const char *root)
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

struct json_object *tw_load_trigger(const char *dir)
{
	char path[4200];
	struct json_object *o;

	snprintf(path, sizeof(path), "%s/trigger.json", dir);
	o = json_object_from_file(path);
	ck_assert_msg(o != NULL, "%s: %s", path, json_util_get_last_err());
	return o;
}

struct json_object *tw_member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "trigger.json has no %s", key);
	return v;
}

const char *tw_str_member(struct json_object *o, const char *key)
{
	struct json_object *v = tw_member(o, key);

	ck_assert_msg(json_object_is_type(v, json_type_string), "%s is not a string", key);
	return json_object_get_string(v);
}

bool tw_is_null(struct json_object *o, const char *key)
{
	return tw_member(o, key) == NULL;
}

/* trigger.json's steps are @lo..@hi. */
void tw_check_steps(struct json_object *t, unsigned lo, unsigned hi)
{
	struct json_object *steps = tw_member(t, "steps");

	ck_assert(json_object_is_type(steps, json_type_array));
	ck_assert_uint_eq(json_object_array_length(steps), hi - lo + 1);
	for (unsigned k = lo; k <= hi; k++)
		ck_assert_int_eq(json_object_get_int64(json_object_array_get_idx(steps, k - lo)),
				 k);
}

/* The test's directory goes, unless ADUMP_TEST_KEEP is set (to look at it). */
void tw_cleanup(char *root)
{
	if (!getenv("ADUMP_TEST_KEEP"))
		t_rmtree(root);
	free(root);
}

/* @path renamed to @to, so that a reference capture can be written at @path. */
void tw_set_aside(const char *path, const char *to)
{
	ck_assert_msg(rename(path, to) == 0, "rename %s: %s", path, strerror(errno));
}

/* The window of @step under @root: its trigger.json. */
struct json_object *tw_trigger_of(const char *root, unsigned step)
{
	char dir[4200];

	snprintf(dir, sizeof(dir), "%s/window-%u/" TIME_DIR, root, step);
	return tw_load_trigger(dir);
}
