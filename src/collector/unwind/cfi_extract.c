// SPDX-License-Identifier: MIT
/*
 * cfi_extract.c - see cfi_extract.h.
 *
 * Why libdw and this shape: libdw is the Debian-packaged CFI interpreter
 * the project prefers to a hand-written one, and it has no row iterator;
 * asking it row by row (dwarf_cfi_addrframe at each row's end) re-executes
 * an FDE's program from its start for every row, so an FDE of k rows costs
 * O(k^2) instructions.  Measured on this machine (bench/unwind_tables.c,
 * docs/benchmarks.md) that is 0.3-0.5 us per row: libc's 25,212 rows in
 * 11 ms, libLLVM's 1.3 M rows in 0.55 s, well inside the builder's CPU
 * budget, so there was no measured reason to write an interpreter.  The
 * quadratic term is bounded by SP_CFI_MAX_FDE_ROWS.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/unwind/cfi_extract.h"

/* DW_EH_PE_* pointer encodings (LSB Core, "DWARF Exception Header
 * Encoding"). */
#define PE_OMIT 0xff
#define PE_FMT 0x0f
#define PE_APP 0x70
#define PE_INDIRECT 0x80
#define PE_ABSPTR 0x00
#define PE_ULEB128 0x01
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SLEB128 0x09
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_PCREL 0x10

#define CFI_CHECK_EVERY 256	/* rows between CPU-time checks */

/* DWARF register numbers, System V x86-64 psABI. */
#define DW_X86_RBP 6
#define DW_X86_RSP 7
#define DW_X86_RA 16

struct cfi_fde {
	uint64_t start, end;
	uint8_t debug;		/* from .debug_frame */
};

struct cfi_cie {
	uint64_t off;
	int enc;		/* FDE pointer encoding, -1: unusable CIE */
	bool z;			/* augmentation "z...": FDEs carry a length */
};

struct cfi_sec {
	Elf_Data *data;		/* borrowed from libelf */
	uint64_t addr;		/* sh_addr (vaddr of data->d_buf[0]) */
	bool eh;		/* .eh_frame (else .debug_frame) */
};

struct cfi_walk {
	struct cfi_fde *fdes;
	size_t n, cap;
	struct cfi_cie *cies;
	size_t n_cies, cap_cies;
	/* executable PT_LOAD ranges: FDEs outside them describe no code */
	uint64_t x_lo[16], x_hi[16];
	int n_x;
};

const char *sp_cfi__op_name(uint8_t op)
{
	static const char *const names[] = {
		"none", "rsp", "rbp", "reg", "deref", "plt", "signal", "stop", "unsupported",
	};

	op &= 15;
	return op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

/* ------------------------------------------------------------ decoding */

static int read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;
	int shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
		if (shift > 70)
			return -EINVAL;
	}
	return -EINVAL;
}

static int read_sleb(const uint8_t **p, const uint8_t *end, int64_t *out)
{
	uint64_t v = 0;
	int shift = 0;
	uint8_t b = 0;

	while (*p < end) {
		b = *(*p)++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= ~0ULL << shift;
			*out = (int64_t)v;
			return 0;
		}
		if (shift > 70)
			return -EINVAL;
	}
	return -EINVAL;
}

static int read_fixed(const uint8_t **p, const uint8_t *end, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if ((size_t)(end - *p) < n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)(*p)[i] << (8 * i);	/* x86-64: little endian */
	*p += n;
	*out = v;
	return 0;
}

/* An encoded pointer at *p; field_addr is the vaddr of *p (for pcrel).
 * Only what x86-64 toolchains emit in FDE headers is accepted. */
