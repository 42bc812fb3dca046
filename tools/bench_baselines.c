/* SPDX-License-Identifier: Apache-2.0 */
/* `adump bench --compare`: the baselines, run in the same invocation on the same ops and
 * bytes as the capture. disk-limit brackets it (a pass before, one after on its exact bytes);
 * the others run after it: nodump, naive, create-limit, ring-limit with the channel hand-off
 * beside it, and fio buffered and O_DIRECT. The measurements themselves are bench/'s. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "iouring/writer.h"
#include "tools/bench_int.h"
#include "tools/progress.h"
#include "tools/tool.h"

/* disk-limit writes as fio did for machine-limits.md: 1 MiB at queue depth 32. (Buffered
 * io_uring writes of 2 MiB to one file are punted to a single io-wq worker and ran 3x
 * slower here: see bench/RESULTS.md.) */
#define DISK_LIMIT_DEPTH 32u
#define DISK_LIMIT_WRITE_BYTES (1u << 20)
/* ring-limit and the channel hand-off move at least this many records, so thread start-up
 * does not dominate; their ratios are taken per record. */
#define RING_LIMIT_MIN_RECORDS (1u << 20)
#define HEADER_CAP 65536u

static bool has(const struct bench *b, enum bench_base base)
{
	return b->o.baselines & BENCH_BIT(base);
}

/* ---- disk-limit, before and after the capture ---- */

/* Whether @dir's filesystem accepts O_DIRECT (tmpfs and some FUSE filesystems refuse it). The
 * testpoint plays one that refuses it (-EINVAL), as in disk-limit's own open (bench/). */
static bool is_direct_ok(const char *dir)
{
	char path[BENCH_PATH_CAP + 64];
	int fd = ADUMP_TESTPOINT("bench.direct");

	if (fd < 0)
		return fd != -EINVAL;
	snprintf(path, sizeof(path), "%s/adump-direct.probe", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0640);
	if (fd < 0)
		return errno != EINVAL;
	close(fd);
	unlink(path);
	return true;
}

/* The disk baselines bracket the capture: one pass before it (on the plan's tensor bytes plus
 * an estimate of the headers), one after (on its exact bytes). Buffered writes here swing
 * several-fold within minutes (page-cache pages the guest must fault back in from the host),
 * so a limit is the faster pass, compared per byte. */
static void disk_pass(struct bench *b, enum bench_base base, uint64_t bytes, int pass)
{
	struct bench_phase *ph = &b->ph[base];
	struct adump_bench_timing t;

	tool_bench_sync_before(b);
	adump_bench_disk_limit(b->base_dir, bytes, DISK_LIMIT_WRITE_BYTES, DISK_LIMIT_DEPTH,
			       base == BENCH_BASE_DISK_DIRECT, b->o.is_sync, &t);
	ph->run_gbps[pass] = tool_bench_per_s((double)t.bytes / 1e9, t.seconds);
	if (pass == 0 || (t.error == 0 && (ph->t.error < 0 || ph->run_gbps[1] > ph->run_gbps[0])))
		ph->t = t;
	ph->has_run = true;
}

/* disk-direct that was not named (--compare with io direct, --compute-gbps auto) is left
 * out, before and after the capture, where the filesystem refuses O_DIRECT, and said so, as
 * fio-direct is: R is then half of disk-limit. Named, it runs and fails, said why first. */
void tool_bench_disk_before(struct bench *b)
{
	uint64_t est = b->plan.tensor_bytes + b->plan.op_count * 200;

	if (has(b, BENCH_BASE_DISK_DIRECT) && !is_direct_ok(b->base_dir)) {
		if (b->o.is_direct_implied) {
			fprintf(stderr, "adump bench: %s refuses O_DIRECT: disk-direct skipped%s\n",
				b->base_dir,
				b->o.compute_gbps < 0 ? "; --compute-gbps auto takes half of "
							"disk-limit (buffered) alone" : "");
			b->o.baselines &= ~BENCH_BIT(BENCH_BASE_DISK_DIRECT);
		} else {
			fprintf(stderr, "adump bench: %s refuses O_DIRECT: disk-direct, named in "
					"--baselines, fails\n", b->base_dir);
		}
	}
	for (int base = BENCH_BASE_DISK; base <= BENCH_BASE_DISK_DIRECT; base++)
		if (has(b, base))
			disk_pass(b, base, est, 0);
}

