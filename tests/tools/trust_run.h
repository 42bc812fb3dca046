/* SPDX-License-Identifier: Apache-2.0 */
/* What the trust tests of the writers share (issue 30): dumps written with an op name of the
 * test's choosing, and the adump command run from an argv (no shell: the paths hold quotes),
 * optionally under a file size limit that plays a full disk. */
#ifndef ADUMP_TESTS_TRUST_RUN_H
#define ADUMP_TESTS_TRUST_RUN_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adump/adump.h"
#include "helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif

#define TRUST_N 16

/* One dump in directory @d (made if missing): one input and one output of TRUST_N floats,
 * op @type/@name (also its `module` attribute), file named as the capture names it, or where @name holds what no file name
 * the reader lists does (quotes, '$'), as if its name were "op<task>". */
static inline void trust_dump(const char *d, const char *type, const char *name, uint32_t task,
			      uint64_t ts, const float *in, const float *out)
{
	struct adump_tensor t[2] = { 0 };
	/* An attribute, as adump.torch's dumps have: compare then shows the header's name. */
	struct adump_attr attr = { .name = "module", .value = name };
	struct adump_op op = { .attr_count = 1, .attrs = &attr };
	const void *data[2] = { in, out };
	char path[PATH_MAX], file[1024];

	for (int k = 0; k < 2; k++) {
		t[k].kind = k ? ADUMP_TENSOR_OUTPUT : ADUMP_TENSOR_INPUT;
		t[k].dtype = ADUMP_DT_FLOAT;
		t[k].dim_count = 1;
		t[k].dims[0] = TRUST_N;
		t[k].bytes = TRUST_N * 4;
	}
	op.op_type = type;
	op.op_name = name;
	op.stream_id = 1;
	op.task_id = task;
	op.timestamp_us = ts;
	op.tensor_count = 2;
	op.tensors = t;
	mkdir(d, 0750);
	ck_assert_int_gt(adump_dump_file_name(&op, file, sizeof(file)), 0);
	if (strpbrk(file, "`$'\"() ")) {
		char plain[32];

		snprintf(plain, sizeof(plain), "op%u", task);
		op.op_name = plain;
		ck_assert_int_gt(adump_dump_file_name(&op, file, sizeof(file)), 0);
		op.op_name = name;
	}
	snprintf(path, sizeof(path), "%s/%s", d, file);
	ck_assert_int_eq(adump_dump_write_file(path, &op, data, 0640), 0);
}

/* The adump command with @argv (NULL-terminated, argv[0] the subcommand), run in @cwd with
 * stdout and stderr to @cwd/stdout and @cwd/stderr; @fsize_limit > 0: no file it writes may
 * grow past that many bytes (writes fail with EFBIG, SIGXFSZ ignored). Return: exit status. */
static inline int trust_run(const char *cwd, long fsize_limit, const char *const *argv)
{
	const char *args[64];
	size_t n = 0;
	pid_t pid;
	int status;

	args[n++] = ADUMP_TOOL;
	for (; *argv && n + 1 < sizeof(args) / sizeof(args[0]); argv++)
		args[n++] = *argv;
	args[n] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char path[PATH_MAX];
		int fd;

		if (chdir(cwd) < 0)
			_exit(125);
		snprintf(path, sizeof(path), "%s/stdout", cwd);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(125);
		snprintf(path, sizeof(path), "%s/stderr", cwd);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(125);
		if (fsize_limit > 0) {
			struct rlimit rl = { (rlim_t)fsize_limit, (rlim_t)fsize_limit };

			signal(SIGXFSZ, SIG_IGN);
			if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
				_exit(125);
		}
		alarm(120);
		execv(args[0], (char *const *)args);
		_exit(126);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* How many entries of directory @d start with @prefix and end with @suffix. */
static inline int trust_count(const char *d, const char *prefix, const char *suffix)
{
	int n = 0;
	DIR *dd = opendir(d);
	struct dirent *e;

	ck_assert_ptr_nonnull(dd);
	while ((e = readdir(dd))) {
		size_t len = strlen(e->d_name), sl = strlen(suffix);

		if (!strncmp(e->d_name, prefix, strlen(prefix)) && len >= sl &&
		    !strcmp(e->d_name + len - sl, suffix))
			n++;
	}
	closedir(dd);
	return n;
}

#endif
