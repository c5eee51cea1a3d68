#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""otlp_size.py - bytes per sample of spanprof's OTLP (compact and with
per-event timestamps) against pprof, gzip'd, on the same samples (issue 17).

  python3 bench/otlp_size.py [--duration 20] [--reps 3] [--agent-duration 25]

Per load and repetition, recordings with --timestamps (the form that holds
everything):
  record     `spanprof record -a -F 97 -d D --format otlp --timestamps`: one
             request for the whole recording (the machine's other processes
             included);
  record -p  the same with -p: the load's process only (low load only: its
             few stacks without the rest of the machine);
  agent   `spanprof agent --timestamps --output-dir DIR` at its defaults
          (19 Hz, 10 s intervals): one gzip'd request body per interval,
          exactly as sent.
Each OTLP request is then written in three forms by
`spanprof-symbolizer file --no-symbolize` (the same samples, decoded by
spanprof's decoder and re-encoded by its encoders):
  otlp+ts   as recorded (re-encoded: --timestamps output),
  otlp      --no-timestamps: what record and agent send by default,
  pprof     --format pprof (pprof carries no timestamps).
Each form is gzip'd by the symbolizer as its input was (zlib default level;
record's raw OTLP file is gzip'd here at level 6, the same level) and divided
by the samples (events) in the request.  Loads (all CPUs busy):
  busy  two compile loops (the system cc over src/profile and src/export,
        many short-lived processes, cc1 without frame pointers) and one
        python3 loop (json, hashlib);
  low   bench/load_mixed (2 threads, 64 call paths of 10..28 frames): few
        distinct stacks, many samples per stack.
