#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""JIT frames named from Node's jitdump (V8 --perf-prof), off the
collection path (root).

1. record: Node runs the two hot functions of test_jit_node.py (2:1) with
   --perf-prof (V8 writes ./jit-PID.dump and maps its first page
   executable) and --perf-basic-prof (the perf map of the same code, for
   the comparison).  `perf record -p PID` and `spanprof record -p PID`
   sample the same seconds.  spanprof must read the jitdump (the summary
   counts jitdump checks and code loads, the profile's JIT mapping is
   "[jitdump]"), and after `spanprof-symbolizer file`:
   - go tool pprof -symbolize=none shows both function names;
   - every JIT leaf the jitdump names has the name the perf map gives the
     same address (V8 describes the same code in both; perf inject --jit
     could not be the reference here: perf 6.1's report of the injected
     file left these frames as bare addresses);
   - the heavy:light split is within 5 points of perf's (which names them
     from the perf map) on the same run.
2. agent -> serve: Node with --perf-prof only (no perf map is written) in
   private mount and pid namespaces, the dump in its private /tmp under
   its namespace pid: the agent finds it by its mapping, ships the
   converted pieces to serve running as nobody, and serve's profiles name
   both functions (test_jit_node.part_agent with the jitdump flag).
Exit 0 pass, 77 skip, else fail.
"""
import gzip
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spt  # noqa: E402
from spt import check, fail  # noqa: E402
from agent_util import wait_for  # noqa: E402
from lib import perfcmp  # noqa: E402
from lib.pb import fields, packed  # noqa: E402
import test_jit_node  # noqa: E402
from test_jit_node import HEAVY, JS, LIGHT, heavy_share, need, shares  # noqa: E402

SYM = os.path.join(spt.BUILD, "spanprof-symbolizer")


def leaves(path):
    """[(mapping file, address, leaf function name, count)] of a pprof file."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    strings, funcs, locs, maps, out = [], {}, {}, {}, []
    samples = []
    for fn, wt, v in fields(raw):
        if fn == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif fn == 5:
            d = dict((f, x) for f, _, x in fields(v))
            funcs[d.get(1, 0)] = d.get(2, 0)
        elif fn == 3:
            d = dict((f, x) for f, _, x in fields(v))
            maps[d.get(1, 0)] = d.get(5, 0)
        elif fn == 4:
            lid, mid, addr, fids = 0, 0, 0, []
            for f, w, x in fields(v):
                if f == 1:
                    lid = x
                elif f == 2:
                    mid = x
                elif f == 3:
                    addr = x
                elif f == 4:
                    fids.append(dict((a, y) for a, _, y in fields(x)).get(1, 0))
            locs[lid] = (mid, addr, fids[-1] if fids else 0)
        elif fn == 2:
            ls, vals = [], []
            for f, w, x in fields(v):
                if f == 1:
                    ls += packed(w, x)
                elif f == 2:
                    vals += packed(w, x)
            samples.append((ls, vals))
    for ls, vals in samples:
        if not ls or ls[0] not in locs:
            continue
        mid, addr, fid = locs[ls[0]]
        name = strings[funcs.get(fid, 0)] if fid in funcs else ""
        out.append((strings[maps.get(mid, 0)] if mid in maps else "", addr, name,
                    vals[0] if vals else 0))
    return out


def perf_map_lookup(path):
    """addr -> name from a perf map, the later line winning (as the
    symbolizer and Parca decide)."""
    entries = []
    with open(path, "rb") as f:
        for line in f.read().decode("utf-8", "replace").splitlines():
            m = re.match(r"^([0-9a-fA-F]+) ([0-9a-fA-F]+) (.*)$", line)
            if m:
                entries.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))

    def look(a):
        for s, n, name in reversed(entries):
            if s <= a < s + n:
                return name
        return None
    return look


def maps_have_dump(pid):
    try:
        with open("/proc/%d/maps" % pid) as f:
            return any(l.rstrip().endswith("/jit-%d.dump" % pid) and " r-x" in l for l in f)
    except OSError:
        return False


def perf_map_has_hot(pid):
    try:
        with open("/tmp/perf-%d.map" % pid) as f:
            t = f.read()
        return "JS:*" + HEAVY in t and "JS:*" + LIGHT in t
    except OSError:
        return False


