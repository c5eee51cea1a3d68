#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""record's report child is bounded in time and memory (root, real BPF,
real FUSE).

1. Time, a real hang: a fault_spin copy padded past its loaded pages
   (fault_util.padded) runs from a hangfs mount that answers only those
   pages: it runs, and record's own bounded reads (build id, headers) get
   their answers.  The report child (spanprof-symbolizer report, run as
   nobody after the recording) opens the same file by its mapping's path
   for its symbols, and its reads of the section headers past the prefix
   never return.  `record -p PID -d 2 --report-timeout 3` must print one
   line naming the limit, that the profile is kept and what to do, exit 1,
   end within 3 s of the report's start plus the 2 s reap grace (bounded
    here at 40 s for the whole run, so a load spike does not fail it), and
   leave a complete profile with the process's samples.  The report child
   is seen holding the FUSE file open while it waits (the fault is real,
   not assumed).
2. Memory: `--report-mem 8` (RLIMIT_DATA 8 MiB for the child) on a
   recording of a busy process: the limit is real, the symbolizer cannot
   allocate its resolver under it (it needs 8-16 MiB to start) and says
   so, and record says in one line that the report failed, naming
   --report-mem, exits 1, and the profile is kept.
3. Flag values: --report-timeout 0 and --report-mem 2 are refused in one
   line naming the flag and its range.
Exit 0 pass, else fail.
"""
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import SPANPROF, check, fail, read_pprof, require_root, tmpdir  # noqa: E402
from fault_util import HangFs, padded, spin_variant  # noqa: E402
import agent_util as au  # noqa: E402


class ChildWatch(threading.Thread):
    """Watches record's children named spanprof-symbol(izer) every 0.1 s:
    seen[pid] = the set of files it had open and the last (state, wchan)."""

    def __init__(self, ppid):
        super().__init__(daemon=True)
        self.ppid, self.seen, self.done = ppid, {}, threading.Event()
        self.start()

    def run(self):
        while not self.done.wait(0.1):
            for pid in os.listdir("/proc"):
                try:
                    with open("/proc/%s/stat" % pid) as f:
                        comm, rest = f.read().rsplit(")", 1)
                    if int(rest.split()[1]) != self.ppid or "spanprof-symbol" not in comm:
                        continue
                    files, _ = self.seen.setdefault(int(pid), (set(), None))
                    for fd in os.listdir("/proc/%s/fd" % pid):
                        files.add(os.readlink("/proc/%s/fd/%s" % (pid, fd)))
                    with open("/proc/%s/wchan" % pid) as f:
                        self.seen[int(pid)] = (files, (rest.split()[0], f.read()))
                except (OSError, ValueError, IndexError):
                    pass


def record(args, timeout=90, watch=None):
    t0 = time.monotonic()
    p = subprocess.Popen([SPANPROF, "record", "-q", "-F", "97", "--no-kernel"] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    w = ChildWatch(p.pid) if watch is not None else None
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        fail("record %s did not end within %d s (the report is not bounded): %s"
             % (" ".join(args), timeout, err[-2000:]))
    if w:
        w.done.set()
        w.join()
        watch.update(w.seen)
    print(err, flush=True)
    return p.returncode, out, err, time.monotonic() - t0


def report_lines(err):
    return [x for x in err.splitlines() if x.startswith("spanprof record: the report")]


def samples_of(prof, pid):
    return sum(s["values"][0] for s in prof["samples"]
               if str(s["labels"].get("pid")) == str(pid))


def part_timeout(d):
    exe = os.path.join(d, "spin81.padded")
    prefix = padded(d, spin_variant(d, 81), exe)
    os.mkdir(os.path.join(d, "fs"))
    fs = HangFs(os.path.join(d, "fs"), backing=exe, prefix=prefix)
    try:
        hung = subprocess.Popen([fs.FILE, "60000"])
        fs.procs.append(hung)
        au.wait_for(lambda: hung.poll() is not None or
                    os.path.exists("/proc/%d/exe" % hung.pid) and
                    os.readlink("/proc/%d/exe" % hung.pid) == fs.FILE, 10,
                    what="the padded executable to run from the FUSE mount")
        check(hung.poll() is None, "the executable runs from the FUSE mount (rc %s)"
              % hung.poll())
        out = os.path.join(d, "hung.pb.gz")
        seen = {}
        rc, _, err, took = record(["-p", str(hung.pid), "-d", "2", "--report-timeout", "3",
                                   "-o", out], watch=seen)
        lines = report_lines(err)
        print("report lines: %s\nreport child: %s\nrecord took %.1f s" % (lines, seen, took),
              flush=True)
        # The hang is real: the report child had the FUSE file open (its
        # read waits there: on the request, or on the page lock of another
        # reader's request, which hangfs's log cannot tell apart).
        check(any(fs.FILE in files for files, _ in seen.values()),
              "the report child had the hung FUSE file open (%s)" % seen)
        check(rc == 1, "record exits 1 when its report was stopped (got %d)" % rc)
        check(len(lines) == 1 and "did not finish within 3 s" in lines[0] and
              "the profile is kept: " + out in lines[0] and "--report-timeout" in lines[0],
              "one line names the limit, the kept profile and the flag (%s)" % lines)
        # 2 s of recording, BPF start-up, 3 s of report, 2 s of reap grace
        check(took < 40, "record ended %.1f s after its start (bound 40)" % took)
        prof = read_pprof(out)
        n = samples_of(prof, hung.pid)
        check(n > 0, "the kept profile holds the hung executable's samples (%d)" % n)
    finally:
        fs.close()


def part_memory(d):
    busy = au.busy(30)
    try:
        out = os.path.join(d, "mem.pb.gz")
        rc, _, err, took = record(["-p", str(busy.pid), "-d", "1", "--report-mem", "8",
                                   "-o", out])
        lines = report_lines(err)
        check(rc == 1, "record exits 1 when its report ran out of memory (got %d)" % rc)
        check("Cannot allocate memory" in err, "the symbolizer says it could not allocate")
        check(len(lines) == 1 and "--report-mem, now 8 MiB" in lines[0] and
              "the profile is kept: " + out in lines[0],
              "one line says the report failed, names --report-mem and the kept profile (%s)"
              % lines)
        prof = read_pprof(out)
        check(samples_of(prof, busy.pid) > 0, "the kept profile holds the busy process's samples")
    finally:
        busy.kill()
        busy.wait()


def part_flags():
    for args, flag, rng in ((["--report-timeout", "0"], "--report-timeout 0", "1 to 86400"),
                            (["--report-mem", "2"], "--report-mem 2", "4 to 1048576")):
        p = subprocess.run([SPANPROF, "record"] + args + ["--", "true"], capture_output=True,
                           text=True, timeout=30)
        lines = p.stderr.strip().splitlines()
        check(p.returncode != 0 and len(lines) == 1 and flag in lines[0] and rng in lines[0],
              "%s: refused in one line naming the range (rc %d: %s)" % (flag, p.returncode, lines))


def main():
    require_root()
    d = tmpdir()
    part_flags()
    part_timeout(d)
    part_memory(d)


if __name__ == "__main__":
    main()
