/* SPDX-License-Identifier: Apache-2.0 */
/* adump compare and FFTS+ subtask dumps: the names msaccucmp reads its own way, and the
 * subtask dumps of an op merged along their cut axis into the whole tensor (threads and
 * manual slices, random cuts read through small chunks). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

#include "adump/compare.h"
#include "compare_helpers.h"

/* Names msaccucmp reads its own way: FFTS+ subtasks (timestamp in field 4, the last thread's
 * file compared), manual slices and SGT graph prefixes cut from the op name, a name left with
 * "_lxslice" inside skipped, and a 16-digit rule for the timestamp. */
START_TEST(test_ffts_names)
{
	static const struct {
		const char *side, *file;
		bool is_neg;
	} files[] = {
		/* Threads 2 and 10: 10 is the last (by number; by name 2 would be). */
		{ "my", "Add.ff.1.2.1764590000000050.4.0.10.0", false },
		{ "my", "Add.ff.1.2.1764590000000050.4.0.2.0", true },
		{ "golden", "Add.ff.1.2.1764590000000050.4.0.10.0", false },
		{ "golden", "Add.ff.1.2.1764590000000050.4.0.2.0", false },
		/* Manual slices of "conv": slice 1 is the last. */
		{ "my", "Add.conv_lxslice1.1.2.1764590000000020.4.0.0.0", false },
		{ "my", "Add.conv_lxslice0.1.2.1764590000000020.4.0.0.0", true },
		{ "golden", "Add.conv.1.2.1764590000000020", false },
		/* The SGT graph prefix goes: my relu matches golden relu. */
		{ "my", "Add.partition0_sgt_graph_3_relu.1.2.1764590000000030", false },
		{ "golden", "Add.relu.1.2.1764590000000030", false },
		/* Task type 0 with the subtask fields: the last field is the timestamp, not 16
		 * digits, so 0: this op comes first. */
		{ "my", "Add.zero.1.2.1764590000000090.0.0.0.0", false },
		{ "golden", "Add.zero.1.2.1764590000000090.0.0.0.0", false },
		{ "my", "Add.norm.1.2.1764590000000010", false },
		{ "golden", "Add.norm.1.2.1764590000000010", false },
		/* "_lxslice" not at the end: skipped on both sides. */
		{ "my", "Add.a_lxslice0_b.1.2.1764590000000040", false },
		{ "golden", "Add.a_lxslice0_b.1.2.1764590000000040", false },
	};
	static const char *const order[] = { "zero", "norm", "conv", "relu", "ff" };
	uint64_t rng = t_seed() + 9, d6[1] = { 6 };
	float *a = randf(6, &rng, 4), *neg = malloc(6 * sizeof(float));
	const float *one[1] = { a }, *negs[1] = { neg };
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare_summary s;
	struct adump_compare *c;
	char id[64];
	int r;

	for (int i = 0; i < 6; i++)
		neg[i] = -a[i];
	dir = t_tmpdir("compare");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const float *const *out = files[i].is_neg ? negs : one;

		file_name = files[i].file;
		dump_write(files[i].side, "x", 0, 1, one, d6, 1, out, d6, 1);
	}
	file_name = NULL;
	c = run_compare(&cfg);
	adump_compare_summary_get(c, &s);
	ck_assert_uint_eq(s.op_count, 5);
	ck_assert_uint_eq(s.matched_count, 5);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		snprintf(id, sizeof(id), "%s:output:0", order[i]);
		r = find_row(c, id);
		ck_assert_msg(r >= 0, "no row %s", id);
		ck_assert_uint_eq(adump_compare_row(c, (uint64_t)r)->index, i);
		ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "1.000000");
	}
	adump_compare_close(c);
	free(a);
	free(neg);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* One dump file <dir>/<side>/<file> ("Conv2D.<op name>..."): float32 tensors (@in_count
 * inputs, then outputs), tensor i of rank @rank[i] with dims @dims[i] and values @data[i];
 * @attr, when set, is attr[0]'s value (an FFTS+ cut as JSON). */
