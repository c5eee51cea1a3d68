#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Processes a hung file system has caught, so that reading their /proc
files blocks: the collector's reads of their maps, environ and memory, and
its TLS search's reads of their mapped files, must cost it a bounded wait.

hangfs (hangfs.c, libfuse3) serves one file whose reads never return.
hung_proc (hung_proc.c, linked with libspanctx: each publishes a process
context, so the collector looks for its TLS descriptor) is started three
ways:
  lock  its mmap lock held for writing for good and a VMA write-locked (a
        thread faulting on the hung file, another mapping it again with
        direct_io): reading its /proc/PID/maps blocks, so do environ, mem;
  mem   a thread of its own waits on the hung file inside a read of
        /proc/self/mem, holding its mmap lock for reading, another queues
        to write it: environ and mem block (maps does not on 6.18: its
        per-VMA reads pass a queued writer);
  elf   the hung file is one of its mappings: the TLS search reads it.
The test first shows each trap holds (a read of the /proc file, bounded
by a subprocess timeout, does not return), then:
  1. `record -a` for 7 s: exits 0 within a few seconds of SIGTERM; the
     summary counts the maps read (lock), the environ reads (lock, mem)
     and the context looks (all three) that did not answer; a busy
     fixture and the three caught processes keep being sampled.
  2. `agent --interval 1`: batches keep arriving, /healthz stays 200,
     /metrics counts the same timeouts.
Root, real BPF, real FUSE.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import BUILD, SPANPROF, check, fail, load_json, read_pprof, require_root, tmpdir  # noqa: E402
from fault_util import (HangFs, compile_c, exporting_agent, sigterm_agent,  # noqa: E402
                        sigterm_record, watch_healthz)
import agent_util as au  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
require_root()
d = tmpdir()
hung_proc = compile_c("hung_proc.c", os.path.join(d, "hung_proc"),
                      extra=["-I" + os.path.join(ROOT, "lib", "spanctx"), "-L" + BUILD,
                             "-lspanctx", "-Wl,-rpath," + BUILD, "-lpthread"])
fs = HangFs(d)


def caught(mode, secs):
    p = subprocess.Popen([hung_proc, mode, fs.FILE, str(secs)],
                         stdout=subprocess.PIPE, text=True)
    fs.procs.append(p)
    lines = [p.stdout.readline().strip() for _ in range(2)]
    if lines != ["starting", "ready"]:
        fail("hung_proc %s did not set its trap (said %s, rc %s)" % (mode, lines, p.poll()))
    return p


def blocks(path):
    """True when reading path does not return within 1.5 s (the reader,
    in a killable wait, is killed)."""
    try:
        subprocess.run(["cat", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=1.5)
        return False
    except subprocess.TimeoutExpired:
        return True


def samples_of(prof, pid):
    return sum(s["values"][0] for s in prof["samples"]
               if str(s["labels"].get("pid")) == str(pid))


try:
    busy = au.busy(60)
    fs.procs.append(busy)
    lock = caught("lock", 60)
    mem = caught("mem", 60)
    elf = caught("elf", 60)
    check(blocks("/proc/%d/maps" % lock.pid), "trap lock: reading its maps blocks")
    check(blocks("/proc/%d/environ" % lock.pid), "trap lock: reading its environ blocks")
    check(blocks("/proc/%d/environ" % mem.pid), "trap mem: reading its environ blocks")
    check(not blocks("/proc/%d/maps" % elf.pid), "trap elf: its maps read as usual")

    # ------------------------------------------------ 1. record
    out = os.path.join(d, "hung.pb.gz")
    js = os.path.join(d, "hung.json")
    rec = subprocess.Popen([SPANPROF, "record", "--no-report", "-q", "-F", "97", "--no-kernel",
                            "-a", "-o", out, "--summary-json", js],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(7)           # the start-up scan waits 1 s on each caught process
    err = sigterm_record(rec, "stuck reading a caught process")
    sj = load_json(js)
    pj, ej, cj = sj["procs"], sj["env"], sj["ctx"]
    check(pj["maps_timed_out"] >= 1,
          "record: the maps read that did not answer is counted (maps_timed_out %d, "
          "skipped %d)" % (pj["maps_timed_out"], pj["maps_skipped"]))
    check(ej["timed_out"] >= 2,
          "record: the environ reads that did not answer are counted (timed_out %d, "
          "skipped %d)" % (ej["timed_out"], ej["skipped"]))
    check(cj["timed_out"] >= 3,
          "record: the context looks (maps, memory, ELF file) that did not answer are "
          "counted (timed_out %d, stuck %d)" % (cj["timed_out"], cj["stuck"]))
    check("maps did not answer within the limit" in err, "record: the summary says so")
    prof = read_pprof(out)
    nb = samples_of(prof, busy.pid)
    check(nb >= 20, "record: the busy fixture kept being sampled (%d samples)" % nb)
    # Pinning a caught process's files (PID/map_files) waits on its mmap
    # lock: one helper per caught process, not one per file, so the
    # helpers left serve the others (at most 4 stuck, then all skipped).
    ids = [m["build_id"] for m in prof["mappings"].values() if m["file"].endswith("/callchain")]
    check(any(i and i != "?" for i in ids),
          "record: the busy fixture's executable has its build id (%s)" % ids)
    for p, name in ((lock, "lock"), (mem, "mem"), (elf, "elf")):
        n = samples_of(prof, p.pid)
        check(n >= 10, "record: caught process %s keeps its samples (%d)" % (name, n))

    # ------------------------------------------------ 2. agent
    with exporting_agent(d) as (a, stub):
        n0 = stub.count()
        bad = watch_healthz(a, 6)
        n = stub.count() - n0
        check(not bad, "agent: /healthz stayed 200 beside the caught processes (%s)" % bad)
        check(n >= 4, "agent: %d batches exported in 6 s at --interval 1" % n)
        m = a.metrics()
        mt = m.get1("spanprof_process_events_total", event="maps_timed_out")
        et = m.get1("spanprof_process_env_total", event="timed_out")
        ct = m.get1("spanprof_ctx_failures_total", reason="timed_out")
        check(mt >= 1 and et >= 2 and ct >= 3,
              "agent: /metrics counts the reads that did not answer (maps %d, environ %d, "
              "context looks %d)" % (mt, et, ct))
        check(all(p.poll() is None for p in (lock, mem, elf)), "the caught processes still run")
        sigterm_agent(a)
finally:
    fs.close()
