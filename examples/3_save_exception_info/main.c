/* SPDX-License-Identifier: Apache-2.0 */
/* Sample 3: custom exception info. acl.json enables aic_err_brief_dump; after one Add,
 * acldumpSaveExceptionInfo saves its three tensors under acldumpGetExceptionInfoPath(), as
 * save_exception_info.custom.<timestamp>, owner read-only. */
#include <stdlib.h>
#include <sys/stat.h>

#include "../example.h"

static void fill(acldumpTensorInfo *info, acldumpTensorType type, void *dev)
{
	memset(info, 0, sizeof(*info));
	info->type = type;
	info->tensorSize = EX_ELEMS * sizeof(float);
	info->format = ACL_FORMAT_ND;
	info->dataType = ACL_FLOAT;
	info->tensorAddr = (int64_t *)dev;
	info->addrType = ACL_DUMP_ADDR_RAW;
	info->placement = ACL_DUMP_PLACEMENT_DEVICE;
	info->shapeNum = info->originShapeNum = 2;
	info->shape[0] = info->originShape[0] = 4;
	info->shape[1] = info->originShape[1] = 2;
}

static const char *found_path;
static char found[4096];

static int find_saved(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_F && strstr(path, "/save_exception_info.custom.")) {
		snprintf(found, sizeof(found), "%s", path);
		found_path = found;
		return (st->st_mode & 0777) == 0400 ? 1 : 2;
	}
	return 0;
}

int main(void)
{
	char exc_path[ACL_DUMP_MAX_FILE_PATH_LENGTH] = { 0 };
	acldumpTensorInfo tensors[3];
	aclrtStream stream = NULL;
	struct ex_add add;
	int found_ret;

	if (ex_init("./acl.json", &stream))
		return 1;
	CHECK_ERROR(acldumpGetExceptionInfoPath(exc_path, sizeof(exc_path)));
	INFO_LOG("exception dump path is: %s", exc_path);
	if (ex_run_add(stream, &add))
		return 1;
	fill(&tensors[0], ACL_DUMP_TENSOR_INPUT, add.self_dev);
	fill(&tensors[1], ACL_DUMP_TENSOR_INPUT, add.other_dev);
	fill(&tensors[2], ACL_DUMP_TENSOR_OUTPUT, add.out_dev);
	CHECK_ERROR(acldumpSaveExceptionInfo("save_exception_info",
					     "component=demo;stage=forward;note=save_exception_info_example",
					     tensors, 3));
	found_ret = nftw(exc_path, find_saved, 16, FTW_PHYS);
	if (found_ret != 1) {
		ERROR_LOG("no owner-read-only save_exception_info.custom.* under %s (%s)", exc_path,
			  found_path ? found_path : "none");
		return 1;
	}
	INFO_LOG("saved %s", found_path);
	if (ex_free_add(&add) || ex_fini(stream))
		return 1;
	INFO_LOG("Run the save_exception_info sample successfully.");
	return 0;
}
