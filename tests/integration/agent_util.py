"""agent_util.py - helpers for the `spanprof agent` integration tests
(tests/integration/test_agent_*.py): starting the agent and a receiver on
loopback, a strict Prometheus text parser, an OTLP reader that also returns
symbolized function names, and a scriptable OTLP/HTTP stub.

Python 3 standard library only.  Every wait is bounded.
"""
import gzip
import http.server
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.request

import spt
from spt import BUILD, SPANPROF, fail, fields

SYMBOLIZER = os.path.join(BUILD, "spanprof-symbolizer")
FIXTURES = os.path.join(BUILD, "fixtures")
DEMO = os.path.join(BUILD, "spanprof-demo")
PATH = "/v1development/profiles"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def http_get(port, path, timeout=5):
    """Returns (status, body text); (0, error) when nothing answers."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (OSError, urllib.error.URLError) as e:
        return 0, str(e)


class Agent:
    """A running `spanprof agent` with its metrics port and log file."""

    def __init__(self, args, workdir, env=None, metrics=True, wait=True, preexec_fn=None):
        self.port = free_port() if metrics else None
        self.log_path = os.path.join(workdir, "agent-%d.log" % int(time.time() * 1000))
        self.log = open(self.log_path, "w")
        cmd = [SPANPROF, "agent"] + args
        if metrics:
            cmd += ["--metrics-addr", "127.0.0.1:%d" % self.port]
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("OTEL_"):
                del e[k]
        e.update(env or {})
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=e,
                                  preexec_fn=preexec_fn)
        self.pid = self.p.pid
        if wait and metrics:
            self.wait_healthy()

    def wait_healthy(self, timeout=20):
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.p.poll() is not None:
                fail("agent exited early (rc=%s): %s" % (self.p.returncode, self.text()))
            st, _ = http_get(self.port, "/healthz", timeout=2)
            if st == 200:
                return
            time.sleep(0.2)
        fail("agent not healthy after %ds: %s" % (timeout, self.text()))

    def metrics(self):
        st, body = http_get(self.port, "/metrics")
        if st != 200:
            fail("GET /metrics -> %s %s" % (st, body[:200]))
        return parse_prom(body)

    def text(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Sends sig, waits; returns (rc, seconds to exit)."""
        t0 = time.time()
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            fail("agent did not exit within %ds of %s: %s" % (timeout, sig, self.text()))
        return rc, time.time() - t0

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def wait_for(pred, timeout, step=0.2, what="condition"):
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = pred()
        if v:
            return v
        time.sleep(step)
    fail("timed out after %.0fs waiting for %s" % (timeout, what))


# ------------------------------------------------------------ Prometheus
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LNAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
LVAL = r'"(?:[^"\\\n]|\\[\\"n])*"'
LABEL = r"%s=%s" % (LNAME, LVAL)
SAMPLE_RE = re.compile(r"^(%s)(?:\{(%s(?:,%s)*)?\})? (\S+)$" % (NAME, LABEL, LABEL))
LABEL_RE = re.compile(r"(%s)=(%s)" % (LNAME, LVAL))
VALUE_RE = re.compile(r"^(?:[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|NaN|[+-]Inf)$")
TYPES = ("counter", "gauge", "summary", "histogram", "untyped")


class Metrics(dict):
    """{name: {labels (sorted tuple of pairs): value}} plus .types."""

    def get1(self, name, **labels):
        want = tuple(sorted(labels.items()))
        fam = self.get(name)
        if fam is None or want not in fam:
            fail("metric %s%s missing" % (name, labels or ""))
        return fam[want]

    def sum(self, name):
        return sum(self.get(name, {}).values())


def _unescape(v):
    return v[1:-1].replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")


