#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/symbolizer_bench.sh - addresses per second and peak RSS of
# `spanprof-symbolizer addr` next to llvm-symbolizer, eu-addr2line and
# addr2line, on the same address sets, in the same run (issues 5 and 17).
#
#   bash bench/symbolizer_bench.sh [ELF...]
#
# Default ELF: /lib/x86_64-linux-gnu/libc.so.6 (stripped; DWARF in
# libc6-dbg's /usr/lib/debug/.build-id file, which every tool finds by build
# id).  Smaller ELFs need a smaller N (cold needs N distinct function bytes;
# $O/spanprof-symbolizer has about 98,000: N=50000).
# Environment: O (build dir, default build), N (addresses per set, default
# 100000), HOT (distinct hot addresses, default 300), RUNS (runs per
# measurement, median kept, default 3), SEED (default 1), TOOLS (default
# "spanprof llvm eu binutils"; eu-addr2line takes minutes on a large ELF),
# BASE_SYM (another spanprof-symbolizer, e.g. a build of main, measured in
# the same run as tool "base": before/after of a change).
#
# Sets (bench/symbolizer_addrs.py): cold = N distinct addresses inside
# functions; hot = N addresses drawn from HOT distinct ones, Zipf 1/rank.
# Each tool reads the set on stdin (a regular file) and writes to a file:
#   spanprof-symbolizer addr -e ELF --quiet --no-debuginfod --allow-root
#   llvm-symbolizer --obj=ELF            (inlining on by default)
#   eu-addr2line -e ELF -f -i
#   addr2line -e ELF -f -i
# Wall time: date +%s%N around /usr/bin/time -v, which gives the peak RSS.
# Process start is measured separately as the same command on an empty
# input (/dev/null), and throughput is printed both raw (N / wall) and
# start-excluded (N / (wall - empty)).  Nothing else is subtracted.
# "unres" = answers whose function is "??" (a sanity check that every tool
# found the debug info).
set -eu
cd "$(dirname "$0")/.."
O=${O:-build}
N=${N:-100000}
HOT=${HOT:-300}
RUNS=${RUNS:-3}
SEED=${SEED:-1}
TOOLS=${TOOLS:-spanprof llvm eu binutils}
SYM=$PWD/$O/spanprof-symbolizer
BASE_SYM=${BASE_SYM:-}
[ -n "$BASE_SYM" ] && TOOLS="$TOOLS base"
[ -x "$SYM" ] || { echo "build $SYM first (make O=$O)" >&2; exit 1; }
for t in llvm-symbolizer eu-addr2line addr2line /usr/bin/time readelf; do
	command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }
done
if [ $# -eq 0 ]; then
	set -- /lib/x86_64-linux-gnu/libc.so.6
fi
WORK=$(mktemp -d /tmp/spanprof-symbench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

tool_cmd() { # tool elf
	case $1 in
	spanprof) echo "$SYM addr -e $2 --quiet --no-debuginfod --allow-root";;
	base) echo "$BASE_SYM addr -e $2 --quiet --no-debuginfod --allow-root";;
	llvm) echo "llvm-symbolizer --obj=$2";;
	eu) echo "eu-addr2line -e $2 -f -i";;
	binutils) echo "addr2line -e $2 -f -i";;
	esac
}

# one run: prints "wall_ns rss_kb"
run_once() { # input cmd...
	local in=$1; shift
	local t0 t1 rss
	t0=$(date +%s%N)
	/usr/bin/time -v -o "$WORK/time" "$@" < "$in" > "$WORK/out" 2>/dev/null
	t1=$(date +%s%N)
	rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/time")
	echo "$((t1 - t0)) $rss"
}

# median of RUNS runs: prints "wall_ns rss_kb"
measure() { # input cmd...
	local i
	for ((i = 0; i < RUNS; i++)); do run_once "$@"; done | sort -n | \
		awk '{w[NR]=$1; r[NR]=$2} END {m=int((NR+1)/2); print w[m], r[m]}'
}

