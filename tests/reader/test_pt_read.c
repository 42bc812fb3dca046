/* SPDX-License-Identifier: Apache-2.0 */
/* The .pt reader (reader/pt_read.c): files adump_pt_write() makes read back with their dtype,
 * shape and bytes; zips built here byte by byte cover what torch writes and adump does not
 * (zip64 end records and extra fields, _rebuild_parameter, memo references, a storage
 * offset) and what the reader refuses with a message naming the file (compressed records,
 * other pickles, unknown storage types, strided views, storages too small). Every cut of a
 * file and every flipped byte is refused or read without a crash; with CRCs checked, a
 * flipped byte in a record is always refused. Files torch 1.13 itself saves are read by
 * tests/python/test_msprobe_read.py. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adump/export.h"
#include "adump/reader.h"
#include "adump/types.h"
#include "reader_helpers.h"

/* ---- a zip built by hand -------------------------------------------------------------------- */

struct buf {
	unsigned char p[8192];
	size_t len;
};

static void put(struct buf *b, const void *d, size_t n)
{
	ck_assert_uint_le(b->len + n, sizeof(b->p));
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void put_le(struct buf *b, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		b->p[b->len++] = (unsigned char)(v >> (8 * i));
}

static void put_str(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
	}
	return ~c;
}

struct rec {
	const char *name;
	const void *data;
	size_t len;
	unsigned method;
};

/* A zip of @n records as torch writes one: local headers with sizes 0 behind a data
 * descriptor flag (bit 3), sizes in the central directory; @zip64: sizes and offsets in
 * zip64 extra fields, and zip64 end records with the classic one saturated. */
static void zip_make(struct buf *z, const struct rec *r, unsigned n, bool zip64)
{
	uint64_t local[8], cd_at, cd_len, eocd64_at;

	z->len = 0;
	for (unsigned i = 0; i < n; i++) {
		local[i] = z->len;
		put_le(z, 0x04034b50, 4);
		put_le(z, 20, 2);
		put_le(z, 0x0808, 2);
		put_le(z, r[i].method, 2);
		put_le(z, 0, 4);                /* time, date */
		put_le(z, 0, 4);                /* crc: in the directory */
		put_le(z, 0, 4);
		put_le(z, 0, 4);
		put_le(z, strlen(r[i].name), 2);
		put_le(z, 0, 2);
		put_str(z, r[i].name);
		put(z, r[i].data, r[i].len);
	}
	cd_at = z->len;
	for (unsigned i = 0; i < n; i++) {
		put_le(z, 0x02014b50, 4);
		put_le(z, 45, 2);
		put_le(z, 45, 2);
		put_le(z, 0x0808, 2);
		put_le(z, r[i].method, 2);
		put_le(z, 0, 4);
		put_le(z, crc32_of(r[i].data, r[i].len), 4);
		put_le(z, zip64 ? 0xffffffffu : r[i].len, 4);
		put_le(z, zip64 ? 0xffffffffu : r[i].len, 4);
		put_le(z, strlen(r[i].name), 2);
		put_le(z, zip64 ? 28 : 0, 2);
		put_le(z, 0, 2);
		put_le(z, 0, 2);
		put_le(z, 0, 2);
		put_le(z, 0, 4);
		put_le(z, zip64 ? 0xffffffffu : local[i], 4);
		put_str(z, r[i].name);
		if (zip64) {
			put_le(z, 1, 2);
			put_le(z, 24, 2);
			put_le(z, r[i].len, 8);
			put_le(z, r[i].len, 8);
			put_le(z, local[i], 8);
		}
	}
	cd_len = z->len - cd_at;
	if (zip64) {
		eocd64_at = z->len;
		put_le(z, 0x06064b50, 4);
		put_le(z, 44, 8);
		put_le(z, 45, 2);
		put_le(z, 45, 2);
		put_le(z, 0, 4);
		put_le(z, 0, 4);
		put_le(z, n, 8);
		put_le(z, n, 8);
		put_le(z, cd_len, 8);
		put_le(z, cd_at, 8);
		put_le(z, 0x07064b50, 4);
		put_le(z, 0, 4);
		put_le(z, eocd64_at, 8);
		put_le(z, 1, 4);
	}
	put_le(z, 0x06054b50, 4);
	put_le(z, 0, 2);
	put_le(z, 0, 2);
	put_le(z, zip64 ? 0xffff : n, 2);
	put_le(z, zip64 ? 0xffff : n, 2);
	put_le(z, zip64 ? 0xffffffffu : cd_len, 4);
	put_le(z, zip64 ? 0xffffffffu : cd_at, 4);
	put_le(z, 0, 2);
}