/* ---- naive: one thread, per op launch, sync, copy to host, header, open, write, close ---- */

/* The adump_op of @op as the DMA engine would describe it, for a header of the same size. */
static void op_describe(const struct adump_bench_op *op, const struct adump_dev_tensor t[3],
			uint32_t stream_id, struct adump_tensor tensors[3], struct adump_op *out)
{
	for (int k = 0; k < 3; k++) {
		memset(&tensors[k], 0, sizeof(tensors[k]));
		tensors[k].kind = k < 2 ? ADUMP_TENSOR_INPUT : ADUMP_TENSOR_OUTPUT;
		tensors[k].dtype = op->dtype;
		tensors[k].format = ADUMP_FORMAT_ND;
		tensors[k].dim_count = op->dim_count;
		tensors[k].orig_dim_count = op->dim_count;
		for (uint32_t d = 0; d < op->dim_count; d++)
			tensors[k].dims[d] = tensors[k].orig_dims[d] = (uint64_t)op->dims[d];
		tensors[k].address = (uint64_t)(uintptr_t)t[k].data;
		tensors[k].bytes = op->bytes;
		tensors[k].arg_index = k == 1 ? 1 : 0;
	}
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	*out = (struct adump_op){
		.op_type = "Add", .op_name = op->name, .device_id = 0, .stream_id = stream_id,
		.task_id = (uint32_t)op->index, .tensor_count = 3, .tensors = tensors,
		.timestamp_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u,
	};
}

/* One naive dump: launch @op, sync, then header and tensors to a new file in @dir. */
static int naive_one(struct bench *b, uint64_t i, const char *dir, unsigned char *header,
		     unsigned char *host, uint64_t host_cap, struct adump_bench_timing *t)
{
	struct adump_bench_op op;
	struct adump_dev_tensor dt[3];
	struct adump_tensor tensors[3];
	struct adump_op aop;
	struct adump_dev_stream *stream;
	char name[4096], path[8192];
	long hlen;
	int fd, ret;

	adump_bench_op_get(&b->plan, i, &op);
	stream = b->bs[op.stream].stream;
	tool_bench_op_tensors(b, &op, dt);
	ret = adump_dev_launch_add(stream, &dt[0], &dt[1], op.alpha, &dt[2], NULL);
	if (ret == 0)
		ret = adump_dev_stream_sync(stream);
	if (ret < 0)
		return ret;
	op_describe(&op, dt, adump_dev_stream_id(stream), tensors, &aop);
	hlen = adump_dump_header_pack(&aop, header, HEADER_CAP);
	if (hlen < 0)
		return (int)hlen;
	ret = adump_dump_file_name(&aop, name, sizeof(name));
	if (ret < 0)
		return ret;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	ret = adump_write_all(fd, header, (size_t)hlen);
	for (int k = 0; k < 3 && ret == 0; k++) {
		ret = adump_dev_memcpy(b->bd.dev, host, host_cap, dt[k].data, op.bytes,
				       ADUMP_COPY_DEVICE_TO_HOST);
		if (ret == 0)
			ret = adump_write_all(fd, host, op.bytes);
	}
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	t->bytes += (uint64_t)hlen + 3 * op.bytes;
	t->files++;
	return ret;
}

