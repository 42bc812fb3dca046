/* SPDX-License-Identifier: Apache-2.0 */
/* The arithmetic of `adump compare`: msaccucmp's ten algorithms and msprobe's tensor metrics,
 * accumulated chunk by chunk over float32 values (both sides are cast to float32 first, as
 * msaccucmp does) with float64 sums, and printed the way msaccucmp prints them. This file
 * owns the formulas: from an accumulator's sums to each algorithm's value, cell and message,
 * the helpers for dims and messages, and adump_compare_buffers() over two buffers in memory.
 * The sums are made in compare_acc.c by the kernels of compare_kernels.c, over values that
 * compare_convert.c makes float32. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "compare/compare_int.h"

static const char *const alg_names[ADUMP_COMPARE_ALG_COUNT] = {
	"CosineSimilarity",          "MaxAbsoluteError",  "AccumulatedRelativeError",
	"RelativeEuclideanDistance", "KullbackLeiblerDivergence", "StandardDeviation",
	"MeanAbsoluteError",         "RootMeanSquareError",       "MaxRelativeError",
	"MeanRelativeError",
};

const char *adump_compare_alg_name(enum adump_compare_alg alg)
{
	return (unsigned)alg < ADUMP_COMPARE_ALG_COUNT ? alg_names[alg] : NULL;
}

#define MINIMUM_VALUE 0.001

/* The value of a sum kept with its compensation (compare_acc.c's ksum_add()). */
static double ksum_get(const struct adump_compare_ksum *k)
{
	return isfinite(k->sum) ? k->sum + k->comp : k->sum;
}

/* ---- printing ------------------------------------------------------------------------------ */

/* Python's '{:.6f}'.format(v): "nan" whatever the sign bit, "inf", "-inf". */
static void fmt6(char *buf, size_t cap, double v)
{
	if (isnan(v))
		snprintf(buf, cap, "nan");
	else if (isinf(v))
		snprintf(buf, cap, v > 0 ? "inf" : "-inf");
	else
		snprintf(buf, cap, "%.6f", v);
}

static void fmt3(char *buf, size_t cap, double v)
{
	if (isnan(v))
		snprintf(buf, cap, "nan");
	else if (isinf(v))
		snprintf(buf, cap, v > 0 ? "inf" : "-inf");
	else
		snprintf(buf, cap, "%.3f", v);
}

