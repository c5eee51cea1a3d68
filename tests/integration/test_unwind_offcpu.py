"""Off-CPU stacks through Debian libc without frame pointers (issue 12).

build/fixtures/unw_offcpu (tests/fixtures/unwind/unw_offcpu.c, -O2, no
frame pointers) waits in libc: a pipe read() and pthread_mutex_lock()
(futex), each under a named chain.  spanprof record --off-cpu
--off-cpu-sample 1 takes the user stack at switch-out in the sched_switch
program, with the same unwinder as on-CPU samples.  Read back with go tool
pprof (off_cpu_waits): for >= 95% of the waits in each chain, the whole
chain is there up to the thread root (start_thread, clone3 after the
thread function).
"""
import os

from spt import *

require_root()
d = tmpdir()
out = os.path.join(d, "off.pb.gz")
js = os.path.join(d, "off.json")
record(["-F", "97", "--off-cpu", "--off-cpu-sample", "1", "--off-cpu-min-us", "100",
        "-o", out, "--summary-json", js, "--", os.path.join(BUILD, "fixtures", "unw_offcpu"), "2"])
tr = pprof_traces(out, "off_cpu_waits")
check(len(tr) > 0, "off-CPU stacks in the profile")
for first, chain in (("wait_read", ["wait_read", "read_loop", "reader_thread"]),
                     ("wait_lock", ["wait_lock", "lock_loop", "locker_thread"])):
    n = ok = 0
    for w, fr in tr:
        c = chain_after(fr, first)
        if c is None:
            continue
        n += w
        if c == (chain, 2):
            ok += w
        else:
            print("  not whole (%d): %s" % (w, " <- ".join(fr)))
    check(n >= 30, "%d off-CPU waits under %s" % (n, first))
    check(ok >= 0.95 * n, "%s: %s + start_thread, clone3 in %d of %d waits (%.1f%%)"
          % (first, " <- ".join(chain), ok, n, 100.0 * ok / n))
j = load_json(js)
check(j["offcpu"]["identity_ok"], "off-CPU accounting identity holds")
check(j["unwind"]["failed"] == 0, "no unwind table failed")
