/* SPDX-License-Identifier: Apache-2.0 */
/* The ceilings a capture is compared with in the same run: plain sequential io_uring writes
 * (disk-limit, buffered and O_DIRECT), create + write + close of many files (create-limit)
 * and a bare ck_ring SPSC pair (ring-limit). None of them touches the adump pipeline, except
 * the channel hand-off reported beside ring-limit: the pipeline's own channel and doorbell
 * with no work around them, to tell their cost from the ring's. */
#include <ck_ring.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "common/common.h"
#include "pipeline/defaults.h"
#include "producer/producer.h"
#include "ring/ring.h"
#include "ring/spsc.h"

#define DIRECT_ALIGN 4096u

double adump_bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double adump_bench_cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int adump_bench_syncfs(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (syncfs(fd) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

uint64_t adump_bench_peak_rss(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

void adump_bench_peak_rss_reset(void)
{
	/* "5" resets the peak RSS (VmHWM) to the current RSS (Linux 4.0 and later). */
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (write(fd, "5", 1) < 0) {
		/* Not resettable here: the peak then covers the whole process. */
	}
	close(fd);
}

static void timing_start(struct adump_bench_timing *t, double *t0, double *c0)
{
	memset(t, 0, sizeof(*t));
	*t0 = adump_bench_now();
	*c0 = adump_bench_cpu_seconds();
}

static void timing_end(struct adump_bench_timing *t, const char *dir, bool sync, double t0,
		       double c0)
{
	int ret;

	t->seconds_unsynced = adump_bench_now() - t0;
	if (sync) {
		ret = adump_bench_syncfs(dir);
		if (ret < 0 && !t->error)
			t->error = ret;
	}
	t->seconds = adump_bench_now() - t0;
	t->cpu_seconds = adump_bench_cpu_seconds() - c0;
}

/* disk-limit where io_uring is refused: @total bytes in @chunk writes from one thread. */
static int disk_limit_pwrite(const char *dir, const char *path, uint64_t total, const void *buf,
			     size_t chunk, bool is_direct, bool sync, struct adump_bench_timing *out)
{
	uint64_t done = 0;
	double t0 = adump_bench_now(), c0 = adump_bench_cpu_seconds();
	int ret = is_direct ? ADUMP_TESTPOINT("bench.direct") : 0, fd = -1;

	if (ret < 0)
		errno = -ret;
	else
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (is_direct ? O_DIRECT : 0),
			  0640);
	ret = fd < 0 ? -errno : 0;
	while (ret == 0 && done < total) {
		size_t len = total - done < chunk ? (size_t)(total - done) : chunk;
		ssize_t n = pwrite(fd, buf, len, (off_t)done);

		if (n < 0 && errno != EINTR)
			ret = -errno;
		else if (n == 0)
			ret = -EIO;
		else if (n > 0)
			done += (uint64_t)n;
	}
	if (ret == 0) {
		out->bytes = total;
		out->files = 1;
	}
	if (fd >= 0 && close(fd) < 0 && ret == 0)
		ret = -errno;
	out->error = ret;
	timing_end(out, dir, sync && ret == 0, t0, c0);
	unlink(path);
	return out->error;
}

int adump_bench_disk_limit(const char *dir, uint64_t bytes, size_t chunk, unsigned depth,
			   bool is_direct, bool sync, struct adump_bench_timing *out)
{
	struct io_uring ring;
	char path[4096];
	void *buf = NULL;
	uint64_t submitted = 0, completed = 0, total = bytes;
	unsigned in_flight = 0;
	bool is_registered = false;
	double t0, c0;
	int fd = -1, ret;

	timing_start(out, &t0, &c0);
	if (is_direct) {
		total = (bytes + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN;
		chunk = (chunk + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN;
	}
	if (posix_memalign(&buf, DIRECT_ALIGN, chunk))
		return out->error = -ENOMEM;
	/* Not zeroes: a filesystem or disk that special-cases them must not look faster. */
	for (size_t i = 0; i < chunk; i++)
		((unsigned char *)buf)[i] = (unsigned char)(i * 2654435761u >> 13);
	snprintf(path, sizeof(path), "%s/disk-limit%s.bin", dir, is_direct ? "-direct" : "");
	ret = io_uring_queue_init(depth, &ring, 0);
	if (ret == -EPERM || ret == -ENOSYS) {
		/* io_uring refused (a container's seccomp profile, kernel.io_uring_disabled): the
		 * same bytes with plain sequential writes, as the capture then writes with pwrite. */
		ret = disk_limit_pwrite(dir, path, total, buf, chunk, is_direct, sync, out);
		free(buf);
		return ret;
	}
	if (ret < 0) {
		free(buf);
		return out->error = ret;
	}
	if (is_direct) {
		struct iovec iov = { .iov_base = buf, .iov_len = chunk };

		/* Registered like the pipeline's staging buffers, where the kernel allows. */
		is_registered = io_uring_register_buffers(&ring, &iov, 1) == 0;
	}
	/* The clock starts at the open, after the one-off buffer and ring setup. */
	t0 = adump_bench_now();
	c0 = adump_bench_cpu_seconds();
	/* The testpoint plays a filesystem that refuses O_DIRECT (EINVAL), as the bench's
	 * probe of the dump directory does (tools/bench_baselines.c). */
	ret = is_direct ? ADUMP_TESTPOINT("bench.direct") : 0;
	if (ret < 0)
		errno = -ret;
	else
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
				(is_direct ? O_DIRECT : 0), 0640);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	while (completed < total) {
		while (in_flight < depth && submitted < total) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			size_t len = total - submitted < chunk ? (size_t)(total - submitted) : chunk;

			if (!sqe)
				break;
			if (is_registered)
				io_uring_prep_write_fixed(sqe, fd, buf, (unsigned)len, submitted, 0);
			else
				io_uring_prep_write(sqe, fd, buf, (unsigned)len, submitted);
			/* Offset and length travel in user_data: files stay below 2^40 bytes. */
			sqe->user_data = submitted | (uint64_t)len << 40;
			submitted += len;
			in_flight++;
		}
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0 && ret != -EINTR)
			goto out;
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;

		io_uring_for_each_cqe(&ring, head, cqe) {
			uint64_t off = cqe->user_data & ((1ull << 40) - 1);
			size_t len = (size_t)(cqe->user_data >> 40);

			seen++;
			in_flight--;
			if (cqe->res == -EAGAIN || cqe->res == -EINTR || (cqe->res >= 0 && (size_t)cqe->res < len)) {
				/* Retry or finish a short write synchronously: rare, and it keeps
				 * the loop simple. */
				size_t done = cqe->res > 0 ? (size_t)cqe->res : 0;
				ssize_t n = pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done));

				if (n < 0 || (size_t)n != len - done) {
					ret = n < 0 ? -errno : -EIO;
					io_uring_cq_advance(&ring, seen);
					goto out;
				}
			} else if (cqe->res < 0) {
				ret = cqe->res;
				io_uring_cq_advance(&ring, seen);
				goto out;
			}
			completed += len;
		}
		io_uring_cq_advance(&ring, seen);
	}
	ret = 0;
	out->bytes = total;
	out->files = 1;
