/* SPDX-License-Identifier: Apache-2.0 */
/* report/: the page. The template (page.html, page.css and the scripts page_dom.js,
 * page_series.js, page.js, embedded at build time) gets Chart.js inlined from its file and the
 * rows as JSON inside <script type="application/json">, every string escaped so that no byte
 * of it can close the script element or be markup. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "report/report_int.h"

extern const char adump_report_page_html[];
extern const char adump_report_page_css[];
extern const char adump_report_page_js[];
extern const char adump_report_page_series_js[];
extern const char adump_report_page_dom_js[];

/* The length of the UTF-8 sequence at @p (at most @n bytes), or 0 when it is not one (an
 * overlong form, a surrogate, past U+10FFFF, cut short). */
static size_t utf8_len(const unsigned char *p, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c, min;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2, c = p[0] & 0x1f, min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3, c = p[0] & 0x0f, min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4, c = p[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* The bytes of a JSON string's inside, escaped for a script element. */
static void json_escaped(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t len = utf8_len(p + i, n - i, &cp);

		if (!len) {
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		if (cp == '<' || cp == '>' || cp == '&' || cp < 0x20 || cp == 0x2028 || cp == 0x2029 ||
		    cp == 0x7f)
			fprintf(f, "\\u%04x", (unsigned)cp);
		else if (cp == '"' || cp == '\\')
			fprintf(f, "\\%c", (char)cp);
		else
			fwrite(p + i, 1, len, f);
		i += len;
	}
}

void report_json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	json_escaped(f, s, strlen(s));
	fputc('"', f);
}

void report_json_raw(FILE *f, const char *json)
{
	const char *p = json;

	/* Outside its strings valid JSON holds none of the bytes escaped; inside, a string's
	 * escapes (\" included) are copied as they are. */
	while (*p) {
		const char *q;

		if (*p != '"') {
			fputc(*p++, f);
			continue;
		}
		for (q = p + 1; *q && *q != '"'; q++)
			if (*q == '\\' && q[1])
				q++;
		fputc('"', f);
		/* Backslash escapes pass through: the escaper leaves '\\' pairs as they are. */
		for (const char *s = p + 1; s < q;) {
			if (*s == '\\' && s + 1 < q) {
				fwrite(s, 1, 2, f);
				s += 2;
				continue;
			}
			const char *e = s;

			while (e < q && *e != '\\')
				e++;
			json_escaped(f, s, (size_t)(e - s));
			s = e;
		}
		fputc('"', f);
		p = *q ? q + 1 : q;
	}
}

static void json_num(FILE *f, double v)
{
	if (isnan(v))
		fputs("null", f);
	else if (isinf(v))
		fputs(v > 0 ? "1e999" : "-1e999", f);
	else
		fprintf(f, "%.9g", v);
}

static void json_row(FILE *f, const struct report_row *row, enum adump_report_kind kind)
{
	fprintf(f, "[%llu,", (unsigned long long)row->index);
	report_json_str(f, row->type);
	fputc(',', f);
	report_json_str(f, row->op);
	fputc(',', f);
	report_json_str(f, row->tensor);
	fputc(',', f);
	report_json_str(f, row->module);
	fprintf(f, ",%u,", row->verdict);
	report_json_str(f, row->reason && row->reason[0] ? row->reason : NULL);
	fputc(',', f);
	json_num(f, row->cosine);
	fputc(',', f);
	json_num(f, row->max_rel);
	fputc(',', f);
	json_num(f, row->max_abs);
	fputc(',', f);
	json_num(f, row->scaled);
	for (int s = 0; s < 2; s++) {
		fputc(',', f);
		report_json_str(f, row->dtype[s]);
	}
	fputc(',', f);
	report_json_str(f, row->shape);
	for (int s = 0; s < 2; s++) {
		fputc(',', f);
		report_json_str(f, row->stats[s]);
	}
	if (row->has_counts) {
		int n = kind == ADUMP_REPORT_SCAN ? 6 : 4;

		fputs(",[", f);
		for (int k = 0; k < n; k++)
			fprintf(f, "%s%llu", k ? "," : "", (unsigned long long)row->counts[k]);
		fputc(']', f);
	} else {
		fputs(",null", f);
	}
	fprintf(f, ",%u]", row->scan_kind);
}

/* A statistic of a series point: null where the point has none, "nan" for NaN (JSON has no
 * NaN; infinities are 1e999, which JSON.parse reads as Infinity). */
static void json_stat(FILE *f, const struct report_point *p, int k)
{
	if (!(p->has & (1u << k)))
		fputs("null", f);
	else if (isnan(p->value[k]))
		fputs("\"nan\"", f);
	else
		json_num(f, p->value[k]);
}

/* A series report's data (page_series.js): each tensor with its points
 * [step, max, min, mean, norm, NaN count, Inf count, flags, why], the triggers, the rule. */
static void json_series(FILE *f, const struct adump_report *r)
{
	fprintf(f, ",\"rule\":{\"factor\":%g,\"history\":%u,\"min_history\":%u},\"series\":[",
		ADUMP_REPORT_SPIKE_FACTOR, ADUMP_REPORT_SPIKE_HISTORY, ADUMP_REPORT_SPIKE_MIN_HISTORY);
	for (size_t i = 0; i < r->series_count; i++) {
		const struct report_series *s = &r->series[i];

		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f);
		report_json_str(f, s->name);
		fprintf(f, ",\"rank\":%lld,\"dtype\":", (long long)s->rank);
		report_json_str(f, s->dtype);
		fputs(",\"shape\":", f);
		report_json_str(f, s->shape);
		fputs(",\"points\":[", f);
		for (size_t k = 0; k < s->point_count; k++) {
			const struct report_point *p = &r->points[s->point_first + k];

			fprintf(f, "%s[%lld", k ? "," : "", (long long)p->step);
			for (int j = 0; j < 4; j++) {
				fputc(',', f);
				json_stat(f, p, j);
			}
			if (p->has & REPORT_POINT_HAS_COUNTS)
				fprintf(f, ",%llu,%llu", (unsigned long long)p->nan_count,
					(unsigned long long)p->inf_count);
			else
				fputs(",null,null", f);
			fprintf(f, ",%u,", p->flags);
			report_json_str(f, p->why);
			fputc(']', f);
		}
		fputs("]}", f);
	}
	fputs("],\"triggers\":[", f);
	for (size_t i = 0; i < r->trigger_count; i++) {
		const struct report_trigger *t = &r->triggers[i];

		fprintf(f, "%s{\"step\":%lld,\"rank\":%lld,\"rule\":", i ? "," : "",
			(long long)t->step, (long long)t->rank);
		report_json_str(f, t->rule);
		fputs(",\"tensor\":", f);
		report_json_str(f, t->tensor);
		fputs(",\"reason\":", f);
		report_json_str(f, t->reason);
		fputs(",\"value\":", f);
		report_json_str(f, t->value);
		fputs(",\"path\":", f);
		report_json_str(f, t->path);
		fputc('}', f);
	}
	fputs("],\"pairs\":[]}", f);
}

