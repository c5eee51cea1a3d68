#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""record_latency.py - what a profile of a short command costs in wall time,
spanprof record against perf record and bpftrace, on the same command.

Each tool profiles `true` (the fixed cost: set-up, attach, detach, the
written profile) and a 1 s busy loop (the same plus one second: what is
left over is the tool's own start and stop), --reps times, alternated so
that the machine's load falls on every tool alike; the medians and the
ratios to perf are printed.  spanprof's default includes its report (the
symbolizer run that prints the top functions and writes the flame graph),
which perf record does not do (`perf report` is a second command): the
`--no-report` row is the like-for-like one.

  sudo python3 bench/record_latency.py [--reps 7] [--freq 97]

Needs perf (linux-perf) and bpftrace (`bash scripts/deps.sh --with-bench`).
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

BUSY = "import time\nend = time.time() + 1\nwhile time.time() < end: pass\n"


def tools(freq, out):
    return {
        "spanprof": [bl.SPANPROF, "record", "-q", "-F", str(freq), "-o", out + ".pb.gz", "--"],
        "spanprof --no-report": [bl.SPANPROF, "record", "-q", "--no-report", "-F", str(freq),
                                 "-o", out + ".pb.gz", "--"],
        "perf": ["perf", "record", "-q", "-g", "-F", str(freq), "-o", out + ".data", "--"],
        "bpftrace": ["bpftrace", "-q", "-e",
                     "profile:hz:%d /pid == cpid/ { @[ustack, kstack] = count(); }" % freq,
                     "-c"],
    }


def run_once(argv, cmd):
    # bpftrace's -c takes the command as one string; the others as argv
    full = argv + [" ".join(cmd)] if argv[-1] == "-c" else argv + cmd
    t0 = time.monotonic()
    p = subprocess.run(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    dt = time.monotonic() - t0
    if p.returncode:
        bl.die("%s failed (rc %d): %s" % (full[0], p.returncode, p.stderr.decode()[-300:]))
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--freq", type=int, default=97)
    a = ap.parse_args()
    bl.require(["perf", "bpftrace"])
    out = os.path.join(bl.WORK, "latency")
    busy = os.path.join(bl.WORK, "busy1s.py")
    with open(busy, "w") as f:
        f.write(BUSY)
    # absolute paths: bpftrace's -c refuses a name that PATH resolves twice
    cmds = {"true": ["/usr/bin/true"], "busy 1 s": [sys.executable, busy]}
    ts = tools(a.freq, out)
    res = {(t, c): [] for t in ts for c in cmds}
    for _ in range(a.reps):
        for c, cmd in cmds.items():
            for t, argv in ts.items():
                res[(t, c)].append(run_once(argv, cmd))
    print(bl.machine())
    rows = []
    for c in cmds:
        base = bl.median(res[("perf", c)])
        for t in ts:
            m = bl.median(res[(t, c)])
            rows.append([c, t, bl.fmt(m, 3), bl.fmt(min(res[(t, c)]), 3),
                         bl.fmt(m / base, 2) + "x"])
    bl.table(["command", "tool", "median s", "min s", "vs perf"], rows)


if __name__ == "__main__":
    main()
