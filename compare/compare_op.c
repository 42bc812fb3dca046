/* SPDX-License-Identifier: Apache-2.0 */
/* One op of a compare, on a worker: the one-sided, clashing and not-the-same-op cases,
 * msaccucmp's group rule (equal tensor counts, then equal formats and shapes, inputs and
 * outputs each as a whole), msprobe entries' pairing by position, and statistics dumps; each
 * tensor pair it lets through becomes a row in compare_rows.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "compare/compare_int.h"

/* A format as msaccucmp names it: adump's name, but for the few it spells differently. */
static void format_text(int32_t format, char *buf, size_t cap)
{
	const char *name = adump_format_name(format);

	if (!name)
		snprintf(buf, cap, "%d", (int)format);
	else if (!strncmp(name, "HASHTABLE_", 10))
		snprintf(buf, cap, "%s", name + 10);
	else if (!strcmp(name, "FRACTAL_DECONV_SP_STRIDE8_TRANS"))
		snprintf(buf, cap, "%s", name + 8);
	else
		snprintf(buf, cap, "%s", name);
}

#define SHAPE_TEXT (ADUMP_MAX_DIMS * 22 + 3)

/* Whether @a and @b have one shape; when not, both as msaccucmp writes them into @sa, @sb. */
static bool same_shape(const struct adump_tensor *a, const struct adump_tensor *b,
		       char sa[SHAPE_TEXT], char sb[SHAPE_TEXT])
{
	bool is_same = a->dim_count == b->dim_count;

	for (uint32_t d = 0; is_same && d < a->dim_count; d++)
		is_same = a->dims[d] == b->dims[d];
	if (!is_same) {
		adump_compare_dims_text(a->dims, a->dim_count, "()", sa, SHAPE_TEXT);
		adump_compare_dims_text(b->dims, b->dim_count, "()", sb, SHAPE_TEXT);
	}
	return is_same;
}

/* msaccucmp's check of one group (inputs or outputs) as a whole: equal counts, then pair by
 * pair equal formats and shapes. Return: true when the group can be compared; otherwise @msg
 * says why. */
static bool group_check(const struct adump_reader_header *h[2], const char *op_name,
			enum adump_tensor_kind kind, char *msg, size_t cap)
{
	const char *what = kind == ADUMP_TENSOR_INPUT ? "input" : "output";
	uint32_t n[2] = { h[MY]->kind_count[kind], h[GOLDEN]->kind_count[kind] };
	uint32_t first[2] = { 0, 0 };

	if (n[MY] != n[GOLDEN]) {
		snprintf(msg, cap, "[%s] The number of %s does not match (%u vs %u).", op_name, what,
			 n[MY], n[GOLDEN]);
		return false;
	}
	if (!n[MY]) {
		snprintf(msg, cap, "[%s] There is no %s. Skip the %s:%s.", op_name, what, op_name,
			 what);
		return false;
	}
	for (int s = 0; s < 2; s++)
		for (uint32_t k = 0; k < (uint32_t)kind; k++)
			first[s] += h[s]->kind_count[k];
	for (uint32_t i = 0; i < n[MY]; i++) {
		const struct adump_tensor *a = &h[MY]->tensors[first[MY] + i].info;
		const struct adump_tensor *b = &h[GOLDEN]->tensors[first[GOLDEN] + i].info;
		char sa[SHAPE_TEXT], sb[SHAPE_TEXT];

		if (a->format != b->format) {
			char fa[64], fb[64];

			format_text(a->format, fa, sizeof(fa));
			format_text(b->format, fb, sizeof(fb));
			snprintf(msg, cap, "[%s] The format does not match (%s vs %s) for %s:%s:%u.",
				 op_name, fa, fb, op_name, what, i);
			return false;
		}
		if (!same_shape(a, b, sa, sb)) {
			snprintf(msg, cap, "[%s] The shape does not match (%s vs %s) for %s:%s:%u.",
				 op_name, sa, sb, op_name, what, i);
			return false;
		}
	}
	return true;
}

/* An op with an msprobe entry on a side: tensors are matched by position within inputs and
 * within outputs, each pair on its own, rather than msaccucmp's all-or-nothing group rule,
 * since the layouts need not record the same arguments (an msprobe module entry lists its
 * parameters after its arguments; a CANN capture may not): a tensor without counterpart, or
 * whose shape differs, gets a row saying so and the others are compared. @w NULL: compare
 * statistics @st. Return: 0 or -ENOMEM. */
