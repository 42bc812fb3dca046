/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the input is a script of chunk operations on four files. A byte-level
 * model of each file predicts every result (stored, completed, refused), and a taken file
 * must equal the model's bytes; the assembled bytes are then parsed as a dump as well.
 *
 * Script record: [op][offset lo][offset hi][len] then len data bytes.
 *   op bits 0-1 file, bit 2 is_last, bit 3 append, bits 4-5 action (0/1 feed, 2 take, 3 finish) */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adump/reader.h"

#define FILE_COUNT 4
/* Highest end a script can reach: offsets below 65536 + 255, plus appends of at most the
 * input's length (run.sh caps inputs at 65536 bytes). */
#define SPAN (2 * 65536 + 512)

struct model {
	bool is_present;
	bool has_last;
	uint64_t final_bytes;
	uint64_t append_pos;
	uint64_t received;
	uint64_t max_end;
	uint64_t touched;               /* have[] is zero from here on */
	unsigned char have[SPAN];
	unsigned char bytes[SPAN];
};

static struct model models[FILE_COUNT];
static const char *const names[FILE_COUNT] = { "a", "b", "c", "/dump/Add.x.1.2.3" };

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz_asm: model disagrees: %s\n", what);
		abort();
	}
}

static bool is_complete(const struct model *m)
{
	return m->is_present && m->has_last && m->received == m->final_bytes;
}

static void model_reset(struct model *m)
{
	memset(m->have, 0, (size_t)m->touched);
	m->is_present = m->has_last = false;
	m->final_bytes = m->append_pos = m->received = m->max_end = m->touched = 0;
}

/* The result the assembler must give: -1 refused, 0 stored, 1 stored and complete. */
static int model_feed(struct model *m, bool is_append, uint64_t offset, const unsigned char *data,
		      size_t len, bool is_last)
{
	uint64_t start = is_append ? m->append_pos : offset, end = start + len;

	if (end > SPAN)
		return -2;      /* beyond the model; the caller stops the script */
	if (is_complete(m))
		return -1;
	if (m->has_last && end > m->final_bytes)
		return -1;
	if (is_last && m->has_last)
		return -1;
	if (is_last && m->max_end > end)
		return -1;
	for (uint64_t i = start; i < end; i++)
		if (m->have[i])
			return -1;
	if (end > m->touched)
		m->touched = end;
	for (uint64_t i = start; i < end; i++) {
		m->have[i] = 1;
		m->bytes[i] = data[i - start];
	}
	m->is_present = true;
	m->received += len;
	m->append_pos = end;
	/* Only bytes count: an empty chunk far out does not extend what has arrived. */
	if (len && end > m->max_end)
		m->max_end = end;
	if (is_last) {
		m->has_last = true;
		m->final_bytes = end;
	}
	return is_complete(m) ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct adump_asm *a;
	struct adump_reader *r;

	if (adump_asm_create(NULL, &a) < 0 || adump_reader_create(&r) < 0)
		abort();
	for (int f = 0; f < FILE_COUNT; f++)
		model_reset(&models[f]);
	while (size >= 4) {
		unsigned op = data[0], file = op & 3, action = (op >> 4) & 3;
		bool is_last = op & 4, is_append = op & 8;
		uint64_t offset = (uint64_t)data[1] | (uint64_t)data[2] << 8;
		size_t len = data[3];
		struct model *m = &models[file];
		void *bytes;
		size_t got_len;
		int ret, want;

		data += 4;
		size -= 4;
		if (len > size)
			len = size;
		switch (action) {
		case 0:
		case 1:
			want = model_feed(m, is_append, offset, data, len, is_last);
			if (want == -2) {
				size = 0;
				break;
			}
			ret = adump_asm_feed(a, names[file], is_append ? ADUMP_ASM_APPEND
								      : (int64_t)offset,
					     data, len, is_last);
			check(ret < 0 ? want == -1 : ret == want, "feed result");
			if (ret < 0) {
				char msg[600];

				adump_asm_error(a, msg, sizeof(msg));
				check(strncmp(msg, names[file], strlen(names[file])) == 0,
				      "error names the file");
			}
			data += len;
			size -= len;
			break;
		case 2:
			ret = adump_asm_take(a, names[file], &bytes, &got_len);
			if (is_complete(m)) {
				check(ret == 0, "take of a complete file");
				check(got_len == m->final_bytes, "taken length");
				check(memcmp(bytes, m->bytes, got_len) == 0, "taken bytes");
				if (adump_reader_open_mem(r, bytes, got_len, names[file]) < 0)
					check(strlen(adump_reader_error(r)) > 0, "reader message");
				adump_reader_close(r);
				free(bytes);
				model_reset(m);
			} else {
				check(ret == (m->is_present ? -ADUMP_ERR_INCOMPLETE
							    : -ADUMP_ERR_NOT_FOUND),
				      "take of an incomplete or absent file");
			}
			break;
		case 3:
			ret = adump_asm_finish(a, names[file]);
			if (!m->is_present) {
				check(ret == -ADUMP_ERR_NOT_FOUND, "finish of an absent file");
			} else if (is_complete(m)) {
				check(ret == 0, "finish of a complete file");
			} else {
				check(ret == -ADUMP_ERR_INCOMPLETE, "finish of an incomplete file");
				model_reset(m);
			}
			break;
		}
	}
	uint32_t present = 0;
	for (int f = 0; f < FILE_COUNT; f++)
		present += models[f].is_present;
	check(adump_asm_file_count(a) == present, "file count");
	adump_reader_destroy(r);
	adump_asm_destroy(a);
	return 0;
}
