/* SPDX-License-Identifier: Apache-2.0 */
/* The kernels the simulated NPU runs (Add for float32, float16 and int32), their launch-time
 * argument checks, and the pacing that makes a kernel take as long as its bytes need at the
 * device's configured compute speed. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "device/device_int.h"

/* Remaining time below which the pacer spins instead of sleeping: a sleep overshoots by
 * tens of microseconds, so the last stretch is spun on the clock. */
#define PACE_SPIN_NS 20000u

static bool dims_equal(const struct adump_dev_tensor *a, const struct adump_dev_tensor *b)
{
	if (a->dim_count != b->dim_count)
		return false;
	return memcmp(a->dims, b->dims, a->dim_count * sizeof(a->dims[0])) == 0;
}

/* Element count of @t (dim_count already checked), or -EINVAL for a negative dimension or
 * a count whose byte size would overflow. */
static int tensor_elem_count(const struct adump_dev_tensor *t, uint64_t *out)
{
	uint64_t count = 1;

	for (uint32_t i = 0; i < t->dim_count; i++) {
		if (t->dims[i] < 0)
			return -EINVAL;
		if (t->dims[i] && count > UINT64_MAX / 8 / (uint64_t)t->dims[i])
			return -EINVAL;
		count *= (uint64_t)t->dims[i];
	}
	*out = count;
	return 0;
}

int adump_dev_add_check(const struct adump_dev_tensor *self, const struct adump_dev_tensor *other,
			const struct adump_dev_tensor *out, uint64_t *elem_count)
{
	const struct adump_dev_tensor *all[3] = { self, other, out };
	uint64_t count;
	unsigned bits;
	int ret;

	if (!self || !other || !out)
		return -EINVAL;
	if (self->dtype != other->dtype || self->dtype != out->dtype)
		return -EINVAL;
	switch (self->dtype) {
	case ADUMP_DT_FLOAT:
	case ADUMP_DT_FLOAT16:
	case ADUMP_DT_INT32:
		break;
	default:
		return -ADUMP_ERR_UNSUPPORTED;
	}
	for (int i = 0; i < 3; i++)
		if (all[i]->dim_count > ADUMP_MAX_DIMS || all[i]->orig_dim_count > ADUMP_MAX_DIMS)
			return -EINVAL;
	/* No broadcasting: the three shapes must match exactly. */
	if (!dims_equal(self, other) || !dims_equal(self, out))
		return -EINVAL;
	ret = tensor_elem_count(self, &count);
	if (ret < 0)
		return ret;
	bits = adump_dtype_bits(self->dtype);
	for (int i = 0; i < 3; i++) {
		if (all[i]->bytes != count * (bits / 8))
			return -EINVAL;
		if (all[i]->bytes && !all[i]->data)
			return -EINVAL;
	}
	*elem_count = count;
	return 0;
}

/* Saturating double -> int32, so an out-of-range alpha is not undefined behaviour. */
static int32_t alpha_to_int32(double alpha)
{
	if (isnan(alpha))
		return 0;
	if (alpha >= 2147483647.0)
		return INT32_MAX;
	if (alpha <= -2147483648.0)
		return INT32_MIN;
	return (int32_t)alpha;
}

static void add_float_scalar(float *out, const float *self, const float *other, float alpha,
			     uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		out[i] = self[i] + alpha * other[i];
}

static void add_int32_scalar(int32_t *out, const int32_t *self, const int32_t *other,
			     int32_t alpha, uint64_t n)
{
	/* Unsigned arithmetic wraps on overflow like the hardware does, without signed UB. */
	for (uint64_t i = 0; i < n; i++)
		out[i] = (int32_t)((uint32_t)self[i] + (uint32_t)alpha * (uint32_t)other[i]);
}

static void add_half_scalar(_Float16 *out, const _Float16 *self, const _Float16 *other,
			    float alpha, uint64_t n)
{
	/* Computed in float and rounded once, as a vector unit with a float accumulator does. */
	for (uint64_t i = 0; i < n; i++)
		out[i] = (_Float16)((float)self[i] + alpha * (float)other[i]);
}

#if defined(__x86_64__)
#include <immintrin.h>

/* Eight lanes at a time. GCC's -O2 leaves the scalar loops scalar (out may alias self or
 * other, and versioning for that is beyond its cheap vectorizer), which made the simulated
 * device's Adds several times slower than memory and took CPU from the capture on the same
 * cores. Like the half kernel, these read a block before writing it, so out == self works;
 * multiply then add, no FMA: bit-identical to the scalar loops. */
