#!/usr/bin/env bash
# The quick start's main job: profile the instrumented demo service for real
# and print a report a person can read.
#
#   spanprof record (BPF, root) -- spanprof-demo (traces of nested spans)
#     -> out/demo.pb.gz (pprof, unsymbolized, build ids, trace/span labels)
#     -> spanprof-symbolizer report (unprivileged): top functions, per-span
#        table, flame graph out/demo.pb.gz.html
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
echo "== recording spanprof-demo for ${DEMO_SECONDS:-8} s at 97 Hz (on-CPU and off-CPU)"
"$B/spanprof" record -F 97 ${DEMO_RECORD_FLAGS:-} -o out/demo.pb.gz --no-report \
	-- "$B/spanprof-demo" --duration "${DEMO_SECONDS:-8}" --threads 4 \
	--truth out/demo-truth.jsonl
chmod 644 out/demo.pb.gz out/demo-truth.jsonl 2>/dev/null || true
echo
echo "== report (spanprof-symbolizer, unprivileged)"
touch out/demo.html && chown nobody out/demo.html 2>/dev/null || true
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$B/spanprof-symbolizer" report out/demo.pb.gz --top 15 --by-span \
	--flamegraph out/demo.html | head -n 60
echo
echo "flame graph: out/demo.html (open it in a browser)"
echo "raw profile: out/demo.pb.gz (go tool pprof -top out/demo.pb.gz works too)"
