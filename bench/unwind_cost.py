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

With --build-b DIR (another build's directory, e.g. main's), that build's
spanprof runs beside this one in the same repetitions (dwarf_b, fp_b):
the A/B of a change in the same run.  With --ucopy V[,V...], also one more
default-mode instance of this build per V with SPANPROF_BENCH_UCOPY=V (the
user-stack copy's chunk bytes and slots, BYTES[xSLOTS], 0 = off; see
bpf/unwind.bpf.h "Stack copy"), named dwarf_uc<V>; with --ucopy-fp also
an --unwind fp instance per V (fp_uc<V>).  --no-bpftrace leaves bpftrace out.

Run as root from the repository root, after `make -j2`:
  python3 bench/unwind_cost.py [--duration 12] [--reps 3] [--load fp] [--build-b DIR]
      [--ucopy 0,512,1024x2] [--ucopy-fp] [--no-bpftrace]
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


def instances(args):
    """(name, spanprof binary, extra flags, extra environment) per instance."""
    out = [("dwarf", B.SPANPROF, [], {}), ("fp", B.SPANPROF, ["--unwind", "fp"], {})]
    if args.build_b:
        sb = os.path.join(args.build_b, "spanprof")
        out += [("dwarf_b", sb, [], {}), ("fp_b", sb, ["--unwind", "fp"], {})]
    for v in args.ucopy:
        out.append((f"dwarf_uc{v}", B.SPANPROF, [], {"SPANPROF_BENCH_UCOPY": v}))
        if args.ucopy_fp:
            out.append((f"fp_uc{v}", B.SPANPROF, ["--unwind", "fp"], {"SPANPROF_BENCH_UCOPY": v}))
    return out


def one_run(load_bin, dur, plain, insts, bpftrace, depth=40):
    load = B.spawn([load_bin, str(dur + 4), "2", str(depth)] + (["plain"] if plain else []))
    time.sleep(0.5)
    t0 = time.monotonic()
    js, sp = {}, {}
    for k, binary, flags, extra in insts:
        js[k] = os.path.join(B.WORK, "unwcost-%s.json" % k)
        env = dict(os.environ, SPANPROF_BENCH_UNWIND_TIMING="1", **extra)
        sp[k] = B.spawn([binary, "record", "-a", "-F", "97", "-d", str(dur), "--no-report", "-q",
                         "-o", os.path.join(B.WORK, "unwcost-%s.pb.gz" % k), *flags,
                         "--summary-json", js[k]], env=env)
    bt = B.spawn(["bpftrace", "-e", BT_PROG]) if bpftrace else None
    ids = {k: B.wait_progs(p.pid, is_oncpu) for k, p in sp.items()}
    if bt:
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
        if p.wait(dur + 120) != 0:
            B.die(f"spanprof record ({k}) failed")
        j = json.load(open(js[k]))
        u = j["unwind"]
        res[k + "_depth"] = u["frames"] / u["walked"] if u["walked"] else 0
        res[k + "_root"] = 100.0 * u["root"] / u["walked"] if u["walked"] else 0
    if bt:
        B.stop(bt, signal.SIGINT)
    B.reap(load)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", "-d", type=int, default=12)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--load", choices=("nofp", "fp"), default="nofp",
                    help="load_deep without frame pointers (default) or with them")
    ap.add_argument("--build-b", help="another build directory whose spanprof runs beside")
    ap.add_argument("--ucopy", type=lambda v: [x for x in v.split(",") if x], default=[],
                    help="SPANPROF_BENCH_UCOPY values, one more dwarf instance each")
    ap.add_argument("--ucopy-fp", action="store_true", help="and one --unwind fp instance each")
    ap.add_argument("--no-bpftrace", action="store_true")
    ap.add_argument("--depth", type=int, default=40, help="recursion levels of the load (default 40)")
    ap.add_argument("--plain", action="store_true", help="the bottom of the recursion spins (no libc qsort) also without frame pointers")
    args = ap.parse_args()
    B.require(["bpftool", "gcc"] + ([] if args.no_bpftrace else ["bpftrace"]))
    if args.build_b and not os.access(os.path.join(args.build_b, "spanprof"), os.X_OK):
        B.die(f"{args.build_b}/spanprof missing")
    insts = instances(args)
    names = [k for k, _, _, _ in insts]
    load_bin = build_load(args.load == "fp")
    print(f"# unwind_cost: {B.machine()}; D={args.duration} s, {args.reps} repetitions, 97 Hz, "
          f"{len(insts) + (0 if args.no_bpftrace else 1)} samplers at once on load_deep (2 threads, "
          f"~55 frames, {'frame pointers' if args.load == 'fp' else 'no frame pointers'})"
          + (f"; B = {args.build_b}" if args.build_b else ""))
    rows = []
    with B.BpfStats():
        for rep in range(args.reps):
            r = one_run(load_bin, args.duration, args.load == "fp" or args.plain, insts, not args.no_bpftrace, args.depth)
            rows.append(r)
            print(f"  rep {rep + 1}:", flush=True)
            for k in names:
                print(f"    {k:14s} {B.fmt(r[k][0])} us/sample (n={r[k][1]}, {r[k + '_depth']:.1f} "
                      f"user frames, {r[k + '_root']:.1f}% root); walk {B.fmt(r[k + '_walk_us'])} us "
                      f"= {B.fmt(r[k + '_walk_frame_ns'], 0)} ns/frame", flush=True)
            if not args.no_bpftrace:
                print(f"    bpftrace       {B.fmt(r['bpftrace'][0])} us/sample (n={r['bpftrace'][1]})")
    print()
    tab = []
    for k in names + ([] if args.no_bpftrace else ["bpftrace"]):
        v = [r[k][0] for r in rows if r[k][0]]
        walk = [r[k + "_walk_frame_ns"] for r in rows if r.get(k + "_walk_frame_ns")]
        tab.append([k, B.fmt(B.median(v)), f"{B.fmt(min(v))}..{B.fmt(max(v))}" if v else "-",
                    B.fmt(B.median([r[k][0] / r["fp"][0] for r in rows if r[k][0] and r["fp"][0]])),
                    B.fmt(B.median([r[k + "_depth"] for r in rows]), 1) if k != "bpftrace" else "",
                    B.fmt(B.median(walk), 0) if walk else ""])
    B.table(["program", "us/sample median", "spread", "/ fp (same run)", "user frames",
             "walk ns/frame"], tab)
    ratio_fp = B.median([r["dwarf"][0] / r["fp"][0] for r in rows])
    line = f"same-run ratios (median): dwarf/fp {ratio_fp:.2f} (target <= 2)"
    if not args.no_bpftrace:
        line += f", dwarf/bpftrace {B.median([r['dwarf'][0] / r['bpftrace'][0] for r in rows]):.2f} (target < 1)"
    if args.build_b:
        for k in ("dwarf", "fp"):
            line += f", {k}/{k}_b {B.median([r[k][0] / r[k + '_b'][0] for r in rows]):.2f}"
    print(line)


if __name__ == "__main__":
    main()
