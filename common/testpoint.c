/* SPDX-License-Identifier: Apache-2.0 */
/* Fault-injection testpoints: a short table of armed names, checked with one relaxed load
 * when nothing is armed. */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>

#include "common/common.h"

#define TESTPOINT_MAX 8

struct testpoint {
	char name[48];
	int err;
	unsigned nth;
	int sticky;
	unsigned hits;
};

static struct testpoint points[TESTPOINT_MAX];
static _Atomic unsigned armed_count;
static pthread_mutex_t points_lock = PTHREAD_MUTEX_INITIALIZER;

void adump_testpoint_arm(const char *name, int err, unsigned nth, int sticky)
{
	pthread_mutex_lock(&points_lock);
	unsigned n = atomic_load_explicit(&armed_count, memory_order_relaxed);
	if (n < TESTPOINT_MAX) {
		struct testpoint *p = &points[n];

		snprintf(p->name, sizeof(p->name), "%s", name);
		p->err = err;
		p->nth = nth ? nth : 1;
		p->sticky = sticky;
		p->hits = 0;
		atomic_store_explicit(&armed_count, n + 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&points_lock);
}

void adump_testpoint_disarm_all(void)
{
	pthread_mutex_lock(&points_lock);
	atomic_store_explicit(&armed_count, 0, memory_order_relaxed);
	pthread_mutex_unlock(&points_lock);
}

int adump_testpoint_hit(const char *name)
{
	int ret = 0;

	if (atomic_load_explicit(&armed_count, memory_order_relaxed) == 0)
		return 0;
	pthread_mutex_lock(&points_lock);
	unsigned n = atomic_load_explicit(&armed_count, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++) {
		struct testpoint *p = &points[i];

		if (strcmp(p->name, name) != 0)
			continue;
		p->hits++;
		if (p->hits == p->nth || (p->sticky == 1 && p->hits > p->nth) ||
		    (p->sticky == 2 && p->hits % p->nth == 0))
			ret = p->err;
	}
	pthread_mutex_unlock(&points_lock);
	return ret;
}

_Atomic uint64_t adump_fake_clock_us;

void adump_testpoint_clock_set(uint64_t start_us)
{
	atomic_store_explicit(&adump_fake_clock_us, start_us, memory_order_relaxed);
}
