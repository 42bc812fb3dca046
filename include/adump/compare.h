/* SPDX-License-Identifier: Apache-2.0 */
/* Comparing two dumps tensor by tensor, compatible with msaccucmp `compare` (NPU vs NPU, no
 * fusion rule): its op matching, its ten algorithms with their edge rules, its result CSV and
 * its advisor. Tensors stream through in chunks on several threads; sums are taken in float64
 * (msaccucmp sums in float32), so numbers agree with msaccucmp's up to its rounding. */
#ifndef ADUMP_COMPARE_H
#define ADUMP_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "adump/adump_err.h"
#include "adump/reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* msaccucmp's algorithm indices (its -alg numbers); the column is named as the algorithm. */
enum adump_compare_alg {
	ADUMP_COMPARE_COSINE = 0,               /* CosineSimilarity */
	ADUMP_COMPARE_MAX_ABS = 1,              /* MaxAbsoluteError */
	ADUMP_COMPARE_ACC_REL = 2,              /* AccumulatedRelativeError */
	ADUMP_COMPARE_REL_EUCLID = 3,           /* RelativeEuclideanDistance */
	ADUMP_COMPARE_KL = 4,                   /* KullbackLeiblerDivergence */
	ADUMP_COMPARE_STD = 5,                  /* StandardDeviation */
	ADUMP_COMPARE_MEAN_ABS = 6,             /* MeanAbsoluteError */
	ADUMP_COMPARE_RMSE = 7,                 /* RootMeanSquareError */
	ADUMP_COMPARE_MAX_REL = 8,              /* MaxRelativeError */
	ADUMP_COMPARE_MEAN_REL = 9,             /* MeanRelativeError */
	ADUMP_COMPARE_ALG_COUNT = 10,
};

struct adump_compare_config {
	size_t struct_size;                     /* ADUMP_COMPARE_CONFIG_INIT sets it */
	uint32_t alg_count;                     /* 0: all ten, in index order */
	enum adump_compare_alg algs[ADUMP_COMPARE_ALG_COUNT];
	unsigned thread_count;                  /* 0: one per online CPU */
	bool has_overflow;                      /* the OverFlow column (msaccucmp -advisor) */
	bool has_msprobe;                       /* msprobe's tensor metrics as extra columns */
	bool is_recursive;                      /* descend into subdirectories */
	size_t chunk_elements;                  /* 0: 64 Ki elements per read and side */
	/* The verdicts' limits as `--threshold` takes them ("cosine=0.995,float16.scaled=0.02",
	 * see adump_compare_thresholds_parse()); NULL or "": the defaults. Borrowed until open
	 * returns. */
	const char *thresholds;
};

#define ADUMP_COMPARE_CONFIG_INIT { .struct_size = sizeof(struct adump_compare_config) }

/* Room for one printed cell: a float32-range value at 6 decimals, or StandardDeviation's four. */
#define ADUMP_COMPARE_CELL_BYTES 320

/* The numbers behind one compared tensor, before they are printed. */
struct adump_compare_metrics {
	uint64_t element_count;
	double value[ADUMP_COMPARE_ALG_COUNT];  /* NaN where the cell is not a number */
	double mean[2], std[2];                 /* StandardDeviation: my output, ground truth */
	/* msprobe (Part B): relative error with EPS64 added where the reference is 0. */
	double one_thousandth;                  /* share of elements with r < 0.001 */
	double five_thousandths;                /* share with r < 0.005 */
	double euclid;                          /* ||x - y||2 */
	double max_abs_x;                       /* OverFlow: max |x| (NaN propagates) */
	/* NaN/Inf: counted in the same pass. [0] my output, [1] ground truth. */
	uint64_t nan_count[2], inf_count[2];
	/* Elements NaN on one side only, or infinite where the other side is not that same
	 * infinity; the first one's index (UINT64_MAX: none). */
	uint64_t nonfinite_diff_count;
	uint64_t first_nonfinite_diff;
	/* Over the elements finite on both sides (all of them when there is no NaN/Inf): */
	double finite_cosine;                   /* 1 when both are all zero, 0 when one is */
	double finite_max_abs;                  /* max |x - y| */
	double max_abs_golden;                  /* max |y| */
	/* finite_max_abs / max_abs_golden: scale-free, so small-magnitude differences show (0
	 * when equal, inf when y is all zero and x is not). */
	double scaled_error;
};

