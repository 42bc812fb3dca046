/* SPDX-License-Identifier: Apache-2.0 */
/* CANN dump file names, read as msaccucmp reads them (adump_reader_name_parse()). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adump/reader.h"

#define FIELD_MAX 64

static bool is_name_field(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

static bool is_digits(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* The first (or, @is_last, the last) place in @s where @word is followed by a digit, and
 * where the digits after it end; NULL if there is none. */
static char *word_digits(char *s, const char *word, bool is_last, const char **end)
{
	size_t wlen = strlen(word);
	char *found = NULL;

	for (char *p = strstr(s, word); p; p = strstr(p + 1, word)) {
		if (!isdigit((unsigned char)p[wlen]))
			continue;
		found = p;
		if (!is_last)
			break;
	}
	if (found)
		for (*end = found + wlen; isdigit((unsigned char)**end);)
			(*end)++;
	return found;
}

/* msaccucmp's op name (handle_op_name), in place: a name ending in "_lxslice<N>", one slice
 * of an FFTS+ manual-mode op, loses that ending; a name with "sgt_graph_<N>_" in it loses
 * everything up to and including the last one. */
static void op_name_normalize(char *name)
{
	const char *end;
	char *cut;

	if (strstr(name, "_lxslice")) {
		cut = word_digits(name, "lxslice", false, &end);
		if (cut && !*end)
			cut[-1] = '\0';
	}
	if (strstr(name, "_sgt_graph") && word_digits(name, "sgt_graph_", true, &end) && *end)
		memmove(name, end + 1, strlen(end + 1) + 1);
}

static uint64_t field_u64(const char *s)
{
	return strtoull(s, NULL, 10);
}

int adump_reader_name_parse(const char *name, struct adump_reader_name *out)
{
	const char *base = name ? strrchr(name, '/') : NULL;
	size_t len, start[FIELD_MAX], flen[FIELD_MAX], n = 0, i = 0, ts;

	if (!name || !out)
		return -EINVAL;
	base = base ? base + 1 : name;
	len = strlen(base);
	memset(out, 0, sizeof(*out));
	if (len > 4 && !strcmp(base + len - 4, ".lz4"))
		len -= 4;
	while (i <= len && n < FIELD_MAX) {
		size_t j = i;

		while (j < len && base[j] != '.')
			j++;
		start[n] = i;
		flen[n++] = j - i;
		i = j + 1;
	}
	if (i <= len || n < 4 || flen[0] >= sizeof(out->op_type) || flen[1] >= sizeof(out->op_name))
		return -EINVAL;
	if (!is_name_field(base, flen[0]) || !is_name_field(base + start[1], flen[1]))
		return -EINVAL;
	for (size_t k = 2; k < n; k++)
		if (!is_digits(base + start[k], flen[k]))
			return -EINVAL;
	memcpy(out->op_type, base, flen[0]);
	memcpy(out->op_name, base + start[1], flen[1]);
	op_name_normalize(out->op_name);
	out->is_skipped = strstr(out->op_name, "_lxslice") != NULL;
	out->task_id = field_u64(base + start[2]);
	out->has_stream_id = n >= 5;
	if (out->has_stream_id)
		out->stream_id = field_u64(base + start[3]);
	/* An FFTS+ subtask: task type 4 in the fourth field from the end (msaccucmp looks
	 * there in any name of more than five fields). */
	out->is_ffts = n > 5 && flen[n - 4] == 1 && base[start[n - 4]] == '4';
	ts = out->is_ffts ? 4 : n - 1;
	out->timestamp = flen[ts] == 16 ? field_u64(base + start[ts]) : 0;
	if (out->is_ffts && !memmem(base, len, "_lxslice", 8)) {
		out->subtask = field_u64(base + start[n - 2]);
	} else if (out->is_ffts) {
		/* Manual mode: the slice is the op name field's last character; msaccucmp sorts
		 * a non-digit there as 3 (its INVALID_SLICE_X). */
		char last = base[start[1] + flen[1] - 1];

		out->subtask = isdigit((unsigned char)last) ? (uint64_t)(last - '0') : 3;
	}
	return 0;
}

bool adump_reader_is_window_dir(const char *name)
{
	const char *p = name + 7;

	if (strncmp(name, "window-", 7) || *p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == '.' && p[1] >= '0' && p[1] <= '9')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	return *p == '\0';
}
