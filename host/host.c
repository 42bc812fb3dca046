/* SPDX-License-Identifier: Apache-2.0 */
/* Host streams: a producer beside the device's DMA engines. The owning thread describes an
 * op's tensors and posts them into the stream's channel through the same producer code as a
 * DMA engine (adump_port_post_sp()): copied into staging buffers, or referenced in zero copy
 * with a release hook the worker calls once the file is done; in a statistics session the
 * owner computes the tensors' statistics in place instead and posts only them. The stream gets its channel
 * from the session like a device stream (adump_session_attach_producer()). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adump/host.h"
#include "common/common.h"
#include "pipeline/producer.h"
#include "producer/producer.h"

#define MODULE "host"
#define DEVICE_ID_MAX 63u
/* Records shorter than a chunk wake the worker once for this many bytes at most
 * (host_bind()). */
#define HOST_DEFER_BYTES (4u << 20)

struct adump_host_stream {
	struct adump_session *session;
	pthread_t owner;
	uint32_t stream_id;
	uint32_t device_id;
	uint32_t next_task_id;                  /* owner only */
	bool is_stats;                          /* statistics session: computed at handover */
	bool is_tensor_stats;                   /* tensors and their statistics: the same */
	bool is_window;                         /* window session: held at handover (copies) */
	/* Set by the session on attach and detach (bind()); read by the owner and by stats. */
	_Atomic(struct adump_port *) chan;
	/* The owner's scratch for one op: the tensors as the header describes them, their
	 * data pointers and (window mode) where the window holds them; grown, never shrunk. */
	struct adump_tensor *tensors;
	const void **data;
	struct adump_window_copy *copies;
	uint32_t scratch_count;
	/* Counters: the owner writes most; workers the release ones; any thread reads. */
	_Atomic uint64_t dumps;
	_Atomic uint64_t zero_copy_dumps;
	_Atomic uint64_t refused;
	_Atomic uint64_t tensor_count;
	_Atomic uint64_t payload_bytes;
	_Atomic uint64_t copy_ns;
	_Atomic uint64_t released;
	_Atomic uint64_t release_failures;
	/* The channel's counters as they stood when the session took it away. */
	pthread_mutex_t final_lock;
	struct adump_stream_stats final_chan;
	/* adump_host_stream_set_dir()'s absolute directory, or NULL (the session's). Every
	 * record of the stream borrows it: it changes only while the stream is idle. */
	char *dir;
	/* Statistics of the last keyed tensors (struct adump_host_op's stats_keys), owner
	 * only: a ring, the oldest overwritten. */
	struct stats_reuse {
		uint64_t key;                   /* 0: empty */
		uint64_t bytes;
		int32_t dtype;
		struct adump_tstats ts;
		/* Window mode: where the window holds these bytes, for the next dump of the
		 * key to share (adump_session_window_hold()); .at NULL: nowhere. */
		struct adump_window_copy copy;
	} reuse[ADUMP_HOST_STATS_REUSE];
	unsigned reuse_next;
};

/* What a zero-copy dump's op record carries for its hooks (rec->hook_data). */
struct host_zc {
	struct adump_host_stream *hs;
	adump_host_release_fn release_fn;
	adump_host_check_fn check_fn;
	void *user;
};

static int zc_check(struct adump_op_rec *rec)
{
	const struct host_zc *zc = rec->hook_data;
	int ret;

	if (!zc->check_fn)
		return 0;
	ret = zc->check_fn(zc->user, rec->op.task_id);
	return ret == 0 ? 0 : ret < 0 ? ret : -ADUMP_ERR_CALLBACK;
}

static void zc_release(struct adump_op_rec *rec)
{
	const struct host_zc *zc = rec->hook_data;
	struct adump_host_stream *hs = zc->hs;

	if (rec->status < 0)
		atomic_fetch_add_explicit(&hs->release_failures, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hs->released, 1, memory_order_relaxed);
	zc->release_fn(zc->user, rec->op.task_id, rec->status);
}

static const struct adump_op_hooks zc_hooks = { .check = zc_check, .release = zc_release };

/* Every dump is posted within the owner's call: nothing is left to wait for. */
static int host_quiesce(void *producer)
{
	return 0;
}

