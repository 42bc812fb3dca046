/* SPDX-License-Identifier: Apache-2.0 */
/* Opening files to read: the file a user names (anywhere, but a plain file) and the file a
 * capture names (beneath the capture's directory, never outside it). Neither ever blocks on
 * a FIFO or reads a device: what is not a regular file is refused at open. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adump_config.h"
#include "common/common.h"

#if defined(ADUMP_HAVE_SYS_OPENAT2) && defined(ADUMP_HAVE_RESOLVE_BENEATH)
#include <linux/openat2.h>
#define HAVE_OPENAT2 1
#endif

/* O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer. O_NOCTTY: a
 * terminal never becomes ours. Both matter only until the file is known to be regular. */
#define READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/* @fd's file is regular, and then reads block again. Return: @fd, or negative (@fd closed). */
static int keep_regular(int fd)
{
	struct stat st;
	int flags, ret;

	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto err;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto err;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		ret = -errno;
		goto err;
	}
	return fd;
err:
	close(fd);
	return ret;
}

int adump_open_regular(const char *path)
{
	int fd;

	if (!path || !path[0])
		return -ENOENT;
	fd = open(path, READ_FLAGS);
	if (fd < 0)
		return -errno;
	return keep_regular(fd);
}

bool adump_name_is_beneath(const char *name)
{
	if (!name || !name[0] || name[0] == '/')
		return false;
	for (const char *p = name; (p = strstr(p, "..")); p += 2) {
		bool starts = p == name || p[-1] == '/';
		bool ends = p[2] == '\0' || p[2] == '/';

		if (starts && ends)
			return false;
	}
	return true;
}

/* Without openat2 (kernels before 5.6, or a seccomp filter): one component at a time from
 * @dirfd, each directory opened O_NOFOLLOW, so no symlink is ever followed (@link_err for
 * one on the way); the last one opened with @last_flags. */
static int open_walk(int dirfd, const char *name, int last_flags, int link_err)
{
	char buf[PATH_MAX], *save = NULL, *comp, *next;
	int cur, fd;

	if (snprintf(buf, sizeof(buf), "%s", name) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (cur < 0)
		return -errno;
	for (comp = strtok_r(buf, "/", &save); comp; comp = next) {
		struct stat st;

		next = strtok_r(NULL, "/", &save);
		if (!strcmp(comp, "."))
			continue;
		/* A symlink is refused whatever it points at: resolving it by hand is where
		 * escapes hide. */
		if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			fd = -errno;
			close(cur);
			return fd;
		}
		if (S_ISLNK(st.st_mode)) {
			close(cur);
			return link_err;
		}
		fd = next ? openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			  : openat(cur, comp, last_flags | O_NOFOLLOW);
		close(cur);
		if (fd < 0)
			return errno == ELOOP ? link_err : -errno;
		cur = fd;
	}
	return cur;
}

/* openat2(2) of @name beneath @dirfd with @flags, every symlink refused (@is_nolink) or only
 * magic links. Return: the descriptor, -errno, or -ENOSYS where the walk must do it (no
 * openat2 here, or a seccomp filter refuses it). */
static int open2(int dirfd, const char *name, int flags, bool is_nolink)
{
#ifdef HAVE_OPENAT2
	struct open_how how = {
		.flags = (uint64_t)flags,
		.resolve = RESOLVE_BENEATH | (is_nolink ? RESOLVE_NO_SYMLINKS : RESOLVE_NO_MAGICLINKS),
	};
	int fault = ADUMP_TESTPOINT("openfile.openat2");
	long got = fault ? (errno = -fault, -1)
			 : syscall(SYS_openat2, dirfd, name, &how, sizeof(how));

	if (got >= 0)
		return (int)got;
	return errno == EPERM ? -ENOSYS : -errno;
#else
	(void)dirfd;
	(void)name;
	(void)flags;
	(void)is_nolink;
	return -ENOSYS;
#endif
}

int adump_openat_beneath(int dirfd, const char *name)
{
	int fd;

	if (!adump_name_is_beneath(name))
		return -EXDEV;
	fd = open2(dirfd, name, READ_FLAGS, false);
	if (fd >= 0)
		return keep_regular(fd);
	/* ELOOP: a magic link (/proc/self/fd/...), refused as an escape. */
	if (fd == -EXDEV || fd == -ELOOP)
		return -EXDEV;
	if (fd != -ENOSYS)
		return fd;
	fd = open_walk(dirfd, name, READ_FLAGS, -EXDEV);
	return fd < 0 ? fd : keep_regular(fd);
}

int adump_dir_open_nolink(int dirfd, const char *rel)
{
	const int flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
	int fd;

	if (!rel[0])
		rel = ".";
	if (!adump_name_is_beneath(rel))
		return -EXDEV;
	fd = open2(dirfd, rel, flags, true);
	if (fd != -ENOSYS)
		return fd;
	return open_walk(dirfd, rel, flags, -ELOOP);
}

int adump_open_beneath(const char *dir, const char *name)
{
	int dirfd, fd;

	if (!dir || !dir[0])
		dir = ".";
	if (!adump_name_is_beneath(name))
		return -EXDEV;
	dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	fd = adump_openat_beneath(dirfd, name);
	close(dirfd);
	return fd;
}

const char *adump_open_strerror(int ret)
{
	switch (ret) {
	case -EXDEV:
		return "names a file outside the capture's directory (an absolute path, \"..\" "
		       "or a symlink out): refused";
	case -EINVAL:
		return "not a regular file (a FIFO, socket or device): refused";
	case -EISDIR:
		return "a directory where a file belongs: refused";
	default:
		return adump_strerror(ret);
	}
}
