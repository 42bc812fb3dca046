/* SPDX-License-Identifier: Apache-2.0 */
/* Window mode: the arena of held dumps, the steps, the session's calls (window_int.h); the
 * triggers are window_trigger.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/common.h"
#include "pipeline/loss_int.h"
#include "pipeline/window_int.h"
#include "pipeline/worker_int.h"
#include "ring/ring.h"

#define MODULE "window"
#define ALIGN 64u
#define HDR ((sizeof(struct window_entry) + ALIGN - 1) / ALIGN * ALIGN)

static uint64_t round_up(uint64_t n, uint64_t a)
{
	return (n + a - 1) / a * a;
}

/* ---- the arena --------------------------------------------------------------------------- */

struct window_entry *adump_window_next(struct adump_window *win, uint64_t *off)
{
	while (*off < win->tail) {
		uint64_t pos = *off % win->cap;
		struct window_entry *e;

		if (win->cap - pos < HDR) {     /* too short for a header: an implicit pad */
			*off += win->cap - pos;
			continue;
		}
		e = (struct window_entry *)(win->arena + pos);
		*off += e->size;
		if (e->state != ENTRY_PAD)
			return e;
	}
	return NULL;
}

static void dir_unref(struct adump_window *win, struct window_dir *d)
{
	struct window_dir **p;

	if (!d || --d->refs)
		return;
	for (p = &win->dirs; *p != d; p = &(*p)->next)
		;
	*p = d->next;
	free(d);
}

static struct window_dir *dir_ref(struct adump_window *win, const char *path)
{
	struct window_dir *d;
	size_t len;

	if (!path)
		return NULL;
	for (d = win->dirs; d; d = d->next)
		if (!strcmp(d->path, path)) {
			d->refs++;
			return d;
		}
	len = strlen(path) + 1;
	d = malloc(sizeof(*d) + len);
	if (!d)
		return NULL;
	memcpy(d->path, path, len);
	d->refs = 1;
	d->next = win->dirs;
	win->dirs = d;
	return d;
}

/* @e goes from the window: its directory reference, and a producer's memory it held. */
static void entry_let_go(struct adump_window *win, struct window_entry *e)
{
	dir_unref(win, e->dir);
	if (e->ref.release) {
		e->ref.release(e->ref.user, e->ref.task_id, e->ref_status);
		e->ref.release = NULL;
	}
}

/* Drop the entries at the head while they belong to a step before @before. Return: whether
 * anything went. */
static bool evict_before(struct adump_window *win, uint64_t before)
{
	bool any = false;

	for (;;) {
		uint64_t off = win->head;
		struct window_entry *e = adump_window_next(win, &off);

		if (!e) {
			win->head = off;
			break;
		}
		if (e->step >= before || e->state == ENTRY_FILLING) {
			/* The head is this entry's start: the pads before it are free (a pad
			 * left at the head counted its bytes, up to the arena's end, as held). */
			win->head = off - e->size;
			break;
		}
		win->head = off;
		entry_let_go(win, e);
		any = true;
	}
	if (win->head == win->tail)
		win->head = win->tail = 0;      /* empty: start again at the arena's first pages */
	if (win->unlisted_step < before)
		win->lost_unlisted = 0;         /* its step went */
	return any;
}

/* The oldest held step, if it is before the current one. */
static bool evict_oldest(struct adump_window *win)
{
	uint64_t off = win->head;
	struct window_entry *e = adump_window_next(win, &off);

	if (!e || e->step >= win->step)
		return false;
	return evict_before(win, e->step + 1);
}

/* @bytes (a multiple of ALIGN) of the arena at its tail, dropping old steps as needed;
 * NULL when even the current step alone leaves no room. */
