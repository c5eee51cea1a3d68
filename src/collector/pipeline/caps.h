/* SPDX-License-Identifier: MIT */
/*
 * caps.h - what the collector may do: effective capabilities checked before
 * anything is loaded, so a missing privilege is one clear line, not a
 * verifier or perf_event error.
 */
#ifndef SPANPROF_CAPS_H
#define SPANPROF_CAPS_H

#include <linux/capability.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Capabilities newer than the oldest kernel headers we build with. */
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

/* The effective and permitted sets (bit n = capability n; either pointer
 * may be NULL), read with capget(2).  0 or a negative errno. */
int sp_caps__current(uint64_t *effective, uint64_t *permitted);

/* Returns true when BPF programs and system-wide perf events are allowed
 * (CAP_SYS_ADMIN, or CAP_BPF + CAP_PERFMON).  Otherwise false and a message
 * naming the missing capabilities in msg. */
bool sp_caps__can_profile(char *msg, size_t len);

#endif
