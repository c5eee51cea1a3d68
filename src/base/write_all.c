/* SPDX-License-Identifier: MIT */
/*
 * write_all.c - see write_all.h.
 */
#include <errno.h>
#include <unistd.h>

#include "base/write_all.h"

int sp_write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}
