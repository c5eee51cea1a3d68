// SPDX-License-Identifier: MIT
/*
 * test_go.c - the user-space half of Go support (issue 13): the version
 * table and version strings (go_offsets.c), .go.buildinfo, the g TLS
 * instruction and the park points (go_binary.c), Go binaries read whole
 * (the golabels fixture with DWARF and stripped, go_fake_slice as Go 1.24),
 * .gopclntab (base/gopclntab.c) against the fixture, Go build id notes
 * (base/buildid.c), Go label attributes (ctx_attrs.c) and the Go key table
 * (go_discovery.c).
 *
 * Fixtures come from the build ($SPANPROF_BUILD, else the directory above
 * this binary's); make builds them, so a missing one fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buildid.h"
#include "base/gopclntab.h"
#include "collector/tracectx/ctx_attrs.h"
#include "collector/tracectx/go_binary.h"
#include "collector/tracectx/go_discovery.h"
#include "collector/tracectx/go_offsets.h"
#include "testutil.h"

static const char *fixture(char *buf, size_t cap, const char *rel)
{
	const char *b = getenv("SPANPROF_BUILD");
	char self[PATH_MAX];
	ssize_t n;

	if (b && *b) {
		n = snprintf(buf, cap, "%s/fixtures/%s", b, rel);
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		assert_true(n > 0 && n < 1024);
		self[n] = '\0';
		*strrchr(self, '/') = '\0';
		*strrchr(self, '/') = '\0';
		n = snprintf(buf, cap, "%.1024s/fixtures/%s", self, rel);
	}
	assert_true(n > 0 && (size_t)n < cap);
	if (access(buf, R_OK)) {
		fprintf(stderr, "fixture %s missing: run make\n", buf);
		fail();
	}
	return buf;
}

static void test_versions(void **state)
{
	uint16_t m = 0;

	(void)state;
	assert_int_equal(sp_go_offsets__parse_version("go1.19.8", &m), 0);
	assert_int_equal(m, 19);
	assert_int_equal(sp_go_offsets__parse_version("go1.22rc1", &m), 0);
	assert_int_equal(m, 22);
	assert_int_equal(sp_go_offsets__parse_version("go1.21", &m), 0);
	assert_int_equal(m, 21);
	assert_int_equal(sp_go_offsets__parse_version("devel go1.23-4fb0d2 Tue", &m), 0);
	assert_int_equal(m, 23);
	assert_int_equal(sp_go_offsets__parse_version("go1.24beta1", &m), 0);
	assert_int_equal(m, 24);
	assert_int_equal(sp_go_offsets__parse_version("go2.0", &m), -EINVAL);
	assert_int_equal(sp_go_offsets__parse_version("go1.", &m), -EINVAL);
	assert_int_equal(sp_go_offsets__parse_version("go1.x", &m), -EINVAL);
	assert_int_equal(sp_go_offsets__parse_version("go1.19x", &m), -EINVAL);
	assert_int_equal(sp_go_offsets__parse_version("1.19", &m), -EINVAL);
	assert_int_equal(sp_go_offsets__parse_version(NULL, &m), -EINVAL);
}

static void test_table(void **state)
{
	static const struct { uint16_t minor, curg, labels; uint8_t layout; } want[] = {
		{ 17, 192, 360, SP_GO_LABELS_MAP }, { 19, 192, 360, SP_GO_LABELS_MAP },
		{ 20, 192, 360, SP_GO_LABELS_MAP }, { 21, 192, 344, SP_GO_LABELS_MAP },
		{ 22, 192, 344, SP_GO_LABELS_MAP }, { 23, 192, 352, SP_GO_LABELS_MAP },
		{ 24, 192, 352, SP_GO_LABELS_SLICE }, { 25, 184, 344, SP_GO_LABELS_SLICE },
		{ 26, 184, 352, SP_GO_LABELS_SLICE },
	};
	struct sp_go_desc d;

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		memset(&d, 0, sizeof(d));
		assert_true(sp_go_offsets__for(want[i].minor, &d));
		assert_int_equal(d.g_m, 48);
		assert_int_equal(d.m_curg, want[i].curg);
		assert_int_equal(d.g_labels, want[i].labels);
		assert_int_equal(d.layout, want[i].layout);
	}
	/* outside the table: unknown, never guessed */
	assert_false(sp_go_offsets__for(16, &d));
	assert_false(sp_go_offsets__for(27, &d));
}

