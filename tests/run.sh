#!/usr/bin/env bash
# tests/run.sh - runs the whole suite and ends with "N passed, N failed, N skipped".
#
#   unit:        every $O/tests/test_* (cmocka); each test case counts.
#                With SAN_O set, the unit tests built there (ASan+UBSan)
#                run too, as unit-san:*.
#   integration: every tests/integration/test_*.py and test_*.sh; each file
#                counts once: exit 0 = pass, 77 = skip (with its reason
#                printed), anything else = fail.  BPF tests need root and
#                fail loudly (not skip) when BPF cannot load.
#
# Two phases, each reported (in the usual order: unit, unit-san,
# integration) once it has finished:
#   1. in parallel, JOBS at once (default 2 per CPU: most of it waits): every
#      unit program (plain, then unit-san) except those whose source says
#      "spanprof-test: serial" in its first lines (they bound a latency), and
#      the integration files that say "# spanprof-test: parallel" in their
#      first lines: no timing or rate assertion, no whole-machine sampling
#      (no -a, no agent), no machine-wide setting changed, and BPF, if any,
#      only for the file's own command (record -- CMD, its assertions exact
#      accounting, names and shares that a loaded CPU does not move: most of
#      the symbolizer's tests, the fuzz smoke, record_callchain, flood,
#      otlp_compact, report_multiprocess).  A file whose checks depend on
#      the consumer keeping up (short-lived processes' maps, fixed windows)
#      stays serial;
#   2. one after another: the serial unit programs, then every other
#      integration file (they load BPF, sample the whole machine and measure
#      time, so they get the machine to themselves).  A new integration file
#      without the marker lands here.
#
# Environment: O=build dir (default build), SAN_O=sanitizer build dir,
# ONLY=substring to run a subset, JOBS.
set -u
cd "$(dirname "$0")/.."
O=${O:-build}
export SPANPROF_BUILD=$PWD/$O
pass=0 fail=0 skip=0
failed_names=()
logdir=$O/test-logs
mkdir -p "$logdir"

selected() { [ -z "${ONLY:-}" ] || [[ "$1" == *"$ONLY"* ]]; }
log_of() { echo "$logdir/$(basename "$1").log"; }

run_cmd() { # name, command...: runs it, writes its log, exit code and seconds
	local name=$1; shift
	local log t0=$SECONDS
	log=$(log_of "$name")
	"$@" >"$log" 2>&1
	echo "$? $((SECONDS - t0))" >"$log.rc"
}

report() { # name: counts and prints the result run_cmd left
	local name=$1 log rc dt
	log=$(log_of "$name")
	read -r rc dt <"$log.rc" || { rc=1; dt=0; }
	rm -f "$log.rc"
	if [[ "$name" == unit* ]]; then
		# cmocka prints "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s),"
		local p f k
		p=$(grep -Eo '\[  PASSED  \] [0-9]+' "$log" | awk '{s+=$NF} END {print s+0}')
		k=$(grep -Eo '\[  SKIPPED \] [0-9]+' "$log" | awk '{s+=$NF} END {print s+0}')
		f=$(grep -Eo '\[  FAILED  \] [0-9]+ test' "$log" | awk '{s+=$(NF-1)} END {print s+0}')
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
		pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + k))
		if [ "$f" -gt 0 ]; then
			failed_names+=("$name"); echo "FAIL $name (${dt}s)"; tail -n 30 "$log" | sed 's/^/    /'
		else
			local ks=""
			[ "$k" -gt 0 ] && ks=", $k skipped"
			echo "ok   $name: $p cases$ks (${dt}s)"
		fi
		return
	fi
	case $rc in
	0) pass=$((pass + 1)); echo "ok   $name (${dt}s)";;
	77) skip=$((skip + 1)); echo "SKIP $name: $(tail -n 1 "$log")";;
	*) fail=$((fail + 1)); failed_names+=("$name")
	   echo "FAIL $name (rc=$rc, ${dt}s)"; tail -n 40 "$log" | sed 's/^/    /';;
	esac
}

run_one() { # name, command...: one after another
	selected "$1" || return
	run_cmd "$@"
	report "$1"
}

# Phase 1: started JOBS at a time, reported in order when all are done.
par_names=()
start_par() { # name, command...
	selected "$1" || return
	par_names+=("$1")
	while [ "$(jobs -rp | wc -l)" -ge "$njobs" ]; do
		wait -n
	done
	run_cmd "$@" &
}
njobs=${JOBS:-$((2 * $(nproc 2>/dev/null || echo 1)))}

integ_cmd() { # file -> the command that runs it
	case $1 in
	*.py) echo python3;;
	*.sh) echo bash;;
	esac
}
parallel_ok() { head -n 5 "$1" | grep -q '^# spanprof-test: parallel'; }
unit_serial() { head -n 20 "tests/unit/$(basename "$1").c" 2>/dev/null | grep -q 'spanprof-test: serial'; }

# the sanitized unit programs' environment (plain ones ignore it)
san_env=(env "ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
	"UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}")
serial_units=()
unit() { # name, program: started now, or kept for phase 2
	if unit_serial "$2"; then
		serial_units+=("$1" "$2")
	else
		start_par "$1" "${san_env[@]}" "$2"
	fi
}
# the integration files first: they are the longest of the phase
serial=()
for t in tests/integration/test_*.py tests/integration/test_*.sh; do
	[ -e "$t" ] || continue
	if parallel_ok "$t"; then
		start_par "integration:$(basename "$t")" "$(integ_cmd "$t")" "$t"
	else
		serial+=("$t")
	fi
done
for t in "$O"/tests/test_*; do
	[ -x "$t" ] || continue
	unit "unit:$(basename "$t")" "$t"
done
if [ -n "${SAN_O:-}" ]; then
	for t in "$SAN_O"/tests/test_*; do
		[ -x "$t" ] || continue
		unit "unit-san:$(basename "$t")" "$t"
	done
fi
wait
for kind in unit: unit-san: integration:; do
	for name in "${par_names[@]}"; do
		[[ "$name" == "$kind"* ]] && report "$name"
	done
done

# Phase 2: one after another.
for ((i = 0; i < ${#serial_units[@]}; i += 2)); do
	run_one "${serial_units[i]}" "${san_env[@]}" "${serial_units[i + 1]}"
done
for t in "${serial[@]}"; do
	run_one "integration:$(basename "$t")" "$(integ_cmd "$t")" "$t"
done

if [ "${#failed_names[@]}" -gt 0 ]; then
	# Each failure's reason again, next to the totals: a CI page that
	# shows only the tail of a long run still says why.
	for n in "${failed_names[@]}"; do
		why=$(grep -E -m4 'FAIL:|Error|Traceback|\[  FAILED  \]|[Aa]ssert' "$(log_of "$n")" |
		      tail -n 2 | tr '\n' ' ' | cut -c1-300)
		echo "why $n: ${why:-$(tail -n 1 "$(log_of "$n")")}"
	done
	echo "failed: ${failed_names[*]} (logs in $logdir/)"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
