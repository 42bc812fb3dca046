/* SPDX-License-Identifier: Apache-2.0 */
/* acl.json's selection keys (reference §3): dump_list items (model_name, layer,
 * watcher_nodes, optype_blacklist / opname_blacklist with their pos lists, opname_range) and
 * dump_step, parsed for acl/config.c; and the answer they give, adump_acl_cfg_select(): which
 * tensors of an op are dumped at a step. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acl/config_int.h"

/* pos items are "inputN" / "outputN". */
static int parse_pos(const char *s, uint32_t *mask)
{
	const char *digits;
	unsigned shift;
	char *end;
	unsigned long n;

	if (!strncmp(s, "input", 5)) {
		digits = s + 5;
		shift = 0;
	} else if (!strncmp(s, "output", 6)) {
		digits = s + 6;
		shift = 16;
	} else {
		return -1;
	}
	if (!isdigit((unsigned char)*digits))
		return -1;
	n = strtoul(digits, &end, 10);
	if (*end || n >= 16)
		return -1;
	*mask |= 1u << (shift + n);
	return 0;
}

int adump_acl_parse_blacklist(struct json_object *arr, const char *key, const char *origin,
			      struct adump_acl_blacklist **out, size_t *count)
{
	size_t n;

	if (!json_object_is_type(arr, json_type_array))
		REJECT(key, "must be an array of {name, pos} objects");
	n = json_object_array_length(arr);
	if (n > ADUMP_ACL_BLACKLIST_MAX)
		REJECT(key, "%zu items, at most %d allowed", n, ADUMP_ACL_BLACKLIST_MAX);
	*out = calloc(n ? n : 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	*count = n;
	for (size_t i = 0; i < n; i++) {
		struct json_object *item = json_object_array_get_idx(arr, i), *name, *pos;

		if (!json_object_is_type(item, json_type_object))
			REJECT(key, "item %zu must be an object", i);
		if (!json_object_object_get_ex(item, "name", &name) ||
		    !json_object_is_type(name, json_type_string) || !json_object_get_string_len(name))
			REJECT(key, "item %zu needs a non-empty string \"name\"", i);
		(*out)[i].name = strdup(json_object_get_string(name));
		if (!(*out)[i].name)
			return -ENOMEM;
		if (!json_object_object_get_ex(item, "pos", &pos))
			continue;
		if (!json_object_is_type(pos, json_type_array))
			REJECT(key, "item %zu: pos must be an array of strings", i);
		for (size_t j = 0; j < json_object_array_length(pos); j++) {
			struct json_object *p = json_object_array_get_idx(pos, j);

			if (!json_object_is_type(p, json_type_string) ||
			    parse_pos(json_object_get_string(p), &(*out)[i].pos_mask) < 0)
				REJECT(key, "item %zu: pos entries must be inputN or outputN", i);
		}
	}
	return 0;
}

int adump_acl_parse_list_entry(struct json_object *item, size_t idx,
			       const struct adump_acl_cfg *cfg, const char *origin,
			       struct adump_acl_list_entry *e)
{
	struct json_object *v;
	int ret;

