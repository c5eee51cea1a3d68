"""fault_util.py - helpers shared by test_fault_*.py and test_security_*.py.

Independent of spanprof's C code: profiles are written here with a
protobuf encoder made from the pprof field numbers, fixtures are compiled
here from tests/integration/*.c.
"""
import contextlib
import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types

from lib.pb import field_bytes as _ld, field_packed as _packed, field_varint as _vi
from lib.otlp_stub import OtlpStub
from spt import BUILD, SPANPROF, check, fail
import agent_util as au

HERE = os.path.dirname(os.path.abspath(__file__))
SYMBOLIZER = os.path.join(BUILD, "spanprof-symbolizer")


def compile_c(src, out, defines=(), extra=()):
    """gcc with frame pointers; src relative to tests/integration/."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        fail("no C compiler (gcc) to build the test's helper")
    cmd = [cc, "-O1", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer",
           "-o", out, os.path.join(HERE, src)] + ["-D" + d for d in defines] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("compiling %s failed: %s" % (src, p.stderr))
    return out


def in_private_mounts(script, timeout, what):
    """Runs sh script in a private mount namespace (its tmpfs mounts vanish
    with it).  The script exits 90 when it cannot mount; that, a missing
    unshare and the timeout fail the test, naming what."""
    if not shutil.which("unshare"):
        fail("unshare (util-linux) is needed")
    try:
        p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail("%s did not finish within %d s" % (what, timeout))
    if p.returncode == 90:
        fail("cannot mount a tmpfs: %s" % p.stderr)
    return p


def spin_variant(d, n, name=None):
    """A fault_spin binary of variant n (its own build id) at d/name."""
    return compile_c("fault_spin.c", os.path.join(d, name or "spin_%d" % n),
                     defines=["VARIANT=%d" % n], extra=["-Wl,--build-id=sha1"])


def padded(d, src, dst, pad_bytes=1 << 20):
    """src with pad_bytes of a non-loaded section appended (objcopy) at dst;
    returns the prefix a HangFs should answer: the end of the last PT_LOAD,
    rounded up to a page (everything the kernel maps, the build-id note
    and .eh_frame lie below it; the section headers and .symtab past it
    and its readahead, checked)."""
    if not shutil.which("objcopy") or not shutil.which("readelf"):
        fail("binutils (objcopy, readelf) are needed")
    pad = os.path.join(d, "pad.bin")
    with open(pad, "wb") as f:
        f.write(os.urandom(pad_bytes))
    p = subprocess.run(["objcopy", "--add-section", ".hangpad=" + pad, src, dst],
                       capture_output=True, text=True)
    if p.returncode:
        fail("objcopy failed: %s" % p.stderr)
    end = 0
    for line in subprocess.run(["readelf", "-lW", dst], capture_output=True,
                               text=True).stdout.splitlines():
        m = re.match(r"\s*LOAD\s+(0x[0-9a-f]+)\s+\S+\s+\S+\s+(0x[0-9a-f]+)", line)
        if m:
            end = max(end, int(m.group(1), 16) + int(m.group(2), 16))
    hdr = subprocess.run(["readelf", "-hW", dst], capture_output=True, text=True).stdout
    shoff = int(re.search(r"Start of section headers:\s+(\d+)", hdr).group(1))
    prefix = (end + 4095) & ~4095
    check(end and shoff > prefix + (512 << 10),
          "%s: loaded bytes end at %#x, section headers at %#x (past the answered prefix "
          "and its readahead)" % (os.path.basename(dst), end, shoff))
    return prefix


# 64 threads sleeping 1 ms in a loop for 2 s (python3 -c SLEEPERS): many
# short waits open at once, for the off-CPU capture state's bound.
SLEEPERS = r"""
import threading, time
end = time.monotonic() + 2.0
def sleeper():
    while time.monotonic() < end:
        time.sleep(0.001)
