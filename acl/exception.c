/* SPDX-License-Identifier: Apache-2.0 */
/* Exception dump through the shim (reference §1.4, §2.5.5, §2.5.6): where exception files go
 * (ASCEND_DUMP_PATH > ASCEND_WORK_PATH > acl.json dump_path > ./), acldumpGetExceptionInfoPath
 * and acldumpSaveExceptionInfo, which copies tensors from the device and writes one dump file
 * that can never land outside the exception root (openat2 RESOLVE_BENEATH). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl_int.h"
#include "adump_config.h"

#if defined(ADUMP_HAVE_SYS_OPENAT2) && defined(ADUMP_HAVE_RESOLVE_BENEATH)
#include <linux/openat2.h>
#define HAVE_OPENAT2 1
#endif

#define MOD "acl"

/* An environment path is used when it is, or can be made, a read-write directory. */
static bool env_dir_usable(const char *path)
{
	struct stat st;

	if (!path || !*path)
		return false;
	if (adump_mkdir_p(path, 0750) < 0)
		return false;
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode) || access(path, R_OK | W_OK) < 0)
		return false;
	return true;
}

void adump_acl_exception_setup_locked(struct adump_acl_state *st, const struct adump_acl_cfg *cfg)
{
	const char *dump_env = getenv("ASCEND_DUMP_PATH");
	const char *work_env = getenv("ASCEND_WORK_PATH");
	const char *scene_env = getenv("ASCEND_DUMP_SCENE");
	const char *collect_env = getenv("NPU_COLLECT_PATH");
	const char *base = NULL;
	bool is_enabled = adump_acl_cfg_is_exception(cfg);

	/* Env-only enabling (CANN EnableExceptionDumpWithEnv): ASCEND_DUMP_SCENE names an
	 * aic_err_* mode, otherwise NPU_COLLECT_PATH turns on norm exception dump into itself. */
	if (scene_env && (!strcmp(scene_env, "aic_err_brief_dump") ||
			  !strcmp(scene_env, "aic_err_norm_dump") ||
			  !strcmp(scene_env, "aic_err_detail_dump")))
		is_enabled = true;
	else if (!is_enabled && collect_env && env_dir_usable(collect_env)) {
		is_enabled = true;
		base = collect_env;
	}
	if (!base) {
		if (env_dir_usable(dump_env))
			base = dump_env;
		else if (env_dir_usable(work_env))
			base = work_env;
		else if (cfg && cfg->dump_path[0])
			base = cfg->dump_path;
		else
			base = ".";
	}
	pthread_mutex_lock(&st->path_lock);
	snprintf(st->exc_base, sizeof(st->exc_base), "%s", base);
	pthread_mutex_unlock(&st->path_lock);
	atomic_store_explicit(&st->is_exception, is_enabled, memory_order_relaxed);
}

/* <base>/extra-info/data-dump/<device>, created and canonical. Return: 0 or -errno. */
static int exception_root(struct adump_acl_state *st, int32_t device, char *out, size_t cap)
{
	char path[PATH_MAX];
	int ret;

	pthread_mutex_lock(&st->path_lock);
	ret = snprintf(path, sizeof(path), "%s/extra-info/data-dump/%d",
		       st->exc_base[0] ? st->exc_base : ".", device);
	pthread_mutex_unlock(&st->path_lock);
	if (ret >= (int)sizeof(path))
		return -ENAMETOOLONG;
	ret = adump_mkdir_p(path, 0750);
	if (ret < 0)
		return ret;
	if (!realpath(path, out))
		return -errno;
	if (strlen(out) >= cap)
		return -ENAMETOOLONG;
	return 0;
}

aclError acldumpGetExceptionInfoPath(char *path, size_t maxLen)
{
	struct adump_acl_state *st = adump_acl_state();
	char root[PATH_MAX];
	int32_t device;
	bool is_enabled;
	int ret;

	if (!path || maxLen <= 1)
		return ACL_ERROR_INVALID_PARAM;
	pthread_mutex_lock(&st->lock);
	is_enabled = atomic_load_explicit(&st->is_exception, memory_order_relaxed);
	device = adump_acl_current_device_locked(st);
	if (device < 0)
		device = 0;
	pthread_mutex_unlock(&st->lock);
	if (!is_enabled) {
		adump_log(ADUMP_LOG_ERROR, MOD, "acldumpGetExceptionInfoPath: exception dump is not enabled");
		return ACL_ERROR_FAILURE;
	}
	ret = exception_root(st, device, root, sizeof(root));
	if (ret < 0) {
		adump_log(ADUMP_LOG_ERROR, MOD, "exception dump root: %s", strerror(-ret));
		return ACL_ERROR_FAILURE;
	}
	if (strlen(root) > maxLen - 1)
		return ACL_ERROR_INVALID_PARAM;
	memcpy(path, root, strlen(root) + 1);
	return ACL_SUCCESS;
}

