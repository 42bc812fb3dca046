/* SPDX-License-Identifier: Apache-2.0 */
/* Files published whole (struct adump_pubfile). A dump file is complete only once every one
 * of its chunks is written, so it must not be visible under its name before. Creating it as
 * "<name>.part" and renaming it costs a directory entry added, removed and added again; an
 * unnamed file linked in at the end adds one (on ext4, 1,000-byte files went from 28-30k to
 * 31-36k a second), and a crash leaves nothing behind to clean up. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"

#define PART_SUFFIX ".part"

/* Set once an unnamed file could not be linked in (no /proc, no CAP_DAC_READ_SEARCH):
 * later files are made as "<name>.part" from the start. */
static atomic_bool is_link_unusable;

/* @pf's directory, against which its names are taken: its own descriptor, or the working
 * directory's (a path). */
static int dir_of(const struct adump_pubfile *pf)
{
	return pf->dir_fd >= 0 ? pf->dir_fd : AT_FDCWD;
}

/* An unnamed file (O_TMPFILE) in the directory of @name (taken from @dfd), or -1 with errno
 * set. */
static int open_unnamed(int dfd, const char *name, int oflags, unsigned mode)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(name, '/');

	if (!slash)
		return openat(dfd, ".", oflags | O_TMPFILE, mode);
	if (slash == name)
		return open("/", oflags | O_TMPFILE, mode);
	if ((size_t)(slash - name) >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, name, (size_t)(slash - name));
	dir[slash - name] = '\0';
	return openat(dfd, dir, oflags | O_TMPFILE, mode);
}

/* The file's name in @pf's directory: @path itself, or its last component when @pf has a
 * directory of its own. */
static const char *name_in(const struct adump_pubfile *pf, const char *path)
{
	const char *slash = strrchr(path, '/');

	return pf->dir_fd >= 0 && slash ? slash + 1 : path;
}