/* ---- pickles ---------------------------------------------------------------------------------- */

static void pk_unicode(struct buf *b, const char *s)
{
	put_str(b, "X");
	put_le(b, strlen(s), 4);
	put_str(b, s);
}

/* _rebuild_tensor_v2(('storage', torch.<storage>, '0', 'cpu', @numel), @offset, (2, 3),
 * (@s0, @s1), False, OrderedDict()), memoised as torch's pickler does. */
static void pk_tensor_call(struct buf *b, const char *storage, unsigned numel, unsigned offset,
			   unsigned s0, unsigned s1)
{
	put_str(b, "ctorch._utils\n_rebuild_tensor_v2\nq\x01((");
	pk_unicode(b, "storage");
	put_str(b, "q\x02" "ctorch\n");
	put_str(b, storage);
	put_str(b, "\nq\x03");
	pk_unicode(b, "0");
	pk_unicode(b, "cpu");
	put_str(b, "M");
	put_le(b, numel, 2);
	put_str(b, "tq\x04QK");
	put_le(b, offset, 1);
	put_str(b, "K\x02K\x03\x86K");
	put_le(b, s0, 1);
	put_str(b, "K");
	put_le(b, s1, 1);
	put_str(b, "\x86\x89\x63\x63ollections\nOrderedDict\nq\x05)Rq\x06tq\x07R");
}

static void pk_tensor(struct buf *b, const char *storage, unsigned numel, unsigned offset,
		      unsigned s0, unsigned s1)
{
	b->len = 0;
	put_str(b, "\x80\x02");
	pk_tensor_call(b, storage, numel, offset, s0, s1);
	put_str(b, ".");
}

/* torch.nn.Parameter: _rebuild_parameter(tensor, True, OrderedDict()), the OrderedDict
 * global fetched from the memo (BINGET), as a second reference is. */
static void pk_parameter(struct buf *b)
{
	b->len = 0;
	put_str(b, "\x80\x02" "ctorch._utils\n_rebuild_parameter\nq\x0b(");
	pk_tensor_call(b, "FloatStorage", 8, 2, 3, 1);
	put_str(b, "\x88h\x05)Rq\x08tq\x09R.");
}

static char *write_tmp(const char *dir, const char *name, const void *p, size_t n)
{
	char *path;
	FILE *f;

	ck_assert_int_ge(asprintf(&path, "%s/%s", dir, name), 0);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	fclose(f);
	return path;
}

/* A tensor .pt of @pickle over @data (@len bytes) as torch lays it out. */
static char *pt_make(const char *dir, const char *name, const struct buf *pickle,
		     const void *data, size_t len, bool zip64, unsigned method)
{
	static struct buf z;
	struct rec r[3] = {
		{ "a/data.pkl", pickle->p, pickle->len, method },
		{ "a/data/0", data, len, 0 },
		{ "a/version", "3\n", 2, 0 },
	};

	zip_make(&z, r, 3, zip64);
	return write_tmp(dir, name, z.p, z.len);
}

static void expect_refused(const char *path, int code, const char *needle)
{
	struct adump_pt_info info;
	char msg[1024];

	ck_assert_int_eq(adump_pt_read(path, false, &info, msg, sizeof(msg)), code);
	ck_assert_msg(strstr(msg, path) != NULL, "message names the file: %s", msg);
	ck_assert_msg(strstr(msg, needle) != NULL, "message says \"%s\": %s", needle, msg);
}

/* ---- tests -------------------------------------------------------------------------------- */

