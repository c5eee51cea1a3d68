#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""collector_cpu.py - user-space CPU per sample of the collector in steady
state, from schedstat (issue 17): spanprof record -a -F 97, spanprof agent
-F 97, and perf record -F 97 -g -a as the peer, one after another on a fresh
copy of the same load (bench/load_mixed, 2 threads: both CPUs busy).

CPU time: the first field of /proc/PID/task/TID/schedstat (ns on CPU,
nanosecond resolution, unlike /proc/PID/stat's 10 ms ticks), summed over
the process's threads, read at STEADY_FROM s after start and 1 s before the
end: start-up (BPF load, kernel symbol snapshot) and the final write are
outside the window.  Samples in the same window: the agent's
spanprof_samples_received_total from its /metrics, read at the same two
moments; record's received samples (summary JSON) times window / duration
(samples arrive at a steady 97 Hz per busy CPU); perf's "(N samples)"
likewise.  The collectors' BPF or in-kernel time is not in these figures
(bpf_cost.py measures it): this is what the process itself spends.

  us/sample  = window CPU ns / window samples / 1000
  % of core  = window CPU ns / window ns * 100

With --self-profile, each spanprof collector is also sampled by a second
spanprof record -p PID -F 997 for the window, and its top functions are
printed (spanprof-symbolizer report --top): where the collector's own time
goes.

With --threads, each spanprof thread's CPU time and timeslices (about
its wakeups: on a VM a wakeup alone costs tens of microseconds) in the
window are printed too.

