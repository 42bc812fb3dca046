/* SPDX-License-Identifier: Apache-2.0 */
/* The capture session: made from a checked configuration (config.c), the staging pool and
 * its per-stream shares, stream attach/detach, flush and stats. The workers themselves live
 * in worker.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "pipeline/journal_int.h"
#include "pipeline/producer.h"
#include "pipeline/loss_int.h"
#include "pipeline/window_int.h"
#include "pipeline/worker_int.h"

#define MODULE "session"
/* Times make_journal() makes the session's directory again after another process removed it:
 * each rank writing a window removes its shared directory once. */
#define DIR_TRIES 64

static char *absolute_path(const char *path)
{
	char cwd[PATH_MAX], *out;

	if (!path || !path[0])
		path = ".";
	if (path[0] == '/')
		return strdup(path);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	if (!strcmp(path, "."))
		return strdup(cwd);
	if (asprintf(&out, "%s/%s", cwd, path) < 0)
		return NULL;
	return out;
}

void adump_session_set_error(struct adump_session *s, int err)
{
	int expected = 0;

	atomic_compare_exchange_strong_explicit(&s->first_error, &expected, err,
						memory_order_relaxed, memory_order_relaxed);
}

/* The staging pool made resident now, whatever the writer. io_uring's buffer registration
 * faults every page in at the first worker's start; the pwrite writer registers nothing, so
 * without this its pages became resident one by one as ever larger records first reached
 * them: host RSS climbed through a capture by up to the pool's size (the soak: 398 to 592
 * MiB over four quarters, where io_uring held 591 from the start), and each first touch
 * was a page fault in the producer's copy, on the training thread. Best effort: a pool the
 * kernel will not populate (before Linux 5.14, or no memory now) still works, faulted in
 * as it is used, as before. */
static void pool_populate(void *pool, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
	(void)madvise(pool, bytes, MADV_POPULATE_WRITE);
#else
	(void)pool;
	(void)bytes;
#endif
}

static int decide_backend(struct adump_session *s)
{
	int ret;

	if (s->cfg.writer == ADUMP_WRITER_PWRITE) {
		s->backend = ADUMP_WRITER_PWRITE;
		s->backend_reason = ADUMP_WRITER_REASON_CONFIGURED;
		adump_log(ADUMP_LOG_INFO, "iouring", "writer: pwrite (requested)");
		return 0;
	}
	ret = adump_writer_probe_uring();
	if (ret == 0) {
		s->backend = ADUMP_WRITER_URING;
		s->backend_reason = s->cfg.writer == ADUMP_WRITER_URING ? ADUMP_WRITER_REASON_CONFIGURED :
									 ADUMP_WRITER_REASON_AUTO;
		adump_log(ADUMP_LOG_INFO, "iouring", "writer: io_uring");
		return 0;
	}
	if (s->cfg.writer == ADUMP_WRITER_URING) {
		adump_log(ADUMP_LOG_ERROR, "iouring", "io_uring requested but setup failed: %s",
			  adump_strerror(ret));
		return ret;
	}
	s->backend = ADUMP_WRITER_PWRITE;
	s->backend_reason = ADUMP_WRITER_REASON_REFUSED;
	s->backend_error = ret;
	adump_log(ADUMP_LOG_WARN, "iouring", "io_uring unavailable (%s): writing with pwrite",
		  adump_strerror(ret));
	return 0;
}

/* The session's own directory. A folder named by the time must be the session's own: a link
 * planted at that name in a shared dump path is refused. A time_dir the caller names
 * (@is_named) is the caller's choice. */
static int make_dir(struct adump_session *s, bool is_named)
{
	int ret = is_named ? adump_mkdir_p(s->dir, 0750) : adump_mkdir_own(s->dir, 0750);

	if (ret < 0)
		adump_log(ADUMP_LOG_ERROR, MODULE, "cannot create %s: %s", s->dir,
			  adump_strerror(ret));
	return ret;
}

/* The journal goes into the session's directory before anything else does: from then on the
 * directory is not empty, so a process of the same job that removes it when empty (a window's
 * own directory, shared by the ranks that write into one window root) cannot take it from
 * under this session. Until then it can: the directory is made again. */
