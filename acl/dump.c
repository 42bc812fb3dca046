/* SPDX-License-Identifier: Apache-2.0 */
/* Data dump through the shim: the chunk callback (acldumpRegCallback), configurable dump
 * (aclmdlInitDump / aclmdlSetDump / aclmdlFinalizeDump) and acldumpGetPath(). All of them
 * end in one native session whose sink and directory follow the config in force. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl_int.h"

#define MOD "acl"
/* Chunks above this are cut so that sizeof(acldumpChunk) + bufLen fits the int32 len. */
#define CALLBACK_PIECE_MAX (1u << 30)

/* Per-thread acldumpChunk buffer, reused across calls; freed when the worker exits. */
static pthread_key_t chunk_key;
static pthread_once_t chunk_key_once = PTHREAD_ONCE_INIT;

struct chunk_buf {
	size_t cap;
	acldumpChunk *chunk;
};

static void chunk_buf_free(void *p)
{
	struct chunk_buf *b = p;

	if (b)
		free(b->chunk);
	free(b);
}

static void chunk_key_create(void)
{
	pthread_key_create(&chunk_key, chunk_buf_free);
}

static acldumpChunk *chunk_buf_get(size_t data_len)
{
	struct chunk_buf *b;
	size_t need = sizeof(acldumpChunk) + data_len;

	pthread_once(&chunk_key_once, chunk_key_create);
	b = pthread_getspecific(chunk_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || pthread_setspecific(chunk_key, b) != 0) {
			free(b);
			return NULL;
		}
	}
	if (b->cap < need) {
		acldumpChunk *c = realloc(b->chunk, need);

		if (!c)
			return NULL;
		b->chunk = c;
		b->cap = need;
	}
	return b->chunk;
}

/* Native chunk -> acldumpChunk; runs on worker threads. */
int adump_acl_chunk_to_callback(const struct adump_chunk *chunk, void *user)
{
	struct adump_acl_state *st = user;
	adump_acl_callback_fn cb = atomic_load_explicit(&st->callback, memory_order_acquire);
	const uint8_t *data = chunk->data;
	size_t left = chunk->len, done = 0;
	int first_ret = 0;

	if (!cb)
		return 0;
	do {
		uint32_t piece = left > CALLBACK_PIECE_MAX ? CALLBACK_PIECE_MAX : (uint32_t)left;
		acldumpChunk *c = chunk_buf_get(piece);
		int32_t ret;

		if (!c) {
			adump_log_once(ADUMP_LOG_ERROR, MOD, "dump callback: no memory for a chunk");
			return -ENOMEM;
		}
		if (snprintf(c->fileName, sizeof(c->fileName), "%s", chunk->file_name) >=
		    (int)sizeof(c->fileName))
			adump_log_once(ADUMP_LOG_WARN, MOD, "dump callback: file name truncated");
		c->bufLen = piece;
		c->isLastChunk = chunk->is_last && piece == left ? 1 : 0;
		/* Native chunks carry absolute offsets, a valid value of this field. */
		c->offset = (int64_t)(chunk->offset + done);
		c->flag = 0;
		if (piece)
			memcpy(c->dataBuf, data + done, piece);
		/* CANN's host writer passes sizeof(chunk) + bufLen; its doc only says "length of
		 * the acldumpChunk". The exact contract is UNVERIFIED; we follow the code. */
		ret = cb(c, (int32_t)(sizeof(acldumpChunk) + piece));
		if (ret != 0) {
			atomic_fetch_add_explicit(&st->callback_errors, 1, memory_order_relaxed);
			adump_log_once(ADUMP_LOG_WARN, MOD, "dump callback returned %d (logged once)", ret);
			if (!first_ret)
				first_ret = -ADUMP_ERR_CALLBACK;
		}
		done += piece;
		left -= piece;
	} while (left);
	return first_ret;
}

static void set_data_dir(struct adump_acl_state *st, const char *dir)
{
	pthread_mutex_lock(&st->path_lock);
	snprintf(st->data_dir, sizeof(st->data_dir), "%s", dir ? dir : "");
	pthread_mutex_unlock(&st->path_lock);
}

int adump_acl_session_stop_locked(struct adump_acl_state *st)
{
	struct adump_session *session = st->session;
	int ret;

	if (!session)
		return 0;
	/* The stream list changes only under ctl_lock, which the caller holds. */
	for (struct adump_acl_stream *s = st->streams; s; s = s->next) {
		if (!s->is_attached)
			continue;
		/* New launches stop asking for dumps; those that did have left the device call. */
		pthread_mutex_lock(&st->lock);
		s->is_attached = false;
		while (s->dump_users)
			pthread_cond_wait(&st->stream_idle, &st->lock);
		pthread_mutex_unlock(&st->lock);
		/* Ops already queued still dump: wait for them before detaching. */
		adump_dev_stream_sync(s->dev_stream);
		adump_session_detach(session, s->dev_stream);
	}
	pthread_mutex_lock(&st->lock);
	st->session = NULL;
	pthread_mutex_unlock(&st->lock);
	ret = adump_session_destroy(session);
	set_data_dir(st, NULL);
	return ret;
}

