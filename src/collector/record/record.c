/* SPDX-License-Identifier: MIT */
/*
 * record.c - `spanprof record` (perf-like CLI).
 *
 *   spanprof record [-F HZ] [-a | -p PID[,PID...] | -t TID[,TID...]]
 *                   [-C CPUS] [-e cpu-clock] [-- COMMAND ARGS...]
 *                   [-d SECONDS] [-o FILE] [--format pprof|otlp [--timestamps]]
 *                   [sampling options (sampling_opts.h), e.g. --off-cpu]
 *
 * --off-cpu adds wall-clock waits (bpf/offcpu.bpf.c): each captured wait
 * is a sample of kind off-CPU weighted by its blocked ns times the
 * sampling factor (an unbiased estimate, see the BPF file); the default
 * sampler is adaptive (about --off-cpu-rate captures per second per CPU).
 *
 * Flow: parse and validate every flag (bad input is a one-line error and
 * exit 2 before anything is loaded) -> check privileges -> open the output
 * (fail early if unwritable) -> the pipeline (pipeline.h: load BPF, add
 * the targets, attach) -> pump it until the duration ends, the command
 * exits, or SIGINT/SIGTERM -> stop it (the ring drained to its last
 * record) -> snapshot -> encode -> write -> print the summary (every sample
 * accounted for).  What is record's own: the targets, the output file, the
 * kernel symbol snapshot and FILE.syms/ (the host symbols' store: the
 * vDSO, JIT perf-map pieces), the summary and the report child.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buildid.h"
#include "base/proc_read.h"
#include "base/symstore.h"
#include "base/write_all.h"
#include "collector/host/hostsyms.h"
#include "collector/host/kallsyms.h"
#include "collector/host/kallsyms_want.h"
#include "collector/pipeline/aggregator.h"
#include "collector/pipeline/caps.h"
#include "collector/pipeline/cli.h"
#include "collector/pipeline/clock.h"
#include "collector/pipeline/pipeline.h"
#include "collector/pipeline/sampling_opts.h"
#include "collector/pipeline/snapshot.h"
#include "collector/pipeline/summary.h"
#include "collector/record/record.h"
#include "collector/record/report_child.h"
#include "profile/codec.h"
#include "profile/profile.h"

#define MAX_PIDS 256
#define MAX_TIDS 1024		/* target_tids in bpf/maps.bpf.h */

/* What sampling_opts.c parses, with record's defaults: 97 Hz (a one-off
 * recording wants detail), one 64 MiB aggregator, every off-CPU wait from
 * 10 us. */
static const struct sp_sampling_opts record_defaults = {
	.hz = 97, .kernel = true, .trace_ctx = true, .jit = true, .ringbuf_bytes = 4u << 20,
	.poll_ms = 0, .agg_budget = 64u << 20, .agg_entries = 0, .off_cpu_min_us = 10,
	.off_cpu_rate = 1000,
};

struct record_opts {
	struct sp_sampling_opts s;
	bool all;
	uint32_t pids[MAX_PIDS];
	uint32_t n_pids;
	uint32_t *tids;			/* -t, MAX_TIDS */
	uint32_t n_tids;
	char **command;			/* argv after "--", or NULL; with -a, -C
					 * or -t only the recording's duration */
	double duration_s;		/* 0 = until stopped */
	const char *output;
	bool otlp;
	const char *summary_json;
	bool report;			/* run the symbolizer's report at the end */
	struct sp_report_limits report_lim;
	bool quiet;
};

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t started;	/* the pipeline runs: stop by draining */
/* The running pipeline, for the handler to end its wait (a SIGINT may
 * land on another thread; -a polls for 500 ms); NULL once the loop ended,
 * long before the pipeline is freed. */
static struct sp_pipeline *volatile signal_pipe;

/* A stop asked for while BPF still loads is kept and honoured once the
 * pipeline runs (the recording is written, empty or not); a second
 * SIGINT/SIGTERM before then ends the process at once, so a start-up
 * that hangs can still be interrupted. */
