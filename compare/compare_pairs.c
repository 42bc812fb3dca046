/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare --recursive`'s pairing (adump/compare_pairs.h): both roots walked together,
 * capture directory by capture directory. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adump/compare_pairs.h"
#include "reader/reader.h"

/* Deeper than any capture layout (CANN's is five levels); stops symlink loops. */
#define DEPTH_MAX 32

struct adump_compare_pairs {
	struct adump_compare_pair *v;
	size_t count, cap;
};

struct dir_list {
	char **subdirs;
	size_t count;
	bool is_capture;                /* holds dump files or a packed capture itself */
	bool is_msprobe;                /* holds msprobe's dump.json (its dump_tensor_data/ is
					 * part of it, not a subdirectory to walk) */
};

static void dir_list_free(struct dir_list *d)
{
	for (size_t i = 0; i < d->count; i++)
		free(d->subdirs[i]);
	free(d->subdirs);
	memset(d, 0, sizeof(*d));
}

static bool is_dump_name(const char *base)
{
	struct adump_reader_name fields;
	char name[NAME_MAX + 1];
	size_t len = strlen(base);

	if (len > NAME_MAX)
		return false;
	if (len > 4 && !strcmp(base + len - 4, ".csv"))
		len -= 4;
	snprintf(name, sizeof(name), "%.*s", (int)len, base);
	return adump_reader_name_parse(name, &fields) == 0;
}

/* @path's subdirectories (name order) and whether it is a capture directory. */
static int dir_scan(const char *path, struct dir_list *d)
{
	struct dirent **names;
	int n, ret = 0;

	memset(d, 0, sizeof(*d));
	if (!path)
		return 0;
	n = scandir(path, &names, NULL, alphasort);
	if (n < 0)
		return -errno;
	d->subdirs = calloc((size_t)n + 1, sizeof(*d->subdirs));
	if (!d->subdirs)
		ret = -ENOMEM;
	for (int i = 0; i < n; i++) {
		const char *base = names[i]->d_name;
		char *full = NULL;
		struct stat st;

		if (ret == 0 && base[0] != '.' && asprintf(&full, "%s/%s", path, base) >= 0 &&
		    stat(full, &st) == 0) {
			if (S_ISDIR(st.st_mode) && !strcmp(base, "packed")) {
				d->is_capture = true;
			} else if (S_ISDIR(st.st_mode) && (!strcmp(base, "dump_tensor_data") ||
							   adump_reader_is_window_dir(base))) {
				/* msprobe's tensors: read through dump.json; a flight recorder's
				 * window: compared by naming it */
			} else if (S_ISDIR(st.st_mode)) {
				d->subdirs[d->count] = strdup(base);
				if (!d->subdirs[d->count++])
					ret = -ENOMEM;
			} else if (S_ISREG(st.st_mode)) {
				d->is_capture |= adump_reader_packed_file_kind(full) ==
						 ADUMP_PACKED_FILE_INDEX || is_dump_name(base);
				d->is_msprobe |= !strcmp(base, "dump.json");
			}
		}
		free(full);
		free(names[i]);
	}
	free(names);
	d->is_capture |= d->is_msprobe;
	if (ret < 0)
		dir_list_free(d);
	return ret;
}

static int64_t label_number(const char *label, const char *word)
{
	size_t wlen = strlen(word);

	for (const char *p = label; p && *p; p = strchr(p, '/'), p = p ? p + 1 : NULL) {
		size_t n;

		if (strncmp(p, word, wlen))
			continue;
		n = strspn(p + wlen, "0123456789");
		if (n && (p[wlen + n] == '/' || !p[wlen + n]))
			return strtoll(p + wlen, NULL, 10);
	}
	return -1;
}

/* step<N> or rank<R>: a directory that is one step or rank, not a level to pair by position. */
static bool is_numbered(const char *name)
{
	return label_number(name, "step") >= 0 || label_number(name, "rank") >= 0;
}

/* msprobe names a process's directory proc<pid> until the process group exists (then
 * rank<R>): a run without torch.distributed has one proc<pid> per step, which stands for
 * the other side's only proc or rank directory there. */
static bool is_proc_rank(const char *a, const char *b)
{
	bool pa = !strncmp(a, "proc", 4) && a[4] && !a[4 + strspn(a + 4, "0123456789")];
	bool pb = !strncmp(b, "proc", 4) && b[4] && !b[4 + strspn(b + 4, "0123456789")];

	return (pa && (pb || label_number(b, "rank") >= 0)) ||
	       (pb && label_number(a, "rank") >= 0);
}

static int pair_add(struct adump_compare_pairs *p, const char *my, const char *golden,
		    const char *label)
{
	struct adump_compare_pair *e;

	if (p->count == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		struct adump_compare_pair *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	e = &p->v[p->count];
	e->my = my ? strdup(my) : NULL;
	e->golden = golden ? strdup(golden) : NULL;
	e->label = strdup(label);
	if ((my && !e->my) || (golden && !e->golden) || !e->label) {
		free((char *)e->my);
		free((char *)e->golden);
		free((char *)e->label);
		return -ENOMEM;
	}
	e->step = label_number(label, "step");
	e->rank = label_number(label, "rank");
	p->count++;
	return 0;
}

static char *path_join(const char *dir, const char *name)
{
	char *out;

	if (!dir)
		return NULL;
	if (!strcmp(dir, "."))
		return strdup(name);
	return asprintf(&out, "%s/%s", dir, name) < 0 ? NULL : out;
}

static int walk(struct adump_compare_pairs *p, const char *my, const char *golden,
		const char *label, int depth);

/* An msprobe rank directory (step0/rank0) on one side, where the other has the same rank
 * directory holding one device directory (adump.torch's CANN layout: step0/rank0/0): those
 * two pair up. Return: 1 when paired, 0 when not that case, or negative. */
static int msprobe_pair(struct adump_compare_pairs *p, const struct dir_list d[2],
			const char *my, const char *golden, const char *label)
{
	int c = d[0].is_msprobe ? 0 : 1, o = 1 - c, ret;
	const char *dir[2] = { my, golden };
	struct dir_list sub;
	char *path;

	if (!d[c].is_msprobe || d[o].is_capture || d[o].count != 1 || !dir[o] ||
	    is_numbered(d[o].subdirs[0]))
		return 0;
	path = path_join(dir[o], d[o].subdirs[0]);
	if (!path)
		return -ENOMEM;
	ret = dir_scan(path, &sub);
	if (ret == 0 && sub.is_capture && !sub.is_msprobe)
		ret = pair_add(p, c == 0 ? my : path, c == 0 ? path : golden, label) < 0 ? -ENOMEM
											  : 1;
	dir_list_free(&sub);
	free(path);
	return ret;
}

/* Walk the children @a (of @my) and @b (of @golden): @label + "/" + the name of @a (or @b). */
static int walk_child(struct adump_compare_pairs *p, const char *my, const char *a,
		      const char *golden, const char *b, const char *label, int depth)
{
	char *m = a ? path_join(my, a) : NULL, *g = b ? path_join(golden, b) : NULL;
	char *l = path_join(label, a ? a : b);
	int ret = -ENOMEM;

	if ((!a || m) && (!b || g) && l)
		ret = walk(p, m, g, l, depth + 1);
	free(m);
	free(g);
	free(l);
	return ret;
}

static int walk(struct adump_compare_pairs *p, const char *my, const char *golden,
		const char *label, int depth)
{
	struct dir_list d[2];
	size_t only[2] = { 0, 0 }, last[2] = { 0, 0 };
	int ret;

	if (depth > DEPTH_MAX)
		return 0;
	ret = dir_scan(my, &d[0]);
	if (ret == 0)
		ret = dir_scan(golden, &d[1]);
	if (ret < 0) {
		dir_list_free(&d[0]);
		return ret;
	}
	if (d[0].is_msprobe || d[1].is_msprobe) {
		ret = msprobe_pair(p, d, my, golden, label);
		if (ret != 0) {
			dir_list_free(&d[0]);
			dir_list_free(&d[1]);
			return ret < 0 ? ret : 0;
		}
	}
	if (d[0].is_capture || d[1].is_capture)
		ret = pair_add(p, d[0].is_capture ? my : NULL, d[1].is_capture ? golden : NULL,
			       label);
	/* Children on both sides by name; count those on one side only. */
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < d[s].count; i++) {
			bool found = false;

			for (size_t k = 0; k < d[1 - s].count && !found; k++)
				found = !strcmp(d[s].subdirs[i], d[1 - s].subdirs[k]);
			if (found && s == 0 && ret == 0)
				ret = walk_child(p, my, d[0].subdirs[i], golden, d[0].subdirs[i],
						 label, depth);
			if (!found) {
				only[s]++;
				last[s] = i;
			}
		}
	if (ret == 0 && only[0] == 1 && only[1] == 1 &&
	    ((!is_numbered(d[0].subdirs[last[0]]) && !is_numbered(d[1].subdirs[last[1]])) ||
	     is_proc_rank(d[0].subdirs[last[0]], d[1].subdirs[last[1]]))) {
		/* One directory each that the other lacks: the same level under another name (a
		 * time stamp); never two different steps or ranks. */
		ret = walk_child(p, my, d[0].subdirs[last[0]], golden, d[1].subdirs[last[1]], label,
				 depth);
	} else {
		for (int s = 0; s < 2 && ret == 0; s++)
			for (size_t i = 0; i < d[s].count && ret == 0; i++) {
				bool found = false;

				for (size_t k = 0; k < d[1 - s].count && !found; k++)
					found = !strcmp(d[s].subdirs[i], d[1 - s].subdirs[k]);
				if (!found)
					ret = walk_child(p, s ? NULL : my, s ? NULL : d[s].subdirs[i],
							 s ? golden : NULL, s ? d[s].subdirs[i] : NULL,
							 label, depth);
			}
	}
	dir_list_free(&d[0]);
	dir_list_free(&d[1]);
	return ret;
}

static int pair_cmp(const void *a, const void *b)
{
	const struct adump_compare_pair *x = a, *y = b;

	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->label, y->label);
}

int adump_compare_pairs_list(const char *my, const char *golden,
			     struct adump_compare_pairs **out, char *msg, size_t cap)
{
	struct adump_compare_pairs *p;
	const char *roots[2] = { my, golden };
	char scratch[1];
	int ret;

	adump_msg_begin(&msg, &cap, scratch);
	if (!my || !golden || !out) {
		snprintf(msg, cap, "invalid arguments");
		return -ADUMP_ERR_CONFIG;
	}
	for (int s = 0; s < 2; s++) {
		struct stat st;

		if (stat(roots[s], &st) < 0) {
			ret = -errno;
			snprintf(msg, cap, "%s: %s", roots[s], strerror(errno));
			return ret;
		}
		if (!S_ISDIR(st.st_mode)) {
			snprintf(msg, cap, "%s: not a directory", roots[s]);
			return -ENOTDIR;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	ret = walk(p, my, golden, ".", 0);
	if (ret == 0 && !p->count) {
		snprintf(msg, cap, "%s, %s: no dump files in any directory below", my, golden);
		ret = -ADUMP_ERR_NOT_FOUND;
	}
	if (ret < 0) {
		if (!msg[0])
			snprintf(msg, cap, "%s", adump_strerror(ret));
		adump_compare_pairs_free(p);
		return ret;
	}
	qsort(p->v, p->count, sizeof(*p->v), pair_cmp);
	*out = p;
	return 0;
}

size_t adump_compare_pairs_count(const struct adump_compare_pairs *p)
{
	return p ? p->count : 0;
}

const struct adump_compare_pair *adump_compare_pairs_get(const struct adump_compare_pairs *p,
							 size_t i)
{
	return p && i < p->count ? &p->v[i] : NULL;
}

void adump_compare_pairs_free(struct adump_compare_pairs *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->count; i++) {
		free((char *)p->v[i].my);
		free((char *)p->v[i].golden);
		free((char *)p->v[i].label);
	}
	free(p->v);
	free(p);
}
