#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bpf_breakdown.py - where sp_oncpu's cost per sample goes, measured from
outside (no BPF edits): spanprof record alone, run_time_ns / run_cnt of
sp_oncpu over a steady-state window (as bpf_cost.py), under loads and flags
that switch parts of the program on and off:

  floor        -p PID of a sleeping process, bench/load_mixed busy: every
               sample returns after the target check (program entry, counter
               lookups, pid filter) - the fixed cost of a perf_event program
  short        2 x build/fixtures/callchain (about 5 user frames), --no-kernel
  mixed-user   bench/load_mixed 2 threads (10..30 user frames), --no-kernel
  mixed        bench/load_mixed 2 threads, kernel stacks on (~1/5 of samples
               hit kernel mode)
  deep         build/fixtures/deepstack 2 threads (60..120+ frames), --no-kernel

frames/sample = the summary JSON's consumer frames / received samples.  The
slope between short and deep --no-kernel is the cost per user frame of the
frame-pointer walk; (mixed - mixed-user) / kernel-mode share estimates the
cost of one kernel stack.  With --variant PATH (another spanprof build, e.g.
with a modified BPF program built into /tmp with O=...), each condition runs
the variant right after the baseline, in the same run, and prints the ratio.

Run as root from the repository root, after `make -j2`:
  python3 bench/bpf_breakdown.py [--duration 8] [--variant /tmp/x/build/spanprof]
Takes about 5 x (D + 2) s, twice that with --variant.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def one(spanprof, loads, flags, dur):
    procs = [B.spawn(a) for a in loads]
    time.sleep(0.5)
    sj = os.path.join(B.WORK, "breakdown.json")
    t0 = time.monotonic()
    sp = B.spawn([spanprof, "record", "-F", "97", "-d", str(dur), "--no-report", "-q",
                  "-o", os.path.join(B.WORK, "breakdown.pb.gz"), "--summary-json", sj, *flags])
    ids = B.wait_progs(sp.pid, lambda p: p["name"] == "sp_oncpu")
    time.sleep(1.0)
    a = B.sum_stats(B.bpftool_progs(), ids)
    time.sleep(max(1.0, t0 + dur - 1.0 - time.monotonic()))
    b = B.sum_stats(B.bpftool_progs(), ids)
    rc = sp.wait(dur + 60)
    for p in procs:
        B.stop(p)
    if rc != 0:
        B.die(f"{spanprof} exited {rc}")
    c = json.load(open(sj))["consumer"]
    fps = c["frames"] / c["received_oncpu"] if c["received_oncpu"] else 0
    n = b[1] - a[1]
    return ((b[0] - a[0]) / n / 1000 if n > 0 else None), fps, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", "-d", type=int, default=8)
    ap.add_argument("--variant", help="another spanprof binary to compare")
    args = ap.parse_args()
    D = args.duration
    B.require(["bpftool", "clang"])
    load = B.build_load()
    fx = B.FIXTURES
    sleeper = B.spawn(["sleep", str(10 * D + 600)])
    mixed = [load, str(D + 4), "2"]
    conds = [
        ("floor", [mixed], ["-p", str(sleeper.pid)]),
        ("short", [[os.path.join(fx, "callchain"), str(D + 4)]] * 2, ["-a", "--no-kernel"]),
        ("mixed-user", [mixed], ["-a", "--no-kernel"]),
        ("mixed", [mixed], ["-a"]),
        ("deep", [[os.path.join(fx, "deepstack"), str(D + 4), "2"]], ["-a", "--no-kernel"]),
    ]
    print(f"# bpf_breakdown: {B.machine()}; D={D} s, 97 Hz, spanprof alone")
    rows, res = [], {}
    try:
        with B.BpfStats():
            for name, loads, flags in conds:
                us, fps, n = one(B.SPANPROF, loads, flags, D)
                res[name] = (us, fps)
                row = [name, " ".join(flags).replace(str(sleeper.pid), "SLEEPER"),
                       B.fmt(fps, 1), n, B.fmt(us)]
                if args.variant:
                    vus, vfps, vn = one(args.variant, loads, flags, D)
                    row += [B.fmt(vus), B.fmt(vus / us) if us and vus else "-"]
                rows.append(row)
                print("  " + "  ".join(str(x) for x in row), flush=True)
    finally:
        B.stop(sleeper)
    print()
    hdr = ["condition", "flags", "frames/sample", "runs", "sp_oncpu us/sample"]
    if args.variant:
        hdr += ["variant us/sample", "variant/base"]
    B.table(hdr, rows)
    (s_us, s_f), (d_us, d_f) = res["short"], res["deep"]
    if s_us and d_us and d_f > s_f:
        slope = (d_us - s_us) / (d_f - s_f) * 1000
        print(f"\nuser frame-pointer walk: {slope:.0f} ns per frame "
              f"(short {s_f:.1f} -> deep {d_f:.1f} frames/sample); "
              f"intercept at 0 frames {s_us - slope * s_f / 1000:.2f} us; "
              f"floor (filtered sample) {B.fmt(res['floor'][0])} us")
    m, mu = res["mixed"][0], res["mixed-user"][0]
    if m and mu:
        print(f"kernel stacks on vs off on the mixed load: +{m - mu:.2f} us per sample "
              f"on average (only kernel-mode samples take one)")


if __name__ == "__main__":
    main()