static void on_signal(int sig)
{
	if (stop_signal && !started && (sig == SIGINT || sig == SIGTERM)) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	stop_signal = sig;
	sp_pipeline__wake(signal_pipe);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: spanprof record [-F HZ] [-a | -p PID[,PID...] | -t TID[,TID...]]\n"
"                       [-C CPUS] [-d SECONDS] [-o FILE] [--format pprof|otlp]\n"
"                       [options] [-- COMMAND [ARGS...]]\n"
"\n"
"Samples on-CPU stacks of every CPU with eBPF and writes an unsymbolized\n"
"profile with GNU build ids (pprof by default; go tool pprof reads it).\n"
"\n"
"  -a, --all-cpus            the whole machine (default without -p, -t or a\n"
"                            command; with -- COMMAND: while COMMAND runs)\n"
"  -p, --pid PIDS            only these processes (and children they fork)\n"
"  -t, --tid TIDS            only these threads (of any processes)\n"
"  -- COMMAND                run COMMAND and stop when it exits; alone: only\n"
"                            COMMAND and its children; with -a, -C or -t: what\n"
"                            they select, for as long as COMMAND runs (perf's\n"
"                            habit); its exit status is in the summary\n"
"  -d, --duration SEC        stop after SEC seconds (default: until Ctrl-C or the\n"
"                            command exits)\n"
"  -o, --output FILE         output file (default spanprof.pb.gz, or\n"
"                            spanprof.otlp.pb with --format otlp)\n"
"      --format FMT          pprof (gzipped) or otlp (ExportProfilesServiceRequest)\n"
"      --no-report           do not run spanprof-symbolizer's report at the end\n"
"      --report-timeout SEC  stop the report after SEC seconds (default 120; the\n"
"                            profile is kept, record exits 1)\n"
"      --report-mem MIB      the report's memory limit (default 4096)\n"
"      --summary-json F      also write the final counters as JSON\n"
"  -q, --quiet               no status line\n"
"\n"
"Sampling (the same options as spanprof agent, with record's defaults):\n");
	sp_sampling_opts__usage(f, &record_defaults);
}

/* "ID[,ID...]" appended to ids[*n] (at most max). */
static int parse_ids(const char *arg, uint32_t *ids, uint32_t *n, uint32_t max)
{
	char buf[8192], *tok, *save = NULL;

	if (strlen(arg) >= sizeof(buf))
		return -E2BIG;
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (sp_cli__parse_u64(tok, 0x3fffffff, &v) || v == 0 || *n >= max)
			return -EINVAL;
		ids[(*n)++] = v;
	}
	return *n ? 0 : -EINVAL;
}

/* -t's reads of /proc/TID/status, on a helper with a time limit
 * (base/proc_read.h): record must not hang before it starts on a /proc
 * entry that does not answer.  Made by the first read of a pass over the
 * threads, freed after it (tid_reader_done). */
#define TID_READ_MS 1000
static struct sp_proc_read *tid_reader;

/* The process of thread tid (/proc/TID/status "Tgid:"; /proc/TID resolves
 * for any thread, listed or not).  The tgid, -ESRCH (no such thread),
 * -ETIMEDOUT / -EBUSY (its status did not answer within TID_READ_MS, or an
 * earlier read of it is still stuck) or -ENOMEM. */
static int64_t tgid_of(uint32_t tid)
{
	static const struct sp_io_deadline_config lim = { .timeout_ms = TID_READ_MS,
							  .max_stuck = 1 };
	char path[64], buf[4096], *line;
	uint64_t v;
	ssize_t n;

	if (!tid_reader && !(tid_reader = sp_proc_read__new(&lim)))
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	n = sp_proc_read__small(tid_reader, tid, path, buf, sizeof(buf));
	if (n == -ETIMEDOUT || n == -EBUSY || n == -ENOMEM)
		return n;
	if (n < 0)
		return -ESRCH;
	line = !strncmp(buf, "Tgid:", 5) ? buf : strstr(buf, "\nTgid:");
	if (!line)
		return -ESRCH;
	line += line[0] == '\n' ? 6 : 5;
	line += strspn(line, " \t");
	line[strcspn(line, "\n")] = 0;
	if (sp_cli__parse_u64(line, 0x3fffffff, &v))
		return -ESRCH;
	return (int64_t)v;
}

