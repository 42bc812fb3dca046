/* SPDX-License-Identifier: Apache-2.0 */
/* The arithmetic of `adump compare`: msaccucmp's ten algorithms and msprobe's tensor metrics,
 * accumulated chunk by chunk over float32 values (both sides are cast to float32 first, as
 * msaccucmp does) with float64 sums, and printed the way msaccucmp prints them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/compare_int.h"

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

uint32_t adump_compare_elem_bytes(int32_t dtype)
{
	switch (dtype) {
	case ADUMP_DT_INT8:
	case ADUMP_DT_UINT8:
	case ADUMP_DT_BOOL:
		return 1;
	case ADUMP_DT_FLOAT16:
	case ADUMP_DT_BF16:
	case ADUMP_DT_INT16:
	case ADUMP_DT_UINT16:
		return 2;
	case ADUMP_DT_FLOAT:
	case ADUMP_DT_INT32:
	case ADUMP_DT_UINT32:
		return 4;
	case ADUMP_DT_DOUBLE:
	case ADUMP_DT_INT64:
	case ADUMP_DT_UINT64:
		return 8;
	default:
		return 0;
	}
}

const char *adump_compare_dtype_name(int32_t dtype)
{
	switch (dtype) {
	case ADUMP_DT_FLOAT: return "float32";
	case ADUMP_DT_FLOAT16: return "float16";
	case ADUMP_DT_DOUBLE: return "float64";
	case ADUMP_DT_INT8: return "int8";
	case ADUMP_DT_INT16: return "int16";
	case ADUMP_DT_INT32: return "int32";
	case ADUMP_DT_INT64: return "int64";
	case ADUMP_DT_UINT8: return "uint8";
	case ADUMP_DT_UINT16: return "uint16";
	case ADUMP_DT_UINT32: return "uint32";
	case ADUMP_DT_UINT64: return "uint64";
	case ADUMP_DT_BOOL: return "bool";
	case ADUMP_DT_COMPLEX64: return "complex64";
	case ADUMP_DT_COMPLEX128: return "complex128";
	case ADUMP_DT_BF16: return "bfloat16";
	case ADUMP_DT_UINT1: return "uint1";
	case ADUMP_DT_UNDEFINED: return "int8";
	case ADUMP_DT_RESOURCE: return "int64";
	case ADUMP_DT_FLOAT8_E4M3FN: return "float8_e4m3fn";
	case ADUMP_DT_HIFLOAT8: return "hifloat8";
	case ADUMP_DT_FLOAT8_E5M2: return "float8_e5m2";
	default: return "NaN";
	}
}

#define CONVERT(type, expr)                                   \
	do {                                                  \
		const unsigned char *p = raw;                 \
		for (size_t i = 0; i < n; i++, p += sizeof(type)) { \
			type v;                               \
			memcpy(&v, p, sizeof(v));             \
			out[i] = (expr);                      \
		}                                             \
	} while (0)

void adump_compare_to_float(int32_t dtype, const void *raw, size_t n, float *out)
{
	switch (dtype) {
	case ADUMP_DT_FLOAT:
		memcpy(out, raw, n * sizeof(float));
		break;
	case ADUMP_DT_FLOAT16:
		CONVERT(uint16_t, adump_half_to_float(v));
		break;
	case ADUMP_DT_BF16:
		CONVERT(uint16_t, adump_bf16_to_float(v));
		break;
	case ADUMP_DT_DOUBLE:
		CONVERT(double, (float)v);
		break;
	case ADUMP_DT_INT8:
		CONVERT(int8_t, (float)v);
		break;
	case ADUMP_DT_UINT8:
		CONVERT(uint8_t, (float)v);
		break;
	case ADUMP_DT_BOOL:
		CONVERT(uint8_t, v ? 1.0f : 0.0f);
		break;
	case ADUMP_DT_INT16:
		CONVERT(int16_t, (float)v);
		break;
	case ADUMP_DT_UINT16:
		CONVERT(uint16_t, (float)v);
		break;
	case ADUMP_DT_INT32:
		CONVERT(int32_t, (float)v);
		break;
	case ADUMP_DT_UINT32:
		CONVERT(uint32_t, (float)v);
		break;
	case ADUMP_DT_INT64:
		CONVERT(int64_t, (float)v);
		break;
	case ADUMP_DT_UINT64:
		CONVERT(uint64_t, (float)v);
		break;
	default:
		memset(out, 0, n * sizeof(float));
		break;
	}
}

/* ---- accumulation ------------------------------------------------------------------------ */

/* float64 machine epsilon: msaccucmp's FLOAT_EPSILON, compared against float32 data. */
#define EPS64 2.220446049250313e-16
#define EPS32 1.1920929e-07
#define MINIMUM_VALUE 0.001

/* A sum kept as value + compensation (Neumaier): each chunk's plain float64 sum goes in here,
 * so the error stays at a chunk's worth of float64 rounding whatever the tensor's length. */
static void ksum_add(struct adump_compare_ksum *k, double v)
{
	double t = k->sum + v;

	/* Once infinite or NaN the compensation means nothing (inf - inf would make it NaN). */
	if (!isfinite(t)) {
		k->sum = t;
		k->comp = 0;
		return;
	}
	if (fabs(k->sum) >= fabs(v))
		k->comp += (k->sum - t) + v;
	else
		k->comp += (v - t) + k->sum;
	k->sum = t;
}

static double ksum_get(const struct adump_compare_ksum *k)
{
	return isfinite(k->sum) ? k->sum + k->comp : k->sum;
}