printf '# spanprof-symbolizer benchmark: N=%s HOT=%s RUNS=%s SEED=%s, %s, %s CPUs\n' \
	"$N" "$HOT" "$RUNS" "$SEED" "$(uname -r)" "$(nproc)"
printf '# llvm-symbolizer: %s; eu-addr2line: %s; addr2line: %s\n' \
	"$(llvm-symbolizer --version 2>/dev/null | grep -m1 -o 'LLVM version [0-9.]*')" \
	"$(eu-addr2line --version | head -1)" "$(addr2line --version | head -1)"
for elf in "$@"; do
	python3 bench/symbolizer_addrs.py "$elf" cold "$N" "$SEED" > "$WORK/cold"
	python3 bench/symbolizer_addrs.py "$elf" hot "$N" "$SEED" "$HOT" > "$WORK/hot"
	echo
	echo "## $elf ($(stat -L -c %s "$elf") bytes)"
	printf '%-9s %-5s %9s %9s %12s %14s %9s %7s\n' tool set wall_s start_s \
		'addr/s' 'addr/s-start' rss_MiB unres
	declare -A raw=() net=()
	for set in cold hot; do
		for tool in $TOOLS; do
			read -r -a cmd <<< "$(tool_cmd $tool "$elf")"
			read -r e_ns e_rss <<< "$(measure /dev/null "${cmd[@]}")"
			read -r w_ns rss <<< "$(measure "$WORK/$set" "${cmd[@]}")"
			unres=$(grep -c '^??$\|^?? ' "$WORK/out" || true)
			raw[$tool.$set]=$(awk -v n="$N" -v w="$w_ns" 'BEGIN {printf "%.0f", n / (w / 1e9)}')
			net[$tool.$set]=$(awk -v n="$N" -v w="$w_ns" -v e="$e_ns" \
				'BEGIN {d = w - e; if (d < 1e6) d = 1e6; printf "%.0f", n / (d / 1e9)}')
			printf '%-9s %-5s %9.3f %9.3f %12s %14s %9.1f %7s\n' "$tool" "$set" \
				"$(awk -v w="$w_ns" 'BEGIN {print w / 1e9}')" \
				"$(awk -v w="$e_ns" 'BEGIN {print w / 1e9}')" \
				"${raw[$tool.$set]}" "${net[$tool.$set]}" \
				"$(awk -v r="$rss" 'BEGIN {print r / 1024}')" "$unres"
		done
	done
	for set in cold hot; do
		# issue 17: cold >= 3x llvm-symbolizer and >= 2x addr2line, hot >= 10x
		target=3
		[ $set = hot ] && target=10
		awk -v s="$set" -v t="$target" -v a="${raw[spanprof.$set]:-0}" -v b="${raw[llvm.$set]:-0}" \
			-v c="${net[spanprof.$set]:-0}" -v d="${net[llvm.$set]:-0}" \
			-v e="${raw[eu.$set]:-0}" -v f="${raw[binutils.$set]:-0}" -v g="${raw[base.$set]:-0}" 'BEGIN {
			if (b > 0)
				printf "ratio %s: spanprof/llvm-symbolizer %.2fx raw, %.2fx start-excluded (target >= %dx: %s)\n",
					s, a / b, c / d, t, (a / b >= t ? "met" : "MISSED")
			if (f > 0)
				printf "ratio %s: spanprof/addr2line %.2fx raw%s\n", s, a / f,
					(s == "cold" ? (a / f >= 2 ? " (target >= 2x: met)" : " (target >= 2x: MISSED)") : "")
			if (e > 0)
				printf "ratio %s: spanprof/eu-addr2line %.2fx raw\n", s, a / e
			if (g > 0)
				printf "ratio %s: spanprof/base (BASE_SYM) %.2fx raw\n", s, a / g }'
	done
	unset raw net
done
