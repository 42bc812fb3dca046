/* SPDX-License-Identifier: Apache-2.0 */
/* The DumpData header of a dump file, built with protobuf-c, and the file's name.
 * Layout (reference §2.2): [u64 LE header length][DumpData, data fields empty][payloads]. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "dump_data.pb-c.h"
#include "proto/proto.h"

typedef Toolkit__Dumpdata__DumpData DumpData;
typedef Toolkit__Dumpdata__OpInput OpInput;
typedef Toolkit__Dumpdata__OpOutput OpOutput;
typedef Toolkit__Dumpdata__OpBuffer OpBuffer;
typedef Toolkit__Dumpdata__Workspace Workspace;
typedef Toolkit__Dumpdata__OpAttr OpAttr;
typedef Toolkit__Dumpdata__Shape Shape;

/* Everything the protobuf-c message points at, allocated in one block per call so that
 * packing never allocates per tensor. */
struct header_scratch {
	DumpData dd;
	OpInput *inputs;
	OpOutput *outputs;
	OpBuffer *buffers;
	Workspace *spaces;
	OpAttr *attrs;
	Shape *shapes;                          /* 2 per tensor: shape, original shape */
	void **ptrs;                            /* repeated-field pointer arrays */
	uint64_t *dims;                         /* the op's dims, copied as uint64 */
	void *block;
};

/* Scratch for ops of a few tensors fits on the stack: no allocation per header. */
#define SCRATCH_STACK_BYTES 4096

