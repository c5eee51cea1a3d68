// SPDX-License-Identifier: MIT
/*
 * test_buildid.c - GNU build ids (base/buildid.h) and the bounded
 * build-id cache (collector/procs/buildid_cache.h).
 *
 * Note areas: good notes, the id after other notes, 8-byte alignment via
 * ELF files, every truncation, huge namesz/descsz, oversized ids.  ELF
 * files are written by a small writer in this file (ELFCLASS64 and 32,
 * little and big endian, note in a PT_NOTE segment or only in a SHT_NOTE
 * section), then truncated at every size and corrupted.  Real files:
 * /proc/self/exe against an independent hand walk of its program headers,
 * a program compiled at run time with -Wl,--build-id=0x<known> (skipped
 * without a compiler), and the running kernel.  sp_buildid__read_file (the
 * symbolizer's hex form) agrees with sp_buildid__from_path and refuses a
 * FIFO without opening it.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "testutil.h"

#include "base/buildid.h"
#include "collector/procs/buildid_cache.h"

static const uint8_t ID20[20] = {
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x10, 0x32,
	0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe, 0xde, 0xad, 0xbe, 0xef,
};

/* ------------------------------------------------------------ writers */

static void put(uint8_t *p, size_t size, uint64_t v, int be)
{
	size_t i;

	for (i = 0; i < size; i++) {
		size_t shift = be ? (size - 1 - i) * 8 : i * 8;

		p[i] = (uint8_t)(v >> shift);
	}
}

#define PUT(base, T, f, v) \
	put((base) + offsetof(T, f), sizeof(((T *)0)->f), (uint64_t)(v), be)

/* One note, padded to align.  Returns bytes written. */
static size_t note(uint8_t *p, uint32_t namesz, const char *name, uint32_t descsz,
		   const uint8_t *desc, uint32_t type, size_t align, int be)
{
	size_t off = 12, nlen = namesz, dlen = descsz;

	put(p, 4, namesz, be);
	put(p + 4, 4, descsz, be);
	put(p + 8, 4, type, be);
	memcpy(p + off, name, nlen);
	off = (off + nlen + align - 1) & ~(align - 1);
	memcpy(p + off, desc, dlen);
	off = (off + dlen + align - 1) & ~(align - 1);
	return off;
}

static size_t gnu_note(uint8_t *p, const uint8_t *id, size_t n, size_t align, int be)
{
	return note(p, 4, "GNU", (uint32_t)n, id, NT_GNU_BUILD_ID, align, be);
}

/* A note area: an ABI tag note, then the build id. */
static size_t notes_area(uint8_t *p, size_t align, int be)
{
	static const uint8_t abi[16] = { 0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0 };
	size_t n = note(p, 4, "GNU", 16, abi, NT_GNU_ABI_TAG, align, be);

	return n + gnu_note(p + n, ID20, sizeof(ID20), align, be);
}

struct elf_spec {
	int cls;		/* ELFCLASS32 / ELFCLASS64 */
	int be;
	int phdr;		/* note in a PT_NOTE segment */
	int shdr;		/* note in a SHT_NOTE section */
	size_t align;
	const uint8_t *notes;	/* NULL: notes_area() */
	size_t notes_len;
};

