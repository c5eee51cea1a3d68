#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
"""spanprof-symbolizer serve: every thread holds the dropped privileges.

Credentials are per thread on Linux.  The C library applies setgroups,
setgid and setuid to every thread of the process; prctl (no_new_privs,
the capability bounding set) changes the calling thread only.  Before the
fix serve started its connection guards' reapers and the HTTP server's
threads, then dropped: those threads ran as nobody with no capabilities
but NoNewPrivs 0 (an execve of a set-uid program from them gains it) and
the full bounding set.

Two starts, each with --admin-listen and --output-dir:
  1. as root (serve drops to nobody itself: docs/security.md);
  2. as deploy/kubernetes/symbolizer.yaml runs it: uid 65534, every
     capability dropped, allowPrivilegeEscalation false (setpriv).
Each thread of /proc/PID/task/*/status must have Uid 65534, CapEff =
CapPrm = CapInh = CapAmb = 0, CapBnd 0 and NoNewPrivs 1; again while a
client holds a connection open (the HTTP server's per-connection thread,
started later) and after a POST was handled.
"""
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, fail, require_root, tmpdir  # noqa: E402
from fault_util import SYMBOLIZER  # noqa: E402
import agent_util as au  # noqa: E402

require_root()
d = tmpdir()
out = os.path.join(d, "out")
os.mkdir(out)
os.chmod(out, 0o777)


def check_all(pid, what):
    ts = au.task_status(pid)
    bad = []
    for t, st in sorted(ts.items()):
        caps = {k: int(st[k], 16) for k in ("CapEff", "CapPrm", "CapInh", "CapAmb", "CapBnd")}
        uid = st["Uid"].split()
        if any(caps.values()) or st.get("NoNewPrivs") != "1" or set(uid) != {"65534"}:
            bad.append("tid %d %s: uid %s %s NoNewPrivs %s"
                       % (t, st["Name"], "/".join(uid),
                          " ".join("%s %x" % kv for kv in caps.items()), st.get("NoNewPrivs")))
    if bad:
        fail("%s: %d of %d threads keep privileges: %s" % (what, len(bad), len(ts),
                                                           "; ".join(bad)))
    check(True, "%s: all %d threads: uid 65534, no capability in any set (bounding "
          "included), NoNewPrivs 1" % (what, len(ts)))
    return ts


def run(wrap, what):
    port, admin = au.free_port(), au.free_port()
    log = open(os.path.join(d, "serve-%s.log" % what.replace(" ", "_")), "w")
    p = subprocess.Popen(wrap + [SYMBOLIZER, "serve", "--listen", "127.0.0.1:%d" % port,
                                 "--admin-listen", "127.0.0.1:%d" % admin,
                                 "--output-dir", out, "--no-debuginfod"],
                         stdout=log, stderr=subprocess.STDOUT)
    try:
        au.wait_for(lambda: p.poll() is not None or au.http_get(admin, "/healthz")[0] == 200,
                    10, what="serve (%s) to answer /healthz" % what)
        if p.poll() is not None:
            fail("serve (%s) exited %d: %s" % (what, p.returncode,
                                               open(log.name).read()[-500:]))
        first = check_all(p.pid, what + ", started")
        # a connection held open: its thread starts now
        c = socket.create_connection(("127.0.0.1", port))
        c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")     # headers not finished
        au.wait_for(lambda: set(au.task_status(p.pid)) - set(first), 10,
                    what="%s: a thread started for the connection" % what)
        check_all(p.pid, what + ", a connection open")
        c.close()
        st, _ = au.http_get(port, "/metrics")
        check(st == 200, "%s: /metrics answers (%s)" % (what, st))
        check_all(p.pid, what + ", after requests")
    finally:
        p.terminate()
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()


run([], "as root")
run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--bounding-set=-all",
     "--inh-caps=-all", "--no-new-privs"], "as the Kubernetes manifest")
print("PASS")
