/* SPDX-License-Identifier: Apache-2.0 */
/* The reader on real engine output: `adump bench` captures Add ops on several streams, then
 * `adump verify` must pass and `adump convert` must produce, for every op, arrays with
 * out == self + alpha * other, alpha derived from the bench's seed and the op (the files carry
 * no attributes: ordinary CANN dumps have none). */
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../../bench/bench.h"
#include "reader_helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif

static char *dir;

/* The workload `adump bench` runs for the options below. */
#define BENCH_STREAMS 3
#define BENCH_OPS 12
static struct adump_bench_plan plan;

/* The adump command with these arguments; stdout and stderr go to dir/stdout, dir/stderr. */
#define run(...) t_run_tool(ADUMP_TOOL, dir, __VA_ARGS__)

static char **dumps;
static size_t dump_count;

static int collect(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_F) {
		dumps = realloc(dumps, (dump_count + 1) * sizeof(*dumps));
		dumps[dump_count++] = strdup(path);
	}
	return 0;
}

struct npy {
	char *bytes;
	size_t len;
	char descr[8];
	size_t data_offset;
};

static void npy_load(struct npy *n, const char *path)
{
	char *d;

	n->bytes = t_read_file(path, &n->len);
	ck_assert_msg(n->bytes != NULL, "%s missing", path);
	ck_assert(n->len >= 10 && !memcmp(n->bytes, "\x93NUMPY\x01\x00", 8));
	n->data_offset = 10 + (size_t)(unsigned char)n->bytes[8] +
			 ((size_t)(unsigned char)n->bytes[9] << 8);
	d = memmem(n->bytes + 10, n->data_offset - 10, "'descr': '", 10);
	ck_assert_ptr_nonnull(d);
	memcpy(n->descr, d + 10, 3);
	n->descr[3] = '\0';
}

static float half(const char *p)
{
	uint16_t h;

	memcpy(&h, p, 2);
	if ((h & 0x7c00) == 0x7c00)
		return (h & 0x3ff) ? NAN : (h & 0x8000) ? -INFINITY : INFINITY;
	if (h & 0x7c00)
		return (float)(ldexp(1.0 + (h & 0x3ff) / 1024.0, ((h >> 10) & 0x1f) - 15) *
			       ((h & 0x8000) ? -1 : 1));
	return (float)(ldexp((h & 0x3ff) / 1024.0, -14) * ((h & 0x8000) ? -1 : 1));
}