static int scratch_build(const struct adump_op *op, struct header_scratch *s, void *stack)
{
	uint32_t n = op->tensor_count, kinds[4] = { 0 };
	size_t bytes;
	char *p;

	for (uint32_t i = 0; i < n; i++)
		kinds[op->tensors[i].kind]++;
	bytes = n * (sizeof(OpInput) + sizeof(OpOutput) + sizeof(OpBuffer) + sizeof(Workspace)) +
		op->attr_count * sizeof(OpAttr) + 2 * n * sizeof(Shape) +
		(n + op->attr_count) * sizeof(void *) + 2 * n * ADUMP_MAX_DIMS * sizeof(uint64_t);
	if (bytes <= SCRATCH_STACK_BYTES) {
		memset(stack, 0, bytes);
		s->block = NULL;
		p = stack;
	} else {
		s->block = calloc(1, bytes);
		if (!s->block)
			return -ENOMEM;
		p = s->block;
	}
	s->inputs = (OpInput *)p;
	p += n * sizeof(OpInput);
	s->outputs = (OpOutput *)p;
	p += n * sizeof(OpOutput);
	s->buffers = (OpBuffer *)p;
	p += n * sizeof(OpBuffer);
	s->spaces = (Workspace *)p;
	p += n * sizeof(Workspace);
	s->attrs = (OpAttr *)p;
	p += op->attr_count * sizeof(OpAttr);
	s->shapes = (Shape *)p;
	p += 2 * n * sizeof(Shape);
	s->ptrs = (void **)p;
	p += (n + op->attr_count) * sizeof(void *);
	s->dims = (uint64_t *)p;

	DumpData *dd = &s->dd;
	toolkit__dumpdata__dump_data__init(dd);
	dd->version = (char *)"2.0";
	dd->dump_time = op->timestamp_us;
	dd->op_name = (char *)op->op_name;
	dd->dfx_message = (char *)(op->dfx_message ? op->dfx_message : "");

	void **ptrs = s->ptrs;
	dd->input = (OpInput **)ptrs;
	ptrs += kinds[ADUMP_TENSOR_INPUT];
	dd->output = (OpOutput **)ptrs;
	ptrs += kinds[ADUMP_TENSOR_OUTPUT];
	dd->buffer = (OpBuffer **)ptrs;
	ptrs += kinds[ADUMP_TENSOR_BUFFER];
	dd->space = (Workspace **)ptrs;
	ptrs += kinds[ADUMP_TENSOR_WORKSPACE];
	dd->attr = (OpAttr **)ptrs;

	for (uint32_t i = 0; i < n; i++) {
		const struct adump_tensor *t = &op->tensors[i];
		Shape *shape = &s->shapes[2 * i], *orig = &s->shapes[2 * i + 1];
		uint64_t *d = &s->dims[2 * i * ADUMP_MAX_DIMS];

		toolkit__dumpdata__shape__init(shape);
		toolkit__dumpdata__shape__init(orig);
		memcpy(d, t->dims, t->dim_count * sizeof(uint64_t));
		memcpy(d + ADUMP_MAX_DIMS, t->orig_dims, t->orig_dim_count * sizeof(uint64_t));
		shape->n_dim = t->dim_count;
		shape->dim = d;
		orig->n_dim = t->orig_dim_count;
		orig->dim = d + ADUMP_MAX_DIMS;

		switch (t->kind) {
		case ADUMP_TENSOR_INPUT: {
			OpInput *in = &s->inputs[dd->n_input];
			toolkit__dumpdata__op_input__init(in);
			in->data_type = (Toolkit__Dumpdata__OutputDataType)t->dtype;
			in->format = (Toolkit__Dumpdata__OutputFormat)t->format;
			in->shape = shape;
			in->original_shape = orig;
			in->size = t->bytes;
			in->sub_format = t->sub_format;
			in->address = t->address;
			in->arg_index = t->arg_index;
			dd->input[dd->n_input++] = in;
			break;
		}
		case ADUMP_TENSOR_OUTPUT: {
			OpOutput *out = &s->outputs[dd->n_output];
			toolkit__dumpdata__op_output__init(out);
			out->data_type = (Toolkit__Dumpdata__OutputDataType)t->dtype;
			out->format = (Toolkit__Dumpdata__OutputFormat)t->format;
			out->shape = shape;
			out->original_shape = orig;
			out->size = t->bytes;
			out->sub_format = t->sub_format;
			out->address = t->address;
			dd->output[dd->n_output++] = out;
			break;
		}
		case ADUMP_TENSOR_BUFFER: {
			OpBuffer *b = &s->buffers[dd->n_buffer];
			toolkit__dumpdata__op_buffer__init(b);
			b->buffer_type = TOOLKIT__DUMPDATA__BUFFER_TYPE__L1;
			b->size = t->bytes;
			dd->buffer[dd->n_buffer++] = b;
			break;
		}
		case ADUMP_TENSOR_WORKSPACE: {
			Workspace *w = &s->spaces[dd->n_space];
			toolkit__dumpdata__workspace__init(w);
			w->type = TOOLKIT__DUMPDATA__WORKSPACE__SPACE_TYPE__LOG;
			w->size = t->bytes;
			dd->space[dd->n_space++] = w;
			break;
		}
		}
	}
	for (uint32_t i = 0; i < op->attr_count; i++) {
		OpAttr *a = &s->attrs[i];
		toolkit__dumpdata__op_attr__init(a);
		a->name = (char *)op->attrs[i].name;
		a->value = (char *)op->attrs[i].value;
		dd->attr[dd->n_attr++] = a;
	}
	return 0;
}

/* Build the message for @op in @s. Return: its packed size, or a negative code. */
static long header_prepare(const struct adump_op *op, struct header_scratch *s, void *stack)
{
	int ret = adump_op_check(op);

	if (ret < 0)
		return ret;
	ret = scratch_build(op, s, stack);
	if (ret < 0)
		return ret;
	return (long)toolkit__dumpdata__dump_data__get_packed_size(&s->dd);
}

static void header_emit(struct header_scratch *s, size_t len, void *buf)
{
	uint64_t le = htole64((uint64_t)len);

	memcpy(buf, &le, 8);
	toolkit__dumpdata__dump_data__pack(&s->dd, (uint8_t *)buf + 8);
}

