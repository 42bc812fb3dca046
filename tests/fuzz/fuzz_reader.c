/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: any bytes as a dump file. Parsing must fail with a message naming the
 * dump, or succeed with a layout that exactly covers the input; every tensor is then read,
 * mapped, summarised and written as .npy/.bin without touching memory outside the input. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adump/reader.h"

static struct adump_reader *reader;
static int null_fd = -1;

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz_reader: invariant failed: %s\n", what);
		abort();
	}
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
	adump_reader_close(reader);
	return 0;
}
