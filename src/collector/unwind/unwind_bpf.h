/* SPDX-License-Identifier: MIT */
/*
 * unwind_bpf.h - the unwind store's backend on the real BPF maps
 * (bpf/maps.bpf.h): chunks are mmapable BPF arrays created with
 * bpf_map_create and published in the ARRAY_OF_MAPS unwind_chunks; the
 * descriptor array and the staleness sequence are mmapped; process range
 * headers go through bpf_map_update_elem.
 *
 * Every chunk is a kernel allocation of 256 KiB charged to the collector's
 * memory cgroup (the memory guard sees it in the cgroup's usage).  All
 * mappings and descriptors are owned here and released by __free.
 */
#ifndef SPANPROF_UNWIND_BPF_H
#define SPANPROF_UNWIND_BPF_H

#include "collector/pipeline/bpf_sampler.h"
#include "collector/unwind/unwind_backend.h"

struct sp_unw_bpf;

/* maps: the sampler's (borrowed; they must outlive this).  Returns 0 and
 * fills *be, or a negative errno with a message in err. */
int sp_unw_bpf__new(const struct sp_sampler_unwind_maps *maps, struct sp_unw_bpf **out,
		    struct sp_unw_backend *be, char *err, size_t err_len);
void sp_unw_bpf__free(struct sp_unw_bpf *u);	/* NULL-safe */

#endif