static int make_journal(struct adump_session *s, bool is_named)
{
	for (unsigned tries = 0;; tries++) {
		int ret = adump_journal_create(s, &s->journal);

		if (ret != -ENOENT)
			return ret;
		if (tries == DIR_TRIES) {
			adump_log(ADUMP_LOG_ERROR, MODULE, "%s was removed %u times while the "
				  "session was made in it", s->dir, tries + 1);
			return ret;
		}
		ret = make_dir(s, is_named);
		if (ret < 0)
			return ret;
	}
}

/* The files a session may hold open while it has writes in flight: half the descriptors
 * free when it starts (RLIMIT_NOFILE less those open), the rest left to the program and to
 * the session's own (io_uring, directories, journals); at least ADUMP_FD_BUDGET_MIN. A file
 * in flight holds one until its last write is done, and a worker that started files as fast
 * as small dumps arrive would otherwise meet EMFILE and lose them. */
static uint32_t fd_budget(void)
{
	struct rlimit rl;
	uint64_t used = 0, free_fds;
	DIR *d;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= UINT32_MAX)
		return UINT32_MAX;
	d = opendir("/proc/self/fd");
	if (d) {
		while (readdir(d))
			used++;
		closedir(d);
		used = used > 3 ? used - 3 : 0;         /* ".", ".." and the directory's own */
	}
	free_fds = rl.rlim_cur > used ? rl.rlim_cur - used : 0;
	return free_fds / 2 > ADUMP_FD_BUDGET_MIN ? (uint32_t)(free_fds / 2) : ADUMP_FD_BUDGET_MIN;
}

int adump_session_create(const struct adump_config *cfg, struct adump_session **out)
{
	struct adump_session *s;
	char stamp[32];
	int ret;

	ret = adump_config_check(cfg);
	if (ret < 0)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->root_fd = -1;
	s->fd_budget = fd_budget();
	s->cfg = *cfg;
	/* Window mode writes statistics; its windows are written as tensors (window.c). */
	if (cfg->window_steps)
		s->cfg.content = ADUMP_CONTENT_STATS;
	s->out = adump_output_select(&s->cfg);
	s->cfg.bounds = NULL;
	s->cfg.dump_path = NULL;
	s->cfg.time_dir = NULL;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->journal_spare_lock, NULL);
	s->chunk_bytes = cfg_chunk(cfg);
	s->buffer_count = (uint32_t)(cfg_pool(cfg) / s->chunk_bytes);
	s->pool_bytes = (size_t)s->buffer_count * s->chunk_bytes;
	s->buffers_per_stream = s->buffer_count / cfg_stream_max(cfg);
	s->cfg.stream_max = cfg_stream_max(cfg);
	s->direct_min_bytes = cfg->direct_min_bytes ? cfg->direct_min_bytes :
			      ADUMP_DEFAULT_DIRECT_MIN_BYTES;
	s->is_auto_direct = cfg->io == ADUMP_IO_AUTO && is_direct_capable(cfg, s->chunk_bytes);
	s->worker_target = cfg->worker_count ? cfg->worker_count : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	if (s->worker_target == 0)
		s->worker_target = 1;
	if (s->worker_target > ADUMP_WORKER_MAX)
		s->worker_target = ADUMP_WORKER_MAX;

	ret = -ENOMEM;
	s->dump_path = absolute_path(cfg->dump_path);
	if (!s->dump_path)
		goto err;
	if (cfg->time_dir) {
		snprintf(stamp, sizeof(stamp), "%s", cfg->time_dir);
	} else {
		time_t now = time(NULL);
		struct tm tm;

		localtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
	}
	if (asprintf(&s->dir, "%s/%s", s->dump_path, stamp) < 0) {
		s->dir = NULL;
		goto err;
	}
	if (cfg->sink == ADUMP_SINK_FILE) {
		ret = make_dir(s, cfg->time_dir != NULL);
		if (ret == 0)
			ret = make_journal(s, cfg->time_dir != NULL);
		/* The files below dump_path are made from here, through no link
		 * (adump_session_pubfile_open()). */
		if (ret == 0) {
			s->root_fd = open(s->dump_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
			ret = s->root_fd < 0 ? -errno : 0;
		}
		if (ret < 0)
			goto err;
	}
	s->pool = mmap(NULL, s->pool_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (s->pool == MAP_FAILED) {
		s->pool = NULL;
		ret = -errno;
		goto err;
	}
	pool_populate(s->pool, s->pool_bytes);
	ret = -ENOMEM;
	s->pool_iov = calloc(s->buffer_count, sizeof(*s->pool_iov));
	s->writes = calloc(s->buffer_count, sizeof(*s->writes));
	if (!s->pool_iov || !s->writes)
		goto err;
	for (uint32_t i = 0; i < s->buffer_count; i++) {
		s->pool_iov[i].iov_base = (char *)s->pool + (size_t)i * s->chunk_bytes;
		s->pool_iov[i].iov_len = s->chunk_bytes;
	}
	ret = decide_backend(s);
	if (ret == 0 && s->out->session_init)
		ret = s->out->session_init(s);
	if (ret == 0)
		ret = adump_loss_create(cfg->sink == ADUMP_SINK_FILE ? s->dir : NULL, &s->loss);
	if (ret == 0)
		ret = adump_guard_create(&s->cfg, s->dir, &s->guard);
	if (ret == 0 && cfg->window_steps)
		ret = adump_window_create(s, cfg, &s->window);
	if (ret < 0)
		goto err;
	*out = s;
	return 0;
err:
	adump_window_destroy(s->window);
	if (s->out_session && s->out->session_fini)
		s->out->session_fini(s);
	adump_journal_spares_free(s);
	adump_journal_destroy(s->journal);
	adump_guard_destroy(s->guard);
	adump_loss_destroy(s->loss);
	free(s->pool_iov);
	free(s->writes);
	if (s->pool)
		munmap(s->pool, s->pool_bytes);
	if (s->root_fd >= 0)
		close(s->root_fd);
	free(s->dir);
	free(s->dump_path);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->journal_spare_lock);
	free(s);
	return ret;
}

