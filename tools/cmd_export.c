/* SPDX-License-Identifier: Apache-2.0 */
/* adump export --msprobe DIR OUT: an adump.torch capture in msprobe's layout
 * (adump_export_msprobe, reader/export.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "adump/adump_err.h"
#include "adump/export.h"
#include "tools/tool.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: adump export --msprobe [--md5] [--no-data] DIR OUT\n"
		"  DIR: an adump.torch capture (step<N>/rank<R>/...) or one rank directory\n"
		"  OUT: gets step<N>/rank<R>/{dump.json,stack.json,construct.json,dump_tensor_data/}\n"
		"  --md5      each tensor's CRC-32 as msprobe's summary_mode md5 writes it\n"
		"  --no-data  statistics only (task \"statistics\"), no .pt files\n");
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "msprobe", no_argument, NULL, 'm' },
		{ "md5", no_argument, NULL, '5' },
		{ "no-data", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned flags = 0;
	bool msprobe = false;
	char msg[1024];
	long n;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm': msprobe = true; break;
		case '5': flags |= ADUMP_EXPORT_MD5; break;
		case 'n': flags |= ADUMP_EXPORT_NO_DATA; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!msprobe || argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	n = adump_export_msprobe(argv[optind], argv[optind + 1], flags, msg, sizeof(msg));
	if (n < 0) {
		tool_err("adump export: %s (%s)\n", msg[0] ? msg : "failed",
			adump_strerror((int)n));
		return n == -ENOENT ? 3 : 1;
	}
	printf("exported %ld dumps to %s\n", n, tool_text(argv[optind + 1]));
	return 0;
}
