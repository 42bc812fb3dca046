/* SPDX-License-Identifier: Apache-2.0 */
/* `adump bench`: runs a workload of Add operators on N streams of the simulated NPU, dumps
 * every op through a capture session, and reports how fast and at what cost; with --compare
 * it also runs, in the same invocation and on the same bytes, the baselines of bench/ (naive
 * dumper, disk-limit, create-limit, ring-limit with the channel hand-off beside it, no dump,
 * fio) and reports the ratios. This file is the order of the phases; the jobs are in
 * bench_opts.c, bench_run.c, bench_baselines.c and bench_report.c (tools/bench_int.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tools/bench_int.h"

/* Exit code of a run that reported: 0 only if every dump file completed (every release came,
 * every file verified) and every baseline ran. */
static int exit_code(const struct bench *b)
{
	const struct bench_result *r = &b->r;

	if (r->error != 0 || r->st.files_completed != b->plan.op_count || r->st.files_failed)
		return 1;
	if (b->o.producer == BENCH_PRODUCER_HOST_NOCOPY && r->released != b->plan.op_count)
		return 1;
	if (b->o.is_verify && (r->verified_files != b->plan.op_count || r->verify_bad))
		return 1;
	for (int base = 0; base < BENCH_BASE_COUNT; base++)
		if (b->ph[base].has_run && (b->ph[base].t.error < 0 || b->ph[base].chan.error < 0))
			return 1;
	return 0;
}

static int dirs_make(struct bench *b)
{
	int ret;

	if (!b->o.out)
		return 0;
	ret = tool_bench_make_dir(b->o.out);
	if (ret == 0 && b->o.is_compare) {
		snprintf(b->base_dir, sizeof(b->base_dir), "%s/baselines", b->o.out);
		ret = tool_bench_make_dir(b->base_dir);
	}
	if (ret < 0)
		fprintf(stderr, "adump bench: cannot create %s: %s\n", b->o.out, strerror(-ret));
	return ret;
}

/* The simulated compute rate: --compute-gbps, or with auto half of the faster of the disk
 * passes run before the capture (disk-limit, and disk-limit-direct unless --io buffered or
 * the filesystem refuses O_DIRECT: io auto and direct write large files O_DIRECT, so the
 * disk's ceiling is the faster of the two), shared by the streams; b->compute_base names
 * the pass. Return: 0 or negative. */
static int compute_set(struct bench *b)
{
	double best = 0;
	int error = -EIO;

	if (b->o.compute_gbps < 0) {
		for (int base = BENCH_BASE_DISK; base <= BENCH_BASE_DISK_DIRECT; base++) {
			const struct bench_phase *ph = &b->ph[base];

			if (!ph->has_run)
				continue;
			if (ph->t.error < 0 || ph->t.seconds <= 0) {
				error = ph->t.error < 0 ? ph->t.error : error;
				continue;
			}
			if (ph->run_gbps[0] > best) {
				best = ph->run_gbps[0];
				b->compute_base = base;
			}
		}
		if (best <= 0) {
			fprintf(stderr, "adump bench: --compute-gbps auto: disk-limit failed\n");
			return error;
		}
		b->compute_gbps = best / 2 / b->plan.w.stream_count;
	} else {
		b->compute_gbps = b->o.compute_gbps;
	}
	adump_dev_set_compute_gbps(b->bd.dev, b->compute_gbps);
	return 0;
}

/* ADUMP_TESTPOINTS="name=errno[,name=errno...]": arm each testpoint to fail with -errno on
 * every hit, for tests that run the command (tests/bench). Only in builds with testpoints. */
static void testpoints_arm(void)
{
#ifdef ADUMP_ENABLE_TESTPOINTS
	const char *env = getenv("ADUMP_TESTPOINTS");
	char *copy, *save = NULL, *tok;

	if (!env || !(copy = strdup(env)))
		return;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || atoi(eq + 1) <= 0) {
			fprintf(stderr, "adump bench: ADUMP_TESTPOINTS: '%s' is not name=errno\n",
				tok);
			continue;
		}
		*eq = '\0';
		adump_testpoint_arm(tok, -atoi(eq + 1), 1, 1);
	}
	free(copy);
#endif
}

static void bench_fini(struct bench *b)
{
	if (b->session && b->bs)
		for (unsigned i = 0; i < b->plan.w.stream_count; i++) {
			if (b->bs[i].stream)
				adump_session_detach(b->session, b->bs[i].stream);
			adump_host_stream_close(b->bs[i].host);
		}
	adump_session_destroy(b->session);
	adump_bench_verify_destroy(b->verify);
	tool_bench_dev_teardown(b);
	adump_bench_plan_free(&b->plan);
}

int cmd_bench(int argc, char **argv)
{
	struct bench *b = calloc(1, sizeof(*b));
	int ret, rc_exit = 1;

	if (!b) {
		fprintf(stderr, "adump bench: %s\n", strerror(ENOMEM));
		return 1;
	}
	if (tool_bench_opts_parse(argc, argv, &b->o) < 0) {
		free(b);
		return 2;
	}
	testpoints_arm();
	if (b->o.is_verify_crc) {
		rc_exit = tool_bench_soak(&b->o);
		free(b);
		return rc_exit;
	}
	if (b->o.fio_only) {
		rc_exit = tool_bench_fio_only(&b->o);
		free(b);
		return rc_exit;
	}
	if (b->o.describe) {
		adump_bench_profile_describe(b->o.w.profile, stdout);
		free(b);
		return 0;
	}
	ret = adump_bench_plan_make(&b->o.w, &b->plan);
	if (ret < 0) {
		fprintf(stderr, "adump bench: cannot plan the workload: %s\n", adump_strerror(ret));
		free(b);
		return 2;
	}
	ret = dirs_make(b);
	if (ret < 0)
		goto out;
	ret = tool_bench_dev_setup(b);
	if (ret < 0)
		goto out;

	/* Every kernel once, unpaced and without dumps, before anything is timed: the simulated
	 * device's first pass over its freshly filled memory is several times slower than the
	 * later ones (large profile, 2.2 GB: 0.24-1.34 s against 0.04-0.09 s; user time in the
	 * Add loops, no guest page faults: a cost of this hypervisor, not of the kernels), and
	 * it fell on whichever phase ran first. */
	if (b->o.is_warmup) {
		double t0 = adump_bench_now();

		ret = tool_bench_streams_run(b, false, "warm-up");
		if (ret < 0) {
			fprintf(stderr, "adump bench: warm-up pass: %s\n", adump_strerror(ret));
			goto out;
		}
		b->r.warmup_seconds = adump_bench_now() - t0;
	}
	tool_bench_disk_before(b);
	ret = compute_set(b);
	if (ret < 0)
		goto out;
	ret = tool_bench_capture(b);
	if (ret < 0)
		goto out;
	tool_bench_baselines_after(b);
	tool_bench_report(b);
	fflush(stdout);
	ret = b->r.error;
	rc_exit = exit_code(b);
out:
	if (ret < 0 && rc_exit)
		fprintf(stderr, "adump bench: %s\n", adump_strerror(ret));
	bench_fini(b);
	free(b);
	return rc_exit;
}
