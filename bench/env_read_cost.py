#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""env_read_cost.py - what reading each new process's environment costs the
agent on a busy host (issue 16): /proc/PID/environ, read once per process
image for OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES (procs/proc_env.h).

The load: a spawner execs RATE short-lived processes a second (/bin/sleep
0.05, so each is alive when the agent reads it) with a realistic
environment - about 3 KiB of ordinary variables like a login shell's, plus
OTEL_SERVICE_NAME and an OTEL_RESOURCE_ATTRIBUTES of 4 entries - while
bench/load_mixed keeps both CPUs busy (2 threads), so every exec competes
for CPU as on a loaded node.

Phases, one after another on a fresh agent each (same load, same rate):
  env     spanprof agent -F 97 (reads every new image's environment)
  noenv   spanprof agent -F 97 --no-process-env (reads none)
  perf    perf record -F 97 -g -a (the peer: what a whole-system sampler
          pays for the same churn; it reads no environment)
and, with --phases (issue 17: what the unwinder adds per new process):
  fp      spanprof agent -F 97 --unwind fp (no unwinder: no tables, no
          ranges, no re-reads for it)
  eager   spanprof agent -F 97 --unwind-build eager (every mapped file's
          table built at once; the agent's default is lazy)
For every spanprof phase the CPU is also split by thread name (schedstat
of /proc/PID/task/TID, comm): consumer, sp-unwind (the table builder),
helpers.
CPU: schedstat of every collector thread (ns on CPU), over the window from
STEADY_FROM s after start to 1 s before the end; processes: the execs the
spawner made in that window.  The agent's own counters
(spanprof_process_env_total: read, declared, unreadable) say the reads
happened.

  us/process   = window CPU ns / execs in the window / 1000
  env - noenv  = the environment read's cost per new process
  ratio        = each collector's us/process over perf's

Run as root from the repository root, after `make -j2`, under the shared
lock: flock /tmp/spanprof-heavy.lock python3 bench/env_read_cost.py
  [--duration 20] [--rate 100] [--reps 3] [--phases env,noenv,perf,fp,eager]
Takes about REPS x 3 x (D + 6) s.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402
from collector_cpu import sched_ns  # noqa: E402

STEADY_FROM = 4.0
METRICS = "127.0.0.1:19467"


def child_env():
    """~3 KiB of a login shell's kind of variables and the OTel two."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": "/home/app", "LANG": "C.UTF-8", "SHELL": "/bin/bash", "USER": "app",
           "LS_COLORS": "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:" * 12,
           "OTEL_SERVICE_NAME": "checkout",
           "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,team=payments,"
                                       "service.version=1.4.2,region=eu-west-1"}
    for i in range(24):
        env["APP_SETTING_%02d" % i] = "value-%02d-" % i + "x" * 48
    return env


class Spawner(threading.Thread):
    """execs /bin/sleep 0.05 at rate per second; counts them by time."""

    def __init__(self, rate):
        super().__init__(daemon=True)
        self.rate, self.stop_at, self.times = rate, None, []
        self.env = child_env()

    def run(self):
        step = 1.0 / self.rate
        nxt = time.monotonic()
        live = []
        while self.stop_at is None or time.monotonic() < self.stop_at:
            now = time.monotonic()
            if now < nxt:
                time.sleep(nxt - now)
            nxt += step
            live.append(subprocess.Popen(["/bin/sleep", "0.05"], env=self.env,
                                         stdout=subprocess.DEVNULL))
            self.times.append(time.monotonic())
            live = [p for p in live if p.poll() is None]
        for p in live:
            p.wait()

    def count(self, a, b):
        return sum(1 for t in self.times if a <= t < b)


def thread_ns(pid):
    """{thread name: ns on CPU} of pid's threads (schedstat); {} if gone."""
    out = {}
    for tid in glob.glob("/proc/%d/task/*" % pid):
        try:
            with open(tid + "/comm") as f:
                name = f.read().strip()
            with open(tid + "/schedstat") as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        out[name] = out.get(name, 0) + ns
    return out


def env_counters():
    try:
        with urllib.request.urlopen(f"http://{METRICS}/metrics", timeout=2) as r:
            txt = r.read().decode()
    except OSError:
        return {}
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r'^spanprof_process_env_total\{event="([a-z_]+)"\} (\d+)', txt, re.M)}