/* When the page says it was written: now, or SOURCE_DATE_EPOCH (seconds since 1970) where it
 * is set, as reproducible builds use it, so two writings of one result give the same bytes. */
static time_t report_time(void)
{
	const char *epoch = getenv("SOURCE_DATE_EPOCH");
	unsigned long long v;
	char *end;

	if (epoch && *epoch >= '0' && *epoch <= '9') {
		errno = 0;
		v = strtoull(epoch, &end, 10);
		if (!errno && !*end && v <= (unsigned long long)INT32_MAX * 4)
			return (time_t)v;
	}
	return time(NULL);
}

/* The page's data: one object, read by page.js from #adump-data. */
static void json_data(FILE *f, const struct adump_report *r)
{
	char when[64];
	time_t t = report_time();
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	if (r->kind == ADUMP_REPORT_SERIES) {
		fputs("{\"kind\":\"series\",\"title\":", f);
		report_json_str(f, r->title);
		fputs(",\"source\":", f);
		report_json_str(f, r->source);
		fprintf(f, ",\"generated\":\"%s\",\"fields\":[]", when);
		json_series(f, r);
		return;
	}
	fprintf(f, "{\"kind\":\"%s\",\"title\":", r->kind == ADUMP_REPORT_SCAN ? "scan" : "compare");
	report_json_str(f, r->title);
	fputs(",\"source\":", f);
	report_json_str(f, r->source);
	fprintf(f, ",\"generated\":\"%s\",\"fields\":[\"index\",\"type\",\"op\",\"tensor\","
		"\"module\",\"verdict\",\"reason\",\"cosine\",\"max_rel\",\"max_abs\",\"scaled\","
		"\"dtype_my\",\"dtype_golden\",\"shape\",\"stats_my\",\"stats_golden\",\"counts\","
		"\"scan_kind\"],\"construct\":", when);
	if (r->construct)
		report_json_raw(f, r->construct);
	else
		fputs("null", f);
	fputs(",\"pairs\":[", f);
	for (size_t i = 0; i < r->pair_count; i++) {
		const struct report_pair *p = &r->pairs[i];

		fputs(i ? ",\n{\"label\":" : "\n{\"label\":", f);
		report_json_str(f, p->label);
		fprintf(f, ",\"step\":%lld,\"rank\":%lld,\"code\":%d,\"first\":%lld,\"rejudged\":%s,"
			"\"message\":", (long long)p->step, (long long)p->rank, p->code,
			(long long)p->first, p->is_rejudged ? "true" : "false");
		report_json_str(f, p->message);
		fputs(",\"rows\":[", f);
		for (size_t k = 0; k < p->row_count; k++) {
			fputs(k ? ",\n" : "\n", f);
			json_row(f, &r->rows[p->row_first + k], r->kind);
		}
		fputs("]}", f);
	}
	fputs("]}", f);
}

