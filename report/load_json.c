/* SPDX-License-Identifier: Apache-2.0 */
/* report/: reading what `adump compare --json` (one array of rows, verdicts and modules as
 * compare judged them) and `adump scan --json` (one object per listed op, then a summary)
 * print. The file is read whole, up to ADUMP_REPORT_MAX_JSON_BYTES. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "adump/adump.h"
#include "report/report_int.h"

static const char *str_of(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static uint64_t u64_of(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	return (uint64_t)json_object_get_int64(v);
}

static int compare_row(struct adump_report *r, json_object *o, char *msg, size_t cap)
{
	const char *names[512], *cells[512], *verdict;
	struct report_columns cols;
	struct report_row *row;
	json_object *v;
	int count = 0, err = 0;

	json_object_object_foreach(o, key, val) {
		if (!strcmp(key, "verdict") || count == 512)
			break;
		names[count] = !strcmp(key, "NPUDumpDataType") || !strcmp(key, "GroundTruthDataType")
				       ? "DataType"
			       : !strcmp(key, "NPUDumpAddress") || !strcmp(key, "GroundTruthAddress")
				       ? "Address" : key;
		cells[count++] = json_object_is_type(val, json_type_string)
					 ? json_object_get_string(val) : "";
	}
	verdict = str_of(o, "verdict");
	if (!report_columns_find(&cols, names, count) || !verdict) {
		snprintf(msg, cap, "an object that is not a row of adump compare --json");
		return -ADUMP_ERR_CORRUPT;
	}
	row = report_row_new(r, &err);
	if (row)
		err = report_row_cells(r, row, &cols, cells);
	if (err)
		return err;
	row->verdict = !strcmp(verdict, "error")     ? ADUMP_COMPARE_ERROR
		       : !strcmp(verdict, "warning") ? ADUMP_COMPARE_WARNING
		       : !strcmp(verdict, "pass")    ? ADUMP_COMPARE_PASS
						     : ADUMP_COMPARE_NONE;
	if (str_of(o, "reason") && str_of(o, "reason")[0])
		row->reason = report_strn(r, str_of(o, "reason"), SIZE_MAX, &err);
	row->module = report_strn(r, str_of(o, "module"), SIZE_MAX, &err);
	if (json_object_object_get_ex(o, "scaled_error", &v))
		row->scaled = json_object_get_double(v);
	for (int k = 0; k < 2; k++) {
		json_object *a;

		if (!json_object_object_get_ex(o, k ? "inf_count" : "nan_count", &a) ||
		    json_object_array_length(a) != 2)
			continue;
		for (int s = 0; s < 2; s++)
			row->counts[s * 2 + k] =
				(uint64_t)json_object_get_int64(json_object_array_get_idx(a, (size_t)s));
		row->has_counts = true;
	}
	return err;
}

static int scan_op(struct adump_report *r, json_object *o)
{
	const char *kind = str_of(o, "kind");
	struct report_row *row;
	int err = 0;

	if (kind && !strcmp(kind, "uninitialized"))
		return 0;       /* uninitialized memory: no anomaly to show */
	row = report_row_new(r, &err);
	if (!row)
		return err;
	row->scan_kind = !strcmp(kind, "origin") || !strcmp(kind, "entered") ? REPORT_SCAN_ORIGIN
			 : !strcmp(kind, "reached") || !strcmp(kind, "enclosing")
			 ? REPORT_SCAN_REACHED
			 : REPORT_SCAN_UNREADABLE;
	row->verdict = row->scan_kind == REPORT_SCAN_ORIGIN    ? ADUMP_COMPARE_ERROR
		       : row->scan_kind == REPORT_SCAN_REACHED ? ADUMP_COMPARE_WARNING
							       : ADUMP_COMPARE_NONE;
	row->index = u64_of(o, "order");
	row->type = report_strn(r, str_of(o, "op_type"), SIZE_MAX, &err);
	row->op = report_strn(r, str_of(o, "op_name") ? str_of(o, "op_name") : "", SIZE_MAX, &err);
	row->tensor = report_strn(r, str_of(o, "first_tensor"), SIZE_MAX, &err);
	row->reason = report_strn(r, str_of(o, "message"), SIZE_MAX, &err);
	row->shape = report_strn(r, str_of(o, "path"), SIZE_MAX, &err);
	for (int s = 0; s < 2; s++) {
		json_object *c;

		if (!json_object_object_get_ex(o, s ? "outputs" : "inputs", &c))
			continue;
		row->counts[s * 3] = u64_of(c, "nan");
		row->counts[s * 3 + 1] = u64_of(c, "inf");
		row->counts[s * 3 + 2] = u64_of(c, "fp16_limit");
		row->has_counts = true;
	}
	if (row->scan_kind == REPORT_SCAN_ORIGIN && r->pairs[r->pair_count - 1].first < 0)
		r->pairs[r->pair_count - 1].first =
			(int64_t)(r->row_count - 1 - r->pairs[r->pair_count - 1].row_first);
	return err;
}

