#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Process churn does not wake a whole-host profile (issue 17, "Collector").

With lazy exec reads and the unwinder (`record -a`'s default), a new
image's maps are read at its first sample, and that sample wakes the
collector itself (bpf/unwind.bpf.h), so exec and exit records wait in the
ring for the next drain (bpf/proc.bpf.c).  Before, each forced a wakeup:
two per process, ~70 us of the main thread each (docs/benchmarks.md).

`record -a -F 11` runs while a spawner execs /bin/true about 45 times a
second, from when record samples until 0.5 s before it ends.  Counted:
the waits of record's main thread that a ring record ended (summary
`pump_woken`; the timed-out ones, the drain period and the fast drains
after maps reads, are apart in `pump_timed_out`), and for the record its
schedstat timeslices over 3 s.  Checks: fewer record-ended waits than half
the processes spawned (each was about two before; the schedstat count was
282 for 137 execs before, 36 after, but a CI run had 185: the fast drains
after the maps reads of the few sampled ones, 25 wakeups each, which do
not count here); every exec and exit record was received (consumer counts
>= the spawner's processes); record exits 0.  And `--unwind fp` (no
wakeup at the first sample, so the exec read's fast drain needs the exec
record at once) still wakes for them: at least one record-ended wait per
process.
"""
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import RECORD, check, fail, load_json, require_root, tmpdir  # noqa: E402
from lib.perfcmp import _perf_event_fds  # noqa: E402

require_root()
d = tmpdir()


def slices(pid):
    with open("/proc/%d/task/%d/schedstat" % (pid, pid)) as f:
        return int(f.read().split()[2])


def run(name, extra):
    js = os.path.join(d, name + ".json")
    p = subprocess.Popen(RECORD + ["-a", "-F", "11", "-d", "6", "-o",
                                   os.path.join(d, name + ".pb.gz"), "--summary-json", js]
                         + extra, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    spawned, stop = [0], threading.Event()

    def spawner():
        while not stop.is_set():
            subprocess.run(["/bin/true"])
            spawned[0] += 1
            time.sleep(0.02)

    # the spawner starts once record samples (its per-CPU perf events are
    # open: attached), so every process it makes is in the profile
    end = time.monotonic() + 60
    while _perf_event_fds(p.pid) < (os.cpu_count() or 1):
        if p.poll() is not None or time.monotonic() > end:
            fail("%s: record did not start sampling (rc %s)" % (name, p.poll()))
        time.sleep(0.02)
    time.sleep(0.3)
    th = threading.Thread(target=spawner)
    th.start()
    time.sleep(0.5)
    s0, e0 = slices(p.pid), spawned[0]
    time.sleep(3.0)
    s1, e1 = slices(p.pid), spawned[0]
    time.sleep(1.0)
    stop.set()
    th.join()
    _, err = p.communicate(timeout=60)
    check(p.returncode == 0, "%s: record -a exits 0 (%s)" % (name, err[-300:]))
    c = load_json(js)["consumer"]
    check(c["received_exec"] >= spawned[0] and c["received_exit"] >= spawned[0],
          "%s: every exec and exit record received (%d execs, %d exits for %d processes)"
          % (name, c["received_exec"], c["received_exit"], spawned[0]))
    print("%s: %d processes spawned; waits ended by a record %d, timed out %d; "
          "main-thread timeslices %d in 3 s for %d execs"
          % (name, spawned[0], c["pump_woken"], c["pump_timed_out"], s1 - s0, e1 - e0),
          flush=True)
    return c["pump_woken"], spawned[0]


woken, procs = run("default", [])
check(procs >= 100, "the spawner made %d processes (>= 100)" % procs)
check(woken < 0.5 * procs, "churn does not wake the collector: %d waits ended by a record "
      "for %d processes (< half)" % (woken, procs))
woken, procs = run("fp", ["--unwind", "fp"])
check(woken >= procs, "--unwind fp still wakes for them: %d waits ended by a record for %d "
      "processes" % (woken, procs))
print("PASS")