static void tid_reader_done(void)
{
	sp_proc_read__free(tid_reader);
	tid_reader = NULL;
}

/* One line for a -t thread tgid_of could not place (what, rc). */
static void tid_refuse(uint32_t tid, int64_t rc, const char *gone)
{
	if (rc == -ETIMEDOUT || rc == -EBUSY)
		fprintf(stderr, "spanprof record: -t: /proc/%u/status did not answer within %d ms "
			"(its process may wait on a hung file system); leave thread %u out\n",
			tid, TID_READ_MS, tid);
	else if (rc == -ENOMEM)
		fprintf(stderr, "spanprof record: -t: out of memory reading thread %u\n", tid);
	else
		fprintf(stderr, "spanprof record: -t: %s %u\n", gone, tid);
}

enum { OPT_FORMAT = 256, OPT_SUMMARY_JSON, OPT_NO_REPORT, OPT_REPORT_TIMEOUT, OPT_REPORT_MEM };

/* record's own options (sp_own_opt_fn). */
static int own_opt(int c, const char *arg, void *ctx, char *msg, size_t len)
{
	struct record_opts *o = ctx;
	unsigned long v;
	char *end;

	switch (c) {
	case 'a':
		o->all = true;
		break;
	case 't':
		if (parse_ids(arg, o->tids, &o->n_tids, MAX_TIDS))
			return sp_cli__refuse(msg, len, "-t %s: expected TID[,TID...] (at most %d "
					      "positive thread ids)", arg, MAX_TIDS);
		break;
	case 'p':
		if (parse_ids(arg, o->pids, &o->n_pids, MAX_PIDS))
			return sp_cli__refuse(msg, len, "-p %s: expected PID[,PID...] (at most %d "
					      "positive pids)", arg, MAX_PIDS);
		break;
	case 'd':
		errno = 0;
		o->duration_s = strtod(arg, &end);
		if (errno || *end || !(o->duration_s > 0) || o->duration_s > 1e7)
			return sp_cli__refuse(msg, len, "-d %s: expected a positive number of "
					      "seconds", arg);
		break;
	case 'o':
		o->output = arg;
		break;
	case 'q':
		o->quiet = true;
		break;
	case OPT_FORMAT:
		if (!strcmp(arg, "otlp"))
			o->otlp = true;
		else if (strcmp(arg, "pprof"))
			return sp_cli__refuse(msg, len, "--format %s: expected pprof or otlp", arg);
		break;
	case OPT_SUMMARY_JSON:
		o->summary_json = arg;
		break;
	case OPT_NO_REPORT:
		o->report = false;
		break;
	case OPT_REPORT_TIMEOUT:
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || *end || !*arg || v < 1 || v > 86400)
			return sp_cli__refuse(msg, len, "--report-timeout %s: expected whole seconds "
					      "from 1 to 86400", arg);
		o->report_lim.timeout_s = (uint32_t)v;
		break;
	case OPT_REPORT_MEM:
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || *end || !*arg || v < 4 || v > (1ul << 20))
			return sp_cli__refuse(msg, len, "--report-mem %s: expected MiB from 4 to "
					      "1048576", arg);
		o->report_lim.mem_mib = (uint32_t)v;
		break;
	}
	return 0;
}

