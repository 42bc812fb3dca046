/* SPDX-License-Identifier: Apache-2.0 */
/* Verdicts on compared tensors: whether a row's numbers say the two sides agree. */
#include <math.h>

#include "reader/compare_int.h"

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
