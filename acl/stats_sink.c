/* SPDX-License-Identifier: Apache-2.0 */
/* dump_data "stats" on a pipeline without a statistics sink: the session runs with the
 * callback sink and this chunk function, on the worker threads, parses each file's header as
 * it streams past and feeds the payload to pipeline/stats.h, then writes <file>.csv (or hands
 * the CSV text to a registered acl callback, as CANN's host writer does). Nothing is buffered
 * but the header. Once struct adump_config carries a stats selection (ADUMP_CONFIG_HAS_STATS),
 * the workers do this themselves and dump.c stops using this file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl_int.h"
#include "dump_data.pb-c.h"
#include "pipeline/stats.h"

#define MOD "acl"
#define HEADER_MAX (64u << 20)          /* a sane bound on one DumpData header */

struct stats_file {
	struct stats_file *next;
	char *name;
	uint8_t *header;                /* 8-byte length, then the DumpData bytes */
	size_t header_have;
	size_t header_need;             /* 8 until the length is known */
	bool has_op;
	bool is_failed;
	struct adump_op op;
	struct adump_tensor *tensors;
	struct adump_statacc acc;
};

static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stats_file *files;

static struct stats_file *file_get(const char *name)
{
	struct stats_file *f;

	pthread_mutex_lock(&files_lock);
	for (f = files; f; f = f->next)
		if (!strcmp(f->name, name))
			break;
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (f && !(f->name = strdup(name))) {
			free(f);
			f = NULL;
		}
		if (f) {
			f->header_need = 8;
			f->next = files;
			files = f;
		}
	}
	pthread_mutex_unlock(&files_lock);
	return f;
}

static void file_drop(struct stats_file *f)
{
	struct stats_file **pp;

	pthread_mutex_lock(&files_lock);
	for (pp = &files; *pp; pp = &(*pp)->next) {
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	}
	pthread_mutex_unlock(&files_lock);
	if (f->has_op)
		adump_statacc_fini(&f->acc);
	free(f->tensors);
	free(f->header);
	free(f->name);
	free(f);
}

static void fill_tensor(struct adump_tensor *t, enum adump_tensor_kind kind, int32_t dtype,
			int32_t format, const Toolkit__Dumpdata__Shape *shape, uint64_t size)
{
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->dtype = dtype;
	t->format = format;
	t->bytes = size;
	if (shape) {
		t->dim_count = shape->n_dim > ADUMP_MAX_DIMS ? ADUMP_MAX_DIMS : (uint32_t)shape->n_dim;
		memcpy(t->dims, shape->dim, t->dim_count * sizeof(uint64_t));
	}
}

/* Header complete: describe the payload (inputs, outputs, buffers, workspaces) for statacc. */
static int file_start(struct stats_file *f, uint32_t stats_mask)
{
	Toolkit__Dumpdata__DumpData *d;
	size_t n, k = 0;
	int ret;

	d = toolkit__dumpdata__dump_data__unpack(NULL, f->header_need - 8, f->header + 8);
	if (!d)
		return -ADUMP_ERR_CORRUPT;
	n = d->n_input + d->n_output + d->n_buffer + d->n_space;
	f->tensors = calloc(n ? n : 1, sizeof(*f->tensors));
	if (!f->tensors) {
		toolkit__dumpdata__dump_data__free_unpacked(d, NULL);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->n_input; i++)
		fill_tensor(&f->tensors[k++], ADUMP_TENSOR_INPUT, d->input[i]->data_type,
			    d->input[i]->format, d->input[i]->shape, d->input[i]->size);
	for (size_t i = 0; i < d->n_output; i++)
		fill_tensor(&f->tensors[k++], ADUMP_TENSOR_OUTPUT, d->output[i]->data_type,
			    d->output[i]->format, d->output[i]->shape, d->output[i]->size);
	for (size_t i = 0; i < d->n_buffer; i++)
		fill_tensor(&f->tensors[k++], ADUMP_TENSOR_BUFFER, 0, 0, NULL, d->buffer[i]->size);
	for (size_t i = 0; i < d->n_space; i++)
		fill_tensor(&f->tensors[k++], ADUMP_TENSOR_WORKSPACE, 0, 0, NULL, d->space[i]->size);
	toolkit__dumpdata__dump_data__free_unpacked(d, NULL);
	f->op = (struct adump_op){ .op_type = "stats", .op_name = f->name,
				   .tensor_count = (uint32_t)n, .tensors = f->tensors };
	ret = adump_statacc_init(&f->acc, &f->op, stats_mask);
	if (ret == 0)
		f->has_op = true;
	return ret;
}

