/* SPDX-License-Identifier: MIT */
/*
 * aggregator.h - bounded, preallocated aggregation of resolved samples.
 *
 * Samples with equal keys (process, thread, comm, kind, wait reason, trace
 * context, frames) merge into one entry holding a count and a summed weight.
 * Equal means: the key byte for byte, the frames, mappings and attributes
 * by two independent 64-bit hashes (a false merge ~2^-128 a pair of
 * stacks; aggregator.c says why).
 * Each event's timestamp is kept in an event log (for OTLP's per-event
 * timestamps) when keep_timestamps is set.
 *
 * Bounds: everything is allocated in sp_agg__new from byte_budget (hash
 * slots, entry headers, frame storage, event log) and max_entries.  When a
 * sample needs a new entry and there is no entry or frame space left, the
 * sample is dropped (drop-tail) and counted in stats.dropped_*; an existing
 * entry always absorbs a sample.  So: added = accepted + dropped, exactly.
 * A full event log costs timestamps, never samples: the sample is kept and
 * counted in stats.timestamps_dropped, and its entry reports no timestamps
 * (a partial list would misstate when the events happened).
 *
 * sp_agg__add does no heap allocation.  Not thread safe: the collector owns
 * two aggregators and swaps them at each interval.
 */
#ifndef SPANPROF_AGGREGATOR_H
#define SPANPROF_AGGREGATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_agg_key {
	uint32_t pid;
	uint32_t tid;
	uint8_t kind;		/* enum sp_sample_kind */
	uint8_t reason;		/* enum sp_offcpu_reason */
	uint8_t has_ctx;	/* trace_id/span_id valid */
	uint8_t trace_flags;
	uint16_t n_kernel;	/* kernel frames first in the frame arrays */
	uint16_t n_user;
	char comm[16];
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t attrs_len;	/* bytes at sp_agg_frames.attrs (canonical, ctx_attrs.h) */
	uint8_t _pad[3];
};

/* frames: n_kernel + n_user entries, leaf first (kernel leaf ... kernel
 * root, user leaf ... user root).  attrs: the key's attrs_len bytes of
 * OTEP 4947 thread-record attributes, part of the identity of the entry
 * (stored with the frames, 8 bytes per frame slot). */
struct sp_agg_frames {
	const uint64_t *addrs;
	const uint32_t *mappings;	/* mapping id per frame, 0 = unknown */
	const uint8_t *attrs;		/* may be NULL when attrs_len is 0 */
};

/* cfg == NULL: all defaults.  byte_budget == 0 or max_entries == 0: that
 * field's default.  A budget too small for max_entries is rejected by
 * sp_agg__new (NULL, errno = EINVAL); see aggregator.c for the split. */
struct sp_agg_config {
	size_t byte_budget;		/* default 64 MiB */
	uint32_t max_entries;		/* default 65536 */
	bool keep_timestamps;		/* default true */
};

struct sp_agg_stats {
	uint64_t added;			/* calls to sp_agg__add */
	uint64_t accepted;
	uint64_t dropped_entries_full;	/* max_entries reached */
	uint64_t dropped_bytes_full;	/* frame storage exhausted */
	uint64_t timestamps_dropped;	/* samples kept without their timestamp
					 * (event log full): their entry then
					 * reports no timestamps, only counts */
	uint32_t entries;
	size_t bytes_used;		/* of byte_budget */
	size_t bytes_reserved;		/* allocated at new(): <= byte_budget */
};

/* One aggregated entry as seen while iterating. */
struct sp_agg_entry {
	const struct sp_agg_key *key;
	struct sp_agg_frames frames;
	uint64_t count;
	uint64_t weight_ns;		/* sum of weights (off-CPU ns) */
	const uint64_t *timestamps;	/* count of them, or NULL if not kept */
};

struct sp_agg;

struct sp_agg *sp_agg__new(const struct sp_agg_config *cfg); /* NULL + errno */
void sp_agg__free(struct sp_agg *a);

/* Returns 0, or -ENOSPC when dropped (counted).  -EINVAL (not counted in
 * added) for a NULL aggregator or key, or NULL frames/addrs with frames;
 * mappings may be NULL (all 0); NULL attrs with attrs_len is -EINVAL.  Keys
 * are normalized: comm bytes after the NUL, _pad, and trace_id/span_id/
 * trace_flags when has_ctx == 0, are ignored (attrs are not: a goroutine's
 * pprof labels come without ids too). */
int sp_agg__add(struct sp_agg *a, const struct sp_agg_key *key,
		const struct sp_agg_frames *frames, uint64_t ts_ns, uint64_t weight_ns);

/* Calls cb for every entry (order unspecified).  Grouping timestamps per
 * entry uses scratch space preallocated in new(); no allocation here.
 * Stops and returns cb's value if non-zero. */
typedef int (*sp_agg_cb)(const struct sp_agg_entry *e, void *ctx);
int sp_agg__foreach(struct sp_agg *a, sp_agg_cb cb, void *ctx);

/* Empties the aggregator (keeps its memory); stats counters other than
 * entries/bytes_used are cumulative. */
void sp_agg__reset(struct sp_agg *a);

const struct sp_agg_stats *sp_agg__stats(const struct sp_agg *a);

#endif
