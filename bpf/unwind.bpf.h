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
 * VERIFIER: the frame loop is bpf_loop (kernel 5.17+) over a callback,
 * and the callback calls the step (unwind.bpf.c), a global function: the
 * verifier checks the step once, on its own, whatever the callers and the
 * loop.  With the step inlined in the callback, one 6.18 kernel build
 * verified each stack-walking program in ~0.3 s and another refused all
 * three at its 1M-instruction limit (89,000 states at once; why that
 * build's verifier explores so much more is not known).  Inside the step
 * the two binary searches are bounded loops of at most 11 (ranges) and 17
 * (rows) iterations.  All store reads are inlined
 * array lookups (ARRAY_OF_MAPS -> ARRAY), no helper call; user memory is
 * read through the per-walk stack copy ("Stack copy" in unwind.bpf.c): one
 * bpf_probe_read_user per 1 KiB chunk the walk enters, not per word.
 * STACK: the program, the callback and the step share the 512-byte BPF
 * stack (296 + 0 + 184 for sp_oncpu), so large buffers live in the walk
 * state (sp_unw_state), not in locals.
 */
#ifndef SPANPROF_UNWIND_BPF_H
#define SPANPROF_UNWIND_BPF_H

#include "maps.bpf.h"

/* Lowest and highest canonical user address we accept as code: page 0 is
 * never mapped (vm.mmap_min_addr), and with 5-level paging user space ends
 * below 2^56 (TASK_SIZE_MAX). */
#define SP_UNW_USER_MIN 4096ULL
#define SP_UNW_USER_END 0x00fffffffffff000ULL

struct sp_unw_loop_ctx {
	struct sp_unw_state *st;
	struct sp_scratch *s;
	struct sp_ucopy *uc;	/* NULL: every word read directly */
};

static __always_inline bool sp_unw_user_addr(__u64 a)
{
	return a >= SP_UNW_USER_MIN && a < SP_UNW_USER_END;
}

/* Why a frame steps by frame pointer; 0 is "it does not" (a CFI row); counted per
 * reason per walk (sp_unw_state.fp_why). */
enum sp_unw_fp_why {
	SP_UNW_WHY_MODE = 1,
	SP_UNW_WHY_NO_PROC,
	SP_UNW_WHY_NO_TABLE,
	SP_UNW_WHY_NO_CFI,
	SP_UNW_WHY_UNSUPPORTED,
};

/* The step (unwind.bpf.c), verified once as a global function. */
int sp_unw_step(struct sp_unw_state *st, struct sp_ucopy *uc);

/* One frame: emit pc, then find its caller.  Returns 1 to stop. */
static long sp_unw_frame(__u64 i, void *arg)
{
	struct sp_unw_loop_ctx *c = arg;
	struct sp_unw_state *st = c->st;
	struct sp_scratch *s = c->s;

	if (!st || !s)
		return 1;
	if (st->n >= SP_MAX_FRAMES) {
		st->end = SP_UNW_END_TRUNC;
		return 1;
	}
	s->frames[(st->kn + st->n) & 255] = st->pc;
	st->n++;
	return sp_unw_step(st, c->uc) ? 1 : 0;
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