static int parse_opts(int argc, char **argv, struct record_opts *o)
{
	static const struct option own[] = {
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "summary-json", required_argument, NULL, OPT_SUMMARY_JSON },
		{ "no-report", no_argument, NULL, OPT_NO_REPORT },
		{ "report-timeout", required_argument, NULL, OPT_REPORT_TIMEOUT },
		{ "report-mem", required_argument, NULL, OPT_REPORT_MEM },
		{ 0 },
	};
	static const struct sp_command_opts cmd = { "record", "ap:t:d:o:q", own, own_opt, usage };
	static uint32_t tids[MAX_TIDS];
	char msg[256];
	int first;

	*o = (struct record_opts){ .s = record_defaults, .report = true, .tids = tids };
	first = sp_sampling_opts__parse_argv(&cmd, o, argc, argv, &o->s, msg, sizeof(msg));
	if (first < 0) {
		fprintf(stderr, "spanprof record: %s\n", msg);
		return -EINVAL;
	}
	if (first < argc)
		o->command = &argv[first];
	if ((o->all ? 1 : 0) + (o->n_pids ? 1 : 0) + (o->n_tids ? 1 : 0) > 1 ||
	    (o->n_pids && o->command)) {
		fprintf(stderr, "spanprof record: choose one of -a, -p PIDS, -t TIDS or -- COMMAND "
			"(-a -- COMMAND: the whole machine while COMMAND runs)\n");
		return -EINVAL;
	}
	/* perf's habit: -C without -p/-t samples everything on those CPUs,
	 * a command then only bounds the recording. */
	if (!o->n_pids && !o->n_tids && (!o->command || o->s.cpu_filter))
		o->all = true;
	if (o->s.timestamps && !o->otlp) {
		fprintf(stderr, "spanprof record: --timestamps needs --format otlp (pprof has no "
			"per-event timestamps)\n");
		return -EINVAL;
	}
	if (!o->output)
		o->output = o->otlp ? "spanprof.otlp.pb" : "spanprof.pb.gz";
	for (uint32_t i = 0; i < o->n_pids; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%u", o->pids[i]);
		if (access(path, F_OK) != 0) {
			fprintf(stderr, "spanprof record: -p: no process with pid %u\n", o->pids[i]);
			return -ESRCH;
		}
	}
	for (uint32_t i = 0; i < o->n_tids; i++) {
		int64_t rc = tgid_of(o->tids[i]);

		if (rc < 0) {
			tid_refuse(o->tids[i], rc, "no thread with tid");
			tid_reader_done();
			return rc == -EBUSY ? -ETIMEDOUT : (int)rc;
		}
	}
	tid_reader_done();
	return 0;
}

/* Starts the command stopped on a pipe so that it is a target (from its
 * exec on, SP_TARGET_AT_EXEC) before its first instruction; returns the
 * pid and the pipe's write end. */
static pid_t spawn_paused(char **argv, int *go_fd)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid == 0) {
		char c;

		close(fds[1]);
		if (read(fds[0], &c, 1) != 1)
			_exit(126);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		{
			int e = errno;

			fprintf(stderr, "spanprof record: cannot run %s: %s\n", argv[0],
				strerror(e));
			/* as shells do: 127 not found, 126 found but not runnable */
			_exit(e == ENOENT || e == ENOTDIR ? 127 : 126);
		}
	}
	close(fds[0]);
	*go_fd = fds[1];
	return pid;
}

/* true when every target with a pidfd has exited (a target without one,
 * on a kernel before 5.3, is never taken for gone). */
static bool targets_exited(const int *pidfds, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct pollfd p = { .fd = pidfds[i], .events = POLLIN };

		if (pidfds[i] < 0 || poll(&p, 1, 0) != 1)
			return false;
	}
	return true;
}

/* Kernel frames are addresses; the symbolizer names them from a snapshot
 * of /proc/kallsyms taken here (data capture, not symbolization), written
 * next to the profile as FILE.kallsyms.gz (docs/formats.md): only the
 * symbols prof's kernel frames need (kallsyms_want.h), not the ~1 MB of
 * the whole table.  A profile without kernel frames gets none (an older
 * one at that path is removed: it belonged to another profile).  Failure
 * is a note: the profile is complete without it. */
static void capture_kallsyms(const char *output, struct sp_hostsyms *hs,
			     const struct sp_profile *prof)
{
	char path[PATH_MAX], err[256] = "";
	struct sp_kallsyms_want want;
	struct sp_build_id kid;
	const struct sp_kmod *mods;
	size_t n_mods;
	int rc;

	if (snprintf(path, sizeof(path), "%s" SP_KALLSYMS_SUFFIX, output) >= (int)sizeof(path))
		return;
	mods = sp_kernel_layout__modules(sp_hostsyms__kernel(hs), &n_mods);
	rc = sp_kallsyms_want__of_profile(prof, mods, n_mods, &want);
	if (!rc && sp_kallsyms_want__empty(&want)) {
		if (unlink(path) && errno != ENOENT)
			fprintf(stderr, "spanprof record: cannot remove the old %s: %s\n", path,
				strerror(errno));
		return;
	}
	rc = rc ? rc : sp_buildid__kernel(&kid);
	rc = rc ? rc : sp_kallsyms__capture_want(path, &kid, &want, err, sizeof(err));
	if (rc)
		fprintf(stderr, "spanprof record: no kernel symbol snapshot: %s\n",
			err[0] ? err : strerror(-rc));
	sp_kallsyms_want__release(&want);
}

