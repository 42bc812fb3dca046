/* SPDX-License-Identifier: Apache-2.0 */
/* The session's hand-over journal: made with the session, split into one region of slots
 * per stream slot (each port searches only its own, so a hand-over takes no lock and no
 * atomic read-modify-write), removed at a clean end. A stream writing into a directory of
 * its own has a journal of one region there, and msprobe's dump.json of each directory one
 * with no slots (its count of entries held). What a slot holds and when is
 * common/journal.h's. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/common.h"
#include "common/journal.h"
#include "pipeline/journal_int.h"
#include "pipeline/out_packed_int.h"
#undef MODULE
#include "pipeline/worker_int.h"

#define MODULE "journal"
/* Sessions of one process in one directory each take their own name. */
#define NAME_TRIES 1000

struct adump_journal {
	char *path;
	void *map;
	size_t map_bytes;
	uint32_t per_stream;                    /* slots per stream slot */
	unsigned stream_count;
	struct adump_journal_slot *slots;
	/* Per stream slot: [0] slots used by its ports, [1] its dumps held past their records
	 * (struct adump_port_cfg's journal_used). */
	_Atomic uint32_t used[ADUMP_STREAM_MAX_LIMIT][2];
};

/* The journal's kind for the session's output, its suffix in *@suffix; -1: none (a
 * callback sink, whose dumps are the program's once handed back). */
static int output_kind(const struct adump_session *s, const char **suffix)
{
	*suffix = "";
	if (s->cfg.sink != ADUMP_SINK_FILE)
		return -1;
	if (s->out == &adump_out_file)
		return ADUMP_JOURNAL_FILES;
	if (s->out == &adump_out_lz4) {
		*suffix = ".lz4";
		return ADUMP_JOURNAL_FILES;
	}
	if (s->out == &adump_out_stats_file) {
		*suffix = ".csv";
		return ADUMP_JOURNAL_FILES;
	}
	if (s->out == &adump_out_msprobe)
		return ADUMP_JOURNAL_MSPROBE;
	if (s->out == &adump_out_packed)
		return ADUMP_JOURNAL_PACKED;
	return -1;
}

/* A name of our own under @dir: O_EXCL, so that an existing file (another process's
 * journal, anything planted) is never reused, and O_NOFOLLOW on top. */
static int journal_open(struct adump_journal *j, const char *dir)
{
	for (unsigned n = 0; n < NAME_TRIES; n++) {
		int fd;

		free(j->path);
		if (asprintf(&j->path, "%s/" ADUMP_JOURNAL_PREFIX "%ld-%u", dir, (long)getpid(),
			     n) < 0) {
			j->path = NULL;
			return -ENOMEM;
		}
		fd = open(j->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

static int journal_make(struct adump_session *s, const char *dir, unsigned region_count,
			bool is_quiet_enoent, struct adump_journal **out)
{
	const char *suffix;
	int kind = output_kind(s, &suffix);
	struct adump_journal_head *head;
	struct adump_journal *j;
	uint64_t slot_count;
	int fd, ret;

	*out = NULL;
	if (kind < 0)
		return 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	/* Every dump not yet finished holds one of its channel's records, but the one being
	 * posted; one more is slack. The packed layout's workers hold up to
	 * PACKED_JOURNAL_HELD_MAX of a stream's dumps past their records (out_packed_int.h),
	 * and each worker one more while it flushes. */
	j->per_stream = region_count ? s->buffers_per_stream + 2 : 0;
	if (region_count && kind == ADUMP_JOURNAL_PACKED)
		j->per_stream += PACKED_JOURNAL_HELD_MAX + s->worker_target;
	j->stream_count = region_count;
	slot_count = (uint64_t)j->per_stream * j->stream_count;
	j->map_bytes = (size_t)(slot_count + 1) * ADUMP_JOURNAL_SLOT_BYTES;
	fd = journal_open(j, dir);
	if (fd < 0) {
		ret = fd;
		goto err;
	}
	/* Allocated now: a store into a hole of a shared mapping on a full disk is SIGBUS. */
	ret = -posix_fallocate(fd, 0, (off_t)j->map_bytes);
	if (ret == 0) {
		j->map = mmap(NULL, j->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (j->map == MAP_FAILED) {
			j->map = NULL;
			ret = -errno;
		}
	}
	close(fd);
	if (ret < 0)
		goto err_unlink;
	head = j->map;
	head->version = ADUMP_JOURNAL_VERSION;
	head->slot_bytes = ADUMP_JOURNAL_SLOT_BYTES;
	head->slot_count = slot_count;
	head->pid = (int32_t)getpid();
	head->kind = (uint32_t)kind;
	snprintf(head->suffix, sizeof(head->suffix), "%s", suffix);
	/* The magic last: a journal whose process dies before this has a zero magic, which
	 * readers pass by as one that never held a dump (none was handed over before). */
	atomic_thread_fence(memory_order_release);
	memcpy(head->magic, ADUMP_JOURNAL_MAGIC, sizeof(head->magic));
	j->slots = (struct adump_journal_slot *)((char *)j->map + ADUMP_JOURNAL_SLOT_BYTES);
	*out = j;
	return 0;
err_unlink:
	unlink(j->path);
err:
	if (ret != -ENOENT || !is_quiet_enoent)
		adump_log(ADUMP_LOG_ERROR, MODULE, "cannot make the hand-over journal %s: %s",
			  j->path ? j->path : dir, adump_strerror(ret));
	free(j->path);
	free(j);
	return ret;
}

int adump_journal_create(struct adump_session *s, struct adump_journal **out)
{
	return journal_make(s, s->dir, s->cfg.stream_max, true, out);
}

int adump_journal_create_dir(struct adump_session *s, const char *dir, unsigned region_count,
			     struct adump_journal **out)
{
	return journal_make(s, dir, region_count, false, out);
}

_Atomic uint64_t *adump_journal_held(struct adump_journal *j)
{
	return j ? &((struct adump_journal_head *)j->map)->held : NULL;
}

struct adump_journal_slot *adump_journal_slots(struct adump_journal *j, unsigned index,
					       uint32_t *count, _Atomic uint32_t **used)
{
	*count = 0;
	*used = NULL;
	if (!j || index >= j->stream_count)
		return NULL;
	*count = j->per_stream;
	*used = j->used[index];
	return j->slots + (size_t)index * j->per_stream;
}

void adump_journal_destroy(struct adump_journal *j)
{
	uint64_t pending = 0;

	if (!j)
		return;
	/* Only the slots ports used: the rest were never touched, nor paged in. */
	for (unsigned k = 0; k < j->stream_count; k++) {
		const struct adump_journal_slot *region = j->slots + (size_t)k * j->per_stream;
		uint32_t used = atomic_load_explicit(&j->used[k][0], memory_order_relaxed);

		for (uint32_t i = 0; i < used; i++)
			pending += atomic_load_explicit(&region[i].state, memory_order_acquire) ==
				   ADUMP_JOURNAL_PENDING;
	}
	pending += atomic_load_explicit(&((struct adump_journal_head *)j->map)->held,
					memory_order_acquire);
	munmap(j->map, j->map_bytes);
	if (pending)
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s kept: %llu dump(s) handed over, not written",
			  j->path, (unsigned long long)pending);
	else if (unlink(j->path) < 0)
		adump_log(ADUMP_LOG_WARN, MODULE, "removing %s: %s", j->path, strerror(errno));
	free(j->path);
	free(j);
}