int adump_acl_stream_attach_locked(struct adump_acl_state *st, struct adump_acl_stream *s)
{
	int ret;

	if (!st->session || s->is_attached)
		return 0;
	ret = adump_session_attach(st->session, s->dev_stream);
	if (ret == 0) {
		pthread_mutex_lock(&st->lock);
		s->is_attached = true;
		pthread_mutex_unlock(&st->lock);
	}
	return ret;
}

static enum adump_writer_kind writer_from_env(void)
{
	const char *io = getenv("ADUMP_IO");

	if (!io || !*io || !strcmp(io, "auto"))
		return ADUMP_WRITER_AUTO;
	if (!strcmp(io, "pwrite"))
		return ADUMP_WRITER_PWRITE;
	if (!strcmp(io, "uring"))
		return ADUMP_WRITER_URING;
	adump_log_once(ADUMP_LOG_WARN, MOD, "ADUMP_IO=%s unknown; using auto", io);
	return ADUMP_WRITER_AUTO;
}

/* The disk guard of the CANN path: ADUMP_MIN_FREE (a size; 0 turns the floor off) and
 * ADUMP_MAX_BYTES (a quota per dump session). Unset or invalid: the library's defaults. */
static void guard_from_env(struct adump_config *cfg)
{
	static const char *const names[] = { "ADUMP_MIN_FREE", "ADUMP_MAX_BYTES" };
	uint64_t *fields[] = { &cfg->min_free_bytes, &cfg->max_bytes };

	for (int i = 0; i < 2; i++) {
		const char *v = getenv(names[i]);
		uint64_t n;

		if (!v || !*v)
			continue;
		if (adump_size_parse(v, &n) < 0) {
			adump_log_once(ADUMP_LOG_WARN, MOD, "%s=%s is not a size (512, 4K, 2M, 1G); "
				       "ignored", names[i], v);
			continue;
		}
		*fields[i] = i == 0 && n == 0 ? ADUMP_GUARD_OFF : n;
	}
}

/* ADUMP_IO_MODE=auto|buffered|direct: how dump files reach the disk (acl.json has no key
 * for it). Unset or empty: auto. */
static enum adump_io io_from_env(void)
{
	const char *mode = getenv("ADUMP_IO_MODE");

	if (!mode || !*mode || !strcmp(mode, "auto"))
		return ADUMP_IO_AUTO;
	if (!strcmp(mode, "buffered"))
		return ADUMP_IO_BUFFERED;
	if (!strcmp(mode, "direct"))
		return ADUMP_IO_DIRECT;
	adump_log_once(ADUMP_LOG_WARN, MOD, "ADUMP_IO_MODE=%s unknown (auto, buffered or direct); "
		       "using auto", mode);
	return ADUMP_IO_AUTO;
}

/* <YYYYMMDDhhmmss>, local time of the moment a config is applied (reference §2.5.2; CANN's
 * code stamps it per config call, its doc says "time of writing": UNVERIFIED, we follow
 * the code). */
static void stamp_time_dir(struct adump_acl_state *st)
{
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(st->time_dir, sizeof(st->time_dir), "%Y%m%d%H%M%S", &tm);
}

