/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: acldumpSaveExceptionInfo() with any arguments (layout in fuzz_acl.h):
 * NULL or empty names, ".." segments, absolute and over-long names, control characters,
 * NULL tags, shape counts past the maximum, addresses outside device memory and absurd
 * sizes. Whatever comes in, the call returns a code, never writes outside the exception
 * root, refuses what it must refuse, and a success leaves exactly one file there that
 * parses as a dump of the tensors given.
 *
 * acl/exception.c is linked with the acl state and the device copy replaced by the few
 * definitions below (one device buffer in host memory, the same range checks), as the
 * simulated device does not build with the fuzz build's clang. */
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl/acl_int.h"
#include "adump/reader.h"
#include "fuzz_acl.h"

#define FUZZ_NAME "fuzz_acl_exception"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Below $TMPDIR (run.sh points it into the build directory and empties it: libFuzzer
 * leaves through _Exit, so the atexit() clean-up does not always run). */
static char top[4096];
static char base[4200], root[4096];
static unsigned char dev_buf[FUZZ_EXC_DEV_BYTES];
static char fake_dev;
static struct adump_acl_state state = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.path_lock = PTHREAD_MUTEX_INITIALIZER,
	.is_exception = true,
};
static unsigned char host_buf[256];
static struct adump_reader *reader;
/* nftw() callbacks take no user pointer. */
static const char *walk_file;
static size_t walk_file_count;
static bool walk_is_outside;

static void quiet(enum adump_log_level level, const char *module, const char *msg, void *user)
{
	(void)level;
	(void)module;
	(void)msg;
	(void)user;
}

/* The acl state and device functions exception.c calls. */
struct adump_acl_state *adump_acl_state(void)
{
	return &state;
}

int32_t adump_acl_current_device_locked(struct adump_acl_state *st)
{
	(void)st;
	return 0;
}

struct adump_dev *adump_acl_current_dev_locked(struct adump_acl_state *st)
{
	(void)st;
	return (struct adump_dev *)&fake_dev;
}

bool adump_dev_is_device_ptr(struct adump_dev *dev, const void *ptr, size_t bytes)
{
	uintptr_t p = (uintptr_t)ptr, start = (uintptr_t)dev_buf;

	check(dev == (struct adump_dev *)&fake_dev, "the current device is passed");
	return p >= start && p < start + sizeof(dev_buf) && bytes <= start + sizeof(dev_buf) - p;
}

int adump_dev_memcpy(struct adump_dev *dev, void *dst, size_t dst_max, const void *src,
		     size_t count, enum adump_copy_kind kind)
{
	check(kind == ADUMP_COPY_DEVICE_TO_HOST, "a device-to-host copy");
	if (!dst || !src)
		return -EINVAL;
	if (count > dst_max)
		return -ADUMP_ERR_TOO_BIG;
	if (!adump_dev_is_device_ptr(dev, src, count))
		return -ADUMP_ERR_NOT_FOUND;
	memcpy(dst, src, count);
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	if (ftw->level > 0)
		remove(path);
	return 0;
}

/* Every regular file below @top must lie below the root; remembers the last one. */
static int find_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	static char last[8192];

	(void)ftw;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	if (strncmp(path, root, strlen(root)) || path[strlen(root)] != '/')
		walk_is_outside = true;
	snprintf(last, sizeof(last), "%s", path);
	walk_file = last;
	walk_file_count++;
	return 0;
}

