// SPDX-License-Identifier: MIT
/*
 * unwind_table.c - see unwind_table.h.
 */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "collector/unwind/cfi_extract.h"
#include "collector/unwind/unwind_table.h"

#define ROW_FO_BITS 40			/* file offsets below 1 TiB */
#define ROW_RULE_BITS 24
#define DEF_MAX_ROWS (1u << 24)
#define RULES_MAX (1u << 16)		/* index bits at 64 KiB pages */

struct sp_unw_compiler {
	uint64_t segs[SP_UNW_TABLE_SEGS][3];	/* vaddr, size, file offset */
	int n_segs;
	struct sp_unw_compiler_limits lim;
	/* rows: fo << ROW_RULE_BITS | rule index */
	uint64_t *rows;
	uint32_t n_rows, cap_rows;
	uint64_t last_end;		/* fo just past the last row */
	bool have_last;
	uint64_t rows_in, rows_dropped;
	/* rule dictionary: open addressing over packed rules */
	uint64_t *rules;		/* by index */
	uint32_t n_rules, cap_rules;
	uint32_t *rhash;		/* index + 1, 0 = empty */
	uint32_t rmask;
};

static uint64_t rule_word(const struct sp_unw_rule *r)
{
	uint64_t w;

	memcpy(&w, r, sizeof(w));
	return w;
}

static uint32_t rule_hash(uint64_t w)
{
	w ^= w >> 33;
	w *= 0xff51afd7ed558ccdULL;
	w ^= w >> 33;
	return (uint32_t)w;
}

static int rules_grow(struct sp_unw_compiler *c)
{
	uint32_t cap = c->cap_rules ? 2 * c->cap_rules : 256, mask = 2 * cap - 1;
	uint64_t *r = realloc(c->rules, cap * sizeof(*r));
	uint32_t *h;

	if (!r)
		return -ENOMEM;
	c->rules = r;
	h = calloc((size_t)mask + 1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->n_rules; i++) {
		uint32_t j = rule_hash(c->rules[i]) & mask;

		while (h[j])
			j = (j + 1) & mask;
		h[j] = i + 1;
	}
	free(c->rhash);
	c->rhash = h;
	c->rmask = mask;
	c->cap_rules = cap;
	return 0;
}

/* Index of rule w, added if new; -E2BIG past RULES_MAX. */
static int64_t rule_index(struct sp_unw_compiler *c, uint64_t w)
{
	uint32_t j;
	int err;

	if (c->n_rules == c->cap_rules) {
		if (c->n_rules >= RULES_MAX)
			goto lookup_only;
		err = rules_grow(c);
		if (err)
			return err;
	}
lookup_only:
	for (j = rule_hash(w) & c->rmask; c->rhash[j]; j = (j + 1) & c->rmask)
		if (c->rules[c->rhash[j] - 1] == w)
			return c->rhash[j] - 1;
	if (c->n_rules >= RULES_MAX)
		return -E2BIG;
	c->rules[c->n_rules] = w;
	c->rhash[j] = ++c->n_rules;
	return c->n_rules - 1;
}

static int push_row(struct sp_unw_compiler *c, uint64_t fo, const struct sp_unw_rule *r)
{
	int64_t idx;

	/* Same rule as the row before and contiguous: one row. */
	if (c->n_rows && c->have_last && fo == c->last_end) {
		uint64_t prev = c->rows[c->n_rows - 1];

		if (c->rules[prev & ((1u << ROW_RULE_BITS) - 1)] == rule_word(r))
			return 0;
	}
	idx = rule_index(c, rule_word(r));
	if (idx < 0)
		return (int)idx;
	if (c->n_rows >= c->lim.max_rows)
		return -E2BIG;
	if (c->n_rows == c->cap_rows) {
		uint32_t cap = c->cap_rows ? 2 * c->cap_rows : 4096;
		uint64_t *rows;

		if (cap > c->lim.max_rows)
			cap = c->lim.max_rows;
		rows = realloc(c->rows, (size_t)cap * sizeof(*rows));
		if (!rows)
			return -ENOMEM;
		c->rows = rows;
		c->cap_rows = cap;
	}
	c->rows[c->n_rows++] = fo << ROW_RULE_BITS | (uint64_t)idx;
	return 0;
}

int sp_unw_compiler__new_segs(const uint64_t (*segs)[3], int n_segs,
			      const struct sp_unw_compiler_limits *lim,
			      struct sp_unw_compiler **out)
{
	struct sp_unw_compiler *c;
	int err;

	*out = NULL;
	if (n_segs <= 0 || n_segs > SP_UNW_TABLE_SEGS)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	memcpy(c->segs, segs, (size_t)n_segs * sizeof(*segs));
	c->n_segs = n_segs;
	if (lim)
		c->lim = *lim;
	if (!c->lim.max_rows || c->lim.max_rows > DEF_MAX_ROWS)
		c->lim.max_rows = DEF_MAX_ROWS;
	err = rules_grow(c);
	if (err) {
		sp_unw_compiler__free(c);
		return err;
	}
	*out = c;
	return 0;
}

