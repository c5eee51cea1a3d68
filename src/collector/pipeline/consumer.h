/* SPDX-License-Identifier: MIT */
/*
 * consumer.h - the ring-buffer consumer: turns struct sp_event records into
 * aggregated samples whose user frames are (mapping id, address).
 *
 * Contract: sp_consumer__handle is a libbpf ring_buffer_sample_fn.  It does
 * no heap allocation per event in steady state (maps reads for a process
 * seen for the first time allocate inside the process table, once per
 * process); tests/unit/test_consumer.c proves it by counting malloc calls.
 * Records come from our own BPF program but are still checked (size, frame
 * counts) so a layout mismatch is counted, never a crash.
 *
 * Accounting: received_samples = aggregated + agg_dropped (+ malformed).
 */
#ifndef SPANPROF_CONSUMER_H
#define SPANPROF_CONSUMER_H

#include <stddef.h>
#include <stdint.h>

#include "spanprof/abi.h"

struct sp_proc_table;
struct sp_agg;
struct sp_jit_maps;
struct sp_unwinder;

struct sp_consumer_stats {
	uint64_t received_oncpu;
	uint64_t received_offcpu;
	uint64_t received_exec;
	uint64_t received_exit;
	uint64_t received_publish;	/* SP_EV_CTX_PUBLISH */
	uint64_t received_mmap;		/* SP_EV_MMAP_EXEC */
	uint64_t malformed;		/* size or frame counts inconsistent */
	uint64_t aggregated;		/* accepted by the aggregator */
	uint64_t agg_dropped;		/* refused by the aggregator (full) */
	uint64_t kstack_truncated;
	uint64_t ustack_truncated;
	uint64_t ustack_empty;		/* user task sampled without user frames */
	uint64_t frames;
	uint64_t frames_unresolved;	/* user frame in no known mapping, or in
					 * anonymous executable memory */
	uint64_t frames_anon;		/* ... the latter (JIT code: named later
					 * when its process publishes a perf map) */
	uint64_t ustack_walked;		/* samples with user frames */
	uint64_t ustack_root;		/* ... reaching the thread root */
	uint64_t ustack_frames;		/* user frames */
	uint64_t ustack_frames_fp;	/* ... stepped by frame pointer */
	uint64_t ustack_end[SP_UNW_END__MAX];	/* samples by sp_event.unw_end */
	uint64_t ctx_samples;		/* samples carrying a trace context */
	uint64_t attrs_samples;		/* ... and thread-record attributes */
	uint64_t attrs_dropped;		/* attribute entries not kept
					 * (ctx_attrs.h: partial, too many keys) */
	uint64_t go_samples;		/* samples with a Go goroutine's ids */
	uint64_t go_labels_samples;	/* ... with its other pprof labels,
					 * ids or not */
	uint64_t go_labels_bad_utf8;	/* Go labels kept with invalid UTF-8
					 * (mended to '?' on export) */
	/* Samples with user frames of a process whose maps were never read,
	 * by enum sp_proc_unread (proc_table.h; [0] unused): it was gone at
	 * its exec event's read, at its first sample (lazy exec reads), or at
	 * first sight.  Their user frames count in frames_unresolved. */
	uint64_t samples_unread[4];
};

/* Why a process is worth a look (e.g. to resolve its trace-context
 * descriptor). */
enum sp_proc_why {
	SP_PROC_FIRST_SIGHT = 0,	/* first sample of a pid */
	SP_PROC_EXEC = 1,		/* it exec'd: everything changed */
	SP_PROC_PUBLISH = 2,		/* it just published a process context */
	SP_PROC_EXIT = 3,		/* its thread-group leader exited */
	SP_PROC_EXEC_LAZY = 4,		/* it exec'd, its maps wait for its first
					 * sample (SP_PROC_EXEC then): what was
					 * known of the old image is stale */
};

/* Called for the events above.  May be NULL. */
typedef void (*sp_consumer_proc_fn)(uint32_t pid, enum sp_proc_why why, void *ctx);

/* Index of a Go label key in pid's key table (adding it if new), or < 0
 * when the table is full (the label is dropped, counted).  May be NULL:
 * Go labels are then dropped. */
typedef int (*sp_consumer_go_key_fn)(uint32_t pid, const uint8_t *key, uint8_t len, void *ctx);

struct sp_consumer {
	struct sp_proc_table *procs;	/* borrowed */
	struct sp_agg *agg;		/* borrowed; swapped by the owner */
	sp_consumer_proc_fn on_proc;
	void *on_proc_ctx;
	struct sp_jit_maps *jit;	/* borrowed, may be NULL: told of samples in
					 * anonymous executable memory and of execs */
	struct sp_unwinder *unwinder;	/* borrowed, may be NULL: told of exits
					 * and new executable mappings */
	sp_consumer_go_key_fn go_key;
	void *go_key_ctx;
	struct sp_consumer_stats stats;
	/* scratch for one event's resolved frames */
	uint64_t addrs[2 * SP_MAX_FRAMES];
	uint32_t mappings[2 * SP_MAX_FRAMES];
	uint8_t attrs[SP_CTX_ATTRS_MAX];	/* canonical attrs (ctx_attrs.h) */
};

void sp_consumer__init(struct sp_consumer *c, struct sp_proc_table *procs, struct sp_agg *agg);
int sp_consumer__handle(void *ctx, void *data, size_t size);
/* A sample event (checked as __handle does) is about to be looked at: its
 * process's deferred exec read happens now (proc_table.h, lazy_exec), and
 * SP_PROC_EXEC is reported.  __handle does it too; a gate that decides on
 * what the process is calls it first (sp_pipeline__prepare). */
void sp_consumer__prepare(struct sp_consumer *c, const struct sp_event *e);

#endif
