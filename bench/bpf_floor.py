#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bpf_floor.py - sp_oncpu's cost per sample against floor probes attached
at the same time, on the same load, in the same run (issue 17, "BPF").

Load: bench/load_mixed, 2 threads (10..30 user frames, about a fifth of its
time in the kernel).  With kernel.bpf_stats_enabled=1 (restored after),
each repetition runs for D s, all at 97 Hz on every CPU, together:
  spanprof     spanprof record -a -F 97 (sp_oncpu: filters, trace context,
               kernel stack, frame-pointer walk of the user stack by
               bpf_probe_read_user, ring-buffer record)
  empty        bpftrace 'profile:hz:97 { }': the fixed cost of a perf_event
               program
  kstack       bpftrace 'profile:hz:97 { @[kstack] = count(); }': the
               kernel's stack walker plus a hash-map update
  ustack       bpftrace 'profile:hz:97 { @[ustack] = count(); }': the
               kernel's frame-pointer walker of the user stack
               (bpf_get_stackid, BPF_F_USER_STACK) plus a hash-map update
  both         bpftrace 'profile:hz:97 { @[kstack, ustack] = count(); }'
us/sample = delta run_time_ns / delta run_cnt between 1 s after all are
attached and 1 s before the end.  Printed: medians of REPS, and per
repetition spanprof / each floor (same run).  The floors use the kernel's
walkers (bpf_get_stackid), not spanprof's probe-read walk: "ustack" is what
an FP walk of the same stacks costs when the kernel does it.

Run as root from the repository root, after `make -j2`:
  python3 bench/bpf_floor.py [--duration 15] [--reps 3]
"""
import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

FLOORS = [("empty", "profile:hz:97 { }"),
          ("kstack", "profile:hz:97 { @[kstack] = count(); }"),
          ("ustack", "profile:hz:97 { @[ustack] = count(); }"),
          ("both", "profile:hz:97 { @[kstack, ustack] = count(); }")]


def one(load_bin, dur):
    load = B.spawn([load_bin, str(dur + 6), "2"])
    time.sleep(0.5)
    t0 = time.monotonic()
    sp = B.spawn([B.SPANPROF, "record", "-a", "-F", "97", "-d", str(dur), "--no-report", "-q",
                  "-o", os.path.join(B.WORK, "bpffloor.pb.gz")])
    bts = [(name, B.spawn(["bpftrace", "-e", prog])) for name, prog in FLOORS]
    ids = {"spanprof": B.wait_progs(sp.pid, lambda p: p["name"] == "sp_oncpu")}
    for name, p in bts:
        ids[name] = B.wait_progs(p.pid, lambda x: x["type"] == "perf_event")
    time.sleep(1.0)
    a, t_a = B.bpftool_progs(), time.monotonic()
    end = t0 + dur - 1.0
    if end - t_a < 3:
        B.die(f"duration {dur} s too short: attached {t_a - t0:.1f} s after start")
    time.sleep(end - t_a)
    b = B.bpftool_progs()
    res = {}
    for k, i in ids.items():
        ns0, c0 = B.sum_stats(a, i)
        ns1, c1 = B.sum_stats(b, i)
        res[k] = (ns1 - ns0) / (c1 - c0) / 1e3 if c1 > c0 else None
    if sp.wait(dur + 60) != 0:
        B.die("spanprof record failed")
    for _, p in bts:
        B.stop(p, signal.SIGINT)
    B.stop(load)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", "-d", type=int, default=15)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    B.require(["bpftool", "bpftrace", "clang"])
    os.makedirs(B.WORK, exist_ok=True)
    load_bin = B.build_load()
    print(f"# bpf_floor: {B.machine()}; D={args.duration} s, {args.reps} repetitions, 97 Hz, "
          "all programs attached together")
    names = ["spanprof"] + [n for n, _ in FLOORS]
    runs = []
    for rep in range(args.reps):
        r = one(load_bin, args.duration)
        runs.append(r)
        print(f"  rep {rep + 1}: " + "  ".join(f"{k} {B.fmt(r[k])}" for k in names) +
              "  | spanprof/" + " spanprof/".join(
                  f"{n} {B.fmt(r['spanprof'] / r[n])}" for n, _ in FLOORS if r[n]), flush=True)
    print()
    rows = []
    for k in names:
        v = [r[k] for r in runs if r[k]]
        ratio = [r["spanprof"] / r[k] for r in runs if r[k] and r["spanprof"]]
        rows.append([k, B.fmt(B.median(v)), f"{B.fmt(min(v))}..{B.fmt(max(v))}",
                     B.fmt(B.median(ratio)) if k != "spanprof" else "-"])
    B.table(["program", "us/sample median", "spread", "spanprof / it (same run, median)"],
            rows)


if __name__ == "__main__":
    with B.BpfStats():
        main()