START_TEST(test_adump_written)
{
	char *dir = t_tmpdir("ptr"), path[512], msg[1024];
	static const struct {
		int32_t dtype;
		uint32_t elem;
	} kinds[] = { { ADUMP_DT_FLOAT, 4 },   { ADUMP_DT_FLOAT16, 2 }, { ADUMP_DT_BF16, 2 },
		      { ADUMP_DT_DOUBLE, 8 },  { ADUMP_DT_INT8, 1 },    { ADUMP_DT_UINT8, 1 },
		      { ADUMP_DT_INT16, 2 },   { ADUMP_DT_INT32, 4 },   { ADUMP_DT_INT64, 8 },
		      { ADUMP_DT_BOOL, 1 },    { ADUMP_DT_COMPLEX64, 8 },
		      { ADUMP_DT_COMPLEX128, 16 } };
	unsigned char data[2 * 3 * 16];
	uint64_t dims[2] = { 2, 3 };

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + 1) & 0x7f;
	for (size_t i = 0; i < sizeof(data); i++)
		if (i % 16 == 0)
			data[i] = 1;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct adump_pt_info info;
		unsigned char *file;
		size_t len;
		uint32_t n = kinds[k].dtype == ADUMP_DT_BOOL ? 6 : 6 * kinds[k].elem;
		unsigned char b[6];

		snprintf(path, sizeof(path), "%s/t%zu.pt", dir, k);
		if (kinds[k].dtype == ADUMP_DT_BOOL) {
			for (int i = 0; i < 6; i++)
				b[i] = (unsigned char)(i & 1);
		}
		ck_assert_int_eq(adump_pt_write(path, "t", kinds[k].dtype, dims, 2,
						kinds[k].dtype == ADUMP_DT_BOOL ? b : data, n, msg,
						sizeof(msg)), 0);
		ck_assert_msg(adump_pt_read(path, true, &info, msg, sizeof(msg)) == 0, "%s", msg);
		ck_assert_int_eq(info.dtype, kinds[k].dtype);
		ck_assert_uint_eq(info.dim_count, 2);
		ck_assert_uint_eq(info.dims[0], 2);
		ck_assert_uint_eq(info.dims[1], 3);
		ck_assert_uint_eq(info.element_count, 6);
		ck_assert_uint_eq(info.element_bytes, kinds[k].elem);
		ck_assert_uint_eq(info.bytes, n);
		ck_assert(!info.is_parameter);
		file = t_read_file(path, &len);
		ck_assert_uint_eq(info.file_bytes, len);
		ck_assert_uint_le(info.offset + info.bytes, len);
		ck_assert_mem_eq(file + info.offset, kinds[k].dtype == ADUMP_DT_BOOL ? b : data, n);
		free(file);
	}
	/* a scalar, and a tensor with no elements */
	{
		struct adump_pt_info info;
		double v = 2.5;
		uint64_t zero[2] = { 0, 4 };

		snprintf(path, sizeof(path), "%s/s.pt", dir);
		ck_assert_int_eq(adump_pt_write(path, "s", ADUMP_DT_DOUBLE, NULL, 0, &v, 8, msg,
						sizeof(msg)), 0);
		ck_assert_int_eq(adump_pt_read(path, true, &info, msg, sizeof(msg)), 0);
		ck_assert_uint_eq(info.dim_count, 0);
		ck_assert_uint_eq(info.bytes, 8);
		snprintf(path, sizeof(path), "%s/e.pt", dir);
		ck_assert_int_eq(adump_pt_write(path, "e", ADUMP_DT_FLOAT, zero, 2, NULL, 0, msg,
						sizeof(msg)), 0);
		ck_assert_msg(adump_pt_read(path, true, &info, msg, sizeof(msg)) == 0, "%s", msg);
		ck_assert_uint_eq(info.element_count, 0);
		ck_assert_uint_eq(info.bytes, 0);
	}
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* Every cut of a file is refused; every flipped byte is refused or read, never a crash; a
 * flipped byte inside a record is refused once CRCs are checked. */
