#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The unwind table builder and a file system that stops answering
mid-file: the file is skipped and counted, and `record` and `agent`
still exit at once.

hangfs (tests/integration/hangfs.c, libfuse3) serves a copy of Debian's
libstdc++ with its own build id (so no table for it exists yet) whose
first 1 MiB - ELF header, program headers, build-id note - reads fine, and
whose later pages (.eh_frame_hdr at 1.8 MiB, .eh_frame, the section
headers) never come, as a server that went away mid-file.  A Python
process maps it executable and spins.  The process table's deadline-bound
build-id read succeeds, so the file goes to the unwind table builder with
its pinned descriptor.  The builder reads what libelf will need on a
deadline-bound helper (unwind_prefetch.c) first; that read blocks for good
(only a fatal signal ends a FUSE wait).  What must hold, for `record -a`
and for `agent`, stopped by SIGTERM:
  - the file is counted as stalled (summary JSON unwind.failed_stalled,
    /metrics spanprof_unwind_tables_total{outcome="stalled"}), and the
    builder goes on: other files' tables are built after it;
  - exit 0 within a few seconds of the signal (before, the builder's own
    read blocked, and the exit joined the builder thread: for ever);
  - the profile (record) holds the mapper's samples.
Root, real BPF, real FUSE (/dev/fuse).  Trace-context discovery is off
(--no-trace-context) so nothing else reads the file's later pages.
"""
import os
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import SPANPROF, check, fail, load_json, read_pprof, require_root, tmpdir  # noqa: E402
from fault_util import HangFs, sigterm_agent, sigterm_record  # noqa: E402
import agent_util as au  # noqa: E402

require_root()
SRC = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
if not os.path.exists(SRC):
    fail("%s is missing (libstdc++6 is a dependency of the build)" % SRC)
PREFIX = 1 << 20
d = tmpdir()


def sections(b):
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3a)
    secs = [struct.unpack_from("<IIQQQQ", b, shoff + i * shentsize) for i in range(shnum)]
    stro = secs[shstrndx][4]
    out = {}
    for s in secs:
        name = b[stro + s[0]:b.index(b"\0", stro + s[0])].decode()
        out[name] = (s[4], s[5])
    return out, shoff


def fresh_copy(src, dst):
    """A copy of src with its own build id (so no table for it exists
    yet); returns its sections and section header offset."""
    shutil.copy(src, dst)
    with open(dst, "r+b") as f:
        b = f.read()
        secs, shoff = sections(b)
        off, size = secs[".note.gnu.build-id"]
        f.seek(off + 16)
        f.write(os.urandom(size - 16))
    return secs, shoff


lib = os.path.join(d, "libhung.so")
secs, shoff = fresh_copy(SRC, lib)
bid_off, bid_size = secs[".note.gnu.build-id"]
fresh = [os.path.join(d, "libfresh%d.so" % i) for i in range(2)]
for f in fresh:
    fresh_copy("/usr/lib/x86_64-linux-gnu/libbz2.so.1.0", f)
eh = min(secs[".eh_frame"][0], secs[".eh_frame_hdr"][0])
check(bid_off + bid_size < PREFIX and eh > PREFIX + (256 << 10) and shoff > PREFIX,
      "the copy's build id is in the first MiB, its CFI (at %#x) and section headers (at %#x) "
      "beyond it" % (eh, shoff))

fs = HangFs(d, backing=lib, prefix=PREFIX)

try:
    with open(fs.FILE, "rb") as f:
        check(f.read(4) == b"\x7fELF", "the FUSE file's first page reads (an ELF header)")

    # ------------------------------------------------ 1. record
    hung = fs.mapper(60)
    out = os.path.join(d, "hung.pb.gz")
    js = os.path.join(d, "hung.json")
    # --unwind-cpu 100: the builder gets through the machine's other files
    # (~1 s of CPU) before the stall, not after the signal.
    rec = subprocess.Popen([SPANPROF, "record", "--no-report", "-q", "-F", "97", "--no-kernel",
                            "--no-trace-context", "--unwind-cpu", "100", "-a", "-o", out,
                            # the mapper runs no code in the file: eager,
                            # or no build (lazy, -a's default) would read it
                            "--unwind-build", "eager",
                            "--summary-json", js],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(5)
    # A file mapped after the stall: the builder is not stuck behind it.
    late = subprocess.Popen([sys.executable, "-c", "import ctypes, sys, time; "
                             "ctypes.CDLL(sys.argv[1]); time.sleep(30)", fresh[0]])
    fs.procs.append(late)
    time.sleep(3)
    sigterm_record(rec, "waiting on the builder's read")
    u = load_json(js)["unwind"]
    check(u["failed_stalled"] >= 1, "record: the file that stopped answering is counted as "
          "stalled (%d)" % u["failed_stalled"])
    check(u["built"] >= 3, "record: other tables were built (%d), the one mapped after the "
          "stall among them" % u["built"])
    prof = read_pprof(out)
    n = sum(s["values"][0] for s in prof["samples"]
            if str(s["labels"].get("pid")) == str(hung.pid))
    check(n >= 10, "record: the mapper's samples are in the profile (%d)" % n)

    # ------------------------------------------------ 2. agent
    a = au.Agent(["-F", "97", "--interval", "1", "--no-trace-context", "--unwind-cpu", "100",
                  "--unwind-build", "eager",
                  "--output-dir", os.path.join(d, "out")], d)
    try:
        au.wait_for(lambda: a.metrics().get1("spanprof_unwind_tables_total",
                                             outcome="stalled") >= 1,
                    timeout=15, what="the stalled file to be counted on /metrics")
        built0 = a.metrics().get1("spanprof_unwind_tables_total", outcome="built")
        late2 = subprocess.Popen([sys.executable, "-c", "import ctypes, sys, time; "
                                  "ctypes.CDLL(sys.argv[1]); time.sleep(30)", fresh[1]])
        fs.procs.append(late2)
        au.wait_for(lambda: a.metrics().get1("spanprof_unwind_tables_total",
                                             outcome="built") > built0,
                    timeout=15, what="a table built after the stall")
        st, _ = au.http_get(a.port, "/healthz")
        check(st == 200, "agent: healthz 200 with the stalled file")
        sigterm_agent(a)
    finally:
        a.kill()
finally:
    fs.close()  # ends the hang first, then the daemon, procs, the mount
print("PASS")
