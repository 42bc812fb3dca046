/* SPDX-License-Identifier: Apache-2.0 */
/* report/: a statistics capture over steps read as per-tensor series: the statistics CSVs of
 * content=stats sessions (<dump name>.csv) and msprobe's dump.json under step<N>/rank<R>/, the
 * flight recorder's trigger.json beside them; then each point's anomalies judged
 * (series_judge.c). The walk stays inside the capture: links are not followed, only regular files
 * are read, and points, text and files are bounded. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <json-c/linkhash.h>

#include "compare/compare.h"
#include "reader/msprobe.h"
#include "report/report_int.h"

#define WALK_DEPTH_MAX 16
#define TRIGGER_BYTES_MAX (1u << 20)

/* One file the walk found, read in (step, rank, time, task, path) order. */
struct series_file {
	char *path;
	int64_t step, rank;
	uint64_t timestamp, task_id;
	enum { FILE_STATS_CSV, FILE_DUMP_JSON, FILE_TRIGGER } kind;
};

struct series_walk {
	struct series_file *v;
	size_t count, cap;
	char *msg;
	size_t msg_cap;
};

/* "step<N>" / "rank<R>": N, else -1. */
static int64_t dir_number(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	char *end;
	long long v;

	if (strncmp(name, prefix, n) || name[n] < '0' || name[n] > '9')
		return -1;
	v = strtoll(name + n, &end, 10);
	return *end || v < 0 ? -1 : v;
}

