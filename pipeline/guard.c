/* SPDX-License-Identifier: Apache-2.0 */
/* The disk guard: a dump file starts only if the free space of its filesystem, less what the
 * files in flight still have to write, less its own size, stays at or above a floor (and the
 * session's files stay within its quota). A file that would not is skipped whole, before a
 * byte of it is written, and counted as a loss of cause disk_guard; files already started
 * finish. So dumping alone never fills the disk, and never meets ENOSPC. statvfs() is asked
 * at most every REFRESH_NS; in between, the bytes of files finished since are taken off
 * the cached figure. One log line when skipping starts, one when it stops (once there is
 * half the floor again above it: files finding just enough room as others end do not end
 * the episode). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "common/common.h"
#include "pipeline/loss_int.h"
#include "pipeline/worker_int.h"

#define MODULE "guard"
#define REFRESH_NS 100000000ull         /* statvfs() at most every 100 ms */
#define DEFAULT_FLOOR_BYTES (1ull << 30)
#define DEFAULT_FLOOR_PERCENT 5

struct adump_guard {
	pthread_mutex_t lock;
	char *dir;
	uint64_t min_free;                      /* 0: computed from the filesystem's size */
	bool has_floor;
	uint64_t max_bytes;                     /* 0: no quota */
	uint64_t free_bytes;                    /* at the last refresh */
	uint64_t floor_bytes;
	uint64_t refreshed_ns;
	uint64_t finished_bytes;                /* by files that ended since the refresh */
	uint64_t in_flight_bytes;               /* admitted files not ended yet */
	uint64_t started_bytes;                 /* every admitted file: the quota's count */
	bool is_skipping;                       /* an episode is under way */
	bool is_quota_episode;                  /* ... and the quota started it */
	uint64_t skipped_count;                 /* files skipped in this episode */
};

/* Lock held. */
static int refresh(struct adump_guard *g, uint64_t now)
{
	struct statvfs vfs;

	if (g->refreshed_ns && now - g->refreshed_ns < REFRESH_NS)
		return 0;
	if (statvfs(g->dir, &vfs) < 0)
		return -errno;
	g->free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	g->floor_bytes = g->min_free;
	if (!g->min_free) {
		uint64_t share = (uint64_t)vfs.f_blocks * vfs.f_frsize / 100 * DEFAULT_FLOOR_PERCENT;

		g->floor_bytes = share > DEFAULT_FLOOR_BYTES ? share : DEFAULT_FLOOR_BYTES;
	}
	g->finished_bytes = 0;
	g->refreshed_ns = now;
	return 0;
}

int adump_guard_create(const struct adump_config *cfg, const char *dir, struct adump_guard **out)
{
	struct adump_guard *g;
	int ret;

	*out = NULL;
	if (cfg->sink != ADUMP_SINK_FILE || cfg->content != ADUMP_CONTENT_TENSOR ||
	    (cfg->min_free_bytes == ADUMP_GUARD_OFF && !cfg->max_bytes))
		return 0;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->lock, NULL);
	g->dir = strdup(dir);
	g->has_floor = cfg->min_free_bytes != ADUMP_GUARD_OFF;
	g->min_free = g->has_floor ? cfg->min_free_bytes : 0;
	g->max_bytes = cfg->max_bytes;
	ret = g->dir ? refresh(g, adump_now_ns()) : -ENOMEM;
	if (ret < 0) {
		adump_guard_destroy(g);
		return ret;
	}
	if (g->has_floor)
		adump_log(ADUMP_LOG_INFO, MODULE, "keeping %llu MiB free under %s",
			  (unsigned long long)(g->floor_bytes >> 20), dir);
	*out = g;
	return 0;
}

void adump_guard_destroy(struct adump_guard *g)
{
	if (!g)
		return;
	if (g->is_skipping)
		adump_log(ADUMP_LOG_WARN, MODULE, "%llu files skipped before the session ended",
			  (unsigned long long)g->skipped_count);
	pthread_mutex_destroy(&g->lock);
	free(g->dir);
	free(g);
}