static int run_naive(struct bench *b, const char *dir, struct adump_bench_timing *t)
{
	const struct adump_bench_plan *plan = &b->plan;
	uint64_t host_cap = 0;
	unsigned char *header = malloc(HEADER_CAP), *host;
	struct tool_progress pr;
	double t0, c0;
	int ret = 0;

	for (unsigned cls = 0; cls < 3; cls++)
		if (plan->max_bytes[cls] > host_cap)
			host_cap = plan->max_bytes[cls];
	/* One host buffer as large as the largest tensor, reused: the dumper copies a whole
	 * tensor off the device, then writes it. */
	host = malloc(host_cap ? host_cap : 1);
	if (!header || !host) {
		free(header);
		free(host);
		return t->error = -ENOMEM;
	}
	memset(host, 0, host_cap);
	memset(t, 0, sizeof(*t));
	tool_progress_start_timed(&pr, "naive", plan->op_count, plan->tensor_bytes,
				  b->o.json && !tool_is_tty());
	t0 = adump_bench_now();
	c0 = adump_bench_cpu_seconds();
	for (uint64_t i = 0; i < plan->op_count && ret == 0; i++) {
		ret = naive_one(b, i, dir, header, host, host_cap, t);
		tool_progress_set(&pr, i + 1, t->bytes);
	}
	tool_progress_end(&pr);
	t->seconds_unsynced = adump_bench_now() - t0;
	if (ret == 0)
		ret = adump_bench_syncfs(dir);
	t->seconds = adump_bench_now() - t0;
	t->cpu_seconds = adump_bench_cpu_seconds() - c0;
	t->error = ret;
	free(header);
	free(host);
	return ret;
}

uint64_t tool_bench_dump_file_size(uint64_t k, void *user)
{
	const struct bench *b = user;
	struct adump_bench_op op;
	struct adump_dev_tensor dt[3];
	struct adump_tensor tensors[3];
	struct adump_op aop;
	long hlen;

	adump_bench_op_get(&b->plan, k, &op);
	tool_bench_op_tensors(b, &op, dt);
	op_describe(&op, dt, 0, tensors, &aop);
	hlen = adump_dump_header_pack(&aop, NULL, 0);
	return (hlen > 0 ? (uint64_t)hlen : 0) + 3 * op.bytes;
}

/* ---- the baselines after the capture ---- */

static void nodump(struct bench *b)
{
	struct bench_phase *ph = &b->ph[BENCH_BASE_NODUMP];
	double t0 = adump_bench_now(), c0 = adump_bench_cpu_seconds();

	ph->has_run = true;
	ph->t.error = tool_bench_streams_run(b, false, "nodump");
	ph->t.seconds = ph->t.seconds_unsynced = adump_bench_now() - t0;
	ph->t.cpu_seconds = adump_bench_cpu_seconds() - c0;
	ph->t.files = 0;
	ph->t.bytes = 0;
}

/* A new directory <base_dir>/<name>-XXXXXX for a baseline that creates files, never the last
 * run's: in a reused --out, O_TRUNC on the old files frees and allocates their blocks again,
 * up to 10x slower than creating them (16k tiny files: 5.0 s against 0.44 s), which made the
 * baseline look slow. Kept afterwards, like the capture's own files. */
static int fresh_dir(struct bench *b, const char *name, char *dir, size_t cap)
{
	int ret = tool_bench_make_dir(b->base_dir);

	snprintf(dir, cap, "%s/%s-XXXXXX", b->base_dir, name);
	if (ret == 0 && !mkdtemp(dir))
		ret = -errno;
	return ret;
}

static void naive(struct bench *b)
{
	struct bench_phase *ph = &b->ph[BENCH_BASE_NAIVE];
	char dir[BENCH_PATH_CAP + 16];
	int ret;

	ret = fresh_dir(b, "naive", dir, sizeof(dir));
	if (ret == 0) {
		strcat(dir, "/0");
		ret = tool_bench_make_dir(dir);
	}
	tool_bench_sync_before(b);
	ph->has_run = true;
	if (ret < 0)
		ph->t.error = ret;
	else
		run_naive(b, dir, &ph->t);
}

/* create-limit, or with BENCH_BASE_PUBLISH publish-limit: the same files created the way the
 * capture publishes them (unnamed, then linked in), the filesystem's cost of never showing a
 * partial file. */
static void create_limit(struct bench *b, enum bench_base base)
{
	struct bench_phase *ph = &b->ph[base];
	char dir[BENCH_PATH_CAP + 16];
	int ret;

	ret = fresh_dir(b, base == BENCH_BASE_PUBLISH ? "publish" : "create", dir, sizeof(dir));
	ph->has_run = true;
	tool_bench_sync_before(b);
	if (ret < 0)
		ph->t.error = ret;
	else
		adump_bench_create_limit(dir, b->r.files ? b->r.files : b->plan.op_count,
					 tool_bench_dump_file_size, b, base == BENCH_BASE_PUBLISH,
					 b->o.is_sync, &ph->t);
}

