# spanprof-test: parallel (BPF on its own command only, no whole-machine sampling, no timing or rate assertion)
"""Compact OTLP (the default) says what the timestamped form says.

One recording of spanprof-demo (spans, span attributes, on- and off-CPU,
kernel frames) with --timestamps --format otlp; the same samples are then
written by spanprof-symbolizer file --no-symbolize --no-timestamps (what
record and agent send without --timestamps) and --format pprof.  Three
independent readers:
  - lib/otlp.py (the suite's own protobuf reader): per stack (frames leaf
    first) and per span (trace id, span id), of each kind, the events and
    the nanoseconds are the same in both OTLP forms; off-CPU waits are
    counted from the off_cpu_waits Profile in the compact form; the
    compact form has no timestamps and no more Samples;
  - spanprof-symbolizer report (--collapsed per kind, --by-span, --top):
    the same text for both forms;
  - go tool pprof -raw on the pprof form: per stack and per span the same
    events and nanoseconds as the compact OTLP.
And the collector's own defaults: `record --format otlp` without
--timestamps writes no timestamp, and `--timestamps` with pprof is refused
with a message naming --format otlp.
"""
import os
import re
import shutil
import subprocess
import tempfile

from spt import *

require_root()
d = tmpdir()
demo = os.path.join(BUILD, "spanprof-demo")
sym = os.path.join(BUILD, "spanprof-symbolizer")
ts_path = os.path.join(d, "ts.otlp.pb")
record(["--off-cpu", "--format", "otlp", "--timestamps", "-o", ts_path, "--", demo,
        "--duration", "3", "--threads", "2", "--service-name", "checkout"])


def sym_file(out, *args):
    p = subprocess.run([sym, "file", ts_path, "--no-symbolize", "-q", "--allow-root", "-o", out] +
                       list(args), capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "spanprof-symbolizer file %s (%s)" % (" ".join(args), p.stderr.strip()))
    return out


compact_path = sym_file(os.path.join(d, "compact.otlp.pb"), "--no-timestamps")
pprof_path = sym_file(os.path.join(d, "compact.pb"), "--format", "pprof")
# what record wrote beside the profile for the symbolizer: the kernel
# snapshot and the host symbols (FILE.syms/: the vDSO, JIT pieces)
shutil.copy(ts_path + ".kallsyms.gz", compact_path + ".kallsyms.gz")
if os.path.isdir(ts_path + ".syms"):
    shutil.copytree(ts_path + ".syms", compact_path + ".syms")

# ------------------------------------------------ 1. the suite's reader
ts_s, c_s = read_otlp(ts_path), read_otlp(compact_path)
check(len(ts_s) > 100 and all(s["ts"] for s in ts_s),
      "%d timestamped samples, every one with timestamps" % len(ts_s))
check(c_s and not any(s["ts"] for s in c_s) and len(c_s) <= len(ts_s),
      "compact: %d samples, no timestamps" % len(c_s))
kinds = set(s["kind"] for s in ts_s)
check(kinds == {"samples", "off_cpu"}, "on- and off-CPU samples: %s" % sorted(kinds))
check(any(s["trace_id"] for s in ts_s if s["kind"] == "samples") and
      any(s["trace_id"] for s in ts_s if s["kind"] == "off_cpu"),
      "samples of both kinds carry spans")


def otlp_totals(samples, by_span):
    t = {}
    for s in samples:
        ns = sum(s["values"]) if s["kind"] == "off_cpu" else None
        key = (s["kind"], (s["trace_id"], s["span_id"]) if by_span else
               tuple((f[1], f[2]) for f in s["stack"]))
        c, n = t.get(key, (0, 0))
        t[key] = (c + s["count"], n + (ns or 0))
    return t


for by_span in (False, True):
    what = "span" if by_span else "stack"
    a, b = otlp_totals(ts_s, by_span), otlp_totals(c_s, by_span)
    check(a == b, "lib/otlp.py: events and off-CPU ns per %s equal in both forms (%d keys)" %
          (what, len(a)))
waits = sum(s["count"] for s in c_s if s["kind"] == "off_cpu")
check(waits == sum(len(s["ts"]) for s in ts_s if s["kind"] == "off_cpu") and
      waits > sum(1 for s in c_s if s["kind"] == "off_cpu"),
      "compact: %d off-CPU waits (from off_cpu_waits), more than its %d samples" % (
          waits, sum(1 for s in c_s if s["kind"] == "off_cpu")))

