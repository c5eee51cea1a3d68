/* SPDX-License-Identifier: MIT */
/*
 * snapshot.h - builds a struct sp_profile from an aggregator and the
 * process table: the hand-over point from the collector to the exporters.
 *
 * Runs on the export path (it allocates the profile); never on the
 * ring-buffer hot path.  Reads the kernel layout and the JIT heads, never
 * a file.  Addresses: the leaf frame of each stack keeps its
 * address; every other frame is a return address and is reported minus one
 * so that it falls inside the call instruction (pprof's convention, and what
 * makes a symbolizer name the calling line, not the next one).
 */
#ifndef SPANPROF_SNAPSHOT_H
#define SPANPROF_SNAPSHOT_H

#include <stdint.h>

struct sp_agg;
struct sp_jit_maps;
struct sp_kernel_layout;
struct sp_otel_attrs;
struct sp_proc_env_ident;
struct sp_proc_table;
struct sp_profile;

struct sp_snapshot_opts {
	int64_t mono_to_unix_ns;	/* add to CLOCK_MONOTONIC to get unix ns */
	uint64_t period_ns;		/* on-CPU sampling period, 1e9 / Hz */
	uint64_t start_mono_ns;
	uint64_t end_mono_ns;
	/* Optional: what pid declares in its environment (proc_env.h):
	 * OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES.  NULL or returning
	 * NULL: nothing. */
	const struct sp_proc_env_ident *(*env_ident)(uint32_t pid, void *ctx);
	void *env_ident_ctx;
	/* Optional: attributes on every resource (the collector's own
	 * OTEL_RESOURCE_ATTRIBUTES, k8s.node.name); a key the process
	 * declares itself wins.  Fixed keys (service.name, host.name, ...)
	 * in it are ignored: host_name is the collector's host. */
	const struct sp_otel_attrs *common_attrs;
	const char *host_name;		/* NULL: gethostname() */
	/* Optional out: incremented for each attribute left off because a
	 * resource had SP_RES_ATTRS_MAX already. */
	uint64_t *attrs_dropped;
	/* Optional: service name per pid (from the OTEP 4719 process context),
	 * after the environment's.  Without either, service.name is
	 * "unknown_service:<executable name>" (the semantic conventions'
	 * fallback). */
	const char *(*service_name)(uint32_t pid, void *ctx);
	void *service_name_ctx;
	/* Optional: container id per pid (the agent reads /proc/PID/cgroup);
	 * NULL or returning NULL means none. */
	const char *(*container_id)(uint32_t pid, void *ctx);
	void *container_id_ctx;
	/* Optional: name of thread-record attribute key_index for pid (the
	 * process's OTEP 4719 threadlocal.attribute_key_map); NULL or
	 * returning NULL exports the attribute as "attr.<key_index>". */
	const char *(*attr_key)(uint32_t pid, uint8_t key_index, void *ctx);
	void *attr_key_ctx;
	/* Optional: where the kernel's code is (host/kernel_layout.h).  With
	 * it, kernel frames become locations that mean the same on every host
	 * and boot: [kernel.kallsyms] at link-time addresses, [module:NAME] at
	 * offsets in the module's .text ([module-section:NAME:SECTION] in its
	 * other executable sections), [kernel.boot] for code placed at run
	 * time.  Without it, one [kernel.kallsyms] mapping of runtime
	 * addresses (the registry's kernel entry). */
	struct sp_kernel_layout *kernel;
	/* Optional: JIT symbol snapshots (procs/jit_maps.h).  A frame in a
	 * process's anonymous executable memory gets a "[perf-map]" mapping
	 * whose build id names the head piece of that process's chain;
	 * without a chain (or without this) it has no mapping (0), as any
	 * unknown frame. */
	struct sp_jit_maps *jit;
};

int sp_snapshot__build(struct sp_agg *agg, struct sp_proc_table *procs,
		       const struct sp_snapshot_opts *o, struct sp_profile **out);

#endif
