/* SPDX-License-Identifier: MIT */
/*
 * membudget.h - the one memory budget of `spanprof-symbolizer serve`.
 *
 * Every byte the receiver holds because of a request is taken from it
 * before it is allocated: request bodies as they grow, inflated bytes,
 * the decode's predicted peak (profile/pbcost.h: protobuf-c's tree plus
 * the model), the symbolization working set, the encoded and compressed
 * copies a worker writes and forwards.  A take that would pass the limit
 * is refused and the request answered 503 (413 when it could never fit:
 * more than the whole limit).  So what requests hold stays under limit,
 * whatever their number and order; what is not per request (the
 * resolver's caches, libdw's modules, thread stacks) is configured apart
 * and is the headroom between the budget and the process's memory limit.
 *
 * A new intake path (an upload endpoint) must take its bytes here too.
 *
 * Lock-free: __take is a compare-and-swap loop; any thread.
 */
#ifndef SPANPROF_SYMBOLIZER_MEMBUDGET_H
#define SPANPROF_SYMBOLIZER_MEMBUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct sp_membudget {
	uint64_t limit;
	_Atomic uint64_t used;
	_Atomic uint64_t peak;
	_Atomic uint64_t refused;	/* takes refused */
	_Atomic uint64_t forced_bytes;	/* taken past the limit (__force) */
};

void sp_membudget__init(struct sp_membudget *b, uint64_t limit);
/* true when n bytes were taken (used + n <= limit), false and counted
 * otherwise.  n == 0 always succeeds. */
bool sp_membudget__take(struct sp_membudget *b, uint64_t n);
/* Takes n even past the limit, counting what passed it: for memory that
 * is already allocated (the symbolizer's growth, measured after). */
void sp_membudget__force(struct sp_membudget *b, uint64_t n);
void sp_membudget__give(struct sp_membudget *b, uint64_t n);
uint64_t sp_membudget__used(const struct sp_membudget *b);
uint64_t sp_membudget__peak(const struct sp_membudget *b);

#endif /* SPANPROF_SYMBOLIZER_MEMBUDGET_H */
