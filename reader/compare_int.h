/* SPDX-License-Identifier: Apache-2.0 */
/* reader/: what the compare engine's files share: its state, the per-tensor accumulator and its
 * printing. */
#ifndef ADUMP_READER_COMPARE_INT_H
#define ADUMP_READER_COMPARE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "adump/compare.h"
#include "reader/msprobe_int.h"
#include "reader/reader_int.h"

/* The threshold below which a cosine is a divergence (msaccucmp's advisor). */
#define ADUMP_COMPARE_ACCURACY_THRESHOLD 0.99

/* ---- verdicts (compare_verdict.c) ---- */

/* msprobe's "Accuracy Reached or Not" from the cosine and the max absolute error. */
ADUMP_HIDDEN const char *adump_compare_accuracy_reached(double cos, double max_abs);

struct adump_compare_ksum {
	double sum;
	double comp;
};

/* Everything the ten algorithms and msprobe's metrics need, from one pass over both tensors
 * (KullbackLeiblerDivergence takes a second: it scales by the min and max of the first). */
struct adump_compare_acc {
	uint64_t count;
	struct adump_compare_ksum sxx, syy, sxy, sdd, sabs, srel, sum[2];
	struct adump_compare_ksum kl_sa, kl_sb, kl_t;
	double max_abs, max_rel, max_abs_x;
	double min[2], max[2];
	double mean[2], m2[2];
	uint64_t below1, below5;
	uint64_t nan[2], inf[2];        /* NaN and infinite elements of each side */
	uint64_t nonfinite_diff_count;  /* elements whose NaN/Inf differ between the sides */
	uint64_t first_nonfinite_diff;  /* the first one's index (valid when counted) */
	/* The same sums and maxima over the elements finite on both sides, for the verdict. */
	struct adump_compare_ksum fin_sxx, fin_syy, fin_sxy;
	double fin_max_abs, fin_max_y;  /* max |x - y|, max |y| */
	bool has_msprobe;               /* count msprobe's relative-error shares (set after init) */
	/* Both sides are the same bytes of the same dtype (set by the caller after the first
	 * pass): KL is then exactly 0 (p == q everywhere, and the sums of p and q are equal),
	 * which is what the second pass would find, so it is skipped. */
	bool is_identical;
};

ADUMP_HIDDEN uint32_t adump_compare_elem_bytes(int32_t dtype);
/* msaccucmp's DataType cell for a dtype; "NaN" for one it does not name. */
ADUMP_HIDDEN const char *adump_compare_dtype_name(int32_t dtype);
/* Raw elements of @dtype to float32 values (numpy's astype(float32)). */
ADUMP_HIDDEN void adump_compare_to_float(int32_t dtype, const void *raw, size_t n, float *out);
ADUMP_HIDDEN void adump_compare_acc_init(struct adump_compare_acc *a);
ADUMP_HIDDEN void adump_compare_acc_add(struct adump_compare_acc *a, const float *x,
					const float *y, size_t n);
/* Whether the second (KL) pass can change the result: there are elements and all are finite. */
ADUMP_HIDDEN bool adump_compare_kl_needed(const struct adump_compare_acc *a);
ADUMP_HIDDEN void adump_compare_acc_kl(struct adump_compare_acc *a, const float *x,
				       const float *y, size_t n);
/* The metrics, the ten cells and each algorithm's message ("" if none; @msgs[i] holds @cap
 * bytes), all in algorithm index order. @is_bool: both sides are bool (msaccucmp's bool rule). */
ADUMP_HIDDEN void adump_compare_acc_finish(const struct adump_compare_acc *a, bool is_scalar,
					   bool is_bool,
					   const char *my_file, const char *golden_file,
					   struct adump_compare_metrics *m, char (*cells)[ADUMP_COMPARE_CELL_BYTES],
					   char **msgs, size_t cap);
ADUMP_HIDDEN bool adump_compare_is_scalar(const uint64_t *dims, uint32_t dim_count);
/* Append @text to a comma-joined message list. */
ADUMP_HIDDEN void adump_compare_msg_add(char *msg, size_t cap, const char *text);
/* Tests: run the portable kernels even where AVX2 is there (any thread; affects all). */
ADUMP_HIDDEN void adump_compare_simd_set(bool is_enabled);
/* Tests: the AVX2 KL kernel even where AVX-512 is there (the other kernels are AVX2 only). */
ADUMP_HIDDEN void adump_compare_avx512_set(bool is_enabled);
/* Elements @dims hold (1 for a scalar); saturates at UINT64_MAX instead of overflowing, and a
 * 0 anywhere gives 0. */
ADUMP_HIDDEN uint64_t adump_compare_dims_elements(const uint64_t *dims, uint32_t dim_count);
/* Dims as Python prints a tuple or list of them: @brackets is "()" or "[]". */
ADUMP_HIDDEN void adump_compare_dims_text(const uint64_t *dims, uint32_t dim_count,
					  const char *brackets, char *buf, size_t cap);
/* Python's '{:.6f}'.format(). */
ADUMP_HIDDEN void adump_compare_fmt6(char *buf, size_t cap, double v);

/* ---- the engine's state (compare.c; listing and matching in compare_match.c) ---- */

enum { MY = 0, GOLDEN = 1 };

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

struct cmp_row {
	struct adump_compare_row pub;
	char **cells;
	char *reason;                   /* pub.reason; NULL: "" */
	char *module;                   /* pub.module */
};

