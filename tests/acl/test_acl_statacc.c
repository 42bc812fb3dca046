/* SPDX-License-Identifier: Apache-2.0 */
/* pipeline/stats: the streaming statistics accumulator behind dump_data stats. The CSV is
 * exactly reference §2.4's, and feeding the payload split at any byte boundary gives the same
 * text as one feed. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "common/common.h"
#include "pipeline/stats.h"
#include "ring/ring.h"

#define HEADER "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,Nan Count,Negative Inf Count,Positive Inf Count\n"

static struct adump_tensor tensor(enum adump_tensor_kind kind, int32_t dtype, uint64_t bytes,
				  uint32_t d0, uint32_t d1)
{
	struct adump_tensor t;

	memset(&t, 0, sizeof(t));
	t.kind = kind;
	t.dtype = dtype;
	t.format = ADUMP_FORMAT_ND;
	t.bytes = bytes;
	t.dim_count = d0 ? (d1 ? 2 : 1) : 0;
	t.dims[0] = d0;
	t.dims[1] = d1;
	return t;
}

static char *csv_of(const struct adump_op *op, uint32_t mask, const uint8_t *payload, size_t len,
		    const size_t *cuts, size_t cut_count)
{
	struct adump_statacc acc;
	size_t prev = 0;
	char *out;

	ck_assert_int_eq(adump_statacc_init(&acc, op, mask), 0);
	for (size_t i = 0; i <= cut_count; i++) {
		size_t end = i < cut_count ? cuts[i] : len;

		adump_statacc_feed(&acc, prev, payload + prev, end - prev);
		prev = end;
	}
	ck_assert_int_eq(adump_statacc_csv(&acc, &out, NULL), 0);
	adump_statacc_fini(&acc);
	return out;
}

/* The sample Add: self, other inputs and out output, {4,2} float. */
START_TEST(test_csv_float_add)
{
	float data[24] = { 0, 1, 2, 3, 4, 5, 6, 7, 1, 1, 1, 2, 2, 2, 3, 3, 1, 2, 3, 5, 6, 7, 9, 10 };
	struct adump_tensor t[3] = {
		tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 32, 4, 2),
		tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 32, 4, 2),
		tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, 32, 4, 2),
	};
	struct adump_op op = { .op_type = "Add", .op_name = "aclnnAdd", .tensor_count = 3, .tensors = t };
	char *csv = csv_of(&op, 0, (uint8_t *)data, sizeof(data), NULL, 0);

	ck_assert_str_eq(csv, HEADER
			 "Input,0,32,DT_FLOAT,ND,4x2,7,0,3.5,8,0,0,0\n"
			 "Input,1,32,DT_FLOAT,ND,4x2,3,1,1.875,8,0,0,0\n"
			 "Output,0,32,DT_FLOAT,ND,4x2,10,1,5.375,8,0,0,0\n");
	free(csv);
}
END_TEST

static uint16_t f16(float f)
{
	/* Only for the exact values used here: 1.5, -2, +/-inf, NaN. */
	if (isnan(f))
		return 0x7e00;
	if (isinf(f))
		return f > 0 ? 0x7c00 : 0xfc00;
	if (f == 1.5f)
		return 0x3e00;
	if (f == -2.0f)
		return 0xc000;
	return 0;
}

/* Every dtype family, a workspace (skipped), an unsupported dtype and a scalar. */
static void mixed(struct adump_op *op, struct adump_tensor *t, uint8_t *payload, size_t *len)
{
	uint16_t h[5] = { f16(1.5f), f16(NAN), f16(-2.0f), f16(INFINITY), f16(1.5f) };
	uint16_t bf[3] = { 0x3fc0, 0xc040, 0x0000 };    /* 1.5, -3, 0 */
	int8_t i8[5] = { -128, 5, 127, 0, -1 };
	uint64_t u64[2] = { UINT64_MAX, 3 };
	uint8_t b[3] = { 0, 2, 0 };
	double d[2] = { -INFINITY, 0.25 };
	int32_t scalar = 42;
	uint8_t cplx[16] = { 0 }, ws[7] = { 1, 2, 3, 4, 5, 6, 7 };
	size_t o = 0;

	t[0] = tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT16, sizeof(h), 5, 0);
	t[1] = tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_BF16, sizeof(bf), 3, 0);
	t[2] = tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_INT8, sizeof(i8), 5, 0);
	t[3] = tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_COMPLEX64, sizeof(cplx), 2, 0);
	t[4] = tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_INT32, sizeof(scalar), 0, 0);
	t[5] = tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_UINT64, sizeof(u64), 2, 0);
	t[6] = tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_BOOL, sizeof(b), 3, 0);
	t[7] = tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_DOUBLE, sizeof(d), 2, 0);
	t[8] = tensor(ADUMP_TENSOR_WORKSPACE, ADUMP_DT_UINT8, sizeof(ws), 7, 0);
