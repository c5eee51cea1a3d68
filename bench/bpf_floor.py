#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bpf_floor.py - sp_oncpu's cost per sample against the issue's floor, a
perf_event program that only walks the same user stack by frame pointer
with bpf_probe_read_user, attached at the same time on the same load, in
the same run (issue 17, "BPF": goal sp_oncpu <= 2x that floor).

Load: bench/load_mixed built with frame pointers, 2 threads (10..30 user
frames, about a fifth of its time in the kernel).  With
kernel.bpf_stats_enabled=1 (restored after), each repetition runs all of
these for D s, each at 97 Hz on every CPU, together:
  dwarf      spanprof record -a (default unwinder: .eh_frame tables, the
             frame pointer where a frame has none)
  fp         spanprof record -a --unwind fp (every frame by frame pointer)
  fp_walk    build/bench/fp_floor's floor_fp_walk (bench/fp_floor.bpf.c):
             THE floor: idle and kernel threads out, user registers as
             sp_oncpu takes them, then one 16-byte bpf_probe_read_user per
             frame up to SP_MAX_FRAMES, the pcs into a per-CPU buffer;
             nothing else
  empty      floor_empty: a perf_event program that returns at once
  kstack     floor_kstack: bpf_get_stack of the kernel stack on the
             samples that hit kernel mode (as sp_oncpu does)
With --pid, spanprof records -p LOAD and the floor probes return at once
on other processes' samples: on a shared machine all walk the same
stacks (with -a each walks whatever ran, and the default unwinder goes
deeper than a frame-pointer walk in code without frame pointers).
With --bpftrace, also the kernel's own walkers through bpftrace (the
previous floors of this script): 'profile:hz:97 { @[ustack] = count(); }'
and the same with kstack.
With --timed, both spanprof instances also time their user-stack walk and
their trace-context read (SPANPROF_BENCH_UNWIND_TIMING /
SPANPROF_BENCH_CTX_TIMING: two bpf_ktime_get_ns around each, the clock's
own cost subtracted), which adds about 4 clock reads to their cost.

us/sample = delta run_time_ns / delta run_cnt between 3 s after start and
1 s before the end.  Frames per sample: spanprof's summary (unwind frames /
walked), fp_floor's buffer (its whole run).  Printed: per repetition, each
program and spanprof / floor in the same run; then medians and spread.

With --build-b DIR, another build's spanprof (e.g. main's) runs beside in
both modes (dwarf_b, fp_b): an A/B in the same run.  With --ucopy V[,V...],
this build again in both modes per V with SPANPROF_BENCH_UCOPY=V (the
user-stack copy, bpf/unwind.bpf.h "Stack copy": BYTES[xSLOTS], 0 = off).

Run as root from the repository root, after `make -j2`:
  python3 bench/bpf_floor.py [--duration 15] [--reps 3] [--timed] [--pid] [--bpftrace]
      [--build-b DIR] [--ucopy 0,1024]
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

FP_FLOOR = os.path.join(B.BUILD, "bench", "fp_floor")
FLOORS = ("fp_walk", "empty", "kstack")
BPFTRACE = [("bt_ustack", "profile:hz:97 { @[ustack] = count(); }"),
            ("bt_both", "profile:hz:97 { @[kstack, ustack] = count(); }")]
SPANPROFS = [("dwarf", B.SPANPROF, [], {}), ("fp", B.SPANPROF, ["--unwind", "fp"], {})]


def add_instances(args):
    """--build-b: that build's spanprof too (dwarf_b, fp_b); --ucopy V: this
    build with SPANPROF_BENCH_UCOPY=V in both modes (dwarf_ucV, fp_ucV)."""
    if args.build_b:
        sb = os.path.join(args.build_b, "spanprof")
        if not os.access(sb, os.X_OK):
            B.die(f"{sb} missing")
        SPANPROFS.extend([("dwarf_b", sb, [], {}), ("fp_b", sb, ["--unwind", "fp"], {})])
    for v in args.ucopy:
        SPANPROFS.extend([(f"dwarf_uc{v}", B.SPANPROF, [], {"SPANPROF_BENCH_UCOPY": v}),
                          (f"fp_uc{v}", B.SPANPROF, ["--unwind", "fp"], {"SPANPROF_BENCH_UCOPY": v})])