__attribute__((target("avx"))) static void add_float_avx(float *out, const float *self,
							 const float *other, float alpha,
							 uint64_t n)
{
	const __m256 a = _mm256_set1_ps(alpha);
	uint64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(self + i);
		__m256 y = _mm256_loadu_ps(other + i);

		_mm256_storeu_ps(out + i, _mm256_add_ps(x, _mm256_mul_ps(a, y)));
	}
	add_float_scalar(out + i, self + i, other + i, alpha, n - i);
}

__attribute__((target("avx2"))) static void add_int32_avx2(int32_t *out, const int32_t *self,
							   const int32_t *other, int32_t alpha,
							   uint64_t n)
{
	const __m256i a = _mm256_set1_epi32(alpha);
	uint64_t i = 0;

	/* vpmulld keeps the low 32 bits and vpaddd wraps: the scalar loop's arithmetic. */
	for (; i + 8 <= n; i += 8) {
		__m256i x = _mm256_loadu_si256((const __m256i *)(self + i));
		__m256i y = _mm256_loadu_si256((const __m256i *)(other + i));

		_mm256_storeu_si256((__m256i *)(out + i), _mm256_add_epi32(x, _mm256_mullo_epi32(a, y)));
	}
	add_int32_scalar(out + i, self + i, other + i, alpha, n - i);
}

/* The same computation with F16C conversions: without them every half<->float conversion is
 * a library call, and the simulated device would spend its time there. Round to nearest
 * even, multiply then add (no FMA): bit-identical to add_half_scalar(). */
__attribute__((target("avx,f16c"))) static void add_half_f16c(_Float16 *out, const _Float16 *self,
							     const _Float16 *other, float alpha,
							     uint64_t n)
{
	const __m256 a = _mm256_set1_ps(alpha);
	uint64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(self + i)));
		__m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(other + i)));
		__m256 r = _mm256_add_ps(x, _mm256_mul_ps(a, y));

		_mm_storeu_si128((__m128i *)(out + i), _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
	}
	add_half_scalar(out + i, self + i, other + i, alpha, n - i);
}
#endif

static void add_float(float *out, const float *self, const float *other, float alpha, uint64_t n)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx")) {
		add_float_avx(out, self, other, alpha, n);
		return;
	}
#endif
	add_float_scalar(out, self, other, alpha, n);
}

static void add_int32(int32_t *out, const int32_t *self, const int32_t *other, int32_t alpha,
		      uint64_t n)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2")) {
		add_int32_avx2(out, self, other, alpha, n);
		return;
	}
#endif
	add_int32_scalar(out, self, other, alpha, n);
}

static void add_half(_Float16 *out, const _Float16 *self, const _Float16 *other, float alpha,
		     uint64_t n)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx")) {
		add_half_f16c(out, self, other, alpha, n);
		return;
	}
#endif
	add_half_scalar(out, self, other, alpha, n);
}

/* Waits until @deadline_ns (CLOCK_MONOTONIC): sleeps for the long part, spins the rest. */
static void pace_until(uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = adump_now_ns();

		if (now >= deadline_ns)
			return;
		if (deadline_ns - now > PACE_SPIN_NS) {
			uint64_t wake = deadline_ns - PACE_SPIN_NS;
			struct timespec ts = {
				.tv_sec = (time_t)(wake / 1000000000u),
				.tv_nsec = (long)(wake % 1000000000u),
			};

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
	}
}

int adump_dev_add_run(struct adump_dev *dev, const struct adump_dev_task *task)
{
	double gbps = atomic_load_explicit(&dev->compute_gbps, memory_order_relaxed);
	uint64_t start = gbps > 0 ? adump_now_ns() : 0;
	bool ok;

	/* Launch checked the pointers; this catches memory freed while the task was queued. */
	if (task->bytes) {
		adump_dev_mem_rdlock(dev);
		ok = adump_dev_range_ok_locked(dev, task->self, task->bytes) &&
		     adump_dev_range_ok_locked(dev, task->other, task->bytes) &&
		     adump_dev_range_ok_locked(dev, task->out, task->bytes);
		adump_dev_mem_unlock(dev);
		if (!ok)
			return -EINVAL;
	}
	switch (task->dtype) {
	case ADUMP_DT_FLOAT:
		add_float(task->out, task->self, task->other, (float)task->alpha, task->elem_count);
		break;
	case ADUMP_DT_FLOAT16:
		add_half(task->out, task->self, task->other, (float)task->alpha, task->elem_count);
		break;
	case ADUMP_DT_INT32:
		add_int32(task->out, task->self, task->other, alpha_to_int32(task->alpha),
			  task->elem_count);
		break;
	default:
		return -EINVAL;
	}
	if (gbps > 0) {
		/* Two inputs and one output cross the simulated memory bus. */
		double ns = (double)task->bytes * 3.0 / gbps;

		pace_until(start + (uint64_t)ns);
	}
	return 0;
}
