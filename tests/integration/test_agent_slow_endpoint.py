#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An OTLP endpoint that answers one byte per second does not stall
ingestion (invariant 4: the consumer never waits on the network).

A raw-socket server on loopback reads each request, then dribbles its
answer one byte a second.  The agent samples 2 busy CPUs at 19 Hz with a
1 s interval and the smallest export queue (4 KiB, the option's floor).
Over 10 s (an interval's batch is ~750 bytes: the queue is full after ~6
batches, at ~7-8 s, and drops from then on: 2-3 by the end, 1 needed; the
8 KiB queue this test once used took 14 s for the same):
  - samples keep arriving and intervals keep being handed over at the
    rate of the clock, not of the network;
  - no ring buffer drops;
  - /healthz stays 200;
  - the export queue fills and drops by policy (oldest), counted as
    batches dropped_queue_full and samples dropped{reason="export"};
  - queue bytes never pass the cap; RSS stays bounded.
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
QUEUE = 4096
stop = threading.Event()
conns = []


def dribble(c):
    c.settimeout(1.0)
    data = b""
    try:
        while b"\r\n\r\n" not in data and not stop.is_set():
            try:
                chunk = c.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                return
            data += chunk
        resp = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        for i in range(len(resp)):
            if stop.is_set():
                return
            # keep draining the body so the client's upload never blocks us
            try:
                c.recv(65536)
            except (socket.timeout, OSError):
                pass
            c.sendall(resp[i:i + 1])
    except OSError:
        pass
    finally:
        c.close()


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
srv.settimeout(0.5)
port = srv.getsockname()[1]


def accept_loop():
    while not stop.is_set():
        try:
            c, _ = srv.accept()
        except socket.timeout:
            continue
        except OSError:
            return
        conns.append(c)
        threading.Thread(target=dribble, args=(c,), daemon=True).start()


threading.Thread(target=accept_loop, daemon=True).start()
loads = [au.busy(40), au.busy(40)]
a = None
try:
    a = au.Agent(["-F", "19", "--interval", "1", "--queue-bytes", str(QUEUE),
                  "--shutdown-timeout", "2",
                  "--endpoint", "http://127.0.0.1:%d" % port], d)
    m0 = a.metrics()
    t0 = time.time()
    worst_rss = 0
    samples = []
    while time.time() - t0 < 10:
        time.sleep(1)
        st, _ = au.http_get(a.port, "/healthz")
        check(st == 200, "healthz 200 at %.0f s" % (time.time() - t0))
        m = a.metrics()
        au.check_monotonic(m0, m)
        m0 = m
        samples.append((time.time() - t0, m.sum("spanprof_samples_received_total"),
                        m.get1("spanprof_intervals_total")))
        worst_rss = max(worst_rss, m.get1("process_resident_memory_bytes"))
        check(m.get1("spanprof_export_queue_bytes") <= QUEUE, "queue bytes %d <= cap"
              % m.get1("spanprof_export_queue_bytes"))
    m = a.metrics()
    first, last = samples[1], samples[-1]
    rate = (last[1] - first[1]) / (last[0] - first[0])
    check(rate > 19 * 2 * 0.7, "ingestion keeps its pace: %.1f samples/s received (2 busy "
          "CPUs at 19 Hz)" % rate)
    check(last[2] - first[2] >= (last[0] - first[0]) * 0.6,
          "intervals keep being handed over: %d in %.0f s" % (last[2] - first[2],
                                                              last[0] - first[0]))
    check(m.get1("spanprof_ringbuf_dropped_samples_total") == 0, "no ring buffer drops at 19 Hz")
    check(m.get1("spanprof_export_batches_total", outcome="exported") == 0,
          "nothing completed against the dribbling endpoint")
    qf = m.get1("spanprof_export_batches_total", outcome="dropped_queue_full")
    check(qf >= 1, "queue full: %d batches dropped by policy, counted" % qf)
    check(m.get1("spanprof_dropped_samples_total", reason="export") > 0,
          "their samples counted as dropped (%d)"
          % m.get1("spanprof_dropped_samples_total", reason="export"))
    check(worst_rss < 96 * 2**20, "RSS bounded (worst %.1f MiB)" % (worst_rss / 2**20))
    rc, dt = a.stop()
    check(rc == 0 and dt < 5, "SIGTERM with a stuck endpoint: exit 0 within the 2 s shutdown "
          "timeout (%.1f s)" % dt)
finally:
    stop.set()
    if a:
        a.kill()
    for l in loads:
        l.kill()
    srv.close()
print("PASS")
