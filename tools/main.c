/* SPDX-License-Identifier: Apache-2.0 */
/* `adump`: capture benchmarks and dump-file tools. Dispatches to one subcommand. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "adump/adump.h"
#include "common/common.h"
#include "tools/tool.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "bench", cmd_bench, "capture a synthetic multi-stream workload on the simulated NPU" },
	{ "compare", cmd_compare, "compare two dumps tensor by tensor (like msaccucmp compare)" },
	{ "convert", cmd_convert, "dump files -> numpy .npy arrays (like msaccucmp convert)" },
	{ "export", cmd_export, "a torch capture in msprobe's layout (dump.json, .pt files)" },
	{ "inspect", cmd_inspect, "header and per-tensor statistics of dump files" },
	{ "report", cmd_report, "a compare's or scan's result as one self-contained HTML page" },
	{ "scan", cmd_scan, "NaN/Inf in one capture: the op that made them, the ops they reached" },
	{ "verify", cmd_verify, "check that every dump file of a directory is complete" },
	{ "unpack", cmd_unpack, "restore the dump files of a packed directory" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: adump <command> [options]\n\n"
		   "adump captures NPU operator dumps (CANN layout) and reads them.\n\n"
		   "commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].fn)
			fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'adump <command> --help' describes each command; 'adump --version' prints\n"
		   "the version. Exit codes: 0 success, 1 failure, 2 usage error.\n");
}

int tool_parse_size(const char *s, uint64_t *out)
{
	return adump_size_parse(s, out) < 0 ? -1 : 0;
}

int tool_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	/* strtoull() would take a sign or leading space; a number starts with a digit. */
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

bool tool_is_tty(void)
{
	return isatty(STDERR_FILENO);
}

int tool_parse_threads(const char *cmd, const char *arg, unsigned *out)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (*end || !*arg || v == 0 || v > 1024) {
		fprintf(stderr, "adump %s: --threads: expected 1-1024, got '%s'\n", cmd, arg);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

void tool_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

double tool_now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") || !strcmp(argv[1], "version")) {
		printf("adump %d.%d.%d\n", ADUMP_VERSION_MAJOR, ADUMP_VERSION_MINOR,
		       ADUMP_VERSION_PATCH);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].fn && !strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "adump: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