/* An image whose vaddr 0x1000.. holds a Go string header and its bytes. */
static int read_at(void *ctx, uint64_t vaddr, void *dst, size_t n)
{
	static const uint8_t mem[] = {
		/* 0x1000: {ptr 0x1010, len 8} */
		0x10, 0x10, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0,
		/* 0x1010 */ 'g', 'o', '1', '.', '1', '6', '.', '3',
	};

	(void)ctx;
	if (vaddr < 0x1000 || vaddr - 0x1000 + n > sizeof(mem))
		return -ENOENT;
	memcpy(dst, mem + (vaddr - 0x1000), n);
	return 0;
}

static void test_buildinfo(void **state)
{
	uint8_t b[64] = "\xff Go buildinf:\x08\x02";
	char v[SP_GO_VERSION_MAX + 1];

	(void)state;
	b[32] = 8;
	memcpy(b + 33, "go1.19.8", 8);
	assert_int_equal(sp_go_binary__buildinfo_version(b, sizeof(b), NULL, NULL, v), 0);
	assert_string_equal(v, "go1.19.8");
	/* truncated: the length says more than there is */
	assert_int_equal(sp_go_binary__buildinfo_version(b, 37, NULL, NULL, v), -EINVAL);
	/* a varint that never ends */
	memset(b + 32, 0x80, 32);
	assert_int_equal(sp_go_binary__buildinfo_version(b, sizeof(b), NULL, NULL, v), -EINVAL);
	/* a version with a control byte */
	b[32] = 3;
	memcpy(b + 33, "go\n", 3);
	assert_int_equal(sp_go_binary__buildinfo_version(b, sizeof(b), NULL, NULL, v), -EINVAL);
	/* too long */
	b[32] = 100;
	assert_int_equal(sp_go_binary__buildinfo_version(b, sizeof(b), NULL, NULL, v), -EINVAL);
	/* not buildinfo */
	b[0] = 0;
	assert_int_equal(sp_go_binary__buildinfo_version(b, sizeof(b), NULL, NULL, v), -ENOENT);
	/* Go < 1.18: a pointer to a string header */
	memset(b, 0, sizeof(b));
	memcpy(b, "\xff Go buildinf:\x08\x00", 16);
	b[16] = 0x00;
	b[17] = 0x10;
	assert_int_equal(sp_go_binary__buildinfo_version(b, sizeof(b), read_at, NULL, v), 0);
	assert_string_equal(v, "go1.16.3");
	b[17] = 0x20;	/* pointing nowhere */
	assert_int_equal(sp_go_binary__buildinfo_version(b, sizeof(b), read_at, NULL, v), -EINVAL);
	assert_int_equal(sp_go_binary__buildinfo_version(b, sizeof(b), NULL, NULL, v), -EINVAL);
}