static int walk_add(struct series_walk *w, const char *path, int64_t step, int64_t rank,
		    int kind, const struct adump_reader_name *nm)
{
	struct series_file *f;

	if (w->count >= ADUMP_REPORT_MAX_ROWS) {
		snprintf(w->msg, w->msg_cap, "%s: more than %u statistics files: more than a report "
			 "holds", path, ADUMP_REPORT_MAX_ROWS);
		return -E2BIG;
	}
	if (w->count == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 256;
		struct series_file *v = realloc(w->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->v = v;
		w->cap = cap;
	}
	f = &w->v[w->count];
	f->path = strdup(path);
	if (!f->path)
		return -ENOMEM;
	f->step = step;
	f->rank = rank;
	f->kind = kind;
	f->timestamp = nm ? nm->timestamp : 0;
	f->task_id = nm ? nm->task_id : 0;
	w->count++;
	return 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* A statistics dump's name, <op_type>.<op_name>.<task_id>.<stream_id>.<timestamp>: as compare
 * reads it, or, where the op name holds characters msaccucmp's pattern refuses (adump.torch
 * writes a module's name as given: "Module_<odd name>_ReLU_forward_0"), the name as written
 * between the op type and the three numbers. The series view draws every tensor the capture
 * holds. Return: 0, or -1 for a name that is no dump's (compare's result_<ts>.csv). */
static int name_parse(const char *base, struct adump_reader_name *nm)
{
	const char *field[4], *dot = strchr(base, '.');
	char *end;
	int k = 0;

	if (adump_reader_name_parse(base, nm) == 0)
		return 0;
	memset(nm, 0, sizeof(*nm));
	/* The last three fields, from the right. */
	for (const char *p = base + strlen(base); p > base && k < 3;)
		if (*--p == '.')
			field[k++] = p + 1;
	if (k < 3 || !dot || dot >= field[2] - 1 || (size_t)(dot - base) >= sizeof(nm->op_type) ||
	    (size_t)(field[2] - 1 - (dot + 1)) >= sizeof(nm->op_name))
		return -1;
	for (int i = 0; i < 3; i++) {
		uint64_t v = strtoull(field[i], &end, 10);

		if (field[i][0] < '0' || field[i][0] > '9' || (*end && *end != '.'))
			return -1;
		*(i == 0 ? &nm->timestamp : i == 1 ? &nm->stream_id : &nm->task_id) = v;
	}
	nm->has_stream_id = true;
	memcpy(nm->op_type, base, (size_t)(dot - base));
	memcpy(nm->op_name, dot + 1, (size_t)(field[2] - 1 - (dot + 1)));
	return 0;
}

/* Every statistics CSV, dump.json and trigger.json under @dir; @step and @rank from the
 * nearest step<N> / rank<R> directories above. In a window of the flight recorder beneath
 * (@is_window) only its trigger.json: its tensors' statistics are the capture's own, already
 * read. Links and other kinds of files are passed by, so nothing outside the capture is read
 * and no FIFO is opened. */
static int walk(struct series_walk *w, const char *dir, int64_t step, int64_t rank, int depth,
		bool is_window)
{
	struct dirent **names = NULL;
	int n, ret = 0;

	if (depth > WALK_DEPTH_MAX)
		return 0;
	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		ret = -errno;
		snprintf(w->msg, w->msg_cap, "%s: %s", dir, strerror(errno));
		return ret;
	}
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		char path[4096], base[NAME_MAX + 1];
		struct adump_reader_name nm;
		struct stat st;

		if (ret < 0 || name[0] == '.' ||
		    snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
		    lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int64_t s = dir_number(name, "step"), r = dir_number(name, "rank");

			/* msprobe's tensors: the dump.json beside them says all the series need. */
			if (!strcmp(name, "dump_tensor_data"))
				continue;
			ret = walk(w, path, s >= 0 ? s : step, r >= 0 ? r : rank, depth + 1,
				   is_window || adump_reader_is_window_dir(name));
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		if (is_window && strcmp(name, "trigger.json"))
			continue;
		if (!strcmp(name, "dump.json")) {
			ret = walk_add(w, path, step, rank, FILE_DUMP_JSON, NULL);
		} else if (!strcmp(name, "trigger.json")) {
			ret = walk_add(w, path, step, rank, FILE_TRIGGER, NULL);
		} else if (has_suffix(name, ".csv")) {
			snprintf(base, sizeof(base), "%.*s", (int)(strlen(name) - 4), name);
			/* Only a dump's name followed by .csv is a statistics dump (result and
			 * summary CSVs of compare are not). */
			if (name_parse(base, &nm) == 0)
				ret = walk_add(w, path, step, rank, FILE_STATS_CSV, &nm);
		}
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return ret;
}

static int file_cmp(const void *a, const void *b)
{
	const struct series_file *x = a, *y = b;

	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->timestamp != y->timestamp)
		return x->timestamp < y->timestamp ? -1 : 1;
	if (x->task_id != y->task_id)
		return x->task_id < y->task_id ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* ---- series and points ------------------------------------------------------------------ */

struct series_ctx {
	struct adump_report *r;
	struct lh_table *index;                 /* "<rank>:<name>" -> series number + 1 */
	char *msg;
	size_t cap;
};

static int series_grow(struct adump_report *r)
{
	size_t cap = r->series_cap ? r->series_cap * 2 : 256;
	struct report_series *v = realloc(r->series, cap * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->series = v;
	r->series_cap = cap;
	return 0;
}

/* The series of tensor @name on @rank that has no point at @step yet: a name seen twice in a
 * step (an op called twice) is "<name> #2" and so on. */
static int series_find(struct series_ctx *c, const char *name, int64_t rank, int64_t step,
		       const char *dtype, const char *shape, uint32_t *out)
{
	struct adump_report *r = c->r;
	char key[1200];
	int err = 0;

	for (unsigned call = 1;; call++) {
		struct report_series *s;
		void *v;
		const char *k, *shown;
		char label[1100];

		if (call == 1)
			snprintf(label, sizeof(label), "%.1000s", name);
		else
			snprintf(label, sizeof(label), "%.1000s #%u", name, call);
		snprintf(key, sizeof(key), "%lld:%s", (long long)rank, label);
		if (lh_table_lookup_ex(c->index, key, &v)) {
			s = &r->series[(uintptr_t)v - 1];
			if (s->last_step == step)
				continue;
			s->last_step = step;
			*out = (uint32_t)((uintptr_t)v - 1);
			return 0;
		}
		if (r->series_count == r->series_cap && (err = series_grow(r)) < 0)
			return err;
		k = report_strn(r, key, SIZE_MAX, &err);
		shown = k ? strchr(k, ':') + 1 : NULL;
		s = &r->series[r->series_count];
		memset(s, 0, sizeof(*s));
		s->name = shown;
		s->dtype = report_strn(r, dtype, SIZE_MAX, &err);
		s->shape = report_strn(r, shape, SIZE_MAX, &err);
		if (err)
			return err;
		s->rank = rank;
		s->last_step = step;
		if (lh_table_insert(c->index, k, (void *)(uintptr_t)(r->series_count + 1)))
			return -ENOMEM;
		*out = (uint32_t)r->series_count++;
		return 0;
	}
}

static struct report_point *point_new(struct adump_report *r, int *err)
{
	struct report_point *p;

	if (r->point_count >= ADUMP_REPORT_MAX_ROWS) {
		*err = -E2BIG;
		return NULL;
	}
	if (r->point_count == r->point_cap) {
		size_t cap = r->point_cap ? r->point_cap * 2 : 1024;
		struct report_point *v = realloc(r->points, cap * sizeof(*v));

		if (!v) {
			*err = -ENOMEM;
			return NULL;
		}
		r->points = v;
		r->point_cap = cap;
	}
	p = &r->points[r->point_count];
	memset(p, 0, sizeof(*p));
	p->order = r->point_count++;
	return p;
}

static void shape_text(const struct adump_tensor *t, char *buf, size_t cap)
{
	size_t len = (size_t)snprintf(buf, cap, "[");

	for (uint32_t d = 0; d < t->dim_count && len < cap; d++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%llu", d ? "," : "",
					(unsigned long long)t->dims[d]);
	if (len < cap)
		snprintf(buf + len, cap - len, "]");
}

/* The points of one statistics dump (a CSV or a dump.json entry, as compare reads them). */
static int add_stats(struct series_ctx *c, const struct adump_compare_stats *st, const char *op,
		     int64_t step, int64_t rank, const char *const *args)
{
	char name[1100], shape[256];
	uint32_t in = 0, out_index = 0;
	int err = 0;

	for (uint32_t i = 0; i < st->count; i++) {
		const struct adump_compare_stats_tensor *t = &st->tensors[i];
		const char *dt = t->t.info.dtype >= 0 ? adump_dtype_name(t->t.info.dtype) : NULL;
		struct report_point *p;
		uint32_t series = 0;

		if (args && args[i])
			snprintf(name, sizeof(name), "%s.%s", op, args[i]);
		else
			snprintf(name, sizeof(name), "%s.%s.%u", op,
				 t->t.info.kind == ADUMP_TENSOR_OUTPUT ? "output" : "input",
				 t->t.info.kind == ADUMP_TENSOR_OUTPUT ? out_index : in);
		if (t->t.info.kind == ADUMP_TENSOR_OUTPUT)
			out_index++;
		else
			in++;
		shape_text(&t->t.info, shape, sizeof(shape));
		err = series_find(c, name, rank, step, dt ? dt : "", shape, &series);
		if (err < 0)
			return err;
		p = point_new(c->r, &err);
		if (!p)
			return err;
		p->series = series;
		p->step = step;
		for (int k = 0; k < 4; k++) {
			p->value[k] = t->stat[k].value;
			if (t->stat[k].is_present)
				p->has |= 1u << k;
		}
		if (t->stat[4].is_present || t->stat[5].is_present || t->stat[6].is_present) {
			p->has |= REPORT_POINT_HAS_COUNTS;
			p->nan_count = t->stat[4].is_present ? (uint64_t)t->stat[4].value : 0;
			p->inf_count = (t->stat[5].is_present ? (uint64_t)t->stat[5].value : 0) +
				       (t->stat[6].is_present ? (uint64_t)t->stat[6].value : 0);
		}
	}
	return 0;
}

/* The last byte of @path, which a whole CSV ends with a line end: -ADUMP_ERR_CORRUPT for a
 * cut one, -EINVAL for what is not a regular file (a FIFO is never opened for reading). */
static int csv_whole(const char *path, char *msg, size_t cap)
{
	int fd = adump_open_regular(path);
	struct stat st;
	char last = '\n';
	int ret = 0;

	if (fd < 0) {
		snprintf(msg, cap, "%s: %s", path, adump_open_strerror(fd));
		return fd;
	}
	if (fstat(fd, &st) < 0 || (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)) {
		ret = -errno;
		snprintf(msg, cap, "%s: %s", path, strerror(errno));
	} else if (st.st_size == 0 || last != '\n') {
		ret = -ADUMP_ERR_CORRUPT;
		snprintf(msg, cap, "%s: %s: the file is truncated (a statistics dump's rows end "
			 "with a line end)", path, st.st_size ? "the last row has no line end"
							      : "empty");
	}
	close(fd);
	return ret;
}

static int load_csv(struct series_ctx *c, const struct series_file *f)
{
	struct adump_compare_stats st;
	struct adump_reader_name nm;
	char base[NAME_MAX + 1], why[4096];
	const char *slash = strrchr(f->path, '/');
	int ret = csv_whole(f->path, c->msg, c->cap);

	if (ret < 0)
		return ret;
	snprintf(base, sizeof(base), "%s", slash ? slash + 1 : f->path);
	base[strlen(base) - 4] = '\0';
	name_parse(base, &nm);
	ret = adump_compare_stats_load(f->path, &st, why, sizeof(why));
	if (ret == 0 && st.count == 0) {
		snprintf(why, sizeof(why), "%s: no rows: not a statistics dump", f->path);
		ret = -ADUMP_ERR_CORRUPT;
	}
	if (ret < 0)
		snprintf(c->msg, c->cap, "%s%s", why, ret == -ADUMP_ERR_CORRUPT ?
			 " (content=stats writes Input/Output,Index,Data Size,Data Type,Format,"
			 "Shape and the statistics)" : "");
	else
		ret = add_stats(c, &st, nm.op_name, f->step, f->rank, NULL);
	adump_compare_stats_free(&st);
	return ret;
}

static int load_dump_json(struct series_ctx *c, const struct series_file *f)
{
	struct adump_msprobe *m = NULL;
	int ret = adump_msprobe_load(f->path, &m, c->msg, c->cap);

	for (uint32_t e = 0; ret == 0 && e < m->entry_count; e++) {
		struct adump_compare_stats st;
		const char *args[4096];
		const struct adump_msprobe_entry *en = &m->entries[e];

		ret = adump_compare_stats_msprobe(m, e, &st);
		for (uint32_t i = 0; ret == 0 && i < st.count && i < 4096; i++)
			args[i] = m->tensors[en->first + i].arg;
		if (ret == 0)
			ret = add_stats(c, &st, en->name, f->step, f->rank,
					st.count <= 4096 ? args : NULL);
		adump_compare_stats_free(&st);
	}
	adump_msprobe_free(m);
	return ret;
}

static const char *json_text(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return NULL;
	return json_object_get_string(v);
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* A window writes its trigger.json into each directory it wrote (each step, each rank): one
 * trigger. */
static bool trigger_seen(const struct adump_report *r, const struct report_trigger *t)
{
	for (size_t i = 0; i < r->trigger_count; i++) {
		const struct report_trigger *u = &r->triggers[i];

		if (u->step == t->step && u->rank == t->rank && same_text(u->rule, t->rule) &&
		    same_text(u->tensor, t->tensor) && same_text(u->reason, t->reason))
			return true;
	}
	return false;
}

/* The flight recorder's trigger.json: an object with rule, tensor or reason, step, rank, the
 * value that fired and the time; the step and rank of its directories where it gives none. */
static int load_trigger(struct series_ctx *c, const struct series_file *f)
{
	struct adump_report *r = c->r;
	struct report_trigger *t;
	struct json_object *o, *v;
	struct json_tokener *tok;
	char *text = malloc(TRIGGER_BYTES_MAX + 1);
	int fd = adump_open_regular(f->path), err = 0;
	ssize_t len = 0, n;

	if (!text || fd < 0) {
		err = fd < 0 ? fd : -ENOMEM;
		snprintf(c->msg, c->cap, "%s: %s", f->path, adump_open_strerror(err));
		goto out;
	}
	while (len <= TRIGGER_BYTES_MAX &&
	       (n = read(fd, text + len, TRIGGER_BYTES_MAX + 1 - (size_t)len)) > 0)
		len += n;
	if (len > TRIGGER_BYTES_MAX) {
		err = -ADUMP_ERR_CORRUPT;
		snprintf(c->msg, c->cap, "%s: larger than 1 MiB: not the flight recorder's "
			 "trigger.json", f->path);
		goto out;
	}
	text[len] = '\0';
	tok = json_tokener_new();
	o = tok ? json_tokener_parse_ex(tok, text, (int)len + 1) : NULL;
	if (tok)
		json_tokener_free(tok);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		err = -ADUMP_ERR_CORRUPT;
		snprintf(c->msg, c->cap, "%s: not the flight recorder's trigger.json (a JSON object "
			 "with rule, tensor or reason, step, rank, value): truncated or malformed",
			 f->path);
		goto out;
	}
	if (r->trigger_count == r->trigger_cap) {
		size_t cap = r->trigger_cap ? r->trigger_cap * 2 : 16;
		struct report_trigger *vv = realloc(r->triggers, cap * sizeof(*vv));

		if (!vv) {
			json_object_put(o);
			err = -ENOMEM;
			goto out;
		}
		r->triggers = vv;
		r->trigger_cap = cap;
	}
	t = &r->triggers[r->trigger_count];
	memset(t, 0, sizeof(*t));
	t->step = f->step;
	t->rank = f->rank;
	if (json_object_object_get_ex(o, "step", &v) && json_object_is_type(v, json_type_int))
		t->step = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "rank", &v) && json_object_is_type(v, json_type_int))
		t->rank = json_object_get_int64(v);
	t->rule = report_strn(r, json_text(o, "rule"), SIZE_MAX, &err);
	t->tensor = report_strn(r, json_text(o, "tensor"), SIZE_MAX, &err);
	t->reason = report_strn(r, json_text(o, "reason"), SIZE_MAX, &err);
	t->value = report_strn(r, json_text(o, "value"), SIZE_MAX, &err);
	t->path = report_strn(r, f->path, SIZE_MAX, &err);
	json_object_put(o);
	if (!err && !trigger_seen(r, t))
		r->trigger_count++;
	else
		snprintf(c->msg, c->cap, "%s: %s", f->path, strerror(-err));
out:
	if (fd >= 0)
		close(fd);
	free(text);
	return err;
}

