/* SPDX-License-Identifier: Apache-2.0 */
/* An adump.torch capture in msprobe's PyTorch layout. Per rank directory:
 *     dump.json         {"task", "level", "framework", "dump_data_dir", "data": {entry: ...}}
 *     stack.json        the capture's, else {}
 *     construct.json    the capture's (adump.torch writes it per step), else from each dump's
 *                       `module` attribute
 *     dump_tensor_data/<entry>.<input|kwargs|output|parameters>.<key path>.pt
 * The dfx_message adump.torch writes into each header describes the call in msprobe's terms
 * (_torch_info.py): its tensor items name the dump's tensor they refer to ("input.2"), which
 * this file replaces by msprobe's tensor description (statistics from the bytes, data_name).
 * A dump without one (a backward call) lists its inputs and outputs in order.
 * This file lists a rank directory's dumps (steps and ranks too) and writes its three json
 * files; export_entry.c makes each dump's entry and .pt files, export_construct.c
 * construct.json. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "adump/export.h"
#include "common/common.h"
#include "compare/compare.h"
#include "reader/reader.h"

#include "export_int.h"

struct ex_file {
	char *path;
	uint64_t timestamp;
	uint64_t task_id;
	bool is_csv;
};

struct ex_files {
	struct ex_file *v;
	size_t n, cap;
};

int ex_fail(struct ex_ctx *c, int ret, const char *fmt, ...)
{
	va_list ap;

	if (c->msg && c->cap) {
		va_start(ap, fmt);
		vsnprintf(c->msg, c->cap, fmt, ap);
		va_end(ap);
	}
	return ret;
}

static int files_add(struct ex_files *f, const char *path, const struct adump_reader_name *nm,
		     bool is_csv)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		struct ex_file *v = realloc(f->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n].path = strdup(path);
	if (!f->v[f->n].path)
		return -ENOMEM;
	f->v[f->n].timestamp = nm->timestamp;
	f->v[f->n].task_id = nm->task_id;
	f->v[f->n].is_csv = is_csv;
	f->n++;
	return 0;
}

static void files_free(struct ex_files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].path);
	free(f->v);
}

/* Every dump file (and statistics .csv) under @dir, any depth. */
static int collect(const char *dir, struct ex_files *f, int depth)
{
	struct dirent *e;
	DIR *d;
	int ret = 0;

	if (depth > 16)
		return 0;
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char path[PATH_MAX], name[NAME_MAX + 1];
		struct adump_reader_name nm;
		struct stat st;
		bool csv;

		if (e->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		/* lstat: a link inside the capture is never followed (issue 30). */
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode) || S_ISFIFO(st.st_mode)) {
			adump_log(ADUMP_LOG_WARN, "export", "%s: %s inside the capture: not read", path,
				  S_ISLNK(st.st_mode) ? "a symbolic link" : "a FIFO");
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			if (strcmp(e->d_name, "dump_tensor_data") == 0)
				continue;
			ret = collect(path, f, depth + 1);
			if (ret < 0)
				break;
			continue;
		}
		if (!S_ISREG(st.st_mode) || has_suffix(e->d_name, ".json"))
			continue;
		csv = has_suffix(e->d_name, ".csv");
		snprintf(name, sizeof(name), "%s", e->d_name);
		if (csv)
			name[strlen(name) - 4] = '\0';
		if (adump_reader_name_parse(name, &nm) < 0)
			continue;
		ret = files_add(f, path, &nm, csv);
		if (ret < 0)
			break;
	}
	closedir(d);
	return ret;
}

static int file_cmp(const void *a, const void *b)
{
	const struct ex_file *x = a, *y = b;

	if (x->timestamp != y->timestamp)
		return x->timestamp < y->timestamp ? -1 : 1;
	if (x->task_id != y->task_id)
		return x->task_id < y->task_id ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* ---- one rank directory ----------------------------------------------------------------- */

static struct json_object *load_json(const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
	    access(path, R_OK) < 0)
		return NULL;
	return json_object_from_file(path);
}

