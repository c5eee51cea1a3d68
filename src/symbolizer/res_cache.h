/* SPDX-License-Identifier: MIT */
/*
 * res_cache.h - the resolver's cache of answers: (module, vaddr) -> frames,
 * failures included, so a repeated address is one hash lookup.
 *
 * Fixed capacity (entries, rounded down to a power of two of 4-way sets),
 * LRU inside a set; each entry holds a copy of its frames (the strings stay
 * the module's), up to 4 of them in the entry itself (about 220 bytes an
 * entry, 14 MiB at the default 65536, touched as they fill).  Thread safe without a global lock: the sets are split
 * over SP_RCACHE_SHARDS shards, each with its own mutex and clock, so
 * threads resolving different addresses rarely meet.  Counters are
 * atomic.
 */
#ifndef SPANPROF_SYMBOLIZER_RES_CACHE_H
#define SPANPROF_SYMBOLIZER_RES_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "resolve.h"

#define SP_RCACHE_WAYS 4u
#define SP_RCACHE_SHARDS 64u

struct sp_rcache_key;
struct sp_rcache_entry;

struct sp_rcache_shard {
	pthread_mutex_t lock;
	uint32_t clock;
} __attribute__((aligned(64)));

struct sp_rcache {
	struct sp_rcache_key *k;	/* per way: address, module, age */
	struct sp_rcache_entry *e;	/* per way: the answer */
	uint32_t n_sets;		/* power of two */
	struct sp_rcache_shard shard[SP_RCACHE_SHARDS];
	uint64_t evictions;		/* atomic */
	uint32_t used;			/* atomic */
	uint32_t n_big;			/* atomic: answers held outside entries */
};

/* entries: 0 = 65536.  0 or -ENOMEM. */
int sp_rcache__init(struct sp_rcache *c, uint32_t entries);
uint32_t sp_rcache__capacity(const struct sp_rcache *c);
/* Copies the cached answer of (module, va) into *out: true on a hit. */
bool sp_rcache__get(struct sp_rcache *c, uint32_t module, uint64_t va, struct sp_frames *out);
/* Caches fr for (module, va); an allocation failure only leaves it
 * uncached. */
void sp_rcache__put(struct sp_rcache *c, uint32_t module, uint64_t va,
		    const struct sp_frames *fr);
void sp_rcache__free(struct sp_rcache *c);	/* safe on a zeroed or failed init */

#endif /* SPANPROF_SYMBOLIZER_RES_CACHE_H */
