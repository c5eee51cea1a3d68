#!/usr/bin/env bash
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
# Every fuzz target runs for a bounded time (FUZZ_SECONDS, default 3) on its
# seeds, FUZZ_JOBS at once (default one per CPU): no crash, no leak, no hang.
# The targets are built here (make fuzz-targets: a plain `make` builds none;
# nothing is rebuilt when they are current).  The long campaign is
# `make fuzz`.
set -u
cd "$(dirname "$0")/../.."
O=$(basename "${SPANPROF_BUILD:-build}")
make -s -j"$(nproc 2>/dev/null || echo 2)" O="$O" FUZZ_O=build-fuzz fuzz-targets >/dev/null ||
	{ echo "FAIL: the fuzz targets do not build: make O=$O fuzz-targets"; exit 1; }
FUZZ_SECONDS=${FUZZ_SECONDS:-3} O=$O FUZZ_O=build-fuzz bash tests/fuzz/run.sh
