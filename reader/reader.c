/* SPDX-License-Identifier: Apache-2.0 */
/* The reader object (include/adump/reader.h): made and freed, opened on a path, a buffer, a
 * source, or tensors laid out by its caller; its error message; its tensors' payloads read,
 * mapped or prefetched. A DumpData file's header is parsed by dumpdata.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/reader_int.h"

int adump_reader_fail(struct adump_reader *r, int ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(r->error, sizeof(r->error), "%s: ", r->name ? r->name : "(dump)");
	if (n < 0 || (size_t)n >= sizeof(r->error))
		return ret;
	va_start(ap, fmt);
	vsnprintf(r->error + n, sizeof(r->error) - (size_t)n, fmt, ap);
	va_end(ap);
	return ret;
}

int adump_reader_fail_as(struct adump_reader *r, const char *name, int ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	adump_reader_close(r);
	n = snprintf(r->error, sizeof(r->error), "%s: ", name ? name : "(dump)");
	if (n < 0 || (size_t)n >= sizeof(r->error))
		return ret;
	va_start(ap, fmt);
	vsnprintf(r->error + n, sizeof(r->error) - (size_t)n, fmt, ap);
	va_end(ap);
	return ret;
}

int adump_reader_check(struct adump_reader *r)
{
	char msg[512];
	int ret;

	if (!r || !r->is_open)
		return -ADUMP_ERR_CONFIG;
	if (!r->src->int_ops || !r->src->int_ops->check)
		return 0;
	msg[0] = '\0';
	ret = r->src->int_ops->check(r->src->ctx, msg, sizeof(msg));
	if (ret < 0)
		return adump_reader_fail(r, ret, "%s", msg[0] ? msg : adump_strerror(ret));
	return 0;
}

int adump_reader_create(struct adump_reader **out)
{
	struct adump_reader *r;

	if (!out)
		return -ADUMP_ERR_CONFIG;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	adump_reader_dumpdata_init(r);
	*out = r;
	return 0;
}

void adump_reader_close(struct adump_reader *r)
{
	if (!r)
		return;
	adump_reader_dumpdata_free(r);
	adump_reader_source_destroy(r->src);
	r->src = NULL;
	free(r->tensors);
	r->tensors = NULL;
	free(r->attrs);
	r->attrs = NULL;
	free(r->name);
	r->name = NULL;
	free(r->given_op_name);
	r->given_op_name = NULL;
	memset(&r->hdr, 0, sizeof(r->hdr));
	r->is_open = false;
}

void adump_reader_destroy(struct adump_reader *r)
{
	if (!r)
		return;
	adump_reader_close(r);
	free(r);
}

const struct adump_reader_header *adump_reader_header(const struct adump_reader *r)
{
	return r && r->is_open ? &r->hdr : NULL;
}

const char *adump_reader_error(const struct adump_reader *r)
{
	return r ? r->error : "";
}

const char *adump_reader_name(const struct adump_reader *r)
{
	return r && r->name ? r->name : "";
}

const char *adump_reader_kind_name(enum adump_tensor_kind kind)
{
	const char *name = adump_tensor_kind_name(kind);

	return name ? name : "?";
}

int adump_reader_open_source(struct adump_reader *r, struct adump_reader_source *src,
			     const char *name)
{
	int ret;

	if (!r || !src) {
		adump_reader_source_destroy(src);
		return -ADUMP_ERR_CONFIG;
	}
	adump_reader_close(r);
	r->error[0] = '\0';
	r->src = src;
	r->name = strdup(name ? name : "(dump)");
	if (!r->name) {
		adump_reader_close(r);
		return -ENOMEM;
	}
	ret = adump_reader_dumpdata_parse(r);
	if (ret < 0) {
		/* Keep the message: close() frees the name it was built from, not the text. */
		adump_reader_close(r);
		return ret;
	}
	r->is_open = true;
	return 0;
}

