/* SPDX-License-Identifier: MIT */
/*
 * spanprof/abi.h - the records and map layouts that BPF programs and user
 * space must agree on.  This is the only header both sides include.
 *
 * Rules: fixed-width types only, explicit padding, and a _Static_assert on
 * every size and on every offset user space reads by hand.  Change a layout
 * here and both sides rebuild from the same text.
 *
 * Ring-buffer record struct sp_event (one per event, variable length):
 *
 *   offset size  field
 *   0      8     ts_ns        bpf_ktime_get_ns() (CLOCK_MONOTONIC) at the event
 *   8      8     weight_ns    off-CPU: blocked ns; on-CPU: 0
 *   16     4     pid          tgid of the sampled task (0 = idle task)
 *   20     4     tid          task pid
 *   24     4     cpu          CPU that took the sample
 *   28     1     type         enum sp_event_type
 *   29     1     flags        SP_F_* bits
 *   30     1     reason       off-CPU wait reason (enum sp_offcpu_reason)
 *   31     1     ctx_status   enum sp_ctx_status: how the trace context read went
 *   32     2     kstack_n     kernel frames that follow
 *   34     2     ustack_n     user frames that follow the kernel frames
 *   36     4     _pad0
 *   40     16    comm         task comm, NUL padded
 *   56     32    ctx          struct sp_trace_ctx (zero when no context)
 *   88     8*n   frames       kstack_n kernel addresses, then ustack_n user
 *                             addresses, leaf first; non-leaf entries are
 *                             return addresses
 *   88+8n  a     attrs        ctx.attrs_len bytes (at most SP_CTX_ATTRS_MAX):
 *                             copied verbatim from the thread's OTEP 4947
 *                             record (its attrs; not parsed in BPF), or,
 *                             for ctx_status SP_CTX_GO / SP_CTX_GO_LABELS,
 *                             the goroutine's pprof labels other than
 *                             trace_id/span_id as repeated
 *                             {u8 klen; u8 vlen; key[klen]; value[vlen]}
 *                             (keys inline: Go labels have no key map)
 *
 * Total size = SP_EVENT_HDR_SIZE + 8 * (kstack_n + ustack_n) + ctx.attrs_len.
 *
 * struct sp_trace_ctx (at offset 56):
 *
 *   0      16    trace_id
 *   16     8     span_id
 *   24     1     trace_flags
 *   25     1     attrs_len    bytes of attrs after the frames
 *   26     6     _pad
 */
#ifndef SPANPROF_ABI_H
#define SPANPROF_ABI_H

#ifdef __bpf__
/* vmlinux.h provides __u8 ... __u64 */
#else
#include <linux/types.h>
#endif

#define SP_MAX_FRAMES 127	/* per stack: kernel and user each */
#define SP_COMM_LEN 16
#define SP_TRACE_ID_LEN 16
#define SP_SPAN_ID_LEN 8

enum sp_event_type {
	SP_EV_ONCPU = 1,	/* perf_event cpu-clock sample */
	SP_EV_OFFCPU = 2,	/* a wait that ended (weight_ns set) */
	SP_EV_EXEC = 3,		/* sched_process_exec: maps changed */
	SP_EV_EXIT = 4,		/* group leader exited: process is gone */
	SP_EV_CTX_PUBLISH = 5,	/* prctl(PR_SET_VMA): an OTEP 4719 context was
				 * just published (its last step): look again */
};

enum sp_sample_flags {
	SP_F_IDLE = 1 << 0,		/* the CPU ran its idle task */
	SP_F_KSTACK_TRUNC = 1 << 1,	/* kernel stack hit SP_MAX_FRAMES */
	SP_F_USTACK_TRUNC = 1 << 2,	/* user stack hit SP_MAX_FRAMES */
	SP_F_KSTACK_ERR = 1 << 3,	/* bpf_get_stack failed for kernel */
	SP_F_USTACK_ERR = 1 << 4,	/* user stack could not be read */
	SP_F_KERNEL_MODE = 1 << 5,	/* sample interrupted kernel code */
	SP_F_ATTRS_TRUNC = 1 << 6,	/* record had more than SP_CTX_ATTRS_MAX
					 * bytes of attrs: only the first kept */
};

