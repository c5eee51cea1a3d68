// SPDX-License-Identifier: MIT
/*
 * test_cfi_extract.c - CFI extraction (collector/unwind/cfi_extract.h) and
 * the table compiler/lookup (collector/unwind/unwind_table.h).
 *
 * Hand-made .eh_frame in a minimal ELF (cfi_elf.h), one FDE per rule kind
 * the BPF unwinder follows (rsp/rbp CFA, another register, deref, PLT
 * expression, signal frame, undefined return address, rbp saved by
 * expression) and ones it does not (return address in a register): each
 * is read back through libdw, compiled, and looked up byte by byte.  Then
 * the untrusted-input cases: the section cut at every length, absurd
 * lengths (32- and 64-bit), CIE pointers to the FDE itself, to another
 * FDE and out of the section, an unknown augmentation, a pc range that
 * wraps, an FDE of 60,000 rows (bounded, not a hang).  Real files: libc
 * and this test binary, every row checked against the table.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <gelf.h>
#include <libelf.h>

#include "collector/unwind/cfi_extract.h"
#include "collector/unwind/unwind_table.h"
#include "cfi_elf.h"

static uint8_t image[CFI_IMAGE_MAX];

struct got {
	struct sp_cfi_row rows[256];
	int n;
};

static int collect(const struct sp_cfi_row *r, void *ctx)
{
	struct got *g = ctx;

	if (g->n < 256)
		g->rows[g->n++] = *r;
	return 0;
}

/* Extracts the CFI of an image built around eh; returns the error. */
static int extract_eh(const struct cfi_buf *eh, struct got *g, struct sp_cfi_stats *st)
{
	size_t n = cfi_elf(eh->b, eh->n, image);
	Elf *e = elf_memory((char *)image, n);
	int err;

	assert_non_null(e);
	memset(g, 0, sizeof(*g));
	err = sp_cfi__extract(e, NULL, collect, g, st);
	elf_end(e);
	return err;
}

/* Extracts and compiles; the table in *t (caller releases). */
static int table_of(const struct cfi_buf *eh, struct sp_unw_table *t)
{
	size_t n = cfi_elf(eh->b, eh->n, image);
	Elf *e = elf_memory((char *)image, n);
	struct sp_unw_compiler *c = NULL;
	int err;

	assert_non_null(e);
	err = sp_unw_compiler__new(e, NULL, &c);
	assert_int_equal(err, 0);
	err = sp_cfi__extract(e, NULL, sp_unw_compiler__add_row, c, NULL);
	if (!err)
		err = sp_unw_compiler__finish(c, t);
	sp_unw_compiler__free(c);
	elf_end(e);
	return err;
}

static struct sp_unw_rule rule_at(const struct sp_unw_table *t, uint64_t pc, int *found)
{
	struct sp_unw_rule r = { 0 };

	/* vaddr == file offset in these images */
	*found = sp_unw_table__lookup(t->words, t->n_words, &t->desc, pc, &r, NULL) == 0;
	return r;
}

#define OP(r) ((r).op & 15)
#define RBP(r) ((r).op >> 4)

/* ------------------------------------------------------------ rules */