static int read_encoded(const uint8_t **p, const uint8_t *end, int enc, uint64_t field_addr,
			bool apply, uint64_t *out)
{
	uint64_t v = 0;	/* = 0: GCC with -fsanitize cannot see read_*() set them */
	int64_t s = 0;
	int err;

	if (enc & PE_INDIRECT)
		return -EINVAL;
	switch (enc & PE_FMT) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		err = read_fixed(p, end, 8, &v);
		break;
	case PE_UDATA4:
		err = read_fixed(p, end, 4, &v);
		break;
	case PE_SDATA4:
		err = read_fixed(p, end, 4, &v);
		v = (uint64_t)(int64_t)(int32_t)v;
		break;
	case PE_UDATA2:
		err = read_fixed(p, end, 2, &v);
		break;
	case PE_SDATA2:
		err = read_fixed(p, end, 2, &v);
		v = (uint64_t)(int64_t)(int16_t)v;
		break;
	case PE_ULEB128:
		err = read_uleb(p, end, &v);
		break;
	case PE_SLEB128:
		err = read_sleb(p, end, &s);
		v = (uint64_t)s;
		break;
	default:
		return -EINVAL;
	}
	if (err)
		return err;
	if (apply) {
		switch (enc & PE_APP) {
		case 0:
			break;
		case PE_PCREL:
			v += field_addr;
			break;
		default:
			return -EINVAL;	/* textrel/datarel/funcrel: not in FDEs here */
		}
	}
	*out = v;
	return 0;
}

/* The FDE pointer encoding from a CIE's augmentation ("zR", "zPLR",
 * "zRS", ...), or -1 when it cannot be known. */
static int cie_fde_encoding(const Dwarf_CIE *cie)
{
	const char *a = cie->augmentation;
	const uint8_t *d = cie->augmentation_data, *end;

	if (!a)
		return -1;
	if (a[0] == '\0')
		return PE_ABSPTR;
	if (a[0] != 'z' || !d)
		return -1;
	end = d + cie->augmentation_data_size;
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			return d < end ? *d : -1;
		case 'P': {
			uint64_t skip;
			int penc;

			if (d >= end)
				return -1;
			penc = *d++;
			if (read_encoded(&d, end, penc & 0x7f, 0, false, &skip))
				return -1;
			break;
		}
		case 'L':
			if (d >= end)
				return -1;
			d++;
			break;
		case 'S':
		case 'B':
		case 'G':
			break;
		default:
			return -1;
		}
	}
	return PE_ABSPTR;	/* no 'R': absolute pointers */
}

/* ------------------------------------------------------------ programs */

/*
 * Checks a CFA program before libdw runs it (DWARF 5 6.4.2): every opcode
 * known and complete, every register operand at most CFI_MAX_REG, and
 * DW_CFA_remember_state nested at most CFI_MAX_REMEMBER deep.  libdw sizes
 * its register array by the highest register a program names and keeps a
 * copy per remembered state, so one crafted FDE could otherwise make it
 * allocate (and touch) gigabytes.  Interprets nothing.  0 or -EINVAL.
 */
#define CFI_MAX_REG 255		/* x86-64 DWARF numbers end at 130 (k7) */
#define CFI_MAX_REMEMBER 64

static int check_reg(const uint8_t **p, const uint8_t *end)
{
	uint64_t r;

	return read_uleb(p, end, &r) || r > CFI_MAX_REG ? -EINVAL : 0;
}

static int skip_uleb(const uint8_t **p, const uint8_t *end)
{
	uint64_t v;

	return read_uleb(p, end, &v);
}

static int skip_block(const uint8_t **p, const uint8_t *end)
{
	uint64_t n;

	if (read_uleb(p, end, &n) || n > (uint64_t)(end - *p))
		return -EINVAL;
	*p += n;
	return 0;
}

