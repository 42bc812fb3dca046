/* SPDX-License-Identifier: Apache-2.0 */
/* aclnn over the simulated NPU (reference §9): aclTensor and aclScalar, and aclnnAdd's two
 * phases (workspace size, then the launch on a pinned stream, its dump and op-info record).
 * Results map through adump_aclnn_status_from(). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_int.h"
#include "acl/adump_acl.h"

#define TENSOR_MAGIC 0x61636c54u        /* "aclT" */
#define SCALAR_MAGIC 0x61636c53u        /* "aclS" */
#define EXECUTOR_MAGIC 0x61636c45u      /* "aclE" */

struct aclTensor {
	uint32_t magic;
	int32_t acl_dtype;
	int32_t acl_format;
	uint32_t dim_count;
	int64_t dims[ADUMP_MAX_DIMS];
	int64_t offset;                 /* elements */
	void *data;                     /* device memory */
	bool is_contiguous;
};

struct aclScalar {
	uint32_t magic;
	int32_t acl_dtype;
	double value;
};

struct aclOpExecutor {
	uint32_t magic;
	struct adump_dev_tensor self, other, out;
	double alpha;
	struct adump_acl_opinfo_tensor info_tensors[3];
	int64_t dims[ADUMP_MAX_DIMS];
	uint32_t dim_count;
	int32_t acl_dtype;
	int32_t acl_format;
};

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
			   const int64_t *stride, int64_t offset, aclFormat format,
			   const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData)
{
	struct aclTensor *t;
	int64_t expect = 1;

	(void)storageDims;
	(void)storageDimsNum;
	if ((viewDimsNum && !viewDims) || viewDimsNum > ADUMP_MAX_DIMS || offset < 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->magic = TENSOR_MAGIC;
	t->acl_dtype = dataType;
	t->acl_format = format;
	t->dim_count = (uint32_t)viewDimsNum;
	t->offset = offset;
	t->data = tensorData;
	t->is_contiguous = true;
	for (uint64_t i = 0; i < viewDimsNum; i++) {
		if (viewDims[i] < 0) {
			free(t);
			return NULL;
		}
		t->dims[i] = viewDims[i];
	}
	/* Row-major strides are the only layout the simulated kernels read. */
	for (uint64_t i = viewDimsNum; stride && i-- > 0;) {
		if (viewDims[i] > 1 && stride[i] != expect)
			t->is_contiguous = false;
		expect *= viewDims[i];
	}
	return t;
}

aclScalar *aclCreateScalar(void *value, aclDataType dataType)
{
	struct aclScalar *s;
	double v;

	if (!value)
		return NULL;
	switch (dataType) {
	case ACL_FLOAT: v = *(const float *)value; break;
	case ACL_DOUBLE: v = *(const double *)value; break;
	case ACL_INT32: v = *(const int32_t *)value; break;
	case ACL_INT64: v = (double)*(const int64_t *)value; break;
	case ACL_INT8: v = *(const int8_t *)value; break;
	case ACL_UINT8: v = *(const uint8_t *)value; break;
	case ACL_INT16: v = *(const int16_t *)value; break;
	case ACL_BOOL: v = *(const uint8_t *)value ? 1 : 0; break;
	default: return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->magic = SCALAR_MAGIC;
	s->acl_dtype = dataType;
	s->value = v;
	return s;
}

aclnnStatus aclDestroyTensor(const aclTensor *tensor)
{
	if (!tensor)
		return ACLNN_ERR_PARAM_NULLPTR;
	if (tensor->magic != TENSOR_MAGIC)
		return ACLNN_ERR_PARAM_INVALID;
	((struct aclTensor *)tensor)->magic = 0;
	free((void *)tensor);
	return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyScalar(const aclScalar *scalar)
{
	if (!scalar)
		return ACLNN_ERR_PARAM_NULLPTR;
	if (scalar->magic != SCALAR_MAGIC)
		return ACLNN_ERR_PARAM_INVALID;
	((struct aclScalar *)scalar)->magic = 0;
	free((void *)scalar);
	return ACLNN_SUCCESS;
}

static int to_dev_tensor(const struct aclTensor *t, struct adump_dev_tensor *out)
{
	unsigned bits = adump_dtype_bits(adump_acl_dtype_to_native(t->acl_dtype));
	uint64_t count = 1;

	if (!bits || !t->is_contiguous || !t->data)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->dtype = adump_acl_dtype_to_native(t->acl_dtype);
	out->format = adump_acl_format_to_native(t->acl_format);
	out->dim_count = t->dim_count;
	for (uint32_t i = 0; i < t->dim_count; i++) {
		out->dims[i] = t->dims[i];
		count *= (uint64_t)t->dims[i];
	}
	out->bytes = count * bits / 8;
	out->data = (char *)t->data + (uint64_t)t->offset * bits / 8;
	return 0;
}

aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor *self, const aclTensor *other,
				     const aclScalar *alpha, aclTensor *out, uint64_t *workspaceSize,
				     aclOpExecutor **executor)
{
	struct aclOpExecutor *e;

	if (!self || !other || !alpha || !out || !workspaceSize || !executor)
		return ACLNN_ERR_PARAM_NULLPTR;
	if (self->magic != TENSOR_MAGIC || other->magic != TENSOR_MAGIC ||
	    out->magic != TENSOR_MAGIC || alpha->magic != SCALAR_MAGIC)
		return ACLNN_ERR_PARAM_INVALID;
	if (self->acl_dtype != other->acl_dtype || self->acl_dtype != out->acl_dtype ||
	    self->dim_count != other->dim_count || self->dim_count != out->dim_count ||
	    memcmp(self->dims, other->dims, sizeof(self->dims[0]) * self->dim_count) ||
	    memcmp(self->dims, out->dims, sizeof(self->dims[0]) * self->dim_count))
		return ACLNN_ERR_PARAM_INVALID;
	if (self->acl_dtype != ACL_FLOAT && self->acl_dtype != ACL_FLOAT16 &&
	    self->acl_dtype != ACL_INT32)
		return ACLNN_ERR_PARAM_INVALID;
	e = calloc(1, sizeof(*e));
	if (!e)
		return ACLNN_ERR_INNER;
	if (to_dev_tensor(self, &e->self) < 0 || to_dev_tensor(other, &e->other) < 0 ||
	    to_dev_tensor(out, &e->out) < 0) {
		free(e);
		return ACLNN_ERR_PARAM_INVALID;
	}
	e->magic = EXECUTOR_MAGIC;
	e->alpha = alpha->value;
	e->dim_count = self->dim_count;
	memcpy(e->dims, self->dims, sizeof(e->dims));
	e->acl_dtype = self->acl_dtype;
	e->acl_format = self->acl_format;
	*workspaceSize = 0;
	*executor = e;
	return ACLNN_SUCCESS;
}

aclnnStatus aclnnAdd(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
		     aclrtStream stream)
{
	struct adump_acl_state *st = adump_acl_state();
	struct adump_dev_dump dump = { .op_type = "Add", .op_name = "aclnnAdd" };
	struct adump_acl_opinfo_tensor io[3];
	struct adump_acl_opinfo info;
	struct adump_acl_stream *s;
	int ret;

	(void)workspace;
	(void)workspaceSize;
	if (!executor || !stream)
		return ACLNN_ERR_PARAM_NULLPTR;
	if (executor->magic != EXECUTOR_MAGIC)
		return ACLNN_ERR_PARAM_INVALID;
	s = adump_acl_stream_pin(st, stream);
	if (!s)
		return ACLNN_ERR_PARAM_INVALID;
	for (int i = 0; i < 3; i++) {
		static const char *const names[3] = { "x1", "x2", "y" };

		io[i] = (struct adump_acl_opinfo_tensor){ .name = names[i],
							  .acl_dtype = executor->acl_dtype,
							  .acl_format = executor->acl_format,
							  .dim_count = executor->dim_count,
							  .dims = executor->dims };
	}
	info = (struct adump_acl_opinfo){ .op_type = "Add", .inputs = io, .input_count = 2,
					  .outputs = io + 2, .output_count = 1,
					  .attr_name = "alpha", .attr_value = executor->alpha };
	adump_acl_opinfo_record(st, &info);
	/* A launch with a dump request counts as a dump user, so that a session change waits
	 * for it before the stream leaves the session (adump_acl_session_stop_locked()). */
	pthread_mutex_lock(&st->lock);
	dump.tensor_mask = s->is_attached ? adump_acl_dump_mask_locked(st, dump.op_type, dump.op_name)
					  : 0;
	if (dump.tensor_mask)
		s->dump_users++;
	pthread_mutex_unlock(&st->lock);
	/* No lock held: this waits while the stream's queue is full. */
	ret = adump_dev_launch_add(s->dev_stream, &executor->self, &executor->other, executor->alpha,
				   &executor->out, dump.tensor_mask ? &dump : NULL);
	adump_acl_stream_unpin(st, s, dump.tensor_mask != 0);
	executor->magic = 0;
	free(executor);
	return adump_aclnn_status_from(ret);
}
