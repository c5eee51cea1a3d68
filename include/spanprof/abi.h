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
 *   36     1     unw_end      enum sp_unw_end: why the user stack ended
 *   37     1     unw_fp       user frames stepped by frame pointer (not by
 *                             CFI), saturating at 255
 *   38     2     _pad0
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
	SP_EV_MMAP_EXEC = 6,	/* mmap/mprotect with PROT_EXEC: the process's
				 * executable ranges in BPF are stale (sent once
				 * per stale episode, see SP_UNW_PROC_* below) */
};

/* Values of the targets map (bpf/maps.bpf.h), tgid -> state. */
enum sp_target_state {
	SP_TARGET_ON = 1,	/* streamed */
	SP_TARGET_AT_EXEC = 2,	/* record's command, forked and not yet
				 * exec'd: streamed from its exec on, so no
				 * sample shows record's own pre-exec image
				 * (whose maps nobody can read afterwards) */
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
	SP_F_USTACK_ROOT = 1 << 7,	/* user stack reached the thread root: the
					 * outermost frame's CFI says "no caller"
					 * (_start, clone/clone3's child) */
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
	__u8 unw_end;
	__u8 unw_fp;
	__u16 _pad0;
	char comm[SP_COMM_LEN];
	struct sp_trace_ctx ctx;
	/* followed by kstack_n + ustack_n __u64 frames */
};

#define SP_EVENT_HDR_SIZE 88
#define SP_EVENT_MAX_SIZE (SP_EVENT_HDR_SIZE + 8 * 2 * SP_MAX_FRAMES + SP_CTX_ATTRS_MAX)

