#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The unwind table builder keeps to its CPU budget (--unwind-cpu) under a
real load, and still builds every table, later.

The load: every ELF file with .eh_frame in the usual library and binary
directories (on this machine ~1400 files, ~57 MiB of .eh_frame: libLLVM,
libclang-cpp, node, python3.11, libstdc++, ...), mapped executable by 8
Python processes (each maps its share whole, PROT_EXEC, without touching
it, then spins 2 s so that the agent samples it and reads its maps), so
the builds are all queued within the first seconds.  Built at full
speed that is about 2 s of CPU here (the in-memory ELF image made it
cheaper: one CI run needed 1.94 s); the agent runs with --unwind-cpu 25
(25% of one CPU, a 1 s burst allowed: well under the whole CPU the
builder takes unthrottled).  Polling every
0.5 s the builder thread's own CPU time from /proc/AGENT/task/TID/stat
(the thread named sp-unwind; an independent reader of what the builder's token bucket
counts with CLOCK_THREAD_CPUTIME_ID), checks:
  - at every poll, and between every two polls, its CPU time is within
    25% of the wall time elapsed plus 2.1 s (the 1 s burst, one job's
    overrun - a single table is paid for after it is built: libLLVM's
    takes ~0.6 s - and the ticks);
  - the bound was binding: the builder needed >= 1.5 s of CPU (half a
    burst more than the burst), so the wall time it took is >= 4x the CPU
    past the burst;
  - the tables still get built: the queue empties, and at least 90% of
    the files mapped have a table (built), the rest are counted outcomes;
  - /metrics' builder CPU agrees with /proc (within 10% + 50 ms).
Root, real BPF.  Bounded: about a minute on this machine.
"""
import glob
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, fail, require_root, tmpdir  # noqa: E402
import agent_util as au  # noqa: E402

require_root()
SHARE = 0.25
SLACK = 2.1
PROCS = 8
TICK = os.sysconf("SC_CLK_TCK")
d = tmpdir()


def eh_frame_bytes(path):
    """.eh_frame size of a 64-bit ELF file (0: none, or not ELF)."""
    try:
        with open(path, "rb") as f:
            h = f.read(64)
            if len(h) < 64 or h[:4] != b"\x7fELF" or h[4] != 2:
                return 0
            shoff, = struct.unpack_from("<Q", h, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from("<HHH", h, 0x3a)
            if not shoff or not shnum or shstrndx >= shnum or shentsize < 64:
                return 0
            f.seek(shoff)
            sh = f.read(shentsize * shnum)
            secs = [struct.unpack_from("<IIQQQQ", sh, i * shentsize) for i in range(shnum)]
            f.seek(secs[shstrndx][4])
            strs = f.read(secs[shstrndx][5])
            for s in secs:
                if strs[s[0]:s[0] + 10] == b".eh_frame\0" and s[1] == 1:
                    return s[5]
    except (OSError, struct.error, IndexError):
        return 0
    return 0


files, seen, total_eh = [], set(), 0
for pat in ("/usr/lib/x86_64-linux-gnu/*.so*", "/usr/lib/x86_64-linux-gnu/*/*.so*",
            "/usr/lib/llvm-*/lib/*.so*", "/usr/bin/*", "/usr/sbin/*"):
    for p in sorted(glob.glob(pat)):
        if os.path.islink(p) or not os.path.isfile(p):
            continue
        st = os.stat(p)
        if (st.st_dev, st.st_ino) in seen or st.st_size < 4096:
            continue
        eh = eh_frame_bytes(p)
        if eh:
            seen.add((st.st_dev, st.st_ino))
            files.append(p)
            total_eh += eh
print("load: %d files with .eh_frame, %.1f MiB of it" % (len(files), total_eh / 2**20), flush=True)
check(total_eh >= 20 << 20, "enough CFI to build for the budget to bind (%.1f MiB)"
      % (total_eh / 2**20))

MAPPER = r"""
import mmap, os, sys, time
maps = []
for p in sys.argv[2:]:
    try:
        fd = os.open(p, os.O_RDONLY)
        maps.append(mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_PRIVATE,
                              mmap.PROT_READ | mmap.PROT_EXEC))
        os.close(fd)
    except OSError:
        pass
print(len(maps), flush=True)
# Spin once told (the agent reads a process's maps when it first samples
# it), then wait.
sys.stdin.readline()
end = time.time() + 2
while time.time() < end:
    pass