/*
 * The output file.  A regular file (or a new path) is written to FILE.tmp.PID
 * beside it and renamed over FILE only once complete and synced, so a
 * failure (disk full, a signal during encoding) leaves the previous FILE as
 * it was.  Other outputs (/dev/stdout, a FIFO) are written directly.
 *
 * Space is reserved as the recording goes (fallocate on the temporary
 * file, see out_reserve): a disk that fills up is found within a second,
 * the recording stops there, and what was taken is written into space
 * already held.  The reservation follows an upper bound of the encoded
 * size (reserve_estimate); the file is cut to the profile's size at the
 * end.
 */
struct out_file {
	int fd;
	char tmp[PATH_MAX];	/* "" when writing directly */
	bool reservable;	/* a regular file that takes fallocate */
	uint64_t reserved;
};

#define RESERVE_MIN (64u << 10)

static int out_open(const char *path, struct out_file *of)
{
	struct stat st;

	of->tmp[0] = 0;
	of->reservable = false;
	of->reserved = 0;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		of->fd = open(path, O_WRONLY | O_CLOEXEC);
		return of->fd < 0 ? -errno : 0;
	}
	if (snprintf(of->tmp, sizeof(of->tmp), "%s.tmp.%d", path, (int)getpid()) >=
	    (int)sizeof(of->tmp)) {
		of->tmp[0] = 0;
		of->fd = -1;
		return -ENAMETOOLONG;
	}
	of->fd = open(of->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (of->fd < 0) {
		of->tmp[0] = 0;
		return -errno;
	}
	of->reservable = true;
	return 0;
}

/* Holds at least bytes on disk for the output (rounded up, an eighth
 * more).  0, or -ENOSPC (and other errnos) when the disk cannot give it. */
static int out_reserve(struct out_file *of, uint64_t bytes)
{
	int r;

	if (!of->reservable || bytes <= of->reserved)
		return 0;
	bytes += bytes / 8;
	bytes = (bytes + RESERVE_MIN - 1) / RESERVE_MIN * RESERVE_MIN;
	r = fallocate(of->fd, 0, 0, (off_t)bytes);
	if (r && (errno == EOPNOTSUPP || errno == ENOSYS)) {
		of->reservable = false;	/* a file system without it: no early warning */
		return 0;
	}
	if (r)
		return -errno;
	of->reserved = bytes;
	return 0;
}

static int out_commit(struct out_file *of, const char *path)
{
	if (!of->tmp[0])
		return 0;
	if (rename(of->tmp, path))
		return -errno;
	of->tmp[0] = 0;
	return 0;
}

static void out_close(struct out_file *of)	/* removes an uncommitted temp */
{
	if (of->fd >= 0)
		close(of->fd);
	of->fd = -1;
	if (of->tmp[0])
		unlink(of->tmp);
	of->tmp[0] = 0;
}

/* An upper bound of the encoded profile of what the pipeline holds now:
 * every aggregated byte twice (a pprof or OTLP sample and its locations
 * take less than the aggregator's entry, frames and timestamps; twice
 * covers the string and location tables), 512 bytes per mapping (path,
 * build id), and 64 KiB of fixed tables. */
static uint64_t reserve_estimate(struct sp_pipeline *pipe, size_t agg_fixed)
{
	struct sp_summary s = { 0 };
	const struct sp_agg_stats *as;

	sp_pipeline__fill_summary(pipe, &s);
	as = sp_pipeline__agg(pipe) ? sp_agg__stats(sp_pipeline__agg(pipe)) : NULL;
	return 2 * (uint64_t)(as && as->bytes_used > agg_fixed ? as->bytes_used - agg_fixed : 0) +
	       512 * s.procs.mappings_tracked + RESERVE_MIN;
}

