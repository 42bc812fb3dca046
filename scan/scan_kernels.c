/* SPDX-License-Identifier: Apache-2.0 */
/* scan's element kernels: a tensor's NaN, Inf and float16-limit counts, read piece by piece.
 * Almost every tensor is finite: a pass takes the largest magnitude's bits (sign cleared),
 * which is below the exponent-all-ones pattern exactly when every element is finite (and,
 * for float16, below 0x7bff = 65504 when none is at the limit). Only a piece that fails that
 * is counted element by element. */
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "scan/scan_int.h"

bool adump_scan_bits_of(int32_t dtype, struct scan_bits *b)
{
	if (dtype == ADUMP_DT_FLOAT)
		*b = (struct scan_bits){ 4, 0x7fffffffu, 0x7f800000u, 0x7f800000u };
	else if (dtype == ADUMP_DT_FLOAT16)
		*b = (struct scan_bits){ 2, 0x7fffu, 0x7c00u, 0x7bffu };
	else if (dtype == ADUMP_DT_BF16)
		*b = (struct scan_bits){ 2, 0x7fffu, 0x7f80u, 0x7f80u };
	else
		return false;
	return true;
}

static uint32_t max_scalar(const struct scan_bits *b, const unsigned char *p, size_t n)
{
	uint32_t m = 0;

	if (b->width == 4) {
		for (size_t i = 0; i < n; i++) {
			uint32_t v;

			memcpy(&v, p + 4 * i, 4);
			v &= b->magnitude;
			m = v > m ? v : m;
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			uint16_t v;

			memcpy(&v, p + 2 * i, 2);
			v &= (uint16_t)b->magnitude;
			m = v > m ? v : m;
		}
	}
	return m;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) static uint32_t max_avx2(const struct scan_bits *b,
							  const unsigned char *p, size_t n)
{
	size_t per = 32 / b->width, i = 0, k;
	__m256i acc = _mm256_setzero_si256();
	uint32_t lanes[8], m;

	if (b->width == 4) {
		__m256i mask = _mm256_set1_epi32((int)b->magnitude);

		for (; i + per <= n; i += per)
			acc = _mm256_max_epu32(acc, _mm256_and_si256(mask, _mm256_loadu_si256(
						(const __m256i *)(p + 4 * i))));
	} else {
		__m256i mask = _mm256_set1_epi16((short)b->magnitude);

		for (; i + per <= n; i += per)
			acc = _mm256_max_epu16(acc, _mm256_and_si256(mask, _mm256_loadu_si256(
						(const __m256i *)(p + 2 * i))));
		/* 16 lanes of 16 bits into 8 of 32: the larger of each pair. */
		acc = _mm256_max_epu32(_mm256_and_si256(acc, _mm256_set1_epi32(0xffff)),
				       _mm256_srli_epi32(acc, 16));
	}
	_mm256_storeu_si256((__m256i *)lanes, acc);
	m = max_scalar(b, p + b->width * i, n - i);
	for (k = 0; k < 8; k++)
		m = lanes[k] > m ? lanes[k] : m;
	return m;
}
#endif

static uint32_t magnitude_max(const struct scan_bits *b, const unsigned char *p, size_t n)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2"))
		return max_avx2(b, p, n);
#endif
	return max_scalar(b, p, n);
}

/* Count one piece's NaN, Inf and (float16) limit elements. */
static void count_piece(const struct scan_bits *b, const unsigned char *p, size_t n,
			struct adump_scan_counts *c, bool *is_limit)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t v = 0;

		if (b->width == 4) {
			memcpy(&v, p + 4 * i, 4);
		} else {
			uint16_t h;

			memcpy(&h, p + 2 * i, 2);
			v = h;
		}
		v &= b->magnitude;
		if (v > b->exponent)
			c->nan_count++;
		else if (v == b->exponent)
			c->inf_count++;
		else if (v >= b->limit && b->limit != b->exponent)
			*is_limit = true;
	}
}

int adump_scan_floats(struct adump_reader *rd, uint32_t tensor, const struct scan_bits *b,
		      uint64_t bytes, unsigned char *buf, struct adump_scan_counts *c,
		      bool *is_limit)
{
	const unsigned char *mapped = adump_reader_map(rd, tensor);
	size_t step = STEP_BYTES - STEP_BYTES % b->width;
	uint64_t done = 0;

	while (done + b->width <= bytes) {
		size_t len = bytes - done < step ? (size_t)(bytes - done) : step;
		const unsigned char *p;
		size_t n;
		int ret;

		len -= len % b->width;
		if (mapped) {
			p = mapped + done;
		} else {
			ret = adump_reader_read(rd, tensor, done, buf, len);
			if (ret < 0)
				return ret;
			p = buf;
		}
		n = len / b->width;
		if (magnitude_max(b, p, n) >= b->limit)
			count_piece(b, p, n, c, is_limit);
		done += len;
	}
	return 0;
}
