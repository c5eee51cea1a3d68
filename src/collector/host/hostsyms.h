/* SPDX-License-Identifier: MIT */
/*
 * hostsyms.h - what only this host has for the symbolizer, in one place
 * for `record` and `agent`: the kernel layout (kernel frames that mean the
 * same on every boot), the kernel symbol snapshot, the vDSO image and the
 * JIT perf-map pieces, and where they go (base/symstore.h): a store
 * directory (record: FILE.syms/, agent: DIR/syms/) and/or a sink (the
 * agent's uploader to `spanprof-symbolizer serve`).  Data capture only
 * (design invariant 2).
 *
 * sp_hostsyms__new: never fails for a missing piece: without kernel
 *   addresses (kptr_restrict) there is no layout (kernel frames keep
 *   runtime addresses, one line on stderr), without a [vdso] no vDSO;
 *   -ENOMEM and a bad configuration are the only errors.
 * __proc_config / __snapshot_opts / __consumer: hand the pieces to the
 *   process table (vDSO build id), the snapshot (layout, JIT heads) and
 *   the consumer (JIT notes).
 * __ship_kernel: the kernel snapshot (with the module lines) to the sink
 *   and/or the store, once per kernel build id per process run (again
 *   after __lost says an upload of it failed).  With keep_kernel_snapshot
 *   it is the one captured at __new (about 1 MB kept).
 * __ship_vdso: the vDSO image likewise (once).
 * __profile_uses_vdso: true when p has a "[vdso]" mapping (record writes
 *   the image only then).
 * __lost: a blob handed to the sink did not arrive after all (the
 *   uploader's on_lost): the kernel snapshot or vDSO is shipped again next
 *   time, JIT chains start over (jit_maps.h).
 * __start: starts the perf-map reader thread (jit_maps.h: it has the
 *   capabilities of the calling thread, so a command that drops some
 *   starts it after the drop).
 * __stop_jit: stops the perf-map reader (before the sink goes away).
 *
 * Memory: the layout (a few KB per module), the vDSO copy (8 KB), the JIT
 * table (jit_maps.h); snapshots are built when shipped and freed.
 */
#ifndef SPANPROF_COLLECTOR_HOSTSYMS_H
#define SPANPROF_COLLECTOR_HOSTSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/host/kernel_layout.h"
#include "collector/host/vdso.h"
#include "collector/procs/jit_maps.h"

struct sp_proc_table_config;
struct sp_snapshot_opts;
struct sp_consumer;
struct sp_profile;

/* Where a blob goes besides the store: kind (base/symstore.h), its key
 * (binary), its bytes.  0 taken, or a negative errno (counted by the
 * caller, e.g. a full upload queue). */
typedef int (*sp_hostsyms_sink_fn)(void *ctx, int kind, const uint8_t *key, size_t key_len,
				   const uint8_t *data, size_t len);

struct sp_hostsyms_config {
	bool kernel;			/* kernel frames are sampled */
	bool keep_kernel_snapshot;	/* capture the snapshot at __new and keep
					 * it (the agent: it drops the privilege
					 * to read kernel addresses after start) */
	bool no_jit;			/* do not read perf maps */
	const char *store_dir;		/* NULL: none; made (0755) on first write */
	sp_hostsyms_sink_fn sink;	/* NULL: none */
	void *sink_ctx;
	struct sp_jit_maps_config jit;	/* limits; sink fields are ours */
	const char *log_prefix;		/* "spanprof record: " */
};

struct sp_hostsyms_stats {
	uint64_t store_writes;		/* files written to the store */
	uint64_t store_errors;
	uint64_t sink_refused;		/* the sink did not take a blob */
	uint64_t kernel_shipped;	/* kernel snapshots handed on */
	uint64_t vdso_shipped;
};

struct sp_hostsyms;

int sp_hostsyms__new(const struct sp_hostsyms_config *cfg, struct sp_hostsyms **out);
void sp_hostsyms__free(struct sp_hostsyms *h);	/* NULL-safe */

void sp_hostsyms__proc_config(const struct sp_hostsyms *h, struct sp_proc_table_config *pc);
void sp_hostsyms__snapshot_opts(struct sp_hostsyms *h, struct sp_snapshot_opts *so);
void sp_hostsyms__consumer(struct sp_hostsyms *h, struct sp_consumer *c);

struct sp_kernel_layout *sp_hostsyms__kernel(struct sp_hostsyms *h);
struct sp_jit_maps *sp_hostsyms__jit(struct sp_hostsyms *h);
const struct sp_vdso *sp_hostsyms__vdso(const struct sp_hostsyms *h);

int sp_hostsyms__ship_kernel(struct sp_hostsyms *h);
int sp_hostsyms__ship_vdso(struct sp_hostsyms *h);
bool sp_hostsyms__profile_uses_vdso(const struct sp_profile *p);

void sp_hostsyms__lost(struct sp_hostsyms *h, int kind);
int sp_hostsyms__start(struct sp_hostsyms *h);
void sp_hostsyms__stop_jit(struct sp_hostsyms *h);
void sp_hostsyms__stats(struct sp_hostsyms *h, struct sp_hostsyms_stats *st);

#endif /* SPANPROF_COLLECTOR_HOSTSYMS_H */
