/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * maps.bpf.h - maps and configuration shared by every spanprof BPF file.
 *
 * The BPF files are compiled separately and linked into one object
 * (bpftool gen object), so there is one ring buffer, one counter map and one
 * configuration for all programs.  Exactly one file (proc.bpf.c) defines
 * SP_DEFINE_SHARED; the others see extern declarations of the same text.
 */
#ifndef SPANPROF_MAPS_BPF_H
#define SPANPROF_MAPS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "spanprof/abi.h"

#ifdef SP_DEFINE_SHARED
#define SP_SHARED
#define SP_CONFIG(type, name, init) const volatile type name = init
#else
#define SP_SHARED extern
#define SP_CONFIG(type, name, init) extern const volatile type name
#endif

/* Configuration, set in .rodata by the loader before load. */
SP_CONFIG(__u8, cfg_filter_pids, 0);	/* only stream processes in targets */
SP_CONFIG(__u8, cfg_filter_tids, 0);	/* only stream threads in target_tids */
SP_CONFIG(__u8, cfg_exclude, 0);	/* never stream processes in excluded */
SP_CONFIG(__u8, cfg_stream_idle, 0);	/* stream idle samples too */
SP_CONFIG(__u8, cfg_kernel_stacks, 1);	/* take kernel stacks */
SP_CONFIG(__u8, cfg_read_ctx, 1);	/* read OTEP 4947 trace context */
SP_CONFIG(__u8, cfg_obi, 0);		/* obi_ctx is OBI's pinned map */
SP_CONFIG(__u8, cfg_read_go, 1);	/* read Go processes' pprof labels
					 * (golabels.bpf.h; also needs
					 * cfg_read_ctx) */
SP_CONFIG(__u8, cfg_go_cache, 1);	/* cache parsed Go label sets
					 * (golabels.bpf.h, go_label_cache) */
SP_CONFIG(__u8, cfg_go_epoch, 1);	/* the cache's GC cycle from go_gc_epochs
					 * when the descriptor says so; 0
					 * (benchmark): runtime.mheap_.sweepgen */
SP_CONFIG(__u8, cfg_time_ctx, 0);	/* benchmark: time the context read
					 * (oncpu.bpf.c, map ctx_timing) */
/* Off-CPU (offcpu.bpf.c; its program is attached only with --off-cpu). */
SP_CONFIG(__u64, cfg_offcpu_min_ns, 0);	/* waits shorter are not written */
SP_CONFIG(__u32, cfg_offcpu_sample_n, 1);	/* capture 1 in N; 0 = adaptive */
SP_CONFIG(__u32, cfg_offcpu_rate, 1000);	/* adaptive: captures/s per CPU */
SP_CONFIG(__u32, cfg_offcpu_max_pending, 8192);	/* captured waits open at once */
SP_CONFIG(__u8, cfg_offcpu_kthreads, 0);	/* kernel threads' waits too */
/* User stacks (bpf/unwind.bpf.h): 1 = every frame by frame pointer
 * (--unwind fp); 0 = CFI tables first, frame pointer where there is none. */
SP_CONFIG(__u8, cfg_unwind_fp, 0);
/* Wake the collector for a sample of a process without ranges (its maps
 * not read yet: lazy exec reads), at most once a second per process
 * (unread_woken): the collector then reads the maps while it lives,
 * instead of polling every 10 ms after every exec. */
SP_CONFIG(__u8, cfg_wake_unread, 0);
SP_CONFIG(__u8, cfg_time_unwind, 0);	/* benchmark: time the user-stack walk
					 * (oncpu.bpf.c, map unwind_timing) */
/* The per-walk stack copy (unwind.bpf.h, "Stack copy"): bytes per chunk
 * (a power of two, SP_UCOPY_CHUNK_MIN..SP_UCOPY_CHUNK_MAX; 0 = off: every
 * word read directly) and chunks kept (1..SP_UCOPY_SLOTS_MAX).  Production
 * keeps the defaults; SPANPROF_BENCH_UCOPY=BYTES[xSLOTS] sets them for
 * bench/unwind_cost.py, SPANPROF_BENCH_UCOPY_VERIFY=1 sets cfg_ucopy_verify
 * (every copied word also read directly and compared: the exactness check
 * of tests/integration/test_unwind_stack_copy.py). */
SP_CONFIG(__u32, cfg_ucopy_bytes, 1024);
SP_CONFIG(__u32, cfg_ucopy_slots, 2);
SP_CONFIG(__u8, cfg_ucopy_verify, 0);