ts = [threading.Thread(target=sleeper) for _ in range(64)]
for t in ts: t.start()
for t in ts: t.join()
"""


# ------------------------------------------------------------ pprof writer
class PprofWriter:
    """A minimal pprof Profile: mappings, locations, samples with labels."""

    def __init__(self):
        self.strings = [""]
        self.sidx = {"": 0}
        self.maps, self.locs, self.samples = [], [], []

    def s(self, text):
        if text not in self.sidx:
            self.sidx[text] = len(self.strings)
            self.strings.append(text)
        return self.sidx[text]

    def mapping(self, start, limit, offset, filename, build_id):
        mid = len(self.maps) + 1
        self.maps.append(_vi(1, mid) + _vi(2, start) + _vi(3, limit) + _vi(4, offset) +
                         _vi(5, self.s(filename)) + _vi(6, self.s(build_id)))
        return mid

    def location(self, mapping_id, address):
        lid = len(self.locs) + 1
        self.locs.append(_vi(1, lid) + _vi(2, mapping_id) + _vi(3, address))
        return lid

    def sample(self, loc_ids, count=1, pid=4242, thread="victim"):
        labels = [_vi(1, self.s("pid")) + _vi(3, pid),
                  _vi(1, self.s("thread_name")) + _vi(2, self.s(thread))]
        self.samples.append(_packed(1, loc_ids) + _packed(2, [count, count * 10309278]) +
                            b"".join(_ld(3, l) for l in labels))

    def encode(self):
        st = [_vi(1, self.s("samples")) + _vi(2, self.s("count")),
              _vi(1, self.s("cpu")) + _vi(2, self.s("nanoseconds"))]
        pt = _vi(1, self.s("cpu")) + _vi(2, self.s("nanoseconds"))
        out = b"".join(_ld(1, x) for x in st)
        out += b"".join(_ld(2, x) for x in self.samples)
        out += b"".join(_ld(3, x) for x in self.maps)
        out += b"".join(_ld(4, x) for x in self.locs)
        out += b"".join(_ld(6, x.encode()) for x in self.strings)
        out += _vi(9, int(time.time() * 1e9)) + _vi(10, 10**9) + _ld(11, pt) + _vi(12, 10309278)
        return out

    def write(self, path):
        with open(path, "wb") as f:
            f.write(gzip.compress(self.encode()))
        return path


# ------------------------------------------------------------ ELF facts
def text_section(path):
    """(file offset, size) of .text via readelf (binutils)."""
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.search(r"\]\s+\.text\s+PROGBITS\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            return int(m.group(2), 16), int(m.group(3), 16)
    fail("no .text in %s" % path)


def peak_rss_kb(cmd, timeout=120, **kw):
    """Runs cmd; returns (CompletedProcess, its peak RSS in KiB) from
    wait4(2)'s rusage of that very child (ru_maxrss)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    p._try_wait = types.MethodType(_try_wait_rusage, p)   # this child only
    try:
        so, se = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        fail("%s did not finish within %d s" % (" ".join(cmd), timeout))
    if not _last_maxrss.get(p.pid):
        fail("no rusage for %s" % " ".join(cmd))
    return subprocess.CompletedProcess(cmd, p.returncode, so, se), _last_maxrss[p.pid]


_last_maxrss = {}


def _try_wait_rusage(self, wait_flags):
    """Popen reaps with waitpid (Popen._try_wait); this reaps with wait4 to
    keep the child's rusage, and otherwise does the same."""
    try:
        pid, sts, ru = os.wait4(self.pid, wait_flags)
    except ChildProcessError:
        pid, sts = self.pid, 0
    else:
        if pid == self.pid:
            _last_maxrss[pid] = ru.ru_maxrss
    return (pid, sts)


def env_under_ptrace():
    """The environment for a run under strace: LeakSanitizer cannot work
    under ptrace (a sanitized build would fail at exit), so it is off
    there; the same binaries' runs without strace keep it on."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    return env


def strace_opens(log_path):
    """(path, flags) of every open/openat/openat2 in an strace -f log."""
    out = []
    for line in open(log_path, errors="replace"):
        m = re.search(r'\bopen(?:at2?)?\((?:[^,]+, )?"((?:[^"\\]|\\.)*)"(?:\.\.\.)?, ([^)]*)', line)
        if m:
            out.append((m.group(1), m.group(2), line.strip()))
    return out


# A Python process that maps argv[1] executable (MAP_PRIVATE, its whole
# size, without touching a page), says "mapped", and spins for argv[2] s.
_MAPPER = r"""
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
m = mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_EXEC)
print("mapped", flush=True)
end = time.time() + float(sys.argv[2])
x = 0
while time.time() < end:
    x += 1
