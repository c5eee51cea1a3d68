// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * proc.bpf.c - process lifecycle events the collector needs to keep its
 * process table right: exec (mappings replaced: read /proc/PID/maps now,
 * while a short-lived process is still alive), exit of a group leader
 * (process gone), and fork (a profiled command's children become targets).
 *
 * Also: prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, ..., "OTEL_CTX"), the last
 * step of publishing an OTEP 4719 process context, so a process that
 * publishes after exec is examined again without rescanning /proc.  (A
 * classic tracepoint: it fires for prctl only, unlike raw_tp/sys_enter,
 * which would cost every syscall.)  Other names are not publications: Go
 * 1.25 and later name their heap mappings this way (" Go: heap"), at every
 * heap growth.  A publication wakes the collector at most once per
 * SP_PUBLISH_WAKE_NS; those in between wait in the ring for that drain or
 * the collector's fast drain after it (pipeline.c), so a process calling
 * prctl in a loop cannot make it wake for every call.
 *
 * And, for the unwinder (unwind.bpf.h): exec and every mmap/mprotect with
 * PROT_EXEC make the process's executable ranges in BPF stale (unwind_seq
 * += 1); the first such change after user space wrote fresh ranges sends
 * one SP_EV_MMAP_EXEC so the collector reads /proc/PID/maps again.  Until
 * it does, a pc outside the known ranges steps by frame pointer instead of
 * ending the stack (a dlopen()ed library is not cut off).
 *
 * This file also defines the maps and configuration shared by all programs.
 */
#define SP_DEFINE_SHARED
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct sp_proc_event {
	struct sp_event hdr;	/* no frames follow */
};

/* wake: BPF_RB_FORCE_WAKEUP (a short-lived process's maps must be read
 * while it lives) or BPF_RB_NO_WAKEUP (the record waits for the next
 * drain). */
static __always_inline void emit_proc_event(struct task_struct *task, __u8 type, __u64 wake)
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
	bpf_ringbuf_submit(e, wake);
	sp_count(SP_CNT_RB_SENT_PROC);
}

/* Exec and exit: with cfg_wake_unread the maps of a new image are read at
 * its first sample, and that sample wakes the collector (unwind.bpf.h), so
 * these records wait for the next drain: on a host that execs 100
 * processes a second, two forced wakeups each cost the collector more
 * than all else it does for them (docs/benchmarks.md).  Without it, an
 * exec is read at once: wake. */
static __always_inline __u64 sp_lifecycle_wake(void)
{
	return cfg_wake_unread ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP;
}

/* The process's ranges changed: bump its staleness sequence; returns true
 * when they were fresh until now (the caller tells user space once). */
static __always_inline bool sp_unw_mark_stale(__u32 tgid)
{
	__u32 slot = tgid & (SP_UNW_SEQ_SLOTS - 1);
	struct sp_unw_proc *p;
	bool fresh = false;
	__u64 *seq;

	seq = bpf_map_lookup_elem(&unwind_seq, &slot);
	if (!seq)
		return false;
	p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (p && p->seq == (__u32)*seq)
		fresh = true;
	__sync_fetch_and_add(seq, 1);
	return fresh;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sp_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u8 *state;

	/* record's command is streamed from its new image on. */
	state = cfg_filter_pids ? bpf_map_lookup_elem(&targets, &tgid) : NULL;
	if (state && *state == SP_TARGET_AT_EXEC)
		*state = SP_TARGET_ON;
	/* A new image: the selection is decided again at its first sample. */
	if (cfg_exclude)
		bpf_map_delete_elem(&excluded, &tgid);
	/* The old image's ranges are wrong from now on, whoever the target. */
	sp_unw_mark_stale(tgid);
	bpf_map_delete_elem(&unwind_procs, &tgid);
	/* So are the old image's Go offsets: no label read (nor a label cache
	 * hit, keyed by the descriptor's seq) until user space describes the
	 * new image. */
	bpf_map_delete_elem(&go_descs, &tgid);
	if (!sp_is_target(tgid))
		return 0;
	emit_proc_event(task, SP_EV_EXEC, sp_lifecycle_wake());
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
		emit_proc_event(task, SP_EV_EXIT, sp_lifecycle_wake());
		return 0;
	}
	if (!sp_is_target(tgid))
		return 0;
	emit_proc_event(task, SP_EV_EXIT, sp_lifecycle_wake());
	bpf_map_delete_elem(&unwind_procs, &tgid);
	if (cfg_filter_pids)
		bpf_map_delete_elem(&targets, &tgid);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sp_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid, ctgid;
	__u8 *state, copy;

	if (!cfg_filter_pids)
		return 0;
	ptgid = BPF_CORE_READ(parent, tgid);
	ctgid = BPF_CORE_READ(child, tgid);
	state = ptgid != ctgid ? bpf_map_lookup_elem(&targets, &ptgid) : NULL;
	if (state) {
		copy = *state;
		bpf_map_update_elem(&targets, &ctgid, &copy, BPF_ANY);
	}
	return 0;
}

