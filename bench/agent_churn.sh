#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/agent_churn.sh - spanprof agent RSS while processes come and go.
#
#   sudo bash bench/agent_churn.sh [DURATION_S] [EXECS_PER_S]   (defaults: 120, 20)
#
# `spanprof agent -F 97 --interval 10` runs while a loop execs EXECS_PER_S
# short processes (/bin/true) per second for DURATION_S.  Every 10 s it
# prints VmRSS and the process table's gauges from /metrics
# (spanprof_processes_tracked, spanprof_mappings_tracked and the released
# counters): with the table's epochs the gauges follow the processes alive
# in the last intervals, and RSS levels off once its tables' pages are
# warm, instead of growing with every process ever seen.  At the end, the
# resident size of each memory region that grew by more than 100 KiB
# (/proc/PID/smaps), to say where any growth sits.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${SPANPROF_BUILD:-$PWD/build}
DUR=${1:-120}
RATE=${2:-20}
[ "$(id -u)" = 0 ] || { echo "agent_churn: needs root" >&2; exit 1; }
work=$(mktemp -d /tmp/spanprof-agent-churn.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 20000))
"$B/spanprof" agent -F 97 --interval 10 --output-dir "$work/out" --max-files 5 \
	--metrics-addr 127.0.0.1:$port -q >"$work/agent.log" 2>&1 &
ap=$!
sleep 5
regions() { # "range name rss_kib" for regions above 100 KiB
	awk '/^[0-9a-f]+-[0-9a-f]+ / {r = $1 " " ($6 == "" ? "[anon]" : $6)}
	     /^Rss:/ {if ($2 > 100) print r, $2}' /proc/$ap/smaps
}
regions >"$work/smaps0"
t0=$SECONDS
(while [ $((SECONDS - t0)) -lt "$DUR" ]; do
	for _ in $(seq "$RATE"); do /bin/true; done
	sleep 1
done) &
lp=$!
echo "spanprof agent churn: ${DUR}s, ~$RATE execs/s, $(nproc) CPUs, kernel $(uname -r)"
while [ $((SECONDS - t0)) -lt "$DUR" ]; do
	rss=$(awk '/VmRSS/ {print $2}' /proc/$ap/status)
	m=$(curl -s 127.0.0.1:$port/metrics | awk '
		/^spanprof_processes_seen_total / {s = $2}
		/^spanprof_processes_tracked / {p = $2}
		/^spanprof_mappings_tracked / {m = $2}
		/^spanprof_processes_released_total / {pr = $2}
		/^spanprof_mappings_released_total / {mr = $2}
		END {printf "seen %s tracked %s mappings %s released %s/%s", s, p, m, pr, mr}')
	echo "t=$((SECONDS - t0))s rss_kib=$rss $m"
	sleep 10
done
wait $lp
regions >"$work/smaps1"
kill -TERM $ap
wait $ap || true
echo "regions that grew (KiB at start -> end):"
awk 'NR == FNR {a[$1] = $3; next} {d = $3 - a[$1]; if (d > 100) print "  " $2, a[$1] + 0, "->", $3}' \
	"$work/smaps0" "$work/smaps1"