enum sp_offcpu_reason {
	SP_OFF_NONE = 0,
	SP_OFF_SLEEP = 1,	/* TASK_INTERRUPTIBLE: voluntary sleep, locks, poll */
	SP_OFF_IO = 2,		/* TASK_UNINTERRUPTIBLE: disk I/O, D state */
	SP_OFF_RUNQ = 3,	/* preempted while runnable: run-queue wait */
	SP_OFF_OTHER = 4,
};

enum sp_ctx_status {
	SP_CTX_NONE = 0,	/* process publishes no context */
	SP_CTX_OK = 1,		/* valid record read from TLS */
	SP_CTX_NULL = 2,	/* TLS pointer was NULL: thread serves no span */
	SP_CTX_INVALID = 3,	/* record's valid byte was not 1 */
	SP_CTX_READ_ERR = 4,	/* a bpf_probe_read_user failed */
	SP_CTX_OBI = 5,		/* taken from the OBI map fallback */
	SP_CTX_GO = 6,		/* ids from the goroutine's pprof labels; attrs
				 * (if any) in the Go label encoding below */
	SP_CTX_GO_LABELS = 7,	/* the goroutine's pprof labels, without usable
				 * ids: attrs only, Go label encoding */
};

/* Attribute bytes carried per sample: the bound that keeps the per-sample
 * read to one bpf_probe_read_user of the header and attrs together.
 * libspanctx's records carry at most 100; OTEP 4947 allows up to 612. */
#define SP_CTX_ATTRS_MAX 128

struct sp_trace_ctx {
	__u8 trace_id[SP_TRACE_ID_LEN];
	__u8 span_id[SP_SPAN_ID_LEN];
	__u8 trace_flags;
	__u8 attrs_len;
	__u8 _pad[6];
};

struct sp_event {
	__u64 ts_ns;
	__u64 weight_ns;
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__u8 type;
	__u8 flags;
	__u8 reason;
	__u8 ctx_status;
	__u16 kstack_n;
	__u16 ustack_n;
	__u32 _pad0;
	char comm[SP_COMM_LEN];
	struct sp_trace_ctx ctx;
	/* followed by kstack_n + ustack_n __u64 frames */
};

#define SP_EVENT_HDR_SIZE 88
#define SP_EVENT_MAX_SIZE (SP_EVENT_HDR_SIZE + 8 * 2 * SP_MAX_FRAMES + SP_CTX_ATTRS_MAX)

_Static_assert(sizeof(struct sp_trace_ctx) == 32, "sp_trace_ctx layout");
_Static_assert(sizeof(struct sp_event) == SP_EVENT_HDR_SIZE, "sp_event layout");
_Static_assert(__builtin_offsetof(struct sp_event, comm) == 40, "comm offset");
_Static_assert(__builtin_offsetof(struct sp_event, ctx) == 56, "ctx offset");
_Static_assert(__builtin_offsetof(struct sp_trace_ctx, attrs_len) == 25, "attrs_len offset");
_Static_assert(SP_CTX_ATTRS_MAX % 8 == 0 && SP_CTX_ATTRS_MAX <= 255, "attrs_len is a u8");

/*
 * Per-CPU counters (BPF_MAP_TYPE_PERCPU_ARRAY, u64 each).  User space sums
 * them over CPUs.  Accounting identity, checked by the tests:
 *   SP_CNT_ONCPU_EVENTS = SP_CNT_IDLE_SKIPPED + SP_CNT_FILTERED
 *                         + SP_CNT_RB_SENT_ONCPU + SP_CNT_RB_DROP_ONCPU
 */
