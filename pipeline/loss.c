/* SPDX-License-Identifier: Apache-2.0 */
/* Loss accounting: every tensor a session loses is counted by cause (per session and per
 * stream) and leaves one JSON line in <dir>/adump-losses.jsonl, written by the worker that
 * closed the failed file. The log is reserved when the session starts (an unnamed file with
 * space allocated past its end), so that a full disk does not also lose the record of what
 * it cost; it gets its name with the first loss, so a session without loss leaves none. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/common.h"
#include "pipeline/loss_int.h"
#include "pipeline/worker_int.h"

#define MODULE "loss"
#define LOG_RESERVE_BYTES (1u << 20)    /* ~4,000 lines written even on a full disk */
#define STREAM_TABLE 64                 /* streams with their own counters */

struct loss_stream {
	uint32_t stream_id;
	bool is_used;
	uint64_t counts[ADUMP_LOSS_CAUSE_COUNT];
};

struct adump_loss {
	pthread_mutex_t lock;
	char *dir;                              /* NULL: no log */
	char *path;
	int fd;                                 /* the log, named or not yet; -1: none */
	bool is_named;
	bool is_broken;                         /* a write failed: logged once */
	int refused;                            /* the name is no regular file: -errno, kept */
	uint64_t counts[ADUMP_LOSS_CAUSE_COUNT];
	struct loss_stream streams[STREAM_TABLE];
};

int adump_loss_create(const char *dir, struct adump_loss **out)
{
	struct adump_loss *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->fd = -1;
	pthread_mutex_init(&l->lock, NULL);
	if (dir) {
		l->dir = strdup(dir);
		if (!l->dir || asprintf(&l->path, "%s/%s", dir, ADUMP_LOSS_LOG_NAME) < 0) {
			l->path = NULL;
			adump_loss_destroy(l);
			return -ENOMEM;
		}
		/* Best effort: without O_TMPFILE the log is created at the first loss. */
		l->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
		if (l->fd >= 0 && fallocate(l->fd, FALLOC_FL_KEEP_SIZE, 0, LOG_RESERVE_BYTES) < 0)
			adump_log(ADUMP_LOG_DEBUG, MODULE, "no space reserved for the loss log: %s",
				  strerror(errno));
	}
	*out = l;
	return 0;
}

void adump_loss_destroy(struct adump_loss *l)
{
	if (!l)
		return;
	if (l->fd >= 0) {
		/* The reserve past the end goes back to the filesystem. */
		off_t end = lseek(l->fd, 0, SEEK_END);

		if (l->is_named && end >= 0 && ftruncate(l->fd, end) < 0)
			adump_log(ADUMP_LOG_DEBUG, MODULE, "trimming %s: %s", l->path, strerror(errno));
		close(l->fd);
	}
	pthread_mutex_destroy(&l->lock);
	free(l->path);
	free(l->dir);
	free(l);
}

/* Lock held. The log under its name, made now or another session's, appended to: only a
 * regular file, never through a link planted at the name (O_NOFOLLOW), nor a FIFO or a
 * device (O_NONBLOCK keeps the open from waiting on one). Return: the descriptor or -errno. */
static int log_open_existing(struct adump_loss *l)
{
	struct stat st;
	int fd = open(l->path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		      0644);
	int ret;

	if (fd < 0) {
		ret = -errno;
		if (ret == -ELOOP || ret == -ENXIO) {
			l->refused = ret;
			l->is_broken = true;
			adump_log(ADUMP_LOG_ERROR, MODULE, "%s is %s, not a regular file: not written "
				  "(losses are still counted)", l->path,
				  ret == -ELOOP ? "a symbolic link" : "a FIFO or device");
		}
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		l->refused = ret = -EINVAL;
		l->is_broken = true;
		close(fd);
		adump_log(ADUMP_LOG_ERROR, MODULE, "%s is not a regular file: not written (losses "
			  "are still counted)", l->path);
		return ret;
	}
	/* Appends never wait: a regular file ignores the flag anyway. */
	l->fd = fd;
	l->is_named = true;
	return fd;
}

/* Lock held. Return: the log's descriptor, named, or -errno. */
static int log_fd(struct adump_loss *l)
{
	char proc[64];

	if (l->is_named)
		return l->fd;
	if (l->refused)
		return l->refused;
	if (l->fd >= 0) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", l->fd);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, l->path, AT_SYMLINK_FOLLOW) == 0) {
			l->is_named = true;
			return l->fd;
		}
		/* Another session's log of the same name (or no /proc): append to that one. */
		close(l->fd);
		l->fd = -1;
	}
	return log_open_existing(l);
}