static void test_prologue_rows(void **state)
{
	/* push %rbp; mov %rsp,%rbp; ...; 0x40 bytes */
	static const uint8_t fde[] = {
		0x41, 0x0e, 0x10, 0x86, 0x02,	/* +1: CFA rsp+16, rbp at CFA-16 */
		0x43, 0x0d, 0x06,		/* +3: CFA rbp+16 */
		0x40 | 0x30, 0x0c, 0x07, 0x08,	/* +0x30: CFA rsp+8 (after leave) */
	};
	struct cfi_buf eh = { 0 };
	struct sp_unw_table t;
	struct sp_unw_rule r;
	int found;
	size_t cie;

	(void)state;
	cie = cfi_cie(&eh, "zR", CFI_CIE_INS, sizeof(CFI_CIE_INS));
	cfi_fde(&eh, cie, CFI_TEXT, 0x40, fde, sizeof(fde));
	cfi_end(&eh);
	assert_int_equal(table_of(&eh, &t), 0);
	r = rule_at(&t, CFI_TEXT, &found);
	assert_true(found);
	assert_int_equal(OP(r), SP_UNW_OP_RSP);
	assert_int_equal(r.cfa_off, 8);
	assert_int_equal(RBP(r), SP_UNW_RBP_SAME);
	r = rule_at(&t, CFI_TEXT + 1, &found);
	assert_int_equal(OP(r), SP_UNW_OP_RSP);
	assert_int_equal(r.cfa_off, 16);
	assert_int_equal(RBP(r), SP_UNW_RBP_CFA);
	assert_int_equal(r.rbp_off, -16);
	for (uint32_t a = CFI_TEXT + 4; a < CFI_TEXT + 0x34; a++) {
		r = rule_at(&t, a, &found);
		assert_true(found);
		assert_int_equal(OP(r), SP_UNW_OP_RBP);
		assert_int_equal(r.cfa_off, 16);
	}
	r = rule_at(&t, CFI_TEXT + 0x3f, &found);
	assert_int_equal(OP(r), SP_UNW_OP_RSP);
	assert_int_equal(r.cfa_off, 8);
	/* Past the FDE: no CFI. */
	rule_at(&t, CFI_TEXT + 0x40, &found);
	assert_false(found);
	rule_at(&t, CFI_TEXT - 1, &found);
	assert_false(found);
	sp_unw_table__release(&t);
}

static void test_rule_kinds(void **state)
{
	static const uint8_t plt[] = {
		0x0e, 0x10, 0x46,	/* CFA rsp+16, +6 */
		0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
	};
	static const uint8_t stop[] = { 0x07, 0x10 };			/* RA undefined */
	static const uint8_t reg[] = {
		0x0c, 0x0a, 0x00,		/* CFA = r10 */
		0x44, 0x0f, 0x03, 0x76, 0x78, 0x06,	/* +4: CFA = *(rbp - 8) */
		0x10, 0x06, 0x02, 0x76, 0x00,	/* rbp saved at rbp + 0 */
	};
	static const uint8_t ra_reg[] = { 0x09, 0x10, 0x05 };		/* RA in rdi */
	static const uint8_t big[] = { 0x0e, 0x80, 0x80, 0x04 };	/* CFA rsp+65536 */
	struct cfi_buf eh = { 0 };
	struct sp_unw_table t;
	struct sp_unw_rule r;
	int found;
	size_t cie, sig;

	(void)state;
	cie = cfi_cie(&eh, "zR", CFI_CIE_INS, sizeof(CFI_CIE_INS));
	sig = cfi_cie(&eh, "zRS", CFI_CIE_INS, sizeof(CFI_CIE_INS));
	cfi_fde(&eh, cie, CFI_TEXT + 0x000, 0x10, plt, sizeof(plt));
	cfi_fde(&eh, cie, CFI_TEXT + 0x010, 0x10, stop, sizeof(stop));
	cfi_fde(&eh, cie, CFI_TEXT + 0x020, 0x10, reg, sizeof(reg));
	cfi_fde(&eh, cie, CFI_TEXT + 0x030, 0x10, ra_reg, sizeof(ra_reg));
	cfi_fde(&eh, sig, CFI_TEXT + 0x041, 0x09, NULL, 0);	/* __restore_rt, 1 byte early */
	cfi_fde(&eh, cie, CFI_TEXT + 0x080, 0x10, big, sizeof(big));
	cfi_end(&eh);
	assert_int_equal(table_of(&eh, &t), 0);

	r = rule_at(&t, CFI_TEXT + 0x2, &found);
	assert_int_equal(OP(r), SP_UNW_OP_RSP);
	assert_int_equal(r.cfa_off, 16);
	r = rule_at(&t, CFI_TEXT + 0x6, &found);
	assert_true(found);
	assert_int_equal(OP(r), SP_UNW_OP_PLT);
	r = rule_at(&t, CFI_TEXT + 0x15, &found);
	assert_int_equal(OP(r), SP_UNW_OP_STOP);
	r = rule_at(&t, CFI_TEXT + 0x21, &found);
	assert_int_equal(OP(r), SP_UNW_OP_REG);
	assert_int_equal(r.reg & 15, 10);
	assert_int_equal(r.cfa_off, 0);
	r = rule_at(&t, CFI_TEXT + 0x25, &found);
	assert_int_equal(OP(r), SP_UNW_OP_DEREF);
	assert_int_equal(r.reg & 15, 6);
	assert_int_equal(r.reg >> 4, 0);
	assert_int_equal(r.cfa_off, -8);
	assert_int_equal(RBP(r), SP_UNW_RBP_RBP);
	assert_int_equal(r.rbp_off, 0);
	/* Not followed: a frame-pointer step, counted. */
	r = rule_at(&t, CFI_TEXT + 0x31, &found);
	assert_int_equal(OP(r), SP_UNW_OP_UNSUPPORTED);
	/* The byte before the signal FDE is a gap (0x40 .. 0x41). */
	r = rule_at(&t, CFI_TEXT + 0x41, &found);
	assert_int_equal(OP(r), SP_UNW_OP_SIGNAL);
	r = rule_at(&t, CFI_TEXT + 0x49, &found);
	assert_int_equal(OP(r), SP_UNW_OP_SIGNAL);
	rule_at(&t, CFI_TEXT + 0x4a, &found);
	assert_false(found);
	r = rule_at(&t, CFI_TEXT + 0x88, &found);
	assert_int_equal(OP(r), SP_UNW_OP_RSP);
	assert_int_equal(r.cfa_off, 65536);
	sp_unw_table__release(&t);
}

