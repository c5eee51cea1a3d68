"""perfcmp.py - spanprof against `perf` on the same run of the same process.

sample_both(pid, seconds, d, record_cmd): `spanprof record -p PID`
    (record_cmd: the command up to its sampling options, spt.RECORD) and,
    once it samples, `perf record -p PID` over the same seconds; returns
    (spanprof's profile, perf.data, spanprof's stderr).  perf_freq a tuple:
    one `perf record` per element, all started at the same moment, and
    perf.data is then a list of their files in that order; an element is a
    frequency (`perf record -p PID`: per-task cpu-clock events) or (freq,
    "-a") (`perf record -a`: one cpu-clock event per CPU, as spanprof
    samples; read it with perf_flat(data, pid)).
perf_flat(data, pid=None): {symbol: samples} of the leaves from `perf report`
    (of process pid only, when given)
    ("[.] " / "[k] " prefixes dropped; an address perf could not name,
    "0x...", counts as "[unknown]", as spanprof's unnamed leaves do).
pprof_leaves(path): [(mapping file, address, leaf name, count)] per sample.
pprof_flat(path): {function: samples} of the leaves of a symbolized pprof
    file, named by the out-of-line function of the leaf location (the last
    line: perf names symbols, not inlined frames); unnamed leaves are
    "[unknown]".
tvd(a, b): total variation distance of two count dicts, in points (0..100).
tvd_top(a, b): the keys adding most to tvd(a, b).
sampling_floor(a, b): the TVD two independent samplings of the same
    distribution (the pooled one) with these totals show, mean of 200
    multinomial draws: what sampling noise alone gives.
"""
import gzip
import os
import random
import re
import subprocess
import time

from lib.pb import fields, packed


def _perf_event_fds(pid):
    n = 0
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                n += os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[perf_event]"
            except OSError:
                pass
    except OSError:
        pass
    return n


