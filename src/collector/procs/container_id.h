/* SPDX-License-Identifier: MIT */
/*
 * container_id.h - container.id of a process, from its cgroup path.
 *
 * Parsing: the deepest 64-hex-digit run in /proc/PID/cgroup that stands as
 * its own token (bounded by '/', '-', '.', ':' or the line's ends), which
 * covers docker ("/docker/ID", "docker-ID.scope"), containerd and
 * Kubernetes ("/kubepods/.../podUID/ID", "cri-containerd-ID.scope") and
 * cri-o ("crio-ID.scope").  Pod UIDs (with dashes) and shorter hex runs
 * never match.  Lower-cased.
 *
 * Cache: direct-mapped by pid, fixed size (no allocation after new).  The
 * consumer notes a process on first sight and on exec (reads the file
 * then, while the process is alive); snapshots look ids up.  A collision
 * replaces the older entry (counted); a miss reads the file at lookup.
 * Not thread safe: the caller serializes note and lookup.
 */
#ifndef SPANPROF_CONTAINER_ID_H
#define SPANPROF_CONTAINER_ID_H

#include <stdint.h>

#define SP_CONTAINER_ID_LEN 64

/* 0 and out (65 bytes, NUL-terminated), or -ENOENT. */
int sp_container_id__parse(const char *cgroup_text, char out[SP_CONTAINER_ID_LEN + 1]);

struct sp_container_ids_stats {
	uint64_t reads;
	uint64_t found;
	uint64_t evictions;
};

struct sp_container_ids;

/* slots rounded up to a power of two (default 4096); proc_root NULL =
 * "/proc". */
struct sp_container_ids *sp_container_ids__new(uint32_t slots, const char *proc_root);
void sp_container_ids__free(struct sp_container_ids *c);
void sp_container_ids__note(struct sp_container_ids *c, uint32_t pid);
/* The id, or NULL (none / unknown).  Valid until the next call. */
const char *sp_container_ids__get(struct sp_container_ids *c, uint32_t pid);
const struct sp_container_ids_stats *sp_container_ids__stats(const struct sp_container_ids *c);

#endif