/* Session lock held. Starts a worker while fewer than the target run (so never more
 * workers than streams), otherwise picks the one with the fewest channels. */
static int pick_worker(struct adump_session *s, unsigned *out)
{
	unsigned best = 0;
	int ret;

	if (s->worker_count < s->worker_target) {
		ret = adump_worker_start(s, &s->workers[s->worker_count], s->worker_count);
		if (ret == 0) {
			*out = s->worker_count++;
			return 0;
		}
		if (s->worker_count == 0)
			return ret;
		adump_log(ADUMP_LOG_WARN, MODULE, "starting worker %u failed: %s; sharing workers",
			  s->worker_count, adump_strerror(ret));
	}
	for (unsigned i = 1; i < s->worker_count; i++)
		if (s->workers[i].chan_count < s->workers[best].chan_count)
			best = i;
	*out = best;
	return 0;
}

/* Writes one byte per page of a stream's pool share, so that its first dumps do not pay for
 * making the pages resident: on this project's reference guest that costs ~28 µs a page, 7 ms
 * per MiB, several times the copy itself (bench/RESULTS.md). Done once per slot and session. */
static void share_touch(struct adump_session *s, struct stream_slot *slot, void *mem)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = (size_t)s->buffers_per_stream * s->chunk_bytes;

	if (slot->is_share_touched)
		return;
	for (size_t off = 0; off < bytes; off += page)
		((volatile char *)mem)[off] = 0;
	slot->is_share_touched = true;
}

static int dev_quiesce(void *producer)
{
	return adump_dev_stream_sync(producer);
}

static void dev_bind(void *producer, struct adump_port *port)
{
	adump_dev_stream_bind(producer, port);
}

static const struct adump_producer_ops dev_ops = { .quiesce = dev_quiesce, .bind = dev_bind };

int adump_session_attach(struct adump_session *s, struct adump_dev_stream *stream)
{
	if (!s || !stream)
		return -EINVAL;
	if (adump_dev_stream_port(stream))
		return -ADUMP_ERR_STATE;
	return adump_session_attach_producer(s, stream, adump_dev_stream_id(stream), &dev_ops);
}