_Static_assert(sizeof(struct sp_trace_ctx) == 32, "sp_trace_ctx layout");
_Static_assert(sizeof(struct sp_event) == SP_EVENT_HDR_SIZE, "sp_event layout");
_Static_assert(__builtin_offsetof(struct sp_event, comm) == 40, "comm offset");
_Static_assert(__builtin_offsetof(struct sp_event, unw_end) == 36, "unw_end offset");
_Static_assert(__builtin_offsetof(struct sp_event, unw_fp) == 37, "unw_fp offset");
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
	/* User-stack unwinding (bpf/unwind.bpf.h), issue 12.  Every emitted
	 * user frame is one step (the search for its caller, which may end
	 * the stack):
	 *   UNW_FRAMES_CFI + UNW_FRAMES_FP = user frames emitted
	 *   UNW_FRAMES_FP = UNW_FP_MODE + UNW_FP_NO_PROC + UNW_FP_NO_TABLE
	 *                   + UNW_FP_NO_CFI + UNW_FP_UNSUPPORTED
	 * Stacks: one UNW_END_* per user stack walked (enum sp_unw_end). */
	SP_CNT_UNW_FRAMES_CFI,		/* steps taken from a CFI row */
	SP_CNT_UNW_FRAMES_FP,		/* steps taken by frame pointer */
	SP_CNT_UNW_FP_MODE,		/* ... because --unwind fp */
	SP_CNT_UNW_FP_NO_PROC,		/* ... process's ranges not in BPF (yet) */
	SP_CNT_UNW_FP_NO_TABLE,		/* ... the file has no table (pending,
					 * evicted, too large, failed, JIT/anon) */
	SP_CNT_UNW_FP_NO_CFI,		/* ... the table has no row for the pc */
	SP_CNT_UNW_FP_UNSUPPORTED,	/* ... a row the unwinder cannot follow */
	SP_CNT_UNW_END_ROOT,		/* thread root reached (stack complete) */
	SP_CNT_UNW_END_ZERO,		/* return address or frame pointer 0 */
	SP_CNT_UNW_END_NONCANON,	/* a value not a canonical user address */
	SP_CNT_UNW_END_NOT_EXEC,	/* a value in no executable mapping */
	SP_CNT_UNW_END_READ,		/* the stack could not be read */
	SP_CNT_UNW_END_BAD_FP,		/* frame pointer below the stack pointer,
					 * misaligned, or not increasing */
	SP_CNT_UNW_END_LEAF_ONLY,	/* a row needing registers only the
					 * interrupted frame has, in a caller */
	SP_CNT_UNW_END_TRUNC,		/* SP_MAX_FRAMES reached (flagged) */
	SP_CNT_UNW_STALE,		/* stacks walked while the process's ranges
					 * were stale (a new executable mapping
					 * not read yet): no NOT_EXEC ends */
	SP_CNT_UNW_MMAP_EVENTS,		/* SP_EV_MMAP_EXEC records sent */
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
	SP_CNT_GO_SWITCHING,		/* a switch in progress: on the system
					 * stack while m.curg is not running,
					 * or a labelled g in TLS while BP is
					 * still in g0's stack (gogo): no ids
					 * (golabels.bpf.h says why) */
	/* Per read, on top of its outcome: */
	SP_CNT_GO_LABELS_CUT,		/* labels not all kept: more than the
					 * limits (SP_GO_*), key or value too
					 * long, attrs space full */
	SP_CNT_GO_LABEL_ERR,		/* a label's key or value unreadable:
					 * that label skipped */
	/* Per read that reached a labels pointer (golabels.bpf.h, "Cache"):
	 *   GO_CACHE_HIT + GO_CACHE_MISS + GO_CACHE_OFF = label sets read */
	SP_CNT_GO_CACHE_HIT,		/* the parsed labels taken from go_label_cache */
	SP_CNT_GO_CACHE_MISS,		/* parsed (no entry, or one of an older GC
					 * cycle), then cached when fully read */
	SP_CNT_GO_CACHE_OFF,		/* parsed without the cache: no GC epoch
					 * probe and no runtime.mheap_.sweepgen
					 * address, or the epoch entry missing */
	/* The GC epoch probe (uprobe on runtime.gcSweep, golabels.bpf.h): */
	SP_CNT_GO_GC_EPOCH,		/* a GC cycle of a tracked process:
					 * its epoch bumped */
	SP_CNT_GO_GC_UNTRACKED,		/* a GC cycle of a process without an
					 * epoch entry (not profiled): ignored */
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
	/* The per-walk copy of the user stack (bpf/unwind.bpf.h, "Stack
	 * copy"), counted once per stack:
	 *   UNW_COPY_WORDS + UNW_COPY_DIRECT = stack words the walk read
	 *   (signal frames' register blocks aside) */
	SP_CNT_UNW_COPY_CHUNKS,		/* stack chunks copied (one read each) */
	SP_CNT_UNW_COPY_WORDS,		/* words taken from the copy */
	SP_CNT_UNW_COPY_DIRECT,		/* words read directly: copy off, or a
					 * word not 8-aligned */
	SP_CNT_UNW_COPY_FAIL,		/* a chunk copy failed: the word's read
					 * fails (its page is unreadable) */
	SP_CNT_UNW_COPY_MISMATCH,	/* benchmark check (SPANPROF_BENCH_UCOPY_VERIFY):
					 * a copied word differed from a direct
					 * read of it (the direct value used) */
	/* The rows the walk's CFI lookups took (bpf/unwind.bpf.h, the per-CPU
	 * row cache), once per stack: */
	SP_CNT_UNW_ROW_CACHED,		/* ... from the per-CPU row cache */
	SP_CNT_UNW_ROW_SEARCHED,	/* ... searched for in the file's table */
	SP_CNT_WAKE_UNREAD,		/* records that woke the collector: a
					 * sample of a process without ranges
					 * (cfg_wake_unread, once a second each) */
	/* prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME) of a target (bpf/proc.bpf.c): */
	SP_CNT_VMA_NAME_OTHER,		/* ... another name than OTEL_CTX: no record */
	SP_CNT_PUBLISH_WOKE,		/* ... OTEL_CTX, its record woke the collector */
	SP_CNT_PUBLISH_QUIET,		/* ... OTEL_CTX, within SP_PUBLISH_WAKE_NS of
					 * the last that woke it: no wakeup */
	SP_CNT__MAX,
};

_Static_assert(SP_CNT__MAX <= 96, "counter map size");

#define SP_COUNTERS_MAX 96	/* entries of the counters map */

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
 * User-stack unwinding from .eh_frame (issue 12).  User space
 * (src/collector/unwind/) compiles each executable file's call frame
 * information into a table and writes it, and every process's executable
 * ranges, into one word-addressed store; bpf/unwind.bpf.h reads them.
 * docs/formats.md has the same tables with the reasons.
 *
 * THE STORE ("blob"): 64-bit words at indices 0 .. SP_UNW_CHUNKS_MAX *
 * SP_UNW_CHUNK_WORDS - 1, kept in BPF_MAP_TYPE_ARRAY_OF_MAPS unwind_chunks
 * whose inner maps are mmapable ARRAYs of SP_UNW_CHUNK_WORDS u64 (256 KiB),
 * created by user space on demand up to the byte budget: word w is element
 * (w & (SP_UNW_CHUNK_WORDS - 1)) of chunk (w >> SP_UNW_CHUNK_SHIFT).
 *
 * A FILE TABLE occupies words [base, base + words) (struct sp_unw_file has
 * base and the offsets).  Addresses are FILE OFFSETS (fo = pc - mapping
 * start + mapping offset), split into pages of 2^page_shift bytes
 * (page_shift 12..16, chosen per file by the compiler):
 *
 *   words                   content
 *   [0, rows_off)           page directory: n_pages + 1 u32, two per word
 *                           (entry k in word k / 2, low half for even k):
 *                           dir[p] = index of the first row whose pc is in
 *                           page first_page + p or later; dir[n_pages] =
 *                           n_rows.  Rows of page p: [dir[p], dir[p+1]).
 *   [rows_off, rules_off)   rows: u32, two per word, sorted by pc:
 *                           row = (pc & page mask) << (32 - page_shift)
 *                                 | rule index (32 - page_shift bits)
 *                           a row applies from its pc to the next row's pc
 *   [rules_off, +n_rules)   rules: struct sp_unw_rule, one per word
 *
 * Lookup of fo: p = (fo >> page_shift) - first_page (outside [0, n_pages):
 * no CFI); the last row of page p with pc <= fo, or if none row dir[p] - 1
 * (which began in an earlier page; dir[p] == 0: no CFI); its rule.
 *
 * A PROCESS'S RANGES occupy 3 words each, sorted by start:
 *   word 0: start (first byte), word 1: end (exclusive),
 *   word 2: (file offset of start >> 12) << 32 | file
 * file = slot << 12 | (generation & 0xfff), 0 = no table (anonymous,
 * [vdso] without a table, unreadable file).
 */
