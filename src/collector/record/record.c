/* SPDX-License-Identifier: MIT */
/*
 * record.c - `spanprof record` (perf-like CLI).
 *
 *   spanprof record [-F HZ] [-a | -p PID[,PID...] | -- COMMAND ARGS...]
 *                   [-d SECONDS] [-o FILE] [--format pprof|otlp] [--no-kernel]
 *                   [--off-cpu [--off-cpu-min-us N] [--off-cpu-sample N |
 *                    --off-cpu-rate R] [--off-cpu-kernel-threads]]
 *
 * --off-cpu adds wall-clock waits (bpf/offcpu.bpf.c): each captured wait
 * is a sample of kind off-CPU weighted by its blocked ns times the
 * sampling factor (an unbiased estimate, see the BPF file); the default
 * sampler is adaptive (about --off-cpu-rate captures per second per CPU).
 *
 * Flow: parse and validate every flag (bad input is a one-line error and
 * exit 2 before anything is loaded) -> check privileges -> open the output
 * (fail early if unwritable) -> load and attach BPF -> consume the ring
 * buffer until the duration ends, the command exits, or SIGINT/SIGTERM ->
 * stop the perf events and drain the ring to the last record -> snapshot ->
 * encode -> write -> print the summary (every sample accounted for).
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "collector/pipeline/aggregator.h"
#include "collector/pipeline/bpf_sampler.h"
#include "collector/pipeline/caps.h"
#include "collector/pipeline/cli.h"
#include "collector/pipeline/clock.h"
#include "collector/pipeline/consumer.h"
#include "collector/tracectx/ctx_discovery.h"
#include "collector/host/kallsyms.h"
#include "collector/procs/proc_table.h"
#include "profile/codec.h"
#include "profile/profile.h"
#include "collector/record/record.h"
#include "collector/record/report_child.h"
#include "collector/pipeline/snapshot.h"
#include "collector/pipeline/summary.h"

#define DEFAULT_HZ 97
#define FAST_DRAIN_MS 10			/* ring drain period after an exec */
#define FAST_DRAIN_NS (250ull * 1000 * 1000)	/* ... for this long */
#define MAX_PIDS 256

