/* SPDX-License-Identifier: Apache-2.0 */
/* The accumulator of `adump compare`'s metrics: each chunk's lane results (compare_kernels.c)
 * folded into compensated float64 sums, NaN-keeping maxima and Chan's merged mean and spread;
 * the element-by-element look at chunks holding NaN or Inf; msprobe's relative-error shares;
 * and KL's second pass into its own sums. */
#include <math.h>
#include <string.h>

#include "compare/compare_int.h"

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
	a->fin_max_abs = -INFINITY;
	for (int s = 0; s < 2; s++) {
		a->min[s] = INFINITY;
		a->max[s] = -INFINITY;
	}
}

/* msprobe's relative error |(x - y) / y|, EPS64 added to both where y is 0. */
static void msprobe_run(struct adump_compare_acc *a, const float *x, const float *y, size_t n)
{
	uint64_t below1 = 0, below5 = 0;

	for (size_t i = 0; i < n; i++) {
		double xv = x[i], yv = y[i];
		double rp = yv == 0 ? fabs(((xv + EPS64) - EPS64) / EPS64) : fabs((xv - yv) / yv);

		below1 += rp < 0.001;
		below5 += rp < 0.005;
	}
	a->below1 += below1;
	a->below5 += below5;
}

/* A chunk holding NaN or Inf, element by element: elements where one side is NaN and the other
 * is not, or one is infinite and the other is not that same infinity, are counted (the first
 * one's index kept); the verdict's sums and maxima take the elements finite on both sides. */
static void nonfinite_scan(struct adump_compare_acc *a, const float *x, const float *y, size_t n)
{
	double sxx = 0, syy = 0, sxy = 0, max_abs = a->fin_max_abs, max_y = a->fin_max_y;

	for (size_t i = 0; i < n; i++) {
		float xf = x[i], yf = y[i];
		bool is_diff;

		if (isfinite(xf) && isfinite(yf)) {
			double xv = xf, yv = yf, d = fabsf(xf - yf);

			sxx += xv * xv;
			syy += yv * yv;
			sxy += xv * yv;
			max_abs = d > max_abs ? d : max_abs;
			max_y = fabs(yv) > max_y ? fabs(yv) : max_y;
			continue;
		}
		is_diff = xf != xf ? yf == yf : (yf != yf || xf != yf);
		if (!is_diff)
			continue;
		if (!a->nonfinite_diff_count)
			a->first_nonfinite_diff = a->count + i;
		a->nonfinite_diff_count++;
	}
	ksum_add(&a->fin_sxx, sxx);
	ksum_add(&a->fin_syy, syy);
	ksum_add(&a->fin_sxy, sxy);
	a->fin_max_abs = max_abs;
	a->fin_max_y = max_y;
}

