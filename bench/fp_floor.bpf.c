// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fp_floor.bpf.c - floor probes for bench/bpf_floor.py (issue 17, "BPF"):
 * perf_event programs that do one part of sp_oncpu's work and nothing
 * else, so that sp_oncpu's run_time_ns / run_cnt can be set against them
 * on the same samples.  A benchmark instrument, not part of spanprof.
 *
 *   floor_empty    returns at once: the fixed cost of a perf_event program
 *   floor_fp_walk  THE floor of the issue: the user stack walked by frame
 *                  pointer with bpf_probe_read_user (one 16-byte read of
 *                  {saved rbp, return address} per frame), up to
 *                  SP_MAX_FRAMES frames like sp_oncpu, the pcs written to a
 *                  per-CPU buffer; no kernel stack, no trace context, no
 *                  ring buffer, no counters beyond the two below
 *   floor_kstack   bpf_get_stack of the kernel stack when the sample hit
 *                  kernel mode (as sp_oncpu with kernel stacks on)
 *
 * Same sample selection as sp_oncpu under record -a (or -p PID: the
 * loader's -p sets target_tgid): idle (tid 0) returns at once; kernel
 * threads (no mm) have no user stack; in kernel mode the user registers
 * are the task's entry frame (bpf_task_pt_regs).
 *
 * floor_fp_walk and floor_kstack add 1 to samples and their frame count to
 * frames in their per-CPU buffer (the one write beside the pcs, read by the
 * bench for frames per sample: two adds to a value already looked up).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "spanprof/abi.h"

#define FLOOR_KERNEL_MIN 0xffff800000000000ULL

/* Set by the loader (-p): only this process's samples are walked, as
 * spanprof record -p streams only its target's. 0: every process. */
const volatile __u32 target_tgid = 0;

struct floor_buf {
	__u64 samples;
	__u64 frames;
	__u64 pc[SP_MAX_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct floor_buf);
} floor_fp_buf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct floor_buf);
} floor_k_buf SEC(".maps");

SEC("perf_event")
int floor_empty(struct bpf_perf_event_data *ctx)
{
	return 0;
}

SEC("perf_event")
int floor_fp_walk(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct { __u64 bp, ra; } rec;
	struct task_struct *task;
	struct floor_buf *b;
	struct pt_regs *r;
	__u64 pc, sp, bp;
	__u32 zero = 0, n;

	if ((__u32)id == 0 || (target_tgid && (__u32)(id >> 32) != target_tgid))
		return 0;
	task = bpf_get_current_task_btf();
	if (!task->mm)
		return 0;
	/* ctx fields read at fixed offsets first: the verifier refuses a
	 * ctx pointer merged with the BTF pointer of bpf_task_pt_regs. */
	pc = ctx->regs.ip;
	sp = ctx->regs.sp;
	bp = ctx->regs.bp;
	asm volatile("" : "+r"(pc), "+r"(sp), "+r"(bp));
	if (pc >= FLOOR_KERNEL_MIN) {
		r = (struct pt_regs *)bpf_task_pt_regs(task);
		pc = r->ip;
		sp = r->sp;
		bp = r->bp;
	}
	b = bpf_map_lookup_elem(&floor_fp_buf, &zero);
	if (!b)
		return 0;
	b->pc[0] = pc;
	for (n = 1; n < SP_MAX_FRAMES; n++) {
		if (!bp || (bp & 7) || bp < sp)
			break;
		if (bpf_probe_read_user(&rec, sizeof(rec), (void *)bp))
			break;
		if (!rec.ra)
			break;
		b->pc[n] = rec.ra;
		sp = bp + 16;
		bp = rec.bp;
	}
	b->samples++;
	b->frames += n;
	return 0;
}

SEC("perf_event")
int floor_kstack(struct bpf_perf_event_data *ctx)
{
	struct floor_buf *b;
	__u32 zero = 0;
	long n;

	if (PT_REGS_IP(&ctx->regs) < FLOOR_KERNEL_MIN ||
	    (target_tgid && (__u32)(bpf_get_current_pid_tgid() >> 32) != target_tgid))
		return 0;
	b = bpf_map_lookup_elem(&floor_k_buf, &zero);
	if (!b)
		return 0;
	n = bpf_get_stack(ctx, b->pc, sizeof(b->pc), 0);
	b->samples++;
	if (n > 0)
		b->frames += n / sizeof(__u64);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
