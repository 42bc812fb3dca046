/* SPDX-License-Identifier: Apache-2.0 */
/* `adump bench`: the report. Every figure is worked out once, into a table of fields (a JSON
 * key, a kind and a value; for the runs' table also a column of the human report), and both
 * printers walk that table: the JSON object prints every field, the human report the ones
 * with a column, plus the prose lines of the capture's summary.
 *
 * One file past 600 lines on purpose: the table (fields, rows, columns and the ratios they
 * hold) is this file's own, and both printers must show the same figures from it; kept in
 * one file, the table's types stay private to it and no figure can be worked out twice, once
 * per printer. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "tools/bench_int.h"

const char *const tool_bench_base_names[BENCH_BASE_COUNT] = {
	"naive", "disk-limit", "disk-limit-direct", "create-limit", "publish-limit", "ring-limit",
	"nodump",
	"fio-buffered", "fio-direct",
};
const char *const tool_bench_base_keys[BENCH_BASE_COUNT] = {
	"naive", "disk_limit", "disk_limit_direct", "create_limit", "publish_limit", "ring_limit",
	"nodump",
	"fio_buffered", "fio_direct",
};

enum field_kind { FIELD_U64, FIELD_DOUBLE, FIELD_INT, FIELD_STRING, FIELD_BOOL, FIELD_NULL };

struct field {
	const char *key;                        /* JSON key */
	enum field_kind kind;
	int decimals;                           /* FIELD_DOUBLE, in JSON */
	union {
		uint64_t u;
		double d;
		int i;
		const char *s;
		bool is;
	};
};

#define F_U64(k, v) ((struct field){ .key = (k), .kind = FIELD_U64, .u = (uint64_t)(v) })
#define F_DBL(k, dec, v) ((struct field){ .key = (k), .kind = FIELD_DOUBLE, .decimals = (dec), \
					  .d = (v) })
#define F_INT(k, v) ((struct field){ .key = (k), .kind = FIELD_INT, .i = (v) })
#define F_STR(k, v) ((struct field){ .key = (k), .kind = FIELD_STRING, .s = (v) })
#define F_BOOL(k, v) ((struct field){ .key = (k), .kind = FIELD_BOOL, .is = (v) })
#define F_NULL(k) ((struct field){ .key = (k), .kind = FIELD_NULL })
/* A ratio, or null when a run it depends on failed. */
#define F_RATIO(k, ok, v) ((ok) ? F_DBL(k, 4, v) : F_NULL(k))

#define FIELDS_CAP 64
struct fields {
	struct field f[FIELDS_CAP];
	size_t count;
};

static void add(struct fields *fs, struct field f)
{
	if (fs->count < FIELDS_CAP)
		fs->f[fs->count++] = f;
}

/* The fields as JSON members, each preceded by a comma but the very first of the object. */
static void json_fields(const struct fields *fs, bool *is_first)
{
	for (size_t i = 0; i < fs->count; i++) {
		const struct field *f = &fs->f[i];

		printf("%s\"%s\":", *is_first ? "" : ",", f->key);
		*is_first = false;
		switch (f->kind) {
		case FIELD_U64:
			printf("%llu", (unsigned long long)f->u);
			break;
		case FIELD_DOUBLE:
			printf("%.*f", f->decimals, f->d);
			break;
		case FIELD_INT:
			printf("%d", f->i);
			break;
		case FIELD_STRING:
			printf("\"%s\"", f->s);
			break;
		case FIELD_BOOL:
			printf("%s", f->is ? "true" : "false");
			break;
		case FIELD_NULL:
			printf("null");
			break;
		}
	}
}

double tool_bench_per_s(double n, double s)
{
	return s > 0 ? n / s : 0.0;
}

static double gb(uint64_t bytes)
{
	return (double)bytes / 1e9;
}

static double per_gb(double seconds, uint64_t bytes)
{
	return bytes ? seconds / gb(bytes) : 0.0;
}

