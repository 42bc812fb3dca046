/* SPDX-License-Identifier: Apache-2.0 */
/* compare/: the compare engine (include/adump/compare.h: matching both sides' dumps, the
 * metrics of msaccucmp and msprobe, verdicts, FFTS+ merging, statistics dumps, the result
 * files, pairing capture directories for --recursive). This header is what it offers the
 * other analyses inside the library (scan/, export/): a capture listed as dump files, a
 * statistics dump read whole, and the end of a worker pool run. */
#ifndef ADUMP_COMPARE_COMPARE_H
#define ADUMP_COMPARE_COMPARE_H

#include <pthread.h>
#include <stdint.h>

#include "adump/compare.h"
#include "reader/msprobe.h"
#include "reader/reader.h"

/* ---- a capture as dump files (compare_list.c) ---- */

struct cmp_file {
	char *path;                     /* what messages name: the file's path */
	char *op_type;
	char *op_name;
	uint64_t timestamp;             /* msaccucmp's: adump_reader_name_parse() */
	uint64_t subtask;               /* FFTS+: thread id, or the manual slice; else 0 */
	bool is_ffts;                   /* an FFTS+ subtask's dump (task type 4) */
	struct adump_reader_packed_entry entry;  /* packed entries: strings owned */
	bool is_packed;
	bool is_stats;                  /* a statistics dump: "<dump name>.csv", or an msprobe
					 * entry of a task other than "tensor" (no .pt files) */
	/* An entry of msprobe's dump.json (then path is "<dump.json>:<entry>"); its statistics
	 * are there whether or not it has tensors. */
	const struct adump_msprobe *ms;
	uint32_t ms_entry;
	/* Matching (compare_match.c): the header's op name, read only where the file name's
	 * op name is shared (is_named once read); the name matched by (op_name or hname); why
	 * it is not compared when it cannot be told apart from another dump. */
	char *hname;
	bool is_named;
	const char *key;
	char *clash;
};

struct cmp_side {
	struct cmp_file *files;
	size_t count, cap;
	struct adump_reader_packed *packed;
	pthread_mutex_t packed_lock;    /* opening an entry updates the list's segment cache */
	uint64_t shadowed_count;        /* dumps not compared: an older one of the same op */
	struct adump_msprobe **ms;      /* msprobe rank directories read */
	size_t ms_count;
};

/* List the dump files at @path (a directory, a packed capture or one file) into @s.
 * Return: 0; -ADUMP_ERR_NOT_FOUND (no dump file), -errno or -ENOMEM with @msg saying why. */
ADUMP_HIDDEN int adump_compare_side_list(struct cmp_side *s, const char *path, bool is_recursive,
					 char *msg, size_t cap);
/* Free what adump_compare_side_list() listed (not the lock). */
ADUMP_HIDDEN void adump_compare_side_fini(struct cmp_side *s);


/* ---- statistics dumps (compare_stats.c) ---- */

/* One statistic of a stats CSV cell: its text as written, and its value. */
struct adump_compare_stat {
	const char *text;
	double value;                   /* NaN when absent */
	bool is_present;                /* a number was written (not NA, empty or missing) */
};

#define ADUMP_COMPARE_STAT_COUNT 7

struct adump_compare_stats_tensor {
	struct adump_reader_tensor t;   /* kind, dtype, format, shape, size; index */
	/* max, min, mean, l2norm; then the NaN, -Inf and +Inf counts (absent in older dumps) */
	struct adump_compare_stat stat[ADUMP_COMPARE_STAT_COUNT];
};

/* A statistics dump read whole: @header lists its tensors as a dump header would. */
struct adump_compare_stats {
	char *text;
	struct adump_compare_stats_tensor *tensors;     /* inputs by index, then outputs */
	struct adump_reader_tensor *reader_tensors;
	uint32_t count;
	struct adump_reader_header header;
};

/* Columns after the head in statistics mode: msprobe's summary columns up to Result. */
#define ADUMP_COMPARE_STATS_COLUMNS 17

/* Read the stats CSV at @path. Return: 0; -ADUMP_ERR_CORRUPT, -errno or -ENOMEM with the
 * message in @msg. Free with adump_compare_stats_free() either way. */
ADUMP_HIDDEN int adump_compare_stats_load(const char *path, struct adump_compare_stats *out,
					  char *msg, size_t cap);
ADUMP_HIDDEN void adump_compare_stats_free(struct adump_compare_stats *s);
/* The same from an msprobe entry's dump.json statistics (max, min, mean, norm; no NaN/Inf
 * counts). Return: 0 or -ENOMEM. */
ADUMP_HIDDEN int adump_compare_stats_msprobe(const struct adump_msprobe *m, uint32_t entry,
					     struct adump_compare_stats *out);
/* The ADUMP_COMPARE_STATS_COLUMNS cells of one tensor pair of @element_count elements (diffs,
 * relative errors, both sides' statistics, Result) and the signed diffs (NaN where absent).
 * Return: the verdict: error when the NaN/Inf counts or a non-finite max/min differ, else
 * @lim's scaled limits on the statistics judged by the tensor's scale (NULL: pass); @reason
 * (@cap bytes) says why when not pass, and Result is Warning then. */
ADUMP_HIDDEN enum adump_compare_verdict
adump_compare_stats_cells(const struct adump_compare_stat my[ADUMP_COMPARE_STAT_COUNT],
			  const struct adump_compare_stat golden[ADUMP_COMPARE_STAT_COUNT],
			  const struct adump_compare_limits *lim, uint64_t element_count,
			  char (*cells)[ADUMP_COMPARE_CELL_BYTES], double diff[4], char *reason,
			  size_t cap);

/* The end of a pool run: @fn(@arg) as worker 0 on the calling thread, then threads[1] to
 * threads[started - 1] joined. Worker results are 0 or negative (intptr_t). Return: @ret if
 * negative, else worker 0's failure, else the first joined thread's, else 0. */
static inline int adump_workers_finish(pthread_t *threads, unsigned started,
				       void *(*fn)(void *), void *arg, int ret)
{
	intptr_t r0 = (intptr_t)fn(arg);

	if (r0 < 0 && ret == 0)
		ret = (int)r0;
	for (unsigned i = 1; i < started; i++) {
		void *rv;

		pthread_join(threads[i], &rv);
		if ((intptr_t)rv < 0 && ret == 0)
			ret = (int)(intptr_t)rv;
	}
	return ret;
}

#endif