/* Writes a minimal ELF file image into out (>= 1024 bytes). */
static size_t build_elf(const struct elf_spec *s, uint8_t *out)
{
	int be = s->be, is64 = s->cls == ELFCLASS64;
	size_t eh = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	size_t ph = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	size_t sh = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	size_t notes_off = (eh + ph + 7) & ~(size_t)7, nlen, shoff;

	memset(out, 0, 1024);
	if (s->notes) {
		memcpy(out + notes_off, s->notes, s->notes_len);
		nlen = s->notes_len;
	} else {
		nlen = notes_area(out + notes_off, s->align, be);
	}
	shoff = (notes_off + nlen + 7) & ~(size_t)7;

	memcpy(out, ELFMAG, SELFMAG);
	out[EI_CLASS] = (uint8_t)s->cls;
	out[EI_DATA] = be ? ELFDATA2MSB : ELFDATA2LSB;
	out[EI_VERSION] = EV_CURRENT;
	if (is64) {
		PUT(out, Elf64_Ehdr, e_type, ET_DYN);
		PUT(out, Elf64_Ehdr, e_machine, EM_X86_64);
		PUT(out, Elf64_Ehdr, e_version, EV_CURRENT);
		PUT(out, Elf64_Ehdr, e_phoff, s->phdr ? eh : 0);
		PUT(out, Elf64_Ehdr, e_shoff, s->shdr ? shoff : 0);
		PUT(out, Elf64_Ehdr, e_ehsize, eh);
		PUT(out, Elf64_Ehdr, e_phentsize, ph);
		PUT(out, Elf64_Ehdr, e_phnum, s->phdr ? 1 : 0);
		PUT(out, Elf64_Ehdr, e_shentsize, sh);
		PUT(out, Elf64_Ehdr, e_shnum, s->shdr ? 2 : 0);
		if (s->phdr) {
			uint8_t *p = out + eh;

			PUT(p, Elf64_Phdr, p_type, PT_NOTE);
			PUT(p, Elf64_Phdr, p_flags, PF_R);
			PUT(p, Elf64_Phdr, p_offset, notes_off);
			PUT(p, Elf64_Phdr, p_vaddr, notes_off);
			PUT(p, Elf64_Phdr, p_filesz, nlen);
			PUT(p, Elf64_Phdr, p_memsz, nlen);
			PUT(p, Elf64_Phdr, p_align, s->align);
		}
		if (s->shdr) {
			uint8_t *p = out + shoff + sh;	/* [0] is SHT_NULL */

			PUT(p, Elf64_Shdr, sh_type, SHT_NOTE);
			PUT(p, Elf64_Shdr, sh_flags, SHF_ALLOC);
			PUT(p, Elf64_Shdr, sh_offset, notes_off);
			PUT(p, Elf64_Shdr, sh_size, nlen);
			PUT(p, Elf64_Shdr, sh_addralign, s->align);
		}
	} else {
		PUT(out, Elf32_Ehdr, e_type, ET_DYN);
		PUT(out, Elf32_Ehdr, e_machine, EM_386);
		PUT(out, Elf32_Ehdr, e_version, EV_CURRENT);
		PUT(out, Elf32_Ehdr, e_phoff, s->phdr ? eh : 0);
		PUT(out, Elf32_Ehdr, e_shoff, s->shdr ? shoff : 0);
		PUT(out, Elf32_Ehdr, e_ehsize, eh);
		PUT(out, Elf32_Ehdr, e_phentsize, ph);
		PUT(out, Elf32_Ehdr, e_phnum, s->phdr ? 1 : 0);
		PUT(out, Elf32_Ehdr, e_shentsize, sh);
		PUT(out, Elf32_Ehdr, e_shnum, s->shdr ? 2 : 0);
		if (s->phdr) {
			uint8_t *p = out + eh;

			PUT(p, Elf32_Phdr, p_type, PT_NOTE);
			PUT(p, Elf32_Phdr, p_flags, PF_R);
			PUT(p, Elf32_Phdr, p_offset, notes_off);
			PUT(p, Elf32_Phdr, p_vaddr, notes_off);
			PUT(p, Elf32_Phdr, p_filesz, nlen);
			PUT(p, Elf32_Phdr, p_memsz, nlen);
			PUT(p, Elf32_Phdr, p_align, s->align);
		}
		if (s->shdr) {
			uint8_t *p = out + shoff + sh;

			PUT(p, Elf32_Shdr, sh_type, SHT_NOTE);
			PUT(p, Elf32_Shdr, sh_flags, SHF_ALLOC);
			PUT(p, Elf32_Shdr, sh_offset, notes_off);
			PUT(p, Elf32_Shdr, sh_size, nlen);
			PUT(p, Elf32_Shdr, sh_addralign, s->align);
		}
	}
	return s->shdr ? shoff + 2 * sh : notes_off + nlen;
}