static void msg_add(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void msg_add(char *msg, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(msg);
	va_list ap;

	if (len && len + 1 < cap) {
		msg[len++] = ',';
		msg[len] = '\0';
	}
	if (len + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(msg + len, cap - len, fmt, ap);
	va_end(ap);
}

#define NO_IDENTITY "zero-size array to reduction operation maximum which has no identity"

void adump_compare_acc_finish(const struct adump_compare_acc *a, bool is_scalar, bool is_bool,
			      const char *my_file, const char *golden_file,
			      struct adump_compare_metrics *m, char (*cells)[ADUMP_COMPARE_CELL_BYTES], char **msgs,
			      size_t cap)
{
	double n = (double)a->count, nx, ny, v;
	char (*c)[ADUMP_COMPARE_CELL_BYTES] = cells;

	memset(m, 0, sizeof(*m));
	m->element_count = a->count;
	for (int s = 0; s < 2; s++) {
		m->nan_count[s] = a->nan[s];
		m->inf_count[s] = a->inf[s];
	}
	m->nonfinite_diff_count = a->nonfinite_diff_count;
	m->first_nonfinite_diff = a->nonfinite_diff_count ? a->first_nonfinite_diff : UINT64_MAX;
	/* Over the elements finite on both sides: what the verdict judges once the NaN/Inf
	 * rule has had its say (msaccucmp's cells are NaN as soon as one element is). */
	m->finite_max_abs = a->count ? (a->fin_max_abs < 0 ? 0.0 : a->fin_max_abs) : NAN;
	m->max_abs_golden = a->count ? a->fin_max_y : NAN;
	nx = sqrt(ksum_get(&a->fin_sxx));
	ny = sqrt(ksum_get(&a->fin_syy));
	m->finite_cosine = !a->count ? NAN : nx <= EPS64 && ny <= EPS64 ? 1.0 :
			   nx <= EPS64 || ny <= EPS64 ? 0.0 : ksum_get(&a->fin_sxy) / nx / ny;
	if (m->finite_cosine > 1.0)
		m->finite_cosine = 1.0;
	/* The largest error against the golden side's scale: what a tensor of small values
	 * (gradients, scaled activations) shows where the absolute error reads 0.000000. */
	m->scaled_error = !a->count ? NAN : m->finite_max_abs == 0 ? 0.0 :
			  m->max_abs_golden > 0 ? m->finite_max_abs / m->max_abs_golden : INFINITY;
	for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++) {
		m->value[i] = NAN;
		snprintf(c[i], ADUMP_COMPARE_CELL_BYTES, "NaN");
		msgs[i][0] = '\0';
	}

	/* CosineSimilarity. */
	nx = sqrt(ksum_get(&a->sxx));
	ny = sqrt(ksum_get(&a->syy));
	if (is_scalar) {
		m->value[ADUMP_COMPARE_COSINE] = 1;
		fmt6(c[ADUMP_COMPARE_COSINE], ADUMP_COMPARE_CELL_BYTES, 1);
		snprintf(msgs[ADUMP_COMPARE_COSINE], cap, "This tensor is scalar.");
	} else if (nx <= EPS64 && ny < EPS64) {
		m->value[ADUMP_COMPARE_COSINE] = 1;
		snprintf(c[ADUMP_COMPARE_COSINE], ADUMP_COMPARE_CELL_BYTES, "1.0");
	} else if (sqrt(nx) <= EPS64) {
		snprintf(msgs[ADUMP_COMPARE_COSINE], cap,
			 "Cannot compare by Cosine Similarity. All the data is zero in %s.", my_file);
	} else if (sqrt(ny) <= EPS64) {
		snprintf(msgs[ADUMP_COMPARE_COSINE], cap,
			 "Cannot compare by Cosine Similarity. All the data is zero in %s.",
			 golden_file);
	} else {
		v = ksum_get(&a->sxy) / nx / ny;
		v = v > 1.0 ? 1.0 : v;  /* Python's min(v, 1.0) keeps a NaN */
		m->value[ADUMP_COMPARE_COSINE] = v;
		fmt6(c[ADUMP_COMPARE_COSINE], ADUMP_COMPARE_CELL_BYTES, v);
	}

	/* Both sides bool: msaccucmp keeps the data bool and runs only the two algorithms that
	 * accept it; RelativeEuclideanDistance then fails on numpy's bool subtraction unless the
	 * reference is all false. */
	if (is_bool) {
		for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++)
			if (i != ADUMP_COMPARE_COSINE && i != ADUMP_COMPARE_REL_EUCLID)
				snprintf(msgs[i], cap, "Algorithm %s does not support Boolean types.",
					 alg_names[i]);
		if (sqrt(ksum_get(&a->syy)) <= EPS64) {
			m->value[ADUMP_COMPARE_REL_EUCLID] = 0;
			fmt6(c[ADUMP_COMPARE_REL_EUCLID], ADUMP_COMPARE_CELL_BYTES, 0);
		} else {
			snprintf(msgs[ADUMP_COMPARE_REL_EUCLID], cap,
				 "Failed to execute 'compare' in 'RelativeEuclideanDistance'. numpy "
				 "boolean subtract, the `-` operator, is not supported, use the "
				 "bitwise_xor, the `^` operator, or the logical_xor function instead.");
		}
		m->one_thousandth = m->five_thousandths = m->euclid = m->max_abs_x = NAN;
		return;
	}

	/* MaxAbsoluteError, MaxRelativeError: numpy's max() of an empty array raises. */
	if (a->count) {
		m->value[ADUMP_COMPARE_MAX_ABS] = a->max_abs;
		fmt6(c[ADUMP_COMPARE_MAX_ABS], ADUMP_COMPARE_CELL_BYTES, a->max_abs);
	} else {
		snprintf(msgs[ADUMP_COMPARE_MAX_ABS], cap,
			 "Failed to execute 'compare' in 'MaxAbsoluteError'. " NO_IDENTITY);
	}

	v = ksum_get(&a->srel);
	m->value[ADUMP_COMPARE_ACC_REL] = v;
	fmt6(c[ADUMP_COMPARE_ACC_REL], ADUMP_COMPARE_CELL_BYTES, v);

	/* RelativeEuclideanDistance: 0 when the reference is all zero, whatever x is. */
	v = ksum_get(&a->syy);
	v = sqrt(v) <= EPS64 ? 0.0 : sqrt(ksum_get(&a->sdd) / v);
	m->value[ADUMP_COMPARE_REL_EUCLID] = v;
	fmt6(c[ADUMP_COMPARE_REL_EUCLID], ADUMP_COMPARE_CELL_BYTES, v);

	/* KullbackLeiblerDivergence. */
	if (!a->count) {
		snprintf(msgs[ADUMP_COMPARE_KL], cap,
			 "Failed to execute 'compare' in 'KullbackLeiblerDivergence'. " NO_IDENTITY);
	} else {
		if (!adump_compare_kl_needed(a)) {
			v = NAN;
		} else if (a->is_identical) {
			v = 0.0;
		} else {
			double sa = ksum_get(&a->kl_sa), sb = ksum_get(&a->kl_sb);

			v = ksum_get(&a->kl_t) / sa + log(sb / sa);
			if (fabs(v) < EPS64)
				v = 0.0;
		}
		m->value[ADUMP_COMPARE_KL] = v;
		fmt6(c[ADUMP_COMPARE_KL], ADUMP_COMPARE_CELL_BYTES, v);
		if (isinf(v) && v > 0)
			snprintf(msgs[ADUMP_COMPARE_KL], cap,
				 "Cannot compare by KL Divergence. The data contains 0 in '%s'.",
				 golden_file);
	}

	/* StandardDeviation: "(mean;std),(mean;std)", population std, small values as 0. */
	for (int s = 0; s < 2; s++) {
		/* The mean from the plain sum (numpy's: inf stays inf); the spread from the
		 * merged M2, NaN once the mean is not finite, as numpy's std is then. */
		double mean = a->count ? ksum_get(&a->sum[s]) / n : NAN;
		double sd = a->count && isfinite(mean) ? sqrt(a->m2[s] / n) : NAN;

		m->mean[s] = fabs(mean) < MINIMUM_VALUE ? 0.0 : mean;
		m->std[s] = fabs(sd) < MINIMUM_VALUE ? 0.0 : sd;
	}
	{
		char t[4][72];

		fmt3(t[0], sizeof(t[0]), m->mean[0]);
		fmt3(t[1], sizeof(t[1]), m->std[0]);
		fmt3(t[2], sizeof(t[2]), m->mean[1]);
		fmt3(t[3], sizeof(t[3]), m->std[1]);
		snprintf(c[ADUMP_COMPARE_STD], ADUMP_COMPARE_CELL_BYTES, "(%s;%s),(%s;%s)", t[0], t[1], t[2], t[3]);
	}

	/* Means of an empty array are NaN in numpy (a warning, not an exception). */
	v = a->count ? ksum_get(&a->sabs) / n : NAN;
	m->value[ADUMP_COMPARE_MEAN_ABS] = v;
	fmt6(c[ADUMP_COMPARE_MEAN_ABS], ADUMP_COMPARE_CELL_BYTES, v);
	v = a->count ? sqrt(ksum_get(&a->sdd) / n) : NAN;
	m->value[ADUMP_COMPARE_RMSE] = v;
	fmt6(c[ADUMP_COMPARE_RMSE], ADUMP_COMPARE_CELL_BYTES, v);
	if (a->count) {
		m->value[ADUMP_COMPARE_MAX_REL] = a->max_rel;
		fmt6(c[ADUMP_COMPARE_MAX_REL], ADUMP_COMPARE_CELL_BYTES, a->max_rel);
	} else {
		snprintf(msgs[ADUMP_COMPARE_MAX_REL], cap,
			 "Failed to execute 'compare' in 'MaxRelativeError'. " NO_IDENTITY);
	}
	v = a->count ? ksum_get(&a->srel) / n : NAN;
	m->value[ADUMP_COMPARE_MEAN_REL] = v;
	fmt6(c[ADUMP_COMPARE_MEAN_REL], ADUMP_COMPARE_CELL_BYTES, v);

	m->one_thousandth = a->count ? (double)a->below1 / n : NAN;
	m->five_thousandths = a->count ? (double)a->below5 / n : NAN;
	m->euclid = sqrt(ksum_get(&a->sdd));
	m->max_abs_x = a->count ? a->max_abs_x : NAN;
}