def one(load_bin, dur, timed, bpftrace, only_load):
    load = B.spawn([load_bin, str(dur + 6), "2"])
    time.sleep(0.5)
    t0 = time.monotonic()
    timing = {"SPANPROF_BENCH_UNWIND_TIMING": "1", "SPANPROF_BENCH_CTX_TIMING": "1"} if timed else {}
    js, sp = {}, {}
    for k, binary, flags, extra in SPANPROFS:
        js[k] = os.path.join(B.WORK, f"bpffloor-{k}.json")
        target = ["-p", str(load.pid)] if only_load else ["-a"]
        env = dict(os.environ, **timing, **extra)
        sp[k] = B.spawn([binary, "record", *target, "-F", "97", "-d", str(dur), "--no-report",
                         "-q", "-o", os.path.join(B.WORK, f"bpffloor-{k}.pb.gz"),
                         "--summary-json", js[k], *flags], env=env)
    floor = subprocess.Popen([FP_FLOOR, "-F", "97", "-d", str(dur + 330),
                              *(["-p", str(load.pid)] if only_load else []), *FLOORS], stdout=subprocess.PIPE, text=True)
    if floor.stdout.readline().strip() != "ready":
        B.die(f"{FP_FLOOR} did not start (see its message above)")
    bts = [(n, B.spawn(["bpftrace", "-e", prog])) for n, prog in BPFTRACE] if bpftrace else []
    ids = {k: B.wait_progs(p.pid, lambda x: x["name"] == "sp_oncpu") for k, p in sp.items()}
    for n in FLOORS:
        ids[n] = B.wait_progs(floor.pid, lambda x, n=n: x["name"] == "floor_" + n)
    for n, p in bts:
        ids[n] = B.wait_progs(p.pid, lambda x: x["type"] == "perf_event")
    time.sleep(max(0.0, t0 + 3.0 - time.monotonic()))
    fields = ("n", "frames", "ns", "clock_ns")
    cfields = ("n", "read_ns", "clock_ns")
    if timed:
        ta = {k: B.percpu_map_sum(ids[k], "unwind_timing", fields) for k in sp}
        ca = {k: B.percpu_map_sum(ids[k], "ctx_timing", cfields) for k in sp}
    a, t_a = B.bpftool_progs(), time.monotonic()
    end = t0 + dur - 1.0
    if end - t_a < 3:
        B.die(f"duration {dur} s too short: attached {t_a - t0:.1f} s after start")
    time.sleep(end - t_a)
    b = B.bpftool_progs()
    res = {}
    if timed:
        for k in sp:
            d = [y - x for x, y in zip(ta[k], B.percpu_map_sum(ids[k], "unwind_timing", fields))]
            res[k + "_uwalk"] = (d[2] - d[3]) / d[0] / 1e3 if d[0] else None
            c = [y - x for x, y in zip(ca[k], B.percpu_map_sum(ids[k], "ctx_timing", cfields))]
            res[k + "_ctx"] = (c[1] - c[2]) / c[0] / 1e3 if c[0] else None
    for k, i in ids.items():
        ns0, c0 = B.sum_stats(a, i)
        ns1, c1 = B.sum_stats(b, i)
        res[k] = (ns1 - ns0) / (c1 - c0) / 1e3 if c1 > c0 else None
        res[k + "_n"] = c1 - c0
    for k, p in sp.items():
        # a loaded machine can take a minute or more to write the profile
        if p.wait(dur + 300) != 0:
            B.die(f"spanprof record ({k}) failed")
        u = json.load(open(js[k]))["unwind"]
        res[k + "_depth"] = u["frames"] / u["walked"] if u["walked"] else 0
    floor.send_signal(signal.SIGINT)
    out, _ = floor.communicate(timeout=30)
    for line in out.splitlines():
        w = line.split()    # NAME samples N frames M
        if len(w) == 5 and int(w[2]):
            res[w[0] + "_depth"] = int(w[4]) / int(w[2])
    for _, p in bts:
        B.stop(p, signal.SIGINT)
    B.stop(load)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", "-d", type=int, default=15)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--timed", action="store_true",
                    help="spanprof also times its user-stack walk and context read")
    ap.add_argument("--pid", action="store_true",
                    help="spanprof record -p LOAD and the floor likewise: only the load's "
                    "samples are walked (on a shared machine, the same stacks for all)")
    ap.add_argument("--bpftrace", action="store_true",
                    help="also the kernel's walkers through bpftrace")
    ap.add_argument("--build-b", help="another build directory (e.g. main's) whose spanprof "
                    "runs beside this one: dwarf_b, fp_b")
    ap.add_argument("--ucopy", type=lambda v: [x for x in v.split(",") if x], default=[],
                    help="SPANPROF_BENCH_UCOPY values (BYTES[xSLOTS]), two more instances each")
    args = ap.parse_args()
    add_instances(args)
    B.require(["bpftool", "clang"] + (["bpftrace"] if args.bpftrace else []))
    if not os.access(FP_FLOOR, os.X_OK):
        B.die(f"{FP_FLOOR} missing: run `make -j2` first")
    load_bin = B.build_load()
    print(f"# bpf_floor: {B.machine()}; D={args.duration} s, {args.reps} repetitions, 97 Hz, "
          "all programs attached together on bench/load_mixed (frame pointers, 2 threads)" +
          ("; only the load's samples walked (-p)" if args.pid else "; record -a"))
    names = [k for k, _, _, _ in SPANPROFS] + list(FLOORS) + \
        ([n for n, _ in BPFTRACE] if args.bpftrace else [])
    runs = []
    for rep in range(args.reps):
        r = one(load_bin, args.duration, args.timed, args.bpftrace, args.pid)
        runs.append(r)
        line = "  ".join(f"{k} {B.fmt(r[k])} (n={r[k + '_n']})" for k in names)
        depth = "  ".join(f"{k} {r[k + '_depth']:.1f}" for k in names
                          if k + "_depth" in r)
        ratio = "  ".join(f"{k}/fp_walk {B.fmt(r[k] / r['fp_walk'])}" for k, _, _, _ in SPANPROFS
                          if r[k] and r["fp_walk"])
        print(f"  rep {rep + 1}: us/sample {line}\n         user frames/sample {depth}\n"
              f"         {ratio}", flush=True)
        if args.timed:
            print("         timed: " + "  ".join(
                f"{k} walk {B.fmt(r[k + '_uwalk'])} ctx {B.fmt(r[k + '_ctx'])}"
                for k, _, _, _ in SPANPROFS), flush=True)
    print()
    rows = []
    for k in names:
        v = [r[k] for r in runs if r[k]]
        ratio = [r["dwarf"] / r[k] for r in runs if r[k] and r["dwarf"]]
        ratio_fp = [r["fp"] / r[k] for r in runs if r[k] and r["fp"]]
        rows.append([k, B.fmt(B.median(v)), f"{B.fmt(min(v))}..{B.fmt(max(v))}" if v else "-",
                     B.fmt(B.median([r.get(k + "_depth") for r in runs]), 1)
                     if k + "_depth" in runs[0] else "",
                     B.fmt(B.median(ratio)), B.fmt(B.median(ratio_fp))])
    B.table(["program", "us/sample median", "spread", "user frames",
             "dwarf / it (same run, median)", "fp / it"], rows)
    for k, _, _, _ in SPANPROFS:
        rat = [r[k] / r["fp_walk"] for r in runs if r[k] and r["fp_walk"]]
        if rat:
            print(f"goal {k} <= 2x fp_walk: {B.fmt(B.median(rat))}x median "
                  f"({B.fmt(min(rat))}..{B.fmt(max(rat))}): "
                  f"{'met' if B.median(rat) <= 2 else 'NOT met'}")
    if args.timed:
        for k, _, _, _ in SPANPROFS:
            print(f"{k} timed (median us): walk {B.fmt(B.median([r[k + '_uwalk'] for r in runs]))} "
                  f"ctx {B.fmt(B.median([r[k + '_ctx'] for r in runs]))}")


if __name__ == "__main__":
    with B.BpfStats():
        main()