#define SP_UNW_CHUNK_SHIFT 15
#define SP_UNW_CHUNK_WORDS (1u << SP_UNW_CHUNK_SHIFT)	/* 256 KiB chunks */
#define SP_UNW_CHUNKS_MAX 4096		/* 1 GiB: the largest budget */
#define SP_UNW_FILES_MAX 16384		/* file slots (unwind_files entries) */
#define SP_UNW_PROCS_MAX 16384		/* processes with ranges in BPF */
#define SP_UNW_RANGES_MAX 1024		/* executable ranges per process */
#define SP_UNW_RANGE_WORDS 3
#define SP_UNW_PAGE_SHIFT_MIN 12
#define SP_UNW_PAGE_SHIFT_MAX 16
#define SP_UNW_FILE_GEN_BITS 12
#define SP_UNW_SEQ_SLOTS 65536		/* unwind_seq entries (tgid & mask) */

/* Rule kinds (low nibble of sp_unw_rule.op). */
enum sp_unw_op {
	SP_UNW_OP_NONE = 0,		/* no CFI here: step by frame pointer */
	SP_UNW_OP_RSP = 1,		/* CFA = rsp + cfa_off */
	SP_UNW_OP_RBP = 2,		/* CFA = rbp + cfa_off */
	SP_UNW_OP_REG = 3,		/* CFA = reg + cfa_off: reg is another
					 * register, known in the leaf only */
	SP_UNW_OP_DEREF = 4,		/* CFA = *(reg + cfa_off) + 8 * addend */
	SP_UNW_OP_PLT = 5,		/* CFA = rsp + 8 + ((pc & 15) >= 11 ? 8 : 0) */
	SP_UNW_OP_SIGNAL = 6,		/* rt_sigframe: the interrupted registers
					 * are in uc_mcontext at rsp + 40 */
	SP_UNW_OP_STOP = 7,		/* return address undefined: thread root */
	SP_UNW_OP_UNSUPPORTED = 8,	/* CFI this unwinder cannot follow: step
					 * by frame pointer (counted) */
};

/* How the caller's rbp is found (high nibble of sp_unw_rule.op). */
enum sp_unw_rbp {
	SP_UNW_RBP_SAME = 0,		/* unchanged */
	SP_UNW_RBP_CFA = 1,		/* saved at CFA + rbp_off */
	SP_UNW_RBP_RBP = 2,		/* saved at rbp + rbp_off */
	SP_UNW_RBP_UNDEF = 3,		/* not recoverable: 0 */
};

/*
 * struct sp_unw_rule, one blob word:
 *   offset size field
 *   0      4    cfa_off   signed
 *   4      2    rbp_off   signed, for SP_UNW_RBP_CFA / _RBP
 *   6      1    op        enum sp_unw_op | enum sp_unw_rbp << 4
 *   7      1    reg       DWARF number of the CFA base register (0-15) for
 *                         REG and DEREF | DEREF addend / 8 << 4
 * The return address is always at CFA - 8 (rows where it is not become
 * SP_UNW_OP_UNSUPPORTED); the caller's rsp is the CFA.
 */
struct sp_unw_rule {
	__s32 cfa_off;
	__s16 rbp_off;
	__u8 op;
	__u8 reg;
};

_Static_assert(sizeof(struct sp_unw_rule) == 8, "sp_unw_rule is one blob word");

/*
 * Value of the ARRAY unwind_files, index = slot (0 unused):
 *   offset size field
 *   0      4    gen          slot generation (a range names slot and gen)
 *   4      4    base         first word of the table
 *   8      4    first_page   page number (fo >> page_shift) of page 0
 *   12     4    n_pages
 *   16     4    rows_off     words from base
 *   20     4    rules_off    words from base
 *   24     4    n_rules
 *   28     1    page_shift   12..16
 *   29     1    flags        SP_UNW_FILE_READY: the table is in the blob
 *   30     2    _pad
 *   32     8    last_used_ns bpf_ktime_get_ns of the latest sample with a
 *                            frame in the file (BPF writes it at most about
 *                            once a second), for least-recently-used eviction
 */