/* max that keeps a NaN once seen, as numpy's max does. */
static inline double nanmax(double m, double v)
{
	return (v > m || v != v) && m == m ? v : m;
}

static inline double nanmin(double m, double v)
{
	return (v < m || v != v) && m == m ? v : m;
}

void adump_compare_acc_init(struct adump_compare_acc *a)
{
	memset(a, 0, sizeof(*a));
	a->max_abs = -INFINITY;
	a->max_rel = -INFINITY;
	a->max_abs_x = -INFINITY;
	for (int s = 0; s < 2; s++) {
		a->min[s] = INFINITY;
		a->max[s] = -INFINITY;
	}
}

void adump_compare_acc_add(struct adump_compare_acc *a, const float *x, const float *y, size_t n)
{
	double sxx = 0, syy = 0, sxy = 0, sdd = 0, sabs = 0, srel = 0, sx = 0, sy = 0;
	double max_abs = a->max_abs, max_rel = a->max_rel, max_abs_x = a->max_abs_x;
	double min_x = a->min[0], max_x = a->max[0], min_y = a->min[1], max_y = a->max[1];
	uint64_t below1 = 0, below5 = 0;

	if (!n)
		return;
	/* Element-wise steps are float32, as numpy does them on float32 arrays (so a maximum is
	 * exactly msaccucmp's); only the sums are float64. */
	for (size_t i = 0; i < n; i++) {
		float df = x[i] - y[i];
		double xv = x[i], yv = y[i], d = df, ad = fabs(d), r, rp;

		sxx += xv * xv;
		syy += yv * yv;
		sxy += xv * yv;
		sdd += d * d;
		sabs += ad;
		sx += xv;
		sy += yv;
		max_abs = nanmax(max_abs, ad);
		max_abs_x = nanmax(max_abs_x, fabs(xv));
		min_x = nanmin(min_x, xv);
		max_x = nanmax(max_x, xv);
		min_y = nanmin(min_y, yv);
		max_y = nanmax(max_y, yv);
		/* msaccucmp: |x / y - 1| where |y| > EPS64, else 0 (a NaN y fails the test). */
		r = fabsf(y[i]) > EPS64 ? fabsf(x[i] / y[i] - 1.0f) : 0.0f;
		srel += r;
		max_rel = nanmax(max_rel, r);
		/* msprobe: |(x - y) / y|, EPS64 added to both where y is 0. */
		rp = yv == 0 ? fabs(((xv + EPS64) - EPS64) / EPS64) : fabs((xv - yv) / yv);
		below1 += rp < 0.001;
		below5 += rp < 0.005;
	}
	ksum_add(&a->sxx, sxx);
	ksum_add(&a->syy, syy);
	ksum_add(&a->sxy, sxy);
	ksum_add(&a->sdd, sdd);
	ksum_add(&a->sabs, sabs);
	ksum_add(&a->srel, srel);
	a->max_abs = max_abs;
	a->max_rel = max_rel;
	a->max_abs_x = max_abs_x;
	a->min[0] = min_x;
	a->max[0] = max_x;
	a->min[1] = min_y;
	a->max[1] = max_y;
	a->below1 += below1;
	a->below5 += below5;
	/* Mean and spread by Chan's parallel update: the chunk's own mean and M2, merged. */
	double sums[2] = { sx, sy };
	const float *v[2] = { x, y };
	for (int s = 0; s < 2; s++) {
		double mean = sums[s] / (double)n, m2 = 0, delta;
		uint64_t total = a->count + n;

		for (size_t i = 0; i < n; i++) {
			double e = v[s][i] - mean;

			m2 += e * e;
		}
		delta = mean - a->mean[s];
		if (a->count == 0) {
			a->mean[s] = mean;
			a->m2[s] = m2;
		} else {
			a->mean[s] += delta * (double)n / (double)total;
			a->m2[s] += m2 + delta * delta * (double)a->count * (double)n / (double)total;
		}
	}
	a->count += n;
}

bool adump_compare_kl_needed(const struct adump_compare_acc *a)
{
	return a->count && isfinite(a->min[0]) && isfinite(a->max[0]) && isfinite(a->min[1]) &&
	       isfinite(a->max[1]);
}

/* msaccucmp's _normalized(): scale to [0, 1] by min and max (unless they are equal), then
 * clamp below at float32's epsilon. */
static inline double kl_norm(double v, double min, double range)
{
	double t = range != 0 ? (v - min) / range : v;

	return t > EPS32 ? t : EPS32;
}

/* Second pass: KL = sum p ln(p/q) with p = a/Sa, q = b/Sb
 *                 = (1/Sa) sum a ln(a/b) + ln(Sb/Sa). */
void adump_compare_acc_kl(struct adump_compare_acc *a, const float *x, const float *y, size_t n)
{
	double rx = a->max[0] - a->min[0], ry = a->max[1] - a->min[1];
	double sa = 0, sb = 0, t = 0;

	for (size_t i = 0; i < n; i++) {
		double p = kl_norm(x[i], a->min[0], rx), q = kl_norm(y[i], a->min[1], ry);

		sa += p;
		sb += q;
		t += p * log(p / q);
	}
	ksum_add(&a->kl_sa, sa);
	ksum_add(&a->kl_sb, sb);
	ksum_add(&a->kl_t, t);
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
		double mean = a->count ? a->mean[s] : NAN;
		double sd = a->count ? sqrt(a->m2[s] / n) : NAN;

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