/* @name in the directory @dir_fd (@dir for messages), written whole (common/outfile.c). */
static int save_json(struct ex_ctx *c, int dir_fd, const char *dir, const char *name,
		     struct json_object *o)
{
	struct adump_outfile of;
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							  JSON_C_TO_STRING_NOSLASHESCAPE);
	int ret;

	if (!text)
		return -ENOMEM;
	ret = adump_outfile_open(&of, dir_fd, 0644);
	if (ret == 0)
		ret = adump_outfile_publish(&of, adump_write_all(of.fd, text, strlen(text)),
					    name, 0);
	if (ret < 0)
		return ex_fail(c, ret, "%s/%s: %s", dir, name, strerror(-ret));
	return 0;
}

/* @out: the directory written, @out_top joined with @rel (NULL: @out_top itself). The
 * directories of @rel are made and entered without following a link (issue 30); @out_top,
 * the user's, may be one. */
static long export_rank(struct ex_ctx *c, const char *in, const char *out, const char *out_top,
			const char *rel)
{
	struct ex_files files = { 0 };
	struct json_object *doc = NULL, *data, *construct = NULL, *stack = NULL;
	char data_dir[PATH_MAX], abs_dir[PATH_MAX];
	bool any_module = false, any_api = false, stats = false, build_construct;
	int out_fd = -1, ret;
	long n = 0;

	c->data_fd = -1;

	ret = collect(in, &files, 0);
	if (ret < 0) {
		ex_fail(c, ret, "%s: %s", in, strerror(-ret));
		goto out;
	}
	if (files.n == 0) {
		ret = ex_fail(c, -ENOENT, "%s: no dump files", in);
		goto out;
	}
	qsort(files.v, files.n, sizeof(files.v[0]), file_cmp);
	for (size_t i = 0; i < files.n; i++)
		stats |= files.v[i].is_csv;
	ret = adump_mkdir_p(out_top, 0755);
	if (ret == 0) {
		out_fd = open(out_top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ret = out_fd < 0 ? -errno : 0;
	}
	if (ret == 0 && rel) {
		int top_fd = out_fd;

		out_fd = adump_dir_open_new(top_fd, rel, 0755);
		ret = out_fd < 0 ? out_fd : 0;
		close(top_fd);
		if (ret == -ENOTDIR) {
			ex_fail(c, ret, "%s: a symbolic link or a file in the way: not written "
				"through", out);
			goto out;
		}
	}
	if (ret < 0) {
		ex_fail(c, ret, "%s: %s", out, strerror(-ret));
		goto out;
	}
	c->data_dir = NULL;
	if (!stats && !(c->flags & ADUMP_EXPORT_NO_DATA)) {
		snprintf(data_dir, sizeof(data_dir), "%s/dump_tensor_data", out);
		/* entered without following a link planted in its place */
		c->data_fd = adump_dir_open_new(out_fd, "dump_tensor_data", 0755);
		ret = c->data_fd < 0 ? c->data_fd : 0;
		if (ret < 0 || !realpath(data_dir, abs_dir)) {
			ret = ex_fail(c, ret < 0 ? ret : -errno, "%s: %s", data_dir,
				      strerror(ret < 0 ? -ret : errno));
			goto out;
		}
		c->data_dir = abs_dir;
	}
	construct = ex_construct_fix(load_json(in, "construct.json"));
	build_construct = !construct;
	if (build_construct && !(construct = json_object_new_object())) {
		ret = -ENOMEM;
		goto out;
	}
	doc = json_object_new_object();
	data = json_object_new_object();
	if (!doc || !data) {
		json_object_put(data);
		ret = -ENOMEM;
		goto out;
	}
	json_object_object_add(doc, "task", json_object_new_string(c->data_dir ? "tensor"
									       : "statistics"));
	json_object_object_add(doc, "level", NULL);     /* set below */
	json_object_object_add(doc, "framework", json_object_new_string("pytorch"));
	json_object_object_add(doc, "dump_data_dir", c->data_dir ?
			       json_object_new_string(c->data_dir) : NULL);
	json_object_object_add(doc, "data", data);
	for (size_t i = 0; i < files.n; i++) {
		bool is_module = false;

		if (files.v[i].is_csv) {
			ret = ex_export_csv(c, files.v[i].path, data, construct, &is_module);
		} else {
			ret = ex_export_dump(c, files.v[i].path, data,
					     build_construct ? construct : NULL, &is_module);
		}
		if (ret < 0)
			goto out;
		any_module |= is_module;
		any_api |= !is_module;
		n++;
	}
	if (build_construct)
		ex_construct_infer(data, construct);
	json_object_object_add(doc, "level", json_object_new_string(any_module && any_api ? "mix" :
								   any_module ? "L0" : "L1"));
	stack = load_json(in, "stack.json");
	if (!stack)
		stack = json_object_new_object();
	ret = save_json(c, out_fd, out, "dump.json", doc);
	if (!ret)
		ret = save_json(c, out_fd, out, "construct.json", construct);
	if (!ret)
		ret = save_json(c, out_fd, out, "stack.json", stack);
out:
	if (c->data_fd >= 0)
		close(c->data_fd);
	c->data_fd = -1;
	if (out_fd >= 0)
		close(out_fd);
	json_object_put(doc);
	json_object_put(construct);
	json_object_put(stack);
	files_free(&files);
	return ret < 0 ? ret : n;
}

/* A directory inside the capture: a link to one is not (never followed). */
static bool is_real_dir(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_step_name(const char *n)
{
	return strncmp(n, "step", 4) == 0 && n[4] >= '0' && n[4] <= '9';
}

long adump_export_msprobe(const char *in, const char *out, unsigned flags, char *msg,
			  size_t cap)
{
	struct ex_ctx c = { .flags = flags, .msg = msg, .cap = cap };
	struct dirent **steps = NULL;
	long total = 0, ret;
	int ns;

	if (msg && cap)
		msg[0] = '\0';
	if (!in || !out)
		return ex_fail(&c, -EINVAL, "no input or output directory");
	if (!is_dir(in))
		return ex_fail(&c, -ENOENT, "%s: not a directory", in);
	ret = adump_reader_create(&c.r);
	if (ret < 0)
		return ret;
	ns = scandir(in, &steps, NULL, alphasort);
	if (ns < 0) {
		ret = ex_fail(&c, -errno, "%s: %s", in, strerror(errno));
		goto out;
	}
	for (int i = 0; i < ns && ret >= 0; i++) {
		char sdir[PATH_MAX], odir[PATH_MAX];
		struct dirent **ranks = NULL;
		int nr;

		if (!is_step_name(steps[i]->d_name))
			continue;
		if (snprintf(sdir, sizeof(sdir), "%s/%s", in, steps[i]->d_name) >=
		    (int)sizeof(sdir) || !is_real_dir(sdir))
			continue;
		nr = scandir(sdir, &ranks, NULL, alphasort);
		for (int j = 0; j < nr; j++) {
			char rdir[PATH_MAX];

			if (ret >= 0 && ranks[j]->d_name[0] != '.' &&
			    (strncmp(ranks[j]->d_name, "rank", 4) == 0 ||
			     strncmp(ranks[j]->d_name, "proc", 4) == 0)) {
				int a = snprintf(rdir, sizeof(rdir), "%s/%s", sdir,
						 ranks[j]->d_name);
				int b = snprintf(odir, sizeof(odir), "%s/%s/%s", out,
						 steps[i]->d_name, ranks[j]->d_name);

				if (a < (int)sizeof(rdir) && b < (int)sizeof(odir) &&
				    is_real_dir(rdir)) {
					ret = export_rank(&c, rdir, odir, out,
							  odir + strlen(out) + 1);
					if (ret == -ENOENT)
						ret = 0;        /* a rank with nothing this step */
					else if (ret >= 0)
						total += ret;
				}
			}
			free(ranks[j]);
		}
		free(ranks);
	}
	if (ret >= 0 && total == 0) {
		/* one rank directory given */
		ret = export_rank(&c, in, out, out, NULL);
		if (ret >= 0)
			total = ret;
	}
out:
	for (int i = 0; i < ns; i++)
		free(steps[i]);
	free(steps);
	free(c.buf);
	adump_reader_destroy(c.r);
	return ret < 0 ? ret : total;
}
