/* SPDX-License-Identifier: Apache-2.0 */
/* Window mode: writing the held steps. They are replayed, in the order they were dumped,
 * into a session of their own with the window session's config and tensor content, whose
 * dump_path is <dump_path>/window-<step>: each producer directory under the session's
 * dump_path becomes the same path under the window's root, the session directory becomes
 * <root>/<time_dir>. The files, names and bytes are what a tensor capture of those steps
 * would have written (the same output modules write them); trigger.json goes beside them,
 * into every directory the window wrote to, once they are written. A producer directory
 * outside dump_path (or climbing out of it with "..") becomes its last component under the
 * root ("dir" for "/"); two such directories with one last component (or one that is another
 * directory's name there) are told apart by a suffix, "<name>.2", "<name>.3", in the order
 * the window holds them, never merged. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/common.h"
#include "pipeline/loss_int.h"
#include "pipeline/pipeline_int.h"
#include "pipeline/window_int.h"
#include "producer/producer.h"

#define MODULE "window"

struct replay {
	struct adump_port *port;
};

static int replay_quiesce(void *producer)
{
	(void)producer;
	return 0;
}

static void replay_bind(void *producer, struct adump_port *port)
{
	((struct replay *)producer)->port = port;
}

static const struct adump_producer_ops replay_ops = {
	.quiesce = replay_quiesce,
	.bind = replay_bind,
};

/* What one persist keeps while it writes. */
struct persist {
	struct adump_window *win;
	struct adump_session *ps;
	struct replay rp;
	char *root;
	char **dirs;                    /* every directory written to (absolute) */
	unsigned dir_count;
	uint64_t *steps;                /* the steps written, in order */
	unsigned step_count;
	struct dir_name {
		const struct window_dir *dir;   /* a producer directory held ... */
		char *name;                     /* ... and its path under the root */
	} *names;
	unsigned name_count;
	const void **data;              /* per tensor of the entry being posted */
	uint32_t data_cap;
	int error;
};

static void set_error(struct persist *p, int err)
{
	if (err < 0 && p->error == 0)
		p->error = err;
}

static int add_dir(struct persist *p, const char *abs)
{
	char **dirs;

	for (unsigned i = 0; i < p->dir_count; i++)
		if (!strcmp(p->dirs[i], abs))
			return 0;
	dirs = realloc(p->dirs, (p->dir_count + 1) * sizeof(*dirs));
	if (!dirs)
		return -ENOMEM;
	p->dirs = dirs;
	p->dirs[p->dir_count] = strdup(abs);
	if (!p->dirs[p->dir_count])
		return -ENOMEM;
	p->dir_count++;
	return 0;
}

static void add_step(struct persist *p, uint64_t step)
{
	uint64_t *steps;

	if (p->step_count && p->steps[p->step_count - 1] == step)
		return;
	steps = realloc(p->steps, (p->step_count + 1) * sizeof(*steps));
	if (!steps)
		return;
	p->steps = steps;
	p->steps[p->step_count++] = step;
}

/* <dump_path>/window-<step>[.<n>]: made, or taken if a directory of that name is there
 * (the processes of one job share it); a further window of one step in this process takes
 * the next suffix, never a directory an earlier window of its own wrote. */
static int make_root(struct persist *p, uint64_t step)
{
	struct adump_window *win = p->win;
	const char *base = win->s->dump_path;
	unsigned first = win->root_next && win->root_step == step ? win->root_next : 0;

	for (unsigned n = first; n < first + 1000; n++) {
		char *root;
		int ret;

		if ((n ? asprintf(&root, "%s/window-%llu.%u", base, (unsigned long long)step, n) :
			 asprintf(&root, "%s/window-%llu", base, (unsigned long long)step)) < 0)
			return -ENOMEM;
		ret = win->tensor_cfg.sink == ADUMP_SINK_FILE ? adump_mkdir_own(root, 0750) : 0;
		if (ret == 0) {
			p->root = root;
			win->root_step = step;
			win->root_next = n + 1;
			return 0;
		}
		free(root);
		if (ret != -EEXIST) {
			adump_log(ADUMP_LOG_ERROR, MODULE, "cannot create the window directory "
				  "under %s: %s", base, adump_strerror(ret));
			return ret;
		}
	}
	return -EEXIST;
}

/* @dir's path under dump_path, or NULL if it is dump_path itself, outside, or climbs out of
 * it (a ".." component: under the root it would climb out of the window). */
static const char *inside(const struct adump_window *win, const char *dir)
{
	const char *rel = adump_session_below(win->s, dir);

	return rel && *rel && adump_name_is_beneath(rel) ? rel : NULL;
}