/* A compared tensor's verdict. */
enum adump_compare_verdict {
	ADUMP_COMPARE_NONE = 0,                 /* not compared (no numbers) */
	ADUMP_COMPARE_PASS = 1,
	ADUMP_COMPARE_WARNING = 2,
	ADUMP_COMPARE_ERROR = 3,
	/* not compared: memory no op wrote (torch.empty's output, or the first input of an op
	 * that overwrites it unread, as bernoulli_); two runs differ there by chance */
	ADUMP_COMPARE_UNINITIALIZED = 4,
};

/* Which limits a tensor pair is judged by: bfloat16 if a side is, else float16 if a side is,
 * else integer if both sides are integers or bool, else float32 (float64 too). */
enum adump_compare_class {
	ADUMP_COMPARE_CLASS_FLOAT32 = 0,
	ADUMP_COMPARE_CLASS_FLOAT16 = 1,
	ADUMP_COMPARE_CLASS_BFLOAT16 = 2,
	ADUMP_COMPARE_CLASS_INTEGER = 3,
	ADUMP_COMPARE_CLASS_COUNT = 4,
};

/* One class's limits: an error below cosine / above scaled or max_abs, else a warning below
 * cosine_warning / above scaled_warning or max_abs_warning. */
struct adump_compare_limits {
	double cosine, cosine_warning;
	double scaled, scaled_warning;          /* max abs error / max |ground truth| */
	double max_abs, max_abs_warning;
};

struct adump_compare_thresholds {
	struct adump_compare_limits of[ADUMP_COMPARE_CLASS_COUNT];
};

/* The exit status `adump compare` gives (and the summary's exit_code) when some tensor's NaN/Inf
 * differ between the sides: msaccucmp has no such status, and none of its codes is 100. */
#define ADUMP_COMPARE_EXIT_NONFINITE 100
/* The exit status `adump compare --fail-on LEVEL` gives (and adump.compare(fail_on=)'s
 * exit_code) when a row's verdict is LEVEL or worse and the status would otherwise be 0:
 * adump's own, as 100 is. */
#define ADUMP_COMPARE_EXIT_VERDICT 101

/* One result row: the CSV cells plus what a summary or plot needs as numbers. */
struct adump_compare_row {
	uint64_t index;                         /* msaccucmp's Index (op id) */
	uint32_t cell_count;                    /* == adump_compare_column_count() */
	const char *const *cells;               /* CSV text of each column, unquoted */
	const char *op_name;
	const char *tensor_id;                  /* "<op>:input:0", or "NaN" */
	bool is_compared;                       /* the algorithms ran on this tensor */
	double cosine;                          /* NaN when absent or not a number */
	double max_relative_error;              /* NaN when absent or not a number */
	struct adump_compare_metrics metrics;   /* valid when is_compared */
	enum adump_compare_verdict verdict;
	const char *reason;                     /* why the verdict is not pass; "" when it is */
	/* The module the op ran in (its dump header's `module` attribute; for a module's own
	 * dump, the op's name); NULL when not known. */
	const char *module;
	uint64_t timestamp;                     /* my output's dump time (execution order) */
};

