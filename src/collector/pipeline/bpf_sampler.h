/* SPDX-License-Identifier: MIT */
/*
 * bpf_sampler.h - the BPF side's lifecycle, following the skeleton's
 * open -> configure .rodata and map sizes -> load -> attach, with one
 * destroy path.
 *
 * Attaches: one PERF_COUNT_SW_CPU_CLOCK event per online CPU in frequency
 * mode running the on-CPU program, and the process lifecycle tracepoints
 * (tp_btf: exec, exit, fork), and with off_cpu the off-CPU program on
 * tp_btf/sched_switch (bpf/offcpu.bpf.c).  Events arrive in one ring buffer
 * (sp_sampler__ring_fd); counters are per-CPU and summed here.
 *
 * Errors carry a one-line human message in err_msg naming the cause and
 * the fix (missing capability, no BTF, kernel refused the program, ...).
 */
#ifndef SPANPROF_BPF_SAMPLER_H
#define SPANPROF_BPF_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "spanprof/abi.h"

struct sp_sampler_config {
	uint32_t freq_hz;		/* prime, checked by the caller */
	uint32_t ringbuf_bytes;		/* power of two >= page size */
	bool filter_pids;		/* only targets (and their children) */
	bool exclude;			/* processes given to __exclude are not sampled */
	bool filter_tids;		/* only threads added by __add_target_tid
					 * (of target processes) */
	/* NULL: every online CPU; else a SP_CLI_CPU_WORDS-word mask (cli.h)
	 * of the CPUs whose perf event is opened (copied). */
	const uint64_t *cpus;
	bool stream_idle;
	bool kernel_stacks;
	bool read_trace_ctx;
	/* Off-CPU waits (bpf/offcpu.bpf.c); the rest is ignored without it. */
	bool off_cpu;
	uint64_t off_cpu_min_ns;	/* shorter waits are counted, not written */
	uint32_t off_cpu_sample_n;	/* capture 1 in N (1 = every wait);
					 * 0 = adaptive, off_cpu_rate per CPU */
	uint32_t off_cpu_rate;		/* adaptive: captures per second per CPU */
	uint32_t off_cpu_max_pending;	/* captured waits open at once (0: 8192) */
	bool off_cpu_kthreads;		/* kernel threads' waits too */
	bool no_go_labels;		/* do not read Go processes' pprof
					 * labels (read with read_trace_ctx) */
	bool go_parks;			/* with off_cpu: goroutine parks too
					 * (bpf/goparks.bpf.h; uprobes per Go
					 * executable, attach_go_parks) */
	/* Entries of the tls_descs map, and of go_descs: processes whose
	 * trace context BPF reads (0: SP_TLS_DESCS_MAX).  A smaller bound makes a failed
	 * update (counted by ctx discovery as bpf_map_full) easy to provoke. */
	uint32_t tls_descs_max;
	/* User stacks: true = frame pointers only (--unwind fp); false = the
	 * .eh_frame tables of src/collector/unwind, frame pointers where a
	 * frame has none. */
	bool unwind_fp;
	/* A sample of a process without unwind ranges wakes the consumer
	 * (once a second per process; lazy exec maps reads).  Only with
	 * unwind_fp false, which the caller ensures: under --unwind fp no
	 * process has ranges, and every sample would look unread. */
	bool wake_unread;
};

/* File descriptors of the unwinder's maps (abi.h, "User-stack
 * unwinding"), owned by the sampler. */
struct sp_sampler_unwind_maps {
	int chunks;	/* ARRAY_OF_MAPS of mmapable u64 arrays */
	int files;	/* ARRAY of struct sp_unw_file, mmapable */
	int procs;	/* HASH tgid -> struct sp_unw_proc */
	int seq;	/* ARRAY of u32, mmapable */
};

struct sp_sampler;

/* Returns 0 and *out, or a negative errno with a message in err_msg. */
int sp_sampler__open_load(const struct sp_sampler_config *cfg, struct sp_sampler **out,
			  char *err_msg, size_t err_len);
/* Attach tracepoints and perf events; sampling starts here. */
int sp_sampler__attach(struct sp_sampler *s, char *err_msg, size_t err_len);
/* Stop sampling (disable perf events, detach the off-CPU program) but keep
 * maps so the ring can drain. */
void sp_sampler__stop(struct sp_sampler *s);
void sp_sampler__destroy(struct sp_sampler *s);	/* NULL-safe */

