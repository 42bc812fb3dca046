/* SPDX-License-Identifier: Apache-2.0 */
/* Sample 0: op-info recording. aclInit with an acl.json that also turns on single-op dump,
 * aclopStartDumpArgs into ./op_args, one Add, then check that the op-info JSON files and the
 * Add's dump file exist. */
#include <stdlib.h>
#include <unistd.h>

#include "../example.h"

int main(void)
{
	const char *args_path = "./op_args";
	char debug_dir[256];
	aclrtStream stream = NULL;
	struct ex_add add;
	const char *data_dir;
	size_t json_count, dump_count;

	if (ex_init("./acl.json", &stream))
		return 1;
	CHECK_ERROR(aclopStartDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS, args_path));
	data_dir = acldumpGetPath(DATA_DUMP);
	INFO_LOG("acldumpGetPath(DATA_DUMP) returned %s", data_dir ? data_dir : "(null)");
	if (ex_run_add(stream, &add) || ex_free_add(&add))
		return 1;
	CHECK_ERROR(aclopStopDumpArgs(ACL_OP_DUMP_OP_AICORE_ARGS));

	snprintf(debug_dir, sizeof(debug_dir), "%s/%ld_debug", args_path, (long)getpid());
	json_count = ex_count_files(debug_dir, ".json");
	dump_count = ex_count_files(data_dir, "");
	INFO_LOG("op-info files in %s: %zu; dump files in %s: %zu", debug_dir, json_count,
		 data_dir ? data_dir : "(null)", dump_count);
	if (json_count < 1 || dump_count < 1) {
		ERROR_LOG("expected op-info JSON and a dump file");
		return 1;
	}
	if (ex_fini(stream))
		return 1;
	INFO_LOG("Run the adump_args sample successfully.");
	return 0;
}
