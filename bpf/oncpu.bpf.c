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

	sp_count(SP_CNT_ONCPU_EVENTS);
	if (tid == 0 && !cfg_stream_idle) {
		sp_count(SP_CNT_IDLE_SKIPPED);
		return 0;
	}
	if (!sp_is_target(tgid)) {
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
		if (kernel_mode) {
			uregs = (struct pt_regs *)bpf_task_pt_regs(task);
			s->hdr.ustack_n = sp_user_stack(s, kn, BPF_CORE_READ(uregs, ip),
							BPF_CORE_READ(uregs, bp));
		} else {
			s->hdr.ustack_n = sp_user_stack(s, kn, ip, PT_REGS_FP(&ctx->regs));
		}
		sp_read_trace_ctx(s, tgid);
	}
	sp_emit(s, SP_CNT_RB_SENT_ONCPU, SP_CNT_RB_DROP_ONCPU);
	return 0;
}
