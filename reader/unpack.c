/* SPDX-License-Identifier: Apache-2.0 */
/* Restoring the dump files of a packed capture: every complete index line names a file's
 * bytes in a segment; each is checked against its CRC32C and written out under its name.
 * The read side of the packed layout: lines parsed by proto/packed.c's one parser. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/reader.h"

#define MODULE "unpack"
#define COPY_BYTES (4u << 20)

struct index_entry {
	char name[4096];
	char segment[256];
	unsigned long long offset;
	unsigned long long length;
	unsigned crc;
};

/* Parses one index line (without its newline). Return: 0, or -ADUMP_ERR_CORRUPT. */
static int parse_line(char *line, struct index_entry *e)
{
	struct adump_packed_line l;

	if (adump_packed_line_parse(line, &l) || strlen(l.name) >= sizeof(e->name) ||
	    strlen(l.segment) >= sizeof(e->segment))
		return -ADUMP_ERR_CORRUPT;
	strcpy(e->name, l.name);
	strcpy(e->segment, l.segment);
	e->offset = l.offset;
	e->length = l.length;
	e->crc = l.crc32c;
	return 0;
}

/* The entry @e written below @out_fd (OUT): each directory of its name made and entered
 * without following a link (a link planted in OUT: -ENOTDIR, nothing written through it;
 * issue 30), the file published whole under its name. */
static int restore(const char *packed_dir, int out_fd, const struct index_entry *e,
		   unsigned char *buf)
{
	char rel[sizeof(e->name)];
	const char *base = e->name;
	struct adump_outfile out;
	int in = -1, dir_fd, ret = 0;
	uint32_t crc = 0;
	char *slash;

	snprintf(rel, sizeof(rel), "%s", e->name);
	slash = strrchr(rel, '/');
	if (slash) {
		*slash = '\0';
		base = e->name + (slash - rel) + 1;
	} else {
		rel[0] = '\0';
	}
	if (!base[0] || !strcmp(base, ".") || !strcmp(base, ".."))
		return -EINVAL;
	dir_fd = adump_dir_open_new(out_fd, rel, 0750);
	if (dir_fd < 0)
		return dir_fd;
	/* The index names the segment: a regular file of the packed directory, or nothing. */
	in = adump_open_beneath(packed_dir, e->segment);
	if (in < 0) {
		close(dir_fd);
		return in;
	}
	ret = adump_outfile_open(&out, dir_fd, 0640);
	if (ret < 0)
		goto out;
	for (unsigned long long done = 0; done < e->length && ret == 0;) {
		size_t want = e->length - done < COPY_BYTES ? (size_t)(e->length - done) : COPY_BYTES;
		ssize_t n = pread(in, buf, want, (off_t)(e->offset + done));

		if (n <= 0) {
			ret = n < 0 ? -errno : -ADUMP_ERR_CORRUPT;     /* segment shorter than indexed */
			break;
		}
		crc = adump_crc32c(crc, buf, (size_t)n);
		ret = adump_write_all(out.fd, buf, (size_t)n);
		done += (unsigned long long)n;
	}
	if (ret == 0 && crc != e->crc)
		ret = -ADUMP_ERR_CORRUPT;
	ret = adump_outfile_publish(&out, ret, base, ADUMP_OUTFILE_NOSYNC);
out:
	close(in);
	close(dir_fd);
	return ret;
}

long adump_unpack(const char *dir, const char *out_dir)
{
	char packed_dir[4200];
	struct stat st;
	DIR *d;
	struct dirent *de;
	unsigned char *buf;
	long restored = 0;
	int first_error = 0, out_fd, ret;

	if (!dir || !out_dir)
		return -EINVAL;
	/* Accept the capture directory or its packed/ folder. */
	if (snprintf(packed_dir, sizeof(packed_dir), "%s/packed", dir) >= (int)sizeof(packed_dir))
		return -ENAMETOOLONG;
	if (stat(packed_dir, &st) < 0 || !S_ISDIR(st.st_mode))
		snprintf(packed_dir, sizeof(packed_dir), "%s", dir);
	/* OUT itself, the user's, may be a link; nothing below it is followed. */
	ret = adump_mkdir_p(out_dir, 0750);
	if (ret < 0)
		return ret;
	out_fd = open(out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (out_fd < 0)
		return -errno;
	d = opendir(packed_dir);
	if (!d) {
		ret = -errno;
		close(out_fd);
		return ret;
	}
	buf = malloc(COPY_BYTES);
	if (!buf) {
		closedir(d);
		close(out_fd);
		return -ENOMEM;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char idx_path[4400], line[8192];
		unsigned line_number = 0;
		FILE *f;
		int fd;

		if (len < 5 || strcmp(de->d_name + len - 4, ".idx"))
			continue;
		if (snprintf(idx_path, sizeof(idx_path), "%s/%s", packed_dir, de->d_name) >=
		    (int)sizeof(idx_path))
			continue;
		fd = adump_openat_beneath(dirfd(d), de->d_name);
		f = fd < 0 ? NULL : fdopen(fd, "re");
		if (!f) {
			int ret = fd < 0 ? fd : -errno;

			if (fd >= 0)
				close(fd);
			adump_log(ADUMP_LOG_ERROR, MODULE, "%s: %s", idx_path,
				  adump_open_strerror(ret));
			if (!first_error)
				first_error = ret;
			continue;
		}
		while (fgets(line, sizeof(line), f)) {
			struct index_entry e;
			size_t n = strlen(line);
			int ret;

			line_number++;
			/* A line without its newline is the one a crash cut short: not an entry. */
			if (n == 0 || line[n - 1] != '\n')
				break;
			line[n - 1] = '\0';
			ret = parse_line(line, &e);
			if (ret == 0)
				ret = restore(packed_dir, out_fd, &e, buf);
			if (ret < 0) {
				adump_log(ADUMP_LOG_ERROR, MODULE, "%s line %u: %s%s", idx_path, line_number,
					  ret == -ADUMP_ERR_CORRUPT ? "entry does not match its segment "
								     "(bad line, short segment or CRC32C)"
					  : ret == -ENOTDIR ? "a symbolic link or a file in the way in "
							      "OUT: not written through, "
								   : adump_open_strerror(ret),
					  ret == -ENOTDIR ? e.name : "");
				if (!first_error)
					first_error = ret;
				continue;
			}
			restored++;
		}
		fclose(f);
	}
	closedir(d);
	close(out_fd);
	free(buf);
	return first_error ? first_error : restored;
}