static int write_profile(const struct record_opts *o, int fd, uint64_t reserved,
			 const struct sp_profile *p)
{
	uint8_t *raw = NULL, *gz = NULL;
	size_t raw_len = 0, gz_len = 0;
	int err;

	err = o->otlp ? sp_otlp__encode(p, &raw, &raw_len) : sp_pprof__encode(p, &raw, &raw_len);
	if (err)
		goto out;
	if (!o->otlp) {
		err = sp_gzip(raw, raw_len, &gz, &gz_len);
		if (err)
			goto out;
	}
	err = sp_write_all(fd, gz ? gz : raw, gz ? gz_len : raw_len);
	/* the reservation may be longer than the profile */
	if (!err && reserved > (gz ? gz_len : raw_len) &&
	    ftruncate(fd, (off_t)(gz ? gz_len : raw_len)))
		err = -errno;
	if (!err && fsync(fd) && errno != EINVAL)
		err = -errno;
out:
	free(raw);
	free(gz);
	return err;
}

/* Off-CPU totals by reason for the summary (estimated ns, waits written). */
static int sum_offcpu(const struct sp_agg_entry *e, void *ctx)
{
	struct sp_summary *sum = ctx;
	uint32_t r = e->key->reason <= SP_OFF_OTHER ? e->key->reason : SP_OFF_OTHER;

	if (e->key->kind != SP_KIND_OFFCPU)
		return 0;
	sum->offcpu_ns[r] += e->weight_ns;
	sum->offcpu_waits[r] += e->count;
	return 0;
}