/* Padding after frameless code is covered by the row before; other gaps
 * are "no CFI". */
static void test_gaps(void **state)
{
	static const uint8_t push[] = { 0x41, 0x0e, 0x10 };
	struct cfi_buf eh = { 0 };
	struct sp_unw_table t;
	struct sp_unw_rule r;
	int found;
	size_t cie;

	(void)state;
	cie = cfi_cie(&eh, "zR", CFI_CIE_INS, sizeof(CFI_CIE_INS));
	cfi_fde(&eh, cie, CFI_TEXT, 0x8, NULL, 0);		/* frameless */
	cfi_fde(&eh, cie, CFI_TEXT + 0x10, 0x8, push, sizeof(push));
	cfi_fde(&eh, cie, CFI_TEXT + 0x40, 0x8, NULL, 0);	/* 0x38 gap before */
	cfi_end(&eh);
	assert_int_equal(table_of(&eh, &t), 0);
	r = rule_at(&t, CFI_TEXT + 0xc, &found);
	assert_true(found);
	assert_int_equal(r.cfa_off, 8);
	r = rule_at(&t, CFI_TEXT + 0x11, &found);
	assert_int_equal(r.cfa_off, 16);
	rule_at(&t, CFI_TEXT + 0x20, &found);
	assert_false(found);	/* after a framed function: not padding-safe */
	r = rule_at(&t, CFI_TEXT + 0x40, &found);
	assert_true(found);
	sp_unw_table__release(&t);
}

static void test_no_cfi(void **state)
{
	struct cfi_buf eh = { 0 };
	struct got g;

	(void)state;
	cfi_end(&eh);
	assert_int_equal(extract_eh(&eh, &g, NULL), -ENOENT);
}

/* ------------------------------------------------------------ malformed */

static struct cfi_buf good;

static void make_good(void)
{
	static const uint8_t fde[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06 };
	size_t cie;

	memset(&good, 0, sizeof(good));
	cie = cfi_cie(&good, "zR", CFI_CIE_INS, sizeof(CFI_CIE_INS));
	cfi_fde(&good, cie, CFI_TEXT, 0x40, fde, sizeof(fde));
	cfi_fde(&good, cie, CFI_TEXT + 0x40, 0x40, fde, sizeof(fde));
	cfi_end(&good);
}

static void test_every_truncation(void **state)
{
	struct cfi_buf eh;
	struct got g;

	(void)state;
	make_good();
	for (size_t n = 0; n <= good.n; n++) {
		int err;

		memcpy(&eh, &good, sizeof(eh));
		eh.n = n;
		err = extract_eh(&eh, &g, NULL);
		assert_true(err == 0 || err == -EINVAL || err == -ENOENT);
		if (err == 0)
			assert_true(g.n > 0);
	}
}

static void expect_malformed(struct cfi_buf *eh)
{
	struct got g;
	int err = extract_eh(eh, &g, NULL);

	assert_true(err == -EINVAL || err == -ENOENT);
}