static void host_bind(void *producer, struct adump_port *chan)
{
	struct adump_host_stream *hs = producer;
	struct adump_port *old = atomic_load_explicit(&hs->chan, memory_order_relaxed);

	if (!chan && old) {
		pthread_mutex_lock(&hs->final_lock);
		adump_port_stats(old, &hs->final_chan);
		pthread_mutex_unlock(&hs->final_lock);
	}
	/* A training loop's hooks hand over a dump every 100 us or so, and the worker sleeps
	 * between them: a system call and two context switches each. Records shorter than a
	 * chunk wake it once for half the channel's buffers or HOST_DEFER_BYTES; a whole chunk
	 * at once (the worker starts on a big dump's first chunk while the later ones are
	 * copied). Before the owner's first commit: published by the store below. */
	if (chan) {
		const struct adump_chan *c = adump_port_chan(chan);
		size_t chunk = adump_chan_buffer_bytes(c);

		adump_port_defer_small_sp(chan, adump_chan_buffer_count(c) / 2,
					  chunk < UINT32_MAX ? (uint32_t)chunk : UINT32_MAX,
					  HOST_DEFER_BYTES);
	}
	/* Pairs with the acquire loads of the owner: the channel is set up. */
	atomic_store_explicit(&hs->chan, chan, memory_order_release);
}

static const struct adump_producer_ops host_ops = { .quiesce = host_quiesce, .bind = host_bind };

int adump_host_stream_open(struct adump_session *s, const struct adump_host_stream_config *cfg,
			   struct adump_host_stream **out)
{
	struct adump_host_stream_config c = ADUMP_HOST_STREAM_CONFIG_INIT;
	struct adump_host_stream *hs;
	int ret;

	if (!s || !out)
		return -EINVAL;
	if (cfg) {
		if (cfg->struct_size < sizeof(c)) {
			adump_log(ADUMP_LOG_ERROR, MODULE,
				  "stream config struct_size %zu: initialise it with "
				  "ADUMP_HOST_STREAM_CONFIG_INIT", cfg->struct_size);
			return -ADUMP_ERR_CONFIG;
		}
		memcpy(&c, cfg, sizeof(c));
	}
	if (c.device_id > DEVICE_ID_MAX) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "device_id %u above %u", c.device_id,
			  DEVICE_ID_MAX);
		return -ADUMP_ERR_CONFIG;
	}
	hs = calloc(1, sizeof(*hs));
	if (!hs)
		return -ENOMEM;
	hs->session = s;
	hs->owner = pthread_self();
	hs->device_id = c.device_id;
	hs->stream_id = adump_stream_id_next();
	hs->is_stats = adump_session_wants_stats(s);
	hs->is_tensor_stats = adump_session_wants_tensor_stats(s);
	hs->is_window = adump_session_window_at_handover(s);
	pthread_mutex_init(&hs->final_lock, NULL);
	hs->final_chan.stream_id = hs->stream_id;
	ret = adump_session_attach_producer(s, hs, hs->stream_id, &host_ops);
	if (ret < 0) {
		pthread_mutex_destroy(&hs->final_lock);
		free(hs);
		return ret;
	}
	*out = hs;
	return 0;
}

int adump_host_stream_close(struct adump_host_stream *hs)
{
	struct adump_port *chan;
	int ret = 0;

	if (!hs)
		return 0;
	chan = atomic_load_explicit(&hs->chan, memory_order_acquire);
	if (chan) {
		ret = adump_port_wait_idle(chan);
		adump_session_detach_producer(hs->session, hs);
	}
	pthread_mutex_destroy(&hs->final_lock);
	free(hs->tensors);
	free(hs->data);
	free(hs->copies);
	free(hs->dir);
	free(hs);
	return ret;
}

int adump_host_stream_adopt(struct adump_host_stream *hs)
{
	if (!hs)
		return -EINVAL;
	hs->owner = pthread_self();
	return 0;
}

