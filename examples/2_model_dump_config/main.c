/* SPDX-License-Identifier: Apache-2.0 */
/* Sample 2: configurable dump. aclInit without a config, then aclmdlInitDump and
 * aclmdlSetDump(acl.json); after aclmdlFinalizeDump the Add's dump file is on disk under
 * acldumpGetPath(DATA_DUMP). */
#include <limits.h>
#include <stdlib.h>

#include "../example.h"

int main(void)
{
	aclrtStream stream = NULL;
	struct ex_add add;
	const char *path;
	char data_dir[PATH_MAX];
	size_t dump_count, before;

	if (ex_init(NULL, &stream))
		return 1;
	CHECK_ERROR(aclmdlInitDump());
	CHECK_ERROR(aclmdlSetDump("./acl.json"));
	path = acldumpGetPath(DATA_DUMP);
	if (!path) {
		ERROR_LOG("acldumpGetPath(DATA_DUMP) returned null after aclmdlSetDump");
		return 1;
	}
	snprintf(data_dir, sizeof(data_dir), "%s", path);
	INFO_LOG("Configured model dump path is: %s", data_dir);
	/* A run in the same second shares the time directory: count only this run's file. */
	before = ex_count_files(data_dir, "");
	if (ex_run_add(stream, &add))
		return 1;
	CHECK_ERROR(aclmdlFinalizeDump());
	if (ex_free_add(&add))
		return 1;
	dump_count = ex_count_files(data_dir, "") - before;
	INFO_LOG("new dump files under %s: %zu", data_dir, dump_count);
	if (dump_count != 1) {
		ERROR_LOG("expected exactly one dump file");
		return 1;
	}
	if (ex_fini(stream))
		return 1;
	INFO_LOG("Run the model dump config sample successfully.");
	return 0;
}