static bool is_per_byte(enum bench_base base)
{
	return base == BENCH_BASE_DISK || base == BENCH_BASE_DISK_DIRECT ||
	       base == BENCH_BASE_FIO_BUFFERED || base == BENCH_BASE_FIO_DIRECT;
}

/* Baselines that write one file per op, and so have per-file rates. */
static bool is_per_file(enum bench_base base)
{
	return base == BENCH_BASE_NAIVE || base == BENCH_BASE_CREATE || base == BENCH_BASE_PUBLISH;
}

/* How many times faster the capture went than baseline @base: its time over the capture's,
 * per byte for the disk baselines and fio (which may have written a slightly different
 * amount), per record for ring-limit, per file or op otherwise (the same number in both). */
static double ratio_to(enum bench_base base, const struct adump_bench_timing *t,
		       const struct bench_result *r)
{
	double scale = 1.0;

	if (t->error < 0 || r->seconds <= 0 || t->seconds <= 0)
		return 0.0;
	if (is_per_byte(base) && t->bytes)
		scale = (double)r->bytes / (double)t->bytes;
	if (base == BENCH_BASE_RING && t->records)
		scale = (double)r->records / (double)t->records;
	return t->seconds * scale / r->seconds;
}

/* The pipeline's channel hand-off as a fraction of bare ring pair @pair (ring->t, or
 * ring->ring_read whose consumer reads each record) on the same records: what the channel
 * costs beyond ck_ring, with no work around it. 0 if either failed. */
static double chan_ratio(const struct bench_phase *ring, const struct adump_bench_timing *pair)
{
	double chan_rate = tool_bench_per_s((double)ring->chan.records, ring->chan.seconds);
	double ring_rate = tool_bench_per_s((double)pair->records, pair->seconds);

	if (pair->error < 0 || ring->chan.error < 0 || ring_rate <= 0)
		return 0.0;
	return chan_rate / ring_rate;
}

/* ---- the runs' table: the capture and each baseline, one row each ---- */

/* What a column's figure means something only for: runs that wrote bytes, or one file per op. */
enum column_needs { NEEDS_NOTHING, NEEDS_BYTES, NEEDS_FILES };

/* A column of the human table: the field it shows, its width and decimals there. */
struct column {
	const char *head;
	const char *key;
	int width;
	int decimals;
	enum column_needs needs;
};

static const struct column columns[] = {
	{ "seconds", "seconds", 9, 3, NEEDS_NOTHING },
	{ "GB/s", "gbps", 9, 3, NEEDS_BYTES },
	{ "files/s", "files_per_s", 10, 0, NEEDS_FILES },
	{ "tensors/s", "tensors_per_s", 11, 0, NEEDS_FILES },
	{ "CPU s", "cpu_seconds", 8, 2, NEEDS_NOTHING },
	{ "adump speed x", "ratio", 14, 2, NEEDS_NOTHING },
};
#define COLUMN_COUNT (sizeof(columns) / sizeof(columns[0]))

/* The fields of one run. @has_bytes, @has_files: whether the GB/s and per-file columns mean
 * something for it (the human table shows "-" otherwise; JSON gives the numbers, 0 or not). */
struct row {
	struct fields fs;
	bool has_bytes, has_files;
};

static void row_of(struct row *row, const struct adump_bench_timing *t, uint64_t tensors,
		   double ratio)
{
	double s = t->seconds;

	row->fs.count = 0;
	add(&row->fs, F_DBL("seconds", 6, s));
	add(&row->fs, F_DBL("seconds_unsynced", 6, t->seconds_unsynced));
	add(&row->fs, F_U64("bytes", t->bytes));
	add(&row->fs, F_U64("files", t->files));
	add(&row->fs, F_U64("records", t->records));
	add(&row->fs, F_DBL("gbps", 6, tool_bench_per_s(gb(t->bytes), s)));
	add(&row->fs, F_DBL("files_per_s", 1, tool_bench_per_s((double)t->files, s)));
	add(&row->fs, F_DBL("tensors_per_s", 1, tool_bench_per_s((double)tensors, s)));
	add(&row->fs, F_DBL("records_per_s", 1, tool_bench_per_s((double)t->records, s)));
	add(&row->fs, F_DBL("cpu_seconds", 4, t->cpu_seconds));
	add(&row->fs, F_DBL("cpu_seconds_per_gb", 4, per_gb(t->cpu_seconds, t->bytes)));
	add(&row->fs, F_DBL("ratio", 4, ratio));
	add(&row->fs, F_INT("error", t->error));
}

