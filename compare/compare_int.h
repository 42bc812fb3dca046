/* SPDX-License-Identifier: Apache-2.0 */
/* compare/: what the compare engine's own files share: its state, the per-tensor accumulator
 * and its printing. Private to compare/; what the other analyses use is compare/compare.h. */
#ifndef ADUMP_COMPARE_COMPARE_INT_H
#define ADUMP_COMPARE_COMPARE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "adump/compare.h"
#include "compare/compare.h"

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

/* Group both sides' files into c->ops with msaccucmp's ids. Return: 0 or -ENOMEM. */
ADUMP_HIDDEN int adump_compare_match(struct adump_compare *c);
/* Whether two header op names differ although their dump file names are alike ('.', '/',
 * ' ' and '\\' all become '_' there). NULL or "" never collides. */
ADUMP_HIDDEN bool adump_compare_names_collide(const char *a, const char *b);
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

#endif