int adump_acl_session_apply_locked(struct adump_acl_state *st)
{
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	const struct adump_acl_cfg *c = st->active;
	struct adump_session *session;
	int ret, first = 0;

	ret = adump_acl_session_stop_locked(st);
	if (ret < 0)
		adump_log(ADUMP_LOG_WARN, MOD, "previous dump session: %s", adump_strerror(ret));
	if (!adump_acl_cfg_is_data_dump(c))
		return 0;
	/* A new config gets a new time directory; a callback switch keeps the current one. */
	if (!st->time_dir[0])
		stamp_time_dir(st);
	cfg.dump_path = c->dump_path;
	cfg.time_dir = st->time_dir;
	cfg.writer = writer_from_env();
	guard_from_env(&cfg);
	cfg.io = io_from_env();
	cfg.sink = atomic_load_explicit(&st->callback, memory_order_relaxed) ? ADUMP_SINK_CALLBACK
									     : ADUMP_SINK_FILE;
	cfg.chunk_fn = adump_acl_chunk_to_callback;
	cfg.chunk_user = st;
	/* dump_data stats: the workers compute the CSV of reference §2.4 while the chunks
	 * stream through (pipeline/stats.h) instead of writing tensor bytes; with a callback
	 * the CSV text is delivered as one chunk named <file>.csv. */
	if (c->is_stats) {
		cfg.content = ADUMP_CONTENT_STATS;
		cfg.stats_mask = c->stats_mask;
	}
	/* O_DIRECT applies to tensor files only; a callback or statistics get the default. */
	if (cfg.io == ADUMP_IO_DIRECT && (cfg.sink != ADUMP_SINK_FILE || c->is_stats))
		cfg.io = ADUMP_IO_AUTO;
	ret = adump_session_create(&cfg, &session);
	if (ret < 0) {
		adump_log(ADUMP_LOG_ERROR, MOD, "dump session: %s", adump_strerror(ret));
		return ret;
	}
	pthread_mutex_lock(&st->lock);
	st->session = session;
	pthread_mutex_unlock(&st->lock);
	set_data_dir(st, adump_session_dir(session));
	for (struct adump_acl_stream *s = st->streams; s; s = s->next) {
		ret = adump_acl_stream_attach_locked(st, s);
		if (ret < 0 && !first)
			first = ret;
	}
	if (first < 0)
		adump_log(ADUMP_LOG_WARN, MOD, "a stream could not be captured: %s",
			  adump_strerror(first));
	return 0;
}

int adump_acl_session_start_locked(struct adump_acl_state *st, struct adump_acl_cfg *cfg)
{
	int ret;

	pthread_mutex_lock(&st->lock);
	st->active = cfg;
	pthread_mutex_unlock(&st->lock);
	st->time_dir[0] = '\0';
	ret = adump_acl_session_apply_locked(st);
	if (ret < 0) {
		pthread_mutex_lock(&st->lock);
		st->active = NULL;
		pthread_mutex_unlock(&st->lock);
		adump_acl_cfg_fini(cfg);
	}
	return ret;
}

uint32_t adump_acl_dump_mask_locked(struct adump_acl_state *st, const char *op_type,
				    const char *op_name)
{
	if (!st->session || !st->active)
		return 0;
	return adump_acl_cfg_select(st->active, op_type, op_name,
				    atomic_load_explicit(&st->step, memory_order_relaxed), 2, 1);
}

aclError acldumpRegCallback(int32_t (*const messageCallback)(const acldumpChunk *, int32_t),
			    int32_t flag)
{
	struct adump_acl_state *st = adump_acl_state();
	int ret = 0;

	if (!messageCallback) {
		adump_log(ADUMP_LOG_ERROR, MOD,
			  "acldumpRegCallback failed because messageCallback cannot be a NULL pointer");
		return ACL_ERROR_FAILURE;
	}
	if (flag != 0) {
		adump_log(ADUMP_LOG_ERROR, MOD,
			  "acldumpRegCallback failed: flag %d is not supported, only 0", flag);
		return ACL_ERROR_FAILURE;
	}
	pthread_mutex_lock(&st->ctl_lock);
	adump_acl_callback_fn old = atomic_exchange_explicit(&st->callback, messageCallback,
							     memory_order_acq_rel);
	/* Switch a running file-sink session to the callback (from here on, no files). */
	if (!old && st->session)
		ret = adump_acl_session_apply_locked(st);
	pthread_mutex_unlock(&st->ctl_lock);
	return ret < 0 ? ACL_ERROR_FAILURE : ACL_SUCCESS;
}

void acldumpUnregCallback(void)
{
	struct adump_acl_state *st = adump_acl_state();

	pthread_mutex_lock(&st->ctl_lock);
	/* Flush what the callback still owes first, then go back to files. */
	if (st->session) {
		adump_acl_session_stop_locked(st);
		atomic_store_explicit(&st->callback, NULL, memory_order_release);
		adump_acl_session_apply_locked(st);
	} else {
		atomic_store_explicit(&st->callback, NULL, memory_order_release);
	}
	pthread_mutex_unlock(&st->ctl_lock);
}

aclError aclmdlInitDump(void)
{
	struct adump_acl_state *st = adump_acl_state();
	aclError ret = ACL_SUCCESS;

	pthread_mutex_lock(&st->ctl_lock);
	if (!st->is_inited)
		ret = ACL_ERROR_UNINITIALIZE;
	else if (st->is_mdl_inited)
		ret = ACL_ERROR_REPEAT_INITIALIZE;
	else if (adump_acl_cfg_is_data_dump(&st->init_cfg))
		/* Documented (CANN doc18, aclError list); the CANN source never returns it:
		 * UNVERIFIED enforcement, we follow the documentation. */
		ret = ACL_ERROR_DUMP_ALREADY_RUN;
	else
		st->is_mdl_inited = true;
	pthread_mutex_unlock(&st->ctl_lock);
	return ret;
}

