/* SPDX-License-Identifier: Apache-2.0 */
/* acl.json "dump" section (reference §3): parse with json-c, validate every key with its
 * documented rules and conflicts, and answer "is this op dumped at this step". json-c is
 * used because it is maintained, packaged in Debian (libjson-c-dev), already a dependency of
 * libadump, and its tokener reports the byte offset of a syntax error, which we turn into
 * the line and column the user needs. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl/config_int.h"

#define NEST_MAX 10                     /* aclInit json: at most 10 levels of { and of [ */

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void free_blacklist(struct adump_acl_blacklist *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(b[i].name);
	free(b);
}

void adump_acl_cfg_fini(struct adump_acl_cfg *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->list_count; i++) {
		struct adump_acl_list_entry *e = &cfg->list[i];

		free(e->model_name);
		free_strv(e->layers, e->layer_count);
		free_strv(e->watcher_nodes, e->watcher_count);
		free_blacklist(e->optype_blacklist, e->optype_blacklist_count);
		free_blacklist(e->opname_blacklist, e->opname_blacklist_count);
		free(e->range_begin);
		free(e->range_end);
	}
	free(cfg->list);
	memset(cfg, 0, sizeof(*cfg));
}

static void offset_to_line_col(const char *text, size_t off, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static bool nesting_ok(struct json_object *o, int objects, int arrays)
{
	enum json_type t = json_object_get_type(o);

	if (t == json_type_object) {
		if (++objects > NEST_MAX)
			return false;
		json_object_object_foreach(o, k, v) {
			(void)k;
			if (!nesting_ok(v, objects, arrays))
				return false;
		}
	} else if (t == json_type_array) {
		if (++arrays > NEST_MAX)
			return false;
		for (size_t i = 0; i < json_object_array_length(o); i++)
			if (!nesting_ok(json_object_array_get_idx(o, i), objects, arrays))
				return false;
	}
	return true;
}

/* A scalar key must be a JSON string (EP0001). Return: the string, or NULL if absent. */
static int get_string(struct json_object *dump, const char *key, const char *origin,
		      const char **out)
{
	struct json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(dump, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		REJECT(key, "must be a string");
	*out = json_object_get_string(v);
	return 0;
}

/* "on"/"off" switches; CANN's dumpStatus also accepts upper case. */
static int parse_switch(const char *s, const char *key, const char *origin, bool *out)
{
	if (!strcmp(s, "on") || !strcmp(s, "ON")) {
		*out = true;
		return 0;
	}
	if (!strcmp(s, "off") || !strcmp(s, "OFF")) {
		*out = false;
		return 0;
	}
	REJECT(key, "\"%s\" is not on or off", s);
}

int adump_acl_string_array(struct json_object *arr, const char *key, const char *origin,
			   char ***out, size_t *count)
{
	size_t n;

	if (!json_object_is_type(arr, json_type_array))
		REJECT(key, "must be an array of strings");
	n = json_object_array_length(arr);
	if (n == 0)
		REJECT(key, "must not be empty when present");
	*out = calloc(n, sizeof(char *));
	if (!*out)
		return -ENOMEM;
	*count = n;
	for (size_t i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(arr, i);

		if (!json_object_is_type(s, json_type_string) || !json_object_get_string_len(s))
			REJECT(key, "item %zu must be a non-empty string", i);
		(*out)[i] = strdup(json_object_get_string(s));
		if (!(*out)[i])
			return -ENOMEM;
	}
	return 0;
}

static bool is_ipv4_prefix(const char *s, size_t len)
{
	char buf[16];
	struct in_addr a;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return inet_pton(AF_INET, buf, &a) == 1;
}

/* dump_path: <= 512 chars, an existing read-write directory (not created). The remote
 * form "a.b.c.d:path" is accepted and the address dropped, as CANN's host writer does. */
static int check_dump_path(const char *s, const char *origin, struct adump_acl_cfg *cfg)
{
	const char *colon = strchr(s, ':');
	char real[PATH_MAX];
	struct stat st;

	if (!*s)
		REJECT("dump_path", "must not be empty");
	if (strlen(s) > ADUMP_ACL_DUMP_PATH_MAX)
		REJECT("dump_path", "longer than %d characters", ADUMP_ACL_DUMP_PATH_MAX);
	if (colon && is_ipv4_prefix(s, (size_t)(colon - s)))
		s = colon + 1;
	for (const char *c = s; *c; c++)
		if (iscntrl((unsigned char)*c))
			REJECT("dump_path", "contains a control character");
	if (stat(s, &st) < 0)
		REJECT("dump_path", "\"%s\": %s", s, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		REJECT("dump_path", "\"%s\" is not a directory", s);
	if (access(s, R_OK | W_OK) < 0)
		REJECT("dump_path", "\"%s\" is not readable and writable", s);
	/* Relative paths are taken from the working directory; dump file names are absolute. */
	if (!realpath(s, real) || strlen(real) >= sizeof(cfg->dump_path))
		REJECT("dump_path", "\"%s\" cannot be resolved to an absolute path of at most %d "
		       "characters", s, ADUMP_ACL_DUMP_PATH_MAX);
	memcpy(cfg->dump_path, real, strlen(real) + 1);
	return 0;
}

static const char *const known_keys[] = {
	"dump_path", "dump_list", "dump_mode", "dump_op_switch", "dump_data", "dump_stats",
	"dump_step", "dump_level", "dump_debug", "dump_scene", "dump_kernel_data",
};

static int parse_dump(struct json_object *dump, const char *origin, struct adump_acl_cfg *cfg)
{
	const char *path, *mode, *op_switch, *data, *step, *level, *debug, *scene, *kernel;
	struct json_object *list = NULL, *stats = NULL;
	bool is_needed, is_exception;
	int ret;

	json_object_object_foreach(dump, key, val) {
		size_t i;

		(void)val;
		for (i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++)
			if (!strcmp(key, known_keys[i]))
				break;
		if (i == sizeof(known_keys) / sizeof(known_keys[0]))
			adump_log(ADUMP_LOG_WARN, MOD, "%s: dump: unknown key \"%s\" ignored", origin, key);
	}
	if ((ret = get_string(dump, "dump_path", origin, &path)) < 0 ||
	    (ret = get_string(dump, "dump_mode", origin, &mode)) < 0 ||
	    (ret = get_string(dump, "dump_op_switch", origin, &op_switch)) < 0 ||
	    (ret = get_string(dump, "dump_data", origin, &data)) < 0 ||
	    (ret = get_string(dump, "dump_step", origin, &step)) < 0 ||
	    (ret = get_string(dump, "dump_level", origin, &level)) < 0 ||
	    (ret = get_string(dump, "dump_debug", origin, &debug)) < 0 ||
	    (ret = get_string(dump, "dump_scene", origin, &scene)) < 0 ||
	    (ret = get_string(dump, "dump_kernel_data", origin, &kernel)) < 0)
		return ret;

	cfg->tensor_mask = ADUMP_DUMP_OUTPUTS;
	cfg->stats_mask = ADUMP_STAT_DEFAULT;
	if (scene) {
		if (!strcmp(scene, "lite_exception") || !strcmp(scene, "aic_err_brief_dump"))
			cfg->scene = ADUMP_ACL_SCENE_BRIEF;
		else if (!strcmp(scene, "aic_err_norm_dump"))
			cfg->scene = ADUMP_ACL_SCENE_NORM;
		else if (!strcmp(scene, "aic_err_detail_dump"))
			cfg->scene = ADUMP_ACL_SCENE_DETAIL;
		else if (!strcmp(scene, "watcher"))
			cfg->scene = ADUMP_ACL_SCENE_WATCHER;
		else
			REJECT("dump_scene", "\"%s\" is not lite_exception, aic_err_brief_dump, "
			       "aic_err_norm_dump, aic_err_detail_dump or watcher", scene);
	}
	is_exception = adump_acl_cfg_is_exception(cfg);
	if (op_switch && (ret = parse_switch(op_switch, "dump_op_switch", origin, &cfg->is_op_switch)) < 0)
		return ret;
	if (debug && (ret = parse_switch(debug, "dump_debug", origin, &cfg->is_debug)) < 0)
		return ret;
	if (cfg->is_debug && cfg->is_op_switch)
		REJECT("dump_debug", "dump_debug on conflicts with dump_op_switch on");
	if (is_exception && cfg->is_debug)
		REJECT("dump_scene", "exception scene \"%s\" conflicts with dump_debug on", scene);
	if (is_exception && cfg->is_op_switch)
		REJECT("dump_scene", "exception scene \"%s\" conflicts with dump_op_switch on", scene);
	if (mode) {
		if (!strcmp(mode, "input"))
			cfg->tensor_mask = ADUMP_DUMP_INPUTS;
		else if (!strcmp(mode, "output"))
			cfg->tensor_mask = ADUMP_DUMP_OUTPUTS;
		else if (!strcmp(mode, "all"))
			cfg->tensor_mask = ADUMP_DUMP_ALL;
		else
			REJECT("dump_mode", "\"%s\" is not input, output or all", mode);
	}
	if (cfg->scene == ADUMP_ACL_SCENE_WATCHER && cfg->tensor_mask != ADUMP_DUMP_OUTPUTS)
		REJECT("dump_mode", "dump_scene watcher requires dump_mode output");
	if (data) {
		if (!strcmp(data, "stats"))
			cfg->is_stats = true;
		else if (strcmp(data, "tensor"))
			REJECT("dump_data", "\"%s\" is not tensor or stats", data);
	}
	if (level) {
		if (!strcmp(level, "op"))
			cfg->level = ADUMP_ACL_LEVEL_OP;
		else if (!strcmp(level, "kernel"))
			cfg->level = ADUMP_ACL_LEVEL_KERNEL;
		else if (!strcmp(level, "all"))
			cfg->level = ADUMP_ACL_LEVEL_ALL;
		else
			REJECT("dump_level", "\"%s\" is not op, kernel or all", level);
	}
	if (kernel) {
		char buf[128], *save = NULL;

		if (snprintf(buf, sizeof(buf), "%s", kernel) >= (int)sizeof(buf) || !*kernel)
			REJECT("dump_kernel_data", "must be a short comma-separated list");
		for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			static const char *const kinds[] = { "all", "printf", "tensor", "assert",
							     "timestamp" };
			size_t i;

			for (i = 0; i < 5; i++)
				if (!strcmp(t, kinds[i]))
					break;
			if (i == 5)
				REJECT("dump_kernel_data", "\"%s\" is not all, printf, tensor, assert "
				       "or timestamp", t);
			cfg->kernel_data_mask |= 1u << i;
		}
	}

	/* dump_stats, dump_step and dump_list are checked only for data dump, as CANN's
	 * converter does (no exception scene, dump_debug off). */
	json_object_object_get_ex(dump, "dump_list", &list);
	json_object_object_get_ex(dump, "dump_stats", &stats);
	if (!is_exception && !cfg->is_debug) {
		if (stats) {
			if (!cfg->is_stats)
				REJECT("dump_stats", "only allowed with dump_data stats");
			if (!json_object_is_type(stats, json_type_array) ||
			    !json_object_array_length(stats))
				REJECT("dump_stats", "must be a non-empty array of strings");
			cfg->stats_mask = 0;
			for (size_t i = 0; i < json_object_array_length(stats); i++) {
				static const char *const names[] = { "Max", "Min", "Avg", "Nan",
								     "Negative Inf", "Positive Inf",
								     "L2norm" };
				struct json_object *s = json_object_array_get_idx(stats, i);
				size_t k;

				if (!json_object_is_type(s, json_type_string))
					REJECT("dump_stats", "item %zu must be a string", i);
				for (k = 0; k < 7; k++)
					if (!strcmp(json_object_get_string(s), names[k]))
						break;
				if (k == 7)
					REJECT("dump_stats", "\"%s\" is not Max, Min, Avg, Nan, Negative Inf, "
					       "Positive Inf or L2norm", json_object_get_string(s));
				cfg->stats_mask |= 1u << k;
			}
		}
		if (step && (ret = adump_acl_parse_steps(step, origin, cfg)) < 0)
			return ret;
		if (list) {
			size_t n;

			if (!json_object_is_type(list, json_type_array))
				REJECT("dump_list", "must be an array of objects");
			n = json_object_array_length(list);
			cfg->list = calloc(n ? n : 1, sizeof(*cfg->list));
			if (!cfg->list)
				return -ENOMEM;
			cfg->list_count = n;
			for (size_t i = 0; i < n; i++) {
				ret = adump_acl_parse_list_entry(json_object_array_get_idx(list, i), i, cfg, origin,
						       &cfg->list[i]);
				if (ret < 0)
					return ret;
			}
		}
	}

	/* CANN's NeedDump: a non-empty dump_list, op switch on, dump_debug on, or a scene. */
	is_needed = cfg->list_count || cfg->is_op_switch || cfg->is_debug || cfg->scene;
	if (path) {
		ret = check_dump_path(path, origin, cfg);
		if (ret < 0)
			return ret;
	} else if (is_needed && !is_exception) {
		REJECT("dump_path", "required unless dump_scene is an exception scene");
	}
	cfg->has_dump = is_needed;
	return 0;
}

/* Whether @text[0..len) is only JSON whitespace; reads no byte past @len (no NUL needed). */
static bool is_blank(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!strchr(" \t\r\n", text[i]) || !text[i])
			return false;
	return true;
}

int adump_acl_cfg_parse(const char *text, size_t len, const char *origin, struct adump_acl_cfg *out)
{
	struct json_tokener *tok;
	struct json_object *root, *dump;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (!origin)
		origin = "acl.json";
	/* An empty file is valid and configures nothing (CANN's aclmdlSetDump). */
	if (is_blank(text, len))
		return 0;
	tok = json_tokener_new_ex(NEST_MAX * 2 + 1);
	if (!tok)
		return -ENOMEM;
	root = json_tokener_parse_ex(tok, text, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) < len) {
		size_t end = json_tokener_get_parse_end(tok);
		enum json_tokener_error err = json_tokener_get_error(tok);
		unsigned line, col;

		/* Trailing whitespace after a complete value is fine. */
		if (root && err == json_tokener_success && is_blank(text + end, len - end))
			goto parsed;
		offset_to_line_col(text, end < len ? end : len, &line, &col);
		adump_log(ADUMP_LOG_ERROR, MOD, "%s:%u:%u: JSON syntax error: %s", origin, line, col,
			  err == json_tokener_success ? "unexpected data after the value"
			  : err == json_tokener_continue ? "unexpected end of file"
			  : json_tokener_error_desc(err));
		json_object_put(root);
		json_tokener_free(tok);
		return -ADUMP_ERR_CORRUPT;
	}
parsed:
	json_tokener_free(tok);
	if (!nesting_ok(root, 0, 0)) {
		adump_log(ADUMP_LOG_ERROR, MOD, "%s: more than %d levels of objects or arrays", origin,
			  NEST_MAX);
		ret = -ADUMP_ERR_CORRUPT;
		goto out;
	}
	if (!json_object_is_type(root, json_type_object)) {
		adump_log(ADUMP_LOG_ERROR, MOD, "%s: the top level must be an object", origin);
		ret = -ADUMP_ERR_CONFIG;
		goto out;
	}
	if (!json_object_object_get_ex(root, "dump", &dump))
		goto out;
	if (!json_object_is_type(dump, json_type_object)) {
		adump_log(ADUMP_LOG_ERROR, MOD, "%s: dump: must be an object", origin);
		ret = -ADUMP_ERR_CONFIG;
		goto out;
	}
	ret = parse_dump(dump, origin, out);
	if (ret < 0)
		adump_acl_cfg_fini(out);
out:
	json_object_put(root);
	return ret;
}

