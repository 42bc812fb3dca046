/* SPDX-License-Identifier: Apache-2.0 */
/* compare/: what the compare engine's own files share: its state, the per-tensor accumulator
 * and its printing, a worker and what each step of comparing an op gives the others.
 * Private to compare/; what the other analyses use is compare/compare.h. */
#ifndef ADUMP_COMPARE_COMPARE_INT_H
#define ADUMP_COMPARE_COMPARE_INT_H

#include <limits.h>
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

/* ---- the chunk kernels (compare_kernels.c), for compare_acc.c and compare_convert.c ---- */

/* float64 machine epsilon: msaccucmp's FLOAT_EPSILON, compared against float32 data. */
#define EPS64 2.220446049250313e-16

/* The chunk kernel works on LANES independent partial results at a time, so the compiler can
 * keep them in vector registers without reordering any one sum; NaNs are counted apart and
 * restored at the end, which keeps the maxima branch-free. */
#define LANES 8

struct lanes {
	double sxx[LANES], syy[LANES], sxy[LANES], sdd[LANES], sabs[LANES], srel[LANES];
	double sx[LANES], sy[LANES];
	float max_abs[LANES], max_rel[LANES], max_abs_x[LANES];
	float min_x[LANES], max_x[LANES], min_y[LANES], max_y[LANES];
	uint32_t nan_d[LANES], nan_r[LANES], nan_x[LANES], nan_y[LANES];
	uint32_t inf_x[LANES], inf_y[LANES];
};

/* AVX2 with FMA and F16C, which every AVX2 processor has (false once the tests turn SIMD
 * off, and off x86-64). */
ADUMP_HIDDEN bool adump_compare_has_avx2(void);
/* The lanes of @n elements (a multiple of LANES) of @x and @y added into @l. */
ADUMP_HIDDEN void adump_compare_lanes_run(struct lanes *l, const float *x, const float *y,
					  size_t n);
/* Sum of squared deviations from @mean of @n elements (a multiple of LANES) of @v. */
ADUMP_HIDDEN double adump_compare_m2_run(const float *v, size_t n, double mean);
/* KL's second pass over @n elements: the sums of p and q, and of p ln(p/q), added to
 * out[0..2], where p and q are @x and @y scaled to [0, 1] by @mm (min and max of x, then of
 * y) and clamped below at float32's epsilon (msaccucmp's _normalized()). */
ADUMP_HIDDEN void adump_compare_kl_run(const float *x, const float *y, size_t n,
				       const double mm[4], double out[3]);

/* ---- the engine's state (compare.c; listing in compare_list.c, matching in compare_match.c) */

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
	const char *module;             /* while it is compared: adump_compare_module_of() */
	uint64_t id;
	struct cmp_row *rows;
	uint32_t row_count, row_cap;
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

/* ---- comparing ops (compare.c runs them on a pool of workers) ---- */

/* A message's bytes: a worker's, and each algorithm's. */
#define MSG_BYTES 8192

/* Whether a file's dump has statistics: a statistics dump, or an msprobe entry (dump.json
 * holds each tensor's Max/Min/Mean/Norm whatever the task). */
static inline bool adump_compare_file_has_stats(const struct cmp_file *f)
{
	return f->is_stats || f->ms;
}

/* One thread of the run: its readers, the op being compared, its chunk buffers. */
struct cmp_worker {
	struct adump_compare *c;
	struct adump_reader *r[2];
	/* FFTS+ (compare_worker.c's ffts_open()): the subtask dumps of a side, subs[s][0] being
	 * r[s], and what msaccucmp makes of them; NULL for an ordinary dump. */
	struct adump_reader **subs[2];
	uint32_t sub_cap[2], sub_open[2];
	struct adump_compare_ffts *merged[2];
	const char *path[2];            /* what messages name as the side's file */
	const struct adump_reader_header *h[2];         /* of the op being compared */
	char merged_path[2][PATH_MAX + 8];
	unsigned char *raw[2];
	float *val[2];
	char (*alg_msgs)[MSG_BYTES];     /* per algorithm, then one for the tensor */
	uint64_t advised[2];            /* payload offset at which to ask for the next window */
	char msg[MSG_BYTES];
};

/* compare_worker.c: a worker's readers and buffers for @c's chunks. Return: 0 or -ENOMEM
 * (then nothing is left to free). */
ADUMP_HIDDEN int adump_compare_worker_init(struct cmp_worker *w, struct adump_compare *c);
ADUMP_HIDDEN void adump_compare_worker_fini(struct cmp_worker *w);
/* Side @s of @op opened for comparing: its dump, or its FFTS+ subtask dumps merged (or the
 * one of them msaccucmp takes). Return: 0 with w->r[s] (and *h) ready; an msaccucmp error
 * code with @text set; -ENOMEM. */
ADUMP_HIDDEN int adump_compare_side_open(struct cmp_worker *w, struct cmp_op *op, int s,
					 const struct adump_reader_header **h, char *text,
					 size_t cap);
/* Close side @s's other FFTS+ subtask dumps and free their merge (w->r[s] stays open). */
ADUMP_HIDDEN void adump_compare_subs_close(struct cmp_worker *w, int s);
/* Stream both tensors through the accumulator; KL reads them a second time. On failure @msg
 * holds the reason and the return is negative. */
ADUMP_HIDDEN int adump_compare_tensor_stream(struct cmp_worker *w, const uint32_t idx[2],
					     uint64_t count, const int32_t dtype[2], bool has_kl,
					     struct adump_compare_acc *acc);

/* compare_op.c: compare @op on @w (both sides opened and closed again): its rows go to
 * op->rows, msaccucmp's return code to op->code. Return: 0 or -ENOMEM. */
ADUMP_HIDDEN int adump_compare_op(struct cmp_worker *w, struct cmp_op *op);

/* compare_rows.c: the module an op ran in: its header's `module` attribute (adump.torch at
 * level="op"), or for a module's own dump (adump.torch names them
 * "Module.<path>.<Class>.<pass>.<n>") the op itself, by its header's dotted name as the
 * attribute gives it (@name, the file name's, when there is no header: statistics dumps);
 * NULL when neither. */
ADUMP_HIDDEN const char *adump_compare_module_of(const struct adump_reader_header *h,
						 const char *name);
/* The empty, NaN-filled row for an op that could not be compared; @op_type may be NULL.
 * Return: 0 or -ENOMEM. */
ADUMP_HIDDEN int adump_compare_row_failed(struct adump_compare *c, struct cmp_op *op,
					  const char *op_type, const char *message);
/* The row of tensor @i of @kind (first[s] + i in w->h[s]): its metrics and verdict, or in its
 * last column why it could not be compared. Return: 0 or -ENOMEM. */
ADUMP_HIDDEN int adump_compare_tensor_row(struct cmp_worker *w, struct cmp_op *op,
					  const char *op_type, enum adump_tensor_kind kind,
					  uint32_t i, uint32_t first[2]);
/* One tensor pair of two statistics dumps: msprobe's summary-mode cells. Return: 0 or
 * -ENOMEM. */
ADUMP_HIDDEN int adump_compare_stats_row(struct adump_compare *c, struct cmp_op *op,
					 const struct adump_compare_stats st[2],
					 enum adump_tensor_kind kind, uint32_t i,
					 const uint32_t first[2]);

#endif
