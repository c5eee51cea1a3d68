#!/bin/bash
# SPDX-License-Identifier: MIT
# collector_perf.sh - where spanprof record -a's own CPU goes (issue 17,
# "Collector"): perf record -g (frame pointers: the collector is built with
# them) of spanprof record -a -F 97 on bench/load_mixed, 25 s in steady
# state (from 5 s after start), with the collector's schedstat CPU over the
# same window; prints perf's self and cumulative tops.  libc and libdw have
# no frame pointers: their callers are not seen.
#
# CHURN=N adds a busy host's process churn (as collector_cpu.py --churn N:
# N sh|sed|cat pipelines and 4 build/fixtures/shortlived a second);
# SP_ARGS adds options to spanprof record (e.g. --exec-maps eager).
#
# Run as root from the repository root, after `make -j2`, under the lock:
#   flock /tmp/spanprof-heavy.lock bash bench/collector_perf.sh [WORKDIR]
set -eu
W=${1:-/tmp/spanprof-bench/perf}
mkdir -p "$W" "${BENCH_TMP:-/tmp/spanprof-bench}"
B=${SPANPROF_BUILD:-build}
python3 -c "import sys; sys.path.insert(0, 'bench'); import benchlib; print(benchlib.build_load())" > "$W/load"
LOAD=$(cat "$W/load")
"$LOAD" 40 2 & L=$!
C=
if [ -n "${CHURN:-}" ]; then
	(end=$(( $(date +%s) + 40 ))
	 while [ "$(date +%s)" -lt "$end" ]; do
		i=0
		while [ $i -lt "$CHURN" ]; do sh -c 'echo a | sed s/a/b/ | cat >/dev/null'; i=$((i+1)); done
		j=0
		while [ $j -lt 4 ]; do "$B/fixtures/shortlived" $((20 + (i * 7 + j * 11) % 31)); j=$((j+1)); done
		sleep 0.5
	 done) & C=$!
fi
# shellcheck disable=SC2086
"$B/spanprof" record -a -F 97 -d 32 --no-report -q -o "$W/sp.pb.gz" --summary-json "$W/sp.json" ${SP_ARGS:-} & S=$!
sleep 5
# %.0f: mawk prints a large sum as 3.1e+09 and overflows %d at 2^31.
cpu() { awk '{s += $1} END {printf "%.0f\n", s}' /proc/$S/task/*/schedstat; }
S0=$(cpu)
perf record -g -F 997 -p $S -o "$W/perf.data" -- sleep 25 2> "$W/perf.err"
S1=$(cpu)
wait $S
kill $L; wait $L || true
[ -z "$C" ] || { kill $C; wait $C || true; }
python3 - "$W/sp.json" $((S1 - S0)) <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
n = j["consumer"]["received_oncpu"] * 25 / 32      # samples in the window
ns = int(sys.argv[2])
print(f"window 25 s: collector CPU {ns / 1e6:.1f} ms = {ns / 25e7:.2f}% of a core, "
      f"~{n:.0f} samples, {ns / n / 1e3:.1f} us/sample")
PY
perf report -i "$W/perf.data" --no-children --stdio --percent-limit 1.5 -g none 2>/dev/null | grep -v '^#' | grep -v '^$'
perf report -i "$W/perf.data" --children --stdio --percent-limit 4 -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | grep -v kernel.kallsyms
