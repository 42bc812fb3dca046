/* SPDX-License-Identifier: Apache-2.0 */
/* fio as the disk's ceiling: the tool the field uses to state what a disk can do, run on the
 * dump directory's filesystem with the capture's byte count, buffered or O_DIRECT, with
 * io_uring or (where the kernel refuses io_uring) psync, its JSON report read with json-c. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

extern char **environ;

#define FIO_BLOCK_BYTES (1u << 20)
#define FIO_DEPTH "16"
#define FIO_ALIGN 4096u

const char *const adump_bench_fio_engine_names[] = { "io_uring", "psync" };

static double tv_seconds(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

/* fio's report for its one job: bytes written, the job's write time in ms (first write to
 * last completion; an end_fsync would not be in it) and its error. Return: 0 or -EIO if
 * unreadable. */
static int read_report(const char *path, uint64_t *bytes, double *seconds, int *error)
{
	json_object *root = json_object_from_file(path), *jobs, *job, *write, *v;
	int ret = -EIO;

	if (!root)
		return -EIO;
	if (!json_object_object_get_ex(root, "jobs", &jobs) ||
	    json_object_array_length(jobs) != 1)
		goto out;
	job = json_object_array_get_idx(jobs, 0);
	if (!json_object_object_get_ex(job, "write", &write))
		goto out;
	if (!json_object_object_get_ex(write, "io_bytes", &v))
		goto out;
	*bytes = (uint64_t)json_object_get_int64(v);
	if (!json_object_object_get_ex(write, "runtime", &v))
		goto out;
	*seconds = (double)json_object_get_int64(v) / 1e3;
	*error = json_object_object_get_ex(job, "error", &v) ? json_object_get_int(v) : 0;
	ret = 0;
out:
	json_object_put(root);
	return ret;
}

int adump_bench_fio(const char *dir, uint64_t bytes, const struct adump_bench_fio_cfg *cfg,
		    struct adump_bench_timing *out)
{
	bool is_direct = cfg->is_direct, sync = cfg->is_sync;
	bool is_psync = cfg->engine == ADUMP_BENCH_FIO_PSYNC;
	unsigned jobs = is_psync && cfg->jobs > 1 ? cfg->jobs : 1;
	const char *kind = is_direct ? "direct" : "buffered";
	uint64_t block = FIO_BLOCK_BYTES, share, offset = 0;
	char a_dir[4200], a_file[64], a_bs[64], a_out[4400], report[4300];
	char a_job[ADUMP_BENCH_FIO_JOBS_MAX][3][48];
	/* Global options, then one job section per job: job k writes its share of the one file
	 * at its own offset, the last job the rest, so the jobs write exactly the bytes asked
	 * (rounded up to whole blocks, as one job does), reported as one job (group_reporting:
	 * bytes summed, the slowest job's time). */
	char *argv[16 + 3 * ADUMP_BENCH_FIO_JOBS_MAX] = {
		"fio", a_dir, a_file, "--rw=write", a_bs,
		is_psync ? "--ioengine=psync" : "--ioengine=io_uring",
		is_psync ? "--iodepth=1" : "--iodepth=" FIO_DEPTH, "--group_reporting",
		"--end_fsync=0", is_direct ? "--direct=1" : "--direct=0", "--unlink=0",
		"--output-format=json", a_out,
	};
	unsigned argc = 13;
	posix_spawn_file_actions_t fa;
	struct rusage ru;
	double t0, fio_seconds = 0;
	int status, fio_error = 0, ret;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	if (jobs > ADUMP_BENCH_FIO_JOBS_MAX)
		jobs = ADUMP_BENCH_FIO_JOBS_MAX;
	/* fio wants at least one block; O_DIRECT wants whole 4 KiB blocks. */
	if (bytes < block)
		block = (bytes + FIO_ALIGN - 1) / FIO_ALIGN * FIO_ALIGN;
	if (!block)
		block = FIO_ALIGN;
	share = bytes / jobs / block * block;
	if (!share)
		jobs = 1;
	for (unsigned k = 0; k < jobs; k++) {
		uint64_t len = k + 1 < jobs ? share : (bytes - offset + block - 1) / block * block;

		if (!len)
			len = block;
		snprintf(a_job[k][0], sizeof(a_job[k][0]), "--name=adump%u", k);
		snprintf(a_job[k][1], sizeof(a_job[k][1]), "--offset=%llu", (unsigned long long)offset);
		snprintf(a_job[k][2], sizeof(a_job[k][2]), "--size=%llu", (unsigned long long)len);
		for (unsigned i = 0; i < 3; i++)
			argv[argc++] = a_job[k][i];
		offset += len;
	}
	argv[argc] = NULL;
	snprintf(a_dir, sizeof(a_dir), "--directory=%s", dir);
	snprintf(a_file, sizeof(a_file), "--filename=adump-fio.%s", kind);
	snprintf(a_bs, sizeof(a_bs), "--bs=%llu", (unsigned long long)block);
	snprintf(report, sizeof(report), "%s/adump-fio.%s.json", dir, kind);
	snprintf(a_out, sizeof(a_out), "--output=%s", report);

	/* fio's own output goes to the report file; stdin is not its to read. */
	ret = posix_spawn_file_actions_init(&fa);
	if (ret)
		return out->error = -ret;
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	ret = posix_spawnp(&pid, "fio", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (ret)
		return out->error = -ret;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			out->error = -errno;
			goto cleanup;
		}
	}
	/* fio's processes, its I/O workers included: the whole cost of its run. */
	out->cpu_seconds = tv_seconds(&ru.ru_utime) + tv_seconds(&ru.ru_stime);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "adump bench: fio (%s, %s) failed (exit status %d)\n", kind,
			adump_bench_fio_engine_names[cfg->engine],
			WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		out->error = -EIO;
		goto cleanup;
	}
	ret = read_report(report, &out->bytes, &fio_seconds, &fio_error);
	if (ret < 0 || fio_error) {
		fprintf(stderr, "adump bench: fio (%s): %s\n", kind,
			ret < 0 ? "unreadable JSON report" : strerror(fio_error));
		out->error = ret < 0 ? ret : -fio_error;
		goto cleanup;
	}
	out->files = 1;
	/* As a capture is timed: its writes, then a syncfs() of the filesystem. Not fio's
	 * end_fsync: the write time fio reports stops before it (1.37 GB O_DIRECT: a reported
	 * 1.73 s in a 2.84 s run, the fsync ~1 s of the difference), and its --unlink would drop
	 * buffered data still dirty. The file is removed once synced. */
	out->seconds_unsynced = fio_seconds;
	t0 = adump_bench_now();
	if (sync) {
		ret = adump_bench_syncfs(dir);
		if (ret < 0)
			out->error = ret;
	}
	out->seconds = fio_seconds + (adump_bench_now() - t0);
cleanup:
	unlink(report);
	snprintf(report, sizeof(report), "%s/adump-fio.%s", dir, kind);
	unlink(report);
	return out->error;
}
