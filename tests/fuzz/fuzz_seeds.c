/* SPDX-License-Identifier: Apache-2.0 */
/* Writes the fuzzers' seed corpus: <dir>/reader holds small valid dumps of several dtypes and
 * shapes plus damaged copies; <dir>/asm holds chunk scripts (see fuzz_asm.c) that assemble
 * such a dump in order, shuffled, with a duplicate and with a missing piece; <dir>/lz4 holds
 * those dumps as LZ4 frames (small blocks, so several per frame) and damaged frames;
 * <dir>/packed holds packed captures (see fuzz_packed.c): an index, a NUL, a segment;
 * <dir>/msprobe holds msprobe rank directories (see fuzz_msprobe.c): dump.json, a NUL, a .pt;
 * fuzz_acl_seeds.c writes <dir>/acl_config and <dir>/acl_exception. */
#include <errno.h>
#include <isa-l/crc.h>
#include <lz4frame.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adump/adump.h"
#include "adump/export.h"

int fuzz_acl_seeds_write(const char *corpus);

static int write_seed(const char *dir, const char *name, const void *buf, size_t len)
{
	char path[4096 + 128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

/* A dump of @op in memory: header then payloads filled with a byte pattern. */
static unsigned char *make_dump(const struct adump_op *op, size_t *len)
{
	long hdr = adump_dump_header_pack(op, NULL, 0);
	size_t total;
	unsigned char *buf;

	if (hdr < 0)
		return NULL;
	total = (size_t)hdr;
	for (uint32_t i = 0; i < op->tensor_count; i++)
		total += op->tensors[i].bytes;
	buf = malloc(total);
	if (!buf || adump_dump_header_pack(op, buf, total) != hdr)
		exit(1);
	for (size_t i = (size_t)hdr; i < total; i++)
		buf[i] = (unsigned char)(i * 37 + 11);
	*len = total;
	return buf;
}

/* @dump as an LZ4 frame like adump's (content size and checksum recorded), or NULL. */
static unsigned char *make_frame(const unsigned char *dump, size_t len, size_t *frame_len)
{
	LZ4F_preferences_t p;
	unsigned char *frame;
	size_t cap, n;

	memset(&p, 0, sizeof(p));
	p.frameInfo.blockSizeID = LZ4F_max64KB;
	p.frameInfo.blockMode = LZ4F_blockIndependent;
	p.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
	p.frameInfo.contentSize = len;
	cap = LZ4F_compressFrameBound(len, &p);
	frame = malloc(cap);
	if (!frame)
		return NULL;
	n = LZ4F_compressFrame(frame, cap, dump, len, &p);
	if (LZ4F_isError(n)) {
		free(frame);
		return NULL;
	}
	*frame_len = n;
	return frame;
}

/* A chunk script record (fuzz_asm.c) appended at *pos. */
static void put_record(unsigned char *s, size_t *pos, unsigned op, unsigned offset,
		       const unsigned char *data, unsigned len)
{
	s[(*pos)++] = (unsigned char)op;
	s[(*pos)++] = (unsigned char)(offset & 0xff);
	s[(*pos)++] = (unsigned char)(offset >> 8);
	s[(*pos)++] = (unsigned char)len;
	if (len)
		memcpy(s + *pos, data, len);
	*pos += len;
}

/* msprobe rank directories: a tensor and a statistics dump.json, each with x.pt after it. */
static int msprobe_seeds(const char *corpus)
{
	static const char tensor_json[] =
		"{\"task\": \"tensor\", \"level\": \"L0\", \"framework\": \"pytorch\", "
		"\"dump_data_dir\": null, \"data\": {\"Module.fc.Linear.forward.0\": {"
		"\"input_args\": [{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", "
		"\"shape\": [2, 2], \"Max\": 4.0, \"Min\": 1.0, \"Mean\": 2.5, \"Norm\": 5.477, "
		"\"requires_grad\": false, \"data_name\": \"x.pt\"}], \"input_kwargs\": "
		"{\"scale\": {\"type\": \"float\", \"value\": 2.0}}, \"output\": [{\"type\": "
		"\"torch.Tensor\", \"dtype\": \"torch.float32\", \"shape\": [2, 2], "
		"\"requires_grad\": true, \"data_name\": \"x.pt\"}], \"parameters\": {\"weight\": "
		"{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", \"shape\": [2, 2], "
		"\"data_name\": \"../x.pt\"}}}, \"Module.fc.Linear.parameters_grad.0\": "
		"{\"weight\": [{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", "
		"\"shape\": [2, 2], \"data_name\": \"x.pt\"}]}, \"Module.fc.Linear.backward.0\": "
		"{\"input\": [{\"type\": \"torch.Tensor\", \"dtype\": \"torch.bfloat16\", "
		"\"shape\": [4], \"data_name\": \"x.pt\"}], \"output\": [null, 3]}}}";
	static const char stats_json[] =
		"{\"task\": \"statistics\", \"level\": \"L1\", \"data\": {\"Tensor.add.0.forward\": "
		"{\"input_args\": [{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float16\", "
		"\"shape\": [], \"Max\": NaN, \"Min\": -Infinity, \"Mean\": null, \"Norm\": 1e308}, "
		"{\"type\": \"int\", \"value\": 1}], \"input_kwargs\": {}, \"output\": "
		"[[{\"type\": \"torch.Tensor\", \"dtype\": \"torch.int64\", \"shape\": [3, 0]}]]}}}";
	static const float v[4] = { 1, 2, 3, 4 };
	static const uint64_t dims[2] = { 2, 2 };
	char dir[4096 + 16], path[4096 + 32];
	unsigned char seed[8192];
	size_t pt_len = 0, n;
	FILE *f;
	int rc = 0;

	snprintf(dir, sizeof(dir), "%s/msprobe", corpus);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/.x.pt", dir);
	if (adump_pt_write(path, "x", 1 /* float */, dims, 2, v, sizeof(v), NULL, 0) < 0)
		return -1;
	f = fopen(path, "rb");
	if (f) {
		pt_len = fread(seed + sizeof(tensor_json), 1, sizeof(seed) - sizeof(tensor_json), f);
		fclose(f);
	}
	remove(path);
	memcpy(seed, tensor_json, sizeof(tensor_json));        /* with its NUL */
	n = sizeof(tensor_json) + pt_len;
	rc |= write_seed(dir, "tensor", seed, n);
	rc |= write_seed(dir, "tensor-cut-pt", seed, n - pt_len / 2);
	rc |= write_seed(dir, "statistics", stats_json, sizeof(stats_json) - 1);
	return rc;
}

int main(int argc, char **argv)
{
	static const int32_t dtypes[] = { 1, 2, 7, 27, 11, 12, 16, 28, 3 };
	char reader_dir[4096], asm_dir[4096], lz4_dir[4096], packed_dir[4096], name[64];
	unsigned char script[8192];
	int rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_seeds DIR\n");
		return 2;
	}
	snprintf(reader_dir, sizeof(reader_dir), "%s/reader", argv[1]);
	snprintf(asm_dir, sizeof(asm_dir), "%s/asm", argv[1]);
	snprintf(lz4_dir, sizeof(lz4_dir), "%s/lz4", argv[1]);
	snprintf(packed_dir, sizeof(packed_dir), "%s/packed", argv[1]);
	mkdir(argv[1], 0755);
	mkdir(packed_dir, 0755);
	mkdir(lz4_dir, 0755);
	mkdir(reader_dir, 0755);
	mkdir(asm_dir, 0755);
	if (fuzz_acl_seeds_write(argv[1]) < 0 || msprobe_seeds(argv[1]) < 0)
		rc = 1;
	{
		/* .pt files for fuzz_pt: a matrix, a scalar, bfloat16 */
		static const float v[6] = { 1, 2, 3, 4, 5, 6 };
		static const uint64_t dims[2] = { 2, 3 };
		char pt_dir[4096], path[4200];

		snprintf(pt_dir, sizeof(pt_dir), "%s/pt", argv[1]);
		mkdir(pt_dir, 0755);
		snprintf(path, sizeof(path), "%s/matrix.pt", pt_dir);
		rc |= adump_pt_write(path, "matrix", ADUMP_DT_FLOAT, dims, 2, v, sizeof(v), NULL, 0) < 0;
		snprintf(path, sizeof(path), "%s/scalar.pt", pt_dir);
		rc |= adump_pt_write(path, "scalar", ADUMP_DT_FLOAT, NULL, 0, v, 4, NULL, 0) < 0;
		snprintf(path, sizeof(path), "%s/bf16.pt", pt_dir);
		rc |= adump_pt_write(path, "bf16", ADUMP_DT_BF16, dims, 2, v, 12, NULL, 0) < 0;
	}

	for (size_t d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++) {
		struct adump_tensor t[4] = { 0 };
		/* FFTS+ cuts for the reader's merge check, manual and automatic. */
		struct adump_attr attr = { "alpha", d % 3 == 0 ? "1" : d % 3 == 1 ?
			"{\"threadMode\": false, \"slice_instance_num\": 2, "
			"\"outputCutList\": [[1, 2]]}" :
			"{\"threadMode\": true, \"slice_instance_num\": 2, \"outputCutList\": [[2, 1]], "
			"\"output_tensor_slice\": [[[{\"lower\": 0, \"higher\": 2}, "
			"{\"lower\": 0, \"higher\": 3}]], [[{\"lower\": 0, \"higher\": 2}, "
			"{\"lower\": 0, \"higher\": 3}]]]}" };
		struct adump_op op = { .op_type = "Add", .op_name = "seed", .tensor_count = 4,
				       .tensors = t, .attr_count = 1, .attrs = &attr,
				       .timestamp_us = 1 };
		unsigned bits = adump_dtype_bits(dtypes[d]);
		unsigned char *dump;
		size_t len;

		for (int i = 0; i < 2; i++) {
			t[i].kind = i ? ADUMP_TENSOR_OUTPUT : ADUMP_TENSOR_INPUT;
			t[i].dtype = dtypes[d];
			t[i].format = 2;
			t[i].dim_count = t[i].orig_dim_count = 2;
			t[i].dims[0] = t[i].orig_dims[0] = 2;
			t[i].dims[1] = t[i].orig_dims[1] = 3;
			t[i].bytes = (6 * bits + 7) / 8;
		}
		t[2].kind = ADUMP_TENSOR_BUFFER;
		t[2].bytes = 3;
		t[3].kind = ADUMP_TENSOR_WORKSPACE;
		t[3].bytes = 2;
		dump = make_dump(&op, &len);
		if (!dump)
			return 1;
		snprintf(name, sizeof(name), "dump-dt%d", dtypes[d]);
		rc |= write_seed(reader_dir, name, dump, len);
		snprintf(name, sizeof(name), "truncated-dt%d", dtypes[d]);
		rc |= write_seed(reader_dir, name, dump, len - 3);
		size_t frame_len;
		unsigned char *frame = make_frame(dump, len, &frame_len);

		if (!frame)
			return 1;
		snprintf(name, sizeof(name), "frame-dt%d", dtypes[d]);
		rc |= write_seed(lz4_dir, name, frame, frame_len);
		snprintf(name, sizeof(name), "frame-truncated-dt%d", dtypes[d]);
		rc |= write_seed(lz4_dir, name, frame, frame_len - 5);
		/* A packed capture of the dump twice, then a cut-short line. */
		uint32_t crc = ~crc32_iscsi(dump, (int)len, ~0u);
		char index[512];
		int n = snprintf(index, sizeof(index),
				 "0/Add.seed.1.2.3\tw0-0.seg\t0\t%zu\t%08x\n"
				 "0/Add.seed.4.5.6\tw0-0.seg\t%zu\t%zu\t%08x\n0/Add.cut\tw0",
				 len, crc, len, len, crc);
		unsigned char *capture = malloc((size_t)n + 1 + 2 * len);

		if (!capture || n < 0 || (size_t)n >= sizeof(index))
			return 1;
		memcpy(capture, index, (size_t)n);
		capture[n] = 0;
		memcpy(capture + n + 1, dump, len);
		memcpy(capture + n + 1 + len, dump, len);
		snprintf(name, sizeof(name), "packed-dt%d", dtypes[d]);
		rc |= write_seed(packed_dir, name, capture, (size_t)n + 1 + 2 * len);
		free(capture);
		frame[frame_len / 2] ^= 0x40;
		snprintf(name, sizeof(name), "frame-damaged-dt%d", dtypes[d]);
		rc |= write_seed(lz4_dir, name, frame, frame_len);
		free(frame);
		if (d == 0) {
			/* Damaged copies: absurd length, broken varint inside the header. */
			unsigned char *bad = malloc(len);

			memcpy(bad, dump, len);
			memset(bad, 0xff, 8);
			rc |= write_seed(reader_dir, "absurd-length", bad, len);
			memcpy(bad, dump, len);
			memset(bad + 9, 0xff, 10);
			rc |= write_seed(reader_dir, "bad-varint", bad, len);
			free(bad);

			/* Scripts for the assembler, on file 3 ("/dump/Add.x.1.2.3"). */
			size_t pos = 0, half = len / 2;
			put_record(script, &pos, 0x08 | 3, 0, dump, (unsigned)half);
			put_record(script, &pos, 0x0c | 3, 0, dump + half, (unsigned)(len - half));
			put_record(script, &pos, 0x20 | 3, 0, NULL, 0);
			rc |= write_seed(asm_dir, "append-take", script, pos);
			pos = 0;
			put_record(script, &pos, 0x04 | 3, (unsigned)half, dump + half,
				   (unsigned)(len - half));
			put_record(script, &pos, 0x00 | 3, 0, dump, (unsigned)half);
			put_record(script, &pos, 0x00 | 3, 0, dump, 4);
			put_record(script, &pos, 0x20 | 3, 0, NULL, 0);
			rc |= write_seed(asm_dir, "shuffled-duplicate-take", script, pos);
			pos = 0;
			put_record(script, &pos, 0x00 | 1, 0, dump, 10);
			put_record(script, &pos, 0x04 | 1, 20, dump + 20, 10);
			put_record(script, &pos, 0x30 | 1, 0, NULL, 0);
			rc |= write_seed(asm_dir, "gap-finish", script, pos);
		}
		free(dump);
	}
	return rc ? 1 : 0;
}
