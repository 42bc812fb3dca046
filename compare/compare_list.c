/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare`'s listing: each side's dump files (a directory walked, a packed capture's
 * index, msprobe's dump.json entries, or one file) named and parsed into a struct cmp_side,
 * and freed again. Grouping them into ops is compare_match.c's. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/common.h"
#include "compare/compare_int.h"

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
			*p = adump_name_char(*p);
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
		/* lstat: a link inside the capture is never followed, out or in (issue 30);
		 * only the path the user gives may be one. */
		if (lstat(path, &st) < 0) {
			/* gone since it was listed: nothing to read */
		} else if (S_ISLNK(st.st_mode) || S_ISFIFO(st.st_mode)) {
			adump_log(ADUMP_LOG_WARN, "reader", "%s: %s inside the capture: not read", path,
				  S_ISLNK(st.st_mode) ? "a symbolic link" : "a FIFO");
		} else {
			if (S_ISDIR(st.st_mode) && is_recursive && adump_msprobe_is_dir(path)) {
				ret = side_add_msprobe(s, path, NULL, 0);
			} else if (S_ISDIR(st.st_mode)) {
				/* A packed directory is read through its index, not file by file:
				 * a capture's root holds its sessions' directories, each its
				 * packed/ (issue 30). */
				if (is_recursive && adump_reader_is_window_dir(base))
					adump_log(ADUMP_LOG_INFO, "reader", "%s: a flight recorder "
						  "window: not read (name it to read it)", path);
				else if (is_recursive && strcmp(base, "packed"))
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