static int check_program(const uint8_t *p, const uint8_t *end, int enc, uint32_t *remember)
{
	while (p < end) {
		uint8_t op = *p++;
		uint64_t skip;
		int err = 0;

		switch (op & 0xc0) {
		case 0x40:		/* advance_loc */
			continue;
		case 0x80:		/* offset: reg in the opcode */
			err = skip_uleb(&p, end);
			break;
		case 0xc0:		/* restore */
			break;
		default:
			switch (op) {
			case 0x00: case 0x2d:	/* nop, GNU_window_save */
				break;
			case 0x0a:		/* remember_state: a copy of the rules */
				if (++*remember > CFI_MAX_REMEMBER)
					return -EINVAL;
				break;
			case 0x0b:		/* restore_state: one copy fewer */
				if (*remember)
					--*remember;
				break;
			case 0x01:		/* set_loc */
				err = read_encoded(&p, end, enc, 0, false, &skip);
				break;
			case 0x02:
				err = read_fixed(&p, end, 1, &skip);
				break;
			case 0x03:
				err = read_fixed(&p, end, 2, &skip);
				break;
			case 0x04:
				err = read_fixed(&p, end, 4, &skip);
				break;
			case 0x05: case 0x11: case 0x14: case 0x15: case 0x2f: case 0x0c: case 0x12:
				/* reg, then a (s)leb operand */
				err = check_reg(&p, end);
				if (!err)
					err = skip_uleb(&p, end);
				break;
			case 0x06: case 0x07: case 0x08: case 0x0d:	/* one register */
				err = check_reg(&p, end);
				break;
			case 0x09:		/* register: two registers */
				err = check_reg(&p, end);
				if (!err)
					err = check_reg(&p, end);
				break;
			case 0x0e: case 0x13: case 0x2e:	/* one (s)leb */
				err = skip_uleb(&p, end);
				break;
			case 0x0f:		/* def_cfa_expression: a block */
				err = skip_block(&p, end);
				break;
			case 0x10: case 0x16:	/* (val_)expression: reg, block */
				err = check_reg(&p, end);
				if (!err)
					err = skip_block(&p, end);
				break;
			default:
				return -EINVAL;
			}
		}
		if (err)
			return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------ FDE list */

static int cies_add(struct cfi_walk *w, uint64_t off, int enc, bool z)
{
	if (w->n_cies == w->cap_cies) {
		size_t cap = w->cap_cies ? 2 * w->cap_cies : 64;
		struct cfi_cie *c = realloc(w->cies, cap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		w->cies = c;
		w->cap_cies = cap;
	}
	w->cies[w->n_cies].off = off;
	w->cies[w->n_cies].enc = enc;
	w->cies[w->n_cies].z = z;
	w->n_cies++;
	return 0;
}

static int cie_cmp(const void *a, const void *b)
{
	const struct cfi_cie *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static const struct cfi_cie *cies_find(const struct cfi_walk *w, uint64_t off)
{
	size_t lo = 0, hi = w->n_cies;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->cies[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->n_cies && w->cies[lo].off == off ? &w->cies[lo] : NULL;
}

static bool in_exec(const struct cfi_walk *w, uint64_t a, uint64_t b)
{
	for (int i = 0; i < w->n_x; i++)
		if (a >= w->x_lo[i] && b <= w->x_hi[i])
			return true;
	return false;
}

static int fdes_add(struct cfi_walk *w, uint64_t start, uint64_t end, bool debug)
{
	if (w->n >= SP_CFI_MAX_FDES)
		return -E2BIG;
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 1024;
		struct cfi_fde *f = realloc(w->fdes, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		w->fdes = f;
		w->cap = cap;
	}
	w->fdes[w->n].start = start;
	w->fdes[w->n].end = end;
	w->fdes[w->n].debug = debug;
	w->n++;
	return 0;
}

/* All CIEs, then all FDEs of one section.  -EINVAL on any malformed entry. */
static int walk_section(struct cfi_walk *w, const unsigned char *ident, const struct cfi_sec *sec)
{
	Dwarf_Off off, next;
	Dwarf_CFI_Entry e;
	size_t first_cie = w->n_cies;
	int r, err;

	for (int pass = 0; pass < 2; pass++) {
		for (off = 0; off < sec->data->d_size; off = next) {
			r = dwarf_next_cfi(ident, sec->data, sec->eh, off, &next, &e);
			if (r == 1)
				break;		/* terminator or end of data */
			if (r != 0 || next <= off)
				return -EINVAL;
			if (dwarf_cfi_cie_p(&e)) {
				int enc = cie_fde_encoding(&e.cie);
				uint32_t rem = 0;

				if (pass)
					continue;
				/* A CIE whose program libdw must not run: unusable. */
				if (check_program(e.cie.initial_instructions,
						  e.cie.initial_instructions_end,
						  enc < 0 ? PE_ABSPTR : enc, &rem))
					enc = -1;
				err = cies_add(w, off, enc,
					       e.cie.augmentation && e.cie.augmentation[0] == 'z');
				if (err)
					return err;
				continue;
			}
			if (pass == 0)
				continue;
			{
				const uint8_t *p = e.fde.start, *end = e.fde.end;
				const struct cfi_cie *cie = cies_find(w, e.fde.CIE_pointer);
				uint64_t start, len, field;
				uint32_t rem = 0;
				int enc;

				if (!p || !end || p > end)
					return -EINVAL;
				field = sec->addr + (uint64_t)(p - (const uint8_t *)sec->data->d_buf);
				enc = sec->eh ? (cie ? cie->enc : -1) : PE_UDATA8;
				if (enc < 0 || enc == PE_OMIT || (sec->eh && !cie) ||
				    (!sec->eh && cie && cie->enc < 0))
					return -EINVAL;
				if (read_encoded(&p, end, enc, field, true, &start) ||
				    read_encoded(&p, end, enc & PE_FMT, 0, false, &len))
					return -EINVAL;
				/* The instructions after the augmentation data. */
				if (sec->eh && cie->z && skip_block(&p, end))
					return -EINVAL;
				if (check_program(p, end, enc, &rem))
					return -EINVAL;
				if (!len)
					continue;
				if (start + len < start)
					return -EINVAL;
				/* FDEs of code discarded at link time point at 0 or
				 * outside the executable segments: no code there. */
				if (!in_exec(w, start, start + len))
					continue;
				err = fdes_add(w, start, start + len, !sec->eh);
				if (err)
					return err;
			}
		}
		if (pass == 0 && w->n_cies > first_cie)
			qsort(w->cies + first_cie, w->n_cies - first_cie, sizeof(*w->cies), cie_cmp);
	}
	return 0;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct cfi_fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->debug - y->debug;	/* .eh_frame first */
}

/* ------------------------------------------------------------ rules */

static bool op_breg(const Dwarf_Op *op, unsigned *reg, int64_t *off)
{
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = (int64_t)op->number;
		return true;
	}
	if (op->atom == DW_OP_bregx) {
		*reg = (unsigned)op->number;
		*off = (int64_t)op->number2;
		return true;
	}
	return false;
}

/* The 9-operation PLT expression binutils emits for .plt:
 * breg7 8; breg16 0; lit15; and; lit11; ge; lit3; shl; plus. */
static bool is_plt_expr(const Dwarf_Op *o, size_t n)
{
	static const uint8_t atoms[] = {
		DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, DW_OP_lit11, DW_OP_ge,
		DW_OP_lit3, DW_OP_shl, DW_OP_plus,
	};

	if (n != sizeof(atoms))
		return false;
	for (size_t i = 0; i < n; i++)
		if (o[i].atom != atoms[i])
			return false;
	return o[0].number == 8 && o[1].number == 0;
}

/* A register rule "saved at CFA + n" -> n; false otherwise. */
static bool reg_at_cfa(const Dwarf_Op *o, size_t n, int64_t *off)
{
	if (n == 1 && o[0].atom == DW_OP_call_frame_cfa) {
		*off = 0;
		return true;
	}
	if (n == 2 && o[0].atom == DW_OP_call_frame_cfa && o[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)o[1].number;
		return true;
	}
	return false;
}

static int classify(Dwarf_Frame *f, bool signal, struct sp_unw_rule *r)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	unsigned reg;
	int64_t off, k, roff;

	memset(r, 0, sizeof(*r));
	if (signal) {
		/* __restore_rt (glibc, musl): the kernel's rt_sigframe; the
		 * unwinder reads uc_mcontext itself rather than these rows. */
		r->op = SP_UNW_OP_SIGNAL;
		return 0;
	}
	/* Return address: at CFA - 8, or undefined (no caller). */
	if (dwarf_frame_register(f, DW_X86_RA, mem, &ops, &n) != 0)
		return -EINVAL;
	if (n == 0 && ops == mem) {
		r->op = SP_UNW_OP_STOP;
		return 0;
	}
	if (!reg_at_cfa(ops, n, &off) || off != -8)
		goto unsupported;

	if (dwarf_frame_cfa(f, &ops, &n) != 0)
		return -EINVAL;
	if (n == 0) {
		r->op = SP_UNW_OP_STOP;	/* CFA undefined */
		return 0;
	}
	if (n == 1 && op_breg(&ops[0], &reg, &off)) {
		if (reg > 15 || off < INT32_MIN || off > INT32_MAX)
			goto unsupported;
		r->op = reg == DW_X86_RSP ? SP_UNW_OP_RSP :
			reg == DW_X86_RBP ? SP_UNW_OP_RBP : SP_UNW_OP_REG;
		r->reg = r->op == SP_UNW_OP_REG ? reg : 0;	/* one word per rule */
		r->cfa_off = (int32_t)off;
	} else if ((n == 2 || n == 3) && op_breg(&ops[0], &reg, &off) && ops[1].atom == DW_OP_deref &&
		   (n == 2 || ops[2].atom == DW_OP_plus_uconst)) {
		k = n == 3 ? (int64_t)ops[2].number : 0;
		if (reg > 15 || off < INT32_MIN || off > INT32_MAX || k < 0 || k % 8 || k / 8 > 15)
			goto unsupported;
		r->op = SP_UNW_OP_DEREF;
		r->reg = reg | (uint8_t)((k / 8) << 4);
		r->cfa_off = (int32_t)off;
	} else if (is_plt_expr(ops, n)) {
		r->op = SP_UNW_OP_PLT;
	} else {
		goto unsupported;
	}

	/* The caller's rbp. */
	if (dwarf_frame_register(f, DW_X86_RBP, mem, &ops, &n) != 0)
		return -EINVAL;
	if (n == 0) {
		r->op |= (ops == mem ? SP_UNW_RBP_UNDEF : SP_UNW_RBP_SAME) << 4;
	} else if (reg_at_cfa(ops, n, &roff)) {
		if (roff < INT16_MIN || roff > INT16_MAX)
			r->op |= SP_UNW_RBP_UNDEF << 4;
		else {
			r->op |= SP_UNW_RBP_CFA << 4;
			r->rbp_off = (int16_t)roff;
		}
	} else if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa && op_breg(&ops[1], &reg, &roff) &&
		   (reg == DW_X86_RBP || (reg == DW_X86_RSP && (r->op & 15) == SP_UNW_OP_RSP))) {
		/* DW_CFA_expression: saved at rbp + n, or at rsp + n, which
		 * with CFA = rsp + c is CFA + n - c. */
		if (reg == DW_X86_RSP)
			roff -= r->cfa_off;
		if (roff < INT16_MIN || roff > INT16_MAX)
			r->op |= SP_UNW_RBP_UNDEF << 4;
		else {
			r->op |= (reg == DW_X86_RBP ? SP_UNW_RBP_RBP : SP_UNW_RBP_CFA) << 4;
			r->rbp_off = (int16_t)roff;
		}
	} else {
		/* In another register, or a value expression: lost.  Only a
		 * caller whose CFA is rbp-based needs it; it then ends. */
		r->op |= SP_UNW_RBP_UNDEF << 4;
	}
	return 0;
unsupported:
	memset(r, 0, sizeof(*r));
	r->op = SP_UNW_OP_UNSUPPORTED;
	return 0;
}

/* ------------------------------------------------------------ sections */

static void find_exec(Elf *elf, struct cfi_walk *w)
{
	size_t n = 0;

	if (elf_getphdrnum(elf, &n))
		return;
	for (size_t i = 0; i < n && w->n_x < 16; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			continue;
		w->x_lo[w->n_x] = ph.p_vaddr;
		w->x_hi[w->n_x] = ph.p_vaddr + ph.p_memsz;
		w->n_x++;
	}
}

/* .eh_frame through PT_GNU_EH_FRAME when section headers are missing:
 * eh_frame_ptr from the header, the data up to the end of its PT_LOAD. */
static int eh_from_phdr(Elf *elf, struct cfi_sec *sec)
{
	GElf_Phdr hdr, ph;
	size_t n = 0;
	Elf_Data *d;
	const uint8_t *p, *end;
	uint64_t eh;
	bool found = false;

	if (elf_getphdrnum(elf, &n))
		return -ENOENT;
	for (size_t i = 0; i < n; i++)
		if (gelf_getphdr(elf, (int)i, &hdr) && hdr.p_type == PT_GNU_EH_FRAME) {
			found = true;
			break;
		}
	if (!found || hdr.p_filesz < 8)
		return -ENOENT;
	d = elf_getdata_rawchunk(elf, (int64_t)hdr.p_offset, 8 + 8, ELF_T_BYTE);
	if (!d)
		return -EINVAL;
	p = d->d_buf;
	end = p + d->d_size;
	if (p[0] != 1)
		return -EINVAL;
	{
		int enc = p[1];
		const uint8_t *q = p + 4;

		if (read_encoded(&q, end, enc, hdr.p_vaddr + 4, true, &eh))
			return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (eh >= ph.p_vaddr && eh < ph.p_vaddr + ph.p_filesz) {
			uint64_t off = ph.p_offset + (eh - ph.p_vaddr);
			uint64_t size = ph.p_vaddr + ph.p_filesz - eh;

			d = elf_getdata_rawchunk(elf, (int64_t)off, size, ELF_T_BYTE);
			if (!d)
				return -EINVAL;
			sec->data = d;
			sec->addr = eh;
			sec->eh = true;
			return 0;
		}
	}
	return -EINVAL;
}

/* dwarf_begin_elf, needed for .debug_frame, reads every .debug_* section
 * of the file into memory (without parsing): above this the .debug_frame
 * of a file is not used (counted). */
#define CFI_MAX_DEBUG_BYTES (64ull << 20)

static void find_sections(Elf *elf, struct cfi_sec *eh, struct cfi_sec *dbg,
			  struct sp_cfi_stats *st)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	uint64_t debug_bytes = 0;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    (sh.sh_flags & SHF_COMPRESSED))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strncmp(name, ".debug_", 7))
			debug_bytes += sh.sh_size;
		if (!strcmp(name, ".eh_frame") && !eh->data) {
			eh->data = elf_getdata(scn, NULL);
			eh->addr = sh.sh_addr;
			eh->eh = true;
		} else if (!strcmp(name, ".debug_frame") && !dbg->data) {
			dbg->data = elf_getdata(scn, NULL);
			dbg->addr = 0;
			dbg->eh = false;
		}
	}
	if (eh->data && (!eh->data->d_buf || !eh->data->d_size))
		eh->data = NULL;
	if (dbg->data && (!dbg->data->d_buf || !dbg->data->d_size))
		dbg->data = NULL;
	if (dbg->data && debug_bytes > CFI_MAX_DEBUG_BYTES) {
		st->debug_frame_skipped = 1;
		dbg->data = NULL;
	}
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ------------------------------------------------------------ extract */