static void test_tls_decode(void **state)
{
	/* mov %fs:0xfffffffffffffff8,%rax (go1.19, static) */
	static const uint8_t direct[] = { 0x64, 0x48, 0x8b, 0x04, 0x25, 0xf8, 0xff, 0xff, 0xff };
	/* mov %fs:0xffffffffffffffa8,%rax (cgo -static, glibc 2.36) */
	static const uint8_t direct88[] = { 0x64, 0x48, 0x8b, 0x04, 0x25, 0xa8, 0xff, 0xff, 0xff };
	/* mov $-8,%rcx; mov %fs:(%rcx),%rax (PIE) */
	static const uint8_t imm[] = { 0x48, 0xc7, 0xc1, 0xf8, 0xff, 0xff, 0xff,
				       0x64, 0x48, 0x8b, 0x01 };
	/* the same with the registers not matching */
	static const uint8_t imm_bad[] = { 0x48, 0xc7, 0xc1, 0xf8, 0xff, 0xff, 0xff,
					   0x64, 0x48, 0x8b, 0x02 };
	static const uint8_t other[] = { 0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x90, 0x90,
					 0x90, 0x90, 0x90 };
	int32_t off = 0;

	(void)state;
	assert_int_equal(sp_go_binary__decode_tls(direct, sizeof(direct), &off), 0);
	assert_int_equal(off, -8);
	assert_int_equal(sp_go_binary__decode_tls(direct88, sizeof(direct88), &off), 0);
	assert_int_equal(off, -88);
	assert_int_equal(sp_go_binary__decode_tls(imm, sizeof(imm), &off), 0);
	assert_int_equal(off, -8);
	assert_int_equal(sp_go_binary__decode_tls(imm_bad, sizeof(imm_bad), &off), -ENOENT);
	assert_int_equal(sp_go_binary__decode_tls(other, sizeof(other), &off), -ENOENT);
	assert_int_equal(sp_go_binary__decode_tls(direct, 8, &off), -ENOENT);
}

static void test_park_points(void **state)
{
	/* go1.19's runtime.gopark head and tail: cmp/jbe, sub, mov %rbp, lea
	 * 0x10(%rsp),%rbp | ... call mcall; mov 0x10(%rsp),%rbp */
	uint8_t c[64] = { 0x49, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0xe9, 0, 0, 0,
			  0x48, 0x83, 0xec, 0x18, 0x48, 0x89, 0x6c, 0x24, 0x10,
			  0x48, 0x8d, 0x6c, 0x24, 0x10, 0x49, 0x8b, 0x56, 0x30 };
	const uint64_t entry = 0x4347e0, mcall = 0x45b6e0;
	uint64_t park, resume;
	int32_t rel = (int32_t)(mcall - (entry + 40 + 5));

	(void)state;
	c[40] = 0xe8;
	memcpy(c + 41, &rel, 4);
	assert_int_equal(sp_go_binary__park_points(c, sizeof(c), entry, mcall, &park, &resume), 0);
	assert_int_equal(park, entry + 24);	/* after the lea */
	assert_int_equal(resume, entry + 45);	/* after the call */
	/* two calls to mcall: which one resumes is unknown, none is used */
	rel = (int32_t)(mcall - (entry + 50 + 5));
	c[50] = 0xe8;
	memcpy(c + 51, &rel, 4);
	assert_int_equal(sp_go_binary__park_points(c, sizeof(c), entry, mcall, &park, &resume),
			 -ENOENT);
	assert_int_equal(park, 0);
	c[50] = 0x90;
	/* no frame set up in the first 32 bytes */
	c[19] = 0x90;
	assert_int_equal(sp_go_binary__park_points(c, sizeof(c), entry, mcall, &park, &resume),
			 -ENOENT);
}

static int read_file_go(const char *path, struct sp_go_binary *b, enum sp_go_fail *why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	assert_true(fd >= 0);
	rc = sp_go_binary__read_fd(fd, b, why);
	close(fd);
	return rc;
}

/* Bytes of path at file offset off. */
static void file_bytes(const char *path, uint64_t off, uint8_t *dst, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, dst, n, (off_t)off), (ssize_t)n);
	close(fd);
}

