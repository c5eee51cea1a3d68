# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
"""spanprof-symbolizer refuses path tricks, oversized inputs and gzip bombs.

1. Path tricks: a profile whose mappings carry build ids like
   "../../etc/passwd", "ABCD" (upper case), 130 hex digits, and a valid hex
   id whose mapping file name is a FIFO (opening it for reading would block
   forever) or /dev/zero.  `report` must finish in bounded time, count the
   bad ids as "bad build id", and (under strace, when installed) open no
   path formed from a bad id and never open the FIFO or the device for
   reading.
2. An oversized profile (65 MiB, over the 64 MiB input limit) and a gzip
   bomb (256 MiB of zeros in 250 KiB) given to `file` and `report`: exit 1
   with a message naming the limit, and a peak RSS bounded by 2.5 times
   the limit (the child's ru_maxrss from wait4; 5 times for an ASan build), not by what
   the input claims.
Capability drop of the agent: tests/integration/test_agent_signals.py (5) and
test_agent_thread_caps.py; every thread of serve: test_serve_thread_caps.py.
"""
import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, fail, tmpdir  # noqa: E402
from fault_util import SYMBOLIZER, PprofWriter, env_under_ptrace, peak_rss_kb, strace_opens  # noqa: E402

d = tmpdir()
dbg = os.path.join(d, "debug")
os.makedirs(os.path.join(dbg, ".build-id"))
fifo = os.path.join(d, "fifo")
os.mkfifo(fifo, 0o666)
LIMIT = 64 << 20

# ------------------------------------------------ 1. path tricks
w = PprofWriter()
bad_ids = ["../../etc/passwd", "../../../../../../tmp/x", "ABCDEF0123", "a" * 130,
           "0123456789abcdef/../../../etc/shadow", "zz"]
locs = []
for i, bid in enumerate(bad_ids):
    m = w.mapping(0x400000 + i * 0x100000, 0x400000 + i * 0x100000 + 0x1000, 0,
                  "/etc/passwd", bid)
    locs.append(w.location(m, 0x400000 + i * 0x100000 + 0x10))
good_id = "0123456789abcdef0123456789abcdef01234567"
for i, name in enumerate([fifo, "/dev/zero"]):
    m = w.mapping(0x7f0000000000 + i * 0x100000, 0x7f0000000000 + i * 0x100000 + 0x1000, 0,
                  name, good_id[:-2] + "%02x" % i)
    locs.append(w.location(m, 0x7f0000000000 + i * 0x100000 + 0x10))
w.sample(locs)
prof = w.write(os.path.join(d, "tricks.pb.gz"))
base = [SYMBOLIZER, "report", prof, "--debug-dir", dbg, "--no-debuginfod", "--no-kallsyms",
        "--top", "5"]
log = os.path.join(d, "strace.log")
cmd = (["strace", "-f", "-qq", "-o", log, "-e", "trace=open,openat,openat2"] + base
       if shutil.which("strace") else base)
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=d,
                        start_new_session=True, env=env_under_ptrace())
try:
    so, se = proc.communicate(timeout=60)
except subprocess.TimeoutExpired:
    os.killpg(proc.pid, signal.SIGKILL)   # strace's tracee too
    proc.communicate()
    fail("report did not finish within 60 s: it blocked opening the FIFO a mapping names")
p = subprocess.CompletedProcess(cmd, proc.returncode, so, se)
print(p.stderr, flush=True)
check(p.returncode == 0, "report of the path-trick profile exits 0 (rc=%d)" % p.returncode)
m = re.search(r"bad build id (\d+)", p.stderr)
check(m and int(m.group(1)) == len(bad_ids),
      "each of the %d malformed build ids is counted as a bad build id (%s)"
      % (len(bad_ids), m.group(0) if m else "no count"))
if shutil.which("strace"):
    opens = strace_opens(log)
    traversal = [l for pth, fl, l in opens if "/../" in pth or pth.endswith("/..")
                 or "shadow" in pth or "/tmp/x" in pth]
    check(not traversal, "no path was formed from a malformed build id (%s)" % traversal[:3])
    bid_paths = [pth for pth, fl, l in opens if "/.build-id/" in pth]
    odd = [x for x in bid_paths if not re.search(r"/\.build-id/[0-9a-f]{2}/[0-9a-f]+(\.debug)?$", x)]
    check(not odd, "every .build-id path opened is made of hex (%d opened; odd: %s)"
          % (len(bid_paths), odd[:3]))
    blocking = [l for pth, fl, l in opens if pth in (fifo, "/dev/zero") and "O_PATH" not in fl]
    check(not blocking, "the FIFO and the device named as mapped files were never opened "
          "for reading (%s)" % blocking[:3])
else:
    print("note: strace not installed; the open-by-open checks were not run", flush=True)

# ------------------------------------------------ 2. oversized input, gzip bomb
big = os.path.join(d, "big.pb")
with open(big, "wb") as f:
    f.write(b"\x32\x00")          # a harmless pprof field, then zeros (sparse)
    f.truncate(LIMIT + (1 << 20))
bomb = os.path.join(d, "bomb.pb.gz")
co = zlib.compressobj(9, zlib.DEFLATED, 31)   # gzip wrapper
chunk = bytes(1 << 20)
with open(bomb, "wb") as f:
    for _ in range(256):
        f.write(co.compress(chunk))
    f.write(co.flush())
print("bomb: %d bytes -> 256 MiB" % os.path.getsize(bomb), flush=True)
# An ASan build keeps freed blocks in its quarantine and has shadow memory:
# its bound is looser (the plain build is the one the bound is about).
asan = b"__asan_init" in open(SYMBOLIZER, "rb").read()
factor = 5 if asan else 2.5
for name, path in (("oversized", big), ("gzip bomb", bomb)):
    for sub in (["file", path, "-o", os.path.join(d, "out.pb.gz")],
                ["report", path, "--top", "5"]):
        p, rss = peak_rss_kb([SYMBOLIZER] + sub + ["--no-debuginfod", "--no-kallsyms"],
                             timeout=120, cwd=d)
        err = p.stderr.strip()
        print("%s %s: rc %d, peak RSS %d KiB: %s" % (name, sub[0], p.returncode, rss, err),
              flush=True)
        check(p.returncode == 1, "%s to %s: refused (exit 1)" % (name, sub[0]))
        check("limit" in err and "64 MiB" in err,
              "%s to %s: the message names the 64 MiB limit" % (name, sub[0]))
        check(rss < factor * LIMIT / 1024, "%s to %s: peak RSS %d KiB < %.1f x the limit%s"
              % (name, sub[0], rss, factor, " (ASan build)" if asan else ""))