int adump_session_attach_producer(struct adump_session *s, void *producer, uint32_t stream_id,
				  const struct adump_producer_ops *ops)
{
	struct adump_port_cfg pcfg;
	struct adump_port *port;
	struct adump_chan *chan;
	unsigned slot = ADUMP_STREAM_MAX_LIMIT, worker = 0;
	int ret;

	if (!s || !producer || !ops)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < s->cfg.stream_max; i++) {
		if (s->slots[i].is_used && s->slots[i].producer == producer) {
			ret = -ADUMP_ERR_STATE;
			goto out;
		}
		if (!s->slots[i].is_used && slot == ADUMP_STREAM_MAX_LIMIT)
			slot = i;
	}
	if (slot == ADUMP_STREAM_MAX_LIMIT) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "attach: %u streams attached already (stream_max)",
			  s->cfg.stream_max);
		ret = -ADUMP_ERR_TOO_BIG;
		goto out;
	}
	pcfg = (struct adump_port_cfg){ .on_full = s->cfg.on_full };
	pcfg.journal = adump_journal_slots(s->journal, slot, &pcfg.journal_count,
					   &pcfg.journal_used);
	pcfg.chan = (struct adump_chan_cfg){
		.stream_id = stream_id,
		.buffer_count = s->buffers_per_stream,
		.buffer_bytes = s->chunk_bytes,
		.buffer_mem = (char *)s->pool + (size_t)slot * s->buffers_per_stream * s->chunk_bytes,
		.first_index = slot * s->buffers_per_stream,
		.align = s->cfg.io == ADUMP_IO_DIRECT || s->is_auto_direct ? ADUMP_DIRECT_ALIGN : 0,
	};
	ret = adump_port_create(&pcfg, &port);
	if (ret < 0)
		goto out;
	ret = pick_worker(s, &worker);
	if (ret < 0) {
		adump_port_destroy(port);
		goto out;
	}
	chan = adump_port_chan(port);
	struct adump_worker *w = &s->workers[worker];
	adump_port_set_doorbell(port, &w->doorbell);
	for (unsigned i = 0; i < ADUMP_STREAM_MAX_LIMIT; i++) {
		if (!atomic_load_explicit(&w->chans[i], memory_order_relaxed)) {
			/* Pairs with the worker's acquire load: the channel is initialised. */
			atomic_store_explicit(&w->chans[i], chan, memory_order_release);
			break;
		}
	}
	w->chan_count++;
	share_touch(s, &s->slots[slot], pcfg.chan.buffer_mem);
	s->slots[slot] = (struct stream_slot){ .producer = producer, .ops = ops, .port = port,
					       .worker = worker, .is_used = true,
					       .is_share_touched = true };
	ops->bind(producer, port);
out:
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* Session lock held. The channel is idle and unbound: take it from its worker, and wait
 * until the worker can no longer be looking at it. */
static void slot_release(struct adump_session *s, struct stream_slot *slot)
{
	struct adump_worker *w = &s->workers[slot->worker];
	struct adump_stream_stats st;

	for (unsigned i = 0; i < ADUMP_STREAM_MAX_LIMIT; i++)
		if (atomic_load_explicit(&w->chans[i], memory_order_relaxed) == adump_port_chan(slot->port))
			atomic_store_explicit(&w->chans[i], NULL, memory_order_relaxed);
	w->chan_count--;
	/* The worker reads its channel pointers afresh each loop. Once it has acknowledged
	 * this request at the top of a loop, it holds no pointer from before and sees the
	 * NULL from then on (release here, acquire there); waking it if it sleeps. */
	uint64_t seq = atomic_fetch_add_explicit(&w->detach_seq, 1, memory_order_release) + 1;
	while (w->is_started && atomic_load_explicit(&w->detach_ack, memory_order_acquire) < seq) {
		adump_doorbell_wake(&w->doorbell);
		usleep(50);
	}
	adump_port_stats(slot->port, &st);
	atomic_fetch_add_explicit(&s->detached_drops, st.drops, memory_order_relaxed);
	adump_loss_stream_detached(s->loss, &st);
	atomic_fetch_add_explicit(&s->detached_wait_count, st.producer_wait_count, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->detached_wait_ns, st.producer_wait_ns, memory_order_relaxed);
	adump_port_destroy(slot->port);
	/* Idle: each of its dumps finished, so nothing is pending in its own journal. */
	adump_journal_destroy(slot->dir_journal);
	*slot = (struct stream_slot){ .is_share_touched = slot->is_share_touched };
}

