/* SPDX-License-Identifier: MIT */
/*
 * small_file.c - see small_file.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/small_file.h"

ssize_t sp_read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}
