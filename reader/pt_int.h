/* SPDX-License-Identifier: Apache-2.0 */
/* What the .pt reader's files share (reader/pt_zip.c: torch's zip container; reader/pt_pickle.c:
 * the pickle of one tensor; reader/pt_read.c: the entry points over both; reader/pt.c: the
 * writer and adump_pt_check()). Every limit bounds what a cut or hostile file can make the
 * reader allocate or walk. */
#ifndef ADUMP_READER_PT_INT_H
#define ADUMP_READER_PT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "reader/reader.h"

#define PT_CDIR_MAX ((uint64_t)1 << 20)    /* central directory bytes */
#define PT_RECORD_MAX 256                  /* records in one file */
#define PT_PICKLE_MAX ((uint64_t)1 << 20)  /* data.pkl bytes */
#define PT_NODE_MAX 4096                   /* pickle values built */
#define PT_STACK_MAX 256
#define PT_MEMO_MAX 1024
#define PT_TAIL_BYTES (22 + 0xffff + 20 + 56)

struct pt_record {
	char name[256];
	uint64_t data_at, size;
	uint32_t crc;
};

struct pt_zip {
	int fd;
	uint64_t file_bytes;
	struct pt_record rec[PT_RECORD_MAX];
	unsigned count;
};

/* @fmt into @msg (when there is one); returns @ret. */
ADUMP_HIDDEN int pt_fail(char *msg, size_t cap, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The @n-byte little-endian number at @p (n <= 8). */
ADUMP_HIDDEN uint64_t pt_le(const unsigned char *p, unsigned n);
/* @len bytes at @off of @fd: 0, -errno, or -ADUMP_ERR_INCOMPLETE at the end of the file. */
ADUMP_HIDDEN int pt_read_exact(int fd, uint64_t off, void *buf, size_t len);

/* pt_zip.c: @z's records from its central directory (z->fd and z->file_bytes set); the CRC-32
 * of every record against the directory's; the record named <top>/@leaf, or NULL. */
ADUMP_HIDDEN int pt_zip_read(struct pt_zip *z, const char *path, char *msg, size_t cap);
ADUMP_HIDDEN int pt_zip_crc_check(struct pt_zip *z, const char *path, char *msg, size_t cap);
ADUMP_HIDDEN const struct pt_record *pt_zip_find(const struct pt_zip *z, const char *leaf);

/* pt_pickle.c: the tensor data.pkl's @len bytes rebuild: its dtype and shape into @out, the
 * name of its storage record into @key, the storage's element count and the tensor's offset
 * in it. Anything but the pickle torch.save writes for one tensor is refused. */
ADUMP_HIDDEN int pt_pickle_tensor(const unsigned char *pickle, size_t len, const char *path,
				  struct adump_pt_info *out, char *key, size_t key_cap,
				  uint64_t *storage_numel, uint64_t *storage_offset, char *msg,
				  size_t cap);

#endif
