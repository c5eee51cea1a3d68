/* SPDX-License-Identifier: MIT */
/*
 * fileio.c - see fileio.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"

int sp_read_fd(int fd, size_t max_bytes, uint8_t **out, size_t *out_len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *b = malloc(cap), *q;
	int err = 0;

	*out = NULL;
	*out_len = 0;
	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {	/* keep room for the NUL */
			if (cap > max_bytes) {
				err = -E2BIG;
				goto out;
			}
			cap *= 2;
			q = realloc(b, cap);
			if (!q) {
				err = -ENOMEM;
				goto out;
			}
			b = q;
		}
		r = read(fd, b + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max_bytes) {
			err = -E2BIG;
			goto out;
		}
	}
	b[n] = 0;
	*out = b;
	*out_len = n;
	b = NULL;
out:
	free(b);
	return err;
}

int sp_read_path(const char *path, size_t max_bytes, uint8_t **out, size_t *out_len)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	int err;

	if (fd < 0) {
		*out = NULL;
		*out_len = 0;
		return -errno;
	}
	err = sp_read_fd(fd, max_bytes, out, out_len);
	if (fd != STDIN_FILENO)
		close(fd);
	return err;
}
