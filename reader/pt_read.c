/* SPDX-License-Identifier: Apache-2.0 */
/* Reading one tensor that torch.save wrote (msprobe's dump_tensor_data/<name>.pt, adump's own
 * export): the container's records (reader/pt_zip.c), data.pkl's tensor (reader/pt_pickle.c),
 * and the storage record it names, checked to hold the tensor's bytes. torch 2.x pickles a
 * tensor's storage the same way (its TypedStorage's legacy class name and element count) and
 * adds records (byteorder, .data/serialization_id, .format_version) that are not read.
 * The tensor's bytes are located, not read: callers map or pread them. Everything is bounded
 * (record counts, pickle length, stack, memo) so a cut or hostile file is an error, never a
 * crash or a large allocation. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/pt_int.h"

/* adump_pt_read() of the file open as @fd (taken over), named @path in messages. */
static int pt_read_fd(int fd, const char *path, bool is_checked, struct adump_pt_info *out,
		      char *msg, size_t cap)
{
	struct pt_zip *z;
	const struct pt_record *pkl, *data;
	unsigned char *pickle = NULL;
	uint64_t numel = 1, storage_numel = 0, storage_offset = 0;
	char key[80];
	struct stat st;
	int ret;

	z = calloc(1, sizeof(*z));
	if (!z) {
		close(fd);
		return -ENOMEM;
	}
	z->fd = fd;
	if (fstat(z->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = pt_fail(msg, cap, -EINVAL, "%s: not a regular file", path);
		goto out;
	}
	z->file_bytes = (uint64_t)st.st_size;
	out->file_bytes = z->file_bytes;
	ret = pt_zip_read(z, path, msg, cap);
	if (ret == 0 && is_checked)
		ret = pt_zip_crc_check(z, path, msg, cap);
	if (ret < 0)
		goto out;
	pkl = pt_zip_find(z, "data.pkl");
	if (!pkl) {
		ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: no data.pkl record: not a "
			      "torch.save file", path);
		goto out;
	}
	if (pkl->size > PT_PICKLE_MAX) {
		ret = pt_fail(msg, cap, -ADUMP_ERR_UNSUPPORTED, "%s: data.pkl is %llu bytes: more "
			      "than one tensor", path, (unsigned long long)pkl->size);
		goto out;
	}
	pickle = malloc(pkl->size ? pkl->size : 1);
	if (!pickle) {
		ret = -ENOMEM;
		goto out;
	}
	ret = pt_read_exact(z->fd, pkl->data_at, pickle, pkl->size);
	if (ret < 0) {
		ret = pt_fail(msg, cap, ret, "%s: reading data.pkl: %s", path, adump_strerror(ret));
		goto out;
	}
	ret = pt_pickle_tensor(pickle, pkl->size, path, out, key, sizeof(key), &storage_numel,
			       &storage_offset, msg, cap);
	if (ret < 0)
		goto out;
	for (uint32_t d = 0; d < out->dim_count; d++)
		numel = out->dims[d] && numel > UINT64_MAX / out->dims[d] ? UINT64_MAX
								       : numel * out->dims[d];
	out->element_count = numel;
	data = pt_zip_find(z, key);
	if (numel == 0) {
		out->offset = data ? data->data_at : 0;
		out->bytes = 0;
		goto out;
	}
	if (!data) {
		ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: no record %s for the tensor's "
			      "storage", path, key);
		goto out;
	}
	if (storage_numel > UINT64_MAX / out->element_bytes ||
	    storage_numel * out->element_bytes != data->size ||
	    storage_offset > storage_numel || numel > storage_numel - storage_offset) {
		ret = pt_fail(msg, cap, -ADUMP_ERR_CORRUPT, "%s: storage record %s holds %llu "
			      "bytes; the tensor needs %llu elements of %u bytes from element %llu "
			      "of a storage of %llu", path, key, (unsigned long long)data->size,
			      (unsigned long long)numel, out->element_bytes,
			      (unsigned long long)storage_offset, (unsigned long long)storage_numel);
		goto out;
	}
	out->offset = data->data_at + storage_offset * out->element_bytes;
	out->bytes = numel * out->element_bytes;
out:
	free(pickle);
	close(z->fd);
	free(z);
	return ret;
}

int adump_pt_read(const char *path, bool is_checked, struct adump_pt_info *out, char *msg,
		  size_t cap)
{
	int fd;

	if (!path || !out)
		return pt_fail(msg, cap, -ADUMP_ERR_CONFIG, "invalid arguments");
	memset(out, 0, sizeof(*out));
	fd = adump_open_regular(path);
	if (fd < 0)
		return pt_fail(msg, cap, fd, "%s: %s", path, adump_open_strerror(fd));
	return pt_read_fd(fd, path, is_checked, out, msg, cap);
}

int adump_pt_read_fd(int fd, const char *path, bool is_checked, struct adump_pt_info *out,
		     char *msg, size_t cap)
{
	struct stat st;

	if (fd < 0 || !path || !out) {
		if (fd >= 0)
			close(fd);
		return pt_fail(msg, cap, -ADUMP_ERR_CONFIG, "invalid arguments");
	}
	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int ret = fstat(fd, &st) < 0 ? -errno : S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;

		close(fd);
		return pt_fail(msg, cap, ret, "%s: %s", path, adump_open_strerror(ret));
	}
	return pt_read_fd(fd, path, is_checked, out, msg, cap);
}

int adump_pt_read_beneath(const char *dir, const char *name, const char *path, bool is_checked,
			  struct adump_pt_info *out, char *msg, size_t cap)
{
	int fd;

	if (!dir || !name || !path || !out)
		return pt_fail(msg, cap, -ADUMP_ERR_CONFIG, "invalid arguments");
	memset(out, 0, sizeof(*out));
	fd = adump_open_beneath(dir, name);
	if (fd < 0)
		return pt_fail(msg, cap, fd, "%s: %s", path, adump_open_strerror(fd));
	return pt_read_fd(fd, path, is_checked, out, msg, cap);
}
