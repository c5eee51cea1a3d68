#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Capabilities are per thread: every thread of the agent holds the dropped
set, those stuck on a hung file system and those started later included.

Linux keeps credentials per thread; the agent drops its capabilities with
capset and prctl, which change the calling thread only.  A thread that
exists at the drop keeps what it had.  Here a process runs an executable
from a FUSE mount (hangfs.c) whose section headers never answer, so the
agent's start-up scan (Go discovery reads them) leaves a deadline helper
blocked in that read: before the fix it was blocked across the drop and
kept the start-up set (every capability of the unit's bounding set).

The agent runs as deploy/systemd/spanprof-agent.service starts it: under
setpriv with the unit's bounding set, no inheritable or ambient set,
no_new_privs, and the unit's ExecStart flags (--output-dir, --max-files,
--metrics-addr; OTEL_EXPORTER_OTLP_ENDPOINT to a stub).  What must hold:
  1. once healthy, every /proc/PID/task/*/status has CapEff = CapPrm =
     CapBnd = the kept set, CapInh = CapAmb = 0, NoNewPrivs 1 - the helper
     blocked on the hung executable among them (checked by its wchan);
  2. threads started later (a second process on the hung mount: its
     helper blocks too; a busy process and a perf map for the JIT reader)
     hold the same set.
Root, real BPF, real FUSE.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, fail, require_root, tmpdir  # noqa: E402
from fault_util import HangFs, padded, spin_variant, thread_states  # noqa: E402
import agent_util as au  # noqa: E402
from lib.otlp_stub import OtlpStub  # noqa: E402

require_root()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
d = tmpdir()

unit = open(os.path.join(ROOT, "deploy/systemd/spanprof-agent.service")).read()


def directive(name):
    m = re.search(r"^%s=(.*)$" % name, unit, re.M)
    return m.group(1).strip() if m else None


bset = directive("CapabilityBoundingSet").split()
execstart = directive("ExecStart").split()[2:]      # after /usr/bin/spanprof agent
check("--metrics-addr" in execstart, "the unit's flags: %s" % " ".join(execstart))
flags = []
i = 0
while i < len(execstart):       # the unit's flags, with paths and ports of ours
    f = execstart[i]
    if f == "--output-dir":
        out = os.path.join(d, "profiles")
        os.mkdir(out)
        flags += [f, out]
    elif f == "--metrics-addr":
        pass                    # au.Agent adds its own port
    else:
        flags += [f, execstart[i + 1]]
    i += 2

CAPS = {"dac_read_search": 2, "sys_ptrace": 19, "sys_admin": 21, "bpf": 39,
        "checkpoint_restore": 40}
last = int(open("/proc/sys/kernel/cap_last_cap").read())
check(last >= 40, "kernel has CAP_BPF and CAP_CHECKPOINT_RESTORE (cap_last_cap %d)" % last)
want = sum(1 << CAPS[c] for c in ("dac_read_search", "sys_ptrace", "bpf", "checkpoint_restore"))
start_set = sum(1 << n for n in range(last + 1)) & \
    sum(1 << {"CAP_BPF": 39, "CAP_PERFMON": 38, "CAP_SYS_PTRACE": 19, "CAP_DAC_READ_SEARCH": 2,
              "CAP_CHECKPOINT_RESTORE": 40, "CAP_SETPCAP": 8}[c] for c in bset)


def task_caps(pid):
    """{tid: (comm, wchan, CapEff, CapPrm, CapBnd, CapInh, CapAmb, NoNewPrivs)}."""
    return {t: (st["Name"], st["wchan"]) + tuple(int(st[k], 16) for k in
                                                ("CapEff", "CapPrm", "CapBnd", "CapInh",
                                                 "CapAmb")) + (st.get("NoNewPrivs"),)
            for t, st in au.task_status(pid).items()}


def check_all(pid, what):
    caps = task_caps(pid)
    bad = {t: v for t, v in caps.items()
           if v[2:7] != (want, want, want, 0, 0) or v[7] != "1"}
    for t, v in sorted(caps.items()):
        print("  %s: tid %d %-16s wchan %-22s eff %x prm %x bnd %x inh %x amb %x nnp %s"
              % (what, t, v[0], v[1], *v[2:]), flush=True)
    if bad:
        fail("%s: %d of %d threads do not hold the dropped set %x (start-up set %x): %s"
             % (what, len(bad), len(caps), want, start_set,
                "; ".join("tid %d %s (%s) eff %x prm %x bnd %x" % (t, v[0], v[1], *v[2:5])
                          for t, v in sorted(bad.items()))))
    check(True, "%s: all %d threads hold eff = prm = bnd = %x, no inheritable/ambient, "
          "NoNewPrivs 1" % (what, len(caps), want))
    return caps


exe_src = os.path.join(d, "spin81.padded")
prefix = padded(d, spin_variant(d, 81), exe_src)
os.mkdir(os.path.join(d, "a"))
fs = HangFs(os.path.join(d, "a"), backing=exe_src, prefix=prefix)
procs = fs.procs
stub = None
a = None
try:
    hung = subprocess.Popen([fs.FILE, "60000"])
    procs.append(hung)
    time.sleep(0.3)
    check(hung.poll() is None and os.readlink("/proc/%d/exe" % hung.pid) == fs.FILE,
          "the executable runs from the FUSE mount")
    stub = OtlpStub(lambda i: (200, {}))
    setpriv = ["setpriv", "--bounding-set=-all," + ",".join("+" + c[4:].lower() for c in bset),
               "--inh-caps=-all", "--no-new-privs"]
    a = au.Agent(flags + ["--interval", "1", "--shutdown-timeout", "2"], d, wrap=setpriv,
                 env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:%d" % stub.port})
    # the start-up scan's read of the hung executable has timed out
    au.wait_for(lambda: a.metrics().get1("spanprof_go_process_failures_total",
                                         reason="exe_timed_out") >= 1, 20,
                what="the hung executable's Go read to time out")
    first = check_all(a.pid, "after start")
    fuse = [t for t, v in first.items()
            if v[1] in ("request_wait_answer", "folio_wait_bit_common")]
    check(fuse, "a helper is blocked in the hung FUSE read (%s)" % thread_states(a.pid))

    # ------------------------------------------------ 2. threads started later
    hung2 = subprocess.Popen([fs.FILE, "60000"])
    procs.append(hung2)
    busy = au.busy(30)
    procs.append(busy)
    with open("/tmp/perf-%d.map" % busy.pid, "w") as f:
        f.write("7f0000001000 40 jitted_fn\n")
    try:
        au.wait_for(lambda: a.metrics().get1("spanprof_go_process_failures_total",
                                             reason="exe_timed_out") >= 2
                    or a.metrics().get1("spanprof_go_process_failures_total",
                                        reason="exe_skipped") >= 1, 20,
                    what="the second hung process's Go read to time out or be skipped")
        au.wait_for(lambda: stub.count() >= 2, 20, what="two exports")
        later = check_all(a.pid, "later")
        new = set(later) - set(first)
        check(new, "threads started after the first check: %s"
              % ", ".join("%d %s" % (t, later[t][0]) for t in sorted(new)))
    finally:
        os.unlink("/tmp/perf-%d.map" % busy.pid)
    fs.close()          # the hung reads end (EIO): the agent can be reaped
    rc, _ = a.stop()
    check(rc == 0, "agent exits 0 (rc %d)" % rc)
finally:
    fs.close()
    if a:
        a.kill()
    if stub:
        stub.close()
print("PASS")
