/* SPDX-License-Identifier: Apache-2.0 */
/* `adump bench`: the workload run. The simulated device's memory, the producer threads that
 * launch every stream's ops (device streams, or host streams that hand the same tensors over),
 * and the timed capture through a session. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tools/bench_int.h"
#include "tools/progress.h"
#include "tools/tool.h"

#define FILL_PIECE_BYTES (16ull << 20)

int tool_bench_make_dir(const char *path)
{
	char buf[BENCH_PATH_CAP];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0750) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0750) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

void tool_bench_sync_before(const struct bench *b)
{
	/* Whatever setup or the previous phase left dirty is written outside the next clock. */
	if (b->o.out)
		adump_bench_syncfs(b->o.out);
}

static int chunk_touch(const struct adump_chunk *chunk, void *user)
{
	const unsigned char *p = chunk->data;
	uint64_t *sum = user, acc = 0;

	/* A consumer that reads every cache line once, as a real one would. */
	for (size_t i = 0; i < chunk->len; i += 64)
		acc += p[i];
	__atomic_fetch_add(sum, acc, __ATOMIC_RELAXED);
	return 0;
}

/* ---- device buffers and the op launches every phase shares ---- */

static int dev_fill(struct bench_dev *bd, const struct adump_bench_plan *plan)
{
	void *host = malloc(FILL_PIECE_BYTES);
	int ret = 0;

	if (!host)
		return -ENOMEM;
	for (unsigned cls = 0; cls < 3 && ret == 0; cls++) {
		uint64_t cap = plan->max_bytes[cls];

		if (!cap)
			continue;
		bd->cap[cls] = cap;
		for (unsigned which = 0; which < 2 && ret == 0; which++) {
			void **mem = which ? &bd->other[cls] : &bd->self[cls];

			ret = adump_dev_malloc(bd->dev, cap, mem);
			if (ret < 0)
				break;
			bd->bytes += cap;
			/* Filled piece by piece so the host side never holds a whole tensor; a
			 * piece's seed depends on its position only, so self and other share
			 * their zero masks under --data relu. */
			for (uint64_t off = 0; off < cap && ret == 0; off += FILL_PIECE_BYTES) {
				uint64_t len = cap - off < FILL_PIECE_BYTES ? cap - off : FILL_PIECE_BYTES;

				adump_bench_fill(host, len, cls, plan->w.data,
						 plan->w.seed * 1000003 + off / FILL_PIECE_BYTES, which);
				ret = adump_dev_memcpy(bd->dev, (char *)*mem + off, cap - off, host, len,
						       ADUMP_COPY_HOST_TO_DEVICE);
			}
		}
	}
	free(host);
	return ret;
}

int tool_bench_dev_setup(struct bench *b)
{
	const struct adump_bench_plan *plan = &b->plan;
	int ret;

	/* The device first: its memory is filled before anything is timed. */
	ret = adump_dev_open(0, &b->bd.dev);
	if (ret < 0)
		return ret;
	ret = dev_fill(&b->bd, plan);
	if (ret < 0)
		return ret;
	b->bs = calloc(plan->w.stream_count, sizeof(*b->bs));
	if (!b->bs)
		return -ENOMEM;
	for (; b->stream_count < plan->w.stream_count; b->stream_count++) {
		unsigned i = b->stream_count;
		struct bench_stream *s = &b->bs[i];

		s->b = b;
		s->index = i;
		ret = adump_dev_stream_create(b->bd.dev, &s->stream);
		if (ret < 0)
			return ret;
		for (unsigned k = 0; k < BENCH_OUT_BUFFERS && plan->stream_max_bytes[i]; k++) {
			ret = adump_dev_malloc(b->bd.dev, plan->stream_max_bytes[i], &s->out_mem[k]);
			if (ret < 0)
				return ret;
			/* Touched now so the capture's peak RSS does not count its first use. */
			memset(s->out_mem[k], 0, plan->stream_max_bytes[i]);
			b->bd.bytes += plan->stream_max_bytes[i];
		}
	}
	return 0;
}

void tool_bench_dev_teardown(struct bench *b)
{
	struct bench_dev *bd = &b->bd;

	for (unsigned i = 0; b->bs && i < b->plan.w.stream_count; i++) {
		adump_dev_stream_destroy(b->bs[i].stream);
		for (unsigned k = 0; k < BENCH_OUT_BUFFERS; k++)
			if (b->bs[i].out_mem[k])
				adump_dev_free(bd->dev, b->bs[i].out_mem[k]);
	}
	free(b->bs);
	b->bs = NULL;
	for (unsigned cls = 0; cls < 3; cls++) {
		if (bd->self[cls])
			adump_dev_free(bd->dev, bd->self[cls]);
		if (bd->other[cls])
			adump_dev_free(bd->dev, bd->other[cls]);
	}
	adump_dev_close(bd->dev);
	bd->dev = NULL;
}

