#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A recording is never lost; `record -- CMD` exits as the command did.

Issue 15's record rows, each run for real (root, real BPF):
  1. exit statuses, as perf and shells: `-- /no/such/cmd` 127 and
     `-- <file without x>` 126 (one line naming the command), `-- sh -c
     'exit 3'` 3, a command killed by SIGSEGV 139 (128 + 11); the output
     is written in every case;
  2. SIGHUP (terminal closed) and SIGPIPE during `record -a`: a clean stop
     like SIGINT, exit 0, the profile written with samples;
  3. `record -p PID` whose target exits: record says so and stops on its
     own (exit 0, the profile written), without -d;
  4. a disk that fills up mid-recording (a 4 MiB tmpfs in a private mount
     namespace, filled by dd one second in, while stackgen makes every
     sample a new stack so the output needs ever more space): record
     finds it within seconds (its space reservation fails), says so in one
     line, exits 1, and what it had taken is in a complete profile.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import BUILD, SPANPROF, check, fail, read_pprof, require_root, tmpdir  # noqa: E402
from fault_util import compile_c, in_private_mounts  # noqa: E402

require_root()
d = tmpdir()
REC = [SPANPROF, "record", "--no-report", "-q", "-F", "97", "--no-kernel"]


def run(args, timeout=60):
    return subprocess.run(REC + args, capture_output=True, text=True, timeout=timeout)


# 1. exit statuses
noexec = os.path.join(d, "noexec.sh")
with open(noexec, "w") as f:
    f.write("#!/bin/sh\nexit 0\n")
os.chmod(noexec, 0o644)
for cmd, want, what in ((["/no/such/cmd"], 127, "a command that does not exist"),
                        ([noexec], 126, "a command without execute permission"),
                        (["sh", "-c", "exit 3"], 3, "a command exiting 3"),
                        (["sh", "-c", "kill -SEGV $$"], 139, "a command killed by SIGSEGV")):
    out = os.path.join(d, "st%d.pb.gz" % want)
    p = run(["-o", out, "--"] + cmd)
    check(p.returncode == want, "%s: record exits %d (got %d: %r)"
          % (what, want, p.returncode, p.stderr.strip()))
    if want in (126, 127):
        # one error line, then the usual summary of what was recorded
        lines = [l for l in p.stderr.splitlines() if l.startswith("spanprof record:")]
        check(len(lines) == 1 and "cannot run %s" % cmd[0] in lines[0],
              "%s: one line naming it: %r" % (what, lines))
    check(os.path.exists(out) and isinstance(read_pprof(out)["samples"], list),
          "%s: the output is still written" % what)

# 2. SIGHUP and SIGPIPE stop cleanly
busy = subprocess.Popen([os.path.join(BUILD, "fixtures", "callchain"), "12"],
                        stdout=subprocess.DEVNULL)