def run(load_bin, kind, dur, rate):
    load = B.spawn([load_bin, str(dur + 8), "2"])
    sp = Spawner(rate)
    od = os.path.join(B.WORK, "env-agent-" + kind)
    os.makedirs(od, exist_ok=True)
    if kind == "perf":
        argv = ["perf", "record", "-F", "97", "-g", "-a", "-q", "-o",
                os.path.join(B.WORK, "env-perf.data"), "--", "sleep", str(dur)]
    else:
        extra = {"noenv": ["--no-process-env"], "fp": ["--unwind", "fp"],
                 "eager": ["--unwind-build", "eager"]}.get(kind, [])
        argv = [B.SPANPROF, "agent", "-F", "97", "--interval", "5", "--output-dir", od, "-q",
                "--metrics-addr", METRICS] + extra
    t0 = time.monotonic()
    p = B.spawn(argv)
    if kind != "perf":
        B.wait_progs(p.pid, lambda x: True)
    sp.start()
    while time.monotonic() - t0 < STEADY_FROM:
        time.sleep(0.05)
    c_a, t_a, e_a = sched_ns(p.pid), time.monotonic(), env_counters()
    th_a = thread_ns(p.pid)
    while time.monotonic() - t0 < dur - 1.0:
        time.sleep(0.05)
    c_b, t_b, e_b = sched_ns(p.pid), time.monotonic(), env_counters()
    th_b = thread_ns(p.pid)
    sp.stop_at = time.monotonic()
    sp.join()
    if kind != "perf":
        B.stop(p)
    else:
        p.wait()
    B.stop(load)
    n = sp.count(t_a, t_b)
    ev = {k: e_b.get(k, 0) - e_a.get(k, 0) for k in e_b}
    if c_a is None or c_b is None or not n:
        B.die(f"{kind}: the collector exited early or nothing was spawned")
    threads = {k: (th_b[k] - th_a.get(k, 0)) / n / 1000.0 for k in th_b}
    return (c_b - c_a) / n / 1000.0, n, (c_b - c_a) / (t_b - t_a) / 1e7, ev, threads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--rate", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--phases", default="env,noenv,perf")
    a = ap.parse_args()
    phases = a.phases.split(",")
    if not all(k in ("env", "noenv", "perf", "fp", "eager") for k in phases):
        B.die("--phases: a comma-separated list of env, noenv, perf, fp, eager")
    B.require(["perf", "bpftool", "clang"])
    load_bin = B.build_load()
    print(B.machine())
    print(f"load: load_mixed 2 threads; churn: {a.rate} execs/s of /bin/sleep 0.05 with a "
          f"{sum(len(k) + len(v) + 2 for k, v in child_env().items())}-byte environment; "
          f"window {STEADY_FROM:.0f}..{a.duration - 1} s of {a.duration} s")
    res = {k: [] for k in phases}
    rows, trows = [], []
    for r in range(a.reps):
        for kind in phases:
            us, n, pct, ev, threads = run(load_bin, kind, a.duration, a.rate)
            res[kind].append(us)
            evs = " ".join(f"{k}={ev[k]}" for k in ("read", "declared", "unreadable")
                           if k in ev)
            rows.append([r + 1, kind, n, B.fmt(us, 1), B.fmt(pct, 2), evs or "-"])
            if kind != "perf":
                top = sorted(threads.items(), key=lambda kv: -kv[1])
                trows.append([r + 1, kind, " ".join(f"{k}={B.fmt(v, 1)}" for k, v in top
                                                    if v >= 0.05) or "-"])
    B.table(["rep", "collector", "execs", "us/process", "% of core", "env reads (window)"],
            rows)
    if trows:
        print()
        B.table(["rep", "collector", "us/process by thread"], trows)
    med = {k: B.median(v) for k, v in res.items()}
    print()
    B.table(["median", "us/process", "ratio to perf"],
            [[k, B.fmt(med[k], 1), B.fmt(med[k] / med["perf"], 2) if med.get("perf") else "-"]
             for k in phases])
    if "env" in res and "noenv" in res:
        diffs = [e - n for e, n in zip(res["env"], res["noenv"])]
        print(f"\nenvironment read per new process (env - noenv, per rep): "
              f"{', '.join(B.fmt(d, 1) for d in diffs)} us; median "
              f"{B.fmt(B.median(diffs), 1)} us")


if __name__ == "__main__":
    main()