static int scratch_reserve(struct adump_host_stream *hs, uint32_t count)
{
	struct adump_tensor *tensors;
	struct adump_window_copy *copies;
	const void **data;

	if (count <= hs->scratch_count)
		return 0;
	tensors = realloc(hs->tensors, count * sizeof(*tensors));
	if (!tensors)
		return -ENOMEM;
	hs->tensors = tensors;
	data = realloc(hs->data, count * sizeof(*data));
	if (!data)
		return -ENOMEM;
	hs->data = data;
	copies = realloc(hs->copies, count * sizeof(*copies));
	if (!copies)
		return -ENOMEM;
	hs->copies = copies;
	hs->scratch_count = count;
	return 0;
}

int64_t adump_host_tensor_bytes(int32_t dtype, const int64_t *dims, uint32_t dim_count)
{
	unsigned bits = adump_dtype_bits(dtype);
	uint64_t elements = 1, total_bits;

	if (dtype <= 0 || dtype >= ADUMP_DT_COUNT || bits == 0)
		return -ADUMP_ERR_UNSUPPORTED;
	if (dim_count > ADUMP_MAX_DIMS || (dim_count && !dims))
		return -EINVAL;
	for (uint32_t i = 0; i < dim_count; i++) {
		if (dims[i] < 0 || __builtin_mul_overflow(elements, (uint64_t)dims[i], &elements))
			return -EINVAL;
	}
	if (__builtin_mul_overflow(elements, (uint64_t)bits, &total_bits) ||
	    total_bits / 8 + 1 > (uint64_t)INT64_MAX)
		return -EINVAL;
	return (int64_t)((total_bits + 7) / 8);
}

/* Checks one tensor and describes it for the header. Return: 0, -EINVAL, -ADUMP_ERR_UNSUPPORTED. */
static int tensor_take(const struct adump_host_tensor *src, enum adump_tensor_kind kind,
		       uint32_t index, const char *op_name, struct adump_tensor *dst)
{
	const char *what = kind == ADUMP_TENSOR_INPUT ? "input" : "output";
	int64_t bytes;

	if (src->dim_count > ADUMP_MAX_DIMS || src->orig_dim_count > ADUMP_MAX_DIMS) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s: %s %u: more than %d dimensions", op_name,
			  what, index, ADUMP_MAX_DIMS);
		return -EINVAL;
	}
	bytes = adump_host_tensor_bytes(src->dtype, src->dims, src->dim_count);
	if (bytes == -ADUMP_ERR_UNSUPPORTED) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s: %s %u: dtype %d has no fixed element size",
			  op_name, what, index, src->dtype);
		return (int)bytes;
	}
	if (bytes < 0) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s: %s %u: a negative dimension, or a size "
			  "past 2^63 bytes", op_name, what, index);
		return (int)bytes;
	}
	for (uint32_t i = 0; i < src->orig_dim_count; i++) {
		if (src->orig_dims[i] < 0) {
			adump_log(ADUMP_LOG_ERROR, MODULE, "%s: %s %u: origin dimension %u is negative",
				  op_name, what, index, i);
			return -EINVAL;
		}
	}
	if ((uint64_t)bytes != src->bytes) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s: %s %u: bytes %llu, but its shape and %s "
			  "make %lld", op_name, what, index, (unsigned long long)src->bytes,
			  adump_dtype_name(src->dtype), (long long)bytes);
		return -EINVAL;
	}
	if (!src->data && src->bytes) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s: %s %u: data is NULL", op_name, what, index);
		return -EINVAL;
	}
	if (!adump_format_name(src->format)) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s: %s %u: unknown format %d", op_name, what,
			  index, src->format);
		return -EINVAL;
	}
	adump_tensor_describe(dst, kind, index, src->dtype, src->format, src->dim_count, src->dims,
			      src->orig_dim_count, src->orig_dims, src->data, src->bytes);
	return 0;
}

/* The checks every owner-only call starts with. */
static int owner_check(struct adump_host_stream *hs, const char *what)
{
	if (!pthread_equal(pthread_self(), hs->owner)) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s on stream %u from a thread that does not "
			  "own it (the thread that opened it)", what, hs->stream_id);
		return -ADUMP_ERR_WRONG_THREAD;
	}
	if (!atomic_load_explicit(&hs->chan, memory_order_acquire)) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s on stream %u: its session detached it",
			  what, hs->stream_id);
		return -ADUMP_ERR_SHUTDOWN;
	}
	return 0;
}