static void base_row(struct row *row, const struct bench *b, enum bench_base base)
{
	const struct bench_phase *ph = &b->ph[base];
	const struct adump_bench_timing *t = &ph->t;

	row_of(row, t, is_per_file(base) ? t->files * 3 : 0, ratio_to(base, t, &b->r));
	row->has_bytes = t->bytes != 0;
	row->has_files = is_per_file(base);
	add(&row->fs, F_DBL("gbps_before", 6, ph->run_gbps[0]));
	add(&row->fs, F_DBL("gbps_after", 6, ph->run_gbps[1]));
}

static const struct field *row_field(const struct row *row, const char *key)
{
	for (size_t i = 0; i < row->fs.count; i++)
		if (!strcmp(row->fs.f[i].key, key))
			return &row->fs.f[i];
	return NULL;
}

static void human_row(const char *name, const struct row *row)
{
	printf("  %-18s", name);
	for (size_t c = 0; c < COLUMN_COUNT; c++) {
		const struct field *f = row_field(row, columns[c].key);
		bool is_shown = f && (columns[c].needs != NEEDS_BYTES || row->has_bytes) &&
				(columns[c].needs != NEEDS_FILES || row->has_files);

		if (is_shown)
			printf(" %*.*f", columns[c].width, columns[c].decimals, f->d);
		else
			printf(" %*s", columns[c].width, "-");
	}
	printf("\n");
}

/* The ceiling: the faster of the fio runs that succeeded (NULL: none ran or none
 * succeeded), and the capture's speed relative to it. */
static const struct bench_phase *ceiling(const struct bench *b, enum bench_base *which)
{
	const struct bench_phase *best = NULL;

	for (int base = BENCH_BASE_FIO_BUFFERED; base <= BENCH_BASE_FIO_DIRECT; base++) {
		const struct bench_phase *ph = &b->ph[base];

		if (!ph->has_run || ph->t.error < 0 || ph->t.seconds <= 0)
			continue;
		if (!best || tool_bench_per_s(gb(ph->t.bytes), ph->t.seconds) >
				     tool_bench_per_s(gb(best->t.bytes), best->t.seconds)) {
			best = ph;
			*which = base;
		}
	}
	return best;
}

/* ---- the human report ---- */

static const char *io_name(enum adump_io io)
{
	return io == ADUMP_IO_DIRECT ? "direct" : io == ADUMP_IO_AUTO ? "auto" : "buffered";
}

