#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""deploy/systemd/spanprof-agent.service: valid, hardened to <= 3.0, and the
agent really runs inside what it allows.

No systemd runs as PID 1 here (nor in CI), so the unit cannot be started.
What is checked instead, each against the unit file itself:

1. `systemd-analyze verify` (ExecStart pointed at the built binary) is
   clean, and ExecStart names /usr/bin/spanprof, where the Debian package
   puts it (make install rewrites it for another PREFIX: test_install.py).
2. `systemd-analyze security --offline=true` scores it <= 3.0, and
   docs/security.md states the same score.
3. Capabilities: the agent runs under `setpriv` with exactly the unit's
   CapabilityBoundingSet (no other capability can be gained: no_new_privs),
   attaches BPF, samples (samples on /metrics, a profile file written) and
   exits 0 on SIGTERM.  The bounding set also holds everything the agent
   keeps after attach (sp_privs__needed in src/collector/agent/privs.c).
4. System calls: the same run is traced with strace -f; every system call
   the agent makes (after its execve) must be allowed by the unit's
   SystemCallFilter, expanded with `systemd-analyze syscall-filter`.  (With
   the ASan build the sanitizer's own calls differ: that part is checked
   on the plain build only, and says so.)
5. The mount-namespace options that could hide other processes' files
   from the agent, set up by hand as systemd would (`unshare --mount`):
   /proc remounted hidepid=invisible (ProtectProc=invisible), empty tmpfs
   over /tmp (PrivateTmp=) and /home (ProtectHome=).  A binary in the
   host's /tmp, run as nobody outside that namespace, must still be
   profiled with its build id: the agent reads it through
   /proc/PID/map_files and /proc/PID/root.
Not emulated: the other namespace options (ProtectSystem=, PrivateDevices=,
ProtectKernel*=) make paths read-only or hide devices; the agent writes
only its StateDirectory and opens no device.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_util as au  # noqa: E402
from fault_util import spin_variant  # noqa: E402
from lib.otlp import read_otlp  # noqa: E402
from spt import (BUILD, SPANPROF, asan_build, check, fail, read_buildid,  # noqa: E402
                 require_root, tmpdir)

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
UNIT_PATH = os.path.join(ROOT, "deploy/systemd/spanprof-agent.service")
MAX_SCORE = 3.0


def run(cmd, timeout=60):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def directive(unit, key):
    vals = re.findall(r"^%s=(.*)$" % re.escape(key), unit, re.M)
    if len(vals) != 1:
        fail("unit: expected one %s= line, found %d" % (key, len(vals)))
    return vals[0].strip()


def expand_filter(spec):
    """SystemCallFilter's allow list -> set of system call names."""
    out, seen = set(), set()

    def group(g):
        if g in seen:
            return
        seen.add(g)
        p = run(["systemd-analyze", "syscall-filter", g])
        if p.returncode != 0:
            fail("systemd-analyze syscall-filter %s: %s" % (g, p.stderr.strip()))
        for line in p.stdout.splitlines()[1:]:
            w = line.strip()
            if not w or w.startswith("#"):
                continue
            if w.startswith("@"):
                group(w)
            else:
                out.add(w)
    for w in spec.split():
        group(w) if w.startswith("@") else out.add(w)
    return out


require_root()
for t in ("systemd-analyze", "setpriv", "strace"):
    if not shutil.which(t):
        fail("%s missing: run scripts/deps.sh" % t)
unit = open(UNIT_PATH).read()
d = tmpdir()

# 1. verify
exe = directive(unit, "ExecStart").split()[0]
check(exe == "/usr/bin/spanprof", "ExecStart is /usr/bin/spanprof (the package's path)")
u = os.path.join(d, "spanprof-agent.service")
with open(u, "w") as f:
    f.write(unit.replace("ExecStart=/usr/bin/spanprof ", "ExecStart=%s " % SPANPROF))
p = run(["systemd-analyze", "verify", u])
msgs = [l for l in (p.stdout + p.stderr).splitlines() if "spanprof-agent" in l]
check(p.returncode == 0 and not msgs, "systemd-analyze verify: clean %s" % msgs)