static void ring_limit(struct bench *b)
{
	struct bench_phase *ph = &b->ph[BENCH_BASE_RING];
	size_t chunk = b->o.chunk ? b->o.chunk : 2u << 20;
	/* A stream's buffers, as adump_session_create() divides the pool: the bench sets
	 * stream_max to its stream count. */
	unsigned slots = (unsigned)(b->r.pool_bytes / chunk / b->plan.w.stream_count);
	uint64_t records = b->r.records > RING_LIMIT_MIN_RECORDS ? b->r.records
								  : RING_LIMIT_MIN_RECORDS;

	ph->has_run = true;
	ph->chan_buffers = slots < 2 ? 2 : slots;
	adump_bench_ring_limit(records, slots, false, &ph->t);
	adump_bench_chan_handoff(records, slots, &ph->chan);
	adump_bench_ring_limit(records, slots, true, &ph->ring_read);
}

enum adump_bench_fio_engine tool_bench_fio_engine(const struct bench_opts *o, const char **why,
						  int *refused)
{
	*refused = 0;
	if (o->fio_engine >= 0) {
		*why = "configured";
		return (enum adump_bench_fio_engine)o->fio_engine;
	}
	/* fio runs as our child: what refuses io_uring here (a seccomp profile, the sysctl)
	 * refuses it there too, and fio would fail instead of measuring. */
	*refused = adump_writer_probe_uring();
	*why = *refused ? "refused" : "auto";
	return *refused ? ADUMP_BENCH_FIO_PSYNC : ADUMP_BENCH_FIO_URING;
}

static void fio_engine_say(enum adump_bench_fio_engine engine, const char *why, int refused,
			   unsigned jobs)
{
	if (engine != ADUMP_BENCH_FIO_PSYNC)
		return;
	fprintf(stderr, "adump bench: fio with psync, %u job%s (%s%s)\n", jobs, jobs == 1 ? "" : "s",
		refused ? "io_uring refused: " : why, refused ? adump_strerror(refused) : "");
}

/* fio on the capture's filesystem and byte count, buffered then O_DIRECT, each from a
 * synced start and timed until synced, as the capture is. O_DIRECT refused by the
 * filesystem: fio-direct is left out, and said so. With psync, as many jobs as the capture
 * had writer threads. */
static void fio(struct bench *b)
{
	char dir[BENCH_PATH_CAP + 16];
	struct adump_bench_fio_cfg cfg = { .is_sync = b->o.is_sync };
	int ret;

	cfg.engine = tool_bench_fio_engine(&b->o, &b->fio_why, &b->fio_refused);
	cfg.jobs = b->o.fio_jobs ? b->o.fio_jobs : tool_bench_writer_threads(&b->r.st);
	b->fio_engine = cfg.engine;
	b->fio_jobs = cfg.engine == ADUMP_BENCH_FIO_PSYNC ? cfg.jobs : 1;
	fio_engine_say(cfg.engine, b->fio_why, b->fio_refused, b->fio_jobs);
	snprintf(dir, sizeof(dir), "%s/fio", b->base_dir);
	ret = tool_bench_make_dir(dir);
	for (int base = BENCH_BASE_FIO_BUFFERED; base <= BENCH_BASE_FIO_DIRECT; base++) {
		struct bench_phase *ph = &b->ph[base];

		if (base == BENCH_BASE_FIO_DIRECT && ret == 0 && !is_direct_ok(dir)) {
			fprintf(stderr, "adump bench: %s refuses O_DIRECT: fio-direct skipped\n", dir);
			continue;
		}
		ph->has_run = true;
		if (ret < 0) {
			ph->t.error = ret;
			continue;
		}
		tool_bench_sync_before(b);
		cfg.is_direct = base == BENCH_BASE_FIO_DIRECT;
		adump_bench_fio(dir, b->r.bytes, &cfg, &ph->t);
	}
	if (ret == 0)
		rmdir(dir);
}

