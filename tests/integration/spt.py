"""spt.py - shared helpers for spanprof's integration tests.

Independent of spanprof's own C decoders on purpose: profiles written by the
collector are read back here with a protobuf wire-format reader written from
the pprof field numbers, so an encoder bug cannot hide behind a decoder with
the same bug.

Exit codes follow tests/run.sh: 0 pass, 77 skip, anything else fail.
"""
import atexit
import gzip
import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile

BUILD = os.environ.get("SPANPROF_BUILD") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
BUILD = os.path.abspath(BUILD)
SPANPROF = os.path.join(BUILD, "spanprof")


def asan_build(path=None):
    """True when the binary (default: spanprof) was built with ASan (make SAN=1,
    as scripts/san_integration.sh runs the suite): its runtime is linked in."""
    with open(path or SPANPROF, "rb") as f:
        return b"__asan_init" in f.read()


def _descendants(root):
    """Every live process below root, found from /proc (ppid links)."""
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                st = f.read()
        except OSError:
            continue
        ppid = int(st[st.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


@atexit.register
def _reap_leftovers():
    """A test that fails half-way (fail() exits at once) must not leave its
    agent sampling the machine for the tests after it: whatever it started
    and did not stop (agents, servers, fixtures, and what they run under:
    strace, setpriv, unshare) is killed when the test's process exits."""
    for pid in _descendants(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def skip(msg):
    print("SKIP: " + msg, flush=True)
    sys.exit(77)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok: " + msg, flush=True)


def require_root():
    # BPF tests must run in CI: not being root there is a failure, not a skip.
    if os.geteuid() != 0:
        fail("BPF integration tests need root (CAP_BPF, CAP_PERFMON)")


def tmpdir():
    d = tempfile.mkdtemp(prefix="spanprof-test-")
    os.chmod(d, 0o755)
    return d


RECORD = [SPANPROF, "record", "--no-report", "-q"]


def record(args, timeout=120, check_rc=True):
    """Runs spanprof record with args; returns (rc, stdout, stderr)."""
    cmd = RECORD + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check_rc and p.returncode != 0:
        fail("spanprof record failed (rc=%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return p.returncode, p.stdout, p.stderr


# ---------------------------------------------------------------- protobuf
# The wire format and the OTLP reader live in lib/ (one of each for the
# whole suite); re-exported here for the tests that import them from spt.
from lib.otlp import read_otlp  # noqa: E402,F401
from lib.pb import fields, packed, s64  # noqa: E402,F401


def read_pprof(path):
    """Returns a dict: sample_types, samples (list of dicts with values,
    locs, labels), locations {id: (mapping_id, address)}, mappings {id: dict},
    strings."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    strings, samples, locs, maps, stypes = [], [], {}, {}, []
    for fn, wt, v in fields(raw):
        if fn == 6:
            strings.append(v.decode())
        elif fn == 1:
            stypes.append(dict((f, x) for f, _, x in fields(v)))
        elif fn == 2:
            s = {"locs": [], "values": [], "labels": []}
            for f, w, x in fields(v):
                if f == 1:
                    s["locs"] += packed(w, x)
                elif f == 2:
                    s["values"] += [s64(y) for y in packed(w, x)]
                elif f == 3:
                    s["labels"].append(dict((a, y) for a, _, y in fields(x)))
            samples.append(s)
        elif fn == 4:
            d = dict((f, x) for f, _, x in fields(v))
            locs[d.get(1, 0)] = (d.get(2, 0), d.get(3, 0))
        elif fn == 3:
            d = dict((f, x) for f, _, x in fields(v))
            maps[d.get(1, 0)] = d
    def S(i):
        return strings[i] if 0 <= i < len(strings) else "?"
    for s in samples:
        lab = {}
        for l in s["labels"]:
            k = S(l.get(1, 0))
            lab[k] = S(l[2]) if l.get(2) else l.get(3, 0)
        s["labels"] = lab
    mappings = {}
    for mid, d in maps.items():
        mappings[mid] = {"start": d.get(2, 0), "limit": d.get(3, 0), "offset": d.get(4, 0),
                         "file": S(d.get(5, 0)), "build_id": S(d.get(6, 0))}
    return {"sample_types": [(S(t.get(1, 0)), S(t.get(2, 0))) for t in stypes],
            "samples": samples, "locations": locs, "mappings": mappings, "strings": strings}


def go_pprof(args, timeout=120):
    """Runs go tool pprof (an independent reader that symbolizes from the
    local binaries); returns stdout."""
    go = shutil.which("go")
    if not go:
        fail("go (golang-go) is not installed: run scripts/deps.sh")
    env = dict(os.environ, PPROF_TMPDIR=tempfile.mkdtemp(), HOME=tempfile.mkdtemp())
    p = subprocess.run([go, "tool", "pprof", "-symbolize=local"] + args,
                       capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        fail("go tool pprof %s failed: %s" % (" ".join(args), p.stderr))
    return p.stdout


def pprof_traces(path, sample_index=None):
    """The stacks of a profile as go tool pprof -traces prints them: a list
    of (weight, frames), frames a list of names, leaf first, one entry per
    sample of the file (equal stacks are one sample: weight says how much:
    ms for time columns, the count for count columns).  Unsymbolized frames
    look like "[libc.so.6]"."""
    import re
    unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3, "": 1.0}
    args = ["-traces"] + (["-sample_index=" + sample_index] if sample_index else []) + [path]
    out = go_pprof(args)
    res = []
    for block in out.split("-----------+")[1:]:
        frames, weight = [], 0.0
        for line in block.splitlines():
            m = re.match(r"\s+([\d.]+)(ns|us|ms|s)?\s+(\S+)", line)
            if m and not frames:
                weight = float(m.group(1)) * unit[m.group(2) or ""]
                frames.append(m.group(3))
            elif line.startswith(" " * 13) and line.strip() and ":" not in line:
                frames.append(line.strip())
        if frames:
            res.append((weight, frames))
    return res


def chain_after(frames, first):
    """From the first frame named first: (named frames in order, number of
    unnamed frames after the last named one).  None if first is absent."""
    if first not in frames:
        return None
    rest = frames[frames.index(first):]
    named = [f for f in rest if not f.startswith("[")]
    tail = 0
    for f in reversed(rest):
        if not f.startswith("["):
            break
        tail += 1
    return named, tail


def read_buildid(path):
    """GNU build id of an ELF file via readelf (binutils), lower-case hex."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return ""


def load_json(path):
    with open(path) as f:
        return json.load(f)


def nm_ranges(path, prefix):
    """{name: (start, end)} of the functions of an ELF file whose name starts
    with prefix, from nm -S (binutils): to tell which function a raw sample
    address falls in without spanprof's own symbolizer."""
    out = subprocess.run(["nm", "-S", path], capture_output=True, text=True).stdout
    r = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[3].startswith(prefix):
            a, n = int(f[0], 16), int(f[1], 16)
            r[f[3]] = (a, a + n)
    return r


def go_work_classifier(exe):
    """classify(stack) for go_span_check: ("spanWork" | "gapWork", worker)
    of the first native frame in main.spanWork<w> / main.gapWork<w> of the
    golabels fixture exe (by nm's ranges, not spanprof's symbolizer), or
    None; and the number of those functions found (16)."""
    work = {}
    for name, r in nm_ranges(exe, "main.").items():
        for kind in ("spanWork", "gapWork"):
            if name.startswith("main." + kind) and name[len("main." + kind):].isdigit():
                work[r] = (kind, int(name[len("main." + kind):]))

    def classify(stack):
        for (_, _, addr, ftype) in stack:
            if ftype != "native":
                continue
            for (a, b), kw in work.items():
                if a <= addr < b:
                    return kw
        return None
    return classify, len(work)


def go_span_check(samples, spans, off, classify=None):
    """Checks samples of tests/fixtures/go/golabels -mode spans against its
    ground truth (spans: the -truth log's records; off: the summary's
    mono_to_unix_ns).  A sample event with ids is right when they are a
    span's of the log, its time lies in that span's interval, its worker
    label is the span's worker and, with classify (stack -> ("spanWork" |
    "gapWork", worker) or None), the stack is that worker's spanWork or
    neither work function (pprof.Do's own frames).  Returns a dict:
    with_ids, right, wrong (a list of what did not match), in_span /
    in_span_ids and in_gap / in_gap_ids (by classify), sets (the distinct
    (trace_id, span_id) pairs seen)."""
    by_ids = {(s["trace_id"], s["span_id"]): s for s in spans}
    r = {"with_ids": 0, "right": 0, "wrong": [], "in_span": 0, "in_span_ids": 0, "in_gap": 0,
         "in_gap_ids": 0, "sets": set()}
    for s in samples:
        kw = classify(s["stack"]) if classify else None
        for t in s["ts"] or [None]:
            if s["trace_id"]:
                r["with_ids"] += 1
                r["sets"].add((s["trace_id"], s["span_id"]))
                sp = by_ids.get((s["trace_id"], s["span_id"]))
                ok = (sp is not None and kw in (None, ("spanWork", sp["w"])) and
                      t is not None and sp["start"] <= t - off <= sp["end"] and
                      s["attrs"].get("worker") == str(sp["w"]))
                if ok:
                    r["right"] += 1
                else:
                    r["wrong"].append((kw, s["trace_id"], s["span_id"], sp, t and t - off,
                                       s["attrs"]))
            if kw and kw[0] == "spanWork":
                r["in_span"] += 1
                r["in_span_ids"] += s["trace_id"] is not None
            elif kw and kw[0] == "gapWork":
                r["in_gap"] += 1
                r["in_gap_ids"] += s["trace_id"] is not None
    return r


def go_env(**kw):
    """Environment for running a Go fixture, with kw added (e.g. GOMAXPROCS)."""
    env = dict(os.environ)
    env.update({k: str(v) for k, v in kw.items()})
    return env


class GoRun:
    """One `spanprof record` of a Go fixture writing OTLP: out (the
    profile), summary (its --summary-json), truth (the fixture's -truth
    JSON lines), stderr (record's and the fixture's)."""

    def __init__(self, out, summary, truth, stderr):
        self.out, self.summary, self.truth, self.stderr = out, summary, truth, stderr


def record_go(d, what, exe, fixture_args, record_args=("-F", "499"), timestamps=True):
    """Record exe with fixture_args (-truth FILE is added) under GOMAXPROCS=2,
    as OTLP (--timestamps unless told not), into d; fails the test, naming
    what, if record exits non-zero."""
    out, js, truth = (os.path.join(d, n) for n in ("go.otlp.pb", "go.json", "truth.jsonl"))
    cmd = [SPANPROF, "record", "--no-report", "-q"] + list(record_args) + ["--format", "otlp"] \
        + (["--timestamps"] if timestamps else []) \
        + ["-o", out, "--summary-json", js, "--", exe] + list(fixture_args) + ["-truth", truth]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=go_env(GOMAXPROCS=2))
    check(p.returncode == 0, "spanprof record %s (rc=%d %s)" % (what, p.returncode,
                                                                p.stderr[-300:]))
    with open(truth) as f:
        lines = [json.loads(l) for l in f]
    return GoRun(out, load_json(js), lines, p.stderr)