static void human_summary(const struct bench *b)
{
	const struct bench_opts *o = &b->o;
	const struct adump_bench_plan *plan = &b->plan;
	const struct bench_result *r = &b->r;

	printf("adump bench: profile %s, %u streams, %llu ops, %u workers, sink %s (%s), io %s, "
	       "compress %s, data %s\n",
	       adump_bench_profile_name(plan->w.profile), plan->w.stream_count,
	       (unsigned long long)plan->op_count, r->st.worker_count,
	       tool_bench_sink_names[o->sink], r->backend,
	       io_name(o->io),
	       o->compress == ADUMP_COMPRESS_LZ4 ? "lz4" : "none",
	       plan->w.data == ADUMP_BENCH_DATA_RELU ? "relu" : "random");
	if (o->sink != BENCH_SINK_CALLBACK && r->st.backend_reason == ADUMP_WRITER_REASON_REFUSED)
		printf("  writer     %s: io_uring refused here (%s)\n", r->backend,
		       adump_strerror(r->st.backend_error));
	else if (o->sink != BENCH_SINK_CALLBACK)
		printf("  writer     %s (%s%s)\n", r->backend, tool_bench_backend_why(o, &r->st),
		       o->is_writer_forced ? ": ADUMP_IO=pwrite" : "");
	if (plan->w.profile == ADUMP_BENCH_PROFILE_RANGE)
		printf("  tensors    %llu..%llu B\n", (unsigned long long)plan->w.min_bytes,
		       (unsigned long long)plan->w.max_bytes);
	if (b->compute_gbps > 0 && o->compute_gbps < 0)
		printf("  compute    %.3f GB/s per stream (simulated; auto: half of %s)\n",
		       b->compute_gbps, tool_bench_base_names[b->compute_base]);
	else if (b->compute_gbps > 0)
		printf("  compute    %.3f GB/s per stream (simulated)\n", b->compute_gbps);
	if (r->dir[0])
		printf("  dir        %s\n", r->dir);
	if (o->producer != BENCH_PRODUCER_DEVICE)
		printf("  producer   %s streams (include/adump/host.h)%s\n",
		       tool_bench_producer_names[o->producer],
		       o->producer == BENCH_PRODUCER_HOST_NOCOPY ?
			       ", zero copy" : ", copied by the calling threads");
	if (o->producer == BENCH_PRODUCER_HOST_NOCOPY)
		printf("  released   %llu, %llu of them failed\n", (unsigned long long)r->released,
		       (unsigned long long)r->release_failures);
	if (o->is_verify)
		printf("  verify     %llu files rebuilt byte for byte from the callback's chunks, "
		       "%llu differ (%.2f GB compared)%s%s\n", (unsigned long long)r->verified_files,
		       (unsigned long long)r->verify_bad, gb(r->verify_bytes),
		       r->verify_error[0] ? "; first: " : "", r->verify_error);
	printf("  files      %llu completed, %llu failed (of %llu)\n",
	       (unsigned long long)r->st.files_completed, (unsigned long long)r->st.files_failed,
	       (unsigned long long)plan->op_count);
	if (r->st.files_direct || r->st.files_buffered)
		printf("  io         %llu files O_DIRECT, %llu buffered, %llu fell back to buffered\n",
		       (unsigned long long)r->st.files_direct,
		       (unsigned long long)r->st.files_buffered,
		       (unsigned long long)r->st.direct_fallbacks);
	printf("  bytes      %llu (tensors %llu)", (unsigned long long)r->bytes,
	       (unsigned long long)plan->tensor_bytes);
	if (o->compress == ADUMP_COMPRESS_LZ4)
		printf(", %llu written", (unsigned long long)r->written_bytes);
	printf("\n  seconds    %.3f (%.3f before %s; the last kernel ended at %.3f)\n", r->seconds,
	       r->seconds_unsynced, o->is_sync ? "syncfs" : "the end", r->kernels_seconds);
	if (r->warmup_seconds > 0)
		printf("  warm-up    %.3f s, untimed (every kernel once, no dumps)\n", r->warmup_seconds);
	printf("  GB/s       %.3f\n", tool_bench_per_s(gb(r->bytes), r->seconds));
	printf("  files/s    %.0f\n", tool_bench_per_s((double)r->files, r->seconds));
	printf("  tensors/s  %.0f\n", tool_bench_per_s((double)r->tensors, r->seconds));
	printf("  CPU        %.2f s (%.2f s per GB)\n", r->cpu_seconds,
	       per_gb(r->cpu_seconds, r->bytes));
	printf("  peak RSS   %.1f MiB (device memory %.1f MiB; host %.1f MiB, limit pool+64M = "
	       "%.0f MiB)\n",
	       (double)r->peak_rss / 1048576, (double)b->bd.bytes / 1048576,
	       (double)r->host_rss / 1048576,
	       (double)(r->pool_bytes + BENCH_RSS_SLACK_BYTES) / 1048576);
	printf("  producer   %llu waits, %.3f ms; wait p50 %.1f us, p99 %.1f us, max %.1f us; "
	       "enqueue p99 %.2f us; %llu drops\n",
	       (unsigned long long)r->st.producer_wait_count, (double)r->st.producer_wait_ns / 1e6,
	       r->wait_p50_us, r->wait_p99_us, r->wait_max_us, r->enqueue_p99_us,
	       (unsigned long long)r->st.drops);
	for (int i = 0; r->st.drops && i < ADUMP_LOSS_CAUSE_COUNT; i++)
		printf("%s%s %llu%s", i ? ", " : "  losses     tensors lost: ",
		       adump_loss_cause_name(i), (unsigned long long)r->st.losses[i],
		       i + 1 < ADUMP_LOSS_CAUSE_COUNT ? "" : "\n");
	printf("  kernels    %llu waits for a dump to read their output first, %.3f ms; "
	       "%llu for DMA queue room, %.3f ms\n",
	       (unsigned long long)r->dev.fence_waits, (double)r->dev.fence_wait_ns / 1e6,
	       (unsigned long long)r->dev.queue_waits, (double)r->dev.queue_wait_ns / 1e6);
	if (r->error < 0)
		printf("  error      %s\n", adump_strerror(r->error));
}