struct record_opts {
	uint32_t hz;
	bool all;
	uint32_t pids[MAX_PIDS];
	uint32_t n_pids;
	char **command;			/* argv after "--", or NULL */
	double duration_s;		/* 0 = until stopped */
	const char *output;
	bool otlp;
	bool kernel;
	bool idle;
	uint32_t ringbuf_bytes;
	uint32_t poll_ms;
	size_t agg_budget;
	uint32_t agg_entries;
	const char *summary_json;
	bool report;			/* run the symbolizer's report at the end */
	bool no_trace_ctx;		/* do not read OTEP 4947 contexts */
	bool off_cpu;
	uint64_t off_cpu_min_us;
	uint32_t off_cpu_sample_n;	/* 0 = adaptive */
	uint32_t off_cpu_rate;
	bool off_cpu_kthreads;
	bool off_cpu_goroutines;	/* goroutine parks (bpf/goparks.bpf.h) */
	bool no_go_labels;		/* do not read Go processes' pprof labels */
	uint32_t off_cpu_max_pending;	/* 0 = the sampler's default */
	uint32_t ctx_max_procs;		/* 0 = SP_TLS_DESCS_MAX */
	bool quiet;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: spanprof record [-F HZ] [-a | -p PID[,PID...] | -- COMMAND [ARGS...]]\n"
"                       [-d SECONDS] [-o FILE] [--format pprof|otlp] [--no-kernel]\n"
"\n"
"Samples on-CPU stacks of every CPU with eBPF and writes an unsymbolized\n"
"profile with GNU build ids (pprof by default; go tool pprof reads it).\n"
"\n"
"  -F, --freq HZ         sampling frequency, must be prime (default 97)\n"
"  -a, --all-cpus        the whole machine (default without -p or a command)\n"
"  -p, --pid PIDS        only these processes (and children they fork)\n"
"  -d, --duration SEC    stop after SEC seconds (default: until Ctrl-C or the\n"
"                        command exits)\n"
"  -o, --output FILE     output file (default spanprof.pb.gz, or\n"
"                        spanprof.otlp.pb with --format otlp)\n"
"      --format FMT      pprof (gzipped) or otlp (ExportProfilesServiceRequest)\n"
"      --no-kernel       user stacks only\n"
"      --off-cpu         also record off-CPU waits (sleep, locks, I/O, run\n"
"                        queue) with stacks, trace context and blocked time\n"
"      --off-cpu-min-us N  waits shorter than N us are counted, not written\n"
"                        (default 10)\n"
"      --off-cpu-sample N  capture 1 wait in N at random, weighted by N\n"
"                        (1 = every wait; default: adaptive, see --off-cpu-rate)\n"
"      --off-cpu-rate R  adaptive sampling: about R captured waits per second\n"
"                        per CPU, weighted by the sampling factor (default 1000)\n"
"      --off-cpu-kernel-threads  kernel threads' waits too\n"
"      --off-cpu-goroutines  Go programs: also the waits of goroutines that park\n"
"                        (mutex, sleep, channels, network), with their pprof\n"
"                        labels; two uprobes per park in Go executables\n"
"      --off-cpu-max-pending N  captured waits open at once; more are counted as\n"
"                        \"state full\" and not captured (default 8192)\n"
"      --ctx-max-procs N processes whose trace context BPF can read (the\n"
"                        tls_descs map; default and maximum %u); more are\n"
"                        counted as \"bpf_map_full\"\n"
"      --idle            also write samples of idle CPUs\n"
"      --no-report       do not run spanprof-symbolizer's report at the end\n"
"      --no-trace-context  do not read the threads' trace context (OTEP 4947)\n"
"                        nor Go goroutines' pprof labels\n"
"      --no-go-labels    do not read Go goroutines' pprof labels\n"
"      --ringbuf-size B  BPF ring buffer bytes, power of two (default 4 MiB)\n"
"      --poll-ms MS      drain the ring buffer at least every MS ms (default 100;\n"
"                        10 for 250 ms after a process execs)\n"
"      --agg-budget B    aggregator memory budget in bytes (default 64 MiB)\n"
"      --agg-entries N   aggregator entry cap (default: budget / 512, at most 65536)\n"
"      --summary-json F  also write the final counters as JSON\n"
"  -q, --quiet           no status line\n", SP_TLS_DESCS_MAX);
}

static int parse_pids(const char *arg, struct record_opts *o)
{
	char buf[4096], *tok, *save = NULL;

	if (strlen(arg) >= sizeof(buf))
		return -E2BIG;
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (sp_cli__parse_u64(tok, 0x3fffffff, &v) || v == 0 || o->n_pids >= MAX_PIDS)
			return -EINVAL;
		o->pids[o->n_pids++] = v;
	}
	return o->n_pids ? 0 : -EINVAL;
}

enum {
	OPT_FORMAT = 256, OPT_NO_KERNEL, OPT_IDLE, OPT_RINGBUF, OPT_POLL, OPT_AGG_BUDGET,
	OPT_AGG_ENTRIES, OPT_SUMMARY_JSON, OPT_NO_REPORT, OPT_OFF_CPU, OPT_OFF_CPU_MIN,
	OPT_OFF_CPU_SAMPLE, OPT_OFF_CPU_RATE, OPT_OFF_CPU_KTHREADS, OPT_NO_TRACE_CTX,
	OPT_OFF_CPU_MAX_PENDING, OPT_CTX_MAX_PROCS, OPT_OFF_CPU_GOROUTINES, OPT_NO_GO_LABELS,
};

