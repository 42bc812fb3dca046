/* SPDX-License-Identifier: Apache-2.0 */
/* The DumpData parser: checks the 8-byte header length against the source size before
 * anything is allocated, unpacks DumpData with protobuf-c under an allocation budget, and
 * lays the tensors out in payload order (inputs, outputs, buffers, workspaces) with their
 * offsets. The reader object it fills is reader.c's. */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/reader_int.h"

typedef Toolkit__Dumpdata__DumpData DumpData;
typedef Toolkit__Dumpdata__Shape Shape;

/* protobuf-c allocates per submessage; a header of tiny empty submessages can ask for ~100x
 * its length. The budget keeps that proportional and finite: real headers (a tensor's fields
 * take eight bytes or more, ~25x that once parsed) fit, and a header that would need more
 * than 48x is refused, so what a parsed header holds is bounded by what the file holds. */
#define UNPACK_BUDGET_PER_BYTE 48u
#define UNPACK_BUDGET_MIN ((size_t)1 << 16)
#define UNPACK_BUDGET_MAX ((size_t)512 << 20)

/* Each block records its size in front so the budget is refunded on free. */
static void *budget_alloc(void *data, size_t size)
{
	struct budget *b = data;
	size_t *p;

	if (b->left < sizeof(size_t) * 2 || size > b->left - sizeof(size_t) * 2) {
		b->is_spent = true;
		return NULL;
	}
	p = malloc(size + sizeof(size_t) * 2);
	if (!p)
		return NULL;
	p[0] = size;
	b->left -= size + sizeof(size_t) * 2;
	return p + 2;
}

static void budget_free(void *data, void *ptr)
{
	struct budget *b = data;
	size_t *p;

	if (!ptr)
		return;
	p = (size_t *)ptr - 2;
	b->left += p[0] + sizeof(size_t) * 2;
	free(p);
}

void adump_reader_dumpdata_init(struct adump_reader *r)
{
	r->allocator.alloc = budget_alloc;
	r->allocator.free = budget_free;
	r->allocator.allocator_data = &r->budget;
}

void adump_reader_dumpdata_free(struct adump_reader *r)
{
	if (r->dd)
		toolkit__dumpdata__dump_data__free_unpacked(r->dd, &r->allocator);
	r->dd = NULL;
}

static const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

static int copy_shape(struct adump_reader *r, const Shape *shape, uint64_t *dims,
		      uint32_t *count, const char *what, enum adump_tensor_kind kind,
		      uint32_t index)
{
	if (!shape) {
		*count = 0;
		return 0;
	}
	if (shape->n_dim > ADUMP_MAX_DIMS)
		return adump_reader_fail(r, -ADUMP_ERR_CORRUPT,
					 "%s %u: %s has %zu dimensions (at most %d supported)",
					 adump_reader_kind_name(kind), index, what, shape->n_dim,
					 ADUMP_MAX_DIMS);
	if (shape->n_dim)
		memcpy(dims, shape->dim, shape->n_dim * sizeof(uint64_t));
	*count = (uint32_t)shape->n_dim;
	return 0;
}

/* Fill one tensor and advance the running payload offset, refusing sizes that overflow. */
static int add_tensor(struct adump_reader *r, enum adump_tensor_kind kind, uint32_t index,
		      uint64_t size, uint64_t *offset)
{
	struct adump_reader_tensor *t = &r->tensors[r->hdr.tensor_count];

	if (size > UINT64_MAX - *offset)
		return adump_reader_fail(r, -ADUMP_ERR_TOO_BIG,
					 "%s %u: size %llu makes the payload offsets overflow 64 bits",
					 adump_reader_kind_name(kind), index,
					 (unsigned long long)size);
	t->info.kind = kind;
	t->info.bytes = size;
	t->index = index;
	t->offset = *offset;
	*offset += size;
	r->hdr.tensor_count++;
	r->hdr.kind_count[kind]++;
	return 0;
}

/* An input or an output: the fields they share (type, format, sub-format, address, both
 * shapes), then add_tensor(). Inputs set arg_index and type before. */
static int add_data_tensor(struct adump_reader *r, enum adump_tensor_kind kind, uint32_t index,
			   int32_t dtype, int32_t format, int32_t sub_format, uint64_t address,
			   const Shape *shape, const Shape *original_shape, uint64_t size,
			   uint64_t *offset)
{
	struct adump_reader_tensor *t = &r->tensors[r->hdr.tensor_count];
	int ret;

	t->info.dtype = dtype;
	t->info.format = format;
	t->info.sub_format = sub_format;
	t->info.address = address;
	ret = copy_shape(r, shape, t->info.dims, &t->info.dim_count, "shape", kind, index);
	if (ret == 0)
		ret = copy_shape(r, original_shape, t->info.orig_dims, &t->info.orig_dim_count,
				 "original shape", kind, index);
	if (ret == 0)
		ret = add_tensor(r, kind, index, size, offset);
	return ret;
}

