// SPDX-License-Identifier: Apache-2.0
/* The fewest significant decimal digits that read back as a double, the nearest of them
 * when several do (what Python's repr() prints), from Google's double-conversion (Debian's
 * libdouble-conversion). The one C++ file of the library: no exceptions, no RTTI, nothing
 * of libstdc++ used. */
#include <double-conversion/double-to-string.h>

/* Declared in common/common.h (a C header). */
extern "C" __attribute__((visibility("hidden"))) int
adump_shortest_digits(double v, char *digits, int cap, int *exp10);

int adump_shortest_digits(double v, char *digits, int cap, int *exp10)
{
	using double_conversion::DoubleToStringConverter;
	bool sign;
	int len, point;

	DoubleToStringConverter::DoubleToAscii(v, DoubleToStringConverter::SHORTEST, 0, digits,
					       cap, &sign, &len, &point);
	*exp10 = point - 1;
	return len;
}
