/* SPDX-License-Identifier: MIT */
/*
 * unwind_backend.h - how the unwind store reaches the memory the BPF
 * unwinder reads (abi.h, "User-stack unwinding").  unwind_bpf.c is the real
 * one (BPF maps, mmapped); the unit tests use plain memory, so the
 * allocator, the file cache and the process ranges are tested without BPF.
 *
 * Ownership: the backend owns every mapping it hands out; pointers stay
 * valid until chunk_unmap (chunks) or the backend is destroyed (files,
 * seq).  Calls come from one thread at a time (the unwinder's lock).
 */
#ifndef SPANPROF_UNWIND_BACKEND_H
#define SPANPROF_UNWIND_BACKEND_H

#include <stdint.h>

#include "spanprof/abi.h"

struct sp_unw_backend {
	void *ctx;
	/* Words of chunk i (SP_UNW_CHUNK_WORDS), created and published to
	 * BPF if new; NULL with errno on failure (ENOMEM: kernel memory). */
	uint64_t *(*chunk_map)(void *ctx, uint32_t i);
	/* Chunk i is empty: unpublish and free it. */
	void (*chunk_unmap)(void *ctx, uint32_t i);
	/* SP_UNW_FILES_MAX descriptors BPF reads (and writes last_used_ns
	 * of); the store writes them in place. */
	struct sp_unw_file *files;
	/* SP_UNW_SEQ_SLOTS staleness counters BPF bumps (low 32 bits). */
	const volatile uint64_t *seq;
	/* A process's range list: publish or withdraw; negative errno. */
	int (*proc_set)(void *ctx, uint32_t pid, const struct sp_unw_proc *p);
	int (*proc_del)(void *ctx, uint32_t pid);
};

#endif