/* A buffer or a workspace: raw bytes (uint8, ND) of @type, then add_tensor(). */
static int add_raw_tensor(struct adump_reader *r, enum adump_tensor_kind kind, uint32_t index,
			  uint32_t type, uint64_t size, uint64_t *offset)
{
	struct adump_reader_tensor *t = &r->tensors[r->hdr.tensor_count];

	t->info.dtype = ADUMP_DT_UINT8;
	t->info.format = ADUMP_FORMAT_ND;
	t->type = type;
	return add_tensor(r, kind, index, size, offset);
}

static int build_tensors(struct adump_reader *r, uint64_t payload_start)
{
	DumpData *dd = r->dd;
	size_t total = dd->n_input + dd->n_output + dd->n_buffer + dd->n_space;
	uint64_t offset = payload_start;
	int ret;

	/* Every element costs at least two header bytes, so the counts are bounded by the
	 * header length; the check keeps the uint32 counts honest all the same. */
	if (total > UINT32_MAX / 2 || dd->n_attr > UINT32_MAX / 2)
		return adump_reader_fail(r, -ADUMP_ERR_TOO_BIG, "too many tensors or attributes");
	r->tensors = calloc(total ? total : 1, sizeof(*r->tensors));
	r->attrs = calloc(dd->n_attr ? dd->n_attr : 1, sizeof(*r->attrs));
	if (!r->tensors || !r->attrs)
		return adump_reader_fail(r, -ENOMEM, "out of memory for %zu tensors", total);

	for (size_t i = 0; i < dd->n_input; i++) {
		const Toolkit__Dumpdata__OpInput *in = dd->input[i];
		struct adump_reader_tensor *t = &r->tensors[r->hdr.tensor_count];

		t->info.arg_index = in->arg_index;
		t->type = in->input_type;
		ret = add_data_tensor(r, ADUMP_TENSOR_INPUT, (uint32_t)i, (int32_t)in->data_type,
				      (int32_t)in->format, in->sub_format, in->address, in->shape,
				      in->original_shape, in->size, &offset);
		if (ret < 0)
			return ret;
	}
	for (size_t i = 0; i < dd->n_output; i++) {
		const Toolkit__Dumpdata__OpOutput *out = dd->output[i];

		ret = add_data_tensor(r, ADUMP_TENSOR_OUTPUT, (uint32_t)i, (int32_t)out->data_type,
				      (int32_t)out->format, out->sub_format, out->address, out->shape,
				      out->original_shape, out->size, &offset);
		if (ret < 0)
			return ret;
	}
	for (size_t i = 0; i < dd->n_buffer; i++) {
		ret = add_raw_tensor(r, ADUMP_TENSOR_BUFFER, (uint32_t)i,
				     (uint32_t)dd->buffer[i]->buffer_type, dd->buffer[i]->size,
				     &offset);
		if (ret < 0)
			return ret;
	}
	for (size_t i = 0; i < dd->n_space; i++) {
		ret = add_raw_tensor(r, ADUMP_TENSOR_WORKSPACE, (uint32_t)i,
				     (uint32_t)dd->space[i]->type, dd->space[i]->size, &offset);
		if (ret < 0)
			return ret;
	}
	for (size_t i = 0; i < dd->n_attr; i++) {
		r->attrs[i].name = str_or_empty(dd->attr[i]->name);
		r->attrs[i].value = str_or_empty(dd->attr[i]->value);
	}
	r->hdr.attr_count = (uint32_t)dd->n_attr;
	r->hdr.attrs = r->attrs;
	r->hdr.tensors = r->tensors;
	r->hdr.payload_bytes = offset - payload_start;
	r->hdr.file_bytes = offset;
	return 0;
}

/* One varint at @p (below @end) into *v; NULL when it runs off the end or past 10 bytes. */
static const uint8_t *varint_get(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; p < end && shift < 70; shift += 7) {
		uint8_t b = *p++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return p;
	}
	return NULL;
}

/* The tensors (inputs, outputs, buffers, workspaces) and attributes a DumpData header holds,
 * counted from its top-level fields before protobuf-c builds any of them: each costs a
 * parsed submessage and a struct adump_reader_tensor (~0.6 KB) for as little as two header
 * bytes, so a 2 MB header of empty entries would ask for a gigabyte. A header that does
 * not scan is left for unpack to refuse. */