/* @path's last component, trailing slashes left out (malloc'd); "dir" where it has none
 * that names a directory under the root ("/", ".", ".."). */
static char *last_component(const char *path)
{
	size_t end = strlen(path), start;

	while (end && path[end - 1] == '/')
		end--;
	for (start = end; start && path[start - 1] != '/'; start--)
		;
	if (end == start || (end - start <= 2 && !strncmp(path + start, "..", end - start)))
		return strdup("dir");
	return strndup(path + start, end - start);
}

static bool is_name_taken(const struct persist *p, const char *name)
{
	if (!strcmp(name, p->win->time_dir))
		return true;            /* the session directory's */
	for (unsigned i = 0; i < p->name_count; i++)
		if (!strcmp(p->names[i].name, name))
			return true;
	return false;
}

static int name_add(struct persist *p, const struct window_dir *d, char *name)
{
	struct dir_name *names = name ? realloc(p->names, (p->name_count + 1) * sizeof(*names)) :
				 NULL;

	if (!names) {
		free(name);
		return -ENOMEM;
	}
	p->names = names;
	p->names[p->name_count++] = (struct dir_name){ .dir = d, .name = name };
	return 0;
}

/* The persist session's directory for producer directory @d (name_dirs()), or NULL
 * while it has none. */
static const char *relative(const struct persist *p, const struct window_dir *d)
{
	for (unsigned i = 0; i < p->name_count; i++)
		if (p->names[i].dir == d)
			return p->names[i].name;
	return NULL;
}

/* Every producer directory the window holds gets its path under the root (win->lock held):
 * those under dump_path first, the same relative path; then the others, in the order the
 * window holds them, their last component, with the first free suffix if that is taken. */
static int name_dirs(struct persist *p)
{
	struct adump_window *win = p->win;
	int ret = 0;

	for (int pass = 0; pass < 2 && ret == 0; pass++) {
		uint64_t off = win->head;
		struct window_entry *e;

		while (ret == 0 && (e = adump_window_next(win, &off))) {
			const char *rel;
			char *last, *name;

			if (!e->dir || relative(p, e->dir))
				continue;       /* the session directory's, or named already */
			rel = inside(win, e->dir->path);
			if ((pass == 0) != (rel != NULL))
				continue;
			if (rel) {
				ret = name_add(p, e->dir, strdup(rel));
				continue;
			}
			last = last_component(e->dir->path);
			name = last ? strdup(last) : NULL;
			for (unsigned n = 2; name && is_name_taken(p, name); n++) {
				free(name);
				if (asprintf(&name, "%s.%u", last, n) < 0)
					name = NULL;
			}
			free(last);
			ret = name_add(p, e->dir, name);
		}
	}
	return ret;
}

/* The replay writes into @e's directory from now on. Return: its absolute path in *@abs
 * (NULL: the session directory). */
static int switch_dir(struct persist *p, const struct window_entry *e, char **abs)
{
	struct adump_session *ps = p->ps;
	char *to = NULL;
	int ret = 0;

	if (e->dir) {
		const char *name = relative(p, e->dir);

		ret = name ? adump_session_stream_dir(ps, name, e->op.device_id, &to) : -ENOMEM;
	}
	if (ret == 0)
		ret = add_dir(p, to ? to : adump_session_dir(ps));
	if (ret == 0)
		ret = adump_session_producer_move(ps, &p->rp, p->rp.port, *abs, to);
	/* A chunk dropped under on_full drop: its file's loss is in the loss log already. */
	if (ret < 0 && ret != -ADUMP_ERR_DROPPED) {
		free(to);
		return ret;
	}
	free(*abs);
	*abs = to;
	return 0;
}

/* A dump the window does not hold whole: its tensors are lost in the window's loss log. */
static void record_loss(struct persist *p, const struct window_entry *e, const char *abs)
{
	struct adump_op_rec *rec;
	char name[4096], path[8400];

	if (adump_op_rec_create(&e->op, NULL, &rec) < 0)
		return;
	if (adump_dump_file_name(&e->op, name, sizeof(name)) < 0)
		snprintf(name, sizeof(name), "unnamed");
	snprintf(path, sizeof(path), "%s/%u/%s", abs ? abs : adump_session_dir(p->ps),
		 e->op.device_id, name);
	adump_loss_file(p->ps, rec, path, e->state == ENTRY_LOST ? ADUMP_LOSS_ERR_WINDOW_FULL :
			e->error ? e->error : -ADUMP_ERR_WRITE);
	rec->status = 0;
	adump_op_rec_destroy(rec);
}

