// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * offcpu.bpf.c - off-CPU (wall-clock wait) profiling on tp_btf/sched_switch
 * alone: no kprobes, no fentry (this project's kernels have neither).
 *
 * WHAT IS CAPTURED WHERE
 *
 * sched_switch(preempt, prev, next, prev_state) runs on the switching CPU,
 * in prev's context (current == prev).  One program does two things:
 *
 *  switch-out (prev):  decide whether this wait is captured.  If it is,
 *      build the whole ring record now, while prev's user stack, registers
 *      and TLS are reachable: kernel stack (bpf_get_stack(ctx), current ==
 *      prev), user stack by the unwinder (unwind.bpf.h) from
 *      bpf_task_pt_regs(prev),
 *      trace context from prev's TLS (sp_read_trace_ctx reads current),
 *      comm, pid/tid, the wait reason and the start time.  The record is
 *      kept in prev's BPF task storage (map offcpu_pending), which is keyed
 *      by the task itself: a thread that blocks on CPU 0 and wakes on CPU 1
 *      finds its record (per-CPU keying would lose or mis-pair it).
 *  switch-in (next):   if next has a pending record, the wait is over:
 *      blocked = now - start.  Below the minimum block time it is counted
 *      and discarded; otherwise weight_ns is set and the stored record is
 *      copied into the ring buffer in one bpf_ringbuf_output.  The record
 *      is deleted either way, so task storage only ever holds threads that
 *      are blocked right now with a captured wait (at most
 *      cfg_offcpu_max_pending of them, SP_OFFCPU_REC_SIZE bytes each).
 *
 * At switch-in the CPU runs prev's context, not next's: next's user memory
 * is not mapped and bpf_probe_read_user would read the wrong process.
 * That is why everything is captured at switch-out, before the duration is
 * known.
 *
 * COST CONTROL AND WHY THE ESTIMATE IS UNBIASED
 *
 * A capture costs microseconds (kernel stack ~4 us, user walk ~4-5 us on
 * this machine); the decision costs a random number.  So the decision is
 * taken first, at switch-out, with probability p = 1/N, and a captured wait
 * is written with weight_ns = blocked_ns * N (Horvitz-Thompson).  For any
 * set of waits i with durations d_i (>= the minimum) and stacks s_i, let
 * X_i = 1 if wait i was captured.  The coin is drawn before the wait's
 * duration exists and independently of everything else, so
 * E[X_i | d_i, s_i, N_i] = 1/N_i and, for every stack s,
 *
 *   E[ sum_{i: s_i = s} X_i * N_i * d_i ] = sum_{i: s_i = s} d_i,
 *
 * the true off-CPU time of that stack (and of every span, thread or
 * reason, which are functions of the wait too).  N_i may depend on
 * anything known before the coin (the CPU's recent switch rate below) but
 * not on the coin or d_i; it travels with the record.  Variance per stack
 * is sum (N_i - 1) d_i^2, so long waits dominate the error and the estimate
 * converges as waits accumulate.  The minimum block time is applied to the
 * true duration at switch-in, a deterministic cut: the estimator is
 * unbiased for "off-CPU time in waits >= min" (the documented quantity).
 * The coin is bpf_get_prandom_u32() % N; its modulo bias is < N / 2^32.
 *
 * N is either fixed (cfg_offcpu_sample_n > 0: --off-cpu-sample N) or
 * adaptive per CPU (cfg_offcpu_sample_n == 0): every SP_OFFCPU_WINDOW_NS
 * (checked every SP_OFFCPU_CLOCK_EVERY switch-outs) the CPU sets N = ceil(tracked switch-outs in the window / (rate * window))
 * so that about cfg_offcpu_rate captures per second per CPU are paid for,
 * whatever the switch rate; a thread that switches 100 times a second is
 * then captured every time (exact), a ping-pong at 100k switches/s is
 * sampled.  Only the coin's probability changes, never its independence.
 *
 * ACCOUNTING (per-CPU counters, abi.h), one outcome per invocation:
 *
 *   OFFCPU_SWITCHES = OFFCPU_IDLE + OFFCPU_KTHREAD + OFFCPU_FILTERED
 *                     + OFFCPU_EXITING + OFFCPU_SAMPLED_OUT
 *                     + OFFCPU_STATE_FULL + OFFCPU_CAPTURED
 *   OFFCPU_CAPTURED = OFFCPU_BELOW_MIN + RB_SENT_OFFCPU + RB_DROP_OFFCPU
 *                     + OFFCPU_UNCLOSED
 *                     + (still blocked when recording stopped; derived)
 *
 * OFFCPU_UNCLOSED: the thread's next capture found its previous record
 * still open, i.e. no sched_switch with it as next was seen in between
 * (observed a few times in 10^4 captures here, cause not pinned down); that
 * wait is lost, counted, and the record is reused.
 *
 * Reasons from prev_state: preempted or TASK_RUNNING -> SP_OFF_RUNQ (it
 * waits on the run queue), TASK_UNINTERRUPTIBLE -> SP_OFF_IO (D state),
 * TASK_INTERRUPTIBLE -> SP_OFF_SLEEP (sleep, futex, pipe, poll), anything
 * else (stopped, traced) -> SP_OFF_OTHER.  A thread in do_exit (PF_EXITING,
 * exit_state, TASK_DEAD) is not captured (OFFCPU_EXITING): its last switch
 * never switches back in, so every captured thread does run again.
 *
 * Not counted: waits that began before the program was attached (no
 * record), and the tail of waits still open at stop (counted as pending).
 */
#include "maps.bpf.h"
#include "stack.bpf.h"
#include "tracectx.bpf.h"
#include "unwind.bpf.h"

#define SP_TASK_RUNNING 0x0000
#define SP_TASK_INTERRUPTIBLE 0x0001
#define SP_TASK_UNINTERRUPTIBLE 0x0002
#define SP_TASK_DEAD 0x0080
#define SP_PF_EXITING 0x00000004
#define SP_PF_KTHREAD 0x00200000

/* Kernel frames to skip: the tracing glue above __schedule
 * (bpf_trace_run4, __bpf_trace_sched_switch, __traceiter_sched_switch on
 * 6.18), so a wait's kernel stack starts at __schedule. */
#define SP_OFFCPU_KSKIP 3

/* Adaptive sampler: look at the clock every this many switch-outs. */
#define SP_OFFCPU_CLOCK_EVERY 16

/* One pending record per blocked thread whose wait was captured. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sp_scratch);
} offcpu_pending SEC(".maps");

/* Per-CPU sampling state for the adaptive rate (see top comment).  Only
 * this CPU's sched_switch touches its slot, with interrupts off. */
struct sp_offcpu_rate {
	__u64 win_start_ns;
	__u64 win_switches;
	__u64 n;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_offcpu_rate);
} offcpu_rate SEC(".maps");

/* Records alive in offcpu_pending (bounded by cfg_offcpu_max_pending). */
__u64 sp_offcpu_live = 0;

static __always_inline __u64 sp_offcpu__n(void)
{
	struct sp_offcpu_rate *r;
	__u32 zero = 0;
	__u64 el, n, now;

	if (cfg_offcpu_sample_n)
		return cfg_offcpu_sample_n;
	r = bpf_map_lookup_elem(&offcpu_rate, &zero);
	if (!r)
		return 1;
	/* The clock is read every SP_OFFCPU_CLOCK_EVERY switch-outs only: it
	 * is the largest item of a sampled-out switch. */
	if ((++r->win_switches & (SP_OFFCPU_CLOCK_EVERY - 1)) && r->n)
		return r->n;
	now = bpf_ktime_get_ns();
	el = now - r->win_start_ns;
	if (r->win_start_ns == 0) {
		r->n = 1;
		r->win_start_ns = now;
		r->win_switches = 0;
	} else if (el >= SP_OFFCPU_WINDOW_NS) {
		/* ceil(switches / (rate * el / 1e9)), rate >= 1 */
		__u64 budget = (__u64)cfg_offcpu_rate * el;

		n = (r->win_switches * 1000000000ull + budget - 1) / budget;
		if (n < 1)
			n = 1;
		if (n > SP_OFFCPU_MAX_N)
			n = SP_OFFCPU_MAX_N;
		r->n = n;
		r->win_start_ns = now;
		r->win_switches = 0;
	}
	return r->n ? r->n : 1;
}

static __always_inline __u8 sp_offcpu__reason(bool preempt, unsigned int state)
{
	if (preempt || state == SP_TASK_RUNNING)
		return SP_OFF_RUNQ;
	if (state & SP_TASK_UNINTERRUPTIBLE)
		return SP_OFF_IO;
	if (state & SP_TASK_INTERRUPTIBLE)
		return SP_OFF_SLEEP;
	return SP_OFF_OTHER;
}

/* prev leaves the CPU: maybe capture its wait (see top comment). */
static __always_inline void sp_offcpu__out(void *ctx, bool preempt, struct task_struct *prev,
					   unsigned int state)
{
	__u32 tid = prev->pid, tgid = prev->tgid;
	struct sp_scratch *s;
	struct pt_regs *uregs;
	__u64 n, live;
	__u16 kn = 0;

	if (tid == 0) {
		sp_count(SP_CNT_OFFCPU_IDLE);
		return;
	}
	/* A dying thread's switches are not waits, and its last one never
	 * switches back in: a record made then would outlive the count. */
	if ((prev->flags & SP_PF_EXITING) || prev->exit_state || (state & SP_TASK_DEAD)) {
		sp_count(SP_CNT_OFFCPU_EXITING);
		return;
	}
	if (((prev->flags & SP_PF_KTHREAD) || !prev->mm) && !cfg_offcpu_kthreads) {
		sp_count(SP_CNT_OFFCPU_KTHREAD);
		return;
	}
	if (!sp_is_target_thread(tgid, tid)) {
		sp_count(SP_CNT_OFFCPU_FILTERED);
		return;
	}
	n = sp_offcpu__n();
	if (n > 1 && bpf_get_prandom_u32() % n) {
		sp_count(SP_CNT_OFFCPU_SAMPLED_OUT);
		return;
	}
	/* A record left behind by a failed delete is reused, not recounted. */
	s = bpf_task_storage_get(&offcpu_pending, prev, NULL, 0);
	if (s && s->hdr.type == SP_EV_OFFCPU)
		sp_count(SP_CNT_OFFCPU_UNCLOSED);	/* its switch-in was missed */
	if (!s) {
		live = __sync_fetch_and_add(&sp_offcpu_live, 1);
		if (live >= cfg_offcpu_max_pending) {
			__sync_fetch_and_add(&sp_offcpu_live, -1);
			sp_count(SP_CNT_OFFCPU_STATE_FULL);
			return;
		}
		s = bpf_task_storage_get(&offcpu_pending, prev, NULL,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!s) {
			__sync_fetch_and_add(&sp_offcpu_live, -1);
			sp_count(SP_CNT_OFFCPU_STATE_FULL);
			return;
		}
	}
	s->hdr.weight_ns = n;		/* the sampling factor until switch-in */
	s->hdr.pid = tgid;
	s->hdr.tid = tid;
	s->hdr.cpu = bpf_get_smp_processor_id();
	s->hdr.type = SP_EV_OFFCPU;
	s->hdr.flags = 0;
	s->hdr.reason = sp_offcpu__reason(preempt, state);
	s->hdr.ctx_status = SP_CTX_NONE;
	s->hdr.unw_end = SP_UNW_END_NONE;
	s->hdr.unw_fp = 0;
	s->hdr._pad0 = 0;
	__builtin_memset(&s->hdr.ctx, 0, sizeof(s->hdr.ctx));
	bpf_probe_read_kernel_str(s->hdr.comm, sizeof(s->hdr.comm), prev->comm);
	if (cfg_kernel_stacks) {
		long r = bpf_get_stack(ctx, s->frames, SP_MAX_FRAMES * sizeof(__u64),
				       SP_OFFCPU_KSKIP & BPF_F_SKIP_FIELD_MASK);

		if (r < 0) {
			s->hdr.flags |= SP_F_KSTACK_ERR;
			sp_count(SP_CNT_KSTACK_ERR);
		} else {
			kn = r / sizeof(__u64);
			if (kn >= SP_MAX_FRAMES - SP_OFFCPU_KSKIP) {
				s->hdr.flags |= SP_F_KSTACK_TRUNC;
				sp_count(SP_CNT_KSTACK_TRUNC);
			}
		}
	}
	s->hdr.kstack_n = kn;
	s->hdr.ustack_n = 0;
	if (prev->mm) {
		uregs = (struct pt_regs *)bpf_task_pt_regs(prev);
		s->hdr.ustack_n = sp_unw_user_stack(s, kn, uregs, true, tgid,
						    bpf_ktime_get_ns());
		sp_read_trace_ctx(s, tgid);
	}
	/* The wait starts when the capture is done (prev leaves right after). */
	s->hdr.ts_ns = bpf_ktime_get_ns();
	sp_count(SP_CNT_OFFCPU_CAPTURED);
}

/* A captured wait is over: blocked = now - start; written weighted by its
 * sampling factor, or counted as below the minimum. */
static __always_inline void sp_offcpu__close(struct sp_scratch *s, __u32 below_min,
					     __u32 sent, __u32 dropped)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 blocked = now > s->hdr.ts_ns ? now - s->hdr.ts_ns : 0;

	if (blocked < cfg_offcpu_min_ns) {
		sp_count(below_min);
		return;
	}
	s->hdr.weight_ns = blocked * s->hdr.weight_ns;
	/* sp_emit does not wake the collector per record: here that matters
	 * twice, since a wakeup preempts the profiled thread, which is a
	 * context switch, which is another off-CPU record (measured: an extra
	 * 30 us run-queue wait per record). */
	sp_emit(s, sent, dropped, false);
}

/* next gets the CPU back: close its captured wait, if any. */
static __always_inline void sp_offcpu__in(struct task_struct *next)
{
	struct sp_scratch *s;

	if (next->pid == 0)
		return;
	s = bpf_task_storage_get(&offcpu_pending, next, NULL, 0);
	if (!s)
		return;
	if (s->hdr.type != SP_EV_OFFCPU)
		goto del;	/* closed already; only its delete had failed */
	sp_offcpu__close(s, SP_CNT_OFFCPU_BELOW_MIN, SP_CNT_RB_SENT_OFFCPU, SP_CNT_RB_DROP_OFFCPU);
	s->hdr.type = 0;
del:
	if (bpf_task_storage_delete(&offcpu_pending, next) == 0)
		__sync_fetch_and_add(&sp_offcpu_live, -1);
	else
		sp_count(SP_CNT_OFFCPU_DELETE_ERR);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sp_offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	sp_count(SP_CNT_OFFCPU_SWITCHES);
	sp_offcpu__out(ctx, preempt, prev, prev_state);
	/* After prev's capture: next is still off the CPU while it runs. */
	sp_offcpu__in(next);
	return 0;
}
#include "goparks.bpf.h"	/* goroutine parks share the sampler above */