try:
    for sig in (signal.SIGHUP, signal.SIGPIPE):
        name = signal.Signals(sig).name
        out = os.path.join(d, "%s.pb.gz" % name)
        proc = subprocess.Popen(REC + ["-a", "-o", out], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        proc.send_signal(sig)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            fail("%s: record did not stop within 30 s" % name)
        check(proc.returncode == 0, "%s: exit 0 (got %d: %r)" % (name, proc.returncode, err))
        n = len(read_pprof(out)["samples"]) if os.path.exists(out) else 0
        check(n > 0, "%s: the profile is written (%d samples)" % (name, n))
finally:
    busy.kill()
    busy.wait()

# 2b. SIGTERM while BPF still loads (~0.8 s here, seconds on a busy host):
# the stop is kept and the (empty) recording written, not a death by signal
out = os.path.join(d, "early.pb.gz")
proc = subprocess.Popen(REC + ["-a", "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True)
time.sleep(0.1)
proc.send_signal(signal.SIGTERM)
try:
    _, err = proc.communicate(timeout=30)
except subprocess.TimeoutExpired:
    proc.kill()
    fail("SIGTERM during start-up: record did not stop within 30 s")
check(proc.returncode == 0, "SIGTERM during start-up: exit 0 (got %d: %r)"
      % (proc.returncode, err.strip()[-300:]))
check(os.path.exists(out) and isinstance(read_pprof(out)["samples"], list),
      "SIGTERM during start-up: the profile is written")

# 3. -p whose target exits
target = subprocess.Popen([os.path.join(BUILD, "fixtures", "callchain"), "2"],
                          stdout=subprocess.DEVNULL)
out = os.path.join(d, "gone.pb.gz")
t0 = time.monotonic()
p = subprocess.run([SPANPROF, "record", "--no-report", "-F", "97", "--no-kernel", "-p",
                    str(target.pid), "-o", out], capture_output=True, text=True, timeout=60)
dt = time.monotonic() - t0
target.wait()
check(p.returncode == 0, "-p target gone: exit 0 (got %d: %r)" % (p.returncode, p.stderr.strip()))
check("the -p target has exited; stopping" in p.stderr,
      "-p target gone: record says so: %r" % p.stderr.strip().splitlines()[:1])
check(dt < 10, "-p target gone: record stops on its own (%.1f s for a 2 s target)" % dt)
n = len(read_pprof(out)["samples"])
check(n > 0, "-p target gone: the profile is written (%d samples)" % n)

# 4. the disk fills up mid-recording
gen = compile_c("stackgen.c", os.path.join(d, "stackgen"))
mnt = os.path.join(d, "small")
keep = os.path.join(d, "keep")
os.makedirs(mnt)
os.makedirs(keep)
script = """
set -u
mount -t tmpfs -o size=4m tmpfs {mnt} || exit 90
{rec} -F 997 -o {mnt}/p.pb.gz -- {gen} 30 2>{keep}/err & rp=$!
sleep 1
date +%s.%N > {keep}/t_fill
dd if=/dev/zero of={mnt}/fill bs=4k 2>/dev/null
wait $rp; echo $? > {keep}/rc
date +%s.%N > {keep}/t_end
cp {mnt}/p.pb.gz {keep}/p.pb.gz 2>/dev/null
ls -1 {mnt} > {keep}/ls
find {mnt} -mindepth 1 -type f -printf '%P\n' > {keep}/files
find {mnt} -mindepth 1 -type d -empty -printf '%P\n' > {keep}/empty
""".format(mnt=mnt, keep=keep, gen=gen, rec=" ".join(REC))
in_private_mounts(script, 90, "disk full: record")
rd = lambda n: open(os.path.join(keep, n)).read()
rc, err = int(rd("rc")), rd("err")
waited = float(rd("t_end")) - float(rd("t_fill"))
print("disk full: rc", rc, "after", round(waited, 1), "s:", err.strip(), rd("ls").split(), flush=True)
check(rc == 1, "disk full: record exits 1 (got %d)" % rc)
lines = [l for l in err.splitlines() if l.startswith("spanprof record:")]
check(len(lines) == 1 and "cannot hold space for %s/p.pb.gz: No space left on device" % mnt
      in lines[0] and "what was recorded is written" in lines[0],
      "disk full: one line naming the file and the cause: %r" % err.strip())
check(waited < 8, "disk full: found within seconds, not at the end (%.1f s after the fill; "
      "the command runs 30 s)" % waited)
# FILE.syms/ may hold what was written whole before the disk filled (the
# vDSO image): output, not a temporary; a temporary file or an empty
# directory left there is not
top, files, empty = rd("ls").split(), rd("files").split(), rd("empty").split()
check(sorted(x for x in top if x != "p.pb.gz.syms") == ["fill", "p.pb.gz"]
      and not any(".tmp." in x for x in files) and not empty,
      "disk full: the profile is there, no temporary file left (%s; files %s; empty "
      "directories %s)" % (top, files, empty))
prof = read_pprof(os.path.join(keep, "p.pb.gz"))
n = sum(s["values"][0] for s in prof["samples"])
check(n >= 200, "disk full: what was taken is kept in a complete profile (%d samples, %d "
      "distinct stacks)" % (n, len(prof["samples"])))