static const char *write_file(const char *name, const void *buf, size_t len)
{
	static char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tu_dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
	return path;
}

static int id_of_bytes(const void *buf, size_t len, struct sp_build_id *b)
{
	return sp_buildid__from_path(write_file("elf", buf, len), b);
}

static void assert_id20(const struct sp_build_id *b)
{
	assert_int_equal(b->len, 20);
	assert_memory_equal(b->id, ID20, 20);
}

/* ------------------------------------------------------------ notes */

/* Exact heap copy so ASan sees any read past len. */
static int notes_exact(const uint8_t *buf, size_t len, struct sp_build_id *b)
{
	uint8_t *copy = malloc(len ? len : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, buf, len);
	r = sp_buildid__from_notes(copy, len, b);
	free(copy);
	return r;
}

static void test_notes_good(void **state)
{
	uint8_t buf[256];
	struct sp_build_id b;
	size_t n;

	(void)state;
	n = gnu_note(buf, ID20, 20, 4, 0);
	assert_int_equal(n, 36);
	assert_int_equal(notes_exact(buf, n, &b), 0);
	assert_id20(&b);

	/* After another note; a 16-byte (md5/uuid) id. */
	n = notes_area(buf, 4, 0);
	assert_int_equal(notes_exact(buf, n, &b), 0);
	assert_id20(&b);
	n = gnu_note(buf, ID20, 16, 4, 0);
	assert_int_equal(notes_exact(buf, n, &b), 0);
	assert_int_equal(b.len, 16);

	/* Odd namesz/descsz exercise the padding: "Go" notes, 5-byte name. */
	n = note(buf, 5, "Linux", 3, (const uint8_t *)"abc", 3, 4, 0);
	n += gnu_note(buf + n, ID20, 20, 4, 0);
	assert_int_equal(notes_exact(buf, n, &b), 0);
	assert_id20(&b);

	/* A last note without its trailing desc padding. */
	n = gnu_note(buf, ID20, 18, 4, 0);
	assert_int_equal(n, 36);
	assert_int_equal(notes_exact(buf, 34, &b), 0);
	assert_int_equal(b.len, 18);
}

static void test_notes_none(void **state)
{
	uint8_t buf[256] = { 0 };
	struct sp_build_id b;
	size_t n;

	(void)state;
	assert_int_equal(notes_exact(buf, 0, &b), -ENOENT);
	/* GNU name, other type; type 3 with another name; "GNU" without NUL */
	n = note(buf, 4, "GNU", 20, ID20, NT_GNU_ABI_TAG, 4, 0);
	n += note(buf + n, 4, "XEN", 20, ID20, NT_GNU_BUILD_ID, 4, 0);
	n += note(buf + n, 3, "GNU", 20, ID20, NT_GNU_BUILD_ID, 4, 0);
	n += note(buf + n, 0, "", 0, ID20, NT_GNU_BUILD_ID, 4, 0);
	assert_int_equal(notes_exact(buf, n, &b), -ENOENT);
	assert_int_equal(b.len, 0);
	assert_int_equal(sp_buildid__from_notes(NULL, 0, &b), -EINVAL);
	assert_int_equal(sp_buildid__from_notes(buf, n, NULL), -EINVAL);
}

