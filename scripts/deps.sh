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
  nodejs openjdk-17-jdk-headless sqlite3 linux-perf
)
if [ "${1:-}" = "--with-bench" ]; then
  pkgs+=(bpftrace libbpf-tools valgrind)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "spanprof deps: missing packages: ${missing[*]}; run this script as root (sudo $0)" >&2
  exit 1
fi
echo "spanprof deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
