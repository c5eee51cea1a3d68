#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A profiled process calling prctl(PR_SET_VMA) in a loop can make the
collector neither re-read its /proc/PID files continuously nor wake for
every call.

A prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, ..., "OTEL_CTX") of a target is
an SP_EV_CTX_PUBLISH record (the last step of an OTEP 4719 publication),
and each used to re-read the process's maps and ELF files and to wake the
collector.  Another name is not a publication (Go 1.25 and later name
their heap mappings " Go: heap" at every heap growth).  A real process
first names an anonymous mapping " Go: heap" for 0.5 s, then "OTEL_CTX" as
fast as it can for 3 s (the call may fail with EINVAL on a kernel without
CONFIG_ANON_VMA_NAME, as here: the tracepoint fires at syscall entry
either way).  Checks:
  - the other name sends no record (counted: vma_name_other);
  - every publication is sent or counted (publish_woke + publish_quiet =
    records received + dropped), and at most one woke the collector per
    10 ms;
  - the collector's main thread wakes at most 400 times in 2 s of the storm
    (schedstat timeslices; ~243 measured, and before this bound, when each
    publication woke it: ~111,000, with 880 ms of its CPU in those 2 s);
  - every publication received is re-read at once or coalesced
    (received_publish = publish_rereads + publish_coalesced);
  - at most one re-read per 100 ms (+ slack for the coarse clock), counting
    the deferred ones;
  - a tail is not lost: 0.3 s after the storm, three calls in a row (the
    first re-read at once, the two after it coalesced), then 2 s alive: the
    coalesced two get a deferred re-read at a tick (publish_deferred >= 1;
    a tick between two batches of the ring may take one mid-storm too).
    Not the storm's own end: one run in ~40 had 0 deferred there (not
    explained); the deferred logic itself is checked step by step in
    test_ctx_discovery;
  - the summary line names both counts; record exits 0.
Bounded: about 8 s.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import RECORD, check, load_json, require_root, tmpdir  # noqa: E402

require_root()
d = tmpdir()
SECONDS = 3.0
storm = r"""
import ctypes, mmap, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                       ctypes.c_char_p]
m = mmap.mmap(-1, 4096)
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
def name(s):
    return libc.prctl(0x53564d41, 0, addr, 4096, s) == 0
other = 0
end = time.monotonic() + 0.5
while time.monotonic() < end:
    for _ in range(200):
        name(b" Go: heap")
        other += 1
n = ok = 0
t0 = time.monotonic()
while time.monotonic() < t0 + %f:
    for _ in range(200):
        ok += name(b"OTEL_CTX")
        n += 1
t1 = time.monotonic()
time.sleep(0.3)
for _ in range(3):
    ok += name(b"OTEL_CTX")
    n += 1
print("other %%d, prctl calls %%d, succeeded %%d, storm %%.6f %%.6f" %% (other, n, ok, t0, t1),
      flush=True)
time.sleep(2.0)
""" % SECONDS


def slices(pid):
    with open("/proc/%d/task/%d/schedstat" % (pid, pid)) as f:
        return int(f.read().split()[2])


js = os.path.join(d, "s.json")
p = subprocess.Popen(RECORD + ["-F", "97", "-o", os.path.join(d, "s.pb.gz"), "--summary-json",
                               js, "--", sys.executable, "-c", storm],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(1.5)
w0, s0 = time.monotonic(), slices(p.pid)
time.sleep(2.0)
w1, s1 = time.monotonic(), slices(p.pid)
out, err = p.communicate(timeout=60)
print(out.strip(), flush=True)
check(p.returncode == 0, "record exits 0 (%s)" % err[-300:])
j = load_json(js)
c, x, b = j["consumer"], j["ctx"], j["bpf"]
print("consumer", c, "\nctx", x, "\nbpf", {k: b[k] for k in (
    "ringbuf_sent_proc", "ringbuf_dropped_proc", "vma_name_other", "publish_woke",
    "publish_quiet")}, flush=True)
f = out.split()
other, calls = int(f[1].rstrip(",")), int(f[4].rstrip(","))
t0, t1 = float(f[8]), float(f[9])
check(x["publish_watch"], "the prctl tracepoint is attached (tracefs available)")
check(calls > 1000, "the process called prctl(PR_SET_VMA, OTEL_CTX) %d times in %.0f s"
      % (calls, SECONDS))
check(other > 1000 and b["vma_name_other"] == other,
      "another name (%d calls) sent no record: counted %d" % (other, b["vma_name_other"]))
sent = b["publish_woke"] + b["publish_quiet"]
check(sent == calls and c["received_publish"] + b["ringbuf_dropped_proc"] >= calls,
      "every publication sent or counted: %d woke + %d quiet = %d calls; received %d "
      "(+ %d dropped in the ring)" % (b["publish_woke"], b["publish_quiet"], calls,
                                      c["received_publish"], b["ringbuf_dropped_proc"]))
check(c["received_publish"] <= calls, "no publication record for the other name (%d for %d)"
      % (c["received_publish"], calls))
woke_max = int((t1 - t0) / 0.010) + 1 + 3 + 10   # one per 10 ms, the first, the tail's, slack
check(b["publish_woke"] <= woke_max, "at most one publication a 10 ms woke the collector: %d "
      "(<= %d)" % (b["publish_woke"], woke_max))
overlap = min(w1, t1) - max(w0, t0)
check(overlap >= 1.5, "the wakeups were counted during the storm (%.2f s of the 2 s window)"
      % overlap)
check(s1 - s0 <= 400, "the collector's main thread woke %d times in %.1f s of the storm "
      "(<= 400)" % (s1 - s0, w1 - w0))
check(c["received_publish"] == x["publish_rereads"] + x["publish_coalesced"],
      "every publication accounted: received %d = re-read %d + coalesced %d"
      % (c["received_publish"], x["publish_rereads"], x["publish_coalesced"]))
limit = int(SECONDS / 0.1) + 1 + 2 + 5   # one per 100 ms, the first, the tail's two, slack
total = x["publish_rereads"] + x["publish_deferred"]
check(total <= limit, "re-reads %d (%d at once + %d deferred): at most one per 100 ms (<= %d)"
      % (total, x["publish_rereads"], x["publish_deferred"], limit))
# >= 1, not == 1: a tick that comes between two batches of the ring, 100 ms
# after the last re-read, re-reads the coalesced ones mid-storm too (2 once
# in a fresh-clone CI run); the bound above keeps them one per 100 ms
check(x["publish_deferred"] >= 1, "the tail got its deferred re-read (%d)"
      % x["publish_deferred"])
check("late publications re-read %d, coalesced %d (+ %d deferred re-reads"
      % (x["publish_rereads"], x["publish_coalesced"], x["publish_deferred"]) in err,
      "the summary names the counts")
print("PASS")