static char *read_whole(const char *path, size_t *len, char *msg, size_t cap, int *ret)
{
	struct stat st;
	char *buf;
	FILE *f = fopen(path, "rb");

	if (!f || fstat(fileno(f), &st) < 0) {
		*ret = -errno;
		snprintf(msg, cap, "%s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		return NULL;
	}
	if ((uint64_t)st.st_size > ADUMP_REPORT_MAX_JSON_BYTES) {
		snprintf(msg, cap, "%s: %llu bytes of JSON, more than a report reads (256 MiB): give "
			 "the result directory (its CSV is read row by row)", path,
			 (unsigned long long)st.st_size);
		fclose(f);
		*ret = -E2BIG;
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		fclose(f);
		*ret = -ENOMEM;
		snprintf(msg, cap, "%s: %s", path, strerror(ENOMEM));
		return NULL;
	}
	*len = fread(buf, 1, (size_t)st.st_size, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

int report_load_json(struct adump_report *r, const char *path, char *msg, size_t cap)
{
	json_tokener *tok = json_tokener_new_ex(64);
	size_t len = 0, pos = 0, count = 0;
	unsigned long line = 1;
	char why[512] = "";
	int ret = 0, err = 0;
	char *buf = read_whole(path, &len, msg, cap, &ret);

	if (!buf || !tok) {
		json_tokener_free(tok);
		free(buf);
		return buf ? -ENOMEM : ret;
	}
	while (ret == 0) {
		json_object *o;
		enum json_tokener_error jerr;

		while (pos < len && strchr(" \t\r\n", buf[pos]))
			line += buf[pos++] == '\n';
		if (pos == len)
			break;
		json_tokener_reset(tok);
		o = json_tokener_parse_ex(tok, buf + pos, (int)(len - pos > 0x7fffffff ? 0x7fffffff
									  : len - pos));
		jerr = json_tokener_get_error(tok);
		if (!o) {
			snprintf(msg, cap, "%s: line %lu: %s: the file is truncated or not the output "
				 "of adump compare --json or adump scan --json", path, line,
				 jerr == json_tokener_continue ? "the JSON stops in the middle"
							       : json_tokener_error_desc(jerr));
			ret = -ADUMP_ERR_CORRUPT;
			break;
		}
		for (size_t e = pos + json_tokener_get_parse_end(tok); pos < e; pos++)
			line += buf[pos] == '\n';
		if (json_object_is_type(o, json_type_array) && count == 0) {
			/* adump compare --json: one array of rows. */
			r->kind = ADUMP_REPORT_COMPARE;
			report_pair_new(r, NULL, -1, -1, 0, NULL, &err);
			for (size_t i = 0; !err && i < json_object_array_length(o); i++)
				err = compare_row(r, json_object_array_get_idx(o, i), why, sizeof(why));
			if (!err)
				report_pair_first(r, &r->pairs[r->pair_count - 1]);
		} else if (json_object_is_type(o, json_type_object) && str_of(o, "kind") &&
			   str_of(o, "op_name")) {
			if (count == 0) {
				r->kind = ADUMP_REPORT_SCAN;
				r->title = report_strn(r, "adump scan", SIZE_MAX, &err);
				report_pair_new(r, NULL, -1, -1, 0, NULL, &err);
			}
			if (!err && r->kind == ADUMP_REPORT_SCAN)
				err = scan_op(r, o);
		} else if (json_object_is_type(o, json_type_object) &&
			   json_object_object_get_ex(o, "summary", NULL)) {
			/* adump scan --json's last line; alone when nothing was found. */
			if (count == 0) {
				r->kind = ADUMP_REPORT_SCAN;
				r->title = report_strn(r, "adump scan", SIZE_MAX, &err);
				report_pair_new(r, NULL, -1, -1, 0, NULL, &err);
			}
		} else if (json_object_is_type(o, json_type_object) &&
			   json_object_object_get_ex(o, "pair", NULL)) {
			snprintf(why, sizeof(why), "adump compare --recursive --json lists pairs, not "
				 "rows: give the result directory (its summary_<ts>.csv)");
			err = -ADUMP_ERR_CORRUPT;
		} else {
			err = -ADUMP_ERR_CORRUPT;
		}
		json_object_put(o);
		count++;
		if (err) {
			snprintf(msg, cap, "%s: line %lu: %s", path, line,
				 err == -E2BIG ? "more rows or text than a report holds (1,000,000 "
				 "rows, 512 MiB)" : why[0] ? why : err == -ADUMP_ERR_CORRUPT ?
				 "not the output of adump compare --json or adump scan --json" :
				 strerror(-err));
			ret = err;
		}
	}
	if (ret == 0 && !r->pair_count) {
		snprintf(msg, cap, "%s: no rows", path);
		ret = -ADUMP_ERR_CORRUPT;
	}
	json_tokener_free(tok);
	free(buf);
	return ret;
}
