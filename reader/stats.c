/* SPDX-License-Identifier: Apache-2.0 */
/* Per-tensor statistics (min, max, mean, NaN and Inf counts), streamed through the payload
 * one step at a time so a tensor of any size needs only a fixed buffer: common/tstats.c's
 * statistics, read by the finite-values rules. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reader/reader.h"

bool adump_reader_stats_supported(int32_t dtype)
{
	return adump_tstats_kind_of(dtype, NULL) != ADUMP_TSTATS_NONE;
}

int adump_reader_tensor_stats(struct adump_reader *r, uint32_t tensor,
			      struct adump_reader_stats *out)
{
	const struct adump_reader_header *h = adump_reader_header(r);
	const struct adump_reader_tensor *t;
	struct adump_reader_stats s = { 0 };
	struct adump_tstats ts;
	const unsigned char *mapped;
	unsigned char *buf = NULL;
	uint64_t done = 0;
	size_t elem, step;
	int ret = 0;

	if (!h || !out)
		return h ? adump_reader_fail(r, -ADUMP_ERR_CONFIG, "statistics: no place for them")
			 : -ADUMP_ERR_CONFIG;
	if (tensor >= h->tensor_count)
		return adump_reader_fail(r, -ADUMP_ERR_CONFIG, "statistics of tensor %u: out of "
					 "range (the dump has %u tensors)", tensor, h->tensor_count);
	t = &h->tensors[tensor];
	if (!adump_reader_stats_supported(t->info.dtype))
		return adump_reader_fail(r, -ADUMP_ERR_UNSUPPORTED,
					 "%s %u: no statistics for dtype %d (%s)",
					 adump_reader_kind_name(t->info.kind), t->index,
					 t->info.dtype,
					 adump_dtype_name(t->info.dtype) ? adump_dtype_name(t->info.dtype)
									 : "unknown");
	elem = adump_dtype_bits(t->info.dtype) / 8;
	if (t->info.bytes % elem)
		return adump_reader_fail(r, -ADUMP_ERR_CORRUPT,
					 "%s %u: size %llu is not a whole number of %zu-byte %s "
					 "elements",
					 adump_reader_kind_name(t->info.kind), t->index,
					 (unsigned long long)t->info.bytes, elem,
					 adump_dtype_name(t->info.dtype));
	adump_tstats_init(&ts, t->info.dtype);
	mapped = adump_reader_map(r, tensor);
	if (mapped) {
		adump_tstats_add(&ts, mapped, (size_t)(t->info.bytes / elem));
	} else if (t->info.bytes) {
		/* A whole number of elements per step keeps elements from straddling reads. */
		step = ADUMP_READER_STEP_BYTES - ADUMP_READER_STEP_BYTES % elem;
		if (t->info.bytes < step)
			step = (size_t)t->info.bytes;
		buf = malloc(step);
		if (!buf)
			return adump_reader_fail(r, -ENOMEM, "out of memory for a read buffer");
		while (done < t->info.bytes) {
			size_t n = t->info.bytes - done < step ? (size_t)(t->info.bytes - done) : step;

			ret = adump_reader_read(r, tensor, done, buf, n);
			if (ret < 0)
				goto out;
			adump_tstats_add(&ts, buf, n / elem);
			done += n;
		}
	}
	s.element_count = ts.count;
	s.finite_count = adump_tstats_finite_count(&ts);
	s.nan_count = ts.nan_count;
	s.inf_count = ts.pos_inf_count + ts.neg_inf_count;
	s.is_integer = ts.kind == ADUMP_TSTATS_SINT || ts.kind == ADUMP_TSTATS_UINT ||
		       ts.kind == ADUMP_TSTATS_BOOL;
	s.mean = adump_tstats_finite_mean(&ts);
	/* Without a finite value everything else stays 0 rather than the start values. The
	 * integer fields only mean something for integer dtypes, each exact in its range. */
	if (s.finite_count && ts.kind == ADUMP_TSTATS_SINT) {
		s.min_int = ts.smin;
		s.max_int = ts.smax;
		s.min = (double)s.min_int;
		s.max = (double)s.max_int;
		s.min_uint = s.min_int < 0 ? 0 : (uint64_t)s.min_int;
		s.max_uint = s.max_int < 0 ? 0 : (uint64_t)s.max_int;
	} else if (s.finite_count && s.is_integer) {
		s.min_uint = ts.umin;
		s.max_uint = ts.umax;
		s.min = (double)s.min_uint;
		s.max = (double)s.max_uint;
		s.min_int = s.min_uint > INT64_MAX ? INT64_MAX : (int64_t)s.min_uint;
		s.max_int = s.max_uint > INT64_MAX ? INT64_MAX : (int64_t)s.max_uint;
	} else if (s.finite_count) {
		s.min = ts.min;
		s.max = ts.max;
	}
	*out = s;
out:
	free(buf);
	return ret;
}
