// SPDX-License-Identifier: MIT
/*
 * buildid_cache.c - bounded, set-associative build-id cache.
 *
 * Contract: sp_buildid_cache__new allocates every entry up front (one
 * calloc); lookups and inserts never allocate and cannot fail.  Eviction is
 * LRU within the key's set, by a 64-bit use tick.  The cache owns its
 * memory; __free(NULL) is a no-op.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/procs/buildid_cache.h"

struct buildid_cache_entry {
	struct sp_buildid_cache_key key;
	uint64_t tick;			/* 0 = empty slot */
	struct sp_build_id id;
};

struct sp_buildid_cache {
	struct buildid_cache_entry *e;	/* n_sets * ways */
	uint32_t n_sets;
	uint32_t ways;
	uint64_t tick;
	struct sp_buildid_cache_stats stats;
};

static uint64_t buildid_cache_mix(uint64_t x)
{
	/* splitmix64 finalizer */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static uint32_t buildid_cache_set(const struct sp_buildid_cache *c,
				  const struct sp_buildid_cache_key *k)
{
	uint64_t h = buildid_cache_mix(k->dev);

	h = buildid_cache_mix(h ^ k->ino);
	h = buildid_cache_mix(h ^ (uint64_t)k->mtime_ns);
	return (uint32_t)(h % c->n_sets);
}

static int buildid_cache_key_eq(const struct sp_buildid_cache_key *a,
				const struct sp_buildid_cache_key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->mtime_ns == b->mtime_ns;
}

struct sp_buildid_cache *sp_buildid_cache__new(uint32_t entries)
{
	struct sp_buildid_cache *c;

	if (entries == 0) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ways = entries < SP_BUILDID_CACHE_WAYS ? entries : SP_BUILDID_CACHE_WAYS;
	c->n_sets = entries / c->ways;
	c->e = calloc((size_t)c->n_sets * c->ways, sizeof(*c->e));
	if (!c->e) {
		free(c);
		return NULL;
	}
	c->stats.capacity = c->n_sets * c->ways;
	return c;
}

void sp_buildid_cache__free(struct sp_buildid_cache *c)
{
	if (!c)
		return;
	free(c->e);
	free(c);
}

int sp_buildid_cache__lookup(struct sp_buildid_cache *c,
			     const struct sp_buildid_cache_key *key,
			     struct sp_build_id *out)
{
	struct buildid_cache_entry *set;
	uint32_t i;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!c || !key)
		return 0;
	set = &c->e[(size_t)buildid_cache_set(c, key) * c->ways];
	for (i = 0; i < c->ways; i++) {
		if (set[i].tick && buildid_cache_key_eq(&set[i].key, key)) {
			set[i].tick = ++c->tick;
			if (out)
				*out = set[i].id;
			c->stats.hits++;
			return 1;
		}
	}
	c->stats.misses++;
	return 0;
}

void sp_buildid_cache__insert(struct sp_buildid_cache *c,
			      const struct sp_buildid_cache_key *key,
			      const struct sp_build_id *id)
{
	struct buildid_cache_entry *set, *victim = NULL;
	uint32_t i;

	if (!c || !key)
		return;
	set = &c->e[(size_t)buildid_cache_set(c, key) * c->ways];
	for (i = 0; i < c->ways; i++) {
		if (set[i].tick && buildid_cache_key_eq(&set[i].key, key)) {
			victim = &set[i];	/* update in place */
			break;
		}
		if (!victim || !set[i].tick ||
		    (victim->tick && set[i].tick < victim->tick))
			victim = &set[i];
	}
	if (!victim->tick)
		c->stats.entries++;
	else if (!buildid_cache_key_eq(&victim->key, key))
		c->stats.evictions++;
	victim->key = *key;
	victim->tick = ++c->tick;
	memset(&victim->id, 0, sizeof(victim->id));
	if (id && id->len) {
		uint8_t max = id->kind == SP_BUILD_ID_GO ? SP_GO_BUILD_ID_MAX : SP_BUILD_ID_MAX;

		victim->id.len = id->len > max ? max : id->len;
		victim->id.kind = id->kind;
		memcpy(victim->id.id, id->id, victim->id.len);
	}
	c->stats.inserts++;
}

const struct sp_buildid_cache_stats *sp_buildid_cache__stats(const struct sp_buildid_cache *c)
{
	return c ? &c->stats : NULL;
}