/* Starts @pf as @name in @pf's directory. */
static int start(struct adump_pubfile *pf, const char *name, int flags, unsigned mode)
{
	char part[PATH_MAX + 16];
	int oflags = O_CLOEXEC | flags, dfd = dir_of(pf);

	pf->is_unnamed = false;
	/* Readable too: where it cannot be linked in, its data is copied out (copy_unnamed()).
	 * The testpoint makes this a filesystem without O_TMPFILE. */
	if (ADUMP_TESTPOINT("pubfile.unnamed") < 0 ||
	    atomic_load_explicit(&is_link_unusable, memory_order_relaxed))
		pf->fd = -1;
	else
		pf->fd = open_unnamed(dfd, name, oflags | O_RDWR, mode);
	if (pf->fd >= 0) {
		pf->is_unnamed = true;
		return 0;
	}
	/* EOPNOTSUPP, EISDIR or EINVAL: no O_TMPFILE here (or not with these flags); any other
	 * failure comes again from the plain open. */
	if (adump_path_with(part, sizeof(part), name, PART_SUFFIX) < 0)
		return -ENAMETOOLONG;
	/* A stale one makes way; whatever is at the name then, a planted link included, is
	 * never written through: the file is created new. */
	unlinkat(dfd, part, 0);
	pf->fd = openat(dfd, part, oflags | O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
	return pf->fd < 0 ? -errno : 0;
}

int adump_pubfile_open(struct adump_pubfile *pf, const char *path, int flags, unsigned mode)
{
	pf->dir_fd = -1;
	return start(pf, path, flags, mode);
}

int adump_pubfile_openat(struct adump_pubfile *pf, int dir_fd, const char *name, int flags,
			 unsigned mode)
{
	int ret;

	pf->dir_fd = dir_fd;
	ret = start(pf, name, flags, mode);
	if (ret < 0) {
		close(pf->dir_fd);
		pf->dir_fd = -1;
	}
	return ret;
}

/* Set once linkat(AT_EMPTY_PATH) was refused (no CAP_DAC_READ_SEARCH on a kernel that asks
 * for it): later files go through /proc at once. */
static atomic_bool is_empty_path_unusable;

/* Gives the unnamed file @fd the name @name in @dfd, which must not exist. */
static int link_unnamed(int fd, int dfd, const char *name)
{
	char proc[64];
	int ret;

	/* The testpoint makes this a system where neither way is allowed. */
	if (ADUMP_TESTPOINT("pubfile.link") < 0)
		return -EPERM;
	/* The descriptor itself first: it spares the walk through /proc/self/fd (on ext4,
	 * 1.6 KiB files: 37.7 against 39.4 us a file, create to close, one thread). */
	if (!atomic_load_explicit(&is_empty_path_unusable, memory_order_relaxed)) {
		/* The testpoint plays a kernel that refuses it (ENOENT). */
		ret = ADUMP_TESTPOINT("pubfile.empty_path");
		if (ret == 0)
			ret = linkat(fd, "", dfd, name, AT_EMPTY_PATH) == 0 ? 0 : -errno;
		if (ret != -ENOENT && ret != -EPERM)
			return ret;
	}
	/* Refused (ENOENT is also a missing directory, which /proc tells apart), or
	 * already known to be. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ret = linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) == 0 ? 0 : -errno;
	if (ret == 0)
		atomic_store_explicit(&is_empty_path_unusable, true, memory_order_relaxed);
	return ret;
}

/* Copies the unnamed file @fd to a new file @name in @dfd (its mode too): what is left where
 * it cannot be linked in, so that nothing captured is lost. */
static int copy_unnamed(int fd, int dfd, const char *name)
{
	struct stat st;
	off_t off = 0;
	int flags = fcntl(fd, F_GETFL), out, ret = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (flags >= 0 && (flags & O_DIRECT))
		fcntl(fd, F_SETFL, flags & ~O_DIRECT);
	/* New, never through a link: the callers removed what was at @name. */
	out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     st.st_mode & 07777);
	if (out < 0)
		return -errno;
	while (ret == 0 && off < st.st_size) {
		ssize_t n = copy_file_range(fd, &off, out, NULL, (size_t)(st.st_size - off), 0);

		if (n < 0 && errno != EINTR)
			ret = -errno;
		else if (n == 0)
			ret = -EIO;
	}
	if (close(out) < 0 && ret == 0)
		ret = -errno;
	if (ret < 0)
		unlinkat(dfd, name, 0);
	return ret;
}

/* Gives the unnamed file @fd the name @name in @dfd, atomically replacing a file already
 * there. */
static int publish_unnamed(int fd, int dfd, const char *name)
{
	char part[PATH_MAX + 16];
	int ret = link_unnamed(fd, dfd, name);

	if (ret == 0)
		return 0;
	if (adump_path_with(part, sizeof(part), name, PART_SUFFIX) < 0)
		return -ENAMETOOLONG;
	unlinkat(dfd, part, 0);
	if (ret == -EEXIST) {
		/* A file of that name exists: link under the temporary name, rename over it. */
		ret = link_unnamed(fd, dfd, part);
	} else {
		/* Unnamed files cannot be linked in here: this one is copied out, later ones
		 * are made as "<name>.part" from the start. */
		ret = copy_unnamed(fd, dfd, part);
		if (ret == 0)
			atomic_store_explicit(&is_link_unusable, true, memory_order_relaxed);
	}
	if (ret == 0 && renameat(dfd, part, dfd, name) < 0) {
		ret = -errno;
		unlinkat(dfd, part, 0);
	}
	return ret;
}

static int close_unnamed(struct adump_pubfile *pf, const char *name, int status,
			 const char *keep_suffix)
{
	char keep[PATH_MAX + 16];
	bool has_keep = keep_suffix && adump_path_with(keep, sizeof(keep), name, keep_suffix) == 0;
	int ret = status, dfd = dir_of(pf);

	if (ret == 0)
		ret = publish_unnamed(pf->fd, dfd, name);
	if (ret < 0 && has_keep) {
		/* Named before the close, which would free it. A stale one of an earlier run
		 * makes way, as a rename over it would. */
		unlinkat(dfd, keep, 0);
		if (link_unnamed(pf->fd, dfd, keep) < 0)
			copy_unnamed(pf->fd, dfd, keep);
	}
	if (close(pf->fd) < 0 && ret == 0) {
		/* Published, yet the data may not all be there: take the name back. */
		ret = -errno;
		if (!has_keep || renameat(dfd, name, dfd, keep) < 0)
			unlinkat(dfd, name, 0);
	}
	return ret;
}

static int close_part(struct adump_pubfile *pf, const char *name, int status,
		      const char *keep_suffix)
{
	char part[PATH_MAX + 16], keep[PATH_MAX + 16];
	int ret = status, dfd = dir_of(pf);

	if (close(pf->fd) < 0 && ret == 0)
		ret = -errno;
	/* Fits: the open built the same name. */
	adump_path_with(part, sizeof(part), name, PART_SUFFIX);
	if (ret == 0 && renameat(dfd, part, dfd, name) < 0)
		ret = -errno;
	if (ret < 0 && !(keep_suffix &&
			 adump_path_with(keep, sizeof(keep), name, keep_suffix) == 0 &&
			 renameat(dfd, part, dfd, keep) == 0))
		unlinkat(dfd, part, 0);
	return ret;
}

int adump_pubfile_close(struct adump_pubfile *pf, const char *path, int status,
			const char *keep_suffix)
{
	const char *name = name_in(pf, path);
	int ret;

	if (pf->fd < 0)
		ret = status < 0 ? status : -EBADF;
	else
		ret = pf->is_unnamed ? close_unnamed(pf, name, status, keep_suffix) :
				       close_part(pf, name, status, keep_suffix);
	pf->fd = -1;
	if (pf->dir_fd >= 0)
		close(pf->dir_fd);
	pf->dir_fd = -1;
	return ret;
}
