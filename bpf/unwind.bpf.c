/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * unwind.bpf.c - one step of the user-stack walk (unwind.bpf.h describes
 * the walk): the range and CFI row lookups, the stack copy, and the
 * frame-pointer, CFI and signal-frame steps.
 */
#include "vmlinux.h"
#include "unwind.bpf.h"

#define SP_UNW_RANGE_ITERS 11	/* ceil(log2(SP_UNW_RANGES_MAX)) + 1 */
#define SP_UNW_ROW_ITERS 17	/* a 64 KiB page holds at most 2^16 rows */
#define SP_UNW_TOUCH_NS 1000000000ULL

/* DWARF register numbers (System V x86-64 psABI). */
#define SP_DW_RBP 6
#define SP_DW_RSP 7

/* Word w of the store; 0 on success. */
static __always_inline int sp_unw_word(__u32 w, __u64 *out)
{
	__u32 chunk = w >> SP_UNW_CHUNK_SHIFT, idx = w & (SP_UNW_CHUNK_WORDS - 1);
	void *inner = bpf_map_lookup_elem(&unwind_chunks, &chunk);
	__u64 *v;

	if (!inner)
		return -1;
	v = bpf_map_lookup_elem(inner, &idx);
	if (!v)
		return -1;
	*out = *v;
	return 0;
}

/*
 * The chunk holding all of [base, base + n) when one does (the usual case:
 * a table or range list rarely crosses a 256 KiB boundary), else NULL.
 * Reads through it are one inlined array lookup instead of two.
 */
static __always_inline void *sp_unw_one_chunk(__u32 base, __u32 n)
{
	__u32 chunk = base >> SP_UNW_CHUNK_SHIFT;

	if (!n || (base + n - 1) >> SP_UNW_CHUNK_SHIFT != chunk)
		return NULL;
	return bpf_map_lookup_elem(&unwind_chunks, &chunk);
}

/* Word w, through inner (sp_unw_one_chunk) when not NULL. */
static __always_inline int sp_unw_rd(void *inner, __u32 w, __u64 *out)
{
	__u32 idx = w & (SP_UNW_CHUNK_WORDS - 1);
	__u64 *v;

	if (!inner)
		return sp_unw_word(w, out);
	v = bpf_map_lookup_elem(inner, &idx);
	if (!v)
		return -1;
	*out = *v;
	return 0;
}

/* u32 number i of an array of u32 packed two per word from word base. */
static __always_inline int sp_unw_u32(void *inner, __u32 base, __u32 i, __u32 *out)
{
	__u64 w;

	if (sp_unw_rd(inner, base + (i >> 1), &w))
		return -1;
	*out = (i & 1) ? (__u32)(w >> 32) : (__u32)w;
	return 0;
}

/* The file of range word `file` is wanted (table or not): user space
 * evicts the least recently used and rebuilds evicted tables wanted
 * again.  Stamped at most about once a second per file. */
static __always_inline void sp_unw_touch(struct sp_unw_state *st, __u32 file)
{
	__u32 slot = file >> SP_UNW_FILE_GEN_BITS;
	struct sp_unw_file *d;

	if (!file)
		return;
	d = bpf_map_lookup_elem(&unwind_files, &slot);
	if (d && st->now_ns - d->last_used_ns > SP_UNW_TOUCH_NS)
		d->last_used_ns = st->now_ns;
}