static void test_binaries(void **state)
{
	char p[PATH_MAX], q[PATH_MAX], t[PATH_MAX];
	struct sp_go_binary b, s;
	enum sp_go_fail why;
	uint8_t code[8], *img;
	size_t len;

	(void)state;
	/* Go 1.19 with DWARF: offsets from DWARF agree with the table */
	assert_int_equal(read_file_go(fixture(p, sizeof(p), "go/golabels"), &b, &why), 0);
	assert_string_equal(b.version, "go1.19.8");
	assert_int_equal(b.minor, 19);
	assert_int_equal(b.offsets_from, SP_GO_FROM_DWARF);
	assert_int_equal(b.desc.tls_g, -8);
	assert_int_equal(b.desc.g_m, 48);
	assert_int_equal(b.desc.m_curg, 192);
	assert_int_equal(b.desc.g_labels, 360);
	assert_int_equal(b.desc.layout, SP_GO_LABELS_MAP);
	assert_int_equal(b.desc.go_minor, 19);
	assert_int_equal(b.desc.g_status, 144);	/* Go 1.19's DWARF, readelf */
	/* the label cache's GC cycle: .symtab's runtime.mheap_ + DWARF's
	 * offset of sweepgen, inside the symbol (readelf -s / -wi agree) */
	assert_true(b.desc.sweepgen != 0);
	assert_int_equal(b.desc.seq, 0);	/* given by discovery, per process */
	/* the park point follows gopark's frame setup; the resume point its
	 * call to mcall (the byte before it ends a call rel32) */
	assert_true(b.park_off && b.resume_off);
	file_bytes(p, b.park_off - 5, code, 5);
	assert_memory_equal(code, "\x48\x8d\x6c\x24", 4);
	file_bytes(p, b.resume_off - 5, code, 1);
	assert_int_equal(code[0], 0xe8);
	/* the GC epoch probe's point: runtime.gcSweep's first instruction,
	 * the stack-bound check a Go function opens with (cmp
	 * stackguard(%r14),%rsp: 49 3b 66; objdump agrees) */
	assert_true(b.gc_off != 0);
	file_bytes(p, b.gc_off, code, 3);
	assert_memory_equal(code, "\x49\x3b\x66", 3);
	/* stripped: the table, and the same points through .gopclntab */
	assert_int_equal(read_file_go(fixture(q, sizeof(q), "go/golabels.stripped"), &s, &why), 0);
	assert_int_equal(s.offsets_from, SP_GO_FROM_TABLE);
	/* no .symtab, no DWARF: no GC cycle address, labels read uncached;
	 * no g.atomicstatus offset (DWARF only: cgo calls carry no ids) */
	assert_int_equal(s.desc.sweepgen, 0);
	assert_int_equal(s.desc.g_status, 0);
	s.desc.sweepgen = b.desc.sweepgen;
	s.desc.g_status = b.desc.g_status;
	assert_memory_equal(&s.desc, &b.desc, sizeof(b.desc));
	assert_true(s.park_off && s.resume_off);
	/* ... and gcSweep through .gopclntab, at the same place */
	assert_int_equal(s.gc_off, b.gc_off);
	/* Go 1.24 (the hand-laid fixture): the slice layout, cgo's TLS rule */
	assert_int_equal(read_file_go(fixture(t, sizeof(t), "go_fake_slice"), &s, &why), 0);
	assert_string_equal(s.version, "go1.24.0");
	assert_int_equal(s.desc.layout, SP_GO_LABELS_SLICE);
	assert_int_equal(s.desc.g_labels, 352);
	assert_int_equal(s.desc.tls_g, -8);
	assert_int_equal(s.park_off, 0);	/* no runtime.gopark: no parks */
	assert_int_equal(s.gc_off, 0);		/* nor gcSweep: no GC epoch probe */
	/* not Go */
	assert_int_equal(read_file_go(fixture(t, sizeof(t), "callchain"), &s, &why), -ENOENT);
	/* truncated Go binaries: refused or not Go, never a crash */
	assert_int_equal(tu_read_file(q, &img, &len), 0);
	for (size_t cut = 64; cut < len; cut = cut * 3 + 101) {
		int fd, rc;

		tu_path(t, sizeof(t), "cut");
		assert_int_equal(tu_write_file(t, img, cut), 0);
		fd = open(t, O_RDONLY | O_CLOEXEC);
		rc = sp_go_binary__read_fd(fd, &s, &why);
		close(fd);
		assert_true(rc == -ENOENT || rc == -EINVAL || rc == -ENOTSUP || rc == 0);
	}
	free(img);
}