int sp_record__main(int argc, char **argv)
{
	struct record_opts o;
	struct sp_pipeline *pipe = NULL;
	struct sp_pipeline_config pcfg;
	struct sp_hostsyms_config hcfg = { .log_prefix = "spanprof record: " };
	char syms_dir[PATH_MAX] = "";
	struct sp_agg *agg = NULL;
	struct sp_profile *prof = NULL;
	struct sp_summary sum = { 0 };
	char err_msg[512] = "";
	uint64_t t_start, t_stop, t_end, next_status;	/* t_stop: -d's end, 0 none */
	struct out_file out = { .fd = -1 };
	int go_fd = -1, rc = 1, err, child_status = 0, pidfds[MAX_PIDS];
	pid_t child = 0;
	bool tty, child_ended = false, disk_full = false, targets_gone = false;
	size_t agg_fixed;

	if (parse_opts(argc, argv, &o))
		return 2;
	for (uint32_t i = 0; i < MAX_PIDS; i++)
		pidfds[i] = -1;
	if (!sp_caps__can_profile(err_msg, sizeof(err_msg))) {
		fprintf(stderr, "spanprof record: %s\n", err_msg);
		return 1;
	}
	/* Opened now so an unwritable path fails before anything is loaded. */
	err = out_open(o.output, &out);
	if (!err)
		err = out_reserve(&out, RESERVE_MIN);
	if (err) {
		fprintf(stderr, "spanprof record: cannot write %s: %s (choose another path "
			"with -o)\n", o.output, strerror(-err));
		out_close(&out);	/* removes the temporary file */
		return 1;
	}
	/* FILE.syms/: what the symbolizer needs from this host besides
	 * FILE.kallsyms.gz (the vDSO, JIT perf-map pieces) */
	if (snprintf(syms_dir, sizeof(syms_dir), "%s" SP_SYMS_DIR_SUFFIX, o.output) >=
	    (int)sizeof(syms_dir)) {
		fprintf(stderr, "spanprof record: output path too long: %s\n", o.output);
		goto out;
	}
	hcfg.store_dir = syms_dir;
	/* Before BPF loads (seconds on a busy host): a SIGTERM then must not
	 * kill record with its output half made.  A closed terminal (SIGHUP)
	 * or a closed pipe on stderr (SIGPIPE) stops the recording like
	 * Ctrl-C: the output is written.  After a SIGPIPE, writes to the pipe
	 * fail with EPIPE and are ignored. */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, on_signal);
	pcfg = (struct sp_pipeline_config){ .opts = &o.s, .filter_pids = !o.all,
					    .filter_tids = o.n_tids > 0, .hostsyms = &hcfg,
					    .overlap_load = true };
	if (sp_pipeline__new(&pcfg, &pipe, err_msg, sizeof(err_msg))) {
		fprintf(stderr, "spanprof record: %s\n", err_msg);
		goto out;
	}
	agg_fixed = sp_agg__stats(sp_pipeline__agg(pipe))->bytes_used;
	/* -t: the threads' processes are the targets (their maps are read),
	 * the threads filter within them; o.pids gets the processes. */
	for (uint32_t i = 0; i < o.n_tids; i++) {
		int64_t tgid = tgid_of(o.tids[i]);
		bool seen = false;

		if (tgid < 0) {
			tid_refuse(o.tids[i], tgid, "gone: thread");
			goto out;
		}
		if (sp_pipeline__add_target_tid(pipe, o.tids[i])) {
			fprintf(stderr, "spanprof record: -t: cannot add thread %u\n", o.tids[i]);
			goto out;
		}
		for (uint32_t j = 0; j < o.n_pids; j++)
			seen |= o.pids[j] == (uint32_t)tgid;
		if (!seen && o.n_pids == MAX_PIDS) {
			fprintf(stderr, "spanprof record: -t: the threads belong to more than %d "
				"processes; record fewer threads at once\n", MAX_PIDS);
			goto out;
		}
		if (!seen)
			o.pids[o.n_pids++] = (uint32_t)tgid;
	}
	tid_reader_done();
	for (uint32_t i = 0; i < o.n_pids; i++) {
		sp_pipeline__add_target(pipe, o.pids[i], false);
		/* a pidfd turns readable when its process exits (no pid reuse) */
		pidfds[i] = (int)syscall(SYS_pidfd_open, o.pids[i], 0);
	}

	if (o.command) {
		child = spawn_paused(o.command, &go_fd);
		if (child < 0) {
			fprintf(stderr, "spanprof record: cannot start %s: %s\n", o.command[0],
				strerror(-child));
			child = 0;
			goto out;
		}
		if (!o.all && !o.n_tids)
			sp_pipeline__add_target(pipe, child, true);
	}
	if (sp_pipeline__start(pipe, o.pids, o.n_pids, err_msg, sizeof(err_msg))) {
		fprintf(stderr, "spanprof record: %s\n", err_msg);
		goto out;
	}
	started = 1;
	signal_pipe = pipe;
	if (go_fd >= 0) {
		if (write(go_fd, "g", 1) != 1)
			fprintf(stderr, "spanprof record: cannot release the command: %s\n",
				strerror(errno));
		close(go_fd);
		go_fd = -1;
	}

	tty = !o.quiet && isatty(STDERR_FILENO);
	t_start = sp_clock__mono_ns();
	t_stop = o.duration_s > 0 ? t_start + (uint64_t)(o.duration_s * 1e9) : 0;
	next_status = t_start + 1000000000ull;
	sum.mono_to_unix_ns = sp_clock__mono_to_unix_ns();
	while (!stop_signal) {
		uint64_t now, wake_by = t_stop && t_stop < next_status ? t_stop : next_status;

		if (sp_pipeline__pump(pipe, wake_by, err_msg, sizeof(err_msg))) {
			fprintf(stderr, "spanprof record: %s\n", err_msg);
			break;
		}
		now = sp_clock__mono_ns();
		if (t_stop && now >= t_stop)
			break;
		if (child && waitpid(child, &child_status, WNOHANG) == child) {
			child = 0;
			child_ended = true;
			break;
		}
		if (o.n_pids && targets_exited(pidfds, o.n_pids)) {
			targets_gone = true;
			break;
		}
		if (now >= next_status) {
			err = out_reserve(&out, reserve_estimate(pipe, agg_fixed));
			if (err) {
				disk_full = true;
				if (tty)
					fputs("\r\033[K", stderr);
				fprintf(stderr, "spanprof record: cannot hold space for %s: %s; "
					"stopping now: what was recorded is written into the "
					"space already held\n", o.output, strerror(-err));
				break;
			}
			if (tty)
				sp_summary__status_line(stderr, sp_pipeline__consumer_stats(pipe),
							now - t_start);
			next_status += 1000000000ull;
		}
	}
	signal_pipe = NULL;
	if (targets_gone)
		fprintf(stderr, "%sspanprof record: %s exited; stopping\n", tty ? "\r\033[K" : "",
			o.n_pids > 1 ? "every -p target has" : "the -p target has");
	if (tty)
		fputs("\r\033[K", stderr);
	t_end = sp_clock__mono_ns();
	sp_pipeline__stop(pipe, sum.bpf);
	if (child) {
		kill(child, SIGTERM);
		waitpid(child, &child_status, 0);
		child = 0;
	}
	if (o.command) {
		sum.command = o.command[0];
		sum.command_status = child_status;
	}

	/* Everything the summary needs from the aggregator, then the
	 * snapshot, then the aggregator goes: encoding needs memory of its
	 * own, and the two together would double the peak (bench/rss.py). */
	sp_pipeline__fill_summary(pipe, &sum);
	sum.duration_ns = t_end - t_start;
	sum.output = o.output;
	sum.format = o.otlp ? "otlp" : "pprof";
	agg = sp_pipeline__swap(pipe, NULL, NULL);
	sp_agg__foreach(agg, sum_offcpu, &sum);
	{
		struct sp_snapshot_opts so = {
			.mono_to_unix_ns = sum.mono_to_unix_ns,
			.start_mono_ns = t_start,
			.end_mono_ns = t_end,
		};

		err = sp_pipeline__snapshot(pipe, agg, &so, &prof);
		sum.res_attrs_dropped = *so.attrs_dropped;	/* counted while building */
	}
	sp_agg__free(agg);
	agg = NULL;
	if (!err)
		err = write_profile(&o, out.fd, out.reserved, prof);
	if (!err)
		err = out_commit(&out, o.output);
	if (err) {
		fprintf(stderr, "spanprof record: writing %s failed: %s\n", o.output,
			strerror(-err));
		goto out;
	}
	if (o.s.kernel)
		capture_kallsyms(o.output, sp_pipeline__hostsyms(pipe), prof);
	if (sp_hostsyms__profile_uses_vdso(prof))
		sp_hostsyms__ship_vdso(sp_pipeline__hostsyms(pipe));
	sp_hostsyms__stats(sp_pipeline__hostsyms(pipe), &sum.hostsyms);	/* the vDSO's write */
	sp_summary__print(stderr, &sum);
	if (o.summary_json && sp_summary__write_json(o.summary_json, &sum))
		fprintf(stderr, "spanprof record: cannot write %s: %s\n", o.summary_json,
			strerror(errno));
	/* As perf and shells: the command's own status when it ended by
	 * itself (128 + N when a signal N killed it); 1 when the disk filled
	 * up (what was taken is written, the recording is cut short). */
	rc = disk_full ? 1 : 0;
	if (!disk_full && child_ended)
		rc = WIFEXITED(child_status) ? WEXITSTATUS(child_status) :
		     WIFSIGNALED(child_status) ? 128 + WTERMSIG(child_status) : 1;
	if (o.report) {
		int r = sp_report_child__run(o.output, &o.report_lim);

		/* A report that failed or was stopped: one line, and a status
		 * that says so (the command's own, when it failed first). */
		if (r != 0 && r != -1) {
			sp_report_child__explain(stderr, r, o.output, &o.report_lim);
			if (!rc)
				rc = 1;
		}
	}
out:
	if (child) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (go_fd >= 0)
		close(go_fd);
	for (uint32_t i = 0; i < o.n_pids; i++)
		if (pidfds[i] >= 0)
			close(pidfds[i]);
	out_close(&out);
	tid_reader_done();
	sp_pipeline__free(pipe);
	if (syms_dir[0])
		rmdir(syms_dir);	/* only if a failed write left it empty */
	sp_profile__free(prof);
	return rc;
}