static enum adump_loss_cause cause_of(int err)
{
	switch (-err) {
	case ENOMEM:
		return ADUMP_LOSS_NOMEM;
	case ENOSPC:
	case EDQUOT:
		return ADUMP_LOSS_ENOSPC;
	case EIO:
		return ADUMP_LOSS_EIO;
	case ADUMP_ERR_DROPPED:
		return ADUMP_LOSS_NO_BUFFER;
	case ADUMP_ERR_DISK_GUARD:
		return ADUMP_LOSS_DISK_GUARD;
	case -ADUMP_LOSS_ERR_REJECTED:
		return ADUMP_LOSS_CHANGED_BEFORE_WRITTEN;
	case -ADUMP_LOSS_ERR_WINDOW_FULL:
		return ADUMP_LOSS_WINDOW_FULL;
	default:
		return ADUMP_LOSS_WRITE_ERROR;
	}
}

static const char *kind_name(enum adump_tensor_kind kind)
{
	const char *name = adump_tensor_kind_name(kind);

	return name ? name : "unknown";
}

/* Lock held. */
static struct loss_stream *stream_of(struct adump_loss *l, uint32_t stream_id)
{
	for (unsigned i = 0; i < STREAM_TABLE; i++) {
		struct loss_stream *ls = &l->streams[i];

		if (!ls->is_used) {
			ls->is_used = true;
			ls->stream_id = stream_id;
		}
		if (ls->stream_id == stream_id)
			return ls;
	}
	return NULL;
}

static void time_iso(char *buf, size_t cap)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, cap - n, ".%06ldZ", ts.tv_nsec / 1000);
}

/* Lock held. One line, escaped by json-c. */
static void write_line(struct adump_loss *l, const char *file, const struct adump_op *op,
		       const struct adump_tensor *t, int index, enum adump_loss_cause cause,
		       const char *time)
{
	json_object *o = json_object_new_object();
	const char *text;
	int fd, ret = -ENOMEM;

	if (o) {
		json_object_object_add(o, "file", json_object_new_string(file));
		json_object_object_add(o, "stream", json_object_new_int64(op->stream_id));
		json_object_object_add(o, "op_type", json_object_new_string(op->op_type ? op->op_type : ""));
		json_object_object_add(o, "op_name", json_object_new_string(op->op_name ? op->op_name : ""));
		json_object_object_add(o, "kind", json_object_new_string(t ? kind_name(t->kind) : "none"));
		json_object_object_add(o, "index", json_object_new_int64(index));
		json_object_object_add(o, "bytes", json_object_new_int64(t ? (int64_t)t->bytes : 0));
		json_object_object_add(o, "cause", json_object_new_string(adump_loss_cause_name(cause)));
		json_object_object_add(o, "time", json_object_new_string(time));
		text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							 JSON_C_TO_STRING_NOSLASHESCAPE);
		fd = text ? log_fd(l) : -ENOMEM;
		ret = fd;
		if (fd >= 0) {
			/* One write per line: a reader never sees half of one from us. */
			size_t len = strlen(text);
			char *line = malloc(len + 1);

			ret = -ENOMEM;
			if (line) {
				memcpy(line, text, len);
				line[len] = '\n';
				ret = adump_write_all(fd, line, len + 1);
				free(line);
			}
		}
		json_object_put(o);
	}
	if (ret < 0 && !l->is_broken) {
		l->is_broken = true;
		adump_log(ADUMP_LOG_ERROR, MODULE, "writing %s: %s (losses are still counted)",
			  l->path, adump_strerror(ret));
	}
}

/* Which cause tensor @i of @rec takes, the file having failed with @err. */
static enum adump_loss_cause tensor_cause(const struct adump_op_rec *rec, int err, uint64_t start,
					  uint64_t bytes)
{
	if (err != -ADUMP_ERR_DROPPED)
		return cause_of(err);
	/* The worker had no memory for the file's state (handle_record()). */
	if (atomic_load_explicit(&((struct adump_op_rec *)rec)->is_failed, memory_order_relaxed) == 2)
		return ADUMP_LOSS_NOMEM;
	if (!rec->loss_len)
		return ADUMP_LOSS_NO_BUFFER;
	return start < rec->loss_offset + rec->loss_len && start + bytes > rec->loss_offset ?
		       ADUMP_LOSS_NO_BUFFER : ADUMP_LOSS_AFTER_LOSS;
}

static void count(struct adump_loss *l, struct loss_stream *ls, enum adump_loss_cause cause)
{
	l->counts[cause]++;
	if (ls)
		ls->counts[cause]++;
}

