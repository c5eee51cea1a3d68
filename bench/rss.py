#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rss.py - resident memory of `spanprof record` over time, at defaults and
under a flood of unique stacks, next to `perf record` (issue 2,
"Benchmarks": peak RSS at defaults; under a flood it must stay flat and
bounded by the aggregator budget).

Three runs of D s each (default 60):
  defaults   spanprof record -a (97 Hz, --agg-budget 64 MiB) on bench/load_mixed
             with 2 threads; perf record -F 97 -g -a runs CONCURRENTLY on the
             same load, for the RSS comparison (RSS does not depend on the
             other sampler; CPU figures are collector_overhead.py's job)
  flood 64M  spanprof record -a -F 997 (default budget) on
             build/fixtures/deepstack D 2 (random depths up to 120 frames,
             mostly unique stacks); perf record -F 997 -g -a concurrently
  flood 8M   the same with --agg-budget 8388608, spanprof alone
VmRSS / VmHWM / RssAnon come from /proc/PID/status every second (a row every
5 s is printed); the final peak is wait4's ru_maxrss, which also covers the
final snapshot and file write after the last sample.  The summary JSON gives
the aggregator's bytes used and drops.

Run as root from the repository root, after `make -j2`:
  python3 bench/rss.py [--duration 60]
Takes about 3 x (D + 5) s.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def run(name, load_argv, sp_flags, dur, with_perf, perf_hz):
    load = B.spawn(load_argv)
    time.sleep(0.5)
    sj = os.path.join(B.WORK, "rss.json")
    sp = B.spawn([B.SPANPROF, "record", "-a", "-d", str(dur), "--no-report", "-q",
                  "-o", os.path.join(B.WORK, "rss.pb.gz"), "--summary-json", sj, *sp_flags])
    pf = None
    if with_perf:
        pf = B.spawn(["perf", "record", "-F", str(perf_hz), "-g", "-a", "-o",
                      os.path.join(B.WORK, "rss-perf.data"), "--", "sleep", str(dur)])
    t0 = time.monotonic()
    series = []
    while time.monotonic() - t0 < dur - 0.5:
        t = time.monotonic() - t0
        s = B.proc_status(sp.pid)
        q = B.proc_status(pf.pid) if pf else None
        if s:
            series.append((t, s, q))
        time.sleep(1.0)
    rc, _, sp_max, _ = B.reap(sp)
    if rc != 0:
        B.die(f"spanprof record exited {rc} in run '{name}'")
    pf_max = None
    if pf:
        _, _, pf_max, _ = B.reap(pf)
    B.stop(load)
    summ = json.load(open(sj))
    return series, sp_max, pf_max, summ


def mib(kib):
    return None if kib is None else kib / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", "-d", type=int, default=60)
    args = ap.parse_args()
    D = args.duration
    B.require(["perf", "clang"])
    load_bin = B.build_load()
    deep = os.path.join(B.FIXTURES, "deepstack")
    if not os.access(deep, os.X_OK):
        B.die(f"{deep} missing: run `make -j2` first")
    print(f"# rss: {B.machine()}; D={D} s")
    runs = [("defaults", [load_bin, str(D + 5), "2"], ["-F", "97"], True, 97),
            ("flood 64M", [deep, str(D + 5), "2"], ["-F", "997"], True, 997),
            ("flood 8M", [deep, str(D + 5), "2"], ["-F", "997", "--agg-budget", "8388608"],
             False, 997)]
    summary = []
    for name, load_argv, flags, with_perf, hz in runs:
        series, sp_max, pf_max, summ = run(name, load_argv, flags, D, with_perf, hz)
        print(f"\n## {name}: spanprof record -a {' '.join(flags)} on "
              f"{os.path.basename(load_argv[0])}" + (f" (+ perf record -F {hz} -g -a)"
                                                      if with_perf else ""))
        rows = []
        for t, s, q in series:
            if int(t) % 5 == 0 or (t, s, q) == series[-1]:
                rows.append([f"{t:.0f}", B.fmt(mib(s["VmRSS"]), 1), B.fmt(mib(s["VmHWM"]), 1),
                             B.fmt(mib(s.get("RssAnon")), 1),
                             B.fmt(mib(q["VmRSS"]), 1) if q else "-"])
        B.table(["t s", "sp VmRSS MiB", "sp VmHWM MiB", "sp RssAnon MiB", "perf VmRSS MiB"],
                rows)
        ag = summ["aggregator"]
        dropped = ag["dropped_entries_full"] + ag["dropped_bytes_full"]
        # flatness: RSS growth over the second half of the run
        half = [s["VmRSS"] for t, s, _ in series if t >= D / 2]
        growth = mib(half[-1] - half[0]) if len(half) > 1 else None
        summary.append([name, B.fmt(mib(sp_max), 1), B.fmt(growth, 1),
                        B.fmt(ag["bytes_used"] / 2**20, 1), B.fmt(ag["bytes_reserved"] / 2**20, 1),
                        ag["accepted"], dropped,
                        B.fmt(mib(pf_max), 1) if pf_max else "-",
                        B.fmt(sp_max / pf_max, 2) if pf_max else "-"])
    print("\nsummary (peak = ru_maxrss at exit)")
    B.table(["run", "sp peak MiB", "sp RSS growth 2nd half MiB", "agg used MiB",
             "agg budget MiB", "samples kept", "agg drops", "perf peak MiB",
             "sp/perf peak"], summary)


if __name__ == "__main__":
    main()