static struct window_entry *entry_alloc(struct adump_window *win, uint64_t bytes)
{
	if (bytes > win->cap)
		return NULL;
	for (;;) {
		uint64_t pos = win->tail % win->cap, room = win->cap - pos;
		uint64_t head_pos = win->head % win->cap;
		/* The next bytes would be pages never touched while the arena's first ones are
		 * free: wrap now. The window then keeps to the pages it has used (2 x
		 * window_steps steps of one size, not window_bytes: fewer page faults, a smaller
		 * RSS). Only where the free start holds everything held and this entry: after
		 * the wrap the arena ends at the head until the oldest held step goes, and a
		 * step that ran into it would drop the held steps before it with window_bytes
		 * far from reached. So the free start must also hold the largest step seen
		 * besides: a step may grow past the held ones (short first steps, then full
		 * ones). */
		bool is_early = pos > head_pos && pos + bytes > win->touched &&
				win->tail - win->head + bytes + win->largest_step <= head_pos;
		uint64_t need = bytes <= room && !is_early ? bytes : room + bytes;

		if (win->tail + need - win->head <= win->cap) {
			struct window_entry *e;

			if (bytes > room || is_early) {
				if (room >= HDR) {
					e = (struct window_entry *)(win->arena + pos);
					e->size = room;
					e->state = ENTRY_PAD;
				}
				win->tail += room;
				pos = 0;
			}
			e = (struct window_entry *)(win->arena + pos);
			e->size = bytes;
			win->tail += bytes;
			win->step_bytes += bytes;
			if (pos + bytes > win->touched)
				win->touched = pos + bytes;
			return e;
		}
		if (!evict_oldest(win))
			return NULL;
	}
}

static void release_all(struct adump_window *win)
{
	uint64_t off = win->head;
	struct window_entry *e;

	while ((e = adump_window_next(win, &off)))
		entry_let_go(win, e);
	win->head = win->tail = 0;
	win->lost_unlisted = 0;
	win->epoch++;                           /* no copy held before is good now */
}

void adump_window_clear(struct adump_window *win)
{
	uint64_t off = win->head;
	struct window_entry *e;
	bool is_filling = false;

	while ((e = adump_window_next(win, &off))) {
		if (e->state == ENTRY_FILLING)
			is_filling = true;
		else
			e->state = ENTRY_DONE;
	}
	win->lost_unlisted = 0;                 /* the window written counted them */
	if (!is_filling)
		release_all(win);
}

/* Of @copies (adump_session_window_hold()), those still good: the others' .at cleared.
 * Return: the bytes the good ones hold. */
static uint64_t copies_good(const struct adump_window *win, const struct adump_op *op,
			    struct adump_window_copy *copies)
{
	uint64_t bytes = 0;

	for (uint32_t i = 0; i < op->tensor_count; i++) {
		struct adump_window_copy *c = &copies[i];

		if (c->at && c->step == win->step && c->epoch == win->epoch &&
		    op->tensors[i].bytes)
			bytes += op->tensors[i].bytes;
		else
			c->at = NULL;
	}
	return bytes;
}

/* An entry's tensors' places (e->refs): each in its payload, in order, but those @copies
 * holds already (copies_good()); @copies then says where each one is. */
static void refs_place(const struct adump_window *win, struct window_entry *e,
		       struct adump_window_copy *copies)
{
	unsigned char *pos = e->payload;

	for (uint32_t i = 0; i < e->op.tensor_count; i++) {
		if (!copies[i].at) {
			copies[i].at = pos;
			pos += e->op.tensors[i].bytes;
		}
		copies[i].step = win->step;
		copies[i].epoch = win->epoch;
		e->refs[i] = copies[i].at;
	}
}

/* An entry for @rec's dump: FILLING with room for its payload (and with @ref, its tensors'
 * addresses @data and the reference: held by reference; with @copies, its tensors' places,
 * the room only for those not held already), a stub (LOST) where the current step leaves
 * no room for that, or NULL (not even a stub: counted). */
static struct window_entry *entry_make(struct adump_window *win, const struct adump_op_rec *rec,
				       const void *const *data, const struct adump_window_ref *ref,
				       struct adump_window_copy *copies)
{
	uint64_t ops = round_up(adump_op_copy_size(&rec->op), 8);
	/* The payload starts on an ALIGN boundary: the one-pass copy (adump_tstats_add_copy())
	 * stores whole vectors, and takes a tensor only at an address aligned for them. */
	uint64_t meta = round_up(HDR + ops + (ref || copies ? rec->op.tensor_count * sizeof(void *)
								   : 0), ALIGN);
	uint64_t payload = rec->payload_bytes;
	struct window_entry *e;
	bool is_stub = false;