static void header_count(const uint8_t *p, size_t len, uint64_t *tensors, uint64_t *attrs)
{
	const uint8_t *end = p + len;

	*tensors = *attrs = 0;
	while (p && p < end) {
		uint64_t key, v;

		p = varint_get(p, end, &key);
		if (!p)
			return;
		switch (key & 7) {
		case 0:
			p = varint_get(p, end, &v);
			break;
		case 1:
			p = end - p < 8 ? NULL : p + 8;
			break;
		case 5:
			p = end - p < 4 ? NULL : p + 4;
			break;
		case 2:
			p = varint_get(p, end, &v);
			if (!p || v > (uint64_t)(end - p))
				return;
			p += v;
			/* output 3, input 4, buffer 5, workspace 8; attr 7 */
			if ((key >> 3) == 3 || (key >> 3) == 4 || (key >> 3) == 5 || (key >> 3) == 8)
				(*tensors)++;
			else if ((key >> 3) == 7)
				(*attrs)++;
			break;
		default:
			return;
		}
	}
}
int adump_reader_dumpdata_parse(struct adump_reader *r)
{
	uint64_t size = r->src->size, header_len, le;
	uint8_t *header;
	int ret;

	if (size < 8)
		return adump_reader_fail(r, -ADUMP_ERR_INCOMPLETE,
					 "file is %llu bytes, too short for the 8-byte header length",
					 (unsigned long long)size);
	ret = adump_reader_source_read_at(r->src, 0, &le, 8);
	if (ret < 0)
		return adump_reader_fail(r, ret, "reading the header length: %s",
					 adump_reader_source_strerror(r->src, ret));
	header_len = le64toh(le);
	/* Both bounds come before any allocation: a corrupt length must not become a huge
	 * malloc or a read past the end. */
	if (header_len > ADUMP_READER_HEADER_MAX)
		return adump_reader_fail(r, -ADUMP_ERR_CORRUPT,
					 "header length %llu is absurd (limit %llu): not a dump file?",
					 (unsigned long long)header_len,
					 (unsigned long long)ADUMP_READER_HEADER_MAX);
	if (header_len > size - 8)
		return adump_reader_fail(r, -ADUMP_ERR_INCOMPLETE,
					 "header length %llu exceeds the %llu bytes after it: "
					 "truncated, or not a dump file",
					 (unsigned long long)header_len,
					 (unsigned long long)(size - 8));
	header = malloc(header_len ? (size_t)header_len : 1);
	if (!header)
		return adump_reader_fail(r, -ENOMEM, "out of memory for a %llu-byte header",
					 (unsigned long long)header_len);
	ret = adump_reader_source_read_at(r->src, 8, header, (size_t)header_len);
	if (ret < 0) {
		free(header);
		return adump_reader_fail(r, ret, "reading the header: %s",
					 adump_reader_source_strerror(r->src, ret));
	}
	{
		uint64_t tensors, attrs;

		header_count(header, (size_t)header_len, &tensors, &attrs);
		if (tensors > ADUMP_READER_TENSORS_MAX || attrs > ADUMP_READER_TENSORS_MAX) {
			free(header);
			return adump_reader_fail(r, -ADUMP_ERR_TOO_BIG,
						 "the %llu-byte header claims %llu tensors and %llu "
						 "attributes (at most %u of each supported)",
						 (unsigned long long)header_len,
						 (unsigned long long)tensors, (unsigned long long)attrs,
						 (unsigned)ADUMP_READER_TENSORS_MAX);
		}
	}
	r->budget.left = (size_t)header_len * UNPACK_BUDGET_PER_BYTE + UNPACK_BUDGET_MIN;
	if (r->budget.left > UNPACK_BUDGET_MAX)
		r->budget.left = UNPACK_BUDGET_MAX;
	r->budget.is_spent = false;
	r->dd = toolkit__dumpdata__dump_data__unpack(&r->allocator, (size_t)header_len, header);
	free(header);
	if (!r->dd && r->budget.is_spent)
		return adump_reader_fail(r, -ADUMP_ERR_TOO_BIG,
					 "the %llu-byte DumpData header needs more than %u bytes of "
					 "memory per header byte to parse (empty entries by the "
					 "thousand): refused",
					 (unsigned long long)header_len, UNPACK_BUDGET_PER_BYTE);
	if (!r->dd)
		return adump_reader_fail(r, -ADUMP_ERR_CORRUPT,
					 "the %llu-byte DumpData header does not parse (bad varint, "
					 "truncated field or wrong wire type)",
					 (unsigned long long)header_len);
	r->hdr.version = str_or_empty(r->dd->version);
	r->hdr.dump_time = r->dd->dump_time;
	r->hdr.op_name = str_or_empty(r->dd->op_name);
	r->hdr.dfx_message = str_or_empty(r->dd->dfx_message);
	r->hdr.header_bytes = header_len;
	ret = build_tensors(r, 8 + header_len);
	if (ret < 0)
		return ret;
	if (r->hdr.file_bytes > size)
		return adump_reader_fail(r, -ADUMP_ERR_INCOMPLETE,
					 "truncated: 8 + %llu header + %llu payload bytes = %llu, "
					 "but the file has %llu",
					 (unsigned long long)header_len,
					 (unsigned long long)r->hdr.payload_bytes,
					 (unsigned long long)r->hdr.file_bytes,
					 (unsigned long long)size);
	if (r->hdr.file_bytes < size)
		return adump_reader_fail(r, -ADUMP_ERR_CORRUPT,
					 "%llu bytes after the last payload (8 + %llu header + %llu "
					 "payload = %llu, file has %llu)",
					 (unsigned long long)(size - r->hdr.file_bytes),
					 (unsigned long long)header_len,
					 (unsigned long long)r->hdr.payload_bytes,
					 (unsigned long long)r->hdr.file_bytes,
					 (unsigned long long)size);
	return 0;
}
