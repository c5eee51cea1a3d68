"""agent_util.py - helpers for the `spanprof agent` integration tests
(tests/integration/test_agent_*.py): starting the agent and a receiver on
loopback, a strict Prometheus text parser.  The OTLP reader and the
OTLP/HTTP stub are lib/otlp.py and lib/otlp_stub.py.

Python 3 standard library only.  Every wait is bounded.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

from lib.ports import free_port  # noqa: F401 (agent_util.free_port for the agent tests)
from spt import BUILD, SPANPROF, check, fail, skip

SYMBOLIZER = os.path.join(BUILD, "spanprof-symbolizer")
FIXTURES = os.path.join(BUILD, "fixtures")
DEMO = os.path.join(BUILD, "spanprof-demo")
PATH = "/v1development/profiles"


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

    def __init__(self, args, workdir, env=None, metrics=True, wait=True, preexec_fn=None,
                 wrap=()):
        """wrap: a command line the agent runs under (strace, setpriv)."""
        self.port = free_port() if metrics else None
        self.log_path = os.path.join(workdir, "agent-%d.log" % int(time.time() * 1000))
        self.log = open(self.log_path, "w")
        cmd = list(wrap) + [SPANPROF, "agent"] + args
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


def wait_for(pred, timeout, step=0.2, what="condition", note=None):
    """pred()'s first true value; fails after timeout seconds, naming what,
    and what note() (if given) says of the state at the timeout."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = pred()
        if v:
            return v
        time.sleep(step)
    fail("timed out after %.0fs waiting for %s%s" % (timeout, what, note() if note else ""))


# ------------------------------------------------------------ memory cgroup
class MemCgroup:
    """A v1 memory cgroup of the test's own, ROOT/spanprof-test-PID (the
    memory guard's tests run the agent in it).  MemCgroup.require() first
    skips the test (77) on a host without the v1 memory hierarchy; .remove()
    deletes the cgroup once the processes in it are gone (each test calls it
    in its finally)."""
    ROOT = "/sys/fs/cgroup/memory"

    @staticmethod
    def require():
        if not os.path.exists(os.path.join(MemCgroup.ROOT, "memory.limit_in_bytes")):
            skip("no cgroup v1 memory hierarchy at %s (v2 hosts: covered by the unit test)"
                 % MemCgroup.ROOT)

    def __init__(self):
        self.path = os.path.join(self.ROOT, "spanprof-test-%d" % os.getpid())
        os.mkdir(self.path)

    def put(self, name, v):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(v))

    def get(self, name):
        with open(os.path.join(self.path, name)) as f:
            return f.read()

    def join(self):
        """preexec_fn for a child that is to run in the cgroup."""
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def check_no_oom_kill(self):
        kills = [l for l in self.get("memory.oom_control").split("\n")
                 if l.startswith("oom_kill ")]
        check(not kills or kills[0].split()[1] == "0", "no OOM kill in the cgroup (%s)"
              % (kills[0] if kills else "no oom_kill line"))

    def remove(self):
        for _ in range(50):     # the last process may take a moment to leave it
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)


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


def check_promtool(text):
    """`promtool check metrics` (Debian's prometheus package) exits 0 and
    prints nothing on the scrape text."""
    promtool = shutil.which("promtool")
    if not promtool:
        fail("promtool is not installed (Debian package prometheus): run scripts/deps.sh")
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=30)
    check(p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(),
          "promtool check metrics: clean (rc=%d %s%s)" % (p.returncode, p.stdout, p.stderr))


def delta(before, after, name, **labels):
    """How much one series grew between two scrapes (both must have it)."""
    return after.get1(name, **labels) - before.get1(name, **labels)


# ------------------------------------------------------------ OTLP
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


class StoreServe:
    """`spanprof-symbolizer serve --store-dir` as nobody (serve's default as
    root), with output and store directories of its own owned by nobody: it
    shares no file with the agent.  .port, .out, .store, .log_path."""

    def __init__(self, workdir, extra=()):
        import pwd
        import tempfile
        nobody = pwd.getpwnam("nobody")
        self.top = tempfile.mkdtemp(prefix="spanprof-serve-")
        self.out = os.path.join(self.top, "out")
        self.store = os.path.join(self.top, "store")
        for x in (self.top, self.out, self.store):
            os.makedirs(x, exist_ok=True)
            os.chown(x, nobody.pw_uid, nobody.pw_gid)
        self.port = free_port()
        self.log_path = os.path.join(workdir, "serve.log")
        log = open(self.log_path, "w")
        self.p = subprocess.Popen([SYMBOLIZER, "serve", "--listen", "127.0.0.1:%d" % self.port,
                                   "--output-dir", self.out, "--store-dir", self.store,
                                   "--no-debuginfod"] + list(extra),
                                  stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: self.p.poll() is not None or http_get(self.port, "/metrics")[0] == 200,
                 15, what="serve's /metrics")
        if self.p.poll() is not None:
            fail("serve exited: %s" % open(self.log_path).read())

    def metrics(self):
        st, body = http_get(self.port, "/metrics")
        if st != 200:
            fail("GET serve's /metrics -> %s %s" % (st, body[:200]))
        return parse_prom(body)

    def stored(self, kind):
        """Symbol files of kind (elf, jit, kallsyms) serve has stored."""
        return self.metrics().get("spanprof_symbolizer_symbols_stored_total", {}).get(
            (("kind", kind),), 0)

    def stop(self):
        """SIGTERM, wait; returns its log."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            self.p.wait(timeout=30)
        return open(self.log_path).read()

    def cleanup(self):
        import shutil
        shutil.rmtree(self.top, ignore_errors=True)


def exported_after_upload(agent, srv, kind, batches, timeout=40):
    """Waits until serve has stored a symbol file of kind the agent uploaded
    (--upload-symbols), then until the agent has exported batches more
    batches: serve symbolized those with it.  Instead of a fixed sleep."""
    wait_for(lambda: srv.stored(kind) >= 1, timeout, what="serve to store an uploaded %s file"
             % kind)
    def exported():
        return agent.metrics().get1("spanprof_export_batches_total", outcome="exported")
    n0 = exported()
    wait_for(lambda: exported() >= n0 + batches, timeout,
             what="%d batches exported after serve stored the %s file" % (batches, kind))


def busy(seconds, name="callchain"):
    """Starts a fixture that keeps a CPU busy."""
    exe = os.path.join(FIXTURES, name)
    if not os.path.exists(exe):
        fail("missing fixture %s: run make" % exe)
    return subprocess.Popen([exe, str(seconds)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def task_status(pid):
    """{tid: {field: value}} of /proc/PID/task/*/status (Name, Uid, CapEff,
    NoNewPrivs, ...), plus "wchan", for the threads still there."""
    out = {}
    for t in os.listdir("/proc/%d/task" % pid):
        st = {}
        try:
            for line in open("/proc/%d/task/%s/status" % (pid, t)):
                k, _, v = line.partition(":")
                st[k] = v.strip()
            st["wchan"] = open("/proc/%d/task/%s/wchan" % (pid, t)).read().strip()
        except OSError:
            continue
        out[int(t)] = st
    return out