def part_record(d):
    js = os.path.join(d, "hot.js")
    with open(js, "w") as f:
        f.write(JS)
    node = subprocess.Popen(["node", "--perf-prof", "--perf-basic-prof", js, "30"], cwd=d)
    try:
        wait_for(lambda: maps_have_dump(node.pid) and perf_map_has_hot(node.pid), 20,
                 what="node's jit-%d.dump mapping and both functions optimized" % node.pid)
        summary = os.path.join(d, "summary.json")
        rec = lambda args: spt.record(args + ["--summary-json", summary])  # noqa: E731
        out, perf_data, err = perfcmp.sample_both(node.pid, 5, d, rec)
        look = perf_map_lookup("/tmp/perf-%d.map" % node.pid)
    finally:
        node.kill()
        node.wait()
        for f in ("/tmp/perf-%d.map" % node.pid,):
            if os.path.exists(f):
                os.unlink(f)
    j = spt.load_json(summary)["jit"]
    print("summary jit: %s" % j)
    check(j["jitdump_checks"] > 0 and j["jitdump_loads"] > 100 and j["jitdump_refused"] == 0,
          "record read the jitdump: %d checks, %d code loads, %d refused"
          % (j["jitdump_checks"], j["jitdump_loads"], j["jitdump_refused"]))
    check("JIT jitdumps: checks" in err, "the summary has the jitdump line")
    jit = os.path.join(out + ".syms", "jit")
    check(os.path.isdir(jit) and os.listdir(jit), "record wrote the pieces into X.syms/jit/")
    mapped = set(m["file"] for m in spt.read_pprof(out)["mappings"].values())
    check("[jitdump]" in mapped and "[perf-map]" not in mapped,
          "the JIT mapping names the jitdump chain (mappings: %s)" % sorted(mapped)[:12])
    sym = os.path.join(d, "node.sym.pb.gz")
    p = subprocess.run([SYM, "file", out, "-o", sym], capture_output=True, text=True,
                       timeout=300)
    if p.returncode:
        fail("spanprof-symbolizer file failed: %s" % p.stderr)
    env = dict(os.environ, HOME=d, PPROF_TMPDIR=d)
    top = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-top", sym],
                         capture_output=True, text=True, timeout=120, env=env)
    print(top.stdout[:1500])
    check(top.returncode == 0 and HEAVY in top.stdout and LIGHT in top.stdout,
          "go tool pprof -symbolize=none shows both JS functions")
    # the same names as the perf map gives the same addresses
    agree = disagree = unnamed = 0
    bad = []
    for mfile, addr, name, n in leaves(sym):
        if mfile != "[jitdump]":
            continue
        ref = look(addr)
        if not name or name.startswith("0x") or name.startswith("["):
            unnamed += n
        elif ref == name:
            agree += n
        else:
            disagree += n
            bad.append((hex(addr), name, ref))
    print("jitdump-named JIT leaves: %d agree with the perf map, %d differ, %d unnamed; "
          "differing: %s" % (agree, disagree, unnamed, bad[:5]))
    check(agree > 50 and disagree <= 0.02 * (agree + disagree),
          "the jitdump names JIT leaves as the perf map does (%d agree, %d differ: %s)"
          % (agree, disagree, bad[:3]))
    ours = shares(perfcmp.pprof_flat(sym))
    theirs = shares(perfcmp.perf_flat(perf_data))
    print("spanprof (jitdump) %s; perf (perf map) %s" % (ours, theirs))
    check(ours[HEAVY] > 20 and ours[LIGHT] > 10,
          "spanprof names both JS functions (%.1f%%, %.1f%%)" % (ours[HEAVY], ours[LIGHT]))
    check(theirs[HEAVY] > 20 and theirs[LIGHT] > 10,
          "perf names both (%.1f%%, %.1f%%)" % (theirs[HEAVY], theirs[LIGHT]))
    a, b = heavy_share(ours), heavy_share(theirs)
    check(abs(a - b) <= 5.0,
          "heavy:light split %.1f%% vs perf's %.1f%% on the same run (within 5 points)"
          % (a, b))


def main():
    spt.require_root()
    need("node")
    need("perf")
    need("go")
    need("unshare")
    d = spt.tmpdir()
    part_record(d)
    test_jit_node.part_agent(d, "--perf-prof")
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