/* Chart.js's file, whole; refused when it could end the script element it goes into. */
static char *chartjs_read(const char *path, char *msg, size_t cap, int *ret)
{
	char *buf = NULL;
	size_t len = 0, got;
	int fd = adump_open_regular(path);
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;

	if (!f) {
		*ret = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		snprintf(msg, cap, "%s: %s: the report inlines Chart.js (Debian: apt install "
			 "libjs-chart.js; or --chartjs PATH)", path, adump_open_strerror(*ret));
		return NULL;
	}
	for (;;) {
		char *p = realloc(buf, len + 65536 + 1);

		if (!p || len > (64u << 20)) {
			free(p ? p : buf);
			fclose(f);
			*ret = p ? -EFBIG : -ENOMEM;
			snprintf(msg, cap, "%s: %s", path, p ? "larger than 64 MiB: not Chart.js"
							    : strerror(ENOMEM));
			return NULL;
		}
		buf = p;
		got = fread(buf + len, 1, 65536, f);
		len += got;
		if (got < 65536)
			break;
	}
	fclose(f);
	buf[len] = '\0';
	if (strlen(buf) != len || strcasestr(buf, "</script") || strstr(buf, "<!--") ||
	    !strstr(buf, "Chart")) {
		free(buf);
		*ret = -EINVAL;
		snprintf(msg, cap, "%s: not a Chart.js build that can be inlined", path);
		return NULL;
	}
	return buf;
}

int adump_report_write_html(const struct adump_report *r, const char *path, const char *chartjs,
			    char *msg, size_t cap)
{
	static const char mark[] = "<!--ADUMP:";
	const char *t = adump_report_page_html;
	char dir[4200];
	const char *base = strrchr(path, '/');
	struct adump_outfile of;
	int ret = 0, dir_fd;
	char *js = chartjs_read(chartjs ? chartjs : adump_report_chartjs_default(), msg, cap, &ret);
	FILE *f;

	if (!js)
		return ret;
	/* Written under a temporary name of its own beside @path and renamed once whole: a
	 * full disk leaves no cut page under the name, a link planted there is replaced. */
	if (base)
		snprintf(dir, sizeof(dir), "%.*s", (int)(base - path) ? (int)(base - path) : 1, path);
	else
		snprintf(dir, sizeof(dir), ".");
	base = base ? base + 1 : path;
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ret = dir_fd < 0 ? -errno : adump_outfile_open(&of, dir_fd, 0644);
	f = ret < 0 ? NULL : adump_outfile_stream(&of);
	if (!f || !*base) {
		if (ret == 0) {
			adump_outfile_discard(&of);
			ret = *base ? -ENOMEM : -EISDIR;
		}
		snprintf(msg, cap, "%s: %s", path, strerror(-ret));
		if (dir_fd >= 0)
			close(dir_fd);
		free(js);
		return ret;
	}
	while (*t) {
		const char *m = strstr(t, mark), *end;

		if (!m) {
			fputs(t, f);
			break;
		}
		fwrite(t, 1, (size_t)(m - t), f);
		end = strstr(m, "-->");
		if (!end)
			break;
		if (!strncmp(m, "<!--ADUMP:CSS-->", 16))
			fputs(adump_report_page_css, f);
		else if (!strncmp(m, "<!--ADUMP:CHARTJS-->", 20))
			fputs(js, f);
		else if (!strncmp(m, "<!--ADUMP:JS-->", 15)) {
			fputs(adump_report_page_dom_js, f);
			fputs(adump_report_page_series_js, f);
			fputs(adump_report_page_js, f);
		}
		else if (!strncmp(m, "<!--ADUMP:DATA-->", 17))
			json_data(f, r);
		else if (!strncmp(m, "<!--ADUMP:TITLE-->", 18)) {
			/* The title element's text: the JSON escapes are no HTML, so only words. */
			fputs(r->kind == ADUMP_REPORT_SCAN     ? "adump scan report"
			      : r->kind == ADUMP_REPORT_SERIES ? "adump statistics over steps"
							       : "adump compare report", f);
		}
		t = end + 3;
	}
	free(js);
	ret = adump_outfile_publish(&of, ferror(f) ? -EIO : 0, base, 0);
	close(dir_fd);
	if (ret < 0)
		snprintf(msg, cap, "%s: %s", path, strerror(-ret));
	return ret;
}