static void test_notes_malformed(void **state)
{
	uint8_t buf[256];
	struct sp_build_id b;
	size_t n;

	(void)state;
	/* descsz huge (would wrap 32-bit offset arithmetic) */
	n = gnu_note(buf, ID20, 20, 4, 0);
	put(buf + 4, 4, 0xfffffffc, 0);
	assert_int_equal(notes_exact(buf, n, &b), -EINVAL);
	put(buf + 4, 4, 0xffffffff, 0);
	assert_int_equal(notes_exact(buf, n, &b), -EINVAL);
	put(buf + 4, 4, 21, 0);	/* one byte past the end */
	assert_int_equal(notes_exact(buf, 32, &b), -EINVAL);
	/* namesz huge */
	n = gnu_note(buf, ID20, 20, 4, 0);
	put(buf, 4, 0xffffffff, 0);
	assert_int_equal(notes_exact(buf, n, &b), -EINVAL);
	/* a huge non-GNU note before the id */
	n = note(buf, 4, "ABC", 8, ID20, 1, 4, 0);
	n += gnu_note(buf + n, ID20, 20, 4, 0);
	put(buf + 4, 4, 0x7fffffff, 0);
	assert_int_equal(notes_exact(buf, n, &b), -EINVAL);
	/* GNU build id larger than SP_BUILD_ID_MAX, or empty */
	{
		uint8_t big[SP_BUILD_ID_MAX + 4] = { 0 };

		n = gnu_note(buf, big, sizeof(big), 4, 0);
		assert_int_equal(notes_exact(buf, n, &b), -EINVAL);
		n = gnu_note(buf, big, 0, 4, 0);
		assert_int_equal(notes_exact(buf, n, &b), -EINVAL);
	}
	/* header cut short */
	assert_int_equal(notes_exact(buf, 11, &b), -EINVAL);
	assert_int_equal(b.len, 0);
}

static void test_notes_every_truncation(void **state)
{
	uint8_t buf[256];
	struct sp_build_id b;
	size_t n, i;

	(void)state;
	n = notes_area(buf, 4, 0);
	for (i = 0; i <= n; i++) {
		int r = notes_exact(buf, i, &b);

		if (i == n) {
			assert_int_equal(r, 0);
			assert_id20(&b);
		} else if (r == 0) {
			fail_msg("truncated at %zu of %zu gave an id", i, n);
		} else {
			assert_true(r == -EINVAL || r == -ENOENT);
			assert_int_equal(b.len, 0);
		}
	}
}

/* Elf32_Nhdr has the same layout; the bytes of a 32-bit file's note. */
static void test_notes_elf32_bytes(void **state)
{
	uint8_t buf[64];
	Elf32_Nhdr h = { .n_namesz = 4, .n_descsz = 20, .n_type = NT_GNU_BUILD_ID };
	struct sp_build_id b;

	(void)state;
	assert_int_equal(sizeof(Elf32_Nhdr), sizeof(Elf64_Nhdr));
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), "GNU", 4);
	memcpy(buf + sizeof(h) + 4, ID20, 20);
	assert_int_equal(notes_exact(buf, sizeof(h) + 24, &b), 0);
	assert_id20(&b);
}

/* ------------------------------------------------------------ ELF files */

static void test_elf_variants(void **state)
{
	static const int classes[] = { ELFCLASS64, ELFCLASS32 };
	uint8_t img[1024];
	struct sp_build_id b;
	size_t n;
	int c, be, where, align;

	(void)state;
	for (c = 0; c < 2; c++)
	for (be = 0; be < 2; be++)
	for (where = 1; where <= 3; where++)	/* phdr, shdr, both */
	for (align = 4; align <= 8; align += 4) {
		struct elf_spec s = {
			.cls = classes[c], .be = be,
			.phdr = where & 1, .shdr = !!(where & 2), .align = (size_t)align,
		};

		n = build_elf(&s, img);
		memset(&b, 0xee, sizeof(b));
		if (id_of_bytes(img, n, &b) != 0 || b.len != 20 || memcmp(b.id, ID20, 20))
			fail_msg("class %d be %d where %d align %d: no id",
				 classes[c], be, where, align);
	}
}

static void test_elf_no_build_id(void **state)
{
	uint8_t notes[64], img[1024];
	struct sp_build_id b;
	struct elf_spec s = { .cls = ELFCLASS64, .phdr = 1, .shdr = 1, .align = 4 };
	size_t n;

	(void)state;
	s.notes = notes;
	s.notes_len = note(notes, 4, "GNU", 16, ID20, NT_GNU_ABI_TAG, 4, 0);
	n = build_elf(&s, img);
	assert_int_equal(id_of_bytes(img, n, &b), -ENOENT);
	assert_int_equal(b.len, 0);

	/* No notes at all. */
	s.phdr = s.shdr = 0;
	n = build_elf(&s, img);
	assert_int_equal(id_of_bytes(img, n, &b), -ENOENT);
}

