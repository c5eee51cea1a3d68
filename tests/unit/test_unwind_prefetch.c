// SPDX-License-Identifier: MIT
/*
 * test_unwind_prefetch.c - collector/unwind/unwind_prefetch.h on real and
 * hostile files: Debian's libc (its CFI sections are read: more than its
 * .eh_frame's bytes), a file that is not ELF and a truncated one (left to
 * libelf: 0, nothing read past the header), an ELF header whose program
 * and section header offsets point past the end or wrap (checked, not
 * read); __open from a pin and from a path (with the build id).  The
 * stall itself (a file system that never answers) is
 * test_unwind_hung_fs.py's, on a real FUSE mount.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buildid.h"
#include "base/pin.h"
#include "collector/unwind/unwind_prefetch.h"

#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"

static int write_file(const char *path, const void *buf, size_t n)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
	return fd;
}

static const struct stat *fstat_of(int fd, struct stat *st)
{
	assert_int_equal(fstat(fd, st), 0);
	return st;
}

static void test_libc(void **state)
{
	struct sp_unw_prefetch *p = sp_unw_prefetch__new(0, 0);
	struct sp_unw_prefetch_stats st;
	struct stat fst, pst;
	struct sp_build_id b;
	int pfd = sp_pin__path(-1, LIBC, 0, &pst), fd;

	(void)state;
	assert_non_null(p);
	assert_true(pfd >= 0);
	/* __open: from the pin (stat and reopen on the helper), and from a
	 * path to pin, with the build id */
	fd = sp_unw_prefetch__open(p, pfd, NULL, pst.st_dev, &fst, NULL);
	assert_true(fd >= 0);
	assert_int_equal(fst.st_ino, pst.st_ino);
	close(fd);
	close(pfd);
	memset(&b, 0, sizeof(b));
	fd = sp_unw_prefetch__open(p, -1, LIBC, pst.st_dev, &fst, &b);
	assert_true(fd >= 0);
	assert_true(b.len >= 16);
	assert_int_equal(fst.st_ino, pst.st_ino);
	assert_int_equal(sp_unw_prefetch__open(p, -1, "/no/such/file", 0, &fst, &b), -ENOENT);
	assert_int_equal(sp_unw_prefetch__file(p, fd, &fst), 0);
	sp_unw_prefetch__stats(p, &st);
	assert_int_equal(st.open_stalled, 0);
	assert_int_equal(st.files, 1);
	assert_true(st.bytes > 100000);		/* .eh_frame alone is ~150 KiB */
	assert_int_equal(st.stalled, 0);
	close(fd);
	sp_unw_prefetch__free(p);
}

static void test_hostile(void **state)
{
	struct sp_unw_prefetch *p = sp_unw_prefetch__new(0, 0);
	struct sp_unw_prefetch_stats st;
	struct stat st0;
	uint8_t h[4096];
	char path[256];
	int fd;

	(void)state;
	memset(h, 'x', sizeof(h));
	fd = write_file(tu_path(path, sizeof(path), "text"), h, sizeof(h));
	assert_int_equal(sp_unw_prefetch__file(p, fd, fstat_of(fd, &st0)), 0);	/* not ELF */
	close(fd);
	fd = write_file(tu_path(path, sizeof(path), "short"), "\177ELF", 4);
	assert_int_equal(sp_unw_prefetch__file(p, fd, fstat_of(fd, &st0)), 0);	/* truncated */
	close(fd);
	/* ELF64 LE with phoff/shoff past the end, and a wrapping range. */
	memset(h, 0, sizeof(h));
	memcpy(h, "\177ELF\2\1\1", 7);
	memcpy(h + 0x20, "\x00\x00\x00\x00\x00\x00\x00\x80", 8);	/* e_phoff huge */
	memcpy(h + 0x28, "\xf0\xff\xff\xff\xff\xff\xff\xff", 8);	/* e_shoff wraps */
	h[0x36] = 56;
	h[0x38] = 200;
	h[0x3a] = 64;
	h[0x3c] = 200;
	fd = write_file(tu_path(path, sizeof(path), "bad"), h, sizeof(h));
	assert_int_equal(sp_unw_prefetch__file(p, fd, fstat_of(fd, &st0)), 0);
	close(fd);
	sp_unw_prefetch__stats(p, &st);
	assert_true(st.bytes <= 64 * 2);	/* two ELF headers, nothing else */
	assert_int_equal(st.stalled, 0);
	assert_int_equal(sp_unw_prefetch__file(p, -1, &st0), -EBADF);
	sp_unw_prefetch__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libc),
		cmocka_unit_test_setup_teardown(test_hostile, tu_setup_dir, tu_teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
