/* SPDX-License-Identifier: Apache-2.0 */
/* The CANN runtime subset of reference §9 over the simulated NPU: aclInit/aclFinalize,
 * devices, streams, device memory, aclTensor/aclScalar and aclnnAdd. One process-wide state,
 * created with pthread_once, its locks described in acl_int.h: launches and syncs pin their
 * stream and call the device with no lock held. Every call translates to device.h or the
 * session and maps the result with adump_acl_err_from() (adump_aclnn_status_from()). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_int.h"
#include "acl/adump_acl.h"

#define MOD "acl"
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

static struct adump_acl_state state;
/* CANN's current device is per thread; a thread that never set one uses the device set
 * last in the process. */
static _Thread_local int32_t thread_device = -1;
static pthread_once_t state_once = PTHREAD_ONCE_INIT;

static void state_init(void)
{
	pthread_mutex_init(&state.ctl_lock, NULL);
	pthread_mutex_init(&state.lock, NULL);
	pthread_cond_init(&state.stream_idle, NULL);
	pthread_mutex_init(&state.path_lock, NULL);
	pthread_mutex_init(&state.opinfo_lock, NULL);
	state.current_device = -1;
}

struct adump_acl_state *adump_acl_state(void)
{
	pthread_once(&state_once, state_init);
	return &state;
}

uint64_t adump_acl_step_advance(void)
{
	return atomic_fetch_add_explicit(&adump_acl_state()->step, 1, memory_order_relaxed) + 1;
}

uint64_t adump_acl_step_get(void)
{
	return atomic_load_explicit(&adump_acl_state()->step, memory_order_relaxed);
}

aclError aclInit(const char *configPath)
{
	struct adump_acl_state *st = adump_acl_state();
	struct adump_acl_cfg cfg = { 0 };
	int ret = 0;

	pthread_mutex_lock(&st->ctl_lock);
	if (st->is_inited) {
		pthread_mutex_unlock(&st->ctl_lock);
		return ACL_ERROR_REPEAT_INITIALIZE;
	}
	if (configPath && *configPath) {
		ret = adump_acl_cfg_load(configPath, &cfg);
		if (ret < 0)
			goto out;
	}
	st->init_cfg = cfg;
	atomic_store_explicit(&st->step, 0, memory_order_relaxed);
	adump_acl_exception_setup_locked(st, &st->init_cfg);
	if (adump_acl_cfg_is_data_dump(&st->init_cfg)) {
		ret = adump_acl_session_start_locked(st, &st->init_cfg);
		if (ret < 0) {
			/* A config that passed validation but cannot start is an internal error. */
			pthread_mutex_unlock(&st->ctl_lock);
			return ret == -ADUMP_ERR_CONFIG ? ACL_ERROR_INVALID_DUMP_CONFIG
							: ACL_ERROR_INTERNAL_ERROR;
		}
	}
	st->is_inited = true;
out:
	pthread_mutex_unlock(&st->ctl_lock);
	return adump_acl_err_from(ret);
}

/* lock held: take @s off the stream list (no launch or sync finds it any more) and wait
 * until the ones running on it have left. */