int adump_reader_open_given(struct adump_reader *r, struct adump_reader_source *src,
			    const char *name, const char *op_name,
			    const struct adump_reader_tensor *tensors, uint32_t count)
{
	uint64_t end = 0;

	adump_reader_close(r);
	r->error[0] = '\0';
	r->src = src;
	r->name = strdup(name ? name : "(dump)");
	r->tensors = calloc(count ? count : 1, sizeof(*r->tensors));
	r->given_op_name = strdup(op_name ? op_name : "");
	if (!r->name || !r->tensors || !r->given_op_name) {
		adump_reader_close(r);
		return -ENOMEM;
	}
	if (count)
		memcpy(r->tensors, tensors, count * sizeof(*tensors));
	for (uint32_t i = 0; i < count; i++) {
		r->hdr.kind_count[tensors[i].info.kind]++;
		if (tensors[i].offset + tensors[i].info.bytes > end)
			end = tensors[i].offset + tensors[i].info.bytes;
	}
	r->hdr.version = "";
	r->hdr.op_name = r->given_op_name;
	r->hdr.dfx_message = "";
	r->hdr.tensor_count = count;
	r->hdr.tensors = r->tensors;
	r->hdr.payload_bytes = end;
	r->hdr.file_bytes = end;
	r->is_open = true;
	return 0;
}

int adump_reader_open(struct adump_reader *r, const char *path)
{
	struct adump_reader_source *src;
	char msg[512];
	int ret;

	if (!r || !path)
		return -ADUMP_ERR_CONFIG;
	adump_reader_close(r);
	ret = adump_reader_source_open_path(path, &src, msg, sizeof(msg));
	if (ret < 0)
		return adump_reader_fail_as(r, path, ret, "%s", msg);
	return adump_reader_open_source(r, src, path);
}

int adump_reader_open_mem(struct adump_reader *r, const void *buf, size_t len, const char *name)
{
	struct adump_reader_source *src;
	int ret;

	if (!r)
		return -ADUMP_ERR_CONFIG;
	adump_reader_close(r);
	ret = adump_reader_source_open_mem(buf, len, false, &src);
	if (ret < 0) {
		snprintf(r->error, sizeof(r->error), "%s: %s", name ? name : "(dump)",
			 adump_strerror(ret));
		return ret;
	}
	return adump_reader_open_source(r, src, name);
}

static int check_range(struct adump_reader *r, uint32_t tensor, uint64_t offset, size_t len)
{
	const struct adump_reader_tensor *t;

	if (!r->is_open || tensor >= r->hdr.tensor_count)
		return -ADUMP_ERR_CONFIG;
	t = &r->tensors[tensor];
	if (offset > t->info.bytes || len > t->info.bytes - offset)
		return -ADUMP_ERR_CONFIG;
	return 0;
}

int adump_reader_read(struct adump_reader *r, uint32_t tensor, uint64_t offset, void *buf,
		      size_t len)
{
	int ret;

	if (!r)
		return -ADUMP_ERR_CONFIG;
	ret = check_range(r, tensor, offset, len);
	if (ret < 0)
		return adump_reader_fail(r, ret, "read of tensor %u outside its payload", tensor);
	ret = adump_reader_source_read_at(r->src, r->tensors[tensor].offset + offset, buf, len);
	if (ret < 0)
		return adump_reader_fail(r, ret, "%s %u: reading the payload: %s",
					 adump_reader_kind_name(r->tensors[tensor].info.kind),
					 r->tensors[tensor].index,
					 adump_reader_source_strerror(r->src, ret));
	return 0;
}

void adump_reader_willneed(struct adump_reader *r, uint32_t tensor, uint64_t offset, uint64_t len)
{
	const struct adump_reader_source_int_ops *ops;

	if (!r || !r->is_open || tensor >= r->hdr.tensor_count)
		return;
	ops = r->src->int_ops;
	if (ops && ops->willneed)
		ops->willneed(r->src->ctx, r->tensors[tensor].offset + offset, len);
}

const void *adump_reader_map(struct adump_reader *r, uint32_t tensor)
{
	const struct adump_reader_tensor *t;

	if (!r || !r->is_open || tensor >= r->hdr.tensor_count)
		return NULL;
	t = &r->tensors[tensor];
	if (t->info.bytes > SIZE_MAX)
		return NULL;
	return adump_reader_source_map(r->src, t->offset, (size_t)t->info.bytes);
}

int adump_reader_tensor_expected_bytes(const struct adump_tensor *t, uint64_t *out)
{
	unsigned bits = adump_dtype_bits(t->dtype);
	uint64_t count = 1;

	if (!bits)
		return -ADUMP_ERR_UNSUPPORTED;
	for (uint32_t i = 0; i < t->dim_count && i < ADUMP_MAX_DIMS; i++) {
		if (t->dims[i] && count > UINT64_MAX / t->dims[i])
			return -ADUMP_ERR_TOO_BIG;
		count *= t->dims[i];
	}
	if (count > (UINT64_MAX - 7) / bits)
		return -ADUMP_ERR_TOO_BIG;
	*out = (count * bits + 7) / 8;
	return 0;
}
