/* SPDX-License-Identifier: Apache-2.0 */
/* Result files written whole (struct adump_outfile): the exporter's dump.json and .pt files,
 * compare's CSV, summary and advisor files. Each is written under a temporary name of its
 * own in its directory, made with O_EXCL (which follows no link), synced and renamed to its
 * name only once every byte is on disk: a full disk leaves the name as it was, and a link
 * planted at the name is replaced, never written through. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"

int adump_outfile_open(struct adump_outfile *of, int dir_fd, unsigned mode)
{
	static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	struct timespec ts;
	uint64_t seed;

	of->dir_fd = dir_fd;
	of->f = NULL;
	clock_gettime(CLOCK_REALTIME, &ts);
	seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32 ^
	       (uintptr_t)of;
	for (unsigned attempt = 0; attempt < 100; attempt++) {
		char *p;

		memcpy(of->tmp, ".adump-", 7);
		p = of->tmp + 7;
		for (int i = 0; i < 10; i++) {
			*p++ = digits[seed % 36];
			seed /= 36;
		}
		memcpy(p, ".tmp", 5);
		of->fd = openat(dir_fd, of->tmp,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (of->fd >= 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
		seed = seed * 6364136223846793005ull + 1442695040888963407ull + attempt;
	}
	return -EEXIST;
}

FILE *adump_outfile_stream(struct adump_outfile *of)
{
	if (!of->f)
		of->f = fdopen(of->fd, "w");
	return of->f;
}

/* Everything written reaches the disk (@is_sync; else the page cache), and the descriptor
 * is closed. Return: 0 or -errno. */
static int outfile_flush(struct adump_outfile *of, bool is_sync)
{
	int ret = 0;

	if (of->f) {
		if (fflush(of->f) != 0 || ferror(of->f))
			ret = errno ? -errno : -EIO;
	}
	if (ret == 0 && is_sync && fsync(of->fd) < 0 && errno != EINVAL && errno != EROFS)
		ret = -errno;
	if (of->f) {
		if (fclose(of->f) != 0 && ret == 0)
			ret = errno ? -errno : -EIO;
	} else if (close(of->fd) < 0 && ret == 0) {
		ret = -errno;
	}
	of->f = NULL;
	of->fd = -1;
	return ret;
}

/* Rename the temporary file to @name when nothing has that name. Return: 0, -EEXIST, -errno. */
static int rename_new(struct adump_outfile *of, const char *name)
{
	if (renameat2(of->dir_fd, of->tmp, of->dir_fd, name, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* A filesystem without RENAME_NOREPLACE: a hard link fails on any name taken. */
	if (linkat(of->dir_fd, of->tmp, of->dir_fd, name, 0) < 0)
		return -errno;
	unlinkat(of->dir_fd, of->tmp, 0);
	return 0;
}

int adump_outfile_publish(struct adump_outfile *of, int status, const char *name,
			  unsigned flags)
{
	int ret = status;

	if (of->fd >= 0) {
		int flushed = outfile_flush(of, !(flags & ADUMP_OUTFILE_NOSYNC));

		if (ret == 0)
			ret = flushed;
	}
	if (ret == 0 && name) {
		if (flags & ADUMP_OUTFILE_NEW)
			ret = rename_new(of, name);
		else if (renameat(of->dir_fd, of->tmp, of->dir_fd, name) < 0)
			ret = -errno;
		if (ret == 0) {
			/* The rename itself is on disk once the directory is; a directory that
			 * cannot be synced (some filesystems refuse) still holds the file. */
			if (!(flags & ADUMP_OUTFILE_NOSYNC))
				(void)fsync(of->dir_fd);
			of->tmp[0] = '\0';
			return 0;
		}
		if (ret == -EEXIST && (flags & ADUMP_OUTFILE_NEW))
			return ret;     /* kept: the caller tries another name */
	}
	adump_outfile_discard(of);
	return ret;
}

void adump_outfile_discard(struct adump_outfile *of)
{
	if (of->f)
		fclose(of->f);
	else if (of->fd >= 0)
		close(of->fd);
	of->f = NULL;
	of->fd = -1;
	if (of->tmp[0])
		unlinkat(of->dir_fd, of->tmp, 0);
	of->tmp[0] = '\0';
}

int adump_dir_open_new(int dir_fd, const char *rel, unsigned mode)
{
	char part[4096];
	const char *p = rel;
	int fd = dir_fd, ret;

	if (strlen(rel) >= sizeof(part))
		return -ENAMETOOLONG;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		int next;

		memcpy(part, p, n);
		part[n] = '\0';
		p += n + (slash ? 1 : 0);
		if (n == 0 || !strcmp(part, "."))
			continue;
		if (!strcmp(part, "..")) {
			ret = -EINVAL;
			goto fail;
		}
		if (mkdirat(fd, part, mode) < 0 && errno != EEXIST) {
			ret = -errno;
			goto fail;
		}
		/* O_NOFOLLOW: a link planted in place of the directory is refused (ELOOP or
		 * ENOTDIR), never entered. */
		next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			ret = errno == ELOOP ? -ENOTDIR : -errno;
			goto fail;
		}
		if (fd != dir_fd)
			close(fd);
		fd = next;
	}
	if (fd == dir_fd) {
		fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	return fd;
fail:
	if (fd != dir_fd)
		close(fd);
	return ret;
}

void adump_name_component(char *name)
{
	for (char *p = name; *p; p++)
		if (*p == '/')
			*p = '_';
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		name[0] = '_';
}
