/* SPDX-License-Identifier: MIT */
/*
 * pipeline.h - what every spanprof command runs between the kernel and a
 * profile: the BPF sampler (open -> configure -> load -> attach), its ring
 * buffer, the consumer, the process table, trace-context discovery, the
 * user-stack unwinder (its tables and ranges follow the process table's
 * maps reads; not with --unwind fp), the current aggregator (swappable),
 * and drain and stop.  `spanprof record`
 * and `spanprof agent` both run exactly this, so what one gets the other
 * gets: host symbols (collector/host/hostsyms.h: kernel frames by the
 * layout, the vDSO mapping, JIT perf maps noted by the consumer), discovery reuses the maps the process table just read (one maps
 * read per new process), the ring is drained every 10 ms for 250 ms after
 * an exec (so a process living tens of milliseconds has its samples and
 * the maps re-reads they trigger handled while it is alive), and the same
 * sampling options (sampling_opts.h) configure it.
 *
 * Life:  __new (loads BPF, reads the host's kernel layout and vDSO,
 *        nothing sampled yet) -> __add_target (filtered runs) -> __start
 *        (attach, then one /proc scan for trace contexts) -> __pump in a
 *        loop (the first one starts the perf-map reader thread, which so
 *        has the pumping thread's capabilities) -> __stop (sampling off,
 *        ring drained to its last record, the perf-map reads it asked for
 *        done) -> __snapshot / __fill_summary -> __free.
 *
 * Threads: __pump, __swap and __stop belong to one thread (the consumer's).
 * The process table and discovery are shared with whoever snapshots and
 * releases (the agent's export worker): __pump, __snapshot, __release and
 * __fill_summary take the pipeline's lock for that.  __swap takes it too;
 * a caller holding a lock of its own while calling them must always take
 * that one first (the agent: xfer_lock, then the pipeline's).
 *
 * Errors carry one line naming cause and fix in err (no command prefix).
 */
#ifndef SPANPROF_PIPELINE_H
#define SPANPROF_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/pipeline/consumer.h"
#include "collector/pipeline/sampling_opts.h"
#include "spanprof/abi.h"

struct sp_agg;
struct sp_hostsyms_config;
struct sp_hostsyms;
struct sp_profile;
struct sp_snapshot_opts;
struct sp_summary;
struct sp_pipeline;

/* The node's name, when set (a Kubernetes DaemonSet passes spec.nodeName
 * through the downward API): host.name and k8s.node.name of every
 * resource (pipeline.c, identity_from_env). */
#define SP_NODE_NAME_ENV "K8S_NODE_NAME"

#define SP_PIPELINE_POLL_MS 100			/* default drain period */
#define SP_PIPELINE_POLL_LAZY_MS 500			/* ... of a whole-host profile whose
							 * unread processes wake us */
#define SP_PIPELINE_FAST_DRAIN_MS 10			/* drain period after a maps read */
#define SP_PIPELINE_FAST_DRAIN_NS (250ull * 1000 * 1000)	/* ... for this long */
#define SP_PIPELINE_JIT_DRAIN_MS 2000			/* __stop's wait for perf maps */

/* Called for every on-CPU and off-CPU sample record before the consumer,
 * on the consumer's thread: false drops it (the gate counts what it drops;
 * the agent's memory guard).  Process events are never gated. */
typedef bool (*sp_pipeline_gate_fn)(const struct sp_event *e, void *ctx);

struct sp_pipeline_config {
	const struct sp_sampling_opts *opts;	/* copied */
	bool filter_pids;		/* only targets and their children */
	bool exclude;			/* __exclude works (the agent's selection) */
	bool filter_tids;		/* only threads added by __add_target_tid,
					 * of processes added by __add_target */
	/* Optional, after trace-context discovery's own, lock held. */
	sp_consumer_proc_fn on_proc;
	void *on_proc_ctx;
	sp_pipeline_gate_fn gate;	/* optional */
	void *gate_ctx;
	/* Host symbols: where they go (store directory, sink) and the
	 * command's limits; .kernel comes from opts, .no_jit is or-ed with
	 * !opts->jit.  NULL: none (kernel frames keep runtime addresses, no
	 * vDSO build id, no perf maps read). */
	const struct sp_hostsyms_config *hostsyms;
	/* Load BPF on a thread while the host symbols are read: a faster
	 * start (record: 0.1-0.2 s less) for a higher peak of memory (both
	 * at once: the agent under a 48 MiB cgroup limit was OOM-killed at
	 * start, so it loads one after the other). */
	bool overlap_load;
};

/* Allocates the process table and one aggregator, opens and loads BPF,
 * maps the ring buffer.  0 and *out, or a negative errno and err. */
int sp_pipeline__new(const struct sp_pipeline_config *cfg, struct sp_pipeline **out, char *err,
		     size_t err_len);
void sp_pipeline__free(struct sp_pipeline *p);	/* NULL-safe; frees the current aggregator */

/* See sp_sampler__add_target. */
int sp_pipeline__add_target(struct sp_pipeline *p, uint32_t pid, bool at_exec);
int sp_pipeline__add_target_tid(struct sp_pipeline *p, uint32_t tid);
/* With cfg.exclude: pid is no longer sampled (in BPF) until it execs. */
/* For a gate (cfg.gate) that decides on what a sample's process is (its
 * executable, environment): the process's deferred exec maps read now
 * (consumer.h, sp_consumer__prepare).  A gate that only drops (the memory
 * guard) does not call it: a dropped sample costs no read. */