static int op_compare_by_position(struct adump_compare *c, struct cmp_worker *w, struct cmp_op *op,
				  const char *op_type, const struct adump_reader_header *h[2],
				  const struct adump_compare_stats *st)
{
	int ret = 0;

	for (int g = 0; g < 2 && ret == 0; g++) {
		enum adump_tensor_kind kind = g ? ADUMP_TENSOR_OUTPUT : ADUMP_TENSOR_INPUT;
		const char *what = g ? "output" : "input";
		uint32_t first[2] = { 0, 0 }, n[2];

		for (int s = 0; s < 2; s++) {
			for (uint32_t k = 0; k < (uint32_t)kind; k++)
				first[s] += h[s]->kind_count[k];
			n[s] = h[s]->kind_count[kind];
		}
		for (uint32_t i = 0; i < n[MY] || i < n[GOLDEN]; i++) {
			char text[4096];

			if (i >= n[MY] || i >= n[GOLDEN]) {
				snprintf(text, sizeof(text), "[%.900s] %.900s:%s:%u has no counterpart "
					 "in %s (%u vs %u %ss).", op->name, op->name, what, i,
					 i >= n[MY] ? "my output" : "the ground truth", n[MY], n[GOLDEN],
					 what);
				ret = adump_compare_row_failed(c, op, op_type, text);
				continue;
			}
			{
				const struct adump_tensor *a = &h[MY]->tensors[first[MY] + i].info;
				const struct adump_tensor *b = &h[GOLDEN]->tensors[first[GOLDEN] + i].info;
				char sa[SHAPE_TEXT], sb[SHAPE_TEXT];

				if (!same_shape(a, b, sa, sb)) {
					snprintf(text, sizeof(text), "[%.900s] The shape does not match (%s "
						 "vs %s) for %.900s:%s:%u.", op->name, sa, sb, op->name, what,
						 i);
					adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
					ret = adump_compare_row_failed(c, op, op_type, text);
					continue;
				}
			}
			ret = w ? adump_compare_tensor_row(w, op, op_type, kind, i, first)
				: adump_compare_stats_row(c, op, st, kind, i, first);
		}
	}
	return ret;
}

/* An op whose files are statistics dumps (both, or one: then it cannot be compared). */
static int op_compare_stats(struct cmp_worker *w, struct cmp_op *op)
{
	struct adump_compare *c = w->c;
	struct adump_compare_stats st[2];
	const struct adump_reader_header *h[2] = { &st[MY].header, &st[GOLDEN].header };
	char text[2 * MSG_BYTES + 2], msg_io[2][MSG_BYTES];
	bool ok[2];
	int ret = 0;

	memset(st, 0, sizeof(st));
	if (!adump_compare_file_has_stats(op->file[MY]) ||
	    !adump_compare_file_has_stats(op->file[GOLDEN]) || !c->is_stats) {
		bool is_my = adump_compare_file_has_stats(op->file[MY]);
		bool is_golden = adump_compare_file_has_stats(op->file[GOLDEN]);

		snprintf(text, sizeof(text), is_my && is_golden ?
			 "[%s] Both sides are statistics dumps, but other ops are tensor dumps: "
			 "compare statistics dumps on their own." :
			 "[%s] %s is a statistics dump and %s a tensor dump: they cannot be compared.",
			 op->name, is_my ? "My output" : "The ground truth",
			 is_my ? "the ground truth" : "my output");
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
		op->code = 11;
		return adump_compare_row_failed(c, op, op->file[MY]->op_type, text);
	}
	for (int s = 0; s < 2; s++) {
		ret = op->file[s]->ms ?
			adump_compare_stats_msprobe(op->file[s]->ms, op->file[s]->ms_entry, &st[s]) :
			adump_compare_stats_load(op->file[s]->path, &st[s], w->msg, sizeof(w->msg));
		if (ret < 0)
			break;
	}
	if (ret < 0) {
		snprintf(text, sizeof(text), "[%s] %s", op->name, w->msg);
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
		op->code = 18;
		ret = ret == -ENOMEM ? ret : adump_compare_row_failed(c, op, NULL, text);
		goto out;
	}
	if (op->file[MY]->ms || op->file[GOLDEN]->ms) {
		ret = op_compare_by_position(c, NULL, op, op->file[MY]->op_type, h, st);
		goto out;
	}
	for (int g = 0; g < 2; g++)
		ok[g] = group_check(h, op->name, g ? ADUMP_TENSOR_OUTPUT : ADUMP_TENSOR_INPUT,
				    msg_io[g], sizeof(msg_io[g]));
	if (!ok[0] && !ok[1]) {
		snprintf(text, sizeof(text), "%s,%s", msg_io[0], msg_io[1]);
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
		op->code = 11;
		ret = adump_compare_row_failed(c, op, op->file[MY]->op_type, text);
		goto out;
	}
	for (int g = 0; g < 2 && ret == 0; g++) {
		enum adump_tensor_kind kind = g ? ADUMP_TENSOR_OUTPUT : ADUMP_TENSOR_INPUT;
		uint32_t first[2] = { g ? h[MY]->kind_count[ADUMP_TENSOR_INPUT] : 0,
				      g ? h[GOLDEN]->kind_count[ADUMP_TENSOR_INPUT] : 0 };

		if (!ok[g]) {
			adump_log(ADUMP_LOG_INFO, "reader", "compare: %s", msg_io[g]);
			continue;
		}
		for (uint32_t i = 0; i < h[MY]->kind_count[kind] && ret == 0; i++)
			ret = adump_compare_stats_row(c, op, st, kind, i, first);
	}
out:
	adump_compare_stats_free(&st[MY]);
	adump_compare_stats_free(&st[GOLDEN]);
	return ret;
}