static int parse_opts(int argc, char **argv, struct record_opts *o)
{
	static const struct option longopts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "no-kernel", no_argument, NULL, OPT_NO_KERNEL },
		{ "idle", no_argument, NULL, OPT_IDLE },
		{ "ringbuf-size", required_argument, NULL, OPT_RINGBUF },
		{ "poll-ms", required_argument, NULL, OPT_POLL },
		{ "agg-budget", required_argument, NULL, OPT_AGG_BUDGET },
		{ "agg-entries", required_argument, NULL, OPT_AGG_ENTRIES },
		{ "summary-json", required_argument, NULL, OPT_SUMMARY_JSON },
		{ "no-report", no_argument, NULL, OPT_NO_REPORT },
		{ "no-trace-context", no_argument, NULL, OPT_NO_TRACE_CTX },
		{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
		{ "off-cpu-min-us", required_argument, NULL, OPT_OFF_CPU_MIN },
		{ "off-cpu-sample", required_argument, NULL, OPT_OFF_CPU_SAMPLE },
		{ "off-cpu-rate", required_argument, NULL, OPT_OFF_CPU_RATE },
		{ "off-cpu-kernel-threads", no_argument, NULL, OPT_OFF_CPU_KTHREADS },
		{ "off-cpu-max-pending", required_argument, NULL, OPT_OFF_CPU_MAX_PENDING },
		{ "ctx-max-procs", required_argument, NULL, OPT_CTX_MAX_PROCS },
		{ "off-cpu-goroutines", no_argument, NULL, OPT_OFF_CPU_GOROUTINES },
		{ "no-go-labels", no_argument, NULL, OPT_NO_GO_LABELS },
		{ 0 },
	};
	uint64_t v;
	char msg[256];
	bool off_cpu_tuned = false;
	char *end;
	int c;

	*o = (struct record_opts){
		.hz = DEFAULT_HZ, .kernel = true, .ringbuf_bytes = 4u << 20, .poll_ms = 100,
		.agg_budget = 64u << 20, .agg_entries = 0, .report = true,
		.off_cpu_min_us = 10, .off_cpu_sample_n = 0, .off_cpu_rate = 1000,
	};
	optind = 1;
	opterr = 0;	/* one message of our own, naming the option */
	while ((c = getopt_long(argc, argv, "+F:ap:d:o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (sp_cli__parse_freq(optarg, &o->hz, msg, sizeof(msg))) {
				fprintf(stderr, "spanprof record: %s\n", msg);
				return -EINVAL;
			}
			break;
		case 'a':
			o->all = true;
			break;
		case 'p':
			if (parse_pids(optarg, o)) {
				fprintf(stderr, "spanprof record: -p %s: expected PID[,PID...] "
					"(at most %d positive pids)\n", optarg, MAX_PIDS);
				return -EINVAL;
			}
			break;
		case 'd':
			errno = 0;
			o->duration_s = strtod(optarg, &end);
			if (errno || *end || !(o->duration_s > 0) || o->duration_s > 1e7) {
				fprintf(stderr, "spanprof record: -d %s: expected a positive number "
					"of seconds\n", optarg);
				return -EINVAL;
			}
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case OPT_FORMAT:
			if (!strcmp(optarg, "otlp")) {
				o->otlp = true;
			} else if (strcmp(optarg, "pprof")) {
				fprintf(stderr, "spanprof record: --format %s: expected pprof or otlp\n",
					optarg);
				return -EINVAL;
			}
			break;
		case OPT_NO_KERNEL:
			o->kernel = false;
			break;
		case OPT_IDLE:
			o->idle = true;
			break;
		case OPT_RINGBUF:
			if (sp_cli__parse_u64(optarg, 1u << 30, &v) || v < 4096 || (v & (v - 1))) {
				fprintf(stderr, "spanprof record: --ringbuf-size %s: expected a power "
					"of two from 4096 to 1 GiB\n", optarg);
				return -EINVAL;
			}
			o->ringbuf_bytes = v;
			break;
		case OPT_POLL:
			if (sp_cli__parse_u64(optarg, 10000, &v) || v == 0) {
				fprintf(stderr, "spanprof record: --poll-ms %s: expected 1..10000\n",
					optarg);
				return -EINVAL;
			}
			o->poll_ms = v;
			break;
		case OPT_AGG_BUDGET:
			if (sp_cli__parse_u64(optarg, 1ull << 40, &v) || v < (64u << 10)) {
				fprintf(stderr, "spanprof record: --agg-budget %s: expected bytes, at "
					"least 65536\n", optarg);
				return -EINVAL;
			}
			o->agg_budget = v;
			break;
		case OPT_AGG_ENTRIES:
			if (sp_cli__parse_u64(optarg, 1u << 26, &v) || v == 0) {
				fprintf(stderr, "spanprof record: --agg-entries %s: expected 1..%u\n",
					optarg, 1u << 26);
				return -EINVAL;
			}
			o->agg_entries = v;
			break;
		case OPT_SUMMARY_JSON:
			o->summary_json = optarg;
			break;
		case OPT_NO_REPORT:
			o->report = false;
			break;
		case OPT_NO_TRACE_CTX:
			o->no_trace_ctx = true;
			break;
		case OPT_OFF_CPU:
			o->off_cpu = true;
			break;
		case OPT_OFF_CPU_MIN:
			if (sp_cli__parse_u64(optarg, 3600000000ull, &v)) {
				fprintf(stderr, "spanprof record: --off-cpu-min-us %s: expected "
					"microseconds, 0..3600000000\n", optarg);
				return -EINVAL;
			}
			o->off_cpu_min_us = v;
			off_cpu_tuned = true;
			break;
		case OPT_OFF_CPU_SAMPLE:
			if (sp_cli__parse_u64(optarg, SP_OFFCPU_MAX_N, &v) || v == 0) {
				fprintf(stderr, "spanprof record: --off-cpu-sample %s: expected N "
					"in 1..%u (capture 1 wait in N)\n", optarg, SP_OFFCPU_MAX_N);
				return -EINVAL;
			}
			o->off_cpu_sample_n = v;
			off_cpu_tuned = true;
			break;
		case OPT_OFF_CPU_RATE:
			if (sp_cli__parse_u64(optarg, 1000000, &v) || v == 0) {
				fprintf(stderr, "spanprof record: --off-cpu-rate %s: expected "
					"captures per second per CPU, 1..1000000\n", optarg);
				return -EINVAL;
			}
			o->off_cpu_rate = v;
			o->off_cpu_sample_n = 0;
			off_cpu_tuned = true;
			break;
		case OPT_OFF_CPU_KTHREADS:
			o->off_cpu_kthreads = true;
			off_cpu_tuned = true;
			break;
		case OPT_OFF_CPU_GOROUTINES:
			o->off_cpu_goroutines = true;
			off_cpu_tuned = true;
			break;
		case OPT_NO_GO_LABELS:
			o->no_go_labels = true;
			break;
		case OPT_OFF_CPU_MAX_PENDING:
			if (sp_cli__parse_u64(optarg, 1u << 20, &v) || v == 0) {
				fprintf(stderr, "spanprof record: --off-cpu-max-pending %s: expected "
					"1..1048576 captured waits\n", optarg);
				return -EINVAL;
			}
			o->off_cpu_max_pending = v;
			off_cpu_tuned = true;
			break;
		case OPT_CTX_MAX_PROCS:
			if (sp_cli__parse_u64(optarg, SP_TLS_DESCS_MAX, &v) || v == 0) {
				fprintf(stderr, "spanprof record: --ctx-max-procs %s: expected "
					"1..%u processes\n", optarg, SP_TLS_DESCS_MAX);
				return -EINVAL;
			}
			o->ctx_max_procs = v;
			break;
		default:
			fprintf(stderr, "spanprof record: unknown option or missing value: %s; "
				"see spanprof record --help\n", argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc)
		o->command = &argv[optind];
	if ((o->all ? 1 : 0) + (o->n_pids ? 1 : 0) + (o->command ? 1 : 0) > 1) {
		fprintf(stderr, "spanprof record: choose one of -a, -p PIDS or -- COMMAND\n");
		return -EINVAL;
	}
	if (!o->n_pids && !o->command)
		o->all = true;
	if (off_cpu_tuned && !o->off_cpu) {
		fprintf(stderr, "spanprof record: --off-cpu-* options need --off-cpu\n");
		return -EINVAL;
	}
	if (!o->output)
		o->output = o->otlp ? "spanprof.otlp.pb" : "spanprof.pb.gz";
	/* Without --agg-entries the entry cap follows the budget: entry headers
	 * and hash slots cost ~112 B per entry, so 1 per 512 B of budget keeps
	 * them near a fifth of it (65536 at the 64 MiB default). */
	if (!o->agg_entries)
		o->agg_entries = o->agg_budget / 512 < 1024 ? 1024 :
				 o->agg_budget / 512 > 65536 ? 65536 : o->agg_budget / 512;
	for (uint32_t i = 0; i < o->n_pids; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%u", o->pids[i]);
		if (access(path, F_OK) != 0) {
			fprintf(stderr, "spanprof record: -p: no process with pid %u\n", o->pids[i]);
			return -ESRCH;
		}
	}
	return 0;
}

/* Starts the command stopped on a pipe so that it becomes a target before
 * its first instruction; returns the pid and the pipe's write end. */
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
		execvp(argv[0], argv);
		fprintf(stderr, "spanprof record: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	*go_fd = fds[1];
	return pid;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/* Kernel frames are addresses; the symbolizer names them from a snapshot
 * of /proc/kallsyms taken here (data capture, not symbolization), written
 * next to the profile as FILE.kallsyms.gz (docs/formats.md).  Failure is a
 * note: the profile is complete without it. */
static void capture_kallsyms(const char *output)
{
	char path[PATH_MAX], err[256] = "";
	struct sp_build_id kid;
	int rc;

	if (snprintf(path, sizeof(path), "%s" SP_KALLSYMS_SUFFIX, output) >= (int)sizeof(path))
		return;
	rc = sp_buildid__kernel(&kid);
	rc = rc ? rc : sp_kallsyms__capture(path, &kid, err, sizeof(err));
	if (rc)
		fprintf(stderr, "spanprof record: no kernel symbol snapshot: %s\n",
			err[0] ? err : strerror(-rc));
}

/*
 * The output file.  A regular file (or a new path) is written to FILE.tmp.PID
 * beside it and renamed over FILE only once complete and synced, so a
 * failure (disk full, a signal during encoding) leaves the previous FILE as
 * it was.  Other outputs (/dev/stdout, a FIFO) are written directly.
 */
struct out_file {
	int fd;
	char tmp[PATH_MAX];	/* "" when writing directly */
};

static int out_open(const char *path, struct out_file *of)
{
	struct stat st;

	of->tmp[0] = 0;
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

static int write_profile(const struct record_opts *o, int fd, const struct sp_profile *p)
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
	err = write_all(fd, gz ? gz : raw, gz ? gz_len : raw_len);
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
	struct sp_sampler *sampler = NULL;
	struct sp_proc_table *procs = NULL;
	struct sp_agg *agg = NULL;
	struct ring_buffer *rb = NULL;
	struct sp_profile *prof = NULL;
	struct sp_ctx_discovery *disc = NULL;
	struct sp_consumer cons;
	struct sp_summary sum = { 0 };
	struct sp_sampler_config scfg;
	struct sp_agg_config acfg;
	char err_msg[512] = "";
	uint64_t t_start, t_end, next_status, execs_seen = 0, fast_until = 0;
	struct out_file out = { .fd = -1 };
	int go_fd = -1, rc = 1, err, child_status = 0;
	pid_t child = 0;
	bool tty;

	if (parse_opts(argc, argv, &o))
		return 2;
	if (!sp_caps__can_profile(err_msg, sizeof(err_msg))) {
		fprintf(stderr, "spanprof record: %s\n", err_msg);
		return 1;
	}
	/* Opened now so an unwritable path fails before anything is loaded. */
	err = out_open(o.output, &out);
	if (err) {
		fprintf(stderr, "spanprof record: cannot write %s: %s (choose another path "
			"with -o)\n", o.output, strerror(-err));
		return 1;
	}

	procs = sp_proc_table__new(NULL);
	acfg = (struct sp_agg_config){ .byte_budget = o.agg_budget,
				       .max_entries = o.agg_entries, .keep_timestamps = true };
	agg = sp_agg__new(&acfg);
	if (!procs || !agg) {
		fprintf(stderr, "spanprof record: cannot allocate the process table or the "
			"aggregator (%s): lower --agg-budget\n", strerror(errno));
		goto out;
	}
	scfg = (struct sp_sampler_config){
		.freq_hz = o.hz, .ringbuf_bytes = o.ringbuf_bytes,
		.filter_pids = !o.all, .stream_idle = o.idle, .kernel_stacks = o.kernel,
		.read_trace_ctx = !o.no_trace_ctx, .off_cpu = o.off_cpu,
		.off_cpu_min_ns = o.off_cpu_min_us * 1000, .off_cpu_sample_n = o.off_cpu_sample_n,
		.off_cpu_rate = o.off_cpu_rate, .off_cpu_kthreads = o.off_cpu_kthreads,
		.off_cpu_max_pending = o.off_cpu_max_pending, .tls_descs_max = o.ctx_max_procs,
		.no_go_labels = o.no_go_labels, .go_parks = o.off_cpu_goroutines,
	};
	err = sp_sampler__open_load(&scfg, &sampler, err_msg, sizeof(err_msg));
	if (err) {
		fprintf(stderr, "spanprof record: %s\n", err_msg);
		goto out;
	}
	for (uint32_t i = 0; i < o.n_pids; i++)
		sp_sampler__add_target(sampler, o.pids[i]);

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (o.command) {
		child = spawn_paused(o.command, &go_fd);
		if (child < 0) {
			fprintf(stderr, "spanprof record: cannot start %s: %s\n", o.command[0],
				strerror(-child));
			child = 0;
			goto out;
		}
		sp_sampler__add_target(sampler, child);
	}
	disc = sp_ctx_discovery__new(sampler, NULL);
	if (!disc) {
		fprintf(stderr, "spanprof record: out of memory\n");
		goto out;
	}
	sp_ctx_discovery__set_procs(disc, procs);
	sp_consumer__init(&cons, procs, agg);
	cons.on_proc = sp_ctx_discovery__on_proc;
	cons.on_proc_ctx = disc;
	cons.go_key = sp_ctx_discovery__go_key;
	cons.go_key_ctx = disc;
	rb = ring_buffer__new(sp_sampler__ring_fd(sampler), sp_consumer__handle, &cons, NULL);
	if (!rb) {
		fprintf(stderr, "spanprof record: cannot map the BPF ring buffer: %s\n",
			strerror(errno));
		goto out;
	}
	err = sp_sampler__attach(sampler, err_msg, sizeof(err_msg));
	if (err) {
		fprintf(stderr, "spanprof record: %s\n", err_msg);
		goto out;
	}
	sp_ctx_discovery__scan(disc, o.all, o.pids, o.n_pids);
	if (go_fd >= 0) {
		if (write(go_fd, "g", 1) != 1)
			fprintf(stderr, "spanprof record: cannot release the command: %s\n",
				strerror(errno));
		close(go_fd);
		go_fd = -1;
	}

	tty = !o.quiet && isatty(STDERR_FILENO);
	t_start = sp_clock__mono_ns();
	next_status = t_start + 1000000000ull;
	sum.mono_to_unix_ns = sp_clock__mono_to_unix_ns();
	while (!stop_signal) {
		uint64_t now;

		/* Samples do not wake us (see bpf/stack.bpf.h): poll returns on
		 * process events, a filling ring, or the timeout; then drain.
		 * Right after an exec the timeout is short, so a process that
		 * lives tens of milliseconds has its samples (and the maps
		 * re-reads they trigger) handled while it is alive; otherwise
		 * every wakeup costs more than the samples it drains. */
		if (cons.stats.received_exec != execs_seen) {
			execs_seen = cons.stats.received_exec;
			fast_until = sp_clock__mono_ns() + FAST_DRAIN_NS;
		}
		err = ring_buffer__poll(rb, sp_clock__mono_ns() < fast_until ? FAST_DRAIN_MS : (int)o.poll_ms);
		if (err >= 0 || err == -EINTR)
			err = ring_buffer__consume(rb);
		sp_ctx_discovery__tick(disc);
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "spanprof record: ring buffer poll failed: %s\n",
				strerror(-err));
			break;
		}
		now = sp_clock__mono_ns();
		if (o.duration_s > 0 && now - t_start >= (uint64_t)(o.duration_s * 1e9))
			break;
		if (child && waitpid(child, &child_status, WNOHANG) == child) {
			child = 0;
			break;
		}
		if (tty && now >= next_status) {
			sp_summary__status_line(stderr, &cons.stats, now - t_start);
			next_status += 1000000000ull;
		}
	}
	if (tty)
		fputs("\r\033[K", stderr);
	t_end = sp_clock__mono_ns();
	/* Stop sampling, then take every record still in the ring. */
	sp_sampler__stop(sampler);
	ring_buffer__consume(rb);
	sp_sampler__read_counters(sampler, sum.bpf);
	ring_buffer__consume(rb);
	if (child) {
		kill(child, SIGTERM);
		waitpid(child, &child_status, 0);
		child = 0;
	}

	/* Everything the summary needs from the aggregator, then the
	 * snapshot, then the aggregator goes: encoding needs memory of its
	 * own, and the two together would double the peak (bench/rss.py). */
	sum.hz = o.hz;
	sum.n_cpus = sp_sampler__n_cpus(sampler);
	sum.duration_ns = t_end - t_start;
	sum.output = o.output;
	sum.format = o.otlp ? "otlp" : "pprof";
	sum.consumer = cons.stats;
	sum.agg = *sp_agg__stats(agg);
	sum.procs = *sp_proc_table__stats(procs);
	sum.off_cpu = o.off_cpu;
	sum.off_cpu_min_ns = o.off_cpu_min_us * 1000;
	sum.off_cpu_sample_n = o.off_cpu_sample_n;
	sum.off_cpu_rate = o.off_cpu_rate;
	sp_agg__foreach(agg, sum_offcpu, &sum);
	{
		struct sp_snapshot_opts so = {
			.mono_to_unix_ns = sum.mono_to_unix_ns,
			.period_ns = 1000000000ull / o.hz,
			.start_mono_ns = t_start,
			.end_mono_ns = t_end,
		};
		so.service_name = sp_ctx_discovery__service_name;
		so.service_name_ctx = disc;
		so.attr_key = sp_ctx_discovery__attr_key;
		so.attr_key_ctx = disc;
		err = sp_snapshot__build(agg, procs, &so, &prof);
	}
	sp_agg__free(agg);
	agg = NULL;
	if (!err)
		err = write_profile(&o, out.fd, prof);
	if (!err)
		err = out_commit(&out, o.output);
	if (err) {
		fprintf(stderr, "spanprof record: writing %s failed: %s\n", o.output,
			strerror(-err));
		goto out;
	}
	if (o.kernel)
		capture_kallsyms(o.output);
	sp_ctx_discovery__fill_summary(disc, &sum);
	sum.obi_map = sp_sampler__uses_obi(sampler);
	sum.publish_watch = sp_sampler__watches_publish(sampler);
	sp_summary__print(stderr, &sum);
	if (o.summary_json && sp_summary__write_json(o.summary_json, &sum))
		fprintf(stderr, "spanprof record: cannot write %s: %s\n", o.summary_json,
			strerror(errno));
	rc = 0;
	if (o.report)
		sp_report_child__run(o.output);
out:
	if (child) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (go_fd >= 0)
		close(go_fd);
	out_close(&out);
	ring_buffer__free(rb);
	sp_sampler__destroy(sampler);
	sp_ctx_discovery__free(disc);
	sp_profile__free(prof);
	sp_agg__free(agg);
	sp_proc_table__free(procs);
	return rc;
}
