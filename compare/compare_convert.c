/* SPDX-License-Identifier: Apache-2.0 */
/* The element types `adump compare` reads: each dtype's element size and msaccucmp's name for
 * it, and the conversion of raw elements to the float32 values the metrics are made of
 * (numpy's astype(float32)): float16 by table or F16C, int32 by AVX2, the rest by C's casts. */
#include <pthread.h>
#include <string.h>

#include "compare/compare_int.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

uint32_t adump_compare_elem_bytes(int32_t dtype)
{
	switch (dtype) {
	case ADUMP_DT_INT8:
	case ADUMP_DT_UINT8:
	case ADUMP_DT_BOOL:
		return 1;
	case ADUMP_DT_FLOAT16:
	case ADUMP_DT_BF16:
	case ADUMP_DT_INT16:
	case ADUMP_DT_UINT16:
		return 2;
	case ADUMP_DT_FLOAT:
	case ADUMP_DT_INT32:
	case ADUMP_DT_UINT32:
		return 4;
	case ADUMP_DT_DOUBLE:
	case ADUMP_DT_INT64:
	case ADUMP_DT_UINT64:
		return 8;
	default:
		return 0;
	}
}

const char *adump_compare_dtype_name(int32_t dtype)
{
	switch (dtype) {
	case ADUMP_DT_FLOAT: return "float32";
	case ADUMP_DT_FLOAT16: return "float16";
	case ADUMP_DT_DOUBLE: return "float64";
	case ADUMP_DT_INT8: return "int8";
	case ADUMP_DT_INT16: return "int16";
	case ADUMP_DT_INT32: return "int32";
	case ADUMP_DT_INT64: return "int64";
	case ADUMP_DT_UINT8: return "uint8";
	case ADUMP_DT_UINT16: return "uint16";
	case ADUMP_DT_UINT32: return "uint32";
	case ADUMP_DT_UINT64: return "uint64";
	case ADUMP_DT_BOOL: return "bool";
	case ADUMP_DT_COMPLEX64: return "complex64";
	case ADUMP_DT_COMPLEX128: return "complex128";
	case ADUMP_DT_BF16: return "bfloat16";
	case ADUMP_DT_UINT1: return "uint1";
	case ADUMP_DT_UNDEFINED: return "int8";
	case ADUMP_DT_RESOURCE: return "int64";
	case ADUMP_DT_FLOAT8_E4M3FN: return "float8_e4m3fn";
	case ADUMP_DT_HIFLOAT8: return "hifloat8";
	case ADUMP_DT_FLOAT8_E5M2: return "float8_e5m2";
	default: return "NaN";
	}
}

#define CONVERT(type, expr)                                   \
	do {                                                  \
		const unsigned char *p = raw;                 \
		for (size_t i = 0; i < n; i++, p += sizeof(type)) { \
			type v;                               \
			memcpy(&v, p, sizeof(v));             \
			out[i] = (expr);                      \
		}                                             \
	} while (0)

/* float16 -> float32 by table: the reader's conversion, looked up instead of recomputed. */
static float half_table[1 << 16];
static pthread_once_t half_once = PTHREAD_ONCE_INIT;

static void half_table_fill(void)
{
	for (uint32_t h = 0; h < (1u << 16); h++)
		half_table[h] = adump_half_to_float((uint16_t)h);
}

#if defined(__x86_64__)
/* float16 and int32 eight at a time; return how many were converted (the rest is left to the
 * portable loops). vcvtph2ps is exact, as the table is; vcvtdq2ps rounds to nearest, as the
 * C conversion does. */
__attribute__((target("avx2,f16c"))) static size_t half_run_f16c(const void *raw, size_t n, float *out)
{
	const unsigned char *p = raw;
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * i))));
	return i;
}

__attribute__((target("avx2"))) static size_t int32_run_avx2(const void *raw, size_t n, float *out)
{
	const unsigned char *p = raw;
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(out + i, _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(p + 4 * i))));
	return i;
}
#endif

void adump_compare_to_float(int32_t dtype, const void *raw, size_t n, float *out)
{
#if defined(__x86_64__)
	if ((dtype == ADUMP_DT_FLOAT16 || dtype == ADUMP_DT_INT32) && adump_compare_has_avx2()) {
		size_t done = dtype == ADUMP_DT_FLOAT16 ? half_run_f16c(raw, n, out)
							: int32_run_avx2(raw, n, out);
		size_t eb = dtype == ADUMP_DT_FLOAT16 ? 2 : 4;

		raw = (const unsigned char *)raw + done * eb;
		out += done;
		n -= done;
	}
#endif
	switch (dtype) {
	case ADUMP_DT_FLOAT:
		memcpy(out, raw, n * sizeof(float));
		break;
	case ADUMP_DT_FLOAT16:
		pthread_once(&half_once, half_table_fill);
		CONVERT(uint16_t, half_table[v]);
		break;
	case ADUMP_DT_BF16:
		CONVERT(uint16_t, adump_bf16_to_float(v));
		break;
	case ADUMP_DT_DOUBLE:
		CONVERT(double, (float)v);
		break;
	case ADUMP_DT_INT8:
		CONVERT(int8_t, (float)v);
		break;
	case ADUMP_DT_UINT8:
		CONVERT(uint8_t, (float)v);
		break;
	case ADUMP_DT_BOOL:
		CONVERT(uint8_t, v ? 1.0f : 0.0f);
		break;
	case ADUMP_DT_INT16:
		CONVERT(int16_t, (float)v);
		break;
	case ADUMP_DT_UINT16:
		CONVERT(uint16_t, (float)v);
		break;
	case ADUMP_DT_INT32:
		CONVERT(int32_t, (float)v);
		break;
	case ADUMP_DT_UINT32:
		CONVERT(uint32_t, (float)v);
		break;
	case ADUMP_DT_INT64:
		CONVERT(int64_t, (float)v);
		break;
	case ADUMP_DT_UINT64:
		CONVERT(uint64_t, (float)v);
		break;
	default:
		memset(out, 0, n * sizeof(float));
		break;
	}
}
