/* SPDX-License-Identifier: Apache-2.0 */
/* Seeds for the acl fuzzers, written by fuzz_seeds: <dir>/acl_config holds acl.json files
 * using every "dump" key, valid and in each documented conflict; <dir>/acl_exception holds
 * acldumpSaveExceptionInfo argument sets (fuzz_acl.h) that succeed and that fail each
 * check. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_acl.h"

int fuzz_acl_seeds_write(const char *corpus);

/* One acl.json per line of valid use or conflict; "/tmp" is a dump_path that exists. */
static const char *const config_seeds[] = {
	"",
	"{}",
	"{\"dump\": {}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_list\": [], \"dump_op_switch\": \"on\"}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_mode\": \"all\", \"dump_op_switch\": \"ON\", "
	"\"dump_data\": \"tensor\", \"dump_level\": \"op\", \"dump_step\": \"0|2-4|10\"}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_data\": \"stats\", \"dump_stats\": [\"Max\", "
	"\"Min\", \"Avg\", \"Nan\", \"Negative Inf\", \"Positive Inf\", \"L2norm\"], "
	"\"dump_op_switch\": \"on\"}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_list\": [{\"model_name\": \"m\", \"layer\": "
	"[\"layer1\", \"layer2\"]}, {\"layer\": [\"layer1\"]}]}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_level\": \"op\", \"dump_list\": [{\"model_name\": "
	"\"m\", \"optype_blacklist\": [{\"name\": \"Add\", \"pos\": [\"input0\", \"output1\"]}], "
	"\"opname_blacklist\": [{\"name\": \"layer1\"}], \"opname_range\": [{\"begin\": \"a\", "
	"\"end\": \"b\"}]}]}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_scene\": \"watcher\", \"dump_list\": "
	"[{\"layer\": [\"a\"], \"watcher_nodes\": [\"layer1\"]}]}}",
	"{\"dump\": {\"dump_scene\": \"aic_err_brief_dump\"}}",
	"{\"dump\": {\"dump_scene\": \"lite_exception\", \"dump_path\": \"/tmp\"}}",
	"{\"dump\": {\"dump_scene\": \"aic_err_detail_dump\", \"dump_kernel_data\": "
	"\"all,printf,tensor,assert,timestamp\"}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_debug\": \"on\"}}",
	"{\"dump\": {\"dump_path\": \"1.2.3.4:/tmp\", \"dump_op_switch\": \"on\"}}",
	/* Conflicts and bad values, one each. */
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_debug\": \"on\", \"dump_op_switch\": \"on\"}}",
	"{\"dump\": {\"dump_scene\": \"aic_err_norm_dump\", \"dump_debug\": \"on\"}}",
	"{\"dump\": {\"dump_scene\": \"aic_err_norm_dump\", \"dump_op_switch\": \"on\"}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_scene\": \"watcher\", \"dump_mode\": \"all\", "
	"\"dump_list\": [{\"watcher_nodes\": [\"a\"]}]}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_scene\": \"watcher\", \"dump_list\": "
	"[{\"model_name\": \"m\", \"watcher_nodes\": [\"a\"]}]}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_list\": [{\"watcher_nodes\": [\"a\"]}]}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_list\": [{\"model_name\": \"m\", "
	"\"optype_blacklist\": [{\"name\": \"Add\"}]}]}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_level\": \"op\", \"dump_list\": [{\"opname_range\": "
	"[{\"begin\": \"a\", \"end\": \"b\"}]}]}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_stats\": [\"Max\"], \"dump_op_switch\": \"on\"}}",
	"{\"dump\": {\"dump_op_switch\": \"on\"}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_op_switch\": \"yes\", \"dump_mode\": \"both\"}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_op_switch\": \"on\", \"dump_step\": \"4-2|\"}}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_op_switch\": \"on\", \"dump_step\": "
	"\"99999999999999999999999\"}}",
	"{\"dump\": {\"dump_path\": \"/nonexistent/dir\", \"dump_op_switch\": \"on\"}}",
	"{\"dump\": {\"dump_path\": \"/tmp\\n\", \"dump_op_switch\": \"on\"}}",
	"{\"dump\": {\"dump_path\": 5, \"dump_list\": {}, \"unknown\": 1}}",
	"{\"dump\": [[[[[[[[[[[[1]]]]]]]]]]]]}",
	"{\"dump\": {\"dump_path\": \"/tmp\", \"dump_op_switch\": \"on\"}} trailing",
	"{\"dump\": {\"dump_path\": \"/tmp\"",
	"[1, 2]",
};