/* Far above any real configuration: a bound on what a stray file makes us allocate. */
#define ACL_JSON_MAX_BYTES ((off_t)64 << 20)

int adump_acl_cfg_load(const char *path, struct adump_acl_cfg *out)
{
	struct stat st = { 0 };
	char *text;
	size_t done = 0;
	int fd, ret;

	memset(out, 0, sizeof(*out));
	/* A regular file only, and never waited on: a FIFO (or device) is refused at open. */
	fd = adump_open_regular(path);
	if (fd < 0) {
		adump_log(ADUMP_LOG_ERROR, MOD, "%s: cannot open: %s", path,
			  adump_open_strerror(fd));
		return fd;
	}
	if (fstat(fd, &st) < 0 || st.st_size > ACL_JSON_MAX_BYTES) {
		ret = st.st_size > ACL_JSON_MAX_BYTES ? -EFBIG : -errno;
		adump_log(ADUMP_LOG_ERROR, MOD, "%s: %s", path, ret == -EFBIG ?
			  "larger than an acl.json may be (64 MiB)" : strerror(-ret));
		close(fd);
		return ret;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		close(fd);
		return -ENOMEM;
	}
	while (done < (size_t)st.st_size) {
		ssize_t r = read(fd, text + done, (size_t)st.st_size - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	close(fd);
	text[done] = '\0';
	ret = adump_acl_cfg_parse(text, done, path, out);
	free(text);
	return ret;
}

bool adump_acl_cfg_is_data_dump(const struct adump_acl_cfg *cfg)
{
	/* dump_debug (overflow dump) writes only ops that overflow; the simulated NPU's
	 * kernels never do, so an overflow config dumps nothing. */
	return cfg && cfg->has_dump && !adump_acl_cfg_is_exception(cfg) && !cfg->is_debug &&
	       (cfg->list_count || cfg->is_op_switch);
}

bool adump_acl_cfg_is_exception(const struct adump_acl_cfg *cfg)
{
	return cfg && (cfg->scene == ADUMP_ACL_SCENE_BRIEF || cfg->scene == ADUMP_ACL_SCENE_NORM ||
		       cfg->scene == ADUMP_ACL_SCENE_DETAIL);
}
