/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the device/ suites: tensors in device memory and host copies of them. */
#ifndef ADUMP_TEST_DEV_HELPERS_H
#define ADUMP_TEST_DEV_HELPERS_H

#include <stdlib.h>
#include <string.h>

#include "adump/device.h"
#include "helpers.h"

/* A tensor of @dtype and shape @dims in fresh device memory; contents undefined. */
static inline struct adump_dev_tensor t_dev_tensor(struct adump_dev *dev, int32_t dtype,
						   uint32_t dim_count, const int64_t *dims)
{
	struct adump_dev_tensor t = { .dtype = dtype, .format = ADUMP_FORMAT_ND,
				      .dim_count = dim_count };
	uint64_t count = 1;

	for (uint32_t i = 0; i < dim_count; i++) {
		t.dims[i] = dims[i];
		count *= (uint64_t)dims[i];
	}
	t.bytes = count * adump_dtype_bits(dtype) / 8;
	/* A zero-byte tensor still gets a one-byte allocation, so its address is real. */
	ck_assert_int_eq(adump_dev_malloc(dev, t.bytes ? t.bytes : 1, &t.data), 0);
	return t;
}

/* Copies @host (t->bytes long) into @t. */
static inline void t_dev_upload(struct adump_dev *dev, struct adump_dev_tensor *t,
				const void *host)
{
	if (t->bytes)
		ck_assert_int_eq(adump_dev_memcpy(dev, t->data, t->bytes, host, t->bytes,
						  ADUMP_COPY_HOST_TO_DEVICE), 0);
}

/* A malloc'd host copy of @t; caller frees. */
static inline void *t_dev_download(struct adump_dev *dev, const struct adump_dev_tensor *t)
{
	void *host = malloc(t->bytes ? t->bytes : 1);

	ck_assert_ptr_nonnull(host);
	if (t->bytes)
		ck_assert_int_eq(adump_dev_memcpy(dev, host, t->bytes, t->data, t->bytes,
						  ADUMP_COPY_DEVICE_TO_HOST), 0);
	return host;
}

static inline void t_dev_tensor_free(struct adump_dev *dev, struct adump_dev_tensor *t)
{
	ck_assert_int_eq(adump_dev_free(dev, t->data), 0);
	t->data = NULL;
}

#endif
