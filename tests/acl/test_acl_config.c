/* SPDX-License-Identifier: Apache-2.0 */
/* acl.json validation (reference §3): every key's rules and conflicts, table-driven, with the
 * log naming the key; syntax errors name line and column; op selection by list, layer,
 * mode, step and blacklist. %D in a case stands for an existing read-write directory, %F for
 * a regular file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl_test.h"

static char *dir, *file;

static void setup(void)
{
	dir = t_tmpdir("acl-config");
	ck_assert_ptr_nonnull(dir);
	file = t_acl_write(dir, "plain", "x");
	t_acl_log_capture();
}

static void teardown(void)
{
	t_rmtree(dir);
	free(dir);
	free(file);
}

/* Expand %D and %F. */
static char *expand(const char *tmpl)
{
	size_t cap = strlen(tmpl) + 4 * (strlen(dir) + strlen(file)) + 1, o = 0;
	char *out = malloc(cap);

	for (const char *p = tmpl; *p; p++) {
		if (p[0] == '%' && (p[1] == 'D' || p[1] == 'F')) {
			o += (size_t)sprintf(out + o, "%s", p[1] == 'D' ? dir : file);
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
	return out;
}

static int parse(const char *tmpl, struct adump_acl_cfg *cfg)
{
	char *text = expand(tmpl);
	int ret = adump_acl_cfg_parse(text, strlen(text), "acl.json", cfg);

	free(text);
	return ret;
}

static const struct {
	const char *json;
	const char *log;        /* expected in the log when rejected */
} bad[] = {
	{ "{\"dump\": []}", "dump: must be an object" },
	{ "[1]", "top level must be an object" },
	{ "{\"dump\":{\"dump_path\":1,\"dump_op_switch\":\"on\"}}", "dump.dump_path: must be a string" },
	{ "{\"dump\":{\"dump_op_switch\":\"on\"}}", "dump.dump_path: required" },
	{ "{\"dump\":{\"dump_list\":[{}]}}", "dump.dump_path: required" },
	{ "{\"dump\":{\"dump_path\":\"\",\"dump_op_switch\":\"on\"}}", "dump.dump_path: must not be empty" },
	{ "{\"dump\":{\"dump_path\":\"/nonexistent/adump\",\"dump_op_switch\":\"on\"}}", "dump.dump_path: \"/nonexistent/adump\"" },
	{ "{\"dump\":{\"dump_path\":\"%F\",\"dump_op_switch\":\"on\"}}", "is not a directory" },
	{ "{\"dump\":{\"dump_path\":\"%D/x\\u0001\",\"dump_op_switch\":\"on\"}}", "control character" },
	{ "{\"dump\":{\"dump_mode\":\"both\",\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "dump.dump_mode: \"both\"" },
	{ "{\"dump\":{\"dump_mode\":3,\"dump_path\":\"%D\"}}", "dump.dump_mode: must be a string" },
	{ "{\"dump\":{\"dump_op_switch\":\"yes\",\"dump_path\":\"%D\"}}", "dump.dump_op_switch: \"yes\"" },
	{ "{\"dump\":{\"dump_data\":\"raw\",\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "dump.dump_data" },
	{ "{\"dump\":{\"dump_stats\":[\"Max\"],\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "dump.dump_stats: only allowed with dump_data stats" },
	{ "{\"dump\":{\"dump_data\":\"stats\",\"dump_stats\":[],\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "dump.dump_stats: must be a non-empty" },
	{ "{\"dump\":{\"dump_data\":\"stats\",\"dump_stats\":[\"Median\"],\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "\"Median\" is not Max" },
	{ "{\"dump\":{\"dump_step\":\"1-\",\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "dump.dump_step" },
	{ "{\"dump\":{\"dump_step\":\"3-1\",\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "runs backwards" },
	{ "{\"dump\":{\"dump_step\":\"a\",\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "dump.dump_step" },
	{ "{\"dump\":{\"dump_step\":\"1||2\",\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "dump.dump_step" },
	{ "{\"dump\":{\"dump_step\":\"1|\",\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "empty item" },
	{ "{\"dump\":{\"dump_step\":\"\",\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "dump.dump_step: must not be empty" },
	{ "{\"dump\":{\"dump_level\":\"layer\",\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "dump.dump_level" },
	{ "{\"dump\":{\"dump_debug\":\"on\",\"dump_op_switch\":\"on\",\"dump_path\":\"%D\"}}", "conflicts with dump_op_switch on" },
	{ "{\"dump\":{\"dump_debug\":\"maybe\",\"dump_path\":\"%D\"}}", "dump.dump_debug" },
	{ "{\"dump\":{\"dump_scene\":\"bogus\"}}", "dump.dump_scene: \"bogus\"" },
	{ "{\"dump\":{\"dump_scene\":\"aic_err_norm_dump\",\"dump_op_switch\":\"on\"}}", "conflicts with dump_op_switch on" },
	{ "{\"dump\":{\"dump_scene\":\"lite_exception\",\"dump_debug\":\"on\"}}", "conflicts with dump_debug on" },
	{ "{\"dump\":{\"dump_list\":{},\"dump_path\":\"%D\"}}", "dump.dump_list: must be an array" },
	{ "{\"dump\":{\"dump_list\":[1],\"dump_path\":\"%D\"}}", "dump.dump_list: item 0 must be an object" },
	{ "{\"dump\":{\"dump_list\":[{\"model_name\":\"\"}],\"dump_path\":\"%D\"}}", "dump.dump_list.model_name: must not be empty" },
	{ "{\"dump\":{\"dump_list\":[{\"model_name\":5}],\"dump_path\":\"%D\"}}", "dump.dump_list.model_name: must be a string" },
	{ "{\"dump\":{\"dump_list\":[{\"layer\":[]}],\"dump_path\":\"%D\"}}", "dump.dump_list.layer: must not be empty" },
	{ "{\"dump\":{\"dump_list\":[{\"layer\":[1]}],\"dump_path\":\"%D\"}}", "dump.dump_list.layer: item 0" },
	{ "{\"dump\":{\"dump_list\":[{\"layer\":\"a\"}],\"dump_path\":\"%D\"}}", "dump.dump_list.layer: must be an array" },
	{ "{\"dump\":{\"dump_list\":[{\"watcher_nodes\":[\"a\"]}],\"dump_path\":\"%D\"}}", "only allowed with dump_scene watcher" },
	{ "{\"dump\":{\"dump_scene\":\"watcher\",\"dump_list\":[{}],\"dump_path\":\"%D\"}}", "required with dump_scene watcher" },
	{ "{\"dump\":{\"dump_scene\":\"watcher\",\"dump_list\":[{\"model_name\":\"m\",\"watcher_nodes\":[\"a\"]}],\"dump_path\":\"%D\"}}", "not allowed with dump_scene watcher" },
	{ "{\"dump\":{\"dump_scene\":\"watcher\",\"dump_mode\":\"all\",\"dump_list\":[{\"watcher_nodes\":[\"a\"]}],\"dump_path\":\"%D\"}}", "watcher requires dump_mode output" },
	{ "{\"dump\":{\"dump_list\":[{\"optype_blacklist\":[{\"name\":\"Add\"}]}],\"dump_path\":\"%D\"}}", "only allowed with dump_level op" },
	{ "{\"dump\":{\"dump_level\":\"op\",\"dump_list\":[{\"optype_blacklist\":[{\"name\":\"Add\",\"pos\":[\"in0\"]}]}],\"dump_path\":\"%D\"}}", "inputN or outputN" },
	{ "{\"dump\":{\"dump_level\":\"op\",\"dump_list\":[{\"opname_blacklist\":[{\"pos\":[]}]}],\"dump_path\":\"%D\"}}", "non-empty string \"name\"" },
	{ "{\"dump\":{\"dump_level\":\"op\",\"dump_list\":[{\"opname_range\":[{\"begin\":\"a\",\"end\":\"b\"}]}],\"dump_path\":\"%D\"}}", "needs a non-empty model_name" },
	{ "{\"dump\":{\"dump_level\":\"op\",\"dump_list\":[{\"model_name\":\"m\",\"opname_range\":[{\"begin\":\"\",\"end\":\"b\"}]}],\"dump_path\":\"%D\"}}", "non-empty begin and end" },
	{ "{\"dump\":{\"dump_list\":[{\"model_name\":\"m\",\"opname_range\":[{\"begin\":\"a\",\"end\":\"b\"}]}],\"dump_path\":\"%D\"}}", "only allowed with dump_level op" },
	{ "{\"dump\":{\"dump_kernel_data\":\"all,bogus\",\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", "\"bogus\" is not all" },
};

START_TEST(test_config_rejects)
{
	struct adump_acl_cfg cfg;

	ck_assert_int_eq(parse(bad[_i].json, &cfg), -ADUMP_ERR_CONFIG);
	if (!t_acl_log_has(bad[_i].log))
		ck_abort_msg("case %d: log lacks \"%s\"", _i, bad[_i].log);
	ck_assert(!cfg.has_dump);
}
END_TEST

static const char *const good[] = {
	"",
	"  \n",
	"{}",
	"{\"dump\": {}}",
	"{\"dump\": {\"dump_path\": \"%D\", \"dump_list\": [], \"dump_op_switch\": \"on\", \"dump_data\": \"tensor\"}}",
	"{\"dump\":{\"dump_path\":\"%D\",\"dump_list\":[{\"model_name\":\"m\",\"layer\":[\"a\",\"b\"]}],\"dump_mode\":\"all\",\"dump_step\":\"0|2-4\",\"dump_level\":\"op\"}}",
	"{\"dump\":{\"dump_scene\":\"aic_err_brief_dump\"}}",
	"{\"dump\":{\"dump_path\":\"%D\",\"dump_op_switch\":\"ON\",\"dump_data\":\"stats\",\"dump_stats\":[\"Max\",\"L2norm\"]}}",
	"{\"dump\":{\"dump_path\":\"10.0.0.1:%D\",\"dump_op_switch\":\"on\"}}",
	"{\"dump\":{\"dump_path\":\"%D\",\"dump_debug\":\"on\",\"dump_step\":\"garbage is not checked\"}}",
	"{\"dump\":{\"dump_path\":\"%D\",\"dump_scene\":\"watcher\",\"dump_list\":[{\"watcher_nodes\":[\"a\"]}]}}",
	"{\"dump\":{\"dump_path\":\"%D\",\"dump_level\":\"op\",\"dump_list\":[{\"model_name\":\"m\",\"optype_blacklist\":[{\"name\":\"Add\",\"pos\":[\"input0\",\"output0\"]}],\"opname_range\":[{\"begin\":\"a\",\"end\":\"b\"}]}]}}",
	"{\"dump\":{\"dump_path\":\"%D\",\"dump_op_switch\":\"on\",\"dump_kernel_data\":\"printf,assert\"}}",
	"{\"other\": 1, \"dump\": {\"dump_path\": \"%D\", \"dump_op_switch\": \"off\"}}\n",
};

START_TEST(test_config_accepts)
{
	struct adump_acl_cfg cfg;

	if (parse(good[_i], &cfg) != 0)
		ck_abort_msg("case %d rejected", _i);
	adump_acl_cfg_fini(&cfg);
}
END_TEST

START_TEST(test_config_values)
{
	struct adump_acl_cfg cfg;

	ck_assert_int_eq(parse(good[5], &cfg), 0);
	ck_assert(cfg.has_dump);
	ck_assert(adump_acl_cfg_is_data_dump(&cfg));
	ck_assert_uint_eq(cfg.tensor_mask, ADUMP_DUMP_ALL);
	ck_assert_uint_eq(cfg.step_count, 2);
	ck_assert_uint_eq(cfg.steps[1].first, 2);
	ck_assert_uint_eq(cfg.steps[1].last, 4);
	ck_assert_int_eq(cfg.level, ADUMP_ACL_LEVEL_OP);
	ck_assert_str_eq(cfg.list[0].model_name, "m");
	ck_assert_uint_eq(cfg.list[0].layer_count, 2);
	ck_assert_str_eq(cfg.dump_path, dir);
	adump_acl_cfg_fini(&cfg);

	ck_assert_int_eq(parse(good[7], &cfg), 0);
	ck_assert(cfg.is_stats);
	ck_assert_uint_eq(cfg.stats_mask, ADUMP_STAT_MAX | ADUMP_STAT_L2NORM);
	adump_acl_cfg_fini(&cfg);

	ck_assert_int_eq(parse(good[8], &cfg), 0);
	ck_assert_str_eq(cfg.dump_path, dir);   /* the IPv4 prefix is dropped */
	adump_acl_cfg_fini(&cfg);

	ck_assert_int_eq(parse(good[6], &cfg), 0);
	ck_assert(adump_acl_cfg_is_exception(&cfg));
	ck_assert(!adump_acl_cfg_is_data_dump(&cfg));
	adump_acl_cfg_fini(&cfg);

	ck_assert_int_eq(parse(good[3], &cfg), 0);
	ck_assert(!cfg.has_dump);
	adump_acl_cfg_fini(&cfg);
}
END_TEST

START_TEST(test_config_limits)
{
	struct adump_acl_cfg cfg;
	char *json, *steps, path[600];
	size_t o = 0;

	/* dump_path longer than 512 characters. */
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	ck_assert(asprintf(&json, "{\"dump\":{\"dump_path\":\"%s\",\"dump_op_switch\":\"on\"}}", path) > 0);
	ck_assert_int_eq(adump_acl_cfg_parse(json, strlen(json), "acl.json", &cfg), -ADUMP_ERR_CONFIG);
	ck_assert(t_acl_log_has("longer than 512"));
	free(json);

	/* 100 dump_step items pass, 101 fail. */
	steps = malloc(1024);
	for (int i = 0; i < 101; i++)
		o += (size_t)sprintf(steps + o, "%s%d", i ? "|" : "", i);
	ck_assert(asprintf(&json, "{\"dump\":{\"dump_path\":\"%s\",\"dump_op_switch\":\"on\",\"dump_step\":\"%s\"}}",
			   dir, steps) > 0);
	ck_assert_int_eq(adump_acl_cfg_parse(json, strlen(json), "acl.json", &cfg), -ADUMP_ERR_CONFIG);
	ck_assert(t_acl_log_has("more than 100 items"));
	free(json);
	*strrchr(steps, '|') = '\0';
	ck_assert(asprintf(&json, "{\"dump\":{\"dump_path\":\"%s\",\"dump_op_switch\":\"on\",\"dump_step\":\"%s\"}}",
			   dir, steps) > 0);
	ck_assert_int_eq(adump_acl_cfg_parse(json, strlen(json), "acl.json", &cfg), 0);
	ck_assert_uint_eq(cfg.step_count, 100);
	adump_acl_cfg_fini(&cfg);
	free(json);
	free(steps);

	/* 101 blacklist items. */
	{
		char *items = malloc(4096);

		o = 0;
		for (int i = 0; i < 101; i++)
			o += (size_t)sprintf(items + o, "%s{\"name\":\"n%d\"}", i ? "," : "", i);
		ck_assert(asprintf(&json, "{\"dump\":{\"dump_path\":\"%s\",\"dump_level\":\"op\",\"dump_list\":[{\"opname_blacklist\":[%s]}]}}",
				   dir, items) > 0);
		ck_assert_int_eq(adump_acl_cfg_parse(json, strlen(json), "acl.json", &cfg), -ADUMP_ERR_CONFIG);
		ck_assert(t_acl_log_has("at most 100 allowed"));
		free(json);
		free(items);
	}
}
END_TEST

START_TEST(test_config_syntax_line_column)
{
	static const char text[] = "{\n  \"dump\": {\n    \"dump_path\": x\n  }\n}\n";
	struct adump_acl_cfg cfg;

	ck_assert_int_eq(adump_acl_cfg_parse(text, strlen(text), "my.json", &cfg), -ADUMP_ERR_CORRUPT);
	ck_assert(t_acl_log_has("my.json:3:18: JSON syntax error"));

	ck_assert_int_eq(adump_acl_cfg_parse("{\"dump\": {", 10, "cut.json", &cfg), -ADUMP_ERR_CORRUPT);
	ck_assert(t_acl_log_has("cut.json:1:11: JSON syntax error: unexpected end of file"));

	ck_assert_int_eq(adump_acl_cfg_parse("{} {}", 5, "two.json", &cfg), -ADUMP_ERR_CORRUPT);
	ck_assert(t_acl_log_has("two.json:1:4"));
}
END_TEST

/* Regression (found by fuzz_acl_config): whitespace-only text and a value followed by
 * whitespace were measured with strspn(), which reads up to a NUL the caller need not
 * provide. The text here ends right before an inaccessible page. */
START_TEST(test_config_unterminated)
{
	static const char *const texts[] = { "   ", "\n\t", "{}  ", "{\"dump\": {}}\r\n" };
	long page = sysconf(_SC_PAGESIZE);
	char *mem = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct adump_acl_cfg cfg;

	ck_assert_ptr_ne(mem, MAP_FAILED);
	ck_assert_int_eq(mprotect(mem + page, (size_t)page, PROT_NONE), 0);
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		size_t len = strlen(texts[i]);
		char *text = mem + page - len;

		memcpy(text, texts[i], len);
		ck_assert_int_eq(adump_acl_cfg_parse(text, len, "edge.json", &cfg), 0);
		ck_assert(!cfg.has_dump);
	}
	/* A NUL inside the text is not whitespace. */
	ck_assert_int_eq(adump_acl_cfg_parse("{}\0 ", 4, "nul.json", &cfg), -ADUMP_ERR_CORRUPT);
	munmap(mem, (size_t)page * 2);
}
END_TEST

START_TEST(test_config_nesting)
{
	char deep[64] = "", text[128];

	for (int i = 0; i < 11; i++)
		strcat(deep, "[");
	for (int i = 0; i < 11; i++)
		strcat(deep, "]");
	snprintf(text, sizeof(text), "{\"x\": %s}", deep);
	ck_assert_int_eq(adump_acl_cfg_parse(text, strlen(text), "deep.json", &(struct adump_acl_cfg){ 0 }),
			 -ADUMP_ERR_CORRUPT);
	ck_assert(t_acl_log_has("more than 10 levels"));
	deep[1] = '\0';
	snprintf(text, sizeof(text), "{\"x\": [[[[[[[[[[]]]]]]]]]]}");
	ck_assert_int_eq(adump_acl_cfg_parse(text, strlen(text), "ok.json", &(struct adump_acl_cfg){ 0 }), 0);
}
END_TEST

START_TEST(test_config_load_errors)
{
	struct adump_acl_cfg cfg;
	char fifo[4096];

	ck_assert_int_eq(adump_acl_cfg_load("/nonexistent/acl.json", &cfg), -ENOENT);
	ck_assert_int_eq(adump_acl_cfg_load(dir, &cfg), -EISDIR);
	ck_assert_int_eq(adump_acl_err_from(-ENOENT), ACL_ERROR_INVALID_FILE);
	/* A FIFO in place of acl.json is refused, never waited on (aclInit hung on it). */
	snprintf(fifo, sizeof(fifo), "%s/fifo.json", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	alarm(20);
	ck_assert_int_eq(adump_acl_cfg_load(fifo, &cfg), -EINVAL);
	alarm(0);
	unlink(fifo);
	ck_assert_int_eq(adump_acl_cfg_load("/dev/zero", &cfg), -EINVAL);
}
END_TEST

/* Which ops a config selects, and with which tensors. */
START_TEST(test_config_select)
{
	struct adump_acl_cfg cfg;
	char *json;

	/* op switch on: every single op, output by default. */
	ck_assert_int_eq(parse("{\"dump\":{\"dump_path\":\"%D\",\"dump_op_switch\":\"on\"}}", &cfg), 0);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 0, 2, 1), ADUMP_DUMP_OUTPUTS);
	adump_acl_cfg_fini(&cfg);

	/* dump_list [{}] with mode input. */
	ck_assert_int_eq(parse("{\"dump\":{\"dump_path\":\"%D\",\"dump_list\":[{}],\"dump_mode\":\"input\"}}", &cfg), 0);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 7, 2, 1), ADUMP_DUMP_INPUTS);
	adump_acl_cfg_fini(&cfg);

	/* A model-only list selects no single op; op switch off. */
	ck_assert_int_eq(parse("{\"dump\":{\"dump_path\":\"%D\",\"dump_list\":[{\"model_name\":\"resnet\"}]}}", &cfg), 0);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 0, 2, 1), 0);
	adump_acl_cfg_fini(&cfg);

	/* Layers restrict by op name. */
	ck_assert_int_eq(parse("{\"dump\":{\"dump_path\":\"%D\",\"dump_op_switch\":\"on\",\"dump_mode\":\"all\",\"dump_list\":[{\"layer\":[\"aclnnMul\"]}]}}", &cfg), 0);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 0, 2, 1), 0);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Mul", "aclnnMul", 0, 2, 1), ADUMP_DUMP_ALL);
	adump_acl_cfg_fini(&cfg);

	/* Steps. */
	ck_assert_int_eq(parse("{\"dump\":{\"dump_path\":\"%D\",\"dump_op_switch\":\"on\",\"dump_step\":\"1|3-5\"}}", &cfg), 0);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 0, 2, 1), 0);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 1, 2, 1), ADUMP_DUMP_OUTPUTS);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 2, 2, 1), 0);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 5, 2, 1), ADUMP_DUMP_OUTPUTS);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 6, 2, 1), 0);
	adump_acl_cfg_fini(&cfg);

	/* Blacklists: by type with every input, by name whole op. */
	ck_assert(asprintf(&json, "{\"dump\":{\"dump_path\":\"%s\",\"dump_op_switch\":\"on\",\"dump_mode\":\"all\",\"dump_level\":\"op\","
			   "\"dump_list\":[{\"optype_blacklist\":[{\"name\":\"Add\",\"pos\":[\"input0\",\"input1\"]}],"
			   "\"opname_blacklist\":[{\"name\":\"skipme\"}]}]}}", dir) > 0);
	ck_assert_int_eq(adump_acl_cfg_parse(json, strlen(json), "acl.json", &cfg), 0);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 0, 2, 1), ADUMP_DUMP_OUTPUTS);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Mul", "skipme", 0, 2, 1), 0);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Mul", "aclnnMul", 0, 2, 1), ADUMP_DUMP_ALL);
	adump_acl_cfg_fini(&cfg);
	free(json);

	/* Watcher: only watched nodes, outputs only. */
	ck_assert_int_eq(parse("{\"dump\":{\"dump_path\":\"%D\",\"dump_scene\":\"watcher\",\"dump_list\":[{\"watcher_nodes\":[\"aclnnAdd\"]}]}}", &cfg), 0);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 0, 2, 1), ADUMP_DUMP_OUTPUTS);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Mul", "aclnnMul", 0, 2, 1), 0);
	adump_acl_cfg_fini(&cfg);

	/* Overflow dump: the simulated kernels never overflow, nothing is dumped. */
	ck_assert_int_eq(parse("{\"dump\":{\"dump_path\":\"%D\",\"dump_debug\":\"on\",\"dump_list\":[{}]}}", &cfg), 0);
	ck_assert(cfg.has_dump);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 0, 2, 1), 0);
	adump_acl_cfg_fini(&cfg);

	/* Exception scene: no data dump. */
	ck_assert_int_eq(parse("{\"dump\":{\"dump_scene\":\"aic_err_detail_dump\"}}", &cfg), 0);
	ck_assert_uint_eq(adump_acl_cfg_select(&cfg, "Add", "aclnnAdd", 0, 2, 1), 0);
	adump_acl_cfg_fini(&cfg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl_config");
	TCase *tc = tcase_create("validate");

	tcase_set_timeout(tc, 20);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_config_rejects, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_loop_test(tc, test_config_accepts, 0, (int)(sizeof(good) / sizeof(good[0])));
	tcase_add_test(tc, test_config_values);
	tcase_add_test(tc, test_config_limits);
	tcase_add_test(tc, test_config_syntax_line_column);
	tcase_add_test(tc, test_config_unterminated);
	tcase_add_test(tc, test_config_nesting);
	tcase_add_test(tc, test_config_load_errors);
	tcase_add_test(tc, test_config_select);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