#define PUT(x) (memcpy(payload + o, x, sizeof(x)), o += sizeof(x))
	PUT(h);
	PUT(bf);
	PUT(i8);
	PUT(cplx);
	memcpy(payload + o, &scalar, 4);
	o += 4;
	PUT(u64);
	PUT(b);
	PUT(d);
	PUT(ws);
#undef PUT
	*len = o;
	*op = (struct adump_op){ .op_type = "T", .op_name = "t", .tensor_count = 9, .tensors = t };
}

static const char mixed_csv[] = HEADER
	"Input,0,10,DT_FLOAT16,ND,5,inf,-2,inf,5,1,0,1\n"   /* +inf only: mean is +inf */
	"Input,1,6,DT_BF16,ND,3,1.5,-3,-0.5,3,0,0,0\n"
	"Input,2,5,DT_INT8,ND,5,127,-128,0.6,5,0,0,0\n"
	"Input,3,16,DT_COMPLEX64,ND,2,,,,,,,\n"
	"Input,4,4,DT_INT32,ND,-,42,42,42,1,0,0,0\n"
	"Output,0,16,DT_UINT64,ND,2,18446744073709551615,3,9.22337e+18,2,0,0,0\n"
	"Output,1,3,DT_BOOL,ND,3,1,0,0.333333,3,0,0,0\n"
	"Output,2,16,DT_DOUBLE,ND,2,0.25,-inf,-inf,2,0,1,0\n";

START_TEST(test_csv_dtypes)
{
	struct adump_tensor t[9];
	struct adump_op op;
	uint8_t payload[128];
	size_t len;
	char *csv;

	mixed(&op, t, payload, &len);
	csv = csv_of(&op, 0, payload, len, NULL, 0);
	ck_assert_str_eq(csv, mixed_csv);
	free(csv);
}
END_TEST

/* Two cuts at every pair of byte positions (one cut when equal): always the same CSV. */
START_TEST(test_split_anywhere)
{
	struct adump_tensor t[9];
	struct adump_op op;
	uint8_t payload[128];
	size_t len, cuts[2];

	mixed(&op, t, payload, &len);
	for (cuts[0] = 0; cuts[0] <= len; cuts[0]++) {
		for (cuts[1] = cuts[0]; cuts[1] <= len; cuts[1]++) {
			char *csv = csv_of(&op, 0, payload, len, cuts, 2);

			if (strcmp(csv, mixed_csv))
				ck_abort_msg("cuts at %zu and %zu:\n%s", cuts[0], cuts[1], csv);
			free(csv);
		}
	}
}
END_TEST

START_TEST(test_byte_by_byte)
{
	struct adump_tensor t[9];
	struct adump_op op;
	uint8_t payload[128];
	size_t len, cuts[128];
	char *csv;

	mixed(&op, t, payload, &len);
	for (size_t i = 0; i + 1 < len; i++)
		cuts[i] = i + 1;
	csv = csv_of(&op, 0, payload, len, cuts, len - 1);
	ck_assert_str_eq(csv, mixed_csv);
	free(csv);
}
END_TEST

START_TEST(test_selected_columns_and_gaps)
{
	float data[8] = { 3, 4, 0, 0, 1, 1, 1, 1 };
	struct adump_tensor t[2] = {
		tensor(ADUMP_TENSOR_INPUT, ADUMP_DT_FLOAT, 16, 4, 0),
		tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, 16, 4, 0),
	};
	struct adump_op op = { .op_type = "A", .op_name = "a", .tensor_count = 2, .tensors = t };
	struct adump_statacc acc;
	char *csv;

	/* Max (1 << 0) and L2norm (1 << 6): Count first, then the selection. */
	csv = csv_of(&op, (1u << 0) | (1u << 6), (uint8_t *)data, sizeof(data), NULL, 0);
	ck_assert_str_eq(csv, "Input/Output,Index,Data Size,Data Type,Format,Shape,Count,Max Value,l2norm\n"
			 "Input,0,16,DT_FLOAT,ND,4,4,4,5\n"
			 "Output,0,16,DT_FLOAT,ND,4,4,1,2\n");
	free(csv);

	/* A gap in the feed: the tensors it touches print NA, the others are exact. */
	ck_assert_int_eq(adump_statacc_init(&acc, &op, 0), 0);
	adump_statacc_feed(&acc, 0, data, 8);
	adump_statacc_feed(&acc, 16, (uint8_t *)data + 16, 16);
	adump_statacc_feed(&acc, 8, (uint8_t *)data + 8, 8);    /* late: ignored */
	ck_assert_int_eq(adump_statacc_csv(&acc, &csv, NULL), 0);
	ck_assert_str_eq(csv, HEADER
			 "Input,0,16,DT_FLOAT,ND,4,NA,NA,NA,4,NA,NA,NA\n"
			 "Output,0,16,DT_FLOAT,ND,4,1,1,1,4,0,0,0\n");
	free(csv);
	adump_statacc_fini(&acc);
	adump_statacc_fini(NULL);
	ck_assert_int_eq(adump_statacc_init(NULL, &op, 0), -EINVAL);
}
END_TEST