/* The capture as a row of the runs' table (its own figures, its speed 1.00 x). */
static void capture_row(struct row *row, const struct bench_result *r)
{
	struct adump_bench_timing t = {
		.seconds = r->seconds, .seconds_unsynced = r->seconds_unsynced,
		.cpu_seconds = r->cpu_seconds, .bytes = r->bytes, .files = r->files,
		.records = r->records, .error = r->error,
	};

	row_of(row, &t, r->tensors, 1.0);
	row->has_bytes = row->has_files = true;
}

static void human_compare(const struct bench *b)
{
	const struct bench_result *r = &b->r;
	const struct bench_phase *ph = b->ph, *ring = &ph[BENCH_BASE_RING];
	const struct bench_phase *nodump = &ph[BENCH_BASE_NODUMP], *top;
	enum bench_base top_base = BENCH_BASE_FIO_BUFFERED;
	struct row row;

	printf("\n  %-18s", "run");
	for (size_t c = 0; c < COLUMN_COUNT; c++)
		printf(" %*s", columns[c].width, columns[c].head);
	printf("\n");
	capture_row(&row, r);
	human_row("adump", &row);
	for (int base = 0; base < BENCH_BASE_COUNT; base++) {
		if (!ph[base].has_run)
			continue;
		if (ph[base].t.error < 0) {
			printf("  %-18s failed: %s\n", tool_bench_base_names[base],
			       adump_strerror(ph[base].t.error));
			continue;
		}
		base_row(&row, b, base);
		human_row(tool_bench_base_names[base], &row);
		if (base != BENCH_BASE_RING)
			continue;
		/* Per record, as ring-limit: the capture against the pipeline's channel alone. */
		if (ring->chan.error < 0) {
			printf("  %-18s failed: %s\n", "chan hand-off", adump_strerror(ring->chan.error));
			continue;
		}
		row_of(&row, &ring->chan, 0, ratio_to(BENCH_BASE_RING, &ring->chan, r));
		row.has_bytes = row.has_files = false;
		human_row("chan hand-off", &row);
	}
	top = ceiling(b, &top_base);
	if (top)
		printf("  ceiling    %s, the faster fio run: %.3f GB/s, %.2f CPU s per GB; adump "
		       "%.2f x it\n", tool_bench_base_names[top_base],
		       tool_bench_per_s(gb(top->t.bytes), top->t.seconds),
		       per_gb(top->t.cpu_seconds, top->t.bytes), ratio_to(top_base, &top->t, r));
	if (top && b->fio_engine == ADUMP_BENCH_FIO_PSYNC)
		printf("  fio engine psync, %u job%s (%s%s%s)\n", b->fio_jobs, b->fio_jobs == 1 ? "" : "s",
		       b->fio_why, b->fio_refused ? ": " : "",
		       b->fio_refused ? adump_strerror(b->fio_refused) : "");
	else if (top)
		printf("  fio engine io_uring, depth 16 (%s)\n", b->fio_why);
	else if (b->o.is_fio_skipped)
		printf("  ceiling    fio skipped: not installed (Debian package fio)\n");
	if (nodump->has_run && nodump->t.error == 0 && nodump->t.seconds > 0) {
		const struct bench_phase *naive = &ph[BENCH_BASE_NAIVE];

		printf("  overhead   adump %+.1f %%", 100 * b->overhead_adump);
		if (naive->has_run && naive->t.error == 0)
			printf(", naive %+.1f %%", 100 * b->overhead_naive);
		printf(" (time with dump - without) / without%s\n",
		       b->compute_gbps > 0 ? "" : "; meaningful with --compute-gbps");
		printf("             adump: %+.1f %% while the kernels ran, %+.1f %% after the last one "
		       "(%.3f s writing its last dumps%s)\n",
		       100 * (r->kernels_seconds - nodump->t.seconds) / nodump->t.seconds,
		       100 * (r->seconds - r->kernels_seconds) / nodump->t.seconds,
		       r->seconds - r->kernels_seconds, b->o.is_sync ? " and syncfs" : "");
	}
	if (ring->has_run && ring->t.error == 0) {
		printf("  ring       pipeline %.0f records/s, bare ck_ring pair %.0f records/s",
		       tool_bench_per_s((double)r->records, r->seconds),
		       tool_bench_per_s((double)ring->t.records, ring->t.seconds));
		if (ring->chan.error == 0)
			printf("; chan hand-off %.0f records/s (%u buffers) = %.2f x the bare pair",
			       tool_bench_per_s((double)ring->chan.records, ring->chan.seconds),
			       ring->chan_buffers, chan_ratio(ring, &ring->t));
		if (ring->chan.error == 0 && ring->ring_read.error == 0)
			printf(", %.2f x the bare pair whose consumer reads each record (%.0f records/s)",
			       chan_ratio(ring, &ring->ring_read),
			       tool_bench_per_s((double)ring->ring_read.records,
						ring->ring_read.seconds));
		printf("\n");
	}
}