	pthread_mutex_lock(&win->lock);
	if (copies && !ref)
		payload -= copies_good(win, &rec->op, copies);
	e = entry_alloc(win, round_up(meta + payload, ALIGN));
	if (!e) {
		is_stub = true;
		e = entry_alloc(win, round_up(meta, ALIGN));
	}
	if (is_stub) {
		win->lost_dumps++;
		if (!win->is_full_logged)
			adump_log(ADUMP_LOG_WARN, MODULE, "step %llu is larger than the window "
				  "(window_bytes %llu): dumps past it are not held (window_full)",
				  (unsigned long long)win->step, (unsigned long long)win->cap);
		win->is_full_logged = true;
	}
	if (!e) {
		if (win->lost_unlisted && win->unlisted_step != win->step)
			win->lost_unlisted = 0;
		win->unlisted_step = win->step;
		win->lost_unlisted++;
		pthread_mutex_unlock(&win->lock);
		return NULL;
	}
	e->step = win->step;
	e->state = is_stub ? ENTRY_LOST : ENTRY_FILLING;
	e->error = 0;
	e->dir = dir_ref(win, rec->dir);
	e->payload_bytes = payload;
	e->payload = is_stub ? NULL : (unsigned char *)e + meta;
	e->refs = NULL;
	memset(&e->ref, 0, sizeof(e->ref));
	e->ref_status = 0;
	adump_op_copy(&e->op, &rec->op, (unsigned char *)e + HDR);
	if (rec->dir && !e->dir)
		e->state = ENTRY_FAILED, e->error = -ENOMEM;
	if ((ref || copies) && e->state == ENTRY_FILLING)
		e->refs = (const void **)((unsigned char *)e + HDR + ops);
	if (ref && e->refs) {
		memcpy(e->refs, data, rec->op.tensor_count * sizeof(void *));
		e->ref = *ref;
	} else if (copies && e->refs) {
		refs_place(win, e, copies);
	}
	pthread_mutex_unlock(&win->lock);
	return e;
}

void adump_window_file_begin(struct adump_window *win, struct file_state *fs)
{
	const struct adump_op_rec *rec = fs->op;
	struct window_entry *e;

	/* Held by its producer already: the file's end says what became of it, failed or not. */
	if (rec->is_window_held) {
		fs->window_entry = rec->window_entry;
		return;
	}
	fs->window_entry = NULL;
	if (fs->is_failed)
		return;
	e = entry_make(win, rec, NULL, NULL, NULL);
	fs->window_entry = e && e->state == ENTRY_FILLING ? e : NULL;
}

