/* SPDX-License-Identifier: MIT */
/*
 * buildid_cache.h - a bounded cache of GNU build ids keyed by file identity
 * (st_dev, st_ino, st_mtim in ns), so a library mapped by a thousand
 * processes is parsed once.
 *
 * Set-associative: entries are split into sets of up to
 * SP_BUILDID_CACHE_WAYS, a key hashes to one set, and a full set evicts its
 * least recently used entry.  All memory is allocated by __new; capacity
 * (<= the requested entries, >= 1) never changes afterwards.  Negative
 * entries ("this file has no build id") are cached like positive ones.
 *
 * Not thread safe: one owner (the process table).
 */
#ifndef SPANPROF_BUILDID_CACHE_H
#define SPANPROF_BUILDID_CACHE_H

#include <stdint.h>

#include "base/buildid.h"

#define SP_BUILDID_CACHE_WAYS 4

struct sp_buildid_cache_key {
	uint64_t dev;
	uint64_t ino;
	int64_t mtime_ns;
};

struct sp_buildid_cache_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t inserts;
	uint64_t evictions;
	uint32_t entries;	/* valid entries now, <= capacity */
	uint32_t capacity;
};

struct sp_buildid_cache;

/* entries 0 is refused (-EINVAL).  Returns NULL with errno set. */
struct sp_buildid_cache *sp_buildid_cache__new(uint32_t entries);
void sp_buildid_cache__free(struct sp_buildid_cache *c);

/* 1 = hit (*out filled; out->len 0 is a cached "no build id"), 0 = miss
 * (*out zeroed).  Counts hits and misses. */
int sp_buildid_cache__lookup(struct sp_buildid_cache *c,
			     const struct sp_buildid_cache_key *key,
			     struct sp_build_id *out);

/* Inserts or updates; id NULL or id->len 0 stores a negative entry. */
void sp_buildid_cache__insert(struct sp_buildid_cache *c,
			      const struct sp_buildid_cache_key *key,
			      const struct sp_build_id *id);

const struct sp_buildid_cache_stats *sp_buildid_cache__stats(const struct sp_buildid_cache *c);

#endif