void tool_bench_op_tensors(const struct bench *b, const struct adump_bench_op *op,
			   struct adump_dev_tensor t[3])
{
	const struct bench_dev *bd = &b->bd;
	const struct bench_stream *s = &b->bs[op->stream];
	unsigned cls = adump_bench_dtype_class(op->dtype);
	unsigned elem = op->dtype == ADUMP_DT_FLOAT16 ? 2 : 4;
	uint64_t room = (bd->cap[cls] - op->bytes) / elem + 1;
	uint64_t off = (op->window % room) * elem;

	memset(t, 0, 3 * sizeof(*t));
	t[0].data = (char *)bd->self[cls] + off;
	t[0].dtype = op->dtype;
	t[0].format = ADUMP_FORMAT_ND;
	t[0].dim_count = op->dim_count;
	for (uint32_t d = 0; d < op->dim_count; d++)
		t[0].dims[d] = op->dims[d];
	t[0].bytes = op->bytes;
	t[1] = t[0];
	t[1].data = (char *)bd->other[cls] + off;
	t[2] = t[0];
	/* The stream's out buffers in turn. */
	t[2].data = s->out_mem[op->index / b->plan.w.stream_count % BENCH_OUT_BUFFERS];
}

/* The capture of a host producer: the stream's ops, their tensors handed to the host stream
 * tool_bench_capture() opened before the clock started (its staging share made resident
 * then, as a device stream's is at attach), which this thread adopts. */
static void host_main(struct bench_stream *s)
{
	struct bench *b = s->b;
	const struct adump_bench_plan *plan = &b->plan;
	struct adump_bench_op op;
	struct adump_dev_tensor t[3];

	adump_host_stream_adopt(s->host);
	for (uint64_t i = s->index; i < plan->op_count; i += plan->w.stream_count) {
		adump_bench_op_get(plan, i, &op);
		tool_bench_op_tensors(b, &op, t);
		s->error = adump_bench_host_dump(s->host, &op,
						 (const void *[3]){ t[0].data, t[1].data, t[2].data },
						 b->o.producer == BENCH_PRODUCER_HOST_NOCOPY ?
							 &b->counts : NULL);
		if (s->error < 0)
			return;
		atomic_fetch_add_explicit(&s->ops_done, 1, memory_order_relaxed);
	}
	s->error = adump_host_stream_sync(s->host);
}

static void stream_main(struct bench_stream *s)
{
	const struct bench *b = s->b;
	const struct adump_bench_plan *plan = &b->plan;
	struct adump_bench_op op;
	struct adump_dev_tensor t[3];

	if (s->is_dump && b->o.producer != BENCH_PRODUCER_DEVICE) {
		host_main(s);
		return;
	}
	for (uint64_t i = s->index; i < plan->op_count; i += plan->w.stream_count) {
		struct adump_dev_dump dump = { .op_type = "Add", .op_name = op.name,
					       .tensor_mask = ADUMP_DUMP_ALL };

		adump_bench_op_get(plan, i, &op);
		tool_bench_op_tensors(b, &op, t);
		s->error = adump_dev_launch_add(s->stream, &t[0], &t[1], op.alpha, &t[2],
						s->is_dump ? &dump : NULL);
		if (s->error < 0)
			return;
		atomic_fetch_add_explicit(&s->ops_done, 1, memory_order_relaxed);
	}
	s->error = adump_dev_stream_sync(s->stream);
}

static void *stream_thread(void *arg)
{
	struct bench_stream *s = arg;

	stream_main(s);
	/* Pairs with the acquire load in tool_bench_streams_run(): the error is visible once
	 * counted. */
	atomic_fetch_add_explicit(s->finished, 1, memory_order_release);
	return NULL;
}

/* adump_bench_lookup_fn: host stream @stream_id's task @task_id is op index + task * streams. */
static int host_lookup(void *user, uint32_t stream_id, uint32_t task_id, uint64_t *index,
		       struct adump_bench_op *op, const void *data[3])
{
	struct bench *b = user;
	unsigned n = b->plan.w.stream_count;
	struct adump_dev_tensor t[3];

