/* SPDX-License-Identifier: Apache-2.0 */
/* reader/: msprobe's PyTorch layout (<rank dir>/dump.json, dump_tensor_data/<data_name>.pt)
 * read as dumps: each dump.json data entry is one dump whose inputs are its input_args
 * (flattened), input_kwargs, then parameters (a backward entry: its input), and whose outputs
 * are its output or its parameters_grad; tensors only, in that order. */
#ifndef ADUMP_READER_MSPROBE_H
#define ADUMP_READER_MSPROBE_H

#include "reader/reader.h"

/* max, min, mean, norm as dump.json has them. */
#define ADUMP_MSPROBE_STAT_COUNT 4

struct adump_msprobe_tensor {
	enum adump_tensor_kind kind;
	uint32_t index;                 /* among the entry's tensors of its kind */
	const char *arg;                /* "input.0", "input.kwargs.mask", "parameters.weight",
					 * "output.0", "parameters_grad.bias" */
	int32_t dtype;                  /* -1: a dtype name the reader does not know */
	const char *dtype_text;
	uint32_t dim_count;
	uint64_t dims[ADUMP_MAX_DIMS];
	int requires_grad;              /* -1: not recorded */
	const char *stat_text[ADUMP_MSPROBE_STAT_COUNT];      /* NULL where absent or null */
	double stat[ADUMP_MSPROBE_STAT_COUNT];
	const char *md5;                /* NULL: none */
	const char *data_name;          /* NULL: a statistics dump */
};

struct adump_msprobe_entry {
	const char *name;
	uint32_t first, count;          /* tensors[first .. first + count) */
	uint32_t kind_count[2];         /* inputs, outputs */
	uint64_t order;                 /* position in dump.json */
};

struct adump_msprobe {
	char *dir;                      /* the rank directory */
	char *json_path;
	char *data_dir;                 /* <dir>/dump_tensor_data */
	char task[32];
	char level[16];
	struct adump_msprobe_entry *entries;
	uint32_t entry_count;
	struct adump_msprobe_tensor *tensors;
	uint32_t tensor_count;
	void *json;                     /* json-c root: the strings above point into it */
};

/* Whether @dir holds a dump.json. */
ADUMP_HIDDEN bool adump_msprobe_is_dir(const char *dir);

/* Read @path (a rank directory or its dump.json). Return: 0; -ADUMP_ERR_CORRUPT (not JSON, no
 * "data" object), -errno, -ENOMEM with @msg naming the file. */
ADUMP_HIDDEN int adump_msprobe_load(const char *path, struct adump_msprobe **out, char *msg,
				    size_t cap);
ADUMP_HIDDEN void adump_msprobe_free(struct adump_msprobe *m);

/* The .pt file of @t: "<data_dir>/<data_name>", into @buf. */
ADUMP_HIDDEN void adump_msprobe_pt_path(const struct adump_msprobe *m,
					const struct adump_msprobe_tensor *t, char *buf,
					size_t cap);

/* The name of @t's .pt file relative to the rank directory (m->dir):
 * "dump_tensor_data/<data_name>", into @buf; opened only with adump_open_beneath(), so a
 * data_name can never lead outside the rank directory. */
ADUMP_HIDDEN void adump_msprobe_pt_rel(const struct adump_msprobe_tensor *t, char *buf,
				       size_t cap);

/* adump_pt_read() of the file open as @fd (taken over: closed), named @path in messages; a
 * file that is not regular is refused. For a caller that opened it its own way (Python's
 * msprobe reader, link by link). */
ADUMP_HIDDEN int adump_pt_read_fd(int fd, const char *path, bool is_checked,
				  struct adump_pt_info *out, char *msg, size_t cap);

/* adump_pt_read() of @name, opened beneath @dir (adump_open_beneath()), @path in messages. */
ADUMP_HIDDEN int adump_pt_read_beneath(const char *dir, const char *name, const char *path,
				       bool is_checked, struct adump_pt_info *out, char *msg,
				       size_t cap);

/* Open entry @e in @r as a dump named "<dir>/dump.json:<entry>": a header listing its tensors
 * (dtype and shape from each .pt file, which must agree with dump.json), payloads read from
 * the .pt files when asked. @is_checked: each .pt's CRCs are compared first.
 * Return: 0; -ADUMP_ERR_NOT_FOUND for a tensor without data_name (statistics only); the .pt
 * reader's errors; message in adump_reader_error(). */
ADUMP_HIDDEN int adump_msprobe_open(struct adump_reader *r, const struct adump_msprobe *m,
				    uint32_t e, bool is_checked);

/* ---- from reader.c ---- */

/* Open a dump in @r whose header is given rather than parsed: @tensors (copied) over @src
 * (taken, also on failure), named @name. Return: 0 or -ENOMEM. */
ADUMP_HIDDEN int adump_reader_open_given(struct adump_reader *r, struct adump_reader_source *src,
					 const char *name, const char *op_name,
					 const struct adump_reader_tensor *tensors, uint32_t count);

#endif
