/* SPDX-License-Identifier: Apache-2.0 */
/* Sleeping and waking, all of it (the protocol is described in common/common.h, "Sleeping and
 * waking"): futex wait points for producers and idle waiters, an eventfd doorbell for workers
 * (a worker can wait on it and on io_uring completions at once). */
#include <errno.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"

/* Sleep while *word == expected, at most timeout_ns (spurious returns are fine). */
static void futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(timeout_ns / 1000000000u),
		.tv_nsec = (long)(timeout_ns % 1000000000u),
	};

	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

void adump_waitpoint_wait(struct adump_waitpoint *wp, unsigned spin_count,
			  bool (*is_ready)(void *arg), void *arg)
{
	for (unsigned i = 0; i < spin_count; i++) {
		__builtin_ia32_pause();
		if (is_ready(arg))
			return;
	}
	for (;;) {
		uint32_t seq = atomic_load_explicit(&wp->seq, memory_order_acquire);

		/* Dekker with the waker's fence (protocols 2 and 3): announce, then look. */
		if (wp->is_single)
			atomic_store_explicit(&wp->sleeper_count, 1, memory_order_seq_cst);
		else
			atomic_fetch_add_explicit(&wp->sleeper_count, 1, memory_order_seq_cst);
		if (is_ready(arg))
			break;
		futex_wait(&wp->seq, seq, ADUMP_WAIT_SLICE_NS);
		if (!wp->is_single)
			atomic_fetch_sub_explicit(&wp->sleeper_count, 1, memory_order_relaxed);
	}
	if (wp->is_single)
		atomic_store_explicit(&wp->sleeper_count, 0, memory_order_relaxed);
	else
		atomic_fetch_sub_explicit(&wp->sleeper_count, 1, memory_order_relaxed);
}

void adump_waitpoint_wake(struct adump_waitpoint *wp)
{
	/* One sleeper: the first waker to see it clears the announcement, so the releases
	 * after it until the sleeper runs again make no system call. Several: they leave by
	 * themselves; each waker that sees one wakes all. */
	if (wp->is_single ? !atomic_exchange_explicit(&wp->sleeper_count, 0, memory_order_relaxed)
			  : !atomic_load_explicit(&wp->sleeper_count, memory_order_relaxed))
		return;
	atomic_fetch_add_explicit(&wp->seq, 1, memory_order_release);
	futex_wake_all(&wp->seq);
}

/* Not inlined: GCC's ThreadSanitizer build rejects an inlined atomic_thread_fence(). */
__attribute__((noinline)) void adump_wake_fence(void)
{
	atomic_thread_fence(memory_order_seq_cst);
}

int adump_doorbell_init(struct adump_doorbell *db)
{
	db->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (db->event_fd < 0)
		return -errno;
	atomic_init(&db->is_sleeping, 0);
	return 0;
}

void adump_doorbell_fini(struct adump_doorbell *db)
{
	if (db->event_fd >= 0)
		close(db->event_fd);
	db->event_fd = -1;
}

void adump_doorbell_wake(struct adump_doorbell *db)
{
	uint64_t one = 1;

	while (write(db->event_fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

void adump_doorbell_ring(struct adump_doorbell *db)
{
	/* Pairs with the worker's seq_cst store of is_sleeping before it re-checks its rings:
	 * either it sees our record, or we see it asleep and write the eventfd. */
	atomic_thread_fence(memory_order_seq_cst);
	/* The first ringer to see it asleep writes the eventfd; the ones after it until the
	 * worker runs again need not (several channels share a doorbell). */
	if (!atomic_load_explicit(&db->is_sleeping, memory_order_relaxed) ||
	    !atomic_exchange_explicit(&db->is_sleeping, 0, memory_order_relaxed))
		return;
	adump_doorbell_wake(db);
}