enum sp_counter {
	SP_CNT_ONCPU_EVENTS = 0,	/* perf_event program invocations */
	SP_CNT_IDLE_SKIPPED,		/* idle samples counted, not streamed */
	SP_CNT_FILTERED,		/* not a target process (-p / command) */
	SP_CNT_RB_SENT_ONCPU,		/* on-CPU records written to the ring */
	SP_CNT_RB_DROP_ONCPU,		/* ring buffer full: on-CPU sample lost */
	SP_CNT_KSTACK_ERR,		/* bpf_get_stack(kernel) < 0 */
	SP_CNT_USTACK_ERR,		/* user stack read failed */
	SP_CNT_KSTACK_TRUNC,
	SP_CNT_USTACK_TRUNC,
	SP_CNT_RB_SENT_PROC,		/* exec/exit records written */
	SP_CNT_RB_DROP_PROC,		/* exec/exit records lost */
	SP_CNT_SCRATCH_ERR,		/* per-CPU scratch lookup failed */
	SP_CNT_CTX_OK,			/* trace context read and valid */
	SP_CNT_CTX_NULL,
	SP_CNT_CTX_INVALID,
	SP_CNT_CTX_READ_ERR,
	SP_CNT_OFFCPU_SWITCHES,		/* sched_switch invocations */
	SP_CNT_OFFCPU_BELOW_MIN,	/* waits shorter than the minimum */
	SP_CNT_OFFCPU_SAMPLED_OUT,	/* waits skipped by the sampler */
	SP_CNT_RB_SENT_OFFCPU,
	SP_CNT_RB_DROP_OFFCPU,
	SP_CNT_OFFCPU_STATE_FULL,	/* start-state map full */
	/* Off-CPU outcomes added by issue 4 (bpf/offcpu.bpf.c has the
	 * identity): one per sched_switch for prev, one per captured wait. */
	SP_CNT_OFFCPU_IDLE,		/* prev was the idle task */
	SP_CNT_OFFCPU_KTHREAD,		/* prev was a kernel thread (not asked) */
	SP_CNT_OFFCPU_FILTERED,		/* prev not a target process */
	SP_CNT_OFFCPU_EXITING,		/* prev's last switch (TASK_DEAD) */
	SP_CNT_OFFCPU_CAPTURED,		/* wait captured, record pending */
	SP_CNT_OFFCPU_DELETE_ERR,	/* pending record not deleted (reused) */
	SP_CNT_OFFCPU_UNCLOSED,		/* captured wait whose switch-in was not
					 * seen: replaced by the next capture */
	SP_CNT_CTX_OBI,			/* context taken from the OBI map */
	SP_CNT_CTX_ATTRS_TRUNC,		/* attrs longer than SP_CTX_ATTRS_MAX */
	SP_CNT_CTX_ATTRS_ERR,		/* attrs unreadable: sample kept without */
	/* Go pprof labels (issue 13, bpf/golabels.bpf.h has the identity):
	 * one outcome per read in a process with a Go descriptor. */
	SP_CNT_GO_IDS,			/* trace_id and span_id from the labels */
	SP_CNT_GO_NO_GOROUTINE,		/* no g, m or m.curg: scheduler, idle M,
					 * a thread Go did not create */
	SP_CNT_GO_NO_LABELS,		/* goroutine without labels */
	SP_CNT_GO_NO_IDS,		/* labels, none named trace_id/span_id */
	SP_CNT_GO_BAD_IDS,		/* trace_id/span_id not 32/16 lower-case
					 * hex (or zero, unreadable, or one
					 * without the other): both dropped */
	SP_CNT_GO_READ_ERR,		/* g -> m -> curg -> labels chain or the
					 * label container unreadable */
	/* Per read, on top of its outcome: */
	SP_CNT_GO_LABELS_CUT,		/* labels not all kept: more than the
					 * limits (SP_GO_*), key or value too
					 * long, attrs space full */
	SP_CNT_GO_LABEL_ERR,		/* a label's key or value unreadable:
					 * that label skipped */
	/* Goroutine parks (--go-parks, bpf/goparks.bpf.h has the identity):
	 * one outcome per runtime.gopark of a Go process, one per capture. */
	SP_CNT_GO_PARKS,		/* parks seen */
	SP_CNT_GO_PARK_SAMPLED_OUT,	/* skipped by the off-CPU sampler */
	SP_CNT_GO_PARK_STATE_FULL,	/* pending-park map full */
	SP_CNT_GO_PARK_CAPTURED,	/* stack and labels taken, pending */
	SP_CNT_GO_PARK_BELOW_MIN,	/* resumed before --off-cpu-min-us */
	SP_CNT_RB_SENT_GOPARK,		/* park records written to the ring */
	SP_CNT_RB_DROP_GOPARK,		/* ... lost: ring full */
	SP_CNT_GO_PARK_UNCLOSED,	/* parked again before its resume was
					 * seen: the older one replaced */
	SP_CNT__MAX,
};

_Static_assert(SP_CNT__MAX <= 64, "counter map size");

