/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: any bytes as an msprobe rank directory (reader/msprobe.c). The input up
 * to its first NUL byte is dump.json, the rest dump_tensor_data/x.pt (so that a data_name of
 * "x.pt" opens a file). Loading ends in 0 or an error with a message; every entry's tensors
 * lie inside the list; every entry opens, or fails with a message, and an opened entry's
 * tensors read whole. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/msprobe.h"

#define FUZZ_NAME "fuzz_msprobe"
#include "tests/fuzz/fuzz_util.h"

static struct adump_reader *reader;
static char dir[PATH_MAX];
static unsigned char buf[1 << 16];

/* The scratch directory goes when libFuzzer exits. */
static void remove_dir(void)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/dump.json", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/dump_tensor_data/x.pt", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/dump_tensor_data", dir);
	rmdir(path);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const unsigned char *nul = memchr(data, 0, size);
	size_t json_len = nul ? (size_t)(nul - data) : size;
	struct adump_msprobe *m = NULL;
	char msg[512] = "";
	int ret;

	if (!reader && adump_reader_create(&reader) < 0)
		abort();
	if (!dir[0]) {
		char sub[PATH_MAX + 32];

		snprintf(dir, sizeof(dir), "%s/fuzz-msprobe-XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(dir))
			abort();
		snprintf(sub, sizeof(sub), "%s/dump_tensor_data", dir);
		if (mkdir(sub, 0755) < 0)
			abort();
		atexit(remove_dir);
	}
	put(dir, "dump.json", data, json_len);
	put(dir, "dump_tensor_data/x.pt", nul ? nul + 1 : data, nul ? size - json_len - 1 : 0);
	ret = adump_msprobe_load(dir, &m, msg, sizeof(msg));
	if (ret < 0) {
		check(msg[0] != '\0', "a refused dump.json says why");
		return 0;
	}
	for (uint32_t e = 0; e < m->entry_count; e++) {
		const struct adump_msprobe_entry *en = &m->entries[e];
		const struct adump_reader_header *h;

		check(en->name != NULL, "an entry has a name");
		check(en->first <= m->tensor_count && en->count <= m->tensor_count - en->first,
		      "an entry's tensors lie inside the list");
		check(en->kind_count[0] + en->kind_count[1] <= en->count,
		      "inputs and outputs are among the entry's tensors");
		if (adump_msprobe_open(reader, m, e, e & 1) < 0) {
			check(adump_reader_error(reader)[0] != '\0', "a failed entry says why");
			continue;
		}
		h = adump_reader_header(reader);
		for (uint32_t i = 0; i < h->tensor_count; i++) {
			uint64_t bytes = h->tensors[i].info.bytes;

			for (uint64_t at = 0; at < bytes; at += sizeof(buf)) {
				size_t n = bytes - at < sizeof(buf) ? (size_t)(bytes - at) : sizeof(buf);

				if (adump_reader_read(reader, i, at, buf, n) < 0)
					break;
			}
		}
		adump_reader_close(reader);
	}
	adump_msprobe_free(m);
	return 0;
}