static Elf *open_elf(const char *path, int *fd)
{
	Elf *e;

	assert_true(elf_version(EV_CURRENT) != EV_NONE);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(*fd >= 0);
	e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(e);
	return e;
}

static void test_gopclntab(void **state)
{
	char p[PATH_MAX];
	struct sp_gopcln_frame f[8];
	struct sp_gopcln *t;
	uint64_t burn, burn_end, gopark, end, entry;
	uint32_t n;
	Elf *e;
	int fd;

	(void)state;
	e = open_elf(fixture(p, sizeof(p), "go/golabels.stripped"), &fd);
	assert_int_equal(sp_gopcln__open(e, &t), 0);
	assert_int_equal(sp_gopcln__format(t), 118);
	assert_true(sp_gopcln__has_inline(t));	/* gofunc from the moduledata */
	assert_int_equal(sp_gopcln__find_func(t, "main.burn", &burn, &burn_end), 0);
	assert_true(burn_end > burn);
	assert_int_equal(sp_gopcln__find_func(t, "main.nope", &end, &end), -ENOENT);
	assert_int_equal(sp_gopcln__resolve(t, burn + 8, f, 8, &n, &entry), 0);
	assert_int_equal(n, 1);
	assert_int_equal(entry, burn);
	assert_string_equal(f[0].function, "main.burn");
	assert_non_null(strstr(f[0].file, "tests/fixtures/go/golabels/main.go"));
	assert_true(f[0].line > 0);
	/* gopark inlines acquirem right after its frame setup */
	assert_int_equal(sp_gopcln__find_func(t, "runtime.gopark", &gopark, &end), 0);
	assert_int_equal(sp_gopcln__resolve(t, gopark + 0x18, f, 8, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(f[0].function, "runtime.acquirem");
	assert_non_null(strstr(f[0].file, "runtime1.go"));
	assert_string_equal(f[1].function, "runtime.gopark");
	assert_non_null(strstr(f[1].file, "proc.go"));
	/* room for one frame: the real function, at its call site */
	assert_int_equal(sp_gopcln__resolve(t, gopark + 0x18, f, 1, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].function, "runtime.gopark");
	/* outside every function */
	assert_int_equal(sp_gopcln__resolve(t, 0x10, f, 8, &n, NULL), -ENOENT);
	assert_int_equal(n, 0);
	sp_gopcln__free(t);
	sp_gopcln__free(NULL);
	elf_end(e);
	close(fd);
	/* not Go */
	e = open_elf(fixture(p, sizeof(p), "callchain"), &fd);
	assert_int_equal(sp_gopcln__open(e, &t), -ENOENT);
	elf_end(e);
	close(fd);
}

/* The table of an image with one header field changed, in memory. */
static int open_patched(const uint8_t *img, size_t len, size_t at, const void *v, size_t n)
{
	uint8_t *copy = malloc(len);
	struct sp_gopcln *t = NULL;
	Elf *e;
	int rc;

	assert_non_null(copy);
	memcpy(copy, img, len);
	memcpy(copy + at, v, n);
	e = elf_memory((char *)copy, len);
	assert_non_null(e);
	rc = sp_gopcln__open(e, &t);
	if (!rc) {
		struct sp_gopcln_frame f[4];
		uint32_t k;

		/* whatever it reads, it reads inside the image */
		for (uint64_t pc = 0x401000; pc < 0x4b0000; pc += 0x3f1)
			(void)sp_gopcln__resolve(t, pc, f, 4, &k, NULL);
	}
	sp_gopcln__free(t);
	elf_end(e);
	free(copy);
	return rc;
}

static void test_gopclntab_hostile(void **state)
{
	char p[PATH_MAX];
	uint8_t *img;
	size_t len, hdr = 0;
	uint64_t big = 1ull << 60;
	uint32_t magic_old = 0xfffffffb;

	(void)state;
	assert_int_equal(tu_read_file(fixture(p, sizeof(p), "go/golabels.stripped"), &img, &len), 0);
	for (size_t i = 0; i + 8 <= len; i += 8)
		if (!memcmp(img + i, "\xf0\xff\xff\xff\x00\x00\x01\x08", 8)) {
			hdr = i;
			break;
		}
	assert_true(hdr > 0);
	assert_int_equal(open_patched(img, len, hdr, &magic_old, 4), -ENOTSUP);
	assert_int_equal(open_patched(img, len, hdr + 7, "\x04", 1), -EINVAL);	/* ptrSize */
	assert_int_equal(open_patched(img, len, hdr + 8, &big, 8), -EINVAL);	/* nfunc */
	for (int field = 0; field < 5; field++)		/* sub-table offsets */
		assert_true(open_patched(img, len, hdr + 32 + 8 * field, &big, 8) < 0);
	/* a textStart far away: opens, resolves nothing it should not */
	assert_int_equal(open_patched(img, len, hdr + 24, &big, 8), 0);
	free(img);
}

static void test_go_build_id_notes(void **state)
{
	/* a Go note, then a GNU one: GNU wins; the Go one alone is kept */
	uint8_t buf[256] = { 0 };
	const char *goid = "ywcn_yPZ1hBVc1vOS7j_/3FbOkdQ9vd3SVsqh6DGR";
	uint32_t h[3] = { 4, 0, 4 };
	struct sp_build_id b;
	char hex[SP_BUILDID_MAX_HEX + 1];
	size_t off = 0, n = strlen(goid);

	(void)state;
	h[1] = (uint32_t)n;
	memcpy(buf, h, 12);
	memcpy(buf + 12, "Go\0\0", 4);
	memcpy(buf + 16, goid, n);
	off = (16 + n + 3) & ~3ul;
	assert_int_equal(sp_buildid__from_notes(buf, off, &b), 0);
	assert_int_equal(b.kind, SP_BUILD_ID_GO);
	sp_buildid__hex(&b, hex);
	assert_string_equal(hex, goid);
	h[0] = 4;
	h[1] = 4;
	h[2] = 3;
	memcpy(buf + off, h, 12);
	memcpy(buf + off + 12, "GNU\0\xde\xad\xbe\xef", 8);
	assert_int_equal(sp_buildid__from_notes(buf, off + 20, &b), 0);
	assert_int_equal(b.kind, SP_BUILD_ID_GNU);
	sp_buildid__hex(&b, hex);
	assert_string_equal(hex, "deadbeef");
	/* not an id go build writes: no id */
	buf[16] = '.';
	assert_int_equal(sp_buildid__from_notes(buf, off, &b), -ENOENT);
	assert_int_equal(sp_buildid__validate_go(goid), 0);
	assert_int_equal(sp_buildid__validate_go("../../etc/passwd"), -EINVAL);
	assert_int_equal(sp_buildid__validate_go("deadbeef"), -EINVAL);	/* no '/' */
	assert_int_equal(sp_buildid__validate_go("/abc"), -EINVAL);
	assert_int_equal(sp_buildid__validate_go("abc/"), -EINVAL);
	assert_int_equal(sp_buildid__validate_go("a b/c"), -EINVAL);
	assert_int_equal(sp_buildid__validate_go(NULL), -EINVAL);
	assert_int_equal(sp_buildid__validate(goid), -EINVAL);	/* never GNU */
}

static void test_go_build_id_file(void **state)
{
	char p[PATH_MAX], id[SP_BUILDID_MAX_HEX + 1];
	struct sp_build_id b;

	(void)state;
	/* Go 1.19 writes no GNU id: the Go one is the file's */
	assert_int_equal(sp_buildid__from_path(fixture(p, sizeof(p), "go/golabels.stripped"), &b), 0);
	assert_int_equal(b.kind, SP_BUILD_ID_GO);
	assert_int_equal(sp_buildid__read_file(p, id, sizeof(id)), 0);
	assert_int_equal(sp_buildid__validate_go(id), 0);
	assert_int_equal(strlen(id), 83);
	/* go_fake has both: GNU wins */
	assert_int_equal(sp_buildid__from_path(fixture(p, sizeof(p), "go_fake"), &b), 0);
	assert_int_equal(b.kind, SP_BUILD_ID_GNU);
}

/* Key table: index = 200 + first letter, or drop "z*". */
static int key_index(const uint8_t *key, uint8_t len, void *ctx)
{
	(void)ctx;
	return len && key[0] != 'z' ? key[0] : -1;
}

static void test_canon_go(void **state)
{
	/* {klen, vlen, key, value} x 4: b, a, z (dropped), a again (wins) */
	static const uint8_t in[] = { 1, 2, 'b', 'B', 'B', 1, 1, 'a', 'A', 1, 1, 'z', 'Z',
				      1, 3, 'a', 'x', 0xc3, 0xa9, 2, 9, 'c' };
	uint8_t out[SP_CTX_ATTRS_MAX];
	uint32_t dropped = 9, bad = 9, n;
	uint8_t v[SP_GO_VALUE_MAX + 2 + 1] = { 1, SP_GO_VALUE_MAX, 'k' };

	(void)state;
	n = sp_ctx_attrs__canon_go(in, sizeof(in), key_index, NULL, out, &dropped, &bad);
	/* sorted by index: a (last value "x\xc3\xa9"), b; z dropped; the
	 * trailing partial entry dropped */
	assert_int_equal(n, 2 + 3 + 2 + 2);
	assert_memory_equal(out, "a\x03x\xc3\xa9" "b\x02" "BB", n);
	assert_int_equal(dropped, 2);
	assert_int_equal(bad, 0);
	/* a value cut at SP_GO_VALUE_MAX in the middle of a character loses
	 * the partial character; invalid UTF-8 is counted */
	memset(v + 3, 'x', SP_GO_VALUE_MAX - 1);
	v[3 + SP_GO_VALUE_MAX - 1] = 0xc3;	/* first byte of a 2-byte char */
	n = sp_ctx_attrs__canon_go(v, 3 + SP_GO_VALUE_MAX, key_index, NULL, out, &dropped, &bad);
	assert_int_equal(n, 2 + SP_GO_VALUE_MAX - 1);
	assert_int_equal(out[1], SP_GO_VALUE_MAX - 1);
	assert_int_equal(bad, 0);
	static const uint8_t invalid[] = { 2, 2, 'k', 0xff, 'v', 0xc3 };
	n = sp_ctx_attrs__canon_go(invalid, sizeof(invalid), key_index, NULL, out, &dropped, &bad);
	assert_int_equal(n, 4);
	assert_int_equal(bad, 1);
	assert_int_equal(sp_ctx_attrs__canon_go(NULL, 10, key_index, NULL, out, &dropped, &bad), 0);
}

static void test_go_keys(void **state)
{
	struct sp_go_discovery *g = sp_go_discovery__new(NULL, "/nonexistent");
	struct sp_go_keys *k = NULL;
	char name[8];

	(void)state;
	assert_non_null(g);
	assert_int_equal(sp_go_keys__index(g, &k, (const uint8_t *)"route", 5), SP_GO_KEY_BASE);
	assert_int_equal(sp_go_keys__index(g, &k, (const uint8_t *)"user", 4), SP_GO_KEY_BASE + 1);
	assert_int_equal(sp_go_keys__index(g, &k, (const uint8_t *)"route", 5), SP_GO_KEY_BASE);
	assert_string_equal(sp_go_keys__name(k, SP_GO_KEY_BASE + 1), "user");
	assert_null(sp_go_keys__name(k, SP_GO_KEY_BASE + 2));
	assert_null(sp_go_keys__name(k, 3));
	assert_int_equal(sp_go_keys__index(g, &k, (const uint8_t *)"a\0b", 3), -1);
	for (int i = 2; i < SP_GO_PROC_KEYS; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		assert_int_equal(sp_go_keys__index(g, &k, (const uint8_t *)name, strlen(name)),
				 SP_GO_KEY_BASE + i);
	}
	assert_int_equal(sp_go_keys__index(g, &k, (const uint8_t *)"more", 4), -1);	/* full */
	assert_int_equal(sp_go_discovery__stats(g)->keys_dropped, 2);
	/* not a process: not Go, nothing counted */
	assert_int_equal(sp_go_discovery__examine(g, 1), 0);
	sp_go_keys__free(k);
	sp_go_keys__free(NULL);
	sp_go_discovery__free(g);
}

/* A process is counted once however often it is described from the same
 * file (an exec event read after the start-up scan saw the new image);
 * another pid, or the same pid after it exited, is another process.  A
 * private proc root whose <pid>/exe links point at the golabels fixture. */
static void test_examine_counts_once(void **state)
{
	char root[PATH_MAX], exe[PATH_MAX], p[PATH_MAX + 64];
	struct sp_go_discovery *g;
	const struct sp_go_stats *st;

	(void)state;
	fixture(exe, sizeof(exe), "go/golabels");
	assert_non_null(tu_mkdtemp(root, sizeof(root), "test_go-proc"));
	for (int pid = 100; pid <= 101; pid++) {
		snprintf(p, sizeof(p), "%s/%d", root, pid);
		assert_int_equal(mkdir(p, 0755), 0);
		snprintf(p, sizeof(p), "%s/%d/exe", root, pid);
		assert_int_equal(symlink(exe, p), 0);
	}
	g = sp_go_discovery__new(NULL, root);
	assert_non_null(g);
	st = sp_go_discovery__stats(g);
	assert_int_equal(sp_go_discovery__examine(g, 100), 1);
	sp_go_discovery__drop(g, 100);		/* its exec event, read late */
	assert_int_equal(sp_go_discovery__examine(g, 100), 1);
	assert_int_equal(st->procs, 1);
	assert_int_equal(st->procs_dwarf, 1);
	assert_int_equal(st->files_read, 1);
	assert_int_equal(sp_go_discovery__examine(g, 101), 1);
	assert_int_equal(st->procs, 2);
	sp_go_discovery__exited(g, 100);
	assert_int_equal(sp_go_discovery__examine(g, 100), 1);	/* a reused pid */
	assert_int_equal(st->procs, 3);
	assert_int_equal(st->procs_dwarf, 3);
	assert_int_equal(sp_go_discovery__examine(g, 102), 0);	/* no such process */
	assert_int_equal(st->procs, 3);
	sp_go_discovery__free(g);
	assert_int_equal(tu_rm_rf(root), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_buildinfo),
		cmocka_unit_test(test_tls_decode),
		cmocka_unit_test(test_park_points),
		cmocka_unit_test(test_binaries),
		cmocka_unit_test(test_gopclntab),
		cmocka_unit_test(test_gopclntab_hostile),
		cmocka_unit_test(test_go_build_id_notes),
		cmocka_unit_test(test_go_build_id_file),
		cmocka_unit_test(test_canon_go),
		cmocka_unit_test(test_go_keys),
		cmocka_unit_test(test_examine_counts_once),
	};

	return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
