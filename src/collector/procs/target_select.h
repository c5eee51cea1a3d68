/* SPDX-License-Identifier: MIT */
/*
 * target_select.h - which processes the agent profiles: those whose
 * cgroup path starts with one of the --select-cgroup prefixes (any line
 * of /proc/PID/cgroup: every v1 hierarchy and the v2 one; Kubernetes pods
 * live under ".../kubepods.../pod<uid>/"), whose executable is one of
 * --select-exe (a full path, or a base name), or whose service.name is
 * one of --select-service.  No selector: everything.
 *
 * service.name is the one its resources get, asked of the hook
 * (sp_target_select__set_service; the agent gives
 * sp_pipeline__service_name: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES'
 * service.name, then the OTEP 4719 process context; pipeline/
 * service_name.h), so selection and identity cannot disagree.  Without a
 * hook no process has a service name.
 *
 * Decided once per process image, at its first sample (and again after an
 * exec): a direct-mapped verdict cache by pid, fixed size.  A process
 * that matches nothing but has no service name yet, while --select-service
 * is given, is "deferred": a 4719 context is published by the running
 * program, possibly after its first sample.  Its samples are dropped (not
 * selected yet) and it is decided again, the context looked for anew,
 * every SP_SELECT_RETRY_MS, SP_SELECT_RETRIES times; then it is excluded
 * for good (until it execs).  The caller makes an excluded process cost
 * no more user-space work by telling BPF (sp_pipeline__exclude) when
 * *fresh says the exclusion is final; the cache only spares included ones
 * the re-reads.  Not thread safe: the consumer's thread only.
 */
#ifndef SPANPROF_TARGET_SELECT_H
#define SPANPROF_TARGET_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#define SP_SELECT_MAX 16		/* selectors of each kind */
#define SP_SELECT_LEN 256		/* bytes of one selector */
#define SP_SELECT_RETRY_MS 250		/* a deferred process is decided again ... */
#define SP_SELECT_RETRIES 8		/* ... this many times (2 s) */

struct sp_target_select_stats {
	uint64_t included;	/* process images selected */
	uint64_t excluded;	/* ... not selected (BPF told) */
	uint64_t unreadable;	/* /proc gone or denied: excluded */
	uint64_t deferred;	/* ... images without a service name yet (decided later) */
};

/* pid's service.name or NULL; look_again: the name may have appeared
 * since the last ask (a retry of a deferred process). */
typedef const char *(*sp_target_service_fn)(uint32_t pid, bool look_again, void *ctx);

struct sp_target_select;

/* NULL on ENOMEM; proc_root NULL = "/proc". */
struct sp_target_select *sp_target_select__new(const char *proc_root);
void sp_target_select__free(struct sp_target_select *t);	/* NULL-safe */
/* Adds a selector: 0, -E2BIG (too many or too long) or -EINVAL (a cgroup
 * prefix not starting with '/', an empty executable). */
int sp_target_select__add_cgroup(struct sp_target_select *t, const char *prefix);
int sp_target_select__add_exe(struct sp_target_select *t, const char *exe);
int sp_target_select__add_service(struct sp_target_select *t, const char *name);
void sp_target_select__set_service(struct sp_target_select *t, sp_target_service_fn fn,
				  void *ctx);
bool sp_target_select__active(const struct sp_target_select *t);
/* The verdict for pid (cached) at now_ms (CLOCK_MONOTONIC ms: the
 * sample's time); *fresh (may be NULL) is true when it was decided now
 * for good (the caller then tells BPF of an exclusion; a deferred
 * process is not selected and not fresh). */
bool sp_target_select__wants(struct sp_target_select *t, uint32_t pid, uint64_t now_ms,
			     bool *fresh);
void sp_target_select__forget(struct sp_target_select *t, uint32_t pid);	/* exec */
const struct sp_target_select_stats *sp_target_select__stats(const struct sp_target_select *t);

/* The prefix test on one /proc/PID/cgroup text ("N:controllers:/path"
 * lines): true when a line's path starts with prefix at a '/' boundary. */
bool sp_target_select__cgroup_match(const char *cgroup_text, const char *prefix);

#endif