long adump_dump_header_pack(const struct adump_op *op, void *buf, size_t cap)
{
	_Alignas(16) unsigned char stack[SCRATCH_STACK_BYTES];
	struct header_scratch s;
	long len = header_prepare(op, &s, stack);

	if (len < 0)
		return len;
	if (buf) {
		if (cap < 8 + (size_t)len) {
			free(s.block);
			return -ADUMP_ERR_TOO_BIG;
		}
		header_emit(&s, (size_t)len, buf);
	}
	free(s.block);
	return 8 + len;
}

int adump_dump_header_alloc(const struct adump_op *op, void **out, size_t *len)
{
	_Alignas(16) unsigned char stack[SCRATCH_STACK_BYTES];
	struct header_scratch s;
	long size = header_prepare(op, &s, stack);
	void *buf;

	if (size < 0)
		return (int)size;
	buf = malloc(8 + (size_t)size);
	if (buf)
		header_emit(&s, (size_t)size, buf);
	free(s.block);
	if (!buf)
		return -ENOMEM;
	*out = buf;
	*len = 8 + (size_t)size;
	return 0;
}

static size_t put_sanitised(char *dst, size_t cap, size_t pos, const char *src)
{
	for (; *src; src++, pos++)
		if (pos + 1 < cap)
			dst[pos] = adump_name_char(*src);
	return pos;
}

int adump_dump_file_name(const struct adump_op *op, char *buf, size_t cap)
{
	char tail[96], num[3][24];
	size_t pos = 0, n;

	if (!op || !op->op_type || !op->op_name || !buf)
		return -ADUMP_ERR_CONFIG;
	pos = put_sanitised(buf, cap, pos, op->op_type);
	if (pos + 1 < cap)
		buf[pos] = '.';
	pos = put_sanitised(buf, cap, pos + 1, op->op_name);
	/* No printf: a dump's name is made once a file, in processes (torch's) where glibc
	 * formats every printf through its slow positional path. */
	n = adump_strjoin(tail, sizeof(tail), (const char *const[]){
			  ".", adump_decimal(op->task_id, num[0]),
			  ".", adump_decimal(op->stream_id, num[1]),
			  ".", adump_decimal(op->timestamp_us, num[2]) }, 6);
	if (pos + n + 1 > cap) {
		if (cap)
			buf[0] = '\0';
		return -ADUMP_ERR_TOO_BIG;
	}
	memcpy(buf + pos, tail, n + 1);
	return (int)(pos + n);
}

int adump_dump_write_fd(int fd, const struct adump_op *op, const void *const *data)
{
	void *hdr = NULL;
	size_t hdr_len;
	int ret;

	if (fd < 0 || !op)
		return -ADUMP_ERR_CONFIG;
	ret = adump_dump_header_alloc(op, &hdr, &hdr_len);
	if (ret < 0)
		return ret;
	ret = adump_write_all(fd, hdr, hdr_len);
	for (uint32_t i = 0; ret == 0 && i < op->tensor_count; i++) {
		if (!op->tensors[i].bytes)
			continue;
		if (!data || !data[i]) {
			ret = -ADUMP_ERR_CONFIG;
			break;
		}
		ret = adump_write_all(fd, data[i], op->tensors[i].bytes);
	}
	free(hdr);
	return ret;
}

int adump_dump_write_file(const char *path, const struct adump_op *op, const void *const *data,
			  unsigned mode)
{
	struct adump_pubfile pf;
	int ret;

	if (!path || !op)
		return -ADUMP_ERR_CONFIG;
	/* 0600 while written, then exactly @mode, whatever the umask. */
	ret = adump_pubfile_open(&pf, path, 0, 0600);
	if (ret < 0)
		return ret;
	ret = adump_dump_write_fd(pf.fd, op, data);
	if (ret == 0 && fchmod(pf.fd, mode) < 0)
		ret = -errno;
	return adump_pubfile_close(&pf, path, ret, NULL);
}
