/* SPDX-License-Identifier: Apache-2.0 */
/* report/: a series report's anomalies, judged once when the page is written by the rule in
 * report.h: a point is non-finite when a statistic is NaN or Inf (or NaN/Inf were counted), a
 * spike when its scale (the norm, else the largest magnitude) is more than
 * ADUMP_REPORT_SPIKE_FACTOR off the mean of its last unflagged steps. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "report/report_int.h"

static int point_cmp(const void *a, const void *b)
{
	const struct report_point *x = a, *y = b;

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The scale a spike is judged by (report.h): the norm where the point has one, else the
 * largest magnitude; NaN when neither is there. */
static double point_scale(const struct report_point *p, bool use_norm)
{
	if (use_norm)
		return p->has & (1u << REPORT_STAT_NORM) ? p->value[REPORT_STAT_NORM] : NAN;
	if ((p->has & 3u) != 3u)
		return NAN;
	return fmax(fabs(p->value[REPORT_STAT_MAX]), fabs(p->value[REPORT_STAT_MIN]));
}

static int judge_series(struct adump_report *r, struct report_series *s)
{
	static const char *const stat_names[4] = { "max", "min", "mean", "norm" };
	struct report_point *pts = &r->points[s->point_first];
	bool use_norm = true;
	char why[512];
	int err = 0;

	/* One scale for the whole series: the norm when every point has one. */
	for (size_t i = 0; i < s->point_count; i++)
		if (!(pts[i].has & (1u << REPORT_STAT_NORM)))
			use_norm = false;
	for (size_t i = 0; i < s->point_count; i++) {
		struct report_point *p = &pts[i];
		size_t len = 0;

		why[0] = '\0';
		for (int k = 0; k < 4; k++)
			if ((p->has & (1u << k)) && !isfinite(p->value[k]) && len < sizeof(why))
				len += (size_t)snprintf(why + len, sizeof(why) - len, "%s%s is %s",
							len ? ", " : "", stat_names[k],
							isnan(p->value[k]) ? "NaN"
							: p->value[k] > 0 ? "Inf" : "-Inf");
		if ((p->has & REPORT_POINT_HAS_COUNTS) && (p->nan_count || p->inf_count) &&
		    len < sizeof(why))
			len += (size_t)snprintf(why + len, sizeof(why) - len, "%s%llu NaN, %llu Inf",
						len ? "; " : "", (unsigned long long)p->nan_count,
						(unsigned long long)p->inf_count);
		if (len) {
			p->flags |= REPORT_POINT_NONFINITE;
		} else {
			/* The mean of the last ADUMP_REPORT_SPIKE_HISTORY unflagged points before. */
			double sum = 0, v = point_scale(p, use_norm), base;
			unsigned n = 0;

			for (size_t k = i; k-- > 0 && n < ADUMP_REPORT_SPIKE_HISTORY;) {
				double h = point_scale(&pts[k], use_norm);

				if (pts[k].flags || !isfinite(h))
					continue;
				sum += h;
				n++;
			}
			base = n ? sum / n : 0;
			if (n >= ADUMP_REPORT_SPIKE_MIN_HISTORY && isfinite(v) &&
			    (v > base * ADUMP_REPORT_SPIKE_FACTOR ||
			     (base > 0 && v < base / ADUMP_REPORT_SPIKE_FACTOR))) {
				p->flags |= REPORT_POINT_SPIKE;
				if (base > 0)
					snprintf(why, sizeof(why), "%s %.6g is %.3gx the mean of its "
						 "previous %u steps (%.6g)", use_norm ? "norm" : "max |x|",
						 v, v / base, n, base);
				else
					snprintf(why, sizeof(why), "%s %.6g after %u steps at 0",
						 use_norm ? "norm" : "max |x|", v, n);
			}
		}
		if (p->flags)
			p->why = report_strn(r, why, SIZE_MAX, &err);
	}
	return err;
}

/* Sort @r's points by series and step, give each series its run of them, and judge each. */
int report_series_judge(struct adump_report *r)
{
	int ret = 0;

	qsort(r->points, r->point_count, sizeof(*r->points), point_cmp);
	for (size_t i = 0; i < r->point_count; i++) {
		struct report_series *s = &r->series[r->points[i].series];

		if (!s->point_count)
			s->point_first = i;
		s->point_count++;
	}
	for (size_t i = 0; ret == 0 && i < r->series_count; i++)
		ret = judge_series(r, &r->series[i]);
	return ret;
}
