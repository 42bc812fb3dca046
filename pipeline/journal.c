/* SPDX-License-Identifier: Apache-2.0 */
/* The session's hand-over journal: made with the session, split into one region of slots
 * per stream slot (each port searches only its own, so a hand-over takes no lock and no
 * atomic read-modify-write), removed at a clean end. A stream writing into a directory of
 * its own has a journal of one region there, and msprobe's dump.json of each directory one
 * with no slots (its count of entries held). What a slot holds and when is
 * common/journal.h's.
 *
 * A directory's journal whose dumps are all written is not removed but emptied (its magic
 * first: readers pass a journal without one by) and moved into the session's directory, a
 * spare; the next directory's journal of its size is that file moved there. A training
 * step's directory costs two renames, not a file made (its inode found, its blocks
 * allocated, its pages faulted in) and one removed, twice a step. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
	/* A directory's (adump_journal_create_dir()): kept as a spare of @session's when its
	 * dumps are all written. Its file's identity, checked after each move. */
	struct adump_session *session;
	dev_t dev;
	ino_t ino;
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

/* Whether the file at @j's path is @j's: a spare's name may hold a file put there since. */
static bool journal_is_ours(const struct adump_journal *j)
{
	struct stat st;

	return lstat(j->path, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == j->dev &&
	       st.st_ino == j->ino;
}

/* @j's file moved to a name of our own under @dir (renameat2(RENAME_NOREPLACE): nothing
 * there is replaced), if it is still ours, and still ours there. Return: 0, or -errno
 * (-ESTALE: not ours; @j's path is where that file is). */
static int journal_move(struct adump_journal *j, const char *dir)
{
	/* Numbers journal_open() does not start from, each move its own: the first is free. */
	static _Atomic unsigned moves;
	unsigned first = NAME_TRIES + atomic_fetch_add_explicit(&moves, 1, memory_order_relaxed);

	if (!journal_is_ours(j))
		return -ESTALE;
	for (unsigned n = first; n < first + NAME_TRIES; n++) {
		char *to;

		if (asprintf(&to, "%s/" ADUMP_JOURNAL_PREFIX "%ld-%u", dir, (long)getpid(), n) < 0)
			return -ENOMEM;
		if (renameat2(AT_FDCWD, j->path, AT_FDCWD, to, RENAME_NOREPLACE) < 0) {
			int err = errno;

			free(to);
			if (err == EEXIST)
				continue;
			return -err;
		}
		free(j->path);
		j->path = to;
		/* Swapped between the look and the move: not ours to fill. */
		return journal_is_ours(j) ? 0 : -ESTALE;
	}
	return -EEXIST;
}

/* Removed: the mapping, the file (when @is_unlinked, and it is still ours), the record. */
static void journal_free(struct adump_journal *j, bool is_unlinked)
{
	/* Looked at while the mapping still holds our inode: its number is not free. */
	if (is_unlinked && j->session && !journal_is_ours(j))
		is_unlinked = false;
	munmap(j->map, j->map_bytes);
	if (is_unlinked && unlink(j->path) < 0 && errno != ENOENT)
		adump_log(ADUMP_LOG_WARN, MODULE, "removing %s: %s", j->path, strerror(errno));
	free(j->path);
	free(j);
}

/* A spare of @s with @per_stream slots in each of @stream_count regions, moved into @dir;
 * NULL when none is (a spare that cannot be moved is removed). */
static struct adump_journal *spare_take(struct adump_session *s, uint32_t per_stream,
					unsigned stream_count, const char *dir)
{
	struct adump_journal *j = NULL;
	int ret;

	pthread_mutex_lock(&s->journal_spare_lock);
	for (unsigned i = 0; i < s->journal_spare_count; i++) {
		struct adump_journal *c = s->journal_spares[i];

		if (c->per_stream == per_stream && c->stream_count == stream_count) {
			j = c;
			s->journal_spares[i] = s->journal_spares[--s->journal_spare_count];
			break;
		}
	}
	pthread_mutex_unlock(&s->journal_spare_lock);
	if (!j)
		return NULL;
	ret = journal_move(j, dir);
	if (ret < 0) {
		adump_log(ADUMP_LOG_WARN, MODULE, "moving the hand-over journal %s into %s: %s; "
			  "a new one is made", j->path, dir, adump_strerror(ret));
		journal_free(j, true);          /* removed if it is still ours */
		return NULL;
	}
	return j;
}

/* @j, a directory's journal whose dumps are all written, as a spare of its session:
 * emptied (its magic first), moved into the session's directory. Return: whether it is
 * (else the caller removes it: journal_free(), which leaves a file put in its place).
 * Not inlined: GCC's ThreadSanitizer build rejects an inlined atomic_thread_fence(). */
static __attribute__((noinline)) bool spare_keep(struct adump_journal *j)
{
	struct adump_session *s = j->session;
	struct adump_journal_head *head = j->map;
	bool is_kept = false;

	if (!s)
		return false;
	memset(head->magic, 0, sizeof(head->magic));
	atomic_thread_fence(memory_order_release);
	for (unsigned k = 0; k < j->stream_count; k++) {
		uint32_t used = atomic_load_explicit(&j->used[k][0], memory_order_relaxed);

		memset(j->slots + (size_t)k * j->per_stream, 0, (size_t)used * sizeof(*j->slots));
		atomic_store_explicit(&j->used[k][0], 0, memory_order_relaxed);
		atomic_store_explicit(&j->used[k][1], 0, memory_order_relaxed);
	}
	atomic_store_explicit(&head->held, 0, memory_order_relaxed);
	pthread_mutex_lock(&s->journal_spare_lock);
	if (s->journal_spare_count < ADUMP_JOURNAL_SPARES && journal_move(j, s->dir) == 0) {
		s->journal_spares[s->journal_spare_count++] = j;
		is_kept = true;
	}
	pthread_mutex_unlock(&s->journal_spare_lock);
	return is_kept;
}

void adump_journal_spares_free(struct adump_session *s)
{
	pthread_mutex_lock(&s->journal_spare_lock);
	for (unsigned i = 0; i < s->journal_spare_count; i++)
		journal_free(s->journal_spares[i], true);
	s->journal_spare_count = 0;
	pthread_mutex_unlock(&s->journal_spare_lock);
}

static int journal_make(struct adump_session *s, const char *dir, unsigned region_count,
			bool is_dir, struct adump_journal **out)
{
	const char *suffix;
	int kind = output_kind(s, &suffix);
	struct adump_journal_head *head;
	struct adump_journal *j;
	uint32_t per_stream;
	uint64_t slot_count;
	struct stat st;
	int fd, ret;

	*out = NULL;
	if (kind < 0)
		return 0;
	/* Every dump not yet finished holds one of its channel's records, but the one being
	 * posted; one more is slack. The packed layout's workers hold up to
	 * PACKED_JOURNAL_HELD_MAX of a stream's dumps past their records (out_packed_int.h),
	 * and each worker one more while it flushes. */
	per_stream = region_count ? s->buffers_per_stream + 2 : 0;
	if (region_count && kind == ADUMP_JOURNAL_PACKED)
		per_stream += PACKED_JOURNAL_HELD_MAX + s->worker_target;
	slot_count = (uint64_t)per_stream * region_count;
	j = is_dir ? spare_take(s, per_stream, region_count, dir) : NULL;
	if (j)
		goto head;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->per_stream = per_stream;
	j->stream_count = region_count;
	j->map_bytes = (size_t)(slot_count + 1) * ADUMP_JOURNAL_SLOT_BYTES;
	fd = journal_open(j, dir);
	if (fd < 0) {
		ret = fd;
		goto err;
	}
	/* Allocated now: a store into a hole of a shared mapping on a full disk is SIGBUS. */
	ret = -posix_fallocate(fd, 0, (off_t)j->map_bytes);
	if (ret == 0 && fstat(fd, &st) < 0)
		ret = -errno;
	if (ret == 0) {
		j->dev = st.st_dev;
		j->ino = st.st_ino;
		j->map = mmap(NULL, j->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (j->map == MAP_FAILED) {
			j->map = NULL;
			ret = -errno;
		}
	}
	close(fd);
	if (ret < 0)
		goto err_unlink;
	j->session = is_dir ? s : NULL;
head:
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
	if (ret != -ENOENT || is_dir)
		adump_log(ADUMP_LOG_ERROR, MODULE, "cannot make the hand-over journal %s: %s",
			  j->path ? j->path : dir, adump_strerror(ret));
	free(j->path);
	free(j);
	return ret;
}

int adump_journal_create(struct adump_session *s, struct adump_journal **out)
{
	return journal_make(s, s->dir, s->cfg.stream_max, false, out);
}

int adump_journal_create_dir(struct adump_session *s, const char *dir, unsigned region_count,
			     struct adump_journal **out)
{
	return journal_make(s, dir, region_count, true, out);
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
	if (pending)
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s kept: %llu dump(s) handed over, not written",
			  j->path, (unsigned long long)pending);
	else if (spare_keep(j))
		return;
	journal_free(j, !pending);
}