static void test_elf_corrupt_note(void **state)
{
	uint8_t notes[64], img[1024];
	struct sp_build_id b;
	struct elf_spec s = { .cls = ELFCLASS64, .phdr = 1, .align = 4 };
	size_t n;

	(void)state;
	s.notes = notes;
	s.notes_len = gnu_note(notes, ID20, 20, 4, 0);
	put(notes + 4, 4, 0xfffffff0, 0);	/* descsz huge */
	n = build_elf(&s, img);
	assert_int_equal(id_of_bytes(img, n, &b), -EINVAL);
	assert_int_equal(b.len, 0);

	s.cls = ELFCLASS32;
	s.shdr = 1;
	n = build_elf(&s, img);
	assert_int_equal(id_of_bytes(img, n, &b), -EINVAL);

	/* PT_NOTE pointing past the end of the file */
	s.cls = ELFCLASS64;
	s.shdr = 0;
	s.notes_len = gnu_note(notes, ID20, 20, 4, 0);
	n = build_elf(&s, img);
	put(img + sizeof(Elf64_Ehdr) + offsetof(Elf64_Phdr, p_offset), 8, 1ULL << 40, 0);
	assert_int_equal(id_of_bytes(img, n, &b), -EINVAL);
	put(img + sizeof(Elf64_Ehdr) + offsetof(Elf64_Phdr, p_offset), 8, 120, 0);
	put(img + sizeof(Elf64_Ehdr) + offsetof(Elf64_Phdr, p_filesz), 8, UINT64_MAX - 8, 0);
	assert_int_equal(id_of_bytes(img, n, &b), -EINVAL);
}

static void test_elf_truncated(void **state)
{
	uint8_t img[1024];
	struct sp_build_id b;
	size_t n, i;
	int where;

	(void)state;
	for (where = 1; where <= 3; where++) {
		struct elf_spec s = { .cls = ELFCLASS64, .phdr = where & 1,
				      .shdr = !!(where & 2), .align = 4 };

		n = build_elf(&s, img);
		for (i = 0; i < n; i++) {
			int r = id_of_bytes(img, i, &b);

			if (r == 0) {
				/* Fine only if the note itself is complete. */
				assert_id20(&b);
				continue;
			}
			if (r != -EINVAL && r != -ENOENT)
				fail_msg("size %zu: %d", i, r);
			assert_int_equal(b.len, 0);
		}
		assert_int_equal(id_of_bytes(img, n, &b), 0);
	}
}

static void test_elf_garbage(void **state)
{
	uint8_t junk[4096];
	struct sp_build_id b;
	uint64_t x = 88172645463325252ULL;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(junk); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		junk[i] = (uint8_t)x;
	}
	assert_int_equal(id_of_bytes(junk, sizeof(junk), &b), -EINVAL);
	assert_int_equal(id_of_bytes(junk, 0, &b), -EINVAL);
	/* ELF magic followed by junk */
	memcpy(junk, ELFMAG, SELFMAG);
	junk[EI_CLASS] = ELFCLASS64;
	junk[EI_DATA] = ELFDATA2LSB;
	junk[EI_VERSION] = EV_CURRENT;
	i = (size_t)id_of_bytes(junk, sizeof(junk), &b);
	assert_true((int)i == -EINVAL || (int)i == -ENOENT);
	junk[EI_CLASS] = 7;
	assert_int_equal(id_of_bytes(junk, sizeof(junk), &b), -EINVAL);

	assert_int_equal(sp_buildid__from_path("/nonexistent/x", &b), -ENOENT);
	assert_int_equal(sp_buildid__from_path(tu_dir, &b), -EINVAL);
	assert_int_equal(sp_buildid__from_fd(-1, &b), -EBADF);
	assert_int_equal(sp_buildid__from_path(NULL, &b), -EINVAL);
}

/* ------------------------------------------------------------ real files */

static uint8_t *slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		assert_true(r > 0);
		got += (size_t)r;
	}
	close(fd);
	*len = got;
	return buf;
}