"""


class HangFs:
    """hangfs.c (libfuse3) mounted on a fresh directory: FILE (its lib.so)
    answers lookups and opens, never a read, until close().  procs are the
    processes close() kills and reaps (mapper() adds its own; a test adds
    any other process that may touch FILE).  close() ends the hang first
    (a page whose read never ends stays locked, and a process touching it
    would be stuck for good, on a machine others share), then kills the
    daemon (SIGKILL: on SIGTERM its loop waits for its handler threads),
    which fails whatever is still pending, and only then kills and reaps
    procs, unmounts and removes the directory.
    With backing (a file) and prefix (bytes), FILE has backing's size and
    bytes, and only reads past prefix hang (hangfs.c's usage); with
    backing2 too, FILE2 (lib2.so, on the same device) has its bytes, all
    answered.
    hang_opens(comm): from then on opens of FILE (by threads named comm)
    do not answer either.  jit_name(pid): FILE under a runtime's jitdump
    name (modified now).  stuck_readers(): the comms of the threads whose
    reads hang, in order.
    Each instance wants a workdir of its own (its hold file is there)."""

    def __init__(self, workdir, backing=None, prefix=0, backing2=None):
        if not os.path.exists("/dev/fuse"):
            fail("/dev/fuse is missing: load the fuse module (modprobe fuse)")
        libs = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"],
                              capture_output=True, text=True)
        if libs.returncode:
            fail("libfuse3-dev is needed (scripts/deps.sh): %s" % libs.stderr.strip())
        exe = compile_c("hangfs.c", os.path.join(workdir, "hangfs"), extra=libs.stdout.split())
        self.procs = []
        self.mnt = tempfile.mkdtemp(prefix="spanprof-hangfs-")
        self.FILE = os.path.join(self.mnt, "lib.so")
        self.hold = os.path.join(workdir, "hangfs-hold")
        open(self.hold, "w").close()
        self.FILE2 = os.path.join(self.mnt, "lib2.so")
        argv = ([exe, self.mnt, self.hold] + ([backing, str(prefix)] if backing else []) +
                ([backing2] if backing2 else []))
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(50):
            if os.path.ismount(self.mnt):
                return
            time.sleep(0.1)
        self.close()
        fail("hangfs did not mount: %s" % self.proc.stderr.read(2000))

    def mapper(self, secs):
        """A process (in procs) that maps FILE executable without reading
        it and spins for secs seconds; returned once it has mapped it (the
        test fails when it cannot)."""
        p = subprocess.Popen([sys.executable, "-c", _MAPPER, self.FILE, str(secs)],
                             stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        if p.stdout.readline().strip() != "mapped":
            fail("the mapper could not map the FUSE file")
        return p

    def jit_name(self, pid):
        """FILE as jit-PID.dump (hangfs.c: the same file, modified now)."""
        return os.path.join(self.mnt, "jit-%d.dump" % pid)

    def stuck_readers(self):
        """Comms of the threads whose reads of FILE hang (HOLD.log)."""
        try:
            with open(self.hold + ".log") as f:
                return f.read().split()
        except FileNotFoundError:
            return []

    def hang_opens(self, comm=""):
        """Opens of FILE stop answering: all, or those by threads named
        comm only (hangfs.c)."""
        with open(self.hold + ".open", "w") as f:
            f.write(comm + "\n")

    def hang_reads_of(self, tid):
        """From then on FILE and FILE2 are opened direct_io and reads of
        them by thread tid do not answer; others' do (hangfs.c)."""
        with open(self.hold + ".tid", "w") as f:
            f.write("%d\n" % tid)

    def close(self):
        """Once; a second call does nothing."""
        if getattr(self, "closed", False):
            return
        self.closed = True
        for f in (self.hold, self.hold + ".open", self.hold + ".log", self.hold + ".tid"):
            if os.path.exists(f):
                os.unlink(f)
        time.sleep(0.5)
        self.proc.kill()
        self.proc.wait()
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        subprocess.run(["umount", "-l", self.mnt], capture_output=True)
        os.rmdir(self.mnt)


def thread_states(pid):
    """{tid: (state, wchan)} of pid's threads still there."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                st = f.read().rsplit(")", 1)[1].split()[0]
            with open("/proc/%d/task/%s/wchan" % (pid, t)) as f:
                out[int(t)] = (st, f.read().strip())
        except OSError:
            pass
    return out


def stopped_but_stuck(pid):
    """True when pid's main thread has exited and what is left waits on
    a FUSE request (helpers in a hung open or read: a FUSE request the
    daemon has read is waited out even on SIGKILL, so such a process is
    reaped only once the server answers)."""
    ts = thread_states(pid)
    lead = ts.pop(pid, ("X", ""))
    return lead[0] in "ZX" and all(w == "request_wait_answer" for _, w in ts.values())


# Loads a library, says so, waits for a line, then runs its spin
# function for the given seconds.
RUNNER = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
fn = getattr(lib, sys.argv[2])
fn.argtypes = [ctypes.c_double]
print("loaded", flush=True)
sys.stdin.readline()
fn(float(sys.argv[3]) * 1000)
"""


def lib_runner(procs, path, fn, secs):
    """A Python process (appended to procs) that has loaded library path
    and runs its function fn for secs seconds once lib_go() says so."""
    p = subprocess.Popen([sys.executable, "-c", RUNNER, path, fn, str(secs)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    procs.append(p)
    if p.stdout.readline().strip() != "loaded":
        fail("the runner could not load %s" % path)
    return p


def lib_go(p):
    p.stdin.write("go\n")
    p.stdin.flush()


def stop_record_stuck(rec, fs, stuck_what):
    """SIGTERM to a running `spanprof record` (Popen, text pipes) with
    helpers in a hung FUSE request (waited out even on SIGKILL): within 5 s
    it must have ended every thread but those; then fs.close() ends the
    hang and record must be reaped, exit 0.  Returns its stderr."""
    t0 = time.monotonic()
    rec.send_signal(signal.SIGTERM)
    au.wait_for(lambda: rec.poll() is not None or stopped_but_stuck(rec.pid), 20,
                what="record to end every thread but those in the hung request (%s)"
                % stuck_what, note=lambda: ": threads left %s" % thread_states(rec.pid))
    dt = time.monotonic() - t0
    print("record: stopped %.2f s after SIGTERM; left: %s" % (dt, thread_states(rec.pid)),
          flush=True)
    check(dt < 5, "record: stopped %.1f s after SIGTERM" % dt)
    fs.close()
    try:
        _, err = rec.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        fail("record was not reaped within 20 s of the hang's end (%s)" % stuck_what)
    print(err, flush=True)
    check(rec.returncode == 0, "record: exit 0 (got %d)" % rec.returncode)
    return err


def sigterm_record(rec, stuck_what):
    """Stops a running `spanprof record` (Popen, text pipes) with SIGTERM:
    it must exit 0 within 5 s (20 s at most, then it is killed and the test
    fails naming stuck_what).  Returns its stderr (the summary), printed."""
    t0 = time.monotonic()
    rec.send_signal(signal.SIGTERM)
    try:
        _, err = rec.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        rec.kill()
        fail("record did not stop within 20 s of SIGTERM (%s)" % stuck_what)
    dt = time.monotonic() - t0
    print(err, flush=True)
    check(rec.returncode == 0, "record: exit 0 (got %d)" % rec.returncode)
    check(dt < 5, "record: stopped %.1f s after SIGTERM" % dt)
    return err


def sigterm_agent(a):
    """Stops a running au.Agent with SIGTERM: it must exit 0 within 6 s
    (checked; 15 s at most, then it is killed and the test fails)."""
    rc, dt = a.stop()
    check(rc == 0 and dt < 6, "agent: SIGTERM exits 0 in %.1f s (rc %s)" % (dt, rc))


@contextlib.contextmanager
def exporting_agent(workdir, args=()):
    """`spanprof agent -F 97 --interval 1` (and args) exporting to an
    OtlpStub that takes every batch; yields (agent, stub), started and
    healthy.  Whatever ends the block, the agent is killed if it still
    runs and the stub closed."""
    stub = OtlpStub(lambda i: (200, {}))
    try:
        a = au.Agent(["-F", "97", "--interval", "1", "--endpoint",
                      "http://127.0.0.1:%d" % stub.port] + list(args), workdir)
        try:
            yield a, stub
        finally:
            a.kill()
    finally:
        stub.close()


def watch_healthz(a, secs=6):
    """Probes the agent's /healthz every 0.25 s for secs seconds (2 s
    timeout each); returns the probes that did not answer 200, as
    (seconds since the start, status, body)."""
    t0 = time.monotonic()
    bad = []
    while time.monotonic() - t0 < secs:
        st, body = au.http_get(a.port, "/healthz", timeout=2)
        if st != 200:
            bad.append((round(time.monotonic() - t0, 1), st, body))
        time.sleep(0.25)
    return bad