# 2. exposure score
p = run(["systemd-analyze", "security", "--offline=true", u])
m = re.search(r"Overall exposure level for spanprof-agent\.service: (\d+\.\d+) (\w+)", p.stdout)
if not m:
    fail("systemd-analyze security printed no score: %s" % (p.stdout + p.stderr)[-500:])
score = float(m.group(1))
check(score <= MAX_SCORE, "systemd-analyze security: %.1f %s (<= %.1f)" %
      (score, m.group(2), MAX_SCORE))
doc = open(os.path.join(ROOT, "docs/security.md")).read()
check("`systemd-analyze security` scores it **%.1f %s**" % (score, m.group(2)) in doc,
      "docs/security.md states the measured score %.1f" % score)

# 3. capabilities: the unit's bounding set is enough, and holds what is kept
bset = directive(unit, "CapabilityBoundingSet").split()
check(bset and all(c.startswith("CAP_") for c in bset), "bounding set: %s" % " ".join(bset))
privs = open(os.path.join(ROOT, "src/collector/agent/privs.c")).read()
needed_fn = privs[privs.index("uint64_t sp_privs__needed("):]
needed_fn = needed_fn[:needed_fn.index("\n}\n")]
kept = set(re.findall(r"BIT\((CAP_[A-Z_]+)\)", needed_fn)) - {"CAP_SYS_ADMIN"}
check(kept and kept <= set(bset), "bounding set holds what the agent keeps after attach (%s)"
      % " ".join(sorted(kept)))
check(directive(unit, "NoNewPrivileges") == "yes" and directive(unit, "AmbientCapabilities") == "",
      "no_new_privs, no ambient capabilities")
setpriv = ["setpriv", "--bounding-set=-all," + ",".join("+" + c[4:].lower() for c in bset),
           "--inh-caps=-all", "--no-new-privs"]
trace = os.path.join(d, "strace.txt")
strace = ["strace", "-f", "-qq", "-o", trace]
out_dir = os.path.join(d, "profiles")
os.mkdir(out_dir)
t_launch = time.time()
agent = au.Agent(["-F", "97", "--interval", "1", "--output-dir", out_dir, "--max-files", "5",
                  "--shutdown-timeout", "5"], d, wrap=strace + setpriv)
try:
    au.wait_for(lambda: [f for f in os.listdir(out_dir) if not f.startswith(".")], 20,
                what="a profile file from the agent under the unit's capabilities")
    mt = agent.metrics()
    got = mt.sum("spanprof_samples_received_total")
    check(got > 0, "agent under the unit's bounding set samples (%d samples received)" % got)
    # %.9g used to round this to ten seconds
    start = mt.get1("process_start_time_seconds")
    check(0 <= start - t_launch < 2.0, "process_start_time_seconds %.3f is the start (launched "
          "at %.3f), to the sub-second" % (start, t_launch))
finally:
    # SIGTERM to the agent itself (strace's child), not to strace; strace
    # then exits with the agent's status
    kids = open("/proc/%d/task/%d/children" % (agent.pid, agent.pid)).read().split()
    if kids:
        os.kill(int(kids[0]), signal.SIGTERM)
    try:
        rc = agent.p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        agent.kill()
        fail("agent did not exit within 20 s of SIGTERM: %s" % agent.text()[-500:])
log = agent.text()
check(rc == 0, "agent exits 0 on SIGTERM (rc=%d): %s" % (rc, log[-500:]))
status_caps = re.findall(r"missing privileges|Operation not permitted", log)
check(not status_caps, "no privilege error in the agent's log %s" % status_caps)

# 4. system calls
allowed = expand_filter(directive(unit, "SystemCallFilter"))
check({"bpf", "perf_event_open", "read", "openat"} <= allowed,
      "SystemCallFilter allows %d system calls, bpf and perf_event_open among them" % len(allowed))
lines = open(trace).read().splitlines()
start = next((i for i, l in enumerate(lines)
              if re.match(r"^\d+\s+execve\(\"%s\"" % re.escape(SPANPROF), l)), None)
