/* SPDX-License-Identifier: Apache-2.0 */
/* Files published whole (struct adump_pubfile). A dump file is complete only once every one
 * of its chunks is written, so it must not be visible under its name before. Creating it as
 * "<name>.part" and renaming it costs a directory entry added, removed and added again; an
 * unnamed file linked in at the end adds one (on ext4, 1,000-byte files went from 28-30k to
 * 31-36k a second), and a crash leaves nothing behind to clean up. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"

#define PART_SUFFIX ".part"

static int suffixed(char *dst, size_t cap, const char *path, const char *suffix)
{
	return snprintf(dst, cap, "%s%s", path, suffix) < (int)cap ? 0 : -ENAMETOOLONG;
}

/* An unnamed file (O_TMPFILE) in the directory of @path, or -1 with errno set. */
static int open_unnamed(const char *path, int oflags, unsigned mode)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!slash)
		return open(".", oflags | O_TMPFILE, mode);
	if (slash == path)
		return open("/", oflags | O_TMPFILE, mode);
	if ((size_t)(slash - path) >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	return open(dir, oflags | O_TMPFILE, mode);
}

int adump_pubfile_open(struct adump_pubfile *pf, const char *path, int flags, unsigned mode)
{
	char part[PATH_MAX + 16];
	int oflags = O_WRONLY | O_CLOEXEC | flags;

	pf->is_unnamed = false;
	/* The testpoint makes this a filesystem without O_TMPFILE. */
	pf->fd = ADUMP_TESTPOINT("pubfile.unnamed") < 0 ? -1 : open_unnamed(path, oflags, mode);
	if (pf->fd >= 0) {
		pf->is_unnamed = true;
		return 0;
	}
	/* EOPNOTSUPP, EISDIR or EINVAL: no O_TMPFILE here (or not with these flags); any other
	 * failure comes again from the plain open. */
	if (suffixed(part, sizeof(part), path, PART_SUFFIX) < 0)
		return -ENAMETOOLONG;
	pf->fd = open(part, oflags | O_CREAT | O_TRUNC, mode);
	return pf->fd < 0 ? -errno : 0;
}

/* Gives the unnamed file @fd the name @path, which must not exist. */
static int link_unnamed(int fd, const char *path)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno == EEXIST)
		return -EEXIST;
	/* No /proc mounted: the same without it, which older kernels allow only with
	 * CAP_DAC_READ_SEARCH. */
	return linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0 ? 0 : -errno;
}

/* Gives the unnamed file @fd the name @path, atomically replacing a file already there. */
static int publish_unnamed(int fd, const char *path)
{
	char part[PATH_MAX + 16];
	int ret = link_unnamed(fd, path);

	if (ret != -EEXIST)
		return ret;
	/* A file of that name exists: link under the temporary name, then rename over it. */
	ret = suffixed(part, sizeof(part), path, PART_SUFFIX);
	if (ret < 0)
		return ret;
	unlink(part);
	ret = link_unnamed(fd, part);
	if (ret == 0 && rename(part, path) < 0) {
		ret = -errno;
		unlink(part);
	}
	return ret;
}

static int close_unnamed(struct adump_pubfile *pf, const char *path, int status,
			 const char *keep_suffix)
{
	char keep[PATH_MAX + 16];
	bool has_keep = keep_suffix && suffixed(keep, sizeof(keep), path, keep_suffix) == 0;
	int ret = status;

	if (ret == 0)
		ret = publish_unnamed(pf->fd, path);
	if (ret < 0 && has_keep) {
		/* Named before the close, which would free it. A stale one of an earlier run
		 * makes way, as a rename over it would. */
		unlink(keep);
		link_unnamed(pf->fd, keep);
	}
	if (close(pf->fd) < 0 && ret == 0) {
		/* Published, yet the data may not all be there: take the name back. */
		ret = -errno;
		if (!has_keep || rename(path, keep) < 0)
			unlink(path);
	}
	return ret;
}

static int close_part(struct adump_pubfile *pf, const char *path, int status,
		      const char *keep_suffix)
{
	char part[PATH_MAX + 16], keep[PATH_MAX + 16];
	int ret = status;

	if (close(pf->fd) < 0 && ret == 0)
		ret = -errno;
	/* Fits: the open built the same name. */
	suffixed(part, sizeof(part), path, PART_SUFFIX);
	if (ret == 0 && rename(part, path) < 0)
		ret = -errno;
	if (ret < 0 && !(keep_suffix && suffixed(keep, sizeof(keep), path, keep_suffix) == 0 &&
			 rename(part, keep) == 0))
		unlink(part);
	return ret;
}

int adump_pubfile_close(struct adump_pubfile *pf, const char *path, int status,
			const char *keep_suffix)
{
	int ret;

	if (pf->fd < 0)
		return status < 0 ? status : -EBADF;
	ret = pf->is_unnamed ? close_unnamed(pf, path, status, keep_suffix) :
			       close_part(pf, path, status, keep_suffix);
	pf->fd = -1;
	return ret;
}