def parse_prom(text):
    """Strict text format 0.0.4: every line is a HELP/TYPE comment or a sample;
    HELP and TYPE come once per family and before its samples; families are
    contiguous; counters end in _total; sample names belong to the family
    (summary/histogram suffixes); no duplicate series; values parse."""
    m = Metrics()
    m.types = {}
    helps = set()
    current = None
    closed = set()
    if not text.endswith("\n"):
        fail("metrics text does not end with a newline")
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = "line %d %r" % (n, line)
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) < 3 or parts[1] not in ("HELP", "TYPE"):
                fail("bad comment, " + where)
            name = parts[2]
            if not re.fullmatch(NAME, name):
                fail("bad family name, " + where)
            if name in closed or (current and name != current and
                                  (name in m.types or name in helps)):
                fail("family %s not contiguous, %s" % (name, where))
            if current and current != name:
                closed.add(current)
            current = name
            if parts[1] == "HELP":
                if name in helps:
                    fail("second HELP, " + where)
                helps.add(name)
            else:
                if name in m.types:
                    fail("second TYPE, " + where)
                if len(parts) != 4 or parts[3] not in TYPES:
                    fail("bad TYPE, " + where)
                if parts[3] == "counter" and not name.endswith("_total"):
                    fail("counter not ending in _total, " + where)
                m.types[name] = parts[3]
            continue
        mm = SAMPLE_RE.match(line)
        if not mm:
            fail("not a sample line, " + where)
        name, labels, value = mm.group(1), mm.group(2), mm.group(3)
        if not VALUE_RE.match(value):
            fail("bad value, " + where)
        fam = name
        t = m.types.get(current)
        if t in ("summary", "histogram"):
            for suf in ("_sum", "_count", "_bucket"):
                if name == current + suf:
                    fam = current
        if fam != current or current not in m.types or current not in helps:
            fail("sample without its HELP and TYPE first, " + where)
        lab = tuple(sorted((k, _unescape(v)) for k, v in LABEL_RE.findall(labels or "")))
        series = m.setdefault(name, {})
        if lab in series:
            fail("duplicate series, " + where)
        series[lab] = float(value)
    for fam, t in m.types.items():
        if t == "histogram":
            _check_histogram(m, fam)
    return m


def _check_histogram(m, fam):
    """Buckets carry le, are cumulative in le order, end with le="+Inf",
    and that bucket equals _count."""
    buckets = m.get(fam + "_bucket", {})
    les = []
    for lab, v in buckets.items():
        d = dict(lab)
        if "le" not in d or len(d) != 1:
            fail("histogram %s bucket without a lone le label: %s" % (fam, d))
        les.append((float(d["le"]), v))
    les.sort()
    if not les or les[-1][0] != float("inf"):
        fail("histogram %s has no le=\"+Inf\" bucket" % fam)
    if any(b[1] < a[1] for a, b in zip(les, les[1:])):
        fail("histogram %s buckets not cumulative: %s" % (fam, les))
    if les[-1][1] != m.get(fam + "_count", {}).get((), None):
        fail("histogram %s: +Inf bucket %s != _count" % (fam, les[-1][1]))


def check_monotonic(before, after):
    """Every counter series present in both scrapes did not go down."""
    for fam, t in after.types.items():
        names = ([fam] if t == "counter" else
                 [fam + "_sum", fam + "_count"] if t == "summary" else
                 [fam + "_sum", fam + "_count", fam + "_bucket"] if t == "histogram" else [])
        for name in names:
            for lab, v in after.get(name, {}).items():
                old = before.get(name, {}).get(lab)
                if old is not None and v < old:
                    fail("counter %s%s went down: %s -> %s" % (name, dict(lab), old, v))


