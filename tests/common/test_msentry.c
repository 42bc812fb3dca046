/* SPDX-License-Identifier: Apache-2.0 */
/* common/msentry.c adump_msentry_leaf(): a tensor's item in dump.json written as text must be
 * the bytes json-c writes for the same item built as objects (adump_msentry_stats() and the
 * keys around it, as the exporter builds it), inside an entry serialized as the pipeline
 * does (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE): every statistics kind,
 * non-finite values, 0-d tensors, md5 and data names that json-c escapes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "adump/adump.h"
#include "adump/export.h"
#include "common/common.h"
#include "helpers.h"

#define FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* The reference: the item as json-c objects. */
static struct json_object *leaf_objects(const struct adump_msentry_leaf *l)
{
	struct json_object *o = json_object_new_object(), *shape = json_object_new_array();
	const char *dtn = adump_pt_dtype_name(l->dtype);

	json_object_object_add(o, "type", json_object_new_string("torch.Tensor"));
	json_object_object_add(o, "dtype", json_object_new_string(dtn ? dtn : "unknown"));
	for (uint32_t d = 0; d < l->dim_count; d++)
		json_object_array_add(shape, json_object_new_int64((int64_t)l->dims[d]));
	json_object_object_add(o, "shape", shape);
	adump_msentry_stats(o, l->stats, l->dtype, l->dim_count);
	json_object_object_add(o, "requires_grad", json_object_new_boolean(l->requires_grad));
	if (l->has_md5) {
		char hex[16];

		snprintf(hex, sizeof(hex), "%08x", (unsigned)l->md5);
		json_object_object_add(o, "md5", json_object_new_string(hex));
	}
	if (l->data_name)
		json_object_object_add(o, "data_name", json_object_new_string(l->data_name));
	return o;
}

/* Both ways inside an entry {"input_args": [<leaf>, 1]}: the same text. */
static void check_leaf(const struct adump_msentry_leaf *l)
{
	struct json_object *want = json_object_new_object(), *got = json_object_new_object();
	struct json_object *wa = json_object_new_array(), *ga = json_object_new_array();
	struct json_object *placeholder = json_object_new_boolean(0);
	char *want_text;

	json_object_array_add(wa, leaf_objects(l));
	json_object_array_add(wa, json_object_new_int(1));
	json_object_object_add(want, "input_args", wa);
	ck_assert_int_eq(adump_msentry_leaf(placeholder, l), 0);
	json_object_array_add(ga, placeholder);
	json_object_array_add(ga, json_object_new_int(1));
	json_object_object_add(got, "input_args", ga);
	want_text = strdup(json_object_to_json_string_ext(want, FLAGS));
	ck_assert_str_eq(json_object_to_json_string_ext(got, FLAGS), want_text);
	free(want_text);
	json_object_put(want);
	json_object_put(got);
}

/* @l with the statistics of @n elements of @data (dtype l->dtype). */
static void check_data(struct adump_msentry_leaf l, const void *data, size_t n)
{
	struct adump_tstats st;

	adump_tstats_init(&st, l.dtype);
	adump_tstats_add(&st, data, n);
	l.stats = &st;
	check_leaf(&l);
}

START_TEST(test_float_kinds)
{
	static const uint64_t dims[] = { 2, 3 };
	const float f[6] = { 1.5f, -2.25f, 3.0e-8f, 4.7f, -4.3f, 0.1f };
	const float nan_f[6] = { 1.0f, NAN, 2.0f, 3.0f, 4.0f, 5.0f };
	const float inf_f[6] = { 1.0f, INFINITY, -INFINITY, 3.0f, 4.0f, 5.0f };
	const float pinf_f[6] = { 1.0f, INFINITY, 2.0f, 3.0f, 4.0f, 5.0f };
	const double d[6] = { 1e300, -1e-300, 0.1, 0.2, 0.3, 7.0 };
	const uint16_t h[6] = { 0x3c00, 0xbc00, 0x7bff, 0x0001, 0x3555, 0xc000 };
	struct adump_msentry_leaf l = { .dtype = ADUMP_DT_FLOAT, .dims = dims, .dim_count = 2 };

	check_data(l, f, 6);
	check_data(l, nan_f, 6);
	check_data(l, inf_f, 6);
	check_data(l, pinf_f, 6);
	l.dtype = ADUMP_DT_DOUBLE;
	check_data(l, d, 6);
	l.dtype = ADUMP_DT_FLOAT16;
	check_data(l, h, 6);
	l.dtype = ADUMP_DT_BF16;
	check_data(l, h, 6);
}
END_TEST

