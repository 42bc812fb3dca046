/* SPDX-License-Identifier: Apache-2.0 */
/* The .pt writer (reader/pt.c): a stored zip whose records are found through the central
 * directory, the tensor's bytes 64-byte aligned and equal to the input, a protocol 2 pickle
 * naming the storage type and shape; adump_pt_check accepts it and refuses a flipped byte
 * or a cut file; unsupported dtypes, wrong sizes and bad archive names are refused and leave
 * no file. torch.load itself is exercised by tests/python/test_torch_msprobe.py. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adump/export.h"
#include "adump/types.h"
#include "reader_helpers.h"

static uint32_t le(const unsigned char *p, unsigned n)
{
	uint32_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* Offset and size of record @name (full name) of the zip in @buf; -1 if absent. */
static long record(const unsigned char *buf, size_t len, const char *name, size_t *size)
{
	size_t eocd = len - 22, at;
	unsigned count;

	ck_assert_uint_eq(le(buf + eocd, 4), 0x06054b50);
	count = le(buf + eocd + 10, 2);
	at = le(buf + eocd + 16, 4);
	for (unsigned i = 0; i < count; i++) {
		size_t nl = le(buf + at + 28, 2), local = le(buf + at + 42, 4);

		ck_assert_uint_eq(le(buf + at, 4), 0x02014b50);
		ck_assert_uint_eq(le(buf + at + 10, 2), 0);     /* stored */
		if (nl == strlen(name) && memcmp(buf + at + 46, name, nl) == 0) {
			*size = le(buf + at + 20, 4);
			ck_assert_uint_eq(le(buf + local, 4), 0x04034b50);
			return (long)(local + 30 + le(buf + local + 26, 2) + le(buf + local + 28, 2));
		}
		at += 46 + nl + le(buf + at + 30, 2) + le(buf + at + 32, 2);
	}
	return -1;
}

static bool contains(const unsigned char *p, size_t n, const char *s)
{
	size_t m = strlen(s);

	for (size_t i = 0; i + m <= n; i++)
		if (memcmp(p + i, s, m) == 0)
			return true;
	return false;
}

