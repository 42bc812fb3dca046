/* SPDX-License-Identifier: Apache-2.0 */
/* The input layout of fuzz_acl_exception.c, shared with the seed writer (fuzz_acl_seeds.c).
 *
 * [flags][tensor count][name length lo][hi][tag length lo][hi] name bytes, tag bytes, then
 * tensor records of FUZZ_EXC_RECORD_BYTES each (missing bytes read as 0):
 *   [type][address mode][addrType][placement][shapeNum][originShapeNum]
 *   [offset: 4 bytes LE][size: 8 bytes LE][format: 4 bytes LE][dataType: 4 bytes LE]
 *   [dims: 4 x 8 bytes LE, repeated over the shape]
 * Lengths and counts are taken as given, so names can be longer than PATH_MAX and shape
 * counts past ACL_DUMP_MAX_SHAPE_NUM; the count is capped at FUZZ_EXC_TENSOR_MAX. */
#ifndef ADUMP_FUZZ_ACL_H
#define ADUMP_FUZZ_ACL_H

#include <stdint.h>
#include <string.h>

#define FUZZ_EXC_NAME_NULL 0x01         /* fileName NULL */
#define FUZZ_EXC_TAG_NULL 0x02          /* userTag NULL */
#define FUZZ_EXC_TENSORS_NULL 0x04      /* tensors NULL */

#define FUZZ_EXC_TENSOR_MAX 8
#define FUZZ_EXC_HEAD_BYTES 6
#define FUZZ_EXC_RECORD_BYTES 60
#define FUZZ_EXC_DIMS 4
/* Device memory the target allocates; address mode 0 points inside it (offset modulo). */
#define FUZZ_EXC_DEV_BYTES 65536

enum fuzz_exc_addr {
	FUZZ_EXC_ADDR_DEVICE = 0,       /* device buffer + offset % FUZZ_EXC_DEV_BYTES */
	FUZZ_EXC_ADDR_NULL,
	FUZZ_EXC_ADDR_RAW,              /* the offset as an address */
	FUZZ_EXC_ADDR_HOST,             /* a host buffer, not device memory */
	FUZZ_EXC_ADDR_PAST,             /* device buffer + offset, unwrapped */
	FUZZ_EXC_ADDR_COUNT
};

struct fuzz_exc_record {
	uint8_t type, addr_mode, addr_type, placement, shape_num, origin_shape_num;
	uint32_t offset;
	uint64_t size;
	int32_t format, data_type;
	uint64_t dims[FUZZ_EXC_DIMS];
};

static inline void fuzz_put_le(unsigned char *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t fuzz_get_le(const unsigned char *p, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static inline void fuzz_exc_record_encode(const struct fuzz_exc_record *r, unsigned char *p)
{
	p[0] = r->type;
	p[1] = r->addr_mode;
	p[2] = r->addr_type;
	p[3] = r->placement;
	p[4] = r->shape_num;
	p[5] = r->origin_shape_num;
	fuzz_put_le(p + 6, r->offset, 4);
	fuzz_put_le(p + 10, r->size, 8);
	fuzz_put_le(p + 18, (uint32_t)r->format, 4);
	fuzz_put_le(p + 22, (uint32_t)r->data_type, 4);
	for (unsigned i = 0; i < FUZZ_EXC_DIMS; i++)
		fuzz_put_le(p + 26 + 8 * i, r->dims[i], 8);
	memset(p + 58, 0, FUZZ_EXC_RECORD_BYTES - 58);
}

static inline void fuzz_exc_record_decode(const unsigned char *p, struct fuzz_exc_record *r)
{
	r->type = p[0];
	r->addr_mode = p[1];
	r->addr_type = p[2];
	r->placement = p[3];
	r->shape_num = p[4];
	r->origin_shape_num = p[5];
	r->offset = (uint32_t)fuzz_get_le(p + 6, 4);
	r->size = fuzz_get_le(p + 10, 8);
	r->format = (int32_t)(uint32_t)fuzz_get_le(p + 18, 4);
	r->data_type = (int32_t)(uint32_t)fuzz_get_le(p + 22, 4);
	for (unsigned i = 0; i < FUZZ_EXC_DIMS; i++)
		r->dims[i] = fuzz_get_le(p + 26 + 8 * i, 8);
}

#endif