bool adump_compare_is_scalar(const uint64_t *dims, uint32_t dim_count)
{
	uint64_t sum = 0;

	/* msaccucmp's get_shape_type(): the dims add up to their count ([], [1], [1,1], ...). */
	for (uint32_t i = 0; i < dim_count; i++)
		sum += dims[i];
	return sum == dim_count;
}

void adump_compare_msg_add(char *msg, size_t cap, const char *text)
{
	msg_add(msg, cap, "%s", text);
}

uint64_t adump_compare_dims_elements(const uint64_t *dims, uint32_t dim_count)
{
	uint64_t n = 1;

	for (uint32_t d = 0; d < dim_count && d < ADUMP_MAX_DIMS; d++)
		n = dims[d] && n > UINT64_MAX / dims[d] ? UINT64_MAX : n * dims[d];
	return n;
}

void adump_compare_dims_text(const uint64_t *dims, uint32_t dim_count, const char *brackets,
			     char *buf, size_t cap)
{
	size_t len = (size_t)snprintf(buf, cap, "%c", brackets[0]);

	for (uint32_t d = 0; d < dim_count && len < cap; d++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%llu", d ? ", " : "",
					(unsigned long long)dims[d]);
	if (len < cap)
		snprintf(buf + len, cap - len, "%c", brackets[1]);
}

