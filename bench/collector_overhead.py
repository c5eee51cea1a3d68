#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""collector_overhead.py - CPU cost of `spanprof record -a -F 97` next to
`perf record -F 97 -g -a`, on the same 2-busy-CPU load (issue 2,
"Benchmarks"; target: spanprof below 0.05% of machine CPU).

Load: bench/load_mixed with 2 threads (see bpf_cost.py).  The two collectors
run ONE AFTER THE OTHER on a fresh copy of the same load, each for D s: run
together, each one's sampling interrupts the other's (perf's in-kernel
callchain work lands on the load and on spanprof's BPF time), and they
would compete for the same 2 CPUs.

For each collector:
  CPU total     user+system CPU of the collector process from wait4's rusage
                at exit (start-up, BPF load and verification, final write
                included; perf: its start-up synthesis and build-id pass)
  CPU steady    utime+stime from /proc/PID/stat between 5 s after start and
                1 s before the end, scaled to D
  samples       spanprof: samples written (summary JSON, aggregator
                accepted); perf: "(N samples)" from perf record's last line
  BPF           spanprof only: run_time_ns of all its programs (sp_oncpu and
                the process tracepoints) from `bpftool prog show -j`, read
                every second; the last read scaled to D.  perf's kernel-side
                cost (callchain unwinding, writing its ring buffer) is in no
                counter here and is NOT included in its figures.
  overhead      (collector CPU + BPF run time) / (D x nCPU), % of machine CPU
  peak RSS      ru_maxrss from wait4 at exit (the final write included)

Run as root from the repository root, after `make -j2`:
  python3 bench/collector_overhead.py [--duration 60] [--spanprof-arg=--unwind --spanprof-arg=fp]
Takes about 2 x (D + 5) s.  --spanprof-arg (repeatable) passes an option
to spanprof record (issue 12 compares the default .eh_frame unwinding
with --unwind fp this way).
"""
import argparse
import os
import re
import sys
import time
import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

STEADY_FROM = 5.0


def run(load_bin, dur, argv, want_bpf):
    load = B.spawn([load_bin, str(dur + 8), "2"])
    time.sleep(0.5)
    errf = open(os.path.join(B.WORK, "collector.err"), "w+")
    t0 = time.monotonic()
    p = B.spawn(argv, err=errf)
    ids = B.wait_progs(p.pid, lambda x: True) if want_bpf else set()
    cpu_a = cpu_b = None
    t_a = t_b = None
    bpf_last = (0, 0)
    t_bpf = None
    while True:
        now = time.monotonic() - t0
        if now >= dur - 1.0:
            break
        if want_bpf:
            ids |= B.prog_ids(p.pid)
            bpf_last = B.sum_stats(B.bpftool_progs(), ids)
            t_bpf = time.monotonic() - t0
        if cpu_a is None and now >= STEADY_FROM:
            cpu_a, t_a = B.proc_cpu_ns(p.pid), now
        time.sleep(1.0)
    cpu_b, t_b = B.proc_cpu_ns(p.pid), time.monotonic() - t0
    rc, cpu_total, maxrss_kib, _ = B.reap(p)
    if rc != 0:
        errf.seek(0)
        B.die(f"{argv[0]} exited {rc}: {errf.read()[-500:]}")
    B.stop(load)
    errf.seek(0)
    err = errf.read()
    r = {"cpu_total_ns": cpu_total,
         "cpu_steady_ns": (cpu_b - cpu_a) * dur / (t_b - t_a) if cpu_a is not None else None,
         "bpf_ns": bpf_last[0] * dur / t_bpf if t_bpf else 0,
         "bpf_runs": bpf_last[1], "err": err, "maxrss_kib": maxrss_kib}
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", "-d", type=int, default=60)
    ap.add_argument("--spanprof-arg", action="append", default=[],
                    help="extra option for spanprof record (repeatable)")
    args = ap.parse_args()
    D = args.duration
    B.require(["bpftool", "perf", "clang"])
    load_bin = B.build_load()
    print(f"# collector_overhead: {B.machine()}; D={D} s, 97 Hz, sequential runs; spanprof "
          f"options: {' '.join(args.spanprof_arg) or '(defaults)'}")
    sj = os.path.join(B.WORK, "overhead.json")
    with B.BpfStats():
        sp = run(load_bin, D, [B.SPANPROF, "record", "-a", "-F", "97", "-d", str(D),
                               "--no-report", "-q", "-o", os.path.join(B.WORK, "overhead.pb.gz"),
                               "--summary-json", sj, *args.spanprof_arg], True)
    summ = json.load(open(sj))
    sp["samples"] = summ["aggregator"]["accepted"]
    perf_data = os.path.join(B.WORK, "perf.data")
    pf = run(load_bin, D, ["perf", "record", "-F", "97", "-g", "-a", "-o", perf_data,
                           "--", "sleep", str(D)], False)
    m = re.search(r"\((\d+) samples\)", pf["err"])
    pf["samples"] = int(m.group(1)) if m else None
    pf["perf_data_bytes"] = os.path.getsize(perf_data)

    machine_ns = D * B.NCPU * 1e9
    rows = []
    res = {}
    for name, r in (("spanprof record", sp), ("perf record -g", pf)):
        n = r["samples"] or 0
        tot = r["cpu_total_ns"] + r["bpf_ns"]
        st = (r["cpu_steady_ns"] or 0) + r["bpf_ns"]
        res[name] = (tot, st, n)
        rows.append([name, n, B.fmt(r["cpu_total_ns"] / 1e6, 1),
                     B.fmt(r["cpu_steady_ns"] / 1e6, 1) if r["cpu_steady_ns"] is not None else "-",
                     B.fmt(r["cpu_total_ns"] / n / 1e3, 1) if n else "-",
                     B.fmt(r["cpu_steady_ns"] / n / 1e3, 1) if n and r["cpu_steady_ns"] else "-",
                     B.fmt(r["bpf_ns"] / 1e6, 1) if r["bpf_ns"] else "n/a",
                     B.fmt(100 * tot / machine_ns, 3), B.fmt(100 * st / machine_ns, 3),
                     B.fmt(r["maxrss_kib"] / 1024, 1)])
    print()
    B.table(["collector", "samples", "CPU ms", "CPU ms steady", "CPU us/sample",
             "steady us/sample", "BPF ms", "overhead %", "steady overhead %", "peak RSS MiB"], rows)
    print(f"\nperf.data: {pf['perf_data_bytes'] / 1e6:.1f} MB; perf's in-kernel callchain/"
          "ring-buffer cost is not counted (no BPF stats for it)")
    a, b = res["spanprof record"], res["perf record -g"]
    steady = (f"{sp['cpu_steady_ns'] / pf['cpu_steady_ns']:.2f}"
              if sp["cpu_steady_ns"] and pf["cpu_steady_ns"] else
              "- (perf below the 1/CLK_TCK resolution)")
    print(f"ratio spanprof/perf (collector CPU only): total "
          f"{sp['cpu_total_ns'] / pf['cpu_total_ns']:.2f}, steady {steady}")
    pct = 100 * a[0] / machine_ns
    print(f"target spanprof < 0.05% of machine CPU: {pct:.3f}% (steady "
          f"{100 * a[1] / machine_ns:.3f}%) -> {'met' if pct < 0.05 else 'NOT met'}; "
          f"BPF share {100 * sp['bpf_ns'] / a[0]:.0f}%")


if __name__ == "__main__":
    main()