aclError aclmdlSetDump(const char *dumpCfgPath)
{
	struct adump_acl_state *st = adump_acl_state();
	struct adump_acl_cfg cfg;
	int ret;

	pthread_mutex_lock(&st->ctl_lock);
	if (!st->is_inited) {
		pthread_mutex_unlock(&st->ctl_lock);
		return ACL_ERROR_UNINITIALIZE;
	}
	if (!st->is_mdl_inited) {
		pthread_mutex_unlock(&st->ctl_lock);
		return ACL_ERROR_DUMP_NOT_RUN;
	}
	if (!dumpCfgPath) {
		pthread_mutex_unlock(&st->ctl_lock);
		return ACL_ERROR_INVALID_PARAM;
	}
	ret = adump_acl_cfg_load(dumpCfgPath, &cfg);
	if (ret < 0) {
		pthread_mutex_unlock(&st->ctl_lock);
		return adump_acl_err_from(ret);
	}
	/* An empty file or an empty "dump" object configures nothing and succeeds. */
	if (!cfg.has_dump) {
		pthread_mutex_unlock(&st->ctl_lock);
		return ACL_SUCCESS;
	}
	/* An exception scene turns exception dump on; a second attempt is ignored with a
	 * warning, as CANN's IsRepeatEnableException does. */
	if (adump_acl_cfg_is_exception(&cfg)) {
		if (atomic_load_explicit(&st->is_exception, memory_order_relaxed))
			adump_log(ADUMP_LOG_WARN, MOD, "exception dump is already enabled; %s ignored",
				  dumpCfgPath);
		else
			adump_acl_exception_setup_locked(st, &cfg);
	}
	/* The last SetDump wins: stop the old session (flushing it) and start the new one. */
	adump_acl_session_stop_locked(st);
	adump_acl_cfg_fini(&st->mdl_cfg);
	st->mdl_cfg = cfg;
	ret = adump_acl_session_start_locked(st, &st->mdl_cfg);
	pthread_mutex_unlock(&st->ctl_lock);
	if (ret == -ADUMP_ERR_CONFIG)
		return ACL_ERROR_INVALID_DUMP_CONFIG;
	return ret < 0 ? ACL_ERROR_INTERNAL_ERROR : ACL_SUCCESS;
}

aclError aclmdlFinalizeDump(void)
{
	struct adump_acl_state *st = adump_acl_state();
	int ret;

	pthread_mutex_lock(&st->ctl_lock);
	if (!st->is_inited) {
		pthread_mutex_unlock(&st->ctl_lock);
		return ACL_ERROR_UNINITIALIZE;
	}
	if (!st->is_mdl_inited) {
		pthread_mutex_unlock(&st->ctl_lock);
		return ACL_ERROR_DUMP_NOT_RUN;
	}
	ret = 0;
	if (st->active == &st->mdl_cfg) {
		ret = adump_acl_session_stop_locked(st);
		pthread_mutex_lock(&st->lock);
		st->active = NULL;
		pthread_mutex_unlock(&st->lock);
	}
	adump_acl_cfg_fini(&st->mdl_cfg);
	st->is_mdl_inited = false;
	pthread_mutex_unlock(&st->ctl_lock);
	if (ret < 0)
		adump_log(ADUMP_LOG_WARN, MOD, "aclmdlFinalizeDump: flush: %s", adump_strerror(ret));
	return ACL_SUCCESS;
}

const char *acldumpGetPath(acldumpType dumpType)
{
	struct adump_acl_state *st = adump_acl_state();
	const char *ret = NULL;

	switch (dumpType) {
	case AIC_ERR_BRIEF_DUMP:
	case AIC_ERR_NORM_DUMP:
	case AIC_ERR_DETAIL_DUMP: {
		pthread_mutex_lock(&st->path_lock);
		/* No device id in this one (reference §1.4). */
		if (snprintf(st->exc_dir, sizeof(st->exc_dir), "%s/extra-info/data-dump/",
			     st->exc_base[0] ? st->exc_base : ".") <
		    (int)sizeof(st->exc_dir) && adump_mkdir_p(st->exc_dir, 0750) == 0)
			ret = st->exc_dir;
		pthread_mutex_unlock(&st->path_lock);
		return ret;
	}
	case DATA_DUMP:
	case OVERFLOW_DUMP:
		pthread_mutex_lock(&st->path_lock);
		ret = st->data_dir[0] ? st->data_dir : NULL;
		pthread_mutex_unlock(&st->path_lock);
		return ret;
	default:
		return NULL;
	}
}
