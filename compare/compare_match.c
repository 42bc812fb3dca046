/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare`'s matching: both sides' listed files (compare_list.c) grouped into ops by
 * op name as msaccucmp does, with its ids; names made alike by the file names told apart by
 * the headers' op names, and dumps that cannot be told apart set aside with the reason. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "compare/compare_int.h"

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

/* File names sanitise the op name (every byte outside [A-Za-z0-9_-] becomes '_'): where one
 * file name's op name stands for several dumps on either side, the op names their headers
 * hold tell them apart (modules "a.b" and "a_b"). Then those files are matched by the
 * header's name. Only such files' headers are read: nothing more is read for names that
 * occur once. */
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

bool adump_compare_names_collide(const char *a, const char *b)
{
	if (!a || !b || !a[0] || !b[0] || !strcmp(a, b))
		return false;
	for (; *a && *b; a++, b++)
		if (adump_name_char(*a) != adump_name_char(*b))
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

