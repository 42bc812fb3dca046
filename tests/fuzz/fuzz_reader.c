/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: any bytes as a dump file. Parsing must fail with a message naming the
 * dump, or succeed with a layout that exactly covers the input; every tensor is then read,
 * mapped, summarised and written as .npy/.bin without touching memory outside the input.
 * The dump then plays both subtasks of an FFTS+ op: its attribute parses as a cut or is
 * refused, and every byte of every merged output reads back from inside the dump. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adump/reader.h"
#include "compare/compare_int.h"

#define FUZZ_NAME "fuzz_reader"
#include "tests/fuzz/fuzz_util.h"

static struct adump_reader *reader;
static int null_fd = -1;

static void ffts_check(const struct adump_reader_header *h)
{
	struct adump_reader *r[2] = { reader, reader };
	struct adump_compare_ffts_attrs a;
	struct adump_compare_ffts *m;
	unsigned char buf[4096];
	char msg[1024];

	if (adump_compare_ffts_attrs_parse(h, &a, msg, sizeof(msg)) < 0) {
		check(msg[0] != '\0', "a refused attribute says why");
		return;
	}
	if (a.has_cut && adump_compare_ffts_merge(&a, r, 2, &m, msg, sizeof(msg)) == 0) {
		const struct adump_reader_header *mh = adump_compare_ffts_header(m);
		uint32_t first = mh->kind_count[ADUMP_TENSOR_INPUT];

		check(mh->kind_count[ADUMP_TENSOR_OUTPUT] == a.output_count, "one output per cut");
		for (uint32_t i = first; i < first + a.output_count; i++) {
			const struct adump_tensor *t = &mh->tensors[i].info;
			uint32_t eb = adump_compare_elem_bytes(t->dtype);
			uint64_t step = sizeof(buf) / eb * eb;
			struct adump_reader *failed;

			check(eb > 0, "a merged output has an element size");
			check(t->bytes <= 2 * h->payload_bytes, "a merge of two is at most both");
			for (uint64_t off = 0; off < t->bytes; off += step) {
				size_t n = t->bytes - off < step ? (size_t)(t->bytes - off) : step;

				check(adump_compare_ffts_read(m, i, off, buf, n, &failed) == 0,
				      "a merged output reads whole");
			}
		}
		adump_compare_ffts_free(m);
	}
	adump_compare_ffts_attrs_free(&a);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const struct adump_reader_header *h;

	if (!reader && adump_reader_create(&reader) < 0)
		abort();
	if (null_fd < 0)
		null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (adump_reader_open_mem(reader, data, size, "fuzz") < 0) {
		check(strncmp(adump_reader_error(reader), "fuzz: ", 6) == 0, "error names the dump");
		check(strlen(adump_reader_error(reader)) > 6, "error says what is wrong");
		check(adump_reader_header(reader) == NULL, "no header after a failure");
		return 0;
	}
	h = adump_reader_header(reader);
	check(h->file_bytes == size, "layout covers the input exactly");
	check(8 + h->header_bytes + h->payload_bytes == size, "8 + header + payloads");
	for (uint32_t i = 0; i < h->tensor_count; i++) {
		const struct adump_reader_tensor *t = &h->tensors[i];
		struct adump_reader_stats stats;
		unsigned char head[16];
		uint64_t expect;
		size_t n = t->info.bytes < sizeof(head) ? (size_t)t->info.bytes : sizeof(head);

		check(t->offset >= 8 + h->header_bytes && t->offset + t->info.bytes <= size,
		      "payload inside the input");
		check(adump_reader_read(reader, i, 0, head, n) == 0, "payload readable");
		check(memcmp(head, data + t->offset, n) == 0, "read returns the payload");
		check(adump_reader_map(reader, i) == data + t->offset, "map points at the payload");
		if (adump_reader_tensor_stats(reader, i, &stats) == 0)
			check(stats.finite_count + stats.nan_count + stats.inf_count ==
				      stats.element_count,
			      "every element counted once");
		if (adump_reader_tensor_expected_bytes(&t->info, &expect) == 0 &&
		    expect == t->info.bytes && adump_reader_npy_descr(t->info.dtype))
			check(adump_reader_save_npy(reader, i, t->info.dims, t->info.dim_count,
						    null_fd) == 0,
			      "a consistent tensor saves as .npy");
		adump_reader_save_raw(reader, i, null_fd);
	}
	ffts_check(h);
	adump_reader_close(reader);
	return 0;
}
