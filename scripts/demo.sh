#!/usr/bin/env bash
# The quick start's main job: profile the instrumented demo service for real
# and print a report a person can read.
#
#   spanprof record (BPF, root) -- spanprof-demo (traces of nested spans)
#     -> out/demo.pb.gz: pprof, unsymbolized, build ids, trace/span labels
#     -> at its end spanprof record runs spanprof-symbolizer as an
#        unprivileged process: top functions + flame graph out/demo.pb.gz.html
#   then the per-span table (which span spent its time where).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${O:-build}
if [ "$(id -u)" -ne 0 ]; then
	echo "spanprof demo: BPF sampling needs root: run sudo make demo" >&2
	exit 1
fi
for f in "$B/spanprof" "$B/spanprof-demo" "$B/spanprof-symbolizer"; do
	[ -x "$f" ] || { echo "spanprof demo: $f is missing: run make" >&2; exit 1; }
done
mkdir -p out
chmod 755 out
secs=${DEMO_SECONDS:-8}
flags=${DEMO_RECORD_FLAGS---off-cpu}	# on-CPU + where threads wait
echo "== spanprof record -F 97 $flags -- spanprof-demo (${secs} s, 4 worker threads)"
"$B/spanprof" record -F 97 $flags -o out/demo.pb.gz \
	-- "$B/spanprof-demo" --duration "$secs" --threads 4 --truth out/demo-truth.jsonl
chmod 644 out/demo.pb.gz out/demo-truth.jsonl
echo
echo "== per span (first rows; every span of every trace is in the profile)"
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$B/spanprof-symbolizer" report out/demo.pb.gz --by-span --quiet 2>/dev/null | head -n 12 || true
echo
echo "files: out/demo.pb.gz (go tool pprof -top out/demo.pb.gz also reads it),"
echo "       out/demo.pb.gz.html (flame graph: open it in a browser),"
echo "       out/demo-truth.jsonl (the demo's own log of its spans)"