/* Check out == self + alpha * other over the three converted arrays of one op. */
static void check_op(const char *out_dir, const char *dump_path)
{
	struct adump_reader *r;
	const struct adump_reader_header *h;
	const char *base = strrchr(dump_path, '/') + 1;
	struct npy self, other, out;
	char path[PATH_MAX * 2];
	double alpha;
	unsigned stream, k;
	struct adump_bench_op op;

	ck_assert_int_eq(adump_reader_create(&r), 0);
	ck_assert_msg(adump_reader_open(r, dump_path) == 0, "%s", adump_reader_error(r));
	h = adump_reader_header(r);
	ck_assert_uint_eq(h->kind_count[ADUMP_TENSOR_INPUT], 2);
	ck_assert_uint_eq(h->kind_count[ADUMP_TENSOR_OUTPUT], 1);
	ck_assert_msg(h->attr_count == 0, "%s: %u attributes in an ordinary dump", dump_path,
		      h->attr_count);
	/* Op i of a range workload runs on stream i % streams as "bench/add_<stream>_<k>". */
	ck_assert_msg(sscanf(h->op_name, "bench/add_%u_%u", &stream, &k) == 2, "%s: op %s",
		      dump_path, h->op_name);
	ck_assert_uint_lt((uint64_t)k * BENCH_STREAMS + stream, plan.op_count);
	adump_bench_op_get(&plan, (uint64_t)k * BENCH_STREAMS + stream, &op);
	ck_assert_str_eq(op.name, h->op_name);
	alpha = op.alpha;

	snprintf(path, sizeof(path), "%s/%s.input.0.npy", out_dir, base);
	npy_load(&self, path);
	snprintf(path, sizeof(path), "%s/%s.input.1.npy", out_dir, base);
	npy_load(&other, path);
	snprintf(path, sizeof(path), "%s/%s.output.0.npy", out_dir, base);
	npy_load(&out, path);
	ck_assert_str_eq(self.descr, out.descr);
	ck_assert_str_eq(other.descr, out.descr);
	size_t data = out.len - out.data_offset;
	ck_assert_uint_eq(self.len - self.data_offset, data);
	ck_assert_uint_eq(other.len - other.data_offset, data);
	ck_assert_uint_eq(data, h->tensors[2].info.bytes);

	/* Count mismatches and assert once: a Check assertion per element is slow. */
	size_t bad = 0;
	const char *s = self.bytes + self.data_offset, *o = other.bytes + other.data_offset,
		   *d = out.bytes + out.data_offset;
	if (!strcmp(out.descr, "<f4")) {
		for (size_t i = 0; i < data / 4; i++) {
			float a, b, c;

			memcpy(&a, s + 4 * i, 4);
			memcpy(&b, o + 4 * i, 4);
			memcpy(&c, d + 4 * i, 4);
			if (c != a + (float)alpha * b)
				bad++;
		}
	} else if (!strcmp(out.descr, "<f2")) {
		for (size_t i = 0; i < data / 2; i++) {
			float expect = half(s + 2 * i) + (float)alpha * half(o + 2 * i);
			float got = half(d + 2 * i);

			if (!(fabsf(got - expect) <= fabsf(expect) / 1024 + 1e-7f ||
			      (isinf(got) && fabsf(expect) >= 65504)))
				bad++;
		}
	} else {
		ck_assert_str_eq(out.descr, "<i4");
		for (size_t i = 0; i < data / 4; i++) {
			uint32_t a, b, c;

			memcpy(&a, s + 4 * i, 4);
			memcpy(&b, o + 4 * i, 4);
			memcpy(&c, d + 4 * i, 4);
			if (c != a + (uint32_t)(int32_t)alpha * b)
				bad++;
		}
	}
	ck_assert_msg(bad == 0, "%s (%s): %zu elements differ from self + %g * other", base,
		      out.descr, bad, alpha);
	free(self.bytes);
	free(other.bytes);
	free(out.bytes);
	adump_reader_destroy(r);
}

START_TEST(test_bench_verify_convert)
{
	char dump_dir[PATH_MAX], out_dir[PATH_MAX];

	dir = t_tmpdir("bench");
	snprintf(dump_dir, sizeof(dump_dir), "%s/dump", dir);
	snprintf(out_dir, sizeof(out_dir), "%s/npy", dir);
	ck_assert_int_eq(mkdir(dump_dir, 0755), 0);
	struct adump_bench_workload w = {
		.profile = ADUMP_BENCH_PROFILE_RANGE, .seed = t_seed() % 1000 + 1,
		.stream_count = BENCH_STREAMS, .ops_per_stream = BENCH_OPS,
		.min_bytes = 1024, .max_bytes = 1 << 20,
	};
	ck_assert_int_eq(adump_bench_plan_make(&w, &plan), 0);
	ck_assert_int_eq(run("bench --streams %d --ops %d --min-size 1K --max-size 1M "
			     "--pool 64M --seed %llu --out %s",
			     BENCH_STREAMS, BENCH_OPS, (unsigned long long)w.seed, dump_dir),
			 0);
	ck_assert_int_eq(run("verify --quiet %s", dump_dir), 0);
	ck_assert_int_eq(run("convert --quiet -r -d %s -out %s", dump_dir, out_dir), 0);
	dump_count = 0;
	nftw(dump_dir, collect, 16, FTW_PHYS);
	ck_assert_uint_eq(dump_count, 36);
	ck_assert_uint_eq(t_count_files(out_dir, ".npy"), 3 * 36);
	for (size_t i = 0; i < dump_count; i++) {
		check_op(out_dir, dumps[i]);
		free(dumps[i]);
	}
	free(dumps);
	adump_bench_plan_free(&plan);
	t_rmtree(dir);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reader_bench");
	TCase *tc = tcase_create("bench");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_bench_verify_convert);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
