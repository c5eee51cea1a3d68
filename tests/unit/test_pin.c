// SPDX-License-Identifier: MIT
/*
 * test_pin.c - base/pin.h: every failure of the contract, on real files.
 *
 * Plain paths: a regular file opens and reads; a missing name is -ENOENT;
 * a FIFO, a directory and a device are -EINVAL without blocking or opening
 * them (an alarm fails the test if the FIFO open blocked); a symlink is
 * followed to its target and judged by it (to a FIFO: -EINVAL; dangling:
 * -ENOENT); a file replaced after its inode was noted is -ESTALE.
 * In a root: an absolute symlink and ".." stay inside the root, a /proc
 * magic link is -ELOOP.  Reopen: a descriptor that is not the pinned file
 * (another device or inode) is -ESTALE.  Mappings: a file mapped by this
 * process is pinned through the real /proc (map_files as root, the path
 * inside /proc/self/root otherwise); through a constructed proc root
 * (PID/root a link to a private directory, no map_files) the path inside
 * the root is used, a replaced file is -ESTALE, a deleted one -ENOENT.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "testutil.h"

#include "base/pin.h"

static const char *at(const char *name)
{
	static char buf[4][256];
	static int i;

	i = (i + 1) % 4;
	tu_path(buf[i], sizeof(buf[i]), name);
	return buf[i];
}

static void write_file(const char *path, const char *text)
{
	assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
}

static void assert_reads(int fd, const char *want)
{
	char buf[64];
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
}

static void on_alarm(int sig)
{
	(void)sig;
	fail_msg("an open blocked (the FIFO was opened for reading)");
}

static void test_plain(void **state)
{
	struct stat st;
	int fd;

	(void)state;
	signal(SIGALRM, on_alarm);
	alarm(10);
	write_file(at("reg"), "regular");
	assert_int_equal(mkfifo(at("fifo"), 0600), 0);
	assert_int_equal(mkdir(at("dir"), 0700), 0);
	assert_int_equal(symlink(at("reg"), at("to_reg")), 0);
	assert_int_equal(symlink(at("fifo"), at("to_fifo")), 0);
	assert_int_equal(symlink(at("nothing"), at("dangling")), 0);

	fd = sp_pin__open(at("reg"), &st);
	assert_reads(fd, "regular");
	assert_true(S_ISREG(st.st_mode));
	close(fd);
	fd = sp_pin__open(at("to_reg"), NULL);
	assert_reads(fd, "regular");
	close(fd);

	assert_int_equal(sp_pin__open(at("nothing"), NULL), -ENOENT);
	assert_int_equal(sp_pin__open(at("dangling"), NULL), -ENOENT);
	assert_int_equal(sp_pin__open(at("fifo"), NULL), -EINVAL);
	assert_int_equal(sp_pin__open(at("to_fifo"), NULL), -EINVAL);
	assert_int_equal(sp_pin__open(at("dir"), NULL), -EINVAL);
	assert_int_equal(sp_pin__open("/dev/null", NULL), -EINVAL);
	assert_int_equal(sp_pin__open("", NULL), -EINVAL);
	assert_int_equal(sp_pin__open(NULL, NULL), -EINVAL);
	alarm(0);
}

static void test_replaced(void **state)
{
	struct stat st, st2;
	int fd;

	(void)state;
	write_file(at("lib"), "old");
	assert_int_equal(stat(at("lib"), &st), 0);
	/* Hold the old inode so the new file cannot reuse its number. */
	fd = open(at("lib"), O_RDONLY);
	assert_true(fd >= 0);
	write_file(at("lib.new"), "new");
	assert_int_equal(rename(at("lib.new"), at("lib")), 0);

	assert_int_equal(sp_pin__path(-1, at("lib"), (uint64_t)st.st_ino, &st2), -ESTALE);
	close(fd);
	/* Without an expected inode the new file is what the name gives. */
	fd = sp_pin__path(-1, at("lib"), 0, &st2);
	assert_true(fd >= 0);
	assert_true(st2.st_ino != st.st_ino);
	close(fd);
}

static void test_reopen_other_file(void **state)
{
	struct stat st, other;
	int pfd, fd;

	(void)state;
	write_file(at("a"), "a");
	pfd = sp_pin__path(-1, at("a"), 0, &st);
	assert_true(pfd >= 0);
	fd = sp_pin__reopen(pfd, &st, NULL);
	assert_reads(fd, "a");
	close(fd);

	/* A pinned identity that is not the file behind the fd: the reopen
	 * must refuse it, whether the device or the inode differs. */
	other = st;
	other.st_dev = makedev(major(st.st_dev) + 1, minor(st.st_dev));
	assert_int_equal(sp_pin__reopen(pfd, &other, NULL), -ESTALE);
	other = st;
	other.st_ino = st.st_ino + 1;
	assert_int_equal(sp_pin__reopen(pfd, &other, NULL), -ESTALE);
	assert_int_equal(sp_pin__reopen(-1, &st, NULL), -EBADF);
	close(pfd);
}

