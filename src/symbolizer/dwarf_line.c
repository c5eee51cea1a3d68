// SPDX-License-Identifier: MIT
/*
 * dwarf_line.c - see dwarf_line.h.
 *
 * Byte layout of a line-number program unit (DWARF 5 6.2.4; 2-4 differ
 * where noted), little-endian:
 *   unit_length        4 bytes, or 0xffffffff + 8 bytes (64-bit DWARF:
 *                      offsets below are then 8 bytes)
 *   version            2
 *   address_size       1   (v5 only)
 *   seg_selector_size  1   (v5 only)
 *   header_length      4 / 8: bytes from after this field to the program
 *   min_inst_length    1
 *   max_ops_per_inst   1   (v4+)
 *   default_is_stmt    1
 *   line_base          1 (signed)
 *   line_range         1
 *   opcode_base        1
 *   std_opcode_lengths opcode_base - 1 bytes
 *   v2-4: include_directories (NUL-terminated strings, then an empty one),
 *         file_names (string, uleb dir, uleb mtime, uleb length; then an
 *         empty string)
 *   v5:   directory_entry_format_count 1, (uleb content, uleb form) pairs,
 *         directories_count uleb, entries; the same for file names
 *   the program: special opcodes (>= opcode_base), standard opcodes
 *         1..opcode_base-1, extended opcodes (0, uleb length, sub-opcode).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "byte_reader.h"
#include "dwarf_line.h"
#include "grow.h"

/* ------------------------------------------------------------ reading */

/* The string at off of a string section, or NULL. */
static const char *sec_str(const uint8_t *sec, size_t len, uint64_t off)
{
	if (!sec || off >= len || !memchr(sec + off, 0, len - off))
		return NULL;
	return (const char *)sec + off;
}

/* ------------------------------------------------------------ header */

struct hdr {
	uint16_t version;
	uint8_t addr_size;
	bool dwarf64;
	uint8_t min_inst, max_ops, default_stmt, line_range, opcode_base;
	int8_t line_base;
	const uint8_t *std_lengths;
};

/* One v5 entry-format value: a string (path) or a number (directory
 * index); other content is skipped.  -EINVAL for a form not read here. */
static int v5_value(const struct sp_dline_sections *s, const struct hdr *h, struct sp_rd *r,
		    uint64_t form, const char **str, uint64_t *num)
{
	unsigned off = h->dwarf64 ? 8 : 4;

	*str = NULL;
	*num = 0;
	switch (form) {
	case DW_FORM_string:
		*str = sp_rd__str(r);
		break;
	case DW_FORM_line_strp:
		*str = sec_str(s->line_str, s->line_str_len, sp_rd__n(r, off));
		if (!*str)
			return -EINVAL;
		break;
	case DW_FORM_strp:
		*str = sec_str(s->str, s->str_len, sp_rd__n(r, off));
		if (!*str)
			return -EINVAL;
		break;
	case DW_FORM_udata:
		*num = sp_rd__uleb(r);
		break;
	case DW_FORM_sdata:
		*num = (uint64_t)sp_rd__sleb(r);
		break;
	case DW_FORM_data1:
		*num = sp_rd__n(r, 1);
		break;
	case DW_FORM_data2:
		*num = sp_rd__n(r, 2);
		break;
	case DW_FORM_data4:
		*num = sp_rd__n(r, 4);
		break;
	case DW_FORM_data8:
		*num = sp_rd__n(r, 8);
		break;
	case DW_FORM_data16:
		sp_rd__n(r, 8);
		sp_rd__n(r, 8);
		break;
	case DW_FORM_block: {
		uint64_t n = sp_rd__uleb(r);

		if (n > (uint64_t)(r->end - r->p))
			return -EINVAL;
		r->p += n;
		break;
	}
	default:	/* strx, strp_sup, ...: need the unit's attributes */
		return -EINVAL;
	}
	return r->bad ? -EINVAL : 0;
}

/* A v5 directory or file table.  dirs: only paths; files: path and
 * directory index. */