static void ffts_write(const char *side, const char *file, uint32_t in_count, uint32_t count,
		       const uint32_t *rank, const uint64_t (*dims)[4], const float *const *data,
		       const char *attr)
{
	char op_name[64];
	struct adump_attr at = { .name = "ffts", .value = attr };
	struct adump_tensor t[8];
	char path[4096];
	size_t len;
	void *buf;
	FILE *f;

	for (uint32_t i = 0; i < count; i++) {
		uint64_t n = 1;

		for (uint32_t d = 0; d < rank[i]; d++)
			n *= dims[i][d];
		t[i] = rt_tensor(i < in_count ? ADUMP_TENSOR_INPUT : ADUMP_TENSOR_OUTPUT,
				 ADUMP_DT_FLOAT, rank[i], dims[i], n * 4);
	}
	/* The header's op name: the file's, "_hdr" added to tell them apart. */
	snprintf(op_name, sizeof(op_name), "%.*s_hdr", (int)strcspn(file + 7, "."), file + 7);
	struct adump_op op = { .op_type = "Conv2D", .op_name = op_name, .task_id = 1,
			       .stream_id = 2, .timestamp_us = 1, .tensor_count = count,
			       .tensors = t, .attr_count = attr ? 1 : 0, .attrs = &at };

	buf = rt_dump_mem(&op, (const void *const *)data, &len);
	snprintf(path, sizeof(path), "%s/%s", dir, side);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, side, file);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

/* x[:, from:from+n, :] of x, a [a, b, c] array. */
static float *cut_axis1(const float *x, uint64_t a, uint64_t b, uint64_t c, uint64_t from,
			uint64_t n)
{
	float *y = malloc(a * n * c * sizeof(float));

	ck_assert_ptr_nonnull(y);
	for (uint64_t i = 0; i < a; i++)
		memcpy(y + i * n * c, x + (i * b + from) * c, n * c * sizeof(float));
	return y;
}

/* FFTS+ subtask dumps merged as msaccucmp merges them, against a ground truth dumped whole:
 * manual slices cut along axis 1 (each slice's shape from its own header) and automatic
 * threads cut unevenly along axis 0 (shapes from output_tensor_slice, the headers saying
 * otherwise), an output without a cut taken from the first subtask, and a cut that names no
 * axis (the latest subtask compared, named by its header as any dump with attributes). A
 * subtask whose bytes do not fill its slice's shape gives the op a message instead of rows.
 * msaccucmp (msprobe 2ee62ed6) gave the same rows and values on these files. */
