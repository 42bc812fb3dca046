/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare MY.npy GOLDEN.npy`: msaccucmp's single-file compare (its file_compare): the
 * two arrays (reader/npy_read.c) compared as one tensor, a table on stdout and
 * file_result_<ts>.txt. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adump/compare.h"
#include "adump/reader.h"
#include "tools/compare_out.h"
#include "tools/tool.h"

/* msaccucmp with two files: same shape required (else 23); a table on stdout and, as its
 * file_compare does, file_result_<ts>.txt with one "Name: value" line per algorithm. */
int compare_npy(const struct adump_compare_config *cfg, const char *my, const char *golden,
		const char *out_dir, bool has_algs)
{
	static const enum adump_compare_alg file_algs[] = {
		ADUMP_COMPARE_COSINE, ADUMP_COMPARE_MAX_ABS, ADUMP_COMPARE_ACC_REL,
		ADUMP_COMPARE_REL_EUCLID, ADUMP_COMPARE_MEAN_ABS, ADUMP_COMPARE_RMSE,
		ADUMP_COMPARE_MAX_REL, ADUMP_COMPARE_MEAN_REL,
	};
	char cells[ADUMP_COMPARE_ALG_COUNT][ADUMP_COMPARE_CELL_BYTES], msg[8192], path[4096], stamp[32];
	const enum adump_compare_alg *algs = has_algs ? cfg->algs : file_algs;
	uint32_t alg_count = has_algs ? cfg->alg_count : 8;
	struct adump_compare_metrics m;
	struct adump_reader_npy a, b;
	struct compare_out o;
	char stem[64];
	struct tm tm;
	time_t t;
	FILE *f;
	int ret, code = 0;

	if (adump_reader_npy_map(my, &a, msg, sizeof(msg)) < 0 || adump_reader_npy_map(golden, &b, msg, sizeof(msg)) < 0) {
		tool_err("adump compare: %s\n", msg);
		adump_reader_npy_unmap(&a);
		return EXIT_INVALID_PATH;
	}
	if (a.dim_count != b.dim_count || memcmp(a.dims, b.dims, a.dim_count * sizeof(a.dims[0]))) {
		tool_err("adump compare: the shapes of %s and %s differ\n", my, golden);
		code = EXIT_INVALID_SHAPE;
		goto out;
	}
	adump_compare_buffers(a.dtype, a.data, a.count, b.dtype, b.data, b.count, a.dims,
			      a.dim_count, &m, cells, msg, sizeof(msg));
	t = time(NULL);
	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
	snprintf(stem, sizeof(stem), "file_result_%s", stamp);
	f = compare_out_start(&o, out_dir);
	if (!f) {
		tool_err("adump compare: %s: %s\n", out_dir, strerror(errno));
		code = EXIT_WRITE;
		goto out;
	}
	errno = 0;
	for (uint32_t k = 0; k < alg_count; k++) {
		fprintf(f, "%s: %s\n", adump_compare_alg_name(algs[k]), cells[algs[k]]);
		printf("%-28s %s\n", adump_compare_alg_name(algs[k]), cells[algs[k]]);
	}
	ret = compare_out_finish(&o, ferror(f) ? (errno ? -errno : -EIO) : 0, out_dir, stem,
				 ".txt", false, path, sizeof(path));
	if (ret < 0) {
		tool_err("adump compare: %s: %s\n", path, strerror(-ret));
		code = EXIT_WRITE;
		goto out;
	}
	if (msg[0])
		tool_err("adump compare: %s\n", msg);
	tool_err("adump compare: %s\n", path);
out:
	adump_reader_npy_unmap(&a);
	adump_reader_npy_unmap(&b);
	return code;
}