/* Independent of the code under test: Elf64 program headers by hand. */
static int hand_build_id(const uint8_t *f, size_t len, struct sp_build_id *b)
{
	Elf64_Ehdr eh;
	size_t i;

	memset(b, 0, sizeof(*b));
	if (len < sizeof(eh))
		return -1;
	memcpy(&eh, f, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return -1;
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		size_t off, a;

		if (eh.e_phoff + (i + 1) * sizeof(ph) > len)
			return -1;
		memcpy(&ph, f + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_NOTE || ph.p_offset + ph.p_filesz > len)
			continue;
		a = ph.p_align == 8 ? 8 : 4;
		for (off = 0; off + sizeof(Elf64_Nhdr) <= ph.p_filesz;) {
			Elf64_Nhdr nh;
			const uint8_t *p = f + ph.p_offset + off;
			size_t name = (sizeof(nh) + 0), desc;

			memcpy(&nh, p, sizeof(nh));
			desc = (name + nh.n_namesz + a - 1) & ~(a - 1);
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(p + name, "GNU", 4) && nh.n_descsz <= SP_BUILD_ID_MAX) {
				b->len = (uint8_t)nh.n_descsz;
				memcpy(b->id, p + desc, nh.n_descsz);
				return 0;
			}
			off += (desc + nh.n_descsz + a - 1) & ~(a - 1);
		}
	}
	return -1;
}

static void test_self_exe(void **state)
{
	struct sp_build_id got, want;
	size_t len;
	uint8_t *f = slurp("/proc/self/exe", &len);

	(void)state;
	if (hand_build_id(f, len, &want) != 0) {
		free(f);
		skip();	/* linked without --build-id */
	}
	assert_int_equal(sp_buildid__from_path("/proc/self/exe", &got), 0);
	assert_int_equal(got.len, want.len);
	assert_memory_equal(got.id, want.id, want.len);

	/* Truncated copies of a real binary. */
	{
		size_t sizes[] = { 1, 4, 16, 52, 63, 64, 65, 120, 200, 512, 1000,
				   4096, len / 3, len / 2, len - 1 };
		size_t i;

		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			struct sp_build_id b;
			int r = id_of_bytes(f, sizes[i], &b);

			if (r == 0)
				assert_memory_equal(b.id, want.id, want.len);
			else if (r != -EINVAL && r != -ENOENT)
				fail_msg("truncated exe at %zu: %d", sizes[i], r);
		}
	}
	free(f);
}

/* A program linked with a known id, if a compiler is around. */
static void test_known_id_compiled(void **state)
{
	char src[256], bin[256], cmd[1024];
	struct sp_build_id b;
	char hex[2 * SP_BUILD_ID_MAX + 1];
	FILE *f;

	(void)state;
	snprintf(src, sizeof(src), "%s/k.c", tu_dir);
	snprintf(bin, sizeof(bin), "%s/k", tu_dir);
	f = fopen(src, "w");
	assert_non_null(f);
	fputs("int main(void) { return 0; }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "cc -o '%s' '%s' -Wl,--build-id=0x0123456789abcdef1032547698badcfedeadbeef"
		 " >/dev/null 2>&1", bin, src);
	if (system(cmd) != 0)
		skip();
	assert_int_equal(sp_buildid__from_path(bin, &b), 0);
	sp_buildid__hex(&b, hex);
	assert_string_equal(hex, "0123456789abcdef1032547698badcfedeadbeef");
	assert_id20(&b);

	/* Same program without an id. */
	snprintf(cmd, sizeof(cmd), "cc -o '%s' '%s' -Wl,--build-id=none >/dev/null 2>&1",
		 bin, src);
	if (system(cmd) != 0)
		skip();
	assert_int_equal(sp_buildid__from_path(bin, &b), -ENOENT);
}

static void test_kernel(void **state)
{
	struct sp_build_id b;
	int r;

	(void)state;
	if (access("/sys/kernel/notes", R_OK) != 0)
		skip();
	r = sp_buildid__kernel(&b);
	assert_int_equal(r, 0);
	assert_true(b.len == 20 || b.len == 16);
}

