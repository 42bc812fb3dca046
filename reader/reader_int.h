/* SPDX-License-Identifier: Apache-2.0 */
/* What reader.c (the reader object: opening, errors, reading payloads) and dumpdata.c (a
 * DumpData file's header parsed into the tensors' layout) share: the reader itself. */
#ifndef ADUMP_READER_READER_INT_H
#define ADUMP_READER_READER_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "dump_data.pb-c.h"
#include "reader/reader.h"

/* What the DumpData parser may still allocate (dumpdata.c says how much). */
struct budget {
	size_t left;
	bool is_spent;                  /* an allocation was refused */
};

struct adump_reader {
	struct adump_reader_source *src;
	Toolkit__Dumpdata__DumpData *dd;
	struct budget budget;
	ProtobufCAllocator allocator;
	struct adump_reader_header hdr;
	struct adump_reader_tensor *tensors;
	struct adump_attr *attrs;
	char *name;
	char *given_op_name;            /* adump_reader_open_given(): the header's op name */
	bool is_open;
	char error[1024];
};

/* Give @r's DumpData parser its allocator, under the budget (adump_reader_create()). */
ADUMP_HIDDEN void adump_reader_dumpdata_init(struct adump_reader *r);
/* Parse the DumpData file of r->src: its header's length and then the header checked against
 * the source's size, the tensors laid out in payload order. Return: 0, or negative with the
 * reader's error set. */
ADUMP_HIDDEN int adump_reader_dumpdata_parse(struct adump_reader *r);
/* Free what adump_reader_dumpdata_parse() unpacked (r->dd), if anything. */
ADUMP_HIDDEN void adump_reader_dumpdata_free(struct adump_reader *r);

#endif