/* Checks the op and fills the scratch. Return: the tensor count, or a negative code. */
static int op_take(struct adump_host_stream *hs, const struct adump_host_op *op)
{
	uint64_t count = (uint64_t)op->input_count + op->output_count;
	int ret;

	if (!op->op_type || !op->op_type[0] || !op->op_name || !op->op_name[0]) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "op_type and op_name must be non-empty");
		return -EINVAL;
	}
	if ((op->input_count && !op->inputs) || (op->output_count && !op->outputs)) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s: a tensor count without its tensors",
			  op->op_name);
		return -EINVAL;
	}
	if (count > ADUMP_HOST_TENSOR_MAX) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s: %llu tensors, more than %u", op->op_name,
			  (unsigned long long)count, ADUMP_HOST_TENSOR_MAX);
		return -EINVAL;
	}
	if (op->check_fn && !op->release_fn) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s: check_fn without release_fn", op->op_name);
		return -EINVAL;
	}
	if (op->attr_count > ADUMP_HOST_ATTR_MAX || (op->attr_count && !op->attrs)) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s: %u attributes (at most %u, attrs %s)",
			  op->op_name, op->attr_count, ADUMP_HOST_ATTR_MAX,
			  op->attrs ? "set" : "NULL");
		return -EINVAL;
	}
	for (uint32_t i = 0; i < op->attr_count; i++) {
		if (!op->attrs[i].name || !op->attrs[i].value) {
			adump_log(ADUMP_LOG_ERROR, MODULE, "%s: attribute %u has a NULL name or value",
				  op->op_name, i);
			return -EINVAL;
		}
	}
	ret = scratch_reserve(hs, (uint32_t)count);
	if (ret < 0)
		return ret;
	for (uint32_t i = 0; i < op->input_count; i++) {
		ret = tensor_take(&op->inputs[i], ADUMP_TENSOR_INPUT, i, op->op_name, &hs->tensors[i]);
		if (ret < 0)
			return ret;
		hs->data[i] = op->inputs[i].data;
	}
	for (uint32_t i = 0; i < op->output_count; i++) {
		uint32_t k = op->input_count + i;

		ret = tensor_take(&op->outputs[i], ADUMP_TENSOR_OUTPUT, i, op->op_name,
				  &hs->tensors[k]);
		if (ret < 0)
			return ret;
		hs->data[k] = op->outputs[i].data;
	}
	return (int)count;
}

/* The statistics kept for @key, if they are of a tensor of @t's dtype and size. */
static const struct stats_reuse *reuse_find(const struct adump_host_stream *hs, uint64_t key,
					    const struct adump_tensor *t)
{
	for (unsigned i = 0; i < ADUMP_HOST_STATS_REUSE; i++) {
		const struct stats_reuse *r = &hs->reuse[i];

		if (r->key == key && r->dtype == t->dtype && r->bytes == t->bytes)
			return r;
	}
	return NULL;
}

static void reuse_keep(struct adump_host_stream *hs, uint64_t key, const struct adump_tensor *t,
		       const struct adump_tstats *ts, const struct adump_window_copy *copy)
{
	struct stats_reuse *r = &hs->reuse[hs->reuse_next++ % ADUMP_HOST_STATS_REUSE];

	r->key = key;
	r->bytes = t->bytes;
	r->dtype = t->dtype;
	r->ts = *ts;
	r->copy = *copy;
}

/* @known[i]: the statistics the stream keeps for tensor i's key in @keys, or NULL; with
 * @copies, copies[i]: where the window holds its bytes (.at NULL: nowhere known). */
static void reuse_lookup(const struct adump_host_stream *hs, uint32_t count, const uint64_t *keys,
			 const struct adump_tstats **known, struct adump_window_copy *copies)
{
	for (uint32_t i = 0; i < count; i++) {
		const struct stats_reuse *r = keys[i] ? reuse_find(hs, keys[i], &hs->tensors[i])
						      : NULL;

		known[i] = r ? &r->ts : NULL;
		if (copies)
			copies[i] = r ? r->copy : (struct adump_window_copy){ 0 };
	}
}

/* The record whose statistics @ts are (reuse_lookup()'s known[i]). */
static struct stats_reuse *reuse_of(const struct adump_tstats *ts)
{
	return (struct stats_reuse *)((uintptr_t)ts - offsetof(struct stats_reuse, ts));
}