int adump_session_window_hold(struct adump_session *s, struct adump_op_rec *rec,
			      const void *const *data, const struct adump_tstats *const *known,
			      const struct adump_window_ref *ref, struct adump_window_copy *copies)
{
	const struct adump_op *op = &rec->op;
	struct adump_tstats *ts = malloc(op->tensor_count * sizeof(*ts));
	struct window_entry *e;
	unsigned char *dst;

	if (!ts)
		return -ENOMEM;
	/* A tensor is shared only with its statistics known (the producer's word that it
	 * holds the bytes handed over before, at copies[i].at). */
	if (copies && (ref || !known))
		copies = NULL;
	for (uint32_t i = 0; copies && i < op->tensor_count; i++)
		if (!known[i])
			copies[i].at = NULL;
	e = entry_make(s->window, rec, data, ref, copies);
	rec->is_window_held = true;
	dst = e && e->state == ENTRY_FILLING && !ref ? e->payload : NULL;
	for (uint32_t i = 0; i < op->tensor_count; i++) {
		const unsigned char *src = data[i];
		uint64_t bytes = op->tensors[i].bytes;
		bool is_known = known && known[i];
		/* In this entry's payload (not shared with an earlier one's) */
		unsigned char *to = dst && (!e->refs || e->refs[i] == dst) ? dst : NULL;

		if (is_known)
			ts[i] = *known[i];
		else
			adump_tstats_init(&ts[i], op->tensors[i].dtype);
		/* The statistics read the tensor, and the copy is taken as they do
		 * (bench/RESULTS.md, "Window mode": the tensor read from memory once). */
		if (!is_known && ts[i].kind != ADUMP_TSTATS_NONE && to)
			adump_tstats_add_copy(&ts[i], src, (size_t)(bytes / ts[i].elem_bytes), to);
		else if (!is_known && ts[i].kind != ADUMP_TSTATS_NONE)
			adump_tstats_add(&ts[i], src, (size_t)(bytes / ts[i].elem_bytes));
		else if (to)
			adump_copy_nt(to, src, (size_t)bytes);
		if (to)
			dst += bytes;
	}
	/* Not held (a stub, a failed entry): no copy of this dump's is anywhere. */
	for (uint32_t i = 0; copies && !dst && i < op->tensor_count; i++)
		copies[i].at = NULL;
	rec->tstats = ts;
	rec->window_entry = e && e->state == ENTRY_FILLING ? e : NULL;
	/* Not held (a stub, a failed entry, or not even that: the window counts the loss):
	 * nothing of the producer's is kept. */
	if (ref && !rec->window_entry)
		ref->release(ref->user, ref->task_id, 0);
	return 0;
}

bool adump_session_window_at_handover(const struct adump_session *s)
{
	return s->window && !needs_worker_bytes(&s->cfg);
}

void adump_window_drop(struct adump_window *win, struct adump_op_rec *rec, int err)
{
	struct window_entry *e = rec->window_entry;

	if (!e)
		return;
	pthread_mutex_lock(&win->lock);
	e->state = ENTRY_FAILED;
	e->error = err;
	pthread_mutex_unlock(&win->lock);
	rec->window_entry = NULL;
}

/* The blocks a record is fed to the statistics and copied in: each one copied while the
 * statistics brought it into the cache. */
#define RECORD_BLOCK (64u << 10)

void adump_window_record(struct file_state *fs, const struct adump_rec *rec)
{
	struct window_entry *e = fs->window_entry;
	const unsigned char *src = adump_rec_data(rec);
	bool is_fed;

	/* Held at hand-over: the record references the window's own copy. */
	if (!e || fs->op->is_window_held || !rec->len || rec->offset > e->payload_bytes ||
	    rec->len > e->payload_bytes - rec->offset)
		return;
	/* The output's statistics of the bytes (adump_statacc_record() next), each block read
	 * while the copy has it in cache, not over the whole record again: that pass then
	 * finds them counted. */
	is_fed = fs->has_stats && !rec->op->tstats;
	for (uint64_t k = 0; k < rec->len; k += RECORD_BLOCK) {
		size_t n = rec->len - k < RECORD_BLOCK ? (size_t)(rec->len - k) : RECORD_BLOCK;

		if (is_fed)
			adump_statacc_feed(&fs->stats, rec->offset + k, src + k, n);
		adump_copy_nt(e->payload + rec->offset + k, src + k, n);
	}
}

void adump_window_file_end(struct adump_window *win, struct file_state *fs)
{
	struct window_entry *e = fs->window_entry;

	pthread_mutex_lock(&win->lock);
	if (fs->has_stats && !fs->is_failed)
		adump_window_judge(win, fs);
	if (e) {
		e->state = fs->is_failed ? ENTRY_FAILED : ENTRY_HELD;
		/* What the loss log of a written window says of it, as the capture's would. */
		e->error = !fs->is_failed ? 0 : fs->is_rejected ? ADUMP_LOSS_ERR_REJECTED :
			   fs->error;
	}
	pthread_mutex_unlock(&win->lock);
	fs->window_entry = NULL;
}

/* ---- steps and persists ------------------------------------------------------------------ */