void adump_compare_acc_add(struct adump_compare_acc *a, const float *x, const float *y, size_t n)
{
	struct lanes l;
	size_t body = n / LANES * LANES;
	double sums[8] = { 0 };
	double max_abs = a->max_abs, max_rel = a->max_rel, max_abs_x = a->max_abs_x;
	double min_x = a->min[0], max_x = a->max[0], min_y = a->min[1], max_y = a->max[1];
	uint64_t nan_d = 0, nan_r = 0, nan_x = 0, nan_y = 0, inf_x = 0, inf_y = 0;

	if (!n)
		return;
	memset(&l, 0, sizeof(l));
	for (int j = 0; j < LANES; j++) {
		l.max_abs[j] = l.max_rel[j] = l.max_abs_x[j] = -INFINITY;
		l.max_x[j] = l.max_y[j] = -INFINITY;
		l.min_x[j] = l.min_y[j] = INFINITY;
	}
	adump_compare_lanes_run(&l, x, y, body);
	/* The tail (fewer than LANES elements) one by one, into lane 0. */
	for (size_t i = body; i < n; i++) {
		float xf = x[i], yf = y[i], df = xf - yf, af = fabsf(df);
		float rf = fabsf(yf) > (float)EPS64 ? fabsf(xf / yf - 1.0f) : 0.0f;
		double xv = xf, yv = yf, d = df;

		l.sxx[0] += xv * xv;
		l.syy[0] += yv * yv;
		l.sxy[0] += xv * yv;
		l.sdd[0] += d * d;
		l.sabs[0] += af;
		l.srel[0] += rf;
		l.sx[0] += xv;
		l.sy[0] += yv;
		l.nan_d[0] += af != af;
		l.nan_r[0] += rf != rf;
		l.nan_x[0] += xf != xf;
		l.nan_y[0] += yf != yf;
		l.inf_x[0] += fabsf(xf) == INFINITY;
		l.inf_y[0] += fabsf(yf) == INFINITY;
		l.max_abs[0] = af > l.max_abs[0] ? af : l.max_abs[0];
		l.max_rel[0] = rf > l.max_rel[0] ? rf : l.max_rel[0];
		l.max_abs_x[0] = fabsf(xf) > l.max_abs_x[0] ? fabsf(xf) : l.max_abs_x[0];
		l.min_x[0] = xf < l.min_x[0] ? xf : l.min_x[0];
		l.max_x[0] = xf > l.max_x[0] ? xf : l.max_x[0];
		l.min_y[0] = yf < l.min_y[0] ? yf : l.min_y[0];
		l.max_y[0] = yf > l.max_y[0] ? yf : l.max_y[0];
	}
	for (int j = 0; j < LANES; j++) {
		sums[0] += l.sxx[j];
		sums[1] += l.syy[j];
		sums[2] += l.sxy[j];
		sums[3] += l.sdd[j];
		sums[4] += l.sabs[j];
		sums[5] += l.srel[j];
		sums[6] += l.sx[j];
		sums[7] += l.sy[j];
		nan_d += l.nan_d[j];
		nan_r += l.nan_r[j];
		nan_x += l.nan_x[j];
		nan_y += l.nan_y[j];
		inf_x += l.inf_x[j];
		inf_y += l.inf_y[j];
		max_abs = nanmax(max_abs, l.max_abs[j]);
		max_rel = nanmax(max_rel, l.max_rel[j]);
		max_abs_x = nanmax(max_abs_x, l.max_abs_x[j]);
		min_x = nanmin(min_x, l.min_x[j]);
		max_x = nanmax(max_x, l.max_x[j]);
		min_y = nanmin(min_y, l.min_y[j]);
		max_y = nanmax(max_y, l.max_y[j]);
	}
	a->nan[0] += nan_x;
	a->nan[1] += nan_y;
	a->inf[0] += inf_x;
	a->inf[1] += inf_y;
	/* Where non-finite values are, they are rare: the chunk is looked at again, element by
	 * element, only when it holds some, to find where the sides' NaN/Inf differ. */
	if (nan_x | nan_y | inf_x | inf_y) {
		nonfinite_scan(a, x, y, n);
	} else {
		double chunk_abs = -INFINITY, chunk_y = 0;

		for (int j = 0; j < LANES; j++) {
			chunk_abs = l.max_abs[j] > chunk_abs ? l.max_abs[j] : chunk_abs;
			if (l.min_y[j] <= l.max_y[j])   /* a lane that saw elements */
				chunk_y = fmax(chunk_y, fmax(fabs(l.min_y[j]), fabs(l.max_y[j])));
		}
		ksum_add(&a->fin_sxx, sums[0]);
		ksum_add(&a->fin_syy, sums[1]);
		ksum_add(&a->fin_sxy, sums[2]);
		a->fin_max_abs = chunk_abs > a->fin_max_abs ? chunk_abs : a->fin_max_abs;
		a->fin_max_y = chunk_y > a->fin_max_y ? chunk_y : a->fin_max_y;
	}
	/* numpy's max() is NaN once any element is. */
	if (nan_d)
		max_abs = NAN;
	if (nan_r)
		max_rel = NAN;
	if (nan_x)
		max_abs_x = min_x = max_x = NAN;
	if (nan_y)
		min_y = max_y = NAN;
	ksum_add(&a->sxx, sums[0]);
	ksum_add(&a->syy, sums[1]);
	ksum_add(&a->sxy, sums[2]);
	ksum_add(&a->sdd, sums[3]);
	ksum_add(&a->sabs, sums[4]);
	ksum_add(&a->srel, sums[5]);
	ksum_add(&a->sum[0], sums[6]);
	ksum_add(&a->sum[1], sums[7]);
	a->max_abs = max_abs;
	a->max_rel = max_rel;
	a->max_abs_x = max_abs_x;
	a->min[0] = min_x;
	a->max[0] = max_x;
	a->min[1] = min_y;
	a->max[1] = max_y;
	if (a->has_msprobe)
		msprobe_run(a, x, y, n);
	/* Mean and spread by Chan's parallel update: the chunk's own mean and M2, merged. */
	const float *v[2] = { x, y };
	for (int s = 0; s < 2; s++) {
		double mean = sums[6 + s] / (double)n, m2, delta;
		uint64_t total = a->count + n;

		m2 = adump_compare_m2_run(v[s], body, mean);
		for (size_t i = body; i < n; i++)
			m2 += (v[s][i] - mean) * (v[s][i] - mean);
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

/* Second pass: KL = sum p ln(p/q) with p = a/Sa, q = b/Sb
 *                 = (1/Sa) sum a ln(a/b) + ln(Sb/Sa). */
void adump_compare_acc_kl(struct adump_compare_acc *a, const float *x, const float *y, size_t n)
{
	const double mm[4] = { a->min[0], a->max[0], a->min[1], a->max[1] };
	double out[3] = { 0, 0, 0 };

	adump_compare_kl_run(x, y, n, mm, out);
	ksum_add(&a->kl_sa, out[0]);
	ksum_add(&a->kl_sb, out[1]);
	ksum_add(&a->kl_t, out[2]);
}