struct cmp_op {
	const char *name;
	struct cmp_file *file[2];       /* latest file of each side; NULL when absent */
	struct cmp_file *first[2];      /* the op's files on each side: first[s][0..count[s]) */
	uint32_t count[2];
	/* While it is compared: the name its rows show (msaccucmp's: the header's op_name when
	 * my output's dump carries attributes); NULL: name. */
	const char *shown;
	const char *module;             /* while it is compared: see module_of() */
	uint64_t id;
	struct cmp_row *rows;
	uint32_t row_count;
	int code;                       /* msaccucmp's per-op return code */
};

struct adump_compare {
	struct adump_compare_config cfg;
	struct cmp_side side[2];
	struct cmp_op *ops;
	size_t op_count;
	const char *columns[64];
	uint32_t column_count;
	uint32_t alg_column;            /* first algorithm (statistics mode: Max diff) column */
	bool is_stats;                  /* statistics mode: see mode_choose() */
	struct cmp_row **rows;
	uint64_t row_count;
	_Atomic size_t next_op;
	size_t *order;                  /* ops in the order workers take them; NULL: op order */
	_Atomic uint64_t bytes[2];
	bool is_run;
	struct adump_compare_thresholds thresholds;
};

/* List the dump files at @path (a directory, a packed capture or one file) into @s.
 * Return: 0; -ADUMP_ERR_NOT_FOUND (no dump file), -errno or -ENOMEM with @msg saying why. */
ADUMP_HIDDEN int adump_compare_side_list(struct cmp_side *s, const char *path, bool is_recursive,
					 char *msg, size_t cap);
/* Group both sides' files into c->ops with msaccucmp's ids. Return: 0 or -ENOMEM. */
ADUMP_HIDDEN int adump_compare_match(struct adump_compare *c);
/* Whether two header op names differ although their dump file names are alike ('.', '/',
 * ' ' and '\\' all become '_' there). NULL or "" never collides. */
ADUMP_HIDDEN bool adump_compare_names_collide(const char *a, const char *b);
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
/* The ADUMP_COMPARE_STATS_COLUMNS cells of one tensor pair (diffs, relative errors, both
 * sides' statistics, Result) and the signed diffs (NaN where absent). Result is Warning by
 * msprobe's rule, and also when the NaN/Inf counts or a non-finite max/min differ: then
 * @reason (@cap bytes) says how. Return: the verdict: error for NaN/Inf, then @lim's
 * scaled limits on the statistics (NULL: none), at least a warning by msprobe's rule. */
ADUMP_HIDDEN enum adump_compare_verdict
adump_compare_stats_cells(const struct adump_compare_stat my[ADUMP_COMPARE_STAT_COUNT],
			  const struct adump_compare_stat golden[ADUMP_COMPARE_STAT_COUNT],
			  const struct adump_compare_limits *lim, char (*cells)[ADUMP_COMPARE_CELL_BYTES], double diff[4], char *reason,
			  size_t cap);

/* ---- FFTS+ subtask dumps (compare_ffts.c) ---- */

struct adump_compare_ffts_shape {
	bool is_set;
	uint32_t dim_count;
	uint64_t dims[ADUMP_MAX_DIMS];
};

/* The cut of an FFTS+ op, from the JSON in its first subtask dump's attr[0]. */
struct adump_compare_ffts_attrs {
	bool is_auto;                   /* threadMode: shapes from output_tensor_slice */
	int64_t slice_count;            /* slice_instance_num; -1 when absent */
	uint32_t output_count;          /* entries of outputCutList */
	int *cut_axis;                  /* per entry: the first dim not 1, or -1 */
	bool has_cut;                   /* some output has a cut axis */
	uint32_t thread_count;          /* automatic mode: threads output_tensor_slice lists */
	struct adump_compare_ffts_shape *slices;        /* [thread * output_count + output] */
};

/* Parse @base's attr[0]. Return: 0; -ADUMP_ERR_NOT_FOUND (no attribute) or -ADUMP_ERR_CORRUPT
 * with @msg saying why; -ENOMEM. Free with adump_compare_ffts_attrs_free() (also on error). */
ADUMP_HIDDEN int adump_compare_ffts_attrs_parse(const struct adump_reader_header *base,
						struct adump_compare_ffts_attrs *a, char *msg,
						size_t cap);
ADUMP_HIDDEN void adump_compare_ffts_attrs_free(struct adump_compare_ffts_attrs *a);

struct adump_compare_ffts;

/* The merged dump of the @file_count subtask dumps open in @r (in msaccucmp's order; borrowed
 * until adump_compare_ffts_free()), cut as @a says (a->has_cut). Return: 0 with *out set; an
 * msaccucmp error code (11, 40) with @msg saying why; -ENOMEM. */
ADUMP_HIDDEN int adump_compare_ffts_merge(const struct adump_compare_ffts_attrs *a,
					  struct adump_reader **r, uint32_t file_count,
					  struct adump_compare_ffts **out, char *msg, size_t cap);
/* Its header: the first subtask's inputs, then the merged outputs. */
ADUMP_HIDDEN const struct adump_reader_header *
adump_compare_ffts_header(const struct adump_compare_ffts *m);
/* adump_reader_read() of the merged dump (one thread at a time: it keeps read-ahead windows);
 * on failure *failed is the reader to ask why. */
ADUMP_HIDDEN int adump_compare_ffts_read(struct adump_compare_ffts *m, uint32_t tensor,
					 uint64_t offset, void *buf, size_t len,
					 struct adump_reader **failed);
ADUMP_HIDDEN void adump_compare_ffts_free(struct adump_compare_ffts *m);

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