/* A name with a control character (newline, escape, ...) would make a file no listing or
 * log line shows faithfully. */
static bool has_control_char(const char *s)
{
	for (; *s; s++)
		if (iscntrl((unsigned char)*s))
			return true;
	return false;
}

static bool has_dotdot_segment(const char *s)
{
	for (const char *p = s; (p = strstr(p, "..")); p += 2) {
		bool starts = p == s || p[-1] == '/';
		bool ends = p[2] == '\0' || p[2] == '/';

		if (starts && ends)
			return true;
	}
	return false;
}

/* Open @rel beneath @dirfd without ever leaving it: no "..", no absolute path, no symlink
 * (planted or magic) that points outside. */
static int open_beneath(int dirfd, const char *rel, int flags, mode_t mode)
{
#ifdef HAVE_OPENAT2
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));

	if (fd >= 0)
		return (int)fd;
	if (errno != ENOSYS && errno != EPERM)
		return -errno;
	/* Kernels before 5.6 (or a seccomp filter) lack openat2: walk component by
	 * component below, refusing every symlink. */
#endif
	{
		char buf[PATH_MAX], *save = NULL, *comp, *next;
		int cur = dup(dirfd), fd;

		if (cur < 0)
			return -errno;
		if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf)) {
			close(cur);
			return -ENAMETOOLONG;
		}
		comp = strtok_r(buf, "/", &save);
		while (comp) {
			next = strtok_r(NULL, "/", &save);
			if (!strcmp(comp, "..")) {
				close(cur);
				return -EXDEV;
			}
			fd = next ? openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
				  : openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
			close(cur);
			if (fd < 0)
				return -errno;
			cur = fd;
			comp = next;
		}
		return cur;
	}
}

/* mkdir -p for the directory part of @rel, each level created beneath @rootfd. */
static int mkdirs_beneath(int rootfd, const char *rel)
{
	char buf[PATH_MAX];
	char *slash;

	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (slash = strchr(buf, '/'); slash; slash = strchr(slash + 1, '/')) {
		char *base;
		int parent;

		*slash = '\0';
		base = strrchr(buf, '/');
		if (base) {
			*base = '\0';
			parent = open_beneath(rootfd, buf, O_PATH | O_DIRECTORY, 0);
			*base = '/';
			base++;
		} else {
			parent = dup(rootfd);
			base = buf;
		}
		if (parent < 0) {
			*slash = '/';
			return parent < -1 ? parent : -errno;
		}
		/* mkdirat never follows a symlink in its last component; an existing symlink
		 * gives EEXIST and the next open_beneath() judges where it points. */
		if (*base && mkdirat(parent, base, 0750) < 0 && errno != EEXIST) {
			int err = -errno;

			close(parent);
			return err;
		}
		close(parent);
		*slash = '/';
	}
	return 0;
}

static int check_tensors(const acldumpTensorInfo *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *why = NULL;

		if (t[i].shapeNum > ACL_DUMP_MAX_SHAPE_NUM ||
		    t[i].originShapeNum > ACL_DUMP_MAX_SHAPE_NUM)
			why = "shapeNum/originShapeNum above ACL_DUMP_MAX_SHAPE_NUM";
		else if ((unsigned)t[i].type > ACL_DUMP_TENSOR_WORKSPACE)
			why = "unknown tensor type";
		else if (t[i].addrType != ACL_DUMP_ADDR_RAW)
			why = "addrType must be ACL_DUMP_ADDR_RAW";
		else if (t[i].placement != ACL_DUMP_PLACEMENT_DEVICE)
			why = "placement must be ACL_DUMP_PLACEMENT_DEVICE";
		else if (!t[i].tensorAddr)
			why = "tensorAddr is NULL";
		else if (t[i].tensorSize == 0)
			why = "tensorSize is 0";
		if (why) {
			adump_log(ADUMP_LOG_ERROR, MOD, "acldumpSaveExceptionInfo: tensor %zu: %s", i, why);
			return -1;
		}
	}
	return 0;
}

static const char *const kind_names[] = { "input", "output", "workspace" };

/* Copy the tensors to host memory, in file order (inputs, outputs, workspaces), and describe
 * them. Return: 0 or a native error. */
static int build_op(struct adump_dev *dev, const acldumpTensorInfo *t, size_t n,
		    struct adump_tensor *tensors, void **data, char **dfx)
{
	size_t out = 0, dfx_len = 0;
	FILE *f = open_memstream(dfx, &dfx_len);