With --churn N, a busy host's process churn runs beside the load in every
run: N times a second `sh -c 'echo a | sed s/a/b/ | cat'` (four short
images, almost never sampled at 97 Hz), and 4 times a second
build/fixtures/shortlived burning 20-50 ms of CPU (sampled: 2-5 samples
each).  For record runs the summary's process counters (maps reads, exec
reads deferred/read at the first sample/never needed, samples of processes
gone before their maps were read) and the shortlived fixture's resolution
(the share of its samples whose root frame, and whose every user frame,
has a mapping) are printed: what a cheaper collector must not lose.
--kinds picks the runs (record-eager and agent-eager: --exec-maps eager,
each image's maps read at its exec event, as before lazy reads).

Run as root from the repository root, after `make -j2`, under the shared
lock: flock /tmp/spanprof-heavy.lock python3 bench/collector_cpu.py
  [--duration 30] [--reps 3] [--self-profile] [--threads] [--churn 40]
  [--kinds record,record-eager,agent,agent-eager,perf]
Takes about REPS x 3 x (D + 4) s.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

STEADY_FROM = 5.0
METRICS = "127.0.0.1:19464"


def sched_ns(pid):
    """ns on CPU of every thread of pid (schedstat), or None once gone."""
    tot = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(f) as fh:
                tot += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return tot if os.path.exists(f"/proc/{pid}") else None


def thread_stats(pid):
    """{tid: (comm, ns on CPU, timeslices)} of pid's threads (schedstat)."""
    out = {}
    for d in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(d + "/comm") as fh:
                comm = fh.read().strip()
            with open(d + "/schedstat") as fh:
                f = fh.read().split()
            out[os.path.basename(d)] = (comm, int(f[0]), int(f[2]))
        except (OSError, ValueError, IndexError):
            pass
    return out


def print_threads(kind, a, b, win):
    """Each thread's CPU and timeslices (about its wakeups) in the window."""
    print(f"## {kind}: threads in the {win:.1f} s window (schedstat)")
    print(f"{'tid':>8}  {'thread':<16} {'CPU ms':>8} {'slices':>7} {'us/slice':>9}")
    for tid in sorted(b, key=lambda t: -(b[t][1] - a.get(t, (None, 0, 0))[1])):
        comm, ns, sl = b[tid]
        ns -= a.get(tid, (None, 0, 0))[1]
        sl -= a.get(tid, (None, 0, 0))[2]
        print(f"{tid:>8}  {comm:<16} {ns / 1e6:8.2f} {sl:7d} {ns / 1e3 / sl if sl else 0:9.1f}")


def received():
    try:
        with urllib.request.urlopen(f"http://{METRICS}/metrics", timeout=2) as r:
            txt = r.read().decode()
    except OSError:
        return None
    m = re.search(r"^spanprof_samples_received_total(?:\{[^}]*\})? (\d+)", txt, re.M)
    return int(m.group(1)) if m else None


def self_profile(pid, secs):
    out = os.path.join(B.WORK, f"self-{pid}.pb.gz")
    p = B.spawn([B.SPANPROF, "record", "-p", str(pid), "-F", "997", "-d", str(int(secs)),
                 "--no-report", "-q", "-o", out])
    return p, out


CHURN_SH = r"""
end=$(( $(date +%s) + {dur} ))
while [ "$(date +%s)" -lt "$end" ]; do
  i=0
  while [ $i -lt {rate} ]; do sh -c 'echo a | sed s/a/b/ | cat >/dev/null'; i=$((i+1)); done
  j=0
  while [ $j -lt 4 ]; do {fixture} $((20 + (i * 7 + j * 11) % 31)); j=$((j+1)); done
  sleep 0.5
done
"""


def start_churn(rate, dur):
    fixture = os.path.join(B.BUILD, "fixtures", "shortlived")
    if not os.access(fixture, os.X_OK):
        B.die(f"{fixture} missing: run `make -j2` first")
    return B.spawn(["bash", "-c", CHURN_SH.format(dur=dur, rate=rate, fixture=fixture)])


def fixture_resolution(pb):
    """(samples, root resolved, all user frames resolved) of the shortlived
    fixture's samples in the profile pb (a [vdso] leaf above kernel frames
    has no file and is not counted against)."""
    sys.path.insert(0, os.path.join(B.ROOT, "tests", "integration"))
    from spt import read_pprof  # noqa: E402
    p = read_pprof(pb)
    n = root = every = 0
    for smp in p["samples"]:
        if smp["labels"].get("thread_name") != "shortlived":
            continue
        ms = [p["mappings"].get(p["locations"][loc][0]) for loc in smp["locs"]]
        user = [m for m in ms if m is None or m["file"] != "[kernel.kallsyms]"]
        nk = len(ms) - len(user)
        n += 1
        root += bool(user) and user[-1] is not None
        every += all(m is not None for i, m in enumerate(user) if not (i == 0 and nk > 0))
    return n, root, every


def run(load_bin, dur, kind, prof, churn, threads=False):
    load = B.spawn([load_bin, str(dur + 8), "2"])
    ch = start_churn(churn, dur + 8) if churn else None
    time.sleep(0.5)
    errf = open(os.path.join(B.WORK, f"{kind}.err"), "w+")
    sj = os.path.join(B.WORK, "cpu-summary.json")
    eager = ["--exec-maps", "eager"] if kind.endswith("-eager") else []
    if kind.startswith("record"):
        argv = [B.SPANPROF, "record", "-a", "-F", "97", "-d", str(dur), "--no-report", "-q",
                "-o", os.path.join(B.WORK, "cpu.pb.gz"), "--summary-json", sj] + eager
    elif kind.startswith("agent"):
        od = os.path.join(B.WORK, "cpu-agent")
        os.makedirs(od, exist_ok=True)
        for f in glob.glob(os.path.join(od, "*")):
            # the agent leaves a syms/ directory of host symbols too
            shutil.rmtree(f) if os.path.isdir(f) else os.unlink(f)
        argv = [B.SPANPROF, "agent", "-F", "97", "--output-dir", od, "-q",
                "--metrics-addr", METRICS] + eager
    else:
        argv = ["perf", "record", "-F", "97", "-g", "-a", "-o",
                os.path.join(B.WORK, "perf.data"), "--", "sleep", str(dur)]
    t0 = time.monotonic()
    p = B.spawn(argv, err=errf)
    if kind != "perf":
        B.wait_progs(p.pid, lambda x: True)
    while time.monotonic() - t0 < STEADY_FROM:
        time.sleep(0.05)
    agent = kind.startswith("agent")
    th_a = thread_stats(p.pid) if threads else None
    c_a, t_a, r_a = sched_ns(p.pid), time.monotonic(), received() if agent else None
    sp = None
    if prof and kind != "perf":
        sp = self_profile(p.pid, dur - STEADY_FROM - 1.5)
    while time.monotonic() - t0 < dur - 1.0:
        time.sleep(0.05)
    c_b, t_b, r_b = sched_ns(p.pid), time.monotonic(), received() if agent else None
    if threads:
        print_threads(kind, th_a, thread_stats(p.pid), t_b - t_a)
    if agent:
        B.stop(p)
        rc = p.returncode
    else:
        rc = B.reap(p)[0]
    B.stop(load)
    if ch:
        B.stop(ch, signal.SIGKILL)
    errf.seek(0)
    err = errf.read()
    if rc != 0:
        B.die(f"{kind} exited {rc}: {err[-500:]}")
    win = t_b - t_a
    procs = res = None
    if agent:
        n = (r_b or 0) - (r_a or 0)
    elif kind.startswith("record"):
        j = json.load(open(sj))
        n = j["aggregator"]["accepted"] * win / dur
        procs = j["procs"]
        if churn:
            res = fixture_resolution(os.path.join(B.WORK, "cpu.pb.gz"))
    else:
        m = re.search(r"\((\d+) samples\)", err)
        n = int(m.group(1)) * win / dur if m else 0
    top = None
    if sp:
        B.reap(sp[0])
        top = subprocess.run([os.path.join(B.BUILD, "spanprof-symbolizer"), "report", sp[1],
                              "--top", "12", "--no-debuginfod", "--allow-root"],
                             capture_output=True, text=True).stdout
    return {"cpu_ns": c_b - c_a, "win_s": win, "samples": n, "top": top, "procs": procs,
            "res": res}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", "-d", type=int, default=30)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--self-profile", action="store_true")
    ap.add_argument("--threads", action="store_true",
                    help="print each spanprof thread's CPU and timeslices in the window")
    ap.add_argument("--churn", type=int, default=0, metavar="N",
                    help="N sh|sed|cat pipelines a second and 4 shortlived fixtures")
    ap.add_argument("--kinds", default="record,agent,perf",
                    help="comma-separated: record, record-eager, agent, agent-eager, perf")
    args = ap.parse_args()
    B.require(["bpftool", "perf", "clang"])
    os.makedirs(B.WORK, exist_ok=True)
    load_bin = B.build_load()
    print(f"# collector_cpu: {B.machine()}; D={args.duration} s, 97 Hz, schedstat, "
          f"window {STEADY_FROM:.0f} s .. D-1 s, sequential runs"
          + (f"; churn {args.churn} sh|sed|cat/s + 4 shortlived/s" if args.churn else ""))
    kinds = tuple(args.kinds.split(","))
    for k in kinds:
        if k not in ("record", "record-eager", "agent", "agent-eager", "perf"):
            B.die(f"--kinds: unknown {k}")
    prows = []
    res = {k: [] for k in kinds}
    rows = []
    for rep in range(args.reps):
        for k in kinds:
            r = run(load_bin, args.duration, k, args.self_profile and rep == 0, args.churn,
                    args.threads and k != "perf")
            res[k].append(r)
            us = r["cpu_ns"] / r["samples"] / 1e3 if r["samples"] else float("nan")
            pct = 100 * r["cpu_ns"] / (r["win_s"] * 1e9)
            rows.append([k, rep + 1, int(r["samples"]), B.fmt(r["cpu_ns"] / 1e6, 2),
                         B.fmt(us, 2), B.fmt(pct, 3)])
            if r["procs"]:
                pr, un = r["procs"], r["procs"].get("samples_unread", {})
                fx = r["res"]
                prows.append([k, rep + 1, pr["procs_seen"], pr["maps_reads"],
                              pr.get("exec_reads_deferred", 0), pr.get("exec_reads_on_sample", 0),
                              pr.get("exec_reads_saved", 0), pr.get("exec_reads_learned", 0),
                              pr["maps_gone"],
                              sum(un.values()) if un else 0,
                              f"{fx[0]}" if fx else "-",
                              B.fmt(100 * fx[1] / fx[0], 1) if fx and fx[0] else "-",
                              B.fmt(100 * fx[2] / fx[0], 1) if fx and fx[0] else "-"])
            if r["top"]:
                print(f"## {k}: its own top functions (spanprof record -p, 997 Hz)")
                print(r["top"])
    B.table(["collector", "rep", "samples", "CPU ms", "us/sample", "% of one core"], rows)
    print()
    if prows:
        B.table(["record", "rep", "processes", "maps reads", "exec deferred", "read at sample",
                 "never needed", "read at exec (learned)", "gone before read", "samples unread", "fixture samples",
                 "root resolved %", "all resolved %"], prows)
        print()
    med = {}
    for k in kinds:
        us = [r["cpu_ns"] / r["samples"] / 1e3 for r in res[k] if r["samples"]]
        pc = [100 * r["cpu_ns"] / (r["win_s"] * 1e9) for r in res[k]]
        med[k] = (B.median(us), B.median(pc))
        print(f"median {k}: {B.fmt(med[k][0], 2)} us/sample (spread {B.fmt(min(us), 2)}.."
              f"{B.fmt(max(us), 2)}), {B.fmt(med[k][1], 3)}% of one core "
              f"(spread {B.fmt(min(pc), 3)}..{B.fmt(max(pc), 3)})")
    for k in kinds:
        if k == "perf" or "perf" not in kinds:
            continue
        print(f"ratio {k}/perf: {B.fmt(med[k][0] / med['perf'][0], 2)}x us/sample "
              f"(targets: record <= 2 us/sample, agent <= 0.1% of one core)")


if __name__ == "__main__":
    main()