/* ---- the report -------------------------------------------------------------------------- */

int report_load_series(struct adump_report *r, const char *dir, char *msg, size_t cap)
{
	struct series_walk w = { .msg = msg, .msg_cap = cap };
	struct series_ctx c = { .r = r, .msg = msg, .cap = cap };
	int ret;

	r->kind = ADUMP_REPORT_SERIES;
	/* Files above any step<N> (rank<R>) directory are step 0 (rank 0): a capture of one
	 * step is a series of one point. */
	ret = walk(&w, dir, 0, 0, 0, false);
	if (ret == 0 && !w.count) {
		snprintf(msg, cap, "%s: no result_<ts>.csv or summary_<ts>.csv of adump compare, and "
			 "no statistics capture (a content=stats session's <dump name>.csv files or "
			 "msprobe's dump.json, under step<N>/rank<R>/)", dir);
		ret = -ADUMP_ERR_NOT_FOUND;
	}
	if (ret == 0) {
		qsort(w.v, w.count, sizeof(*w.v), file_cmp);
		c.index = lh_kchar_table_new(1024, NULL);
		if (!c.index)
			ret = -ENOMEM;
	}
	for (size_t i = 0; ret == 0 && i < w.count; i++) {
		const struct series_file *f = &w.v[i];

		if (f->kind == FILE_STATS_CSV)
			ret = load_csv(&c, f);
		else if (f->kind == FILE_DUMP_JSON)
			ret = load_dump_json(&c, f);
		else
			ret = load_trigger(&c, f);
		if (ret == -E2BIG || ret == -ENOMEM)
			snprintf(msg, cap, "%s: %s", f->path, ret == -ENOMEM ? strerror(ENOMEM) :
				 "more tensor statistics or text than a report holds (1,000,000 "
				 "points, 512 MiB)");
	}
	if (ret == 0 && !r->point_count && !r->trigger_count) {
		snprintf(msg, cap, "%s: its statistics files list no tensor", dir);
		ret = -ADUMP_ERR_NOT_FOUND;
	}
	if (ret == 0) {
		ret = report_series_judge(r);
		if (ret < 0)
			snprintf(msg, cap, "%s: more text than a report holds (512 MiB)", dir);
	}
	if (c.index)
		lh_table_free(c.index);
	for (size_t i = 0; i < w.count; i++)
		free(w.v[i].path);
	free(w.v);
	return ret;
}
