#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""--health-stall: /healthz turns unhealthy while the consumer thread is
stopped, and healthy again once it runs.

How the stall is made: the reads that used to stop the consumer (a hung
file system under a profiled process: build ids, maps, environ, memory, the
TLS search) are bounded now (test_fault_hung_fs.py, test_fault_hung_proc.py
show the consumer keeps going), so a hung file cannot provoke it any more.
Instead the agent's consumer thread alone ("sp-consumer") is stopped in the
kernel with ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT: a ptrace stop of that
one thread, as a thread stuck in the kernel is; the metrics server's
threads keep answering), then let go (PTRACE_DETACH).  What must hold:
  - before: /healthz 200;
  - stopped: within --health-stall (2 s) plus a margin, /healthz answers
    non-200 naming the stall, and spanprof_consumer_stalled_seconds on
    /metrics is past the limit;
  - let go: /healthz 200 again within seconds, batches resume, SIGTERM
    exits 0.
Root, real BPF, real ptrace.
"""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, fail, require_root, tmpdir  # noqa: E402
import agent_util as au  # noqa: E402
from lib.otlp_stub import OtlpStub  # noqa: E402

PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
WALL = 0x40000000

require_root()
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(req, tid):
    if libc.ptrace(req, tid, None, None) != 0:
        e = ctypes.get_errno()
        fail("ptrace(%#x, %d): %s (kernel.yama.ptrace_scope?)" % (req, tid, os.strerror(e)))


def consumer_tid(pid):
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
                if f.read().strip() == "sp-consumer":
                    return int(t)
        except OSError:
            pass
    fail("the agent has no thread named sp-consumer")


def wait_health(a, want_ok, within):
    """Polls /healthz until it is (or is not) 200; returns (seconds, body)."""
    t0 = time.monotonic()
    last = None
    while time.monotonic() - t0 < within:
        st, body = au.http_get(a.port, "/healthz", timeout=2)
        last = (st, body)
        if (st == 200) == want_ok:
            return time.monotonic() - t0, body
        time.sleep(0.1)
    fail("/healthz was not %s within %.0f s (last: %s)"
         % ("200" if want_ok else "unhealthy", within, last))


d = tmpdir()
stub = OtlpStub(lambda i: (200, {}))
a = au.Agent(["-F", "97", "--interval", "1", "--health-stall", "2", "--endpoint",
              "http://127.0.0.1:%d" % stub.port], d)
tid = None
attached = False
try:
    wait_health(a, True, 10)
    tid = consumer_tid(a.pid)
    ptrace(PTRACE_SEIZE, tid)
    attached = True
    ptrace(PTRACE_INTERRUPT, tid)
    os.waitpid(tid, WALL)       # the consumer thread is stopped now
    t_stop = time.monotonic()
    dt, body = wait_health(a, False, 2 + 8)
    waited = time.monotonic() - t_stop
    print("unhealthy after %.1f s stopped: %s" % (waited, body.strip()), flush=True)
    # The stall counts from the consumer's last round, a poll (100 ms) or
    # a busy pump before the stop: the probe fails at 2 s minus that.
    check(waited >= 1.5, "the probe waited for the limit before failing (%.1f s)" % waited)
    check("has not advanced" in body and "--health-stall" in body,
          "the probe names the stall and the flag: %r" % body)
    m = a.metrics()
    stalled = m.get1("spanprof_consumer_stalled_seconds")
    check(stalled >= 2, "/metrics: spanprof_consumer_stalled_seconds %.1f >= 2" % stalled)
    n_stopped = stub.count()    # what was exported before or while stopped
    ptrace(PTRACE_DETACH, tid)
    attached = False
    dt, _ = wait_health(a, True, 10)
    print("healthy again %.1f s after the consumer was let go" % dt, flush=True)
    t0 = time.monotonic()
    while stub.count() <= n_stopped and time.monotonic() - t0 < 10:
        time.sleep(0.2)
    check(stub.count() > n_stopped, "batches resume after the stall (%d -> %d)"
          % (n_stopped, stub.count()))
    rc, dt = a.stop()
    check(rc == 0, "agent: SIGTERM exits 0 after the stall (rc %d in %.1f s)" % (rc, dt))
finally:
    if attached:
        libc.ptrace(PTRACE_DETACH, tid, None, None)
    a.kill()
    stub.close()