#define SP_COUNTERS_MAX 64	/* entries of the counters map */

/* Off-CPU sampling (bpf/offcpu.bpf.c): the adaptive sampler re-derives
 * its 1-in-N factor per CPU every window; N never exceeds SP_OFFCPU_MAX_N. */
#define SP_OFFCPU_WINDOW_NS 50000000ull
#define SP_OFFCPU_MAX_N 65536
/* Bytes of one pending off-CPU record in task storage (struct sp_scratch
 * in bpf/maps.bpf.h: header + 256 frame slots + room for the attrs). */
#define SP_OFFCPU_REC_SIZE (SP_EVENT_HDR_SIZE + 8 * 256 + SP_CTX_ATTRS_MAX)


/*
 * Per-process trace-context descriptor: value of the BPF hash map
 * "tls_descs" keyed by tgid (u32).  User space resolves where the thread's
 * otel_thread_ctx_v1 slot lives once per process (src/collector/tracectx/tls_resolve.c);
 * the BPF program then finds the slot from the sampled task's thread
 * pointer TP (task->thread.fsbase on x86-64):
 *
 *   SP_TLS_STATIC:  slot = TP + offset               (local/initial-exec,
 *                                                     TLSDESC in static TLS)
 *   SP_TLS_DTV:     dtv  = *(u64 *)(TP + dtv_offset)  (general dynamic)
 *                   blk  = *(u64 *)(dtv + module_id * dtv_stride)
 *                   slot = blk + offset
 *
 * then rec = *(u64 *)slot; rec == 0 means no context; the 28-byte record
 * header (OTEP 4947) is read from rec and accepted only if valid == 1.
 *
 *   offset size field
 *   0      8    offset       signed, see above
 *   8      8    module_id    DTV only
 *   16     4    dtv_offset   DTV only: offsetof(tcbhead_t, dtv), 8 on glibc
 *   20     1    model        enum sp_tls_model
 *   21     1    dtv_stride   DTV only: 16 on glibc, 8 on musl
 *   22     2    _pad
 */
enum sp_tls_model {
	SP_TLS_NONE = 0,
	SP_TLS_STATIC = 1,
	SP_TLS_DTV = 2,
};

struct sp_tls_desc {
	__s64 offset;
	__u64 module_id;
	__u32 dtv_offset;
	__u8 model;
	__u8 dtv_stride;
	__u16 _pad;
};

_Static_assert(sizeof(struct sp_tls_desc) == 24, "sp_tls_desc layout");

/* OTEP 4947 record header as it sits in the application's memory. */
struct sp_otel_thread_ctx_hdr {
	__u8 trace_id[16];
	__u8 span_id[8];
	__u8 valid;
	__u8 trace_flags;
	__u16 attrs_size;
};

_Static_assert(sizeof(struct sp_otel_thread_ctx_hdr) == 28, "OTEP 4947 record header");

#define SP_TLS_DESCS_MAX 16384	/* processes with a published context */

/*
 * Per-process Go descriptor: value of the BPF hash map "go_descs" keyed by
 * tgid (u32), filled by user space (src/collector/tracectx/go_binary.c)
 * for a process whose executable is a Go binary.  The BPF program
 * (bpf/golabels.bpf.h) follows, in the sampled thread's context:
 *
 *   g    = *(u64 *)(TP + tls_g)        the thread's current g (TLS slot)
 *   m    = *(u64 *)(g + g_m)
 *   curg = *(u64 *)(m + m_curg)        the user goroutine (NULL: none)
 *   lp   = *(u64 *)(curg + g_labels)   its pprof labels (NULL: none)
 *
 * then by layout: SP_GO_LABELS_MAP (Go <= 1.23): *lp is a *hmap of
 * map[string]string (hmap and bucket layouts below); SP_GO_LABELS_SLICE
 * (Go >= 1.24): lp points at a []label slice header, label = {key, value}
 * Go strings ({ptr, len} each), sorted by key.
 *
 *   offset size field
 *   0      4    tls_g       signed offset of the g slot from TP (-8 unless
 *                           cgo moved it)
 *   4      2    g_m         offsetof(runtime.g, m)
 *   6      2    m_curg      offsetof(runtime.m, curg)
 *   8      2    g_labels    offsetof(runtime.g, labels)
 *   10     1    layout      enum sp_go_labels_layout
 *   11     1    _pad0
 *   12     2    go_minor    Go 1.MINOR, informational
 *   14     2    _pad1
 */
