/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: any bytes as a packed capture. The input up to its first NUL byte is the
 * index (w0.idx), the rest the segment (w0-0.seg). Every line must come back as an entry, a
 * cut-short leftover or a malformed line with a message; every entry opens (CRC-checked) or
 * fails with a message naming it, and an opened entry's layout covers its range exactly. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adump/reader.h"

#define FUZZ_NAME "fuzz_packed"
#include "tests/fuzz/fuzz_util.h"

static struct adump_reader *reader;
static char dir[PATH_MAX];

/* The scratch directory goes when libFuzzer exits. */
static void remove_dir(void)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/w0.idx", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/w0-0.seg", dir);
	unlink(path);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const unsigned char *nul = memchr(data, 0, size);
	size_t index_len = nul ? (size_t)(nul - data) : size;
	const struct adump_reader_packed_entry *e;
	struct adump_reader_packed *p;
	uint64_t lines = 0;
	int ret;

	if (!reader && adump_reader_create(&reader) < 0)
		abort();
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/fuzz-packed-XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(dir))
			abort();
		atexit(remove_dir);
	}
	put(dir, "w0.idx", data, index_len);
	put(dir, "w0-0.seg", nul ? nul + 1 : data, nul ? size - index_len - 1 : 0);
	ret = adump_reader_packed_open(dir, &p);
	check(ret == 0, "a directory with an index opens");
	while ((ret = adump_reader_packed_next(p, &e)) > 0) {
		lines++;
		check(e->line == lines, "lines numbered in order");
		if (e->status != ADUMP_PACKED_ENTRY) {
			check(e->message[0] != '\0', "a bad line says what is wrong");
			continue;
		}
		check(e->name[0] && e->segment[0], "an entry has a name and a segment");
		if (adump_reader_open_packed(reader, p, e, true) < 0) {
			check(strstr(adump_reader_error(reader), e->name) != NULL,
			      "error names the entry");
			continue;
		}
		check(adump_reader_header(reader)->file_bytes == e->length, "layout covers the entry");
		adump_reader_close(reader);
	}
	check(ret == 0, "the index reads to its end");
	check(lines == adump_reader_packed_line_count(p), "every counted line listed");
	adump_reader_packed_close(p);
	return 0;
}
