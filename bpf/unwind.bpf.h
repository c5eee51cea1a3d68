/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * unwind.bpf.h - the user-stack unwinder shared by the on-CPU (perf_event)
 * and off-CPU (tp_btf/sched_switch) programs: call frame information
 * compiled from each file's .eh_frame by user space (abi.h, "User-stack
 * unwinding"), with the frame pointer where a frame has no usable row.
 *
 * ONE STEP, from the frame (pc, sp, bp) to its caller:
 *  1. the process's executable range holding pc (binary search in its
 *     range list, the last range cached), and the range's file table;
 *  2. the row for pc (the leaf, and a pc restored by a signal frame: the
 *     exact pc) or pc - 1 (return addresses: the call may be the last
 *     instruction of its function, DWARF 5 6.4.4);
 *  3. CFA from the row's rule; return address at CFA - 8; the caller's rbp
 *     per the rule; the caller's sp = CFA.  A signal frame (__restore_rt)
 *     restores every register from the rt_sigframe's uc_mcontext; a "no
 *     caller" row (_start, the child side of clone/clone3) ends the stack
 *     as complete (SP_F_USTACK_ROOT).
 *  Without a process range list (not read yet), a file table (pending,
 *  evicted, too large, anonymous code), a row (code without CFI), or with a
 *  rule this code cannot follow, the step uses the frame pointer instead:
 *  {saved rbp, return address} at rbp.  Each such step is counted by reason
 *  (SP_CNT_UNW_FP_*) and per sample (sp_event.unw_fp).
 *
 * NO GARBAGE FRAMES: a caller pc that is 0, not a canonical user address,
 * or (when the process's ranges are known and fresh) in none of its
 * executable mappings ends the stack and is never emitted; so does a frame
 * pointer below the stack pointer or misaligned, a CFA not above the
 * stack pointer, or a read that fails.  One SP_CNT_UNW_END_* per stack and
 * sp_event.unw_end say which.  Kernel frames only ever come from
 * bpf_get_stack.
 *
 * VERIFIER: the frame loop is bpf_loop (kernel 5.17+) over a callback that
 * is verified once, so the 127-frame walk costs the verifier one step's
 * paths; inside a step the two binary searches are bounded loops of at
 * most 11 (ranges) and 17 (rows) iterations.  All store reads are inlined
 * array lookups (ARRAY_OF_MAPS -> ARRAY), no helper call; user memory is
 * read through the per-walk stack copy ("Stack copy" below): one
 * bpf_probe_read_user per 1 KiB chunk the walk enters, not per word.
 */
#ifndef SPANPROF_UNWIND_BPF_H
#define SPANPROF_UNWIND_BPF_H

#include "maps.bpf.h"

/* Lowest and highest canonical user address we accept as code: page 0 is
 * never mapped (vm.mmap_min_addr), and with 5-level paging user space ends
 * below 2^56 (TASK_SIZE_MAX). */
#define SP_UNW_USER_MIN 4096ULL
#define SP_UNW_USER_END 0x00fffffffffff000ULL
#define SP_UNW_RANGE_ITERS 11	/* ceil(log2(SP_UNW_RANGES_MAX)) + 1 */
#define SP_UNW_ROW_ITERS 17	/* a 64 KiB page holds at most 2^16 rows */
#define SP_UNW_TOUCH_NS 1000000000ULL

/* DWARF register numbers (System V x86-64 psABI). */
#define SP_DW_RBP 6
#define SP_DW_RSP 7

struct sp_unw_loop_ctx {
	struct sp_unw_state *st;
	struct sp_scratch *s;
	struct sp_ucopy *uc;	/* NULL: every word read directly */
};

static __always_inline bool sp_unw_user_addr(__u64 a)
{
	return a >= SP_UNW_USER_MIN && a < SP_UNW_USER_END;
}

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

/* Why a frame steps by frame pointer; 0 is "it does not" (a CFI row). */
enum sp_unw_fp_why {
	SP_UNW_WHY_MODE = 1,
	SP_UNW_WHY_NO_PROC,
	SP_UNW_WHY_NO_TABLE,
	SP_UNW_WHY_NO_CFI,
	SP_UNW_WHY_UNSUPPORTED,
};

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
#define SP_SIGCTX_WORDS 17
#define SP_SIGFRAME_MCONTEXT 40	/* rsp -> uc_mcontext once pretcode is popped */

static __always_inline int sp_unw_signal(struct sp_unw_state *st)
{
	/* r8 r9 r10 r11 r12 r13 r14 r15 rdi rsi rbp rbx rdx rax rcx rsp rip */
	static const __u8 dw[SP_SIGCTX_WORDS - 1] = {
		8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 6, 3, 1, 0, 2, 7,
	};
	__u64 g[SP_SIGCTX_WORDS];
	int i;

	if (bpf_probe_read_user(g, sizeof(g), (void *)(st->sp + SP_SIGFRAME_MCONTEXT)))
		return SP_UNW_END_READ;
	for (i = 0; i < SP_SIGCTX_WORDS - 1; i++)
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

/* One frame: emit pc, then find its caller.  Returns 1 to stop. */
static long sp_unw_frame(__u64 i, void *arg)
{
	struct sp_unw_loop_ctx *c = arg;
	struct sp_unw_state *st = c->st;
	struct sp_scratch *s = c->s;
	struct sp_unw_rule rule;
	int why, end;

	if (!st || !s)
		return 1;
	if (st->n >= SP_MAX_FRAMES) {
		st->end = SP_UNW_END_TRUNC;
		return 1;
	}
	s->frames[(st->kn + st->n) & 255] = st->pc;
	st->n++;

	/* The caller of this frame. */
	if (cfg_unwind_fp) {
		why = SP_UNW_WHY_MODE;
	} else if (!sp_unw_find_range(st, st->pc)) {
		why = SP_UNW_WHY_NO_PROC;
	} else {
		why = sp_unw_rule(st, st->exact ? st->pc : st->pc - 1, &rule);
	}
	if (why == 0) {
		end = sp_unw_cfi_step(st, c->uc, &rule);
		st->n_cfi++;
	} else {
		end = sp_unw_fp_step(st, c->uc);
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

/* The SP_CNT_UNW_END_* counters follow enum sp_unw_end (abi.h asserts). */
static __always_inline void sp_unw_count_end(__u32 end)
{
	if (end > 0 && end < SP_UNW_END__MAX)
		sp_count(SP_CNT_UNW_END_ROOT + end - 1);
}

static __always_inline void sp_count_n(__u32 idx, __u64 n)
{
	__u64 *v;

	if (!n)
		return;
	v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		*v += n;
}

/*
 * User frames after the kn kernel frames of s, from the user registers r
 * (a struct pt_regs the program may read directly: perf_event's ctx->regs
 * or bpf_task_pt_regs).  in_kernel: the thread was in the kernel, so r is
 * its entry frame: after a system call (orig_ax >= 0) the user pc is a
 * return address (looked up at pc - 1), after an interrupt or fault it is
 * exact.  Returns the number of user frames and sets the record's unw_end,
 * unw_fp and the root / truncation flags.
 */
static __always_inline __u16 sp_unw_user_stack(struct sp_scratch *s, __u16 kn, struct pt_regs *r,
					       bool in_kernel, __u32 tgid, __u64 now_ns)
{
	struct sp_unw_loop_ctx c;
	struct sp_unw_state *st;
	struct sp_ucopy *uc;
	struct sp_unw_proc *p;
	__u32 zero = 0, seq_slot = tgid & (SP_UNW_SEQ_SLOTS - 1);
	__u64 *seq;
	__u64 ip = r->ip;

	s->hdr.unw_end = SP_UNW_END_NONE;
	s->hdr.unw_fp = 0;
	/* cs as a whole word: perf_event contexts allow 8-byte reads only. */
	if (!sp_unw_user_addr(ip) ||
	    (((__u64 *)r)[__builtin_offsetof(struct pt_regs, cs) / 8] & 0xffff) != 0x33)
		return 0;	/* not 64-bit user code (__USER_CS) */
	st = bpf_map_lookup_elem(&unwind_state, &zero);
	if (!st)
		return 0;
	st->pc = ip;
	st->sp = r->sp;
	st->bp = r->bp;
	st->regs[0] = r->ax;
	st->regs[1] = r->dx;
	st->regs[2] = r->cx;
	st->regs[3] = r->bx;
	st->regs[4] = r->si;
	st->regs[5] = r->di;
	st->regs[6] = r->bp;
	st->regs[7] = r->sp;
	st->regs[8] = r->r8;
	st->regs[9] = r->r9;
	st->regs[10] = r->r10;
	st->regs[11] = r->r11;
	st->regs[12] = r->r12;
	st->regs[13] = r->r13;
	st->regs[14] = r->r14;
	st->regs[15] = r->r15;
	st->now_ns = now_ns;
	st->r_end = 0;
	st->kn = kn;
	st->n = 0;
	st->n_cfi = st->n_fp = 0;
	__builtin_memset(st->fp_why, 0, sizeof(st->fp_why));
	st->exact = !(in_kernel && (long)r->orig_ax >= 0);
	st->leaf = 1;
	st->end = SP_UNW_END_NONE;
	st->known = 0;
	st->weak = 0;
	st->uc_last = 0;
	st->uc_fill = 0;
	st->uc_words = st->uc_direct = st->uc_fail = st->uc_mismatch = 0;
	st->row_cached = st->row_searched = 0;
	uc = cfg_ucopy_bytes ? bpf_map_lookup_elem(&unwind_ucopy, &zero) : NULL;
	if (uc)
		__builtin_memset(uc->addr, 0, sizeof(uc->addr));
	p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (p) {
		st->known = 1;
		st->pbase = p->base;
		st->pn = p->n;
		seq = bpf_map_lookup_elem(&unwind_seq, &seq_slot);
		if ((seq && (__u32)*seq != p->seq) || (p->flags & SP_UNW_PROC_TRUNC)) {
			st->weak = 1;
			sp_count(SP_CNT_UNW_STALE);
		}
	}
	c.st = st;
	c.s = s;
	c.uc = uc;
	bpf_loop(SP_MAX_FRAMES + 1, sp_unw_frame, &c, 0);

	if (st->end == SP_UNW_END_NONE)
		st->end = SP_UNW_END_TRUNC;	/* the loop ran out */
	if (st->end == SP_UNW_END_TRUNC) {
		s->hdr.flags |= SP_F_USTACK_TRUNC;
		sp_count(SP_CNT_USTACK_TRUNC);
	} else if (st->end == SP_UNW_END_ROOT) {
		s->hdr.flags |= SP_F_USTACK_ROOT;
	} else if (st->end == SP_UNW_END_READ && st->n == 1) {
		s->hdr.flags |= SP_F_USTACK_ERR;	/* not even the first caller */
		sp_count(SP_CNT_USTACK_ERR);
	}
	sp_unw_count_end(st->end);
	s->hdr.unw_end = st->end;
	s->hdr.unw_fp = st->n_fp > 255 ? 255 : st->n_fp;
	sp_count_n(SP_CNT_UNW_FRAMES_CFI, st->n_cfi);
	sp_count_n(SP_CNT_UNW_FRAMES_FP, st->n_fp);
	sp_count_n(SP_CNT_UNW_FP_MODE, st->fp_why[SP_UNW_WHY_MODE - SP_UNW_WHY_MODE]);
	sp_count_n(SP_CNT_UNW_FP_NO_PROC, st->fp_why[SP_UNW_WHY_NO_PROC - SP_UNW_WHY_MODE]);
	sp_count_n(SP_CNT_UNW_FP_NO_TABLE, st->fp_why[SP_UNW_WHY_NO_TABLE - SP_UNW_WHY_MODE]);
	sp_count_n(SP_CNT_UNW_FP_NO_CFI, st->fp_why[SP_UNW_WHY_NO_CFI - SP_UNW_WHY_MODE]);
	sp_count_n(SP_CNT_UNW_FP_UNSUPPORTED, st->fp_why[SP_UNW_WHY_UNSUPPORTED - SP_UNW_WHY_MODE]);
	sp_count_n(SP_CNT_UNW_COPY_CHUNKS, st->uc_fill);
	sp_count_n(SP_CNT_UNW_COPY_WORDS, st->uc_words);
	sp_count_n(SP_CNT_UNW_COPY_DIRECT, st->uc_direct);
	sp_count_n(SP_CNT_UNW_COPY_FAIL, st->uc_fail);
	sp_count_n(SP_CNT_UNW_COPY_MISMATCH, st->uc_mismatch);
	sp_count_n(SP_CNT_UNW_ROW_CACHED, st->row_cached);
	sp_count_n(SP_CNT_UNW_ROW_SEARCHED, st->row_searched);
	return st->n > SP_MAX_FRAMES ? SP_MAX_FRAMES : st->n;
}

/* cfg_wake_unread: should the on-CPU record of tgid, whose user stack of
 * n frames was just walked (so the walk state is this sample's), wake the
 * collector?  Yes when the process had no ranges (its maps not read yet),
 * at most once a second per process.  On-CPU only: an off-CPU record must
 * not wake (offcpu.bpf.c) nor use up the process's wakeup. */
static __always_inline bool sp_unw_wake_unread(__u32 tgid, __u16 n, __u64 now_ns)
{
	struct sp_unw_state *st;
	__u32 zero = 0, slot = tgid & (SP_WAKE_UNREAD_SLOTS - 1);
	struct sp_wake_slot *w;

	if (!cfg_wake_unread || !n)
		return false;
	st = bpf_map_lookup_elem(&unwind_state, &zero);
	if (!st || st->known)
		return false;
	w = bpf_map_lookup_elem(&unread_woken, &slot);
	if (!w || (w->tgid == tgid && now_ns - w->ns <= SP_WAKE_UNREAD_NS))
		return false;
	w->tgid = tgid;		/* racing CPUs: at worst one more wakeup */
	w->ns = now_ns;
	sp_count(SP_CNT_WAKE_UNREAD);
	return true;
}

#endif /* SPANPROF_UNWIND_BPF_H */