static int post(struct persist *p, const struct window_entry *e, const char *abs)
{
	struct adump_op_rec *rec;
	const unsigned char *pos = e->payload;
	int ret;

	if (e->op.tensor_count > p->data_cap) {
		const void **data = realloc(p->data, e->op.tensor_count * sizeof(*data));

		if (!data)
			return -ENOMEM;
		p->data = data;
		p->data_cap = e->op.tensor_count;
	}
	for (uint32_t i = 0; i < e->op.tensor_count; i++) {
		p->data[i] = !e->op.tensors[i].bytes ? NULL : e->refs ? e->refs[i] : pos;
		pos += e->op.tensors[i].bytes;
	}
	ret = adump_op_rec_create(&e->op, adump_port_op_freelist(p->rp.port), &rec);
	if (ret < 0)
		return ret;
	rec->dir = abs;
	adump_port_post_sp(p->rp.port, rec, p->data, false);
	return 0;
}

/* Replay every entry (win->lock held). */
static void replay_all(struct persist *p)
{
	struct adump_window *win = p->win;
	const struct window_dir *cur = NULL;
	char *abs = NULL;
	uint32_t device = UINT32_MAX;
	bool is_first = true;
	uint64_t off = win->head;
	struct window_entry *e;

	while ((e = adump_window_next(win, &off))) {
		int ret = 0;

		if (e->state == ENTRY_FILLING || e->state == ENTRY_DONE)
			continue;
		if (is_first || e->dir != cur) {
			ret = switch_dir(p, e, &abs);
			cur = e->dir;
			device = UINT32_MAX;
			is_first = false;
			if (ret < 0) {
				set_error(p, ret);
				break;
			}
		}
		add_step(p, e->step);
		if (abs && e->op.device_id != device && win->tensor_cfg.sink == ADUMP_SINK_FILE &&
		    win->tensor_cfg.format == ADUMP_OUTPUT_CANN) {
			char dev[4200];

			snprintf(dev, sizeof(dev), "%s/%u", abs, e->op.device_id);
			set_error(p, adump_session_mkdir(win->s, dev));
			device = e->op.device_id;
		}
		/* Held by reference: the producer's check says whether its memory still holds the
		 * bytes handed over (posting copies them into staging before it returns). */
		if (e->state == ENTRY_HELD && e->refs && e->ref.check) {
			int status = e->ref.check(e->ref.user, e->ref.task_id);

			if (status < 0) {
				e->ref_status = status;
				e->state = ENTRY_FAILED;
				e->error = ADUMP_LOSS_ERR_REJECTED;
			}
		}
		if (e->state == ENTRY_HELD)
			ret = post(p, e, abs);
		else
			record_loss(p, e, abs);
		if (ret < 0) {
			set_error(p, ret);
			record_loss(p, e, abs);
		}
	}
	if (p->rp.port)
		adump_port_wait_idle(p->rp.port);
	if (!is_first)
		adump_session_dir_done(p->ps, abs ? abs : adump_session_dir(p->ps));
	free(abs);
}

