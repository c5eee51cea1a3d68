/* SPDX-License-Identifier: MIT */
/*
 * privs.h - the agent's privileges: refuse to run setuid/setgid, and after
 * BPF is loaded and attached keep only the capabilities still needed.
 *
 * Kept after attach (sp_privs__needed), and why:
 *   CAP_SYS_PTRACE       /proc/PID/maps, /exe, /root of other users'
 *                        processes (ptrace "read" access) and /proc/PID/mem
 *                        (ptrace "attach" access) to read the OTEP 4719
 *                        process context and TLS layout of new processes;
 *   CAP_DAC_READ_SEARCH  opening their ELF files (build ids, TLS symbols)
 *                        through /proc/PID/root/PATH when file modes would
 *                        refuse uid 0 without CAP_DAC_OVERRIDE;
 *   CAP_CHECKPOINT_RESTORE  opening /proc/PID/map_files/START-END (deleted
 *                        or other-namespace files) - the kernel asks for it
 *                        or CAP_SYS_ADMIN (5.9+); on older kernels that
 *                        lack it, CAP_SYS_ADMIN is kept instead;
 *   CAP_BPF              updates of the targets and tls_descs maps as
 *                        processes come and go: kernels before 6.4 refuse
 *                        every bpf() command without it when
 *                        unprivileged BPF is disabled (CAP_SYS_ADMIN on
 *                        kernels before 5.8, which lack CAP_BPF).
 *   CAP_SYS_ADMIN        only with uprobes attached as processes come
 *                        (--off-cpu-goroutines: goroutine park probes on
 *                        each new Go executable): perf_event_open of the
 *                        uprobe PMU refuses CAP_PERFMON alone (EACCES,
 *                        checked on 6.18 by test_agent_metrics_go.py).
 * Everything else (CAP_PERFMON, CAP_SYS_ADMIN otherwise, CAP_SYS_RESOURCE, CAP_NET_*,
 * CAP_SETUID, CAP_SETPCAP, ...) is removed from the bounding, permitted,
 * effective, inheritable and ambient sets, and no_new_privs is set.
 *
 * Capabilities are per thread (capset and prctl change the caller only;
 * a thread blocked in a read can neither be made to drop nor be ended):
 * call sp_privs__drop while the caller is the only thread and before any
 * read of another process's files, so that every thread is created after
 * it and inherits the reduced sets.  The agent attaches, ends its own
 * start-up helpers (sp_io_deadline__retire_all; one still blocked refuses
 * the start), drops, and only then scans the running processes
 * (sp_pipeline__scan): test_agent_thread_caps.py.
 */
#ifndef SPANPROF_PRIVS_H
#define SPANPROF_PRIVS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* -EPERM with a message when real and effective uid or gid differ. */
int sp_privs__refuse_setuid(char *err, size_t err_len);

/* The capability mask kept after attach on this kernel (see above);
 * uprobes: probes are still to be attached later. */
uint64_t sp_privs__needed(bool uprobes);

/* Drops every capability not in keep (bit n = capability n) from all
 * sets.  The bounding set needs CAP_SETPCAP: when it is missing, the
 * bounding set is left as is (reported in err, not an error).  Returns 0,
 * or a negative errno with a message. */
int sp_privs__drop(uint64_t keep, char *err, size_t err_len);

/* "cap_sys_ptrace,cap_bpf" (names as in capabilities(7), lower case). */
void sp_privs__names(uint64_t mask, char *out, size_t len);

#endif