void tool_bench_baselines_after(struct bench *b)
{
	const struct bench_phase *ph = b->ph;

	for (int base = BENCH_BASE_DISK; base <= BENCH_BASE_DISK_DIRECT; base++)
		if (ph[base].has_run)
			disk_pass(b, base, b->r.bytes, 1);
	if (has(b, BENCH_BASE_NODUMP))
		nodump(b);
	if (has(b, BENCH_BASE_NAIVE))
		naive(b);
	if (has(b, BENCH_BASE_CREATE))
		create_limit(b, BENCH_BASE_CREATE);
	if (has(b, BENCH_BASE_PUBLISH))
		create_limit(b, BENCH_BASE_PUBLISH);
	if (has(b, BENCH_BASE_RING))
		ring_limit(b);
	if (b->o.baselines & BENCH_BASE_FIO)
		fio(b);
	if (ph[BENCH_BASE_NODUMP].has_run && ph[BENCH_BASE_NODUMP].t.error == 0 &&
	    ph[BENCH_BASE_NODUMP].t.seconds > 0) {
		double base = ph[BENCH_BASE_NODUMP].t.seconds;

		b->overhead_adump = (b->r.seconds - base) / base;
		if (ph[BENCH_BASE_NAIVE].has_run && ph[BENCH_BASE_NAIVE].t.error == 0)
			b->overhead_naive = (ph[BENCH_BASE_NAIVE].t.seconds - base) / base;
	}
}

/* `adump bench --fio-only`: one fio run as fio() above runs it (bench/fio.c builds fio's
 * command line and times it), from a synced start, for scripts that alternate fio with whole
 * bench runs: bench/alternate.py keeps no fio command line of its own. */
int tool_bench_fio_only(const struct bench_opts *o)
{
	bool is_direct = o->fio_only == BENCH_FIO_ONLY_DIRECT;
	const char *kind = is_direct ? "direct" : "buffered", *why;
	struct adump_bench_fio_cfg cfg = { .is_direct = is_direct, .is_sync = o->is_sync };
	struct adump_bench_timing t;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int refused, ret;
	double gbps;

	cfg.engine = tool_bench_fio_engine(o, &why, &refused);
	cfg.jobs = o->fio_jobs ? o->fio_jobs : o->workers ? o->workers : cores > 0 ? (unsigned)cores : 1;
	if (cfg.engine != ADUMP_BENCH_FIO_PSYNC)
		cfg.jobs = 1;
	fio_engine_say(cfg.engine, why, refused, cfg.jobs);
	ret = tool_bench_make_dir(o->out);
	if (ret < 0) {
		fprintf(stderr, "adump bench: cannot create %s: %s\n", o->out, strerror(-ret));
		return 1;
	}
	adump_bench_syncfs(o->out);
	adump_bench_fio(o->out, o->w.total_bytes, &cfg, &t);
	gbps = tool_bench_per_s((double)t.bytes / 1e9, t.seconds);
	if (t.error < 0)
		fprintf(stderr, "adump bench: fio (%s) in %s: %s\n", kind, o->out,
			adump_strerror(t.error));
	else
		printf("fio-%s  %llu bytes in %.3f s (writes %.3f s%s), %.3f GB/s, %.2f CPU s "
		       "(%s, %u job%s)\n",
		       kind, (unsigned long long)t.bytes, t.seconds, t.seconds_unsynced,
		       o->is_sync ? ", then syncfs" : "", gbps, t.cpu_seconds,
		       adump_bench_fio_engine_names[cfg.engine], cfg.jobs, cfg.jobs == 1 ? "" : "s");
	if (o->json)
		printf("{\"fio\":\"%s\",\"bytes\":%llu,\"seconds\":%.6f,\"seconds_unsynced\":%.6f,"
		       "\"cpu_seconds\":%.6f,\"gbps\":%.6f,\"engine\":\"%s\",\"engine_why\":\"%s\","
		       "\"jobs\":%u,\"error\":%d}\n",
		       kind, (unsigned long long)t.bytes, t.seconds, t.seconds_unsynced,
		       t.cpu_seconds, gbps, adump_bench_fio_engine_names[cfg.engine], why, cfg.jobs,
		       t.error);
	return t.error < 0 ? 1 : 0;
}
