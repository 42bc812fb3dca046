/* SPDX-License-Identifier: Apache-2.0 */
/* Window mode's triggers (window_int.h): each dump's statistics judged as its file ends,
 * under the window's lock; the first trigger of a step is the step's. */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "common/common.h"
#include "pipeline/pipeline_int.h"
#include "pipeline/window_int.h"
#include "pipeline/worker_int.h"

#define MODULE "window"

/* ---- the triggers' memory: per tensor name, whether it ever held an infinity and its last
 * norms (the deviation trigger's) --------------------------------------------------------- */

struct history_item {
	char *name;
	uint64_t seen;                  /* times judged */
	bool had_inf;                   /* an infinity in any of them */
	uint32_t count;                 /* norms held, up to deviation_steps */
	uint32_t next;                  /* where the next one goes */
	double norms[];
};

struct window_history {
	struct history_item **slots;
	uint32_t mask;
	uint32_t used;
	bool is_full_logged;
};

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;    /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

struct window_history *adump_window_history_new(void)
{
	return calloc(1, sizeof(struct window_history));
}

void adump_window_history_free(struct window_history *h)
{
	if (!h)
		return;
	for (uint32_t i = 0; h->slots && i <= h->mask; i++) {
		if (h->slots[i])
			free(h->slots[i]->name);
		free(h->slots[i]);
	}
	free(h->slots);
	free(h);
}

static int history_grow(struct window_history *h)
{
	uint32_t cap = h->slots ? (h->mask + 1) * 2 : 1024;
	struct history_item **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; h->slots && i <= h->mask; i++) {
		struct history_item *it = h->slots[i];
		uint32_t j;

		if (!it)
			continue;
		for (j = (uint32_t)name_hash(it->name) & (cap - 1); slots[j]; j = (j + 1) & (cap - 1))
			;
		slots[j] = it;
	}
	free(h->slots);
	h->slots = slots;
	h->mask = cap - 1;
	return 0;
}

/* The slot of @name in a table that has one: its item, or the empty slot it would take. */
static struct history_item **history_slot(struct window_history *h, const char *name)
{
	uint32_t j;

	for (j = (uint32_t)name_hash(name) & h->mask; h->slots[j]; j = (j + 1) & h->mask)
		if (!strcmp(h->slots[j]->name, name))
			break;
	return &h->slots[j];
}

/* The item of @name, made if new; NULL without memory or past the table's bound. */
static struct history_item *history_get(struct window_history *h, const char *name,
					unsigned steps)
{
	struct history_item **slot, *it;

	if (h->slots && *(slot = history_slot(h, name)))
		return *slot;
	if (!h->slots || (uint64_t)(h->used + 1) * 2 > (uint64_t)h->mask + 1) {
		if (h->used >= ADUMP_WINDOW_HISTORY_MAX || history_grow(h) < 0) {
			if (!h->is_full_logged)
				adump_log(ADUMP_LOG_WARN, MODULE, "more than %u tensor names: "
					  "infinities and deviations of new ones are not judged",
					  ADUMP_WINDOW_HISTORY_MAX);
			h->is_full_logged = true;
			return NULL;
		}
		slot = history_slot(h, name);
	}
	it = calloc(1, sizeof(*it) + steps * sizeof(double));
	if (!it || !(it->name = strdup(name))) {
		free(it);
		return NULL;
	}
	*slot = it;
	h->used++;
	return it;
}

/* ---- triggers ------------------------------------------------------------------------- */

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void adump_window_trigger_free(struct window_trigger *t)
{
	free(t->reason);
	free(t->tensor);
	free(t->op_type);
	free(t->op_name);
	memset(t, 0, sizeof(*t));
}

static void put_value(char *dst, size_t cap, double v)
{
	if (isnan(v))
		snprintf(dst, cap, "\"nan\"");
	else if (isinf(v))
		snprintf(dst, cap, v > 0 ? "\"inf\"" : "\"-inf\"");
	else
		snprintf(dst, cap, "%.17g", v);
}

/* A tensor fired @rule (win->lock held): the step's trigger if it is the first. */
static void fire(struct adump_window *win, const char *rule, const struct adump_op *op,
		 const char *tensor, const char *io, uint32_t index, double value,
		 const double *threshold)
{
	struct window_trigger *t = &win->pending;

	t->fired++;
	if (win->is_pending)
		return;
	win->is_pending = true;
	snprintf(t->rule, sizeof(t->rule), "%s", rule);
	t->tensor = strdup(tensor);
	t->op_type = strdup(op->op_type);
	t->op_name = strdup(op->op_name);
	t->io = io;
	t->index = index;
	t->device_id = op->device_id;
	t->has_tensor = true;
	put_value(t->value, sizeof(t->value), value);
	t->has_threshold = threshold != NULL;
	t->threshold = threshold ? *threshold : 0;
	t->step = win->step;
	t->time_ns = realtime_ns();
	adump_log(ADUMP_LOG_WARN, MODULE, "step %llu: trigger %s fired on %s (value %s): the "
		  "window is written at the step's end", (unsigned long long)win->step, rule,
		  tensor, t->value);
}

/* Largest finite magnitude of a tensor's elements. */
static double max_abs(const struct adump_tstats *ts)
{
	switch (ts->kind) {
	case ADUMP_TSTATS_SINT:
		return fmax(fabs((double)ts->smax), fabs((double)ts->smin));
	case ADUMP_TSTATS_UINT:
	case ADUMP_TSTATS_BOOL:
		return (double)ts->umax;
	default:
		return adump_tstats_finite_count(ts) ? fmax(fabs(ts->max), fabs(ts->min)) : 0;
	}
}