static void iso_time(char *dst, size_t cap, uint64_t ns)
{
	time_t sec = (time_t)(ns / 1000000000ull);
	struct tm tm;
	char base[32];

	gmtime_r(&sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(dst, cap, "%s.%06uZ", base, (unsigned)(ns % 1000000000ull / 1000));
}

static struct json_object *str_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static char *trigger_text(struct persist *p, const struct window_trigger *t)
{
	struct adump_window *win = p->win;
	struct json_object *o = json_object_new_object(), *steps = json_object_new_array();
	char when[64];
	char *text;

	json_object_object_add(o, "rule", json_object_new_string(t->rule));
	json_object_object_add(o, "reason", str_or_null(t->reason));
	json_object_object_add(o, "step", json_object_new_uint64(t->step));
	json_object_object_add(o, "tensor", str_or_null(t->has_tensor ? t->tensor : NULL));
	json_object_object_add(o, "op_type", str_or_null(t->has_tensor ? t->op_type : NULL));
	json_object_object_add(o, "op_name", str_or_null(t->has_tensor ? t->op_name : NULL));
	json_object_object_add(o, "io", str_or_null(t->has_tensor ? t->io : NULL));
	json_object_object_add(o, "index", t->has_tensor ? json_object_new_int64(t->index) : NULL);
	json_object_object_add(o, "value", t->has_tensor ? json_tokener_parse(t->value) : NULL);
	json_object_object_add(o, "threshold",
			       t->has_threshold ? json_object_new_double(t->threshold) : NULL);
	json_object_object_add(o, "rank", t->has_tensor ? json_object_new_int64(t->device_id) :
				NULL);
	iso_time(when, sizeof(when), t->time_ns);
	json_object_object_add(o, "time", json_object_new_string(when));
	json_object_object_add(o, "triggers_in_step", json_object_new_uint64(t->fired));
	for (unsigned i = 0; i < p->step_count; i++)
		json_object_array_add(steps, json_object_new_uint64(p->steps[i]));
	json_object_object_add(o, "steps", steps);
	json_object_object_add(o, "window", json_object_new_string(p->root));
	json_object_object_add(o, "dumps_not_listed", json_object_new_uint64(win->lost_unlisted));
	if (win->note) {
		struct json_object *note = json_tokener_parse(win->note);

		if (note && json_object_is_type(note, json_type_object)) {
			json_object_object_foreach(note, key, val)
				json_object_object_add(o, key, json_object_get(val));
		}
		json_object_put(note);
	}
	text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						     JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}

static int write_trigger(struct persist *p, const char *dir, const char *text)
{
	const struct adump_config *cfg = &p->win->tensor_cfg;
	char path[4200];
	size_t len = strlen(text);

	snprintf(path, sizeof(path), "%s/trigger.json", dir);
	if (cfg->sink == ADUMP_SINK_CALLBACK) {
		struct adump_chunk c = { .file_name = path, .offset = 0, .data = text, .len = len,
					 .is_last = true };

		return cfg->chunk_fn(&c, cfg->chunk_user) ? -ADUMP_ERR_CALLBACK : 0;
	}
	return adump_session_write_file(p->win->s, path, text, len, NULL);
}

int adump_window_write(struct adump_window *win, const struct window_trigger *t)
{
	struct persist p = { .win = win };
	struct adump_config cfg = win->tensor_cfg;
	size_t chunk = cfg.chunk_bytes ? cfg.chunk_bytes : ADUMP_DEFAULT_CHUNK_BYTES;
	char *text;
	int ret;

	ret = make_root(&p, t->step);
	if (ret < 0)
		return ret;
	cfg.dump_path = p.root;
	cfg.time_dir = win->time_dir;
	cfg.stream_max = 1;
	cfg.pool_bytes = ADUMP_WINDOW_PERSIST_POOL_BYTES > 4 * chunk ?
			 ADUMP_WINDOW_PERSIST_POOL_BYTES : 4 * chunk;
	ret = adump_session_create(&cfg, &p.ps);
	if (ret == 0)
		ret = adump_session_attach_producer(p.ps, &p.rp, adump_stream_id_next(), &replay_ops);
	if (ret == 0) {
		ret = name_dirs(&p);
		set_error(&p, ret);
	}
	if (ret == 0) {
		replay_all(&p);
		ret = adump_session_detach_producer(p.ps, &p.rp);
		set_error(&p, ret);
		if (p.dir_count == 0)
			set_error(&p, add_dir(&p, adump_session_dir(p.ps)));
	}
	if (p.ps) {
		char *own = strdup(adump_session_dir(p.ps));
		bool is_used = false;

		for (unsigned i = 0; own && i < p.dir_count; i++)
			is_used |= !strcmp(p.dirs[i], own);
		set_error(&p, adump_session_destroy(p.ps));
		/* Its own directory, when every dump went to a producer's: gone if empty (no
		 * loss log), as a capture of those steps has none. Ranks writing one window share
		 * it: one still making its persist session there makes it again (session.c,
		 * make_journal()). */
		if (own && !is_used)
			rmdir(own);
		free(own);
	} else {
		set_error(&p, ret);
	}
	text = p.root ? trigger_text(&p, t) : NULL;
	for (unsigned i = 0; text && i < p.dir_count; i++)
		set_error(&p, write_trigger(&p, p.dirs[i], text));
	if (!text)
		set_error(&p, -ENOMEM);
	snprintf(win->last_window, sizeof(win->last_window), "%s", p.root);
	adump_log(p.error ? ADUMP_LOG_ERROR : ADUMP_LOG_INFO, MODULE,
		  "window of step %llu (%s): %u steps written to %s%s%s",
		  (unsigned long long)t->step, t->rule, p.step_count, p.root,
		  p.error ? ": " : "", p.error ? adump_strerror(p.error) : "");
	free(text);
	for (unsigned i = 0; i < p.dir_count; i++)
		free(p.dirs[i]);
	free(p.dirs);
	for (unsigned i = 0; i < p.name_count; i++)
		free(p.names[i].name);
	free(p.names);
	free(p.steps);
	free(p.data);
	free(p.root);
	return p.error;
}