	for (unsigned i = 0; i < n; i++) {
		if (atomic_load_explicit(&b->bs[i].host_id, memory_order_acquire) != stream_id)
			continue;
		*index = i + (uint64_t)task_id * n;
		if (*index >= b->plan.op_count)
			return -1;
		adump_bench_op_get(&b->plan, *index, op);
		tool_bench_op_tensors(b, op, t);
		for (int k = 0; k < 3; k++)
			data[k] = t[k].data;
		return 0;
	}
	return -1;
}

int tool_bench_streams_run(struct bench *b, bool is_dump, const char *label)
{
	unsigned n = b->plan.w.stream_count;
	pthread_t *threads = calloc(n, sizeof(*threads));
	struct adump_session *session = is_dump ? b->session : NULL;
	_Atomic unsigned finished = 0;
	struct tool_progress pr;
	unsigned started = 0;
	int ret = 0;

	if (!threads)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		b->bs[i].is_dump = is_dump;
		b->bs[i].error = 0;
		b->bs[i].finished = &finished;
		atomic_store_explicit(&b->bs[i].ops_done, 0, memory_order_relaxed);
	}
	tool_progress_start_timed(&pr, label, b->plan.op_count,
				  session ? b->plan.tensor_bytes : 0, b->o.json && !tool_is_tty());
	for (; started < n; started++) {
		ret = -pthread_create(&threads[started], NULL, stream_thread, &b->bs[started]);
		if (ret < 0)
			break;
	}
	/* The main thread only draws the progress bar while the producers run. */
	while (atomic_load_explicit(&finished, memory_order_acquire) < started) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		uint64_t done = 0, bytes = 0;

		for (unsigned i = 0; i < started; i++)
			done += atomic_load_explicit(&b->bs[i].ops_done, memory_order_relaxed);
		if (session) {
			struct adump_stats st;

			adump_stats_get(session, &st);
			bytes = st.bytes;
		}
		tool_progress_set(&pr, done, bytes);
		nanosleep(&ts, NULL);
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	tool_progress_end(&pr);
	free(threads);
	for (unsigned i = 0; i < n && ret == 0; i++)
		if (b->bs[i].error < 0)
			ret = b->bs[i].error;
	return ret;
}

/* When the last kernel of any stream ended, on adump_bench_now()'s clock (the warm-up's, if
 * no kernel ran since). */
static double kernels_end(const struct bench *b)
{
	uint64_t last = 0;

	for (unsigned i = 0; i < b->plan.w.stream_count; i++) {
		struct adump_dev_stream_stats ds;

		adump_dev_stream_stats(b->bs[i].stream, &ds);
		last = ds.kernels_end_ns > last ? ds.kernels_end_ns : last;
	}
	return (double)last / 1e9;
}

