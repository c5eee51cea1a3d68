#!/usr/bin/env bash
# Every fuzz target runs for a bounded time (FUZZ_SECONDS, default 10) on its
# seeds: no crash, no leak, no hang.  The long campaign is `make fuzz`.
set -u
cd "$(dirname "$0")/../.."
O=$(basename "${SPANPROF_BUILD:-build}")
ls build-fuzz/fuzz_* >/dev/null 2>&1 || { echo "fuzz targets not built: run make"; exit 1; }
FUZZ_SECONDS=${FUZZ_SECONDS:-10} O=$O FUZZ_O=build-fuzz bash tests/fuzz/run.sh