/* ---- the JSON object ---- */

static void json_capture(const struct bench *b, struct fields *fs)
{
	const struct bench_opts *o = &b->o;
	const struct adump_bench_plan *plan = &b->plan;
	const struct bench_result *r = &b->r;

	add(fs, F_STR("producer", tool_bench_producer_names[o->producer]));
	if (o->is_verify) {
		add(fs, F_U64("verified_files", r->verified_files));
		add(fs, F_U64("verify_bad", r->verify_bad));
	}
	add(fs, F_STR("profile", adump_bench_profile_name(plan->w.profile)));
	add(fs, F_U64("streams", plan->w.stream_count));
	add(fs, F_U64("ops", plan->op_count));
	add(fs, F_U64("workers", r->st.worker_count));
	add(fs, F_STR("sink", tool_bench_sink_names[o->sink]));
	add(fs, F_STR("backend", r->backend));
	add(fs, F_STR("backend_why", tool_bench_backend_why(o, &r->st)));
	add(fs, F_INT("backend_error", r->st.backend_error));
	add(fs, F_STR("io", io_name(o->io)));
	add(fs, F_STR("compress", o->compress == ADUMP_COMPRESS_LZ4 ? "lz4" : "none"));
	add(fs, F_STR("data", plan->w.data == ADUMP_BENCH_DATA_RELU ? "relu" : "random"));
	add(fs, F_U64("chunk_bytes", o->chunk ? o->chunk : 2u << 20));
	add(fs, F_U64("pool_bytes", r->pool_bytes));
	add(fs, F_BOOL("synced", o->is_sync));
	add(fs, F_DBL("compute_gbps", 6, b->compute_gbps));
	/* --compute-gbps auto: the disk pass whose half R is. */
	add(fs, o->compute_gbps < 0 ? F_STR("compute_from", tool_bench_base_keys[b->compute_base])
				    : F_NULL("compute_from"));
	add(fs, F_U64("files", r->st.files_completed));
	add(fs, F_U64("failed", r->st.files_failed));
	add(fs, F_U64("files_direct", r->st.files_direct));
	add(fs, F_U64("files_buffered", r->st.files_buffered));
	add(fs, F_U64("direct_fallbacks", r->st.direct_fallbacks));
	add(fs, F_U64("bytes", r->bytes));
	add(fs, F_U64("written_bytes", r->written_bytes));
	add(fs, F_U64("tensor_bytes", plan->tensor_bytes));
	add(fs, F_U64("tensors", r->tensors));
	add(fs, F_U64("records", r->records));
	add(fs, F_DBL("seconds", 6, r->seconds));
	add(fs, F_DBL("seconds_unsynced", 6, r->seconds_unsynced));
	add(fs, F_DBL("kernels_seconds", 6, r->kernels_seconds));
	add(fs, F_DBL("warmup_seconds", 6, r->warmup_seconds));
	add(fs, F_DBL("gbps", 6, tool_bench_per_s(gb(r->bytes), r->seconds)));
	add(fs, F_DBL("files_per_s", 1, tool_bench_per_s((double)r->files, r->seconds)));
	add(fs, F_DBL("tensors_per_s", 1, tool_bench_per_s((double)r->tensors, r->seconds)));
	add(fs, F_DBL("records_per_s", 1, tool_bench_per_s((double)r->records, r->seconds)));
	add(fs, F_DBL("cpu_seconds", 4, r->cpu_seconds));
	add(fs, F_DBL("cpu_seconds_per_gb", 4, per_gb(r->cpu_seconds, r->bytes)));
	add(fs, F_U64("peak_rss_bytes", r->peak_rss));
	add(fs, F_U64("device_bytes", b->bd.bytes));
	add(fs, F_U64("host_rss_bytes", r->host_rss));
	add(fs, F_U64("rss_limit_bytes", r->pool_bytes + BENCH_RSS_SLACK_BYTES));
	add(fs, F_U64("drops", r->st.drops));
	add(fs, F_U64("producer_waits", r->st.producer_wait_count));
	add(fs, F_DBL("producer_wait_ms", 3, (double)r->st.producer_wait_ns / 1e6));
	add(fs, F_DBL("producer_wait_p50_us", 3, r->wait_p50_us));
	add(fs, F_DBL("producer_wait_p99_us", 3, r->wait_p99_us));
	add(fs, F_DBL("producer_wait_max_us", 3, r->wait_max_us));
	add(fs, F_DBL("enqueue_p99_us", 3, r->enqueue_p99_us));
	add(fs, F_U64("kernel_fence_waits", r->dev.fence_waits));
	add(fs, F_DBL("kernel_fence_wait_ms", 3, (double)r->dev.fence_wait_ns / 1e6));
	add(fs, F_U64("kernel_queue_waits", r->dev.queue_waits));
	add(fs, F_DBL("kernel_queue_wait_ms", 3, (double)r->dev.queue_wait_ns / 1e6));
	add(fs, F_INT("error", r->error));
}