/* Write what is held for the pending trigger (persist_lock held), unless past the limit. */
static int persist(struct adump_window *win)
{
	struct window_trigger t;
	int ret = 0;

	pthread_mutex_lock(&win->lock);
	t = win->pending;
	memset(&win->pending, 0, sizeof(win->pending));
	win->is_pending = false;
	if (win->persists >= win->persists_max) {
		win->persists_skipped++;
		adump_log(ADUMP_LOG_WARN, MODULE, "step %llu: trigger %s: %u windows written "
			  "already (window_persists): not written", (unsigned long long)t.step,
			  t.rule, win->persists);
	} else {
		ret = adump_window_write(win, &t);
		win->persists++;
		adump_window_clear(win);
	}
	/* The note was for this trigger's window (adump.h: "the next window written"). */
	free(win->note);
	win->note = NULL;
	pthread_mutex_unlock(&win->lock);
	adump_window_trigger_free(&t);
	return ret;
}

/* The step's trigger, if one fired, written (persist_lock held). */
static int persist_pending(struct adump_window *win)
{
	bool is_pending;

	pthread_mutex_lock(&win->lock);
	is_pending = win->is_pending;
	pthread_mutex_unlock(&win->lock);
	return is_pending ? persist(win) : 0;
}

int adump_window_step(struct adump_window *win)
{
	int ret;

	pthread_mutex_lock(&win->persist_lock);
	ret = persist_pending(win);
	pthread_mutex_lock(&win->lock);
	if (win->step == 0) {
		for (unsigned b = 0; b < win->bound_count; b++)
			if (!win->bound_hits[b]) {
				adump_log(ADUMP_LOG_ERROR, MODULE, "bound pattern '%s' matched no "
					  "tensor of step 0", win->bounds[b].pattern);
				if (ret == 0)
					ret = -ADUMP_ERR_CONFIG;
			}
	}
	win->step++;
	if (win->step_bytes > win->largest_step)
		win->largest_step = win->step_bytes;
	win->step_bytes = 0;
	if (win->step >= win->steps)
		evict_before(win, win->step - win->steps + 1);
	win->is_full_logged = false;
	pthread_mutex_unlock(&win->lock);
	pthread_mutex_unlock(&win->persist_lock);
	return ret;
}

int adump_window_finish(struct adump_window *win)
{
	int ret;

	pthread_mutex_lock(&win->persist_lock);
	ret = persist_pending(win);
	pthread_mutex_unlock(&win->persist_lock);
	return ret;
}

int adump_window_persist_now(struct adump_window *win, const char *rule)
{
	int ret;

	pthread_mutex_lock(&win->persist_lock);
	pthread_mutex_lock(&win->lock);
	adump_window_request(win, rule, NULL);
	pthread_mutex_unlock(&win->lock);
	ret = persist(win);
	pthread_mutex_unlock(&win->persist_lock);
	return ret;
}

/* ---- the session's side ------------------------------------------------------------------- */

int adump_window_create(struct adump_session *s, const struct adump_config *cfg,
			struct adump_window **out)
{
	struct adump_window *win = calloc(1, sizeof(*win));
	const char *slash;
	int ret = -ENOMEM;