if start is None:
    fail("strace saw no execve of %s" % SPANPROF)
used = set()
for l in lines[start + 1:]:
    m = re.match(r"^\d+\s+([a-z0-9_]+)\(", l)
    if m:
        used.add(m.group(1))
outside = sorted(used - allowed)
if asan_build():
    print("note: ASan build: system calls outside the filter not asserted: %s" % outside)
else:
    check(len(used) > 20 and not outside,
          "every system call the agent made (%d kinds) is in the unit's SystemCallFilter%s" %
          (len(used), (" (outside: %s)" % outside) if outside else ""))

# 5. ProtectProc=invisible, PrivateTmp=, ProtectHome= emulated
spin = spin_variant(d, 16, "spin-in-host-tmp")
bid = read_buildid(spin)
ns_out = os.path.join(BUILD, "test-logs", "systemd-ns-profiles")
shutil.rmtree(ns_out, ignore_errors=True)
os.makedirs(ns_out)
# The build directory is bound at a staging point outside /tmp and /home
# first: a checkout under /tmp (CI's, perhaps) would otherwise vanish under
# the empty tmpfs with the agent's binary and its output directory.
stage = "/run/spanprof-test-ns-%d" % os.getpid()
os.makedirs(stage, exist_ok=True)
inner = ("mount --bind {build} {stage} && "
         "mount -t proc -o hidepid=invisible proc /proc && mount -t tmpfs tmpfs /tmp && "
         "mount -t tmpfs tmpfs /home && test ! -e {spin} || exit 90; "
         "exec {sp} {stage}/spanprof agent -q -F 97 --interval 1 --output-dir {out} "
         "--max-files 50 --metrics-addr none").format(
             build=BUILD, stage=stage, spin=spin, sp=" ".join(setpriv),
             out=os.path.join(stage, os.path.relpath(ns_out, BUILD)))
ns_log = open(os.path.join(d, "ns-agent.log"), "w")
ag = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", inner],
                      stdout=ns_log, stderr=subprocess.STDOUT)
# The victim starts once the agent writes its first interval (it is
# sampling), not after a fixed sleep that a slow machine could outrun.
au.wait_for(lambda: ag.poll() is not None or
            [f for f in os.listdir(ns_out) if not f.startswith(".")], 30,
            what="a first profile file from the agent in the emulated namespace")
victim = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           spin, "2500"])
victim_rc = victim.wait(timeout=30)
time.sleep(1.5)
ag.send_signal(signal.SIGTERM)
try:
    rc = ag.wait(timeout=20)
except subprocess.TimeoutExpired:
    ag.kill()
    fail("agent in the emulated namespace did not exit on SIGTERM")
os.rmdir(stage)	# the namespace, and its bind mount, are gone with the agent
ns_text = open(os.path.join(d, "ns-agent.log")).read()
check(rc == 0, "agent with hidepid=invisible /proc, private /tmp and /home: exit 0 (%d) %s"
      % (rc, ns_text[-300:]))
check(victim_rc == 0, "the victim ran as nobody from %s (exit %d)" % (spin, victim_rc))
hits = total = 0
seen = {}	# (mapping name, build id) -> samples of the victim: the diagnosis
# the profiles only: the output directory also holds syms/ when a process
# on the host published JIT symbols (a Node test's, say) while this ran
for f in au.otlp_files(ns_out):
    for smp in read_otlp(f):
        if smp["pid"] != victim.pid:
            continue
        total += smp["count"]
        if any(fr[1] == bid for fr in smp["stack"]):
            hits += smp["count"]
        for key in {(fr[0], fr[1]) for fr in smp["stack"]}:
            seen[key] = seen.get(key, 0) + smp["count"]
check(hits > 0, "a nobody-owned binary in the host's /tmp is profiled with its build id from "
      "inside the agent's namespace (%d of %d samples; build id %s; the victim's mappings: %s; "
      "agent: %s)" % (hits, total, bid, sorted(seen.items())[:8],
                      "" if hits else ns_text[-600:]))
shutil.rmtree(ns_out)
shutil.rmtree(d)
print("PASS")
