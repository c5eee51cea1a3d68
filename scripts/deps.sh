#!/usr/bin/env bash
# Installs the Debian packages spanprof needs to build, test and benchmark.
# Idempotent: packages already present are skipped, and apt is only touched
# when something is missing.  Usage: scripts/deps.sh [--with-bench]
set -euo pipefail

pkgs=(
  make clang llvm gcc libc6-dev pkg-config
  libbpf-dev bpftool linux-libc-dev
  libelf-dev libdw-dev libdebuginfod-dev debuginfod elfutils
  zlib1g-dev libzstd-dev libxxhash-dev
  libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
  libcurl4-openssl-dev libmicrohttpd-dev
  libcmocka-dev libclang-rt-14-dev prometheus
  fuse3 libfuse3-dev
  golang-go binutils iproute2 procps util-linux strace python3
  dpkg-dev systemd g++ linux-perf
  chromium
  nodejs openjdk-17-jdk-headless sqlite3 linux-perf time
)
if [ "${1:-}" = "--with-bench" ]; then
  pkgs+=(bpftrace libbpf-tools valgrind)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ "${#missing[@]}" -ne 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "spanprof deps: missing packages: ${missing[*]}; run this script as root (sudo $0)" >&2
    exit 1
  fi
  echo "spanprof deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# A real Go >= 1.24 program (Debian has Go 1.19 only, and no registry here
# ships a newer Go toolchain): TypeScript's native compiler, tsgo, a
# stripped Go 1.26 binary on npm, pinned (npm checks the tarball's
# integrity).  Optional: CI's machines reach Debian's archive only, so a
# failed fetch is one line here and tests/integration/test_go_real_go126.py
# reports itself skipped (exit 77, naming this script), never passed.
# npm is used only when it is already there: Debian's npm package would
# replace a NodeSource nodejs.
tsgo_pkg=@typescript/native-preview-linux-x64@7.0.0-dev.20260707.2
tsgo_dir=/var/cache/spanprof-deps/tsgo-7.0.0-dev.20260707.2
if [ ! -x "$tsgo_dir/package/lib/tsgo" ] && [ "$(id -u)" -eq 0 ]; then
  tmp=$(mktemp -d)
  if command -v npm >/dev/null &&
     (cd "$tmp" && timeout 45 npm pack --silent "$tsgo_pkg" >/dev/null 2>&1); then
    mkdir -p "$tsgo_dir"
    tar xzf "$tmp"/*.tgz -C "$tsgo_dir"
  else
    echo "spanprof deps: $tsgo_pkg not fetched (no npm, or the npm registry unreachable): test_go_real_go126 will be skipped" >&2
  fi
  rm -rf "$tmp"
fi
