// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * proc.bpf.c - process lifecycle events the collector needs to keep its
 * process table right: exec (mappings replaced: read /proc/PID/maps now,
 * while a short-lived process is still alive), exit of a group leader
 * (process gone), and fork (a profiled command's children become targets).
 *
 * Also: prctl(PR_SET_VMA, ...), the last step of publishing an OTEP 4719
 * process context, so a process that publishes after exec is examined
 * again without rescanning /proc.  (A classic tracepoint: it fires for
 * prctl only, unlike raw_tp/sys_enter, which would cost every syscall.)
 *
 * This file also defines the maps and configuration shared by all programs.
 */
#define SP_DEFINE_SHARED
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct sp_proc_event {
	struct sp_event hdr;	/* no frames follow */
};

static __always_inline void emit_proc_event(struct task_struct *task, __u8 type)
{
	struct sp_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		sp_count(SP_CNT_RB_DROP_PROC);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->pid = BPF_CORE_READ(task, tgid);
	e->tid = BPF_CORE_READ(task, pid);
	e->cpu = bpf_get_smp_processor_id();
	e->type = type;
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	/* Rare and urgent (a short-lived process's maps must be read while it
	 * lives): wake the collector now. */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	sp_count(SP_CNT_RB_SENT_PROC);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sp_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);

	/* A new image: the selection is decided again at its first sample. */
	if (cfg_exclude)
		bpf_map_delete_elem(&excluded, &tgid);
	if (!sp_is_target(tgid))
		return 0;
	emit_proc_event(task, SP_EV_EXEC);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sp_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);

	if (BPF_CORE_READ(task, pid) != tgid)
		return 0;
	/* An excluded process's exit is told too: user space forgets its
	 * verdict, so a reused pid is decided afresh. */
	if (cfg_exclude && !bpf_map_delete_elem(&excluded, &tgid)) {
		emit_proc_event(task, SP_EV_EXIT);
		return 0;
	}
	if (!sp_is_target(tgid))
		return 0;
	emit_proc_event(task, SP_EV_EXIT);
	if (cfg_filter_pids)
		bpf_map_delete_elem(&targets, &tgid);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sp_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid, ctgid;
	__u8 one = 1;

	if (!cfg_filter_pids)
		return 0;
	ptgid = BPF_CORE_READ(parent, tgid);
	ctgid = BPF_CORE_READ(child, tgid);
	if (ptgid != ctgid && bpf_map_lookup_elem(&targets, &ptgid))
		bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
	return 0;
}

#define SP_PR_SET_VMA 0x53564d41

SEC("tracepoint/syscalls/sys_enter_prctl")
int sp_prctl(struct trace_event_raw_sys_enter *ctx)
{
	struct task_struct *task;

	if (ctx->args[0] != SP_PR_SET_VMA)
		return 0;
	task = bpf_get_current_task_btf();
	if (!sp_is_target(BPF_CORE_READ(task, tgid)))
		return 0;
	emit_proc_event(task, SP_EV_CTX_PUBLISH);
	return 0;
}
