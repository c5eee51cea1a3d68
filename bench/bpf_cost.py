#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bpf_cost.py - in-kernel cost per sample of spanprof's on-CPU BPF program
(sp_oncpu) next to bpftrace's profile program, on the same load in the same
run (issue 2, "Benchmarks"; target: spanprof <= 1/4 of bpftrace).

Load: bench/load_mixed (2 threads = 2 busy CPUs on this machine; user stacks
of 10..30 frames; about a fifth of its CPU time in the kernel reading
/dev/zero and writing /dev/null under the deep user stack).

With kernel.bpf_stats_enabled=1 (restored afterwards), per repetition:
  both       spanprof record -a -F 97 -d D --no-report  and
             bpftrace -e 'profile:hz:97 { @[kstack, ustack, tid] = count(); }'
             concurrently, for the same D seconds
  sp alone   spanprof record alone
  sp nokern  spanprof record --no-kernel alone
  bt alone   bpftrace alone
Each process's programs are found by the prog_id lines in /proc/PID/fdinfo;
run_time_ns and run_cnt come from `bpftool prog show -j`, read twice inside
the run (1 s after both are attached, and 1 s before the end), so start-up
and exit are not in the figure.  ns/sample = delta run_time_ns / delta
run_cnt.  Repeats REPS times and prints medians, and the ratio spanprof /
bpftrace per repetition (same run) and of the medians.

Run as root from the repository root, after `make -j2`:
  python3 bench/bpf_cost.py [--duration 10] [--reps 3]
Takes about REPS x 4 x (D + 3) s (~2.5 min at the defaults).
"""
import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

BT_PROG = "profile:hz:97 { @[kstack, ustack, tid] = count(); }"


def is_oncpu(p):
    return p["name"] == "sp_oncpu"


def is_perf_event(p):
    return p["type"] == "perf_event"


def phase(load_bin, dur, with_sp, with_bt, sp_flags=()):
    """One measurement; returns {'sp': (ns, cnt), 'bt': (ns, cnt), 'load': ...}."""
    load = B.spawn([load_bin, str(dur + 4), "2"])
    time.sleep(0.5)
    t0 = time.monotonic()
    sp = bt = None
    if with_sp:
        sp = B.spawn([B.SPANPROF, "record", "-a", "-F", "97", "-d", str(dur),
                      "--no-report", "-q", "-o", os.path.join(B.WORK, "bpfcost.pb.gz"),
                      *sp_flags])
    if with_bt:
        bt = B.spawn(["bpftrace", "-e", BT_PROG])
    sp_ids = B.wait_progs(sp.pid, is_oncpu) if sp else set()
    bt_ids = B.wait_progs(bt.pid, is_perf_event) if bt else set()
    time.sleep(1.0)
    a = B.bpftool_progs()
    t_a = time.monotonic()
    end = t0 + dur - 1.0
    if end - t_a < 3:
        B.die(f"duration {dur} s too short: programs attached {t_a - t0:.1f} s after start")
    time.sleep(end - t_a)
    b = B.bpftool_progs()
    res = {"window_s": time.monotonic() - t_a}
    for key, ids in (("sp", sp_ids), ("bt", bt_ids)):
        if ids:
            ns0, c0 = B.sum_stats(a, ids)
            ns1, c1 = B.sum_stats(b, ids)
            res[key] = (ns1 - ns0, c1 - c0)
    if sp:
        rc = sp.wait(dur + 60)
        if rc != 0:
            B.die(f"spanprof record exited {rc}")
    if bt:
        B.stop(bt, signal.SIGINT)
    _, cpu_ns, _, sys_ns = B.reap(load)
    res["load_sys_share"] = sys_ns / cpu_ns if cpu_ns else None
    return res


def per_sample(r, key):
    if key not in r or r[key][1] <= 0:
        return None
    ns, cnt = r[key]
    return ns / cnt / 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", "-d", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    B.require(["bpftool", "bpftrace", "clang"])
    load_bin = B.build_load()
    print(f"# bpf_cost: {B.machine()}; D={args.duration} s, {args.reps} repetitions, 97 Hz")
    phases = [("both", True, True, ()), ("sp alone", True, False, ()),
              ("sp --no-kernel", True, False, ("--no-kernel",)),
              ("bt alone", False, True, ())]
    rows = {name: [] for name, *_ in phases}
    with B.BpfStats():
        for rep in range(args.reps):
            for name, ws, wb, fl in phases:
                r = phase(load_bin, args.duration, ws, wb, fl)
                rows[name].append(r)
                sp, bt = per_sample(r, "sp"), per_sample(r, "bt")
                print(f"  rep {rep + 1} {name:15s} sp_oncpu {B.fmt(sp)} us/sample "
                      f"(n={r.get('sp', (0, 0))[1]})  bpftrace {B.fmt(bt)} us/sample "
                      f"(n={r.get('bt', (0, 0))[1]})"
                      + (f"  ratio sp/bt {sp / bt:.2f}" if sp and bt else "")
                      + f"  (load: {100 * (r['load_sys_share'] or 0):.0f}% system time)",
                      flush=True)

    def med(name, key):
        return B.median([per_sample(r, key) for r in rows[name]])

    bt_both = med("both", "bt")
    bt_alone = med("bt alone", "bt")
    out = []
    for name, ws, wb, _ in phases:
        spm = med(name, "sp") if ws else None
        btm = med(name, "bt") if wb else None
        same_run = B.median([per_sample(r, "sp") / per_sample(r, "bt") for r in rows[name]
                             if per_sample(r, "sp") and per_sample(r, "bt")])
        ref = bt_both if name == "both" else bt_alone
        ratio = spm / ref if spm and ref else None
        out.append([name, B.fmt(spm), B.fmt(btm),
                    B.fmt(same_run) if same_run else "-",
                    B.fmt(ratio) if ratio else "-"])
    print()
    print("median us per sample (run_time_ns / run_cnt over the steady-state window)")
    B.table(["phase", "sp_oncpu us", "bpftrace us", "sp/bt same run",
             "sp/bt (bt: both|alone median)"], out)
    spm = med("both", "sp")
    if spm and bt_both:
        verdict = "met" if spm <= bt_both / 4 else "NOT met"
        print(f"\ntarget spanprof <= 1/4 of bpftrace (same run): ratio {spm / bt_both:.2f} "
              f"-> {verdict}")


if __name__ == "__main__":
    main()