Prints one row per (load, collector, repetition) and medians with the
spread; ratio = otlp / pprof of the same run.  Run as root under the
shared lock: flock /tmp/spanprof-heavy.lock python3 bench/otlp_size.py
"""
import argparse
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
import benchlib as B  # noqa: E402

sys.path.insert(0, os.path.join(B.ROOT, "tests", "integration"))
from lib.otlp import read_otlp  # noqa: E402

SYM = os.path.join(B.BUILD, "spanprof-symbolizer")


def busy_load(seconds):
    srcs = sorted(glob.glob(os.path.join(B.ROOT, "src", "profile", "*.c")) +
                  glob.glob(os.path.join(B.ROOT, "src", "export", "*.c")))
    incs = ["-I" + os.path.join(B.ROOT, d) for d in ("src", "include")] + \
        ["-I" + os.path.join(B.BUILD, "gen"), "-I" + B.BUILD]
    procs = []
    for j in range(2):
        obj = os.path.join(B.WORK, f"otlp_size_{j}.o")
        loop = "end=$((SECONDS+%d)); while [ $SECONDS -lt $end ]; do for f in %s; do " \
               "cc -O2 -D_GNU_SOURCE %s -c $f -o %s 2>/dev/null; " \
               "[ $SECONDS -lt $end ] || break; done; done" % (
                   seconds, " ".join(srcs), " ".join(incs), obj)
        procs.append(B.spawn(["bash", "-c", loop]))
    py = ("import time,json,hashlib\nt=time.time()+%d\nwhile time.time()<t:\n"
          " d={str(i):[i]*10 for i in range(2000)}; json.loads(json.dumps(d));"
          " hashlib.sha256(b'x'*100000).hexdigest()\n" % seconds)
    procs.append(B.spawn(["python3", "-c", py]))
    return procs


def low_load(seconds):
    return [B.spawn([B.build_load(), str(seconds), "2"])]


LOADS = {"busy": busy_load, "low": low_load}


def convert(src, dst, *args):
    subprocess.run([SYM, "file", src, "--no-symbolize", "-q", "--allow-root", "-o", dst] +
                   list(args), check=True)


def forms(req, work, tag):
    """Bytes of the three forms of request file req (gzip'd or not)."""
    out = {}
    for name, args in (("ts", ()), ("otlp", ("--no-timestamps",)),
                       ("pprof", ("--format", "pprof"))):
        dst = os.path.join(work, f"{tag}.{name}")
        convert(req, dst, *args)
        data = open(dst, "rb").read()
        if data[:2] != b"\x1f\x8b":
            data = gzip.compress(data, 6)
        out[name] = len(data)
    return out


def samples_in(req):
    return sum(s["count"] for s in read_otlp(req))


def run_record(load, dur, work, only_load=False):
    out = os.path.join(work, "rec.otlp")
    summ = os.path.join(work, "rec.json")
    lp = LOADS[load](dur + 4)
    time.sleep(1)
    target = ["-p", ",".join(str(x.pid) for x in lp)] if only_load else ["-a"]
    p = subprocess.run([B.SPANPROF, "record"] + target + ["-F", "97", "-d", str(dur), "--format",
                        "otlp", "--timestamps", "-o", out, "--no-report", "-q", "--summary-json",
                        summ],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for x in lp:
        B.stop(x)
    if p.returncode:
        B.die("record failed: " + p.stderr.strip())
    n = samples_in(out)
    f = forms(out, work, "rec")
    return [(n, f)]


def run_agent(load, dur, work):
    d = os.path.join(work, "agent")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    lp = LOADS[load](dur + 4)
    time.sleep(1)
    a = B.spawn([B.SPANPROF, "agent", "--timestamps", "--output-dir", d, "--metrics-addr",
                 "none", "-q"])
    time.sleep(dur)
    B.stop(a, timeout=30)
    for x in lp:
        B.stop(x)
    files = sorted(glob.glob(os.path.join(d, "*")))
    if not files:
        B.die("the agent wrote no file")
    tot_n, tot = 0, {"ts": 0, "otlp": 0, "pprof": 0}
    for i, req in enumerate(files):
        n = samples_in(req)
        if not n:
            continue
        f = forms(req, work, f"ag{i}")
        tot_n += n
        for k in tot:
            tot[k] += f[k]
    return [(tot_n, tot)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=20, help="record seconds per run")
    ap.add_argument("--agent-duration", type=int, default=25, help="agent seconds per run")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--loads", default="busy,low")
    args = ap.parse_args()
    B.require()
    if not os.access(SYM, os.X_OK):
        B.die(f"{SYM} missing: run `make -j2` first")
    work = os.path.join(B.WORK, "otlp_size")
    os.makedirs(work, exist_ok=True)
    print("# otlp_size.py:", B.machine())
    rows, per = [], {}
    for load in args.loads.split(","):
        colls = [("record", run_record, args.duration)]
        if load == "low":
            colls.append(("record -p", lambda l, d, w: run_record(l, d, w, True), args.duration))
        colls.append(("agent", run_agent, args.agent_duration))
        for coll, fn, dur in colls:
            for rep in range(args.reps):
                for n, f in fn(load, dur, work):
                    bps = {k: v / n for k, v in f.items()}
                    r = bps["otlp"] / bps["pprof"]
                    per.setdefault((load, coll), []).append((bps, r, bps["ts"] / bps["pprof"]))
                    rows.append([load, coll, rep + 1, n, f["ts"], f["otlp"], f["pprof"],
                                 B.fmt(bps["ts"]), B.fmt(bps["otlp"]), B.fmt(bps["pprof"]),
                                 B.fmt(bps["ts"] / bps["pprof"]), B.fmt(r)])
                    sys.stdout.flush()
    B.table(["load", "collector", "rep", "samples", "otlp+ts B", "otlp B", "pprof B",
             "otlp+ts B/s", "otlp B/s", "pprof B/s", "otlp+ts/pprof", "otlp/pprof"], rows)
    print()
    med = []
    for (load, coll), xs in per.items():
        def m(key):
            v = [x[0][key] for x in xs]
            return f"{B.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"
        rs = [x[1] for x in xs]
        ts = [x[2] for x in xs]
        med.append([load, coll, m("ts"), m("otlp"), m("pprof"),
                    f"{B.median(ts):.2f} ({min(ts):.2f}-{max(ts):.2f})",
                    f"{B.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})"])
    B.table(["load", "collector", "otlp+ts B/sample", "otlp B/sample", "pprof B/sample",
             "otlp+ts/pprof", "otlp/pprof (goal <= 1.2)"], med)
    print(json.dumps({f"{k[0]}.{k[1]}": [x[1] for x in v] for k, v in per.items()}))


if __name__ == "__main__":
    main()
