/* SPDX-License-Identifier: MIT */
/*
 * report_internal.h - the report's tables, shared by report.c and
 * flamegraph.c only (not an API).  See report.c for the layout.
 */
#ifndef SPANPROF_SYMBOLIZER_REPORT_INTERNAL_H
#define SPANPROF_SYMBOLIZER_REPORT_INTERNAL_H

#include <stdint.h>

#include "profile/profile.h"

enum {
	RN_UNKNOWN = 1 << 0,	/* unresolved frame */
	RN_KERNEL = 1 << 1,
	RN_PROCESS = 1 << 2,	/* a --group-by root frame: "exe-pid" */
	RN_THREAD = 1 << 3,	/* ... "thread-tid" under it */
};
/* Flags that make a name distinct from the same text without them. */
#define RN_IDENTITY (RN_KERNEL | RN_PROCESS | RN_THREAD)
#define RN_GROUP (RN_PROCESS | RN_THREAD)

struct rname {
	char *s;
	char *where;		/* "file:line" or NULL */
	char *dso;		/* the mapping's file name of its first location, or NULL */
	uint64_t hash;
	uint8_t flags;
};

struct rnode {
	int32_t name;
	int32_t parent;
	int32_t first_child;
	int32_t next_sibling;
	uint64_t total;		/* inclusive */
	uint64_t self;
};

/* u64 key -> u64 value, open addressing; key UINT64_MAX = empty slot. */
struct u64map {
	uint64_t *keys;
	uint64_t *vals;
	uint32_t cap, n;
};

struct ktree {
	struct rnode *nodes;	/* node 0 is the root ("all") */
	uint32_t n, cap;
	struct u64map child;	/* (parent << 32 | name) -> node */
	uint64_t total;		/* weight: samples (on-CPU) or ns (off-CPU) */
	uint64_t samples;	/* sum of counts */
	uint64_t ns;		/* sum of time */
	uint64_t *self_by, *cum_by, *stamp;	/* per name id */
	uint32_t cap_by, cap_cum, cap_stamp;
	uint64_t epoch;
};

/* The node after node in t's preorder: its first child, else the next
 * sibling of node or of its nearest ancestor that has one; *depth (the
 * root's children are at the caller's chosen base) follows it.  -1 after
 * the last node; the root (node 0) is never returned. */
static inline int32_t ktree__preorder_next(const struct ktree *t, int32_t node, uint32_t *depth)
{
	if (t->nodes[node].first_child >= 0) {
		++*depth;
		return t->nodes[node].first_child;
	}
	while (t->nodes[node].next_sibling < 0) {
		node = t->nodes[node].parent;
		if (node <= 0)
			return -1;
		--*depth;
	}
	return t->nodes[node].next_sibling;
}

struct rspan {
	int32_t link;		/* 0 = no span */
	uint64_t samples;	/* on-CPU samples */
	uint64_t waits;		/* off-CPU waits */
	uint64_t oncpu_ns;
	uint64_t off_ns[5];	/* by enum sp_offcpu_reason */
	char *attrs;		/* "k=v k=v" of the span's first sample with
				 * attribute labels, owned; NULL = none */
};

struct sp_report {
	struct rname *names;
	uint32_t n_names, cap_names;
	int32_t *name_hash;
	uint32_t name_hcap;
	int32_t *fr;		/* frame name ids of all locations */
	uint32_t n_fr, cap_fr;
	uint32_t *loc_off;
	uint8_t *loc_n;		/* UINT8_MAX = not computed */
	uint32_t n_locs;
	int32_t *tmp;		/* one sample's frames */
	uint32_t n_tmp, cap_tmp;
	struct ktree trees[SP_KIND__MAX];
	const struct ktree *cur_tree;
	struct rspan *spans;
	uint32_t n_spans, cap_spans;
	struct u64map span_idx;		/* link -> span index */
	struct u64map span_leaf;	/* (span << 32 | leaf name) -> ns */
	struct sp_link *links;	/* copy of the profile's */
	uint32_t n_links;
	uint64_t n_samples;
	uint64_t period_ns;
	int group;		/* enum sp_report_group, AUTO resolved */
};

#endif /* SPANPROF_SYMBOLIZER_REPORT_INTERNAL_H */