/* With @copies, where the window holds each known keyed tensor now, kept with its record;
 * then the statistics @ts of each keyed tensor the stream had none for, kept for its key
 * (and its place, with @copies). The known ones first: keeping the new ones may take their
 * records. */
static void reuse_remember(struct adump_host_stream *hs, uint32_t count, const uint64_t *keys,
			   const struct adump_tstats *const *known, const struct adump_tstats *ts,
			   const struct adump_window_copy *copies)
{
	static const struct adump_window_copy none;

	for (uint32_t i = 0; copies && i < count; i++)
		if (known[i])
			reuse_of(known[i])->copy = copies[i];
	for (uint32_t i = 0; i < count; i++)
		if (keys[i] && !known[i])
			reuse_keep(hs, keys[i], &hs->tensors[i], &ts[i], copies ? &copies[i] : &none);
}

/* Statistics content: the tensors' statistics, computed here on the owner's thread from the
 * caller's memory in place (no copy into staging), or copied from @known[i] where the stream
 * keeps them (@known NULL for none); the record carries them instead of the bytes. NULL
 * without memory: the bytes go as before. */
static struct adump_tstats *handover_stats(const struct adump_host_stream *hs, uint32_t count,
					   const struct adump_tstats *const *known)
{
	struct adump_tstats *ts = malloc(count * sizeof(*ts));

	if (!ts)
		return NULL;
	for (uint32_t i = 0; i < count; i++) {
		const struct adump_tensor *t = &hs->tensors[i];

		if (known && known[i]) {
			ts[i] = *known[i];
			continue;
		}
		adump_tstats_init(&ts[i], t->dtype);
		if (ts[i].kind != ADUMP_TSTATS_NONE && t->bytes)
			adump_tstats_add(&ts[i], hs->data[i], (size_t)(t->bytes / ts[i].elem_bytes));
	}
	return ts;
}