START_TEST(test_other_kinds)
{
	static const uint64_t dims[] = { 4 };
	const int64_t i64[4] = { INT64_MIN, -1, 0, INT64_MAX };
	const int32_t i32[4] = { -7, 100000, 3, 0 };
	const uint8_t u8[4] = { 0, 255, 7, 9 };
	const uint64_t u64[4] = { 0, UINT64_MAX, 1, 2 };
	const uint8_t b[4] = { 0, 1, 1, 0 };
	const uint8_t all[4] = { 1, 1, 1, 1 };
	struct adump_msentry_leaf l = { .dtype = ADUMP_DT_INT64, .dims = dims, .dim_count = 1,
					.requires_grad = true };

	check_data(l, i64, 4);
	l.dtype = ADUMP_DT_INT32;
	check_data(l, i32, 4);
	l.dtype = ADUMP_DT_UINT8;
	check_data(l, u8, 4);
	l.dtype = ADUMP_DT_UINT64;
	check_data(l, u64, 4);
	l.dtype = ADUMP_DT_BOOL;
	check_data(l, b, 4);
	check_data(l, all, 4);
}
END_TEST

START_TEST(test_zero_d_empty_and_none)
{
	static const uint64_t zero[] = { 0, 3 };
	const float f = -0.0f, g = 2.5f;
	const int64_t i = -42;
	const uint8_t b = 1;
	struct adump_msentry_leaf l = { .dtype = ADUMP_DT_FLOAT };

	check_data(l, &f, 1);                   /* 0-d: the four are its value */
	check_data(l, &g, 1);
	l.dtype = ADUMP_DT_INT64;
	check_data(l, &i, 1);
	l.dtype = ADUMP_DT_BOOL;
	check_data(l, &b, 1);
	l.dtype = ADUMP_DT_FLOAT;
	l.dims = zero;
	l.dim_count = 2;
	check_data(l, &f, 0);                   /* no elements: null */
	check_leaf(&l);                         /* no statistics at all */
	l.dtype = 9999;                         /* a dtype torch has no name for */
	check_leaf(&l);
}
END_TEST

START_TEST(test_names_md5)
{
	static const uint64_t dims[] = { 1 };
	static const char *const names[] = {
		"Module.fc.Linear.forward.0.input.0.pt", "a\"b", "back\\slash", "sl/ash",
		"tab\tnl\nff\fbs\bcr\r", "ctl\x01\x1f\x7f", "utf8 \xc3\xa9\xe2\x82\xac", "",
	};
	const float f = 1.0f;
	struct adump_msentry_leaf l = { .dtype = ADUMP_DT_FLOAT, .dims = dims, .dim_count = 1,
					.has_md5 = true };

	for (unsigned md5 = 0; md5 < 3; md5++) {
		l.md5 = md5 == 0 ? 0 : md5 == 1 ? 0xdeadbeefu : 0x0000abcdu;
		check_data(l, &f, 1);
	}
	l.has_md5 = false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		l.data_name = names[i];
		check_data(l, &f, 1);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("msentry");
	TCase *tc = tcase_create("leaf");

	tcase_add_test(tc, test_float_kinds);
	tcase_add_test(tc, test_other_kinds);
	tcase_add_test(tc, test_zero_d_empty_and_none);
	tcase_add_test(tc, test_names_md5);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