/* Lock held. Return: whether a file of @bytes may start; when not, *why says why. */
static bool fits(struct adump_guard *g, uint64_t bytes, const char **why)
{
	uint64_t used = g->in_flight_bytes + g->finished_bytes + bytes;

	if (g->max_bytes && (g->started_bytes + bytes > g->max_bytes ||
			     g->started_bytes + bytes < bytes)) {
		*why = "the session's quota (max_bytes) is reached";
		return false;
	}
	if (g->has_floor && (g->free_bytes < used || g->free_bytes - used < g->floor_bytes)) {
		*why = "free space would fall below the floor (min_free_bytes)";
		return false;
	}
	return true;
}

int adump_guard_bytes_admit(struct adump_session *s, uint64_t bytes)
{
	struct adump_guard *g = s->guard;
	const char *why = NULL;
	bool is_ok;
	int ret;

	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	ret = refresh(g, adump_now_ns());
	if (ret < 0)
		adump_log_once(ADUMP_LOG_WARN, MODULE, "statvfs %s: %s; using the last figure",
			       g->dir, adump_strerror(ret));
	is_ok = fits(g, bytes, &why);
	if (is_ok) {
		g->in_flight_bytes += bytes;
		g->started_bytes += bytes;
		/* The episode ends once there is room again, not with each file that finds
		 * just enough of it as others end: one line per episode. */
		if (g->is_skipping && !g->is_quota_episode &&
		    g->free_bytes - (g->in_flight_bytes + g->finished_bytes) >=
			    g->floor_bytes + g->floor_bytes / 2) {
			adump_log(ADUMP_LOG_WARN, MODULE, "capture resumed under %s: %llu files skipped",
				  g->dir, (unsigned long long)g->skipped_count);
			g->is_skipping = false;
		}
	} else {
		if (!g->is_skipping) {
			adump_log(ADUMP_LOG_WARN, MODULE,
				  "skipping dump files under %s: %s (%llu MiB free, floor %llu MiB); "
				  "counted as disk_guard losses",
				  g->dir, why, (unsigned long long)(g->free_bytes >> 20),
				  (unsigned long long)(g->floor_bytes >> 20));
			g->is_skipping = true;
			/* A quota does not come back: its episode lasts to the end. */
			g->is_quota_episode = !g->has_floor || strstr(why, "quota") != NULL;
			g->skipped_count = 0;
		}
		g->skipped_count++;
	}
	pthread_mutex_unlock(&g->lock);
	return is_ok ? 0 : -ADUMP_ERR_DISK_GUARD;
}

void adump_guard_bytes_done(struct adump_session *s, uint64_t bytes)
{
	struct adump_guard *g = s->guard;

	if (!g || !bytes)
		return;
	pthread_mutex_lock(&g->lock);
	g->in_flight_bytes -= bytes;
	/* Until the next refresh, its bytes are on the disk but not in the cached figure. */
	g->finished_bytes += bytes;
	pthread_mutex_unlock(&g->lock);
}

int adump_guard_file_admit(struct adump_session *s, struct file_state *fs)
{
	uint64_t bytes = fs->header_len + fs->op->payload_bytes;

	/* LZ4 frames can exceed their content a little: blocks stored whole, and the frame. */
	if (s->cfg.compress == ADUMP_COMPRESS_LZ4)
		bytes += bytes / 256 + 64;
	if (adump_guard_bytes_admit(s, bytes) == 0) {
		fs->guard_bytes = s->guard ? bytes : 0;
		return 0;
	}
	/* adump_file_fail() without its log line: the episode has one of its own. */
	fs->is_failed = true;
	fs->error = -ADUMP_ERR_DISK_GUARD;
	adump_session_set_error(s, -ADUMP_ERR_DISK_GUARD);
	return -ADUMP_ERR_DISK_GUARD;
}

void adump_guard_file_done(struct adump_session *s, struct file_state *fs)
{
	adump_guard_bytes_done(s, fs->guard_bytes);
	fs->guard_bytes = 0;
}
