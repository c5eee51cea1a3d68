// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gogc.bpf.c - the GC epoch of Go processes: a uprobe on the entry of
 * runtime.gcSweep bumps the process's entry in go_gc_epochs, the GC cycle
 * the label cache checks (bpf/golabels.bpf.h, sp_read_go_ctx, has why
 * this function and why a hit then cannot be a freed and reused set).
 *
 * Attached by go_discovery once per Go executable file with pid -1 (every
 * process mapping it, present and future; the tgid is looked up here),
 * not once per process: one probe covers a thousand replicas and a
 * process exec'ed later with no window before its own attach, and a
 * per-process probe would cost a perf event and a link each.  The price:
 * a process running the same file that is not profiled traps once per GC
 * cycle too (counted GO_GC_UNTRACKED; a GC cycle takes milliseconds).
 *
 * Entry only, never a uretprobe: Go moves goroutine stacks, and a
 * uretprobe's return-address trampoline on a moved stack crashes it.
 * gcSweep runs on the system stack anyway; the entry is all we need.
 *
 * Only an existing entry is bumped: user space creates it (BPF_NOEXIST,
 * so a count is never reset) before it installs a descriptor that tells
 * the label read to use it, so no GC cycle of such a process goes
 * uncounted; a process without an entry has no descriptor using one.
 */
#include "maps.bpf.h"

SEC("uprobe")
int sp_go_gc(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 *epoch = bpf_map_lookup_elem(&go_gc_epochs, &tgid);

	if (!epoch) {
		sp_count(SP_CNT_GO_GC_UNTRACKED);
		return 0;
	}
	/* a locked add: ordered before gcSweep's stores (sweepgen, then the
	 * sweeps that free memory) on x86, which the label read relies on */
	__sync_fetch_and_add(epoch, 1);
	sp_count(SP_CNT_GO_GC_EPOCH);
	return 0;
}