static void test_in_root(void **state)
{
	struct stat st;
	int rootfd, pfd, fd;

	(void)state;
	assert_int_equal(mkdir(at("root"), 0700), 0);
	assert_int_equal(mkdir(at("root/lib"), 0700), 0);
	write_file(at("root/lib/x.so"), "inside");
	write_file(at("x.so"), "outside");
	/* Absolute symlinks and ".." are the container's: they must not
	 * leave its root. */
	assert_int_equal(symlink("/lib/x.so", at("root/abs")), 0);
	assert_int_equal(symlink("../../../../../../x.so", at("root/up")), 0);
	rootfd = open(at("root"), O_PATH | O_DIRECTORY);
	assert_true(rootfd >= 0);

	pfd = sp_pin__path(rootfd, "/lib/x.so", 0, &st);
	assert_true(pfd >= 0);
	fd = sp_pin__reopen(pfd, &st, NULL);
	assert_reads(fd, "inside");
	close(fd);
	close(pfd);
	pfd = sp_pin__path(rootfd, "/abs", 0, &st);
	assert_true(pfd >= 0);
	fd = sp_pin__reopen(pfd, &st, NULL);
	assert_reads(fd, "inside");
	close(fd);
	close(pfd);
	assert_int_equal(sp_pin__path(rootfd, "/up", 0, &st), -ENOENT);
	assert_int_equal(sp_pin__path(rootfd, "/", 0, &st), -EINVAL);
	close(rootfd);

	/* /proc/self/exe is a magic link: refused, not followed. */
	rootfd = open("/", O_PATH | O_DIRECTORY);
	assert_true(rootfd >= 0);
	assert_int_equal(sp_pin__path(rootfd, "/proc/self/exe", 0, &st), -ELOOP);
	close(rootfd);
}

/* Maps the file at path and describes the mapping as a maps line would. */
static void *map_file(const char *path, struct sp_map_entry *e)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(p != MAP_FAILED);
	close(fd);
	memset(e, 0, sizeof(*e));
	e->start = (uint64_t)(uintptr_t)p;
	e->end = e->start + 4096;
	e->inode = (uint64_t)st.st_ino;
	e->path = path;
	e->path_len = strlen(path);
	return p;
}

static void test_mapping_real_proc(void **state)
{
	struct sp_map_entry e;
	struct stat st;
	void *p;
	int pfd, fd;

	(void)state;
	write_file(at("mapped"), "mapped");
	p = map_file(at("mapped"), &e);
	pfd = sp_pin__mapping("/proc", (uint32_t)getpid(), &e, &st);
	assert_true(pfd >= 0);
	assert_int_equal((uint64_t)st.st_ino, e.inode);
	fd = sp_pin__reopen(pfd, &st, NULL);
	assert_reads(fd, "mapped");
	close(fd);
	close(pfd);
	munmap(p, 4096);
}

static void test_mapping_fake_proc(void **state)
{
	char pid_dir[256], root_link[300];
	struct sp_map_entry e;
	struct stat st;
	void *p;
	int pfd;

	(void)state;
	/* PROC/7/root -> a private root; no PROC/7/map_files, so only the
	 * name inside the root is left, as for a non-root collector. */
	assert_int_equal(mkdir(at("proc"), 0700), 0);
	snprintf(pid_dir, sizeof(pid_dir), "%s/7", at("proc"));
	assert_int_equal(mkdir(pid_dir, 0700), 0);
	assert_int_equal(mkdir(at("croot"), 0700), 0);
	assert_int_equal(mkdir(at("croot/usr"), 0700), 0);
	snprintf(root_link, sizeof(root_link), "%s/root", pid_dir);
	assert_int_equal(symlink(at("croot"), root_link), 0);
	write_file(at("croot/usr/libx.so"), "libx");
	p = map_file(at("croot/usr/libx.so"), &e);
	e.path = "/usr/libx.so";	/* the name the process sees */
	e.path_len = strlen(e.path);

	pfd = sp_pin__mapping(at("proc"), 7, &e, &st);
	assert_true(pfd >= 0);
	assert_int_equal((uint64_t)st.st_ino, e.inode);
	close(pfd);

	/* Replaced since it was mapped: the name now gives another inode. */
	write_file(at("croot/usr/libx.so.new"), "evil");
	assert_int_equal(rename(at("croot/usr/libx.so.new"), at("croot/usr/libx.so")), 0);
	assert_int_equal(sp_pin__mapping(at("proc"), 7, &e, &st), -ESTALE);

	/* A FIFO put there instead: refused, not opened. */
	assert_int_equal(unlink(at("croot/usr/libx.so")), 0);
	assert_int_equal(mkfifo(at("croot/usr/libx.so"), 0600), 0);
	e.inode = 0;
	assert_int_equal(sp_pin__mapping(at("proc"), 7, &e, &st), -EINVAL);

	/* Deleted per the maps line, or no file at all: nothing to try. */
	e.deleted = 1;
	assert_int_equal(sp_pin__mapping(at("proc"), 7, &e, &st), -ENOENT);
	e.deleted = 0;
	e.path = "[heap]";
	e.path_len = 6;
	assert_int_equal(sp_pin__mapping(at("proc"), 7, &e, &st), -ENOENT);
	/* A process that is gone. */
	e.path = "/usr/libx.so";
	e.path_len = strlen(e.path);
	assert_int_equal(sp_pin__mapping(at("proc"), 8, &e, &st), -ENOENT);
	munmap(p, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_replaced),
		cmocka_unit_test(test_reopen_other_file),
		cmocka_unit_test(test_in_root),
		cmocka_unit_test(test_mapping_real_proc),
		cmocka_unit_test(test_mapping_fake_proc),
	};

	return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
