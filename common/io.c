/* SPDX-License-Identifier: Apache-2.0 */
/* Small synchronous I/O helpers for the cold paths (headers, CSV files, index batches). */
#include <errno.h>
#include <unistd.h>

#include "common/common.h"

int adump_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