static void test_absurd_fields(void **state)
{
	struct cfi_buf eh;
	size_t fde = 0, cie_len;

	(void)state;
	make_good();
	memcpy(&cie_len, good.b, 4);
	fde = 4 + cie_len;

	/* 32-bit length far past the section */
	memcpy(&eh, &good, sizeof(eh));
	memcpy(eh.b, &(uint32_t){ 0xfffffff0u }, 4);
	expect_malformed(&eh);
	/* 64-bit length (0xffffffff + u64) past the section */
	memcpy(&eh, &good, sizeof(eh));
	memmove(eh.b + 8, eh.b, eh.n);
	memcpy(eh.b, &(uint32_t){ 0xffffffffu }, 4);
	memcpy(eh.b + 4, &(uint32_t){ 0x7fffffffu }, 4);
	memcpy(eh.b + 8, &(uint32_t){ 0x7fffffffu }, 4);
	eh.n += 8;
	expect_malformed(&eh);
	/* FDE whose CIE pointer points at itself (a loop) */
	memcpy(&eh, &good, sizeof(eh));
	memcpy(eh.b + fde + 4, &(uint32_t){ 4 }, 4);
	expect_malformed(&eh);
	/* ... at the second FDE (an FDE, not a CIE) */
	memcpy(&eh, &good, sizeof(eh));
	{
		uint32_t l1;

		memcpy(&l1, eh.b + fde, 4);
		memcpy(eh.b + fde + 4 + l1 + 4, &(uint32_t){ (uint32_t)(l1 + 4) }, 4);
	}
	expect_malformed(&eh);
	/* ... before the section */
	memcpy(&eh, &good, sizeof(eh));
	memcpy(eh.b + fde + 4, &(uint32_t){ 0x7ffffff0u }, 4);
	expect_malformed(&eh);
	/* unknown augmentation letter before R: the FDE encoding is unknown */
	memcpy(&eh, &good, sizeof(eh));
	eh.b[9] = 'X';
	expect_malformed(&eh);
	/* zero-length CIE in the middle ends the walk (terminator): fine */
	memcpy(&eh, &good, sizeof(eh));
	memset(eh.b + fde, 0, 4);
	{
		struct got g;
		int err = extract_eh(&eh, &g, NULL);

		assert_true(err == -ENOENT || err == 0 || err == -EINVAL);
	}
}

static void test_pc_wrap(void **state)
{
	/* An FDE with absolute udata8 addresses wrapping past 2^64. */
	struct cfi_buf eh = { 0 };
	uint8_t cie_tail[] = { 1, 0x78, 16, 1, 0x04 };
	size_t start;
	uint64_t pc = ~0ull - 0x10, range = 0x100;

	(void)state;
	cfi_u32(&eh, 0);
	cfi_u32(&eh, 0);
	cfi_put(&eh, "\1zR", 4);
	cfi_put(&eh, cie_tail, sizeof(cie_tail));
	cfi_put(&eh, CFI_CIE_INS, sizeof(CFI_CIE_INS));
	while (eh.n % 8)
		cfi_put(&eh, "\0", 1);
	memcpy(eh.b, &(uint32_t){ (uint32_t)eh.n - 4 }, 4);
	start = eh.n;
	cfi_u32(&eh, 0);
	cfi_u32(&eh, (uint32_t)eh.n);
	cfi_put(&eh, &pc, 8);
	cfi_put(&eh, &range, 8);
	cfi_put(&eh, "\0", 1);
	while ((eh.n - start) % 8)
		cfi_put(&eh, "\0", 1);
	memcpy(eh.b + start, &(uint32_t){ (uint32_t)(eh.n - start - 4) }, 4);
	cfi_end(&eh);
	expect_malformed(&eh);
}

