#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The agent's /metrics port under slow clients (issue 15: 8 slow
connections used to fail every /healthz probe, and a kubelet would have
restarted the agent).

What the server does (src/collector/agent/metrics.c): 64 connection slots,
at most 4 per client address, and an absolute 5 s deadline for a request
to arrive whole (base/http_guard.h: a trickle does not restart it).
  1. 8 connections from 127.0.0.1 sending one header byte every 0.3 s,
     plus 40 more from 127.0.0.1 (past its 4 they are refused at once):
     /healthz probes from 127.0.0.2 keep answering 200, each within 1 s;
  2. every trickling connection is cut by the server within the deadline
     plus slack (< 8 s), though it never stopped sending;
  3. /metrics from another address still answers afterwards;
  4. with no connection open the guard's reaper thread (sp-http-reaper)
     sleeps: at most 2 wakeups in 2 s (it looked every 100 ms: 20).
Root, real BPF (the agent), real sockets.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, require_root, tmpdir  # noqa: E402
import agent_util as au  # noqa: E402

require_root()
d = tmpdir()
a = au.Agent(["-F", "97", "--interval", "60", "--output-dir", d], d)
stop = threading.Event()
cut_after = []
lock = threading.Lock()


def trickle():
    s = socket.socket()
    s.settimeout(1)
    try:
        s.connect(("127.0.0.1", a.port))
    except OSError:
        return
    t0 = time.monotonic()
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 10000
    i = 0
    while not stop.is_set() and i < len(req):
        try:
            s.send(req[i:i + 1])
            i += 1
            # a closed connection reads as EOF (b"") or a reset
            s.settimeout(0.3)
            try:
                if s.recv(1) == b"":
                    raise OSError("closed")
            except socket.timeout:
                pass
        except OSError:
            with lock:
                cut_after.append(time.monotonic() - t0)
            break
    s.close()


def probe(path, src):
    s = socket.socket()
    s.settimeout(3)
    t0 = time.monotonic()
    try:
        s.bind((src, 0))
        s.connect(("127.0.0.1", a.port))
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except OSError as e:
        return None, time.monotonic() - t0, str(e)
    finally:
        s.close()
    line = data.split(b"\r\n", 1)[0].decode(errors="replace")
    return line, time.monotonic() - t0, ""


try:
    ths = [threading.Thread(target=trickle, daemon=True) for _ in range(48)]
    for t in ths:
        t.start()
    time.sleep(0.5)
    worst, bad = 0.0, []
    t_end = time.monotonic() + 4
    while time.monotonic() < t_end:
        line, dt, e = probe("/healthz", "127.0.0.2")
        worst = max(worst, dt)
        if line is None or " 200 " not in line + " ":
            bad.append((line, e))
        time.sleep(0.2)
    check(not bad and worst < 1.0, "/healthz from 127.0.0.2 answered 200 during the attack "
          "(worst %.2f s; failures %s)" % (worst, bad[:3]))
    for t in ths:
        t.join(timeout=10)
    alive = [t for t in ths if t.is_alive()]
    with lock:
        cuts = sorted(cut_after)
    print("cut after (s):", [round(c, 1) for c in cuts], flush=True)
    check(not alive and len(cuts) == 48, "every trickling connection ended (%d cut or refused, "
          "%d still open)" % (len(cuts), len(alive)))
    slow = [c for c in cuts if c > 2]
    check(len(slow) >= 4 and max(cuts) < 8, "the ones held were cut at the deadline, though they "
          "kept sending (%d held, longest %.1f s; the deadline is 5 s)" % (len(slow), max(cuts)))
    line, dt, e = probe("/metrics", "127.0.0.3")
    check(line is not None and " 200 " in line + " ", "/metrics answers afterwards (%s %s)"
          % (line, e))
    reapers = []
    for tid in os.listdir("/proc/%d/task" % a.pid):
        with open("/proc/%d/task/%s/comm" % (a.pid, tid)) as f:
            if f.read().strip() == "sp-http-reaper":
                reapers.append(tid)
    check(len(reapers) == 1, "the agent has one reaper thread (%s)" % reapers)

    def slices():
        with open("/proc/%d/task/%s/schedstat" % (a.pid, reapers[0])) as f:
            return int(f.read().split()[2])
    time.sleep(0.5)     # the /metrics connection above closes
    s0 = slices()
    time.sleep(2)
    woke = slices() - s0
    check(woke <= 2, "with no connection open the reaper woke %d times in 2 s (at most 2)"
          % woke)
finally:
    stop.set()
    a.kill()