int adump_session_detach(struct adump_session *s, struct adump_dev_stream *stream)
{
	return adump_session_detach_producer(s, stream);
}

int adump_session_detach_producer(struct adump_session *s, void *producer)
{
	struct stream_slot *slot = NULL;

	if (!s || !producer)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < s->cfg.stream_max; i++)
		if (s->slots[i].is_used && s->slots[i].producer == producer)
			slot = &s->slots[i];
	if (!slot || slot->is_detaching) {
		pthread_mutex_unlock(&s->lock);
		return slot ? -ADUMP_ERR_STATE : -ADUMP_ERR_NOT_FOUND;
	}
	slot->is_detaching = true;
	pthread_mutex_unlock(&s->lock);

	/* The waits run without the session lock: a dump callback may call adump_stats_get()
	 * meanwhile. Nothing the stream launched may still be copying into the channel. */
	slot->ops->quiesce(producer);
	slot->ops->bind(producer, NULL);
	adump_port_wait_idle(slot->port);

	pthread_mutex_lock(&s->lock);
	slot_release(s, slot);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int adump_session_flush(struct adump_session *s)
{
	struct adump_port *ports[ADUMP_STREAM_MAX_LIMIT];
	unsigned count = 0;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < s->cfg.stream_max; i++)
		if (s->slots[i].is_used)
			ports[count++] = s->slots[i].port;
	pthread_mutex_unlock(&s->lock);
	/* Outside the lock, like detach; the contract keeps detach of these streams away. */
	for (unsigned i = 0; i < count; i++)
		adump_port_wait_idle(ports[i]);
	/* Everything written so far is complete: the output closes its directories. */
	adump_session_dir_done(s, NULL);
	return adump_session_error(s);
}

int adump_session_destroy(struct adump_session *s)
{
	int ret, window_ret;

	if (!s)
		return 0;
	for (unsigned i = 0; i < s->cfg.stream_max; i++)
		if (s->slots[i].is_used)
			adump_session_detach_producer(s, s->slots[i].producer);
	/* Every dump is written: the statistics' directories are closed (msprobe's dump.json
	 * on disk before a window, which takes long, is written), then a trigger of the last
	 * step is persisted. */
	adump_session_dir_done(s, NULL);
	window_ret = s->window ? adump_window_finish(s->window) : 0;
	for (unsigned i = 0; i < s->worker_count; i++)
		adump_worker_stop(&s->workers[i]);
	if (s->out->session_fini)
		s->out->session_fini(s);
	adump_window_destroy(s->window);
	ret = adump_session_error(s);
	if (ret == 0)
		ret = window_ret;
	/* Every file is finished: the journal goes (unless something is still pending). */
	adump_journal_spares_free(s);
	adump_journal_destroy(s->journal);
	adump_guard_destroy(s->guard);
	adump_loss_destroy(s->loss);
	munmap(s->pool, s->pool_bytes);
	free(s->pool_iov);
	free(s->writes);
	if (s->root_fd >= 0)
		close(s->root_fd);
	free(s->dir);
	free(s->dump_path);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->journal_spare_lock);
	free(s);
	return ret;
}

int adump_session_step(struct adump_session *s)
{
	int ret, window_ret;

	if (!s)
		return -EINVAL;
	ret = adump_session_flush(s);
	window_ret = s->window ? adump_window_step(s->window) : 0;
	return ret < 0 ? ret : window_ret;
}

int adump_session_error(const struct adump_session *s)
{
	return s ? atomic_load_explicit(&s->first_error, memory_order_relaxed) : -EINVAL;
}

void adump_session_dir_done(struct adump_session *s, const char *dir)
{
	if (s->out->dir_done)
		s->out->dir_done(s, dir);
}

bool adump_session_wants_stats(const struct adump_session *s)
{
	return s->cfg.content == ADUMP_CONTENT_STATS && !s->window && !needs_worker_bytes(&s->cfg);
}