# ------------------------------------------------------------ OTLP
def read_otlp_symbolized(path):
    """Samples of an OTLP request: pid, service, container, trace_id, span_id,
    attrs (sample attributes by key), count (values[0] or len(ts)), funcs
    (leaf first, function names from the dictionary, '' where
    unsymbolized)."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    dic, rps = b"", []
    for fn, wt, v in fields(raw):
        if fn == 2:
            dic = v
        elif fn == 1:
            rps.append(v)
    T = {k: [] for k in range(1, 8)}
    for fn, wt, v in fields(dic):
        T[fn].append(v)
    strings = [s.decode() for s in T[5]]
    funcs = []
    for f in T[3]:
        d = {a: b for a, _, b in fields(f)}
        funcs.append(strings[d.get(1, 0)])
    locs = []
    for l in T[2]:
        names = []
        for f, w, x in fields(l):
            if f == 3:
                d = {a: b for a, _, b in fields(x)}
                fi = d.get(1, 0)
                names.append(funcs[fi] if fi < len(funcs) else "")
        locs.append(names[-1] if names else "")   # the caller (out-of-line) is last
    stacks = []
    for s in T[7]:
        li = []
        for f, w, x in fields(s):
            if f == 1:
                li += spt._packed(w, x)
        stacks.append([locs[i] for i in li])
    links = []
    for l in T[4]:
        d = {f: x for f, _, x in fields(l)}
        links.append((d.get(1, b"").hex() or None, d.get(2, b"").hex() or None))

    def anyval(b):
        for f, w, x in fields(b):
            if f == 1:
                return x.decode()
            if f == 3:
                return spt._s64(x)
            if f == 8:
                return strings[x]
        return None

    attrs = []
    for a in T[6]:
        d = {f: x for f, _, x in fields(a)}     # KeyValueAndUnit: key_strindex 1, value 2
        attrs.append((strings[d.get(1, 0)], anyval(d[2]) if 2 in d else None))

    out = []
    for rp in rps:
        res, scopes = {}, []
        for f, w, x in fields(rp):
            if f == 1:
                for f2, w2, kv in fields(x):
                    if f2 == 1:
                        d = {a: b for a, _, b in fields(kv)}
                        key = strings[d[3]] if 3 in d else d.get(1, b"").decode()
                        res[key] = anyval(d[2]) if 2 in d else None
            elif f == 2:
                scopes.append(x)
        for sc in scopes:
            for f, w, prof in fields(sc):
                if f != 2:
                    continue
                for pf, pw, pv in fields(prof):
                    if pf != 2:
                        continue
                    s = {"res": res, "pid": res.get("process.pid"),
                         "service": res.get("service.name"), "funcs": [], "ts": 0,
                         "values": [], "trace_id": None, "span_id": None, "attrs": {}}
                    for sf, sw, sv in fields(pv):
                        if sf == 1:
                            s["funcs"] = stacks[sv]
                        elif sf == 2:
                            for i in spt._packed(sw, sv):
                                k, val = attrs[i]
                                s["attrs"][k] = val
                        elif sf == 3 and sv:
                            s["trace_id"], s["span_id"] = links[sv]
                        elif sf == 4:
                            s["values"] += [spt._s64(y) for y in spt._packed(sw, sv)]
                        elif sf == 5:
                            s["ts"] += len(sv) // 8
                    s["count"] = s["ts"] or (s["values"][0] if s["values"] else 0)
                    out.append(s)
    return out


def otlp_files(d):
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d)
                  if ".otlp" in f and not f.startswith("."))


def start_symbolizer(port, outdir, workdir):
    log = open(os.path.join(workdir, "symbolizer.log"), "w")
    p = subprocess.Popen([SYMBOLIZER, "serve", "--listen", "127.0.0.1:%d" % port,
                          "--output-dir", outdir, "--allow-root", "--no-debuginfod"],
                         stdout=log, stderr=subprocess.STDOUT)
    t0 = time.time()
    while time.time() - t0 < 10:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p
        except OSError:
            if p.poll() is not None:
                fail("symbolizer serve exited: rc=%s" % p.returncode)
            time.sleep(0.1)
    fail("symbolizer serve did not listen")


# ------------------------------------------------------------ stub endpoint
class Stub:
    """OTLP/HTTP stub on loopback.  script(n) -> (status, headers dict) for
    the n-th request (0-based); every request is recorded with its time."""

    def __init__(self, script, port=None):
        self.script = script
        self.requests = []          # (monotonic time, path, body bytes)
        self.lock = threading.Lock()
        stub = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n)
                with stub.lock:
                    i = len(stub.requests)
                    stub.requests.append((time.monotonic(), self.path, body,
                                          self.headers.get("Content-Encoding")))
                status, hdrs = stub.script(i)
                self.send_response(status)
                for k, v in hdrs.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.port = port or free_port()
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), H)
        self.srv.daemon_threads = True
        self.th = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.th.start()

    def count(self):
        with self.lock:
            return len(self.requests)

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def busy(seconds, name="callchain"):
    """Starts a fixture that keeps a CPU busy."""
    exe = os.path.join(FIXTURES, name)
    if not os.path.exists(exe):
        fail("missing fixture %s: run make" % exe)
    return subprocess.Popen([exe, str(seconds)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