out:
	if (fd >= 0 && close(fd) < 0 && ret == 0)
		ret = -errno;
	out->error = ret;
	timing_end(out, dir, sync && ret == 0, t0, c0);
	io_uring_queue_exit(&ring);
	unlink(path);
	free(buf);
	return out->error;
}

int adump_bench_create_limit(const char *dir, uint64_t count,
			     uint64_t (*sizes)(uint64_t k, void *user), void *user, bool is_unnamed,
			     bool sync, struct adump_bench_timing *out)
{
	size_t cap = 1 << 20;
	char *buf = malloc(cap), path[4200];
	double t0, c0;
	int ret = 0;

	if (!buf)
		return out->error = -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		buf[i] = (char)(i * 2654435761u >> 13);
	timing_start(out, &t0, &c0);
	for (uint64_t k = 0; k < count && ret == 0; k++) {
		uint64_t left = sizes(k, user);
		int fd;

		snprintf(path, sizeof(path), "%s/f%llu", dir, (unsigned long long)k);
		if (is_unnamed)
			fd = open(dir, O_WRONLY | O_TMPFILE | O_CLOEXEC, 0640);
		else
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
		if (fd < 0) {
			ret = -errno;
			break;
		}
		while (left) {
			size_t n = left < cap ? (size_t)left : cap;
			ssize_t w = write(fd, buf, n);

			if (w < 0) {
				if (errno == EINTR)
					continue;
				ret = -errno;
				break;
			}
			left -= (uint64_t)w;
			out->bytes += (uint64_t)w;
		}
		if (is_unnamed && ret == 0 && linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) < 0)
			ret = -errno;
		if (close(fd) < 0 && ret == 0)
			ret = -errno;
		out->files++;
	}
	out->error = ret;
	timing_end(out, dir, sync && ret == 0, t0, c0);
	free(buf);
	return ret;
}

/* ---- ring-limit ---- */

struct ring_pair {
	ck_ring_t filled, free_ring;
	ck_ring_buffer_t *filled_slots, *free_slots;
	uint64_t records;
	bool is_reading;                        /* the consumer reads each record */
	int error;                              /* consumer's; read after the join */
	_Atomic int is_started;
};

