#!/usr/bin/env bash
# tests/fuzz/run.sh - runs every fuzz target for FUZZ_SECONDS (default 600)
# on a corpus seeded from tests/fuzz/corpus/, generated seeds (profiles) and
# real files of this build (ELF binaries, /sys/kernel/notes).  New inputs
# accumulate in $FUZZ_O/corpus/<target>/; crashes go to $FUZZ_O/crashes/.
# FUZZ_JOBS targets run at once (default: one per online CPU); each is one
# single-threaded libFuzzer process with its own corpus directory, log and
# limits, so running them side by side changes nothing but the wall time.
# Results are printed in target order.  Exit 0 when no target crashed.
set -u
cd "$(dirname "$0")/../.."
O=${O:-build}
FUZZ_O=${FUZZ_O:-build-fuzz}
secs=${FUZZ_SECONDS:-600}
work=$FUZZ_O/corpus
mkdir -p "$work" "$FUZZ_O/crashes"
"$O/tests/make_seeds" "$work" || { echo "fuzz: cannot make seeds" >&2; exit 1; }
for t in tests/fuzz/corpus/*/; do
	name=$(basename "$t")
	mkdir -p "$work/$name"
	cp -n "$t"* "$work/$name/" 2>/dev/null
done
for name in fuzz_buildid fuzz_tls_elf fuzz_dwarf fuzz_cfi; do
	mkdir -p "$work/$name"
	for f in "$O/fixtures/callchain" "$O/libspanctx.so" "$O/fixtures/sym_inline_O2" \
		"$O/fixtures/sym_inline_kmod.ko"; do
		[ -f "$f" ] && cp -n "$f" "$work/$name/$(basename "$f")"
	done
done
# Go executables: the fixture with DWARF and stripped, the hand-laid one
mkdir -p "$work/fuzz_go_binary" "$work/fuzz_buildid"
for f in "$O/fixtures/go/golabels" "$O/fixtures/go/golabels.stripped" "$O/fixtures/go_fake_slice"; do
	[ -f "$f" ] && cp -n "$f" "$work/fuzz_go_binary/$(basename "$f")"
	[ -f "$f" ] && cp -n "$f" "$work/fuzz_buildid/$(basename "$f")"
done
[ -r /sys/kernel/notes ] && cp /sys/kernel/notes "$work/fuzz_buildid/kernel-notes"
# fuzz_dwarf_line: a real .debug_line behind its address-size byte
mkdir -p "$work/fuzz_dwarf_line"
for f in "$O/fixtures/sym_inline_O2" "$O/fixtures/callchain"; do
	if [ -f "$f" ] && objcopy --dump-section .debug_line="$work/line.tmp" "$f" "$work/elf.tmp" 2>/dev/null; then
		{ printf '\001'; cat "$work/line.tmp"; } > "$work/fuzz_dwarf_line/$(basename "$f")"
	fi
	rm -f "$work/line.tmp" "$work/elf.tmp"
done
# fuzz_die_reader: a real .debug_info and .debug_abbrev behind the former's
# length (4 bytes, little-endian)
mkdir -p "$work/fuzz_die_reader"
for f in "$O/fixtures/sym_inline_O2" "$O/fixtures/callchain"; do
	if [ -f "$f" ] && objcopy --dump-section .debug_info="$work/info.tmp" \
		--dump-section .debug_abbrev="$work/abbrev.tmp" "$f" "$work/elf.tmp" 2>/dev/null; then
		n=$(stat -c %s "$work/info.tmp")
		{ printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $((n & 255)) $((n >> 8 & 255)) \
			$((n >> 16 & 255)) $((n >> 24 & 255)))"
		  cat "$work/info.tmp" "$work/abbrev.tmp"; } > "$work/fuzz_die_reader/$(basename "$f")"
	fi
	rm -f "$work/info.tmp" "$work/abbrev.tmp" "$work/elf.tmp"
done
njobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
names=()
for bin in "$FUZZ_O"/fuzz_*; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin")
	names+=("$name")
	mkdir -p "$work/$name"
	while [ "$(jobs -rp | wc -l)" -ge "$njobs" ]; do
		wait -n
	done
	# -rss_limit_mb bounds each target; -timeout catches hangs (a stall is a bug).
	(
		"$bin" -max_total_time="$secs" -rss_limit_mb=1024 -timeout=10 \
			-artifact_prefix="$FUZZ_O/crashes/$name-" -print_final_stats=1 \
			"$work/$name" >"$FUZZ_O/$name.log" 2>&1
		echo $? >"$FUZZ_O/$name.rc"
	) &
done
wait
fails=0
for name in "${names[@]}"; do
	if [ "$(cat "$FUZZ_O/$name.rc" 2>/dev/null)" = 0 ]; then
		echo "ok   $name: $(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$FUZZ_O/$name.log" | grep -Eo '[0-9]+$') runs in ${secs}s"
	else
		echo "FAIL $name (log: $FUZZ_O/$name.log)"
		grep -E "ERROR|SUMMARY|==[0-9]+==" "$FUZZ_O/$name.log" | head -n 5 | sed 's/^/    /'
		fails=$((fails + 1))
	fi
	rm -f "$FUZZ_O/$name.rc"
done
[ "${#names[@]}" -gt 0 ] || { echo "fuzz: no target in $FUZZ_O (make fuzz-build)" >&2; exit 1; }
[ "$fails" -eq 0 ]
