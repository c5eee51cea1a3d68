#!/usr/bin/env bash
# bench/offcpu_pingpong.sh - off-CPU profiling cost on a context-switch-heavy
# load: two threads ping-ponging a byte over pipes (build/fixtures/
# offcpu_pingpong), in one run:
#
#   1. no profiler                       -> round trips/s (baseline)
#   2. spanprof record --off-cpu (-a)    -> round trips/s, BPF ns per switch
#   3. libbpf-tools offcputime (system)  -> round trips/s, BPF ns per switch
#   (baseline again at the end; the reported baseline is the mean of both)
#
# Each profiler runs system-wide (no pid filter, as both do by default) on
# the same load.  BPF ns per switch = run_time_ns / run_cnt of the programs
# attached to sched_switch (kernel.bpf_stats_enabled=1, bpftool prog show
# -j), read while the profiler is still attached.  Stats are turned on with
# the BPF_ENABLE_STATS syscall (held by a helper process, released when it
# exits), not the sysctl, so a concurrent user of the sysctl is not
# switched off.  Throughput is measured in separate runs without stats (the
# stats' two clock reads per program run would add to the cost measured).
#
# Usage: bench/offcpu_pingpong.sh [SECONDS] [REPEATS] [-- extra spanprof
#        record options, e.g. --off-cpu-sample 1]
# Env:   O=build dir (default build), PP_CPU=CPU the load is pinned to (1).  Needs root, bpftool, offcputime
#        (bash scripts/deps.sh --with-bench).
set -u
cd "$(dirname "$0")/.."
O=${O:-build}
SECS=${1:-5}
REPEATS=${2:-3}
shift $(( $# >= 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
EXTRA=("$@")
PP=$O/fixtures/offcpu_pingpong
SP=$O/spanprof
OFFCPUTIME=$(command -v offcputime || ls /usr/sbin/offcputime 2>/dev/null || true)
[ "$(id -u)" = 0 ] || { echo "offcpu_pingpong: needs root" >&2; exit 1; }
[ -x "$PP" ] && [ -x "$SP" ] || { echo "offcpu_pingpong: run make first" >&2; exit 1; }
[ -n "$OFFCPUTIME" ] || { echo "offcpu_pingpong: offcputime missing: bash scripts/deps.sh --with-bench" >&2; exit 1; }
TMP=$(mktemp -d)
PROF_PID=

STATS_PID=
cleanup() {
	[ -n "$PROF_PID" ] && kill -INT "$PROF_PID" 2>/dev/null && wait "$PROF_PID" 2>/dev/null
	[ -n "$STATS_PID" ] && kill "$STATS_PID" 2>/dev/null && wait "$STATS_PID" 2>/dev/null
	rm -rf "$TMP"
}

# bpf(BPF_ENABLE_STATS, {type = BPF_STATS_RUN_TIME}): stats stay on while
# the returned fd is open.
stats_on() {
	python3 -c '
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
attr = (ctypes.c_uint32 * 4)(0, 0, 0, 0)
fd = libc.syscall(321, 32, ctypes.byref(attr), 16)
if fd < 0:
    sys.exit("BPF_ENABLE_STATS failed: %s" % os.strerror(ctypes.get_errno()))
print("on", flush=True)
signal.pause()' >"$TMP/stats.out" 2>&1 &
	STATS_PID=$!
	for _ in $(seq 50); do grep -q on "$TMP/stats.out" && return 0; sleep 0.1; done
	cat "$TMP/stats.out" >&2; return 1
}
stats_off() { kill "$STATS_PID"; wait "$STATS_PID" 2>/dev/null; STATS_PID=; }
trap cleanup EXIT

# Both threads on one CPU: every round trip is two direct context switches
# (no idle wakeup latency, which made unpinned runs bimodal: 15k vs 200k/s).
PP_CPU=${PP_CPU:-1}
rate() { taskset -c "$PP_CPU" "$PP" "$SECS" | awk '{print $6}'; }

# Starts a profiler in the background; waits until its sched_switch
# program is attached (a bpftool listing shows a program with that name).
start_prof() { # name-pattern, command...
	local pat=$1; shift
	"$@" >"$TMP/prof.out" 2>&1 &
	PROF_PID=$!
	for _ in $(seq 100); do
		bpftool prog show -j 2>/dev/null | python3 -c "
import json,sys
sys.exit(0 if any('$pat' in p.get('name','') for p in json.load(sys.stdin)) else 1)" && { sleep 0.5; return 0; }
		sleep 0.1
	done
	echo "offcpu_pingpong: profiler did not attach: $*" >&2; cat "$TMP/prof.out" >&2
	return 1
}

stop_prof() {
	kill -INT "$PROF_PID" 2>/dev/null
	wait "$PROF_PID" 2>/dev/null
	PROF_PID=
}

# ns per run of programs whose name contains pat (summed over them).
bpf_ns() { # name-pattern
	bpftool prog show -j | python3 -c "
import json,sys
ps=[p for p in json.load(sys.stdin) if '$1' in p.get('name','') and p.get('run_cnt')]
t=sum(p['run_time_ns'] for p in ps); c=max(p['run_cnt'] for p in ps) if ps else 0
print('%.0f %d' % (t/c if c else float('nan'), c))"
}

SP_ARGS=(record -a --off-cpu --no-report -q -o "$TMP/sp.pb.gz" --summary-json "$TMP/sp.json" "${EXTRA[@]}")
OC_ARGS=("$OFFCPUTIME" -f 3600)
# offcputime -f (folded output) keeps the output small; older builds lack
# it: then plain output.
"$OFFCPUTIME" --help 2>&1 | grep -q -- '--folded\| -f' || OC_ARGS=("$OFFCPUTIME" 3600)

declare -a base sp oc
echo "# offcpu_pingpong: ${SECS}s x ${REPEATS}, spanprof ${EXTRA[*]:-(defaults)}, $(uname -r), $(nproc) CPUs"
for r in $(seq "$REPEATS"); do
	base+=("$(rate)")
	start_prof sp_offcpu "$SP" "${SP_ARGS[@]}" || exit 1
	sp+=("$(rate)")
	stop_prof
	start_prof sched_switch "${OC_ARGS[@]}" || exit 1
	oc+=("$(rate)")
	stop_prof
done
base+=("$(rate)")

# In-kernel cost: one more run of each with bpf_stats on.
stats_on || exit 1
start_prof sp_offcpu "$SP" "${SP_ARGS[@]}" || exit 1
taskset -c "$PP_CPU" "$PP" "$SECS" >/dev/null
read -r sp_ns sp_cnt <<<"$(bpf_ns sp_offcpu)"
stop_prof
cp "$TMP/sp.json" "$TMP/sp_stats.json" 2>/dev/null
start_prof sched_switch "${OC_ARGS[@]}" || exit 1
taskset -c "$PP_CPU" "$PP" "$SECS" >/dev/null
read -r oc_ns oc_cnt <<<"$(bpf_ns sched_switch)"
stop_prof
stats_off

python3 - "$sp_ns" "$sp_cnt" "$oc_ns" "$oc_cnt" "$TMP/sp_stats.json" \
	"${base[*]}" "${sp[*]}" "${oc[*]}" <<'EOF'
import json, statistics as st, sys
sp_ns, sp_cnt, oc_ns, oc_cnt = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
base, sp, oc = ([float(x) for x in a.split()] for a in sys.argv[6:9])
b = st.median(base)
print("round trips/s (median of %d): baseline %.0f, spanprof %.0f (%+.1f%%), offcputime %.0f (%+.1f%%)"
      % (len(sp), b, st.median(sp), 100 * (st.median(sp) / b - 1), st.median(oc), 100 * (st.median(oc) / b - 1)))
print("  runs: baseline %s | spanprof %s | offcputime %s" % (base, sp, oc))
print("BPF ns per switch: spanprof %.0f (%d runs), offcputime %.0f (%d runs), ratio %.2f"
      % (sp_ns, sp_cnt, oc_ns, oc_cnt, sp_ns / oc_ns))
try:
    b_ = json.load(open(sys.argv[5]))["bpf"]
    print("spanprof counters (stats run): switches %d, sampled out %d, captured %d, below min %d, sent %d, ring full %d"
          % (b_["offcpu_switches"], b_["offcpu_sampled_out"], b_["offcpu_captured"],
             b_["offcpu_below_min"], b_["ringbuf_sent_offcpu"], b_["ringbuf_dropped_offcpu"]))
except Exception as e:
    print("spanprof counters: unavailable (%s)" % e)
print("targets: ns/switch <= 1/3 offcputime: %s; throughput loss <= 10%%: %s"
      % ("MET" if sp_ns <= oc_ns / 3 else "MISSED", "MET" if st.median(sp) >= 0.9 * b else "MISSED"))
EOF