static int write_csv(const char *path, const char *text, size_t len)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t done = 0;
	int fd, ret;

	if (slash && (size_t)(slash - path) < sizeof(dir)) {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
		if (dir[0])
			adump_mkdir_p(dir, 0750);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t w = write(fd, text + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			ret = -errno;
			close(fd);
			return ret;
		}
		done += (size_t)w;
	}
	return close(fd) < 0 ? -errno : 0;
}

static int file_finish(struct adump_acl_state *st, struct stats_file *f)
{
	adump_acl_callback_fn cb = atomic_load_explicit(&st->callback, memory_order_acquire);
	char path[ACL_DUMP_MAX_FILE_PATH_LENGTH];
	char *csv = NULL;
	size_t len = 0;
	int ret;

	if (!f->has_op || f->is_failed)
		return -ADUMP_ERR_INCOMPLETE;
	ret = adump_statacc_csv(&f->acc, &csv, &len);
	if (ret < 0)
		return ret;
	if (snprintf(path, sizeof(path), "%s.csv", f->name) >= (int)sizeof(path)) {
		free(csv);
		return -ENAMETOOLONG;
	}
	if (cb) {
		/* The CSV text, NUL included, as one last chunk named <file>.csv. */
		struct adump_chunk c = { .file_name = path, .offset = 0, .data = csv,
					 .len = len + 1, .is_last = true };

		ret = adump_acl_chunk_to_callback(&c, st);
	} else {
		ret = write_csv(path, csv, len);
	}
	free(csv);
	return ret;
}

int adump_acl_stats_chunk(const struct adump_chunk *chunk, void *user)
{
	struct adump_acl_state *st = user;
	const uint8_t *p = chunk->data;
	size_t left = chunk->len;
	uint64_t off = chunk->offset;
	struct stats_file *f = file_get(chunk->file_name);
	int ret = 0;

	if (!f)
		return -ENOMEM;
	while (left && !f->is_failed && f->header_have < f->header_need) {
		size_t n;

		if (off != f->header_have) {
			f->is_failed = true;    /* chunks of one file arrive in order */
			break;
		}
		if (!f->header) {
			f->header = malloc(8);
			if (!f->header) {
				f->is_failed = true;
				break;
			}
		}
		n = f->header_need - f->header_have;
		n = n < left ? n : left;
		memcpy(f->header + f->header_have, p, n);
		f->header_have += n;
		p += n;
		off += n;
		left -= n;
		if (f->header_need == 8 && f->header_have == 8) {
			uint64_t h;
			uint8_t *grown;

			memcpy(&h, f->header, 8);
			grown = h && h < HEADER_MAX ? realloc(f->header, 8 + h) : NULL;
			if (!grown) {
				f->is_failed = true;
				break;
			}
			f->header = grown;
			f->header_need = 8 + h;
		} else if (f->header_have == f->header_need && f->header_need > 8) {
			ret = file_start(f, st->stats_mask);
			if (ret < 0)
				f->is_failed = true;
		}
	}
	if (left && f->has_op && !f->is_failed)
		adump_statacc_feed(&f->acc, off - f->header_need, p, left);
	if (chunk->is_last) {
		ret = file_finish(st, f);
		if (ret < 0)
			adump_log_once(ADUMP_LOG_ERROR, MOD, "stats for %s: %s", chunk->file_name,
				       adump_strerror(ret));
		file_drop(f);
	}
	return ret < 0 ? ret : 0;
}