enum sp_go_labels_layout {
	SP_GO_LABELS_NONE = 0,
	SP_GO_LABELS_MAP = 1,
	SP_GO_LABELS_SLICE = 2,
};

struct sp_go_desc {
	__s32 tls_g;
	__u16 g_m;
	__u16 m_curg;
	__u16 g_labels;
	__u8 layout;
	__u8 _pad0;
	__u16 go_minor;
	__u16 _pad1;
};

_Static_assert(sizeof(struct sp_go_desc) == 16, "sp_go_desc layout");

#define SP_GO_DESCS_MAX SP_TLS_DESCS_MAX	/* Go processes tracked in BPF */

/*
 * Go <= 1.23 map[string]string (golang/go src/runtime/map.go; checked
 * against the binary's DWARF when it has one, go_binary.c):
 *
 *   runtime.hmap                      bucket (bmap + keys + values)
 *   0   8  count (live entries)       0    8    tophash[8] (>= 5: live)
 *   8   1  flags (8: sameSizeGrow)
 *   9   1  B (log2 of bucket count)   8    128  keys[8]   {ptr, len}
 *   16  8  buckets                    136  128  values[8] {ptr, len}
 *   24  8  oldbuckets (growing)       264  8    overflow bucket pointer
 *                                     272       bucket size
 */
#define SP_GO_HMAP_COUNT 0
#define SP_GO_HMAP_FLAGS 8		/* u8 */
#define SP_GO_HMAP_SAME_SIZE_GROW 8	/* flags bit: oldbuckets is 2^B, not 2^(B-1) */
#define SP_GO_HMAP_B 9
#define SP_GO_HMAP_BUCKETS 16
#define SP_GO_HMAP_OLDBUCKETS 24
#define SP_GO_HMAP_HDR 32		/* bytes read: count .. oldbuckets */
#define SP_GO_BUCKET_SLOTS 8
#define SP_GO_BUCKET_KEYS 8
#define SP_GO_BUCKET_VALUES 136
#define SP_GO_BUCKET_OVERFLOW 264
#define SP_GO_BUCKET_SIZE 272
#define SP_GO_TOPHASH_MIN 5		/* minTopHash: smaller = empty/evacuated */
#define SP_GO_TOPHASH_EMPTY_REST 0	/* no more entries here or in overflows */
#define SP_GO_LABEL_SIZE 32		/* label / map slot pair: two strings */

/* Read bounds per sample (bpf/golabels.bpf.h); beyond them labels are
 * cut and counted (SP_CNT_GO_LABELS_CUT), never guessed. */
#define SP_GO_MAX_LABELS 16		/* label pairs examined */
#define SP_GO_MAX_BUCKETS 8		/* bucket reads (new, old, overflow) */
#define SP_GO_MAX_B 3			/* maps with more buckets are cut */
#define SP_GO_KEY_MAX 32		/* longer keys: label dropped (cut) */
#define SP_GO_VALUE_MAX 64		/* longer values: cut to this (cut) */

_Static_assert(SP_GO_MAX_LABELS * SP_GO_LABEL_SIZE <= 512, "one bounded read of a slice");
_Static_assert((1 << SP_GO_MAX_B) <= SP_GO_MAX_BUCKETS, "a whole table fits the read bound");

/*
 * The OpenTelemetry eBPF Instrumentation (OBI) shared map, read as a
 * fallback when a thread publishes no OTEP 4947 context: a BPF LRU hash
 * pinned at SP_OBI_MAP_PATH, key u64 pid_tgid (tgid << 32 | tid), value
 * below, SP_OBI_MAP_ENTRIES entries.  Written by OBI, only read here.
 */
#define SP_OBI_MAP_PATH "/sys/fs/bpf/otel/traces_ctx_v1"
#define SP_OBI_MAP_ENTRIES 16384

struct sp_obi_ctx {
	__u8 trace_id[16];
	__u8 span_id[8];
};

_Static_assert(sizeof(struct sp_obi_ctx) == 24, "OBI map value");

#endif /* SPANPROF_ABI_H */