	if (!json_object_is_type(item, json_type_object))
		REJECT("dump_list", "item %zu must be an object", idx);
	json_object_object_foreach(item, key, val) {
		(void)val;
		if (strcmp(key, "model_name") && strcmp(key, "layer") && strcmp(key, "watcher_nodes") &&
		    strcmp(key, "optype_blacklist") && strcmp(key, "opname_blacklist") &&
		    strcmp(key, "opname_range"))
			adump_log(ADUMP_LOG_WARN, MOD, "%s: dump.dump_list[%zu]: unknown key \"%s\" ignored",
				  origin, idx, key);
	}
	if (json_object_object_get_ex(item, "model_name", &v)) {
		if (!json_object_is_type(v, json_type_string))
			REJECT("dump_list.model_name", "must be a string");
		if (cfg->scene == ADUMP_ACL_SCENE_WATCHER)
			REJECT("dump_list.model_name", "not allowed with dump_scene watcher");
		if (!json_object_get_string_len(v) && !cfg->is_op_switch)
			REJECT("dump_list.model_name", "must not be empty");
		e->model_name = strdup(json_object_get_string(v));
		if (!e->model_name)
			return -ENOMEM;
	}
	if (json_object_object_get_ex(item, "layer", &v)) {
		ret = adump_acl_string_array(v, "dump_list.layer", origin, &e->layers, &e->layer_count);
		if (ret < 0)
			return ret;
	}
	if (json_object_object_get_ex(item, "watcher_nodes", &v)) {
		if (cfg->scene != ADUMP_ACL_SCENE_WATCHER)
			REJECT("dump_list.watcher_nodes", "only allowed with dump_scene watcher");
		ret = adump_acl_string_array(v, "dump_list.watcher_nodes", origin, &e->watcher_nodes,
				   &e->watcher_count);
		if (ret < 0)
			return ret;
	} else if (cfg->scene == ADUMP_ACL_SCENE_WATCHER) {
		REJECT("dump_list.watcher_nodes", "required with dump_scene watcher");
	}
	if (json_object_object_get_ex(item, "optype_blacklist", &v)) {
		if (cfg->level != ADUMP_ACL_LEVEL_OP)
			REJECT("dump_list.optype_blacklist", "only allowed with dump_level op");
		ret = adump_acl_parse_blacklist(v, "dump_list.optype_blacklist", origin, &e->optype_blacklist,
				      &e->optype_blacklist_count);
		if (ret < 0)
			return ret;
	}
	if (json_object_object_get_ex(item, "opname_blacklist", &v)) {
		if (cfg->level != ADUMP_ACL_LEVEL_OP)
			REJECT("dump_list.opname_blacklist", "only allowed with dump_level op");
		ret = adump_acl_parse_blacklist(v, "dump_list.opname_blacklist", origin, &e->opname_blacklist,
				      &e->opname_blacklist_count);
		if (ret < 0)
			return ret;
	}
	if (json_object_object_get_ex(item, "opname_range", &v)) {
		struct json_object *r, *b, *en;

		if (cfg->level != ADUMP_ACL_LEVEL_OP)
			REJECT("dump_list.opname_range", "only allowed with dump_level op");
		if (!e->model_name || !*e->model_name)
			REJECT("dump_list.opname_range", "needs a non-empty model_name");
		if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) == 0)
			REJECT("dump_list.opname_range", "must be a non-empty array of {begin, end}");
		/* Ranges select ops inside a model's execution order; adump keeps the first. */
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			r = json_object_array_get_idx(v, i);
			if (!json_object_is_type(r, json_type_object) ||
			    !json_object_object_get_ex(r, "begin", &b) ||
			    !json_object_object_get_ex(r, "end", &en) ||
			    !json_object_is_type(b, json_type_string) ||
			    !json_object_is_type(en, json_type_string) ||
			    !json_object_get_string_len(b) || !json_object_get_string_len(en))
				REJECT("dump_list.opname_range", "item %zu needs non-empty begin and end", i);
			if (i == 0) {
				e->range_begin = strdup(json_object_get_string(b));
				e->range_end = strdup(json_object_get_string(en));
				if (!e->range_begin || !e->range_end)
					return -ENOMEM;
			}
		}
	}
	return 0;
}

/* dump_step: "N" or "N-M" items joined by '|', at most 100, N <= M. */
int adump_acl_parse_steps(const char *s, const char *origin, struct adump_acl_cfg *cfg)
{
	const char *p = s;

	if (!*s)
		REJECT("dump_step", "must not be empty");
	while (*p) {
		struct adump_acl_step_range r;
		char *end;

		if (cfg->step_count == ADUMP_ACL_STEP_MAX)
			REJECT("dump_step", "more than %d items", ADUMP_ACL_STEP_MAX);
		if (!isdigit((unsigned char)*p))
			REJECT("dump_step", "\"%s\": items are N or N-M with decimal digits", s);
		errno = 0;
		r.first = strtoull(p, &end, 10);
		r.last = r.first;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				REJECT("dump_step", "\"%s\": items are N or N-M with decimal digits", s);
			r.last = strtoull(end + 1, &end, 10);
		}
		if (errno == ERANGE)
			REJECT("dump_step", "\"%s\": number out of range", s);
		if (r.first > r.last)
			REJECT("dump_step", "\"%s\": range %llu-%llu runs backwards", s,
			       (unsigned long long)r.first, (unsigned long long)r.last);
		if (*end && *end != '|')
			REJECT("dump_step", "\"%s\": items are separated by '|'", s);
		cfg->steps[cfg->step_count++] = r;
		if (*end == '|') {
			if (!end[1])
				REJECT("dump_step", "\"%s\": empty item after '|'", s);
			end++;
		}
		p = end;
	}
	return 0;
}