static int write_file(const char *dir, const char *name, const void *buf, size_t len)
{
	char path[4096 + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

/* One argument set: flags, a name, a tag and @count records. */
static int write_exception(const char *dir, const char *seed, unsigned flags, const char *name,
			   size_t name_len, const char *tag, const struct fuzz_exc_record *recs,
			   unsigned count)
{
	unsigned char buf[8192];
	size_t tag_len = strlen(tag), pos = FUZZ_EXC_HEAD_BYTES;

	if (pos + name_len + tag_len + count * FUZZ_EXC_RECORD_BYTES > sizeof(buf))
		return -1;
	buf[0] = (unsigned char)flags;
	buf[1] = (unsigned char)count;
	fuzz_put_le(buf + 2, name_len, 2);
	fuzz_put_le(buf + 4, tag_len, 2);
	memcpy(buf + pos, name, name_len);
	pos += name_len;
	memcpy(buf + pos, tag, tag_len);
	pos += tag_len;
	for (unsigned i = 0; i < count; i++, pos += FUZZ_EXC_RECORD_BYTES)
		fuzz_exc_record_encode(&recs[i], buf + pos);
	return write_file(dir, seed, buf, pos);
}

int fuzz_acl_seeds_write(const char *corpus)
{
	/* A {4,2} float input and output, inside the device buffer. */
	static const struct fuzz_exc_record good = {
		.type = 0, .addr_mode = FUZZ_EXC_ADDR_DEVICE, .addr_type = 2, .placement = 0,
		.shape_num = 2, .origin_shape_num = 2, .offset = 64, .size = 32, .format = 2,
		.data_type = 0, .dims = { 4, 2, 4, 2 },
	};
	char config_dir[4096], exc_dir[4096], name[64], long_name[5000];
	struct fuzz_exc_record recs[3];
	int rc = 0;

	snprintf(config_dir, sizeof(config_dir), "%s/acl_config", corpus);
	snprintf(exc_dir, sizeof(exc_dir), "%s/acl_exception", corpus);
	mkdir(config_dir, 0755);
	mkdir(exc_dir, 0755);
	for (size_t i = 0; i < sizeof(config_seeds) / sizeof(config_seeds[0]); i++) {
		snprintf(name, sizeof(name), "config-%02zu", i);
		rc |= write_file(config_dir, name, config_seeds[i], strlen(config_seeds[i]));
	}

	recs[0] = recs[1] = recs[2] = good;
	recs[1].type = 1;
	recs[2].type = 2;
	recs[2].offset = 4096;
	recs[2].size = 1000;
	rc |= write_exception(exc_dir, "ok", 0, "info", 4, "tag", recs, 3);
	rc |= write_exception(exc_dir, "ok-subdir-absolute", FUZZ_EXC_TAG_NULL, "/a/b/info", 9, "",
			      recs, 1);
	rc |= write_exception(exc_dir, "null-name", FUZZ_EXC_NAME_NULL, "", 0, "t", recs, 1);
	rc |= write_exception(exc_dir, "null-tensors", FUZZ_EXC_TENSORS_NULL, "x", 1, "t", recs, 1);
	rc |= write_exception(exc_dir, "no-tensors", 0, "x", 1, "t", recs, 0);
	rc |= write_exception(exc_dir, "dotdot", 0, "a/../../x", 9, "t", recs, 1);
	rc |= write_exception(exc_dir, "dotdot-end", 0, "a/..", 4, "t", recs, 1);
	rc |= write_exception(exc_dir, "control", 0, "a\nb\tc\x1b[0m", 10, "t\n", recs, 1);
	memset(long_name, 'n', sizeof(long_name));
	rc |= write_exception(exc_dir, "long-component", 0, long_name, 300, "t", recs, 1);
	for (size_t i = 200; i < sizeof(long_name); i += 201)
		long_name[i] = '/';
	rc |= write_exception(exc_dir, "long-path", 0, long_name, sizeof(long_name) - 1000, "t",
			      recs, 1);
	recs[0].shape_num = 26;
	rc |= write_exception(exc_dir, "shape-past-max", 0, "x", 1, "t", recs, 1);
	recs[0].shape_num = 255;
	recs[0].origin_shape_num = 255;
	rc |= write_exception(exc_dir, "shape-255", 0, "x", 1, "t", recs, 1);
	recs[0] = good;
	recs[0].addr_mode = FUZZ_EXC_ADDR_NULL;
	rc |= write_exception(exc_dir, "null-address", 0, "x", 1, "t", recs, 1);
	recs[0].addr_mode = FUZZ_EXC_ADDR_HOST;
	rc |= write_exception(exc_dir, "host-address", 0, "x", 1, "t", recs, 1);
	recs[0].addr_mode = FUZZ_EXC_ADDR_PAST;
	recs[0].offset = FUZZ_EXC_DEV_BYTES - 16;
	rc |= write_exception(exc_dir, "past-end", 0, "x", 1, "t", recs, 1);
	recs[0] = good;
	recs[0].size = ~0ull;
	rc |= write_exception(exc_dir, "huge-size", 0, "x", 1, "t", recs, 1);
	recs[0].size = 0;
	rc |= write_exception(exc_dir, "zero-size", 0, "x", 1, "t", recs, 1);
	recs[0] = good;
	recs[0].type = 7;
	recs[0].addr_type = 0;
	recs[0].placement = 1;
	rc |= write_exception(exc_dir, "bad-enums", 0, "x", 1, "t", recs, 1);
	return rc ? -1 : 0;
}