/* A record of the reading pair: a cache line of its own, like struct adump_rec. */
#define RING_RECORD_WORDS 8

/* The pair uses the rings as the channel does, through ring/spsc.h, whose push and pop carry
 * the ThreadSanitizer annotations ck_ring needs. */

static void *ring_consumer(void *arg)
{
	struct ring_pair *rp = arg;
	uint64_t got = 0;
	unsigned misses = 0;
	void *rec;

	while (!atomic_load_explicit(&rp->is_started, memory_order_acquire))
		sched_yield();
	while (got < rp->records) {
		if (!adump_spsc_pop(&rp->filled, rp->filled_slots, &rec)) {
			/* On a loaded 2-core machine the peer may not be running: let it. */
			if (++misses > 256) {
				misses = 0;
				sched_yield();
			}
			continue;
		}
		misses = 0;
		if (rp->is_reading && *(uint64_t *)rec != got && !rp->error)
			rp->error = -EIO;
		/* The free ring has room for every record: this cannot fail. */
		adump_spsc_push(&rp->free_ring, rp->free_slots, rec, NULL);
		got++;
	}
	return NULL;
}

static void ring_produce(struct ring_pair *rp, uint64_t records)
{
	unsigned misses = 0;

	atomic_store_explicit(&rp->is_started, 1, memory_order_release);
	for (uint64_t i = 0; i < records;) {
		void *rec;

		if (!adump_spsc_pop(&rp->free_ring, rp->free_slots, &rec)) {
			if (++misses > 256) {
				misses = 0;
				sched_yield();
			}
			continue;
		}
		misses = 0;
		*(uint64_t *)rec = i;
		adump_spsc_push(&rp->filled, rp->filled_slots, rec, NULL);
		i++;
	}
}

int adump_bench_ring_limit(uint64_t records, unsigned slots, bool is_reading,
			   struct adump_bench_timing *out)
{
	struct ring_pair rp = { .records = records, .is_reading = is_reading };
	unsigned stride = is_reading ? RING_RECORD_WORDS : 1;
	unsigned size = 2;
	pthread_t th;
	uint64_t *recs = NULL;
	double t0, c0;
	int ret;

	memset(out, 0, sizeof(*out));
	if (slots < 2)
		slots = 2;
	/* ck_ring holds size - 1 entries; both rings can hold every record. */
	while (size < slots + 1)
		size <<= 1;
	rp.filled_slots = calloc(size, sizeof(ck_ring_buffer_t));
	rp.free_slots = calloc(size, sizeof(ck_ring_buffer_t));
	if (posix_memalign((void **)&recs, 64, (size_t)slots * stride * sizeof(*recs)))
		recs = NULL;
	if (!rp.filled_slots || !rp.free_slots || !recs) {
		ret = -ENOMEM;
		goto out;
	}
	ck_ring_init(&rp.filled, size);
	ck_ring_init(&rp.free_ring, size);
	for (unsigned i = 0; i < slots; i++)
		adump_spsc_push(&rp.free_ring, rp.free_slots, &recs[(size_t)i * stride], NULL);
	ret = -pthread_create(&th, NULL, ring_consumer, &rp);
	if (ret < 0)
		goto out;
	timing_start(out, &t0, &c0);
	ring_produce(&rp, records);
	pthread_join(th, NULL);
	timing_end(out, NULL, false, t0, c0);
	out->records = records;
	ret = rp.error;
out:
	out->error = ret;
	free(rp.filled_slots);
	free(rp.free_slots);
	free(recs);
	return ret;
}

/* ---- the channel hand-off, beside ring-limit ---- */

/* Nothing reads or writes the staging buffers here, so their size cannot change the
 * hand-off; a stream's real chunks (2 MiB by default) would only take address space. */
#define HANDOFF_BUFFER_BYTES 64u
/* The consumer sleeps at most this long, as the pwrite writer's doorbell wait does: a lost
 * wake-up would show as a slow run, not a hang. */
#define HANDOFF_SLEEP_MS 100
/* Records a worker takes from one ring before it looks at the next (pipeline/worker.c). */
#define HANDOFF_DRAIN_BATCH 64u

struct handoff {
	struct adump_port *port;
	struct adump_chan *chan;
	struct adump_doorbell db;
	uint64_t records;
	int error;                              /* consumer's; read after the join */
	_Atomic int is_started;
};

/* Consumer: poll the channel for ADUMP_WORKER_SPIN_NS before sleeping, as a worker's
 * spin_for_work() does. Return: true once a record waits. */
