/* SPDX-License-Identifier: Apache-2.0 */
/* A session's configuration checked before anything is made: every field against its range
 * and the combinations that cannot work together, each refusal logged naming the field and
 * what it allows (-ADUMP_ERR_CONFIG). The session itself is session.c's. */
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "pipeline/pipeline_int.h"

#define MODULE "session"

/* Window mode's fields (window.c). */
static int window_check(const struct adump_config *cfg, size_t chunk)
{
	uint32_t triggers = cfg->triggers ? cfg->triggers : ADUMP_TRIGGER_DEFAULT;

	if (!cfg->window_steps) {
		if (cfg->window_bytes || cfg->window_persists || cfg->triggers || cfg->bound_count ||
		    cfg->deviation != 0 || cfg->deviation_steps) {
			adump_log(ADUMP_LOG_ERROR, MODULE, "window_bytes, window_persists, triggers, "
				  "bounds and deviation apply to window mode (window_steps > 0)");
			return -ADUMP_ERR_CONFIG;
		}
		return 0;
	}
	if (cfg->content != ADUMP_CONTENT_TENSOR || cfg->layout != ADUMP_LAYOUT_FILES ||
	    cfg->compress != ADUMP_COMPRESS_NONE || cfg->io == ADUMP_IO_DIRECT) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "window mode writes statistics and, when a "
			  "trigger fires, tensors: content tensor, the files layout, no compression, "
			  "io buffered or auto");
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->window_bytes && cfg->window_bytes < chunk) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "window_bytes %llu below one chunk (%zu bytes)",
			  (unsigned long long)cfg->window_bytes, chunk);
		return -ADUMP_ERR_CONFIG;
	}
	if (triggers & ~(uint32_t)ADUMP_TRIGGER_ALL) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "triggers 0x%x has unknown bits", cfg->triggers);
		return -ADUMP_ERR_CONFIG;
	}
	if (!(triggers & ADUMP_TRIGGER_BOUND) != !cfg->bound_count) {
		adump_log(ADUMP_LOG_ERROR, MODULE, cfg->bound_count ? "bounds given without the "
			  "bound trigger" : "the bound trigger needs bounds");
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->bound_count > ADUMP_MAX_BOUNDS || (cfg->bound_count && !cfg->bounds)) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "bounds: %u of them (at most %u, not NULL)",
			  cfg->bound_count, ADUMP_MAX_BOUNDS);
		return -ADUMP_ERR_CONFIG;
	}
	for (unsigned i = 0; i < cfg->bound_count; i++) {
		const struct adump_bound *b = &cfg->bounds[i];

		if (!b->pattern || !b->pattern[0] || !(b->max_abs > 0) || b->max_abs > DBL_MAX) {
			adump_log(ADUMP_LOG_ERROR, MODULE, "bound %u: a non-empty pattern and a "
				  "finite max_abs above 0", i);
			return -ADUMP_ERR_CONFIG;
		}
	}
	if (!(cfg->deviation >= 0) || cfg->deviation > DBL_MAX ||
	    cfg->deviation_steps > ADUMP_MAX_DEVIATION_STEPS) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "deviation must be a finite factor >= 0 and "
			  "deviation_steps at most %u", ADUMP_MAX_DEVIATION_STEPS);
		return -ADUMP_ERR_CONFIG;
	}
	if ((cfg->deviation != 0 || cfg->deviation_steps) &&
	    !(triggers & ADUMP_TRIGGER_DEVIATION)) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "deviation given without the deviation trigger");
		return -ADUMP_ERR_CONFIG;
	}
	return 0;
}

