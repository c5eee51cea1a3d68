/* SPDX-License-Identifier: MIT */
/*
 * go_discovery.h - the Go half of trace-context discovery: is a process's
 * executable a Go binary, and if so, hand BPF its Go descriptor (abi.h) so
 * that samples of its threads read the running goroutine's pprof labels.
 * Also the per-process table of Go label keys (labels carry their keys
 * inline; samples carry an index into this table, like the OTEP 4719
 * attribute key map).
 *
 * When: called by ctx_discovery on exec and first sight of a pid and by
 * its start-up scan; never per sample.  With goroutine parks asked
 * (sp_sampler__go_parks), a Go file also gets the park probes, once,
 * detached with its cache entry (and all by sp_sampler__stop); and,
 * while labels are read, the GC epoch probe of the label cache (once per
 * file, kept until sp_sampler__stop; bpf/gogc.bpf.c).  A file is read once (go_binary.c)
 * and remembered by identity (device, inode, mtime, size) in a cache of
 * SP_GO_FILE_CACHE entries (least recently used replaced), so a thousand
 * replicas of one service cost one read, and non-Go executables one
 * negative entry each.  Every outcome is counted per process.
 *
 * Not thread safe: the caller serializes (ctx_discovery's rules).
 */
#ifndef SPANPROF_GO_DISCOVERY_H
#define SPANPROF_GO_DISCOVERY_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/tracectx/go_binary.h"

#define SP_GO_FILE_CACHE 64
#define SP_GO_KEY_BASE 128	/* key indices of Go labels: BASE + slot */
#define SP_GO_PROC_KEYS 64	/* distinct label keys kept per process */

struct sp_sampler;

struct sp_go_stats {
	uint64_t procs;			/* Go processes given a descriptor (the
					 * same pid and file again: once) */
	uint64_t procs_dwarf;		/* ... offsets from their DWARF */
	uint64_t procs_table;		/* ... offsets from the version table */
	uint64_t cache_epoch;		/* ... label cache by GC epoch probe */
	uint64_t cache_sweepgen;	/* ... by runtime.mheap_.sweepgen */
	uint64_t cache_off;		/* ... uncached (neither) */
	uint64_t procs_failed;		/* Go processes without one: */
	uint64_t fail[SP_GO_FAIL__MAX];	/*   by reason */
	uint64_t bpf_map_full;		/*   or go_descs full */
	uint64_t files_read;		/* executables parsed */
	uint64_t exe_timed_out;		/* PID/exe not opened or read within
					 * 250 ms (base/proc_read.h) */
	uint64_t exe_skipped;		/* not tried: its earlier one stuck */
	uint64_t cache_hits;
	uint64_t parks_files;		/* executables with park probes */
	uint64_t parks_unsupported;	/* ... without: gopark's code unknown */
	uint64_t parks_failed;		/* ... attaching failed */
	uint64_t gc_files;		/* executables with the GC epoch probe */
	uint64_t gc_unsupported;	/* ... without: no runtime.gcSweep */
	uint64_t gc_failed;		/* ... attaching failed (or table full) */
	uint64_t gc_track_failed;	/* epoch entry not created (map full) */
	uint64_t parks_gone;		/* captured parks of processes that
					 * exited before the goroutine ran */
	uint64_t keys_dropped;		/* labels dropped: key table full, or a
					 * key with a NUL */
};

struct sp_go_discovery;

struct sp_go_discovery *sp_go_discovery__new(struct sp_sampler *s, const char *proc_root);
void sp_go_discovery__free(struct sp_go_discovery *g);	/* NULL-safe */

/* The open and stat of pid's executable as a companion of its first maps
 * read (one hand-off for a new process: proc_table.h), NULL without
 * memory; and the job back (rc and ownership as sp_proc_companions'
 * back): kept for pid's next __examine, which then opens nothing. */
struct sp_io_job;
struct sp_io_job *sp_go_discovery__companion(struct sp_go_discovery *g, uint32_t pid);
void sp_go_discovery__companion_back(struct sp_go_discovery *g, uint32_t pid,
				     struct sp_io_job *j, int rc);

/* Examines pid's executable (/proc/PID/exe).  1: a Go process, its
 * descriptor is now in BPF; 0: not Go (or gone); < 0: Go, but no
 * descriptor (counted by reason). */
int sp_go_discovery__examine(struct sp_go_discovery *g, uint32_t pid);
/* pid's descriptor leaves BPF (exec, forget). */
void sp_go_discovery__drop(struct sp_go_discovery *g, uint32_t pid);
/* pid exited: its descriptor leaves BPF, and so do its goroutines'
 * pending parks (counted in parks_gone). */
void sp_go_discovery__exited(struct sp_go_discovery *g, uint32_t pid);

const struct sp_go_stats *sp_go_discovery__stats(const struct sp_go_discovery *g);

/* A process's Go label keys.  *keys is NULL until the first key. */
struct sp_go_keys;

/* SP_GO_KEY_BASE + slot of key[0..len) in *keys, adding it (and the table)
 * when new; -1 when the table is full or memory is short (the caller
 * drops the label; g counts it). */
int sp_go_keys__index(struct sp_go_discovery *g, struct sp_go_keys **keys, const uint8_t *key,
		      uint8_t len);
/* The key of index idx (>= SP_GO_KEY_BASE), NUL-terminated, or NULL. */
const char *sp_go_keys__name(const struct sp_go_keys *keys, uint32_t idx);
void sp_go_keys__free(struct sp_go_keys *keys);	/* NULL-safe */

#endif