int sp_unw_compiler__new(Elf *elf, const struct sp_unw_compiler_limits *lim,
			 struct sp_unw_compiler **out)
{
	uint64_t segs[SP_UNW_TABLE_SEGS][3];
	size_t n = 0;
	int k = 0;

	*out = NULL;
	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n && k < SP_UNW_TABLE_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		/* Only the part backed by the file is code in the mapping. */
		if (!ph.p_filesz || ph.p_vaddr + ph.p_filesz < ph.p_vaddr ||
		    ph.p_offset + ph.p_filesz < ph.p_offset ||
		    ph.p_offset + ph.p_filesz >= (1ull << ROW_FO_BITS))
			continue;
		segs[k][0] = ph.p_vaddr;
		segs[k][1] = ph.p_filesz;
		segs[k][2] = ph.p_offset;
		k++;
	}
	if (!k)
		return -EINVAL;
	return sp_unw_compiler__new_segs((const uint64_t (*)[3])segs, k, lim, out);
}

void sp_unw_compiler__free(struct sp_unw_compiler *c)
{
	if (!c)
		return;
	free(c->rows);
	free(c->rules);
	free(c->rhash);
	free(c);
}

int sp_unw_compiler__add(struct sp_unw_compiler *c, uint64_t start, uint64_t end,
			 const struct sp_unw_rule *rule)
{
	static const struct sp_unw_rule none = { .op = SP_UNW_OP_NONE };
	static const struct sp_unw_rule frameless = { .cfa_off = 8, .op = SP_UNW_OP_RSP };
	uint64_t fo = 0, fo_end;
	int i, err;

	c->rows_in++;
	if (end <= start)
		return -EINVAL;
	for (i = 0; i < c->n_segs; i++)
		if (start >= c->segs[i][0] && end <= c->segs[i][0] + c->segs[i][1])
			break;
	if (i == c->n_segs) {
		c->rows_dropped++;
		return 0;
	}
	fo = start - c->segs[i][0] + c->segs[i][2];
	fo_end = fo + (end - start);
	if (c->have_last && fo < c->last_end)
		return -EINVAL;
	/* A hole since the last row: no CFI there, unless it is padding
	 * after frameless code (see unwind_table.h). */
	if (c->have_last && fo > c->last_end && fo - c->last_end < 16 &&
	    c->rules[c->rows[c->n_rows - 1] & ((1u << ROW_RULE_BITS) - 1)] == rule_word(&frameless))
		c->last_end = fo;
	if (c->have_last && fo > c->last_end) {
		err = push_row(c, c->last_end, &none);
		if (err)
			return err;
	}
	err = push_row(c, fo, rule);
	if (err)
		return err;
	c->last_end = fo_end;
	c->have_last = true;
	return 0;
}

int sp_unw_compiler__add_row(const struct sp_cfi_row *row, void *ctx)
{
	return sp_unw_compiler__add(ctx, row->start, row->end, &row->rule);
}

/* Words of the table at page shift s (directory + rows + rules). */
static uint64_t table_words(const struct sp_unw_compiler *c, uint64_t lo, uint64_t hi, int s,
			    uint64_t *dir_words)
{
	uint64_t pages = ((hi - 1) >> s) - (lo >> s) + 1;

	*dir_words = (pages + 2) / 2;
	return *dir_words + (c->n_rows + 1) / 2 + c->n_rules;
}

