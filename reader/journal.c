/* SPDX-License-Identifier: Apache-2.0 */
/* The reading of a hand-over journal (common/journal.h) by `adump verify` and Python's
 * adump.verify: every dump a session recorded as handed over and never marked finished,
 * whose file is not under its name either, is reported missing; so are the entries a
 * msprobe directory's journal counts as held for a dump.json never written. A journal whose process still runs is a capture in progress:
 * its pending dumps are reported as not yet written (a problem all the same: the capture is
 * not whole yet). Nothing is trusted: the file must be a regular file (never through a
 * link), its size must match its head, and each name is rebuilt and checked as one path
 * component beneath the journal's directory. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/adump.h"
#include "common/common.h"
#include "common/journal.h"
#include "reader/reader.h"

/* Far above what a session makes (a few MiB with the smallest chunks): a cap on memory. */
#define JOURNAL_MAX_BYTES (256ull << 20)

static void bad(adump_journal_fn fn, void *arg, const char *path, const char *why)
{
	char msg[PATH_MAX + 256];

	snprintf(msg, sizeof(msg), "%s: hand-over journal unreadable: %s", path, why);
	fn(arg, ADUMP_JOURNAL_FOUND_BAD, msg);
}

/* The slot's text as op_type and op_name (NUL-terminated inside it). Return: false if not. */
static bool slot_names(const struct adump_journal_slot *js, const char **type, const char **name)
{
	const char *end = js->text + sizeof(js->text);
	const char *t = js->text, *t_end = memchr(t, '\0', sizeof(js->text));

	if (!t_end || t_end + 1 >= end || !memchr(t_end + 1, '\0', (size_t)(end - t_end - 1)))
		return false;
	*type = t;
	*name = t_end + 1;
	return true;
}