START_TEST(test_ffts_merge)
{
	static const char manual_attr[] =
		"{\"threadMode\": false, \"slice_instance_num\": 2, "
		"\"outputCutList\": [[1, 2, 1], [1, 1]]}";
	static const char auto_attr[] =
		"{\"threadMode\": true, \"slice_instance_num\": 3, \"outputCutList\": [[3, 1]], "
		"\"output_tensor_slice\": ["
		"[[{\"lower\": 0, \"higher\": 2}, {\"lower\": 0, \"higher\": 4}]], "
		"[[{\"lower\": 2, \"higher\": 3}, {\"lower\": 0, \"higher\": 4}]], "
		"[[{\"lower\": 3, \"higher\": 6}, {\"lower\": 0, \"higher\": 4}]]]}";
	static const char no_cut_attr[] =
		"{\"threadMode\": false, \"slice_instance_num\": 2, \"outputCutList\": [[1, 1]]}";
	uint64_t rng = t_seed() + 11;
	float *x = randf(6, &rng, 4), *full = randf(4 * 6 * 5, &rng, 4), *small = randf(4, &rng, 4);
	float *grid = randf(6 * 4, &rng, 4), *other = randf(6 * 4, &rng, 4);
	float *slice[2] = { cut_axis1(full, 4, 6, 5, 0, 3), cut_axis1(full, 4, 6, 5, 3, 3) };
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	struct adump_compare *c;
	int r;

	dir = t_tmpdir("compare");
	/* Manual: conv's output 0 [4, 6, 5] in two slices [4, 3, 5]; output 1 not cut. */
	{
		static const uint32_t rank[3] = { 1, 3, 2 };
		static const uint64_t whole[3][4] = { { 6 }, { 4, 6, 5 }, { 2, 2 } };
		static const uint64_t part[3][4] = { { 6 }, { 4, 3, 5 }, { 2, 2 } };
		const float *g[3] = { x, full, small }, *m0[3] = { x, slice[0], small },
			    *m1[3] = { x, slice[1], grid };

		ffts_write("golden", "Conv2D.conv.1.2.1764590000000010", 1, 3, rank, whole, g, NULL);
		/* Slice 1 written first and with an earlier timestamp: order is by slice. */
		ffts_write("my", "Conv2D.conv_lxslice1.1.2.1764590000000009.4.0.0.0", 1, 3, rank,
			   part, m1, manual_attr);
		ffts_write("my", "Conv2D.conv_lxslice0.1.2.1764590000000010.4.0.0.0", 1, 3, rank,
			   part, m0, manual_attr);
	}
	/* Automatic: ff's output [6, 4] in threads of 2, 1 and 3 rows, their headers flat. */
	{
		static const uint32_t rank[2] = { 1, 1 };
		static const uint64_t whole_dims[2][4] = { { 6 }, { 6, 4 } };
		static const uint32_t whole_rank[2] = { 1, 2 };
		uint64_t dims[3][2][4] = { { { 6 }, { 8 } }, { { 6 }, { 4 } }, { { 6 }, { 12 } } };
		const float *g[2] = { x, grid };
		char name[128];

		ffts_write("golden", "Conv2D.ff.1.2.1764590000000020", 1, 2, whole_rank, whole_dims,
			   g, NULL);
		for (int k = 0, row = 0; k < 3; row += (int)dims[k][1][0] / 4, k++) {
			const float *m[2] = { x, grid + row * 4 };

			snprintf(name, sizeof(name), "Conv2D.ff.1.2.17645900000000%d.4.0.%d.0", 20 + k,
				 k);
			ffts_write("my", name, 1, 2, rank, dims[k], m, auto_attr);
		}
	}
	/* No cut axis: the latest subtask (thread 0 here) is compared. */
	{
		static const uint32_t rank[2] = { 1, 2 };
		static const uint64_t d[2][4] = { { 6 }, { 6, 4 } };
		const float *g[2] = { x, other }, *wrong[2] = { x, grid };

		ffts_write("golden", "Conv2D.nocut.1.2.1764590000000030", 1, 2, rank, d, g, NULL);
		ffts_write("my", "Conv2D.nocut.1.2.1764590000000031.4.0.0.0", 1, 2, rank, d, g,
			   no_cut_attr);
		ffts_write("my", "Conv2D.nocut.1.2.1764590000000030.4.0.1.0", 1, 2, rank, d, wrong,
			   no_cut_attr);
	}
	/* Attributes that are not JSON: the last subtask is compared (msaccucmp fails). */
	{
		static const uint32_t rank[2] = { 1, 2 };
		static const uint64_t d[2][4] = { { 6 }, { 6, 4 } };
		const float *g[2] = { x, other }, *wrong[2] = { x, grid };

		ffts_write("golden", "Conv2D.junk.1.2.1764590000000050", 1, 2, rank, d, g, NULL);
		ffts_write("my", "Conv2D.junk.1.2.1764590000000051.4.0.0.0", 1, 2, rank, d, wrong,
			   "{not json");
		ffts_write("my", "Conv2D.junk.1.2.1764590000000050.4.0.1.0", 1, 2, rank, d, g,
			   "{not json");
	}
	/* A thread whose bytes do not fill its slice: 5 floats for [2, 4]. */
	{
		static const uint32_t rank[2] = { 1, 1 };
		static const uint64_t d[2][4] = { { 6 }, { 24 } }, short_d[2][4] = { { 6 }, { 5 } };
		static const uint32_t g_rank[2] = { 1, 2 };
		static const uint64_t g_d[2][4] = { { 6 }, { 6, 4 } };
		const float *g[2] = { x, grid };

		ffts_write("golden", "Conv2D.bad.1.2.1764590000000040", 1, 2, g_rank, g_d, g, NULL);
		ffts_write("my", "Conv2D.bad.1.2.1764590000000040.4.0.0.0", 1, 2, rank, short_d, g,
			   auto_attr);
		ffts_write("my", "Conv2D.bad.1.2.1764590000000041.4.0.1.0", 1, 2, rank, d, g,
			   auto_attr);
	}
	c = run_compare(&cfg);
	r = find_row(c, "conv:output:0");
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "1.000000");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	ck_assert_str_eq(cell(c, r, "Shape"), "[4,6,5]");
	/* Not cut: the first slice's output, which is the ground truth's. */
	r = find_row(c, "conv:output:1");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	r = find_row(c, "conv:input:0");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	r = find_row(c, "ff:output:0");
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "1.000000");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	ck_assert_str_eq(cell(c, r, "Shape"), "[6,4]");
	/* Not merged, and with attributes: named by its header, as msaccucmp names it. */
	ck_assert_int_lt(find_row(c, "nocut:output:0"), 0);
	r = find_row(c, "nocut_hdr:output:0");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	ck_assert_str_eq(cell(c, r, "NPUDump"), "nocut_hdr");
	ck_assert_str_eq(cell(c, r, "GroundTruth"), "nocut_hdr");
	/* One name per op (issue 30): the row's op name is the one its cells show. */
	ck_assert_str_eq(adump_compare_row(c, (uint64_t)r)->op_name, "nocut_hdr");
	r = find_row(c, "junk_hdr:output:0");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.000000");
	r = find_row(c, "bad:output:0");
	ck_assert_int_lt(r, 0);
	for (r = 0; r < (int)adump_compare_row_count(c); r++)
		if (!strcmp(adump_compare_row(c, (uint64_t)r)->op_name, "bad"))
			break;
	ck_assert_int_lt(r, (int)adump_compare_row_count(c));
	ck_assert_str_eq(cell(c, r, "CosineSimilarity"), "NaN");
	ck_assert_ptr_nonnull(strstr(cell(c, r, "CompareFailReason"), "doesn't match the shape"));
	adump_compare_close(c);

	/* A wrong merge would not be found equal: thread 1 changed by 0.5 in one element. */
	{
		static const uint32_t rank[2] = { 1, 1 };
		uint64_t d[2][4] = { { 6 }, { 4 } };
		float row[4];
		const float *m[2] = { x, row };

		memcpy(row, grid + 2 * 4, sizeof(row));
		row[3] += 0.5f;
		ffts_write("my", "Conv2D.ff.1.2.1764590000000021.4.0.1.0", 1, 2, rank, d, m,
			   auto_attr);
	}
	c = run_compare(&cfg);
	r = find_row(c, "ff:output:0");
	ck_assert_str_eq(cell(c, r, "MaxAbsoluteError"), "0.500000");
	adump_compare_close(c);
	free(x);
	free(full);
	free(small);
	free(grid);
	free(other);
	free(slice[0]);
	free(slice[1]);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* Random cuts: a tensor of rank 1-4 split into 2-4 manual slices along a random axis, compared
 * with the whole through small read chunks (7 elements, so reads end inside a slice's run):
 * the merge gathers exactly the whole tensor, element for element. The last round cuts a
 * [20000, 4] tensor along its last axis: runs of one element from slices of 80,000 bytes,
 * more than one read-ahead window holds. */
START_TEST(test_ffts_merge_random)
{
	uint64_t rng = t_seed() + 12;
	struct adump_compare_config cfg = ADUMP_COMPARE_CONFIG_INIT;
	char name[128], attr[256];

	cfg.chunk_elements = 7;
	for (int round = 0; round < 25; round++) {
		uint32_t rank[2] = { 1, 1 + (uint32_t)(t_rand(&rng) % 4) }, parts = 2 + t_rand(&rng) % 3;
		uint64_t whole[2][4] = { { 1 } }, part[2][4] = { { 1 } }, n = 1, outer = 1, inner = 1;
		uint32_t axis = (uint32_t)(t_rand(&rng) % rank[1]);
		uint64_t along[4], at = 0;
		bool is_long = round == 24;
		size_t len = 0;
		float *full, one = 1;
		struct adump_compare *c;
		int r;

		if (is_long) {
			rank[1] = 2;
			axis = 1;
			parts = 4;
		}
		for (uint32_t d = 0; d < rank[1]; d++) {
			whole[1][d] = is_long ? 20000 : 1 + t_rand(&rng) % 5;
			if (d < axis)
				outer *= whole[1][d];
			if (d > axis)
				inner *= whole[1][d];
		}
		whole[1][axis] = 0;
		for (uint32_t k = 0; k < parts; k++)
			whole[1][axis] += along[k] = is_long ? 1 : 1 + t_rand(&rng) % 4;
		for (uint32_t d = 0; d < rank[1]; d++)
			n *= whole[1][d];
		full = randf(n, &rng, 4);
		dir = t_tmpdir("compare");
		len += (size_t)snprintf(attr, sizeof(attr), "{\"threadMode\": false, "
					"\"slice_instance_num\": %u, \"outputCutList\": [[", parts);
		for (uint32_t d = 0; d < rank[1]; d++)
			len += (size_t)snprintf(attr + len, sizeof(attr) - len, "%s%d", d ? ", " : "",
						d == axis ? (int)parts : 1);
		snprintf(attr + len, sizeof(attr) - len, "]]}");
		{
			const float *g[2] = { &one, full };

			ffts_write("golden", "Conv2D.cut.1.2.1764590000000010", 1, 2, rank, whole, g,
				   NULL);
		}
		for (uint32_t k = 0; k < parts; k++) {
			float *slice = malloc(outer * along[k] * inner * sizeof(float));
			const float *m[2] = { &one, slice };

			ck_assert_ptr_nonnull(slice);
			for (uint64_t o = 0; o < outer; o++)
				memcpy(slice + o * along[k] * inner,
				       full + (o * whole[1][axis] + at) * inner,
				       along[k] * inner * sizeof(float));
			memcpy(part, whole, sizeof(part));
			part[1][axis] = along[k];
			snprintf(name, sizeof(name), "Conv2D.cut_lxslice%u.1.2.1764590000000010.4.0.0.0",
				 k);
			ffts_write("my", name, 1, 2, rank, part, m, attr);
			at += along[k];
			free(slice);
		}
		c = run_compare(&cfg);
		r = find_row(c, "cut:output:0");
		ck_assert_msg(!strcmp(cell(c, r, "MaxAbsoluteError"), "0.000000"),
			      "round %d: rank %u, axis %u, %u parts: max abs %s", round, rank[1], axis,
			      parts, cell(c, r, "MaxAbsoluteError"));
		adump_compare_close(c);
		free(full);
		t_rmtree(dir);
		free(dir);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("compare_ffts");
	TCase *td = tcase_create("dirs");

	tcase_set_timeout(td, 60);
	tcase_add_test(td, test_ffts_names);
	tcase_add_test(td, test_ffts_merge);
	tcase_add_test(td, test_ffts_merge_random);
	suite_add_tcase(s, td);
	return t_run_suite(s);
}