/* adump_statacc_record(), the one call of the output kinds: a record carrying statistics
 * computed at handover gives the CSV of the bytes (taken once, however many records), and
 * records carrying bytes are fed as before, a dropped one printing NA. */
START_TEST(test_record_handover_and_bytes)
{
	struct adump_tensor t[9];
	struct adump_op op;
	struct adump_op_rec *orec;
	struct adump_statacc acc;
	uint8_t payload[128];
	size_t len, off = 0;
	char *csv;

	mixed(&op, t, payload, &len);
	ck_assert_int_eq(adump_op_rec_create(&op, NULL, &orec), 0);
	orec->tstats = calloc(op.tensor_count, sizeof(struct adump_tstats));
	ck_assert_ptr_nonnull(orec->tstats);
	for (uint32_t i = 0; i < op.tensor_count; i++) {
		adump_tstats_init(&orec->tstats[i], t[i].dtype);
		if (orec->tstats[i].kind != ADUMP_TSTATS_NONE)
			adump_tstats_add(&orec->tstats[i], payload + off,
					 t[i].bytes / orec->tstats[i].elem_bytes);
		off += t[i].bytes;
	}
	struct adump_rec rec = { .op = orec, .flags = ADUMP_REC_FIRST | ADUMP_REC_LAST };

	ck_assert_int_eq(adump_statacc_init(&acc, &orec->op, 0), 0);
	adump_statacc_record(&acc, &rec);
	adump_statacc_record(&acc, &rec);
	ck_assert_int_eq(adump_statacc_csv(&acc, &csv, NULL), 0);
	ck_assert_str_eq(csv, mixed_csv);
	free(csv);
	ck_assert_ptr_nonnull(adump_statacc_tensor(&acc, 0));
	ck_assert_uint_eq(adump_statacc_tensor(&acc, 0)->nan_count, 1);
	ck_assert_ptr_null(adump_statacc_tensor(&acc, 3));     /* complex: none */
	ck_assert_ptr_null(adump_statacc_tensor(&acc, 8));     /* workspace */
	ck_assert_ptr_null(adump_statacc_tensor(&acc, 9));     /* past the last */
	adump_statacc_fini(&acc);

	/* Bytes in records of 16, the one at 16 lost: the int8 row prints NA (the complex one
	 * has no statistics), the others are exact. */
	free(orec->tstats);
	orec->tstats = NULL;
	ck_assert_int_eq(adump_statacc_init(&acc, &orec->op, 0), 0);
	for (size_t o = 0; o < len; o += 16) {
		struct adump_rec r = { .op = orec, .offset = o,
				       .len = (uint32_t)(len - o < 16 ? len - o : 16),
				       .buf = payload + o };

		if (o != 16)
			adump_statacc_record(&acc, &r);
	}
	ck_assert_int_eq(adump_statacc_csv(&acc, &csv, NULL), 0);
	ck_assert_str_eq(csv, HEADER
			 "Input,0,10,DT_FLOAT16,ND,5,inf,-2,inf,5,1,0,1\n"
			 "Input,1,6,DT_BF16,ND,3,1.5,-3,-0.5,3,0,0,0\n"
			 "Input,2,5,DT_INT8,ND,5,NA,NA,NA,5,NA,NA,NA\n"
			 "Input,3,16,DT_COMPLEX64,ND,2,,,,,,,\n"
			 "Input,4,4,DT_INT32,ND,-,42,42,42,1,0,0,0\n"
			 "Output,0,16,DT_UINT64,ND,2,18446744073709551615,3,9.22337e+18,2,0,0,0\n"
			 "Output,1,3,DT_BOOL,ND,3,1,0,0.333333,3,0,0,0\n"
			 "Output,2,16,DT_DOUBLE,ND,2,0.25,-inf,-inf,2,0,1,0\n");
	free(csv);
	ck_assert_ptr_null(adump_statacc_tensor(&acc, 2));     /* int8: the lost record */
	ck_assert_ptr_nonnull(adump_statacc_tensor(&acc, 1));
	adump_statacc_fini(&acc);
	adump_op_rec_destroy(orec);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl_statacc");
	TCase *tc = tcase_create("statacc");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_csv_float_add);
	tcase_add_test(tc, test_csv_dtypes);
	tcase_add_test(tc, test_split_anywhere);
	tcase_add_test(tc, test_byte_by_byte);
	tcase_add_test(tc, test_selected_columns_and_gaps);
	tcase_add_test(tc, test_record_handover_and_bytes);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
