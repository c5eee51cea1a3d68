#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hostile perf maps: counted, bounded, never a hang (root).

Node runs hot JavaScript without --perf-basic-prof (JIT code in anonymous
executable memory, so spanprof looks for /tmp/perf-PID.map); the test puts
a hostile file there and runs `spanprof record -p PID -d 0.5` once per case
(-d 2 for huge: its copy takes five reads of the perf map, one a check, and
a check comes every 0.25 s).  Every other case needs 1 check: the first
comes with the first sample in anonymous memory (the consumer queues the
pid, the reader checks at once), ~10 ms into the window for a process
spinning there at 97 Hz, and a second can come at 0.25 s; 0.5 s is 2
checks' worth where 1 is needed (1 s was 4):

  fifo       a FIFO (an open would block)        -> not_regular, no hang
  devzero    a symlink to /dev/zero (endless)    -> not_regular
  dir        a directory                         -> not_regular
  other_uid  a regular map owned by nobody       -> wrong_owner
  stale      a map older than the process        -> stale
  garbage    non-hex, NUL bytes, overlapping and
             huge-size lines, a 64 KiB name, one
             good line                           -> copied; the symbolizer
                                                    refuses the bad lines
                                                    (counted) and finishes
  huge       80 MiB of lines                     -> the chain stops at the
                                                    64 MiB per-process bound
                                                    (truncated), record
                                                    finishes on time, the
                                                    symbolizer parses the
                                                    chain within its bounds
                                                    (256 MiB, 8 M entries)

Hostile jitdumps: a Python helper spins in anonymous executable memory
(two bytes of machine code, `jmp .`) and maps ./jit-PID.dump r-x as a
runtime does; the test writes the file's bytes (same inode) per case:

  dump_garbage     random bytes                       -> refused (file)
  dump_swapped     the other byte order's magic       -> refused (file)
  dump_truncated   a load whose size runs past the
                   end of the file (1 GiB)            -> waits, nothing shipped
  dump_huge_code   a load of 1 GiB of code (a sparse
                   file) and one after it             -> both converted, the
                                                         code skipped by size
                                                         (the unit test proves
                                                         it is never read)
  dump_bad_records sizes that do not add up, no NUL,
                   an empty name, a record size of 8  -> counted, the good
                                                         loads before shipped
  dump_other_uid   a good dump owned by nobody        -> wrong_owner
  dump_stale       a good dump older than the process -> stale
  dump_fifo_swap   the dump unlinked after it was
                   mapped, a FIFO put at its name     -> the mapped file is
                                                         read (map_files), no
                                                         open of the FIFO, no
                                                         hang

