#!/usr/bin/env bash
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion: it reads sources)
# SPDX-License-Identifier: MIT
# test_layers.sh - the arrows of docs/architecture.md point down only:
#   src/base      includes nothing of the project but src/base
#   src/profile   base, profile (and generated *.pb-c.h)
#   src/export    base, profile, export
#   src/collector base, profile, export, collector (and the BPF skeleton)
#   src/symbolizer base, profile, export, symbolizer
# A quoted include with a folder ("x/y.h") must name an allowed layer; one
# without (a file of the same folder, generated headers) is local.  Prints
# every offending line; exit 0 when there is none.
set -u
cd "$(dirname "$0")/../.."
bad=0
check() { # folder, allowed prefixes...
	local dir=$1; shift
	local allowed="$*" f line inc top
	while IFS= read -r f; do
		while IFS= read -r line; do
			inc=${line#*\"}; inc=${inc%%\"*}
			case $inc in */*) ;; *) continue;; esac
			top=${inc%%/*}
			case " $allowed " in *" $top "*) ;; *)
				echo "layering: $f includes \"$inc\" (allowed from $dir: $allowed)"
				bad=$((bad + 1));;
			esac
		done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$f")
	done < <(find "$dir" -name '*.[ch]')
}
check src/base base
check src/profile base profile
check src/export base profile export
check src/collector base profile export collector spanprof
check src/symbolizer base profile export symbolizer
# the self-check: a planted upward include must be caught
found=$bad
tmp=$(mktemp -d)
printf '#include "profile/profile.h"\n' > "$tmp/x.c"
check "$tmp" base >/dev/null
rm -rf "$tmp"
if [ "$bad" -ne $((found + 1)) ]; then
	echo "layering: the checker missed a planted upward include"
	exit 1
fi
if [ "$found" -ne 0 ]; then
	exit 1
fi
echo "ok: every include points down ($(find src -name '*.[ch]' | wc -l) files)"
