#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/agent_bench.sh - spanprof agent cost on 2 busy CPUs, and bytes per
# sample on the wire.
#
#   sudo bash bench/agent_bench.sh [DURATION_S] [HZ...]     (defaults: 120, 19 97)
#
# For each frequency: one fixtures/callchain thread pinned on each of CPUs
# 0 and 1, `spanprof agent -F HZ --interval 10 --output-dir DIR` for
# DURATION_S; RSS (VmRSS) sampled every 5 s (first sample after 10 s, min,
# max, last: flat RSS is the claim), CPU = (utime+stime)/duration from
# /proc/PID/stat (percent of one CPU).  Bytes per sample: every rotated
# file is exactly one OTLP request body as sent (gzip), so
# bytes/sample = file bytes / samples in it (timestamps per event included);
# the same profiles converted to gzipped pprof (spanprof-symbolizer file
# --format pprof --no-symbolize) give pprof's figure (no per-event
# timestamps in pprof).  Prints one table; paste it into docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${SPANPROF_BUILD:-$PWD/build}
DUR=${1:-120}
shift || true
HZS=${*:-19 97}
[ "$(id -u)" = 0 ] || { echo "agent_bench: needs root" >&2; exit 1; }
work=$(mktemp -d /tmp/spanprof-agent-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

clk=$(getconf CLK_TCK)
echo "spanprof agent bench: ${DUR}s per frequency, 2 busy CPUs (callchain pinned on CPU 0 and 1), $(nproc) CPUs, kernel $(uname -r)"
printf '%-6s %-9s %-10s %-10s %-10s %-10s %-9s %-10s %-12s %-12s\n' Hz cpu_% rss_10s_MiB rss_min rss_max rss_last samples ringdrop otlp_gz_B/smp pprof_gz_B/smp
for hz in $HZS; do
	out=$work/out-$hz
	mkdir -p "$out"
	taskset -c 0 "$B/fixtures/callchain" $((DUR + 20)) 1 >/dev/null 2>&1 &
	l1=$!
	taskset -c 1 "$B/fixtures/callchain" $((DUR + 20)) 1 >/dev/null 2>&1 &
	l2=$!
	port=$((20000 + RANDOM % 20000))
	"$B/spanprof" agent -F "$hz" --interval 10 --output-dir "$out" --max-files 100000 \
		--metrics-addr 127.0.0.1:$port >"$work/agent-$hz.log" 2>&1 &
	ap=$!
	rss=()
	t0=$SECONDS
	sleep 10
	while [ $((SECONDS - t0)) -lt "$DUR" ]; do
		rss+=("$(awk '/VmRSS/ {print $2}' /proc/$ap/status)")
		sleep 5
	done
	read -r ut st < <(awk '{print $14, $15}' /proc/$ap/stat)
	el=$((SECONDS - t0))
	drops=$(curl -s 127.0.0.1:$port/metrics | awk '/^spanprof_ringbuf_dropped_samples_total/ {print $2}')
	kill -TERM $ap
	wait $ap || true
	kill $l1 $l2 2>/dev/null || true
	wait $l1 $l2 2>/dev/null || true
	cpu=$(awk -v u="$ut" -v s="$st" -v c="$clk" -v e="$el" 'BEGIN {printf "%.2f", 100 * (u + s) / c / e}')
	python3 - "$hz" "$cpu" "$out" "$B" "$drops" "${rss[@]}" <<'EOF'
import os, subprocess, sys
sys.path.insert(0, "tests/integration")
import spt
hz, cpu, out, b, drops = sys.argv[1:6]
rss = [int(x) / 1024 for x in sys.argv[6:]]
files = sorted(os.path.join(out, f) for f in os.listdir(out) if ".otlp" in f)
n = ob = pb = 0
for f in files:
    s = spt.read_otlp(f)
    n += sum(len(x["ts"]) or (x["values"][0] if x["values"] else 0) for x in s)
    ob += os.path.getsize(f)
    pp = f + ".pprof.gz"
    subprocess.run([os.path.join(b, "spanprof-symbolizer"), "file", f, "-o", pp, "--format",
                    "pprof", "--no-symbolize", "--quiet"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pb += os.path.getsize(pp)
print("%-6s %-9s %-10.1f %-10.1f %-10.1f %-10.1f %-9d %-10s %-12.1f %-12.1f" % (
    hz, cpu, rss[0], min(rss), max(rss), rss[-1], n, drops or "?", ob / max(n, 1),
    pb / max(n, 1)))
EOF
done