int sp_unw_compiler__finish(struct sp_unw_compiler *c, struct sp_unw_table *out)
{
	static const struct sp_unw_rule none = { .op = SP_UNW_OP_NONE };
	uint64_t lo, hi, dir_words = 0, words = 0, *w;
	uint32_t rows_off, rules_off, n_pages, first_page, r;
	int s, err;

	memset(out, 0, sizeof(*out));
	if (!c->n_rows)
		return -ENOENT;
	lo = c->rows[0] >> ROW_RULE_BITS;
	hi = c->last_end;
	/* The end of the last row is a hole too. */
	err = push_row(c, hi, &none);
	if (err)
		return err;
	/* The smallest page whose directory costs at most an eighth of the
	 * rows' bytes (and leaves enough index bits for the rules). */
	for (s = SP_UNW_PAGE_SHIFT_MIN; s <= SP_UNW_PAGE_SHIFT_MAX; s++) {
		if (c->lim.page_shift && s != c->lim.page_shift)
			continue;
		words = table_words(c, lo, hi + 1, s, &dir_words);
		if (c->lim.page_shift || s == SP_UNW_PAGE_SHIFT_MAX ||
		    (c->n_rules <= (1u << (32 - s)) && dir_words * 8 <= c->n_rows / 2 + 1))
			break;
	}
	if (s > SP_UNW_PAGE_SHIFT_MAX)
		return -EINVAL;	/* forced shift out of range */
	if (c->n_rules > (1u << (32 - s)) || ((hi >> s) - (lo >> s) + 1) >= UINT32_MAX ||
	    (lo >> s) > UINT32_MAX)
		return -E2BIG;
	if (words > UINT32_MAX || (c->lim.max_words && words > c->lim.max_words))
		return -E2BIG;
	w = calloc(words, sizeof(*w));
	if (!w)
		return -ENOMEM;
	first_page = (uint32_t)(lo >> s);
	n_pages = (uint32_t)((hi >> s) - first_page + 1);
	rows_off = (uint32_t)dir_words;
	rules_off = rows_off + (c->n_rows + 1) / 2;

	/* Directory: dir[p] = first row at or after page p's start. */
	r = 0;
	for (uint32_t p = 0; p <= n_pages; p++) {
		uint64_t page_fo = (uint64_t)(first_page + p) << s;

		while (r < c->n_rows && (c->rows[r] >> ROW_RULE_BITS) < page_fo)
			r++;
		w[p / 2] |= (uint64_t)(p == n_pages ? c->n_rows : r) << (32 * (p & 1));
	}
	for (uint32_t i = 0; i < c->n_rows; i++) {
		uint64_t fo = c->rows[i] >> ROW_RULE_BITS;
		uint32_t idx = (uint32_t)(c->rows[i] & ((1u << ROW_RULE_BITS) - 1));
		uint32_t row = (uint32_t)((fo & ((1u << s) - 1)) << (32 - s)) | idx;

		w[rows_off + i / 2] |= (uint64_t)row << (32 * (i & 1));
	}
	memcpy(w + rules_off, c->rules, (size_t)c->n_rules * sizeof(*w));

	out->words = w;
	out->n_words = (uint32_t)words;
	out->desc.first_page = first_page;
	out->desc.n_pages = n_pages;
	out->desc.rows_off = rows_off;
	out->desc.rules_off = rules_off;
	out->desc.n_rules = c->n_rules;
	out->desc.page_shift = (uint8_t)s;
	out->n_rows = c->n_rows;
	out->rows_in = c->rows_in;
	out->rows_dropped = c->rows_dropped;
	out->fo_lo = lo;
	out->fo_hi = hi;
	return 0;
}

void sp_unw_table__release(struct sp_unw_table *t)
{
	if (!t)
		return;
	free(t->words);
	t->words = NULL;
	t->n_words = 0;
}

static int tw(const uint64_t *words, uint32_t n_words, uint32_t base, uint32_t i, uint64_t *out,
	      uint32_t *probes)
{
	if (i < base || i - base >= n_words)
		return -ENOENT;
	if (probes)
		(*probes)++;
	*out = words[i - base];
	return 0;
}

/* u32 number i of the array packed two per word from word arr. */
static int tu32(const uint64_t *words, uint32_t n_words, uint32_t base, uint32_t arr, uint32_t i,
		uint32_t *out, uint32_t *probes)
{
	uint64_t v;

	if (tw(words, n_words, base, arr + (i >> 1), &v, probes))
		return -ENOENT;
	*out = (i & 1) ? (uint32_t)(v >> 32) : (uint32_t)v;
	return 0;
}

int sp_unw_table__lookup(const uint64_t *words, uint32_t n_words, const struct sp_unw_file *d,
			 uint64_t fo, struct sp_unw_rule *rule, uint32_t *probes)
{
	uint32_t s = d->page_shift, base = d->base, d0, d1, lo, hi, mid, row, target, rbits,
		 rmask, page;
	uint64_t w;

	if (s < SP_UNW_PAGE_SHIFT_MIN || s > SP_UNW_PAGE_SHIFT_MAX)
		return -ENOENT;
	if ((fo >> s) - d->first_page >= d->n_pages)
		return -ENOENT;
	page = (uint32_t)((fo >> s) - d->first_page);
	if (tu32(words, n_words, base, base, page, &d0, probes) ||
	    tu32(words, n_words, base, base, page + 1, &d1, probes) || d1 < d0)
		return -ENOENT;
	rbits = 32 - s;
	rmask = (1u << rbits) - 1;
	target = ((uint32_t)fo & ((1u << s) - 1)) << rbits | rmask;
	lo = d0;
	hi = d1;
	while (lo < hi) {
		mid = lo + ((hi - lo) >> 1);
		if (tu32(words, n_words, base, base + d->rows_off, mid, &row, probes))
			return -ENOENT;
		if (row <= target)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || tu32(words, n_words, base, base + d->rows_off, lo - 1, &row, probes))
		return -ENOENT;
	row &= rmask;
	if (row >= d->n_rules || tw(words, n_words, base, base + d->rules_off + row, &w, probes))
		return -ENOENT;
	memcpy(rule, &w, sizeof(*rule));
	return (rule->op & 15) == SP_UNW_OP_NONE ? -ENOENT : 0;
}
