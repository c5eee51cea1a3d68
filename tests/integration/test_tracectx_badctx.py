"""Processes publishing a malformed OTEP 4719 OTEL_CTX are counted and
ignored: the collector neither crashes nor stalls.

Four real processes each map a memfd named OTEL_CTX (as a writer would)
holding a bad header: wrong signature, version 3, a 1 GiB payload size, an
update that never finishes (published_at_ns = 0).  spanprof record -p on
all four must finish on time, exit 0, and count each failure by reason.
"""
import os
import subprocess
import sys
import time

from spt import *

require_root()
CHILD = r'''
import mmap, os, struct, sys, time
sig, ver, size, ts = sys.argv[1].encode(), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
fd = os.memfd_create("OTEL_CTX")
os.ftruncate(fd, 4096)
m = mmap.mmap(fd, 4096)
m[:32] = struct.pack("<8sIIQQ", sig, ver, size, ts, 0)
print("ready", flush=True)
t = time.time()
while time.time() - t < 8:
    sum(range(10000))
'''
cases = {
    "bad_header": ("NOT_CTX!", 2, 16, 123),
    "bad_version": ("OTEL_CTX", 3, 16, 123),
    "too_big": ("OTEL_CTX", 2, 1 << 30, 123),
    "in_progress": ("OTEL_CTX", 2, 16, 0),
}
procs = {}
for name, (sig, ver, size, ts) in cases.items():
    p = subprocess.Popen([sys.executable, "-c", CHILD, sig, str(ver), str(size), str(ts)],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    procs[name] = p
d = tmpdir()
js = os.path.join(d, "bad.json")
t0 = time.time()
record(["-F", "97", "-p", ",".join(str(p.pid) for p in procs.values()), "-d", "2",
        "-o", os.path.join(d, "bad.pb.gz"), "--summary-json", js])
elapsed = time.time() - t0
for p in procs.values():
    p.kill()
ctx = load_json(js)["ctx"]
print(ctx, flush=True)
check(elapsed < 10, "the recording was not stalled (%.1f s for -d 2)" % elapsed)
check(ctx["procs_resolved"] == 0 and ctx["procs_failed"] == 4, "4 processes counted as failed, none resolved")
check(ctx["bad_header"] == 2, "wrong signature and wrong version counted as bad_header")
check(ctx["too_big"] == 1, "a 1 GiB payload size counted as too_big")
check(ctx["in_progress"] == 1, "an update that never finishes counted as in_progress")
