/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: any bytes as an LZ4-compressed dump (a .lz4 file). Opening must fail with
 * a message naming the dump, or succeed with a layout that covers the frame's content; every
 * tensor is then read front to back, the first once more (the source decodes again from the
 * start), and the frame checked to its end, without a crash, a hang or an allocation beyond
 * the block. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adump/reader.h"

#define FUZZ_NAME "fuzz_lz4"
#include "tests/fuzz/fuzz_util.h"

static struct adump_reader *reader;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct adump_reader_source *mem, *src;
	const struct adump_reader_header *h;
	unsigned char first[16], again[16];

	if (!reader && adump_reader_create(&reader) < 0)
		abort();
	if (adump_reader_source_open_mem(data, size, false, &mem) < 0)
		abort();
	if (adump_reader_source_open_lz4(mem, &src) < 0)
		return 0;
	check(adump_reader_source_size(src) <= (uint64_t)size * 256, "content size bounded");
	if (adump_reader_open_source(reader, src, "fuzz") < 0) {
		check(strncmp(adump_reader_error(reader), "fuzz: ", 6) == 0, "error names the dump");
		check(strlen(adump_reader_error(reader)) > 6, "error says what is wrong");
		return 0;
	}
	h = adump_reader_header(reader);
	check(8 + h->header_bytes + h->payload_bytes == h->file_bytes, "8 + header + payloads");
	/* Front to back, as the tools read; then the first tensor once more, which makes the
	 * source decode again from the start (one restart, not one per tensor). */
	bool has_first = false;
	size_t first_len = 0;
	for (uint32_t i = 0; i < h->tensor_count; i++) {
		const struct adump_reader_tensor *t = &h->tensors[i];
		size_t n = t->info.bytes < sizeof(first) ? (size_t)t->info.bytes : sizeof(first);
		struct adump_reader_stats stats;

		if (adump_reader_read(reader, i, 0, i ? again : first, n) < 0)
			break;
		if (i == 0) {
			has_first = true;
			first_len = n;
		}
		if (adump_reader_tensor_stats(reader, i, &stats) == 0)
			check(stats.finite_count + stats.nan_count + stats.inf_count ==
				      stats.element_count,
			      "every element counted once");
	}
	if (has_first && adump_reader_read(reader, 0, 0, again, first_len) == 0)
		check(memcmp(first, again, first_len) == 0, "a second read returns the same bytes");
	if (adump_reader_check(reader) < 0)
		check(strlen(adump_reader_error(reader)) > 6, "check says what is wrong");
	adump_reader_close(reader);
	return 0;
}