	if (!f)
		return -ENOMEM;
	for (int kind = ACL_DUMP_TENSOR_INPUT; kind <= ACL_DUMP_TENSOR_WORKSPACE; kind++) {
		for (size_t i = 0; i < n; i++) {
			struct adump_tensor *d = &tensors[out];
			int ret;

			if ((int)t[i].type != kind)
				continue;
			memset(d, 0, sizeof(*d));
			d->kind = kind == ACL_DUMP_TENSOR_INPUT ? ADUMP_TENSOR_INPUT
				  : kind == ACL_DUMP_TENSOR_OUTPUT ? ADUMP_TENSOR_OUTPUT
								   : ADUMP_TENSOR_WORKSPACE;
			d->dtype = adump_acl_dtype_to_native(t[i].dataType);
			d->format = adump_acl_format_to_native(t[i].format);
			d->sub_format = (t[i].format >> 8) & 0xffff;
			d->dim_count = t[i].shapeNum;
			d->orig_dim_count = t[i].originShapeNum;
			memcpy(d->dims, t[i].shape, sizeof(uint64_t) * t[i].shapeNum);
			memcpy(d->orig_dims, t[i].originShape, sizeof(uint64_t) * t[i].originShapeNum);
			d->address = (uint64_t)(uintptr_t)t[i].tensorAddr;
			d->bytes = t[i].tensorSize;
			/* CANN overwrites argsOffset with the array index (reference §1.2). */
			d->arg_index = (uint32_t)i;
			/* The range is checked before the host copy is allocated: a size no device
			 * buffer has must fail here, not as an allocation of that size. */
			if (!adump_dev_is_device_ptr(dev, t[i].tensorAddr, t[i].tensorSize)) {
				adump_log(ADUMP_LOG_ERROR, MOD,
					  "acldumpSaveExceptionInfo: tensor %zu: %zu bytes at %p are not "
					  "device memory", i, t[i].tensorSize, (void *)t[i].tensorAddr);
				fclose(f);
				return -ADUMP_ERR_NOT_FOUND;
			}
			data[out] = malloc(t[i].tensorSize);
			if (!data[out]) {
				fclose(f);
				return -ENOMEM;
			}
			ret = adump_dev_memcpy(dev, data[out], t[i].tensorSize, t[i].tensorAddr,
					       t[i].tensorSize, ADUMP_COPY_DEVICE_TO_HOST);
			if (ret < 0) {
				adump_log(ADUMP_LOG_ERROR, MOD,
					  "acldumpSaveExceptionInfo: tensor %zu: device copy: %s", i,
					  adump_strerror(ret));
				fclose(f);
				return ret;
			}
			fprintf(f, "%s[%zu]: index %zu, shape [", kind_names[kind], i, out);
			for (uint32_t k = 0; k < t[i].shapeNum; k++)
				fprintf(f, "%s%llu", k ? "," : "", (unsigned long long)t[i].shape[k]);
			fprintf(f, "], format %d, dtype %d, address %p, size %zu\n", t[i].format,
				t[i].dataType, (void *)t[i].tensorAddr, t[i].tensorSize);
			out++;
		}
	}
	return fclose(f) == 0 ? 0 : -ENOMEM;
}