# ------------------------------------------------ 2. the symbolizer's reports


def report(path, *args):
    p = subprocess.run([sym, "report", path, "-q", "--allow-root", "--no-debuginfod"] + list(args),
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, "report %s %s" % (os.path.basename(path), " ".join(args)))
    return p.stdout


# (rows of equal weight may come in another order: lines are compared as sets)
for args in (("--collapsed", "--kind", "oncpu"), ("--collapsed", "--kind", "offcpu"),
             ("--by-span",), ("--top", "30")):
    a, b = report(ts_path, *args), report(compact_path, *args)
    check(sorted(a.splitlines()) == sorted(b.splitlines()) and len(a.splitlines()) > 3,
          "spanprof-symbolizer report %s: the same %d lines for both forms" % (
              " ".join(args), len(a.splitlines())))

# ------------------------------------------------ 3. go tool pprof -raw


def pprof_totals(path):
    out = go_pprof(["-raw", "-symbolize=none", path])
    cols = locs = None
    samples, addr = [], {}
    lines = out.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("Samples:"):
            cols = lines[i + 1].replace("[dflt]", "").split()
            i += 2
            while i < len(lines) and not re.match(r"^\S", lines[i]):
                m = re.match(r"^\s+([-\d\s]+):\s*([\d\s]*)$", lines[i])
                if m:
                    vals = [int(x) for x in m.group(1).split()]
                    ids = [int(x) for x in m.group(2).split()]
                    labels = {}
                    while i + 1 < len(lines) and re.match(r"^\s+\S+:\[", lines[i + 1]):
                        i += 1
                        for k, v in re.findall(r"(\S+?):\[([^\]]*)\]", lines[i]):
                            labels[k] = v
                    samples.append((vals, ids, labels))
                i += 1
            continue
        if ln.startswith("Locations"):
            locs = True
        elif locs:
            m = re.match(r"^\s+(\d+): (0x[0-9a-f]+)", ln)
            if m:
                addr[int(m.group(1))] = int(m.group(2), 16)
        i += 1
    check(cols and samples and addr, "go tool pprof -raw: %d samples, columns %s" % (
        len(samples), cols))
    return cols, samples, addr


cols, pp_samples, pp_addr = pprof_totals(pprof_path)
ci = {c: i for i, c in enumerate(cols)}
for by_span in (False, True):
    t = {}
    for vals, ids, lab in pp_samples:
        for kind, cnt, ns in (("samples", "samples/count", None),
                              ("off_cpu", "off_cpu_waits/count", "off_cpu/nanoseconds")):
            if not vals[ci[cnt]] and not (ns and vals[ci[ns]]):
                continue
            key = (kind, (lab.get("trace_id"), lab.get("span_id")) if by_span else
                   tuple(pp_addr[x] for x in ids))
            c, n = t.get(key, (0, 0))
            t[key] = (c + vals[ci[cnt]], n + (vals[ci[ns]] if ns else 0))
    mine = {}
    for (kind, k), v in otlp_totals(c_s, by_span).items():
        k = k if by_span else tuple(a for _, a in k)
        c, n = mine.get((kind, k), (0, 0))
        mine[(kind, k)] = (c + v[0], n + v[1])
    check(t == mine, "go tool pprof -raw: events and off-CPU ns per %s equal the compact "
          "OTLP's (%d keys)" % ("span" if by_span else "stack", len(t)))

# ------------------------------------------------ 4. the collector's defaults
dflt = os.path.join(d, "default.otlp.pb")
record(["-d", "1", "--format", "otlp", "-o", dflt, "--", demo, "--duration", "2",
        "--threads", "1"], timeout=60)
ds = read_otlp(dflt)
check(ds and not any(s["ts"] for s in ds), "record --format otlp: %d samples, no timestamps "
      "by default" % len(ds))
rc, _, err = record(["--timestamps", "-d", "1", "-o", os.path.join(d, "x.pb.gz")], check_rc=False)
check(rc == 2 and "--timestamps needs --format otlp" in err and os.listdir(d).count("x.pb.gz") == 0,
      "record --timestamps with pprof: refused, exit 2 (%s)" % err.strip())
shutil.rmtree(d)