/* All events: variable-length struct sp_event records.  Size set by the
 * loader (bpf_map__set_max_entries) before load. */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");

/* Counters indexed by enum sp_counter; summed over CPUs in user space. */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_COUNTERS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Target processes (tgid -> enum sp_target_state) when cfg_filter_pids;
 * children of targets are added on fork (in their parent's state), so a
 * profiled command's whole tree is followed. */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

/* Target threads (tid -> 1) when cfg_filter_tids (record -t): checked
 * after targets, so only threads of target processes are streamed. */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} target_tids SEC(".maps");

/* Processes the agent's target selection excluded (tgid -> 1) when
 * cfg_exclude: their samples stop here, costing no user-space work.
 * Deleted on exec (user space decides again) and exit (pid reuse). */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} excluded SEC(".maps");

/* Per-process thread-context descriptors (see abi.h), filled by user space. */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_TLS_DESCS_MAX);
	__type(key, __u32);
	__type(value, struct sp_tls_desc);
} tls_descs SEC(".maps");

/* Per-process Go descriptors (abi.h), filled by user space for processes
 * whose executable is a Go binary. */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_GO_DESCS_MAX);
	__type(key, __u32);
	__type(value, struct sp_go_desc);
} go_descs SEC(".maps");

/* Per Go process whose binary has the GC epoch probe (abi.h, gc_epoch):
 * its GC epoch, created (0) by user space before it installs a
 * descriptor with gc_epoch set, deleted at exit; bumped by sp_go_gc
 * (gogc.bpf.c), which never creates an entry (golabels.bpf.h says why).
 * Preallocated: the perf_event program reads it. */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_GO_DESCS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} go_gc_epochs SEC(".maps");

/* OBI's shared map (abi.h): the loader reuses the pinned map's fd when it
 * exists, else shrinks this placeholder to one entry and leaves cfg_obi 0. */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SP_OBI_MAP_ENTRIES);
	__type(key, __u64);
	__type(value, struct sp_obi_ctx);
} obi_ctx SEC(".maps");

/* One record under construction per CPU.  Frames are indexed with a mask of
 * 255 so the verifier can bound every store; hence 256 slots, plus room for
 * SP_CTX_ATTRS_MAX bytes of attrs copied right after the last frame. */
#define SP_SCRATCH_SLOTS (256 + SP_CTX_ATTRS_MAX / 8)

struct sp_scratch {
	struct sp_event hdr;
	__u64 frames[SP_SCRATCH_SLOTS];
};

_Static_assert(sizeof(struct sp_scratch) == SP_OFFCPU_REC_SIZE, "abi.h states this size");

SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_scratch);
} scratch SEC(".maps");

/* Go pprof label reads (golabels.bpf.h): the label pairs collected, one
 * bucket, an id's hex, the attrs being built. */
struct sp_go_str {
	__u64 ptr;
	__u64 len;
};

struct sp_go_pair {
	struct sp_go_str key;
	struct sp_go_str value;
};

_Static_assert(sizeof(struct sp_go_pair) == SP_GO_LABEL_SIZE, "a label is two Go strings");

/* Room past SP_CTX_ATTRS_MAX so that a masked offset plus the longest
 * entry stays inside: the verifier sees every write bounded. */
#define SP_GO_ATTRS_ROOM (SP_CTX_ATTRS_MAX + 2 + SP_GO_KEY_MAX + SP_GO_VALUE_MAX)

/* golabels.bpf.h: state the loop callbacks share: in the per-CPU go_scratch, not on the
 * stack (the caller's frame plus a bpf_loop callback's frame must stay
 * under 512 bytes also in the uprobe program and with the unwinder). */
struct sp_go_walk {
	/* bucket walk (map layout) */
	__u64 buckets, oldbuckets, cur;
	__u32 nb, nold, table;	/* table: next table slot to start */
	__u32 read_ok;		/* buckets read */
	/* pairs collected, then processed */
	__u32 n;
	__u32 attrs_len;
	__u8 trace_id[SP_TRACE_ID_LEN];
	__u8 span_id[SP_SPAN_ID_LEN];
	__u8 have_trace, have_span, bad, cut, label_err;
	__u8 fault;		/* some read failed: the result is not cached */
};

/* A label set's parsed result: what a read writes into the record and
 * counts (golabels.bpf.h, sp_go_apply), and the value of go_label_cache. */