int sp_cfi__extract(Elf *elf, const struct sp_cfi_limits *lim, sp_cfi_row_fn fn, void *ctx,
		    struct sp_cfi_stats *st)
{
	struct sp_cfi_stats local;
	struct cfi_walk w = { 0 };
	struct cfi_sec eh = { 0 }, dbg = { 0 };
	Dwarf_CFI *eh_cfi = NULL, *dbg_cfi = NULL;
	Dwarf *dw = NULL;
	const unsigned char *ident;
	uint64_t covered = 0, t0 = 0, deadline = 0, max_rows = lim ? lim->max_rows : 0;
	size_t nident;
	int err = 0;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	ident = (const unsigned char *)elf_getident(elf, &nident);
	if (!ident || nident < EI_NIDENT || ident[EI_CLASS] != ELFCLASS64 ||
	    ident[EI_DATA] != ELFDATA2LSB)
		return -EINVAL;
	{
		GElf_Ehdr eh_;

		if (!gelf_getehdr(elf, &eh_) || eh_.e_machine != EM_X86_64)
			return -EINVAL;
	}
	if (lim && lim->max_cpu_ns) {
		t0 = thread_cpu_ns();
		deadline = t0 + lim->max_cpu_ns;
	}
	find_exec(elf, &w);
	find_sections(elf, &eh, &dbg, st);
	if (!eh.data && eh_from_phdr(elf, &eh) == -EINVAL)
		return -EINVAL;
	if (!eh.data && !dbg.data)
		return -ENOENT;
	if (eh.data) {
		st->eh_frame_bytes = eh.data->d_size;
		err = walk_section(&w, ident, &eh);
		if (err)
			goto out;
	}
	if (dbg.data) {
		st->debug_frame_bytes = dbg.data->d_size;
		err = walk_section(&w, ident, &dbg);
		if (err)
			goto out;
	}
	if (!w.n) {
		err = -ENOENT;
		goto out;
	}
	qsort(w.fdes, w.n, sizeof(*w.fdes), fde_cmp);
	if (eh.data) {
		eh_cfi = dwarf_getcfi_elf(elf);
		if (!eh_cfi) {
			err = -EINVAL;
			goto out;
		}
	}
	if (dbg.data) {
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		dbg_cfi = dw ? dwarf_getcfi(dw) : NULL;
	}