static void stream_unlink_locked(struct adump_acl_state *st, struct adump_acl_stream *s)
{
	struct adump_acl_stream **pp;

	for (pp = &st->streams; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	while (s->users)
		pthread_cond_wait(&st->stream_idle, &st->lock);
}

/* The pin a launch or sync holds on its stream (acl_int.h). Return: the stream, or NULL when
 * @h is not a live stream. */
static struct adump_acl_stream *stream_pin(struct adump_acl_state *st, aclrtStream h)
{
	struct adump_acl_stream *s;

	pthread_mutex_lock(&st->lock);
	s = adump_acl_stream_find_locked(st, h);
	if (s)
		s->users++;
	pthread_mutex_unlock(&st->lock);
	return s;
}

static void stream_unpin(struct adump_acl_state *st, struct adump_acl_stream *s, bool is_dump)
{
	bool is_idle;

	pthread_mutex_lock(&st->lock);
	is_idle = --s->users == 0;
	if (is_dump && --s->dump_users == 0)
		is_idle = true;
	if (is_idle)
		pthread_cond_broadcast(&st->stream_idle);
	pthread_mutex_unlock(&st->lock);
}

/* ctl_lock held. */
static void device_release_all_locked(struct adump_acl_state *st, int32_t id)
{
	struct adump_acl_stream *s, *next, *gone = NULL;
	struct adump_dev *devs[ADUMP_DEV_MAX] = { 0 };

	/* Streams of the device die with it (CANN's aclrtResetDeviceForce). */
	pthread_mutex_lock(&st->lock);
	for (s = st->streams; s; s = next) {
		next = s->next;
		if (id >= 0 && s->device_id != id)
			continue;
		stream_unlink_locked(st, s);
		s->next = gone;
		gone = s;
	}
	pthread_mutex_unlock(&st->lock);
	for (s = gone; s; s = next) {
		next = s->next;
		if (s->is_attached && st->session)
			adump_session_detach(st->session, s->dev_stream);
		adump_dev_stream_destroy(s->dev_stream);
		free(s);
	}
	pthread_mutex_lock(&st->lock);
	for (int32_t i = 0; i < ADUMP_DEV_MAX; i++) {
		if (id >= 0 && i != id)
			continue;
		devs[i] = st->devs[i];
		st->devs[i] = NULL;
		st->dev_refs[i] = 0;
		if (st->current_device == i)
			st->current_device = -1;
	}
	pthread_mutex_unlock(&st->lock);
	for (int32_t i = 0; i < ADUMP_DEV_MAX; i++)
		if (devs[i])
			adump_dev_close(devs[i]);
}

aclError aclFinalize(void)
{
	struct adump_acl_state *st = adump_acl_state();
	int ret;

	pthread_mutex_lock(&st->ctl_lock);
	if (!st->is_inited) {
		pthread_mutex_unlock(&st->ctl_lock);
		return ACL_ERROR_REPEAT_FINALIZE;
	}
	/* Flush before devices go away: the session still borrows their streams. */
	ret = adump_acl_session_stop_locked(st);
	device_release_all_locked(st, -1);
	pthread_mutex_lock(&st->lock);
	st->active = NULL;
	pthread_mutex_unlock(&st->lock);
	st->is_mdl_inited = false;
	adump_acl_cfg_fini(&st->init_cfg);
	adump_acl_cfg_fini(&st->mdl_cfg);
	adump_acl_opinfo_reset(st);
	atomic_store_explicit(&st->is_exception, false, memory_order_relaxed);
	pthread_mutex_lock(&st->path_lock);
	st->exc_base[0] = '\0';
	pthread_mutex_unlock(&st->path_lock);
	st->is_inited = false;
	pthread_mutex_unlock(&st->ctl_lock);
	if (ret < 0)
		adump_log(ADUMP_LOG_WARN, MOD, "aclFinalize: dump flush failed: %s", adump_strerror(ret));
	return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId)
{
	struct adump_acl_state *st = adump_acl_state();
	int ret = 0;

	if (deviceId < 0 || deviceId >= ADUMP_DEV_MAX)
		return ACL_ERROR_RT_INVALID_DEVICEID;
	pthread_mutex_lock(&st->lock);
	if (!st->devs[deviceId])
		ret = adump_dev_open(deviceId, &st->devs[deviceId]);
	if (ret == 0) {
		st->dev_refs[deviceId]++;
		st->current_device = deviceId;
		thread_device = deviceId;
	}
	pthread_mutex_unlock(&st->lock);
	if (ret == -ADUMP_ERR_NOT_FOUND)
		return ACL_ERROR_RT_INVALID_DEVICEID;
	return adump_acl_err_from(ret);
}

static aclError reset_device(int32_t deviceId, bool is_force)
{
	struct adump_acl_state *st = adump_acl_state();

	if (deviceId < 0 || deviceId >= ADUMP_DEV_MAX)
		return ACL_ERROR_RT_INVALID_DEVICEID;
	bool is_release;

	pthread_mutex_lock(&st->ctl_lock);
	pthread_mutex_lock(&st->lock);
	if (!st->devs[deviceId]) {
		pthread_mutex_unlock(&st->lock);
		pthread_mutex_unlock(&st->ctl_lock);
		return ACL_ERROR_RT_INVALID_DEVICEID;
	}
	is_release = is_force || --st->dev_refs[deviceId] == 0;
	pthread_mutex_unlock(&st->lock);
	if (is_release)
		device_release_all_locked(st, deviceId);
	pthread_mutex_unlock(&st->ctl_lock);
	return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId)
{
	return reset_device(deviceId, false);
}

aclError aclrtResetDeviceForce(int32_t deviceId)
{
	return reset_device(deviceId, true);
}

aclError aclrtGetDevice(int32_t *deviceId)
{
	struct adump_acl_state *st = adump_acl_state();
	aclError ret = ACL_SUCCESS;

	if (!deviceId)
		return ACL_ERROR_INVALID_PARAM;
	pthread_mutex_lock(&st->lock);
	if (adump_acl_current_device_locked(st) < 0)
		ret = ACL_ERROR_RT_CONTEXT_NULL;
	else
		*deviceId = adump_acl_current_device_locked(st);
	pthread_mutex_unlock(&st->lock);
	return ret;
}

int32_t adump_acl_current_device_locked(struct adump_acl_state *st)
{
	if (thread_device >= 0 && st->devs[thread_device])
		return thread_device;
	return st->current_device;
}

struct adump_dev *adump_acl_current_dev_locked(struct adump_acl_state *st)
{
	int32_t id = adump_acl_current_device_locked(st);

	return id < 0 ? NULL : st->devs[id];
}

struct adump_acl_stream *adump_acl_stream_find_locked(struct adump_acl_state *st, aclrtStream h)
{
	for (struct adump_acl_stream *s = st->streams; s; s = s->next)
		if ((void *)s == h)
			return s;
	return NULL;
}

aclError aclrtCreateStream(aclrtStream *stream)
{
	struct adump_acl_state *st = adump_acl_state();
	struct adump_acl_stream *s;
	struct adump_dev *dev;
	int ret;

	if (!stream)
		return ACL_ERROR_INVALID_PARAM;
	s = calloc(1, sizeof(*s));
	if (!s)
		return ACL_ERROR_BAD_ALLOC;
	/* ctl_lock keeps the device open (only its holders close devices) and orders the
	 * attach with the session's changes. */
	pthread_mutex_lock(&st->ctl_lock);
	pthread_mutex_lock(&st->lock);
	dev = adump_acl_current_dev_locked(st);
	s->device_id = adump_acl_current_device_locked(st);
	pthread_mutex_unlock(&st->lock);
	if (!dev) {
		pthread_mutex_unlock(&st->ctl_lock);
		free(s);
		return ACL_ERROR_RT_CONTEXT_NULL;
	}
	ret = adump_dev_stream_create(dev, &s->dev_stream);
	if (ret < 0) {
		pthread_mutex_unlock(&st->ctl_lock);
		free(s);
		return adump_acl_err_from(ret);
	}
	pthread_mutex_lock(&st->lock);
	s->next = st->streams;
	st->streams = s;
	pthread_mutex_unlock(&st->lock);
	ret = adump_acl_stream_attach_locked(st, s);
	pthread_mutex_unlock(&st->ctl_lock);
	if (ret < 0)
		adump_log(ADUMP_LOG_WARN, MOD, "stream %u: not captured: %s",
			  adump_dev_stream_id(s->dev_stream), adump_strerror(ret));
	*stream = s;
	return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream)
{
	struct adump_acl_state *st = adump_acl_state();
	struct adump_acl_stream *s;
	int ret = 0;

	if (!stream)
		return ACL_ERROR_INVALID_PARAM;
	pthread_mutex_lock(&st->ctl_lock);
	pthread_mutex_lock(&st->lock);
	s = adump_acl_stream_find_locked(st, stream);
	if (s)
		stream_unlink_locked(st, s);
	pthread_mutex_unlock(&st->lock);
	if (!s) {
		pthread_mutex_unlock(&st->ctl_lock);
		return ACL_ERROR_RT_PARAM_INVALID;
	}
	/* Sync first so every dump of the stream is written before it leaves the session. */
	ret = adump_dev_stream_sync(s->dev_stream);
	if (s->is_attached && st->session)
		adump_session_detach(st->session, s->dev_stream);
	adump_dev_stream_destroy(s->dev_stream);
	free(s);
	pthread_mutex_unlock(&st->ctl_lock);
	return adump_acl_err_from(ret);
}

aclError aclrtSynchronizeStream(aclrtStream stream)
{
	struct adump_acl_state *st = adump_acl_state();
	struct adump_acl_stream *s;
	int ret;

	if (!stream)
		return ACL_ERROR_INVALID_PARAM;
	s = stream_pin(st, stream);
	if (!s)
		return ACL_ERROR_RT_PARAM_INVALID;
	/* Without a lock: the dump callback may call back into the shim meanwhile.
	 * adump_dev_stream_sync() returns once every chunk of the stream's ops is delivered. */
	ret = adump_dev_stream_sync(s->dev_stream);
	stream_unpin(st, s, false);
	return adump_acl_err_from(ret);
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
	struct adump_acl_state *st = adump_acl_state();
	struct adump_dev *dev;
	int ret;

	(void)policy;
	if (!devPtr || size == 0)
		return ACL_ERROR_INVALID_PARAM;
	pthread_mutex_lock(&st->lock);
	dev = adump_acl_current_dev_locked(st);
	ret = dev ? adump_dev_malloc(dev, size, devPtr) : 1;
	pthread_mutex_unlock(&st->lock);
	if (ret == 1)
		return ACL_ERROR_RT_CONTEXT_NULL;
	if (ret == -ENOMEM)
		return ACL_ERROR_RT_MEMORY_ALLOCATION;
	return adump_acl_err_from(ret);
}

aclError aclrtFree(void *devPtr)
{
	struct adump_acl_state *st = adump_acl_state();
	int ret = -ADUMP_ERR_NOT_FOUND;

	if (!devPtr)
		return ACL_ERROR_INVALID_PARAM;
	pthread_mutex_lock(&st->lock);
	/* The pointer may belong to any open device, not only the current one. */
	for (int i = 0; i < ADUMP_DEV_MAX && ret == -ADUMP_ERR_NOT_FOUND; i++)
		if (st->devs[i])
			ret = adump_dev_free(st->devs[i], devPtr);
	pthread_mutex_unlock(&st->lock);
	return adump_acl_err_from(ret);
}

static enum adump_copy_kind copy_kind(aclrtMemcpyKind kind, bool *is_valid)
{
	*is_valid = true;
	switch (kind) {
	case ACL_MEMCPY_HOST_TO_HOST: return ADUMP_COPY_HOST_TO_HOST;
	case ACL_MEMCPY_HOST_TO_DEVICE: return ADUMP_COPY_HOST_TO_DEVICE;
	case ACL_MEMCPY_DEVICE_TO_HOST: return ADUMP_COPY_DEVICE_TO_HOST;
	case ACL_MEMCPY_DEVICE_TO_DEVICE: return ADUMP_COPY_DEVICE_TO_DEVICE;
	case ACL_MEMCPY_DEFAULT: return ADUMP_COPY_DEFAULT;
	default:
		*is_valid = false;
		return ADUMP_COPY_DEFAULT;
	}
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
		     aclrtMemcpyKind kind)
{
	struct adump_acl_state *st = adump_acl_state();
	enum adump_copy_kind k;
	struct adump_dev *dev;
	bool is_valid;
	int ret;

	/* CANN copies nothing and succeeds for count 0, before looking at the pointers. */
	if (count == 0)
		return ACL_SUCCESS;
	if (!dst || !src)
		return ACL_ERROR_INVALID_PARAM;
	k = copy_kind(kind, &is_valid);
	if (!is_valid)
		return ACL_ERROR_INVALID_PARAM;
	pthread_mutex_lock(&st->lock);
	dev = adump_acl_current_dev_locked(st);
	ret = dev ? adump_dev_memcpy(dev, dst, destMax, src, count, k) : 1;
	pthread_mutex_unlock(&st->lock);
	if (ret == 1)
		return ACL_ERROR_RT_CONTEXT_NULL;
	return adump_acl_err_from(ret);
}

/* ---- aclnn ---- */

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
	s = stream_pin(st, stream);
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
	stream_unpin(st, s, dump.tensor_mask != 0);
	executor->magic = 0;
	free(executor);
	return adump_aclnn_status_from(ret);
}