bool adump_session_wants_tensor_stats(const struct adump_session *s)
{
	return s->cfg.content == ADUMP_CONTENT_TENSOR && s->cfg.format == ADUMP_OUTPUT_MSPROBE &&
	       !s->window;
}

int adump_session_producer_move(struct adump_session *s, void *producer,
				struct adump_port *port, const char *from, const char *to)
{
	const char *old_dir = from ? from : s->dir, *new_dir = to ? to : s->dir;
	int ret = 0, jret;

	if (!port)
		return 0;
	ret = adump_port_wait_idle(port);
	/* Its dumps in the old directory are complete: an output that writes one file per
	 * directory (msprobe's dump.json) may write it. */
	if (strcmp(old_dir, new_dir) != 0)
		adump_session_dir_done(s, old_dir);
	/* The hand-over journal follows into the new directory (one of the producer's own
	 * there), so that a dump handed over and lost there is seen as missing. */
	jret = adump_session_producer_dir(s, producer, to);
	return jret < 0 ? jret : ret;
}

int adump_session_producer_dir(struct adump_session *s, void *producer, const char *dir)
{
	struct adump_journal *j = NULL, *old;
	struct adump_journal_slot *slots;
	_Atomic uint32_t *used;
	uint32_t count;
	unsigned i;
	int ret;

	if (!s || !producer)
		return -EINVAL;
	/* The session has a journal exactly when its output is journaled. */
	if (s->journal && dir) {
		ret = adump_journal_create_dir(s, dir, 1, &j);
		if (ret < 0)
			return ret;
	}
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->cfg.stream_max; i++)
		if (s->slots[i].is_used && s->slots[i].producer == producer)
			break;
	if (i == s->cfg.stream_max) {
		pthread_mutex_unlock(&s->lock);
		adump_journal_destroy(j);
		return -ADUMP_ERR_NOT_FOUND;
	}
	old = s->slots[i].dir_journal;
	s->slots[i].dir_journal = j;
	slots = j ? adump_journal_slots(j, 0, &count, &used)
		  : adump_journal_slots(s->journal, i, &count, &used);
	adump_port_journal_set_sp(s->slots[i].port, slots, count, used);
	pthread_mutex_unlock(&s->lock);
	adump_journal_destroy(old);
	return 0;
}

const char *adump_session_below(const struct adump_session *s, const char *path)
{
	size_t n = strlen(s->dump_path);

	while (n && s->dump_path[n - 1] == '/')
		n--;                    /* "/data/dumps/" as "/data/dumps", "/" as "" */
	if (path[0] != '/')
		return path;
	if (strncmp(path, s->dump_path, n) || (path[n] != '/' && path[n]))
		return NULL;
	while (path[n] == '/')
		n++;
	return path + n;
}

void adump_dir_cache_drop(struct adump_dir_cache *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->rel);
	c->rel = NULL;
}

/* The directory of <dump_path>/@rel (a file's path there) opened through no link: a
 * duplicate of @cache's when it holds that directory, else opened from dump_path (and
 * cached, with a cache). Return: the descriptor or -errno. */