static void test_hex(void **state)
{
	struct sp_build_id b = { 0 };
	char out[2 * SP_BUILD_ID_MAX + 1];

	(void)state;
	memset(out, 'x', sizeof(out));
	sp_buildid__hex(&b, out);
	assert_string_equal(out, "");
	sp_buildid__hex(NULL, out);
	assert_string_equal(out, "");
	b.len = 4;
	b.id[0] = 0x00;
	b.id[1] = 0x0f;
	b.id[2] = 0xa0;
	b.id[3] = 0xff;
	sp_buildid__hex(&b, out);
	assert_string_equal(out, "000fa0ff");
	b.len = SP_BUILD_ID_MAX;
	memset(b.id, 0xab, SP_BUILD_ID_MAX);
	sp_buildid__hex(&b, out);
	assert_int_equal(strlen(out), 2 * SP_BUILD_ID_MAX);
}

/* ------------------------------------------------------------ cache */

static struct sp_buildid_cache_key key(uint64_t i)
{
	struct sp_buildid_cache_key k = { .dev = 0x801, .ino = i, .mtime_ns = (int64_t)(i * 7) };

	return k;
}

static struct sp_build_id bid(uint64_t i)
{
	struct sp_build_id b = { .len = 8 };

	memcpy(b.id, &i, 8);
	return b;
}

static void test_cache_basic(void **state)
{
	struct sp_buildid_cache *c = sp_buildid_cache__new(64);
	const struct sp_buildid_cache_stats *st;
	struct sp_buildid_cache_key k = key(1), k2;
	struct sp_build_id b = bid(1), out;

	(void)state;
	assert_non_null(c);
	st = sp_buildid_cache__stats(c);
	assert_int_equal(sp_buildid_cache__lookup(c, &k, &out), 0);
	assert_int_equal(out.len, 0);
	sp_buildid_cache__insert(c, &k, &b);
	assert_int_equal(sp_buildid_cache__lookup(c, &k, &out), 1);
	assert_int_equal(out.len, 8);
	assert_memory_equal(out.id, b.id, 8);

	/* Same inode, other mtime (file rewritten): a different key. */
	k2 = k;
	k2.mtime_ns++;
	assert_int_equal(sp_buildid_cache__lookup(c, &k2, &out), 0);
	/* Negative entry */
	sp_buildid_cache__insert(c, &k2, NULL);
	assert_int_equal(sp_buildid_cache__lookup(c, &k2, &out), 1);
	assert_int_equal(out.len, 0);
	/* Update in place */
	b = bid(99);
	sp_buildid_cache__insert(c, &k, &b);
	assert_int_equal(sp_buildid_cache__lookup(c, &k, &out), 1);
	assert_memory_equal(out.id, b.id, 8);

	assert_int_equal(st->hits, 3);
	assert_int_equal(st->misses, 2);
	assert_int_equal(st->entries, 2);
	assert_int_equal(st->evictions, 0);
	sp_buildid_cache__free(c);
	sp_buildid_cache__free(NULL);
	assert_null(sp_buildid_cache__new(0));
}

static void test_cache_bounded(void **state)
{
	static const uint32_t sizes[] = { 1, 2, 3, 5, 10, 100, 1000 };
	size_t s;

	(void)state;
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct sp_buildid_cache *c = sp_buildid_cache__new(sizes[s]);
		const struct sp_buildid_cache_stats *st = sp_buildid_cache__stats(c);
		struct sp_build_id out, b;
		struct sp_buildid_cache_key k;
		uint64_t i, hits = 0, n = 50ULL * sizes[s] + 100;

		assert_non_null(c);
		assert_true(st->capacity >= 1 && st->capacity <= sizes[s]);
		for (i = 0; i < n; i++) {
			k = key(i);
			b = bid(i);
			sp_buildid_cache__insert(c, &k, &b);
			assert_true(st->entries <= st->capacity);
		}
		assert_int_equal(st->entries, st->capacity);
		assert_int_equal(st->inserts, n);
		assert_int_equal(st->evictions, n - st->capacity);
		/* The newest key is always there (it was just inserted). */
		k = key(n - 1);
		assert_int_equal(sp_buildid_cache__lookup(c, &k, &out), 1);
		assert_memory_equal(out.id, &(uint64_t){ n - 1 }, 8);
		hits++;
		/* Every hit returns its own value; hits + misses = lookups. */
		for (i = 0; i < n; i++) {
			k = key(i);
			if (sp_buildid_cache__lookup(c, &k, &out)) {
				assert_memory_equal(out.id, &i, 8);
				hits++;
			}
		}
		assert_int_equal(st->hits, hits);
		assert_int_equal(st->hits + st->misses, n + 1);
		assert_true(hits - 1 <= st->capacity);
		sp_buildid_cache__free(c);
	}
}

