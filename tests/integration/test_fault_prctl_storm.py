#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A profiled process calling prctl(PR_SET_VMA) in a loop cannot make the
collector re-read its /proc/PID files continuously.

Every PR_SET_VMA call of a target is an SP_EV_CTX_PUBLISH event (the last
step of an OTEP 4719 publication), and each used to re-read the process's
maps and ELF files.  A real process names an anonymous mapping with
prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME) as fast as it can for 3 s (the
call may fail with EINVAL on a kernel without CONFIG_ANON_VMA_NAME: the
tracepoint fires at syscall entry either way).  Checks:
  - every publication received is accounted for: re-read at once or
    coalesced (received_publish = publish_rereads + publish_coalesced);
  - at most one re-read per 100 ms (+ slack for the coarse clock), counting
    the deferred ones;
  - a tail is not lost: 0.3 s after the storm, three calls in a row (the
    first re-read at once, the two after it coalesced), then 2 s alive: the
    coalesced two get a deferred re-read at a tick (publish_deferred >= 1;
    a tick between two batches of the ring may take one mid-storm too).
    Not the storm's own end: one run in ~40 had 0 deferred there (not
    explained: the consumer keeps up, batches of 1-2 records, so the
    storm's last call being its last re-read should be ~1e-4); the
    deferred logic itself is checked step by step in test_ctx_discovery;
  - the summary line names both counts; record exits 0.
Bounded: about 12 s.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, load_json, record, require_root, tmpdir  # noqa: E402

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
n = ok = 0
end = time.monotonic() + %f
while time.monotonic() < end:
    for _ in range(200):
        ok += libc.prctl(0x53564d41, 0, addr, 4096, b"storm") == 0
        n += 1
time.sleep(0.3)
for _ in range(3):
    ok += libc.prctl(0x53564d41, 0, addr, 4096, b"tail") == 0
    n += 1
print("prctl calls %%d, succeeded %%d" %% (n, ok), flush=True)
time.sleep(2.0)
""" % SECONDS
js = os.path.join(d, "s.json")
rc, out, err = record(["-F", "97", "-o", os.path.join(d, "s.pb.gz"), "--summary-json", js,
                       "--", sys.executable, "-c", storm], timeout=60)
print(out.strip(), flush=True)
j = load_json(js)
c, x, b = j["consumer"], j["ctx"], j["bpf"]
print("consumer", c, "\nctx", x, "\nringbuf_dropped_proc", b["ringbuf_dropped_proc"], flush=True)
calls = int(out.split("prctl calls ")[1].split(",")[0])
check(x["publish_watch"], "the prctl tracepoint is attached (tracefs available)")
check(calls > 1000, "the process called prctl(PR_SET_VMA) %d times in %.0f s" % (calls, SECONDS))
check(c["received_publish"] + b["ringbuf_dropped_proc"] >= calls * 0.9,
      "publications received %d (+ %d dropped in the ring) for %d calls"
      % (c["received_publish"], b["ringbuf_dropped_proc"], calls))
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