static bool handoff_spin(struct handoff *h)
{
	uint64_t deadline = adump_now_ns() + ADUMP_WORKER_SPIN_NS;

	do {
		for (int i = 0; i < 64; i++)
			__builtin_ia32_pause();
		if (!adump_chan_is_empty_sc(h->chan))
			return true;
	} while (adump_now_ns() < deadline);
	return false;
}

/* Consumer: sleep on the doorbell as a worker's main loop does with the pwrite writer. */
static void handoff_sleep(struct handoff *h)
{
	struct pollfd pfd = { .fd = h->db.event_fd, .events = POLLIN };
	uint64_t count;

	/* Dekker with adump_doorbell_ring(): announce the sleep, then look once more. */
	atomic_store_explicit(&h->db.is_sleeping, 1, memory_order_seq_cst);
	if (adump_chan_is_empty_sc(h->chan)) {
		poll(&pfd, 1, HANDOFF_SLEEP_MS);
		/* The eventfd is non-blocking: this clears a ring, or fails at once after a
		 * timeout with nothing to clear. */
		if (read(h->db.event_fd, &count, sizeof(count)) < 0) {
			/* EAGAIN: woken by the timeout, not the doorbell. */
		}
	}
	atomic_store_explicit(&h->db.is_sleeping, 0, memory_order_relaxed);
}

static void *handoff_consumer(void *arg)
{
	struct handoff *h = arg;
	uint64_t got = 0;

	while (!atomic_load_explicit(&h->is_started, memory_order_acquire))
		sched_yield();
	while (got < h->records) {
		unsigned n = 0;

		/* As a worker drains a ring: up to a batch, its wake-ups deferred to the end. */
		adump_chan_defer_sc(h->chan);
		for (; n < HANDOFF_DRAIN_BATCH && got < h->records; n++) {
			struct adump_rec *rec = adump_chan_pop_sc(h->chan);

			if (!rec)
				break;
			/* A worker's first look at a record is its place in the file; here that
			 * also checks that the channel kept the order. */
			if (rec->offset != got && !h->error)
				h->error = -EIO;
			adump_chan_release_sc(h->chan, rec);
			got++;
		}
		adump_chan_flush_sc(h->chan);
		if (!n && !handoff_spin(h))
			handoff_sleep(h);
	}
	return NULL;
}

static void handoff_produce(struct handoff *h)
{
	atomic_store_explicit(&h->is_started, 1, memory_order_release);
	/* As a stream's executor posts its small dumps: one doorbell per burst (the channel
	 * still rings every ADUMP_DOORBELL_BATCH commits and before it waits). */
	adump_port_defer_sp(h->port);
	for (uint64_t i = 0; i < h->records; i++) {
		/* ON_FULL_BLOCK: never NULL, it waits for the consumer as a stream does. */
		struct adump_rec *rec = adump_port_reserve_sp(h->port, false);

		/* What a producer sets for a file with no payload: one record, FIRST|LAST. */
		rec->op = NULL;
		rec->offset = i;
		rec->len = 0;
		rec->flags = ADUMP_REC_FIRST | ADUMP_REC_LAST;
		rec->buf_offset = 0;
		adump_port_commit_sp(h->port, rec);
	}
	adump_port_flush_sp(h->port);
}

int adump_bench_chan_handoff(uint64_t records, unsigned buffers, struct adump_bench_timing *out)
{
	struct handoff h = { .records = records };
	struct adump_port_cfg cfg = {
		.chan = {
			.buffer_count = buffers < 2 ? 2 : buffers,
			.buffer_bytes = HANDOFF_BUFFER_BYTES,
		},
		.on_full = ADUMP_ON_FULL_BLOCK,
	};
	void *mem;
	pthread_t th;
	double t0, c0;
	int ret;

	memset(out, 0, sizeof(*out));
	mem = calloc(cfg.chan.buffer_count, HANDOFF_BUFFER_BYTES);
	if (!mem)
		return out->error = -ENOMEM;
	cfg.chan.buffer_mem = mem;
	ret = adump_doorbell_init(&h.db);
	if (ret < 0)
		goto out_mem;
	ret = adump_port_create(&cfg, &h.port);
	if (ret < 0)
		goto out_doorbell;
	h.chan = adump_port_chan(h.port);
	adump_port_set_doorbell(h.port, &h.db);
	ret = -pthread_create(&th, NULL, handoff_consumer, &h);
	if (ret < 0)
		goto out_chan;
	timing_start(out, &t0, &c0);
	handoff_produce(&h);
	pthread_join(th, NULL);
	timing_end(out, NULL, false, t0, c0);
	ret = h.error;
	if (ret == 0)
		out->records = records;
out_chan:
	adump_port_destroy(h.port);
out_doorbell:
	adump_doorbell_fini(&h.db);
out_mem:
	free(mem);
	out->error = ret;
	return ret;
}
