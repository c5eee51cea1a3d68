/* SPDX-License-Identifier: MIT */
/*
 * ctx_discovery.h - finds processes that publish OpenTelemetry context and
 * hands the BPF sampler their thread-context descriptor.
 *
 * When: on exec and on first sight of a pid (consumer callback), for the
 * processes already running when recording starts (one /proc walk), and
 * when a process publishes late (an SP_EV_CTX_PUBLISH event from the prctl
 * tracepoint).  Never per sample.
 *
 * What: a Go executable gets its Go descriptor (go_discovery.h: the
 * goroutine label reader), whatever else it publishes.  Then the OTEP 4719
 * process context is read (service name,
 * attribute key map); only a process that publishes one has its ELF files
 * searched for otel_thread_ctx_v1 (that search costs milliseconds, so it is
 * not done for every process on the machine).  Both run as one look on a
 * helper thread within SP_CTX_LOOK_TIMEOUT_MS (base/proc_read.h): a process
 * caught by a hung file system costs the caller one wait of the limit.  Every failure is counted by
 * reason, once per process (a process failing again for the same reason
 * is not counted twice).  State is bounded: SP_CTX_DISCOVERY_MAX processes,
 * and the agent forgets a pid when the process table does (__forget), so
 * the table holds the live processes, not every pid ever examined.
 *
 * A process's exit removes its descriptor from the BPF map at once (the map
 * holds live processes only; a one-off recording never forgets); its slot,
 * with the names buffered samples still need, waits for __forget.
 * Publications are rate-limited per process: at most one re-read of
 * /proc/PID per SP_CTX_PUBLISH_MIN_MS, the rest coalesced into one re-read
 * at the end of that time (tick) and counted, so a process calling
 * prctl(PR_SET_VMA) in a loop costs one maps read per 100 ms.
 */
#ifndef SPANPROF_CTX_DISCOVERY_H
#define SPANPROF_CTX_DISCOVERY_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/pipeline/consumer.h"

#define SP_CTX_DISCOVERY_MAX 16384
#define SP_CTX_PUBLISH_MIN_MS 100	/* between re-reads of one process */
/* One look at a process (process context, TLS search: its maps, memory
 * and ELF files) runs on a helper thread and is waited for at most this
 * long (base/proc_read.h); longer than a single file read's 250 ms since
 * a search reads every module's symbol table.  Past it the process is
 * counted failed "timed_out", and its later looks "stuck" until the
 * abandoned one returns. */
#define SP_CTX_LOOK_TIMEOUT_MS 1000

struct sp_proc_table;
struct sp_sampler;
struct sp_summary;
struct sp_ctx_discovery;

struct sp_ctx_discovery *sp_ctx_discovery__new(struct sp_sampler *s, const char *proc_root);
/* With the process table (borrowed), first sight and exec skip processes
 * whose maps, just read by the table, show no OTEL_CTX mapping. */
void sp_ctx_discovery__set_procs(struct sp_ctx_discovery *d, struct sp_proc_table *procs);
void sp_ctx_discovery__free(struct sp_ctx_discovery *d);

/* go_discovery.h's companion of a new process's first maps read: the
 * executable __on_proc's Go look opens. */
struct sp_io_job;
struct sp_io_job *sp_ctx_discovery__companion(struct sp_ctx_discovery *d, uint32_t pid);
void sp_ctx_discovery__companion_back(struct sp_ctx_discovery *d, uint32_t pid,
				      struct sp_io_job *j, int rc);

/* sp_consumer_proc_fn: examine pid (first sight: only if never examined;
 * exec: forget what was known; publish: look again, rate-limited; exit:
 * drop its BPF descriptor). */
void sp_ctx_discovery__on_proc(uint32_t pid, enum sp_proc_why why, void *ctx);
/* Re-reads the processes whose coalesced publication is due; call after
 * each ring-buffer drain, from the thread that calls on_proc. */
void sp_ctx_discovery__tick(struct sp_ctx_discovery *d);
/* Forgets pid (its process is gone and its last interval exported): its
 * slot, service name, attribute keys and, if resolved, its descriptor in
 * the BPF map.  A
 * later exec or first sight examines the pid afresh. */
void sp_ctx_discovery__forget(struct sp_ctx_discovery *d, uint32_t pid);
/* Examine processes already running: all of /proc, or the given pids. */
void sp_ctx_discovery__scan(struct sp_ctx_discovery *d, bool all, const uint32_t *pids,
			    uint32_t n);
/* Pids currently holding a slot (examined and not forgotten). */
uint32_t sp_ctx_discovery__tracked(const struct sp_ctx_discovery *d);
/* service.name published by pid, or NULL (snapshot's service_name hook). */
const char *sp_ctx_discovery__service_name(uint32_t pid, void *ctx);
/* Name of thread-record attribute key_index in pid's attribute key map,
 * or NULL (snapshot's attr_key hook). */
const char *sp_ctx_discovery__attr_key(uint32_t pid, uint8_t key_index, void *ctx);
/* sp_consumer_go_key_fn: the index of a Go label key in pid's key table
 * (go_discovery.h), -1 when pid is not a tracked Go process or its table
 * is full. */
int sp_ctx_discovery__go_key(uint32_t pid, const uint8_t *key, uint8_t len, void *ctx);
void sp_ctx_discovery__fill_summary(const struct sp_ctx_discovery *d, struct sp_summary *s);

#endif
