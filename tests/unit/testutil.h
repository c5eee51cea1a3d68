/* SPDX-License-Identifier: MIT */
/*
 * testutil.h - scaffolding shared by the unit tests: a private temporary
 * directory per test (or group) and its removal, and whole-file read/write.
 * Header-only (static functions); include after <cmocka.h>.
 *
 *   tu_mkdtemp(buf, cap, tag)  creates $TMPDIR/<tag>.XXXXXX (TMPDIR unset:
 *                              /tmp), mode 0700; buf holds the path.
 *                              Returns buf, or NULL with errno set.
 *   tu_rm_rf(path)             removes path and everything under it without
 *                              following symbolic links (nftw, FTW_PHYS,
 *                              FTW_MOUNT: it never leaves the file system
 *                              it starts on, so a tmpfs a test mounted inside
 *                              and forgot to unmount is not emptied).  A
 *                              path that does not exist is not an error.
 *                              Returns 0 or a negative errno.
 *   tu_dir                     the directory of tu_setup_dir/tu_teardown_dir:
 *                              pass them to cmocka as setup and teardown
 *                              (per test or per group); the tag is the
 *                              program's name.
 *   tu_path(buf, cap, name)    tu_dir "/" name, asserted to fit.
 *   tu_write_file(path, buf, len) / tu_read_file(path, &buf, &len)
 *                              whole files; 0 or a negative errno; the read
 *                              buffer is malloc'd (NUL-terminated, not
 *                              counted in len) and the caller frees it.
 */
#ifndef SPANPROF_TEST_TESTUTIL_H
#define SPANPROF_TEST_TESTUTIL_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static __attribute__((unused)) char *tu_mkdtemp(char *buf, size_t cap, const char *tag)
{
	const char *base = getenv("TMPDIR");
	int n;

	if (!base || !*base)
		base = "/tmp";
	n = snprintf(buf, cap, "%s/%s.XXXXXX", base, tag);
	if (n < 0 || (size_t)n >= cap) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return mkdtemp(buf);
}

static int tu__rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D)
		return rmdir(path) ? -errno : 0;
	return unlink(path) ? -errno : 0;
}

static __attribute__((unused)) int tu_rm_rf(const char *path)
{
	struct stat st;
	int r;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	r = nftw(path, tu__rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	if (r > 0)
		return -EIO;
	return r < 0 && errno ? -errno : r;
}

static char tu_dir[PATH_MAX];

static __attribute__((unused)) int tu_setup_dir(void **state)
{
	extern char *program_invocation_short_name;

	(void)state;
	return tu_mkdtemp(tu_dir, sizeof(tu_dir), program_invocation_short_name) ? 0 : -1;
}

static __attribute__((unused)) int tu_teardown_dir(void **state)
{
	int r;

	(void)state;
	if (!tu_dir[0])
		return 0;
	r = tu_rm_rf(tu_dir);
	if (r)
		fprintf(stderr, "could not remove %s: %s\n", tu_dir, strerror(-r));
	tu_dir[0] = '\0';
	return r ? -1 : 0;
}

static __attribute__((unused)) const char *tu_path(char *buf, size_t cap, const char *name)
{
	int n = snprintf(buf, cap, "%s/%s", tu_dir, name);

	if (n < 0 || (size_t)n >= cap) {
		fprintf(stderr, "path %s/%s too long\n", tu_dir, name);
		abort();
	}
	return buf;
}

static __attribute__((unused)) int tu_write_file(const char *path, const void *buf, size_t len)
{
	const char *p = buf;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), err = 0;

	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (close(fd) && !err)
		err = -errno;
	return err;
}

static __attribute__((unused)) int tu_read_file(const char *path, uint8_t **out, size_t *out_len)
{
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;

	*out = NULL;
	*out_len = 0;
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			uint8_t *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
}

#endif /* SPANPROF_TEST_TESTUTIL_H */