/* YYYYMMDDhhmmssmmm, local time. */
static void stamp_ms(char *buf, size_t cap)
{
	struct timespec ts;
	struct tm tm;
	char sec[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(sec, sizeof(sec), "%Y%m%d%H%M%S", &tm);
	snprintf(buf, cap, "%.14s%03d", sec, (int)(ts.tv_nsec / 1000000) % 1000);
}

aclError acldumpSaveExceptionInfo(const char *fileName, const char *userTag,
				  const acldumpTensorInfo *tensors, size_t tensorCount)
{
	struct adump_acl_state *st = adump_acl_state();
	char root[PATH_MAX], rel[PATH_MAX], stamp[32];
	struct adump_tensor *desc = NULL;
	struct adump_attr attr;
	struct adump_op op = { 0 };
	struct adump_dev *dev;
	void **data = NULL;
	char *dfx = NULL;
	const char *name;
	int32_t device;
	int rootfd = -1, fd = -1, ret;
	aclError result = ACL_ERROR_FAILURE;

	/* Checks in CANN's order (reference §1.4). */
	if (!fileName || !*fileName || has_dotdot_segment(fileName) || !tensors || tensorCount == 0)
		return ACL_ERROR_INVALID_PARAM;
	/* adump's own check, after CANN's. */
	if (has_control_char(fileName)) {
		adump_log(ADUMP_LOG_ERROR, MOD, "acldumpSaveExceptionInfo: fileName contains a control "
			  "character");
		return ACL_ERROR_INVALID_PARAM;
	}
	pthread_mutex_lock(&st->lock);
	if (!atomic_load_explicit(&st->is_exception, memory_order_relaxed)) {
		pthread_mutex_unlock(&st->lock);
		adump_log(ADUMP_LOG_ERROR, MOD, "acldumpSaveExceptionInfo: exception dump is not enabled");
		return ACL_ERROR_FAILURE;
	}
	if (check_tensors(tensors, tensorCount) < 0) {
		pthread_mutex_unlock(&st->lock);
		return ACL_ERROR_INVALID_PARAM;
	}
	dev = adump_acl_current_dev_locked(st);
	device = adump_acl_current_device_locked(st);
	if (!dev) {
		pthread_mutex_unlock(&st->lock);
		adump_log(ADUMP_LOG_ERROR, MOD, "acldumpSaveExceptionInfo: no device set");
		return ACL_ERROR_FAILURE;
	}
	/* The file lives beneath the root: a leading '/' only anchors it there, as CANN's
	 * path concatenation does. */
	while (*fileName == '/')
		fileName++;
	stamp_ms(stamp, sizeof(stamp));
	if (!*fileName || snprintf(rel, sizeof(rel), "%s.custom.%s", fileName, stamp) >= (int)sizeof(rel)) {
		pthread_mutex_unlock(&st->lock);
		return ACL_ERROR_INVALID_PARAM;
	}
	desc = calloc(tensorCount, sizeof(*desc));
	data = calloc(tensorCount, sizeof(*data));
	ret = desc && data ? build_op(dev, tensors, tensorCount, desc, data, &dfx) : -ENOMEM;
	pthread_mutex_unlock(&st->lock);
	if (ret < 0)
		goto out;

	ret = exception_root(st, device, root, sizeof(root));
	if (ret < 0) {
		adump_log(ADUMP_LOG_ERROR, MOD, "exception dump root: %s", strerror(-ret));
		goto out;
	}
	/* Opening beneath the root would reach any depth, but a file whose path is longer
	 * than PATH_MAX cannot be opened by name afterwards, by adump's tools or any other. */
	if (strlen(root) + 1 + strlen(rel) >= PATH_MAX) {
		adump_log(ADUMP_LOG_ERROR, MOD, "acldumpSaveExceptionInfo: %s (the path below %s "
			  "would have %zu bytes, PATH_MAX is %d)", strerror(ENAMETOOLONG), root,
			  strlen(root) + 1 + strlen(rel), PATH_MAX);
		result = ACL_ERROR_INVALID_PARAM;
		goto out;
	}
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		goto out;
	ret = mkdirs_beneath(rootfd, rel);
	if (ret == 0)
		ret = fd = open_beneath(rootfd, rel, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (ret < 0) {
		adump_log(ADUMP_LOG_ERROR, MOD, "acldumpSaveExceptionInfo: %s under %s: %s", rel, root,
			  ret == -EXDEV || ret == -ELOOP ? "escapes the exception dump root"
							 : strerror(-ret));
		goto out;
	}
	name = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	/* DumpData has no op type; the native descriptor wants one for naming only. */
	op.op_type = "custom";
	op.op_name = name;
	op.device_id = (uint32_t)device;
	op.timestamp_us = adump_wall_us();
	op.tensor_count = (uint32_t)tensorCount;
	op.tensors = desc;
	if (userTag && *userTag) {
		attr = (struct adump_attr){ .name = "user_tag", .value = userTag };
		op.attr_count = 1;
		op.attrs = &attr;
	}
	op.dfx_message = dfx;
	ret = adump_dump_write_fd(fd, &op, (const void *const *)data);
	/* Owner read-only once written (CANN chmods to M_IRUSR). */
	if (ret == 0 && fchmod(fd, 0400) < 0)
		ret = -errno;
	if (ret < 0) {
		adump_log(ADUMP_LOG_ERROR, MOD, "acldumpSaveExceptionInfo: writing %s: %s", rel,
			  adump_strerror(ret));
		unlinkat(rootfd, rel, 0);
		goto out;
	}
	adump_log(ADUMP_LOG_INFO, MOD, "custom exception info saved to %s/%s", root, rel);
	result = ACL_SUCCESS;
out:
	if (fd >= 0)
		close(fd);
	if (rootfd >= 0)
		close(rootfd);
	for (size_t i = 0; data && i < tensorCount; i++)
		free(data[i]);
	free(data);
	free(desc);
	free(dfx);
	return result;
}