time.sleep(float(sys.argv[1]))
"""
procs = []


def builder_tid(pid):
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
                if f.read().strip() == "sp-unwind":
                    return int(t)
        except OSError:
            pass
    return None


def thread_cpu(pid, tid):
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICK     # utime, stime


a = None
try:
    mapped = 0
    for i in range(PROCS):
        p = subprocess.Popen([sys.executable, "-c", MAPPER, "600"] + files[i::PROCS],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        procs.append(p)
        mapped += int(p.stdout.readline())
    check(mapped >= 0.95 * len(files), "the mappers map %d of %d files" % (mapped, len(files)))
    # --unwind-build eager: the mappers never run code in the files, so
    # lazy builds (the agent's default) would wait for samples that never
    # come; the budget is what is tested here.
    a = au.Agent(["-F", "97", "--interval", "5", "--no-trace-context", "--unwind-build", "eager",
                  "--unwind-cpu",
                  str(int(SHARE * 100)), "--unwind-budget", "512m", "--output-dir",
                  os.path.join(d, "out")], d)
    t0 = time.monotonic()
    for p in procs:
        p.stdin.write("spin\n")
        p.stdin.flush()
    tid = au.wait_for(lambda: builder_tid(a.pid), timeout=10, what="the sp-unwind thread")
    polls = []          # (seconds since t0, builder CPU seconds)
    done_at = None
    deadline = t0 + 240
    quiet = []          # (queue, built) of recent polls
    while time.monotonic() < deadline:
        t = time.monotonic() - t0
        polls.append((t, thread_cpu(a.pid, tid)))
        m = a.metrics()
        quiet = (quiet + [(m.get1("spanprof_unwind_build_queue"),
                           m.get1("spanprof_unwind_tables_total", outcome="built"))])[-3:]
        # Done: the queue empty and nothing built for three polls (files
        # past the queue's 1024 are queued by the builder's next tick).
        if (t > 3 and len(quiet) == 3 and all(q == (0, quiet[0][1]) for q in quiet) and
                quiet[0][1] >= 0.5 * mapped):
            done_at = t
            break
        time.sleep(0.5)
    if done_at is None:
        fail("the build queue did not empty in 240 s (builder CPU %.1f s; queue %d)"
             % (polls[-1][1], a.metrics().get1("spanprof_unwind_build_queue")))
    cpu = polls[-1][1]
    print("builder: %.2f s CPU in %.1f s of wall time (%.1f%% of a CPU; budget %d%%), "
          "%d polls" % (cpu, done_at, 100 * cpu / done_at, SHARE * 100, len(polls)), flush=True)
    worst = max((cj - ci) - (SHARE * (tj - ti) + SLACK)
                for i, (ti, ci) in enumerate(polls) for (tj, cj) in polls[i:])
    check(worst <= 0, "between any two polls the builder used at most %d%% of the wall time "
          "+ %.1f s (worst margin %.2f s)" % (SHARE * 100, SLACK, -worst))
    check(all(c <= SHARE * t + SLACK for t, c in polls),
          "from the start, the builder's CPU stayed within %d%% of the wall time + %.1f s"
          % (SHARE * 100, SLACK))
    check(cpu >= 1.5, "the load needed %.2f s of builder CPU (>= 1.5 s: the budget binds)"
          % cpu)
    check(done_at >= (cpu - 1.0) / SHARE * 0.9,
          "building took %.1f s of wall time for %.2f s of CPU (throttled)" % (done_at, cpu))
    m = a.metrics()
    built = m.get1("spanprof_unwind_tables_total", outcome="built")
    outcomes = sum(m.get1("spanprof_unwind_tables_total", outcome=o)
                   for o in ("built", "no_cfi", "malformed", "unreadable", "too_slow",
                             "too_large"))
    check(built >= 0.9 * mapped, "tables built for %d files (>= 90%% of the %d mapped; all "
          "outcomes %d)" % (built, mapped, outcomes))
    mcpu = m.get1("spanprof_unwind_builder_cpu_seconds_total")
    cpu_now = thread_cpu(a.pid, tid)
    check(abs(mcpu - cpu_now) <= 0.1 * cpu_now + 0.05,
          "/metrics' builder CPU %.2f s agrees with /proc's %.2f s" % (mcpu, cpu_now))
    rc, _ = a.stop()
    check(rc == 0, "SIGTERM: exit 0 (rc %s)" % rc)
finally:
    if a:
        a.kill()
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()
print("PASS")