static int dump(struct adump_host_stream *hs, const struct adump_host_op *op, uint32_t *task_id)
{
	struct adump_port *chan = atomic_load_explicit(&hs->chan, memory_order_acquire);
	const struct adump_tstats *known[ADUMP_HOST_TENSOR_MAX], *const *kept = NULL;
	struct adump_window_copy *copies = NULL;
	struct adump_op_rec *rec;
	uint64_t start = adump_now_ns();
	int count = op_take(hs, op);

	if (count < 0)
		return count;
	struct adump_op desc = {
		.op_type = op->op_type,
		.op_name = op->op_name,
		.device_id = hs->device_id,
		.stream_id = hs->stream_id,
		.task_id = hs->next_task_id,
		.timestamp_us = op->timestamp_us ? op->timestamp_us : adump_wall_us(),
		.tensor_count = (uint32_t)count,
		.tensors = hs->tensors,
		.attr_count = op->attr_count,
		.attrs = op->attrs,
		.dfx_message = op->dfx_message,
	};
	/* A window session holds the dump here (the testpoint sends the bytes through the
	 * workers instead); a zero-copy one by reference: the window, not the worker, reads the
	 * caller's memory (only if it writes the dump) and releases it. */
	bool is_held = hs->is_window && count && ADUMP_TESTPOINT("host.window_handover") == 0;
	bool is_held_ref = is_held && op->release_fn;
	/* Zero copy through the workers: they read the caller's memory and release it. */
	bool is_zc_posted = op->release_fn && !is_held_ref;

	if (is_zc_posted) {
		struct host_zc zc = { .hs = hs, .release_fn = op->release_fn,
				      .check_fn = op->check_fn, .user = op->user };
		int ret = adump_op_rec_create_hooked(&desc, adump_port_op_freelist(chan), &zc_hooks,
						     &zc, sizeof(zc), &rec);
		if (ret < 0)
			return ret;
	} else {
		int ret = adump_op_rec_create(&desc, adump_port_op_freelist(chan), &rec);

		if (ret < 0)
			return ret;
	}
	rec->dir = hs->dir;
	if (op->stats_keys && (hs->is_stats || hs->is_tensor_stats || hs->is_window)) {
		copies = is_held && !is_held_ref ? hs->copies : NULL;
		reuse_lookup(hs, (uint32_t)count, op->stats_keys, known, copies);
		kept = known;
	}
	/* The testpoint sends the bytes instead, as without memory: tests compare the two. With
	 * tensor content the bytes go all the same, their statistics read here, where a tensor
	 * the program just made is still in cache, not from staging by the worker. */
	if ((hs->is_stats || hs->is_tensor_stats) && count &&
	    ADUMP_TESTPOINT("host.stats_handover") == 0) {
		rec->tstats = handover_stats(hs, (uint32_t)count, kept);
		rec->has_payload = hs->is_tensor_stats;
	}
	/* Window mode: the bytes go into the window here, not through staging (a keyed
	 * tensor the window holds already in this step, a module's output that is also its
	 * parent's, shares that copy), or zero copy, the window holds them where they are. A
	 * copy it could not hold goes as without a window; a reference is refused (the
	 * caller's memory would be read after release). */
	if (is_held) {
		struct adump_window_ref ref = { .check = op->check_fn, .release = op->release_fn,
						.user = op->user, .task_id = desc.task_id };
		int ret = adump_session_window_hold(hs->session, rec, hs->data, kept,
						    is_held_ref ? &ref : NULL, copies);

		if (ret < 0 && is_held_ref) {
			adump_op_rec_destroy(rec);
			return ret;
		}
		if (ret < 0)
			copies = NULL;          /* the window left them as they were */
	}
	if (kept && rec->tstats)
		reuse_remember(hs, (uint32_t)count, op->stats_keys, known, rec->tstats, copies);
	/* From here the dump is accepted: the worker owns the record, whatever is dropped. */
	hs->next_task_id++;
	atomic_fetch_add_explicit(&hs->tensor_count, (uint64_t)count, memory_order_relaxed);
	atomic_fetch_add_explicit(&hs->payload_bytes, rec->payload_bytes, memory_order_relaxed);
	if (is_zc_posted)
		atomic_fetch_add_explicit(&hs->zero_copy_dumps, 1, memory_order_relaxed);
	/* A large record rings the worker's doorbell as it is committed (a system call only
	 * while it sleeps), not once at the end of the op: the worker starts on a large dump's
	 * first chunk while the later ones are copied. Small ones wait (host_bind()). */
	adump_port_post_sp(chan, rec, hs->data, is_zc_posted);
	/* Zero copy: the caller's memory is held until written, and nothing is owed long. */
	if (is_zc_posted)
		adump_port_ring_sp(chan);
	atomic_fetch_add_explicit(&hs->dumps, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hs->copy_ns, adump_now_ns() - start, memory_order_relaxed);
	if (task_id)
		*task_id = desc.task_id;
	return 0;
}

int adump_host_dump_op(struct adump_host_stream *hs, const struct adump_host_op *op,
		       uint32_t *task_id)
{
	struct adump_host_op o = ADUMP_HOST_OP_INIT;
	int ret;

	if (!hs)
		return -EINVAL;
	ret = owner_check(hs, "dump");
	if (ret == 0 && !op) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "dump: op is NULL");
		ret = -EINVAL;
	} else if (ret == 0 && op->struct_size < ADUMP_HOST_OP_SIZE_V1) {
		adump_log(ADUMP_LOG_ERROR, MODULE,
			  "dump: op struct_size %zu: initialise it with ADUMP_HOST_OP_INIT",
			  op->struct_size);
		ret = -EINVAL;
	}
	if (ret == 0) {
		/* A caller built against an earlier version has fewer fields: the rest stay 0. */
		memcpy(&o, op, op->struct_size < sizeof(o) ? op->struct_size : sizeof(o));
		o.struct_size = sizeof(o);
		ret = dump(hs, &o, task_id);
	}
	if (ret < 0)
		atomic_fetch_add_explicit(&hs->refused, 1, memory_order_relaxed);
	return ret;
}

