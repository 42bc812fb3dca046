/* SPDX-License-Identifier: Apache-2.0 */
/* Latency histograms (adump.h): log-spaced buckets, four per octave, and percentiles. The
 * channels count into them; the session and the bench read them. */
#include "common/common.h"

unsigned adump_hist_bucket(uint64_t ns)
{
	unsigned octave, sub, b;

	if (ns < ADUMP_HIST_SUB_BUCKETS)
		return (unsigned)ns;            /* 0..3 ns: one bucket a nanosecond */
	octave = 63u - (unsigned)__builtin_clzll(ns);   /* >= 2 */
	sub = (unsigned)(ns >> (octave - 2)) & 3u;      /* the two bits below the leading one */
	b = ADUMP_HIST_SUB_BUCKETS * (octave - 1) + sub;
	return b < ADUMP_HIST_BUCKETS ? b : ADUMP_HIST_BUCKETS - 1;
}

uint64_t adump_hist_bucket_end(unsigned i)
{
	unsigned octave = i / ADUMP_HIST_SUB_BUCKETS + 1, sub = i % ADUMP_HIST_SUB_BUCKETS;

	if (i < ADUMP_HIST_SUB_BUCKETS)
		return i + 1;
	return (uint64_t)(ADUMP_HIST_SUB_BUCKETS + sub + 1) << (octave - 2);
}

uint64_t adump_hist_percentile(const uint64_t *hist, double q)
{
	uint64_t total = 0, seen = 0;

	for (unsigned i = 0; i < ADUMP_HIST_BUCKETS; i++)
		total += hist[i];
	if (!total)
		return 0;
	for (unsigned i = 0; i < ADUMP_HIST_BUCKETS; i++) {
		seen += hist[i];
		if ((double)seen >= q * (double)total)
			return adump_hist_bucket_end(i);
	}
	return adump_hist_bucket_end(ADUMP_HIST_BUCKETS - 1);
}
