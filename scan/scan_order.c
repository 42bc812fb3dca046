/* SPDX-License-Identifier: Apache-2.0 */
/* scan's answer: the anomalous dumps, in execution order, sorted into kinds (origin, reached,
 * entered, enclosing, uninitialized, unreadable), with module calls told apart from the ops
 * that ran inside them by their module paths. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan/scan_int.h"

/* A module-level dump's module path and direction, from its name: "Module.0.fc.Linear.
 * forward.0" -> "0.fc", "forward" (separator '.' or, in a CANN file name, '_'). Return:
 * false when @name is no module call's (an op, a parameters_grad entry). */
static bool module_path(const char *name, const char **path, size_t *path_len,
			const char **dir, size_t *dir_len)
{
	const char *field[3], *end;
	char sep;

	if (!name || strncmp(name, "Module", 6) || (name[6] != '.' && name[6] != '_'))
		return false;
	sep = name[6];
	end = name + strlen(name);
	/* the last three fields: <Class>, <direction>, <call number> */
	for (int k = 2; k >= 0; k--) {
		while (end > name + 6 && end[-1] != sep)
			end--;
		if (end <= name + 6)
			return false;
		field[k] = end--;
	}
	*dir = field[1];
	*dir_len = (size_t)(field[2] - field[1] - 1);
	if ((*dir_len != 7 || strncmp(*dir, "forward", 7)) &&
	    (*dir_len != 8 || strncmp(*dir, "backward", 8)))
		return false;
	*path = name + 7;
	*path_len = field[0] > name + 7 ? (size_t)(field[0] - 1 - *path) : 0;
	return true;
}

/* Whether dump @inner ran inside module call @outer: its module path lies strictly below
 * @outer's (or @outer is the root's), in the same direction. */
static bool is_inside(const char *outer, const char *inner)
{
	const char *po, *pi, *dout, *din;
	size_t lo, li, ldo, ldi;

	if (!module_path(outer, &po, &lo, &dout, &ldo) || !module_path(inner, &pi, &li, &din, &ldi))
		return false;
	if (ldo != ldi || strncmp(dout, din, ldo))
		return false;
	if (!lo)
		return li > 0;
	return li > lo && !strncmp(po, pi, lo) && pi[lo] == outer[6];
}

/* Whether dump @j ran inside module call @name and made non-finite outputs. */
static bool made_inside(const struct adump_scan *s, size_t j, const char *name, bool *is_in)
{
	const struct scan_result *g = &s->res[j];

	*is_in = is_inside(name, g->op_name ? g->op_name : s->side.files[j].op_name);
	return *is_in && !g->message && adump_scan_is_bad(&g->counts[1]);
}

/* The first op that ran inside module call @i (@name) and made non-finite outputs, among the
 * dumps right before it that ran inside it (a call's forward dump comes after its
 * children's) and, for a backward call, those right after it (adump.torch dumps a module's
 * backward before its children's). NULL: none. */
static const char *child_made(const struct adump_scan *s, size_t i, const char *name)
{
	size_t first = SIZE_MAX;
	bool is_in = true;

	for (size_t j = i; j-- > 0 && is_in;)
		if (made_inside(s, j, name, &is_in))
			first = j;
	if (first == SIZE_MAX && strstr(name, "backward")) {
		is_in = true;
		for (size_t j = i + 1; j < s->side.count && is_in && first == SIZE_MAX; j++)
			if (made_inside(s, j, name, &is_in))
				first = j;
	}
	if (first == SIZE_MAX)
		return NULL;
	return s->res[first].op_name ? s->res[first].op_name : s->side.files[first].op_name;
}

/* Sort the anomalous dumps (in execution order) into kinds: non-finite inputs are "entered"
 * when they are all parameters or no op before made any, else "reached"; non-finite outputs
 * from finite inputs are "origin", unless the dump is a module call and an op that ran inside
 * it made them ("enclosing"), or it is a parameters_grad entry after them ("reached").
 * NaN/Inf only in uninitialized memory: "uninitialized". */
int adump_scan_classify(struct adump_scan *s)
{
	bool has_made = false;

	for (size_t i = 0; i < s->side.count; i++) {
		const struct cmp_file *f = &s->side.files[i];
		struct scan_result *r = &s->res[i];
		const char *name = r->op_name ? r->op_name : f->op_name;
		bool is_in = adump_scan_is_bad(&r->counts[0]), is_out = adump_scan_is_bad(&r->counts[1]);
		enum adump_scan_kind kind = 0;
		const char *inner = NULL;

		if (r->message) {
			kind = ADUMP_SCAN_UNREADABLE;
		} else if (is_in && (!r->has_arg || !has_made)) {
			kind = ADUMP_SCAN_ENTERED;
			if (asprintf(&r->note, "first seen in %s of %s%s%s%s, made by no captured op",
				     r->first_input, name, r->module ? " (in " : "",
				     r->module ? r->module : "", r->module ? ")" : "") < 0)
				return -ENOMEM;
		} else if (is_in) {
			kind = ADUMP_SCAN_REACHED;
		} else if (is_out) {
			kind = ADUMP_SCAN_ORIGIN;
			inner = child_made(s, i, name);
			if (inner) {
				kind = ADUMP_SCAN_ENCLOSING;
				if (asprintf(&r->note, "made inside it, by %s", inner) < 0)
					return -ENOMEM;
			} else if (has_made && strstr(name, "parameters_grad")) {
				kind = ADUMP_SCAN_REACHED;      /* a backward's gradient, after them */
			}
		} else if (r->has_uninit) {
			kind = ADUMP_SCAN_UNINITIALIZED;
		}
		if (!kind)
			continue;
		has_made |= is_out || is_in;
		s->ops[s->op_count++] = (struct adump_scan_op){
			.kind = kind, .order = i, .timestamp = f->timestamp, .path = f->path,
			.op_type = f->op_type, .op_name = name,
			.inputs = r->counts[0], .outputs = r->counts[1], .first_tensor = r->first,
			.message = r->message ? r->message : r->note ? r->note : "",
		};
	}
	return 0;
}
