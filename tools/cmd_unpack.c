/* SPDX-License-Identifier: Apache-2.0 */
/* `adump unpack DIR OUT`: restore the dump files of a packed capture. */
#include <stdio.h>
#include <string.h>

#include "adump/adump.h"
#include "tools/tool.h"

int cmd_unpack(int argc, char **argv)
{
	long n;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: adump unpack DIR OUT\n\n"
		       "Restores every dump file of a packed capture (DIR is <dump_path>/<time> or its\n"
		       "packed/ folder) as OUT/<device_id>/<name>, byte-identical to the file sink's,\n"
		       "checking each against the CRC32C in the index. Exits 1 on any mismatch or when\n"
		       "DIR holds no entries, 2 on bad usage.\n");
		return 0;
	}
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1]) {
			tool_err("adump unpack: unknown option '%s'\n", argv[i]);
			argc = 0;
		}
	if (argc != 3) {
		tool_err("usage: adump unpack DIR OUT\n");
		return 2;
	}
	n = adump_unpack(argv[1], argv[2]);
	if (n < 0) {
		tool_err("adump unpack: %s: %s\n", argv[1], adump_strerror((int)n));
		return 1;
	}
	if (n == 0) {
		tool_err("adump unpack: %s: no packed capture entries found (DIR is "
				"<dump_path>/<time> or its packed/ folder)\n", argv[1]);
		return 1;
	}
	printf("adump unpack: restored %ld files into %s\n", n, tool_text(argv[2]));
	return 0;
}
