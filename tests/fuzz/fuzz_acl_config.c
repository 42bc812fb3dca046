/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: any bytes as an acl.json. The parser must accept or reject them without
 * reading past the input (handed over unterminated), leaking or crashing; a rejection leaves
 * the config empty, and an accepted config answers adump_acl_cfg_select() for a few ops. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_int.h"

#define FUZZ_NAME "fuzz_acl_config"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void quiet(enum adump_log_level level, const char *module, const char *msg, void *user)
{
	(void)level;
	(void)module;
	(void)msg;
	(void)user;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	adump_set_log_fn(quiet, NULL);
	return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const struct adump_acl_cfg empty;
	struct adump_acl_cfg cfg;
	/* An exact-size copy without a terminating NUL: ASan catches any read past @size. */
	char *text = malloc(size ? size : 1);
	int ret;

	if (!text)
		return 0;
	memcpy(text, data, size);
	ret = adump_acl_cfg_parse(text, size, "fuzz.json", &cfg);
	if (ret < 0) {
		check(ret == -ADUMP_ERR_CONFIG || ret == -ADUMP_ERR_CORRUPT || ret == -ENOMEM,
		      "a rejection is a config or syntax error");
		check(!memcmp(&cfg, &empty, sizeof(cfg)), "a rejected config is left empty");
	} else {
		check(ret == 0, "success is 0");
		check(cfg.step_count <= ADUMP_ACL_STEP_MAX, "at most 100 dump_step items");
		check(!adump_acl_cfg_is_exception(&cfg) || !adump_acl_cfg_is_data_dump(&cfg),
		      "an exception scene is not a data dump");
		for (uint64_t step = 0; step < 3; step++) {
			uint32_t mask = adump_acl_cfg_select(&cfg, "Add", "layer1", step, 2, 1);

			check(!(mask & ~(uint32_t)ADUMP_DUMP_ALL), "select gives ADUMP_DUMP_* bits");
			adump_acl_cfg_select(&cfg, "", "", step, 0, 40);
		}
		adump_acl_cfg_fini(&cfg);
	}
	free(text);
	return 0;
}
