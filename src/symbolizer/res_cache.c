// SPDX-License-Identifier: MIT
/*
 * res_cache.c - see res_cache.h.  Set s of the cache is e[s * WAYS ..
 * s * WAYS + WAYS); it belongs to shard s % SHARDS.  An entry's module is
 * stored + 1 so that 0 marks an empty way.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "res_cache.h"

#define DEFAULT_ENTRIES 65536u

struct sp_rcache_entry {
	uint64_t va;
	uint32_t module;	/* + 1; 0 = empty */
	uint32_t age;
	struct sp_frames *res;
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
	c->e = calloc((size_t)sets * SP_RCACHE_WAYS, sizeof(*c->e));
	if (!c->e)
		return -ENOMEM;
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
	struct sp_rcache_entry *set = &c->e[(size_t)s * SP_RCACHE_WAYS];
	bool hit = false;

	pthread_mutex_lock(&sh->lock);
	for (uint32_t w = 0; w < SP_RCACHE_WAYS; w++)
		if (set[w].module == module + 1 && set[w].va == va) {
			set[w].age = ++sh->clock;
			memcpy(out, set[w].res, frames_size(set[w].res));
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
	struct sp_rcache_entry *set = &c->e[(size_t)s * SP_RCACHE_WAYS], *victim = &set[0];
	struct sp_frames *copy = malloc(frames_size(fr)), *old = NULL;

	if (!copy)
		return;		/* not cached; the answer is still right */
	memcpy(copy, fr, frames_size(fr));
	pthread_mutex_lock(&sh->lock);
	for (uint32_t w = 0; w < SP_RCACHE_WAYS; w++) {
		if (set[w].module == module + 1 && set[w].va == va) {
			victim = &set[w];	/* raced with another thread */
			break;
		}
		if (!set[w].module) {
			victim = &set[w];
			break;
		}
		if ((int32_t)(set[w].age - victim->age) < 0)
			victim = &set[w];
	}
	if (victim->module && !(victim->module == module + 1 && victim->va == va))
		__atomic_add_fetch(&c->evictions, 1, __ATOMIC_RELAXED);
	else if (!victim->module)
		__atomic_add_fetch(&c->used, 1, __ATOMIC_RELAXED);
	old = victim->res;
	victim->module = module + 1;
	victim->va = va;
	victim->age = ++sh->clock;
	victim->res = copy;
	pthread_mutex_unlock(&sh->lock);
	free(old);
}

void sp_rcache__free(struct sp_rcache *c)
{
	if (!c->e)
		return;
	for (size_t i = 0; i < (size_t)c->n_sets * SP_RCACHE_WAYS; i++)
		free(c->e[i].res);
	free(c->e);
	for (uint32_t i = 0; i < SP_RCACHE_SHARDS; i++)
		pthread_mutex_destroy(&c->shard[i].lock);
	c->e = NULL;
}
