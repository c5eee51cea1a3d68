/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * goparks.bpf.h - off-CPU waits of goroutines (--go-parks), included once,
 * by offcpu.bpf.c (it shares the off-CPU sampler and its bounds).
 *
 * WHY: a goroutine that waits on a sync.Mutex, in time.Sleep, on a channel
 * or on the network does not block its thread: it parks (runtime.gopark),
 * and the thread runs other goroutines or sleeps in the scheduler with
 * m.curg == NULL.  sched_switch sees no wait of that goroutine, and must not
 * give the scheduler's sleep anyone's labels.  (A blocking syscall - a file
 * read, a raw pipe read - keeps m.curg: sched_switch sees those.)  So the
 * goroutine's own wait is taken where it happens:
 *
 *   park   (uprobe inside runtime.gopark, after its prologue, on the
 *          goroutine's stack: R14 = g, the TLS chain leads to its labels):
 *          the off-CPU coin; if captured, the user stack (gopark and its
 *          callers: semacquire1 <- sync.(*Mutex).lockSlow <- your code),
 *          the goroutine's labels and the time go into go_park_pending,
 *          keyed by (tgid, g).
 *   resume (uprobe on the instruction after gopark's call to runtime.mcall:
 *          the goroutine runs again there, on whatever thread): blocked =
 *          now - start; emitted as an SP_EV_OFFCPU record, reason sleep,
 *          weighted like sched_switch's captures (blocked * N), unless
 *          shorter than the minimum.
 *
 * Offsets of both points come from the binary (go_binary.c); the probes are
 * attached per executable file, for every process that maps it, and these
 * programs keep only target processes with a Go descriptor.
 *
 * ACCOUNTING (per-CPU counters, abi.h):
 *   GO_PARKS = GO_PARK_SAMPLED_OUT + GO_PARK_STATE_FULL + GO_PARK_CAPTURED
 *   GO_PARK_CAPTURED = GO_PARK_BELOW_MIN + RB_SENT_GOPARK + RB_DROP_GOPARK
 *                      + GO_PARK_UNCLOSED + (exited while parked: removed by
 *                      user space, counted there) + (still parked at stop)
 *
 * Cost: two uprobe hits per park of a profiled Go binary (a breakpoint
 * trap each, captured or not): docs/benchmarks.md has the figure; hence
 * opt-in.
 */
#ifndef SPANPROF_GOPARKS_BPF_H
#define SPANPROF_GOPARKS_BPF_H

#include "maps.bpf.h"
#include "stack.bpf.h"
#include "tracectx.bpf.h"

struct sp_gopark_key {
	__u32 tgid;
	__u32 _pad;
	__u64 g;
};

/* One record per parked goroutine whose wait was captured; max_entries is
 * set by the loader to the off-CPU bound (cfg_offcpu_max_pending). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, struct sp_gopark_key);
	__type(value, struct sp_scratch);
} go_park_pending SEC(".maps");

/* Records alive in go_park_pending; user space subtracts the ones it
 * removes for processes that exited while parked. */
__u64 sp_gopark_live = 0;

SEC("uprobe")
int sp_go_park(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, zero = 0;
	struct sp_gopark_key key = { .tgid = tgid, .g = ctx->r14 };
	struct sp_scratch *s;
	__u64 n, live;

	/* the parking thread, as sched_switch's waits (record -t) */
	if (!sp_is_target_thread(tgid, (__u32)id) || !bpf_map_lookup_elem(&go_descs, &tgid))
		return 0;
	sp_count(SP_CNT_GO_PARKS);
	n = sp_offcpu__n();
	if (n > 1 && bpf_get_prandom_u32() % n) {
		sp_count(SP_CNT_GO_PARK_SAMPLED_OUT);
		return 0;
	}
	if (bpf_map_lookup_elem(&go_park_pending, &key)) {
		sp_count(SP_CNT_GO_PARK_UNCLOSED);	/* its resume was missed */
	} else {
		live = __sync_fetch_and_add(&sp_gopark_live, 1);
		if (live >= cfg_offcpu_max_pending) {
			__sync_fetch_and_add(&sp_gopark_live, -1);
			sp_count(SP_CNT_GO_PARK_STATE_FULL);
			return 0;
		}
	}
	/* Built in the per-CPU scratch (no perf sample can run on this CPU
	 * meanwhile: bpf_prog_active), copied into the map once. */
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		goto full;
	s->hdr.weight_ns = n;		/* the sampling factor until resume */
	s->hdr.pid = tgid;
	s->hdr.tid = (__u32)id;
	s->hdr.cpu = bpf_get_smp_processor_id();
	s->hdr.type = SP_EV_OFFCPU;
	s->hdr.flags = 0;
	s->hdr.reason = SP_OFF_SLEEP;
	s->hdr.ctx_status = SP_CTX_NONE;
	s->hdr._pad0 = 0;
	__builtin_memset(&s->hdr.ctx, 0, sizeof(s->hdr.ctx));
	bpf_get_current_comm(s->hdr.comm, sizeof(s->hdr.comm));
	s->hdr.kstack_n = 0;
	/* the uprobe's regs: user mode, its pc exact (the probed instruction) */
	s->hdr.ustack_n = sp_unw_user_stack(s, 0, ctx, false, tgid, bpf_ktime_get_ns());
	/* The goroutine's labels only: a thread's OTEP record or OBI entry
	 * is not the parked goroutine's (and skipping them keeps the frame
	 * plus the unwinder's loop callback under the verifier's 512 bytes). */
	if (cfg_read_ctx)
		sp_read_go_ctx(s, tgid);
	s->hdr.ts_ns = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&go_park_pending, &key, s, BPF_ANY))
		goto full;
	sp_count(SP_CNT_GO_PARK_CAPTURED);
	return 0;
full:
	__sync_fetch_and_add(&sp_gopark_live, -1);
	sp_count(SP_CNT_GO_PARK_STATE_FULL);
	return 0;
}

SEC("uprobe")
int sp_go_unpark(struct pt_regs *ctx)
{
	struct sp_gopark_key key = { .tgid = bpf_get_current_pid_tgid() >> 32, .g = ctx->r14 };
	struct sp_scratch *s = bpf_map_lookup_elem(&go_park_pending, &key);

	if (!s)
		return 0;	/* not captured (the common case) */
	sp_offcpu__close(s, SP_CNT_GO_PARK_BELOW_MIN, SP_CNT_RB_SENT_GOPARK, SP_CNT_RB_DROP_GOPARK);
	if (bpf_map_delete_elem(&go_park_pending, &key) == 0)
		__sync_fetch_and_add(&sp_gopark_live, -1);
	return 0;
}

#endif /* SPANPROF_GOPARKS_BPF_H */