START_TEST(test_float_tensor)
{
	char *dir = t_tmpdir("pt"), path[512], msg[256];
	float v[6] = { 0, 1, 2, 3, 4, 5 };
	uint64_t dims[2] = { 2, 3 };
	unsigned char *buf;
	size_t len, size;
	long off;

	snprintf(path, sizeof(path), "%s/t.pt", dir);
	ck_assert_int_eq(adump_pt_write(path, "t", ADUMP_DT_FLOAT, dims, 2, v, sizeof(v), msg,
					sizeof(msg)), 0);
	buf = t_read_file(path, &len);
	ck_assert_ptr_nonnull(buf);
	off = record(buf, len, "t/data/0", &size);
	ck_assert_int_ge(off, 0);
	ck_assert_int_eq(off % 64, 0);
	ck_assert_uint_eq(size, sizeof(v));
	ck_assert_mem_eq(buf + off, v, sizeof(v));
	off = record(buf, len, "t/version", &size);
	ck_assert_int_ge(off, 0);
	ck_assert_mem_eq(buf + off, "3\n", 2);
	off = record(buf, len, "t/data.pkl", &size);
	ck_assert_int_ge(off, 0);
	ck_assert_uint_eq(buf[off], 0x80);                      /* PROTO 2 */
	ck_assert_uint_eq(buf[off + 1], 2);
	ck_assert_uint_eq(buf[off + size - 1], '.');            /* STOP */
	ck_assert(contains(buf + off, size, "torch._utils\n_rebuild_tensor_v2\n"));
	ck_assert(contains(buf + off, size, "torch\nFloatStorage\n"));
	/* shape (2, 3) and stride (3, 1) as BININT1 pairs with TUPLE2 */
	ck_assert(contains(buf + off, size, "K\x02K\x03\x86"));
	ck_assert(contains(buf + off, size, "K\x03K\x01\x86"));
	ck_assert_int_eq(adump_pt_check(path, msg, sizeof(msg)), 0);
	free(buf);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_shapes_and_dtypes)
{
	char *dir = t_tmpdir("pt"), path[512], msg[256];
	static int64_t big[70000];
	uint64_t dims[1] = { 70000 };
	unsigned char *buf;
	size_t len, size;
	long off;
	double scalar = 2.5;
	uint16_t half[3] = { 0x3c00, 0, 0xbc00 };
	uint64_t d3[1] = { 3 };

	snprintf(path, sizeof(path), "%s/big.pt", dir);
	for (size_t i = 0; i < 70000; i++)
		big[i] = (int64_t)i - 5;
	ck_assert_int_eq(adump_pt_write(path, "big", ADUMP_DT_INT64, dims, 1, big, sizeof(big),
					msg, sizeof(msg)), 0);
	buf = t_read_file(path, &len);
	off = record(buf, len, "big/data.pkl", &size);
	ck_assert(contains(buf + off, size, "torch\nLongStorage\n"));
	/* 70000 needs BININT (4 bytes), then TUPLE1 */
	ck_assert(contains(buf + off, size, "J\x70\x11\x01\x00\x85"));
	off = record(buf, len, "big/data/0", &size);
	ck_assert_int_eq(off % 64, 0);
	ck_assert_mem_eq(buf + off, big, sizeof(big));
	ck_assert_int_eq(adump_pt_check(path, msg, sizeof(msg)), 0);
	free(buf);

	/* a 0-dim tensor: empty shape and stride tuples */
	snprintf(path, sizeof(path), "%s/s.pt", dir);
	ck_assert_int_eq(adump_pt_write(path, "s", ADUMP_DT_DOUBLE, NULL, 0, &scalar, 8, msg,
					sizeof(msg)), 0);
	buf = t_read_file(path, &len);
	off = record(buf, len, "s/data.pkl", &size);
	ck_assert(contains(buf + off, size, "torch\nDoubleStorage\n"));
	ck_assert(contains(buf + off, size, "K\x00))"));
	free(buf);

	snprintf(path, sizeof(path), "%s/h.pt", dir);
	ck_assert_int_eq(adump_pt_write(path, "h", ADUMP_DT_BF16, d3, 1, half, 6, msg,
					sizeof(msg)), 0);
	buf = t_read_file(path, &len);
	off = record(buf, len, "h/data.pkl", &size);
	ck_assert(contains(buf + off, size, "torch\nBFloat16Storage\n"));
	free(buf);
	ck_assert_str_eq(adump_pt_dtype_name(ADUMP_DT_BF16), "torch.bfloat16");
	ck_assert_str_eq(adump_pt_dtype_name(ADUMP_DT_FLOAT), "torch.float32");
	ck_assert_ptr_null(adump_pt_dtype_name(ADUMP_DT_UINT32));
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_check_refuses_damage)
{
	char *dir = t_tmpdir("pt"), path[512], msg[256];
	float v[16] = { 1 };
	uint64_t dims[1] = { 16 };
	unsigned char *buf;
	size_t len, size;
	long off;
	FILE *f;

	snprintf(path, sizeof(path), "%s/d.pt", dir);
	ck_assert_int_eq(adump_pt_write(path, "d", ADUMP_DT_FLOAT, dims, 1, v, sizeof(v), msg,
					sizeof(msg)), 0);
	buf = t_read_file(path, &len);
	off = record(buf, len, "d/data/0", &size);
	buf[off + 5] ^= 1;
	f = fopen(path, "wb");
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	ck_assert_int_eq(adump_pt_check(path, msg, sizeof(msg)), -ADUMP_ERR_CORRUPT);
	ck_assert_ptr_nonnull(strstr(msg, "CRC"));
	ck_assert_int_eq(truncate(path, (off_t)len - 10), 0);
	ck_assert_int_eq(adump_pt_check(path, msg, sizeof(msg)), -ADUMP_ERR_CORRUPT);
	/* An end record whose comment length does not end the file: refused by the check as
	 * by the reader (verify passed what adump.walk refused). */
	buf[off + 5] ^= 1;
	buf[len - 2] = 7;
	f = fopen(path, "wb");
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	ck_assert_int_eq(adump_pt_check(path, msg, sizeof(msg)), -ADUMP_ERR_CORRUPT);
	free(buf);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_refusals)
{
	char *dir = t_tmpdir("pt"), path[512], msg[256];
	uint32_t v[4] = { 0 };
	uint64_t dims[1] = { 4 };

	snprintf(path, sizeof(path), "%s/r.pt", dir);
	ck_assert_int_eq(adump_pt_write(path, "r", ADUMP_DT_UINT32, dims, 1, v, sizeof(v), msg,
					sizeof(msg)), -ADUMP_ERR_UNSUPPORTED);
	ck_assert_int_eq(adump_pt_write(path, "r", ADUMP_DT_INT32, dims, 1, v, 12, msg,
					sizeof(msg)), -EINVAL);
	ck_assert_int_eq(adump_pt_write(path, "a/b", ADUMP_DT_INT32, dims, 1, v, 16, msg,
					sizeof(msg)), -EINVAL);
	ck_assert_int_eq(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/no/such/dir/r.pt", dir);
	ck_assert_int_eq(adump_pt_write(path, "r", ADUMP_DT_INT32, dims, 1, v, 16, msg,
					sizeof(msg)), -ENOENT);
	t_rmtree(dir);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reader_pt");
	TCase *tc = tcase_create("pt");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_float_tensor);
	tcase_add_test(tc, test_shapes_and_dtypes);
	tcase_add_test(tc, test_check_refuses_damage);
	tcase_add_test(tc, test_refusals);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