#define SP_PR_SET_VMA 0x53564d41
#define SP_PR_SET_VMA_ANON_NAME 0
#define SP_OTEL_CTX_WORD 0x5854435f4c45544full	/* "OTEL_CTX", little-endian */
#define SP_PUBLISH_WAKE_NS 10000000ull		/* 10 ms */

__u64 publish_woke_ns;	/* the last publication that woke the collector */

/* The name argument of PR_SET_VMA_ANON_NAME: true unless it is readable
 * and not "OTEL_CTX" (a name that cannot be read is taken for one: the
 * collector's re-read decides). */
static __always_inline bool sp_names_otel_ctx(__u64 uname)
{
	char name[9];
	__u64 word;

	if (!uname)
		return false;	/* clears the name */
	if (bpf_probe_read_user_str(name, sizeof(name), (const void *)uname) < 0)
		return true;
	__builtin_memcpy(&word, name, sizeof(word));
	return word == SP_OTEL_CTX_WORD && !name[8];
}

SEC("tracepoint/syscalls/sys_enter_prctl")
int sp_prctl(struct trace_event_raw_sys_enter *ctx)
{
	struct task_struct *task;
	bool quiet;
	__u64 now;

	if (ctx->args[0] != SP_PR_SET_VMA || ctx->args[1] != SP_PR_SET_VMA_ANON_NAME)
		return 0;
	task = bpf_get_current_task_btf();
	if (!sp_is_target(BPF_CORE_READ(task, tgid)))
		return 0;
	if (!sp_names_otel_ctx(ctx->args[4])) {
		sp_count(SP_CNT_VMA_NAME_OTHER);
		return 0;
	}
	/* Racy across CPUs: at worst a few more wakeups in a storm. */
	now = bpf_ktime_get_ns();
	quiet = now - publish_woke_ns < SP_PUBLISH_WAKE_NS;
	if (!quiet)
		publish_woke_ns = now;
	sp_count(quiet ? SP_CNT_PUBLISH_QUIET : SP_CNT_PUBLISH_WOKE);
	emit_proc_event(task, SP_EV_CTX_PUBLISH, quiet ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
	return 0;
}

#define SP_PROT_EXEC 0x4

/* A new executable mapping (dlopen, a JIT's code page): tell user space
 * once per stale episode.  Only processes whose ranges are in BPF matter:
 * the others are read at their first sample anyway. */
static __always_inline void sp_unw_exec_mapping(unsigned long prot)
{
	struct task_struct *task;
	__u32 tgid;

	if (!(prot & SP_PROT_EXEC))
		return;
	task = bpf_get_current_task_btf();
	tgid = task->tgid;
	if (!sp_unw_mark_stale(tgid) || !sp_is_target(tgid))
		return;
	emit_proc_event(task, SP_EV_MMAP_EXEC, BPF_RB_FORCE_WAKEUP);
	sp_count(SP_CNT_UNW_MMAP_EVENTS);
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int sp_mmap(struct trace_event_raw_sys_enter *ctx)
{
	sp_unw_exec_mapping(ctx->args[2]);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mprotect")
int sp_mprotect(struct trace_event_raw_sys_enter *ctx)
{
	sp_unw_exec_mapping(ctx->args[2]);
	return 0;
}