	for (size_t i = 0; i < w.n && !err; i++) {
		const struct cfi_fde *fde = &w.fdes[i];
		Dwarf_CFI *cfi = fde->debug ? dbg_cfi : eh_cfi;
		uint64_t a = fde->start, lim_end = fde->end;
		uint32_t rows = 0;

		/* Overlaps (a .debug_frame FDE for code .eh_frame covers, or
		 * duplicated FDEs): the first one describing a pc wins. */
		if (a < covered)
			a = covered;
		if (a >= lim_end)
			continue;
		if (!cfi)
			continue;	/* .debug_frame libdw would not open */
		st->fdes++;
		st->fdes_debug_frame += fde->debug;
		while (a < lim_end) {
			struct sp_cfi_row row;
			Dwarf_Frame *f = NULL;
			Dwarf_Addr s, e;
			bool sig = false;

			if (rows == SP_CFI_MAX_FDE_ROWS) {
				/* The rest of an absurdly long FDE: frame pointer. */
				st->rows_capped++;
				memset(&row, 0, sizeof(row));
				row.start = a;
				row.end = lim_end;
				row.rule.op = SP_UNW_OP_NONE;
				err = fn(&row, ctx);
				st->rows++;
				a = lim_end;
				break;
			}
			if (dwarf_cfi_addrframe(cfi, a, &f) != 0 ||
			    dwarf_frame_info(f, &s, &e, &sig) < 0 || e <= a) {
				free(f);
				err = -EINVAL;
				break;
			}
			memset(&row, 0, sizeof(row));
			err = classify(f, sig, &row.rule);
			free(f);
			if (err)
				break;
			row.start = a;
			row.end = e < lim_end ? e : lim_end;
			if ((row.rule.op & 15) == SP_UNW_OP_UNSUPPORTED)
				st->rows_unsupported++;
			else if ((row.rule.op & 15) == SP_UNW_OP_REG ||
				 ((row.rule.op & 15) == SP_UNW_OP_DEREF &&
				  (row.rule.reg & 15) != DW_X86_RSP && (row.rule.reg & 15) != DW_X86_RBP))
				st->rows_leaf_only++;
			st->rows++;
			rows++;
			err = fn(&row, ctx);
			if (err)
				break;
			a = row.end;
			if (max_rows && st->rows > max_rows) {
				err = -E2BIG;
				break;
			}
			if (deadline && !(st->rows % CFI_CHECK_EVERY) && thread_cpu_ns() > deadline) {
				err = -ETIME;
				break;
			}
		}
		if (lim_end > covered)
			covered = lim_end;
	}
out:
	if (eh_cfi)
		dwarf_cfi_end(eh_cfi);
	if (dw)
		dwarf_end(dw);		/* owns dbg_cfi */
	free(w.fdes);
	free(w.cies);
	return err;
}