/* ring-limit's extra fields: the channel hand-off and the reading pair. */
static void json_ring(const struct bench_phase *ring, struct fields *fs)
{
	const struct adump_bench_timing *c = &ring->chan, *rd = &ring->ring_read;

	add(fs, F_U64("chan_records", c->records));
	add(fs, F_U64("chan_buffers", ring->chan_buffers));
	add(fs, F_DBL("chan_seconds", 6, c->seconds));
	add(fs, F_DBL("chan_cpu_seconds", 4, c->cpu_seconds));
	add(fs, F_DBL("chan_records_per_s", 1, tool_bench_per_s((double)c->records, c->seconds)));
	add(fs, F_INT("chan_error", c->error));
	add(fs, F_RATIO("chan_ratio", c->error == 0 && ring->t.error == 0,
			chan_ratio(ring, &ring->t)));
	add(fs, F_DBL("read_seconds", 6, rd->seconds));
	add(fs, F_DBL("read_records_per_s", 1, tool_bench_per_s((double)rd->records, rd->seconds)));
	add(fs, F_INT("read_error", rd->error));
	add(fs, F_RATIO("chan_ratio_read", rd->error == 0 && c->error == 0,
			chan_ratio(ring, rd)));
}

static void json_compare(const struct bench *b)
{
	const struct bench_phase *ph = b->ph, *nodump = &ph[BENCH_BASE_NODUMP], *top;
	const struct bench_phase *naive = &ph[BENCH_BASE_NAIVE];
	const struct bench_result *r = &b->r;
	enum bench_base top_base = BENCH_BASE_FIO_BUFFERED;
	bool is_nodump = nodump->has_run && nodump->t.error == 0 && nodump->t.seconds > 0;
	bool is_first = true;
	struct fields fs = { .count = 0 };
	struct row row;

	printf(",\"baselines\":{");
	for (int base = 0; base < BENCH_BASE_COUNT; base++) {
		bool is_row_first = true;

		if (!ph[base].has_run)
			continue;
		base_row(&row, b, base);
		if (base == BENCH_BASE_RING)
			json_ring(&ph[base], &row.fs);
		printf("%s\"%s\":{", is_first ? "" : ",", tool_bench_base_keys[base]);
		json_fields(&row.fs, &is_row_first);
		printf("}");
		is_first = false;
	}
	printf("},\"overhead\":{");
	if (is_nodump) {
		add(&fs, F_DBL("adump", 4, b->overhead_adump));
		add(&fs, F_DBL("adump_kernels", 4,
			       (r->kernels_seconds - nodump->t.seconds) / nodump->t.seconds));
		add(&fs, F_DBL("adump_after_kernels", 4,
			       (r->seconds - r->kernels_seconds) / nodump->t.seconds));
	} else {
		add(&fs, F_NULL("adump"));
	}
	add(&fs, F_RATIO("naive", is_nodump && naive->has_run && naive->t.error == 0,
			 b->overhead_naive));
	is_first = true;
	json_fields(&fs, &is_first);
	printf("}");
	/* The ceiling: the faster fio run, and the capture's speed relative to it. */
	top = ceiling(b, &top_base);
	fs.count = 0;
	if (top) {
		add(&fs, F_STR("baseline", tool_bench_base_keys[top_base]));
		add(&fs, F_DBL("gbps", 6, tool_bench_per_s(gb(top->t.bytes), top->t.seconds)));
		add(&fs, F_DBL("cpu_seconds_per_gb", 4, per_gb(top->t.cpu_seconds, top->t.bytes)));
		add(&fs, F_DBL("ratio", 4, ratio_to(top_base, &top->t, r)));
		printf(",\"ceiling\":{");
		is_first = true;
		json_fields(&fs, &is_first);
		printf("}");
	} else {
		printf(",\"ceiling\":null");
	}
	printf(",\"fio_skipped\":%s", b->o.is_fio_skipped ? "true" : "false");
	if (b->fio_why)
		printf(",\"fio_engine\":\"%s\",\"fio_engine_why\":\"%s\",\"fio_jobs\":%u",
		       adump_bench_fio_engine_names[b->fio_engine], b->fio_why, b->fio_jobs);
}

void tool_bench_report(const struct bench *b)
{
	struct fields fs = { .count = 0 };
	bool is_first = true;

	human_summary(b);
	if (b->o.is_compare)
		human_compare(b);
	if (!b->o.json)
		return;
	json_capture(b, &fs);
	printf("{");
	json_fields(&fs, &is_first);
	fs.count = 0;
	for (int i = 0; i < ADUMP_LOSS_CAUSE_COUNT; i++)
		add(&fs, F_U64(adump_loss_cause_name(i), b->r.st.losses[i]));
	printf(",\"losses\":{");
	is_first = true;
	json_fields(&fs, &is_first);
	printf("}");
	if (b->o.is_compare)
		json_compare(b);
	printf("}\n");
}