struct adump_compare_summary {
	uint64_t op_count;                      /* ops listed (rows' distinct Index values) */
	uint64_t matched_count;                 /* ops on both sides */
	uint64_t my_only_count, golden_only_count;
	uint64_t tensor_count;                  /* rows whose tensors were compared */
	uint64_t failed_count;                  /* rows with an error message and no numbers */
	uint64_t bytes[2];                      /* payload bytes read: my output, ground truth */
	/* The first row in execution order (my output's timestamps, then row order) whose
	 * verdict is warning or error; -1 when none. */
	int64_t first_divergent_row;
	int64_t first_nonfinite_row;            /* the first with NaN/Inf differing, or -1 */
	uint64_t warning_count, error_count;    /* rows of each verdict */
	uint64_t nonfinite_count;               /* rows whose NaN/Inf differ */
	int64_t first_overflow_row;             /* first row with OverFlow YES, or -1 */
	/* ADUMP_COMPARE_EXIT_NONFINITE when a tensor's NaN/Inf differ; else msaccucmp's: 0,
	 * 2 (unmatched), 11, 18 ... */
	int exit_code;
};

struct adump_compare;

/**
 * adump_compare_alg_parse() - set @cfg's algorithms from msaccucmp's -alg syntax: "all", or a
 * comma list of names and/or indices; duplicates are dropped, order kept.
 * Return: 0; -ADUMP_ERR_CONFIG for an unknown name or index (message in @msg).
 */
ADUMP_API int adump_compare_alg_parse(struct adump_compare_config *cfg, const char *list,
				      char *msg, size_t cap);

/** adump_compare_alg_name() - "CosineSimilarity", ...; NULL for an unknown value. */
ADUMP_API const char *adump_compare_alg_name(enum adump_compare_alg alg);

/**
 * adump_compare_open() - list two dumps and match their ops.
 * @cfg:    NULL for the defaults; copied.
 * @my:     the dump under test: a directory of dump files (.lz4 too), a packed capture, or
 *          one dump file; borrowed.
 * @golden: the ground truth, of the same kinds; borrowed.
 * @out:    receives the comparison; the caller closes it with adump_compare_close().
 *
 * Files are grouped by the op name field of their names; of several files of one op the one
 * with the latest timestamp is compared, as msaccucmp does. Nothing is read beyond names.
 * Return: 0; -ADUMP_ERR_CONFIG for a bad config; -ADUMP_ERR_NOT_FOUND when a side holds no
 * dump file; -errno for a path that cannot be read; -ENOMEM. The message is in @msg.
 */
ADUMP_API int adump_compare_open(const struct adump_compare_config *cfg, const char *my,
				 const char *golden, struct adump_compare **out, char *msg,
				 size_t cap);

/**
 * adump_compare_run() - compare every matched op on the configured threads. A problem with
 * one op (unreadable or corrupt file, count or shape mismatch) becomes that op's message in
 * CompareFailReason and on the log; the other ops are still compared.
 * Memory: per thread two chunks of raw bytes and two of float32, whatever the tensor sizes.
 * Return: 0, or -ENOMEM/-errno when threads or buffers cannot be had. Call once.
 */
ADUMP_API int adump_compare_run(struct adump_compare *c);

/** adump_compare_column_count() - columns of every row. */
ADUMP_API uint32_t adump_compare_column_count(const struct adump_compare *c);

/** adump_compare_column() - title of column @i, as msaccucmp writes it; NULL out of range. */
ADUMP_API const char *adump_compare_column(const struct adump_compare *c, uint32_t i);

/** adump_compare_row_count() - rows after adump_compare_run(); 0 before. */
ADUMP_API uint64_t adump_compare_row_count(const struct adump_compare *c);

/**
 * adump_compare_row() - row @i, rows ordered by Index (op order) then tensor (inputs, then
 * outputs). Return: a pointer valid until close; NULL out of range.
 */
ADUMP_API const struct adump_compare_row *adump_compare_row(const struct adump_compare *c,
							    uint64_t i);

/** adump_compare_summary_get() - counts, first divergence and the exit code, after run. */
ADUMP_API void adump_compare_summary_get(const struct adump_compare *c,
					 struct adump_compare_summary *out);

/**
 * adump_compare_write_csv() - the result table as msaccucmp writes it (header, then rows;
 * cells with a comma, quote or newline quoted; CRLF line ends, Python's csv default).
 * @f: borrowed. Return: 0 or -EIO.
 */
ADUMP_API int adump_compare_write_csv(const struct adump_compare *c, FILE *f);

