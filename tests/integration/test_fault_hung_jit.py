#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A JIT whose perf map is on a file system that stops answering, next to a
JIT whose jitdump is on a healthy disk (root, real BPF, real FUSE).

Which fault is real: the hang is.  Process A spins in anonymous executable
memory (as JIT code runs) in a mount namespace of its own whose /tmp is a
hangfs mount (hangfs.c: lookups, stat and open answer, every read blocks
for as long as the test holds it: a hung NFS hard mount or a FUSE daemon
gone), where its perf map /tmp/perf-PID.map is (V8 --perf-basic-prof,
Python -X perf write it there).  So the JIT reader's find job (its /proc
reads, the pin inside A's root, stat, reopen) answers, and its first read
of the map blocks in the kernel for real.  (A perf map, not a jitdump: a
jitdump is found by its executable mapping, and the process table's
build-id read of that mapping hangs first, racing the JIT reader for the
same process.)  (A hung /proc/PID/status
itself could not be produced: status answers even while maps and environ
block on a process's mmap lock, test_fault_hung_proc.py; the reader's
/proc reads run in the same bounded job, so they are covered by the same
limit.)  Process B does the same with its dump in a local directory.

What must hold, with `spanprof record -p A,B` running:
  1. hangfs reports a read by the JIT reader's helper thread (comm
     sp-jit-maps) stuck on A's perf map.
  2. Only then the test appends a code load to B's dump: B's next check
     must read it (a piece holding its name appears in FILE.syms/jit/),
     so the reader went on past the hung file (before, it stayed in that
     read for good: no JIT file of any process was read again, and
     record's exit joined the reader for ever).
  3. within 5 s of SIGTERM record has written its profile and summary and
     ended every thread but the helpers still in that read (a FUSE request
     the daemon has read is waited out even on SIGKILL, as in
     test_fault_hung_exe.py); once the hang ends it is reaped, exit 0.  Its
     summary counts the check that timed out (jit.timed_out >= 1) and has
     the line naming the hung JIT files.
Exit 0 pass, else fail.
"""
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import RECORD, check, fail, load_json, require_root, tmpdir  # noqa: E402
from fault_util import HangFs, stop_record_stuck  # noqa: E402
from agent_util import wait_for  # noqa: E402

# Spins in anonymous executable memory (`jmp .`) and maps argv[1] r-x
# without reading it (a runtime maps its dump's first page so profilers
# find it), unless argv[1] is "-".
HELPER = r"""
import ctypes, mmap, os, sys, threading, time
code = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                 prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
code.write(b"\xeb\xfe")
spin = ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(code)))
if sys.argv[1] != "-":
    fd = os.open(sys.argv[1], os.O_RDONLY)
    marker = mmap.mmap(fd, 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
threading.Thread(target=spin, daemon=True).start()
print("ready", flush=True)
time.sleep(float(sys.argv[2]))
os._exit(0)
"""


def jd_header():
    return struct.pack("<IIIIIIQQ", 0x4A695444, 1, 40, 62, 0xdeadbeef, 1, 0, 0)


def jd_load(addr, size, index, name):
    body = struct.pack("<IIQQQQ", 1, 1, addr, addr, size, index) + name + b"\0" + b"\xcc" * size
    return struct.pack("<IIQ", 0, 16 + len(body), 0) + body


def helper_in_hung_tmp(fs):
    """A: the helper in a private mount namespace whose /tmp is fs."""
    p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                          'mount --bind "$1" /tmp && exec "$2" -c "$0" - 120', HELPER,
                          fs.mnt, sys.executable], stdout=subprocess.PIPE, text=True)
    fs.procs.append(p)	# killed and reaped by fs.close(), after the hang ends
    if p.stdout.readline().strip() != "ready":
        fail("the JIT helper could not start with its /tmp on the FUSE mount")
    return p


def pieces_text(syms):
    jit = os.path.join(syms, "jit")
    if not os.path.isdir(jit):
        return b""
    out = b""
    for name in os.listdir(jit):
        try:
            with open(os.path.join(jit, name), "rb") as f:
                out += f.read()
        except FileNotFoundError:
            pass	# a piece being renamed into place
    return out


def main():
    require_root()
    d = tmpdir()
    os.mkdir(os.path.join(d, "fs"))
    fs = HangFs(os.path.join(d, "fs"))
    rec = None
    try:
        local = os.path.join(d, "local")
        os.mkdir(local)
        a = helper_in_hung_tmp(fs)
        # B's file must exist before B opens it: B's pid is not known
        # before it starts, so a launcher makes it under the right name
        b = subprocess.Popen(["sh", "-c", 'f=%s/jit-$$.dump; head -c 4096 /dev/zero > "$f"; '
                              'exec %s -c "$0" "$f" 120' % (local, sys.executable), HELPER],
                             stdout=subprocess.PIPE, text=True)
        fs.procs.append(b)
        if b.stdout.readline().strip() != "ready":
            fail("the local JIT helper could not start")
        check(os.path.exists("/proc/%d/root/tmp/perf-%d.map" % (a.pid, a.pid)),
              "A's /tmp is the FUSE mount (its perf map is there)")
        b_dump = os.path.join(local, "jit-%d.dump" % b.pid)
        with open(b_dump, "r+b") as f:
            f.truncate(0)
            f.write(jd_header())
        out = os.path.join(d, "hung_jit.pb.gz")
        js = os.path.join(d, "hung_jit.json")
        rec = subprocess.Popen(RECORD + ["-p", "%d,%d" % (a.pid, b.pid), "-o", out,
                                         "--summary-json", js],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: "sp-jit-maps" in fs.stuck_readers() or rec.poll() is not None, 60,
                 what="a read of A's perf map by the JIT reader (sp-jit-maps) to hang",
                 note=lambda: ": stuck readers %s, record %s" % (
                     fs.stuck_readers(), "running" if rec.poll() is None else
                     "exited %s" % rec.returncode))
        if rec.poll() is not None:
            fail("record ended early (%s): %s" % (rec.returncode, rec.stderr.read()))
        t_hung = time.monotonic()
        print("stuck readers: %s" % fs.stuck_readers(), flush=True)
        with open(b_dump, "ab") as f:
            f.write(jd_load(0x7f0000001000, 0x40, 1, b"after_the_hang"))
        wait_for(lambda: b"after_the_hang" in pieces_text(out + ".syms"), 30,
                 what="B's load written after A's map hung to be shipped",
                 note=lambda: ": %d piece bytes so far" % len(pieces_text(out + ".syms")))
        print("B's load shipped %.1f s after A's map hung" % (time.monotonic() - t_hung),
              flush=True)
        err = stop_record_stuck(rec, fs, "the JIT reader's helper in A's read")
        rec = None
        check(os.path.getsize(out) > 0, "the profile is written")
        j = load_json(js)["jit"]
        print("jit: %s" % j, flush=True)
        check(j["timed_out"] >= 1, "jit.timed_out counts A's check (%s)" % j["timed_out"])
        check(j["jitdump_checks"] >= 1 and j["pieces"] >= 1,
              "B's dump found and shipped (jitdump checks %d, pieces %d)"
              % (j["jitdump_checks"], j["pieces"]))
        check("JIT files that did not answer within the read limit" in err,
              "the summary names the hung JIT files")
    finally:
        if rec is not None:
            rec.kill()
        fs.close()	# first: a thread in the hung read holds record until then
        if rec is not None:
            rec.wait()


if __name__ == "__main__":
    main()