static bool is_component(const char *s)
{
	return s[0] && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* A pending dump, at @where (its directory and name as said), reported: not yet @verb while
 * its process @pid runs, else missing (@bytes of tensors, @note after them). Return: 1. */
static int pending(adump_journal_fn fn, void *arg, const char *where, const char *verb,
		   const char *note, bool is_live, int32_t pid, uint64_t bytes)
{
	char msg[PATH_MAX + 4600];

	if (is_live)
		snprintf(msg, sizeof(msg), "%s: handed over, not yet %s: capture in progress "
			 "(pid %ld)", where, verb, (long)pid);
	else
		snprintf(msg, sizeof(msg), "%s: handed over but never written (%llu bytes of "
			 "tensors%s)", where, (unsigned long long)bytes, note);
	fn(arg, is_live ? ADUMP_JOURNAL_FOUND_IN_PROGRESS : ADUMP_JOURNAL_FOUND_MISSING, msg);
	return 1;
}

/* One pending slot: reported unless its file is there (finished, then killed before the
 * slot was marked). Return: 1 if reported. */
static int check_slot(const struct adump_journal_slot *js, int dir_fd, const char *dir,
		      uint32_t kind, const char *suffix, bool is_live, int32_t pid,
		      adump_journal_fn fn, void *arg)
{
	char base[4096], rel[4200], msg[PATH_MAX + 4400];
	const char *type, *name;
	struct adump_op op = { 0 };
	bool is_cut;
	int fd;

	if (!slot_names(js, &type, &name) || !type[0] || !name[0]) {
		snprintf(msg, sizeof(msg), "%s: a pending entry without a name", dir);
		fn(arg, ADUMP_JOURNAL_FOUND_BAD, msg);
		return 1;
	}
	is_cut = strlen(type) != js->type_len || strlen(name) != js->name_len;
	if (kind == ADUMP_JOURNAL_MSPROBE) {
		/* Its entry was never held for dump.json (a slot is done from then on): lost. */
		snprintf(msg, sizeof(msg), "%s: %s%s", dir, name, is_cut ? "..." : "");
		return pending(fn, arg, msg, "written", "", is_live, pid, js->payload_bytes);
	}
	op.op_type = type;
	op.op_name = name;
	op.task_id = js->task_id;
	op.stream_id = js->stream_id;
	op.timestamp_us = js->timestamp_us;
	op.device_id = js->device_id;
	/* The name is sanitised as the session made it: one component, or refused. */
	if (adump_dump_file_name(&op, base, sizeof(base)) < 0 || !is_component(base) ||
	    snprintf(rel, sizeof(rel), "%u/%s%s", js->device_id, base, suffix) >=
		    (int)sizeof(rel)) {
		snprintf(msg, sizeof(msg), "%s: a pending entry with a name that is not one "
			 "file name", dir);
		fn(arg, ADUMP_JOURNAL_FOUND_BAD, msg);
		return 1;
	}
	if (kind == ADUMP_JOURNAL_PACKED) {
		/* Done once its index line is written: pending, it is in no index. */
		snprintf(msg, sizeof(msg), "%s/packed: %s%s", dir, rel, is_cut ? "..." : "");
		return pending(fn, arg, msg, "indexed", "; not in the index", is_live, pid,
			       js->payload_bytes);
	}
	if (!is_cut) {
		fd = adump_openat_beneath(dir_fd, rel);
		if (fd >= 0) {
			close(fd);
			return 0;       /* on disk: the walk checks it */
		}
	}
	snprintf(msg, sizeof(msg), "%s/%s%s", dir, rel,
		 is_cut ? "... (name cut in the journal)" : "");
	return pending(fn, arg, msg, "written", "", is_live, pid, js->payload_bytes);
}

static bool is_alive(int32_t pid)
{
	/* EPERM: a process of someone else's under that pid. A reused pid reads as alive too:
	 * reported as in progress, a problem either way. */
	return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

static int read_whole(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

static bool is_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

int adump_journal_list(const char *path, adump_journal_fn fn, void *arg)
{
	const char *slash = strrchr(path, '/'), *file = slash ? slash + 1 : path;
	char dir[PATH_MAX], suffix[sizeof(((struct adump_journal_head *)0)->suffix)];
	const struct adump_journal_head *head;
	struct stat st;
	void *buf = NULL;
	int fd, dir_fd = -1, ret, count = 0;
	uint64_t held;
	bool is_live;

	if (strncmp(file, ADUMP_JOURNAL_PREFIX, strlen(ADUMP_JOURNAL_PREFIX)))
		return -1;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		bad(fn, arg, path, errno == ELOOP ? "a symbolic link" : strerror(errno));
		return 1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		bad(fn, arg, path, "not a regular file");
		count = 1;
		goto out;
	}
	/* Empty: its process was killed while it made it, before any dump could be handed
	 * over (a session uses its journal only once the head is written). */
	if (st.st_size == 0)
		goto out;
	if (st.st_size < ADUMP_JOURNAL_SLOT_BYTES || (uint64_t)st.st_size > JOURNAL_MAX_BYTES ||
	    st.st_size % ADUMP_JOURNAL_SLOT_BYTES) {
		bad(fn, arg, path, "its size is not a whole number of slots");
		count = 1;
		goto out;
	}
	buf = malloc((size_t)st.st_size);
	if (!buf || (ret = read_whole(fd, buf, (size_t)st.st_size)) < 0) {
		bad(fn, arg, path, buf ? strerror(-ret) : "out of memory");
		count = 1;
		goto out;
	}
	head = buf;
	/* Allocated, its head not written yet (the magic is written last): the same. */
	if (is_zero(head->magic, sizeof(head->magic)))
		goto out;
	if (memcmp(head->magic, ADUMP_JOURNAL_MAGIC, sizeof(head->magic)) ||
	    head->version != ADUMP_JOURNAL_VERSION || head->slot_bytes != ADUMP_JOURNAL_SLOT_BYTES ||
	    head->slot_count != (uint64_t)st.st_size / ADUMP_JOURNAL_SLOT_BYTES - 1 ||
	    !memchr(head->suffix, '\0', sizeof(head->suffix)) || strchr(head->suffix, '/') ||
	    head->kind > ADUMP_JOURNAL_MSPROBE) {
		bad(fn, arg, path, "not an adump hand-over journal (its head)");
		count = 1;
		goto out;
	}
	memcpy(suffix, head->suffix, sizeof(suffix));
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		bad(fn, arg, path, strerror(errno));
		count = 1;
		goto out;
	}
	is_live = is_alive(head->pid);
	held = atomic_load_explicit(&head->held, memory_order_relaxed);
	if (held) {
		char msg[PATH_MAX + 200];

		if (is_live)
			snprintf(msg, sizeof(msg), "%s/dump.json: %llu dump(s) handed over, not yet "
				 "written into it: capture in progress (pid %ld)", dir,
				 (unsigned long long)held, (long)head->pid);
		else
			snprintf(msg, sizeof(msg), "%s/dump.json: %llu dump(s) handed over but never "
				 "written into it", dir, (unsigned long long)held);
		fn(arg, is_live ? ADUMP_JOURNAL_FOUND_IN_PROGRESS : ADUMP_JOURNAL_FOUND_MISSING, msg);
		count++;
	}
	for (uint64_t i = 0; i < head->slot_count; i++) {
		const struct adump_journal_slot *js =
			(const void *)((const char *)buf + (i + 1) * ADUMP_JOURNAL_SLOT_BYTES);

		if (atomic_load_explicit(&js->state, memory_order_relaxed) == ADUMP_JOURNAL_PENDING)
			count += check_slot(js, dir_fd, dir, head->kind, suffix, is_live,
					    head->pid, fn, arg);
	}
out:
	if (dir_fd >= 0)
		close(dir_fd);
	free(buf);
	close(fd);
	return count;
}