START_TEST(test_cut_and_flipped)
{
	char *dir = t_tmpdir("ptr"), path[512], msg[1024];
	float v[6] = { 1, 2, 3, 4, 5, 6 };
	uint64_t dims[2] = { 2, 3 };
	struct adump_pt_info info, good;
	unsigned char *file;
	size_t len;

	snprintf(path, sizeof(path), "%s/t.pt", dir);
	ck_assert_int_eq(adump_pt_write(path, "t", ADUMP_DT_FLOAT, dims, 2, v, sizeof(v), msg,
					sizeof(msg)), 0);
	ck_assert_int_eq(adump_pt_read(path, false, &good, msg, sizeof(msg)), 0);
	file = t_read_file(path, &len);
	for (size_t cut = 0; cut < len; cut++) {
		char *p = write_tmp(dir, "cut.pt", file, cut);

		msg[0] = '\0';
		ck_assert_int_lt(adump_pt_read(p, false, &info, msg, sizeof(msg)), 0);
		ck_assert_msg(strstr(msg, p) != NULL, "cut at %zu: %s", cut, msg);
		free(p);
	}
	for (size_t at = 0; at < len; at++) {
		char *p;
		int ret;

		file[at] ^= 0x5a;
		p = write_tmp(dir, "flip.pt", file, len);
		(void)adump_pt_read(p, false, &info, msg, sizeof(msg));
		ret = adump_pt_read(p, true, &info, msg, sizeof(msg));
		/* the data record's bytes: CRC-32 must catch the change */
		if (at >= good.offset && at < good.offset + good.bytes)
			ck_assert_msg(ret == -ADUMP_ERR_CORRUPT && strstr(msg, "CRC"),
				      "flip at %zu: %d %s", at, ret, msg);
		file[at] ^= 0x5a;
		free(p);
	}
	free(file);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_torch_variants)
{
	char *dir = t_tmpdir("ptr"), msg[1024], *p;
	static struct buf pk;
	float v[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	struct adump_pt_info info;

	/* zip64 records, a Parameter, memo references, storage offset 2 */
	pk_parameter(&pk);
	p = pt_make(dir, "param.pt", &pk, v, sizeof(v), true, 0);
	ck_assert_msg(adump_pt_read(p, true, &info, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert(info.is_parameter);
	ck_assert(info.requires_grad);
	ck_assert_int_eq(info.dtype, ADUMP_DT_FLOAT);
	ck_assert_uint_eq(info.bytes, 24);
	{
		size_t len;
		unsigned char *file = t_read_file(p, &len);

		ck_assert_mem_eq(file + info.offset, v + 2, 24);
		free(file);
	}
	free(p);
	/* the same without zip64 */
	pk_tensor(&pk, "FloatStorage", 8, 0, 3, 1);
	p = pt_make(dir, "plain.pt", &pk, v, sizeof(v), false, 0);
	ck_assert_msg(adump_pt_read(p, true, &info, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert(!info.is_parameter);
	free(p);
	/* a transposed view: refused, not read wrongly */
	pk_tensor(&pk, "FloatStorage", 6, 0, 1, 2);
	p = pt_make(dir, "strided.pt", &pk, v, 24, false, 0);
	expect_refused(p, -ADUMP_ERR_UNSUPPORTED, "not contiguous");
	free(p);
	/* a storage type the reader does not know */
	pk_tensor(&pk, "QInt8Storage", 6, 0, 3, 1);
	p = pt_make(dir, "qint.pt", &pk, v, 6, false, 0);
	expect_refused(p, -ADUMP_ERR_UNSUPPORTED, "torch.QInt8Storage");
	free(p);
	/* a storage smaller than the tensor */
	pk_tensor(&pk, "FloatStorage", 4, 0, 3, 1);
	p = pt_make(dir, "small.pt", &pk, v, 16, false, 0);
	expect_refused(p, -ADUMP_ERR_CORRUPT, "storage record");
	free(p);
	/* a compressed record */
	pk_tensor(&pk, "FloatStorage", 6, 0, 3, 1);
	p = pt_make(dir, "deflated.pt", &pk, v, 24, false, 8);
	expect_refused(p, -ADUMP_ERR_UNSUPPORTED, "compressed");
	free(p);
	/* another object: a dict */
	pk.len = 0;
	put_str(&pk, "\x80\x02}q\x0b.");
	p = pt_make(dir, "dict.pt", &pk, v, 24, false, 0);
	expect_refused(p, -ADUMP_ERR_UNSUPPORTED, "one tensor");
	free(p);
	/* an opcode the reader does not take (a pickle from elsewhere) */
	pk.len = 0;
	put_str(&pk, "\x80\x02I1\n.");
	p = pt_make(dir, "opcode.pt", &pk, v, 24, false, 0);
	expect_refused(p, -ADUMP_ERR_UNSUPPORTED, "opcode 0x49");
	free(p);
	/* not a zip */
	p = write_tmp(dir, "text.pt", "hello, this is not a zip file at all", 36);
	expect_refused(p, -ADUMP_ERR_CORRUPT, "no zip end record");
	free(p);
	/* a missing file */
	ck_assert_int_eq(adump_pt_read("/nonexistent/x.pt", false, &info, msg, sizeof(msg)),
			 -ENOENT);
	ck_assert_ptr_nonnull(strstr(msg, "/nonexistent/x.pt"));
	t_rmtree(dir);
	free(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pt_read");
	TCase *tc = tcase_create("pt_read");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_adump_written);
	tcase_add_test(tc, test_cut_and_flipped);
	tcase_add_test(tc, test_torch_variants);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return t_run_suite(suite());
}
