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
 *   tu_source_path(buf, cap, rel)  a file of the source tree: rel under
 *                              $SPANPROF_SRCDIR, the current directory
 *                              (tests/run.sh runs from the root), or three
 *                              levels above the test binary
 *                              (build/tests/test_x); 0 or -ENOENT.
 *   tu_write_file(path, buf, len) / tu_read_file(path, &buf, &len)
 *                              whole files; 0 or a negative errno; the read
 *                              buffer is malloc'd (NUL-terminated, not
 *                              counted in len) and the caller frees it.
 *   tu_free_port()             a loopback TCP port free a moment ago (bound
 *                              to port 0, read back, closed): nothing
 *                              listens there unless another process takes
 *                              it since.  Its socket calls are asserted.
 */
#ifndef SPANPROF_TEST_TESTUTIL_H
#define SPANPROF_TEST_TESTUTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
	if (flag == FTW_DP || flag == FTW_D || flag == FTW_DNR)
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

/* Short on purpose: gcc sizes every snprintf of tu_dir against it
 * (-Wformat-truncation), and tests build paths in small buffers.  A $TMPDIR
 * longer than about 50 bytes makes tu_setup_dir fail (ENAMETOOLONG). */
static char tu__dir[80];
static const char *const tu_dir = tu__dir;

static __attribute__((unused)) int tu_setup_dir(void **state)
{
	extern char *program_invocation_short_name;

	(void)state;
	return tu_mkdtemp(tu__dir, sizeof(tu__dir), program_invocation_short_name) ? 0 : -1;
}

static __attribute__((unused)) int tu_teardown_dir(void **state)
{
	int r;

	(void)state;
	if (!tu__dir[0])
		return 0;
	r = tu_rm_rf(tu_dir);
	if (r)
		fprintf(stderr, "could not remove %s: %s\n", tu_dir, strerror(-r));
	tu__dir[0] = '\0';
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

static __attribute__((unused)) int tu_source_path(char *buf, size_t cap, const char *rel)
{
	const char *env = getenv("SPANPROF_SRCDIR");
	char base[PATH_MAX];
	ssize_t n;
	int up, len;

	if (env) {
		len = snprintf(buf, cap, "%s/%s", env, rel);
		if (len > 0 && (size_t)len < cap && access(buf, R_OK) == 0)
			return 0;
	}
	if (getcwd(base, sizeof(base))) {
		len = snprintf(buf, cap, "%s/%s", base, rel);
		if (len > 0 && (size_t)len < cap && access(buf, R_OK) == 0)
			return 0;
	}
	n = readlink("/proc/self/exe", base, sizeof(base) - 1);
	if (n > 0) {
		base[n] = '\0';
		for (up = 0; up < 3; up++) {
			char *s = strrchr(base, '/');

			if (s)
				*s = '\0';
		}
		len = snprintf(buf, cap, "%s/%s", base, rel);
		if (len > 0 && (size_t)len < cap && access(buf, R_OK) == 0)
			return 0;
	}
	return -ENOENT;
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

static __attribute__((unused)) int tu_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port;

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

#endif /* SPANPROF_TEST_TESTUTIL_H */