	if (!win)
		return -ENOMEM;
	win->s = s;
	pthread_mutex_init(&win->lock, NULL);
	pthread_mutex_init(&win->persist_lock, NULL);
	win->steps = cfg->window_steps;
	win->cap = cfg->window_bytes ? cfg->window_bytes : ADUMP_DEFAULT_WINDOW_BYTES;
	win->cap = win->cap / ALIGN * ALIGN;
	win->persists_max = cfg->window_persists ? cfg->window_persists :
			    ADUMP_DEFAULT_WINDOW_PERSISTS;
	win->triggers = (cfg->triggers ? cfg->triggers : ADUMP_TRIGGER_DEFAULT) |
			ADUMP_TRIGGER_CALL;
	win->deviation = cfg->deviation > 0 ? cfg->deviation : ADUMP_DEFAULT_DEVIATION;
	win->deviation_steps = cfg->deviation_steps ? cfg->deviation_steps :
			       ADUMP_DEFAULT_DEVIATION_STEPS;
	win->norm_slots = win->triggers & ADUMP_TRIGGER_DEVIATION ? win->deviation_steps : 0;
	win->arena = mmap(NULL, win->cap, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (win->arena == MAP_FAILED) {
		win->arena = NULL;
		ret = -errno;
		goto err;
	}
	win->history = adump_window_history_new();
	if (!win->history)
		goto err;
	if ((win->triggers & ADUMP_TRIGGER_BOUND) && cfg->bound_count) {
		win->bounds = calloc(cfg->bound_count, sizeof(*win->bounds));
		win->bound_hits = calloc(cfg->bound_count, sizeof(*win->bound_hits));
		if (!win->bounds || !win->bound_hits)
			goto err;
		for (unsigned i = 0; i < cfg->bound_count; i++) {
			win->bounds[i].max_abs = cfg->bounds[i].max_abs;
			win->bounds[i].pattern = strdup(cfg->bounds[i].pattern);
			if (!win->bounds[i].pattern)
				goto err;
			win->bound_count = i + 1;
		}
	}
	win->tensor_cfg = *cfg;
	win->tensor_cfg.content = ADUMP_CONTENT_TENSOR;
	win->tensor_cfg.window_steps = 0;
	win->tensor_cfg.window_bytes = 0;
	win->tensor_cfg.window_persists = 0;
	win->tensor_cfg.triggers = 0;
	win->tensor_cfg.bounds = NULL;
	win->tensor_cfg.bound_count = 0;
	win->tensor_cfg.deviation = 0;
	win->tensor_cfg.deviation_steps = 0;
	win->tensor_cfg.dump_path = NULL;
	win->tensor_cfg.time_dir = NULL;
	slash = strrchr(s->dir, '/');
	win->time_dir = strdup(slash ? slash + 1 : s->dir);
	if (!win->time_dir)
		goto err;
	if (win->triggers & ADUMP_TRIGGER_SIGNAL) {
		ret = adump_window_signal_register(win);
		if (ret < 0)
			goto err;
	}
	*out = win;
	return 0;
err:
	adump_window_destroy(win);
	return ret;
}

void adump_window_destroy(struct adump_window *win)
{
	if (!win)
		return;
	if (win->is_signal)
		adump_window_signal_unregister(win);
	release_all(win);
	adump_window_trigger_free(&win->pending);
	for (unsigned i = 0; i < win->bound_count; i++)
		free((char *)win->bounds[i].pattern);
	free(win->bounds);
	free(win->bound_hits);
	adump_window_history_free(win->history);
	free(win->note);
	free(win->time_dir);
	if (win->arena)
		munmap(win->arena, win->cap);
	pthread_mutex_destroy(&win->lock);
	pthread_mutex_destroy(&win->persist_lock);
	free(win);
}

/* ---- the public calls (adump.h) ----------------------------------------------------------- */

int adump_session_window(struct adump_session *s, struct adump_window_info *out)
{
	struct adump_window *win;
	uint64_t off, last = UINT64_MAX;
	struct window_entry *e;

	if (!s || !out)
		return -EINVAL;
	win = s->window;
	if (!win)
		return -ADUMP_ERR_STATE;
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&win->lock);
	out->step = win->step;
	off = win->head;
	while ((e = adump_window_next(win, &off))) {
		/* The entries' room, not tail - head: after an early wrap that spans the arena's
		 * unused end as well, up to window_bytes, until the oldest held step goes. */
		out->held_bytes += e->size;
		/* Written by a persist while another entry was filling: no longer held for a
		 * next window, though its bytes stay in the arena until evicted (held_bytes). */
		if (e->state == ENTRY_DONE)
			continue;
		if (e->step != last)
			out->held_steps++;
		last = e->step;
		out->held_dumps++;
	}
	out->lost_dumps = win->lost_dumps;
	out->persists = win->persists;
	out->persists_skipped = win->persists_skipped;
	out->is_pending = win->is_pending;
	if (win->is_pending)
		snprintf(out->pending_rule, sizeof(out->pending_rule), "%s", win->pending.rule);
	snprintf(out->last_window, sizeof(out->last_window), "%s", win->last_window);
	pthread_mutex_unlock(&win->lock);
	return 0;
}