static int v5_table(const struct sp_dline_sections *s, const struct hdr *h, struct sp_rd *r,
		    struct sp_dline_table *t, bool files)
{
	uint64_t fmt[2 * 16], count, i;
	uint8_t n_fmt = (uint8_t)sp_rd__n(r, 1);
	uint32_t cap = 0;
	int err;

	if (n_fmt > 16)
		return -EINVAL;
	for (i = 0; i < n_fmt; i++) {
		fmt[2 * i] = sp_rd__uleb(r);
		fmt[2 * i + 1] = sp_rd__uleb(r);
	}
	count = sp_rd__uleb(r);
	/* every entry takes at least one byte per format */
	if (r->bad || (n_fmt && count > (uint64_t)(r->end - r->p)) || count > 1u << 24)
		return -EINVAL;
	for (i = 0; i < count; i++) {
		const char *path = NULL;
		uint64_t dir = 0;

		for (uint8_t j = 0; j < n_fmt; j++) {
			const char *str;
			uint64_t num;

			err = v5_value(s, h, r, fmt[2 * j + 1], &str, &num);
			if (err)
				return err;
			if (fmt[2 * j] == DW_LNCT_path)
				path = str;
			else if (fmt[2 * j] == DW_LNCT_directory_index)
				dir = num;
		}
		if (files) {
			if (sp_grow((void **)&t->files, &cap, t->n_files + 1, sizeof(*t->files)))
				return -ENOMEM;
			t->files[t->n_files++] = (struct sp_dline_file){
				.name = path, .dir = dir > UINT32_MAX ? UINT32_MAX : (uint32_t)dir };
		} else {
			if (sp_grow((void **)&t->dirs, &cap, t->n_dirs + 1, sizeof(*t->dirs)))
				return -ENOMEM;
			t->dirs[t->n_dirs++] = path;
		}
	}
	return 0;
}

/* v2-4 include_directories and file_names. */
static int v4_tables(struct sp_rd *r, struct sp_dline_table *t, uint32_t *fcap)
{
	uint32_t dcap = 0;
	const char *s;

	if (sp_grow((void **)&t->dirs, &dcap, 1, sizeof(*t->dirs)))
		return -ENOMEM;
	t->dirs[t->n_dirs++] = NULL;	/* 0: the compilation directory */
	while ((s = sp_rd__str(r)) && *s) {
		if (sp_grow((void **)&t->dirs, &dcap, t->n_dirs + 1, sizeof(*t->dirs)))
			return -ENOMEM;
		t->dirs[t->n_dirs++] = s;
	}
	if (sp_grow((void **)&t->files, fcap, 1, sizeof(*t->files)))
		return -ENOMEM;
	t->files[t->n_files++] = (struct sp_dline_file){ 0 };	/* 0 is unused */
	while ((s = sp_rd__str(r)) && *s) {
		uint64_t dir = sp_rd__uleb(r);

		sp_rd__uleb(r);	/* mtime */
		sp_rd__uleb(r);	/* length */
		if (sp_grow((void **)&t->files, fcap, t->n_files + 1, sizeof(*t->files)))
			return -ENOMEM;
		t->files[t->n_files++] = (struct sp_dline_file){
			.name = s, .dir = dir > UINT32_MAX ? UINT32_MAX : (uint32_t)dir };
	}
	return r->bad ? -EINVAL : 0;
}

/* ------------------------------------------------------------ program */

/* A row while decoding: address and row together. */
struct arow {
	uint64_t addr;
	struct sp_dline_row r;
};

struct seq {
	uint32_t begin, end;	/* rows [begin, end), end row included */
	uint64_t lo, hi;
};

struct prog {
	struct arow *rows;
	uint32_t n, cap;
	uint64_t *order;	/* program index of each row, for the slow sort */
	struct seq *seqs;
	uint32_t n_seqs, cap_seqs;
	uint32_t seq_begin;
	uint32_t clamped;
};

