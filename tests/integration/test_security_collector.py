"""The collector is not turned against the host by a profiled process.

A hostile process (hostile_proc.c, in its own mount namespace) whose
  - /proc/PID/exe would create a marker file if anyone executed it,
  - comm is "$(touch ZZsp)",
  - maps include an executable mapping of a shell script (that would create
    another marker if run) and of /dev/zero (shared, when /dev allows it),
  - maps show a library path that, inside its mount namespace, is a FIFO
    bind-mounted over the library (opening it for reading blocks forever),
  - publishes an OTEP 4719 process context, so the collector searches its
    files for a TLS descriptor, and keeps mapping and unmapping that library
    while announcing publications (prctl(PR_SET_VMA)), so that the
    collector reads maps with the library present and opens it after it is
    gone,
is recorded with `spanprof record -p PID`, once plainly and once under
`strace -f`.  Required: record finishes in bounded time (the FIFO never
blocks it), exits 0, nothing was executed (no marker, no ZZsp file), the
collector makes no execve, and every open of a path inside the process's
root or of the test's files is an O_PATH open (pinning, no side effects) --
reads go through /proc/self/fd/N of a pinned regular file or through
/proc/PID/map_files.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import SPANPROF, check, fail, load_json, read_pprof, require_root, skip, tmpdir  # noqa: E402
from fault_util import compile_c, env_under_ptrace, strace_opens  # noqa: E402

require_root()
if not shutil.which("unshare"):
    fail("unshare (util-linux) is needed")
d = tmpdir()
marker = os.path.join(d, "exe-was-executed")
helper = compile_c("hostile_proc.c", os.path.join(d, "hostile_proc"),
                   defines=['MARKER="%s"' % marker])
shutil.copy("/bin/true", os.path.join(d, "lib.so"))
os.mkfifo(os.path.join(d, "fifo"), 0o666)
script = os.path.join(d, "run.sh")
with open(script, "w") as f:
    f.write("#!/bin/sh\ntouch %s/script-ran\n" % d)
os.chmod(script, 0o755)


def start_victim(seconds):
    p = subprocess.Popen(["unshare", "--mount", "--propagation", "private", helper, "serve", d,
                          str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    line = p.stdout.readline()
    if not line.startswith("ready"):
        p.kill()
        fail("the hostile process did not start: %r %s" % (line, p.stderr.read()))
    return p, int(line.split()[1])


def run_record(prefix, pid, tag, seconds, timeout):
    out = os.path.join(d, tag + ".pb.gz")
    js = os.path.join(d, tag + ".json")
    cmd = prefix + [SPANPROF, "record", "--no-report", "-q", "-p", str(pid), "-d", str(seconds),
                    "-o", out, "--summary-json", js]
    t0 = time.time()
    p = subprocess.Popen(cmd, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, env=env_under_ptrace() if prefix else None)
    try:
        so, se = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)   # under strace: the tracee too
        so, se = p.communicate()
        fail("%s: spanprof record did not finish within %d s: blocked on a file the profiled "
             "process chose (the FIFO over its library?)\n%s" % (tag, timeout, se[-2000:]))
    dt = time.time() - t0
    if p.returncode != 0:
        fail("%s: spanprof record failed (rc=%d): %s" % (tag, p.returncode, se))
    check(dt < timeout, "%s: record of %d s finished in %.1f s" % (tag, seconds, dt))
    return out, load_json(js)


def no_side_effects(tag):
    check(not os.path.exists(marker), "%s: the process's executable was never run" % tag)
    check(not os.path.exists(os.path.join(d, "script-ran")),
          "%s: the mapped shell script was never run" % tag)
    check(not os.path.exists(os.path.join(d, "ZZsp")),
          "%s: the process's name never reached a shell" % tag)


# ------------------------------------------------ 1. plain run: bounded, no side effects
victim, pid = start_victim(9)
try:
    out, j = run_record([], pid, "plain", 5, 45)
finally:
    victim.kill()
    vout, verr = victim.communicate()
print("victim:", vout.strip(), verr.strip(), flush=True)
print("summary ctx:", j["ctx"], "procs:", j["procs"], flush=True)
no_side_effects("plain")
p = read_pprof(out)
mine = [s for s in p["samples"] if s["labels"].get("pid") == pid]
check(len(mine) > 0, "the hostile process was sampled (%d samples)" % len(mine))
names = set(s["labels"].get("thread_name") for s in mine)
check(names == {"$(touch ZZsp)"}, "its name is kept as a label, verbatim: %s" % names)

# ------------------------------------------------ 2. under strace: what is opened, what is run
if not shutil.which("strace"):
    skip("strace is not installed: part 2 (every open and execve of the collector) not run; "
         "part 1 passed")
victim, pid = start_victim(8)
log = os.path.join(d, "strace.log")
try:
    out, j = run_record(["strace", "-f", "-qq", "-o", log, "-e",
                         "trace=execve,open,openat,openat2"], pid, "strace", 4, 55)
finally:
    victim.kill()
    victim.communicate()
no_side_effects("strace")
execs = [l for l in open(log, errors="replace") if "execve(" in l]
check(len(execs) == 1 and SPANPROF in execs[0],
      "the collector executed nothing (execve calls: %d, its own)" % len(execs))
opens = strace_opens(log)
root_prefix = "/proc/%d/root" % pid
bad = []
seen_pinned = 0
for path, flags, line in opens:
    # openat2 under a pinned root fd shows the path relative to it
    mine = (path.startswith(d) or path.startswith(root_prefix) or
            path.startswith(d.lstrip("/")))
    if not mine:
        continue
    if "O_PATH" in flags:
        seen_pinned += 1
        continue
    if path.startswith(d) and (path.endswith(".pb.gz") or path.endswith(".json") or
                               path.endswith(".kallsyms.gz") or ".tmp" in path or
                               "/." in path):
        continue  # the collector's own outputs in the test directory
    bad.append(line)
print("opens: %d total, %d O_PATH pins of the process's files" % (len(opens), seen_pinned),
      flush=True)
check(not bad, "every open of the process's own paths is an O_PATH pin (offending: %s)"
      % bad[:5])
fifo_reads = [l for p_, f_, l in opens if p_.endswith("/fifo") or
              (p_.endswith("/lib.so") and "O_PATH" not in f_)]
check(not fifo_reads, "the FIFO / the path over the library was never opened for reading")
maps_files = [p_ for p_, f_, l in opens if "/map_files/" in p_]
print("map_files opens: %d" % len(maps_files), flush=True)
