/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the compare suites (test_compare*.c): random float32 values, dumps written by
 * hand into <dir>/my and <dir>/golden, a compare of the two, its rows and cells found by
 * tensor and column name, and the result CSV parsed back. Each suite is one file, so the
 * directory and dump_write()'s settings below are that suite's own. */
#ifndef ADUMP_TEST_COMPARE_HELPERS_H
#define ADUMP_TEST_COMPARE_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adump/compare.h"
#include "reader_helpers.h"

static inline float *randf(size_t n, uint64_t *rng, double scale)
{
	float *v = malloc((n ? n : 1) * sizeof(float));

	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < n; i++)
		v[i] = (float)(((double)(t_rand(rng) >> 11) / (double)(1ull << 53) - 0.5) * scale);
	return v;
}

/* ---- directories of dumps ------------------------------------------------------------------ */

static char *dir;
static int32_t output_format = ADUMP_FORMAT_ND;   /* dump_write()'s output format */
static const char *file_name;                      /* dump_write()'s file name, when set */

static inline int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* Write <dir>/<side>/Add.<name>.1.2.<ts> (or <dir>/<side>/<file_name>) with float32 inputs @in
 * and outputs @out. */
static inline void dump_write(const char *side, const char *name, uint64_t ts,
			      uint32_t in_count, const float *const *in, const uint64_t *in_dims,
			      uint32_t out_count, const float *const *out,
			      const uint64_t *out_dims, uint32_t dim_count)
{
	struct adump_tensor t[8];
	const void *data[8];
	char path[4096];
	uint32_t n = 0;
	uint64_t elems = 1;
	size_t len;
	void *buf;
	FILE *f;

	for (uint32_t d = 0; d < dim_count; d++)
		elems *= in_dims[d];
	for (uint32_t i = 0; i < in_count; i++, n++) {
		t[n] = rt_tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, dim_count, in_dims, elems * 4);
		t[n].address = 4096 * (n + 1);
		data[n] = in[i];
	}
	elems = 1;
	for (uint32_t d = 0; d < dim_count; d++)
		elems *= out_dims[d];
	for (uint32_t i = 0; i < out_count; i++, n++) {
		t[n] = rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, dim_count, out_dims, elems * 4);
		t[n].format = output_format;
		data[n] = out[i];
	}
	struct adump_op op = { .op_type = "Add", .op_name = name, .task_id = 1, .stream_id = 2,
			       .timestamp_us = ts, .tensor_count = n, .tensors = t };

	buf = rt_dump_mem(&op, data, &len);
	snprintf(path, sizeof(path), "%s/%s", dir, side);
	mkdir(path, 0755);
	if (file_name)
		snprintf(path, sizeof(path), "%s/%s/%s", dir, side, file_name);
	else
		snprintf(path, sizeof(path), "%s/%s/Add.%s.1.2.%llu", dir, side, name,
			 (unsigned long long)ts);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

/* A minimal reader of Python csv output: quoted cells, doubled quotes, CRLF rows. */
static inline char ***csv_parse(const char *text, size_t *row_count, size_t *col_count)
{
	char ***rows = NULL, *cell = malloc(strlen(text) + 1);
	size_t nrows = 0, ncols = 0, len = 0;
	char **cur = NULL;
	const char *p = text;

	ck_assert_ptr_nonnull(cell);
	while (*p) {
		bool is_quoted = *p == '"';

		len = 0;
		if (is_quoted) {
			for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
				if (*p == '"')
					p++;
				cell[len++] = *p;
			}
			ck_assert_int_eq(*p, '"');
			p++;
		} else {
			while (*p && *p != ',' && *p != '\r')
				cell[len++] = *p++;
		}
		cell[len] = '\0';
		cur = realloc(cur, (ncols + 1) * sizeof(*cur));
		cur[ncols++] = strdup(cell);
		if (*p == ',') {
			p++;
			continue;
		}
		ck_assert_msg(p[0] == '\r' && p[1] == '\n', "row %zu does not end in CRLF", nrows);
		p += 2;
		rows = realloc(rows, (nrows + 1) * sizeof(*rows));
		rows[nrows++] = cur;
		if (*col_count == 0)
			*col_count = ncols;
		ck_assert_uint_eq(ncols, *col_count);
		cur = NULL;
		ncols = 0;
	}
	free(cell);
	*row_count = nrows;
	return rows;
}

static inline struct adump_compare *run_compare(const struct adump_compare_config *cfg)
{
	char my[4096], golden[4096], msg[1024];
	struct adump_compare *c;

	snprintf(my, sizeof(my), "%s/my", dir);
	snprintf(golden, sizeof(golden), "%s/golden", dir);
	ck_assert_msg(adump_compare_open(cfg, my, golden, &c, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert_int_eq(adump_compare_run(c), 0);
	return c;
}

static inline int find_row(const struct adump_compare *c, const char *tensor_id)
{
	for (uint64_t i = 0; i < adump_compare_row_count(c); i++)
		if (!strcmp(adump_compare_row(c, i)->tensor_id, tensor_id))
			return (int)i;
	return -1;
}

static inline const char *cell(const struct adump_compare *c, int row, const char *column)
{
	ck_assert_int_ge(row, 0);
	for (uint32_t i = 0; i < adump_compare_column_count(c); i++)
		if (!strcmp(adump_compare_column(c, i), column))
			return adump_compare_row(c, (uint64_t)row)->cells[i];
	ck_abort_msg("no column %s", column);
	return NULL;
}

#endif
