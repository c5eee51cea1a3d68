#!/usr/bin/env bash
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
# test_codec_protoc.sh - checks spanprof's encoders with independent decoders.
#
# The unit tests test_otlp and test_pprof write the fixture profile (two
# processes, on- and off-CPU samples, a trace link, kernel and user frames)
# to $SP_CODEC_DUMP_DIR.  Then:
#   - `protoc --decode_raw` (no schema: it only knows the wire format) must
#     show the OTLP request's field numbers where v1.11.0 puts them, and the
#     pprof Profile's where profile.proto puts them;
#   - `go tool pprof -raw` must accept the gzip'd pprof file and show the
#     value columns, labels, locations and mappings.
# Exit: 0 pass, 77 skip (tool or test binary missing), anything else fail.
set -u
B=${SPANPROF_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
for t in test_otlp test_pprof; do
	[ -x "$B/tests/$t" ] || { echo "skip: $B/tests/$t not built"; exit 77; }
done
command -v protoc >/dev/null || { echo "skip: protoc missing (apt-get install protobuf-compiler)"; exit 77; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { # description, command...
	local what=$1; shift
	if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
has() { grep -qxF -- "$2" "$1"; }	# file, exact line
has_re() { grep -qE -- "$2" "$1"; }

SP_CODEC_DUMP_DIR=$dir "$B/tests/test_otlp" >"$dir/otlp.log" 2>&1 || { cat "$dir/otlp.log"; exit 1; }
SP_CODEC_DUMP_DIR=$dir "$B/tests/test_pprof" >"$dir/pprof.log" 2>&1 || { cat "$dir/pprof.log"; exit 1; }
for f in fixture.otlp fixture.pb fixture.pb.gz; do
	[ -s "$dir/$f" ] || { echo "FAIL: $f not written"; exit 1; }
done

# ---------------------------------------------------------------- OTLP
o=$dir/otlp.txt
protoc --decode_raw <"$dir/fixture.otlp" >"$o" || { echo "FAIL: protoc cannot parse the OTLP request"; exit 1; }
check "otlp: request field 1 resource_profiles"     has "$o" "1 {"
check "otlp: request field 2 dictionary"            has "$o" "2 {"
# dictionary (top-level 2): 5 string_table, 7 stack_table
check "otlp: dictionary string_table[0] empty"      has "$o" '  5: ""'
check "otlp: string table holds frame type key"     has "$o" '  5: "profile.frame.type"'
check "otlp: string table holds build id key"       has "$o" '  5: "process.executable.build_id.gnu"'
check "otlp: link_table[0] = 16 + 8 zero bytes" \
	has_re "$o" '^    1: "(\\000){16}"$'
check "otlp: scope name spanprof (ScopeProfiles 1 scope, 1 name)" has "$o" '      1: "spanprof"'
# Profile (1 > 2 > 2): 3 time_unix_nano fixed64, 4 duration_nano, 6 period
check "otlp: Profile.time_unix_nano is fixed64 (field 3)" has "$o" '      3: 0x17979cfe362a0000'
check "otlp: Profile.duration_nano (field 4)"       has "$o" '      4: 10000000000'
check "otlp: Profile.period (field 6)"              has "$o" '      6: 10309278'
# Sample (1 > 2 > 2 > 2): 1 stack_index, 3 link_index, 5 timestamps (packed fixed64: 8 bytes each)
check "otlp: Sample.link_index (field 3)"           has "$o" '        3: 1'
check "otlp: Sample.timestamps_unix_nano (field 5)" has_re "$o" '^        5: "'
# Resource attributes: KeyValue 3 key_strindex, never 1 key
check "otlp: resource keys via key_strindex"        has_re "$o" '^      3: [0-9]+$'
check "otlp: resource service.name value"           has "$o" '        1: "checkout"'
check "otlp: process.pid int value (AnyValue 3)"    has "$o" '        3: 100'

# ---------------------------------------------------------------- pprof
p=$dir/pprof.txt
protoc --decode_raw <"$dir/fixture.pb" >"$p" || { echo "FAIL: protoc cannot parse the pprof file"; exit 1; }
check "pprof: 6 string_table[0] empty"              has "$p" '6: ""'
check "pprof: 6 string_table holds samples"         has "$p" '6: "samples"'
check "pprof: 9 time_nanos"                         has "$p" '9: 1700000000000000000'
check "pprof: 10 duration_nanos"                    has "$p" '10: 10000000000'
check "pprof: 12 period"                            has "$p" '12: 10309278'
check "pprof: 11 period_type"                       has "$p" '11 {'
check "pprof: 14 default_sample_type"               has_re "$p" '^14: [0-9]+$'
check "pprof: 3 mapping with 1 id"                  has "$p" '  1: 1'

# ---------------------------------------------------------------- go tool pprof
if command -v go >/dev/null; then
	g=$dir/gopprof.txt
	if HOME=$dir GOCACHE=$dir/gocache GOFLAGS= go tool pprof -raw -symbolize=none \
		"$dir/fixture.pb.gz" >"$g" 2>"$dir/gopprof.err"; then
		echo "ok   go tool pprof accepts the file"
		check "go pprof: four value columns" has_re "$g" 'samples/count cpu/nanoseconds\[dflt\] off_cpu_waits/count off_cpu/nanoseconds'
		check "go pprof: trace id label"     has_re "$g" 'trace_id:\[a0a1a2a3a4a5a6a7a8a9aaabacadaeaf\]'
		check "go pprof: off-CPU reason"     has_re "$g" 'off_cpu_reason:\[futex\]'
		check "go pprof: pid/tid labels"     has_re "$g" 'pid:\[100\] tid:\[101\]'
		check "go pprof: off-CPU sample"     has_re "$g" '^ +0 +0 +1 +123456789: 3 1 2 $'
		check "go pprof: inlined lines"      has_re "$g" '0x401234 M=1 work demo.c:12'
		check "go pprof: mapping build id"   has_re "$g" '/usr/bin/demo 0123456789abcdef0123456789abcdef01234567'
	else
		echo "FAIL go tool pprof rejected the file:"; cat "$dir/gopprof.err"; fail=1
	fi
else
	echo "note: go missing, go tool pprof check not run"
fi

[ $fail -eq 0 ] && echo "all codec checks passed"
exit $fail
