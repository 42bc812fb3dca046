/* SPDX-License-Identifier: Apache-2.0 */
/* proto/: DumpData header (de)serialisation for other modules. */
#ifndef ADUMP_PROTO_H
#define ADUMP_PROTO_H

#include <stddef.h>

#include "adump/adump.h"

/* Build an op's header (8-byte length + DumpData) in a malloc'd buffer; caller frees.
 * Return: 0, -ADUMP_ERR_CONFIG, -ENOMEM. */
int adump_dump_header_alloc(const struct adump_op *op, void **out, size_t *len);

#endif
