/* SPDX-License-Identifier: Apache-2.0 */
/* adump_no_uring COMMAND [ARG...]: runs COMMAND, and everything it starts, as inside a
 * container whose seccomp profile refuses io_uring: io_uring_setup, io_uring_enter and
 * io_uring_register fail with EPERM, as under Docker's default profile (since moby pull
 * request 46762), containerd 2.0's RuntimeDefault, or kernel.io_uring_disabled=2. The
 * library, the adump command, fio and the Python extension all meet the same refusal, with
 * nothing of theirs told about it: the whole ctest suite runs under it in CI
 * (scripts/test.sh nouring). A filter on this process tree, unlike the sysctl, leaves the
 * rest of the machine alone. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int refuse_uring(void)
{
	static const char *const calls[] = { "io_uring_setup", "io_uring_enter", "io_uring_register" };
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int ret = 0;

	if (!ctx)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]) && ret == 0; i++) {
		int nr = seccomp_syscall_resolve_name(calls[i]);

		ret = nr == __NR_SCMP_ERROR ? -ENOSYS :
		      seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	/* Loading sets no_new_privs first (libseccomp's default), so no privilege is needed. */
	if (ret == 0)
		ret = seccomp_load(ctx);
	seccomp_release(ctx);
	return ret;
}

int main(int argc, char **argv)
{
	int ret;

	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: adump_no_uring COMMAND [ARG...]\n"
				"Runs COMMAND with io_uring refused (EPERM), as in a container.\n");
		return 2;
	}
	ret = refuse_uring();
	if (ret < 0) {
		fprintf(stderr, "adump_no_uring: installing the seccomp filter failed: %s\n",
			strerror(-ret));
		return 126;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "adump_no_uring: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