static int dir_of_file(struct adump_session *s, struct adump_dir_cache *c, const char *rel)
{
	const char *slash = strrchr(rel, '/');
	size_t len = slash ? (size_t)(slash - rel) : 0;
	char *dir;
	int fd;

	if (!c || c->fd < 0 || strlen(c->rel) != len || strncmp(c->rel, rel, len)) {
		dir = strndup(rel, len);
		if (!dir)
			return -ENOMEM;
		fd = adump_dir_open_nolink(s->root_fd, dir);
		if (fd < 0 || !c) {
			free(dir);
			return fd;
		}
		adump_dir_cache_drop(c);
		c->rel = dir;
		c->fd = fd;
	}
	fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

/* @path's part below dump_path if its file is made through no link, else NULL. */
static const char *nolink_rel(const struct adump_session *s, const char *path)
{
	const char *rel = path[0] == '/' && s->root_fd >= 0 ? adump_session_below(s, path) : NULL;

	return rel && rel[0] ? rel : NULL;
}

static const char *last_component(const char *rel)
{
	const char *slash = strrchr(rel, '/');

	return slash ? slash + 1 : rel;
}

int adump_session_pubfile_open(struct adump_session *s, struct adump_pubfile *pf,
			       const char *path, int flags, unsigned mode,
			       struct adump_dir_cache *cache)
{
	const char *rel = nolink_rel(s, path);
	int fd, ret;

	if (!rel) {
		ret = adump_pubfile_open(pf, path, flags, mode);
		goto out;
	}
	for (bool is_again = false;; is_again = true) {
		fd = dir_of_file(s, cache, rel);
		if (fd < 0) {
			pf->fd = pf->dir_fd = -1;
			return fd;
		}
		ret = adump_pubfile_openat(pf, fd, last_component(rel), flags, mode);
		if (ret != -ENOENT || !cache || is_again)
			break;
		/* The cached directory was removed (and perhaps made again since): once more
		 * from dump_path. */
		adump_dir_cache_drop(cache);
	}
	if (ret == 0 && cache) {
		/* Not held while the file is written (a descriptor a file in flight, not two):
		 * adump_session_pubfile_close() finds the directory again. */
		close(pf->dir_fd);
		pf->dir_fd = -1;
	}
out:
	if (ret == 0)
		atomic_fetch_add_explicit(&s->fds_open, 1, memory_order_relaxed);
	return ret;
}

int adump_session_pubfile_close(struct adump_session *s, struct adump_pubfile *pf,
				const char *path, int status, const char *keep_suffix,
				struct adump_dir_cache *cache)
{
	const char *rel = nolink_rel(s, path);
	int fd;

	if (pf->fd >= 0)
		atomic_fetch_sub_explicit(&s->fds_open, 1, memory_order_relaxed);
	if (rel && pf->fd >= 0 && pf->dir_fd < 0) {
		fd = dir_of_file(s, cache, rel);
		if (fd < 0) {
			/* Its directory is not there any more, or a link stands in its way: the
			 * file is published nowhere. */
			close(pf->fd);
			pf->fd = -1;
			return status < 0 ? status : fd;
		}
		pf->dir_fd = fd;
	}
	return adump_pubfile_close(pf, path, status, keep_suffix);
}

/* Makes <dump_path>/@rel one component at a time from the session's dump_path (a file
 * sink's), none through a link (a link planted in a shared dump path at a step's name is
 * refused, never written through): -ENOTDIR. */
static int mkdir_below(const struct adump_session *s, const char *rel)
{
	int fd = adump_dir_open_new(s->root_fd, rel, 0750);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int adump_session_mkdir(struct adump_session *s, const char *path)
{
	const char *rel = nolink_rel(s, path);

	return rel ? mkdir_below(s, rel) : adump_mkdir_p(path, 0750);
}

int adump_session_write_file(struct adump_session *s, const char *path, const void *data,
			     size_t len, struct adump_dir_cache *cache)
{
	struct adump_pubfile pf;
	int ret = adump_session_pubfile_open(s, &pf, path, 0, ADUMP_FILE_MODE, cache);

	if (ret < 0)
		return ret;
	return adump_session_pubfile_close(s, &pf, path, adump_write_all(pf.fd, data, len), NULL,
					   cache);
}

int adump_session_stream_dir(struct adump_session *s, const char *dir, uint32_t device_id,
			     char **out)
{
	char *abs = NULL, *dev = NULL;
	const char *below, *start = dir;
	int ret;

	if (!dir || !dir[0]) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "stream directory: empty");
		return -EINVAL;
	}
	while (*start == '/')
		start++;
	if (*start && !adump_name_is_beneath(start)) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "stream directory %s: a '..' component; name "
			  "the directory itself", dir);
		return -EINVAL;
	}
	if (s->cfg.layout == ADUMP_LAYOUT_PACKED) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "stream directory %s: the packed layout writes "
			  "its segments under the session directory only", dir);
		return -ADUMP_ERR_UNSUPPORTED;
	}
	if (dir[0] == '/' ? !(abs = strdup(dir)) : asprintf(&abs, "%s/%s", s->dump_path, dir) < 0)
		return -ENOMEM;
	ret = 0;
	if (s->cfg.sink == ADUMP_SINK_FILE) {
		/* msprobe's layout has no device folders (dump_tensor_data is made by its
		 * first tensor). Below dump_path no component is a link; elsewhere the path
		 * is the caller's, as dump_path itself. */
		bool is_msprobe = s->cfg.format == ADUMP_OUTPUT_MSPROBE;
		int n;

		below = adump_session_below(s, abs);
		if (below)
			n = is_msprobe ? asprintf(&dev, "%s", below) :
			    asprintf(&dev, "%s%s%u", below, *below ? "/" : "", device_id);
		else
			n = is_msprobe ? asprintf(&dev, "%s", abs) :
			    asprintf(&dev, "%s/%u", abs, device_id);
		if (n < 0) {
			dev = NULL;
			ret = -ENOMEM;
		} else {
			ret = below ? mkdir_below(s, dev) : adump_mkdir_p(dev, 0750);
			if (ret < 0 && below)
				adump_log(ADUMP_LOG_ERROR, MODULE, "cannot create %s under %s: %s",
					  dev, s->dump_path, ret == -ENOTDIR ? "a component is a "
					  "file or a link, not a directory of its own" :
					  adump_strerror(ret));
			else if (ret < 0)
				adump_log(ADUMP_LOG_ERROR, MODULE, "cannot create %s: %s", dev,
					  adump_strerror(ret));
		}
	}
	free(dev);
	if (ret < 0) {
		free(abs);
		return ret;
	}
	*out = abs;
	return 0;
}

