/* SPDX-License-Identifier: Apache-2.0 */
/* common/pt.c adump_py_float(): a double as Python's repr() writes it (msprobe's dump.json
 * holds Python's json.dump of its statistics), byte for byte: the fewest digits that read
 * back, positional from 1e-4 to 1e16, exponents with a sign and two digits or more, ".0" on
 * integral values, and the spellings json.dump gives NaN and the infinities. Expected texts are
 * Python 3.11's repr() of each value, written out by hand below. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "helpers.h"

static const struct {
	double v;
	const char *text;
} cases[] = {
	{ 0x1.999999999999ap-4, "0.1" },
	{ -0x1.999999999999ap-4, "-0.1" },
	{ 0x1.3333333333334p-2, "0.30000000000000004" },
	{ 0x1.1c37937e08000p+53, "1e+16" },
	{ 0x1.1c37937e07fffp+53, "9999999999999998.0" },
	{ 0x1.a36e2eb1c432dp-14, "0.0001" },
	{ 0x1.4f8b588e368f1p-17, "1e-05" },
	{ 0x1.f75104d551d69p-17, "1.5e-05" },
	{ 0x1.ec00000000000p+6, "123.0" },
	{ 0x1.c6bf526340000p+49, "1000000000000000.0" },
	{ 0x0.0000000000001p-1022, "5e-324" },
	{ 0x1.fffffffffffffp+1023, "1.7976931348623157e+308" },
	{ 0x1.0000000000000p-1022, "2.2250738585072014e-308" },
	{ 0x1.0f0cf064dd592p+73, "1e+22" },
	{ 0x1.52d02c7e14af6p+76, "1e+23" },
	{ 0x1.9000000000000p+6, "100.0" },
	{ 0x1.0000000000000p-1, "0.5" },
	{ 0x1.4000000000000p+1, "2.5" },
	{ 0x1.4000000000000p+0, "1.25" },
	{ 0x0.012688b70e62bp-1022, "1e-310" },
	{ -0x1.249ad2594c37dp+332, "-1e+100" },
	{ 0x1.78c29dccccccdp+23, "12345678.9" },
	{ 0x1.e847f00000000p+19, "999999.5" },
	{ 0x1.8e757928e0c9ep-14, "9.5e-05" },
	{ 0x1.e666666666666p-1, "0.95" },
	{ 0x1.ad7f29abcaf48p-24, "1e-07" },
	{ 0x1.c12218377de66p+46, "123456789012345.6" },
	{ 0x1.99999a0000000p-4, "0.10000000149011612" },
	{ 0x1.2ccccc0000000p+2, "4.699999809265137" },
	{ -0x1.1333340000000p+2, "-4.300000190734863" },
	{ 0x1.07e1fe0000000p-36, "1.499999950638209e-11" },
	{ 0x1.f9c67e0000000p-33, "2.3000000515249752e-10" },
	{ 0x1.ff933c0000000p+127, "3.3999999521443642e+38" },
	{ 0x1.0000000000000p-149, "1.401298464324817e-45" },
	{ 0x1.9980000000000p-4, "0.0999755859375" },
	{ 0x1.ffc0000000000p+15, "65504.0" },
	{ 0x1.0000000000000p-24, "5.960464477539063e-08" },
	{ -0x1.74de452e6b438p+811, "-1.989032661366619e+244" },
	{ 0x1.3270e269e0d37p+594, "7.761117632285041e+178" },
	{ 0x1.c7fd0a6a3a450p-826, "3.980498358697587e-249" },
	{ -0x1.f0824128b2f33p+292, "-1.5432835417340557e+88" },
	{ 0x1.8e811892f902bp-638, "1.3647584518757569e-192" },
	{ -0x1.1985d5d9dc9f8p-684, "-1.3701135617873088e-206" },
};

START_TEST(test_repr)
{
	char out[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		adump_py_float(cases[i].v, out, sizeof(out));
		ck_assert_msg(strcmp(out, cases[i].text) == 0, "%a: got %s, want %s", cases[i].v,
			      out, cases[i].text);
		adump_py_float(-cases[i].v, out + 1, sizeof(out) - 1);
		ck_assert_msg(cases[i].text[0] == '-' ? strcmp(out + 1, cases[i].text + 1) == 0 :
			      out[1] == '-' && strcmp(out + 2, cases[i].text) == 0,
			      "%a negated: got %s", cases[i].v, out + 1);
	}
}
END_TEST

START_TEST(test_special)
{
	char out[64];

	adump_py_float(0.0, out, sizeof(out));
	ck_assert_str_eq(out, "0.0");
	adump_py_float(-0.0, out, sizeof(out));
	ck_assert_str_eq(out, "-0.0");
	adump_py_float(NAN, out, sizeof(out));
	ck_assert_str_eq(out, "NaN");
	adump_py_float(INFINITY, out, sizeof(out));
	ck_assert_str_eq(out, "Infinity");
	adump_py_float(-INFINITY, out, sizeof(out));
	ck_assert_str_eq(out, "-Infinity");
}
END_TEST

/* Every double read back from its text: random bit patterns and float32 values (msprobe's
 * statistics of a float32 tensor), the shortest text each time (one digit fewer does not read
 * back). */
START_TEST(test_round_trip)
{
	unsigned long long x = 0x9e3779b97f4a7c15ull;
	char out[64], shorter[64];

	for (int i = 0; i < 20000; i++) {
		double v;
		int digits = 0;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (i % 2) {
			memcpy(&v, &x, sizeof(v));
		} else {
			float f;
			uint32_t b = (uint32_t)x;

			memcpy(&f, &b, sizeof(f));
			v = f;
		}
		if (!isfinite(v) || v == 0)
			continue;
		adump_py_float(v, out, sizeof(out));
		ck_assert_msg(strtod(out, NULL) == v, "%a: %s does not read back", v, out);
		{
			/* significant digits: leading and trailing zeros (and ".0") left out */
			char sig[32];
			int n = 0;

			for (const char *c = out; *c && *c != 'e'; c++)
				if ((*c >= '1' && *c <= '9') || (*c == '0' && n))
					sig[n++] = *c;
			while (n && sig[n - 1] == '0')
				n--;
			digits = n;
		}
		snprintf(shorter, sizeof(shorter), "%.*e", digits > 2 ? digits - 2 : 0, v);
		ck_assert_msg(digits <= 2 || strtod(shorter, NULL) != v,
			      "%a: %s is shorter than %s", v, shorter, out);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pyfloat");
	TCase *tc = tcase_create("repr");

	tcase_add_test(tc, test_repr);
	tcase_add_test(tc, test_special);
	tcase_add_test(tc, test_round_trip);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