def sample_both(pid, seconds, d, record_cmd, freq=97, perf_freq=199, attach_timeout=60):
    """perf starts once spanprof's per-CPU sampling events exist (one
    perf_event fd per online CPU): started together, perf's window would
    hold spanprof's BPF load, whose verifier work on the other CPU changes
    what a memory-bound target spends its time on, and the two flat
    profiles would be of different seconds."""
    out = d + "/spanprof.pb.gz"
    freqs = tuple(perf_freq) if isinstance(perf_freq, (tuple, list)) else (perf_freq,)
    datas = [d + "/perf.data"] + [d + "/perf-%d.data" % i for i in range(1, len(freqs))]
    err_path = d + "/spanprof-record.err"
    with open(err_path, "w") as err_f:
        rec = subprocess.Popen(record_cmd + ["-F", str(freq), "-p", str(pid), "-d",
                                             str(seconds), "-o", out],
                               stdout=subprocess.DEVNULL, stderr=err_f)
    perfs = []
    try:
        ncpu = os.cpu_count() or 1
        end = time.monotonic() + attach_timeout
        while _perf_event_fds(rec.pid) < ncpu:
            if rec.poll() is not None or time.monotonic() > end:
                raise RuntimeError("spanprof record did not start sampling (rc %s, %d s): %s" %
                                   (rec.poll(), attach_timeout, open(err_path).read()[-500:]))
            time.sleep(0.02)
        for f, data in zip(freqs, datas):
            who = ["-a", "-e", "cpu-clock"] if isinstance(f, tuple) else ["-p", str(pid)]
            f = f[0] if isinstance(f, tuple) else f
            perfs.append(subprocess.Popen(["perf", "record", "-F", str(f)] + who +
                                          ["-o", data, "--", "sleep", str(seconds)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        rc = rec.wait(timeout=120)
        for perf in perfs:
            perf.wait(timeout=120)
    finally:
        for p in [rec] + perfs:
            if p and p.poll() is None:
                p.kill()
                p.wait()
    err = open(err_path).read()
    if rc:
        raise RuntimeError("spanprof record failed (rc %d): %s" % (rc, err[-500:]))
    for perf in perfs:
        if perf.returncode:
            raise RuntimeError("perf record -p %d failed (rc %d; did the process end before "
                               "%d s?): %s" % (pid, perf.returncode, seconds,
                                               perf.stderr.read().decode()[-500:]))
    return out, (datas if isinstance(perf_freq, (tuple, list)) else datas[0]), err


def perf_flat(data, pid=None):
    p = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                        "--sort", "sym", "-F", "sample,sym"] +
                       (["--pid", str(pid)] if pid else []),
                       capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise RuntimeError("perf report failed: %s" % p.stderr[-500:])
    out = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^\s*(\d+)\s+\[(.)\]\s+(.*?)\s*$", line)
        if m:
            name = m.group(3)
            if re.match(r"^0x[0-9a-f]+$", name):
                name = "[unknown]"
            out[name] = out.get(name, 0) + int(m.group(1))
    return out


def pprof_leaf_lines(path):
    """[(mapping file, address, lines, count)], one per sample of a pprof
    file: the leaf location's lines, innermost first, each (function name,
    function file, function start line, line); the count its first value
    (1 without)."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    strings, funcs, locs, maps, samples = [], {}, {}, {}, []
    for fn, wt, v in fields(raw):
        if fn == 6:
            strings.append(v.decode())
        elif fn == 5:
            dd = dict((f, x) for f, _, x in fields(v))
            funcs[dd.get(1, 0)] = (dd.get(2, 0), dd.get(4, 0), dd.get(5, 0))
        elif fn == 3:
            dd = dict((f, x) for f, _, x in fields(v))
            maps[dd.get(1, 0)] = dd.get(5, 0)
        elif fn == 4:
            lid, mid, addr, lines = 0, 0, 0, []
            for f, w, x in fields(v):
                if f == 1:
                    lid = x
                elif f == 2:
                    mid = x
                elif f == 3:
                    addr = x
                elif f == 4:
                    ld = dict((a, y) for a, _, y in fields(x))
                    lines.append((ld.get(1, 0), ld.get(2, 0)))
            locs[lid] = (mid, addr, lines)
        elif fn == 2:
            ls, vals = [], []
            for f, w, x in fields(v):
                if f == 1:
                    ls += packed(w, x)
                elif f == 2:
                    vals += packed(w, x)
            samples.append((ls, vals))
    out = []
    for ls, vals in samples:
        if not ls:
            continue
        mid, addr, lines = locs.get(ls[0], (0, 0, []))
        named = []
        for fid, line in lines:
            nm, fl, start = funcs.get(fid, (0, 0, 0))
            named.append((strings[nm], strings[fl], start, line))
        out.append((strings[maps[mid]] if mid in maps else "", addr, named,
                    vals[0] if vals else 1))
    return out


def pprof_leaves(path):
    """[(mapping file, address, leaf function name, count)], one per sample
    of a pprof file; the name is the out-of-line function of the leaf
    location ("" when unnamed), the count its first value (1 without)."""
    return [(m, addr, lines[-1][0] if lines else "", n)
            for m, addr, lines, n in pprof_leaf_lines(path)]


def pprof_flat(path):
    out = {}
    for _, _, name, n in pprof_leaves(path):
        name = name or "[unknown]"
        out[name] = out.get(name, 0) + n
    return out


def tvd(a, b):
    ta, tb = float(sum(a.values())), float(sum(b.values()))
    if not ta or not tb:
        return 100.0
    keys = set(a) | set(b)
    return 50.0 * sum(abs(a.get(k, 0) / ta - b.get(k, 0) / tb) for k in keys)


def tvd_top(a, b, n=5):
    """The n keys adding most to tvd(a, b): (key, points, share in a %, in b %)."""
    ta, tb = float(sum(a.values())) or 1.0, float(sum(b.values())) or 1.0
    rows = [(k, 50.0 * abs(a.get(k, 0) / ta - b.get(k, 0) / tb),
             100.0 * a.get(k, 0) / ta, 100.0 * b.get(k, 0) / tb) for k in set(a) | set(b)]
    return [(k, round(d, 2), round(x, 2), round(y, 2))
            for k, d, x, y in sorted(rows, key=lambda r: -r[1])[:n]]


def sampling_floor(a, b, trials=200, seed=1):
    rng = random.Random(seed)
    pooled = {}
    for dct in (a, b):
        for k, v in dct.items():
            pooled[k] = pooled.get(k, 0) + v
    keys = list(pooled)
    weights = [pooled[k] for k in keys]
    na, nb = sum(a.values()), sum(b.values())
    tot = 0.0
    for _ in range(trials):
        da, db = {}, {}
        for k in rng.choices(keys, weights, k=na):
            da[k] = da.get(k, 0) + 1
        for k in rng.choices(keys, weights, k=nb):
            db[k] = db.get(k, 0) + 1
        tot += tvd(da, db)
    return tot / trials
