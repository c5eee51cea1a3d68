// SPDX-License-Identifier: MIT
/*
 * res_cache.c - see res_cache.h.  Set s of the cache is ways [s * WAYS,
 * s * WAYS + WAYS) of two parallel arrays: keys (16 bytes a way, so a set
 * is one cache line to compare) and answers; the set belongs to shard
 * s % SHARDS.  A key's module is stored + 1 so that 0 marks an empty way.
 * Answers of up to INLINE_FRAMES frames (most of them) live in the array
 * itself, longer ones in a malloc'd copy: no allocation per miss, no free
 * per eviction.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "res_cache.h"

#define DEFAULT_ENTRIES 65536u
#define INLINE_FRAMES 4

struct sp_rcache_key {
	uint64_t va;
	uint32_t module;	/* + 1; 0 = empty */
	uint32_t age;
};

struct sp_rcache_entry {
	struct sp_frames *big;	/* the answer when longer than INLINE_FRAMES */
	uint8_t n, source;
	struct sp_frame f[INLINE_FRAMES];
};

static uint64_t hash_key(uint32_t mod, uint64_t va)
{
	uint64_t h = va * 0x9e3779b97f4a7c15ull ^ ((uint64_t)mod << 32 | mod);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h;
}

static size_t frames_size(const struct sp_frames *fr)
{
	return offsetof(struct sp_frames, f) + (size_t)fr->n * sizeof(fr->f[0]);
}

int sp_rcache__init(struct sp_rcache *c, uint32_t entries)
{
	uint32_t sets = 1;

	memset(c, 0, sizeof(*c));
	if (!entries)
		entries = DEFAULT_ENTRIES;
	if (entries < SP_RCACHE_WAYS)
		entries = SP_RCACHE_WAYS;
	while (sets * 2 * SP_RCACHE_WAYS <= entries && sets < (1u << 28))
		sets *= 2;
	c->k = calloc((size_t)sets * SP_RCACHE_WAYS, sizeof(*c->k));
	c->e = calloc((size_t)sets * SP_RCACHE_WAYS, sizeof(*c->e));
	if (!c->k || !c->e) {
		free(c->k);
		free(c->e);
		c->k = NULL;
		c->e = NULL;
		return -ENOMEM;
	}
	c->n_sets = sets;
	for (uint32_t i = 0; i < SP_RCACHE_SHARDS; i++)
		pthread_mutex_init(&c->shard[i].lock, NULL);
	return 0;
}

uint32_t sp_rcache__capacity(const struct sp_rcache *c)
{
	return c->n_sets * SP_RCACHE_WAYS;
}

bool sp_rcache__get(struct sp_rcache *c, uint32_t module, uint64_t va, struct sp_frames *out)
{
	uint32_t s = (uint32_t)hash_key(module, va) & (c->n_sets - 1);
	struct sp_rcache_shard *sh = &c->shard[s % SP_RCACHE_SHARDS];
	size_t base = (size_t)s * SP_RCACHE_WAYS;
	bool hit = false;

	pthread_mutex_lock(&sh->lock);
	for (uint32_t w = 0; w < SP_RCACHE_WAYS; w++) {
		struct sp_rcache_key *k = &c->k[base + w];
		const struct sp_rcache_entry *e = &c->e[base + w];

		if (k->module != module + 1 || k->va != va)
			continue;
		k->age = ++sh->clock;
		if (e->big) {
			memcpy(out, e->big, frames_size(e->big));
		} else {
			out->n = e->n;
			out->source = e->source;
			memcpy(out->f, e->f, (size_t)e->n * sizeof(out->f[0]));
		}
		hit = true;
		break;
	}
	pthread_mutex_unlock(&sh->lock);
	return hit;
}

void sp_rcache__put(struct sp_rcache *c, uint32_t module, uint64_t va,
		    const struct sp_frames *fr)
{
	uint32_t s = (uint32_t)hash_key(module, va) & (c->n_sets - 1);
	struct sp_rcache_shard *sh = &c->shard[s % SP_RCACHE_SHARDS];
	size_t base = (size_t)s * SP_RCACHE_WAYS, v = base;
	struct sp_frames *copy = NULL, *old;
	struct sp_rcache_entry *e;

	if (fr->n > INLINE_FRAMES) {
		copy = malloc(frames_size(fr));
		if (!copy)
			return;		/* not cached; the answer is still right */
		memcpy(copy, fr, frames_size(fr));
		__atomic_add_fetch(&c->n_big, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&sh->lock);
	for (size_t w = base; w < base + SP_RCACHE_WAYS; w++) {
		if (c->k[w].module == module + 1 && c->k[w].va == va) {
			v = w;		/* raced with another thread */
			break;
		}
		if (!c->k[w].module) {
			v = w;
			break;
		}
		if ((int32_t)(c->k[w].age - c->k[v].age) < 0)
			v = w;
	}
	if (!c->k[v].module)
		__atomic_add_fetch(&c->used, 1, __ATOMIC_RELAXED);
	else if (c->k[v].module != module + 1 || c->k[v].va != va)
		__atomic_add_fetch(&c->evictions, 1, __ATOMIC_RELAXED);
	e = &c->e[v];
	old = e->big;
	c->k[v] = (struct sp_rcache_key){ .va = va, .module = module + 1, .age = ++sh->clock };
	e->big = copy;
	e->n = fr->n;
	e->source = fr->source;
	if (!copy)
		memcpy(e->f, fr->f, (size_t)fr->n * sizeof(fr->f[0]));
	pthread_mutex_unlock(&sh->lock);
	if (old) {
		__atomic_sub_fetch(&c->n_big, 1, __ATOMIC_RELAXED);
		free(old);
	}
}

void sp_rcache__free(struct sp_rcache *c)
{
	if (!c->e)
		return;
	/* a walk over every entry would touch pages the cache never used */
	for (size_t i = 0; c->n_big && i < (size_t)c->n_sets * SP_RCACHE_WAYS; i++)
		if (c->e[i].big) {
			free(c->e[i].big);
			c->n_big--;
		}
	free(c->k);
	free(c->e);
	for (uint32_t i = 0; i < SP_RCACHE_SHARDS; i++)
		pthread_mutex_destroy(&c->shard[i].lock);
	c->k = NULL;
	c->e = NULL;
}
