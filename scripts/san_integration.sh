#!/usr/bin/env bash
# scripts/san_integration.sh - the whole integration suite (and the unit
# tests) against the ASan+UBSan build: every spanprof, spanprof-symbolizer,
# fixture and test binary the tests run comes from build-san/.
#
# A sanitizer report fails the test whose binary exited non-zero, and is
# also written to $SAN_LOGS/{asan,ubsan}.PID whatever the exit status (a
# report from a background process a test only kills would otherwise go
# unseen); the run fails when any such file exists.
#
#   sudo bash scripts/san_integration.sh            # builds build-san first
#   ONLY=record sudo bash scripts/san_integration.sh
# Takes about as long as the plain suite plus the sanitizers' 2-3x.
set -u
cd "$(dirname "$0")/.."
SAN_DIR=${SAN_DIR:-build-san}
JOBS=${JOBS:-2}
make -j"$JOBS" SAN=1 O="$SAN_DIR" FUZZ_O="$SAN_DIR-fuzz" all >/dev/null || { echo "san: build failed" >&2; exit 1; }
SAN_LOGS=${SAN_LOGS:-$PWD/$SAN_DIR/san-logs}
rm -rf "$SAN_LOGS"
mkdir -p "$SAN_LOGS"
chmod 1777 "$SAN_LOGS"	# processes that dropped to nobody write here too
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:log_path=$SAN_LOGS/asan:log_exe_name=1${ASAN_EXTRA:+:$ASAN_EXTRA}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$SAN_LOGS/ubsan:log_exe_name=1"
SPANPROF_BUILD=$PWD/$SAN_DIR O=$SAN_DIR bash tests/run.sh
rc=$?
reports=$(ls "$SAN_LOGS" 2>/dev/null | wc -l)
if [ "$reports" -gt 0 ]; then
	echo "san: $reports sanitizer report(s) in $SAN_LOGS:"
	for f in "$SAN_LOGS"/*; do
		echo "--- $f"
		grep -E "ERROR|SUMMARY|runtime error" "$f" | head -n 3
	done
	exit 1
fi
echo "san: no sanitizer report"
exit $rc
