/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare`'s listing and matching: each side's dump files (a directory, a packed
 * capture or one file) listed by name, then grouped into ops by op name as msaccucmp does. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compare/compare_int.h"

/* ---- listing ------------------------------------------------------------------------------ */

/* @name ends as a dump file name does: at least four dot-separated fields, the last digits. */
static bool is_dump_shaped(const char *name)
{
	const char *last = strrchr(name, '.');
	size_t dots = 0;

	if (!last || !last[1] || strspn(last + 1, "0123456789") != strlen(last + 1))
		return false;
	for (const char *p = name; *p; p++)
		dots += *p == '.';
	return dots >= 3;
}

static int side_add(struct cmp_side *s, const char *path, const char *base,
		    const struct adump_reader_packed_entry *entry)
{
	struct cmp_file f = { 0 };
	size_t len = strlen(base);
	struct adump_reader_name fields;
	char name[NAME_MAX + 1];

	if (!strcmp(base, "mapping.csv") || !strcmp(base, "convert_failed_file_list.txt"))
		return 0;
	/* content=stats writes "<dump name>.csv" in place of the dump. */
	f.is_stats = len > 4 && len <= NAME_MAX && !strcmp(base + len - 4, ".csv");
	snprintf(name, sizeof(name), "%.*s", (int)(f.is_stats ? len - 4 : len), base);
	if (adump_reader_name_parse(name, &fields) < 0) {
		/* A dump whose op name holds characters outside [A-Za-z0-9_-] (CANN's writer
		 * replaces only ' ', '.', '/' and '\\') is left out as msaccucmp leaves it out,
		 * and said as msaccucmp says it: "every tensor passes" must not hide it. Other
		 * files (the loss log, results) are no dumps and are passed over quietly. */
		adump_log(is_dump_shaped(name) ? ADUMP_LOG_WARN : ADUMP_LOG_DEBUG, "reader",
			  "compare: %s is not a dump file name (<op_type>.<op_name>.<task>"
			  "[.<stream>].<timestamp>, names of [A-Za-z0-9_-]), skipped", path);
		return 0;
	}
	if (fields.is_skipped) {
		adump_log(ADUMP_LOG_DEBUG, "reader", "compare: %s: \"_lxslice\" inside the op name, "
			  "skipped as msaccucmp skips it", path);
		return 0;
	}
	f.timestamp = fields.timestamp;
	f.subtask = fields.subtask;
	f.is_ffts = fields.is_ffts;
	f.op_type = strdup(fields.op_type);
	f.op_name = strdup(fields.op_name);
	f.path = strdup(path);
	if (entry) {
		f.is_packed = true;
		f.entry = *entry;
		f.entry.name = strdup(entry->name);
		f.entry.segment = strdup(entry->segment);
		f.entry.index_path = strdup(entry->index_path);
		f.entry.message = "";
	}
	if (!f.path || !f.op_type || !f.op_name ||
	    (entry && (!f.entry.name || !f.entry.segment || !f.entry.index_path)))
		goto err;
	if (s->count == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct cmp_file *files = realloc(s->files, cap * sizeof(*files));

		if (!files)
			goto err;
		s->files = files;
		s->cap = cap;
	}
	s->files[s->count++] = f;
	return 0;
err:
	free(f.path);
	free(f.op_type);
	free(f.op_name);
	free((char *)f.entry.name);
	free((char *)f.entry.segment);
	free((char *)f.entry.index_path);
	return -ENOMEM;
}

/* The op type an msprobe entry name carries: a module's class (Module.<path>.<Class>.forward.0),
 * an API's name (Functional.linear.0.forward, Aten.addmm.0.forward); the field before the
 * direction or the call number. */
static void ms_op_type(const char *name, char *buf, size_t cap)
{
	const char *dir = NULL, *p;

	for (p = strchr(name, '.'); p; p = strchr(p + 1, '.'))
		if (!strncmp(p, ".forward", 8) || !strncmp(p, ".backward", 9) ||
		    !strncmp(p, ".parameters_grad", 16)) {
			dir = p;
			break;
		}
	if (!dir)
		dir = name + strlen(name);
	/* skip a call number right before the direction (API names) */
	p = dir;
	while (p > name && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p > name && p[-1] == '.' && p != dir)
		dir = p - 1;
	for (p = dir; p > name && p[-1] != '.';)
		p--;
	snprintf(buf, cap, "%.*s", (int)(dir - p), p);
	if (!buf[0])
		snprintf(buf, cap, "msprobe");
}

/* msprobe's step<N>/rank<R> in @dir, as a sort key that puts steps, then ranks, in number
 * order (entries then follow in dump.json order). */
static uint64_t ms_dir_key(const char *dir)
{
	uint64_t step = 0, rank = 0;
	const char *p;

	if ((p = strstr(dir, "/step")) || !strncmp(p = dir, "step", 4))
		step = strtoull(p + (*p == '/' ? 5 : 4), NULL, 10);
	if ((p = strstr(dir, "/rank")) || !strncmp(p = dir, "rank", 4))
		rank = strtoull(p + (*p == '/' ? 5 : 4), NULL, 10);
	return (step & 0xffffff) << 40 | (rank & 0xfff) << 28;
}

/* Every entry of the msprobe rank directory (or dump.json) @path as a file of its own. */
static int side_add_msprobe(struct cmp_side *s, const char *path, char *msg, size_t cap)
{
	struct adump_msprobe *m, **ms;
	uint64_t key;
	char tmp[1];
	int ret;

	ret = adump_msprobe_load(path, &m, msg ? msg : tmp, msg ? cap : 1);
	if (ret < 0)
		return ret;
	ms = realloc(s->ms, (s->ms_count + 1) * sizeof(*ms));
	if (!ms) {
		adump_msprobe_free(m);
		return -ENOMEM;
	}
	s->ms = ms;
	s->ms[s->ms_count++] = m;
	key = ms_dir_key(m->dir);
	for (uint32_t i = 0; i < m->entry_count; i++) {
		const struct adump_msprobe_entry *e = &m->entries[i];
		struct cmp_file f = { 0 };
		char type[256];

		ms_op_type(e->name, type, sizeof(type));
		f.ms = m;
		f.ms_entry = i;
		f.is_stats = strcmp(m->task, "tensor") != 0;
		f.timestamp = key | (e->order & 0xfffffff);
		f.op_type = strdup(type);
		f.op_name = strdup(e->name);
		f.hname = strdup(e->name);
		f.is_named = true;
		if (asprintf(&f.path, "%s:%s", m->json_path, e->name) < 0)
			f.path = NULL;
		if (!f.op_type || !f.op_name || !f.hname || !f.path) {
			free(f.op_type);
			free(f.op_name);
			free(f.hname);
			free(f.path);
			return -ENOMEM;
		}
		/* The name as a CANN file name holds it, so both layouts match by one key. */
		for (char *p = f.op_name; *p; p++)
			if (*p == '.' || *p == '/' || *p == ' ' || *p == '\\')
				*p = '_';
		if (s->count == s->cap) {
			size_t n = s->cap ? 2 * s->cap : 64;
			struct cmp_file *files = realloc(s->files, n * sizeof(*files));

			if (!files) {
				free(f.op_type);
				free(f.op_name);
				free(f.hname);
				free(f.path);
				return -ENOMEM;
			}
			s->files = files;
			s->cap = n;
		}
		s->files[s->count++] = f;
	}
	return 0;
}

/* The entries of the packed capture at @path (a capture directory holding packed/, that
 * folder, or one index) into @s, which reads one packed capture: a second one (@is_found,
 * met walking a directory) is -EEXIST. Nothing packed at @path: 0. */
static int side_add_packed(struct cmp_side *s, const char *path, bool is_found)
{
	const struct adump_reader_packed_entry *e;
	int k, ret = 0;

	if (s->packed)
		return is_found ? -EEXIST : 0;
	if (adump_reader_packed_open(path, &s->packed) != 0) {
		s->packed = NULL;
		return 0;
	}
	while (ret == 0 && (k = adump_reader_packed_next(s->packed, &e)) > 0) {
		const char *base;
		char *full;

		if (e->status != ADUMP_PACKED_ENTRY)
			continue;
		base = strrchr(e->name, '/');
		if (asprintf(&full, "%s/%s", adump_reader_packed_dir(s->packed), e->name) < 0)
			return -ENOMEM;
		ret = side_add(s, full, base ? base + 1 : e->name, e);
		free(full);
	}
	return ret;
}

static int side_walk(struct cmp_side *s, const char *dir, bool is_recursive)
{
	struct dirent **names;
	int n, ret = 0;

	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		return -errno;
	for (int i = 0; i < n; i++) {
		const char *base = names[i]->d_name;
		char *path;
		struct stat st;

		if (ret < 0 || base[0] == '.' || asprintf(&path, "%s/%s", dir, base) < 0) {
			free(names[i]);
			continue;
		}
		if (stat(path, &st) == 0) {
			if (S_ISDIR(st.st_mode) && is_recursive && adump_msprobe_is_dir(path)) {
				ret = side_add_msprobe(s, path, NULL, 0);
			} else if (S_ISDIR(st.st_mode)) {
				/* A packed directory is read through its index, not file by file:
				 * a capture's root holds its sessions' directories, each its
				 * packed/ (issue 30). */
				if (is_recursive && strcmp(base, "packed"))
					ret = side_walk(s, path, true);
				else if (is_recursive)
					ret = side_add_packed(s, dir, true);
			} else if (S_ISREG(st.st_mode) &&
				   adump_reader_packed_file_kind(path) == ADUMP_PACKED_FILE_NONE) {
				ret = side_add(s, path, base, NULL);
			}
		}
		free(path);
		free(names[i]);
	}
	free(names);
	return ret;
}

int adump_compare_side_list(struct cmp_side *s, const char *path, bool is_recursive, char *msg,
			    size_t cap)
{
	struct stat st;
	int ret;

	if (stat(path, &st) < 0) {
		ret = -errno;
		snprintf(msg, cap, "%s: %s", path, strerror(errno));
		return ret;
	}
	if ((S_ISDIR(st.st_mode) && adump_msprobe_is_dir(path)) ||
	    (S_ISREG(st.st_mode) && (!strcmp(path, "dump.json") ||
				     (strlen(path) > 10 &&
				      !strcmp(path + strlen(path) - 10, "/dump.json"))))) {
		/* msprobe's layout: one rank directory (its dump_tensor_data/ read through it) */
		ret = side_add_msprobe(s, path, msg, cap);
		if (ret < 0)
			return ret;
	} else if (S_ISREG(st.st_mode) &&
		   adump_reader_packed_file_kind(path) == ADUMP_PACKED_FILE_NONE) {
		const char *base = strrchr(path, '/');

		ret = side_add(s, path, base ? base + 1 : path, NULL);
	} else {
		ret = S_ISDIR(st.st_mode) ? side_walk(s, path, is_recursive) : 0;
		if (ret == 0 && !s->packed)
			ret = side_add_packed(s, path, false);
	}
	if (ret == -EEXIST) {
		snprintf(msg, cap, "%s: holds more than one packed capture (session directory): "
			 "give each one", path);
		return ret;
	}
	if (ret < 0) {
		snprintf(msg, cap, "%s: %s", path, adump_strerror(ret));
		return ret;
	}
	if (!s->count && s->ms_count) {
		snprintf(msg, cap, "%s: dump.json lists no entries", path);
		return -ADUMP_ERR_NOT_FOUND;
	}
	if (!s->count) {
		snprintf(msg, cap, "%s: no dump files (names <op_type>.<op_name>.<task_id>[.<stream_id>]"
			 ".<timestamp>)%s", path, is_recursive ? "" : "; --recursive reads subdirectories");
		return -ADUMP_ERR_NOT_FOUND;
	}
	return 0;
}

/* ---- matching ----------------------------------------------------------------------------- */

/* Files by op name (the file name's), FFTS+ subtask, timestamp, path. */
static int file_cmp(const void *a, const void *b)
{
	const struct cmp_file *x = a, *y = b;
	int c = strcmp(x->op_name, y->op_name);

	if (c)
		return c;
	if (x->subtask != y->subtask)
		return x->subtask < y->subtask ? -1 : 1;
	if (x->timestamp != y->timestamp)
		return x->timestamp < y->timestamp ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* The same by matching key (the op name the ops are matched by). */
static int key_file_cmp(const void *a, const void *b)
{
	const struct cmp_file *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : file_cmp(a, b);
}

/* Files [*lo, *hi) of @s whose file name's op name is @name (@s sorted by file_cmp). */
static void name_run(const struct cmp_side *s, const char *name, size_t *lo, size_t *hi)
{
	size_t a = 0, b = s->count;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (strcmp(s->files[mid].op_name, name) < 0)
			a = mid + 1;
		else
			b = mid;
	}
	*lo = a;
	for (b = a; b < s->count && !strcmp(s->files[b].op_name, name);)
		b++;
	*hi = b;
}

/* The op name @f's header holds, read once (the 8-byte length and the header: a few hundred
 * bytes); NULL when there is none or the header cannot be read (compare then says why). */
static const char *file_hname(struct cmp_side *s, struct adump_reader *r, struct cmp_file *f)
{
	const struct adump_reader_header *h;
	int ret;

	if (f->is_named || f->is_stats)
		return f->hname;
	f->is_named = true;
	ret = f->is_packed ? adump_reader_open_packed(r, s->packed, &f->entry, false)
			   : adump_reader_open(r, f->path);
	h = ret == 0 ? adump_reader_header(r) : NULL;
	if (h && h->op_name && h->op_name[0])
		f->hname = strdup(h->op_name);
	adump_reader_close(r);
	return f->hname;
}

/* File names sanitise the op name ('.', '/', ' ' become '_'): where one file name's op name
 * stands for several dumps on either side, the op names their headers hold tell them apart
 * (modules "a.b" and "a_b"). Then those files are matched by the header's name. Only such
 * files' headers are read: nothing more is read for names that occur once. */
static int names_resolve(struct adump_compare *c)
{
	struct adump_reader *r;
	int ret = adump_reader_create(&r);

	if (ret < 0)
		return ret;
	for (int s = 0; s < 2; s++) {
		struct cmp_side *sd = &c->side[s];

		for (size_t i = 0, j; i < sd->count; i = j) {
			size_t lo[2], hi[2];
			const char *one = NULL;
			bool is_split = false;

			for (j = i + 1; j < sd->count && !strcmp(sd->files[j].op_name,
								  sd->files[i].op_name);)
				j++;
			if (j - i < 2 || sd->files[i].is_ffts || sd->files[i].is_stats ||
			    sd->files[i].key != sd->files[i].op_name)
				continue;
			for (int k = 0; k < 2; k++)
				name_run(&c->side[k], sd->files[i].op_name, &lo[k], &hi[k]);
			for (int k = 0; k < 2; k++)
				for (size_t m = lo[k]; m < hi[k]; m++) {
					const char *h = file_hname(&c->side[k], r, &c->side[k].files[m]);

					if (h && one && strcmp(h, one))
						is_split = true;
					if (h && !one)
						one = h;
				}
			if (!is_split)
				continue;
			for (int k = 0; k < 2; k++)
				for (size_t m = lo[k]; m < hi[k]; m++) {
					struct cmp_file *f = &c->side[k].files[m];

					if (f->hname)
						f->key = f->hname;
				}
		}
	}
	adump_reader_destroy(r);
	return 0;
}

static char name_char(char ch)
{
	return ch == '.' || ch == '/' || ch == ' ' || ch == '\\' ? '_' : ch;
}

bool adump_compare_names_collide(const char *a, const char *b)
{
	if (!a || !b || !a[0] || !b[0] || !strcmp(a, b))
		return false;
	for (; *a && *b; a++, b++)
		if (name_char(*a) != name_char(*b))
			return false;
	return !*a && !*b;
}

/* adump.torch's names count calls ("Module.l1.Linear.forward.0", "Aten.mm.3.forward"): a
 * dot-separated field of digits. CANN's op names have none. */
static bool has_call_number(const char *name)
{
	for (const char *p = name ? strchr(name, '.') : NULL; p; p = strchr(p + 1, '.')) {
		size_t n = strspn(p + 1, "0123456789");

		if (n && (p[1 + n] == '.' || !p[1 + n]))
			return true;
	}
	return false;
}

/* One op's files on one side. */
struct unit {
	struct cmp_file *file;          /* the one compared (latest, or the n-th) */
	struct cmp_file *first;         /* the op's files: first[0..count) */
	uint32_t count;
	uint32_t rank;                  /* n-th dump of its key (0 under latest-wins) */
	size_t side;
};

static int unit_cmp(const void *a, const void *b)
{
	const struct unit *x = a, *y = b;

	if (x->side != y->side)
		return x->side < y->side ? -1 : 1;
	if (x->file->timestamp != y->file->timestamp)
		return x->file->timestamp < y->file->timestamp ? -1 : 1;
	return strcmp(x->file->path, y->file->path);
}

static int clash_set(struct cmp_file *a, struct cmp_file *b)
{
	if (a->clash)
		return 0;
	if (asprintf(&a->clash, "[%s] Two dumps cannot be told apart (same op name %s, same "
		     "timestamp %llu): %s and %s; neither is compared.", a->key,
		     a->hname ? a->hname : a->op_name, (unsigned long long)a->timestamp, b->path,
		     a->path) < 0) {
		a->clash = NULL;
		return -ENOMEM;
	}
	adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", a->clash);
	return 0;
}

/* A side's ops: files of one key form one op (FFTS+ subtasks, or msaccucmp's rule for a CANN
 * dump without call numbers: the latest is compared, the others are counted and named in a
 * warning); dumps of one key that carry call numbers are each an op of their own, the n-th
 * (in timestamp order) to be matched with the other side's n-th. */
static int units_make(struct adump_compare *c, int s, struct unit *u, size_t *n)
{
	struct cmp_side *sd = &c->side[s];

	for (size_t i = 0, j; i < sd->count; i = j) {
		struct cmp_file *f = &sd->files[i];
		uint32_t k;

		for (j = i + 1; j < sd->count && !strcmp(sd->files[j].key, f->key);)
			j++;
		if (j - i > 1 && !f->is_ffts && has_call_number(f->hname ? f->hname : f->key)) {
			for (k = 0; k < j - i; k++) {
				if (k && f[k].timestamp == f[k - 1].timestamp &&
				    (clash_set(&f[k], &f[k - 1]) < 0 || clash_set(&f[k - 1], &f[k]) < 0))
					return -ENOMEM;
				u[(*n)++] = (struct unit){ &f[k], &f[k], 1, k, (size_t)s };
			}
			continue;
		}
		u[(*n)++] = (struct unit){ &sd->files[j - 1], f, (uint32_t)(j - i), 0, (size_t)s };
		if (j - i > 1 && !f->is_ffts) {
			char names[1024] = "";
			size_t len = 0;

			sd->shadowed_count += j - i - 1;
			for (k = 0; k + 1 < j - i && len + 1 < sizeof(names); k++)
				len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
							k ? ", " : "", f[k].path);
			adump_log(ADUMP_LOG_WARN, "reader", "compare: %s: %zu dumps of this op on %s; "
				  "the latest (%s) is compared as msaccucmp does, %zu not: %s",
				  f->key, j - i, s == MY ? "my output" : "the ground truth",
				  sd->files[j - 1].path, j - i - 1, names);
		}
	}
	return 0;
}

/* The unit of @key's @rank-th dump among @u[0..n) (in key order, ranks ascending), or NULL. */
static struct unit *unit_find(struct unit *u, size_t n, const char *key, uint32_t rank)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(u[mid].file->key, key);

		if (c < 0 || (c == 0 && u[mid].rank < rank))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && !strcmp(u[lo].file->key, key) && u[lo].rank == rank ? &u[lo] : NULL;
}

/* msaccucmp's ids: ops of my output ordered by the timestamp of their latest file get
 * 0..k-1; ops found only in the ground truth follow in its timestamp order. Equal
 * timestamps are ordered by path (msaccucmp keeps directory listing order). */
int adump_compare_match(struct adump_compare *c)
{
	struct unit *u[2] = { NULL, NULL }, *keys = NULL;
	size_t n[2] = { 0, 0 }, key_count = 0;
	int ret = -ENOMEM;

	for (int s = 0; s < 2; s++) {
		for (size_t i = 0; i < c->side[s].count; i++)
			c->side[s].files[i].key = c->side[s].files[i].op_name;
		qsort(c->side[s].files, c->side[s].count, sizeof(struct cmp_file), file_cmp);
	}
	ret = names_resolve(c);
	if (ret < 0)
		return ret;
	ret = -ENOMEM;
	for (int s = 0; s < 2; s++) {
		qsort(c->side[s].files, c->side[s].count, sizeof(struct cmp_file), key_file_cmp);
		u[s] = calloc(c->side[s].count + 1, sizeof(*u[s]));
		if (!u[s])
			goto out;
		ret = units_make(c, s, u[s], &n[s]);
		if (ret < 0)
			goto out;
		ret = -ENOMEM;
	}
	keys = calloc(n[MY] + n[GOLDEN] + 1, sizeof(*keys));
	if (!keys)
		goto out;
	for (size_t i = 0; i < n[MY]; i++)
		keys[key_count++] = u[MY][i];
	for (size_t i = 0; i < n[GOLDEN]; i++)
		if (!unit_find(u[MY], n[MY], u[GOLDEN][i].file->key, u[GOLDEN][i].rank))
			keys[key_count++] = u[GOLDEN][i];
	qsort(keys, key_count, sizeof(*keys), unit_cmp);
	c->ops = calloc(key_count ? key_count : 1, sizeof(*c->ops));
	if (!c->ops)
		goto out;
	for (size_t i = 0; i < key_count; i++) {
		struct cmp_op *op = &c->ops[i];
		const struct unit *side[2] = { NULL, NULL };

		op->id = i;
		op->name = keys[i].file->key;
		side[keys[i].side] = &keys[i];
		if (keys[i].side == MY)
			side[GOLDEN] = unit_find(u[GOLDEN], n[GOLDEN], op->name, keys[i].rank);
		for (int s = 0; s < 2; s++) {
			op->file[s] = side[s] ? side[s]->file : NULL;
			op->first[s] = side[s] ? side[s]->first : NULL;
			op->count[s] = side[s] ? side[s]->count : 0;
		}
	}
	c->op_count = key_count;
	ret = 0;
out:
	free(keys);
	free(u[MY]);
	free(u[GOLDEN]);
	return ret;
}

void adump_compare_side_fini(struct cmp_side *s)
{
	for (size_t i = 0; i < s->count; i++) {
		free(s->files[i].path);
		free(s->files[i].op_type);
		free(s->files[i].op_name);
		free(s->files[i].hname);
		free(s->files[i].clash);
		if (s->files[i].is_packed) {
			free((char *)s->files[i].entry.name);
			free((char *)s->files[i].entry.segment);
			free((char *)s->files[i].entry.index_path);
		}
	}
	free(s->files);
	adump_reader_packed_close(s->packed);
	for (size_t i = 0; i < s->ms_count; i++)
		adump_msprobe_free(s->ms[i]);
	free(s->ms);
}