static bool in_strv(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], s))
			return true;
	return false;
}

/* Drop tensors a blacklist entry names; a whole-op entry (no pos) drops everything. */
static uint32_t apply_blacklist(const struct adump_acl_blacklist *b, size_t n, const char *name,
				uint32_t mask, uint32_t input_count, uint32_t output_count)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t in_all = input_count >= 16 ? 0xffffu : (1u << input_count) - 1;
		uint32_t out_all = output_count >= 16 ? 0xffffu : (1u << output_count) - 1;

		if (strcmp(b[i].name, name))
			continue;
		if (!b[i].pos_mask)
			return 0;
		/* The simulated DMA engine dumps all inputs or none (likewise outputs), so a
		 * position is honoured when the list covers every tensor of that kind. */
		if ((b[i].pos_mask & in_all) == in_all)
			mask &= ~(uint32_t)ADUMP_DUMP_INPUTS;
		if (((b[i].pos_mask >> 16) & out_all) == out_all)
			mask &= ~(uint32_t)ADUMP_DUMP_OUTPUTS;
	}
	return mask;
}

uint32_t adump_acl_cfg_select(const struct adump_acl_cfg *cfg, const char *op_type,
			      const char *op_name, uint64_t step, uint32_t input_count,
			      uint32_t output_count)
{
	bool is_selected = false, has_layers = false;
	uint32_t mask;

	if (!adump_acl_cfg_is_data_dump(cfg))
		return 0;
	if (cfg->step_count) {
		size_t i;

		for (i = 0; i < cfg->step_count; i++)
			if (step >= cfg->steps[i].first && step <= cfg->steps[i].last)
				break;
		if (i == cfg->step_count)
			return 0;
	}
	/* Watcher: the outputs of the watched nodes are dumped (CANN dumps them after each
	 * op of the layer list to catch memory overwrites; single ops are their own layer). */
	if (cfg->scene == ADUMP_ACL_SCENE_WATCHER) {
		for (size_t i = 0; i < cfg->list_count; i++)
			if (in_strv(cfg->list[i].watcher_nodes, cfg->list[i].watcher_count, op_name))
				return ADUMP_DUMP_OUTPUTS;
		return 0;
	}
	/* Single ops (aclnn) run outside any model: entries naming a model_name select that
	 * model's ops only, so they never select an aclnn op. Entries without a model, and
	 * dump_op_switch on, select single ops; any layer list restricts them by op name. */
	for (size_t i = 0; i < cfg->list_count; i++)
		if (cfg->list[i].layer_count)
			has_layers = true;
	if (cfg->is_op_switch && !has_layers)
		is_selected = true;
	for (size_t i = 0; i < cfg->list_count && !is_selected; i++) {
		const struct adump_acl_list_entry *e = &cfg->list[i];

		if (e->model_name && *e->model_name)
			continue;
		if (!e->layer_count && !has_layers)
			is_selected = true;
		else if (in_strv(e->layers, e->layer_count, op_name))
			is_selected = true;
	}
	if (!is_selected && cfg->is_op_switch && has_layers) {
		for (size_t i = 0; i < cfg->list_count && !is_selected; i++)
			is_selected = in_strv(cfg->list[i].layers, cfg->list[i].layer_count, op_name);
	}
	if (!is_selected)
		return 0;
	mask = cfg->tensor_mask;
	for (size_t i = 0; i < cfg->list_count && mask; i++) {
		const struct adump_acl_list_entry *e = &cfg->list[i];

		mask = apply_blacklist(e->optype_blacklist, e->optype_blacklist_count, op_type, mask,
				       input_count, output_count);
		mask = apply_blacklist(e->opname_blacklist, e->opname_blacklist_count, op_name, mask,
				       input_count, output_count);
	}
	return mask;
}