int adump_config_check(const struct adump_config *cfg)
{
	size_t chunk, pool;
	int ret;

	if (!cfg) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "config is NULL");
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->struct_size < sizeof(struct adump_config)) {
		adump_log(ADUMP_LOG_ERROR, MODULE,
			  "config.struct_size %zu: initialise the config with ADUMP_CONFIG_INIT",
			  cfg->struct_size);
		return -ADUMP_ERR_CONFIG;
	}
	chunk = cfg_chunk(cfg);
	pool = cfg_pool(cfg);
	if (chunk < ADUMP_MIN_CHUNK_BYTES || chunk > ADUMP_MAX_CHUNK_BYTES) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "chunk_bytes %zu out of range [%u, %u]", chunk,
			  ADUMP_MIN_CHUNK_BYTES, ADUMP_MAX_CHUNK_BYTES);
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg_stream_max(cfg) > ADUMP_STREAM_MAX_LIMIT) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "stream_max %u above %u", cfg->stream_max,
			  ADUMP_STREAM_MAX_LIMIT);
		return -ADUMP_ERR_CONFIG;
	}
	if (pool / chunk < (size_t)ADUMP_MIN_BUFFERS_PER_STREAM * cfg_stream_max(cfg)) {
		adump_log(ADUMP_LOG_ERROR, MODULE,
			  "pool_bytes %zu holds %zu chunks of %zu bytes; stream_max %u streams "
			  "need at least %u each",
			  pool, pool / chunk, chunk, cfg_stream_max(cfg), ADUMP_MIN_BUFFERS_PER_STREAM);
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->worker_count > ADUMP_WORKER_MAX) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "worker_count %u above %u", cfg->worker_count,
			  ADUMP_WORKER_MAX);
		return -ADUMP_ERR_CONFIG;
	}
	if ((unsigned)cfg->on_full > ADUMP_ON_FULL_DROP || (unsigned)cfg->writer > ADUMP_WRITER_PWRITE ||
	    (unsigned)cfg->sink > ADUMP_SINK_CALLBACK) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "on_full, writer or sink has an unknown value");
		return -ADUMP_ERR_CONFIG;
	}
	if ((unsigned)cfg->io > ADUMP_IO_AUTO || (unsigned)cfg->compress > ADUMP_COMPRESS_LZ4 ||
	    (unsigned)cfg->layout > ADUMP_LAYOUT_PACKED || (unsigned)cfg->content > ADUMP_CONTENT_STATS) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "io, compress, layout or content has an unknown value");
		return -ADUMP_ERR_CONFIG;
	}
	if ((unsigned)cfg->format > ADUMP_OUTPUT_MSPROBE ||
	    (unsigned)cfg->summary > ADUMP_SUMMARY_MD5) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "format or summary has an unknown value");
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->format == ADUMP_OUTPUT_MSPROBE &&
	    (cfg->sink != ADUMP_SINK_FILE || cfg->layout != ADUMP_LAYOUT_FILES ||
	     cfg->compress != ADUMP_COMPRESS_NONE || cfg->io == ADUMP_IO_DIRECT)) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "format msprobe applies to the file sink with "
			  "the files layout, no compression, io buffered or auto");
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->summary != ADUMP_SUMMARY_STATISTICS && cfg->format != ADUMP_OUTPUT_MSPROBE) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "summary applies to format msprobe");
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->compress == ADUMP_COMPRESS_LZ4 &&
	    (cfg->sink != ADUMP_SINK_FILE || cfg->layout != ADUMP_LAYOUT_FILES ||
	     cfg->content != ADUMP_CONTENT_TENSOR)) {
		adump_log(ADUMP_LOG_ERROR, MODULE,
			  "compress lz4 applies to tensor dumps in the file sink with the files layout");
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->layout == ADUMP_LAYOUT_PACKED &&
	    (cfg->sink != ADUMP_SINK_FILE || cfg->content != ADUMP_CONTENT_TENSOR)) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "layout packed applies to tensor dumps in the file sink");
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->content == ADUMP_CONTENT_STATS && (cfg->stats_mask & ~(uint32_t)ADUMP_STAT_ALL)) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "stats_mask 0x%x has unknown bits", cfg->stats_mask);
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->io == ADUMP_IO_DIRECT &&
	    (cfg->sink != ADUMP_SINK_FILE || cfg->layout != ADUMP_LAYOUT_FILES ||
	     cfg->compress != ADUMP_COMPRESS_NONE || cfg->content != ADUMP_CONTENT_TENSOR)) {
		adump_log(ADUMP_LOG_ERROR, MODULE,
			  "io direct applies to uncompressed tensor dumps in the file sink, files layout");
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->io == ADUMP_IO_DIRECT && chunk % ADUMP_DIRECT_ALIGN) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "io direct needs chunk_bytes a multiple of %u",
			  ADUMP_DIRECT_ALIGN);
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->sink == ADUMP_SINK_CALLBACK && !cfg->chunk_fn) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "sink is callback but chunk_fn is NULL");
		return -ADUMP_ERR_CONFIG;
	}
	if (cfg->sink == ADUMP_SINK_FILE && (!cfg->dump_path || !cfg->dump_path[0])) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "dump_path is required for the file sink");
		return -ADUMP_ERR_CONFIG;
	}
	ret = window_check(cfg, chunk);
	if (ret < 0)
		return ret;
	if (cfg->time_dir && (strchr(cfg->time_dir, '/') || !strcmp(cfg->time_dir, "..") ||
			      !strcmp(cfg->time_dir, "."))) {
		adump_log(ADUMP_LOG_ERROR, MODULE, "time_dir '%s' must be a single path component",
			  cfg->time_dir);
		return -ADUMP_ERR_CONFIG;
	}
	return 0;
}