/* 60,000 rows in one FDE: capped (the rest is "no CFI"), in bounded time. */
static void test_huge_fde(void **state)
{
	static struct cfi_buf eh;
	static uint8_t ins[60000 * 2];
	struct sp_cfi_stats st;
	struct timespec a, b;
	struct got g;
	size_t cie, n = 0;
	int err;

	(void)state;
	memset(&eh, 0, sizeof(eh));
	for (int i = 0; i < 60000; i++) {
		ins[n++] = 0x40 | 0;	/* advance 0: a row per instruction pair */
		ins[n++] = 0x41;	/* advance 1 */
	}
	cie = cfi_cie(&eh, "zR", CFI_CIE_INS, sizeof(CFI_CIE_INS));
	cfi_fde(&eh, cie, CFI_TEXT, CFI_TEXT_LEN, ins, CFI_EH_MAX - 64 < n ? CFI_EH_MAX - 64 : n);
	cfi_end(&eh);
	assert_true(eh.n <= sizeof(eh.b));
	clock_gettime(CLOCK_MONOTONIC, &a);
	err = extract_eh(&eh, &g, &st);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(err == 0 || err == -EINVAL);
	assert_true((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < 5000);
	if (err == 0)
		assert_true(st.rows <= SP_CFI_MAX_FDE_ROWS + 1);
}

/* ------------------------------------------------------------ real files */

struct rowcheck {
	struct sp_unw_compiler *c;
	struct sp_cfi_row *rows;
	size_t n, cap;
	uint64_t signal, stop;
};

static int keep(const struct sp_cfi_row *r, void *arg)
{
	struct rowcheck *k = arg;

	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 4096;
		k->rows = realloc(k->rows, k->cap * sizeof(*k->rows));
		assert_non_null(k->rows);
	}
	k->rows[k->n++] = *r;
	k->signal += OP(r->rule) == SP_UNW_OP_SIGNAL;
	k->stop += OP(r->rule) == SP_UNW_OP_STOP;
	return sp_unw_compiler__add_row(r, k->c);
}

static int fo_of(Elf *e, uint64_t va, uint64_t *fo)
{
	size_t n = 0;

	elf_getphdrnum(e, &n);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    va >= ph.p_vaddr && va < ph.p_vaddr + ph.p_filesz) {
			*fo = va - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -1;
}

/* Every row's first and last byte come back from the table as libdw gave
 * them; returns the counts of signal and stop rows. */
static void check_file(const char *path, uint64_t *signal, uint64_t *stop)
{
	struct rowcheck k = { 0 };
	struct sp_unw_table t;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;

	assert_true(fd >= 0);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	assert_int_equal(sp_unw_compiler__new(e, NULL, &k.c), 0);
	assert_int_equal(sp_cfi__extract(e, NULL, keep, &k, NULL), 0);
	assert_int_equal(sp_unw_compiler__finish(k.c, &t), 0);
	assert_true(k.n > 100);
	for (size_t i = 0; i < k.n; i++) {
		uint64_t ends[2] = { k.rows[i].start, k.rows[i].end - 1 };

		for (int j = 0; j < 2; j++) {
			struct sp_unw_rule r;
			uint64_t fo;
			int lr;

			if (fo_of(e, ends[j], &fo))
				continue;
			lr = sp_unw_table__lookup(t.words, t.n_words, &t.desc, fo, &r, NULL);
			if (OP(k.rows[i].rule) == SP_UNW_OP_NONE) {
				assert_int_equal(lr, -ENOENT);
			} else {
				assert_int_equal(lr, 0);
				assert_memory_equal(&r, &k.rows[i].rule, sizeof(r));
			}
		}
	}
	*signal = k.signal;
	*stop = k.stop;
	sp_unw_table__release(&t);
	sp_unw_compiler__free(k.c);
	free(k.rows);
	elf_end(e);
	close(fd);
}

static void test_real_libc(void **state)
{
	static const char libc[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	uint64_t signal = 0, stop = 0;

	(void)state;
	if (access(libc, R_OK)) {
		skip();
		return;
	}
	check_file(libc, &signal, &stop);
	assert_int_equal(signal, 1);	/* __restore_rt */
	assert_true(stop >= 1);		/* clone, clone3's child */
}

static void test_real_self(void **state)
{
	uint64_t signal = 0, stop = 0;

	(void)state;
	check_file("/proc/self/exe", &signal, &stop);
	assert_true(stop >= 1);		/* _start */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prologue_rows),
		cmocka_unit_test(test_rule_kinds),
		cmocka_unit_test(test_gaps),
		cmocka_unit_test(test_no_cfi),
		cmocka_unit_test(test_every_truncation),
		cmocka_unit_test(test_absurd_fields),
		cmocka_unit_test(test_pc_wrap),
		cmocka_unit_test(test_huge_fde),
		cmocka_unit_test(test_real_libc),
		cmocka_unit_test(test_real_self),
	};

	elf_version(EV_CURRENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
