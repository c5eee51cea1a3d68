"""Debian's python3 running a pure-Python loop: the share of samples whose
stack reaches the thread root, spanprof (default unwinding) against
`perf record --call-graph dwarf`, on the same process in the same run
(issue 12; spanprof must not be more than 3 points below perf).

"Reaches the thread root" is decided the same way for both: the outermost
frame is the return address in python3's _start (the ELF entry point,
from readelf; python3.11 is stripped, so no name is used).  perf copies
8 KiB of stack per sample and unwinds it afterwards with libdw; spanprof
walks the stack in BPF from its .eh_frame tables.
"""
import os
import re
import shutil
import subprocess
import time

from spt import *

require_root()
PY = "/usr/bin/python3"	# Debian's, not whatever python3 is first in PATH
if not os.path.exists(PY) or not shutil.which("perf"):
    fail("Debian's python3 and perf (linux-perf) are needed: run scripts/deps.sh")
PY = os.path.realpath(PY)
entry = int(re.search(r"Entry point address:\s+0x([0-9a-f]+)",
                      subprocess.run(["readelf", "-h", PY], capture_output=True, text=True).stdout).group(1), 16)
typ = subprocess.run(["readelf", "-h", PY], capture_output=True, text=True).stdout
check("EXEC" in typ, "%s is not position independent (addresses = ELF addresses)" % PY)

d = tmpdir()
loop = "def f(n):\n s = 0\n for i in range(n):\n  s += i * i\n return s\nwhile True:\n f(100000)\n"
py = subprocess.Popen([PY, "-c", loop])
try:
    time.sleep(0.5)
    out = os.path.join(d, "py.pb.gz")
    perf_data = os.path.join(d, "perf.data")
    perf = subprocess.Popen(["perf", "record", "-q", "-F", "97", "--call-graph", "dwarf", "-p", str(py.pid),
                             "-o", perf_data, "--", "sleep", "4"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    record(["-F", "97", "-d", "4", "-p", str(py.pid), "-o", out])
    perf.wait(60)
finally:
    py.kill()
    py.wait()


def in_start(a):
    return entry <= a < entry + 0x30


# spanprof: the outermost user frame of each python3 sample
p = read_pprof(out)
n = root = 0
for s in p["samples"]:
    if not s["locs"]:
        continue
    mid, addr = p["locations"][s["locs"][-1]]
    m = p["mappings"].get(mid)
    if not m or m["file"] == "[kernel.kallsyms]":
        continue
    n += s["values"][0]
    # the mapping is python3's text; non-PIE: address = ELF address
    if m["file"] == PY and in_start(addr):
        root += s["values"][0]
check(n > 100, "spanprof: %d python3 samples" % n)
sp_share = 100.0 * root / n

# perf: callchains printed one ip per line, samples separated by blank lines
txt = subprocess.run(["perf", "script", "-i", perf_data, "-F", "ip"], capture_output=True,
                     text=True, timeout=300).stdout
pn = proot = 0
for block in txt.strip().split("\n\n"):
    ips = [int(l.strip().split()[0], 16) for l in block.splitlines() if l.strip()]
    user = [a for a in ips if a < 0xffff800000000000]
    if not user:
        continue
    pn += 1
    proot += in_start(user[-1])
check(pn > 100, "perf: %d python3 samples" % pn)
perf_share = 100.0 * proot / pn
print("reached the thread root: spanprof %.1f%% of %d, perf --call-graph dwarf %.1f%% of %d"
      % (sp_share, n, perf_share, pn))
check(sp_share >= perf_share - 3.0, "spanprof %.1f%% is within 3 points of perf's %.1f%% (or above)"
      % (sp_share, perf_share))
