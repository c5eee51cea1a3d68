// SPDX-License-Identifier: MIT
/*
 * pin.c - O_PATH pin, check, reopen through /proc/self/fd (contract:
 * pin.h).
 *
 * openat2(2) is called through syscall(2): glibc 2.36 has no wrapper.  On
 * kernels before 5.6 (ENOSYS) the root-relative lookup falls back to
 * openat(2), which resolves absolute symlinks outside the root: the
 * inode check still refuses any file that is not the mapped one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/pin.h"

#define READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

static int pin_check(int fd, uint64_t want_ino, struct stat *st)
{
	if (fstat(fd, st) != 0)
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	if (want_ino && (uint64_t)st->st_ino != want_ino)
		return -ESTALE;
	return 0;
}

static int pin_in_root(int rootfd, const char *path)
{
	struct open_how how;
	int fd;

	while (*path == '/')
		path++;
	if (!*path)
		return -EINVAL;	/* the root itself: a directory */
	memset(&how, 0, sizeof(how));
	how.flags = O_PATH | O_CLOEXEC;
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		fd = openat(rootfd, path, O_PATH | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int sp_pin__path(int rootfd, const char *path, uint64_t want_ino, struct stat *st)
{
	int fd, err;

	if (!path || !*path || !st)
		return -EINVAL;
	if (rootfd >= 0) {
		fd = pin_in_root(rootfd, path);
		if (fd < 0)
			return fd;
	} else {
		fd = open(path, O_PATH | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	err = pin_check(fd, want_ino, st);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int sp_pin__reopen(int pinned_fd, const struct stat *pinned, const char *path)
{
	char self[32];
	struct stat st;
	int fd;

	if (pinned_fd < 0 || !pinned)
		return -EBADF;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pinned_fd);
	fd = open(self, READ_FLAGS);
	if (fd < 0 && errno == ENOENT) {	/* no /proc mounted */
		if (!path)
			return -ENOENT;
		fd = open(path, READ_FLAGS);
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !same_file(&st, pinned)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int sp_pin__open(const char *path, struct stat *st)
{
	struct stat tmp;
	int pfd, fd;

	if (!st)
		st = &tmp;
	pfd = sp_pin__path(-1, path, 0, st);
	if (pfd < 0)
		return pfd;
	fd = sp_pin__reopen(pfd, st, path);
	close(pfd);
	return fd;
}

int sp_pin__mapping(const char *proc_root, uint32_t pid, const struct sp_map_entry *e,
		    struct stat *st)
{
	char path[PATH_MAX];
	int n, fd, rootfd;

	if (!proc_root || !e || !st)
		return -EINVAL;
	n = snprintf(path, sizeof(path), "%s/%u/map_files/%llx-%llx", proc_root, pid,
		     (unsigned long long)e->start, (unsigned long long)e->end);
	if (n > 0 && (size_t)n < sizeof(path)) {
		fd = sp_pin__path(-1, path, e->inode, st);
		if (fd >= 0)
			return fd;
	}
	/* The name is all that is left: only for a file still there. */
	if (e->deleted || e->path_len < 2 || e->path[0] != '/')
		return -ENOENT;
	if (e->path_len >= sizeof(path))
		return -ENAMETOOLONG;
	n = snprintf(path, sizeof(path), "%s/%u/root", proc_root, pid);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	memcpy(path, e->path, e->path_len);	/* not NUL-terminated in e */
	path[e->path_len] = '\0';
	fd = sp_pin__path(rootfd, path, e->inode, st);
	close(rootfd);
	return fd;
}
