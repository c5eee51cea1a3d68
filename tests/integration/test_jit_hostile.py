#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hostile perf maps: counted, bounded, never a hang (root).

Node runs hot JavaScript without --perf-basic-prof (JIT code in anonymous
executable memory, so spanprof looks for /tmp/perf-PID.map); the test puts
a hostile file there and runs `spanprof record -p PID -d 2` once per case:

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

Each record must end within its duration plus 20 s (a blocked open or an
endless read would exceed it), exit 0, and write a complete profile.
Exit 0 pass, 77 skip, else fail.
"""
import os
import pwd
import shutil
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


def clear(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.unlink(path)


def record(d, name, pid):
    out = os.path.join(d, name + ".pb.gz")
    js = os.path.join(d, name + ".json")
    t0 = time.time()
    spt.record(["-p", str(pid), "-d", "2", "-o", out, "--summary-json", js], timeout=60)
    took = time.time() - t0
    check(took < 22, "%s: record finished in %.1f s (no hang)" % (name, took))
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
        out, j = record(d, "huge", node.pid)
        check(j["truncated"] >= 1 and j["piece_bytes"] <= (64 << 20) + (1 << 20),
              "huge: the chain stops at the per-process bound, counted (%s)" % j)
        line = symbolize(d, "huge", out)
        check(line != "", "huge: the symbolizer finished and says what it did (%s)" % line)
    finally:
        node.kill()
        node.wait()
        clear(path)
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
