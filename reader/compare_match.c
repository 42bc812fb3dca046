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

#include "reader/compare_int.h"

/* ---- listing ------------------------------------------------------------------------------ */

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
		adump_log(ADUMP_LOG_DEBUG, "reader", "compare: %s is not a dump file name, skipped",
			  path);
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
			if (S_ISDIR(st.st_mode)) {
				/* A packed directory is read through its index, not file by file. */
				if (is_recursive && strcmp(base, "packed"))
					ret = side_walk(s, path, true);
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
	if (S_ISREG(st.st_mode) && adump_reader_packed_file_kind(path) == ADUMP_PACKED_FILE_NONE) {
		const char *base = strrchr(path, '/');

		ret = side_add(s, path, base ? base + 1 : path, NULL);
	} else {
		ret = S_ISDIR(st.st_mode) ? side_walk(s, path, is_recursive) : 0;
		if (ret == 0 && adump_reader_packed_open(path, &s->packed) == 0) {
			const struct adump_reader_packed_entry *e;
			int k;

			while (ret == 0 && (k = adump_reader_packed_next(s->packed, &e)) > 0) {
				const char *base;
				char *full;

				if (e->status != ADUMP_PACKED_ENTRY)
					continue;
				base = strrchr(e->name, '/');
				if (asprintf(&full, "%s/%s", adump_reader_packed_dir(s->packed),
					     e->name) < 0)
					return -ENOMEM;
				ret = side_add(s, full, base ? base + 1 : e->name, e);
				free(full);
			}
		}
	}
	if (ret < 0) {
		snprintf(msg, cap, "%s: %s", path, adump_strerror(ret));
		return ret;
	}
	if (!s->count) {
		snprintf(msg, cap, "%s: no dump files (names <op_type>.<op_name>.<task_id>[.<stream_id>]"
			 ".<timestamp>)%s", path, is_recursive ? "" : "; --recursive reads subdirectories");
		return -ADUMP_ERR_NOT_FOUND;
	}
	return 0;
}

/* ---- matching ----------------------------------------------------------------------------- */

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

struct op_key {
	struct cmp_file *f;             /* the op's latest file */
	size_t side;
};

static int key_cmp(const void *a, const void *b)
{
	const struct op_key *x = a, *y = b;

	if (x->side != y->side)
		return x->side < y->side ? -1 : 1;
	if (x->f->timestamp != y->f->timestamp)
		return x->f->timestamp < y->f->timestamp ? -1 : 1;
	return strcmp(x->f->path, y->f->path);
}

/* The latest file of @name on @s, or NULL (files sorted by op name, then timestamp). */
static struct cmp_file *side_latest(struct cmp_side *s, const char *name)
{
	size_t lo = 0, hi = s->count;

	/* Last index whose op name is <= name. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(s->files[mid].op_name, name) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && !strcmp(s->files[lo - 1].op_name, name) ? &s->files[lo - 1] : NULL;
}

/* msaccucmp's ids: ops of my output ordered by the timestamp of their latest file get
 * 0..k-1; ops found only in the ground truth follow in its timestamp order. Equal
 * timestamps are ordered by path (msaccucmp keeps directory listing order). */
int adump_compare_match(struct adump_compare *c)
{
	struct op_key *keys;
	size_t key_count = 0;

	for (int s = 0; s < 2; s++)
		qsort(c->side[s].files, c->side[s].count, sizeof(struct cmp_file), file_cmp);
	keys = calloc(c->side[MY].count + c->side[GOLDEN].count, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (int s = 0; s < 2; s++) {
		struct cmp_side *sd = &c->side[s];

		for (size_t i = 0; i < sd->count; i++) {
			bool is_last = i + 1 == sd->count ||
				       strcmp(sd->files[i].op_name, sd->files[i + 1].op_name);

			if (!is_last)
				continue;
			if (s == GOLDEN && side_latest(&c->side[MY], sd->files[i].op_name))
				continue;
			keys[key_count++] = (struct op_key){ &sd->files[i], (size_t)s };
		}
	}
	qsort(keys, key_count, sizeof(*keys), key_cmp);
	c->ops = calloc(key_count ? key_count : 1, sizeof(*c->ops));
	if (!c->ops) {
		free(keys);
		return -ENOMEM;
	}
	for (size_t i = 0; i < key_count; i++) {
		struct cmp_op *op = &c->ops[i];

		op->id = i;
		op->name = keys[i].f->op_name;
		op->file[keys[i].side] = keys[i].f;
		if (keys[i].side == MY)
			op->file[GOLDEN] = side_latest(&c->side[GOLDEN], op->name);
		for (int s = 0; s < 2; s++) {
			struct cmp_file *f = op->file[s];

			/* The op's files sit together, its latest last. */
			op->first[s] = f;
			op->count[s] = f ? 1 : 0;
			while (f && op->first[s] > c->side[s].files &&
			       !strcmp(op->first[s][-1].op_name, f->op_name)) {
				op->first[s]--;
				op->count[s]++;
			}
		}
	}
	c->op_count = key_count;
	free(keys);
	return 0;
}

void adump_compare_side_fini(struct cmp_side *s)
{
	for (size_t i = 0; i < s->count; i++) {
		free(s->files[i].path);
		free(s->files[i].op_type);
		free(s->files[i].op_name);
		if (s->files[i].is_packed) {
			free((char *)s->files[i].entry.name);
			free((char *)s->files[i].entry.segment);
			free((char *)s->files[i].entry.index_path);
		}
	}
	free(s->files);
	adump_reader_packed_close(s->packed);
}
