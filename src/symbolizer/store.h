/* SPDX-License-Identifier: MIT */
/*
 * store.h - the receiving end of host-symbol uploads (`serve
 * --store-dir`): what agents ship because no symbolizer could fetch it
 * (kernel snapshots, the vDSO, JIT perf-map pieces), checked, written to
 * the store directory (base/symstore.h layout) and handed to the lookups
 * that use it.
 *
 * Contract of sp_store__put (one upload body, base/symstore.h envelope):
 *   - The key must be what the payload is: a kernel snapshot parses
 *     (kallsyms.h) and its header's build id is the key; an ELF image's
 *     GNU build id note is the key; a JIT piece decodes (base/jit_piece.h)
 *     and its id is the key.  Anything else is refused (-EINVAL, *why
 *     says what).  Payloads over SP_STORE_MAX_PAYLOAD are -E2BIG.
 *   - Content-addressed: a key already stored is a duplicate (1), not
 *     written again.  Else the file is written atomically (0) and then
 *     used: a snapshot joins the kallsyms set, an image makes the resolver
 *     look for that build id again, a piece makes the JIT lookups retry
 *     chains they found missing.
 *   - Disk: the store's bytes (counted at open, then per write) stay under
 *     max_bytes: before a write that would pass it, the oldest JIT pieces
 *     are removed (counted); kernel snapshots and images are never removed
 *     (a few per kernel build).  When there is still no room, -ENOSPC.
 *   - Thread safe (one mutex; the checks run outside it).
 */
#ifndef SPANPROF_SYMBOLIZER_STORE_H
#define SPANPROF_SYMBOLIZER_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "jit_syms.h"
#include "kallsyms.h"
#include "resolve.h"

#define SP_STORE_MAX_PAYLOAD (64u << 20)

struct sp_store_opts {
	const char *dir;		/* required, must exist and be writable */
	uint64_t max_bytes;		/* default 1 GiB */
	struct sp_ksyms_set *ksyms;	/* may be NULL */
	struct sp_resolver *resolver;	/* may be NULL */
	struct sp_jit_syms *jit;	/* may be NULL */
};

struct sp_store_stats {
	uint64_t uploads;
	uint64_t stored[4];		/* by kind (base/symstore.h), [0] unused */
	uint64_t duplicates;
	uint64_t refused_malformed;	/* envelope or payload does not parse */
	uint64_t refused_mismatch;	/* payload is not what the key says */
	uint64_t refused_too_big;
	uint64_t refused_full;		/* no room even after evicting */
	uint64_t write_errors;
	uint64_t evicted;		/* JIT pieces removed for room */
	uint64_t bytes;			/* gauge: bytes in the store */
	uint64_t files;			/* gauge */
	uint64_t max_bytes;
};

struct sp_store;

int sp_store__open(const struct sp_store_opts *o, struct sp_store **out, char *err,
		   size_t err_len);
void sp_store__free(struct sp_store *s);	/* NULL-safe */
int sp_store__put(struct sp_store *s, const uint8_t *body, size_t len, char *why,
		  size_t why_len);
void sp_store__stats(struct sp_store *s, struct sp_store_stats *st);

#endif /* SPANPROF_SYMBOLIZER_STORE_H */
