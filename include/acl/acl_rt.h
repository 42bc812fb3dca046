/* SPDX-License-Identifier: Apache-2.0 */
/* CANN-compatible runtime subset (reference §9): init/finalize, devices, streams, device
 * memory, and the aclmdl*Dump configuration calls, which CANN also declares here (§1.5).
 * Backed by adump's simulated NPU (include/adump/device.h). */
#ifndef ADUMP_ACL_ACL_RT_H
#define ADUMP_ACL_ACL_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aclrtMemcpyKind {
	ACL_MEMCPY_HOST_TO_HOST,
	ACL_MEMCPY_HOST_TO_DEVICE,
	ACL_MEMCPY_DEVICE_TO_HOST,
	ACL_MEMCPY_DEVICE_TO_DEVICE,
	ACL_MEMCPY_DEFAULT,
	ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE,
	ACL_MEMCPY_INNER_DEVICE_TO_DEVICE,
	ACL_MEMCPY_INTER_DEVICE_TO_DEVICE,
} aclrtMemcpyKind;

typedef enum aclrtMemMallocPolicy {
	ACL_MEM_MALLOC_HUGE_FIRST,
	ACL_MEM_MALLOC_HUGE_ONLY,
	ACL_MEM_MALLOC_NORMAL_ONLY,
	ACL_MEM_MALLOC_HUGE_FIRST_P2P,
	ACL_MEM_MALLOC_HUGE_ONLY_P2P,
	ACL_MEM_MALLOC_NORMAL_ONLY_P2P,
	ACL_MEM_MALLOC_HUGE1G_ONLY,
	ACL_MEM_MALLOC_HUGE1G_ONLY_P2P,
	ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100,
	ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000,
	ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000,
} aclrtMemMallocPolicy;

/**
 * aclInit() - initialise the runtime once per process.
 * @configPath: acl.json with an optional "dump" object (reference §3), or NULL.
 * Return: ACL_SUCCESS; ACL_ERROR_REPEAT_INITIALIZE on a second call; ACL_ERROR_INVALID_FILE
 * (unreadable file), ACL_ERROR_PARSE_FILE (JSON syntax; the log names line and column),
 * ACL_ERROR_INVALID_DUMP_CONFIG (a rejected "dump" key; the log names it).
 */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
/** aclFinalize() - flush and stop dumping, release every device. ACL_ERROR_REPEAT_FINALIZE after the first. */
ACL_FUNC_VISIBILITY aclError aclFinalize(void);

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDeviceForce(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId);

ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);
/** aclrtSynchronizeStream() - wait for the stream's tasks and for every dump chunk they
 * produced to be written or delivered to the registered callback. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);

ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr);
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
					 aclrtMemcpyKind kind);

/**
 * aclmdlInitDump() - start a configurable dump (then aclmdlSetDump()).
 * Return: ACL_SUCCESS, ACL_ERROR_UNINITIALIZE before aclInit, ACL_ERROR_REPEAT_INITIALIZE
 * when already initialised, ACL_ERROR_DUMP_ALREADY_RUN when aclInit's json configured a
 * data dump, ACL_ERROR_INTERNAL_ERROR.
 */
ACL_FUNC_VISIBILITY aclError aclmdlInitDump(void);
/**
 * aclmdlSetDump() - apply an acl.json "dump" section; a later call overrides an earlier one.
 * Return: ACL_SUCCESS, ACL_ERROR_UNINITIALIZE, ACL_ERROR_DUMP_NOT_RUN (no aclmdlInitDump),
 * ACL_ERROR_INVALID_PARAM (NULL path), ACL_ERROR_INVALID_FILE, ACL_ERROR_PARSE_FILE,
 * ACL_ERROR_INVALID_DUMP_CONFIG, ACL_ERROR_INTERNAL_ERROR.
 */
ACL_FUNC_VISIBILITY aclError aclmdlSetDump(const char *dumpCfgPath);
/** aclmdlFinalizeDump() - flush and stop. ACL_ERROR_UNINITIALIZE, ACL_ERROR_DUMP_NOT_RUN. */
ACL_FUNC_VISIBILITY aclError aclmdlFinalizeDump(void);

#ifdef __cplusplus
}
#endif
#endif