static void judge_deviation(struct adump_window *win, struct history_item *it,
			    const struct adump_op *op, const char *name, const char *io,
			    uint32_t index, double norm)
{
	unsigned k = win->deviation_steps;

	if (!isfinite(norm))
		return;
	if (it->count == k) {
		double sum = 0, bound;

		for (unsigned i = 0; i < k; i++)
			sum += it->norms[i];
		bound = sum / k * (1 + win->deviation);
		if (norm > bound && bound >= 0)
			fire(win, "deviation", op, name, io, index, norm, &bound);
	}
	it->norms[it->next] = norm;
	it->next = (it->next + 1) % k;
	if (it->count < k)
		it->count++;
}

void adump_window_judge(struct adump_window *win, struct file_state *fs)
{
	const struct adump_op *op = &fs->op->op;
	uint32_t inputs = 0, outputs = 0;
	char name[4200];

	for (uint32_t i = 0; i < op->tensor_count; i++) {
		const struct adump_tensor *t = &op->tensors[i];
		bool is_input = t->kind == ADUMP_TENSOR_INPUT, has_inf;
		struct history_item *it;
		const struct adump_tstats *ts;
		const char *io = is_input ? "input" : "output";
		uint32_t index;
		char num[24];

		if (!is_input && t->kind != ADUMP_TENSOR_OUTPUT)
			continue;
		index = is_input ? inputs++ : outputs++;
		ts = adump_statacc_tensor(&fs->stats, i);
		/* Memory no op wrote (torch.empty's output) holds what it held: no verdict. */
		if (!ts || adump_is_uninit(op->op_type, op->op_name, t->kind, index))
			continue;
		/* "<op_name>.<io>.<index>" (snprintf() was a twentieth of a worker's time) */
		adump_strjoin(name, sizeof(name), (const char *const[]){
				      op->op_name, is_input ? ".input." : ".output.",
				      adump_decimal(index, num) }, 3);
		has_inf = ts->pos_inf_count + ts->neg_inf_count > 0;
		it = history_get(win->history, name, win->norm_slots);
		/* A NaN always fires. An infinity fires in a tensor that held none the times it
		 * was seen before: an overflow. Infinities a tensor has from its first time on
		 * are meant (a causal attention mask's -inf, masked_fill(-inf)). */
		if ((win->triggers & ADUMP_TRIGGER_NONFINITE) &&
		    (ts->nan_count || (has_inf && it && it->seen && !it->had_inf)))
			fire(win, "nonfinite", op, name, io, index,
			     ts->nan_count ? NAN : ts->pos_inf_count ? INFINITY : -INFINITY, NULL);
		for (unsigned b = 0; b < win->bound_count; b++) {
			double m;

			if (fnmatch(win->bounds[b].pattern, name, 0))
				continue;
			win->bound_hits[b]++;
			m = max_abs(ts);
			if (m > win->bounds[b].max_abs)
				fire(win, "bound", op, name, io, index, m, &win->bounds[b].max_abs);
		}
		if (it && (win->triggers & ADUMP_TRIGGER_DEVIATION))
			judge_deviation(win, it, op, name, io, index, adump_tstats_l2norm(ts));
		if (it) {
			it->seen++;
			it->had_inf |= has_inf;
		}
	}
}

void adump_window_request(struct adump_window *win, const char *rule, const char *reason)
{
	struct window_trigger *t = &win->pending;

	t->fired++;
	if (win->is_pending) {
		if (reason && !t->reason)
			t->reason = strdup(reason);
		return;
	}
	win->is_pending = true;
	snprintf(t->rule, sizeof(t->rule), "%s", rule);
	t->reason = reason ? strdup(reason) : NULL;
	t->step = win->step;
	t->time_ns = realtime_ns();
}


/* ---- the public calls (adump.h) ----------------------------------------------------------- */

int adump_session_persist(struct adump_session *s, const char *reason)
{
	struct adump_window *win;

	if (!s)
		return -EINVAL;
	win = s->window;
	if (!win)
		return -ADUMP_ERR_STATE;
	pthread_mutex_lock(&win->lock);
	adump_window_request(win, "call", reason);
	pthread_mutex_unlock(&win->lock);
	return 0;
}

int adump_session_persist_note(struct adump_session *s, const char *json)
{
	struct adump_window *win;
	struct json_object *o = NULL;
	char *copy = NULL;

	if (!s)
		return -EINVAL;
	win = s->window;
	if (!win)
		return -ADUMP_ERR_STATE;
	if (json) {
		struct json_tokener *tok = json_tokener_new();
		size_t end = 0, len = strlen(json);

		if (!tok)
			return -ENOMEM;
		o = len <= INT32_MAX ? json_tokener_parse_ex(tok, json, (int)len) : NULL;
		if (o && json_tokener_get_error(tok) == json_tokener_success)
			end = json_tokener_get_parse_end(tok);
		json_tokener_free(tok);
		/* One object and nothing after it but blanks (json-c's plain parse stops at the
		 * first value's end and would take "{...} and more"). */
		while (end < len && strchr(" \t\r\n", json[end]))
			end++;
		if (!o || !json_object_is_type(o, json_type_object) || end != len) {
			json_object_put(o);
			adump_log(ADUMP_LOG_ERROR, MODULE, "persist note: not a JSON object");
			return -ADUMP_ERR_CONFIG;
		}
		json_object_put(o);
		copy = strdup(json);
		if (!copy)
			return -ENOMEM;
	}
	pthread_mutex_lock(&win->lock);
	free(win->note);
	win->note = copy;
	pthread_mutex_unlock(&win->lock);
	return 0;
}