/* The range holding pc into the cache; false when none. */
static __always_inline bool sp_unw_find_range(struct sp_unw_state *st, __u64 pc)
{
	__u32 lo = 0, hi = st->pn, mid;
	__u64 start, end, word;
	void *inner;
	int i;

	if (st->r_end && pc >= st->r_start && pc < st->r_end)
		return true;
	if (!st->known)
		return false;
	inner = sp_unw_one_chunk(st->pbase, st->pn * SP_UNW_RANGE_WORDS);
	for (i = 0; i < SP_UNW_RANGE_ITERS; i++) {
		if (lo >= hi)
			break;
		mid = (lo + hi) >> 1;
		if (sp_unw_rd(inner, st->pbase + mid * SP_UNW_RANGE_WORDS, &start))
			return false;
		if (start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	mid = (lo - 1) * SP_UNW_RANGE_WORDS;
	if (sp_unw_rd(inner, st->pbase + mid, &start) || sp_unw_rd(inner, st->pbase + mid + 1, &end) ||
	    sp_unw_rd(inner, st->pbase + mid + 2, &word) || pc < start || pc >= end)
		return false;
	st->r_start = start;
	st->r_end = end;
	st->r_word = word;
	sp_unw_touch(st, (__u32)word);
	return true;
}

/* The rule for the cached range's file at lookup address a; returns 0 and
 * *rule, or the reason to fall back (enum sp_unw_fp_why).  Rows found are
 * cached per CPU (SP_UNW_CACHE, direct-mapped by file offset) with the
 * offsets they cover: the frames of a recursion, and the next samples of
 * the same loops, ask for the same rows again.  A cached row stays right
 * for as long as its range word (slot and generation: one file) is. */
static __always_inline int sp_unw_rule(struct sp_unw_state *st, __u64 a, struct sp_unw_rule *rule)
{
	__u32 file = (__u32)st->r_word, slot = file >> SP_UNW_FILE_GEN_BITS;
	__u32 lo, hi, mid, d0, d1, page, row, nrow, target, rbits, rmask, r, base, shift, ci;
	struct sp_unw_file *d;
	__u64 fo, w, c_lo, c_hi;
	void *inner;
	int i;

	if (!file)
		return SP_UNW_WHY_NO_TABLE;
	fo = a - st->r_start + ((st->r_word >> 32) << 12);
	ci = (__u32)(fo >> 2) & (SP_UNW_CACHE - 1);
	if (st->cache[ci].file == file && fo >= st->cache[ci].lo && fo < st->cache[ci].hi) {
		w = st->cache[ci].rule;
		st->row_cached++;
		goto found;
	}
	st->row_searched++;
	d = bpf_map_lookup_elem(&unwind_files, &slot);
	if (!d || (d->gen & ((1u << SP_UNW_FILE_GEN_BITS) - 1)) !=
		  (file & ((1u << SP_UNW_FILE_GEN_BITS) - 1)))
		return SP_UNW_WHY_NO_TABLE;
	if (!(d->flags & SP_UNW_FILE_READY))
		return SP_UNW_WHY_NO_TABLE;
	shift = d->page_shift;
	if (shift < SP_UNW_PAGE_SHIFT_MIN || shift > SP_UNW_PAGE_SHIFT_MAX)
		return SP_UNW_WHY_NO_TABLE;
	page = (__u32)(fo >> shift) - d->first_page;
	if ((fo >> shift) - d->first_page >= d->n_pages)
		return SP_UNW_WHY_NO_CFI;
	base = d->base;
	inner = sp_unw_one_chunk(base, d->rules_off + d->n_rules);
	if (sp_unw_u32(inner, base, page, &d0) || sp_unw_u32(inner, base, page + 1, &d1) || d1 < d0)
		return SP_UNW_WHY_NO_CFI;
	rbits = 32 - shift;
	rmask = (1u << rbits) - 1;
	target = ((__u32)fo & ((1u << shift) - 1)) << rbits | rmask;
	lo = d0;
	hi = d1;
	for (i = 0; i < SP_UNW_ROW_ITERS; i++) {
		if (lo >= hi)
			break;
		mid = lo + ((hi - lo) >> 1);
		if (sp_unw_u32(inner, base + d->rows_off, mid, &row))
			return SP_UNW_WHY_NO_CFI;
		if (row <= target)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo - 1 is the last row <= fo in this page; none: the row before the
	 * page, which began earlier and still applies. */
	if (lo == 0)
		return SP_UNW_WHY_NO_CFI;
	r = lo - 1;
	if (sp_unw_u32(inner, base + d->rows_off, r, &row))
		return SP_UNW_WHY_NO_CFI;
	/* The row covers fo up to the next row's pc (within this page; the
	 * page's end if the next row is in a later one). */
	c_lo = r >= d0 ? (fo & ~(__u64)((1u << shift) - 1)) | (row >> rbits)
		       : fo & ~(__u64)((1u << shift) - 1);
	c_hi = (fo | ((1u << shift) - 1)) + 1;
	if (lo < d1 && !sp_unw_u32(inner, base + d->rows_off, lo, &nrow))
		c_hi = (fo & ~(__u64)((1u << shift) - 1)) | (nrow >> rbits);
	row &= rmask;
	if (row >= d->n_rules || sp_unw_rd(inner, base + d->rules_off + row, &w))
		return SP_UNW_WHY_NO_CFI;
	st->cache[ci].file = file;
	st->cache[ci].lo = c_lo;
	st->cache[ci].hi = c_hi;
	st->cache[ci].rule = w;
found:
	__builtin_memcpy(rule, &w, sizeof(*rule));
	switch (rule->op & 15) {
	case SP_UNW_OP_NONE:
		return SP_UNW_WHY_NO_CFI;
	case SP_UNW_OP_UNSUPPORTED:
		return SP_UNW_WHY_UNSUPPORTED;
	}
	return 0;
}

/*
 * STACK COPY.  A user read costs 100-200 ns on the machines measured,
 * most of it fixed (the helper, access and fault checks), so the walk
 * reads the stack in chunks: the first word wanted in a chunk of
 * cfg_ucopy_bytes (aligned to its size, never crossing a page, so it is
 * readable whenever the word is) copies the whole chunk into a per-CPU
 * slot with one bpf_probe_read_user; every later word in it is a load from
 * the slot.  The walk goes up the stack, so cfg_ucopy_slots slots filled
 * round-robin keep the chunks it is still reading.  The copy is per walk
 * (reset in sp_unw_user_stack): it is the stack as this sample sees it,
 * the same bytes the direct reads of the same walk return (the thread is
 * interrupted, or switching out, while we read).  A word not 8-aligned is
 * read directly.  A chunk that cannot be copied (SP_CNT_UNW_COPY_FAIL) is
 * a failed read of the word: the chunk lies in the word's page, and user
 * reads fail by page (not present, or not mapped), so a direct read of
 * the word would fail too; it is not tried (a faulting read costs
 * microseconds).  cfg_ucopy_verify (a test knob) also reads every copied word
 * directly, counts any difference (SP_CNT_UNW_COPY_MISMATCH) and uses the
 * direct value.
 */
static __always_inline long sp_unw_read8(struct sp_unw_state *st, struct sp_ucopy *uc, __u64 a,
					 __u64 *out)
{
	__u32 size = cfg_ucopy_bytes, nslots = cfg_ucopy_slots, slot, off, i;
	__u64 base, v;

	if (!uc || size < SP_UCOPY_CHUNK_MIN || size > SP_UCOPY_CHUNK_MAX || (size & (size - 1)) ||
	    !nslots || nslots > SP_UCOPY_SLOTS_MAX || (nslots & (nslots - 1)) || (a & 7))
		goto direct;
	base = a & ~(__u64)(size - 1);
	if (!base)
		goto direct;	/* page 0: never mapped, and 0 marks a free slot */
	off = (__u32)(a - base) & (SP_UCOPY_CHUNK_MAX - 8);
	slot = st->uc_last & (SP_UCOPY_SLOTS_MAX - 1);
	if (uc->addr[slot] != base) {
		for (i = 0; i < SP_UCOPY_SLOTS_MAX; i++) {
			if (i >= nslots || uc->addr[i] == base)
				break;
		}
		if (i < nslots) {
			slot = i;
		} else {
			slot = st->uc_fill & (nslots - 1) & (SP_UCOPY_SLOTS_MAX - 1);
			uc->addr[slot] = 0;
			if (bpf_probe_read_user(uc->data[slot], size, (void *)base)) {
				/* The chunk is within the word's page, so the
				 * word is unreadable too: no second failing
				 * read (a fault costs microseconds). */
				st->uc_fail++;
				return -1;
			}
			uc->addr[slot] = base;
			st->uc_fill++;
		}
		st->uc_last = slot;
	}
	*out = *(__u64 *)&uc->data[slot & (SP_UCOPY_SLOTS_MAX - 1)][off];
	st->uc_words++;
	if (cfg_ucopy_verify) {
		if (bpf_probe_read_user(&v, sizeof(v), (void *)a)) {
			st->uc_mismatch++;
			return -1;
		}
		if (v != *out) {
			st->uc_mismatch++;
			*out = v;
		}
	}
	return 0;
direct:
	st->uc_direct++;
	return bpf_probe_read_user(out, sizeof(*out), (void *)a);
}

/* The two words {*a, *(a + 8)}: a saved rbp and the return address.
 * Without the copy, one 16-byte read (as before the copy existed). */
static __always_inline long sp_unw_read16(struct sp_unw_state *st, struct sp_ucopy *uc, __u64 a,
					  __u64 *lo, __u64 *hi)
{
	struct { __u64 lo, hi; } pair;

	if (!uc) {
		st->uc_direct += 2;
		if (bpf_probe_read_user(&pair, sizeof(pair), (void *)a))
			return -1;
		*lo = pair.lo;
		*hi = pair.hi;
		return 0;
	}
	if (sp_unw_read8(st, uc, a, lo))
		return -1;
	return sp_unw_read8(st, uc, a + 8, hi);
}

/* Caller of a frame-pointer frame; returns 0 or an enum sp_unw_end. */
static __always_inline int sp_unw_fp_step(struct sp_unw_state *st, struct sp_ucopy *uc)
{
	__u64 bp, ra;

	if (!st->bp)
		return SP_UNW_END_ZERO;
	if ((st->bp & 7) || st->bp < st->sp)
		return SP_UNW_END_BAD_FP;
	if (sp_unw_read16(st, uc, st->bp, &bp, &ra))
		return SP_UNW_END_READ;
	st->sp = st->bp + 16;
	st->bp = bp;
	st->pc = ra;
	return 0;
}

/* struct sigcontext_64's general registers, as the kernel lays them out in
 * uc_mcontext (asm/sigcontext.h), and where each goes in DWARF order. */
#define SP_SIGFRAME_MCONTEXT 40	/* rsp -> uc_mcontext once pretcode is popped */

static __always_inline int sp_unw_signal(struct sp_unw_state *st)
{
	/* r8 r9 r10 r11 r12 r13 r14 r15 rdi rsi rbp rbx rdx rax rcx rsp rip */
	static const __u8 dw[SP_UNW_SIGCTX_WORDS - 1] = {
		8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 6, 3, 1, 0, 2, 7,
	};
	__u64 *g = st->sigctx;
	int i;

	if (bpf_probe_read_user(g, sizeof(st->sigctx), (void *)(st->sp + SP_SIGFRAME_MCONTEXT)))
		return SP_UNW_END_READ;
	for (i = 0; i < SP_UNW_SIGCTX_WORDS - 1; i++)
		st->regs[dw[i] & 15] = g[i];
	st->bp = g[10];
	st->sp = g[15];
	st->pc = g[16];
	st->exact = 1;		/* the interrupted pc, not a return address */
	st->leaf = 1;		/* and all its registers are known */
	return 0;
}

/* Caller by a CFI rule; returns 0 or an enum sp_unw_end. */
static __always_inline int sp_unw_cfi_step(struct sp_unw_state *st, struct sp_ucopy *uc,
					   const struct sp_unw_rule *r)
{
	__u64 cfa, base, v, ra, bp = st->bp;
	__u8 op = r->op & 15, rbp = r->op >> 4, reg = r->reg & 15;

	switch (op) {
	case SP_UNW_OP_RSP:
		cfa = st->sp + r->cfa_off;
		break;
	case SP_UNW_OP_RBP:
		cfa = st->bp + r->cfa_off;
		break;
	case SP_UNW_OP_REG:
		if (!st->leaf)
			return SP_UNW_END_LEAF_ONLY;
		cfa = st->regs[reg] + r->cfa_off;
		break;
	case SP_UNW_OP_DEREF:
		if (reg == SP_DW_RSP)
			base = st->sp;
		else if (reg == SP_DW_RBP)
			base = st->bp;
		else if (st->leaf)
			base = st->regs[reg];
		else
			return SP_UNW_END_LEAF_ONLY;
		if (sp_unw_read8(st, uc, base + r->cfa_off, &v))
			return SP_UNW_END_READ;
		cfa = v + 8 * (__u64)(r->reg >> 4);
		break;
	case SP_UNW_OP_PLT:
		cfa = st->sp + 8 + ((st->pc & 15) >= 11 ? 8 : 0);
		break;
	case SP_UNW_OP_SIGNAL:
		return sp_unw_signal(st);
	case SP_UNW_OP_STOP:
		return SP_UNW_END_ROOT;
	default:
		return SP_UNW_END_BAD_FP;	/* filtered out by sp_unw_rule */
	}
	if (cfa <= st->sp || (cfa & 7))
		return SP_UNW_END_BAD_FP;
	if (rbp == SP_UNW_RBP_CFA && r->rbp_off == -16) {
		/* The common prologue push %rbp: the two adjacent words. */
		if (sp_unw_read16(st, uc, cfa - 16, &bp, &ra))
			return SP_UNW_END_READ;
	} else {
		if (sp_unw_read8(st, uc, cfa - 8, &ra))
			return SP_UNW_END_READ;
		if (rbp == SP_UNW_RBP_CFA || rbp == SP_UNW_RBP_RBP) {
			base = rbp == SP_UNW_RBP_CFA ? cfa : st->bp;
			if (sp_unw_read8(st, uc, base + r->rbp_off, &bp))
				return SP_UNW_END_READ;
		} else if (rbp == SP_UNW_RBP_UNDEF) {
			bp = 0;
		}
	}
	st->sp = cfa;
	st->bp = bp;
	st->pc = ra;
	st->exact = 0;
	st->leaf = 0;
	return 0;
}

/*
 * One step of the walk: the caller of frame (st->pc, st->sp, st->bp), into
 * st; 0 to go on, 1 to stop (st->end says why).  A global function, so the
 * verifier checks it once, on its own, with st and uc as any memory of
 * their size (uc may be NULL), and not again inside the callback's loop:
 * inlined into sp_unw_frame, it took sp_oncpu past the verifier's
 * 1M-instruction limit on one 6.18 kernel build (unwind.bpf.h, VERIFIER).
 */
__noinline int sp_unw_step(struct sp_unw_state *st, struct sp_ucopy *uc)
{
	struct sp_unw_rule rule;
	int why, end;

	if (!st)
		return 1;
	if (cfg_unwind_fp) {
		why = SP_UNW_WHY_MODE;
	} else if (!sp_unw_find_range(st, st->pc)) {
		why = SP_UNW_WHY_NO_PROC;
	} else {
		why = sp_unw_rule(st, st->exact ? st->pc : st->pc - 1, &rule);
	}
	if (why == 0) {
		end = sp_unw_cfi_step(st, uc, &rule);
		st->n_cfi++;
	} else {
		end = sp_unw_fp_step(st, uc);
		st->n_fp++;
		if (why >= SP_UNW_WHY_MODE && why <= SP_UNW_WHY_UNSUPPORTED)
			st->fp_why[why - SP_UNW_WHY_MODE]++;
		st->exact = 0;
		st->leaf = 0;
	}
	if (end) {
		st->end = end;
		return 1;
	}
	/* Never emit a value that cannot be code of this process. */
	if (!st->pc) {
		st->end = SP_UNW_END_ZERO;
		return 1;
	}
	if (!sp_unw_user_addr(st->pc)) {
		st->end = SP_UNW_END_NONCANON;
		return 1;
	}
	if (st->known && !st->weak && !sp_unw_find_range(st, st->pc)) {
		st->end = SP_UNW_END_NOT_EXEC;
		return 1;
	}
	return 0;
}