void sp_pipeline__prepare(struct sp_pipeline *p, const struct sp_event *e);
int sp_pipeline__exclude(struct sp_pipeline *p, uint32_t pid);
/* pid's service.name as its resources get it (service_name.h: the
 * environment unless --no-process-env, then the OTEP 4719 context), or
 * NULL.  Examines pid for a 4719 context first when discovery has not
 * (first sight), or again when look_again (rate-limited as a
 * publication: a process that published without a prctl event, e.g.
 * through a memfd).  Reads /proc on a miss.  The pipeline's lock must be
 * held: call it from the gate or a process hook. */
const char *sp_pipeline__service_name(struct sp_pipeline *p, uint32_t pid, bool look_again);
/* Attaches (sampling starts), then examines the processes already running
 * for a trace context: all of them, or pids[n] when filtering. */
int sp_pipeline__start(struct sp_pipeline *p, const uint32_t *pids, uint32_t n, char *err,
		       size_t err_len);
/* __start in two steps, for a caller that drops its privileges between
 * them (the agent: agent/privs.h): __attach touches no other process's
 * files; __scan reads theirs (on deadline helpers that a hung file system
 * may leave blocked, so they must start with the dropped set). */
int sp_pipeline__attach(struct sp_pipeline *p, char *err, size_t err_len);
void sp_pipeline__scan(struct sp_pipeline *p, const uint32_t *pids, uint32_t n);
/* Waits for the ring (at most poll_ms, or when it is 0 SP_PIPELINE_POLL_MS,
 * SP_PIPELINE_POLL_LAZY_MS for -a and the agent with lazy exec reads and
 * the unwinder; SP_PIPELINE_FAST_DRAIN_MS for SP_PIPELINE_FAST_DRAIN_NS
 * after a maps read, or after an exec record with eager exec reads or
 * --unwind fp), never past wake_by_ns (CLOCK_MONOTONIC; 0: no bound),
 * nor past a sp_pipeline__wake, and drains it into the current
 * aggregator, then runs discovery's deferred re-reads.  0, or a negative
 * errno with err when waiting failed (EINTR is not a failure). */
int sp_pipeline__pump(struct sp_pipeline *p, uint64_t wake_by_ns, char *err, size_t err_len);
/* Ends the wait of a pump under way, or makes the next one return at
 * once: for a thread that asks the consumer to stop.  NULL-safe; safe in
 * a signal handler (one write to an eventfd). */
void sp_pipeline__wake(struct sp_pipeline *p);
/* Stops sampling and drains the ring to its last record; bpf (may be NULL)
 * gets the counters read between two drains, so every record they count as
 * sent has been consumed or is counted as lost in transit.  Then waits (at
 * most SP_PIPELINE_JIT_DRAIN_MS) for the perf-map reads the last samples
 * asked for, so the final profile names their chains. */
void sp_pipeline__stop(struct sp_pipeline *p, uint64_t bpf[SP_CNT__MAX]);

/* Makes next the current aggregator (NULL: none; __pump must not run
 * then) and returns the previous one; *epoch (may be NULL) gets the
 * process-table epoch it closed, for __release once that aggregator is
 * exported. */
struct sp_agg *sp_pipeline__swap(struct sp_pipeline *p, struct sp_agg *next, uint64_t *epoch);
/* A new empty aggregator with the configured bounds, or NULL (ENOMEM). */
struct sp_agg *sp_pipeline__new_agg(const struct sp_pipeline *p);
struct sp_agg *sp_pipeline__agg(const struct sp_pipeline *p);	/* the current one */

/* Profile of aggregator g (not changed): so's times and clock are the
 * caller's; the period, service names, attribute keys, kernel layout
 * (refreshed first: a module loaded since has its slot) and JIT heads are
 * filled here. */
int sp_pipeline__snapshot(struct sp_pipeline *p, struct sp_agg *g, struct sp_snapshot_opts *so,
			  struct sp_profile **out);
/* Everything referring to epoch is exported: recycle what only it used and
 * forget processes gone since (their discovery and perf-map state too). */
void sp_pipeline__release(struct sp_pipeline *p, uint64_t epoch);

/* Fills s's frequency, CPUs, off-CPU settings, consumer, current
 * aggregator, process-table, discovery, perf-map and host-symbol fields
 * (not s->bpf). */
void sp_pipeline__fill_summary(struct sp_pipeline *p, struct sp_summary *s);
int sp_pipeline__read_counters(const struct sp_pipeline *p, uint64_t out[SP_CNT__MAX]);
/* The consumer's counters, for its own thread (status lines). */
const struct sp_consumer_stats *sp_pipeline__consumer_stats(const struct sp_pipeline *p);
uint32_t sp_pipeline__n_cpus(const struct sp_pipeline *p);
/* The host symbols (owned by the pipeline, NULL without cfg.hostsyms):
 * for shipping the kernel snapshot and the vDSO, and the stop order of a
 * sink that outlives neither (hostsyms.h). */
struct sp_hostsyms *sp_pipeline__hostsyms(const struct sp_pipeline *p);
/* The user-stack unwinder (collector/unwind/unwinder.h; thread safe), NULL
 * with --unwind fp: the agent tells it of memory pressure and shows its
 * tables on /metrics. */
struct sp_unwinder *sp_pipeline__unwinder(const struct sp_pipeline *p);

#endif
