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
from spt import SPANPROF, check, load_json, read_pprof, require_root, tmpdir  # noqa: E402
from fault_util import HangFs, exporting_agent, sigterm_agent, sigterm_record, watch_healthz  # noqa: E402
import agent_util as au  # noqa: E402

require_root()
d = tmpdir()
fs = HangFs(d)

try:
    # ------------------------------------------------ 1. record
    busy = au.busy(30)
    fs.procs.append(busy)
    hung = fs.mapper(30)
    out = os.path.join(d, "hung.pb.gz")
    js = os.path.join(d, "hung.json")
    rec = subprocess.Popen([SPANPROF, "record", "--no-report", "-q", "-F", "97", "--no-kernel",
                            "-a", "-o", out, "--summary-json", js],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    second = fs.mapper(30)     # the same file, another process: skipped at once
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
    third = fs.mapper(30)
    with exporting_agent(d) as (a, stub):
        fourth = fs.mapper(30)     # appears while the agent runs
        bad = watch_healthz(a, 6)
        n = stub.count()
        check(not bad, "agent: /healthz stayed 200 while the file hung (%s)" % bad)
        check(n >= 4, "agent: %d batches exported in 6 s at --interval 1 while the file hung" % n)
        m = a.metrics()
        to = m.get1("spanprof_process_events_total", event="file_timed_out")
        check(to >= 1, "agent: /metrics counts the file that did not answer (%d)" % to)
        mine = [p for p in (third.pid, fourth.pid)]
        check(fourth.poll() is None and third.poll() is None, "the mappers still run (%s)" % mine)
        sigterm_agent(a)
finally:
    fs.close()
