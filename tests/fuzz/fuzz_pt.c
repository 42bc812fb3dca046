/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: any bytes as a .pt file (msprobe's dump_tensor_data/<name>.pt). The
 * reader must refuse it with a message naming the file, or locate a tensor that lies inside
 * the file and whose byte count is its element count times the element size; with CRCs
 * checked too. The bytes reach the reader through a memfd, as it reads files by path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "adump/reader.h"

#define FUZZ_NAME "fuzz_pt"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static int fd = -1;
	char path[64], msg[1024];
	struct adump_pt_info info;

	if (fd < 0) {
		fd = memfd_create("fuzz_pt", MFD_CLOEXEC);
		if (fd < 0)
			abort();
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (int checked = 0; checked < 2; checked++) {
		msg[0] = '\0';
		if (adump_pt_read(path, checked, &info, msg, sizeof(msg)) < 0) {
			check(strstr(msg, path) != NULL, "the message names the file");
			continue;
		}
		check(info.file_bytes == size, "file size");
		check(info.offset <= size && info.bytes <= size - info.offset, "tensor inside");
		check(info.dim_count <= ADUMP_MAX_DIMS, "dims bounded");
		check(info.element_count == 0 ||
		      info.bytes / info.element_count == info.element_bytes, "bytes = n x size");
	}
	return 0;
}
