/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include "tools/tool.h"
int cmd_bench(int argc, char **argv)
{
	fprintf(stderr, "adump bench: not built yet\n");
	return 1;
}
