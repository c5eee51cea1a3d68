#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A file system that never answers reads, under a profiled process.

hangfs (tests/integration/hangfs.c, libfuse3) serves one 1 MiB file whose
reads block until the test ends, as a hung NFS hard mount or a dead FUSE daemon
does.  A Python process maps it executable (without touching it) and
spins; the consumer then has to read that file's build id.  A busy
fixture (callchain) runs beside it.  What must hold:
  1. `record -a`, stopped by SIGTERM after 3 s: exits 0 within a few
     seconds of the signal (it hung 97 s ignoring SIGTERM before), the
     summary counts the file that did not answer (files_timed_out >= 1)
     and a second process mapping the same file is skipped at once
     (files_skipped >= 1), the profile holds the fixture's samples and
     the hung process's own samples (kept, with their addresses).
  2. `agent --interval 1`: batches keep arriving about every second while
     the file hangs, /healthz stays 200 (the consumer advances), and
     /metrics counts spanprof_process_events_total{event="file_timed_out"}.
Root, real BPF, real FUSE (/dev/fuse).
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import SPANPROF, check, fail, load_json, read_pprof, require_root, tmpdir  # noqa: E402
from fault_util import HangFs, sigterm_record  # noqa: E402
import agent_util as au  # noqa: E402
from lib.otlp_stub import OtlpStub  # noqa: E402

require_root()
d = tmpdir()
MAPPER = r"""
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
m = mmap.mmap(fd, 1 << 20, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_EXEC)
print("mapped", flush=True)
end = time.time() + float(sys.argv[2])
x = 0
while time.time() < end:
    x += 1
"""
fs = HangFs(d)
procs = []


def mapper(secs):
    p = subprocess.Popen([sys.executable, "-c", MAPPER, fs.FILE, str(secs)],
                         stdout=subprocess.PIPE, text=True)
    procs.append(p)
    if p.stdout.readline().strip() != "mapped":
        fail("the mapper could not map the FUSE file")
    return p


try:
    # ------------------------------------------------ 1. record
    busy = au.busy(30)
    procs.append(busy)
    hung = mapper(30)
    out = os.path.join(d, "hung.pb.gz")
    js = os.path.join(d, "hung.json")
    rec = subprocess.Popen([SPANPROF, "record", "--no-report", "-q", "-F", "97", "--no-kernel",
                            "-a", "-o", out, "--summary-json", js],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    second = mapper(30)     # the same file, another process: skipped at once
    time.sleep(1.5)
    err = sigterm_record(rec, "the consumer is stuck in the FUSE read")
    procs_js = load_json(js)["procs"]
    check(procs_js["files_timed_out"] >= 1,
          "record: the file that did not answer is counted (files_timed_out %d)"
          % procs_js["files_timed_out"])
    check(procs_js["files_skipped"] >= 1,
          "record: the second process's mapping of it is skipped without waiting "
          "(files_skipped %d)" % procs_js["files_skipped"])
    check("files that did not answer within the limit" in err, "record: the summary says so")
    prof = read_pprof(out)
    by_pid = {}
    for s in prof["samples"]:
        pid = s["labels"].get("pid")
        by_pid[pid] = by_pid.get(pid, 0) + s["values"][0]
    nb, nh = by_pid.get(busy.pid, 0) + by_pid.get(str(busy.pid), 0), \
        by_pid.get(hung.pid, 0) + by_pid.get(str(hung.pid), 0)
    check(nb >= 20, "record: the busy fixture kept being sampled (%d samples)" % nb)
    check(nh >= 10, "record: the hung file's process has its samples, with addresses (%d)" % nh)

    # ------------------------------------------------ 2. agent
    stub = OtlpStub(lambda i: (200, {}))
    third = mapper(30)
    a = au.Agent(["-F", "97", "--interval", "1", "--endpoint",
                  "http://127.0.0.1:%d" % stub.port], d)
    try:
        fourth = mapper(30)     # appears while the agent runs
        t0 = time.monotonic()
        probes_bad = 0
        while time.monotonic() - t0 < 6:
            st, body = au.http_get(a.port, "/healthz", timeout=2)
            if st != 200:
                probes_bad += 1
                print("healthz:", st, body, flush=True)
            time.sleep(0.25)
        n = stub.count()
        check(probes_bad == 0, "agent: /healthz stayed 200 while the file hung")
        check(n >= 4, "agent: %d batches exported in 6 s at --interval 1 while the file hung" % n)
        m = a.metrics()
        to = m.get1("spanprof_process_events_total", event="file_timed_out")
        check(to >= 1, "agent: /metrics counts the file that did not answer (%d)" % to)
        mine = [p for p in (third.pid, fourth.pid)]
        check(fourth.poll() is None and third.poll() is None, "the mappers still run (%s)" % mine)
        rc, dt = a.stop()
        check(rc == 0 and dt < 6, "agent: SIGTERM exits 0 in %.1f s" % dt)
    finally:
        a.kill()
        stub.close()
finally:
    fs.close(procs)