Each record must end within its duration plus 20 s (a blocked open or an
endless read would exceed it), exit 0, and write a complete profile.
Exit 0 pass, 77 skip, else fail.
"""
import os
import pwd
import random
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spt  # noqa: E402
from spt import check, fail  # noqa: E402

SYM = os.path.join(spt.BUILD, "spanprof-symbolizer")
JS = ("function spin(n){let s=0;for(let i=0;i<n;i++){s+=Math.sqrt(i);}return s;}\n"
      "const end=Date.now()+%d*1000; let t=0; while(Date.now()<end){t+=spin(100000);}\n"
      "if(t<0)console.log(t);\n")


# The helper: spins in anonymous executable memory (a sample there makes
# spanprof look for the process's JIT symbols) and maps jit-PID.dump r-x.
HELPER = r"""
import ctypes, mmap, os, sys, threading, time
code = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                 prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
code.write(b"\xeb\xfe")
spin = ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(code)))
fd = os.open("jit-%d.dump" % os.getpid(), os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 4096)
marker = mmap.mmap(fd, 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
threading.Thread(target=spin, daemon=True).start()
print("ready", flush=True)
time.sleep(float(sys.argv[1]))
os._exit(0)	# the spinning thread is never joined
"""


def jd_header(magic=0x4A695444):
    return struct.pack("<IIIIIIQQ", magic, 1, 40, 62, 0xdeadbeef, 1, 0, 0)


def jd_load(addr, size, index, name, code=None, total=None):
    code = b"\xcc" * size if code is None else code
    body = struct.pack("<IIQQQQ", 1, 1, addr, addr, size, index) + name + b"\0" + code
    return struct.pack("<IIQ", 0, total if total is not None else 16 + len(body), 0) + body


def write_same_inode(path, data, sparse_tail=0):
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(data)
        if sparse_tail:
            f.truncate(len(data) + sparse_tail)


def dump_cases(d, nobody):
    helper = os.path.join(d, "helper.py")
    with open(helper, "w") as f:
        f.write(HELPER)
    proc = subprocess.Popen([sys.executable, helper, "300"], cwd=d, stdout=subprocess.PIPE,
                            text=True)
    try:
        check(proc.stdout.readline().strip() == "ready", "the jitdump helper started")
        dump = os.path.join(d, "jit-%d.dump" % proc.pid)
        good = jd_header() + jd_load(0x7f0000001000, 0x40, 1, b"good_first")

        rnd = random.Random(14)
        write_same_inode(dump, bytes(rnd.getrandbits(8) for _ in range(8192)))
        _, j = record(d, "dump_garbage", proc.pid)
        check(j["jitdump_checks"] >= 1 and j["jitdump_refused"] >= 1 and j["pieces"] == 0,
              "dump_garbage: found by its mapping, refused, nothing shipped (%s)" % j)

        write_same_inode(dump, jd_header(0x4454694A) + jd_load(0x1000, 0x10, 1, b"x"))
        _, j = record(d, "dump_swapped", proc.pid)
        check(j["jitdump_refused"] >= 1 and j["pieces"] == 0,
              "dump_swapped: the other byte order is refused (%s)" % j)

        write_same_inode(dump, jd_header() + jd_load(0x2000, 0x10, 1, b"cut", total=1 << 30))
        _, j = record(d, "dump_truncated", proc.pid)
        check(j["jitdump_checks"] >= 1 and j["pieces"] == 0 and j["jitdump_refused"] == 0,
              "dump_truncated: a record past the end waits, nothing shipped (%s)" % j)

        huge = 1 << 30
        head = jd_header() + jd_load(0x7f0000100000, huge, 1, b"huge_code", code=b"",
                                     total=16 + 40 + len(b"huge_code") + 1 + huge)
        # the code is a hole of 1 GiB, then a load after it
        after = jd_load(0x7f0000200000, 0x10, 2, b"after_huge")
        with open(dump, "r+b") as f:
            f.truncate(0)
            f.write(head)
            f.seek(len(head) + huge)
            f.write(after)
        out, j = record(d, "dump_huge_code", proc.pid)
        check(j["jitdump_loads"] >= 2 and j["pieces"] >= 1 and j["piece_bytes"] < 4096,
              "dump_huge_code: both loads converted, skipping the 1 GiB of code (%s)" % j)
        pieces = os.listdir(out + ".syms/jit")
        text = b"".join(open(os.path.join(out + ".syms/jit", p), "rb").read() for p in pieces)
        check(b"huge_code" in text and b"after_huge" in text,
              "dump_huge_code: the pieces hold both names")

        bad = (jd_header() + jd_load(0x3000, 0x10, 1, b"before_bad")
               + jd_load(0x4000, 0x100, 2, b"short_code", code=b"\xcc" * 16)
               + jd_load(0x5000, 0x10, 3, b"", code=b"\xcc" * 16)
               + jd_load(0x6000, 0, 4, b"zero", code=b"")
               + struct.pack("<IIQ", 0, 8, 0) + jd_load(0x7000, 0x10, 5, b"never"))
        write_same_inode(dump, bad)
        _, j = record(d, "dump_bad_records", proc.pid)
        check(j["jitdump_bad_records"] >= 3 and j["jitdump_refused"] >= 1 and
              j["jitdump_loads"] >= 1 and j["pieces"] >= 1,
              "dump_bad_records: counted, the load before them shipped, a record size "
              "below 16 stops the file (%s)" % j)

        write_same_inode(dump, good)
        os.chown(dump, nobody.pw_uid, nobody.pw_gid)
        _, j = record(d, "dump_other_uid", proc.pid)
        check(j["wrong_owner"] >= 1 and j["pieces"] == 0,
              "dump_other_uid: a dump owned by another user is refused (%s)" % j)
        os.chown(dump, 0, 0)

        old = time.time() - 3600
        os.utime(dump, (old, old))
        _, j = record(d, "dump_stale", proc.pid)
        check(j["stale"] >= 1 and j["pieces"] == 0,
              "dump_stale: a dump older than the process is refused (%s)" % j)

        write_same_inode(dump, good)
        os.unlink(dump)		# maps says "jit-PID.dump (deleted)"
        os.mkfifo(dump, 0o644)
        _, j = record(d, "dump_fifo_swap", proc.pid)
        check(j["pieces"] >= 1 and j["jitdump_loads"] >= 1,
              "dump_fifo_swap: the mapped file is read, not the FIFO at its name (%s)" % j)
        os.unlink(dump)
    finally:
        proc.kill()
        proc.wait()


def clear(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.unlink(path)


def record(d, name, pid, secs=0.5):
    out = os.path.join(d, name + ".pb.gz")
    js = os.path.join(d, name + ".json")
    t0 = time.time()
    spt.record(["-p", str(pid), "-d", str(secs), "-o", out, "--summary-json", js], timeout=60)
    took = time.time() - t0
    check(took < secs + 20, "%s: record -d %g finished in %.1f s (no hang)" % (name, secs, took))
    check(os.path.getsize(out) > 0, "%s: the profile is written" % name)
    return out, spt.load_json(js)["jit"]


def symbolize(d, name, out):
    t0 = time.time()
    p = subprocess.run([SYM, "file", out, "-o", os.path.join(d, name + ".sym.pb.gz")],
                       capture_output=True, text=True, timeout=120)
    if p.returncode:
        fail("%s: spanprof-symbolizer file failed: %s" % (name, p.stderr))
    line = [x for x in p.stderr.splitlines() if ": jit:" in x]
    print("%s: symbolizer %.1f s: %s" % (name, time.time() - t0, line))
    return line[0] if line else ""


def field(line, key):
    i = line.find(key + " ")
    return int(line[i + len(key) + 1:].split(",")[0].split(")")[0]) if i >= 0 else -1


def main():
    spt.require_root()
    if not shutil.which("node"):
        fail("node (nodejs) is not installed: run scripts/deps.sh")
    d = spt.tmpdir()
    js = os.path.join(d, "spin.js")
    with open(js, "w") as f:
        f.write(JS % 120)
    node = subprocess.Popen(["node", js], cwd=d)
    path = "/tmp/perf-%d.map" % node.pid
    nobody = pwd.getpwnam("nobody")
    try:
        time.sleep(1.5)		# hot code compiled into anonymous memory

        clear(path)
        os.mkfifo(path, 0o644)
        _, j = record(d, "fifo", node.pid)
        check(j["notes"] > 0 and j["not_regular"] >= 1 and j["pieces"] == 0,
              "fifo: refused as not a regular file (%s)" % j)

        clear(path)
        os.symlink("/dev/zero", path)
        _, j = record(d, "devzero", node.pid)
        check(j["not_regular"] >= 1 and j["pieces"] == 0 and j["bytes_read"] == 0,
              "symlink to /dev/zero: refused, nothing read (%s)" % j)

        clear(path)
        os.mkdir(path)
        _, j = record(d, "dir", node.pid)
        check(j["not_regular"] >= 1 and j["pieces"] == 0, "directory: refused (%s)" % j)

        clear(path)
        with open(path, "w") as f:
            f.write("7f0000001000 10 planted\n")
        os.chown(path, nobody.pw_uid, nobody.pw_gid)
        _, j = record(d, "other_uid", node.pid)
        check(j["wrong_owner"] >= 1 and j["pieces"] == 0,
              "a map owned by another user is refused (%s)" % j)

        clear(path)
        with open(path, "w") as f:
            f.write("7f0000001000 10 leftover\n")
        old = time.time() - 3600
        os.utime(path, (old, old))
        _, j = record(d, "stale", node.pid)
        check(j["stale"] >= 1 and j["pieces"] == 0,
              "a map older than the process (pid reuse) is refused (%s)" % j)

        clear(path)
        with open(path, "wb") as f:
            f.write(b"zzzz 10 not_hex\n"
                    b"7f00\x0000001000 10 nul_in_addr\n"
                    b"7f0000002000 10 nul\x00in_name\n"
                    b"7f0000003000 ffffffffffffffff huge_size\n"
                    b"ffffffffffffff00 1000 wraps\n"
                    b"7f0000004000 100 outer\n7f0000004010 10 inner_overlap\n"
                    b"7f0000005000 10 " + b"n" * 65536 + b"\n"
                    b"\n\n   \n"
                    b"7f0000006000 10 good_line\n")
        out, j = record(d, "garbage", node.pid)
        check(j["pieces"] >= 1 and j["bytes_read"] > 65536,
              "garbage: the file's bytes are copied as they are (%s)" % j)
        line = symbolize(d, "garbage", out)
        check(field(line, "lines refused") >= 4,
              "garbage: the symbolizer refuses the bad lines, counted (%s)" % line)

        clear(path)
        with open(path, "wb") as f:
            chunk = b"".join(b"%012x 10 f%d\n" % (0x7f0000000000 + i * 16, i)
                             for i in range(1 << 16))
            while f.tell() < (80 << 20):
                f.write(chunk)
        out, j = record(d, "huge", node.pid, secs=2)
        check(j["truncated"] >= 1 and j["piece_bytes"] <= (64 << 20) + (1 << 20),
              "huge: the chain stops at the per-process bound, counted (%s)" % j)
        line = symbolize(d, "huge", out)
        check(line != "", "huge: the symbolizer finished and says what it did (%s)" % line)
    finally:
        node.kill()
        node.wait()
        clear(path)
    dump_cases(d, nobody)
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