const char *adump_session_dir(const struct adump_session *s)
{
	return s->dir;
}

void adump_stats_get(const struct adump_session *cs, struct adump_stats *out)
{
	struct adump_session *s = (struct adump_session *)cs;

	memset(out, 0, sizeof(*out));
	out->records = atomic_load_explicit(&s->records, memory_order_relaxed);
	out->bytes = atomic_load_explicit(&s->bytes, memory_order_relaxed);
	out->files_completed = atomic_load_explicit(&s->files_completed, memory_order_relaxed);
	out->files_failed = atomic_load_explicit(&s->files_failed, memory_order_relaxed);
	out->write_errors = atomic_load_explicit(&s->write_errors, memory_order_relaxed);
	out->callback_errors = atomic_load_explicit(&s->callback_errors, memory_order_relaxed);
	int64_t in_flight = atomic_load_explicit(&s->writes_in_flight, memory_order_relaxed);
	out->writes_in_flight = in_flight > 0 ? (uint64_t)in_flight : 0;
	out->drops = atomic_load_explicit(&s->detached_drops, memory_order_relaxed);
	out->producer_wait_count = atomic_load_explicit(&s->detached_wait_count, memory_order_relaxed);
	out->producer_wait_ns = atomic_load_explicit(&s->detached_wait_ns, memory_order_relaxed);
	out->backend = s->backend;
	out->backend_reason = s->backend_reason;
	out->backend_error = s->backend_error;
	out->first_error = adump_session_error(s);
	out->files_direct = atomic_load_explicit(&s->files_direct, memory_order_relaxed);
	out->files_buffered = atomic_load_explicit(&s->files_buffered, memory_order_relaxed);
	out->direct_fallbacks = atomic_load_explicit(&s->direct_fallbacks, memory_order_relaxed);
	pthread_mutex_lock(&s->lock);
	out->worker_count = s->worker_count;
	out->writer_threads = s->backend == ADUMP_WRITER_PWRITE ?
			      s->worker_count * ADUMP_PWRITE_THREADS : s->worker_count;
	for (unsigned i = 0; i < s->cfg.stream_max; i++) {
		struct adump_stream_stats *st;

		if (!s->slots[i].is_used)
			continue;
		st = &out->streams[out->stream_count++];
		adump_port_stats(s->slots[i].port, st);
		adump_port_hist_add(s->slots[i].port, out->producer_wait_hist, out->enqueue_hist,
				    &out->producer_wait_max_ns);
		out->drops += st->drops;
		out->producer_wait_count += st->producer_wait_count;
		out->producer_wait_ns += st->producer_wait_ns;
	}
	adump_loss_stats(s->loss, out);
	pthread_mutex_unlock(&s->lock);
}