int adump_compare_op(struct cmp_worker *w, struct cmp_op *op)
{
	struct adump_compare *c = w->c;
	const struct adump_reader_header *h[2];
	char msg_in[MSG_BYTES], msg_out[MSG_BYTES];
	bool ok_in, ok_out;
	const char *op_type;
	int ret = 0;

	if (!op->file[GOLDEN] || !op->file[MY]) {
		char text[4096 + 128];

		snprintf(text, sizeof(text), "[%s] There is no the %s dump file for the op \"%s\".",
			 op->name, op->file[MY] ? "ground truth" : "my output", op->name);
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
		op->code = 2;
		return adump_compare_row_failed(c, op, NULL, text);
	}
	op_type = op->file[MY]->op_type;
	for (int s = 0; s < 2; s++)
		if (op->file[s]->clash) {
			/* Two dumps of one op and timestamp: which is which is unknown. */
			op->code = 2;
			return adump_compare_row_failed(c, op, op_type, op->file[s]->clash);
		}
	if (c->is_stats || op->file[MY]->is_stats || op->file[GOLDEN]->is_stats) {
		static const struct adump_reader_header no_attrs;

		op->module = adump_compare_module_of(&no_attrs, op->name);
		ret = op_compare_stats(w, op);
		op->module = NULL;
		return ret;
	}
	for (int s = 0; s < 2; s++) {
		char text[MSG_BYTES];

		ret = adump_compare_side_open(w, op, s, &w->h[s], text, sizeof(text));
		h[s] = w->h[s];
		/* msaccucmp names the op by the header of my output's dump when that has
		 * attributes (not a merged FFTS+ dump: msaccucmp's has none). */
		if (ret == 0 && s == MY && !w->merged[MY] && h[MY]->attr_count && h[MY]->op_name &&
		    h[MY]->op_name[0])
			op->shown = h[MY]->op_name;
		if (ret == 0 && s == MY)
			op->module = adump_compare_module_of(h[MY], op->shown ? op->shown : op->name);
		if (ret > 0) {
			adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
			op->code = ret;
			ret = adump_compare_row_failed(c, op, NULL, text);
			goto out;
		}
		if (ret < 0)
			goto out;
	}
	if (!w->merged[MY] && !w->merged[GOLDEN] &&
	    adump_compare_names_collide(h[MY]->op_name, h[GOLDEN]->op_name)) {
		char text[3 * MSG_BYTES];

		/* One dump a side, alike by file name only: not the same op (modules a.b, a_b). */
		snprintf(text, sizeof(text), "[%s] Not the same op: my output's dump (%s) holds "
			 "%.2048s, the ground truth's (%s) %.2048s; only their file names are alike.",
			 op->name, w->path[MY], h[MY]->op_name, w->path[GOLDEN],
			 h[GOLDEN]->op_name);
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
		op->code = 2;
		ret = adump_compare_row_failed(c, op, op_type, text);
		goto out;
	}
	if (op->file[MY]->ms || op->file[GOLDEN]->ms) {
		ret = op_compare_by_position(c, w, op, op_type, h, NULL);
		goto out;
	}
	ok_in = group_check(h, op->name, ADUMP_TENSOR_INPUT, msg_in, sizeof(msg_in));
	ok_out = group_check(h, op->name, ADUMP_TENSOR_OUTPUT, msg_out, sizeof(msg_out));
	if (!ok_in && !ok_out) {
		char text[2 * MSG_BYTES];

		snprintf(text, sizeof(text), "%s,%s", msg_in, msg_out);
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
		op->code = 11;
		ret = adump_compare_row_failed(c, op, NULL, text);
		goto out;
	}
	for (int g = 0; g < 2 && ret == 0; g++) {
		enum adump_tensor_kind kind = g ? ADUMP_TENSOR_OUTPUT : ADUMP_TENSOR_INPUT;
		uint32_t first[2] = { 0, 0 };

		if (!(g ? ok_out : ok_in)) {
			adump_log(ADUMP_LOG_INFO, "reader", "compare: %s", g ? msg_out : msg_in);
			continue;
		}
		for (int s = 0; s < 2; s++)
			for (uint32_t k = 0; k < (uint32_t)kind; k++)
				first[s] += h[s]->kind_count[k];
		for (uint32_t i = 0; i < h[MY]->kind_count[kind] && ret == 0; i++)
			ret = adump_compare_tensor_row(w, op, op_type, kind, i, first);
	}
out:
	op->shown = NULL;
	op->module = NULL;
	for (int s = 0; s < 2; s++) {
		adump_compare_subs_close(w, s);
		adump_reader_close(w->r[s]);
	}
	return ret;
}
