/* SPDX-License-Identifier: MIT */
/*
 * target_select.h - which processes the agent profiles: those whose
 * cgroup path starts with one of the --select-cgroup prefixes (any line
 * of /proc/PID/cgroup: every v1 hierarchy and the v2 one; Kubernetes pods
 * live under ".../kubepods.../pod<uid>/"), whose executable is one of
 * --select-exe (a full path, or a base name), or whose service.name from
 * its environment (OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES;
 * otel_env.h, read as proc_env.h does) is one of --select-service.  No
 * selector: everything.
 *
 * Decided once per process image, at its first sample (and again after an
 * exec): a direct-mapped verdict cache by pid, fixed size.  The caller
 * makes an excluded process cost no more user-space work by telling BPF
 * (sp_pipeline__exclude); the cache only spares included ones the
 * re-reads.  Not thread safe: the consumer's thread only.
 */
#ifndef SPANPROF_TARGET_SELECT_H
#define SPANPROF_TARGET_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#define SP_SELECT_MAX 16		/* selectors of each kind */
#define SP_SELECT_LEN 256		/* bytes of one selector */

struct sp_target_select_stats {
	uint64_t included;	/* process images selected */
	uint64_t excluded;	/* ... not selected (BPF told) */
	uint64_t unreadable;	/* /proc gone or denied: excluded */
};

struct sp_target_select;

/* NULL on ENOMEM; proc_root NULL = "/proc". */
struct sp_target_select *sp_target_select__new(const char *proc_root);
void sp_target_select__free(struct sp_target_select *t);	/* NULL-safe */
/* Adds a selector: 0, -E2BIG (too many or too long) or -EINVAL (a cgroup
 * prefix not starting with '/', an empty executable). */
int sp_target_select__add_cgroup(struct sp_target_select *t, const char *prefix);
int sp_target_select__add_exe(struct sp_target_select *t, const char *exe);
int sp_target_select__add_service(struct sp_target_select *t, const char *name);
bool sp_target_select__active(const struct sp_target_select *t);
/* The verdict for pid (cached); *fresh (may be NULL) is true when it was
 * decided now (the caller then tells BPF of an exclusion). */
bool sp_target_select__wants(struct sp_target_select *t, uint32_t pid, bool *fresh);
void sp_target_select__forget(struct sp_target_select *t, uint32_t pid);	/* exec */
const struct sp_target_select_stats *sp_target_select__stats(const struct sp_target_select *t);

/* The prefix test on one /proc/PID/cgroup text ("N:controllers:/path"
 * lines): true when a line's path starts with prefix at a '/' boundary. */
bool sp_target_select__cgroup_match(const char *cgroup_text, const char *prefix);

#endif
