/* SPDX-License-Identifier: Apache-2.0 */
/* Verdicts on compared tensors: pass, warning or error from the NaN/Inf rule, the cosine, the
 * error against the golden side's scale and the absolute error, with limits per dtype class
 * (README "Verdicts" gives the defaults and why). msprobe's "Accuracy Reached or Not" is the
 * floor: what it calls No is an error whatever the limits say. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/compare_int.h"

const char *adump_compare_accuracy_reached(double cos, double max_abs)
{
	if (isnan(cos) || isnan(max_abs))
		return "None";
	if (cos < 0.99 && max_abs > 0.001)
		return "No";
	if (cos < 0.9 || max_abs > 1)
		return "No";
	return "Yes";
}

static const char *const class_names[ADUMP_COMPARE_CLASS_COUNT] = {
	"float32", "float16", "bfloat16", "integer"
};

/* cosine, cosine_warning, scaled, scaled_warning, max_abs, max_abs_warning. Scaled errors are
 * a few units of each type's rounding (eps: float32 1.2e-7, float16 9.8e-4, bfloat16 7.8e-3)
 * for a warning and ten or more for an error; float32 leaves room for a different reduction
 * order over long sums. Integers are exact. */
static const struct adump_compare_limits limits_default[ADUMP_COMPARE_CLASS_COUNT] = {
	{ 0.999, 0.99999, 1e-3, 1e-4, 1.0, INFINITY },
	{ 0.999, 0.9999, 1e-2, 2e-3, 1.0, INFINITY },
	{ 0.99, 0.999, 5e-2, 1.6e-2, 1.0, INFINITY },
	{ -1.0, -1.0, INFINITY, INFINITY, 0.0, 0.0 },
};

void adump_compare_thresholds_default(struct adump_compare_thresholds *t)
{
	memcpy(t->of, limits_default, sizeof(t->of));
}

static const struct {
	const char *name;
	size_t offset;
} keys[] = {
	{ "cosine", offsetof(struct adump_compare_limits, cosine) },
	{ "cosine_warning", offsetof(struct adump_compare_limits, cosine_warning) },
	{ "scaled", offsetof(struct adump_compare_limits, scaled) },
	{ "scaled_warning", offsetof(struct adump_compare_limits, scaled_warning) },
	{ "max_abs", offsetof(struct adump_compare_limits, max_abs) },
	{ "max_abs_warning", offsetof(struct adump_compare_limits, max_abs_warning) },
};

int adump_compare_thresholds_parse(struct adump_compare_thresholds *t, const char *list,
				   char *msg, size_t cap)
{
	char *copy, *tok, *save = NULL;
	int ret = 0;

	adump_compare_thresholds_default(t);
	if (!list || !*list)
		return 0;
	copy = strdup(list);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && ret == 0; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *key = tok, *end;
		int first = 0, last = ADUMP_COMPARE_CLASS_INTEGER - 1, k = -1;
		double v;

		while (*key == ' ')
			key++;
		if (eq)
			*eq = '\0';
		for (int c = 0; c < ADUMP_COMPARE_CLASS_COUNT; c++) {
			size_t len = strlen(class_names[c]);

			if (!strncmp(key, class_names[c], len) && key[len] == '.') {
				first = last = c;
				key += len + 1;
			}
		}
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!strcmp(key, keys[i].name))
				k = (int)i;
		if (k < 0) {
			snprintf(msg, cap, "threshold '%s': unknown key (cosine, cosine_warning, "
				 "scaled, scaled_warning, max_abs, max_abs_warning, optionally after "
				 "float32., float16., bfloat16. or integer.)", tok);
			ret = -ADUMP_ERR_CONFIG;
			break;
		}
		v = eq ? strtod(eq + 1, &end) : NAN;
		if (!eq || end == eq + 1 || *end || isnan(v) || v < -1.0 ||
		    (k < 2 && v > 1.0)) {
			snprintf(msg, cap, "threshold '%s': '%s' is not a number%s", tok,
				 eq ? eq + 1 : "", k < 2 ? " in [-1, 1]" : " >= -1");
			ret = -ADUMP_ERR_CONFIG;
			break;
		}
		for (int c = first; c <= last; c++)
			*(double *)((char *)&t->of[c] + keys[k].offset) = v;
	}
	free(copy);
	return ret;
}

enum adump_compare_class adump_compare_class_of(int32_t dtype_x, int32_t dtype_y)
{
	bool is_int[2];
	int32_t d[2] = { dtype_x, dtype_y };

