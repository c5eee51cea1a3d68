/* SPDX-License-Identifier: MIT */
/*
 * caps.h - what the collector may do: effective capabilities checked before
 * anything is loaded, so a missing privilege is one clear line, not a
 * verifier or perf_event error.
 */
#ifndef SPANPROF_CAPS_H
#define SPANPROF_CAPS_H

#include <stdbool.h>
#include <stddef.h>

/* Returns true when BPF programs and system-wide perf events are allowed
 * (CAP_SYS_ADMIN, or CAP_BPF + CAP_PERFMON).  Otherwise false and a message
 * naming the missing capabilities in msg. */
bool sp_caps__can_profile(char *msg, size_t len);

#endif