static inline __attribute__((always_inline)) int
emit(struct prog *g, uint64_t addr, uint64_t file, uint64_t line, uint64_t col, bool end)
{
	struct arow *w;

	if (g->n >= SP_DLINE_MAX_ROWS)
		return -E2BIG;
	if (g->n >= g->cap && sp_grow((void **)&g->rows, &g->cap, g->n + 1, sizeof(*g->rows)))
		return -ENOMEM;
	w = &g->rows[g->n++];
	w->addr = addr;
	w->r.line = line > UINT32_MAX ? UINT32_MAX : (uint32_t)line;
	w->r.col = col > 0xffff ? 0xffff : (uint16_t)col;
	w->r.file = file >= SP_DLINE_FILE_BIG ? SP_DLINE_FILE_BIG : (uint16_t)file;
	if (col > 0xffff || file >= SP_DLINE_FILE_BIG || line > UINT32_MAX)
		g->clamped++;
	if (end) {
		w->r.file |= SP_DLINE_END;
		if (sp_grow((void **)&g->seqs, &g->cap_seqs, g->n_seqs + 1, sizeof(*g->seqs)))
			return -ENOMEM;
		g->seqs[g->n_seqs++] = (struct seq){
			.begin = g->seq_begin, .end = g->n,
			.lo = g->rows[g->seq_begin].addr, .hi = addr };
		g->seq_begin = g->n;
	}
	return 0;
}

static int run_program(const struct hdr *h, struct sp_rd *r, struct sp_dline_table *t,
		       uint32_t *fcap, struct prog *g)
{
	uint64_t addr = 0, file = 1, line = 1, col = 0, op_index = 0;
	/* special opcodes are most of a program: their operation advance and
	 * line delta once, not a division and a modulo per row */
	uint8_t sp_adv[256];
	int16_t sp_line[256];
	int err = 0;

	for (unsigned op = h->opcode_base; op < 256; op++) {
		unsigned adj = op - h->opcode_base;

		sp_adv[op] = (uint8_t)(adj / h->line_range);
		sp_line[op] = (int16_t)(h->line_base + (int)(adj % h->line_range));
	}
	while (!err && r->p < r->end) {
		uint8_t op = *r->p++;
		uint64_t adv = 0;
		bool row = false;

		if (op >= h->opcode_base) {
			adv = sp_adv[op];
			line += (uint64_t)(int64_t)sp_line[op];
			if (h->max_ops <= 1) {	/* the common case, in one step */
				addr += h->min_inst * adv;
				err = emit(g, addr, file, line & 0xffffffffull, col, false);
				continue;
			}
			row = true;
		} else if (op == 0) {
			uint64_t len = sp_rd__uleb(r);
			const uint8_t *next;
			uint8_t sub;

			if (r->bad || len == 0 || len > (uint64_t)(r->end - r->p))
				return -EINVAL;
			next = r->p + len;
			sub = (uint8_t)sp_rd__n(r, 1);
			switch (sub) {
			case DW_LNE_end_sequence:
				err = emit(g, addr, file, line, col, true);
				addr = 0, file = 1, line = 1, col = 0, op_index = 0;
				break;
			case DW_LNE_set_address:
				if (len - 1 != 4 && len - 1 != 8)
					return -EINVAL;
				addr = sp_rd__n(r, (unsigned)(len - 1));
				op_index = 0;
				break;
			case DW_LNE_define_file: {
				const char *s = sp_rd__str(r);
				uint64_t dir = sp_rd__uleb(r);

				if (!s || h->version >= 5)
					break;
				if (sp_grow((void **)&t->files, fcap, t->n_files + 1, sizeof(*t->files)))
					return -ENOMEM;
				t->files[t->n_files++] = (struct sp_dline_file){
					.name = s,
					.dir = dir > UINT32_MAX ? UINT32_MAX : (uint32_t)dir };
				break;
			}
			default:	/* set_discriminator, vendor: nothing kept */
				break;
			}
			r->p = next;
			continue;
		} else {
			switch (op) {
			case DW_LNS_copy:
				row = true;
				break;
			case DW_LNS_advance_pc:
				adv = sp_rd__uleb(r);
				break;
			case DW_LNS_advance_line:
				line += (uint64_t)sp_rd__sleb(r);
				break;
			case DW_LNS_set_file:
				file = sp_rd__uleb(r);
				break;
			case DW_LNS_set_column:
				col = sp_rd__uleb(r);
				break;
			case DW_LNS_const_add_pc:
				adv = (255u - h->opcode_base) / h->line_range;
				break;
			case DW_LNS_fixed_advance_pc:
				addr += sp_rd__n(r, 2);
				op_index = 0;
				break;
			case DW_LNS_negate_stmt:
			case DW_LNS_set_basic_block:
			case DW_LNS_set_prologue_end:
			case DW_LNS_set_epilogue_begin:
				break;
			default:	/* set_isa and unknown: skip their operands */
				for (uint8_t i = 0; i < h->std_lengths[op - 1]; i++)
					sp_rd__uleb(r);
				break;
			}
		}
		if (adv) {
			if (h->max_ops <= 1) {
				addr += h->min_inst * adv;
			} else {
				addr += h->min_inst * ((op_index + adv) / h->max_ops);
				op_index = (op_index + adv) % h->max_ops;
			}
		}
		if (row)
			err = emit(g, addr, file, line & 0xffffffffull, col, false);
		if (r->bad)
			return -EINVAL;
	}
	return err;
}