	if (dtype_x == ADUMP_DT_BF16 || dtype_y == ADUMP_DT_BF16)
		return ADUMP_COMPARE_CLASS_BFLOAT16;
	if (dtype_x == ADUMP_DT_FLOAT16 || dtype_y == ADUMP_DT_FLOAT16)
		return ADUMP_COMPARE_CLASS_FLOAT16;
	for (int s = 0; s < 2; s++)
		is_int[s] = d[s] != ADUMP_DT_FLOAT && d[s] != ADUMP_DT_DOUBLE;
	return is_int[0] && is_int[1] ? ADUMP_COMPARE_CLASS_INTEGER : ADUMP_COMPARE_CLASS_FLOAT32;
}

const char *adump_compare_verdict_name(enum adump_compare_verdict v)
{
	switch (v) {
	case ADUMP_COMPARE_PASS:
		return "pass";
	case ADUMP_COMPARE_WARNING:
		return "warning";
	case ADUMP_COMPARE_ERROR:
		return "error";
	case ADUMP_COMPARE_UNINITIALIZED:
		return "uninitialized";
	default:
		return "none";
	}
}

static void reason_add(char *msg, size_t cap, const char *fmt, double a, double b)
{
	size_t len = strlen(msg);

	if (len + 2 >= cap)
		return;
	if (len)
		len += (size_t)snprintf(msg + len, cap - len, "; ");
	if (len < cap)
		snprintf(msg + len, cap - len, fmt, a, b);
}

enum adump_compare_verdict adump_compare_verdict_judge(const struct adump_compare_thresholds *t,
						       int32_t dtype_x, int32_t dtype_y,
						       bool is_scalar,
						       const struct adump_compare_metrics *m,
						       char *reason, size_t cap)
{
	enum adump_compare_class cls = adump_compare_class_of(dtype_x, dtype_y);
	const struct adump_compare_limits *l;
	struct adump_compare_thresholds defaults;
	enum adump_compare_verdict v = ADUMP_COMPARE_PASS;
	char scratch[1], warn[512] = "";
	double cos = m->finite_cosine, abs_err = m->finite_max_abs, scaled = m->scaled_error;

	adump_msg_begin(&reason, &cap, scratch);
	if (!t) {
		adump_compare_thresholds_default(&defaults);
		t = &defaults;
	}
	l = &t->of[cls];
	if (m->nonfinite_diff_count) {
		snprintf(reason, cap, "NaN/Inf differ at %llu elements, the first at index %llu "
			 "(my output: %llu NaN, %llu Inf; ground truth: %llu NaN, %llu Inf)",
			 (unsigned long long)m->nonfinite_diff_count,
			 (unsigned long long)m->first_nonfinite_diff,
			 (unsigned long long)m->nan_count[0], (unsigned long long)m->inf_count[0],
			 (unsigned long long)m->nan_count[1], (unsigned long long)m->inf_count[1]);
		return ADUMP_COMPARE_ERROR;
	}
	if (!m->element_count)
		return ADUMP_COMPARE_PASS;
	if (is_scalar)
		cos = NAN;      /* one element: the scaled error says it all */
	if (!strcmp(adump_compare_accuracy_reached(isnan(cos) ? 1.0 : cos, abs_err), "No")) {
		snprintf(reason, cap, "below msprobe's accuracy floor (cosine %.6g, max abs error "
			 "%.6g)", cos, abs_err);
		return ADUMP_COMPARE_ERROR;
	}
	if (!isnan(cos) && cos < l->cosine)
		reason_add(reason, cap, "cosine %.8g < %.8g", cos, l->cosine);
	else if (!isnan(cos) && cos < l->cosine_warning)
		reason_add(warn, sizeof(warn), "cosine %.8g < %.8g", cos, l->cosine_warning);
	if (scaled > l->scaled)
		reason_add(reason, cap, "max abs error / max |ground truth| %.6g > %.6g", scaled,
			   l->scaled);
	else if (scaled > l->scaled_warning)
		reason_add(warn, sizeof(warn), "max abs error / max |ground truth| %.6g > %.6g",
			   scaled, l->scaled_warning);
	if (abs_err > l->max_abs)
		reason_add(reason, cap, "max abs error %.6g > %.6g", abs_err, l->max_abs);
	else if (abs_err > l->max_abs_warning)
		reason_add(warn, sizeof(warn), "max abs error %.6g > %.6g", abs_err,
			   l->max_abs_warning);
	if (reason[0])
		v = ADUMP_COMPARE_ERROR;
	else if (warn[0])
		v = ADUMP_COMPARE_WARNING;
	if (v == ADUMP_COMPARE_WARNING)
		snprintf(reason, cap, "%s", warn);
	if (v != ADUMP_COMPARE_PASS && m->nan_count[0] + m->inf_count[0])
		reason_add(reason, cap, "(judged on the elements finite on both sides; %.0f NaN/Inf "
			   "at the same places on both)", (double)(m->nan_count[0] + m->inf_count[0]),
			   0);
	return v;
}

