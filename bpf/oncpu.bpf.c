// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * oncpu.bpf.c - the on-CPU sampler: a perf_event program attached to one
 * PERF_COUNT_SW_CPU_CLOCK event per online CPU at a prime frequency.
 *
 * Each sample becomes one variable-length struct sp_event record in the
 * ring buffer (no in-kernel aggregation): time, pid, tid, cpu, comm, the
 * trace context read from the thread's TLS, kernel frames, user frames.
 * Idle samples are counted, and streamed only when asked.  A failed ring
 * buffer write is counted per CPU (SP_CNT_RB_DROP_ONCPU), so that
 * ONCPU_EVENTS = IDLE_SKIPPED + FILTERED + RB_SENT_ONCPU + RB_DROP_ONCPU.
 */
#include "maps.bpf.h"
#include "stack.bpf.h"
#include "tracectx.bpf.h"
#include "unwind.bpf.h"

/*
 * Benchmark instrument (cfg_time_ctx, off in production; the verifier then
 * drops this code): per CPU, the context reads timed, the ns they took
 * between two bpf_ktime_get_ns calls, and the ns of an empty interval
 * between two back-to-back calls, so that read_ns - clock_ns is the read's
 * own cost.  Read by bench/ctx_cost.py with bpftool.
 */
struct sp_ctx_timing {
	__u64 n;
	__u64 read_ns;
	__u64 clock_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_ctx_timing);
} ctx_timing SEC(".maps");

static __always_inline void sp_read_trace_ctx_timed(struct sp_scratch *s, __u32 tgid)
{
	struct sp_ctx_timing *t;
	__u32 zero = 0;
	__u64 t0, t1, t2;

	if (!cfg_time_ctx) {
		sp_read_trace_ctx(s, tgid);
		return;
	}
	t0 = bpf_ktime_get_ns();
	sp_read_trace_ctx(s, tgid);
	t1 = bpf_ktime_get_ns();
	t2 = bpf_ktime_get_ns();
	t = bpf_map_lookup_elem(&ctx_timing, &zero);
	if (t) {
		t->n++;
		t->read_ns += t1 - t0;
		t->clock_ns += t2 - t1;
	}
}

/*
 * Benchmark instrument (cfg_time_unwind, off in production): per CPU, the
 * user stacks walked, their frames and the ns the walks took (between two
 * bpf_ktime_get_ns; clock_ns is the cost of an empty interval).  Read by
 * bench/unwind_cost.py with bpftool.
 */
struct sp_unwind_timing {
	__u64 n;
	__u64 frames;
	__u64 ns;
	__u64 clock_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_unwind_timing);
} unwind_timing SEC(".maps");

static __always_inline __u16 sp_user_stack_timed(struct sp_scratch *s, __u16 kn,
						 struct pt_regs *r, bool in_kernel, __u32 tgid)
{
	struct sp_unwind_timing *t;
	__u32 zero = 0;
	__u64 t0, t1, t2;
	__u16 n;

	if (!cfg_time_unwind)
		return sp_unw_user_stack(s, kn, r, in_kernel, tgid, s->hdr.ts_ns);
	t0 = bpf_ktime_get_ns();
	n = sp_unw_user_stack(s, kn, r, in_kernel, tgid, s->hdr.ts_ns);
	t1 = bpf_ktime_get_ns();
	t2 = bpf_ktime_get_ns();
	t = bpf_map_lookup_elem(&unwind_timing, &zero);
	if (t) {
		t->n++;
		t->frames += n;
		t->ns += t1 - t0;
		t->clock_ns += t2 - t1;
	}
	return n;
}

SEC("perf_event")
int sp_oncpu(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct task_struct *task;
	struct sp_scratch *s;
	struct pt_regs *uregs;
	__u32 zero = 0;
	__u64 ip, kernel_mode;
	__u16 kn = 0;
	bool wake = false;

	sp_count(SP_CNT_ONCPU_EVENTS);
	if (tid == 0 && !cfg_stream_idle) {
		sp_count(SP_CNT_IDLE_SKIPPED);
		return 0;
	}
	if (!sp_is_target_thread(tgid, tid)) {
		sp_count(SP_CNT_FILTERED);
		return 0;
	}
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s) {
		sp_count(SP_CNT_SCRATCH_ERR);
		sp_count(SP_CNT_RB_DROP_ONCPU);
		return 0;
	}
	s->hdr.ts_ns = bpf_ktime_get_ns();
	s->hdr.weight_ns = 0;
	s->hdr.pid = tgid;
	s->hdr.tid = tid;
	s->hdr.cpu = bpf_get_smp_processor_id();
	s->hdr.type = SP_EV_ONCPU;
	s->hdr.flags = tid == 0 ? SP_F_IDLE : 0;
	s->hdr.reason = 0;
	s->hdr.ctx_status = SP_CTX_NONE;
	s->hdr.unw_end = SP_UNW_END_NONE;
	s->hdr.unw_fp = 0;
	s->hdr._pad0 = 0;
	__builtin_memset(&s->hdr.ctx, 0, sizeof(s->hdr.ctx));
	bpf_get_current_comm(s->hdr.comm, sizeof(s->hdr.comm));

	ip = PT_REGS_IP(&ctx->regs);
	kernel_mode = ip >= SP_KERNEL_MIN;
	if (kernel_mode) {
		s->hdr.flags |= SP_F_KERNEL_MODE;
		if (cfg_kernel_stacks)
			kn = sp_kernel_stack(ctx, s);
	}
	s->hdr.kstack_n = kn;
	s->hdr.ustack_n = 0;

	task = bpf_get_current_task_btf();
	if (tid != 0 && task->mm) {
		/* In the kernel, the user registers are the task's entry frame. */
		if (kernel_mode) {
			uregs = (struct pt_regs *)bpf_task_pt_regs(task);
			s->hdr.ustack_n = sp_user_stack_timed(s, kn, uregs, true, tgid);
		} else {
			s->hdr.ustack_n = sp_user_stack_timed(s, kn, (struct pt_regs *)&ctx->regs,
							      false, tgid);
		}
		sp_read_trace_ctx_timed(s, tgid);
		/* last: a flag live across the context read raised the
		 * verifier's peak states by 18% (2123 -> 2508: 3 MiB more
		 * kernel memory at load, test_agent_memguard's cgroup) */
		wake = sp_unw_wake_unread(tgid, s->hdr.ustack_n, s->hdr.ts_ns);
	}
	sp_emit(s, SP_CNT_RB_SENT_ONCPU, SP_CNT_RB_DROP_ONCPU, wake);
	return 0;
}