struct sp_go_cached {
	__u32 gen;		/* the GC cycle when it was read: the
				 * epoch's low 32 bits, or sweepgen */
	__u32 attrs_len;
	__u16 outcome;		/* enum sp_counter: SP_CNT_GO_IDS .. BAD_IDS */
	__u8 status;		/* enum sp_ctx_status */
	__u8 cut;		/* SP_CNT_GO_LABELS_CUT, again at each hit */
	__u32 _pad;
	__u8 trace_id[SP_TRACE_ID_LEN];
	__u8 span_id[SP_SPAN_ID_LEN];
	__u8 attrs[SP_CTX_ATTRS_MAX];
};

_Static_assert(sizeof(struct sp_go_cached) == 40 + SP_CTX_ATTRS_MAX, "no hidden padding");

/* go_label_cache's key: the process, its descriptor's number and the
 * goroutine's labels pointer (g.labels). */
struct sp_go_cache_key {
	__u32 tgid;
	__u32 seq;		/* sp_go_desc.seq */
	__u64 lp;
};

/* The first bytes of runtime.g, read at once: g.stack {lo, hi} (offset 0),
 * g.m, g.sched.sp and g.labels lie inside for every release of the
 * version table (g.labels <= 360). */
#define SP_GO_G_SPAN 368

struct sp_go_scratch {
	struct sp_go_walk walk;
	struct sp_go_cache_key key;
	struct sp_go_cached res;
	struct sp_go_pair pairs[SP_GO_MAX_LABELS];
	__u8 bucket[SP_GO_BUCKET_SIZE];
	__u8 hex[32];
	__u8 attrs[256];
	__u8 gspan[SP_GO_G_SPAN];
	__u64 g0_stack[2];	/* m.g0's g.stack {lo, hi} */
};

_Static_assert(SP_GO_ATTRS_ROOM <= 256, "attrs room");

/* One label read under way per CPU (golabels.bpf.h).  The on-CPU program
 * runs in hard-irq context, sched_switch with irqs off: they never nest. */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_go_scratch);
} go_scratch SEC(".maps");

/* Parsed label sets (golabels.bpf.h, "Cache"): LRU, so a full cache
 * evicts the coldest set (re-parsed at its next sample, never wrong). */
#define SP_GO_CACHE_ENTRIES 2048

SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SP_GO_CACHE_ENTRIES);
	__type(key, struct sp_go_cache_key);
	__type(value, struct sp_go_cached);
} go_label_cache SEC(".maps");

/*
 * Unwind store (abi.h, "User-stack unwinding"): the blob's chunks, the file
 * descriptors, the processes' range lists, and the staleness sequence.
 * User space fills them (src/collector/unwind/unwind_bpf.c); only the
 * template of the inner chunk maps is declared here: chunks are created on
 * demand up to the byte budget, so an idle host pays for none.
 */
struct sp_unw_chunk_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, SP_UNW_CHUNK_WORDS);
	__type(key, __u32);
	__type(value, __u64);
};

SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SP_UNW_CHUNKS_MAX);
	__type(key, __u32);
	__array(values, struct sp_unw_chunk_map);
} unwind_chunks SEC(".maps");

/* Mmapable: user space writes descriptors and reads last_used_ns in
 * place.  Fixed cost SP_UNW_FILES_MAX x 40 B = 640 KiB. */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, SP_UNW_FILES_MAX);
	__type(key, __u32);
	__type(value, struct sp_unw_file);
} unwind_files SEC(".maps");

SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_UNW_PROCS_MAX);
	__type(key, __u32);
	__type(value, struct sp_unw_proc);
} unwind_procs SEC(".maps");

/* Per-process staleness sequence, indexed by tgid & (SP_UNW_SEQ_SLOTS - 1):
 * BPF adds 1 on exec and on PROT_EXEC mmap/mprotect; user space reads it
 * (mmapped) before reading /proc/PID/maps and stores it in sp_unw_proc.seq.
 * Two pids sharing a slot only cause an extra re-read. */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, SP_UNW_SEQ_SLOTS);
	__type(key, __u32);
	__type(value, __u64);	/* array elements are 8 bytes anyway */
} unwind_seq SEC(".maps");

/* Rows cached per CPU (power of two), direct-mapped: 8 KiB per CPU.  At 64
 * a walk's return addresses collided often enough that a deep no-frame-
 * pointer stack searched 4.3 rows per walk and a Python loop 3.3; at 256,
 * 0.11 and 0.58 (docs/benchmarks.md, "The per-CPU row cache"). */
#define SP_UNW_CACHE 256
#define SP_UNW_SIGCTX_WORDS 17	/* r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip */

/* Per-CPU walk state of bpf/unwind.bpf.h (the bpf_loop callback's context points here, so the
 * 512-byte stack stays free for the programs).  Off-CPU uses it too: the
 * sched_switch program runs with interrupts off, on-CPU from the timer
 * interrupt, so one walk per CPU at a time. */
struct sp_unw_state {
	__u64 pc, sp, bp;
	__u64 regs[16];		/* the interrupted frame's registers, DWARF order */
	__u64 now_ns;
	__u64 r_start, r_end, r_word;	/* cached range (r_end 0: none) */
	/* A signal frame's saved general registers as read (struct
	 * sigcontext_64's order; unwind.bpf.c): here, not on the BPF stack,
	 * which the step shares with the program (512 bytes in all). */
	__u64 sigctx[SP_UNW_SIGCTX_WORDS];
	/* Rows found lately, direct-mapped by file offset: [lo, hi) of the
	 * file named by range word `file` has rule `rule` (file 0: empty). */
	struct {
		__u64 lo, hi, rule;
		__u32 file, _pad;
	} cache[SP_UNW_CACHE];
	__u32 pbase, pn;	/* the process's range list */
	__u16 kn, n;		/* kernel frames before ours, user frames emitted */
	__u16 n_cfi, n_fp;	/* steps by kind */
	__u16 fp_why[5];	/* SP_CNT_UNW_FP_MODE .. _UNSUPPORTED */
	__u8 known;		/* pbase/pn valid */
	__u8 weak;		/* stale or truncated ranges: no NOT_EXEC ends */
	__u8 exact;		/* pc is not a return address */
	__u8 leaf;		/* regs[] describe this frame */
	__u8 end;		/* enum sp_unw_end, set when the walk stops */
	/* Stack copy (struct sp_ucopy): chunks filled this walk (slot
	 * uc_fill % cfg_ucopy_slots is the next to fill), the last hit slot,
	 * and the per-stack counts (SP_CNT_UNW_COPY_*). */
	__u8 uc_last;
	__u16 uc_fill;
	__u16 uc_words, uc_direct, uc_fail, uc_mismatch;
	__u16 row_cached, row_searched;	/* SP_CNT_UNW_ROW_* of this walk */
};

#define SP_WAKE_UNREAD_NS 1000000000ull	/* per process, at most one a second */
#define SP_WAKE_UNREAD_SLOTS 1024	/* power of two */

/* cfg_wake_unread: when a process's sample last woke the collector, in
 * slot tgid % SP_WAKE_UNREAD_SLOTS.  Two unread processes in one slot
 * take it from each other (each may then wake more often than once a
 * second).  An array, not an LRU hash: 16 KiB, one lookup, no lock. */
struct sp_wake_slot {
	__u32 tgid, _pad;
	__u64 ns;
};

SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SP_WAKE_UNREAD_SLOTS);
	__type(key, __u32);
	__type(value, struct sp_wake_slot);
} unread_woken SEC(".maps");

#define SP_UCOPY_CHUNK_MIN 64
#define SP_UCOPY_CHUNK_MAX 4096	/* a page: a copy never crosses one */
#define SP_UCOPY_SLOTS_MAX 4	/* power of two; a per-CPU value is at most 32 KiB */

/* The per-CPU copy of the user stack chunks the current walk touched:
 * slot i holds cfg_ucopy_bytes bytes from user address addr[i] (aligned to
 * the chunk size; 0 = empty).  Reset at the start of every walk. */
struct sp_ucopy {
	__u64 addr[SP_UCOPY_SLOTS_MAX];
	__u8 data[SP_UCOPY_SLOTS_MAX][SP_UCOPY_CHUNK_MAX];
};

SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_ucopy);
} unwind_ucopy SEC(".maps");

SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_unw_state);
} unwind_state SEC(".maps");

static __always_inline void sp_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;	/* per-CPU slot: no atomics needed */
}

static __always_inline bool sp_is_target(__u32 tgid)
{
	__u8 *v;

	if (cfg_exclude && bpf_map_lookup_elem(&excluded, &tgid))
		return false;
	if (!cfg_filter_pids)
		return true;
	v = bpf_map_lookup_elem(&targets, &tgid);
	return v && *v == SP_TARGET_ON;
}

/* Samples and waits of this thread are streamed: its process is a target
 * and, with -t, the thread is one of target_tids. */
static __always_inline bool sp_is_target_thread(__u32 tgid, __u32 tid)
{
	return sp_is_target(tgid) && (!cfg_filter_tids || bpf_map_lookup_elem(&target_tids, &tid));
}

#endif /* SPANPROF_MAPS_BPF_H */