void adump_loss_file(struct adump_session *s, const struct adump_op_rec *rec, const char *path,
		     int err)
{
	struct adump_loss *l = s->loss;
	const struct adump_op *op = &rec->op;
	const char *file = path;
	unsigned kind_index[4] = { 0 };
	uint64_t start = 0;
	char time[48], made[4200], name[4096];

	if (!l)
		return;
	if (!path) {
		snprintf(made, sizeof(made), "%u/%s", op->device_id,
			 adump_dump_file_name(op, name, sizeof(name)) > 0 ? name : "unnamed");
		file = path = made;
	}
	if (l->dir) {
		size_t dir_len = strlen(l->dir);

		if (!strncmp(path, l->dir, dir_len) && path[dir_len] == '/')
			file = path + dir_len + 1;
	}
	time_iso(time, sizeof(time));
	pthread_mutex_lock(&l->lock);
	struct loss_stream *ls = stream_of(l, op->stream_id);
	if (op->tensor_count == 0) {
		/* Nothing but a header: the file itself is the loss. */
		count(l, ls, cause_of(err));
		if (l->path)
			write_line(l, file, op, NULL, -1, cause_of(err), time);
	}
	for (uint32_t i = 0; i < op->tensor_count; i++) {
		const struct adump_tensor *t = &op->tensors[i];
		enum adump_loss_cause cause = tensor_cause(rec, err, start, t->bytes);
		unsigned k = (unsigned)t->kind < 4 ? (unsigned)t->kind : 0;

		count(l, ls, cause);
		if (l->path)
			write_line(l, file, op, t, (int)kind_index[k], cause, time);
		kind_index[k]++;
		start += t->bytes;
	}
	pthread_mutex_unlock(&l->lock);
}

void adump_loss_unindexed(struct adump_session *s, const char *file, int err)
{
	struct adump_loss *l = s->loss;
	const char *base = strrchr(file, '/');
	char type[4096], name[4096], time[48];
	unsigned stream = 0;
	/* "<device_id>/<type>.<name>.<task>.<stream>.<timestamp>": the names hold no dot. */
	int n = sscanf(base ? base + 1 : file, "%4095[^.].%4095[^.].%*u.%u", type, name, &stream);
	struct adump_op op = { .op_type = n >= 1 ? type : "", .op_name = n >= 2 ? name : "",
			       .stream_id = n >= 3 ? stream : 0 };

	if (!l)
		return;
	time_iso(time, sizeof(time));
	pthread_mutex_lock(&l->lock);
	count(l, stream_of(l, op.stream_id), cause_of(err));
	if (l->path)
		write_line(l, file, &op, NULL, -1, cause_of(err), time);
	pthread_mutex_unlock(&l->lock);
}

void adump_loss_file_end(struct adump_session *s, struct file_state *fs)
{
	adump_guard_file_done(s, fs);
	if (fs->is_failed)
		adump_loss_file(s, fs->op, fs->path,
				fs->is_rejected ? ADUMP_LOSS_ERR_REJECTED : fs->error);
}

void adump_loss_stream_detached(struct adump_loss *l, const struct adump_stream_stats *st)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	struct loss_stream *ls = stream_of(l, st->stream_id);
	for (unsigned c = 0; c < ADUMP_LOSS_CAUSE_COUNT; c++) {
		l->counts[c] += st->losses[c];
		if (ls)
			ls->counts[c] += st->losses[c];
	}
	pthread_mutex_unlock(&l->lock);
}

static uint64_t sum(const uint64_t *counts)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < ADUMP_LOSS_CAUSE_COUNT; i++)
		total += counts[i];
	return total;
}

void adump_loss_stats(struct adump_loss *l, struct adump_stats *out)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	memcpy(out->losses, l->counts, sizeof(out->losses));
	for (unsigned i = 0; i < out->stream_count; i++) {
		struct adump_stream_stats *st = &out->streams[i];
		struct loss_stream *ls = NULL;

		for (unsigned j = 0; j < STREAM_TABLE && !ls; j++)
			if (l->streams[j].is_used && l->streams[j].stream_id == st->stream_id)
				ls = &l->streams[j];
		/* What the channel counted itself (op records not built) plus the workers'. */
		for (unsigned c = 0; c < ADUMP_LOSS_CAUSE_COUNT; c++) {
			out->losses[c] += st->losses[c];
			st->losses[c] += ls ? ls->counts[c] : 0;
		}
		st->drops = sum(st->losses);
	}
	out->drops = sum(out->losses);
	pthread_mutex_unlock(&l->lock);
}