/* pid and the children it forks are sampled (when filter_pids); at_exec:
 * only from its next exec on (record's command, forked and paused). */
int sp_sampler__add_target(struct sp_sampler *s, uint32_t pid, bool at_exec);
/* With exclude: pid's samples and waits stop in BPF until it execs or
 * exits. */
int sp_sampler__exclude(struct sp_sampler *s, uint32_t pid);
/* A thread sampled when filter_tids (its process must be a target too). */
int sp_sampler__add_target_tid(struct sp_sampler *s, uint32_t tid);
int sp_sampler__set_tls_desc(struct sp_sampler *s, uint32_t pid,
			     const struct sp_tls_desc *d);
int sp_sampler__del_tls_desc(struct sp_sampler *s, uint32_t pid);
/* Go processes: the descriptor of the goroutine label reader (abi.h). */
int sp_sampler__set_go_desc(struct sp_sampler *s, uint32_t pid, const struct sp_go_desc *d);
int sp_sampler__del_go_desc(struct sp_sampler *s, uint32_t pid);
/* Goroutine parks (go_parks): attaches the park and resume probes to the
 * executable at path (for every process mapping it) at those file offsets.
 * Returns a handle >= 0 for __detach_go_parks, or a negative errno
 * (-ENOSPC: SP_SAMPLER_GO_PARK_FILES already attached; -EPERM: go_parks
 * not asked or sampling stopped). */
#define SP_SAMPLER_GO_PARK_FILES 64
int sp_sampler__attach_go_parks(struct sp_sampler *s, const char *path, uint64_t park_off,
				uint64_t resume_off);
void sp_sampler__detach_go_parks(struct sp_sampler *s, int handle);
bool sp_sampler__go_parks(const struct sp_sampler *s);
/* The GC epoch of Go processes (bpf/gogc.bpf.c, golabels.bpf.h):
 * __go_epoch: the probes are wanted (labels read, not the benchmark's
 * SPANPROF_BENCH_NO_GO_EPOCH, sampling not stopped).  __attach_go_gc:
 * the uprobe on the executable at path (every process mapping it) at
 * file offset off, kept until __stop (which removes it after every
 * program that reads labels); 0, or -ENOSPC (SP_SAMPLER_GO_GC_FILES
 * attached), -EPERM (not wanted), another -errno.  __track_go_gc: pid's
 * epoch entry, created at 0 if absent (an existing count is kept);
 * only then may its descriptor set gc_epoch.  __untrack_go_gc: at exit. */
#define SP_SAMPLER_GO_GC_FILES 64
bool sp_sampler__go_epoch(const struct sp_sampler *s);
int sp_sampler__attach_go_gc(struct sp_sampler *s, const char *path, uint64_t off);
int sp_sampler__track_go_gc(struct sp_sampler *s, uint32_t pid);
void sp_sampler__untrack_go_gc(struct sp_sampler *s, uint32_t pid);
/* Removes the pending parks of pid (it exited with goroutines parked);
 * returns how many. */
uint32_t sp_sampler__drop_go_parks(struct sp_sampler *s, uint32_t pid);
int sp_sampler__ring_fd(const struct sp_sampler *s);
uint32_t sp_sampler__n_cpus(const struct sp_sampler *s);
/* CPUs whose perf event the last __attach opened (online, and -C's). */
uint32_t sp_sampler__n_sampled_cpus(const struct sp_sampler *s);
/* True when OBI's pinned trace-context map (SP_OBI_MAP_PATH) is read as a
 * fallback. */
bool sp_sampler__uses_obi(const struct sp_sampler *s);
/* True when late OTEP 4719 publication is watched (prctl tracepoint). */
bool sp_sampler__watches_publish(const struct sp_sampler *s);
/* True when PROT_EXEC mmap/mprotect are watched (new executable mappings
 * are seen at once, not at the first sample in them). */
bool sp_sampler__watches_mmap(const struct sp_sampler *s);
int sp_sampler__unwind_maps(const struct sp_sampler *s, struct sp_sampler_unwind_maps *out);

/* Sums the per-CPU counters into out[SP_CNT__MAX]. */
int sp_sampler__read_counters(const struct sp_sampler *s, uint64_t out[SP_CNT__MAX]);

/* Names of the BPF programs (for bpf_stats lookups in benchmarks). */
uint32_t sp_sampler__oncpu_prog_id(const struct sp_sampler *s);
uint32_t sp_sampler__offcpu_prog_id(const struct sp_sampler *s);

#endif