static int session_start(struct bench *b)
{
	const struct bench_opts *o = &b->o;
	struct adump_config cfg = ADUMP_CONFIG_INIT;
	int ret;

	cfg.dump_path = o->out;
	cfg.worker_count = o->workers;
	cfg.chunk_bytes = o->chunk;
	cfg.pool_bytes = o->pool;
	cfg.min_free_bytes = o->min_free;
	cfg.max_bytes = o->max_quota;
	cfg.stream_max = b->plan.w.stream_count;
	cfg.on_full = o->on_full;
	cfg.writer = o->writer;
	cfg.sink = o->sink == BENCH_SINK_CALLBACK ? ADUMP_SINK_CALLBACK : ADUMP_SINK_FILE;
	cfg.layout = o->sink == BENCH_SINK_PACKED ? ADUMP_LAYOUT_PACKED : ADUMP_LAYOUT_FILES;
	cfg.io = o->io;
	cfg.compress = o->compress;
	cfg.chunk_fn = chunk_touch;
	cfg.chunk_user = &b->touched;
	if (o->is_verify) {
		ret = adump_bench_verify_create(b->plan.op_count, host_lookup, b, &b->verify);
		if (ret < 0)
			return ret;
		cfg.chunk_fn = adump_bench_verify_chunk;
		cfg.chunk_user = b->verify;
	}
	b->r.pool_bytes = o->pool ? o->pool : 256u << 20;
	ret = adump_session_create(&cfg, &b->session);
	if (ret < 0) {
		fprintf(stderr, "adump bench: cannot start a capture session: %s\n", adump_strerror(ret));
		return ret;
	}
	for (unsigned i = 0; i < b->plan.w.stream_count; i++) {
		struct bench_stream *s = &b->bs[i];

		if (o->producer == BENCH_PRODUCER_DEVICE) {
			ret = adump_session_attach(b->session, s->stream);
		} else {
			ret = adump_host_stream_open(b->session, NULL, &s->host);
			if (ret == 0)
				atomic_store_explicit(&s->host_id, adump_host_stream_id(s->host),
						      memory_order_release);
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The session's figures into b->r; the streams detached. */
static void capture_collect(struct bench *b)
{
	struct bench_result *r = &b->r;

	adump_stats_get(b->session, &r->st);
	r->backend = b->o.sink == BENCH_SINK_CALLBACK ? "callback" :
		     r->st.backend == ADUMP_WRITER_URING ? "io_uring" : "pwrite";
	r->files = r->st.files_completed;
	r->tensors = r->files * 3;
	r->records = r->st.records;
	r->written_bytes = r->st.bytes;
	r->bytes = r->st.bytes;
	r->wait_p50_us = (double)adump_hist_percentile(r->st.producer_wait_hist, 0.5) / 1e3;
	r->wait_p99_us = (double)adump_hist_percentile(r->st.producer_wait_hist, 0.99) / 1e3;
	r->wait_max_us = (double)r->st.producer_wait_max_ns / 1e3;
	r->enqueue_p99_us = (double)adump_hist_percentile(r->st.enqueue_hist, 0.99) / 1e3;
	for (unsigned i = 0; i < b->plan.w.stream_count; i++) {
		struct adump_dev_stream_stats ds;

		adump_dev_stream_stats(b->bs[i].stream, &ds);
		r->dev.fence_waits += ds.fence_waits;
		r->dev.fence_wait_ns += ds.fence_wait_ns;
		r->dev.queue_waits += ds.queue_waits;
		r->dev.queue_wait_ns += ds.queue_wait_ns;
		adump_session_detach(b->session, b->bs[i].stream);
		adump_host_stream_close(b->bs[i].host);
		b->bs[i].host = NULL;
	}
	r->released = atomic_load_explicit(&b->counts.released, memory_order_relaxed);
	r->release_failures = atomic_load_explicit(&b->counts.release_failures,
						   memory_order_relaxed);
	if (b->verify)
		adump_bench_verify_result(b->verify, &r->verified_files, &r->verify_bad,
					  &r->verify_bytes, r->verify_error, sizeof(r->verify_error));
	if (b->o.compress == ADUMP_COMPRESS_LZ4) {
		/* The capture's bytes are what the dump files hold before compression. */
		r->bytes = 0;
		for (uint64_t k = 0; k < b->plan.op_count; k++)
			r->bytes += tool_bench_dump_file_size(k, b);
	}
}

int tool_bench_capture(struct bench *b)
{
	struct bench_result *r = &b->r;
	double t0, c0;
	int ret, fret;

	ret = session_start(b);
	if (ret < 0)
		return ret;
	if (b->o.sink != BENCH_SINK_CALLBACK)
		snprintf(r->dir, sizeof(r->dir), "%s", adump_session_dir(b->session));
	tool_bench_sync_before(b);
	adump_bench_peak_rss_reset();
	t0 = adump_bench_now();
	c0 = adump_bench_cpu_seconds();
	ret = tool_bench_streams_run(b, true, "capture");
	fret = adump_session_flush(b->session);
	if (ret == 0)
		ret = fret;
	r->seconds_unsynced = adump_bench_now() - t0;
	if (b->o.is_sync) {
		fret = adump_bench_syncfs(r->dir);
		if (ret == 0)
			ret = fret;
	}
	r->seconds = adump_bench_now() - t0;
	r->cpu_seconds = adump_bench_cpu_seconds() - c0;
	r->kernels_seconds = kernels_end(b) - t0;
	if (r->kernels_seconds < 0)
		r->kernels_seconds = 0;         /* no kernel ran in the capture */
	r->peak_rss = adump_bench_peak_rss();
	r->host_rss = r->peak_rss > b->bd.bytes ? r->peak_rss - b->bd.bytes : 0;
	r->error = ret;
	capture_collect(b);
	return 0;
}

unsigned tool_bench_writer_threads(const struct adump_stats *st)
{
	return st->writer_threads ? st->writer_threads : 1;
}

const char *tool_bench_backend_why(const struct bench_opts *o, const struct adump_stats *st)
{
	switch (st->backend_reason) {
	case ADUMP_WRITER_REASON_AUTO:
		return "auto";
	case ADUMP_WRITER_REASON_CONFIGURED:
		return o->is_writer_forced ? "forced" : "configured";
	case ADUMP_WRITER_REASON_REFUSED:
		return "refused";
	default:
		return "undecided";
	}
}