/* The op of the short forms: no zero copy unless @release_fn. */
static struct adump_host_op op_of(const char *op_type, const char *op_name,
				  const struct adump_host_tensor *inputs, uint32_t input_count,
				  const struct adump_host_tensor *outputs, uint32_t output_count,
				  adump_host_release_fn release_fn, void *user)
{
	struct adump_host_op op = ADUMP_HOST_OP_INIT;

	op.op_type = op_type;
	op.op_name = op_name;
	op.inputs = inputs;
	op.input_count = input_count;
	op.outputs = outputs;
	op.output_count = output_count;
	op.release_fn = release_fn;
	op.user = user;
	return op;
}

int adump_host_dump(struct adump_host_stream *hs, const char *op_type, const char *op_name,
		    const struct adump_host_tensor *inputs, uint32_t input_count,
		    const struct adump_host_tensor *outputs, uint32_t output_count)
{
	struct adump_host_op op = op_of(op_type, op_name, inputs, input_count, outputs,
					output_count, NULL, NULL);

	return adump_host_dump_op(hs, &op, NULL);
}

int adump_host_dump_nocopy(struct adump_host_stream *hs, const char *op_type, const char *op_name,
			   const struct adump_host_tensor *inputs, uint32_t input_count,
			   const struct adump_host_tensor *outputs, uint32_t output_count,
			   adump_host_release_fn release_fn, void *user)
{
	struct adump_host_op op = op_of(op_type, op_name, inputs, input_count, outputs,
					output_count, release_fn, user);

	if (!release_fn) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "dump without copy: release_fn is NULL");
		if (hs)
			atomic_fetch_add_explicit(&hs->refused, 1, memory_order_relaxed);
		return -EINVAL;
	}
	return adump_host_dump_op(hs, &op, NULL);
}

int adump_host_stream_set_dir(struct adump_host_stream *hs, const char *dir)
{
	struct adump_port *chan;
	char *abs = NULL;
	int ret;

	if (!hs)
		return -EINVAL;
	ret = owner_check(hs, "set_dir");
	if (ret < 0)
		return ret;
	chan = atomic_load_explicit(&hs->chan, memory_order_acquire);
	if (dir) {
		ret = adump_session_stream_dir(hs->session, dir, hs->device_id, &abs);
		if (ret < 0)
			return ret;
	}
	ret = adump_session_producer_move(hs->session, hs, chan, hs->dir, abs);
	if (ret < 0 && ret != -ADUMP_ERR_DROPPED) {
		free(abs);
		return ret;
	}
	free(hs->dir);
	hs->dir = abs;
	return ret;
}

int adump_host_stream_sync(struct adump_host_stream *hs)
{
	int ret;

	if (!hs)
		return -EINVAL;
	ret = owner_check(hs, "sync");
	if (ret < 0)
		return ret;
	return adump_port_wait_idle(atomic_load_explicit(&hs->chan, memory_order_acquire));
}

void adump_host_stream_stats(const struct adump_host_stream *chs,
			     struct adump_host_stream_stats *out)
{
	struct adump_host_stream *hs = (struct adump_host_stream *)chs;
	struct adump_port *chan = atomic_load_explicit(&hs->chan, memory_order_acquire);

	memset(out, 0, sizeof(*out));
	out->stream_id = hs->stream_id;
	out->device_id = hs->device_id;
	out->dumps = atomic_load_explicit(&hs->dumps, memory_order_relaxed);
	out->zero_copy_dumps = atomic_load_explicit(&hs->zero_copy_dumps, memory_order_relaxed);
	out->refused = atomic_load_explicit(&hs->refused, memory_order_relaxed);
	out->tensors = atomic_load_explicit(&hs->tensor_count, memory_order_relaxed);
	out->payload_bytes = atomic_load_explicit(&hs->payload_bytes, memory_order_relaxed);
	out->copy_ns = atomic_load_explicit(&hs->copy_ns, memory_order_relaxed);
	out->released = atomic_load_explicit(&hs->released, memory_order_relaxed);
	out->release_failures = atomic_load_explicit(&hs->release_failures, memory_order_relaxed);
	if (chan) {
		adump_port_stats(chan, &out->chan);
	} else {
		pthread_mutex_lock(&hs->final_lock);
		out->chan = hs->final_chan;
		pthread_mutex_unlock(&hs->final_lock);
	}
}

uint32_t adump_host_stream_id(const struct adump_host_stream *hs)
{
	return hs->stream_id;
}
