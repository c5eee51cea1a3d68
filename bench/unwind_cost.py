#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""unwind_cost.py - in-kernel cost per sample of spanprof's user-stack
unwinding from .eh_frame tables, next to its frame-pointer walk and to
bpftrace, on the same deep stack without frame pointers, in the same run
(issue 12; targets: .eh_frame <= 2x the frame-pointer walk, below bpftrace).

Load: bench/load_deep.c, compiled here with gcc -O2 -fomit-frame-pointer:
2 threads (2 busy CPUs), each ~55 user frames deep (40 levels of
recursion through 8 functions, then Debian libc's qsort and a comparator).

With --load fp the same load is built with frame pointers everywhere and
run "plain" (the bottom of the recursion spins instead of calling qsort:
Debian's libc has no frame pointers), so all three walkers get the whole
~43-frame chain: the like-for-like comparison of walking cost.

Per repetition, with kernel.bpf_stats_enabled=1 (restored afterwards), all
three concurrently for the same D seconds:
  dwarf      spanprof record -a -F 97 (default: .eh_frame tables)
  fp         spanprof record -a -F 97 --unwind fp
  bpftrace   bpftrace -e 'profile:hz:97 { @[kstack, ustack, tid] = count(); }'
Programs are attributed by the prog_id lines of /proc/PID/fdinfo; ns per
sample = delta run_time_ns / delta run_cnt between two `bpftool prog show`
reads inside the run (3 s after start, 1 s before the end: the tables are
built by then).  Both spanprof instances also time their user-stack walk
alone (SPANPROF_BENCH_UNWIND_TIMING: two bpf_ktime_get_ns around it, the
clock's own cost subtracted), per frame.  Also prints how deep each
spanprof variant got (user
frames per sample, from its summary) so cost is read next to what it buys:
the frame-pointer walk stops after one or two frames on this load.

Run as root from the repository root, after `make -j2`:
  python3 bench/unwind_cost.py [--duration 12] [--reps 3]
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

BT_PROG = "profile:hz:97 { @[kstack, ustack, tid] = count(); }"


def build_load(fp):
    """load_deep without frame pointers (as distributions build), or with
    them everywhere (--load fp: every walker gets the whole stack)."""
    src = os.path.join(B.ROOT, "bench", "load_deep.c")
    out = os.path.join(B.WORK, "load_deep_fp" if fp else "load_deep")
    flags = ["-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"] if fp else ["-fomit-frame-pointer"]
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        subprocess.run(["gcc", "-O2", *flags, "-Wall", "-Werror", "-o", out, src, "-lpthread"],
                       check=True)
    return out


def is_oncpu(p):
    return p["name"] == "sp_oncpu"


def is_perf_event(p):
    return p["type"] == "perf_event"


def one_run(load_bin, dur, plain):
    load = B.spawn([load_bin, str(dur + 4), "2", "40"] + (["plain"] if plain else []))
    time.sleep(0.5)
    t0 = time.monotonic()
    js = {k: os.path.join(B.WORK, "unwcost-%s.json" % k) for k in ("dwarf", "fp")}
    env = dict(os.environ, SPANPROF_BENCH_UNWIND_TIMING="1")
    sp = {
        "dwarf": B.spawn([B.SPANPROF, "record", "-a", "-F", "97", "-d", str(dur), "--no-report",
                          "-q", "-o", os.path.join(B.WORK, "unwcost-dwarf.pb.gz"),
                          "--summary-json", js["dwarf"]], env=env),
        "fp": B.spawn([B.SPANPROF, "record", "-a", "-F", "97", "-d", str(dur), "--no-report", "-q",
                       "-o", os.path.join(B.WORK, "unwcost-fp.pb.gz"), "--unwind", "fp",
                       "--summary-json", js["fp"]], env=env),
    }
    bt = B.spawn(["bpftrace", "-e", BT_PROG])
    ids = {k: B.wait_progs(p.pid, is_oncpu) for k, p in sp.items()}
    ids["bpftrace"] = B.wait_progs(bt.pid, is_perf_event)
    time.sleep(max(0.0, t0 + 3.0 - time.monotonic()))
    fields = ("n", "frames", "ns", "clock_ns")
    ta = {k: B.percpu_map_sum(ids[k], "unwind_timing", fields) for k in sp}
    a = B.bpftool_progs()
    t_a = time.monotonic()
    end = t0 + dur - 1.0
    if end - t_a < 3:
        B.die(f"duration {dur} s too short")
    time.sleep(end - t_a)
    b = B.bpftool_progs()
    tb = {k: B.percpu_map_sum(ids[k], "unwind_timing", fields) for k in sp}
    res = {}
    for k in sp:
        d = [y - x for x, y in zip(ta[k], tb[k])]
        # the walk alone: ns minus the clock's own cost, per frame
        res[k + "_walk_frame_ns"] = (d[2] - d[3]) / d[1] if d[1] else None
        res[k + "_walk_us"] = (d[2] - d[3]) / d[0] / 1000.0 if d[0] else None
    for k, i in ids.items():
        ns0, c0 = B.sum_stats(a, i)
        ns1, c1 = B.sum_stats(b, i)
        res[k] = ((ns1 - ns0) / (c1 - c0) / 1000.0 if c1 > c0 else None, c1 - c0)
    for k, p in sp.items():
        if p.wait(dur + 60) != 0:
            B.die(f"spanprof record ({k}) failed")
        j = json.load(open(js[k]))
        u = j["unwind"]
        res[k + "_depth"] = u["frames"] / u["walked"] if u["walked"] else 0
        res[k + "_root"] = 100.0 * u["root"] / u["walked"] if u["walked"] else 0
    B.stop(bt, signal.SIGINT)
    B.reap(load)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", "-d", type=int, default=12)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--load", choices=("nofp", "fp"), default="nofp",
                    help="load_deep without frame pointers (default) or with them")
    args = ap.parse_args()
    B.require(["bpftool", "bpftrace", "gcc"])
    load_bin = build_load(args.load == "fp")
    print(f"# unwind_cost: {B.machine()}; D={args.duration} s, {args.reps} repetitions, 97 Hz, "
          f"all three samplers at once on load_deep (2 threads, ~55 frames, "
          f"{'frame pointers' if args.load == 'fp' else 'no frame pointers'})")
    rows = []
    with B.BpfStats():
        for rep in range(args.reps):
            r = one_run(load_bin, args.duration, args.load == "fp")
            rows.append(r)
            d, f, t = r["dwarf"][0], r["fp"][0], r["bpftrace"][0]
            print(f"  rep {rep + 1}: dwarf {B.fmt(d)} us/sample (n={r['dwarf'][1]}, "
                  f"{r['dwarf_depth']:.1f} user frames, {r['dwarf_root']:.1f}% to the root)  "
                  f"fp {B.fmt(f)} us (n={r['fp'][1]}, {r['fp_depth']:.1f} frames, "
                  f"{r['fp_root']:.1f}% root)  bpftrace {B.fmt(t)} us (n={r['bpftrace'][1]})  "
                  f"dwarf/fp {d / f:.2f}  dwarf/bpftrace {d / t:.2f}; the walk alone: dwarf "
                  f"{B.fmt(r['dwarf_walk_us'])} us = {r['dwarf_walk_frame_ns']:.0f} ns/frame, fp "
                  f"{B.fmt(r['fp_walk_us'])} us = {r['fp_walk_frame_ns']:.0f} ns/frame", flush=True)
    med = {k: B.median([r[k][0] for r in rows]) for k in ("dwarf", "fp", "bpftrace")}
    ratio_fp = B.median([r["dwarf"][0] / r["fp"][0] for r in rows])
    ratio_bt = B.median([r["dwarf"][0] / r["bpftrace"][0] for r in rows])
    print(f"medians: dwarf {B.fmt(med['dwarf'])} us, fp {B.fmt(med['fp'])} us, bpftrace "
          f"{B.fmt(med['bpftrace'])} us per sample; same-run ratios (median): dwarf/fp "
          f"{ratio_fp:.2f} (target <= 2), dwarf/bpftrace {ratio_bt:.2f} (target < 1)")
    print(f"the walk alone (median ns per frame): dwarf "
          f"{B.median([r['dwarf_walk_frame_ns'] for r in rows]):.0f}, fp "
          f"{B.median([r['fp_walk_frame_ns'] for r in rows]):.0f}")


if __name__ == "__main__":
    main()
