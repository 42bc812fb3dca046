/* SPDX-License-Identifier: Apache-2.0 */
/* Window mode's SIGUSR1 trigger: a job that hangs never ends its step, so the signal
 * persists what every registered window holds at once. The handler only writes a byte into
 * a pipe (async-signal-safe); a thread of ours reads it and does the work. The handler is
 * installed with the first registered window and the previous disposition restored after
 * the last; a signal that has a handler of the program's own is refused. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "pipeline/window_int.h"

#define MODULE "window"
#define MAX_WINDOWS 64

/* Registering and unregistering, each whole: the first sets up the pipe, the thread and the
 * handler, the last tears them down (joining the thread outside sig_lock, which the thread
 * takes); without it a session made on one thread while the last went on another would
 * start its thread on a pipe the other then closes, and the other would join the wrong
 * thread. The signal's thread never takes it. */
static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;   /* windows[], window_count */
static struct adump_window *windows[MAX_WINDOWS];
static unsigned window_count;
static int sig_pipe[2] = { -1, -1 };    /* life_lock */
/* What the handler writes to: sig_pipe[1] while the pipe is open, else -1. Relaxed: the
 * handler needs only the number, set after the pipe is made and cleared before it closes. */
static _Atomic int sig_write_fd = -1;
static pthread_t sig_thread;            /* life_lock */
static struct sigaction sig_old;

static void on_signal(int sig)
{
	int saved = errno, fd = atomic_load_explicit(&sig_write_fd, memory_order_relaxed);
	ssize_t n = fd >= 0 ? write(fd, "s", 1) : 0;

	(void)sig;
	(void)n;
	errno = saved;
}

/* @arg: the pipe's read end, the thread's own copy. */
static void *sig_main(void *arg)
{
	int fd = (int)(intptr_t)arg;

	for (;;) {
		char buf[64];
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || memchr(buf, 'q', (size_t)n))
			return NULL;
		pthread_mutex_lock(&sig_lock);
		for (unsigned i = 0; i < window_count; i++) {
			adump_log(ADUMP_LOG_WARN, MODULE, "SIGUSR1: writing the window held now");
			adump_window_persist_now(windows[i], "signal");
		}
		pthread_mutex_unlock(&sig_lock);
	}
}

static int start(void)
{
	struct sigaction sa;
	int ret;

	if (sigaction(SIGUSR1, NULL, &sig_old) < 0)
		return -errno;
	if (sig_old.sa_handler != SIG_DFL && sig_old.sa_handler != SIG_IGN) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "trigger signal: SIGUSR1 has a handler of the "
			  "program's own; adump does not replace it");
		return -ADUMP_ERR_STATE;
	}
	if (pipe2(sig_pipe, O_CLOEXEC) < 0)
		return -errno;
	fcntl(sig_pipe[1], F_SETFL, O_NONBLOCK);
	ret = -pthread_create(&sig_thread, NULL, sig_main, (void *)(intptr_t)sig_pipe[0]);
	if (ret == 0) {
		atomic_store_explicit(&sig_write_fd, sig_pipe[1], memory_order_relaxed);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGUSR1, &sa, NULL) == 0)
			return 0;
		ret = -errno;
		atomic_store_explicit(&sig_write_fd, -1, memory_order_relaxed);
		if (write(sig_pipe[1], "q", 1) == 1)
			pthread_join(sig_thread, NULL);
	}
	close(sig_pipe[0]);
	close(sig_pipe[1]);
	sig_pipe[0] = sig_pipe[1] = -1;
	return ret;
}

int adump_window_signal_register(struct adump_window *win)
{
	int ret = 0;

	pthread_mutex_lock(&life_lock);
	pthread_mutex_lock(&sig_lock);
	if (window_count == MAX_WINDOWS)
		ret = -ADUMP_ERR_TOO_BIG;
	else if (window_count == 0)
		ret = start();
	if (ret == 0) {
		windows[window_count++] = win;
		win->is_signal = true;
	}
	pthread_mutex_unlock(&sig_lock);
	pthread_mutex_unlock(&life_lock);
	return ret;
}

void adump_window_signal_unregister(struct adump_window *win)
{
	bool is_last = false;

	pthread_mutex_lock(&life_lock);
	pthread_mutex_lock(&sig_lock);
	for (unsigned i = 0; i < window_count; i++)
		if (windows[i] == win) {
			windows[i] = windows[--window_count];
			is_last = window_count == 0;
			break;
		}
	win->is_signal = false;
	if (is_last) {
		sigaction(SIGUSR1, &sig_old, NULL);
		atomic_store_explicit(&sig_write_fd, -1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&sig_lock);
	if (is_last) {
		/* Outside sig_lock: the thread may be waiting for it. A pipe full of signals'
		 * bytes takes the quit once the thread has read some of them. */
		while (write(sig_pipe[1], "q", 1) < 0 && (errno == EINTR || errno == EAGAIN))
			usleep(1000);
		pthread_join(sig_thread, NULL);
		close(sig_pipe[0]);
		close(sig_pipe[1]);
		sig_pipe[0] = sig_pipe[1] = -1;
	}
	pthread_mutex_unlock(&life_lock);
}