/* ------------------------------------------------------------ sorting */

static int seq_cmp(const void *a, const void *b)
{
	const struct seq *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* libdw's order: address, an end of sequence first, program order. */
static int row_cmp(const void *a, const void *b, void *ctx)
{
	const struct arow *rows = ctx;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const struct arow *x = &rows[i], *y = &rows[j];
	bool ex = x->r.file & SP_DLINE_END, ey = y->r.file & SP_DLINE_END;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (ex != ey)
		return ex ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* The rows of the sequences (g->seq_begin of them) in lookup order: in
 * place when the program wrote its sequences in address order, without
 * overlap and going up inside (the usual case: *out = g->rows); sequences
 * in another order are concatenated by address into a new array; when
 * they overlap, every row is sorted.  *out is g->rows or a new array. */
static int order_rows(struct prog *g, struct arow **out)
{
	uint32_t i, w = 0;
	bool overlap = false, in_order = true;
	struct arow *o;

	for (i = 0; i < g->n_seqs && !overlap; i++) {
		for (uint32_t k = g->seqs[i].begin + 1; k < g->seqs[i].end && !overlap; k++)
			overlap = g->rows[k].addr < g->rows[k - 1].addr;
		if (i && g->seqs[i].lo < g->seqs[i - 1].hi)
			in_order = false;
	}
	*out = g->rows;
	if (!overlap && in_order)
		return 0;
	qsort(g->seqs, g->n_seqs, sizeof(*g->seqs), seq_cmp);
	for (i = 1; i < g->n_seqs && !overlap; i++)
		overlap = g->seqs[i].lo < g->seqs[i - 1].hi;
	o = malloc((size_t)g->seq_begin * sizeof(*o) + 1);
	if (!o)
		return -ENOMEM;
	if (!overlap) {
		for (i = 0; i < g->n_seqs; i++) {
			uint32_t n = g->seqs[i].end - g->seqs[i].begin;

			memcpy(&o[w], &g->rows[g->seqs[i].begin], n * sizeof(*o));
			w += n;
		}
	} else {
		uint32_t *idx = malloc((size_t)g->seq_begin * sizeof(*idx) + 1);

		if (!idx) {
			free(o);
			return -ENOMEM;
		}
		for (i = 0; i < g->seq_begin; i++)
			idx[i] = i;
		qsort_r(idx, g->seq_begin, sizeof(*idx), row_cmp, g->rows);
		for (i = 0; i < g->seq_begin; i++)
			o[i] = g->rows[idx[i]];
		free(idx);
	}
	*out = o;
	return 0;
}

static bool same_answer(const struct arow *a, const struct arow *b)
{
	return !(a->r.file & SP_DLINE_END) && a->r.file == b->r.file &&
	       a->r.line == b->r.line && a->r.col == b->r.col;
}

/* Drops rows that never answer: of one address, a normal row beats an end
 * of sequence and the later normal row beats the earlier one (the order
 * libdw's sort gives); a row with the answer of the row before it adds
 * nothing. */
static uint32_t compact(struct arow *r, uint32_t n)
{
	uint32_t w = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (w && r[w - 1].addr == r[i].addr) {
			if (!(r[i].r.file & SP_DLINE_END) || (r[w - 1].r.file & SP_DLINE_END))
				r[w - 1] = r[i];
		} else {
			r[w++] = r[i];
		}
		if (w >= 2 && same_answer(&r[w - 2], &r[w - 1]))
			w--;
	}
	return w;
}

/* ------------------------------------------------------------ API */

int sp_dline__decode(const struct sp_dline_sections *s, uint64_t offset,
		     uint8_t cu_addr_size, struct sp_dline_table *out)
{
	struct sp_rd r = { 0 }, hr;
	struct hdr h = { 0 };
	struct prog g = { 0 };
	uint64_t unit_len, hdr_len;
	uint32_t fcap = 0;
	struct arow *rows = NULL;
	int err = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (!s->line || offset >= s->line_len)
		return -EINVAL;
	r.p = s->line + offset;
	r.end = s->line + s->line_len;
	unit_len = sp_rd__n(&r, 4);
	if (unit_len == 0xffffffffu) {
		h.dwarf64 = true;
		unit_len = sp_rd__n(&r, 8);
	} else if (unit_len >= 0xfffffff0u) {
		return -EINVAL;
	}
	if (r.bad || unit_len > (uint64_t)(r.end - r.p))
		return -EINVAL;
	r.end = r.p + unit_len;
	h.version = (uint16_t)sp_rd__n(&r, 2);
	if (h.version < 2 || h.version > 5)
		return -EINVAL;
	h.addr_size = cu_addr_size;
	if (h.version >= 5) {
		h.addr_size = (uint8_t)sp_rd__n(&r, 1);
		if (sp_rd__n(&r, 1) != 0)	/* segment selectors: not supported */
			return -EINVAL;
	}
	if (h.addr_size != 4 && h.addr_size != 8)
		return -EINVAL;
	hdr_len = sp_rd__n(&r, h.dwarf64 ? 8 : 4);
	if (r.bad || hdr_len > (uint64_t)(r.end - r.p))
		return -EINVAL;
	hr = (struct sp_rd){ .p = r.p, .end = r.p + hdr_len };
	r.p += hdr_len;			/* r: the program */
	h.min_inst = (uint8_t)sp_rd__n(&hr, 1);
	h.max_ops = h.version >= 4 ? (uint8_t)sp_rd__n(&hr, 1) : 1;
	h.default_stmt = (uint8_t)sp_rd__n(&hr, 1);
	h.line_base = (int8_t)sp_rd__n(&hr, 1);
	h.line_range = (uint8_t)sp_rd__n(&hr, 1);
	h.opcode_base = (uint8_t)sp_rd__n(&hr, 1);
	if (hr.bad || !h.line_range || !h.opcode_base ||
	    (size_t)(hr.end - hr.p) < (size_t)(h.opcode_base - 1))
		return -EINVAL;
	h.std_lengths = hr.p;
	hr.p += h.opcode_base - 1;
	out->version = h.version;
	if (h.version >= 5) {
		err = v5_table(s, &h, &hr, out, false);
		if (!err)
			err = v5_table(s, &h, &hr, out, true);
		fcap = out->n_files;
	} else {
		err = v4_tables(&hr, out, &fcap);
	}
	if (err)
		goto fail;
	/* a row takes a byte of program or more: one allocation, usually */
	g.cap = (uint32_t)((size_t)(r.end - r.p) / 2 + 16 > SP_DLINE_MAX_ROWS ? SP_DLINE_MAX_ROWS :
			   (size_t)(r.end - r.p) / 2 + 16);
	g.rows = malloc((size_t)g.cap * sizeof(*g.rows));
	err = -ENOMEM;
	if (!g.rows)
		goto fail;
	err = run_program(&h, &r, out, &fcap, &g);
	if (err)
		goto fail;
	/* rows after the last end of sequence belong to no sequence */
	err = order_rows(&g, &rows);
	if (err)
		goto fail;
	out->n_rows = compact(rows, g.seq_begin);
	out->addrs = malloc((size_t)out->n_rows * sizeof(*out->addrs) + 1);
	out->rows = malloc((size_t)out->n_rows * sizeof(*out->rows) + 1);
	err = -ENOMEM;
	if (!out->addrs || !out->rows)
		goto fail;
	for (uint32_t i = 0; i < out->n_rows; i++) {
		out->addrs[i] = rows[i].addr;
		out->rows[i] = rows[i].r;
	}
	out->clamped = g.clamped;
	err = sp_dline__index(out);
	if (err)
		goto fail;
	goto done;
fail:
	sp_dline__free(out);
done:
	if (rows != g.rows)
		free(rows);
	free(g.rows);
	free(g.seqs);
	return err;
}

int sp_dline__index(struct sp_dline_table *t)
{
	return sp_addr_index__build(&t->idx, t->addrs, t->n_rows);
}

const struct sp_dline_row *sp_dline__find(const struct sp_dline_table *t, uint64_t addr)
{
	uint32_t lo = sp_addr_index__upper(&t->idx, t->addrs, t->n_rows, addr);

	if (!lo || (t->rows[lo - 1].file & SP_DLINE_END))
		return NULL;
	return &t->rows[lo - 1];
}

const char *sp_dline__path(const struct sp_dline_table *t, uint32_t idx,
			   const char *comp_dir, char *buf, size_t len)
{
	const struct sp_dline_file *f;
	const char *dir = NULL, *p;
	bool dot = comp_dir && !strcmp(comp_dir, ".");
	int n;

	if (idx >= t->n_files || !t->files[idx].name || !len)
		return NULL;
	f = &t->files[idx];
	if (f->name[0] == '/')
		return f->name;
	if (dot)
		comp_dir = NULL;	/* "." adds nothing but "./" */
	if (f->dir < t->n_dirs)
		dir = t->dirs[f->dir];
	if (dir && !dir[0])
		dir = NULL;		/* "" adds nothing (llvm-symbolizer) */
	if (!dir && t->version < 5 && f->dir == 0)
		dir = comp_dir;		/* v2-4's directory 0 */
	/* dir/name, then under the compilation directory when still relative
	 * (what libdw and llvm-symbolizer print) */
	if (dir && dir[0] != '/' && comp_dir && dir != comp_dir)
		n = snprintf(buf, len, "%s/%s/%s", comp_dir, dir, f->name);
	else if (dir)
		n = snprintf(buf, len, "%s/%s", dir, f->name);
	else if (comp_dir)
		n = snprintf(buf, len, "%s/%s", comp_dir, f->name);
	else
		n = snprintf(buf, len, "%s", f->name);
	if (n < 0)
		return NULL;
	for (p = buf; dot && p[0] == '.' && p[1] == '/';)
		p += 2;
	return p;
}

size_t sp_dline__bytes(const struct sp_dline_table *t)
{
	return (size_t)t->n_rows * (sizeof(*t->rows) + sizeof(*t->addrs)) +
	       sp_addr_index__bytes(&t->idx) +
	       (size_t)t->n_files * sizeof(*t->files) +
	       (size_t)t->n_dirs * sizeof(*t->dirs);
}

void sp_dline__free(struct sp_dline_table *t)
{
	if (!t)
		return;
	free(t->addrs);
	free(t->rows);
	free(t->files);
	sp_addr_index__free(&t->idx);
	free(t->dirs);
	memset(t, 0, sizeof(*t));
}
