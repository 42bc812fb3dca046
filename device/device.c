/* SPDX-License-Identifier: Apache-2.0 */
/* Simulated devices and their memory. Device memory is aligned host memory; each device keeps
 * its live allocations in a sorted array so that free, memcpy and kernel launches can check a
 * pointer with one binary search under a shared lock. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_int.h"

/* Cache-line alignment, like a device allocator's minimum granule. */
#define DEV_MEM_ALIGN 64

static pthread_mutex_t dev_table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct adump_dev *dev_table[ADUMP_DEV_MAX];

/* Launches take the memory lock shared all the time; preferring writers keeps a malloc or
 * free from waiting behind a steady stream of them. */
static int mem_lock_init(pthread_rwlock_t *lock)
{
	pthread_rwlockattr_t attr;
	int ret;

	ret = -pthread_rwlockattr_init(&attr);
	if (ret < 0)
		return ret;
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	ret = -pthread_rwlock_init(lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	return ret;
}

int adump_dev_open(int32_t id, struct adump_dev **out)
{
	struct adump_dev *dev;
	int ret = 0;

	if (id < 0 || id >= ADUMP_DEV_MAX)
		return -ADUMP_ERR_NOT_FOUND;
	if (!out)
		return -EINVAL;
	pthread_mutex_lock(&dev_table_lock);
	dev = dev_table[id];
	if (!dev) {
		dev = calloc(1, sizeof(*dev));
		if (!dev) {
			ret = -ENOMEM;
			goto out;
		}
		ret = mem_lock_init(&dev->mem_lock);
		if (ret < 0) {
			free(dev);
			goto out;
		}
		dev->id = id;
		atomic_init(&dev->compute_gbps, 0.0);
		dev_table[id] = dev;
	}
	dev->ref_count++;
	*out = dev;
out:
	pthread_mutex_unlock(&dev_table_lock);
	return ret;
}

void adump_dev_ref(struct adump_dev *dev)
{
	pthread_mutex_lock(&dev_table_lock);
	dev->ref_count++;
	pthread_mutex_unlock(&dev_table_lock);
}

void adump_dev_close(struct adump_dev *dev)
{
	bool is_last;

	if (!dev)
		return;
	pthread_mutex_lock(&dev_table_lock);
	is_last = --dev->ref_count == 0;
	if (is_last)
		dev_table[dev->id] = NULL;
	pthread_mutex_unlock(&dev_table_lock);
	if (!is_last)
		return;
	/* Out of the table and unreferenced: nobody else can reach the registry now. */
	for (size_t i = 0; i < dev->alloc_count; i++)
		free((void *)dev->allocs[i].base);
	free(dev->allocs);
	pthread_rwlock_destroy(&dev->mem_lock);
	free(dev);
}

int32_t adump_dev_id(const struct adump_dev *dev)
{
	return dev->id;
}

void adump_dev_mem_rdlock(struct adump_dev *dev)
{
	pthread_rwlock_rdlock(&dev->mem_lock);
}

void adump_dev_mem_unlock(struct adump_dev *dev)
{
	pthread_rwlock_unlock(&dev->mem_lock);
}

/* Index of the last allocation whose base is <= @addr, or alloc_count when there is none. */
static size_t alloc_find_floor(const struct adump_dev *dev, uintptr_t addr)
{
	size_t lo = 0, hi = dev->alloc_count;

	/* Invariant: allocs[0..lo) have base <= addr, allocs[hi..) have base > addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (dev->allocs[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : dev->alloc_count;
}

bool adump_dev_range_ok_locked(const struct adump_dev *dev, const void *ptr, size_t bytes)
{
	uintptr_t addr = (uintptr_t)ptr;
	size_t i;

	if (!ptr)
		return false;
	i = alloc_find_floor(dev, addr);
	if (i == dev->alloc_count)
		return false;
	/* Written as differences so that a huge @bytes cannot wrap around. */
	uintptr_t start = addr - dev->allocs[i].base;
	if (start >= dev->allocs[i].bytes)
		return false;
	return bytes <= dev->allocs[i].bytes - start;
}

bool adump_dev_is_device_ptr(struct adump_dev *dev, const void *ptr, size_t bytes)
{
	bool ok;

	if (!dev)
		return false;
	adump_dev_mem_rdlock(dev);
	ok = adump_dev_range_ok_locked(dev, ptr, bytes);
	adump_dev_mem_unlock(dev);
	return ok;
}

int adump_dev_malloc(struct adump_dev *dev, size_t bytes, void **out)
{
	void *mem = NULL;
	size_t i;
	int ret;

	if (!dev || !out)
		return -EINVAL;
	if (bytes == 0)
		return -ADUMP_ERR_TOO_BIG;
	ret = ADUMP_TESTPOINT("device.malloc");
	if (ret < 0)
		return ret;
	ret = -posix_memalign(&mem, DEV_MEM_ALIGN, bytes);
	if (ret < 0)
		return ret;
	pthread_rwlock_wrlock(&dev->mem_lock);
	if (dev->alloc_count == dev->alloc_cap) {
		size_t cap = dev->alloc_cap ? dev->alloc_cap * 2 : 64;
		struct adump_dev_alloc *allocs = realloc(dev->allocs, cap * sizeof(*allocs));

		if (!allocs) {
			pthread_rwlock_unlock(&dev->mem_lock);
			free(mem);
			return -ENOMEM;
		}
		dev->allocs = allocs;
		dev->alloc_cap = cap;
	}
	i = alloc_find_floor(dev, (uintptr_t)mem);
	/* Insert after the floor (or at the front when every base is above ours). */
	i = i == dev->alloc_count ? 0 : i + 1;
	memmove(&dev->allocs[i + 1], &dev->allocs[i],
		(dev->alloc_count - i) * sizeof(dev->allocs[0]));
	dev->allocs[i] = (struct adump_dev_alloc){ .base = (uintptr_t)mem, .bytes = bytes };
	dev->alloc_count++;
	pthread_rwlock_unlock(&dev->mem_lock);
	*out = mem;
	return 0;
}

int adump_dev_free(struct adump_dev *dev, void *ptr)
{
	size_t i;

	if (!dev || !ptr)
		return -ADUMP_ERR_NOT_FOUND;
	pthread_rwlock_wrlock(&dev->mem_lock);
	i = alloc_find_floor(dev, (uintptr_t)ptr);
	/* Only the exact base frees; an interior pointer is not an allocation. */
	if (i == dev->alloc_count || dev->allocs[i].base != (uintptr_t)ptr) {
		pthread_rwlock_unlock(&dev->mem_lock);
		return -ADUMP_ERR_NOT_FOUND;
	}
	memmove(&dev->allocs[i], &dev->allocs[i + 1],
		(dev->alloc_count - i - 1) * sizeof(dev->allocs[0]));
	dev->alloc_count--;
	pthread_rwlock_unlock(&dev->mem_lock);
	free(ptr);
	return 0;
}

/* Whether a side of an ADUMP_COPY_DEFAULT copy is device memory: its first byte decides. */
static bool starts_in_device(const struct adump_dev *dev, const void *ptr)
{
	return adump_dev_range_ok_locked(dev, ptr, 1);
}

int adump_dev_memcpy(struct adump_dev *dev, void *dst, size_t dst_max, const void *src,
		     size_t count, enum adump_copy_kind kind)
{
	bool is_dst_dev, is_src_dev;
	int ret = 0;

	if (!dst || !src)
		return -EINVAL;
	switch (kind) {
	case ADUMP_COPY_HOST_TO_HOST:
	case ADUMP_COPY_HOST_TO_DEVICE:
	case ADUMP_COPY_DEVICE_TO_HOST:
	case ADUMP_COPY_DEVICE_TO_DEVICE:
	case ADUMP_COPY_DEFAULT:
		break;
	default:
		return -EINVAL;
	}
	if (count > dst_max)
		return -ADUMP_ERR_TOO_BIG;
	if (count == 0)
		return 0;
	if (kind == ADUMP_COPY_HOST_TO_HOST) {
		memmove(dst, src, count);
		return 0;
	}
	if (!dev)
		return -EINVAL;
	adump_dev_mem_rdlock(dev);
	if (kind == ADUMP_COPY_DEFAULT) {
		is_dst_dev = starts_in_device(dev, dst);
		is_src_dev = starts_in_device(dev, src);
	} else {
		is_dst_dev = kind == ADUMP_COPY_HOST_TO_DEVICE || kind == ADUMP_COPY_DEVICE_TO_DEVICE;
		is_src_dev = kind == ADUMP_COPY_DEVICE_TO_HOST || kind == ADUMP_COPY_DEVICE_TO_DEVICE;
	}
	if ((is_dst_dev && !adump_dev_range_ok_locked(dev, dst, count)) ||
	    (is_src_dev && !adump_dev_range_ok_locked(dev, src, count)))
		ret = -ADUMP_ERR_NOT_FOUND;
	adump_dev_mem_unlock(dev);
	/* The copy runs outside the lock: memory in use must not be freed concurrently, which is
	 * the caller's contract, and holding the lock would stall every launch meanwhile. */
	if (ret == 0)
		memmove(dst, src, count);
	return ret;
}

void adump_dev_set_compute_gbps(struct adump_dev *dev, double gbps)
{
	if (!dev)
		return;
	if (!(gbps > 0))                        /* negative and NaN mean unthrottled */
		gbps = 0;
	atomic_store_explicit(&dev->compute_gbps, gbps, memory_order_relaxed);
}
