# SPDX-License-Identifier: MIT
"""benchlib.py - helpers shared by the spanprof record benchmarks in bench/.

Python 3 standard library only.  Not a benchmark by itself: bpf_cost.py,
collector_overhead.py and rss.py import it.

- the load: bench/load_mixed.c compiled with clang and frame pointers;
- which BPF programs a process owns: prog_id lines of /proc/PID/fdinfo/*
  (bpftool 7.1 from Debian shows no pids), their run_time_ns / run_cnt from
  `bpftool prog show -j` (kernel.bpf_stats_enabled=1, restored afterwards);
- a process's CPU (utime+stime from /proc/PID/stat, and the exact total from
  wait4's rusage at exit), its RSS from /proc/PID/status;
- medians and a plain-text table.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("SPANPROF_BUILD", os.path.join(ROOT, "build"))
SPANPROF = os.path.join(BUILD, "spanprof")
FIXTURES = os.path.join(BUILD, "fixtures")
WORK = os.environ.get("BENCH_TMP", "/tmp/spanprof-bench")
TICK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count()


def die(msg):
    print(f"{os.path.basename(sys.argv[0])}: {msg}", file=sys.stderr)
    sys.exit(1)


def require(tools=()):
    if os.geteuid() != 0:
        die("run as root (BPF, perf events, bpf_stats_enabled)")
    if not os.access(SPANPROF, os.X_OK):
        die(f"{SPANPROF} missing: run `make -j2` first")
    for t in tools:
        if not shutil.which(t):
            die(f"{t} not found: `bash scripts/deps.sh --with-bench` installs the peers")
    os.makedirs(WORK, exist_ok=True)


def build_load():
    """Compile bench/load_mixed.c (frame pointers, like tests/fixtures)."""
    src = os.path.join(ROOT, "bench", "load_mixed.c")
    out = os.path.join(WORK, "load_mixed")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        subprocess.run(["clang", "-O1", "-g", "-fno-omit-frame-pointer",
                        "-mno-omit-leaf-frame-pointer", "-fno-inline",
                        "-fno-optimize-sibling-calls", "-Wl,--build-id",
                        "-Wall", "-Werror", "-o", out, src, "-lpthread"],
                       check=True)
    return out


def machine():
    return f"kernel {os.uname().release}, {NCPU} CPUs, load average " + \
        " ".join(open("/proc/loadavg").read().split()[:3])


class BpfStats:
    """with BpfStats(): kernel.bpf_stats_enabled=1, restored on exit."""
    PATH = "/proc/sys/kernel/bpf_stats_enabled"

    def __enter__(self):
        self.old = open(self.PATH).read().strip()
        subprocess.run(["sysctl", "-q", "-w", "kernel.bpf_stats_enabled=1"], check=True)
        return self

    def __exit__(self, *exc):
        subprocess.run(["sysctl", "-q", "-w", f"kernel.bpf_stats_enabled={self.old}"])
        return False


def prog_ids(pid):
    """BPF program ids held open by process pid (from /proc/PID/fdinfo)."""
    ids = set()
    d = f"/proc/{pid}/fdinfo"
    try:
        fds = os.listdir(d)
    except OSError:
        return ids
    for fd in fds:
        try:
            with open(os.path.join(d, fd)) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def bpftool_progs():
    """id -> {name, type, run_time_ns, run_cnt} for every loaded program."""
    out = subprocess.run(["bpftool", "prog", "show", "-j"], check=True,
                         capture_output=True, text=True).stdout
    return {p["id"]: {"name": p.get("name", ""), "type": p.get("type", ""),
                      "ns": p.get("run_time_ns", 0), "cnt": p.get("run_cnt", 0)}
            for p in json.loads(out)}


def wait_progs(pid, want, timeout=30.0):
    """Waits until process pid holds programs matching want(prog) (a predicate
    on bpftool's dict); returns their ids."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        ids = prog_ids(pid)
        if ids:
            progs = bpftool_progs()
            sel = {i for i in ids if i in progs and want(progs[i])}
            if sel:
                return sel
        time.sleep(0.1)
    die(f"process {pid} loaded no matching BPF program within {timeout} s")


def sum_stats(progs, ids):
    ns = sum(progs[i]["ns"] for i in ids if i in progs)
    cnt = sum(progs[i]["cnt"] for i in ids if i in progs)
    return ns, cnt


def percpu_map_sum(prog_ids, name, fields):
    """Sums the named fields of a per-CPU map called name that one of the
    programs prog_ids uses (bench instruments such as ctx_timing); None if
    there is no such map."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
    maps = [m for g in json.loads(out) if g["id"] in prog_ids for m in g.get("map_ids", [])]
    for mid in maps:
        info = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", str(mid)],
                                         capture_output=True, text=True).stdout)
        if info.get("name") != name:
            continue
        dump = json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "id", str(mid)],
                                         capture_output=True, text=True).stdout)
        tot = [0] * len(fields)
        for cpu in dump[0]["formatted"]["values"]:
            for i, f in enumerate(fields):
                tot[i] += cpu["value"][f]
        return tot
    return None


def proc_cpu_ns(pid):
    """utime+stime of process pid (all threads) in ns, from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    fields = s[s.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // TICK


def proc_status(pid):
    """VmRSS, VmHWM, RssAnon, RssFile, RssShmem in KiB (missing -> 0)."""
    r = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                    r[k] = int(v.split()[0])
    except OSError:
        return None
    return r


def spawn(argv, out=subprocess.DEVNULL, err=subprocess.DEVNULL, env=None):
    """env: extra environment variables for the child."""
    full = dict(os.environ, **env) if env else None
    return subprocess.Popen(argv, stdout=out, stderr=err, env=full)


def reap(p):
    """wait4 on Popen p: (exit status, user+system CPU ns, ru_maxrss KiB,
    system CPU ns)."""
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return (p.returncode, int((ru.ru_utime + ru.ru_stime) * 1e9), ru.ru_maxrss,
            int(ru.ru_stime * 1e9))


def stop(p, sig=signal.SIGINT, timeout=30):
    if p.poll() is None:
        p.send_signal(sig)
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def table(headers, rows):
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for j, r in enumerate(cells):
        lines.append("  ".join(c.rjust(w[i]) if i else c.ljust(w[i]) for i, c in enumerate(r)))
        if j == 0:
            lines.append("  ".join("-" * x for x in w))
    print("\n".join(lines))


def fmt(x, nd=2):
    return "-" if x is None else f"{x:.{nd}f}"
