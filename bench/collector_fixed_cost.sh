#!/bin/bash
# SPDX-License-Identifier: MIT
# collector_fixed_cost.sh - splits spanprof record -a's user-space CPU into
# a fixed part (per wakeup of the consumer) and a per-sample part (issue
# 17, "Collector"): record -a runs 28 s at FREQ Hz, with LOAD=1 on
# bench/load_mixed (2 busy CPUs) or LOAD=0 on the idle host, and each of
# its threads' schedstat CPU and context switches are read 6 s and 26 s
# after start.  Runs at two frequencies on the same load give the
# marginal cost of a sample; runs with two --poll-ms values on an idle
# host give the cost of a wakeup.  SP_ARGS adds options to record.
#
# Run as root from the repository root, after `make -j2`, under the lock:
#   flock /tmp/spanprof-heavy.lock bash bench/collector_fixed_cost.sh FREQ LOAD
set -eu
FREQ=${1:-97}
LOAD_ON=${2:-1}
W=${BENCH_TMP:-/tmp/spanprof-bench}/fixed
mkdir -p "$W"
B=${SPANPROF_BUILD:-build}
L=
if [ "$LOAD_ON" = 1 ]; then
	LOAD=$(python3 -c "import sys; sys.path.insert(0, 'bench'); import benchlib; print(benchlib.build_load())")
	"$LOAD" 30 2 & L=$!
fi
# shellcheck disable=SC2086
"$B/spanprof" record -a -F "$FREQ" ${SP_ARGS:-} -d 28 --no-report -q -o "$W/sp.pb.gz" \
	--summary-json "$W/sp.json" & S=$!
sleep 6
threads() { for t in "/proc/$S/task"/*; do echo "${t##*/} $(cat "$t/comm") $(cat "$t/schedstat")"; done; }
threads > "$W/t0"
sleep 20
threads > "$W/t1"
wait $S
[ -z "$L" ] || { kill $L; wait $L || true; }
python3 - "$W" <<'PY'
import json, sys
w = sys.argv[1]
def rows(f):
    return {r[0]: r for r in (line.split() for line in open(f))}
a, b = rows(w + "/t0"), rows(w + "/t1")
j = json.load(open(w + "/sp.json"))
n = j["consumer"]["received_oncpu"] * 20 / 28          # samples in the window
total, parts, main = 0.0, [], None
for tid, r in sorted(b.items(), key=lambda kv: int(kv[0])):
    if tid not in a:
        continue
    ms = (int(r[2]) - int(a[tid][2])) / 1e6
    sw = int(r[4]) - int(a[tid][4])
    total += ms
    main = main if main is not None else (ms, sw)
    parts.append(f"{r[1]}:{ms:.2f}ms/{sw}sw")
print(f"window 20 s: ~{n:.0f} samples; main thread {main[0]:.2f} ms, {main[1]} switches; "
      f"all threads {total:.2f} ms = {total * 1e3 / max(n, 1):.2f} us/sample")
print("threads: " + " ".join(parts))
PY
