// SPDX-License-Identifier: MIT
/*
 * strpool.c - see strpool.h.  Linear probing on XXH3 of the bytes; the
 * table doubles at half full.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "strpool.h"

static int grow(struct sp_strpool *p)
{
	uint32_t ncap = p->cap ? p->cap * 2 : 256;
	char **ns;

	if (ncap > (1u << 30))
		return -E2BIG;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->cap; i++) {
		uint32_t j;

		if (!p->slots[i])
			continue;
		j = (uint32_t)XXH3_64bits(p->slots[i], strlen(p->slots[i])) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = p->slots[i];
	}
	free(p->slots);
	p->slots = ns;
	p->cap = ncap;
	return 0;
}

/* The slot of s[0..len): its string, or the empty slot it would take. */
static char **find(struct sp_strpool *p, const char *s, size_t len)
{
	uint32_t j = (uint32_t)XXH3_64bits(s, len) & (p->cap - 1);

	while (p->slots[j] && (strncmp(p->slots[j], s, len) || p->slots[j][len]))
		j = (j + 1) & (p->cap - 1);
	return &p->slots[j];
}

static const char *put(struct sp_strpool *p, const char *s, size_t len, char *owned)
{
	char **slot;

	if ((uint64_t)(p->n + 1) * 2 > p->cap && grow(p)) {
		free(owned);
		return NULL;
	}
	slot = find(p, s, len);
	if (*slot) {
		free(owned);
		return *slot;
	}
	if (!owned) {
		owned = malloc(len + 1);
		if (!owned)
			return NULL;
		memcpy(owned, s, len);
		owned[len] = 0;
	}
	*slot = owned;
	p->n++;
	p->bytes += len + 1;
	return owned;
}

const char *sp_strpool__intern(struct sp_strpool *p, const char *s, size_t len)
{
	return put(p, s, len, NULL);
}

const char *sp_strpool__adopt(struct sp_strpool *p, char *s)
{
	return s ? put(p, s, strlen(s), s) : NULL;
}

void sp_strpool__free(struct sp_strpool *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->cap; i++)
		free(p->slots[i]);
	free(p->slots);
	memset(p, 0, sizeof(*p));
}