static void cleanup(void)
{
	nftw(top, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	rmdir(top);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char real[4096];

	(void)argc;
	(void)argv;
	adump_set_log_fn(quiet, NULL);
	snprintf(top, sizeof(top), "%s/adump-fuzz-exc-XXXXXX",
		 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	check(mkdtemp(top) != NULL, "mkdtemp");
	/* Canonical, so the paths nftw() gives compare with the (canonical) root. */
	check(realpath(top, real) != NULL, "realpath");
	snprintf(top, sizeof(top), "%s", real);
	atexit(cleanup);
	snprintf(base, sizeof(base), "%s/base", top);
	check(mkdir(base, 0700) == 0, "mkdir base");
	snprintf(state.exc_base, sizeof(state.exc_base), "%s", base);
	for (size_t i = 0; i < sizeof(dev_buf); i++)
		dev_buf[i] = (unsigned char)(i * 131 + 7);
	check(acldumpGetExceptionInfoPath(root, sizeof(root)) == ACL_SUCCESS, "exception root");
	check(adump_reader_create(&reader) == 0, "reader");
	return 0;
}

static bool has_control_char(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static bool has_dotdot_segment(const char *s)
{
	for (const char *p = s; (p = strstr(p, "..")); p += 2)
		if ((p == s || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
			return true;
	return false;
}

static void fill_tensor(acldumpTensorInfo *t, const struct fuzz_exc_record *r)
{
	memset(t, 0, sizeof(*t));
	t->type = (acldumpTensorType)r->type;
	t->tensorSize = (size_t)r->size;
	t->format = r->format;
	t->dataType = r->data_type;
	switch (r->addr_mode % FUZZ_EXC_ADDR_COUNT) {
	case FUZZ_EXC_ADDR_DEVICE:
		t->tensorAddr = (int64_t *)(dev_buf + r->offset % FUZZ_EXC_DEV_BYTES);
		break;
	case FUZZ_EXC_ADDR_NULL:
		t->tensorAddr = NULL;
		break;
	case FUZZ_EXC_ADDR_RAW:
		t->tensorAddr = (int64_t *)(uintptr_t)r->offset;
		break;
	case FUZZ_EXC_ADDR_HOST:
		t->tensorAddr = (int64_t *)host_buf;
		break;
	default:
		t->tensorAddr = (int64_t *)((uintptr_t)dev_buf + r->offset);
		break;
	}
	t->addrType = (acldumpTensorAddressType)r->addr_type;
	t->placement = (acldumpTensorPlacement)r->placement;
	t->argsOffset = r->offset;
	t->shapeNum = r->shape_num;
	t->originShapeNum = r->origin_shape_num;
	for (unsigned k = 0; k < ACL_DUMP_MAX_SHAPE_NUM; k++) {
		t->shape[k] = r->dims[k % FUZZ_EXC_DIMS];
		t->originShape[k] = r->dims[(k + 1) % FUZZ_EXC_DIMS];
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	unsigned char head[FUZZ_EXC_HEAD_BYTES] = { 0 };
	acldumpTensorInfo *tensors = NULL;
	char *name = NULL, *tag = NULL;
	size_t name_len, tag_len, count, pos;
	bool must_refuse;
	aclError ret;

	memcpy(head, data, size < sizeof(head) ? size : sizeof(head));
	pos = sizeof(head) < size ? sizeof(head) : size;
	count = head[1] % (FUZZ_EXC_TENSOR_MAX + 1);
	name_len = (size_t)fuzz_get_le(head + 2, 2);
	tag_len = (size_t)fuzz_get_le(head + 4, 2);
	if (name_len > size - pos)
		name_len = size - pos;
	name = malloc(name_len + 1);
	check(name != NULL, "malloc");
	memcpy(name, data + pos, name_len);
	name[name_len] = '\0';
	pos += name_len;
	if (tag_len > size - pos)
		tag_len = size - pos;
	tag = malloc(tag_len + 1);
	check(tag != NULL, "malloc");
	memcpy(tag, data + pos, tag_len);
	tag[tag_len] = '\0';
	pos += tag_len;
	/* Exactly @count elements: ASan catches a read past the array. */
	tensors = malloc((count ? count : 1) * sizeof(*tensors));
	check(tensors != NULL, "malloc");
	for (size_t i = 0; i < count; i++) {
		unsigned char rec[FUZZ_EXC_RECORD_BYTES] = { 0 };
		struct fuzz_exc_record r;

		if (pos < size) {
			size_t n = size - pos < sizeof(rec) ? size - pos : sizeof(rec);

			memcpy(rec, data + pos, n);
			pos += n;
		}
		fuzz_exc_record_decode(rec, &r);
		fill_tensor(&tensors[i], &r);
	}

	must_refuse = (head[0] & (FUZZ_EXC_NAME_NULL | FUZZ_EXC_TENSORS_NULL)) || !*name ||
		      has_dotdot_segment(name) || has_control_char(name) || count == 0;
	ret = acldumpSaveExceptionInfo((head[0] & FUZZ_EXC_NAME_NULL) ? NULL : name,
				       (head[0] & FUZZ_EXC_TAG_NULL) ? NULL : tag,
				       (head[0] & FUZZ_EXC_TENSORS_NULL) ? NULL : tensors, count);
	check(ret == ACL_SUCCESS || ret == ACL_ERROR_INVALID_PARAM || ret == ACL_ERROR_FAILURE,
	      "a documented return code");
	if (must_refuse)
		check(ret == ACL_ERROR_INVALID_PARAM, "bad name, tensors or count refused");

	walk_file = NULL;
	walk_file_count = 0;
	walk_is_outside = false;
	nftw(top, find_file, 16, FTW_PHYS);
	check(!walk_is_outside, "nothing written outside the exception root");
	if (ret == ACL_SUCCESS) {
		const struct adump_reader_header *h;

		check(walk_file_count == 1, "a success leaves exactly one file");
		check(adump_reader_open(reader, walk_file) == 0, "the file parses as a dump");
		h = adump_reader_header(reader);
		check(h->tensor_count == count, "the dump holds every tensor");
		adump_reader_close(reader);
	} else {
		check(walk_file_count == 0, "a failure leaves no file");
	}
	/* Start every run from an empty root (directories a name created included). */
	nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(tensors);
	free(tag);
	free(name);
	return 0;
}
