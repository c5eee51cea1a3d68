// SPDX-License-Identifier: MIT
/*
 * test_unwind_prefetch.c - collector/unwind/unwind_prefetch.h on real and
 * hostile files: Debian's libc (its CFI sections are read into the image:
 * more than its .eh_frame's bytes, and libelf's elf_memory on the image
 * gives .eh_frame byte for byte as the file has it), a file that is not
 * ELF (-EINVAL) and a truncated one (0, no image), an ELF header whose
 * program and section header offsets point past the end or wrap (checked,
 * not read), a section past SP_UNW_IMAGE_MAX (refused, counted, nothing
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
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
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
	struct sp_unw_image img;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	Elf *elf;
	bool found = false;
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
	assert_int_equal(sp_unw_prefetch__file(p, fd, &fst, &img), 0);
	assert_non_null(img.base);
	assert_int_equal(img.size, (size_t)fst.st_size);
	/* libelf on the image: .eh_frame as the file has it */
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)img.base, img.size);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		assert_non_null(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame")) {
			Elf_Data *d = elf_getdata(scn, NULL);
			char *want = malloc(sh.sh_size);

			assert_non_null(d);
			assert_non_null(want);
			assert_int_equal(d->d_size, sh.sh_size);
			assert_int_equal(pread(fd, want, sh.sh_size, (off_t)sh.sh_offset),
					 (ssize_t)sh.sh_size);
			assert_memory_equal(d->d_buf, want, sh.sh_size);
			free(want);
			found = true;
		}
	}
	assert_true(found);
	elf_end(elf);
	sp_unw_image__release(&img);
	assert_null(img.base);
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
	struct sp_unw_prefetch_stats st, st0p;
	struct sp_unw_image img;
	struct stat st0;
	uint8_t h[4096];
	char path[256];
	int fd;

	(void)state;
	memset(h, 'x', sizeof(h));
	fd = write_file(tu_path(path, sizeof(path), "text"), h, sizeof(h));
	assert_int_equal(sp_unw_prefetch__file(p, fd, fstat_of(fd, &st0), &img), -EINVAL);
	assert_null(img.base);	/* not ELF */
	close(fd);
	fd = write_file(tu_path(path, sizeof(path), "short"), "\177ELF", 4);
	assert_int_equal(sp_unw_prefetch__file(p, fd, fstat_of(fd, &st0), &img), 0);
	assert_null(img.base);	/* truncated: nothing to parse */
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
	assert_int_equal(sp_unw_prefetch__file(p, fd, fstat_of(fd, &st0), &img), 0);
	assert_non_null(img.base);
	sp_unw_image__release(&img);
	close(fd);
	sp_unw_prefetch__stats(p, &st);
	assert_true(st.bytes <= 64 * 2);	/* two ELF headers, nothing else */
	assert_int_equal(st.stalled, 0);
	assert_int_equal(st.refused, 0);
	/* A sparse file whose .eh_frame claims more than an image holds:
	 * refused before any of it is read. */
	memset(h, 0, sizeof(h));
	memcpy(h, "\177ELF\2\1\1", 7);
	h[0x28] = 64;				/* e_shoff: right after the header */
	h[0x3a] = 64;				/* e_shentsize */
	h[0x3c] = 2;				/* e_shnum */
	h[0x3e] = 1;				/* e_shstrndx */
	/* section 1: the name table at 192, 16 bytes */
	h[128 + 4] = 3;				/* SHT_STRTAB */
	h[128 + 0x18] = 192;
	h[128 + 0x20] = 16;
	memcpy(h + 192, "\0.eh_frame\0", 11);
	/* section 0 (abused as .eh_frame): offset 4096, SP_UNW_IMAGE_MAX + 1 */
	h[64] = 1;				/* sh_name ".eh_frame" */
	h[64 + 4] = 1;				/* SHT_PROGBITS */
	h[64 + 0x19] = 0x10;			/* sh_offset 4096 */
	{
		uint64_t big = SP_UNW_IMAGE_MAX + 1;

		memcpy(h + 64 + 0x20, &big, 8);
	}
	fd = write_file(tu_path(path, sizeof(path), "big"), h, sizeof(h));
	assert_int_equal(ftruncate(fd, (off_t)(SP_UNW_IMAGE_MAX + 8192)), 0);
	sp_unw_prefetch__stats(p, &st0p);
	assert_int_equal(sp_unw_prefetch__file(p, fd, fstat_of(fd, &st0), &img), -E2BIG);
	assert_null(img.base);
	sp_unw_prefetch__stats(p, &st);
	assert_int_equal(st.refused, 1);
	assert_true(st.bytes - st0p.bytes < 4096);	/* headers and names only */
	close(fd);
	assert_int_equal(sp_unw_prefetch__file(p, -1, &st0, &img), -EBADF);
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
