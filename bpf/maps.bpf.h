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
SP_CONFIG(__u8, cfg_stream_idle, 0);	/* stream idle samples too */
SP_CONFIG(__u8, cfg_kernel_stacks, 1);	/* take kernel stacks */
SP_CONFIG(__u8, cfg_read_ctx, 1);	/* read OTEP 4947 trace context */
SP_CONFIG(__u8, cfg_obi, 0);		/* obi_ctx is OBI's pinned map */
SP_CONFIG(__u8, cfg_read_go, 1);	/* read Go processes' pprof labels
					 * (golabels.bpf.h; also needs
					 * cfg_read_ctx) */
SP_CONFIG(__u8, cfg_time_ctx, 0);	/* benchmark: time the context read
					 * (oncpu.bpf.c, map ctx_timing) */
/* Off-CPU (offcpu.bpf.c; its program is attached only with --off-cpu). */
SP_CONFIG(__u64, cfg_offcpu_min_ns, 0);	/* waits shorter are not written */
SP_CONFIG(__u32, cfg_offcpu_sample_n, 1);	/* capture 1 in N; 0 = adaptive */
SP_CONFIG(__u32, cfg_offcpu_rate, 1000);	/* adaptive: captures/s per CPU */
SP_CONFIG(__u32, cfg_offcpu_max_pending, 8192);	/* captured waits open at once */
SP_CONFIG(__u8, cfg_offcpu_kthreads, 0);	/* kernel threads' waits too */

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

/* Target processes (tgid -> 1) when cfg_filter_pids; children of targets
 * are added on fork, so a profiled command's whole tree is followed. */
SP_SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

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
};

struct sp_go_scratch {
	struct sp_go_walk walk;
	struct sp_go_pair pairs[SP_GO_MAX_LABELS];
	__u8 bucket[SP_GO_BUCKET_SIZE];
	__u8 hex[32];
	__u8 attrs[256];
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

static __always_inline void sp_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;	/* per-CPU slot: no atomics needed */
}

static __always_inline bool sp_is_target(__u32 tgid)
{
	return !cfg_filter_pids || bpf_map_lookup_elem(&targets, &tgid);
}

#endif /* SPANPROF_MAPS_BPF_H */
