/* SPDX-License-Identifier: Apache-2.0 */
/* The CANN runtime subset of reference §9 over the simulated NPU: aclInit/aclFinalize,
 * devices, streams, device memory (aclTensor/aclScalar and aclnnAdd: aclnn.c). One process-wide state,
 * created with pthread_once, its locks described in acl_int.h: launches and syncs pin their
 * stream and call the device with no lock held. Every call translates to device.h or the
 * session and maps the result with adump_acl_err_from() (adump_aclnn_status_from()). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_int.h"
#include "acl/adump_acl.h"

#define MOD "acl"
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
struct adump_acl_stream *adump_acl_stream_pin(struct adump_acl_state *st, aclrtStream h)
{
	struct adump_acl_stream *s;

	pthread_mutex_lock(&st->lock);
	s = adump_acl_stream_find_locked(st, h);
	if (s)
		s->users++;
	pthread_mutex_unlock(&st->lock);
	return s;
}

void adump_acl_stream_unpin(struct adump_acl_state *st, struct adump_acl_stream *s, bool is_dump)
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
	s = adump_acl_stream_pin(st, stream);
	if (!s)
		return ACL_ERROR_RT_PARAM_INVALID;
	/* Without a lock: the dump callback may call back into the shim meanwhile.
	 * adump_dev_stream_sync() returns once every chunk of the stream's ops is delivered. */
	ret = adump_dev_stream_sync(s->dev_stream);
	adump_acl_stream_unpin(st, s, false);
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