/**
 * adump_compare_csv_cell() - one cell as adump_compare_write_csv() writes it (Python
 * csv.writer's minimal quoting), for other tables that sit beside the result CSV.
 * @s: not NULL. @f: borrowed.
 */
ADUMP_API void adump_compare_csv_cell(FILE *f, const char *s);

/**
 * adump_compare_write_advice() - msaccucmp's advisor: FP16 overflow first (needs has_overflow),
 * then the first divergent row (summary's first_divergent_row: NaN/Inf, then the verdicts),
 * written as the three lines of advisor_summary.txt; a NaN/Inf difference gets its own
 * Detection Type and advice, naming the op and its module. @f: borrowed. Return: 0 or -EIO.
 */
ADUMP_API int adump_compare_write_advice(const struct adump_compare *c, FILE *f);

/**
 * adump_compare_thresholds_parse() - the default limits, then @list's changes applied:
 * "KEY=VALUE,..." where KEY is cosine, cosine_warning, scaled, scaled_warning, max_abs or
 * max_abs_warning, alone (all three float classes) or after "float32.", "float16.",
 * "bfloat16." or "integer.". Return: 0; -ADUMP_ERR_CONFIG with @msg naming the key; -ENOMEM.
 */
ADUMP_API int adump_compare_thresholds_parse(struct adump_compare_thresholds *t,
					     const char *list, char *msg, size_t cap);

/** adump_compare_thresholds_default() - the documented defaults (README "Verdicts"). */
ADUMP_API void adump_compare_thresholds_default(struct adump_compare_thresholds *t);

/** adump_compare_class_of() - the limits a pair of dtypes is judged by. */
ADUMP_API enum adump_compare_class adump_compare_class_of(int32_t dtype_x, int32_t dtype_y);

/**
 * adump_compare_verdict_judge() - the verdict on one tensor pair's metrics: error when the
 * NaN/Inf differ (@reason gives the counts per side and the first index), when msprobe's
 * "Accuracy Reached or Not" says No, or when a limit of @t (NULL: the defaults) is crossed;
 * warning when a warning limit is; else pass. @is_scalar: one-element rule (no cosine).
 * @reason: receives why ("" for pass); may be NULL.
 */
ADUMP_API enum adump_compare_verdict
adump_compare_verdict_judge(const struct adump_compare_thresholds *t, int32_t dtype_x,
			    int32_t dtype_y, bool is_scalar, const struct adump_compare_metrics *m,
			    char *reason, size_t cap);

/**
 * adump_compare_is_self() - whether @row's module is its op itself (a module's own dump, its
 * name in the file's spelling, '_' for '.'): then there is no other module to name.
 */
ADUMP_API bool adump_compare_is_self(const struct adump_compare_row *row);

/** adump_compare_verdict_name() - "pass", "warning", "error", "uninitialized" or "none". */
ADUMP_API const char *adump_compare_verdict_name(enum adump_compare_verdict v);

/** adump_compare_close() - free everything; NULL does nothing. */
ADUMP_API void adump_compare_close(struct adump_compare *c);

/**
 * adump_compare_buffers() - the metrics of two tensors in memory, without dump files.
 * @dtype_x, @dtype_y: DumpData dtypes of @x and @y; @count_x, @count_y: their element counts.
 * @dims/@dim_count: @x's shape, for the scalar rule. @cells: receives the algorithm cells in
 * index order (ADUMP_COMPARE_ALG_COUNT strings of ADUMP_COMPARE_CELL_BYTES); NULL to skip.
 * @msg: receives the messages, msaccucmp's CompareFailReason ("" if none).
 * Return: 0; -ADUMP_ERR_UNSUPPORTED for a dtype without a numeric value. Any thread.
 */
ADUMP_API int adump_compare_buffers(int32_t dtype_x, const void *x, uint64_t count_x,
				    int32_t dtype_y, const void *y, uint64_t count_y,
				    const uint64_t *dims, uint32_t dim_count,
				    struct adump_compare_metrics *out, char (*cells)[ADUMP_COMPARE_CELL_BYTES],
				    char *msg, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