void adump_compare_fmt6(char *buf, size_t cap, double v)
{
	fmt6(buf, cap, v);
}

int adump_compare_buffers(int32_t dtype_x, const void *x, uint64_t count_x, int32_t dtype_y,
			  const void *y, uint64_t count_y, const uint64_t *dims, uint32_t dim_count,
			  struct adump_compare_metrics *out, char (*cells)[ADUMP_COMPARE_CELL_BYTES], char *msg, size_t cap)
{
	uint32_t bx = adump_compare_elem_bytes(dtype_x), by = adump_compare_elem_bytes(dtype_y);
	char scratch[ADUMP_COMPARE_ALG_COUNT][ADUMP_COMPARE_CELL_BYTES];
	struct adump_compare_acc a;
	float fx[1024], fy[1024];

	if (!bx || !by || !out || (!x && count_x) || (!y && count_y))
		return -ADUMP_ERR_UNSUPPORTED;
	if (msg && cap)
		msg[0] = '\0';
	if (!cells)
		cells = scratch;
	if (count_x != count_y) {
		char text[256];

		memset(out, 0, sizeof(*out));
		for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++) {
			out->value[i] = NAN;
			snprintf(cells[i], ADUMP_COMPARE_CELL_BYTES, "NaN");
		}
		snprintf(text, sizeof(text),
			 "The my output dump data size (%llu) does not match the ground truth dump "
			 "data size (%llu).",
			 (unsigned long long)count_x, (unsigned long long)count_y);
		if (msg)
			msg_add(msg, cap, "%s", text);
		return 0;
	}
	adump_compare_acc_init(&a);
	a.has_msprobe = true;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1 && !adump_compare_kl_needed(&a))
			break;
		for (uint64_t off = 0; off < count_x; off += 1024) {
			size_t n = count_x - off < 1024 ? (size_t)(count_x - off) : 1024;

			adump_compare_to_float(dtype_x, (const char *)x + off * bx, n, fx);
			adump_compare_to_float(dtype_y, (const char *)y + off * by, n, fy);
			if (pass == 0)
				adump_compare_acc_add(&a, fx, fy, n);
			else
				adump_compare_acc_kl(&a, fx, fy, n);
		}
	}
	{
		char texts[ADUMP_COMPARE_ALG_COUNT][1024], *msgs[ADUMP_COMPARE_ALG_COUNT];

		for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++)
			msgs[i] = texts[i];
		adump_compare_acc_finish(&a, adump_compare_is_scalar(dims, dim_count),
					 dtype_x == ADUMP_DT_BOOL && dtype_y == ADUMP_DT_BOOL, "my output",
					 "ground truth", out, cells, msgs, sizeof(texts[0]));
		for (int i = 0; msg && i < ADUMP_COMPARE_ALG_COUNT; i++)
			if (texts[i][0])
				msg_add(msg, cap, "%s", texts[i]);
	}
	return 0;
}
