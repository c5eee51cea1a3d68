#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""spanprof agent against a faulty OTLP endpoint (a Python stub on loopback).

1. Endpoint down, then back: while nothing listens, attempts fail and are
   retried (request failures and retries counted); once the stub answers
   200, export resumes (batches exported again); queue bytes never pass
   the cap; RSS stays bounded; counters never go down across scrapes.
2. 503 with Retry-After: 3: the next attempt waits at least ~3 s (the
   default backoff would retry within ~1 s), then 200 is accepted.
3. 400: never retried: one request per batch, the batches are counted as
   dropped (failed) with their samples (dropped_samples_total{reason=
   "export"}), no retries.
Each part is bounded (about 15 s); total under 60 s.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, fail, require_root, tmpdir  # noqa: E402
import agent_util as au  # noqa: E402
from lib.otlp_stub import OtlpStub  # noqa: E402

require_root()
d = tmpdir()
load = au.busy(50)
QUEUE = 262144


def rss_ok(m, what):
    rss = m.get1("process_resident_memory_bytes")
    # 2 aggregators x 4 MiB + queue 256 KiB + ring 1 MiB + process table:
    # far below 96 MiB whatever the endpoint does
    check(rss < 96 * 2**20, "%s: RSS %.1f MiB bounded" % (what, rss / 2**20))
    check(m.get1("spanprof_export_queue_bytes") <= QUEUE, "%s: queue bytes %d <= cap %d"
          % (what, m.get1("spanprof_export_queue_bytes"), QUEUE))


common = ["-F", "97", "--interval", "1", "--agg-budget", str(4 << 20), "--agg-entries", "4096",
          "--ringbuf-size", str(1 << 20), "--queue-bytes", str(QUEUE)]
try:
    # ---------------------------------------------------------- 1. down, then back
    port = au.free_port()
    a = au.Agent(common + ["--endpoint", "http://127.0.0.1:%d" % port], d)
    prev = a.metrics()
    au.wait_for(lambda: a.metrics().get1("spanprof_export_request_failures_total") >= 2,
                timeout=12, what="failed attempts while the endpoint is down")
    m = a.metrics()
    au.check_monotonic(prev, m)
    check(m.get1("spanprof_export_batches_total", outcome="exported") == 0,
          "endpoint down: nothing exported")
    check(m.get1("spanprof_export_retries_total") >= 1, "endpoint down: retries counted (%d)"
          % m.get1("spanprof_export_retries_total"))
    rss_ok(m, "endpoint down")
    stub = OtlpStub(lambda i: (200, {}), port=port)
    au.wait_for(lambda: a.metrics().get1("spanprof_export_batches_total",
                                         outcome="exported") >= 2,
                timeout=15, what="export to resume")
    m2 = a.metrics()
    au.check_monotonic(m, m2)
    check(stub.count() >= 2, "endpoint back: %d requests arrived" % stub.count())
    check(m2.get1("spanprof_ringbuf_dropped_samples_total") == 0, "no ring buffer drops")
    rss_ok(m2, "endpoint back")
    rc, _ = a.stop()
    check(rc == 0, "agent exits 0")
    stub.close()

    # ---------------------------------------------------------- 2. 503 + Retry-After
    stub = OtlpStub(lambda i: (503, {"Retry-After": "3"}) if i == 0 else (200, {}))
    a = au.Agent(common + ["--interval", "2", "--endpoint", "http://127.0.0.1:%d" % stub.port],
                 d)
    au.wait_for(lambda: stub.count() >= 2, timeout=15, what="the retry after 503")
    gap = stub.requests[1][0] - stub.requests[0][0]
    check(gap >= 2.8, "Retry-After: 3 honoured: second attempt %.2f s after the 503" % gap)
    check(stub.requests[1][2] == stub.requests[0][2], "the retry resends the same batch")
    m = a.metrics()
    check(m.get1("spanprof_export_retries_total") >= 1, "retry counted")
    check(m.get1("spanprof_export_request_failures_total") >= 1, "503 counted as a failure")
    au.wait_for(lambda: a.metrics().get1("spanprof_export_batches_total",
                                         outcome="exported") >= 1, timeout=5,
                what="the batch accepted after the 503")
    rc, _ = a.stop()
    check(rc == 0, "agent exits 0")
    stub.close()

    # ---------------------------------------------------------- 3. 400, never retried
    stub = OtlpStub(lambda i: (400, {}))
    a = au.Agent(common + ["--endpoint", "http://127.0.0.1:%d" % stub.port], d)
    au.wait_for(lambda: a.metrics().get1("spanprof_export_batches_total",
                                         outcome="dropped_failed") >= 3,
                timeout=12, what="3 batches refused with 400")
    time.sleep(1.5)      # a retry, if there were one, would have come by now
    m = a.metrics()
    failed = m.get1("spanprof_export_batches_total", outcome="dropped_failed")
    reqs = m.get1("spanprof_export_requests_total")
    check(m.get1("spanprof_export_retries_total") == 0, "400: no retries")
    check(abs(reqs - stub.count()) <= 1 and reqs <= failed + 1,
          "400: one request per batch (%d requests, %d batches failed, stub saw %d)"
          % (reqs, failed, stub.count()))
    bodies = [r[2] for r in stub.requests]
    check(len(set(bodies)) == len(bodies), "no batch was sent twice")
    check(m.get1("spanprof_dropped_samples_total", reason="export") > 0,
          "samples of refused batches counted as dropped (%d)"
          % m.get1("spanprof_dropped_samples_total", reason="export"))
    rc, _ = a.stop()
    check(rc == 0, "agent exits 0")
    stub.close()
finally:
    load.kill()
print("PASS")