#define SP_UNW_FILE_READY 1

struct sp_unw_file {
	__u32 gen;
	__u32 base;
	__u32 first_page;
	__u32 n_pages;
	__u32 rows_off;
	__u32 rules_off;
	__u32 n_rules;
	__u8 page_shift;
	__u8 flags;
	__u16 _pad;
	__u64 last_used_ns;
};

_Static_assert(sizeof(struct sp_unw_file) == 40, "sp_unw_file layout");
_Static_assert(__builtin_offsetof(struct sp_unw_file, last_used_ns) == 32, "last_used_ns offset");

/*
 * Value of the HASH unwind_procs, key tgid (u32):
 *   offset size field
 *   0      4    base   first word of the range list
 *   4      4    n      ranges (<= SP_UNW_RANGES_MAX)
 *   8      4    seq    the process's unwind_seq value (low 32 bits of the
 *                      u64 element) when its maps were
 *                      read; BPF bumps unwind_seq on exec and on every
 *                      mmap/mprotect with PROT_EXEC, so seq != unwind_seq
 *                      means the ranges are stale (counted, and a pc in no
 *                      range then steps by frame pointer instead of ending)
 *   12     4    flags  SP_UNW_PROC_TRUNC: more executable mappings than
 *                      SP_UNW_RANGES_MAX (same treatment as stale)
 */
#define SP_UNW_PROC_TRUNC 1

struct sp_unw_proc {
	__u32 base;
	__u32 n;
	__u32 seq;
	__u32 flags;
};

_Static_assert(sizeof(struct sp_unw_proc) == 16, "sp_unw_proc layout");

/* Why a user stack ended (sp_event.unw_end), one per stack. */
enum sp_unw_end {
	SP_UNW_END_NONE = 0,		/* no user stack walked */
	SP_UNW_END_ROOT = 1,		/* thread root: complete */
	SP_UNW_END_ZERO = 2,
	SP_UNW_END_NONCANON = 3,
	SP_UNW_END_NOT_EXEC = 4,
	SP_UNW_END_READ = 5,
	SP_UNW_END_BAD_FP = 6,
	SP_UNW_END_LEAF_ONLY = 7,
	SP_UNW_END_TRUNC = 8,
	SP_UNW_END__MAX,
};

_Static_assert(SP_CNT_UNW_END_ROOT + SP_UNW_END_TRUNC - 1 == SP_CNT_UNW_END_TRUNC,
	       "SP_CNT_UNW_END_* follow enum sp_unw_end");

/*
 * Per-process Go descriptor: value of the BPF hash map "go_descs" keyed by
 * tgid (u32), filled by user space (src/collector/tracectx/go_binary.c)
 * for a process whose executable is a Go binary.  The BPF program
 * (bpf/golabels.bpf.h) follows, in the sampled thread's context:
 *
 *   g    = *(u64 *)(TP + tls_g)        the thread's current g (TLS slot)
 *   lp   = *(u64 *)(g + g_labels)      when not NULL: g is a user goroutine
 *   m    = *(u64 *)(g + g_m)           else (g0, gsignal, or no labels):
 *   curg = *(u64 *)(m + m_curg)        the user goroutine (NULL: none)
 *   lp   = *(u64 *)(curg + g_labels)   its pprof labels (NULL: none)
 *   (g.m and g.labels come from one read of g, golabels.bpf.h)
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
 *   11     1    gc_epoch    1: the label cache's GC cycle is the process's
 *                           entry in go_gc_epochs, bumped by the uprobe on
 *                           its binary's runtime.gcSweep (golabels.bpf.h);
 *                           0: sweepgen below, or no cache
 *   12     2    go_minor    Go 1.MINOR, informational
 *   14     2    _pad1
 *   16     8    sweepgen    address of runtime.mheap_.sweepgen in the
 *                           process (u32; 0 = unknown), used when gc_epoch
 *                           is 0; neither: labels not cached
 *   24     4    seq         this descriptor's number (user space counts
 *                           them): part of the label cache's key, so no
 *                           entry outlives the image it was read from
 *   28     4    _pad2
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
	__u8 gc_epoch;
	__u16 go_minor;
	__u16 g_status;		/* offsetof(runtime.g, atomicstatus) from the
				 * binary's DWARF; 0 unknown (golabels.bpf.h) */
	__u64 sweepgen;
	__u32 seq;
	__u32 _pad2;
};

_Static_assert(sizeof(struct sp_go_desc) == 32, "sp_go_desc layout");

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
