/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * stack.bpf.h - stack capture into the per-CPU scratch record, shared by the
 * on-CPU and off-CPU programs.
 *
 * Kernel stacks come from bpf_get_stack (the kernel's ORC unwinder).  It is
 * skipped when the sample interrupted user mode: the kernel stack is empty
 * then, and the call still costs about 4 us here (docs/benchmarks.md).
 *
 * User stacks are walked by bpf/unwind.bpf.h: CFI rows compiled from
 * .eh_frame, the frame pointer where there is none.
 */
#ifndef SPANPROF_STACK_BPF_H
#define SPANPROF_STACK_BPF_H

#include "maps.bpf.h"

#define SP_KERNEL_MIN 0xffff800000000000ULL

/* Kernel frames into s->frames[0..), returns the count. */
static __always_inline __u16 sp_kernel_stack(void *ctx, struct sp_scratch *s)
{
	long n = bpf_get_stack(ctx, s->frames, SP_MAX_FRAMES * sizeof(__u64), 0);

	if (n < 0) {
		s->hdr.flags |= SP_F_KSTACK_ERR;
		sp_count(SP_CNT_KSTACK_ERR);
		return 0;
	}
	n /= sizeof(__u64);
	if (n >= SP_MAX_FRAMES) {
		s->hdr.flags |= SP_F_KSTACK_TRUNC;
		sp_count(SP_CNT_KSTACK_TRUNC);
	}
	return n;
}

/*
 * Emits the scratch record with its frames; counts sent or dropped.
 *
 * No consumer wakeup per record: a wakeup is an irq_work self-interrupt,
 * which in this VM cost 6-9 us per sample, most of the program's cost
 * (docs/benchmarks.md, bench/bpf_breakdown.py).  The collector drains the
 * ring every --poll-ms instead, and a wakeup is forced once an eighth of the
 * ring is filled, so bursts cannot overflow it between polls.
 */
static __always_inline __u64 sp_wakeup_flags(bool wake)
{
	if (wake || bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >=
	    bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 8)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

static __always_inline void sp_emit(struct sp_scratch *s, __u32 sent_idx, __u32 drop_idx,
				    bool wake)
{
	__u64 nframes = (s->hdr.kstack_n + s->hdr.ustack_n) & 255;
	__u64 attrs = s->hdr.ctx.attrs_len;
	__u64 size;

	/* Never true: bounds the size for the verifier, which must see the
	 * check on the very register the size is computed from. */
	barrier_var(attrs);
	if (attrs > SP_CTX_ATTRS_MAX)
		attrs = SP_CTX_ATTRS_MAX;
	barrier_var(attrs);
	size = SP_EVENT_HDR_SIZE + nframes * sizeof(__u64) + attrs;

	if (bpf_ringbuf_output(&events, s, size, sp_wakeup_flags(wake)))
		sp_count(drop_idx);
	else
		sp_count(sent_idx);
}

#endif /* SPANPROF_STACK_BPF_H */