/* LRU within a set: with one set of 4 ways, a key used recently survives. */
static void test_cache_lru(void **state)
{
	struct sp_buildid_cache *c = sp_buildid_cache__new(4);
	struct sp_buildid_cache_key k;
	struct sp_build_id b = bid(0), out;
	uint64_t i;

	(void)state;
	assert_non_null(c);
	assert_int_equal(sp_buildid_cache__stats(c)->capacity, 4);
	for (i = 0; i < 4; i++) {
		k = key(i);
		sp_buildid_cache__insert(c, &k, &b);
	}
	for (i = 4; i < 40; i++) {
		k = key(0);
		assert_int_equal(sp_buildid_cache__lookup(c, &k, &out), 1);
		k = key(i);
		sp_buildid_cache__insert(c, &k, &b);
	}
	k = key(0);
	assert_int_equal(sp_buildid_cache__lookup(c, &k, &out), 1);
	k = key(1);
	assert_int_equal(sp_buildid_cache__lookup(c, &k, &out), 0);
	sp_buildid_cache__free(c);
}

static void test_read_file_hex(void **state)
{
	char hex[SP_BUILDID_MAX_HEX + 1], want_hex[SP_BUILDID_MAX_HEX + 1], fifo[128];
	struct sp_build_id want;

	(void)state;
	if (sp_buildid__from_path("/proc/self/exe", &want) != 0)
		skip();	/* linked without --build-id */
	sp_buildid__hex(&want, want_hex);
	assert_int_equal(sp_buildid__read_file("/proc/self/exe", hex, sizeof(hex)), 0);
	assert_string_equal(hex, want_hex);
	assert_int_equal(sp_buildid__validate(hex), 0);
	assert_int_equal(sp_buildid__read_file("/proc/self/exe", hex, SP_BUILDID_MAX_HEX), -EINVAL);
	assert_int_equal(sp_buildid__read_file("/nonexistent/x", hex, sizeof(hex)), -ENOENT);
	/* A FIFO would block an O_RDONLY open for ever: refused unopened. */
	tu_path(fifo, sizeof(fifo), "fifo");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(sp_buildid__read_file(fifo, hex, sizeof(hex)), -EINVAL);
	assert_string_equal(hex, "");
	unlink(fifo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_notes_good),
		cmocka_unit_test(test_notes_none),
		cmocka_unit_test(test_notes_malformed),
		cmocka_unit_test(test_notes_every_truncation),
		cmocka_unit_test(test_notes_elf32_bytes),
		cmocka_unit_test(test_elf_variants),
		cmocka_unit_test(test_elf_no_build_id),
		cmocka_unit_test(test_elf_corrupt_note),
		cmocka_unit_test(test_elf_truncated),
		cmocka_unit_test(test_elf_garbage),
		cmocka_unit_test(test_self_exe),
		cmocka_unit_test(test_known_id_compiled),
		cmocka_unit_test(test_kernel),
		cmocka_unit_test(test_hex),
		cmocka_unit_test(test_cache_basic),
		cmocka_unit_test(test_cache_bounded),
		cmocka_unit_test(test_cache_lru),
		cmocka_unit_test(test_read_file_hex),
	};

	return cmocka_run_group_tests_name("buildid", tests, tu_setup_dir, tu_teardown_dir);
}
